"""A recorded model on loopback: an HTTP server that answers each provider SDK's requests with
provider responses given in advance (the wire format of each API), and keeps what it received.

A request for a stream (`"stream": true` in OpenAI's and Anthropic's bodies, Gemini's
`:streamGenerateContent?alt=sse`) is answered with the same reply as that API's server-sent events
(`sse_events`): text and tool-call arguments in pieces, usage where each API puts it.

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
        self.streamed = 0  # how many were answered with a stream
        self.hold: threading.Event | None = None  # when given, requests wait for it to be set...
        self.hold_after = 0  # ...after this many were answered
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                owner.requests.append({"path": self.path, "body": body})
                if owner.hold is not None and len(owner.requests) > owner.hold_after:
                    owner.hold.wait(60)  # a slow model: the answer waits until the test lets it go
                index = min(len(owner.requests), len(owner.replies)) - 1
                status, answer = owner.replies[index]
                streamed = status == 200 and (":streamGenerateContent" in self.path
                                              or isinstance(body, dict) and body.get("stream") is True)
                if streamed:
                    events = sse_events(_provider_of(self.path), answer)
                    owner.streamed += 1
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for event in events:  # one chunk per event, as a server sends them
                        data = event.encode()
                        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    return
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
        if self.hold is not None:
            self.hold.set()
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
    return {"id": "msg_01XyZ", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
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


# -- the same replies as each API streams them ---------------------------------------------------------
def _provider_of(path: str) -> str:
    if ":streamGenerateContent" in path:
        return "gemini"
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/messages"):
        return "anthropic"
    raise ValueError(f"no streaming API at {path}")


def _pieces(text: str, size: int = 4) -> list[str]:
    """`text` cut into pieces of `size` characters (how a model's text arrives)."""
    return [text[index:index + size] for index in range(0, len(text), size)] or [""]


def _sse(data: dict, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


def sse_events(provider: str, reply: dict) -> list[str]:
    """The server-sent events that stream `reply` (a reply as `openai_reply`... build it) in
    `provider`'s format."""
    if provider == "openai":
        head = {key: reply[key] for key in ("id", "created", "model", "system_fingerprint")}
        head["object"] = "chat.completion.chunk"
        choice = reply["choices"][0]
        message = choice["message"]

        def chunk(delta: dict, finish: str | None = None) -> str:
            return _sse({**head, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                              "finish_reason": finish}]})

        events = [chunk({"role": "assistant", "content": "", "refusal": None})]
        events += [chunk({"content": piece}) for piece in _pieces(message["content"])] if message.get("content") else []
        for index, call in enumerate(message.get("tool_calls") or []):
            events.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                                 "function": {"name": call["function"]["name"], "arguments": ""}}]}))
            events += [chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                       for piece in _pieces(call["function"]["arguments"], 7)]
        events.append(chunk({}, choice["finish_reason"]))
        events.append(_sse({**head, "choices": [], "usage": reply["usage"]}))
        return events + ["data: [DONE]\n\n"]
    if provider == "responses":
        number = iter(range(10_000))
        started = {**reply, "status": "in_progress", "output": [], "usage": None}
        events = [_sse({"type": "response.created", "sequence_number": next(number), "response": started},
                       "response.created")]
        for index, item in enumerate(reply["output"]):
            empty = {**item, "content": []} if item["type"] == "message" else \
                {**item, "arguments": ""} if item["type"] == "function_call" else item
            events.append(_sse({"type": "response.output_item.added", "sequence_number": next(number),
                                "output_index": index, "item": empty}, "response.output_item.added"))
            if item["type"] == "message":
                for part_index, part in enumerate(item["content"]):
                    for piece in _pieces(part.get("text", "")):
                        events.append(_sse({"type": "response.output_text.delta", "sequence_number": next(number),
                                            "item_id": item["id"], "output_index": index,
                                            "content_index": part_index, "delta": piece, "logprobs": []},
                                           "response.output_text.delta"))
            elif item["type"] == "function_call":
                for piece in _pieces(item["arguments"], 7):
                    events.append(_sse({"type": "response.function_call_arguments.delta",
                                        "sequence_number": next(number), "item_id": item["id"],
                                        "output_index": index, "delta": piece},
                                       "response.function_call_arguments.delta"))
            events.append(_sse({"type": "response.output_item.done", "sequence_number": next(number),
                                "output_index": index, "item": item}, "response.output_item.done"))
        events.append(_sse({"type": "response.completed", "sequence_number": next(number), "response": reply},
                           "response.completed"))
        return events
    if provider == "anthropic":
        usage = reply["usage"]
        start = {**reply, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        events = [_sse({"type": "message_start", "message": start}, "message_start")]
        for index, block in enumerate(reply["content"]):
            if block["type"] == "text":
                first, deltas = {**block, "text": ""}, [{"type": "text_delta", "text": piece}
                                                        for piece in _pieces(block["text"])]
            elif block["type"] in ("tool_use", "server_tool_use"):
                first, deltas = {**block, "input": {}}, [{"type": "input_json_delta", "partial_json": piece}
                                                         for piece in _pieces(json.dumps(block["input"]), 7)]
            else:  # a server tool's result block arrives whole
                first, deltas = block, []
            events.append(_sse({"type": "content_block_start", "index": index, "content_block": first},
                               "content_block_start"))
            events += [_sse({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta")
                       for delta in deltas]
            events.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
        events.append(_sse({"type": "message_delta", "delta": {"stop_reason": reply["stop_reason"],
                                                                "stop_sequence": None},
                            "usage": {"output_tokens": usage["output_tokens"]}}, "message_delta"))
        return events + [_sse({"type": "message_stop"}, "message_stop")]
    # gemini: each chunk a GenerateContentResponse; text in pieces, each call whole; usage and the
    # finish reason with the last chunk
    candidate = reply["candidates"][0]
    chunks: list[dict] = []
    for part in candidate["content"]["parts"]:
        if "text" in part:
            pieces = _pieces(part["text"])
            chunks += [{"text": piece} for piece in pieces[:-1]]
            chunks.append({**part, "text": pieces[-1]})
        else:
            chunks.append(part)
    events = []
    for index, part in enumerate(chunks):
        data: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}],
                                "modelVersion": reply["modelVersion"], "responseId": reply["responseId"]}
        if index == len(chunks) - 1:
            data["candidates"][0]["finishReason"] = candidate["finishReason"]
            data["usageMetadata"] = reply["usageMetadata"]
        events.append(f"data: {json.dumps(data)}\r\n\r\n")
    return events


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
