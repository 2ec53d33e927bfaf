/** Retries against tiny local HTTP servers that answer 429 / 503 first, then 200: real sockets, real (short) waits. */
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  Client,
  ConfigurationError,
  ConnectionError,
  RateLimitError,
  ServerError,
  ValidationError,
  parseRetryAfter,
} from "@reasoningbank/client";

import { scripted, serve } from "./helpers.js";

const TOKEN_ANSWER = {
  prefix: "rb_abc",
  name: "t",
  scopes: ["retrieve"],
  expires_at: null,
  bank_id: "3f0c9a4e-5b8e-4c1e-9f61-2f4d1c8b7a10",
  bank: "b",
  team: "t",
  retrieval_mode: "items",
  top_k: 3,
  rate_limit_per_minute: 600,
};
const RATE_LIMITED: [number, Record<string, string>, unknown] = [
  429,
  { "Retry-After": "1" },
  { detail: "Rate limit of 600 requests/minute exceeded.", code: "rate_limited" },
];
const UNAVAILABLE: [number, Record<string, string>, unknown] = [
  503,
  {},
  { detail: "The embedding model is not available.", code: "embedding_unavailable" },
];
const QUICK = { maxAttempts: 4, backoffBase: 0.05, backoffMax: 0.1, maxTotalDelay: 5 };

test("a 429 waits its Retry-After, then succeeds", async () => {
  const server = await serve(scripted(RATE_LIMITED, [200, {}, TOKEN_ANSWER]));
  try {
    const info = await new Client({ url: server.url, token: "rb_t", retry: QUICK }).token();
    assert.equal(info.bank, "b");
    const [first, second] = server.seen;
    assert.ok(first && second);
    assert.ok(second.at - first.at >= 950, `waited ${second.at - first.at} ms, not the 1 s Retry-After`);
    assert.deepEqual(
      server.seen.map((s) => s.url),
      ["/api/v1/token", "/api/v1/token"],
    );
  } finally {
    await server.close();
  }
});

test("503 twice then 202: every retry of record() carries the same external_id", async () => {
  const server = await serve(
    scripted(UNAVAILABLE, UNAVAILABLE, [202, {}, { id: TOKEN_ANSWER.bank_id, status: "received", url: "/x" }]),
  );
  try {
    const recorded = await new Client({ url: server.url, token: "rb_t", retry: QUICK }).record("task", {
      steps: [{ action: "a" }],
    });
    assert.equal(recorded.status, "received");
    const ids = server.seen.map((s) => JSON.parse(s.body).external_id);
    assert.equal(ids.length, 3);
    assert.deepEqual(new Set(ids), new Set([recorded.external_id]));
  } finally {
    await server.close();
  }
});

test("gives up after maxAttempts with the typed error", async () => {
  const server = await serve(scripted(UNAVAILABLE));
  try {
    await assert.rejects(new Client({ url: server.url, token: "rb_t", retry: QUICK }).retrieve("q"), (e: unknown) => {
      assert.ok(e instanceof ServerError);
      assert.deepEqual([e.status, e.code, e.detail], [503, "embedding_unavailable", "The embedding model is not available."]);
      return true;
    });
    assert.equal(server.seen.length, 4);
  } finally {
    await server.close();
  }
});

test("a Retry-After beyond the total budget is not waited", async () => {
  const server = await serve(scripted(RATE_LIMITED));
  try {
    const rb = new Client({ url: server.url, token: "rb_t", retry: { maxAttempts: 5, maxTotalDelay: 0.5 } });
    await assert.rejects(rb.token(), (e: unknown) => {
      return e instanceof RateLimitError && e.retryAfter === 1 && e.code === "rate_limited" && e.status === 429;
    });
    assert.equal(server.seen.length, 1);
  } finally {
    await server.close();
  }
});

test("client errors are not retried", async () => {
  const server = await serve(scripted([422, {}, { detail: "query: too long", code: "validation_error", errors: [] }]));
  try {
    const rb = new Client({ url: server.url, token: "rb_t", retry: QUICK });
    await assert.rejects(rb.retrieve("q"), (e: unknown) => e instanceof ValidationError && e.detail === "query: too long");
    assert.equal(server.seen.length, 1);
  } finally {
    await server.close();
  }
});

test("a non-JSON error page becomes the error's detail", async () => {
  const server = await serve((_req, res) => {
    res.writeHead(502, { "Content-Type": "text/html" });
    res.end("<h1>Bad gateway</h1>");
  });
  try {
    const rb = new Client({ url: server.url, token: "rb_t", retry: { maxAttempts: 1 } });
    await assert.rejects(rb.token(), (e: unknown) => e instanceof ServerError && e.detail === "<h1>Bad gateway</h1>");
  } finally {
    await server.close();
  }
});

test("no answer at all: ConnectionError after the retries", async () => {
  const server = await serve(scripted([200, {}, {}]));
  const url = server.url;
  await server.close(); // the port is now closed: connections are refused
  const rb = new Client({ url, token: "rb_t", retry: { maxAttempts: 2, backoffBase: 0.01 } });
  await assert.rejects(rb.token(), (e: unknown) => e instanceof ConnectionError && e.code === "connection_error");
});

test("Retry-After as delta-seconds or an HTTP date", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(parseRetryAfter("2", now), 2);
  assert.equal(parseRetryAfter("Thu, 01 Jan 2026 00:00:03 GMT", now), 3);
  assert.equal(parseRetryAfter("Wed, 31 Dec 2025 23:00:00 GMT", now), 0);
  assert.equal(parseRetryAfter("soon", now), undefined);
  assert.equal(parseRetryAfter(null, now), undefined);
});

test("a missing URL or token, or a URL that is not http(s), is a ConfigurationError", () => {
  const saved = { url: process.env.RB_URL, token: process.env.RB_TOKEN };
  delete process.env.RB_URL;
  delete process.env.RB_TOKEN;
  try {
    assert.throws(() => new Client({ token: "rb_t" }), ConfigurationError);
    assert.throws(() => new Client({ url: "http://127.0.0.1:8000" }), /RB_TOKEN/);
    assert.throws(() => new Client({ url: "ftp://example.com", token: "rb_t" }), ConfigurationError);
  } finally {
    Object.assign(process.env, saved);
  }
});
