"""What a lesson would make an agent run: shell commands (in code spans,
fenced blocks, ``$ `` lines, and a well-known command word followed by
arguments in prose), with the packages they install and the risky parts of
each (a pipe into a shell, a download, sudo, chmod…). A command's value is
its pipeline's programs with their subcommands ("curl | sh", "git clone"):
the same command with other arguments is the same action; its hosts are
read by the network extractor."""

from __future__ import annotations

import re
import shlex

from memories.trust.actions.shapes import Action, ActionKind, action

SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish", "ash"}
INTERPRETERS = {"python", "python3", "perl", "ruby", "node", "php", "iex", "powershell", "pwsh", "invoke-expression"}
DOWNLOADERS = {"curl", "wget", "iwr", "invoke-webrequest", "irm", "invoke-restmethod", "certutil", "bitsadmin"}
# Programs that take a subcommand: the subcommand is part of the action ("git clone", not "git").
SUBCOMMANDS = {
    "git": "clone push pull fetch remote config checkout reset commit rebase merge submodule clean",
    "pip": "install uninstall download",
    "pip3": "install uninstall download",
    "uv": "pip add run tool sync",
    "pipx": "install run",
    "poetry": "add install source",
    "npm": "install i add publish exec run ci config",
    "yarn": "add install global dlx config",
    "pnpm": "add install dlx",
    "gem": "install sources",
    "cargo": "install add run",
    "go": "install get run",
    "brew": "install tap",
    "apt": "install",
    "apt-get": "install",
    "yum": "install",
    "dnf": "install",
    "apk": "add",
    "conda": "install config",
    "docker": "run pull push exec login build cp",
    "kubectl": "apply create delete exec patch cp",
    "helm": "install upgrade repo",
    "terraform": "apply destroy import",
    "aws": "s3 iam sts ec2 secretsmanager",
    "gcloud": "iam projects auth storage compute",
    "az": "role login storage keyvault",
    "gh": "repo secret auth",
    "systemctl": "stop disable mask start enable",
    "ufw": "disable allow",
    "setenforce": "0",
    "crontab": "-e -r",
    "npx": "",
    "chmod": "",
    "chown": "",
}
SUBCOMMANDS = {program: set(words.split()) for program, words in SUBCOMMANDS.items()}
# Programs read in prose too, when arguments that only a command has follow (a flag, a URL, a path, a pipe,
# a variable, or a known subcommand): "make sure" or "go to the page" are no command.
PROSE_PROGRAMS = (
    set(SUBCOMMANDS)
    | SHELLS
    | INTERPRETERS
    | DOWNLOADERS
    | {
        "ssh",
        "scp",
        "rsync",
        "nc",
        "ncat",
        "netcat",
        "sudo",
        "rm",
        "dd",
        "mkfs",
        "eval",
        "base64",
        "openssl",
        "echo",
        "printf",
        "export",
        "env",
        "sed",
        "tee",
        "mv",
        "cp",
        "xargs",
        "tar",
        "unzip",
        "make",
    }
)
# A program word in prose (after sudo and VAR=value), and where its command ends: the line's end, a
# backtick, a sentence's end, a closing parenthesis, or a joining word ("and then", "puis").
_PROSE = re.compile(
    r"(?<![\w/.$-])(?:sudo\s+)?(?:[A-Z_][A-Z0-9_]*=\S+\s+)*("
    + "|".join(sorted((re.escape(p) for p in PROSE_PROGRAMS), key=len, reverse=True))
    + r")(?=\s)",
    re.I,
)
_PROSE_END = re.compile(r"\s*(?:$|\n|`|[.;,](?:\s|$)|\)(?:\s|$)|\s(?:and|then|et|puis|und|y|または|и)\s)", re.M)
_FENCE = re.compile(r"^[ \t]*(```|~~~)[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*\1", re.M | re.S)
_SHELL_FENCES = {"sh", "bash", "shell", "console", "zsh", "shell-session", "powershell", "ps1", "pwsh", "cmd", "bat"}
_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_PROMPT_LINE = re.compile(r"^[ \t]*(?:\$|>|PS[^>\n]{0,40}>|#)[ \t]+(\S[^\n]*)$", re.M)
_SEGMENTS = re.compile(r"\|\|?|&&|;")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=False, posix=True)
    except ValueError:
        return line.split()


def _program(words: list[str]) -> tuple[str, list[str], bool]:
    """The program of one pipeline stage (basename, lower-case, past ``sudo``, ``env`` and VAR=value), its
    arguments, and whether it ran under sudo."""
    sudo = False
    while words and (words[0] in ("sudo", "env", "command", "exec", "nohup", "time") or _ASSIGNMENT.match(words[0])):
        sudo = sudo or words[0] == "sudo"
        words = words[1:]
        while words and words[0].startswith("-") and sudo:
            words = words[1:]
    if not words:
        return "", [], sudo
    name = words[0].rsplit("/", 1)[-1].rsplit("\\", 1)[-1].lower()
    name = {"python2": "python", "python3": "python", "pip3": "pip"}.get(name, name)
    if name.startswith("python") and name[6:].replace(".", "").isdigit():
        name = "python"
    if name in SHELLS:
        name = "sh"
    return name, words[1:], sudo


def _stage_value(name: str, args: list[str]) -> str:
    if name == "python" and args[:2] == ["-m", "pip"]:
        name, args = "pip", args[2:]
    sub = next((a for a in args if not a.startswith("-")), "")
    if sub.lower() in SUBCOMMANDS.get(name, ()):
        return f"{name} {sub.lower()}"
    return name


