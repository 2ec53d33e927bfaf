"""What LLM tokens cost: per-model prices in USD per million tokens, from
``RB_LLM_PRICES`` (JSON: ``{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}``).

Settings parse the variable at startup (``llm_prices_parse``), so a malformed
value stops every process with a message naming what is wrong instead of
showing wrong costs. A model with no price has its tokens counted and its cost
shown as unknown, never as 0. Costs are estimated at read time with the
current prices, so a price added later applies to the tokens already counted.

Settings import this module: it imports nothing from the apps."""

from __future__ import annotations

import json
import math

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

EXAMPLE = '{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}'


def llm_prices_parse(raw: str) -> dict[str, dict[str, float]]:
    """``RB_LLM_PRICES`` as ``{model: {"input": usd_per_1m, "output": usd_per_1m}}``;
    empty means no prices. Raises ImproperlyConfigured naming the fault."""
    if not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"RB_LLM_PRICES is not valid JSON ({exc}). Expected e.g. {EXAMPLE}") from exc
    if not isinstance(parsed, dict):
        raise ImproperlyConfigured(f"RB_LLM_PRICES must be a JSON object of models, e.g. {EXAMPLE}")
    prices: dict[str, dict[str, float]] = {}
    for model, price in parsed.items():
        if not model.strip():
            raise ImproperlyConfigured("RB_LLM_PRICES names a model with an empty name.")
        if not isinstance(price, dict) or set(price) != {"input", "output"}:
            raise ImproperlyConfigured(
                f'RB_LLM_PRICES["{model}"] must be an object with exactly "input" and "output" '
                f"(USD per million tokens), e.g. {EXAMPLE}"
            )
        for kind, value in price.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ImproperlyConfigured(
                    f'RB_LLM_PRICES["{model}"]["{kind}"] must be a number of USD per million tokens, 0 or more; '
                    f"got {value!r}."
                )
        prices[model] = {"input": float(price["input"]), "output": float(price["output"])}
    return prices


def llm_cost(*, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """The estimated cost in USD of these tokens of ``model``, or None when it has no price."""
    price = settings.RB_LLM_PRICES.get(model)
    if price is None:
        return None
    return (prompt_tokens * price["input"] + completion_tokens * price["output"]) / 1_000_000
