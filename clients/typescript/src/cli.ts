#!/usr/bin/env node
/**
 * The `rb` command of the TypeScript client (Node 20+), the same as the Python client's:
 *
 *     rb eval run <evaluation-id> [--parallel N] [--timeout SECONDS] [--quiet] -- <command...>
 *     rb eval status <evaluation-id> [--json]
 *
 * The service's URL and token come from RB_URL / RB_TOKEN. For each try `<command>` runs with the try's
 * JSON on stdin and RB_EVAL_RUN, RB_EVAL_TRY, RB_EVAL_ARM, RB_EVAL_TASK_ID, RB_EVAL_EXTRA_TOKENS and
 * RB_EVAL_TOKEN_BUDGET (empty when none) in its environment, and prints ONE JSON object on stdout
 * (`{ final_answer, steps | messages, outcome?, usage?, metadata? }`); its stderr is passed through. A
 * non-zero exit, a timeout or unreadable output is recorded as a failure with the error as the last step.
 * Exit codes: 0 done, 1 unexpected failure, 2 usage error, 3 refused by the service, 4 stopped with tries
 * that another harness holds, 130 interrupted (the tries in progress are offered again after their lease).
 * Compiled with Node's types by tsconfig.cli.json; the library itself needs only `fetch`.
 */

import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

import { Client } from "./client.js";
import { APIError, ConfigurationError, RBError, ServerError } from "./errors.js";
import { AgentError, type EvaluationTry, type TryReport, type TryResult } from "./evaluation.js";

const EXIT = { done: 0, failed: 1, usage: 2, refused: 3, unfinished: 4, interrupted: 130 } as const;
const STDERR_TAIL_LINES = 20;
const LINE_ERROR_CHARS = 200; // of a failure's error, on its progress line (the trajectory keeps it whole)

class UsageError extends Error {}

