"""The agent loop's own cost: `Chat` against the same SDK calls made by a minimal hand-written loop.

Each provider's real SDK client answers from an in-memory transport (`httpx2.MockTransport`: the
SDK builds and sends the request and parses the recorded response as always; no socket, so the
figures are the SDKs' and ours, not the network's). One conversation: a reply with two parallel
tool calls (`add`, `mul`), then a final text, i.e. two steps. The same registry serves both loops.

The hand loop (`_hand_loop`, `_hand_stream_loop`) does what a correct loop must and no more: send
the history with the tool definitions (rendered once), echo the reply (`model_dump(exclude_none=
True)`), stop when it calls no tool (the provider's own, cheapest check: OpenAI's `tool_calls`,
Anthropic's `stop_reason`, a function call among the items or parts), else run its calls with
`run_tool_calls` on the echoed turn (parse, dispatch, results) and append them; a bound on the
number of requests. Streamed, it puts the reply together from the SDK's events (text and tool calls
in pieces; Responses: the `response.completed` event). It reads no usage, records no steps and
shows nothing; `Chat` also sums usage per step, records its steps, checks the budget and the tool
set, and keeps the history valid for an interrupt (the 1.5x allowance).

Rows, per provider (openai, responses, anthropic, gemini):

- `Chat` (one call, two steps) against the hand loop with the SDK's requests, and the overhead per
  step in µs (for information: the SDK's own step, 5-35 ms here, moves by more than the loop adds).
- the loops' own work, plain and streamed: the SDK's create (or stream) replaced by one handing back
  the SDK's own parsed replies (or stream events), recorded once; `Chat` is reset to the same
  conversation (history and usage) each time. CPU time, median of 31 rounds, collector on.
  Target: <= 1.5x the hand loop.

Chat / hand loop, own work (issue 22, 2026-11-26), before -> after. Instructions: `python
bench/instructions.py chat` (valgrind, deterministic; before: the previous session's count).
Time: this bench; before: the lead's run at 06:30; after: runs at 06:46, 06:52, 06:59 and 07:09
(load 0.8-2.7, the first three with a valgrind run on the other core). On this shared 2-core VM
the machine's speed changes 2x between minutes and a timed row scatters by +-0.15 from run to
run (openai plain 1.87 in one run: its hand loop took 55 us there, 78-92 us in the others).

| provider  | plain: instr. | plain: time                    | streamed: instr. | streamed: time                 |
|-----------|---------------|--------------------------------|------------------|--------------------------------|
| openai    | 1.26 -> 1.17  | 1.55 -> 1.87, 1.41, 1.35, 1.41 | 1.26 -> 1.20     | 1.42 -> 1.32, 1.30, 1.36, 1.41 |
| responses | 1.15 -> 1.06  | 1.34 -> 1.16, 1.10, 1.14, 1.14 | 1.24 -> 1.15     | 1.22 -> 1.23, 1.14, 1.25, 1.17 |
| anthropic | 1.27 -> 1.13  | 1.58 -> 1.24, 1.25, 1.29, 1.23 | 1.30 -> 1.21     | 1.55 -> 1.31, 1.30, 1.23, 1.23 |
| gemini    | 1.22 -> 1.13  | 1.43 -> 1.22, 1.21, 1.21, 1.29 | 1.29 -> 1.20     | 1.49 -> 1.33, 1.31, 1.31, 1.30 |

What moved: a step's usage is kept as the SDK reported it and made into a `Usage` only when read;
one reader per dialect, picked once per Chat, takes a reply's turns, usage, calls and text in one
pass; Anthropic's streamed usage is merged when read. What the loop still adds (about 700 Python
opcodes a conversation against the hand loop's 2500-3500): the request's arguments per call, a
method per part of a step (send, read, run the calls, record), the approval origin and sub-agent
spending set around the tools, and in a stream one call into the assembler per event (feeding
them from C, `deque(map(feed, stream), maxlen=0)`, cut 130-160 opcodes but showed no gain in time).
Every row passes in every run above but one (openai plain 1.87, the noisy run named above);
OpenAI's rows (the cheapest hand loop: one message dumped a step, so the loop's fixed cost weighs
most) stay near 1.4 in time, with little room.

Run: `python bench/bench_chat.py` (prints a table) or through `bench/bench.py`.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_call  # noqa: E402  (its timing: one way to take it)

CALLS = [("call_1", "add", {"a": 2, "b": 3}), ("call_2", "mul", {"a": 4, "b": 5})]
TARGET = 1.5  # the loops' own work: Chat against the hand loop (load scales both alike)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def _client(provider: str, replies: list[bytes], content_type: str = "application/json") -> Any:
    """The SDK client, answering from `replies` in turn (cycling) without a socket."""
    import httpx2

    state = {"next": 0}

    def answer(request: Any) -> Any:
        body = replies[state["next"] % len(replies)]
        state["next"] += 1
        return httpx2.Response(200, content=body, headers={"Content-Type": content_type})

    http = httpx2.Client(transport=httpx2.MockTransport(answer))
    if provider in ("openai", "responses"):
        import openai

        return openai.OpenAI(api_key="sk-bench", base_url="http://model.invalid/v1", http_client=http, max_retries=0)
    if provider == "anthropic":
        import anthropic

        return anthropic.Anthropic(api_key="sk-bench", base_url="http://model.invalid", http_client=http,
                                   max_retries=0)
    from google import genai

    return genai.Client(api_key="bench", http_options={"base_url": "http://model.invalid", "httpx_client": http})


STEPS = 10  # the hand loops' bound on requests (Chat's max_steps default)


def _hand_loop(provider: str, client: Any, registry: Any, definitions: list) -> Callable[[], str]:
    """The minimal correct loop for this provider: send the history and the tools, echo the reply,
    stop when it calls no tool (the cheapest correct check: OpenAI's `tool_calls`, Anthropic's
    `stop_reason`, a function call among the items or parts), else run its calls (`run_tool_calls`
    on the echoed turn: parse, dispatch, results), append the results and go on; at most STEPS
    requests. Its definitions are rendered once, outside."""
    from nbtools import run_tool_calls

    if provider == "openai":
        def run() -> str:
            messages: list = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "go"}]
            for _ in range(STEPS):
                reply = client.chat.completions.create(model="m", messages=messages, tools=definitions)
                message = reply.choices[0].message.model_dump(exclude_none=True, exclude={"annotations"})
                messages.append(message)
                if not message.get("tool_calls"):
                    return message.get("content", "")
                messages += run_tool_calls(message, ns=registry)
            raise RuntimeError("still calling tools")
    elif provider == "responses":
        def run() -> str:
            items: list = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "go"}]
            for _ in range(STEPS):
                reply = client.responses.create(model="m", input=items, tools=definitions)
                output = [item.model_dump(exclude_none=True) for item in reply.output]
                items += output
                if not any(item["type"] == "function_call" for item in output):
                    return reply.output_text
                items += run_tool_calls(output, ns=registry)
            raise RuntimeError("still calling tools")
    elif provider == "anthropic":
        def run() -> str:
            messages: list = [{"role": "user", "content": "go"}]
            for _ in range(STEPS):
                reply = client.messages.create(model="m", max_tokens=1024, system="Be brief.", messages=messages,
                                               tools=definitions)
                message = {"role": "assistant", "content": [block.model_dump(exclude_none=True)
                                                            for block in reply.content]}
                messages.append(message)
                if reply.stop_reason != "tool_use":
                    return "".join(block["text"] for block in message["content"] if block["type"] == "text")
                messages.append(run_tool_calls(message, ns=registry))
            raise RuntimeError("still calling tools")
    else:
        config = {"system_instruction": "Be brief.", "tools": [{"function_declarations": definitions}]}

        def run() -> str:
            contents: list = [{"role": "user", "parts": [{"text": "go"}]}]
            for _ in range(STEPS):
                reply = client.models.generate_content(model="m", contents=contents, config=config)
                content = reply.candidates[0].content.model_dump(exclude_none=True)
                contents.append(content)
                if not any("function_call" in part for part in content["parts"]):
                    return "".join(part.get("text", "") for part in content["parts"] if not part.get("thought"))
                contents.append(run_tool_calls(content, ns=registry))
            raise RuntimeError("still calling tools")
    return run


def _replay(provider: str, client: Any, replies: list[bytes]) -> None:
    """Replace the client's create by one returning the SDK's parsed replies, recorded once."""
    path = {"openai": ("chat", "completions"), "responses": ("responses",), "anthropic": ("messages",),
            "gemini": ("models",)}[provider]
    owner = client
    for name in path:
        owner = getattr(owner, name)
    method = "generate_content" if provider == "gemini" else "create"
    real = getattr(owner, method)
    extra = {"max_tokens": 8} if provider == "anthropic" else {}
    recorded = [real(model="m", **({"contents": "x"} if provider == "gemini" else
                                  {"input": "x"} if provider == "responses" else {"messages": [{"role": "user", "content": "x"}]}),
                     **extra) for _ in replies]
    state = {"next": 0}

    def create(**kwargs: Any) -> Any:
        reply = recorded[state["next"] % len(recorded)]
        state["next"] += 1
        return reply
    setattr(owner, method, create)


_STREAM_METHODS = {"openai": ("chat", "completions", "create"), "responses": ("responses", "create"),
                   "anthropic": ("messages", "create"), "gemini": ("models", "generate_content_stream")}


def _stream_replay(provider: str, client: Any, replies: list[dict]) -> None:
    """Replace the client's streaming call by one handing back the SDK's parsed stream events (each
    reply streamed once through the SDK from its server-sent events, as the API sends them, recorded)."""
    from recorded_model import sse_events

    bodies = ["".join(sse_events(provider, reply)).encode() for reply in replies]
    recorder = _client(provider, bodies, "text/event-stream")
    *path, method = _STREAM_METHODS[provider]
    source, owner = recorder, client
    for name in path:
        source, owner = getattr(source, name), getattr(owner, name)
    real = getattr(source, method)
    asked = {"openai": {"messages": [{"role": "user", "content": "x"}], "stream": True},
             "responses": {"input": "x", "stream": True},
             "anthropic": {"messages": [{"role": "user", "content": "x"}], "stream": True, "max_tokens": 8},
             "gemini": {"contents": "x"}}[provider]
    recorded = [list(real(model="m", **asked)) for _ in replies]
    state = {"next": 0}

    def create(**kwargs: Any) -> Any:
        events = recorded[state["next"] % len(recorded)]
        state["next"] += 1
        return iter(events)
    setattr(owner, method, create)


def _hand_stream_loop(provider: str, client: Any, registry: Any, definitions: list) -> Callable[[], str]:
    """The minimal correct streaming loop: the reply put together from the events, as little as the
    next request needs (no text shown: the Chat it is compared with shows none either)."""
    from nbtools import run_tool_calls

    if provider == "openai":
        def turn(messages: list) -> dict:
            text, calls = [], {}
            for chunk in client.chat.completions.create(model="m", messages=messages, tools=definitions,
                                                        stream=True, stream_options={"include_usage": True}):
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                if delta.content:
                    text.append(delta.content)
                for piece in delta.tool_calls or ():
                    call = calls.setdefault(piece.index, {"id": None, "type": "function",
                                                          "function": {"name": "", "arguments": ""}})
                    call["id"] = piece.id or call["id"]
                    if piece.function is not None:
                        call["function"]["name"] += piece.function.name or ""
                        call["function"]["arguments"] += piece.function.arguments or ""
            message = {"role": "assistant", "content": "".join(text) or None}
            if calls:
                message["tool_calls"] = [calls[index] for index in sorted(calls)]
            return message

        def run() -> str:
            messages: list = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "go"}]
            for _ in range(STEPS):
                message = turn(messages)
                messages.append(message)
                if "tool_calls" not in message:
                    return message["content"] or ""
                messages += run_tool_calls(message, ns=registry)
            raise RuntimeError("still calling tools")
    elif provider == "responses":
        def turn_responses(items: list) -> Any:
            for event in client.responses.create(model="m", input=items, tools=definitions, stream=True):
                if event.type == "response.completed":
                    return event.response
            raise RuntimeError("no response.completed event")

        def run() -> str:
            items: list = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "go"}]
            for _ in range(STEPS):
                response = turn_responses(items)
                output = [item.model_dump(exclude_none=True) for item in response.output]
                items += output
                if not any(item["type"] == "function_call" for item in output):
                    return response.output_text
                items += run_tool_calls(output, ns=registry)
            raise RuntimeError("still calling tools")
    elif provider == "anthropic":
        def turn_anthropic(messages: list) -> dict:
            blocks: list = []
            pieces: dict = {}
            for event in client.messages.create(model="m", max_tokens=1024, system="Be brief.", messages=messages,
                                                tools=definitions, stream=True):
                if event.type == "content_block_start":
                    blocks.append(event.content_block.model_dump(exclude_none=True))
                elif event.type == "content_block_delta":
                    if event.delta.type == "text_delta":
                        blocks[event.index]["text"] += event.delta.text
                    elif event.delta.type == "input_json_delta":
                        pieces.setdefault(event.index, []).append(event.delta.partial_json)
                elif event.type == "content_block_stop" and event.index in pieces:
                    blocks[event.index]["input"] = json.loads("".join(pieces.pop(event.index)) or "{}")
            return {"role": "assistant", "content": blocks}

        def run() -> str:
            messages: list = [{"role": "user", "content": "go"}]
            for _ in range(STEPS):
                message = turn_anthropic(messages)
                messages.append(message)
                if not any(block["type"] == "tool_use" for block in message["content"]):
                    return "".join(block["text"] for block in message["content"] if block["type"] == "text")
                messages.append(run_tool_calls(message, ns=registry))
            raise RuntimeError("still calling tools")
    else:
        config = {"system_instruction": "Be brief.", "tools": [{"function_declarations": definitions}]}

        def turn_gemini(contents: list) -> dict:
            parts: list = []
            for chunk in client.models.generate_content_stream(model="m", contents=contents, config=config):
                parts += [part.model_dump(exclude_none=True) for part in chunk.candidates[0].content.parts]
            return {"role": "model", "parts": parts}

        def run() -> str:
            contents: list = [{"role": "user", "parts": [{"text": "go"}]}]
            for _ in range(STEPS):
                content = turn_gemini(contents)
                contents.append(content)
                if not any("function_call" in part for part in content["parts"]):
                    return "".join(part.get("text", "") for part in content["parts"] if not part.get("thought"))
                contents.append(run_tool_calls(content, ns=registry))
            raise RuntimeError("still calling tools")
    return run


def _chat_loop(provider: str, client: Any, registry: Any, stream: bool = False) -> Callable[[], str]:
    from nbtools import Chat

    extra = {"max_tokens": 1024} if provider == "anthropic" else {}
    chat = Chat(client, model="m", tools=registry, system="Be brief.", show=False, stream=stream,
                api="responses" if provider == "responses" else None, **extra)
    start, usage = list(chat.messages), chat.usage

    def run() -> str:
        chat.messages[:] = start  # the same conversation each time (usage.steps would grow without end)
        chat.usage = usage
        return chat("go")
    return run


def per_call_us(functions: dict[str, Callable[[], Any]], calls: int = 30) -> dict[str, float]:
    """bench_call's timing (CPU time, median of 31 interleaved rounds) with the collector running:
    what the loop allocates costs collections, its share of the loop's own work."""
    return bench_call.per_call_us(functions, calls, rounds=31, warm=20, collector=True)


