/**
 * `Client`: one method per endpoint of the agent API, with safe retries and typed errors.
 * Needs only `fetch` (Node 20+, Deno, Bun, browsers).
 */

import { ConfigurationError, ConnectionError, RBError, WaitTimeoutError, errorFor } from "./errors.js";
import { apiBaseUrl, apiPath } from "./paths.js";
import { DEFAULT_RETRY, RETRY_STATUSES, type RetryPolicy, nextDelay, parseRetryAfter, sleep } from "./retry.js";
import {
  type Agent,
  type EvaluateOptions,
  type Evaluation,
  type EvaluationCreate,
  type EvaluationSummary,
  type NextTry,
  type TaskLine,
  type TaskSet,
  type TaskSetDetail,
  type TryRecorded,
  type TryResult,
  evaluate,
} from "./evaluation.js";
import { Run, type RunOptions } from "./run.js";
import {
  type BatchResult,
  type Impact,
  type ItemEdit,
  type MemoryItem,
  type MemoryPage,
  type RecordOptions,
  type Recorded,
  type RetrieveOptions,
  type Retrieval,
  type ReviewFilters,
  type ReviewItem,
  type ReviewPage,
  SETTLED_STATUSES,
  type TokenInfo,
  type Trajectory,
  type TrajectoryBody,
  type TrajectoryStatus,
} from "./types.js";

export const VERSION = "0.1.0";
const PAGE_SIZE = 100; // the service's largest page

export interface ClientOptions {
  /** The service, e.g. `http://127.0.0.1:8000` (default: `RB_URL`). */
  url?: string;
  /** An API token `rb_…` (default: `RB_TOKEN`). */
  token?: string;
  /** Seconds each request may take (default 30). */
  timeout?: number;
  /** Retry policy; fields left out keep their defaults. */
  retry?: Partial<RetryPolicy>;
  /** Recorded as the agent of every trajectory that does not name its own. */
  agent?: string;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch;
}

export interface WaitOptions {
  /** Seconds (default 120). */
  timeout?: number;
  /** Seconds between polls at first (default 1; grows ×1.5 up to 5). */
  interval?: number;
  /** Statuses to stop at (default: done, needs_attention, awaiting_llm). */
  until?: readonly TrajectoryStatus[];
}

type Query = Record<string, string | number | boolean | undefined>;

function environment(name: string): string {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env?.[name] ?? "";
}

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