function found(command: string): boolean {
  const candidates = command.includes("/")
    ? [command]
    : (process.env.PATH ?? "").split(delimiter).filter(Boolean).map((dir) => join(dir, command));
  return candidates.some((path) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

export function tryEnvironment(attempt: EvaluationTry): Record<string, string> {
  return {
    RB_EVAL_RUN: attempt.evaluation,
    RB_EVAL_TRY: attempt.id,
    RB_EVAL_ARM: attempt.arm,
    RB_EVAL_TASK_ID: attempt.task.id,
    RB_EVAL_EXTRA_TOKENS: String(attempt.extra_tokens ?? 0),
    RB_EVAL_TOKEN_BUDGET: attempt.token_budget == null ? "" : String(attempt.token_budget),
  };
}

export function parseOutput(stdout: string): TryResult {
  const text = stdout.trim();
  if (!text) throw new AgentError("the agent command printed nothing on stdout; it must print one JSON object");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new AgentError(`the agent command's stdout is not one JSON object (${why}): ${JSON.stringify(text.slice(0, 200))}; print logs to stderr`);
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    throw new AgentError(`the agent command must print one JSON object, got ${Array.isArray(value) ? "an array" : typeof value}`);
  }
  return value as TryResult;
}

/** The team's agent as a command: one process (in its own process group) per try. */
class CommandAgent {
  private readonly running = new Set<ChildProcess>();
  private stopping = false;

  constructor(
    private readonly argv: string[],
    private readonly timeout: number | undefined,
  ) {}

  run = (attempt: EvaluationTry): Promise<TryResult> => {
    if (this.stopping) return Promise.reject(new AgentError("the harness is stopping"));
    const [command, ...args] = this.argv as [string, ...string[]];
    const child = spawn(command, args, {
      env: { ...process.env, ...tryEnvironment(attempt) },
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    this.running.add(child);
    const out: Buffer[] = [];
    const tail: string[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => {
      process.stderr.write(chunk);
      tail.push(...chunk.toString().split(/(?<=\n)/));
      tail.splice(0, Math.max(0, tail.length - STDERR_TAIL_LINES));
    });
    child.stdin.on("error", () => undefined); // the command did not read its stdin: its choice
    child.stdin.end(JSON.stringify(attempt));
    let timedOut = false;
    const timer = this.timeout ? setTimeout(() => ((timedOut = true), this.kill(child, "SIGKILL")), this.timeout * 1000) : undefined;
    return new Promise<TryResult>((resolve, reject) => {
      child.on("error", (error) => reject(new AgentError(`could not start the agent command '${command}': ${error.message}`)));
      child.on("close", (code, signal) => {
        clearTimeout(timer);
        this.running.delete(child);
        if (timedOut) return reject(new AgentError(`the agent command timed out after ${this.timeout} s`));
        if (code !== 0) {
          const said = tail.join("").trim();
          const how = signal ? `was killed by ${signal}` : `exited with status ${code}`;
          return reject(new AgentError(`the agent command ${how}${said ? `; its stderr ended with:\n${said}` : ""}`));
        }
        try {
          resolve(parseOutput(Buffer.concat(out).toString()));
        } catch (error) {
          reject(error);
        }
      });
    });
  };

  private kill(child: ChildProcess, signal: NodeJS.Signals): void {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      child.kill(signal);
    }
  }

  /** Stop every command in progress and start no more. */
  interrupt(): void {
    this.stopping = true;
    for (const child of this.running) this.kill(child, "SIGTERM");
  }
}

function tryLine(report: TryReport): string {
  const attempt = report.try;
  const where = `${attempt.arm}, task ${attempt.task.id}, try ${attempt.number}/${attempt.k}`;
  if (report.recorded === null) return `${where}: recorded already by another harness`;
  const { recorded, total } = report.recorded.progress;
  let outcome: string;
  if (report.error !== undefined) {
    const said = report.error.split(/\s+/).join(" ");
    outcome = `recorded as a failure: ${said.slice(0, LINE_ERROR_CHARS)}${said.length > LINE_ERROR_CHARS ? "…" : ""}`;
  }
  else if (report.recorded.check_passed === null) outcome = "recorded (outcome: judged by the service)";
  else outcome = report.recorded.check_passed ? "check passed" : "check failed";
  return `${recorded}/${total} tries recorded · ${where}: ${outcome}`;
}

function option(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  if (at < 0) return undefined;
  const value = args[at + 1];
  if (value === undefined) throw new UsageError(`${name} needs a value`);
  args.splice(at, 2);
  return value;
}

async function runCommand(client: Client, id: string, args: string[], command: string[]): Promise<number> {
  const parallel = Number(option(args, "--parallel") ?? "1");
  const timeoutText = option(args, "--timeout");
  const quiet = args.includes("--quiet");
  const unknown = args.filter((arg) => arg !== "--quiet");
  if (unknown.length) throw new UsageError(`unknown argument(s): ${unknown.join(" ")}`);
  if (!Number.isInteger(parallel) || parallel < 1) throw new UsageError("--parallel must be an integer of at least 1");
  const timeout = timeoutText === undefined ? undefined : Number(timeoutText);
  if (timeout !== undefined && !(timeout > 0)) throw new UsageError("--timeout must be a number of seconds above 0");
  if (command.length === 0) throw new UsageError("give the agent command after --, e.g. rb eval run <id> -- node agent.js");
  if (!found(command[0]!)) throw new UsageError(`command not found: ${command[0]}`);
  const agent = new CommandAgent(command, timeout);
  const controller = new AbortController();
  const onSignal = () => {
    controller.abort();
    agent.interrupt();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const summary = await client.evaluate(id, agent.run, {
      parallel,
      signal: controller.signal,
      onTry: (report) => quiet || console.log(tryLine(report)),
    });
    if (summary.interrupted) {
      console.error(
        `\nrb: stopped. The tries in progress were not recorded; they are offered again once their lease ends. ` +
          `Resume with the same command; progress: rb eval status ${id}`,
      );
      return EXIT.interrupted;
    }
    const { recorded, total } = summary.progress;
    const ran = `this harness ran ${summary.ran}` + (summary.failed ? `, ${summary.failed} recorded as failures by the harness` : "");
    if (summary.done) {
      console.log(`Done: ${recorded}/${total} tries recorded (${ran}). Results: rb eval status ${id}`);
      return EXIT.done;
    }
    console.log(
      `Stopped with ${recorded}/${total} tries recorded (${ran}). ${summary.message || "The tries left are claimed by another harness."} Run the same command again to resume.`,
    );
    return EXIT.unfinished;
  } finally {
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
  }
}

async function statusCommand(client: Client, id: string, args: string[]): Promise<number> {
  const unknown = args.filter((arg) => arg !== "--json");
  if (unknown.length) throw new UsageError(`unknown argument(s): ${unknown.join(" ")}`);
  const evaluation = await client.evaluation(id);
  if (args.includes("--json")) {
    console.log(JSON.stringify(evaluation, null, 2));
    return EXIT.done;
  }
  const p = evaluation.progress;
  const arms = evaluation.arms.map((a) => a.kind + (a.release !== null ? ` (release ${a.release})` : "")).join(", ");
  console.log(`Evaluation ${evaluation.id}: ${evaluation.state}; task set ${evaluation.task_set.name}, k = ${evaluation.k}; arms: ${arms}`);
  console.log(`${p.recorded}/${p.total} tries recorded, ${p.known} with a known outcome, ${p.claimed} being run, ${p.pending} not started`);
  if (p.abandoned) console.log(`No try was recorded for a while: resume with ${evaluation.command}`);
  const percent = (value: unknown) => (typeof value === "number" ? `${Math.round(100 * value)} %` : "–");
  const k = Number(evaluation.results?.k ?? evaluation.k);
  const armResults = (evaluation.results?.arms ?? {}) as Record<string, Record<string, unknown>>;
  for (const [kind, arm] of Object.entries(armResults)) {
    const passHat = (arm.pass_hat_k ?? {}) as Record<string, number>;
    console.log(`  ${kind}: success ${percent(arm.success_rate)} of ${arm.known ?? 0} known tries, pass^${k} ${percent(passHat[String(k)])}`);
  }
  const comparisons = (evaluation.results?.comparisons ?? []) as Array<Record<string, unknown>>;
  for (const c of comparisons) {
    const [low, high] = (c.interval as [number, number] | undefined) ?? [];
    const points = (value: number) => `${value >= 0 ? "+" : ""}${Math.round(100 * value)}`;
    let text = `  ${c.arm} vs ${c.versus}: ${points(Number(c.difference ?? 0))} points`;
    if (low !== undefined && high !== undefined) text += ` [${points(low)}, ${points(high)}]`;
    if (typeof c.p_value === "number") text += `, p = ${Number(c.p_value.toPrecision(3))}`;
    text += `: ${c.verdict}`;
    const flipped = (c.flipped ?? {}) as { better?: string[]; worse?: string[] };
    if (flipped.better?.length) text += `; better on ${flipped.better.join(", ")}`;
    if (flipped.worse?.length) text += `; worse on ${flipped.worse.join(", ")}`;
    console.log(text);
  }
  const verdict = evaluation.results?.verdict;
  if (verdict) console.log(`Verdict: at actual cost ${verdict.at_actual_cost}, at equal cost ${verdict.at_equal_cost}. ${verdict.text}`);
  else if (evaluation.state === "open") console.log("Verdict: not yet (it comes when every try's outcome is known).");
  return EXIT.done;
}

const HINTS: Record<string, string> = {
  evaluation_finished: "the evaluation is finished or cancelled: it takes no more tries.",
  "401": "check RB_TOKEN: the token is unknown, revoked or expired.",
  "403": "the token lacks the scope: `eval run` needs ingest, creating runs needs review.",
  "404": "no such evaluation in this token's bank (check the id and RB_TOKEN's bank).",
};

export async function main(argv: string[]): Promise<number> {
  const cut = argv.indexOf("--");
  const args = cut < 0 ? [...argv] : argv.slice(0, cut);
  const command = cut < 0 ? [] : argv.slice(cut + 1);
  try {
    const [group, sub, id, ...rest] = args;
    if (group !== "eval" || (sub !== "run" && sub !== "status") || !id) {
      throw new UsageError("usage: rb eval run <evaluation-id> [--parallel N] [--timeout SECONDS] [--quiet] -- <command...>\n       rb eval status <evaluation-id> [--json]");
    }
    const client = new Client();
    return sub === "run" ? await runCommand(client, id, rest, command) : await statusCommand(client, id, rest);
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigurationError) {
      console.error(`rb: ${error instanceof RBError ? error.detail : error.message}`);
      return EXIT.usage;
    }
    if (!(error instanceof RBError)) throw error;
    console.error(`rb: ${error.detail}${error.code ? ` (${error.code})` : ""}`);
    const hint = HINTS[error.code] ?? HINTS[String(error.status)];
    if (hint) console.error(`rb: ${hint}`);
    return error instanceof APIError && !(error instanceof ServerError) ? EXIT.refused : EXIT.failed;
  }
}

process.exitCode = await main(process.argv.slice(2));
