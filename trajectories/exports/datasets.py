"""A bank's trajectories and judgments as datasets (reads only, streamed as
JSON Lines by the export views and the export API):

* ``chat_finetune_rows`` — judged trajectories as OpenAI chat fine-tuning
  examples: ``{"messages": [...], "tools": [...], "metadata": {...}}``, the
  agent's run replayed as system / user / assistant (with ``tool_calls``) /
  tool messages, so a model learns from the runs the judge and the reviewers
  called successes (or, for contrast, failures);
* ``judge_eval_rows`` — the human-labelled set for evaluating the judge: one
  row per LLM judgment of a trajectory that a human also judged, with the
  prompt version, both verdicts and the judge's input rebuilt from that
  prompt version when it can be rebuilt exactly.

Trajectories whose steps retention purged are left out of the chat set (no run
to learn from); in the judge set they keep their verdicts but no input."""

from __future__ import annotations

import re
from collections.abc import Iterator

from django.db.models import Exists, OuterRef, Prefetch

from accounts.models import Bank
from memories.trust.models import VerdictTier
from reasoningbank_site.keyset import keyset_chunks
from trajectories.judging.models import PromptName, PromptVersion
from trajectories.judging.prompt_versions import FEW_SHOT_SUFFIX, ActivePrompt, prompt_of
from trajectories.models import Judgment, JudgmentSource, Label, Trajectory
from trajectories.pipeline.judge import judge_prompt_build
from trajectories.prompts import prompt_load

CHUNK = 200
CHAT_VERDICTS = ("success", "failure", "all")
# The system message of a run that recorded none of its own.
DEFAULT_SYSTEM = (
    "You are an agent. Complete the user's task, using the tools when they help, then give the final answer."
)

_DEFAULT_VERSION = re.compile(r"^judge/v(\d+)$")
_BANK_VERSION = re.compile(r"^judge@bank-(\d+)-v(\d+)$")


def _judgments() -> Prefetch:
    return Prefetch("judgments", queryset=Judgment.objects.select_related("author").order_by("created_at", "id"))


def _effective(judgments: list[Judgment], verdict: str) -> Judgment | None:
    """The judgment that set ``verdict`` (latest human, else agent signal, else LLM)."""
    for source in (JudgmentSource.HUMAN, JudgmentSource.AGENT, JudgmentSource.LLM):
        found = [j for j in judgments if j.source == source and j.label == verdict]
        if found:
            return found[-1]
    return None


# --- OpenAI chat fine-tuning ----------------------------------------------------------------------


class _Chat:
    """Builds the messages of one run: consecutive assistant text and tool calls
    become one assistant message; every tool call is answered by a tool message
    (a placeholder when the run recorded no result), as the format requires."""

    def __init__(self):
        self.messages: list[dict] = []
        self.tools: dict[str, None] = {}
        self.pending: list[str] = []  # call ids of the last assistant message not yet answered

    def _close_calls(self) -> None:
        for call_id in self.pending:
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": "(no result recorded)"})
        self.pending = []

    def say(self, role: str, content: str) -> None:
        self._close_calls()
        self.messages.append({"role": role, "content": content})

    def think(self, content: str) -> None:
        last = self.messages[-1] if self.messages else None
        if last and last["role"] == "assistant" and "tool_calls" not in last and not self.pending:
            last["content"] = f"{last['content']}\n\n{content}" if last["content"] else content
        else:
            self.say("assistant", content)

    def call(self, step: dict) -> None:
        name = str(step.get("name") or step.get("content") or "tool")
        call_id = str(step.get("call_id") or f"call_{step.get('index', len(self.messages))}")
        last = self.messages[-1] if self.messages else None
        if not (last and last["role"] == "assistant"):
            self._close_calls()
            last = {"role": "assistant", "content": None}
            self.messages.append(last)
        last.setdefault("tool_calls", []).append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": str(step.get("arguments") or "{}")},
            }
        )
        self.tools[name] = None
        self.pending.append(call_id)

    def result(self, step: dict) -> None:
        call_id = str(step.get("call_id") or "")
        if call_id not in self.pending:
            call_id = self.pending[0] if self.pending and not step.get("call_id") else ""
        content = str(step.get("content") or "")
        if call_id:
            self.pending.remove(call_id)
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
        else:  # an observation with no call to answer (thought/action/observation runs)
            self.say("user", f"Observation: {content}")

    def finish(self, final_answer: str) -> None:
        self._close_calls()
        last = self.messages[-1]
        if final_answer and not (last["role"] == "assistant" and last.get("content") == final_answer):
            self.messages.append({"role": "assistant", "content": final_answer})


