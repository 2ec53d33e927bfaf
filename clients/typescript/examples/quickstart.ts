// The README's quick start, compiled by the tests so its types stay true.
import { Client, fromAISDK, type Retrieval } from "@reasoningbank/client";
import type { ModelMessage } from "ai";

declare function myAgent(task: string, system: string): Promise<{ answer: string; messages: ModelMessage[] }>;

export async function quickstart(): Promise<string> {
  const client = new Client(); // RB_URL, RB_TOKEN
  return client.run("Buy the cheapest USB-C cable and use the coupon", { task_id: "shop-17" }, async (run) => {
    const { answer, messages } = await myAgent(run.task, run.systemBlock);
    run.setMessages(fromAISDK(messages));
    run.finalAnswer = answer;
    run.outcome = "success";
    return answer;
  });
}

export async function byHand(client: Client, task: string): Promise<void> {
  const retrieval: Retrieval = await client.retrieve(task, { k: 3, filters: { tags: { any: ["checkout"] } } });
  const recorded = await client.record(task, {
    steps: [{ thought: "Sort by price", action: "sort('price')", observation: "12 results" }],
    retrieval_id: retrieval.retrieval_id,
    outcome: "success",
  });
  const settled = await client.wait(recorded.id, { timeout: 60 });
  console.log(settled.status, settled.verdict);
}
