"""The demo LLM: a small OpenAI-compatible HTTP endpoint that `make run` starts beside the other processes when
``RB_LLM_DEMO=1`` and no LLM endpoint is configured, so a newcomer sees the whole pipeline (judge, distill,
review) without an LLM. The workers reach it through the real ``openai`` client (trajectories.pipeline.llm).

    python -m trajectories.pipeline.demo_llm --port 8002

It is not a model. Its answers are rules over the prompt, deterministic (the same prompt, the same answer) and
plausible: a verdict with a rationale taken from the trajectory (its errors, its final answer), and one to three
lessons from its steps. Every verdict and item it makes is recorded under ``DEMO_MODEL`` and shown with a
"Demo LLM" label; its rationales say so too. No Django here: it starts in a fraction of a second."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# The model name the demo endpoint answers as; what judgments and items made by it record.
DEMO_MODEL = "reasoningbank-demo-llm"
# rb_run puts the demo endpoint's URL here for its children: the settings' RB_LLM_BASE_URL equal to it is the demo.
DEMO_ENDPOINT_ENV = "RB_LLM_DEMO_ENDPOINT"
READY_LINE = "Demo LLM listening on "
RATIONALE_PREFIX = "Demo LLM (rules, not a model): "
FAILURE_WORDS = re.compile(
    r"\b(could not|couldn't|cannot|can't|unable|failed|failure|gave up|not found|no results|error)\b", re.I
)
_STEP = re.compile(r"^\[step (\S+)\] ([^\n]*):\n(.*?)(?=^\[step |^\[… |\Z)", re.M | re.S)
_BLOCK = re.compile(r"<(task|final_answer)>\n(.*?)\n</\1>", re.S)


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def parse_record(prompt: str) -> dict:
    """The task, steps and final answer of the first ``<trajectory>`` (or ``<rollout>``) block in ``prompt``."""
    blocks = dict(_BLOCK.findall(prompt))
    steps = []
    for index, label, content in _STEP.findall(prompt.split("<final_answer>")[0]):
        kind, _, name = label.replace(" [ERROR]", "").partition(" ")
        steps.append(
            {"index": index, "kind": kind, "name": name, "error": "[ERROR]" in label, "content": content.strip()}
        )
    answer = blocks.get("final_answer", "").strip()
    return {
        "task": blocks.get("task", "").strip(),
        "steps": steps,
        "final_answer": "" if answer == "(none given)" else answer,
    }


def judge(record: dict) -> dict:
    """A verdict and a rationale from the record: failure when there is no final answer, when the last step is
    an error, or when the answer admits the task was not done; success otherwise."""
    steps, answer = record["steps"], record["final_answer"]
    errors = [s for s in steps if s["error"]]
    described = f"{len(steps)} step{'s' if len(steps) != 1 else ''}" + (
        f", {len(errors)} of them tool errors" if errors else ", none of them an error"
    )
    if not answer:
        verdict, why = "failure", "it ends without a final answer, so nothing shows the task was done."
    elif steps and steps[-1]["error"]:
        verdict, why = "failure", f"its last step (step {steps[-1]['index']}) is an error it never recovered from."
    elif FAILURE_WORDS.search(answer):
        verdict, why = "failure", f'its final answer admits the task was not done: "{_short(answer)}".'
    else:
        recovered = " It recovered from its errors." if errors else ""
        verdict, why = "success", f'its final answer gives a result for the task: "{_short(answer)}".{recovered}'
    rationale = f"{RATIONALE_PREFIX}the run has {described}; {why}"
    return {"verdict": verdict, "rationale": rationale}


def lessons(record: dict, *, verdict: str, max_items: int = 3) -> list[dict]:
    """One to three lessons drawn from the record's steps, each citing the steps it comes from."""
    steps, task = record["steps"], _short(record["task"], 70) or "this kind of task"
    actions = [s for s in steps if not s["error"] and s["kind"] in ("action", "tool", "tool_call", "step")]
    errors = [s for s in steps if s["error"]]
    found: list[dict] = []
    if actions:
        first = actions[0]
        tool = first["name"] or first["kind"]
        found.append(
            {
                "title": f"Start with a {tool} step" if verdict == "success" else f"Do not rely on the first {tool}",
                "description": f"When a task is like: {task}",
                "content": (
                    f"The run began with step {first['index']} ({_short(first['content'], 60)})."
                    + (
                        " Starting that way got it to a result; do the same first."
                        if verdict == "success"
                        else " That start did not lead to a result; check what it returned before going on."
                    )
                ),
                "steps": [first["index"]],
            }
        )
    if errors:
        err = errors[0]
        found.append(
            {
                "title": f"Check the result of each {err['name'] or err['kind']} call",
                "description": "When a tool call can fail part-way through a task.",
                "content": (
                    f"Step {err['index']} failed ({_short(err['content'], 60)}). Read each tool result for an "
                    "error before building on it, and retry or change course when one appears."
                ),
                "steps": [err["index"]],
            }
        )
    if steps and (record["final_answer"] or verdict == "failure"):
        last = steps[-1]
        found.append(
            {
                "title": "Check the answer against the task" if verdict == "success" else "Say plainly what is missing",
                "description": "Before giving the final answer.",
                "content": (
                    "Compare the result with every condition of the task before answering."
                    if verdict == "success"
                    else "When the task cannot be finished, say which part is missing instead of guessing."
                ),
                "steps": [last["index"]],
            }
        )
    if not found:
        found.append(
            {
                "title": "Record the steps of a run",
                "description": "When an agent reports a run with no steps.",
                "content": "Send each action and its result as a step, so there is something to learn from.",
                "steps": [],
            }
        )
    return found[:max_items]


