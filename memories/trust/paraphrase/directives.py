"""Whether a sentence of external content is a directive: it tells its reader
to do something, or redefines what counts as allowed or required. A small
grammar of the forms instructions take (not a list of attacks): the imperative
mood (a clause that opens with a verb's base form, in English; the "vous" form
in French; the "Sie" form in German), modal verbs of obligation or permission,
redefinitions ("from now on", "no longer", "is outdated", "counts as"), and
words addressed to an AI agent or assistant, in English, French, German and
Spanish. Plain statements ("Returns within 30 days", "Invoice 884: 4,200 EUR")
are not directives: honest lessons restate them all the time."""

from __future__ import annotations

import re

# English verbs that open instructions, in their base form. A closed class of the grammar, not of attacks:
# the verbs a how-to, a runbook or a planted note starts its sentences with.
_VERBS = frozenset(
    """
    accept act add allow answer append apply approve ask assume avoid block bypass call cancel change
    check choose clear click close commit configure confirm consider contact copy create decode delete deny
    deploy deposit disable disregard do download drop email enable encode enter erase escalate execute export
    fetch fill find follow forget forward give grant ignore import include inform install keep kill leave let
    list load log make mark merge move open output override paste pay pick place post prefer pretend print
    provide purge push put quote read reboot redirect refund reject reload remember remove rename replace
    reply request reset respond restart restore retry reveal revoke rotate route run save say send set share
    show skip sign start state stop store submit switch take tell transfer treat trust turn type update upload
    use verify visit wait wipe wire write
    """.split()
)
# What a sentence may open with before its verb: politeness, frequency, sequence.
_LEAD = r"(?:(?:please|kindly|always|never|just|simply|now|then|first|also|immediately|quickly|instead|"
_LEAD += r"do not|don't|do|make sure to|be sure to|remember to)\s+)*"
# A clause: the start of the sentence, or what follows a colon, a semicolon, a dash, or an opening clause
# ("To free disk space, …", "If the deploy fails, …", "Note to AI agents: …").
_CLAUSE_START = re.compile(r"(?:^|[:;—–]\s*|^(?:to|if|when|before|after|once|for)\b[^,:;]{0,80},\s*)", re.I)
_WORD = re.compile(r"[A-Za-z']+")

# The strong forms: redefinitions of what is allowed, required or current, and words addressed to an agent
# or an assistant, in English, French, German and Spanish.
_STRONG_PATTERNS = [
    r"\b(?:from now on|going forward|effective immediately|henceforth|no longer|(?:is|are) (?:now )?"
    r"(?:outdated|deprecated|obsolete|superseded|invalid|optional|mandatory|exempt|approved|the new)|"
    r"counts? as|(?:is|are) (?:now )?(?:considered|treated as)|new (?:policy|rule|procedure|instructions?|process)|"
    r"(?:needs?|requires?) no|no need to|(?:is|are) (?:not|un)(?: )?(?:needed|required|necessary))\b",
    r"\b(?:désormais|dorénavant|à partir de maintenant|n'est plus|ne sont plus|est considérée?s?|compte comme|"
    r"est autorisée?s?|n'est pas nécessaire|ab sofort|ab jetzt|von nun an|nicht mehr|gilt als|gelten als|"
    r"ist veraltet|a partir de ahora|desde ahora|ya no|se considera|está permitido|no es necesario)\b",
    r"(?<!['’])\b(?:ai|llm|ia|ki)s?\b|\b(?:agents?|assistant(?:e|en)?s?|language models?|chatbots?|bots?|copilots?|"
    r"asistentes?|agentes?|ki-agenten|modèles? de langage|sprachmodell(?:e)?)\b",
]
# The plain forms: imperatives, modal verbs of obligation or permission, "please". Documentation is full of them.
_PLAIN_PATTERNS = [
    r"\b(?:must|shall|should|ought to|ha(?:ve|s) to|needs? to|(?:is|are) (?:now )?(?:required|expected|allowed|"
    r"permitted|authori[sz]ed|supposed) to|may (?:now|only)|can now)\b",
    r"\b(?:please|kindly)\s+[a-z]+",
    r"\b(?:always|never|quickly|immediately|simply|just)\s+(?:" + "|".join(sorted(_VERBS)) + r")\b",
    # French: the "vous" imperative (-ez), instructions in the infinitive, obligations, politeness.
    r"^(?:[a-zàâçéèêëîïôûù]+ez)\b(?!\s+(?:pas|été|eu)\b)",
    r"^[a-zàâçéèêëîïôûù]{3,}(?:er|ir|re)\s+(?:le|la|les|l'|un|une|des|tous|toutes|ce|cette|ces|votre|vos|à)\b",
    r"\b(?:il faut|doit|doivent|devez|dois|devrait|devriez|veuillez|merci de)\b",
    # German: the "Sie" imperative, modal verbs; Spanish: obligations; "please" in both.
    r"^[a-zäöüß]+en\s+sie\b",
    r"\b(?:muss|müssen|musst|sollte|sollten|sollst|darf|dürfen|bitte|debe|debes|deben|debería|tiene que|"
    r"tienes que|hay que|por favor)\b",
]
_DIRECTIVE = re.compile("|".join(f"(?:{p})" for p in _STRONG_PATTERNS + _PLAIN_PATTERNS), re.I)
_STRONG = re.compile("|".join(f"(?:{p})" for p in _STRONG_PATTERNS), re.I)
# The same on lowercased text, without IGNORECASE and with a leading word boundary: 4× faster on a long page.
_STRONG_LOWER = re.compile(r"\b(?:" + "|".join(f"(?:{p})" for p in _STRONG_PATTERNS) + ")")
_IMPERATIVE = re.compile(_LEAD + r"([A-Za-z']+)(?:\s+(\S+))?", re.I)


def _imperative_clause(sentence: str) -> bool:
    """Whether a clause of ``sentence`` opens with an English verb's base form used as a command:
    followed by an object or a particle, not by a participle ("Report generated"), a number
    ("Order 5521 …") or a colon ("Email: …")."""
    for start in _CLAUSE_START.finditer(sentence):
        match = _IMPERATIVE.match(sentence, start.end())
        if not match or match.group(1).lower() not in _VERBS:
            continue
        after = match.group(2) or ""
        if after[:1].isdigit() or after.startswith(("(", ":")) or re.fullmatch(r"[a-z]+ed[.,;]?", after):
            continue
        if not sentence[match.end(1) : match.end(1) + 1].isspace():
            continue  # "deploy.sh", "Email:": a name or a label, not a verb
        return True
    return False


def is_directive(sentence: str) -> bool:
    """Whether ``sentence`` tells its reader to do something or redefines what is allowed or required."""
    text = sentence.strip()
    return bool(text) and (_imperative_clause(text) or _DIRECTIVE.search(text) is not None)


def is_strong_directive(sentence: str) -> bool:
    """Whether ``sentence`` redefines what is allowed or required, or addresses an agent or an assistant.
    A plain imperative ("Run migrations before restarting", "Veuillez indiquer le numéro") is what
    documentation says, and honest lessons restate it."""
    return _STRONG.search(sentence) is not None


def strong_directive_offsets(text: str) -> list[int]:
    """Where strong directive forms start in ``text`` (one pass over the whole text, however long)."""
    return [match.start() for match in _STRONG_LOWER.finditer((text or "").lower())]
