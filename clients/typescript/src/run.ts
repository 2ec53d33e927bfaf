/**
 * `client.run(task, fn)`: retrieve at the start, record at the end.
 *
 *     const answer = await client.run("Buy the cheapest USB-C cable", { task_id: "shop-17" }, async (run) => {
 *       const answer = await myAgent(run.task, { system: run.systemBlock });
 *       run.step({ thought: "Search first", action: "search('usb-c')", observation: "12 results" });
 *       const hints = await run.retrieve("12 results; the cheapest is out of stock"); // step-level retrieval
 *       run.finalAnswer = answer;
 *       run.outcome = "success"; // or leave it unset: the service's judge decides
 *       return answer;
 *     });
 */

import type { Client } from "./client.js";
import type {
  Conversation,
  JsonValue,
  MemoryItem,
  Message,
  Outcome,
  RecordOptions,
  Recorded,
  RetrieveFilters,
  Retrieval,
  Step,
  StepRetrieveOptions,
  Usage,
} from "./types.js";

export interface RunOptions {
  task_id?: string;
  k?: number;
  filters?: RetrieveFilters;
  /** Retrieve at the start (default true). */
  retrieve?: boolean;
  agent?: string;
  metadata?: Record<string, JsonValue>;
  group_id?: string;
  group_size?: number;
  /** Fixed up front (generated when omitted), so recording stays idempotent. */
  external_id?: string;
  /** The run's LLM tokens (or set `run.usage` before `fn` returns). */
  usage?: Usage;
  /** Called with the error when recording a failed run fails too (default: console.warn). */
  onRecordError?: (error: unknown) => void;
}

export class Run {
  readonly task: string;
  readonly options: RunOptions;
  readonly externalId: string;
  /** The run's first retrieval: its id is recorded with the run. */
  retrieval: Retrieval | undefined;
  /** Every retrieval of the run, first one first. */
  readonly retrievals: Retrieval[] = [];
  readonly steps: Step[] = [];
  messages: Message[] | undefined;
  system: string | undefined;
  finalAnswer: string | undefined;
  outcome: Outcome | undefined;
  reward: number | undefined;
  metadata: Record<string, JsonValue>;
  /** The run's LLM tokens `{ prompt_tokens, completion_tokens }`, recorded with it (for cost per arm). */
  usage: Usage | undefined;
  /** Set once the run is recorded. */
  recorded: Recorded | undefined;
  private readonly client: Client;

  constructor(client: Client, task: string, options: RunOptions = {}) {
    this.client = client;
    this.task = task;
    this.options = options;
    this.externalId = options.external_id || globalThis.crypto.randomUUID();
    this.metadata = { ...options.metadata };
    this.usage = options.usage;
  }

  /** The retrieved memories, ready for the system prompt ("" when none). */
  get systemBlock(): string {
    return this.retrieval?.system_block ?? "";
  }

  get items(): MemoryItem[] {
    return this.retrieval?.items ?? [];
  }

  get retrievalId(): string | undefined {
    return this.retrieval?.retrieval_id;
  }

  /**
   * Retrieve again at this step with `observation` as the query: in this run's arm, leaving out the
   * items the run was already served (unless `include_served`). In a run started with `retrieve: false`
   * the first call starts the run. `k` and `filters` default to the run's.
   */
  async retrieve(observation: string, options: StepRetrieveOptions = {}): Promise<Retrieval> {
    const retrieval = await this.client.retrieve(observation, {
      k: options.k ?? this.options.k,
      task_id: this.options.task_id,
      filters: options.filters ?? this.options.filters,
      run_id: this.retrieval ? (this.retrieval.run_id ?? this.retrieval.retrieval_id) : undefined,
      include_served: options.include_served,
    });
    return this.retrieved(retrieval);
  }

  private retrieved(retrieval: Retrieval): Retrieval {
    this.retrieval ??= retrieval;
    this.retrievals.push(retrieval);
    return retrieval;
  }

  /** Add one native step (give at least one field). */
  step(step: Step): Step {
    const kept = Object.fromEntries(Object.entries(step).filter(([, v]) => v !== undefined && v !== null)) as Step;
    if (Object.keys(kept).length === 0) {
      throw new TypeError("a step needs at least one of thought, action, observation, tool, arguments, error, refinement");
    }
    this.steps.push(kept);
    return kept;
  }

  /** Record the run's messages instead of steps: a message list or an adapter's `Conversation`. */
  setMessages(messages: Message[] | Conversation): void {
    if (Array.isArray(messages)) {
      this.messages = messages;
      return;
    }
    this.messages = messages.messages;
    if (messages.system !== undefined) this.system = messages.system;
    if (messages.final_answer !== undefined && this.finalAnswer === undefined) this.finalAnswer = messages.final_answer;
  }

  /** What `record` is sent; `error` set when the run threw. */
  recordOptions(error?: unknown): RecordOptions {
    const metadata = { ...this.metadata };
    const steps = [...this.steps];
    const failed = error !== undefined;
    if (failed) {
      const text = error instanceof Error ? `${error.name}: ${error.message}` : `Error: ${String(error)}`;
      metadata.error = text;
      if (this.messages === undefined) steps.push({ error: text });
    }
    const options = this.options;
    return {
      ...(this.messages !== undefined ? { messages: this.messages, system: this.system } : { steps }),
      final_answer: this.finalAnswer,
      outcome: failed ? "failure" : this.outcome,
      reward: this.reward,
      retrieval_id: this.retrievalId,
      task_id: options.task_id,
      group_id: options.group_id,
      group_size: options.group_size,
      agent: options.agent,
      metadata: Object.keys(metadata).length ? metadata : undefined,
      external_id: this.externalId,
      usage: this.usage,
    };
  }

  /** Retrieve, call `fn`, record (see `Client.run`). */
  async execute<T>(fn: (run: Run) => T | Promise<T>): Promise<T> {
    if (this.options.retrieve !== false) {
      this.retrieved(
        await this.client.retrieve(this.task, {
          k: this.options.k,
          task_id: this.options.task_id,
          filters: this.options.filters,
        }),
      );
    }
    let result: T;
    try {
      result = await fn(this);
    } catch (error) {
      try {
        this.recorded = await this.client.record(this.task, this.recordOptions(error ?? "undefined"));
      } catch (recordError) {
        (this.options.onRecordError ?? ((e) => console.warn("could not record the failed run:", e)))(recordError);
      }
      throw error;
    }
    this.recorded = await this.client.record(this.task, this.recordOptions());
    return result;
  }
}
