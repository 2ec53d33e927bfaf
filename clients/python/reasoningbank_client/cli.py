"""The ``rb`` command (the service's URL and token from ``RB_URL`` / ``RB_TOKEN``, as ``Client()``):

    rb eval run <evaluation-id> [--parallel N] [--timeout SECONDS] [--quiet] -- <command...>
    rb eval status <evaluation-id> [--json]

``eval run`` runs the evaluation's tries through ``<command>`` (command_agent.py says how it is called)
until none is left, printing a line per recorded try. Exit codes:

    0    every try of the evaluation is recorded (``status``: the evaluation was shown)
    1    an unexpected failure: the service could not be reached, or answered 5xx, after the retries
    2    a usage error: bad arguments, RB_URL / RB_TOKEN not set, the command not found
    3    the service refused: unknown evaluation, finished or cancelled, a token without the scope
    4    stopped with tries left that another harness holds; run the same command again to resume
    130  interrupted (Ctrl-C): the tries in progress were not recorded and are offered again after
         their lease
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import threading
from typing import Any

from reasoningbank_client.client import Client
from reasoningbank_client.command_agent import CommandAgent
from reasoningbank_client.errors import APIError, ConfigurationError, RBError, ServerError
from reasoningbank_client.eval_types import Evaluation, EvaluationSummary, TryReport

LINE_ERROR_CHARS = 200  # of a failure's error, on its progress line (the trajectory keeps it whole)
EXIT_DONE, EXIT_FAILED, EXIT_USAGE, EXIT_REFUSED, EXIT_UNFINISHED, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130

HINTS = {
    "evaluation_finished": "the evaluation is finished or cancelled: it takes no more tries.",
    401: "check RB_TOKEN: the token is unknown, revoked or expired.",
    403: "the token lacks the scope: `eval run` needs ingest, creating runs needs review.",
    404: "no such evaluation in this token's bank (check the id and RB_TOKEN's bank).",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rb", description="ReasoningBank from the command line.")
    commands = parser.add_subparsers(dest="group", required=True)
    evaluation = commands.add_parser("eval", help="evaluation runs").add_subparsers(dest="command", required=True)
    run = evaluation.add_parser("run", help="run an evaluation's tries: rb eval run <id> -- <command...>")
    run.add_argument("evaluation", help="the evaluation's id")
    run.add_argument("--parallel", type=int, default=1, metavar="N", help="tries run at once (default 1)")
    run.add_argument("--timeout", type=float, default=None, metavar="SECONDS", help="stop a try after this long")
    run.add_argument("--quiet", action="store_true", help="print only the final line")
    status = evaluation.add_parser("status", help="an evaluation's progress and, when known, its verdict")
    status.add_argument("evaluation", help="the evaluation's id")
    status.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    return parser


def _refused(error: RBError) -> int:
    hint = HINTS.get(error.code) or HINTS.get(error.status or 0)
    print(f"rb: {error.detail}" + (f" ({error.code})" if error.code else ""), file=sys.stderr)
    if hint:
        print(f"rb: {hint}", file=sys.stderr)
    if isinstance(error, APIError) and not isinstance(error, ServerError):
        return EXIT_REFUSED
    return EXIT_FAILED


def _try_line(report: TryReport) -> str:
    attempt = report.try_
    where = f"{attempt.arm}, task {attempt.task_key}, try {attempt.number}/{attempt.k}"
    if report.recorded is None:
        return f"{where}: recorded already by another harness"
    progress = report.recorded.progress
    if report.error is not None:
        said = " ".join(report.error.split())
        outcome = f"recorded as a failure: {said[:LINE_ERROR_CHARS]}" + ("…" if len(said) > LINE_ERROR_CHARS else "")
    elif report.recorded.check_passed is None:
        outcome = "recorded (outcome: judged by the service)"
    else:
        outcome = "check passed" if report.recorded.check_passed else "check failed"
    return f"{progress.recorded}/{progress.total} tries recorded · {where}: {outcome}"


def _run(args: argparse.Namespace, command: list[str]) -> int:
    if not command:
        print("rb: give the agent command after --, e.g. rb eval run <id> -- python agent.py", file=sys.stderr)
        return EXIT_USAGE
    if shutil.which(command[0]) is None:
        print(f"rb: command not found: {command[0]}", file=sys.stderr)
        return EXIT_USAGE
    if args.parallel < 1:
        print("rb: --parallel must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    if args.timeout is not None and not args.timeout > 0:
        print("rb: --timeout must be a number of seconds above 0", file=sys.stderr)
        return EXIT_USAGE
    agent = CommandAgent(command, timeout=args.timeout)
    lock = threading.Lock()

    def show(report: TryReport) -> None:
        if not args.quiet:
            with lock:
                print(_try_line(report), flush=True)

    with Client() as client:
        try:
            summary = client.evaluate(args.evaluation, agent, parallel=args.parallel, on_try=show)
        except KeyboardInterrupt:
            print(
                "\nrb: stopped. The tries in progress were not recorded; they are offered again once their "
                f"lease ends. Resume with the same command; progress: rb eval status {args.evaluation}",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED
    return _ended(args.evaluation, summary)


def _ended(evaluation_id: str, summary: EvaluationSummary) -> int:
    progress = summary.progress
    ran = f"this harness ran {summary.ran}"
    if summary.failed:
        ran += f", {summary.failed} recorded as failures by the harness"
    if summary.done:
        print(
            f"Done: {progress.recorded}/{progress.total} tries recorded ({ran}). Results: rb eval status {evaluation_id}"
        )
        return EXIT_DONE
    print(
        f"Stopped with {progress.recorded}/{progress.total} tries recorded ({ran}). "
        f"{summary.message or 'The tries left are claimed by another harness.'} "
        "Run the same command again to resume."
    )
    return EXIT_UNFINISHED


def _percent(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.0f} %"


def _comparison_text(comparison: dict[str, Any]) -> str:
    low, high = (comparison.get("interval") or [None, None])[:2]
    flipped = comparison.get("flipped") or {}
    text = (
        f"{comparison.get('arm')} vs {comparison.get('versus')}: {100 * (comparison.get('difference') or 0):+.0f} points"
        + (f" [{100 * low:+.0f}, {100 * high:+.0f}]" if low is not None and high is not None else "")
        + (f", p = {comparison['p_value']:.3g}" if comparison.get("p_value") is not None else "")
        + f": {comparison.get('verdict', '?')}"
    )
    for way in ("better", "worse"):
        if flipped.get(way):
            text += f"; {way} on {', '.join(map(str, flipped[way]))}"
    return text


def status_text(evaluation: Evaluation) -> str:
    """What ``rb eval status`` prints."""
    arms = ", ".join(a.kind + (f" (release {a.release})" if a.release is not None else "") for a in evaluation.arms)
    progress = evaluation.progress
    lines = [
        f"Evaluation {evaluation.id}: {evaluation.state}; task set {evaluation.task_set.get('name', '?')}, "
        f"k = {evaluation.k}; arms: {arms}",
        f"{progress.recorded}/{progress.total} tries recorded, {progress.known} with a known outcome, "
        f"{progress.claimed} being run, {progress.pending} not started",
    ]
    if progress.abandoned:
        lines.append(f"No try was recorded for a while: resume with {evaluation.command}")
    results = evaluation.results
    for kind, arm in (results.get("arms") or {}).items():
        pass_hat = arm.get("pass_hat_k") or {}
        lines.append(
            f"  {kind}: success {_percent(arm.get('success_rate'))} of {arm.get('known', 0)} known tries, "
            f"pass^{results.get('k', evaluation.k)} {_percent(pass_hat.get(str(results.get('k', evaluation.k))))}"
        )
    for comparison in results.get("comparisons") or []:
        lines.append("  " + _comparison_text(comparison))
    verdict = results.get("verdict") or {}
    if verdict:
        lines.append(
            f"Verdict: at actual cost {verdict.get('at_actual_cost', '?')}, at equal cost "
            f"{verdict.get('at_equal_cost', '?')}. {verdict.get('text', '')}".rstrip()
        )
    elif evaluation.state == "open":
        lines.append("Verdict: not yet (it comes when every try's outcome is known).")
    return "\n".join(lines)


def _status(args: argparse.Namespace) -> int:
    with Client() as client:
        evaluation = client.evaluation(args.evaluation)
    if args.json:
        print(json.dumps(dataclasses.asdict(evaluation), indent=2, default=str))
    else:
        print(status_text(evaluation))
    return EXIT_DONE


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1 :]
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            return _run(args, command)
        return _status(args)
    except ConfigurationError as error:
        print(f"rb: {error.detail}", file=sys.stderr)
        return EXIT_USAGE
    except RBError as error:
        return _refused(error)


if __name__ == "__main__":
    sys.exit(main())
