"""Does a sentence tell its reader to do something? A small grammar of the
instruction, not a list of attacks: a clause that opens on a verb in its bare
form (the imperative mood: "Send the report…", "Envoyez…", "Senden Sie…"), a
prohibition ("do not…", "never…"), an obligation put on the reader ("you
must…", "payments must be sent…", "vous devez…", "请…", "…してください"), in
English, French, German, Spanish, Italian, Portuguese, Russian, Chinese,
Japanese and Korean. Statements ("the tests pass", "the page lists the
fees") are not instructions."""

from __future__ import annotations

import re

_I = re.IGNORECASE

# English verbs in the bare form that open instructions to an agent: the common verbs of doing, not of attacks.
_VERBS = (
    "accept act add allow apply approve ask assume attach avoid be block call cancel change check choose click "
    "close configure confirm connect contact continue copy create delete deploy describe disable disregard do "
    "download drop edit email e-mail enable encode enter execute export fetch fill find follow forget forward get "
    "give go grant ignore import include insert install keep leave let list load log make mark mention move "
    "notify obey open output override pass paste pay pick pipe place point post prefer pretend print proceed "
    "provide pull push put read redirect refund register remember remove rename replace reply report request "
    "reset respond restart return reveal route run save say schedule select send set share show sign skip source "
    "start stop store submit switch take tell transfer treat trust try turn type update upload use verify visit "
    "wait wire write"
).split()
_OPENERS = r"(please|kindly|always|never|now|first|then|next|just|simply|also|immediately|quickly|finally|and)"
_BULLET = r"^[\s>*#•·\-–—\d.)(\[\]]*"
_CLAUSE_START = rf"(?:{_BULLET}|[,:]\s+|\bthen\s+)"
ENGLISH = [
    re.compile(rf"{_CLAUSE_START}(?:{_OPENERS}[\s,]+)*(?:{'|'.join(_VERBS)})\b(?!['’]s|-)", _I),
    re.compile(r"\b(do\s+not|don['’]t|never)\s+(?!been?\b)[a-z]+", _I),
    # Deontic modals: an obligation on whoever reads it ("agents reading this must send…", "refunds should be routed…").
    re.compile(
        r"\b(must|shall|should|ought\s+to|needs?\s+to|ha(ve|s)\s+to|(is|are)\s+(required|expected|instructed)\s+to)"
        r"\s+(not\s+|always\s+|never\s+|now\s+|first\s+|also\s+|only\s+)*(be\s+)?[a-z]+",
        _I,
    ),
    re.compile(
        r"\b(make\s+sure|be\s+sure\s+to|remember\s+to|it\s+is\s+(required|mandatory|essential)\s+(that|to))\b", _I
    ),
]
OTHER_LANGUAGES = [
    # French: an imperative in -ez opening the clause, "veuillez", obligations.
    re.compile(rf"{_CLAUSE_START}(?:ne\s+|n['’])?[a-zàâçéèêëîïôûùüÿœ]+ez\b", _I),
    re.compile(r"\b(veuillez|vous\s+devez|tu\s+dois|il\s+faut|n['’]oubliez\s+pas|assurez-vous|merci\s+de)\b", _I),
    # German: verb-first with "Sie", obligations on the reader, "bitte".
    re.compile(rf"{_CLAUSE_START}[a-zäöüß]+(en|ern|eln)\s+sie\b", _I),
    re.compile(r"\b(sie\s+müssen|du\s+musst|sie\s+sollten|du\s+solltest|du\s+sollst|bitte|unbedingt)\b", _I),
    # Spanish, Italian and Portuguese: obligations, "please", "make sure".
    re.compile(
        r"\b(debes|debe|deben|debéis|tienes\s+que|tiene\s+que|hay\s+que|por\s+favor|asegúrate|asegúrese|no\s+olvides|"
        r"devi|deve|dovete|bisogna|è\s+necessario|assicurati|per\s+favore|"
        r"você\s+deve|vocês\s+devem|é\s+preciso|certifique-se|por\s+gentileza)\b",
        _I,
    ),
    # Russian: an imperative in -ите/-йте/-ьте opening the clause, obligations.
    re.compile(rf"{_CLAUSE_START}(?:не\s+)?[а-яё]+(ите|йте|ьте)\b", _I),
    re.compile(r"(?<!\w)(вы\s+должны|ты\s+должен|необходимо|нужно|следует|обязательно|пожалуйста)(?!\w)", _I),
    # Chinese, Japanese, Korean: the polite request and the obligation.
    re.compile(r"(请|請|必须|必須|务必|務必|应该|應該|应当|不要|一定要|不得)"),
    re.compile(r"(ください|下さい|必ず|しなければ|すること|してはいけない|しないで|べきです|べき)"),
    re.compile(r"(하십시오|하세요|해야\s*합니다|해야\s*한다|반드시|하지\s*마)"),
]


def instruction_cues(sentence: str) -> list[re.Match]:
    """Every place where ``sentence`` tells its reader to do something (empty for a statement)."""
    return [m for pattern in (*ENGLISH, *OTHER_LANGUAGES) for m in pattern.finditer(sentence or "")]


def instruction(sentence: str) -> re.Match | None:
    """The first place where ``sentence`` tells its reader to do something, or None for a statement."""
    cues = instruction_cues(sentence)
    return min(cues, key=lambda m: m.start()) if cues else None