export class Client {
  readonly baseUrl: string;
  readonly retry: RetryPolicy;
  readonly agent: string | undefined;
  private readonly timeout: number;
  private readonly headers: Record<string, string>;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions = {}) {
    const url = options.url || environment("RB_URL");
    const token = options.token || environment("RB_TOKEN");
    if (!url) throw new ConfigurationError("No service URL: pass url or set RB_URL (e.g. http://127.0.0.1:8000).");
    if (!token) throw new ConfigurationError("No API token: pass token or set RB_TOKEN (rb_…).");
    if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
      throw new ConfigurationError(`The service URL must be an http(s) URL, got '${url}'.`);
    }
    this.baseUrl = apiBaseUrl(url);
    this.retry = { ...DEFAULT_RETRY, ...withoutUndefined(options.retry ?? {}) };
    this.agent = options.agent;
    this.timeout = options.timeout ?? 30;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.headers = {
      Authorization: `Bearer ${token}`,
      Accept: "application/json",
      "User-Agent": `reasoningbank-client-ts/${VERSION}`,
      ...options.headers,
    };
  }

  /** Send one request, retrying 429 (after its Retry-After), 5xx and connection errors per the policy. */
  private async send<T>(
    method: string,
    path: string,
    options: { json?: unknown; query?: Query; body?: string; contentType?: string } = {},
  ): Promise<T> {
    const url = new URL(path, this.baseUrl);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const raw = options.body !== undefined;
    const contentType = raw ? options.contentType : options.json !== undefined ? "application/json" : undefined;
    const headers = { ...this.headers, ...(contentType ? { "Content-Type": contentType } : {}) };
    const body = raw ? options.body : options.json !== undefined ? JSON.stringify(options.json) : undefined;
    let attempt = 0;
    let waited = 0;
    for (;;) {
      attempt += 1;
      let error: RBError;
      let retryAfter: number | undefined;
      try {
        const response = await this.fetchImpl(url, {
          method,
          headers,
          body,
          signal: AbortSignal.timeout(this.timeout * 1000),
        });
        const text = await response.text();
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : null;
        } catch {
          // not JSON (a proxy's error page): the text becomes the error's detail
        }
        if (response.ok) return parsed as T;
        retryAfter = parseRetryAfter(response.headers.get("Retry-After"));
        error = errorFor(response.status, parsed, retryAfter);
        if (!RETRY_STATUSES.has(response.status)) throw error;
      } catch (caught) {
        if (caught instanceof RBError) throw caught;
        error = new ConnectionError(`Could not reach ${this.baseUrl}: ${String(caught)}`, {
          code: "connection_error",
          cause: caught,
        });
      }
      const delay = nextDelay(this.retry, attempt, waited, retryAfter);
      if (delay === undefined) throw error;
      await sleep(delay);
      waited += delay;
    }
  }

  /** Approved memories most relevant to `query`, and a `system_block` for the system prompt. */
  retrieve(query: string, options: RetrieveOptions = {}): Promise<Retrieval> {
    return this.send("POST", "retrieve", { json: withoutUndefined({ query, ...options }) });
  }

  /** The JSON body of one trajectory: the client's `agent` filled in, an `external_id` generated when none is given. */
  trajectoryBody(task: string, options: RecordOptions = {}): TrajectoryBody {
    return withoutUndefined({
      task,
      ...options,
      agent: options.agent ?? this.agent,
      external_id: options.external_id || globalThis.crypto.randomUUID(),
    });
  }

  /** Send one finished run: `steps` or `messages`, plus any of final_answer, outcome, reward, retrieval_id, … */
  async record(task: string, options: RecordOptions = {}): Promise<Recorded> {
    const body = this.trajectoryBody(task, options);
    const answer = await this.send<Omit<Recorded, "external_id">>("POST", "trajectories", { json: body });
    return { ...answer, duplicate: Boolean(answer.duplicate), external_id: body.external_id };
  }

  /** Send many runs (each `{task, ...RecordOptions}`); each succeeds or fails on its own. */
  async recordBatch(trajectories: Array<RecordOptions & { task: string }>): Promise<BatchResult> {
    const bodies = trajectories.map(({ task, ...options }) => this.trajectoryBody(task, options));
    const answer = await this.send<BatchResult>("POST", "trajectories/batch", { json: { trajectories: bodies } });
    return {
      ...answer,
      results: answer.results.map((row) => ({ ...row, external_id: bodies[row.index]?.external_id ?? row.external_id })),
    };
  }

  /** A trajectory's status, verdict, judgments and derived items. */
  async trajectory(id: string): Promise<Trajectory> {
    return this.send("GET", apiPath("trajectories", id));
  }

  /** Poll until the trajectory reaches a status in `until`; throws `WaitTimeoutError` after `timeout` seconds. */
  async wait(id: string, options: WaitOptions = {}): Promise<Trajectory> {
    const timeout = options.timeout ?? 120;
    const targets = new Set<string>(options.until ?? SETTLED_STATUSES);
    let interval = options.interval ?? 1;
    const deadline = Date.now() + timeout * 1000;
    for (;;) {
      const current = await this.trajectory(id);
      if (targets.has(current.status)) return current;
      const remaining = (deadline - Date.now()) / 1000;
      if (remaining <= 0) {
        throw new WaitTimeoutError(`trajectory ${id} still '${current.status}' after ${timeout} s`, current);
      }
      await sleep(Math.min(interval, remaining));
      interval = Math.min(interval * 1.5, 5);
    }
  }

  /** One page of approved memories (`limit` 1–100). */
  memoriesPage(limit = 20, offset = 0): Promise<MemoryPage> {
    return this.send("GET", "memories", { query: { limit, offset } });
  }

  /** Every approved memory of the bank, newest approval first, fetched page by page. */
  async *memories(pageSize = PAGE_SIZE): AsyncGenerator<MemoryItem> {
    let offset = 0;
    for (;;) {
      const page = await this.memoriesPage(pageSize, offset);
      yield* page.items;
      offset += page.items.length;
      if (page.items.length === 0 || offset >= page.count) return;
    }
  }

  async memory(id: string): Promise<MemoryItem> {
    return this.send("GET", apiPath("memories", id));
  }

  /** Treatment vs holdout success rates over the last `days` (all time when omitted). */
  impact(days?: number): Promise<Impact> {
    return this.send("GET", "impact", { query: { days } });
  }

  /** The calling token's bank, scopes and limits. */
  token(): Promise<TokenInfo> {
    return this.send("GET", "token");
  }

  // --- review (a token with the `review` scope) ---

  /** One page of proposed items, oldest first. */
  reviewQueue(limit = 20, offset = 0, filters: ReviewFilters = {}): Promise<ReviewPage> {
    const query: Query = { limit, offset };
    for (const [key, value] of Object.entries(filters)) {
      if (value !== undefined && value !== "" && value !== false) query[key] = value;
    }
    return this.send("GET", "review/items", { query });
  }

  /** One item (any status) with its source trajectories and near-duplicates. */
  async reviewItem(id: string): Promise<ReviewItem> {
    return this.send("GET", apiPath("review", "items", id));
  }

  async approveItem(id: string, options: Record<string, unknown> = {}): Promise<ReviewItem> {
    return this.send("POST", apiPath("review", "items", id, "approve"), { json: options });
  }

  async rejectItem(id: string, reason: string, options: Record<string, unknown> = {}): Promise<ReviewItem> {
    return this.send("POST", apiPath("review", "items", id, "reject"), { json: { reason, ...options } });
  }

  /** Change the text or tags (fields left out stay as they are). */
  async editItem(id: string, edit: ItemEdit): Promise<ReviewItem> {
    return this.send("PATCH", apiPath("review", "items", id), { json: withoutUndefined(edit) });
  }

  // --- evaluation runs (task sets and runs: scope `review`; the harness: scope `ingest`) ---

  /** The bank's task sets, newest first. */
  async taskSets(): Promise<TaskSet[]> {
    return (await this.send<{ task_sets: TaskSet[] }>("GET", "task-sets")).task_sets;
  }

  /** One task set (by id or name) with its tasks. */
  taskSet(ref: string): Promise<TaskSetDetail> {
    return this.send("GET", apiPath("task-sets", ref));
  }

  /** A task set built from the bank's past trajectories that `filters` pick. */
  createTaskSet(name: string, filters: Record<string, unknown>, options: { description?: string } = {}): Promise<TaskSet> {
    return this.send("POST", "task-sets", { json: { name, description: options.description ?? "", filters } });
  }

  /** A task set from JSONL text, or from task lines (one JSON object per line). */
  uploadTaskSet(name: string, tasks: string | TaskLine[], options: { description?: string } = {}): Promise<TaskSet> {
    const body = typeof tasks === "string" ? tasks : tasks.map((task) => `${JSON.stringify(task)}\n`).join("");
    const query = { name, description: options.description || undefined };
    return this.send("POST", "task-sets/upload", { query, body, contentType: "application/x-ndjson" });
  }

  /** A run of a task set in two or more arms, `k` tries per task and arm. */
  createEvaluation(options: EvaluationCreate): Promise<Evaluation> {
    return this.send("POST", "evaluations", { json: { release: null, token_budget: null, note: "", ...options } });
  }

  /** The bank's evaluation runs, newest first (without their results). */
  async evaluations(): Promise<Evaluation[]> {
    return (await this.send<{ evaluations: Evaluation[] }>("GET", "evaluations")).evaluations;
  }

  /** One run: its state, progress and (once computed) results. Any token of the bank reads it. */
  evaluation(id: string): Promise<Evaluation> {
    return this.send("GET", apiPath("evaluations", id));
  }

  /** Stop a run: no more tries are handed out or recorded. */
  cancelEvaluation(id: string): Promise<Evaluation> {
    return this.send("POST", apiPath("evaluations", id, "cancel"));
  }

  /** Claim the run's next try (`try` null when none is left to claim; `done` once every try is recorded). */
  nextTry(id: string): Promise<NextTry> {
    return this.send("POST", apiPath("evaluations", id, "next"));
  }

  /** Record what the agent did in one try (409 `try_recorded`: already; `evaluation_finished`: run not open). */
  recordTry(id: string, tryId: string, result: TryResult): Promise<TryRecorded> {
    return this.send("POST", apiPath("evaluations", id, "tries", tryId), { json: withoutUndefined(result) });
  }

  /** Run an evaluation's tries through `agent(try) -> { final_answer, steps | messages, outcome?, usage?, metadata? }`. */
  evaluate(id: string, agent: Agent, options: EvaluateOptions = {}): Promise<EvaluationSummary> {
    return evaluate(this, id, agent, options);
  }

  /**
   * Retrieve for `task`, call `fn(run)`, and record the run with the retrieval's id. When `fn`
   * throws, the run is recorded as a failure (the error as its last step and `metadata.error`)
   * and the error is rethrown; a failure to record then never hides the original error.
   */
  run<T>(task: string, fn: (run: Run) => T | Promise<T>): Promise<T>;
  run<T>(task: string, options: RunOptions, fn: (run: Run) => T | Promise<T>): Promise<T>;
  run<T>(
    task: string,
    optionsOrFn: RunOptions | ((run: Run) => T | Promise<T>),
    maybeFn?: (run: Run) => T | Promise<T>,
  ): Promise<T> {
    const [options, fn] = typeof optionsOrFn === "function" ? [{}, optionsOrFn] : [optionsOrFn, maybeFn];
    if (!fn) throw new TypeError("run(task, [options], fn): fn is required");
    return new Run(this, task, options).execute(fn);
  }
}
