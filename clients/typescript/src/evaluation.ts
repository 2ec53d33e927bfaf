/**
 * Evaluation runs: what the endpoints answer, and `client.evaluate(runId, agent)`, the harness loop.
 *
 * Each worker (`parallel` of them) claims the run's next try, hands it to `agent(try)` and records what it
 * returns: `{ final_answer, steps | messages, outcome?, usage?, metadata? }`. When the agent throws, or
 * returns anything else, the try is recorded as a failure with the error as its last step; so is an answer
 * the service refuses (400, 413, 422). It ends when no try is left to claim: `done` when every try is
 * recorded, else the tries left are claimed by another harness (offered again when their lease ends).
 * Aborting `signal` stops at once: the tries in progress are not recorded (offered again after their
 * lease). Any other error (the run was cancelled, the service cannot be reached) stops claiming; the tries
 * in progress are still recorded, then the error is thrown.
 */

import { BadRequestError, ConflictError, PayloadTooLargeError, ValidationError } from "./errors.js";
import type { JsonValue, MemoryItem, Message, Outcome, Step } from "./types.js";

export type ArmKind = "candidate" | "production" | "none" | "control";

export interface TaskCheck {
  type: "contains" | "equals" | "regex";
  value: string;
  ignore_case?: boolean;
}

/** One line of an uploaded task set. */
export interface TaskLine {
  id: string;
  task: string;
  metadata?: Record<string, JsonValue>;
  check?: TaskCheck;
  /** The task id whose lessons are never served for this task (leave-one-task-out). */
  task_id?: string;
}

export interface TaskSet {
  id: string;
  name: string;
  description: string;
  source: "trajectories" | "upload" | (string & {});
  task_count: number;
  created_at: string;
}

export interface TaskSetDetail extends TaskSet {
  filters: Record<string, unknown>;
  tasks: Array<{ id: string; task: string; metadata: Record<string, JsonValue>; check: TaskCheck | null; task_id: string }>;
}

export interface EvaluationProgress {
  total: number;
  recorded: number;
  claimed: number;
  pending: number;
  /** Recorded tries whose outcome is known (their check, else their judged verdict). */
  known: number;
  last_activity_at: string | null;
  /** Open, with tries left and idle for longer than the lease: resume it. */
  abandoned: boolean;
}

export interface Evaluation {
  id: string;
  state: "open" | "finished" | "cancelled";
  note: string;
  k: number;
  task_set: { id: string; name: string };
  arms: Array<{ kind: ArmKind; release: number | null }>;
  token_budget: number | null;
  progress: EvaluationProgress;
  /** The statistics and verdicts (docs/evaluation.md); `{}` until computed, absent in lists. */
  results?: Record<string, unknown> & {
    verdict?: { at_actual_cost: string; at_equal_cost: string; text: string };
  };
  created_at: string;
  finished_at: string | null;
  last_activity_at: string | null;
  /** How to run its tries: `rb eval run <id> -- <your agent command>`. */
  command: string;
}

export interface EvaluationCreate {
  /** The task set's id or name. */
  task_set: string;
  arms: ArmKind[];
  /** Tries per task and arm, 1 to 20. */
  k: number;
  /** The candidate arm's release number. */
  release?: number | null;
  token_budget?: number | null;
  note?: string;
}

/** One try handed to the agent (exactly what `rb eval run` writes on the command's stdin). */
export interface EvaluationTry {
  id: string;
  evaluation: string;
  task: { id: string; text: string; metadata: Record<string, JsonValue> };
  arm: ArmKind;
  release: number | null;
  number: number;
  k: number;
  memories: MemoryItem[];
  system_block: string;
  memory_tokens: number;
  /** The control's extra tokens: those of the block it was not given (0 in the other arms). */
  extra_tokens: number;
  token_budget: number | null;
  lease_seconds: number;
}

export interface NextTry {
  try: EvaluationTry | null;
  /** True when every try of the run is recorded. */
  done: boolean;
  message: string;
}

/** What the agent answers for one try. */
export interface TryResult {
  final_answer?: string;
  steps?: Step[];
  messages?: Message[];
  /** The system prompt sent apart from `messages` (Anthropic's convention). */
  system?: string | Array<{ type: "text"; text: string }>;
  outcome?: Outcome;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
  metadata?: Record<string, JsonValue>;
}

export interface TryRecorded {
  try: string;
  trajectory: string;
  /** The task's check on the answer; null when the task has none (the judged verdict decides). */
  check_passed: boolean | null;
  progress: EvaluationProgress;
}

/** What `evaluate()` did with one try: `recorded` is null when another harness recorded it first. */
export interface TryReport {
  try: EvaluationTry;
  recorded: TryRecorded | null;
  /** Why it was recorded as a failure (the agent threw or answered something unreadable). */
  error?: string;
}

export interface EvaluateOptions {
  /** Tries run at once (default 1). */
  parallel?: number;
  /** Called after each recorded try. */
  onTry?: (report: TryReport) => void;
  /** Abort to stop at once, recording none of the tries in progress. */
  signal?: AbortSignal;
}

export interface EvaluationSummary {
  evaluation: string;
  /** Tries handed to the agent. */
  ran: number;
  recorded: number;
  /** Recorded as failures by the harness: the agent threw, or its answer was unreadable. */
  failed: number;
  /** Recorded first by another harness. */
  already_recorded: number;
  progress: EvaluationProgress;
  /** True when every try of the run is recorded. */
  done: boolean;
  message: string;
  /** True when `signal` stopped it. */
  interrupted: boolean;
}

