"""The LLM call metrics: every call counted once by its outcome (ok,
transient, permanent) and timed, errors passed on unchanged; only the tokens
the endpoint reported are added. Read back through prometheus_client's registry."""

import uuid
from types import SimpleNamespace

import pytest
from prometheus_client import REGISTRY

from trajectories.pipeline.llm_metrics import llm_measured, llm_tokens_count


class Transient(Exception):
    pass


def _sample(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def model() -> str:
    return f"model-{uuid.uuid4().hex[:8]}"  # labels of this test alone


def test_each_call_is_counted_by_outcome_and_timed(model):
    @llm_measured(transient=Transient)
    def chat(*, model, purpose, fail=None):
        if fail:
            raise fail
        return "answer"

    assert chat(model=model, purpose="judge") == "answer"
    with pytest.raises(Transient):
        chat(model=model, purpose="judge", fail=Transient("rate limited"))
    with pytest.raises(ValueError, match="bad request"):
        chat(model=model, purpose="judge", fail=ValueError("bad request"))
    chat(model=model, purpose="distill")

    counts = {
        outcome: _sample("rb_llm_calls_total", model=model, purpose="judge", outcome=outcome)
        for outcome in ("ok", "transient", "permanent")
    }
    assert counts == {"ok": 1, "transient": 1, "permanent": 1}
    assert _sample("rb_llm_calls_total", model=model, purpose="distill", outcome="ok") == 1
    assert _sample("rb_llm_call_duration_seconds_count", model=model, purpose="judge") == 3


def test_only_reported_token_counts_are_added(model):
    llm_tokens_count(model=model, purpose="judge", usage=SimpleNamespace(prompt_tokens=120, completion_tokens=30))
    llm_tokens_count(model=model, purpose="judge", usage=None)  # the endpoint sent no usage
    llm_tokens_count(model=model, purpose="judge", usage=SimpleNamespace(prompt_tokens=0, completion_tokens=None))
    assert _sample("rb_llm_tokens_total", model=model, purpose="judge", kind="prompt") == 120
    assert _sample("rb_llm_tokens_total", model=model, purpose="judge", kind="completion") == 30


def test_each_process_names_its_metric_files_apart():
    """Containers on the host's network share its host name and each count pids from 1: the names of two
    processes with one pid still differ (a random part drawn per process); one process keeps its name,
    and a forked child gets another."""
    import os

    from trajectories.pipeline import llm_metrics

    name = llm_metrics.process_file_name()
    assert name == llm_metrics.process_file_name() and f"-{os.getpid()}-" in name and "_" not in name
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child reports its name and leaves at once
        os.write(write, llm_metrics.process_file_name().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    child_name = os.read(read, 200).decode()
    os.close(read)
    assert f"-{child}-" in child_name and child_name != llm_metrics.process_file_name()
    # Without the pids the names still differ: a process of another container given this pid gets another name.
    assert child_name.replace(f"-{child}-", "-") != name.replace(f"-{os.getpid()}-", "-")
