"""Native ``steps``: ``{"thought", "action", "observation"}`` dicts (+ ``tool``
/ ``arguments``, ``error`` / ``is_error``, ``refinement``) or steps already in
the normalized ``{"kind", "content", ...}`` shape, in any mix."""

from __future__ import annotations

from trajectories.ingest.shared import (
    KINDS,
    OPTIONAL_KEYS,
    Builder,
    NormalizeError,
    json_text,
    objects,
    optional_str,
    tool_name,
    type_name,
)

_TRIPLE_KEYS = {"thought", "action", "observation", "tool", "arguments", "call_id", "error", "is_error", "refinement"}
_NORMALIZED_KEYS = {"index", "kind", "content", *OPTIONAL_KEYS}


def normalize_steps(steps: list) -> list[dict]:
    """Native steps: thought/action/observation dicts or already-normalized
    ``{kind, content}`` dicts, in any mix."""
    if not isinstance(steps, list):
        raise NormalizeError("steps", "must be a list")
    builder = Builder()
    for _, loc, raw in objects(steps, "steps"):
        if "kind" in raw:
            _normalized_step(builder, raw, loc)
        else:
            _triple_step(builder, raw, loc)
    return builder.steps


def _normalized_step(builder: Builder, raw: dict, loc: str) -> None:
    unknown = sorted(set(raw) - _NORMALIZED_KEYS)
    if unknown:
        raise NormalizeError(loc, f"unknown keys {unknown}; a step with 'kind' may have {sorted(_NORMALIZED_KEYS)}")
    kind = raw["kind"]
    if kind not in KINDS:
        raise NormalizeError(f"{loc}.kind", f"must be one of {list(KINDS)}, got {kind!r}")
    content = raw.get("content")
    if content is None:
        content = ""
    elif not isinstance(content, str):
        content = json_text(content, f"{loc}.content")
    optional = {}
    for key, expected in OPTIONAL_KEYS.items():
        value = raw.get(key)
        if value is None:
            continue
        if key == "arguments" and not isinstance(value, str):
            value = json_text(value, f"{loc}.arguments")
        if not isinstance(value, expected):
            raise NormalizeError(f"{loc}.{key}", f"must be a {expected.__name__}, got {type_name(value)}")
        if key == "name":
            tool_name(value, f"{loc}.name", required=False)
        optional[key] = value
    if (
        kind in ("tool_result", "observation")
        and "name" not in optional
        and optional.get("call_id") in builder.tool_names
    ):
        optional["name"] = builder.tool_names[optional["call_id"]]
    builder.add(kind, content, **optional)


def _triple_step(builder: Builder, raw: dict, loc: str) -> None:
    unknown = sorted(set(raw) - _TRIPLE_KEYS)
    if unknown:
        raise NormalizeError(
            loc, f"unknown keys {unknown}; a step has any of {sorted(_TRIPLE_KEYS)} (or 'kind' and 'content')"
        )
    if not any(raw.get(k) is not None for k in ("thought", "action", "observation", "tool", "error", "refinement")):
        raise NormalizeError(
            loc, "is empty: give at least one of thought, action, tool, observation, error, refinement"
        )

    thought = optional_str(raw.get("thought"), f"{loc}.thought")
    if thought is not None:
        builder.add("thought", thought)

    tool = tool_name(raw.get("tool"), f"{loc}.tool", required=False)
    action = raw.get("action")
    action_text = None if action is None else json_text(action, f"{loc}.action")
    call_id = optional_str(raw.get("call_id"), f"{loc}.call_id")
    if raw.get("arguments") is not None and tool is None:
        raise NormalizeError(f"{loc}.arguments", "given without 'tool' (the name of the tool called)")
    if tool is not None:
        arguments = json_text(raw["arguments"], f"{loc}.arguments") if raw.get("arguments") is not None else "{}"
        builder.add("tool_call", action_text or "", name=tool, arguments=arguments, call_id=call_id)
    elif action_text is not None:
        builder.add("action", action_text)

    error = raw.get("error")
    is_error = raw.get("is_error")
    if is_error is not None and not isinstance(is_error, bool):
        raise NormalizeError(f"{loc}.is_error", f"must be a boolean, got {type_name(is_error)}")
    if error is not None and not isinstance(error, (str, bool)):
        raise NormalizeError(f"{loc}.error", f"must be a string (the error) or a boolean, got {type_name(error)}")
    failed = bool(is_error) or error is True or (isinstance(error, str) and error != "")
    observation = raw.get("observation")
    parts = []
    if observation is not None:
        parts.append(json_text(observation, f"{loc}.observation"))
    if isinstance(error, str) and error:
        parts.append(error if observation is None else f"Error: {error}")
    if parts or failed:
        builder.add("observation", "\n".join(parts), name=tool, call_id=call_id, is_error=True if failed else None)

    refinement = optional_str(raw.get("refinement"), f"{loc}.refinement")
    if refinement is not None:
        builder.add("refinement", refinement)
