"""Labels of what the LLM made: a verdict or an item made by the demo LLM (`RB_LLM_DEMO=1 make run`) says so
wherever it is shown, through templates/includes/demo_llm.html."""

from __future__ import annotations

from django import template

from trajectories.pipeline.demo_llm import DEMO_MODEL
from trajectories.pipeline.llm import llm_demo_active

register = template.Library()


@register.filter
def is_demo_llm(model: str | None) -> bool:
    """Whether a judgment's or an item's recorded model is the demo LLM."""
    return (model or "").strip() == DEMO_MODEL


@register.simple_tag
def demo_llm_now() -> bool:
    """Whether this process's LLM endpoint is the demo LLM."""
    return llm_demo_active()