def command_value(line: str) -> tuple[str, tuple[str, ...]]:
    """The action value of one command line (its stages with what joins them: "curl | sh",
    "chmod && run.sh") and its risky parts."""
    stages, risks = [], []
    pipe_in, joined = False, ";"
    for segment, sep in _split(line):
        name, args, sudo = _program(_words(segment))
        if not name:
            continue
        if sudo:
            risks.append("sudo")
        if pipe_in and (name == "sh" or name in INTERPRETERS) and "pipe to a shell" not in risks:
            risks.append("pipe to a shell")
        if name in DOWNLOADERS:
            risks.append("download")
        if name in ("chmod", "chown", "eval") or (name == "base64" and any(a in ("-d", "--decode") for a in args)):
            risks.append(name if name != "base64" else "decode")
        value = _stage_value(name, args)
        stages.append(f"{joined} {value}" if stages else value)
        pipe_in, joined = sep == "|", sep or ";"
    return " ".join(stages), tuple(dict.fromkeys(risks))


def _split(line: str) -> list[tuple[str, str]]:
    """``line``'s pipeline stages and chained commands, each with the separator after it."""
    out, at = [], 0
    for m in _SEGMENTS.finditer(line):
        out.append((line[at : m.start()], m.group(0)))
        at = m.end()
    out.append((line[at:], ""))
    return out


_ARGUMENT_LIKE = re.compile(r"^(-|[~./$|<>&\"'`*(\[{])|[-_./=@:$\d*<>|]|[A-Z]")
_PLAIN = re.compile(r"^[^\W\d_]+[,.;:]?$")
# Subcommands taking a plain word (a package, a repository, an image): "pip install requests".
_NAMED_TARGET = {"install", "add", "i", "get", "clone", "pull", "run", "exec", "tap", "dlx", "download", "apply"}


def _prose_extent(name: str, rest: str) -> int:
    """How much of ``rest`` (the prose after program ``name``) belongs to its command: arguments that only
    a command has (flags, paths, URLs, words with digits, dots, dashes…), a known subcommand and its one
    plain target, the programs after a pipe or ``&&``; the first other plain word ends it. 0: no command."""
    # state: "program" (a program comes next), "sub" (its subcommand may), "target" (a plain target may), "args"
    end, program, state, after_option = 0, name, "sub", False
    for m in re.finditer(r"\S+", rest):
        word = m.group(0)
        low = word.lower()
        if state == "program" or word in ("|", "||", "&&", ";") or (low == "-m" and name == "python"):
            state = "program" if word in ("|", "||", "&&", ";", "-m", "sudo") or _ASSIGNMENT.match(word) else "sub"
            program = low if state == "sub" else program
        elif state == "sub" and low in SUBCOMMANDS.get(program, ()):
            state = "target" if low in _NAMED_TARGET else "args"
        elif _ARGUMENT_LIKE.search(word) and not _PLAIN.match(word):
            # Options (and an option's value) before the target keep it coming: "install -i URL x".
            option = word.startswith("-")
            state = "target" if state == "target" and (option or after_option) else "args"
        elif (state == "target" and _PLAIN.match(word)) or (
            state == "sub" and program in ("npx", "pipx") and _PLAIN.match(word)
        ):
            state = "args"
        else:
            break
        after_option = word.startswith("-") and "=" not in word
        end = m.end()
    return end


def _command_lines(text: str) -> list[tuple[int, str]]:
    """Every command line of ``text`` with its offset: fenced shell blocks (every line), other fenced blocks
    and code spans (lines starting with a known program), prompt lines, and prose commands."""
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []

    def add(start: int, line: str, require_program: bool) -> None:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            return
        name = _program(_words(stripped.split("|")[0]))[0]
        if require_program and name not in PROSE_PROGRAMS and not stripped.startswith(("./", "~/")):
            return
        found.append((start + line.find(stripped), stripped))

    for m in _FENCE.finditer(text):
        taken.append((m.start(), m.end()))
        shell = m.group(2).lower() in _SHELL_FENCES
        at = m.start(3)
        for line in m.group(3).split("\n"):
            prompt = _PROMPT_LINE.match(line)
            add(at + (prompt.start(1) if prompt else 0), prompt.group(1) if prompt else line, not shell)
            at += len(line) + 1
    for m in _SPAN.finditer(text):
        if not any(s <= m.start() < e for s, e in taken):
            taken.append((m.start(), m.end()))
            add(m.start(1), m.group(1), True)
    for m in _PROMPT_LINE.finditer(text):
        if not any(s <= m.start(1) < e for s, e in taken) and m.group(0).lstrip()[:1] in "$>P":
            taken.append((m.start(), m.end()))
            add(m.start(1), m.group(1), False)
    for m in _PROSE.finditer(text):
        if any(s <= m.start() < e for s, e in taken):
            continue
        end = _PROSE_END.search(text, m.end() + 1)
        rest = text[m.end() : end.start() if end else len(text)]
        name = _program(_words(text[m.start() : m.end()]))[0]
        line = text[m.start() : m.end() + _prose_extent(name, rest)]
        if line != text[m.start() : m.end()]:
            taken.append((m.start(), m.start() + len(line)))
            add(m.start(), line, False)
    return sorted(found)


def command_actions(text: str) -> list[tuple[int, Action, list[str]]]:
    """The commands of ``text`` (offset, the action, and the command's words for the package and
    permission readers)."""
    out = []
    for start, line in _command_lines(text or ""):
        value, risks = command_value(line)
        if value:
            out.append((start, action(ActionKind.COMMAND, value, line, risks), line))
    return out