def _items_text(items: list[dict]) -> str:
    parts = []
    for n, item in enumerate(items, start=1):
        steps = ", ".join(str(s) for s in item["steps"]) or "none"
        parts.append(
            f"# Memory Item {n}\n## Title\n{item['title']}\n## Description\n{item['description']}\n"
            f"## Content\n{item['content']}\n## Steps\n{steps}"
        )
    return "\n\n".join(parts)


def answer(messages: list[dict]) -> str:
    """The demo's answer to a chat request, by what its prompt asks for."""
    prompt = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
    if "<lessons>" in prompt:  # the risk check: the demo finds nothing (rules cannot judge intent)
        return json.dumps({"findings": []})
    if "# Memory Item" in prompt:
        record = parse_record(prompt)
        verdict = "failure" if re.search(r"judged a FAILURE|: FAILURE\b", prompt) else "success"
        limit = re.search(r"at most (\d+) memory items", prompt)
        items = lessons(record, verdict=verdict, max_items=int(limit.group(1)) if limit else 3)
        return f"{RATIONALE_PREFIX}lessons taken from the steps of the record.\n\n{_items_text(items)}"
    if '"verdict"' in prompt:
        return json.dumps(judge(parse_record(prompt)))
    return f"{RATIONALE_PREFIX}this endpoint answers the service's own prompts only."


def completion(body: dict) -> dict:
    """An OpenAI chat.completion object answering ``body`` (usage counted in words)."""
    messages = body.get("messages") or []
    text = answer(messages if isinstance(messages, list) else [])
    prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in messages if isinstance(m, dict))
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:24]
    return {
        "id": f"chatcmpl-demo-{digest}",
        "object": "chat.completion",
        "created": 0,
        "model": DEMO_MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(text.split()),
            "total_tokens": prompt_tokens + len(text.split()),
        },
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # the workers log what they do with the answers
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            return self._send(
                200, {"object": "list", "data": [{"id": DEMO_MODEL, "object": "model", "owned_by": "demo"}]}
            )
        self._send(404, {"error": {"message": "the demo LLM serves /v1/models and /v1/chat/completions"}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._send(404, {"error": {"message": "the demo LLM serves /v1/chat/completions"}})
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self._send(400, {"error": {"message": "the request body is not JSON"}})
        if not isinstance(body, dict):
            return self._send(400, {"error": {"message": "the request body must be a JSON object"}})
        self._send(200, completion(body))

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def argv(host: str, port: int) -> list[str]:
    """The command that runs the demo endpoint (rb_run starts it as one of its children)."""
    return [sys.executable, "-m", "trajectories.pipeline.demo_llm", "--host", host, "--port", str(port)]


def endpoint_env(url: str) -> dict[str, str]:
    """What points a process at the demo endpoint at ``url`` and marks it as the demo (llm.llm_demo_active)."""
    return {"RB_LLM_BASE_URL": url, DEMO_ENDPOINT_ENV: url, "RB_LLM_MODEL": DEMO_MODEL, "OPENAI_API_KEY": ""}


def serve(host: str, port: int) -> None:
    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    print(f"{READY_LINE}http://{host}:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The demo LLM endpoint (`RB_LLM_DEMO=1 make run`).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8002)
    arguments = parser.parse_args(sys.argv[1:])
    serve(arguments.host, arguments.port)
