"""The LLM usage on the pages: the dashboard's panel (last 30 days per stage,
tokens and estimated cost, its empty state) and a trajectory's token counts,
for members only; and the per-bank series at /metrics."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.factories import process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.pipeline.llm_usage import llm_usage_record

pytestmark = pytest.mark.django_db


def _record(bank, *, stage, model, prompt, completion, days_ago=0, trajectory_ids=()):
    usage = type("Usage", (), {"prompt_tokens": prompt, "completion_tokens": completion})()
    day = timezone.now().date() - timedelta(days=days_ago)
    llm_usage_record(bank_id=bank.pk, stage=stage, model=model, usage=usage, day=day, trajectory_ids=trajectory_ids)


def _panel(html: str) -> str:
    match = re.search(r'<section class="panel" id="llm-usage">(.*?)</section>', html, re.S)
    assert match, "no LLM usage panel"
    return match.group(1)


def _cells(html: str) -> list[list[str]]:
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    return [
        [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r, re.S)] for r in rows
    ]


def _dashboard(bank) -> str:
    return reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})


def test_the_dashboard_panel_is_empty_until_the_llm_is_called(client, owner, bank):
    client.force_login(owner)
    panel = _panel(client.get(_dashboard(bank)).content.decode())
    assert "No LLM call for this bank in the last 30 days" in panel and "<table" not in panel


def test_the_dashboard_panel_shows_30_days_per_stage_with_costs(client, owner, bank, other_bank, settings):
    settings.RB_LLM_PRICES = {"gpt-x": {"input": 2.0, "output": 8.0}}
    _record(bank, stage="judge", model="gpt-x", prompt=1_000_000, completion=250_000)  # $4
    _record(bank, stage="judge", model="gpt-x", prompt=500_000, completion=0, days_ago=29)  # $1
    _record(bank, stage="distill", model="local-llama", prompt=1200, completion=300, days_ago=2)
    _record(bank, stage="matts", model="gpt-x", prompt=7, completion=7, days_ago=30)  # too old
    _record(other_bank, stage="experiment", model="gpt-x", prompt=9, completion=9)  # another bank's
    client.force_login(owner)
    panel = _panel(client.get(_dashboard(bank)).content.decode())
    table = panel.split("<details>")[0]
    assert _cells(table) == [
        ["Stage", "Calls", "Prompt tokens", "Completion tokens", "Est. cost"],
        ["Judge", "2", "1500000", "250000", "$5.00"],
        ["Distillation", "1", "1200", "300", "unknown"],
        ["Total", "3", "1501200", "250300", "≥ $5.00"],
    ]
    assert "No price is set for <code>local-llama</code>" in panel
    days = _cells(panel.split("<details>")[1])
    assert [row[0] for row in days[1:]] == [(timezone.now().date() - timedelta(days=n)).isoformat() for n in (0, 2, 29)]


def test_the_live_refresh_leaves_the_panel_out(client, owner, bank):
    _record(bank, stage="judge", model="m", prompt=1, completion=1)
    client.force_login(owner)
    live = client.get(_dashboard(bank), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="live").content.decode()
    assert 'id="live"' in live and "llm-usage" not in live


def test_another_teams_member_and_anonymous_do_not_see_the_panel(client, stranger, bank):
    _record(bank, stage="judge", model="m", prompt=1, completion=1)
    anonymous = client.get(_dashboard(bank))
    assert anonymous.status_code == 302 and "login" in anonymous["Location"]
    client.force_login(stranger)
    assert client.get(_dashboard(bank)).status_code == 404


@pytest.mark.usefixtures("eager_celery")
def test_the_trajectory_page_shows_its_tokens(client, owner, fake_llm, make_trajectory, settings):
    settings.RB_LLM_PRICES = {"fake-model": {"input": 1.0, "output": 1.0}}
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    judge_prompt, distill_prompt = (len(p.split()) for p in fake_llm.prompts)
    client.force_login(owner)
    url = reverse("trajectories:detail", kwargs={"bank_id": t.bank.public_id, "trajectory_id": t.public_id})
    html = client.get(url).content.decode()
    tokens = re.search(r'<section class="panel" id="llm-tokens">(.*?)</section>', html, re.S).group(1)
    judge, distill = len(JUDGE_SUCCESS.split()), len(ITEMS_MD.split())
    rows = _cells(tokens)
    assert rows[1][:4] == ["Distillation · fake-model", "1", str(distill_prompt), str(distill)]
    assert rows[2][:4] == ["Judge · fake-model", "1", str(judge_prompt), str(judge)]
    assert rows[3][:4] == ["Total", "2", str(judge_prompt + distill_prompt), str(judge + distill)]
    assert rows[3][4].startswith("$")


def test_a_trajectory_without_llm_calls_says_so(client, owner, trajectory):
    client.force_login(owner)
    url = reverse(
        "trajectories:detail", kwargs={"bank_id": trajectory.bank.public_id, "trajectory_id": trajectory.public_id}
    )
    assert "No LLM call about this trajectory has been counted" in client.get(url).content.decode()


def test_metrics_expose_tokens_and_cost_per_bank(bank, other_bank, settings):
    settings.RB_LLM_PRICES = {"gpt-x": {"input": 2.0, "output": 8.0}}
    _record(bank, stage="judge", model="gpt-x", prompt=1_000_000, completion=250_000)
    _record(bank, stage="judge", model="gpt-x", prompt=500_000, completion=0, days_ago=40)  # all time
    _record(bank, stage="distill", model="unpriced", prompt=10, completion=5)
    _record(other_bank, stage="judge", model="gpt-x", prompt=3, completion=4)
    text = Client().get("/metrics").content.decode()
    ours = f"{bank.team.slug}/{bank.slug}"
    theirs = f"{other_bank.team.slug}/{other_bank.slug}"

    def sample(name, **labels):
        """The value of ``name`` with exactly ``labels`` (in any order), or None."""
        for found, labelled, value in re.findall(r"^([a-z_]+)\{(.*)\} (\S+)$", text, re.M):
            if found == name and dict(re.findall(r'(\w+)="([^"]*)"', labelled)) == labels:
                return float(value)
        return None

    assert sample("rb_bank_llm_tokens_total", bank=ours, stage="judge", kind="prompt") == 1_500_000
    assert sample("rb_bank_llm_tokens_total", bank=ours, stage="judge", kind="completion") == 250_000
    assert sample("rb_bank_llm_tokens_total", bank=ours, stage="distill", kind="prompt") == 10
    assert sample("rb_bank_llm_tokens_total", bank=theirs, stage="judge", kind="completion") == 4
    assert sample("rb_bank_llm_cost_usd_total", bank=ours, stage="judge") == pytest.approx(5.0)
    # No price for the distill model: no cost series, rather than a cost of 0.
    assert sample("rb_bank_llm_cost_usd_total", bank=ours, stage="distill") is None
    assert "rb_bank_llm_cost_usd_total" in text
