"""OpenTelemetry traces in: decode an OTLP/HTTP export, keep the spans that
are agent work, buffer them per trace, and turn the spans of one trace into
one trajectory.

* :mod:`.wire`: which requests are OTLP, and their answers and errors
  (``ExportTraceServiceResponse`` / ``google.rpc.Status``) in the request's encoding.
* :mod:`.decode`: protobuf or OTLP/JSON, optionally gzip/deflate-compressed,
  into the stored span dict (JSON values only, attribute values bounded by
  ``MAX_SPAN_CHARS``). Agent work (:func:`is_agent_span`): spans that carry
  GenAI semantic conventions (``gen_ai.*``), OpenInference
  (``openinference.span.kind``, ``llm.*``, ``input.value``…), Pydantic AI's
  own attributes or ours (``reasoningbank.*``). HTTP client, database and
  framework spans carry none of these and are dropped.
* :mod:`.messages` and :mod:`.mapping`: the spans of a trace in start order
  become native ``{kind, content}`` steps; wrong attribute types are ignored
  with a warning, never raised on.
* :mod:`.buffer` (service): an export's agent spans wait in ``TraceSpan``
  rows; a root span enqueues the close of its trace (at most RB_MAX_BATCH per export).
* :mod:`.close` (service): a worker, or the sweeper for idle traces, closes
  each trace on its own; one that fails is dropped and reported, never
  stopping another.

tests/trajectories/fixtures/record_otlp_instrumentations.py records what the
real Pydantic AI and OpenInference (OpenAI Agents SDK) instrumentations emit.
The services (buffer, close) are imported from their modules: this package's
top level stays importable by the API's error hook without the models.
"""
