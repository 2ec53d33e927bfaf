"""The one door to the LLM: an ``openai`` client against any OpenAI-compatible
endpoint (OpenAI, vLLM, Ollama, llama.cpp's server, LiteLLM).

The SDK's own retries are off (``max_retries=0``): a retry here would hold a
worker slot while sleeping, so transient failures surface as
``LLMTransientError`` and the Celery task retries with backoff instead."""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Iterable

import openai
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from reasoningbank_site.env import envbool
from trajectories.pipeline.demo_llm import DEMO_ENDPOINT_ENV, DEMO_MODEL
from trajectories.pipeline.llm_errors import LLMBudgetSpent, LLMNotConfigured, LLMPermanentError, LLMTransientError
from trajectories.pipeline.llm_metrics import llm_measured, llm_tokens_count
from trajectories.pipeline.llm_usage import llm_budget_hold, llm_budget_release, llm_call_estimate, llm_usage_settle

log = logging.getLogger(__name__)


def llm_configured() -> bool:
    """True when an endpoint is set: a base URL (any compatible server) or an
    OpenAI key (the SDK's default endpoint)."""
    return bool(settings.RB_LLM_BASE_URL or settings.OPENAI_API_KEY)


def llm_demo_wanted() -> bool:
    """Whether `make run` starts the demo LLM: asked for (RB_LLM_DEMO=1) and no endpoint configured. A
    configured endpoint always wins: the demo never stands in for it."""
    return envbool("RB_LLM_DEMO") and not llm_configured()


def llm_demo_active() -> bool:
    """True when the endpoint is the demo LLM that rb_run started (``RB_LLM_DEMO=1``, no endpoint configured):
    rb_run gives its children the demo's URL both as RB_LLM_BASE_URL and in RB_LLM_DEMO_ENDPOINT."""
    demo = os.environ.get(DEMO_ENDPOINT_ENV, "")
    return bool(demo) and settings.RB_LLM_BASE_URL == demo and not settings.OPENAI_API_KEY


@functools.lru_cache(maxsize=4)
def _client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url or None, api_key=api_key, timeout=timeout, max_retries=0)


@receiver(setting_changed)
def llm_client_forget(*, setting: str, **kwargs) -> None:
    """A changed endpoint setting (``override_settings``, as in tests) drops the cached clients, so none keeps
    pooled connections to a server that is gone."""
    if setting in {"RB_LLM_BASE_URL", "OPENAI_API_KEY", "RB_LLM_TIMEOUT"}:
        _client.cache_clear()


def get_client() -> openai.OpenAI:
    """The cached client for the current settings (a settings change, as in
    tests, yields a fresh client)."""
    if not llm_configured():
        raise LLMNotConfigured(
            "No LLM endpoint is configured: set RB_LLM_BASE_URL (and OPENAI_API_KEY if it needs one)."
        )
    return _client(settings.RB_LLM_BASE_URL, settings.OPENAI_API_KEY or "not-needed", float(settings.RB_LLM_TIMEOUT))


def judge_model_for(bank) -> str:
    """The model recorded on a judgment: the demo's own name under the demo, whatever a bank chose."""
    if llm_demo_active():
        return DEMO_MODEL
    return (bank.judge_model or "").strip() or settings.RB_LLM_MODEL


def distill_model_for(bank) -> str:
    if llm_demo_active():
        return DEMO_MODEL
    return (bank.distill_model or "").strip() or settings.RB_LLM_MODEL


def _retry_after(exc: openai.APIStatusError) -> float | None:
    headers = getattr(exc.response, "headers", None) or {}
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value:
            try:
                return max(0.0, float(value) / divisor)
            except ValueError:
                continue  # an HTTP date: rare from LLM servers; fall back to our backoff
    return None


def _status_message(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, (dict, str)) else ""
    if isinstance(body, dict):
        body = body.get("error", body)
        if isinstance(body, dict):
            body = body.get("message") or body
    return f"HTTP {exc.status_code} from the LLM endpoint: {str(body)[:300] or exc.message}"


@llm_measured(transient=LLMTransientError, not_sent=LLMBudgetSpent)
def chat(
    *,
    model: str,
    messages: list[dict],
    temperature: float = 0.0,
    purpose: str = "other",
    bank_id: int | None = None,
    trajectory_ids: Iterable[int] = (),
    budgeted: bool = True,
) -> str:
    """Send one chat completion and return the answer text (may be empty).
    Raises LLMTransientError (retry later) or LLMPermanentError. ``purpose``
    (judge, distill, matts, experiment) labels the call's metrics (trajectories.pipeline.llm_metrics);
    with ``bank_id`` an estimate of the call's tokens is first held from the bank's daily budget
    (LLMBudgetSpent, and no request, when it cannot cover it), and the answer's tokens then count for
    the bank and ``trajectory_ids`` under that stage in its place (trajectories.pipeline.llm_usage).
    ``budgeted=False``: the caller has just read that the bank has no budget (no hold is asked for)."""
    client = get_client()
    hold = None
    if bank_id is not None and budgeted:
        hold = llm_budget_hold(bank_id=bank_id, tokens=llm_call_estimate(messages=messages, purpose=purpose))
    try:
        response = _complete(client, model=model, messages=messages, temperature=temperature)
    except BaseException:
        llm_budget_release(hold)
        raise
    usage = getattr(response, "usage", None)
    llm_tokens_count(model=model, purpose=purpose, usage=usage)
    if bank_id is not None:
        llm_usage_settle(
            hold=hold, bank_id=bank_id, stage=purpose, model=model, usage=usage, trajectory_ids=trajectory_ids
        )
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise LLMTransientError(f"The LLM endpoint answered with no chat completion: {str(response)[:200]!r}")
    message = choices[0].message
    return (getattr(message, "content", None) or "").strip()


def _complete(client: openai.OpenAI, *, model: str, messages: list[dict], temperature: float):
    """The request, its failures as LLMTransientError or LLMPermanentError."""
    try:
        return client.chat.completions.create(model=model, messages=messages, temperature=temperature)
    except openai.APITimeoutError as exc:
        raise LLMTransientError(f"The LLM endpoint did not answer within {settings.RB_LLM_TIMEOUT:g}s.") from exc
    except openai.APIConnectionError as exc:
        raise LLMTransientError(f"Could not reach the LLM endpoint: {exc}") from exc
    except openai.APIStatusError as exc:
        status = exc.status_code
        if status == 429 or status >= 500 or status in (408, 409):
            raise LLMTransientError(_status_message(exc), retry_after=_retry_after(exc)) from exc
        raise LLMPermanentError(_status_message(exc)) from exc
    except (openai.APIResponseValidationError, json.JSONDecodeError) as exc:
        # A 200 whose body is not a chat completion is a proxy or a server in trouble: transient.
        raise LLMTransientError(f"The LLM endpoint answered something that is not a chat completion: {exc}") from exc
    except openai.OpenAIError as exc:
        raise LLMPermanentError(f"LLM client error: {exc}") from exc


def llm_probe() -> bool:
    """True when the endpoint answers at all (GET /models, RB_LLM_PROBE_TIMEOUT): one cheap request
    that tells the sweeper whether rows parked after transient errors may resume. Any answer but
    429/5xx counts (a 404 from a server without /models too)."""
    if not llm_configured():
        return False
    try:
        get_client().with_options(timeout=settings.RB_LLM_PROBE_TIMEOUT).models.list()
    except openai.APIStatusError as exc:
        return exc.status_code != 429 and exc.status_code < 500
    except openai.OpenAIError as exc:
        log.info("LLM probe: the endpoint does not answer (%s)", exc)
        return False
    return True
