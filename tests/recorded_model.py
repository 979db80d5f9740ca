"""A recorded model on loopback: an HTTP server that answers each provider SDK's requests with
provider responses given in advance (the wire format of each API), and keeps what it received.

Used by tests/test_chat.py and bench/bench_chat.py. The SDK clients talk to it through their
`base_url`; nothing leaves the machine.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class RecordedModel:
    """Answers requests in order with `replies` ((status, body) pairs); the last one repeats."""

    def __init__(self, replies: list[tuple[int, dict]]):
        self.replies = list(replies)
        self.requests: list[dict] = []  # {"path", "body"} of each request received
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                owner.requests.append({"path": self.path, "body": body})
                index = min(len(owner.requests), len(owner.replies)) - 1
                status, answer = owner.replies[index]
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "RecordedModel":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# -- recorded responses, one builder per API (calls: [(id, name, arguments dict)]) ------------------
def openai_reply(calls: list[tuple[str, str, dict]] = (), text: str | None = None) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
    if calls:
        message["tool_calls"] = [{"id": id_, "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}
                                 for id_, name, args in calls]
    return {"id": "chatcmpl-AbC123", "object": "chat.completion", "created": 1763900000,
            "model": "gpt-4.1-mini-2025-04-14", "system_fingerprint": "fp_6f2eabb9a5", "service_tier": "default",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160,
                      "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                      "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                                    "accepted_prediction_tokens": 0,
                                                    "rejected_prediction_tokens": 0}}}


def responses_reply(calls: list[tuple[str, str, dict]] = (), text: str | None = None) -> dict:
    output: list[dict] = [{"id": "rs_0a1", "type": "reasoning", "summary": [], "encrypted_content": None}]
    for index, (id_, name, args) in enumerate(calls):
        output.append({"id": f"fc_0b{index}", "type": "function_call", "status": "completed",
                       "call_id": id_, "name": name, "arguments": json.dumps(args)})
    if text is not None:
        output.append({"id": "msg_0c1", "type": "message", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]})
    return {"id": "resp_0d1", "object": "response", "created_at": 1763900000, "status": "completed",
            "background": False, "error": None, "incomplete_details": None, "instructions": None,
            "max_output_tokens": None, "model": "gpt-5-mini-2025-08-07", "output": output,
            "parallel_tool_calls": True, "previous_response_id": None, "reasoning": {"effort": "medium",
                                                                                      "summary": None},
            "store": True, "temperature": 1.0, "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto", "tools": [], "top_p": 1.0, "truncation": "disabled",
            "usage": {"input_tokens": 150, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 60,
                      "output_tokens_details": {"reasoning_tokens": 32}, "total_tokens": 210},
            "user": None, "metadata": {}}


def anthropic_reply(calls: list[tuple[str, str, dict]] = (), text: str | None = None) -> dict:
    content: list[dict] = []
    if text is not None:
        content.append({"type": "text", "text": text, "citations": None})
    content += [{"type": "tool_use", "id": id_, "name": name, "input": args, "caller": None}
                for id_, name, args in calls]
    return {"id": "msg_01XyZ", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": content, "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
            "container": None,
            "usage": {"input_tokens": 400, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100,
                      "output_tokens": 70, "service_tier": "standard", "server_tool_use": None}}


SIGNATURE = "BwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8wMQ=="  # an opaque thoughtSignature (base64)


def gemini_reply(calls: list[tuple[str, str, dict]] = (), text: str | None = None) -> dict:
    parts: list[dict] = []
    for index, (id_, name, args) in enumerate(calls):
        part: dict[str, Any] = {"functionCall": {"id": id_, "name": name, "args": args}}
        if index == 0:  # Gemini signs the first call of a parallel batch
            part["thoughtSignature"] = SIGNATURE
        parts.append(part)
    if text is not None:
        parts.append({"text": text})
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 90, "candidatesTokenCount": 30, "thoughtsTokenCount": 12,
                              "totalTokenCount": 132},
            "modelVersion": "gemini-2.5-flash", "responseId": "Xk2fZ0mLJ7uR"}


def error_body(provider: str) -> tuple[int, dict]:
    """A 400 answer as each API words it."""
    if provider == "anthropic":
        return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad request"}}
    if provider == "gemini":
        return 400, {"error": {"code": 400, "message": "bad request", "status": "INVALID_ARGUMENT"}}
    return 400, {"error": {"message": "bad request", "type": "invalid_request_error", "param": None,
                           "code": None}}


REPLIES = {"openai": openai_reply, "responses": responses_reply, "anthropic": anthropic_reply,
           "gemini": gemini_reply}


def make_client(provider: str, url: str, asynchronous: bool = False) -> Any:
    """The provider's real SDK client pointed at `url` (no retries, a dummy key)."""
    if provider in ("openai", "responses"):
        import openai

        cls = openai.AsyncOpenAI if asynchronous else openai.OpenAI
        return cls(api_key="sk-test", base_url=f"{url}/v1", max_retries=0)
    if provider == "anthropic":
        import anthropic

        cls = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        return cls(api_key="sk-ant-test", base_url=url, max_retries=0)
    from google import genai

    client = genai.Client(api_key="test-key", http_options={"base_url": url})
    return client.aio if asynchronous else client