export type Agent = (attempt: EvaluationTry) => TryResult | Promise<TryResult>;

/** What `evaluate()` needs of a client (the `Client` class has these). */
export interface EvaluationClient {
  nextTry(evaluationId: string): Promise<NextTry>;
  recordTry(evaluationId: string, tryId: string, result: TryResult): Promise<TryRecorded>;
  evaluation(evaluationId: string): Promise<Evaluation>;
}

const RESULT_KEYS = ["final_answer", "steps", "messages", "system", "outcome", "usage", "metadata"];

/** The agent failed a try: recorded as a failure with this message. */
export class AgentError extends Error {}

/** The try's record body from what the agent returned; AgentError saying what is wrong with it. */
export function resultBody(result: unknown): TryResult {
  if (!result || typeof result !== "object" || Array.isArray(result)) {
    throw new AgentError(`the agent must answer one JSON object, got ${Array.isArray(result) ? "an array" : typeof result}`);
  }
  const fields = result as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((key) => !RESULT_KEYS.includes(key)).sort();
  if (unknown.length) {
    throw new AgentError(
      `unknown field(s) ${unknown.map((k) => `'${k}'`).join(", ")} in the agent's answer; known: ${RESULT_KEYS.join(", ")}`,
    );
  }
  const isObject = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v);
  const checks: Array<[string, (v: unknown) => boolean, string]> = [
    ["final_answer", (v) => typeof v === "string", "a string"],
    ["steps", Array.isArray, "a list of steps"],
    ["messages", Array.isArray, "a list of messages"],
    ["usage", isObject, "an object {prompt_tokens, completion_tokens}"],
    ["metadata", isObject, "an object"],
  ];
  for (const [key, ok, what] of checks) {
    const value = fields[key];
    if (value !== undefined && value !== null && !ok(value)) {
      throw new AgentError(`${key} must be ${what}, got ${Array.isArray(value) ? "array" : typeof value}`);
    }
  }
  const outcome = fields.outcome;
  if (outcome !== undefined && outcome !== null && outcome !== "success" && outcome !== "failure") {
    throw new AgentError(`outcome must be 'success' or 'failure', got '${String(outcome)}'`);
  }
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined && v !== null)) as TryResult;
}

/** A failed try: no answer, the error as its one step and in the metadata. */
export function failureBody(error: string): TryResult {
  return { steps: [{ error }], final_answer: "", outcome: "failure", metadata: { error } };
}

function describe(error: unknown): string {
  if (error instanceof AgentError) return error.message;
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

const REFUSED = [BadRequestError, PayloadTooLargeError, ValidationError];

async function recordOrNull(client: EvaluationClient, id: string, tryId: string, body: TryResult) {
  try {
    return await client.recordTry(id, tryId, body);
  } catch (error) {
    if (error instanceof ConflictError && error.code === "try_recorded") return null;
    throw error;
  }
}

/** `client.evaluate(evaluationId, agent, options)`: see the module's comment. */
export async function evaluate(
  client: EvaluationClient,
  evaluationId: string,
  agent: Agent,
  options: EvaluateOptions = {},
): Promise<EvaluationSummary> {
  const parallel = options.parallel ?? 1;
  if (!Number.isInteger(parallel) || parallel < 1) throw new RangeError("parallel must be an integer of at least 1");
  const summary: EvaluationSummary = {
    evaluation: evaluationId,
    ran: 0,
    recorded: 0,
    failed: 0,
    already_recorded: 0,
    progress: { total: 0, recorded: 0, claimed: 0, pending: 0, known: 0, last_activity_at: null, abandoned: false },
    done: false,
    message: "",
    interrupted: false,
  };
  let stop = false;
  let failure: unknown;
  const interrupted = () => options.signal?.aborted === true;

  const runOne = async (attempt: EvaluationTry) => {
    let error: string | undefined;
    let body: TryResult;
    try {
      body = resultBody(await agent(attempt));
    } catch (caught) {
      error = describe(caught);
      body = failureBody(error);
    }
    if (interrupted()) return;
    let recorded: TryRecorded | null;
    try {
      recorded = await recordOrNull(client, evaluationId, attempt.id, body);
    } catch (caught) {
      if (!REFUSED.some((cls) => caught instanceof cls)) throw caught;
      error = `the service refused the agent's answer: ${(caught as ValidationError).detail}`;
      recorded = await recordOrNull(client, evaluationId, attempt.id, failureBody(error));
    }
    if (recorded === null) {
      summary.already_recorded += 1;
    } else {
      summary.recorded += 1;
      if (error !== undefined) summary.failed += 1;
      summary.progress = recorded.progress;
    }
    options.onTry?.(error === undefined ? { try: attempt, recorded } : { try: attempt, recorded, error });
  };

  const worker = async () => {
    try {
      while (!stop && !interrupted()) {
        const claimed = await client.nextTry(evaluationId);
        if (claimed.try === null) {
          summary.done ||= claimed.done;
          summary.message ||= claimed.message;
          return;
        }
        summary.ran += 1;
        await runOne(claimed.try);
      }
    } catch (caught) {
      stop = true;
      failure ??= caught;
    }
  };

  await Promise.all(Array.from({ length: parallel }, worker));
  if (interrupted()) {
    summary.interrupted = true;
    return summary;
  }
  if (failure !== undefined) throw failure;
  const progress = (await client.evaluation(evaluationId)).progress;
  summary.progress = progress;
  summary.done = progress.total > 0 && progress.recorded >= progress.total;
  return summary;
}
