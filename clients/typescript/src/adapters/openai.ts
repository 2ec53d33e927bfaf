/**
 * OpenAI's JS Responses items → the Responses items the service reads.
 *
 * Items from the `openai` package (`response.output`, the `input` you sent) already have the
 * service's shape and pass through unchanged. The OpenAI Agents SDK for JS
 * (`@openai/agents`: `result.history`, `result.newItems[].rawItem`) names them its own way:
 * `callId` for `call_id`, `function_call_result` for `function_call_output` with a typed
 * `output`, `hosted_tool_call`, `computer_call_result`, `shell_call_output` with
 * stdout/stderr, `providerData` on every item. Those are converted here.
 *
 *     const result = await run(agent, task);
 *     await client.record(task, fromOpenAIResponses(result));
 */

import type { Conversation, Message } from "../types.js";

/** The structure every Responses item shares (`AgentInputItem`, `ResponseInputItem`, `ResponseOutputItem`). */
export interface ResponsesItem {
  type?: string;
}

/** An Agents SDK run result (`RunResult`, `StreamedRunResult`): its history and final output. */
export interface AgentsRunResult {
  readonly history: readonly ResponsesItem[];
  readonly finalOutput?: unknown;
}

type Fields = Record<string, unknown>;

/** The items as the service reads them, with the run's `finalOutput` (when text) as the final answer. */
export function fromOpenAIResponses(input: readonly ResponsesItem[] | AgentsRunResult): Conversation {
  const items = Array.isArray(input) ? input : (input as AgentsRunResult | null)?.history;
  if (!Array.isArray(items)) {
    throw new TypeError("fromOpenAIResponses: pass a list of Responses items or an Agents SDK run result");
  }
  const messages = items.flatMap((item, i) => {
    if (!item || typeof item !== "object") throw new TypeError(`fromOpenAIResponses: items[${i}] is not an item`);
    return convert(item as Fields, i);
  });
  const conversation: Conversation = { messages };
  const finalOutput = Array.isArray(input) ? undefined : (input as AgentsRunResult).finalOutput;
  if (typeof finalOutput === "string" && finalOutput) conversation.final_answer = finalOutput;
  return conversation;
}

function convert(item: Fields, index: number): Message[] {
  const { providerData, callId, ...rest } = item;
  const base: Fields = { ...rest };
  if (callId !== undefined && base.call_id === undefined) base.call_id = callId;
  const callIdOf = (): string => String(base.call_id ?? base.id ?? `item-${index}`);
  switch (item.type) {
    case undefined:
    case "message":
      return [{ ...base, content: messageContent(base.content) }];
    case "reasoning": {
      const summary = Array.isArray(base.summary) ? base.summary : [];
      const content = Array.isArray(base.content) ? base.content : [];
      const raw = Array.isArray(base.rawContent) ? base.rawContent : [];
      const parts = [...summary, ...content].length ? [...summary, ...content] : raw;
      const reasoning: Fields = {
        type: "reasoning",
        summary: parts.map((p) => ({ type: "summary_text", text: String((p as Fields)?.text ?? "") })),
      };
      if (!parts.length && base.encrypted_content) reasoning.encrypted_content = true;
      return [reasoning];
    }
    case "function_call_result":
      return [{ type: "function_call_output", call_id: callIdOf(), output: toolOutput(base.output) }];
    case "hosted_tool_call": {
      const call: Message = {
        type: "function_call",
        call_id: callIdOf(),
        name: String(base.name ?? "hosted_tool"),
        arguments: typeof base.arguments === "string" ? base.arguments : "{}",
        ...(base.status === "failed" ? { status: "failed" } : {}),
      };
      return base.output === undefined
        ? [call]
        : [call, { type: "function_call_output", call_id: callIdOf(), output: toolOutput(base.output) }];
    }
    case "program":
      return [
        { type: "function_call", call_id: callIdOf(), name: "program", arguments: JSON.stringify({ code: base.code }) },
      ];
    case "program_output":
      return [{ type: "function_call_output", call_id: callIdOf(), output: toolOutput(base.output) }];
    case "computer_call_result":
      return [{ type: "computer_call_output", call_id: callIdOf(), output: { type: "computer_screenshot" } }];
    case "shell_call_output":
      return [{ type: "shell_call_output", call_id: callIdOf(), output: shellOutput(base.output) }];
    case "compaction":
      return []; // encrypted context: nothing a reader or the judge can use
    case "unknown":
      // What the model sent that the SDK does not model is kept in providerData.
      return providerData && typeof (providerData as Fields).type === "string" ? [providerData as Message] : [];
    default:
      return [base];
  }
}

/** A message's content with the text kept and images, files and audio as markers, never their bytes. */
function messageContent(content: unknown): unknown {
  if (!Array.isArray(content)) return content;
  return content.map((p) => {
    const part = (p ?? {}) as Fields;
    const { providerData: _, ...kept } = part;
    switch (part.type) {
      case "input_text":
      case "output_text":
      case "refusal":
        return kept;
      case "audio":
        return typeof part.transcript === "string" && part.transcript
          ? { type: "input_text", text: `[audio] ${part.transcript}` }
          : { type: "input_audio" };
      case "input_file":
        return { type: "input_file", ...(typeof part.filename === "string" ? { filename: part.filename } : {}) };
      default:
        return { type: part.type === "image" ? "input_image" : String(part.type ?? "part") };
    }
  });
}

/** A function result's output: text, or a typed output part, or a list of input parts. */
function toolOutput(output: unknown): unknown {
  if (output === undefined || output === null) return "";
  if (typeof output === "string") return output;
  if (Array.isArray(output)) return messageContent(output);
  const part = output as Fields;
  if (part.type === "text") return String(part.text ?? "");
  if (part.type === "image") return "[image]";
  if (part.type === "file") {
    const file = part.file as Fields | string | undefined;
    const name = file && typeof file === "object" && typeof file.filename === "string" ? file.filename : "";
    return name ? `[file: ${name}]` : "[file]";
  }
  return output;
}

/** A shell call's output entries as one text: stdout, stderr and how it ended. */
function shellOutput(output: unknown): string {
  if (!Array.isArray(output)) return typeof output === "string" ? output : JSON.stringify(output ?? "");
  return output
    .map((entry) => {
      const { stdout, stderr, outcome } = (entry ?? {}) as Fields;
      const end = outcome as Fields | undefined;
      const ended = end?.type === "exit" ? `exit ${String(end.exitCode)}` : end?.type === "timeout" ? "timeout" : "";
      return [stdout, stderr ? `stderr: ${String(stderr)}` : "", ended ? `(${ended})` : ""]
        .filter((s) => typeof s === "string" && s)
        .join("\n");
    })
    .join("\n");
}