def chat_messages(trajectory: Trajectory) -> tuple[list[dict], list[dict]]:
    """(messages, tools) of one run in OpenAI chat format: the run's own
    system and user messages (else DEFAULT_SYSTEM and the task), then its
    steps; the final answer is the last assistant message."""
    steps = [s for s in trajectory.steps or [] if isinstance(s, dict)]
    opening = next((n for n, s in enumerate(steps) if s.get("kind") != "system"), len(steps))
    chat = _Chat()
    if not opening:
        chat.say("system", DEFAULT_SYSTEM)
    if not (opening < len(steps) and steps[opening].get("kind") == "user"):
        steps = [*steps[:opening], {"kind": "user", "content": trajectory.task}, *steps[opening:]]
    for step in steps:
        kind, content = step.get("kind"), str(step.get("content") or "")
        if kind in ("user", "system"):
            chat.say(kind, content)
        elif kind == "tool_call":
            chat.call(step)
        elif kind in ("tool_result", "observation"):
            chat.result(step)
        elif content:  # thought, action, answer, refinement: the agent's own words
            chat.think(content)
    chat.finish(trajectory.final_answer)
    tools = [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}} for name in chat.tools]
    return chat.messages, tools


def chat_trajectories(*, bank: Bank, verdict: str):
    """The trajectories of the chat set: ``verdict`` (or either, for all), their steps kept."""
    labels = Label.values if verdict == "all" else [verdict]
    return Trajectory.objects.filter(bank=bank, verdict__in=labels, raw__isnull=False).select_related("raw")


def chat_finetune_rows(*, bank: Bank, verdict: str = "success", metadata: bool = True) -> Iterator[dict]:
    """The bank's judged trajectories whose effective verdict is ``verdict``
    (success, failure, or all for both), oldest first, as OpenAI chat
    fine-tuning examples. ``tools`` (present when the run called tools) lists
    the tools it called, with no parameter schema (the service never sees
    one). ``metadata`` (unless False) says where the example came from and who
    decided its verdict. Raises ValueError for another ``verdict``."""
    if verdict not in CHAT_VERDICTS:
        raise ValueError(f"verdict must be one of {CHAT_VERDICTS}, got {verdict!r}")
    qs = chat_trajectories(bank=bank, verdict=verdict).prefetch_related(_judgments())
    for t in (t for rows in keyset_chunks(qs, chunk=CHUNK) for t in rows):
        messages, tools = chat_messages(t)
        row: dict = {"messages": messages}
        if tools:
            row["tools"] = tools
        if metadata:
            decided = _effective(list(t.judgments.all()), t.verdict)
            row["metadata"] = {
                "trajectory_id": str(t.public_id),
                "task_id": t.task_id,
                "agent": t.agent,
                "verdict": t.verdict,
                "verdict_source": decided.source if decided else "",
                "prompt_version": decided.prompt_version if decided else "",
                "reward": t.reward,
                "group_id": t.group_id,
                "created_at": t.created_at.isoformat(),
            }
        yield row


# --- the human-labelled judge evaluation set ------------------------------------------------------


