/**
 * What the client sends and what the service answers, field for field as the JSON API
 * names them (snake_case), so the service's API reference applies as written.
 */

/** Statuses a trajectory rests in: done (judged and distilled), needs_attention (an error a
 * human must look at), awaiting_llm (no LLM endpoint configured; it resumes when one is set). */
export const SETTLED_STATUSES: readonly TrajectoryStatus[] = ["done", "needs_attention", "awaiting_llm"];

export type TrajectoryStatus =
  | "received"
  | "judging"
  | "judged"
  | "distilling"
  | "done"
  | "needs_attention"
  | "awaiting_llm"
  | (string & {});

export type Outcome = "success" | "failure";

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** Narrows what `retrieve` may serve; every part given must match. */
export interface RetrieveFilters {
  /** Reviewers' tags: any of / all of. */
  tags?: { any?: string[]; all?: string[] };
  /** The agent of the runs an item was distilled from. */
  agent?: string | { in: string[] };
  /** JSON containment on the source runs' metadata. */
  metadata?: Record<string, JsonValue>;
}

export interface RetrieveOptions {
  k?: number;
  task_id?: string;
  filters?: RetrieveFilters;
  /** A later step of a run: the `run_id` an earlier retrieval of the run returned (same arm, nothing served twice). */
  run_id?: string;
  /** With `run_id`: serve items again that the run was already served. */
  include_served?: boolean;
}

/** What `run.retrieve(observation)` may change; the rest is the run's. */
export interface StepRetrieveOptions {
  k?: number;
  filters?: RetrieveFilters;
  include_served?: boolean;
}

/** One native step; give at least one field. */
export interface Step {
  thought?: string;
  action?: string | JsonValue;
  observation?: string | JsonValue;
  tool?: string;
  arguments?: string | JsonValue;
  error?: string | boolean;
  refinement?: string;
}

/** A message in a shape the service reads: OpenAI chat-completions, Anthropic, OpenAI Responses
 * items or LangChain dicts (see the adapters for the Vercel AI SDK and the OpenAI Agents SDK). */
export type Message = Record<string, unknown>;

/** `messages` with the `system` prompt sent apart (Anthropic's convention); what the adapters return. */
export interface Conversation {
  messages: Message[];
  system?: string;
  final_answer?: string;
}

export interface RecordOptions {
  steps?: Step[];
  messages?: Message[];
  system?: string | Array<{ type: "text"; text: string }>;
  final_answer?: string;
  outcome?: Outcome;
  reward?: number;
  retrieval_id?: string;
  task_id?: string;
  group_id?: string;
  group_size?: number;
  agent?: string;
  metadata?: Record<string, JsonValue>;
  /** Generated (a UUID) when omitted, so a retried POST answers the same trajectory. */
  external_id?: string;
  /** The run's LLM tokens, for cost per arm. */
  usage?: Usage;
}

export interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
}

export interface TrajectoryBody extends RecordOptions {
  task: string;
  external_id: string;
}

export interface MemoryItem {
  id: string;
  title: string;
  description: string;
  content: string;
  /** On retrieval: what the order follows (the similarity unless the bank ranks by utility). */
  score?: number;
  /** On retrieval: cosine similarity to the query. */
  similarity?: number;
  /** On retrieval: the item's measured effect on outcomes, shrunk toward 0 while observations are few. */
  utility?: number;
  /** On retrieval: the judged retrievals behind `utility`. */
  n?: number;
  origin?: string;
  approved_at?: string | null;
}

export interface Retrieval {
  retrieval_id: string;
  mode: string;
  items: MemoryItem[];
  /** The memories, ready for the system prompt ("" when none). */
  system_block: string;
  warnings: string[];
  /** The run it belongs to: its first retrieval's id (this one's own for a first retrieval). */
  run_id: string;
  /** The number of the bank release it served (null before the bank's first release). */
  release?: number | null;
}

export interface Recorded {
  id: string;
  status: TrajectoryStatus;
  url: string;
  /** True when the `external_id` was already known (a retry). */
  duplicate: boolean;
  external_id: string;
}

export interface BatchItemResult {
  index: number;
  ok: boolean;
  id?: string | null;
  status?: string | null;
  duplicate?: boolean | null;
  error?: { detail: string; code: string; [key: string]: unknown } | null;
  external_id?: string | null;
}

export interface BatchResult {
  results: BatchItemResult[];
  accepted: number;
  failed: number;
}

export interface Judgment {
  source: string;
  label: string;
  rationale: string;
  model: string;
  prompt_version: string;
  created_at: string | null;
}

export interface DerivedItem {
  id: string;
  title: string;
  status: string;
  origin: string;
}

export interface Trajectory {
  id: string;
  status: TrajectoryStatus;
  status_detail: string;
  verdict: string;
  judgments: Judgment[];
  items: DerivedItem[];
  supported_items?: DerivedItem[];
  created_at: string;
  step_count: number;
  external_id: string | null;
  group_id: string;
  steps_purged_at?: string | null;
  /** The retrievals of its run, first one first. */
  retrieval_ids?: string[];
}

/** One page of the memories the bank serves (its production release). */
export interface MemoryPage {
  count: number;
  items: MemoryItem[];
  /** The production release listed; null before the bank's first release. */
  release: number | null;
}

export interface TokenInfo {
  prefix: string;
  name: string;
  scopes: string[];
  expires_at: string | null;
  bank_id: string;
  bank: string;
  team: string;
  retrieval_mode: string;
  top_k: number;
  rate_limit_per_minute: number;
}

export interface ImpactArm {
  arm: string;
  retrievals: number;
  reported: number;
  judged: number;
  successes: number;
  success_rate: number | null;
  ci_low: number | null;
  ci_high: number | null;
  needed: number;
}

export interface Impact {
  days: number | null;
  verdict: string;
  verdict_text: string;
  holdout_fraction: number;
  treatment: ImpactArm;
  holdout: ImpactArm;
  difference: Record<string, number> | null;
  items: Record<string, unknown>[];
  /** True while a worker computes a big window's items (`items` is empty until then; ask again in a few seconds). */
  items_pending?: boolean;
  [key: string]: unknown;
}

export interface ReviewItem {
  id: string;
  title: string;
  description: string;
  content: string;
  status: string;
  origin: string;
  tags: string[];
  /** Send it back as `seen_version`: a decision on an item changed since is refused (409). */
  version?: number;
  [key: string]: unknown;
}

export interface ReviewPage {
  count: number;
  items: ReviewItem[];
}

export interface ReviewFilters {
  q?: string;
  origin?: string;
  verdict?: string;
  agent?: string;
  date_from?: string;
  date_to?: string;
  has_duplicate?: boolean;
}

export interface ItemEdit {
  title?: string;
  description?: string;
  content?: string;
  tags?: string[];
  note?: string;
  seen_version?: number;
}
