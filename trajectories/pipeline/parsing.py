"""Parsers of what real models answer. They never guess: a judge answer with
no explicit verdict parses to None, and a memory item missing a field is
dropped rather than filled in."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from memories.items.models import CONTENT_MAX, DESCRIPTION_MAX, TITLE_MAX
from reasoningbank_site.text import cut_text

# Deliberately no "yes"/"no": "Result: no results found" must not read as a verdict.
SUCCESS_WORDS = {"success", "successful", "succeeded", "succeed", "pass", "passed", "correct"}
FAILURE_WORDS = {"failure", "failed", "fail", "failing", "unsuccessful", "incorrect"}
VERDICT_KEYS = ("verdict", "status", "label", "result", "outcome", "judgment", "judgement", "decision")
RATIONALE_KEYS = ("rationale", "reasoning", "reason", "explanation", "justification", "analysis", "thoughts")


@dataclass(frozen=True)
class JudgeAnswer:
    label: str  # "success" | "failure"
    rationale: str


@dataclass(frozen=True)
class ParsedItem:
    title: str
    description: str
    content: str
    # (rollout number or None, step number) as the model cited them.
    citations: list[tuple[int | None, int]] = field(default_factory=list)


def _label_of(word: str) -> str | None:
    word = word.strip().strip("\"'`*_.!,;:()[]").lower()
    if word in SUCCESS_WORDS:
        return "success"
    if word in FAILURE_WORDS:
        return "failure"
    return None


def _json_values(text: str):
    """Every JSON object or array that can be decoded starting at a ``{`` or
    ``[`` in ``text``, in order of appearance (nested ones included)."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            value, _end = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        yield match.start(), value


def _pick(d: dict, keys) -> object | None:
    lowered = {str(k).strip().lower(): v for k, v in d.items()}
    for key in keys:
        if key in lowered:
            return lowered[key]
    return None


# "Verdict: FAILURE", "**Status:** success", "Final verdict - Success", "> Result = failed", 'Status: "success"'
# (the quotes or markup closing the word belong to the verdict line, not to the rationale)
_VERDICT_LINE = re.compile(
    r"^[\s>*#_`-]*(?:final\s+|overall\s+)?(?:"
    + "|".join(VERDICT_KEYS)
    + r")[\s*_`]*[:=\-–—][\s*_`\"']*([A-Za-z]+)[*_`\"']*",
    re.IGNORECASE | re.MULTILINE,
)


def parse_judge_answer(text: str) -> JudgeAnswer | None:
    """The LAST explicit verdict in ``text``: a JSON object (bare or fenced)
    with a verdict/status/label key, a "Verdict: failure" style line, or a
    last line that is just the word. None when there is none (never a guess)."""
    if not text or not text.strip():
        return None
    found: list[tuple[int, JudgeAnswer]] = []
    for pos, value in _json_values(text):
        if isinstance(value, dict):
            raw = _pick(value, VERDICT_KEYS)
            if isinstance(raw, bool):
                label = "success" if raw else "failure"
            elif isinstance(raw, str):
                label = _label_of(raw)
            else:
                label = None
            if label:
                rationale = _pick(value, RATIONALE_KEYS)
                found.append((pos, JudgeAnswer(label, str(rationale).strip() if rationale else "")))
    for match in _VERDICT_LINE.finditer(text):
        label = _label_of(match.group(1))
        if label:
            rationale = (text[: match.start()] + text[match.end() :]).strip()
            found.append((match.start(), JudgeAnswer(label, rationale)))
    if not found:
        last_line = text.strip().splitlines()[-1]
        label = _label_of(last_line) if len(last_line.split()) == 1 else None
        if label:
            return JudgeAnswer(label, text.strip()[: -len(last_line)].strip())
        return None
    _pos, answer = max(found, key=lambda pair: pair[0])
    if not answer.rationale:
        answer = JudgeAnswer(answer.label, text.strip())
    return JudgeAnswer(answer.label, answer.rationale[:4000])


_CITATION = re.compile(r"R\s*(\d+)\s*[.:/_-]?\s*S(?:tep)?\s*(\d+)", re.IGNORECASE)


def parse_citations(value) -> list[tuple[int | None, int]]:
    """Step citations from "3, 7", "steps 3 and 7", [3, 7], ["R1S4", "R2 S3"]."""
    if value is None:
        return []
    if isinstance(value, list):
        out: list[tuple[int | None, int]] = []
        for v in value:
            out.extend(parse_citations(v) if not isinstance(v, bool) else [])
        return list(dict.fromkeys(out))
    if isinstance(value, int):
        return [(None, value)]
    text = str(value)
    rollout_refs = [(int(r), int(s)) for r, s in _CITATION.findall(text)]
    if rollout_refs:
        return list(dict.fromkeys(rollout_refs))
    if re.search(r"\b(none|n/a)\b", text, re.IGNORECASE) and not re.search(r"\d", text):
        return []
    return list(dict.fromkeys((None, int(n)) for n in re.findall(r"\b\d{1,5}\b", text)))


def _clean(value) -> str:
    if value is None:
        return ""
    text = str(value).strip()
    text = re.sub(r"^\*\*(.*)\*\*$", r"\1", text, flags=re.DOTALL).strip()
    return text.strip("\"'").strip()


def _parsed_item(title: str, description: str, content: str, citations) -> ParsedItem:
    """An item with each text cut, visibly, to the model's limit (a runaway answer must not reach prompts)."""
    return ParsedItem(
        cut_text(title, TITLE_MAX), cut_text(description, DESCRIPTION_MAX), cut_text(content, CONTENT_MAX), citations
    )


def _item_from_dict(d: dict) -> ParsedItem | None:
    title = _clean(_pick(d, ("title", "name")))
    description = _clean(_pick(d, ("description", "when_to_use", "summary")))
    content = _clean(_pick(d, ("content", "insight", "lesson", "body")))
    if not (title and description and content):
        return None
    citations = parse_citations(_pick(d, ("steps", "cited_steps", "source_steps", "step", "citations")))
    return _parsed_item(title, description, content, citations)


def _items_from_json(text: str) -> list[ParsedItem] | None:
    """Items from the last JSON value in ``text`` that looks like a list of
    items or ``{"items": [...]}``; None when there is no such value."""
    candidates = []
    for pos, value in _json_values(text):
        if isinstance(value, dict):
            value = _pick(value, ("items", "memory_items", "memories", "memory"))
        is_item_list = isinstance(value, list) and value and all(isinstance(v, dict) for v in value)
        if is_item_list and any(_pick(v, ("title", "name")) is not None for v in value):
            candidates.append((pos, value))
    if not candidates:
        return None
    # The last one wins: an example the model sketched in its reasoning comes first.
    _pos, value = candidates[-1]
    return [item for d in value if (item := _item_from_dict(d))]


_ITEM_HEADING = re.compile(r"^\s*#{1,4}\s*\**\s*Memory\s+Item\b[^\n]*$", re.IGNORECASE | re.MULTILINE)
_FIELD = re.compile(
    r"^\s*(?:#{1,6}\s*|[-*]\s*)?\**\s*(title|description|content|steps|cited steps|source steps)\s*\**\s*:?\s*\**[ \t]*(.*)$",
    re.IGNORECASE | re.MULTILINE,
)


def _items_from_markdown(text: str) -> list[ParsedItem]:
    headings = list(_ITEM_HEADING.finditer(text))
    items = []
    for i, heading in enumerate(headings):
        end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
        block = text[heading.end() : end]
        fields: dict[str, str] = {}
        matches = list(_FIELD.finditer(block))
        for j, m in enumerate(matches):
            name = m.group(1).lower()
            name = "steps" if "steps" in name else name
            stop = matches[j + 1].start() if j + 1 < len(matches) else len(block)
            value = (m.group(2) + "\n" + block[m.end() : stop]).strip()
            value = re.sub(r"\n\s*(?:```|---+)\s*$", "", value).strip()
            fields.setdefault(name, value)
        title, description, content = (_clean(fields.get(k)) for k in ("title", "description", "content"))
        if title and description and content:
            items.append(_parsed_item(title, description, content, parse_citations(fields.get("steps"))))
    return items


def parse_memory_items(text: str, *, max_items: int) -> list[ParsedItem]:
    """Memory items from a distillation answer: the markdown
    "# Memory Item N / ## Title / ## Description / ## Content" format or JSON
    (a list, or ``{"items": [...]}``, bare or fenced). Reasoning before the
    items is ignored, items missing a field are dropped, repeated titles are
    kept once, and at most ``max_items`` are returned."""
    if not text:
        return []
    items = _items_from_markdown(text) if _ITEM_HEADING.search(text) else []
    if not items:
        items = _items_from_json(text) or []
    unique: dict[str, ParsedItem] = {}
    for item in items:
        unique.setdefault(item.title.casefold(), item)
    return list(unique.values())[:max_items]
