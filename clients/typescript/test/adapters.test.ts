/**
 * The adapters, typed with the frameworks' own message types (the AI SDK's `ModelMessage`, the
 * Agents SDK's `AgentInputItem`), and each output recorded on the live service: the pytest side
 * then checks the steps the service stored under these external ids.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import type { AgentInputItem } from "@openai/agents-core";
import { fromAISDK, fromOpenAIResponses, type AISDKMessage } from "@reasoningbank/client";
import type { ModelMessage } from "ai";

import { client } from "./helpers.js";

const TASK = "What is the weather in Paris?";

const AI_SDK_MESSAGES: ModelMessage[] = [
  { role: "system", content: "Answer briefly." },
  {
    role: "user",
    content: [
      { type: "text", text: TASK },
      { type: "image", image: new URL("https://example.com/paris.png") },
      { type: "image", image: new Uint8Array([137, 80, 78, 71]) },
    ],
  },
  {
    role: "assistant",
    content: [
      { type: "reasoning", text: "I should call the weather tool." },
      { type: "text", text: "Let me check." },
      { type: "tool-call", toolCallId: "call_1", toolName: "weather", input: { city: "Paris" } },
    ],
  },
  {
    role: "tool",
    content: [
      {
        type: "tool-result",
        toolCallId: "call_1",
        toolName: "weather",
        output: { type: "json", value: { temperature: 21, sky: "clear" } },
      },
    ],
  },
  { role: "assistant", content: [{ type: "tool-call", toolCallId: "call_2", toolName: "forecast", input: {} }] },
  {
    role: "tool",
    content: [
      { type: "tool-result", toolCallId: "call_2", toolName: "forecast", output: { type: "error-text", value: "timeout" } },
    ],
  },
  { role: "assistant", content: "It is 21 °C and clear in Paris." },
];

test("fromAISDK: the AI SDK's parts become Anthropic blocks, the system prompt goes apart, no bytes are sent", () => {
  const conversation = fromAISDK(AI_SDK_MESSAGES);
  assert.equal(conversation.system, "Answer briefly.");
  assert.deepEqual(conversation.messages, [
    {
      role: "user",
      content: [
        { type: "text", text: TASK },
        { type: "text", text: "[image: https://example.com/paris.png]" },
        { type: "text", text: "[image]" },
      ],
    },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "I should call the weather tool." },
        { type: "text", text: "Let me check." },
        { type: "tool_use", id: "call_1", name: "weather", input: { city: "Paris" } },
      ],
    },
    {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "call_1", content: '{"temperature":21,"sky":"clear"}', is_error: false }],
    },
    { role: "assistant", content: [{ type: "tool_use", id: "call_2", name: "forecast", input: {} }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "call_2", content: "timeout", is_error: true }] },
    { role: "assistant", content: "It is 21 °C and clear in Paris." },
  ]);
});

test("fromAISDK output is accepted by the live service", async () => {
  const recorded = await client().record(TASK, { ...fromAISDK(AI_SDK_MESSAGES), external_id: "ts-ai-sdk" });
  assert.equal(recorded.duplicate, false);
});

test("fromAISDK reads v4 CoreMessages too (args, result, isError) and the system given to generateText", async () => {
  // The AI SDK 4 shapes: `args` on tool calls, `result` / `isError` on tool results.
  const v4 = [
    { role: "user", content: TASK },
    { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "weather", args: { city: "Paris" } }] },
    { role: "tool", content: [{ type: "tool-result", toolCallId: "c1", toolName: "weather", result: "rain", isError: false }] },
    { role: "assistant", content: [{ type: "text", text: "Rain." }] },
  ] as const;
  const conversation = fromAISDK(v4, { system: "Be brief." });
  assert.equal(conversation.system, "Be brief.");
  assert.deepEqual(conversation.messages[1], {
    role: "assistant",
    content: [{ type: "tool_use", id: "c1", name: "weather", input: { city: "Paris" } }],
  });
  const recorded = await client().record(TASK, { ...conversation, external_id: "ts-ai-sdk-v4" });
  assert.equal(recorded.duplicate, false);
});

test("fromAISDK refuses UI messages with a pointer to convertToModelMessages", () => {
  const ui = [{ id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] }] as unknown as AISDKMessage[];
  assert.throws(() => fromAISDK(ui), /convertToModelMessages/);
});

const AGENTS_HISTORY: AgentInputItem[] = [
  { role: "user", content: TASK },
  { type: "reasoning", content: [{ type: "input_text", text: "Use the weather tool." }] },
  {
    type: "function_call",
    callId: "call_w",
    name: "weather",
    arguments: '{"city":"Paris"}',
    status: "completed",
    providerData: { raw: "kept out" },
  },
  {
    type: "function_call_result",
    callId: "call_w",
    name: "weather",
    status: "completed",
    output: { type: "text", text: "21 °C, clear" },
  },
  { type: "hosted_tool_call", id: "ws_1", name: "web_search_call", arguments: '{"query":"Paris weather"}', output: "3 results" },
  {
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text: "It is 21 °C and clear in Paris." }],
  },
];

test("fromOpenAIResponses converts the Agents SDK's history and takes finalOutput as the answer", () => {
  const conversation = fromOpenAIResponses({ history: AGENTS_HISTORY, finalOutput: "21 °C and clear" });
  assert.equal(conversation.final_answer, "21 °C and clear");
  assert.deepEqual(conversation.messages, [
    { role: "user", content: TASK },
    { type: "reasoning", summary: [{ type: "summary_text", text: "Use the weather tool." }] },
    { type: "function_call", call_id: "call_w", name: "weather", arguments: '{"city":"Paris"}', status: "completed" },
    { type: "function_call_output", call_id: "call_w", output: "21 °C, clear" },
    { type: "function_call", call_id: "ws_1", name: "web_search_call", arguments: '{"query":"Paris weather"}' },
    { type: "function_call_output", call_id: "ws_1", output: "3 results" },
    { role: "assistant", status: "completed", content: [{ type: "output_text", text: "It is 21 °C and clear in Paris." }] },
  ]);
});

test("fromOpenAIResponses output is accepted by the live service", async () => {
  const conversation = fromOpenAIResponses({ history: AGENTS_HISTORY, finalOutput: "21 °C and clear" });
  const recorded = await client().record(TASK, { ...conversation, external_id: "ts-agents-js" });
  assert.equal(recorded.duplicate, false);
});

test("items of the openai package (snake_case Responses items) pass through unchanged and are accepted", async () => {
  const items = [
    { role: "user", content: [{ type: "input_text", text: TASK }] },
    { type: "function_call", call_id: "fc_1", name: "weather", arguments: '{"city":"Paris"}', id: "fc_item" },
    { type: "function_call_output", call_id: "fc_1", output: "21 °C" },
    {
      type: "message",
      id: "msg_1",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "21 °C in Paris.", annotations: [] }],
    },
  ];
  const conversation = fromOpenAIResponses(items);
  assert.deepEqual(conversation.messages, items);
  const recorded = await client().record(TASK, { ...conversation, external_id: "ts-openai-items" });
  assert.equal(recorded.duplicate, false);
});
