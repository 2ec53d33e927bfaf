/**
 * The Vercel AI SDK's messages (`ModelMessage`, and v4's `CoreMessage`) → the Anthropic
 * Messages shape the service reads. The two differ where the service would misread them:
 * tool calls are `tool-call` parts (`toolCallId`, `toolName`, `input`/`args`), results sit in
 * `role: "tool"` messages as `tool-result` parts with a typed `output` (or v4's `result` /
 * `isError`), reasoning is a `reasoning` part, and images or files may hold raw bytes.
 * Anthropic's shape keeps each of these (tool_use / tool_result with is_error / thinking),
 * with the system prompt sent apart.
 *
 *     const { response } = await generateText({ model, system, prompt: task, tools });
 *     await client.record(task, fromAISDK(response.messages, { system }));
 */

import type { Conversation, Message } from "../types.js";

/** A part of an AI SDK message: `text`, `image`, `file`, `reasoning`, `tool-call`, `tool-result`, … */
export interface AISDKPart {
  type: string;
}

/** The structure every AI SDK model message shares (`ModelMessage`, `CoreMessage`). */
export interface AISDKMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | readonly AISDKPart[];
}

type Block = Record<string, unknown>;
type Fields = Record<string, unknown>;

export interface AISDKOptions {
  /** The `system` given to generateText/streamText (it is not part of `response.messages`). */
  system?: string;
}

/** The conversation as the service reads it; spread it into `record` or pass it to `run.setMessages`. */
export function fromAISDK(messages: readonly AISDKMessage[], options: AISDKOptions = {}): Conversation {
  if (!Array.isArray(messages)) throw new TypeError("fromAISDK: messages must be an array of AI SDK messages");
  const systems: string[] = options.system ? [options.system] : [];
  const out: Message[] = [];
  messages.forEach((message, i) => {
    if (!message || typeof message !== "object") throw new TypeError(`fromAISDK: messages[${i}] is not a message`);
    if (!("content" in message) && "parts" in message) {
      throw new TypeError(
        `fromAISDK: messages[${i}] is a UI message (it has 'parts'): convert with the AI SDK's convertToModelMessages first`,
      );
    }
    const { role, content } = message;
    if (role === "system") {
      systems.push(typeof content === "string" ? content : partsText(content));
      return;
    }
    if (typeof content === "string") {
      if (role === "user" || role === "assistant") out.push({ role, content });
      return;
    }
    if (!Array.isArray(content)) throw new TypeError(`fromAISDK: messages[${i}].content must be a string or parts`);
    const blocks = content.flatMap((part) => block(part as Fields));
    if (blocks.length === 0) return;
    // A tool message's results go back in a user turn, as Anthropic's API sends them.
    out.push({ role: role === "assistant" ? "assistant" : "user", content: blocks });
  });
  const conversation: Conversation = { messages: out };
  if (systems.length) conversation.system = systems.join("\n\n");
  return conversation;
}

function block(part: Fields): Block[] {
  switch (part.type) {
    case "text":
      return [{ type: "text", text: String(part.text ?? "") }];
    case "reasoning":
      return [{ type: "thinking", thinking: String(part.text ?? "") }];
    case "redacted-reasoning":
      return [{ type: "redacted_thinking" }];
    case "image":
    case "file":
    case "reasoning-file":
      return [{ type: "text", text: marker(part) }];
    case "tool-call":
      return [
        {
          type: "tool_use",
          id: String(part.toolCallId ?? ""),
          name: String(part.toolName ?? ""),
          input: part.input ?? part.args ?? {},
        },
      ];
    case "tool-result": {
      const [text, isError] = toolOutput(part);
      return [{ type: "tool_result", tool_use_id: String(part.toolCallId ?? ""), content: text, is_error: isError }];
    }
    default:
      // tool-approval-request/-response (the call and its result carry the run), provider-specific `custom` parts
      return [];
  }
}

/** A tool result's text and whether it is an error: v5+'s typed `output`, or v4's `result` / `isError`. */
function toolOutput(part: Fields): [string, boolean] {
  const output = part.output as Fields | undefined;
  if (output && typeof output === "object" && typeof output.type === "string") {
    switch (output.type) {
      case "text":
        return [String(output.value ?? ""), false];
      case "json":
        return [json(output.value), false];
      case "error-text":
        return [String(output.value ?? ""), true];
      case "error-json":
        return [json(output.value), true];
      case "execution-denied":
        return [output.reason ? `Execution denied: ${String(output.reason)}` : "Execution denied", true];
      case "content":
        return [partsText(Array.isArray(output.value) ? output.value : []), false];
      default:
        return [json(output), false];
    }
  }
  const result = "result" in part ? part.result : part.output;
  return [typeof result === "string" ? result : json(result ?? null), part.isError === true];
}

function partsText(parts: readonly unknown[]): string {
  return parts
    .map((p) => {
      const part = (p ?? {}) as Fields;
      return part.type === "text" ? String(part.text ?? "") : marker(part);
    })
    .join("\n");
}

/** What stands in for an image or file: its URL or name, never its bytes. */
function marker(part: Fields): string {
  const kind = String(part.type ?? "part").startsWith("image") ? "image" : "file";
  const source = part.image ?? part.data ?? part.url;
  const url = source instanceof URL ? source.href : typeof source === "string" && /^https?:/.test(source) ? source : "";
  const name = typeof part.filename === "string" ? part.filename : "";
  const label = url || name;
  return label ? `[${kind}: ${label.slice(0, 500)}]` : `[${kind}]`;
}

function json(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value ?? null);
}