class _JudgePrompts:
    """The words of each judge prompt version string, looked up once per export."""

    def __init__(self, bank: Bank):
        self.bank = bank
        self.cache: dict[str, ActivePrompt | None] = {}

    def get(self, version: str) -> ActivePrompt | None:
        if version not in self.cache:
            self.cache[version] = self._load(version)
        return self.cache[version]

    def _load(self, version: str) -> ActivePrompt | None:
        if m := _DEFAULT_VERSION.match(version):
            try:
                text, label = prompt_load(PromptName.JUDGE, int(m.group(1)))
            except FileNotFoundError:
                return None
            return ActivePrompt(name=PromptName.JUDGE, text=text, version=label, custom=None)
        if (m := _BANK_VERSION.match(version)) and int(m.group(1)) == self.bank.pk:
            saved = PromptVersion.objects.filter(bank=self.bank, name=PromptName.JUDGE, number=int(m.group(2))).first()
            return prompt_of(name=PromptName.JUDGE, version=saved) if saved else None
        return None


def judge_input(trajectory: Trajectory, version: str, prompts: _JudgePrompts) -> tuple[str | None, str]:
    """(the prompt the judge read, "") when it can be rebuilt exactly from
    ``version``, else (None, why not)."""
    if version.endswith(FEW_SHOT_SUFFIX):
        return None, "few-shot: the reviewers' examples shown then are not kept, so the input cannot be rebuilt"
    if trajectory.steps_purged:
        return None, "the bank's retention deleted the steps"
    prompt = prompts.get(version)
    if prompt is None:
        return None, f"prompt version {version!r} is not a default file or a saved version of this bank"
    text, _version = judge_prompt_build(trajectory=trajectory, prompt=prompt, few_shot=False)
    return text, ""


def judge_eval_rows(*, bank: Bank, with_input: bool = True) -> Iterator[dict]:
    """One row per LLM judgment of each trajectory of ``bank`` that a human
    also judged (oldest trajectory first): the judge's prompt version, model,
    verdict and rationale against the latest human verdict and its reason,
    whether they agree, and (``with_input``) the judge's input as
    ``judge_input`` — null with ``judge_input_note`` saying why when it
    cannot be rebuilt exactly (few-shot examples, purged steps, an unknown
    version)."""
    # The runs a human judged are the runs of the human tier (a human judgment always sets it, nothing lowers
    # it): the partial index trajectory_human_judged holds just those, in (created_at, id) order, so each chunk
    # is an index range read with one probe of the LLM's judgments per run, not a walk over every run of the
    # bank probing its judgments (nor a sort of every human judgment of the bank).
    qs = (
        Trajectory.objects.filter(bank=bank, verdict_tier=VerdictTier.HUMAN)
        .filter(Exists(Judgment.objects.filter(trajectory=OuterRef("pk"), source=JudgmentSource.LLM)))
        .select_related("raw")
        .prefetch_related(_judgments())
        .order_by("created_at", "id")
    )
    prompts = _JudgePrompts(bank)
    for t in (t for rows in keyset_chunks(qs, chunk=CHUNK) for t in rows):
        judgments = list(t.judgments.all())
        humans = [j for j in judgments if j.source == JudgmentSource.HUMAN]
        if not humans:  # the tier without a human judgment: no write path leaves that, but no row to pair either
            continue
        human = humans[-1]
        for judge in (j for j in judgments if j.source == JudgmentSource.LLM):
            row = {
                "trajectory_id": str(t.public_id),
                "task_id": t.task_id,
                "task": t.task,
                "prompt_version": judge.prompt_version,
                "model": judge.model,
                "judge_verdict": judge.label,
                "judge_rationale": judge.rationale,
                "judged_at": judge.created_at.isoformat(),
                "human_verdict": human.label,
                "human_reason": human.rationale,
                "human": human.author.get_username() if human.author_id else "",
                "labelled_at": human.created_at.isoformat(),
                "agree": judge.label == human.label,
            }
            if with_input:
                row["judge_input"], row["judge_input_note"] = judge_input(t, judge.prompt_version, prompts)
            yield row
