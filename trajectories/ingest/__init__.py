"""Turn what agents send into the one step shape everything else reads.

Accepted shapes, detected automatically (one module each):

* native ``steps`` (:mod:`.steps`);
* OpenAI chat-completions ``messages`` (:mod:`.openai_chat`);
* Anthropic ``messages`` with ``system`` sent apart (:mod:`.anthropic_messages`);
* OpenAI Responses API items, which is what the OpenAI Agents SDK's
  ``RunResult.to_input_list()`` returns (:mod:`.responses`);
* serialized LangChain messages (:mod:`.langchain`).

A normalized step is a flat dict::

    {"index": 0, "kind": "tool_call", "content": "...",
     # optional:
     "name": "search", "arguments": "{\\"q\\": \\"x\\"}", "call_id": "call_1", "is_error": True,
     "duration_ms": 840}  # how long the step took, when the source knows (OTLP spans)

``index`` counts from 0. ``kind`` is one of :data:`KINDS`. Every thought,
action, tool call (name + arguments as JSON text) and observation is kept;
non-text parts (images, files) leave a short placeholder so their place in the
conversation stays visible. Assistant text next to tool calls is a ``thought``;
assistant text without tool calls is an ``action`` (what the agent said or
did). For messages shapes, :func:`inferred_final_answer` reads the agent's last
word (its last ``action``, when no tool call, tool result or user turn comes
after it) as the final answer when the agent sent none. A tool name is one
line: control characters and line breaks in it are refused.

Errors raise :class:`NormalizeError` with the location of the offending item.
"""
