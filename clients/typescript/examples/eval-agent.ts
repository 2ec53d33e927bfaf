/**
 * An agent command for `rb eval run <id> -- node eval-agent.js`: read the try on stdin, run the team's
 * agent with the arm's memory block, print ONE JSON object on stdout (logs go to stderr).
 */
import type { EvaluationTry, TryResult } from "@reasoningbank/client";

async function myAgent(task: string, system: string, extraTokens: number): Promise<{ answer: string; promptTokens: number; completionTokens: number }> {
  // Call your model here. The same-budget control gets no memory block but `extraTokens` more to spend.
  console.error(`solving ${JSON.stringify(task)} with ${system.length} characters of lessons, ${extraTokens} extra tokens`);
  return { answer: "42", promptTokens: 1200 + extraTokens, completionTokens: 80 };
}

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const attempt = JSON.parse(Buffer.concat(chunks).toString()) as EvaluationTry;

const run = await myAgent(attempt.task.text, attempt.system_block, attempt.extra_tokens);
const result: TryResult = {
  final_answer: run.answer,
  steps: [{ thought: "Answer from what I know and the lessons served", action: `answer ${run.answer}` }],
  usage: { prompt_tokens: run.promptTokens, completion_tokens: run.completionTokens },
};
process.stdout.write(JSON.stringify(result));
