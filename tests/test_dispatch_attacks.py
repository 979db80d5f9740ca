"""The dispatcher and the schema reader under attack: each attack runs in a child process with a
time limit (the subprocess time-out) and a memory limit (`RLIMIT_AS`), so a regression fails one
test instead of hanging or exhausting the suite. Each asserts the promise: a clear error text (or a
clear exception for the programmer), within bounded time and memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MEMORY = 1 << 30  # 1 GiB of address space: the unbounded versions of these attacks need several

_PRELUDE = """\
import json, resource, sys, time, warnings
resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
def report(**fields):
    print(json.dumps(fields))
"""


def child(body: str, *, seconds: float = 60, memory: int = MEMORY) -> dict:
    """Run `body` in a fresh interpreter under the limits; the dict it passed to `report(...)`."""
    code = _PRELUDE.format(memory=memory) + textwrap.dedent(body)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=seconds,
                          cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------------
# ReDoS: patterns run in linear time (RE2)
# --------------------------------------------------------------------------------------------------
def test_a_catastrophic_field_pattern_is_matched_in_linear_time():
    out = child("""
        from typing import Annotated
        import pydantic
        from nbtools import call_func, mk_ns
        def name(x: Annotated[str, pydantic.Field(pattern=r"^(a+)+$")]) -> str:
            return x
        ns = mk_ns([name])
        start = time.perf_counter()
        text = call_func("name", {"x": "a" * 5000 + "b"}, ns=ns, raise_on_err=False)
        elapsed = time.perf_counter() - start
        report(text=text, elapsed=elapsed, ok=call_func("name", {"x": "aaa"}, ns=ns))
    """)
    assert "must match the pattern" in out["text"]
    assert out["elapsed"] < 2.0  # Python's re: 2**5000 steps
    assert out["ok"] == "aaa"


def test_a_catastrophic_schema_pattern_is_matched_in_linear_time():
    out = child("""
        from nbtools import Tool
        tool = Tool.from_schema("t", "", {"type": "object", "properties": {
            "x": {"type": "string", "pattern": "^(a|aa)+$"},
            "n": {"type": "string", "pattern": "^[0-9]+$"}}}, lambda **kw: kw)
        start = time.perf_counter()
        from nbtools import call_func
        text = call_func("t", {"x": "a" * 40 + "!"}, ns={"t": tool}, raise_on_err=False)
        elapsed = time.perf_counter() - start
        digits = call_func("t", {"n": "1\\u0663"}, ns={"t": tool}, raise_on_err=False)  # an Arabic-Indic 3
        report(text=text, elapsed=elapsed, digits=digits)
    """)
    assert "must match the pattern" in out["text"]
    assert out["elapsed"] < 2.0
    assert "must match the pattern" in out["digits"]  # ECMA-262 digits are 0-9, as RE2's


def test_a_pattern_re2_cannot_run_is_not_enforced_and_says_so():
    out = child("""
        from nbtools import Tool, call_func
        from nbtools.call.keywords import PatternWarning
        tool = Tool.from_schema("t", "", {"type": "object", "properties": {
            "x": {"type": "string", "pattern": "^(?=a)(a+)+$"}}}, lambda **kw: kw)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            value = call_func("t", {"x": "a" * 40 + "!"}, ns={"t": tool})
            elapsed = time.perf_counter() - start
        report(value=value, elapsed=elapsed,
               warnings=[str(w.message) for w in caught if issubclass(w.category, PatternWarning)])
    """)
    assert out["value"] == {"x": "a" * 40 + "!"}  # looser, never slow
    assert out["elapsed"] < 2.0
    assert len(out["warnings"]) == 1 and "not enforced" in out["warnings"][0]


def test_import_nbtools_does_not_load_re2():
    out = child("""
        import nbtools
        from nbtools import call_func, mk_ns
        def f(x: int) -> int:
            return x
        call_func("f", {"x": 1}, ns=mk_ns([f]))
        report(loaded="re2" in sys.modules)
    """)
    assert out["loaded"] is False


# --------------------------------------------------------------------------------------------------
# Hostile schemas: linear reading, bounded size, bounded error texts
# --------------------------------------------------------------------------------------------------
def test_an_anyof_of_thousands_of_options_is_refused_quickly():
    out = child("""
        from nbtools import Tool, mk_tool, SchemaError
        options = [{"type": "object", "properties": {f"k{i}": {"type": "string"}}} for i in range(8000)]
        parameters = {"type": "object", "properties": {"x": {"anyOf": options}}}
        errors = []
        start = time.perf_counter()
        for make in (lambda: Tool.from_schema("t", "", parameters, lambda **kw: kw).call({"x": {}}),
                     lambda: mk_tool(lambda name, **kw: kw, {"name": "t", "parameters": parameters})):
            try:
                make()
            except SchemaError as error:
                errors.append(str(error))
        report(errors=errors, elapsed=time.perf_counter() - start)
    """)
    assert len(out["errors"]) == 2
    assert all("8000 options" in error and len(error) < 500 for error in out["errors"])
    assert out["elapsed"] < 5.0


def test_reading_a_large_accepted_anyof_is_linear():
    out = child("""
        from nbtools import Tool, mk_tool, call_func
        from nbtools.schema.read import MAX_SCHEMA_OPTIONS
        n = MAX_SCHEMA_OPTIONS
        objects = [{"type": "object", "properties": {f"k{i}": {"type": "string"}}, "required": [f"k{i}"]}
                   for i in range(n)]
        scalars = [{"type": "string", "minLength": i} for i in range(n // 2)] + [{"type": "string"}] * (n // 2)
        parameters = {"type": "object", "properties": {"x": {"anyOf": objects}, "s": {"anyOf": scalars}}}
        start = time.perf_counter()
        tool = Tool.from_schema("t", "", parameters, lambda **kw: kw)
        value = call_func("t", {"x": {"k7": "a"}, "s": "b"}, ns={"t": tool})
        function = mk_tool(lambda name, **kw: kw, {"name": "t", "parameters": parameters})
        refused = call_func("t", {"x": 5}, ns={"t": tool}, raise_on_err=False)
        report(value=value, elapsed=time.perf_counter() - start, refused=refused)
    """)
    assert out["value"] == {"x": {"k7": "a"}, "s": "b"}
    assert out["elapsed"] < 15.0  # quadratic reading took minutes at this size under load
    assert len(out["refused"]) < 8000  # the problem and the schema are cut in the text


def test_error_texts_are_bounded():
    out = child("""
        from nbtools import call_func, mk_ns
        def f(x: int) -> int:
            return x
        ns = mk_ns([f])
        texts = [call_func("z" * 100_000, {}, ns=ns, raise_on_err=False),
                 call_func("f", {"y" * 100_000: 1}, ns=ns, raise_on_err=False),
                 call_func("f", {"x": "q" * 100_000}, ns=ns, raise_on_err=False),
                 call_func("f", '{"x": "' + "q" * 100_000 + '"}', ns=ns, raise_on_err=False)]
        report(lengths=[len(text) for text in texts], texts=[text[:100] for text in texts])
    """)
    assert all(length < 5000 for length in out["lengths"]), out["lengths"]
    assert out["texts"][0].startswith("Error calling tool 'zzz")


# --------------------------------------------------------------------------------------------------
# Generator results: read only as far as the result can show
# --------------------------------------------------------------------------------------------------
def test_an_endless_async_generator_is_read_only_to_the_limit():
    out = child("""
        from nbtools import call_func, run_tool_calls, mk_ns
        closed = []
        async def stream():
            try:
                while True:
                    yield "x" * 65536
            finally:
                closed.append(True)
        ns = mk_ns([stream])
        start = time.perf_counter()
        value = call_func("stream", {}, ns=ns)
        reply = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "stream", "arguments": "{}"}}]}
        [message] = run_tool_calls(reply, ns=ns)
        report(items=len(value), cut=value.cut, closed=len(closed), text=message["content"][-200:],
               length=len(message["content"]), elapsed=time.perf_counter() - start)
    """, seconds=60)
    assert out["cut"] and out["items"] < 10
    assert out["closed"] == 2  # the generator's finally ran, both times
    assert "[truncated: reading stopped" in out["text"]
    assert out["length"] < 101_000


def test_a_sync_generator_of_large_chunks_is_read_only_to_the_limit():
    out = child("""
        from nbtools import call_func, mk_ns
        from nbtools.call import result_text
        def chunks():
            for _ in range(100_000):  # 6.4 GB if all were kept
                yield "x" * 65536
        text = result_text(call_func("chunks", {}, ns=mk_ns([chunks])))
        endless = result_text((n for n in iter(int, 1)))
        report(length=len(text), tail=text[-150:], endless=endless[-150:])
    """)
    assert out["length"] < 101_000
    assert "reading stopped" in out["tail"] and "reading stopped" in out["endless"]


# --------------------------------------------------------------------------------------------------
# Smaller contract breaks: always an error text for the model
# --------------------------------------------------------------------------------------------------
def test_any_exception_while_converting_is_an_error_text():
    out = child("""
        import pydantic
        from nbtools import call_func, mk_ns
        class M(pydantic.BaseModel):
            a: int
            @pydantic.field_validator("a")
            @classmethod
            def check(cls, value):
                raise KeyError("boom")
        def take(m: M) -> int:
            return 1
        report(text=call_func("take", {"m": {"a": 1}}, ns=mk_ns([take]), raise_on_err=False))
    """)
    assert "could not be converted" in out["text"] and "KeyError" in out["text"]


def test_huge_and_oddly_written_integers_are_refused_with_text():
    out = child("""
        from nbtools import call_func, mk_ns
        def f(x: int) -> int:
            return x
        def g(d: dict[int, str]) -> dict:
            return d
        ns = mk_ns([f, g])
        report(huge=call_func("f", {"x": 10 ** 10000}, ns=ns, raise_on_err=False),
               digits=call_func("g", {"d": {"1\\u0663": "a"}}, ns=ns, raise_on_err=False),
               plain=call_func("g", {"d": {"13": "a"}}, ns=ns, raise_on_err=False))
    """)
    assert "digits" in out["huge"] and len(out["huge"]) < 1000
    assert "decimal digits" in out["digits"]
    assert out["plain"] == {"13": "a"}  # (JSON keys when printed)


def test_a_result_that_cannot_be_rendered_is_an_error_result():
    out = child("""
        import asyncio
        from nbtools import Registry, run_tool_calls
        from nbtools.mcp.server import call_result
        class Odd:
            def __str__(self):
                raise RuntimeError("no text")
        def odd() -> object:
            return Odd()
        registry = Registry([odd])
        reply = {"type": "message", "role": "assistant", "content": [
            {"type": "tool_use", "id": "1", "name": "odd", "input": {}}]}
        block = run_tool_calls(reply, ns=registry)["content"][0]
        served = asyncio.run(call_result(registry, "odd", {}))
        report(block=block, served_error=served.is_error, served_text=served.content[0].text)
    """)
    assert out["block"]["is_error"] is True
    assert "could not be rendered" in out["block"]["content"] and "internal error" not in out["block"]["content"]
    assert out["served_error"] is True and "could not be rendered" in out["served_text"]


def test_a_huge_dict_of_arguments_is_refused_by_size_quickly():
    out = child("""
        from typing import Any
        from nbtools import call_func, mk_ns
        def count(xs: list[str]) -> int:
            return len(xs)
        def anything(data: Any = None) -> int:
            return 1
        ns = mk_ns([count, anything])
        chunk = "x" * (1 << 20)  # shared: 200 MB of arguments in 1 MB of memory
        start = time.perf_counter()
        texts = [call_func("count", {"xs": [chunk] * 200}, ns=ns, raise_on_err=False),
                 call_func("anything", {"data": [[chunk] * 100] * 2}, ns=ns, raise_on_err=False)]
        report(texts=texts, elapsed=time.perf_counter() - start)
    """, memory=512 << 20)
    assert all("too large" in text for text in out["texts"]), out["texts"]
    assert out["elapsed"] < 1.0


def test_malformed_replies_raise_value_error():
    out = child("""
        from nbtools import run_tool_calls, mk_ns
        def f() -> int:
            return 1
        ns = mk_ns([f])
        deep = []
        current = deep
        for _ in range(100_000):
            current.append([])
            current = current[0]
        results = []
        for reply in ({"role": "assistant", "tool_calls": [{"id": "1", "type": "function", "function": "f"}]},
                      {"role": "assistant", "tool_calls": ["f"]},
                      {"choices": [{"message": {"role": "assistant", "tool_calls": 5}}]},
                      deep):
            try:
                run_tool_calls(reply, ns=ns)
                results.append("accepted")
            except ValueError as error:
                results.append("ValueError: " + str(error)[:300])
            except Exception as error:
                results.append(type(error).__name__)
        report(results=results)
    """)
    assert all(result.startswith("ValueError") for result in out["results"]), out["results"]
    assert all(len(result) < 400 for result in out["results"])


def test_a_list_namespace_is_not_rebuilt_for_every_call():
    # Counted, not timed: a list namespace is scanned by name, and only the Tool found is built
    # (once per function, cached weakly) with its call plan compiled once. Rebuilding the list's
    # Tools on every call made 2,000 calls over 300 functions take 7 s.
    out = child("""
        import nbtools.call.plan as plan_module
        from nbtools import Tool, call_func
        counts = {"tools": 0, "plans": 0}
        from_function = Tool.from_function.__func__
        def counting_from_function(cls, *args, **kwargs):
            counts["tools"] += 1
            return from_function(cls, *args, **kwargs)
        Tool.from_function = classmethod(counting_from_function)
        compile_plan = plan_module._compile_plan
        def counting_compile(*args, **kwargs):
            counts["plans"] += 1
            return compile_plan(*args, **kwargs)
        plan_module._compile_plan = counting_compile
        functions = []
        for i in range(300):
            exec(f"def f{i}(x: int) -> int:\\n    return x + {i}\\n")
            functions.append(globals()[f"f{i}"])
        answers = [call_func(f"f{k % 300}", {"x": 1}, ns=functions) for k in range(2000)]
        exec("def f5(x: int) -> int:\\n    return -1\\n")
        functions[5] = f5  # changed in place: read again
        report(counts=counts, right=answers == [1 + k % 300 for k in range(2000)],
               changed=call_func("f5", {"x": 1}, ns=functions), copy=call_func("f5", {"x": 1}, ns=list(functions)))
    """)
    assert out["right"]
    assert out["counts"] == {"tools": 301, "plans": 301}  # one per function, and one for the new f5
    assert out["changed"] == -1 and out["copy"] == -1


def test_connect_respects_its_timeout_while_reading_tool_lists():
    pytest.importorskip("mcp")
    server = textwrap.dedent("""
        from nbtools import Registry, Tool
        from nbtools.mcp import serve
        options = [{"type": "object", "properties": {f"k{i}": {"type": "string"}}, "required": [f"k{i}"]}
                   for i in range(1000)]
        registry = Registry()
        for n in range(40):
            registry.add(Tool(name=f"t{n}", description="", fn=lambda **kw: kw,
                              parameters={"type": "object", "properties": {"x": {"anyOf": options}}}))
        serve(registry)
    """)
    out = child(f"""
        import subprocess
        from nbtools.mcp import connect
        start = time.perf_counter()
        try:
            connect([sys.executable, "-c", {server!r}], timeout=20, errlog=subprocess.DEVNULL)
            outcome = "connected"
        except ConnectionError as error:
            outcome = str(error)
        report(outcome=outcome, elapsed=time.perf_counter() - start)
    """, seconds=150, memory=2 << 30)
    # Whether reading finishes within the time-out depends on the machine; the promise is that it
    # never runs past it: either every tool was read in time, or connect() says the reading took
    # too long, and in both cases it returned within the time-out (plus start-up and listing).
    assert out["outcome"] == "connected" or "took more than 20" in out["outcome"], out["outcome"][-300:]
    assert out["elapsed"] < 60.0


# --------------------------------------------------------------------------------------------------
# The audit log (issue 37): what `registry.decisions` says ran is what ran
# --------------------------------------------------------------------------------------------------
def test_the_audit_log_says_what_ran_whatever_the_tool_or_the_callback_does_in_place():
    # A tool that consumes its arguments, and a callback that edits a nested value in place (not
    # through Decision(args=...)), on every approval path: the one-registry fast path, a view (the
    # layered path), async, positional parameters, a remembered answer and an edit that is then
    # consumed. The log must hold the arguments as they ran, the call must run what was approved,
    # and a record read must be the reader's own.
    out = child("""
        import asyncio
        from nbtools import Decision, Registry
        from nbtools.call import call_func, call_func_async
        ran = []
        def wipe(folders: list[str], options: dict[str, list[int]] = {"keep": [1]}) -> str:
            ran.append([list(folders), {k: list(v) for k, v in options.items()}])
            folders.clear(); folders.append("/innocent")  # consumes its argument
            for value in options.values():
                value.clear()
            return "done"
        def spread(*folders: list[str]) -> str:
            ran.append([list(each) for each in folders])
            for each in folders:
                each[:] = ["/innocent"]
            return "done"
        def meddler(tool, args):
            for value in args.values():
                if isinstance(value, tuple):
                    value = value[0]
                if isinstance(value, list):
                    value.append("/home")  # a nested edit in place, not a Decision
                elif isinstance(value, dict):
                    value.setdefault("keep", []).append(99)
            return True
        def editor(tool, args):
            return Decision(True, args={"folders": ["/edited"]})
        out = {}
        for how in ("fast", "view", "async", "positional", "edit", "remembered"):
            ran.clear()
            reg = Registry(approve=editor if how == "edit" else meddler)
            reg.add(wipe, hints="destructive")
            reg.add(spread, hints="destructive")
            args = {"folders": ["/data"], "options": {"keep": [7]}}
            if how == "fast":
                call_func("wipe", args, ns=reg)
            elif how == "view":
                call_func("wipe", args, ns=reg.select())
            elif how == "async":
                asyncio.run(call_func_async("wipe", args, ns=reg))
            elif how == "positional":
                reg.call("spread", {"folders": [["/data"], ["/tmp"]]})
            elif how == "edit":
                call_func("wipe", args, ns=reg)
            else:
                reg.remembered["wipe"] = True
                call_func("wipe", args, ns=reg)
            record = reg.decisions[-1]
            first = json.loads(json.dumps(record.arguments))
            for value in record.arguments.values():  # the reader changes what it read
                (value[0] if isinstance(value, tuple) else value).clear()
            out[how] = {"ran": ran[:], "logged": first, "again": json.loads(json.dumps(reg.decisions[-1].arguments)),
                        "edited": record.edited, "verdict": record.verdict}
        report(**out)
    """)
    for how in ("fast", "view", "async", "remembered"):
        case = out[how]
        assert case["ran"] == [[["/data"], {"keep": [7]}]], (how, case)  # not the callback's nested edit
        assert case["logged"] == {"folders": ["/data"], "options": {"keep": [7]}}, (how, case)
        assert case["again"] == case["logged"], (how, case)
        assert not case["edited"] and case["verdict"] == "approved", (how, case)
    case = out["positional"]
    assert case["ran"] == [[["/data"], ["/tmp"]]], case
    assert case["logged"] == case["again"] == {"folders": [["/data"], ["/tmp"]]}, case
    case = out["edit"]
    assert case["ran"] == [[["/edited"], {"keep": [1]}]], case
    assert case["logged"] == case["again"] == {"folders": ["/edited"], "options": {"keep": [1]}}, case
    assert case["edited"], case