PROVIDERS = ("openai", "responses", "anthropic", "gemini")


def _replies(provider: str) -> list[dict]:
    from recorded_model import REPLIES

    return [REPLIES[provider](CALLS), REPLIES[provider](text="9 and 20")]


def loops(provider: str, stream: bool) -> tuple[Callable[[], str], Callable[[], str]]:
    """(hand loop, Chat) for the loops' own work: the SDK's create (or stream) hands back the parsed
    replies (or events) recorded once. Also used by bench/instructions.py."""
    from nbtools import Registry

    registry = Registry([add, mul])
    replies = _replies(provider)
    bodies = [json.dumps(reply).encode() for reply in replies]
    hand_client, chat_client = _client(provider, bodies), _client(provider, bodies)
    if stream:
        _stream_replay(provider, hand_client, replies)
        _stream_replay(provider, chat_client, replies)
        hand = _hand_stream_loop(provider, hand_client, registry, registry.schemas(provider))
    else:
        _replay(provider, hand_client, bodies)
        _replay(provider, chat_client, bodies)
        hand = _hand_loop(provider, hand_client, registry, registry.schemas(provider))
    ours = _chat_loop(provider, chat_client, registry, stream=stream)
    assert hand() == ours() == "9 and 20", (hand(), ours())
    return hand, ours


