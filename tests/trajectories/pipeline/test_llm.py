"""The LLM client at its HTTP boundary (the fake OpenAI server): an answer's
text, and every failure sorted into transient (retry later, with the
server's Retry-After) or permanent; the endpoint probe; the model per bank."""

from types import SimpleNamespace

import pytest

from trajectories.pipeline.llm import chat, distill_model_for, get_client, judge_model_for, llm_configured, llm_probe
from trajectories.pipeline.llm_errors import LLMNotConfigured, LLMPermanentError, LLMTransientError

MESSAGES = [{"role": "user", "content": "Judge this."}]


def test_the_answer_text_comes_back_trimmed(fake_llm):
    fake_llm.reply("  Status: success \n")
    assert chat(model="fake-model", messages=MESSAGES) == "Status: success"
    assert fake_llm.requests[0]["model"] == "fake-model"


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503])
def test_rate_limits_timeouts_and_server_errors_are_transient(fake_llm, status):
    fake_llm.error(status, "busy", retry_after=7)
    with pytest.raises(LLMTransientError, match=f"HTTP {status} from the LLM endpoint: busy") as error:
        chat(model="fake-model", messages=MESSAGES)
    assert error.value.retry_after == 7


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_request_errors_are_permanent(fake_llm, status):
    fake_llm.error(status, "no such model")
    with pytest.raises(LLMPermanentError, match=f"HTTP {status} from the LLM endpoint: no such model") as error:
        chat(model="fake-model", messages=MESSAGES)
    assert not isinstance(error.value, LLMTransientError)
    assert len(fake_llm.requests) == 1  # the client itself never retries


def test_an_unreachable_endpoint_is_transient(settings, fake_llm):
    settings.RB_LLM_BASE_URL = fake_llm.base_url
    fake_llm.stop()  # nothing listens there now
    with pytest.raises(LLMTransientError, match="Could not reach the LLM endpoint"):
        chat(model="fake-model", messages=MESSAGES)


def test_no_endpoint_configured_is_permanent_and_the_probe_says_no(no_llm):
    assert not llm_configured()
    with pytest.raises(LLMNotConfigured):
        chat(model="fake-model", messages=MESSAGES)
    assert llm_probe() is False


def test_the_probe_says_whether_the_endpoint_answers(fake_llm):
    assert llm_probe() is True
    fake_llm.down = True  # every request answers 503
    assert llm_probe() is False


def test_a_bank_may_choose_its_judge_and_distill_models(settings):
    settings.RB_LLM_MODEL = "default-model"
    assert judge_model_for(SimpleNamespace(judge_model="  ")) == "default-model"
    assert judge_model_for(SimpleNamespace(judge_model=" strict-judge ")) == "strict-judge"
    assert distill_model_for(SimpleNamespace(distill_model="")) == "default-model"


def test_a_changed_llm_setting_drops_the_cached_client(fake_llm, settings):
    """A client is kept per endpoint; a changed endpoint setting (as tests and override_settings make) drops
    it, so no client keeps pooled connections to a server that is gone, even one back on the same port."""
    first = get_client()
    assert get_client() is first
    settings.RB_LLM_BASE_URL = "http://127.0.0.1:9/v1"
    settings.RB_LLM_BASE_URL = fake_llm.base_url
    assert get_client() is not first
    fake_llm.reply("answered by the fresh client")
    assert chat(model="fake-model", messages=[{"role": "user", "content": "hi"}], purpose="judge") == (
        "answered by the fresh client"
    )
