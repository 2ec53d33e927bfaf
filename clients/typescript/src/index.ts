export { Client, VERSION, type ClientOptions, type WaitOptions } from "./client.js";
export { Run, type RunOptions } from "./run.js";
export { apiBaseUrl, apiPath } from "./paths.js";
export { DEFAULT_RETRY, NO_RETRY, RETRY_STATUSES, nextDelay, parseRetryAfter, type RetryPolicy } from "./retry.js";
export * from "./errors.js";
export * from "./types.js";
export { fromAISDK, type AISDKMessage, type AISDKOptions, type AISDKPart } from "./adapters/ai-sdk.js";
export { fromOpenAIResponses, type AgentsRunResult, type ResponsesItem } from "./adapters/openai.js";
export * from "./evaluation.js";
