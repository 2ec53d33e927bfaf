/**
 * When and how long to wait before retrying a request.
 *
 * Retried: 429 (after its `Retry-After`), 500/502/503/504, and connection errors or
 * timeouts. Every request this client sends is safe to repeat: reads are reads,
 * `record` carries an `external_id` (a repeat answers the same trajectory), and a
 * repeated retrieval only logs one more retrieval.
 */

export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

export interface RetryPolicy {
  /** Attempts, the first included (1: never retry). */
  maxAttempts: number;
  /** Seconds; waits grow as `backoffBase * 2**(n-1)` up to `backoffMax`. */
  backoffBase: number;
  backoffMax: number;
  /** No retry is made once the waits would add up past this many seconds. */
  maxTotalDelay: number;
  /** A random wait between half the backoff and all of it, so clients retrying together spread out. */
  jitter: boolean;
}

export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 5,
  backoffBase: 0.5,
  backoffMax: 8,
  maxTotalDelay: 30,
  jitter: true,
});

export const NO_RETRY: Readonly<RetryPolicy> = Object.freeze({ ...DEFAULT_RETRY, maxAttempts: 1 });

/** Seconds to wait after failed attempt number `attempt` (1-based); a `Retry-After` is honoured as given. */
export function retryDelay(policy: RetryPolicy, attempt: number, retryAfter?: number): number {
  if (retryAfter !== undefined) return Math.max(0, retryAfter);
  const ceiling = Math.min(policy.backoffMax, policy.backoffBase * 2 ** (attempt - 1));
  return policy.jitter ? ceiling / 2 + Math.random() * (ceiling / 2) : ceiling;
}

/** The wait (seconds) before the next attempt, or undefined when the attempts or the budget are spent. */
export function nextDelay(policy: RetryPolicy, attempt: number, waited: number, retryAfter?: number): number | undefined {
  if (attempt >= policy.maxAttempts) return undefined;
  const delay = retryDelay(policy, attempt, retryAfter);
  return waited + delay > policy.maxTotalDelay ? undefined : delay;
}

/** Seconds from a `Retry-After` header: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (!value) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - now) / 1000);
}

export function sleep(seconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}
