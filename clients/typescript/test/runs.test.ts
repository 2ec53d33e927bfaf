/** Step-level retrieval: `run.retrieve(observation)` against the live service. */
import assert from "node:assert/strict";
import { test } from "node:test";

import { NotFoundError, type Run, ValidationError } from "@reasoningbank/client";

import { RB_OTHER_TOKEN, client } from "./helpers.js";

const TASK = "Buy the cheapest USB-C cable and use the coupon";

test("run.retrieve() retrieves in the same run, never twice the same lesson, all linked to the trajectory", async () => {
  let seen: Run | undefined;
  await client().run(TASK, { external_id: "ts-run-steps" }, async (run) => {
    seen = run;
    assert.equal(run.items.length, 1);
    const next = await run.retrieve("12 cables listed; the cheapest is out of stock");
    assert.equal(next.run_id, run.retrievalId);
    assert.deepEqual(next.items, [], "the run's one lesson was served already");
    const again = await run.retrieve("12 cables listed; the cheapest is out of stock", { include_served: true });
    assert.deepEqual(
      again.items.map((i) => i.id),
      run.items.map((i) => i.id),
    );
    run.step({ action: "buy('cable #3')", observation: "ordered" });
    run.outcome = "success";
  });
  assert.ok(seen?.recorded);
  assert.equal(seen.retrievals.length, 3);
  const stored = await client().trajectory(seen.recorded.id);
  assert.deepEqual(
    stored.retrieval_ids,
    seen.retrievals.map((r) => r.retrieval_id),
  );
});

test("run_id of another bank is a 404, a malformed one a 422", async () => {
  const theirs = await client({ token: RB_OTHER_TOKEN }).retrieve(TASK);
  await assert.rejects(client().retrieve(TASK, { run_id: theirs.run_id }), (error: unknown) => {
    assert.ok(error instanceof NotFoundError);
    assert.match(error.detail, /not a retrieval of this bank/);
    return true;
  });
  await assert.rejects(client().retrieve(TASK, { run_id: "not-a-uuid" }), ValidationError);
});
