"""The token usage an agent reports with a trajectory: the native ``usage``
field, or the usage objects that OpenAI, Anthropic and LangChain put on what
agents send. Read in the documented names of each:

- OpenAI chat completions: ``usage.prompt_tokens`` / ``usage.completion_tokens``
  (cached prompt tokens are already counted in ``prompt_tokens``);
- OpenAI Responses and Anthropic: ``usage.input_tokens`` / ``usage.output_tokens``;
  Anthropic counts the prompt's cached part apart, in
  ``cache_creation_input_tokens`` and ``cache_read_input_tokens``, which are
  added to the prompt's tokens;
- LangChain: an AI message's ``usage_metadata.input_tokens`` / ``output_tokens``
  (cached tokens included).

Other keys (``total_tokens``, the ``*_details`` breakdowns) are ignored."""

from __future__ import annotations

from typing import Any

from trajectories.ingest.shared import NormalizeError

# A single agent run above a billion tokens either way is a unit mix-up, not a run.
MAX_USAGE_TOKENS = 1_000_000_000

_PROMPT = ("prompt_tokens", "input_tokens")
_COMPLETION = ("completion_tokens", "output_tokens")
_ANTHROPIC_CACHE = ("cache_creation_input_tokens", "cache_read_input_tokens")


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"'{name}' must be a whole number of tokens, got {value!r:.60}")
    if value < 0:
        raise ValueError(f"'{name}' must not be negative, got {value}")
    if value > MAX_USAGE_TOKENS:
        raise ValueError(f"'{name}' is {value:,} tokens; the limit for one run is {MAX_USAGE_TOKENS:,}")
    return value


def _named(usage: dict, names: tuple[str, str]) -> int | None:
    given = [name for name in names if usage.get(name) is not None]
    if len(given) > 1:
        raise ValueError(f"give either '{names[0]}' or '{names[1]}', not both")
    return _count(usage[given[0]], given[0]) if given else None


def usage_read(usage: Any) -> dict[str, int | None]:
    """``{"prompt_tokens", "completion_tokens"}`` from one usage object (a
    count it does not carry is None). Raises ValueError, saying what is
    wrong, for a usage that is not an object, carries neither count, or
    holds a count that is negative, not a whole number or above
    MAX_USAGE_TOKENS."""
    if not isinstance(usage, dict):
        raise ValueError('must be an object such as {"prompt_tokens": 1200, "completion_tokens": 300}')
    prompt = _named(usage, _PROMPT)
    completion = _named(usage, _COMPLETION)
    if prompt is None and completion is None:
        raise ValueError(
            "carries no token count: send 'prompt_tokens' and 'completion_tokens' "
            "(or 'input_tokens' and 'output_tokens')"
        )
    if usage.get("input_tokens") is not None:
        cached = [_count(usage[name], name) for name in _ANTHROPIC_CACHE if usage.get(name) is not None]
        prompt = _total(prompt, *cached)
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def _total(*counts: int | None) -> int | None:
    known = [c for c in counts if c is not None]
    if not known:
        return None
    total = sum(known)
    if total > MAX_USAGE_TOKENS:
        raise ValueError(f"adds up to {total:,} tokens; the limit for one run is {MAX_USAGE_TOKENS:,}")
    return total


def _message_usage(message: Any) -> tuple[str, Any] | None:
    """Where a message carries a usage object, and the object: an Anthropic
    Message's or a dumped OpenAI response's ``usage``, a LangChain AI
    message's ``usage_metadata`` (model_dump), under ``data``
    (messages_to_dict) or ``kwargs`` (dumpd)."""
    if not isinstance(message, dict):
        return None
    for holder, prefix in ((message, ""), (message.get("data"), "data."), (message.get("kwargs"), "kwargs.")):
        if not isinstance(holder, dict):
            continue
        for key in ("usage", "usage_metadata"):
            if holder.get(key) is not None:
                return f"{prefix}{key}", holder[key]
    return None


def messages_usage(messages: list | None) -> dict[str, int | None] | None:
    """The run's usage summed over the usage objects its messages carry (see
    _message_usage); None when none carries one. Raises NormalizeError
    naming the message for a usage object that usage_read refuses."""
    found: list[dict[str, int | None]] = []
    for i, message in enumerate(messages or []):
        located = _message_usage(message)
        if located is None:
            continue
        where, usage = located
        try:
            found.append(usage_read(usage))
        except ValueError as exc:
            raise NormalizeError(f"messages[{i}].{where}", str(exc)) from None
    if not found:
        return None
    try:
        return {
            "prompt_tokens": _total(*(u["prompt_tokens"] for u in found)),
            "completion_tokens": _total(*(u["completion_tokens"] for u in found)),
        }
    except ValueError as exc:
        raise NormalizeError("messages", f"the messages' usage {exc}") from None
