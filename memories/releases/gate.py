"""The evaluation gate: with a bank's gate on (``BankReleasing.evaluation_gate``), a release reaches
agents (becomes production or the canary) only once an evaluation run found it not worse than
production, and under ``beats_control`` better than the same-budget control too. What each run found is
a ReleaseEvaluation row, written by trajectories.evaluation; this module only reads them.

Held: publishing a new release as production or canary, starting a canary of a release never served,
promoting a canary without a passing evaluation, and a "rollback" to a release never served (a publish
in disguise). Never held: a rollback to a release served before (``Release.first_served_at``), and
stopping a canary: going back is always allowed. An owner may override a refusal with a reason; the
override is audited (``release.override_gate``)."""

from __future__ import annotations

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import ROLE_RANK, Bank, Membership, Role
from memories.releases.models import (
    NOTE_MAX,
    BankReleasing,
    EvaluationGate,
    Release,
    ReleaseEvaluation,
)
from reasoningbank_site.errors import Conflict, Forbidden, Invalid

PASSING_VERSUS_PRODUCTION = ("better", "no_difference")
# How a verdict against an arm reads in a sentence: "found it {word} production".
VERDICT_WORDS = {
    "better": "better than",
    "worse": "worse than",
    "no_difference": "no different from",
}


def evaluation_finished(evaluation: ReleaseEvaluation) -> bool:
    """Whether the run's results are complete (its verdicts are final)."""
    return evaluation.finished_at is not None or evaluation.passed is not None


def verdicts_pass(*, versus_production: str, versus_control: str, gate: str) -> bool:
    """The gate's rule on a finished evaluation's verdicts (off reads as not_worse): not worse than
    production (better or no difference shown), and under beats_control better than the control."""
    if versus_production not in PASSING_VERSUS_PRODUCTION:
        return False
    return gate != EvaluationGate.BEATS_CONTROL or versus_control == "better"


def evaluation_passes(evaluation: ReleaseEvaluation, gate: str) -> bool:
    """Whether ``evaluation`` lets its release through ``gate``: finished, and its verdicts pass."""
    return evaluation_finished(evaluation) and verdicts_pass(
        versus_production=evaluation.versus_production, versus_control=evaluation.versus_control, gate=gate
    )


def evaluation_state(evaluation: ReleaseEvaluation, gate: str) -> str:
    """``under_way``, ``passed`` or ``failed`` under ``gate`` (what the releases page and API show)."""
    if not evaluation_finished(evaluation):
        return "under_way"
    return "passed" if evaluation_passes(evaluation, gate) else "failed"


def gate_finding(*, release: Release, gate: str) -> str | None:
    """None when an evaluation of ``release`` passes ``gate``; else one sentence saying which evaluation
    is missing or what the newest finished one found."""
    evaluations = list(ReleaseEvaluation.objects.filter(release=release).order_by("-created_at", "-pk"))
    if any(evaluation_passes(e, gate) for e in evaluations):
        return None
    n = release.number
    finished = [e for e in evaluations if evaluation_finished(e)]
    if not evaluations:
        return f"Release {n} has no evaluation: run one with release {n} as the candidate."
    if not finished:
        return f"Release {n}'s evaluation {evaluations[0].run} is still under way: its results decide."
    found = finished[0]
    summary = f" ({found.summary.rstrip('.')})" if found.summary else ""
    too_few = "had too few tasks with known outcomes to compare it with"
    if found.versus_production not in PASSING_VERSUS_PRODUCTION:
        if not found.versus_production:
            return f"Release {n}'s evaluation had no production arm: run one comparing it with production."
        if found.versus_production == "not_enough":
            return f"Release {n}'s evaluation {too_few} production{summary}."
        word = VERDICT_WORDS.get(found.versus_production, "not comparable with")
        return f"Release {n}'s evaluation found it {word} production{summary}."
    required = "this bank's gate requires it to be better than the same-budget control"
    if not found.versus_control:
        return f"Release {n}'s evaluation had no same-budget control arm; {required}: run one with a control arm."
    if found.versus_control == "not_enough":
        return f"Release {n}'s evaluation {too_few} the same-budget control{summary}; {required}."
    word = VERDICT_WORDS.get(found.versus_control, "not comparable with")
    return f"Release {n}'s evaluation found it {word} the same-budget control{summary}; {required}."


def role_at_least(*, bank: Bank, role: str, actor=None, token=None) -> bool:
    """Whether ``actor`` (else the user who created ``token``: a token acts for its creator) holds
    ``role`` or higher in ``bank``'s team now."""
    user = actor if actor is not None else getattr(token, "created_by", None)
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    held = Membership.objects.filter(team_id=bank.team_id, user=user).values_list("role", flat=True).first()
    return held is not None and ROLE_RANK[held] >= ROLE_RANK[role]


def release_gate_check(
    *,
    releasing: BankReleasing,
    release: Release,
    override: bool = False,
    reason: str = "",
    doing: str = "published",
    actor=None,
    token=None,
) -> None:
    """Let ``release`` reach agents (``doing``: "published", "made the canary", "promoted"…) under the
    bank's gate. Raises Conflict (``evaluation_required``) saying which evaluation is missing or what
    it found; with ``override``, Forbidden (``owner_required``) unless an owner asks (a token: one an
    owner created) and Invalid without a ``reason``; an override that goes through is audited."""
    gate = releasing.evaluation_gate
    if gate == EvaluationGate.OFF:
        return
    finding = gate_finding(release=release, gate=gate)
    if finding is None:
        return
    if not override:
        raise Conflict(
            f"{finding} This bank requires a passing evaluation before a release is {doing}; "
            "an owner may override it, with a reason.",
            code="evaluation_required",
        )
    if not role_at_least(bank=releasing.bank, role=Role.OWNER, actor=actor, token=token):
        raise Forbidden(
            "Only an owner may override the evaluation gate (an API token: one an owner created).",
            code="owner_required",
        )
    reason = (reason or "").strip()
    if not reason:
        raise Invalid("override_reason: say why the release goes out without a passing evaluation.")
    if len(reason) > NOTE_MAX:
        raise Invalid(f"override_reason: at most {NOTE_MAX} characters (got {len(reason)}).")
    evaluations = ReleaseEvaluation.objects.filter(release=release).order_by("-created_at")
    audit_record(
        action=AuditAction.RELEASE_OVERRIDE_GATE,
        bank=releasing.bank,
        user=actor,
        token=token,
        obj=release,
        after={
            "release": release.number,
            "move": doing,
            "gate": gate,
            "reason": reason,
            "finding": finding,
            "evaluations": [
                {
                    "run": str(e.run),
                    "state": evaluation_state(e, gate),
                    "versus_production": e.versus_production,
                    "versus_control": e.versus_control,
                }
                for e in evaluations[:5]
            ],
        },
    )


def gate_refuses_new_release(*, releasing: BankReleasing, doing: str, override: bool) -> None:
    """Refuse, before anything is written, to serve a release about to be written (it has no
    evaluation yet) when the gate is on and nobody overrides. Raises Conflict (``evaluation_required``)."""
    if releasing.evaluation_gate == EvaluationGate.OFF or override:
        return
    raise Conflict(
        f"This bank requires a passing evaluation before a release is {doing}, and a new release has none "
        "yet: publish it as a candidate, evaluate it, then serve it (an owner may override, with a reason).",
        code="evaluation_required",
    )
