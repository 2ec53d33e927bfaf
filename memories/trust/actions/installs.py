"""What a command line installs and what permissions it widens. A package is
named with its manager's registry ("pypi:python-dateutil", its name as PEP
503 normalises it; "npm:@scope/pkg"; "go:github.com/x/y"), without its
version; a path, a URL (its host is read as a host) or a requirements file
is no package name. Permissions: chmod to world-writable modes, sudo, chown,
SQL GRANT, role and admin assignments, IAM policies allowing everything."""

from __future__ import annotations

import re

from memories.trust.actions.commands import _program, _split, _stage_value, _words
from memories.trust.actions.shapes import Action, ActionKind, action

# The stage value (commands._stage_value) that installs, and its registry.
INSTALLERS = {
    "pip install": "pypi",
    "pip download": "pypi",
    "uv pip": "pypi",
    "uv add": "pypi",
    "uv tool": "pypi",
    "pipx install": "pypi",
    "pipx run": "pypi",
    "poetry add": "pypi",
    "conda install": "conda",
    "npm install": "npm",
    "npm i": "npm",
    "npm add": "npm",
    "yarn add": "npm",
    "yarn global": "npm",
    "yarn dlx": "npm",
    "pnpm add": "npm",
    "pnpm dlx": "npm",
    "npx": "npm",
    "gem install": "gem",
    "cargo install": "cargo",
    "cargo add": "cargo",
    "go install": "go",
    "go get": "go",
    "brew install": "brew",
    "apt install": "apt",
    "apt-get install": "apt",
    "yum install": "rpm",
    "dnf install": "rpm",
    "apk add": "apk",
}
# Options whose next word is their value, not a package.
_VALUED = {
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "-r",
    "--requirement",
    "-c",
    "--constraint",
    "-e",
    "--editable",
    "--registry",
    "-t",
    "--target",
    "--prefix",
    "--root",
    "--source",
    "--python",
    "-p",
    "--tag",
    "--cwd",
    "--trusted-host",
    "--proxy",
    "--index",
    "--default-index",
    "--version",
    "--git",
}
_SKIP_WORDS = {"install", "i", "add", "download", "global", "dlx", "get", "tool", "pip", "run", "-m"}
_PEP503 = re.compile(r"[-_.]+")
_VERSION = re.compile(r"(\[[^\]]*\])?\s*(===?|~=|!=|<=?|>=?|@|;).*$")


def package_name(registry: str, word: str) -> str:
    """``word`` as the registry names the package ("" when it is a path, a URL, a file or an option)."""
    if not word or word.startswith(("-", ".", "/", "~", "$")) or "://" in word or word.endswith((".txt", ".toml")):
        return ""
    if registry == "npm":
        scope = word.startswith("@")
        name = word[1:].split("@", 1)[0] if scope else word.split("@", 1)[0]
        return ("@" + name if scope else name).lower()
    if registry == "go":
        return word.split("@", 1)[0]
    name = _VERSION.sub("", word).strip()
    if registry == "pypi":
        return _PEP503.sub("-", name).lower()
    return name.lower()


def package_actions(line: str) -> list[Action]:
    """The packages command ``line`` installs."""
    found = []
    for segment, _ in _split(line):
        name, args, _sudo = _program(_words(segment))
        stage = _stage_value(name, args)
        registry = INSTALLERS.get(stage)
        if registry is None:
            continue
        if name == "python":
            args = args[2:]
        skip_next = False
        for word in args:
            if skip_next:
                skip_next = False
                continue
            if word in _VALUED:
                skip_next = True
                continue
            if word.lower() in _SKIP_WORDS or word.startswith("-"):
                continue
            package = package_name(registry, word)
            if package:
                found.append(action(ActionKind.PACKAGE, f"{registry}:{package}", line))
            if stage == "npx" or stage.endswith((" dlx", " run")):
                break  # the rest are the package's own arguments
    return found


# Permission widenings, literal in any language. Each: (pattern, the value it records; "{1}" its group).
PERMISSIONS = [
    (
        re.compile(
            r"\bchmod\s+(-\w+\s+)*(0?[0-7]?7[0-7]7|0?[0-7]?[2367][2367][2367]|[augo]*\+[rwxst]*w[rwxst]*|a\+\w+)\b"
        ),
        "chmod {2}",
    ),
    (re.compile(r"\bchown\s+(-\w+\s+)*(\S+)"), "chown"),
    (re.compile(r"(?<![\w-])sudo\b(?!ers)"), "sudo"),
    (re.compile(r"\bNOPASSWD\b|\bvisudo\b|/etc/sudoers"), "sudoers"),
    (re.compile(r"\busermod\s+(-\w+\s+)*-\w*G\w*\s+(\S+)"), "group {2}"),
    (
        re.compile(r"\bGRANT\s+(ALL(\s+PRIVILEGES)?|SUPERUSER|\w+(,\s*\w+)*)\s+(ON\s+\S+(\s+\S+)?\s+)?TO\b", re.I),
        "grant {1}",
    ),
    (re.compile(r"\bALTER\s+(USER|ROLE)\s+\S+\s+(WITH\s+)?(SUPERUSER|CREATEROLE)", re.I), "grant {3}"),
    (
        re.compile(
            r"(?:--role|\brole\s*[:=]|\brole\b\s+to)\s*[\"']?([\w/.-]*(admin|owner|root|superuser|editor)[\w/.-]*)",
            re.I,
        ),
        "role {1}",
    ),
    (
        re.compile(
            r"\b(roles/(owner|editor|[\w.]*admin\w*)|cluster-admin|AdministratorAccess|IAMFullAccess|PowerUserAccess)\b"
        ),
        "role {1}",
    ),
    (re.compile(r"\b(is_admin|is_superuser|is_staff|isAdmin)\s*[:=]\s*(true|1|True)\b"), "role {1}"),
    (re.compile(r"\"Action\"\s*:\s*\[?\s*\"(\*|[\w-]+:\*)\""), "iam action {1}"),
    (re.compile(r"\"(Principal|Resource)\"\s*:\s*\"\*\""), "iam {1} *"),
    (
        re.compile(r"\bAllow\s+\*|\bAllow\b[^\n]{0,40}\b0\.0\.0\.0/0\b|\bAllow:\s*\*|\b0\.0\.0\.0/0\b", re.I),
        "allow all",
    ),
    (
        re.compile(
            r"\badd-iam-policy-binding\b|\battach-(role|user|group)-policy\b|\bcreate\s+(cluster)?rolebinding\b"
        ),
        "iam binding",
    ),
    (re.compile(r"\bsetenforce\s+0\b|\bufw\s+disable\b|\biptables\s+-F\b"), "disable a firewall"),
]


def permission_actions(text: str) -> list[tuple[int, Action]]:
    """The permission widenings in ``text`` with their offsets."""
    found = []
    for pattern, value in PERMISSIONS:
        for m in pattern.finditer(text or ""):
            groups = [m.group(0), *m.groups()]
            shown = value.format(*[(g or "").strip() for g in groups])
            found.append((m.start(), action(ActionKind.PERMISSION, " ".join(shown.lower().split()), m.group(0))))
    return found
