"""Token usage from spans: each span's GenAI (or OpenInference) counts,
summed into the trajectory's ``usage`` (trajectories.ingest.usage's limits)."""

from __future__ import annotations

import contextlib
import math
from typing import Any

from trajectories.ingest.usage import MAX_USAGE_TOKENS
from trajectories.otlp import messages as m

# The trajectory's usage (metadata.otlp.usage names) from each span's counts: GenAI conventions, else OpenInference.
USAGE_KEYS = {
    "input_tokens": ("gen_ai.usage.input_tokens", "llm.token_count.prompt"),
    "output_tokens": ("gen_ai.usage.output_tokens", "llm.token_count.completion"),
}


def span_tokens(attrs: dict, keys: tuple[str, str], out: Any) -> int | None:
    """A token count: the first of ``keys`` that is set, as an integer; None
    when none is set; anything else counts 0, with a warning (as does a negative count)."""
    key = next((k for k in keys if k in attrs and attrs[k] not in (None, "")), None)
    if key is None:
        return None
    value = attrs[key]
    count = None
    if isinstance(value, int) and not isinstance(value, bool):
        count = value
    elif isinstance(value, float) and math.isfinite(value):
        count = int(value)
    elif isinstance(value, str) and len(value) <= 30:
        with contextlib.suppress(ValueError):
            count = int(value)
    if count is None or count < 0:
        out.warn(f"{key} {m.text(value)[:60]!r} is not a token count; ignored.")
        return 0
    return count


def usage_field(usage: dict[str, int], reported: bool, out: Any) -> dict[str, int] | None:
    """The trajectory's ``usage`` from the spans' summed counts: None when no
    span reported any, or (with a warning) when a sum is above what one run
    can hold (trajectories.ingest.usage.MAX_USAGE_TOKENS)."""
    if not reported:
        return None
    if max(usage.values()) > MAX_USAGE_TOKENS:
        out.warn(f"The spans' token usage {usage} is above {MAX_USAGE_TOKENS:,} per run; not recorded as usage.")
        return None
    return {"prompt_tokens": usage["input_tokens"], "completion_tokens": usage["output_tokens"]}