def run() -> list[dict]:
    from nbtools import Registry

    rows = []
    for provider in PROVIDERS:
        registry = Registry([add, mul])
        replies = [json.dumps(reply).encode() for reply in _replies(provider)]
        hand = _hand_loop(provider, _client(provider, replies), registry, registry.schemas(provider))
        ours = _chat_loop(provider, _client(provider, replies), registry)
        assert hand() == ours() == "9 and 20", (hand(), ours())
        times = per_call_us({"chat": ours, "hand": hand})
        ratio = times["chat"] / times["hand"]
        rows.append({"name": f"{provider}: Chat, 2 steps", "ours_us": times["chat"],
                     "ref_name": "hand loop, same SDK calls", "ref_us": times["hand"], "ratio": ratio,
                     "target": "info", "ok": None})
        rows.append({"name": f"{provider}: overhead per step (us)", "ours_us": (times["chat"] - times["hand"]) / 2,
                     "ref_name": "", "ref_us": None, "ratio": None, "target": "info", "ok": None})
        for stream in (False, True):  # the loops' own work: the SDK hands back its parsed replies/events
            hand, ours = loops(provider, stream)
            times = per_call_us({"chat": ours, "hand": hand}, calls=200)
            ratio = times["chat"] / times["hand"]
            what = "streamed, " if stream else ""
            rows.append({"name": f"{provider}: loop work {what}2 steps, no SDK request", "ours_us": times["chat"],
                         "ref_name": "hand streaming loop" if stream else "hand loop", "ref_us": times["hand"],
                         "ratio": ratio, "target": f"<= {TARGET}x", "ok": ratio <= TARGET})
    return rows


def main() -> int:
    rows = run()
    header = ["name", "ours_us", "ref_name", "ref_us", "ratio", "target", "ok"]
    print("  ".join(header))
    for row in rows:
        print("  ".join("" if row.get(key) is None else f"{row[key]:.2f}" if isinstance(row[key], float)
                        else str(row[key]) for key in header))
    return 0 if all(row["ok"] is not False for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
