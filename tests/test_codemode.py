"""Code mode (`Registry.code_tool`) through the public API: a model's code runs in Monty, and every
tool call it makes goes through the registry as a direct call does (DESIGN.md "Code mode").
Plain registries; Monty's workers are real subprocesses. The attacks and the limits run in child
processes with limits: tests/test_codemode_attacks.py."""

from __future__ import annotations

import ast
import asyncio
import datetime
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Literal

import pytest

from nbtools import Decision, Limits, Registry, Tool, run_tool_calls, tool
from nbtools.policy import asking_as

pytest.importorskip("pydantic_monty", reason="code mode needs the [codemode] extra (pydantic-monty)")

ROOT = Path(__file__).resolve().parent.parent


def add(a: int, b: int = 1) -> int:
    """Add two integers.

    More text the stub leaves out."""
    return a + b


def wipe(path: str, *, force: bool = False) -> str:
    """Delete a folder."""
    return f"wiped {path}" + (" (forced)" if force else "")


def crash(reason: str) -> None:
    """Fail on purpose."""
    raise ValueError(f"broken: {reason}")


async def weather(city: str, unit: Literal["C", "F"] = "C") -> dict:
    """Current weather in a city."""
    await asyncio.sleep(0)
    return {"city": city, "temperature": 4 if unit == "C" else 39}


class Asker:
    """An approval callback that records what it was asked and answers from a table by path."""

    def __init__(self, answers: dict | None = None):
        self.asked: list[tuple[str, dict, str]] = []
        self.answers = answers or {}

    def __call__(self, tool, args, *, origin):
        self.asked.append((tool.name, dict(args), origin))
        return self.answers.get(args.get("path"), True)


@pytest.fixture
def registry():
    asker = Asker({"/keep": Decision(False, reason="keep that one"),
                   "/edit": Decision(True, args={"path": "/edited"}),
                   "/always": Decision(True, remember="tool")})
    made = Registry(approve=asker)
    made.add(add, hints="read-only")
    made.add(wipe, hints="destructive")
    made.add(crash)
    made.add(weather, hints="read-only open-world")
    made.asker = asker
    return made


# -- the Tool --------------------------------------------------------------------------------------------
def test_the_code_tool_has_one_string_parameter_and_lists_the_tools_as_stubs(registry):
    run = registry.code_tool()
    assert run.name == "run_code"
    assert run.parameters["properties"] == {"code": {"type": "string", "description": run.parameters[
        "properties"]["code"]["description"]}} and run.parameters["required"] == ["code"]
    description = run.description
    assert "def add(a: int, b: int = 1) -> int:\n    \"\"\"Add two integers.\"\"\"" in description
    assert "More text" not in description  # the first line of the description only
    assert "def wipe(path: str, force: bool = False) -> str:" in description
    assert "async def weather(city: str, unit: Literal['C', 'F'] = 'C') -> dict:" in description
    assert "def crash(reason: str):" in description
    assert "max" not in run.name and "100 tool calls, 30 s, 256MiB" in description


def test_stubs_come_from_schemas_too():
    registry = Registry()
    registry.add(Tool.from_schema("lookup", "Find a record by id.\nDetails.", {
        "type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
                                         "mode": {"enum": ["a", "b"], "default": "a"}},
        "required": ["id"]}, lambda **arguments: arguments))
    registry.add(Tool.from_schema("odd-name", "", {"type": "object", "properties": {"first-name": {"type": "string"}}},
                                  lambda **arguments: arguments))
    description = registry.code_tool().description
    assert "def lookup(id: int, tags: list[str] = ..., mode: Literal['a', 'b'] = 'a'):" in description
    assert '"""Find a record by id."""' in description
    assert "def odd_name(**arguments):  # keys: {\"first-name\": str}" in description
    assert "(tool 'odd-name')" in description
    ast.parse(description.split("```python\n", 1)[1].split("```", 1)[0])  # the stubs are Python a model can read as such


def test_hints_are_the_union_read_only_only_when_all_are(registry):
    assert registry.code_tool().hints == frozenset({"destructive", "open-world"})
    assert registry.code_tool(tools=["add", "weather"]).hints == frozenset({"read-only", "open-world"})
    assert registry.code_tool(tools="add").hints == frozenset({"read-only"})
    assert registry.code_tool(tools=["add", "crash"]).hints == frozenset()


def test_tools_chosen_by_glob_callers_and_enabled_state(registry):
    @tool(registry=registry, callers=("direct",))
    def direct_only(x: int) -> int:
        """Only the model may call this."""
        return x

    run = registry.code_tool(tools=["a*", "d*", "w*"])
    assert "def add(" in run.description and "def wipe(" in run.description
    assert "direct_only" not in run.description  # its callers leave out code
    assert "def crash(" not in run.description
    # a tool disabled after the code tool was made is absent from the code
    registry.disable("add")
    result = run.call({"code": "add(1)"})
    assert result["error"] == "NameError: name 'add' is not defined (line 1)" and result["calls"] == []
    registry.enable("add")
    assert run.call({"code": "add(1)"})["value"] == 2


def test_bad_limits_are_refused_when_the_tool_is_made(registry):
    with pytest.raises(ValueError, match="memory="):
        registry.code_tool(memory="lots")
    with pytest.raises(ValueError, match="max_tool_calls"):
        registry.code_tool(max_tool_calls=-1)
    with pytest.raises(ValueError, match="timeout"):
        registry.code_tool(timeout=0)


# -- a run ------------------------------------------------------------------------------------------------
def test_the_answer_has_the_value_the_printed_text_and_every_call_as_run(registry):
    code = textwrap.dedent("""\
        total = 0
        for i in range(3):
            total += add(i, b=10)
        print("total", total)
        f = add
        [total, f(5), add(a=1)]
        """)
    result = registry.code_tool().call({"code": code})
    assert result["value"] == [33, 6, 2]
    assert result["printed"] == "total 33\n"
    assert result["error"] is None
    assert [(call["tool"], call["arguments"], call["ok"], call["outcome"]) for call in result["calls"]] == [
        ("add", {"a": 0, "b": 10}, True, 10), ("add", {"a": 1, "b": 10}, True, 11), ("add", {"a": 2, "b": 10}, True, 12),
        ("add", {"a": 5, "b": 1}, True, 6), ("add", {"a": 1, "b": 1}, True, 2)]


def test_async_tools_are_awaited_in_the_code(registry):
    code = textwrap.dedent("""\
        import asyncio
        one = await weather("Oslo")
        both = await asyncio.gather(weather("Bergen", unit="F"), weather("Tromsø"))
        [one["temperature"], [each["city"] for each in both], both[0]["temperature"]]
        """)
    result = registry.code_tool().call({"code": code})
    assert result["error"] is None, result
    assert result["value"] == [4, ["Bergen", "Tromsø"], 39]
    assert [call["arguments"] for call in result["calls"]] == [
        {"city": "Oslo", "unit": "C"}, {"city": "Bergen", "unit": "F"}, {"city": "Tromsø", "unit": "C"}]


def test_each_destructive_call_is_asked_once_with_origin_code_and_logged(registry):
    code = "wipe('/a')\nwipe('/b', force=True)"
    result = registry.code_tool().call({"code": code})
    assert result["value"] == "wiped /b (forced)" and result["error"] is None
    assert registry.asker.asked == [("wipe", {"path": "/a", "force": False}, "call/code"),
                                    ("wipe", {"path": "/b", "force": True}, "call/code")]
    assert [(record.tool, record.arguments, record.origin, record.verdict) for record in registry.decisions] == [
        ("wipe", {"path": "/a", "force": False}, "call/code", "approved"),
        ("wipe", {"path": "/b", "force": True}, "call/code", "approved")]


def test_the_origin_of_the_run_is_carried_into_the_code(registry):
    run = registry.code_tool()
    with asking_as("chat:some-model"):
        run.call({"code": "wipe('/x')"})
    with asking_as("mcp:inspector"):
        run.call({"code": "wipe('/y')"})
    assert [origin for _, _, origin in registry.asker.asked] == ["chat:some-model/code", "mcp:inspector/code"]


def test_a_refusal_is_an_exception_the_code_can_catch(registry):
    code = textwrap.dedent("""\
        try:
            wipe("/keep")
        except PermissionError as error:
            print("refused:", error)
        "went on"
        """)
    result = registry.code_tool().call({"code": code})
    assert result["value"] == "went on" and result["error"] is None
    assert result["printed"] == ("refused: Error calling tool 'wipe': refused: the user denied this call; "
                                 "their reason: keep that one\n")
    assert result["calls"] == [{"tool": "wipe", "arguments": {"path": "/keep", "force": False}, "ok": False,
                                "outcome": "Error calling tool 'wipe': refused: the user denied this call; "
                                           "their reason: keep that one"}]
    assert registry.decisions[-1].verdict == "denied" and registry.decisions[-1].origin == "call/code"


def test_an_uncaught_refusal_stops_the_run_and_the_answer_names_it(registry):
    code = "print('before')\nwipe('/keep')\nprint('never')\nwipe('/other')"
    result = registry.code_tool().call({"code": code})
    assert result["error"] == ("PermissionError: Error calling tool 'wipe': refused: the user denied this call; "
                               "their reason: keep that one (line 2)")
    assert result["printed"] == "before\n" and len(result["calls"]) == 1
    assert [args["path"] for _, args, _ in registry.asker.asked] == ["/keep"]


def test_an_edit_runs_the_edited_arguments(registry):
    result = registry.code_tool().call({"code": "wipe('/edit')"})
    assert result["value"] == "wiped /edited"
    assert result["calls"][0]["arguments"] == {"path": "/edited", "force": False}
    assert registry.decisions[-1].edited and registry.decisions[-1].arguments == {"path": "/edited", "force": False}


def test_always_allow_answers_hold_and_refuse_destructive_holds(registry):
    run = registry.code_tool()
    run.call({"code": "wipe('/always')\nwipe('/later')"})
    assert [args["path"] for _, args, _ in registry.asker.asked] == ["/always"]  # remembered for the second
    assert [record.by for record in registry.decisions] == ["callback", "remembered"]
    registry.forget()
    registry.refuse_destructive = True
    result = run.call({"code": "wipe('/x')"})
    assert result["error"].startswith("PermissionError: Error calling tool 'wipe': refused: this tool is marked "
                                      "destructive")


def test_invalid_arguments_and_failing_tools_raise_in_the_code(registry):
    run = registry.code_tool()
    result = run.call({"code": "add('x')"})
    assert result["error"] == ("TypeError: Error calling tool 'add', argument 'a': expected an integer, "
                               "got a string (\"x\") (line 1)")
    assert run.call({"code": "add(1, 2, 3)"})["error"] == "TypeError: add() takes 2 positional arguments but 3 were given (line 1)"
    assert run.call({"code": "add(c=1)"})["error"] == "TypeError: add() got an unexpected keyword argument 'c' (line 1)"
    assert run.call({"code": "wipe('/p', True, 3)"})["error"].startswith("TypeError: wipe() takes 2 positional arguments")
    result = run.call({"code": "try:\n    crash('now')\nexcept RuntimeError as error:\n    message = str(error)\nmessage"})
    assert result["value"].startswith("Error calling tool 'crash': the tool raised ValueError: broken: now")
    assert result["calls"][0]["ok"] is False


def test_results_cross_as_json_values():
    registry = Registry()

    @tool(registry=registry)
    def where() -> Path:
        """A path."""
        return Path("/tmp/x")

    @tool(registry=registry)
    def leak() -> object:
        """Hands back a host object (the registry itself)."""
        return registry

    result = registry.code_tool().call({"code": "[where(), type(leak()).__name__]"})
    assert result["value"] == ["/tmp/x", "str"]  # the registry crossed as text, never as an object


def test_a_generator_tool_runs_and_the_code_gets_what_it_yields():
    # a direct call reads what a generator tool yields; from code the generator itself came back as
    # its repr ('<generator object ...>') and the tool's body never ran
    registry = Registry(limits=Limits(max_result_chars=200))
    ran: list[int] = []

    @tool(registry=registry)
    def squares(n: int):
        """Yield the first n squares."""
        for i in range(n):
            ran.append(i)
            yield i * i

    @tool(registry=registry)
    def endless():
        """Yield without end."""
        while True:
            yield "item"

    @tool(registry=registry)
    def broken():
        """Yield once, then fail."""
        yield 1
        raise ValueError("no more")

    run = registry.code_tool()
    result = run.call({"code": "sum(squares(4))"})
    assert result["error"] is None and result["value"] == 14 and ran == [0, 1, 2, 3]
    assert result["calls"][0]["ok"] and result["calls"][0]["outcome"] == [0, 1, 4, 9]
    result = run.call({"code": "items = endless()\nlen(items), items[0]"})  # read up to the result limit
    assert result["error"] is None and 10 < result["value"][0] < 200 and result["value"][1] == "item"
    result = run.call({"code": "try:\n    broken()\nexcept RuntimeError as error:\n    message = str(error)\nmessage"})
    assert result["value"].startswith("Error calling tool 'broken': the tool raised ValueError: no more")
    assert result["calls"][0]["ok"] is False


def test_tools_whose_python_names_clash_each_keep_a_name_of_their_own():
    # `my.tool` and `my_tool` both became `my_tool`: the code's `my_tool()` called whichever was
    # registered first (here the other tool) and `my_tool` itself could not be called at all
    registry = Registry()
    empty = {"type": "object", "properties": {}}
    registry.add(Tool.from_schema("my.tool", "The dotted one.", empty, lambda: "dotted"))
    registry.add(Tool.from_schema("my_tool", "The plain one.", empty, lambda: "plain"))
    registry.add(Tool.from_schema("my-tool", "The dashed one.", empty, lambda: "dashed"))
    run = registry.code_tool()
    assert "def my_tool():" in run.description and "def my_tool_2():\n    \"\"\"(tool 'my.tool')" in run.description
    assert "def my_tool_3():\n    \"\"\"(tool 'my-tool')" in run.description
    result = run.call({"code": "[my_tool(), my_tool_2(), my_tool_3()]"})
    assert result["value"] == ["plain", "dotted", "dashed"], result
    assert [call["tool"] for call in result["calls"]] == ["my_tool", "my.tool", "my-tool"]
    assert run.call({"code": "my_tool_2(1)"})["error"] == "TypeError: my_tool_2() takes 0 positional arguments but 1 were given (line 1)"


def test_dates_bytes_and_tuples_made_in_the_code_reach_a_tool_in_their_json_form():
    # the code's datetime.date reached the registry as a Python object and was refused ("got a
    # Python date (not a JSON value)") while the call's record showed it as "2030-01-01"
    registry = Registry()

    @tool(registry=registry)
    def schedule(day: datetime.date, every: datetime.timedelta, at: tuple[int, int], note: bytes,
                 tags: list[str]) -> str:
        """Plan something."""
        return f"{day.isoformat()} every {every} at {at} {note!r} {sorted(tags)}"

    run = registry.code_tool()
    code = ("import datetime\nschedule(datetime.date(2030, 1, 1), datetime.timedelta(hours=36), (9, 30), b'hi', "
            "{'b', 'a'})")
    result = run.call({"code": code})
    assert result["error"] is None, result
    assert result["value"] == "2030-01-01 every 1 day, 12:00:00 at (9, 30) b'hi' ['a', 'b']"
    assert result["calls"][0]["arguments"]["day"] == "2030-01-01"
    # an instance of a class the code defined is not JSON data: still refused, as the model's own call would be
    code = "import dataclasses\n@dataclasses.dataclass\nclass Day:\n    n: int\nschedule(Day(1), 1, (1, 2), b'', [])"
    assert run.call({"code": code})["error"].startswith("TypeError: Error calling tool 'schedule'")


def test_a_run_that_printed_much_still_tells_the_model_why_it_stopped(registry):
    # the answer's JSON (value, printed, calls, error) was cut at the result limit after its start:
    # 150,000 printed characters hid the calls and the error line
    code = "for i in range(30):\n    print(i, 'x' * 5000)\nadd(1)\nundefined_name"
    reply = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "run_code", "arguments": json.dumps({"code": code})}}]}
    text = run_tool_calls(reply, ns=Registry([registry.code_tool()]))[0]["content"]
    assert len(text) < 100_200 and "[truncated: " in text
    assert text.endswith('"error": "NameError: name \'undefined_name\' is not defined (line 4)"}'), text[-300:]
    assert '"tool": "add"' in text


def test_a_syntax_error_is_one_line(registry):
    result = registry.code_tool().call({"code": "def broken(:\n    pass"})
    assert result["error"].startswith("the code does not parse: SyntaxError") and "\n" not in result["error"]


def test_max_tool_calls_stops_the_run_with_one_line_and_lists_the_calls_made(registry):
    run = registry.code_tool(max_tool_calls=5)
    code = "n = 0\nwhile True:\n    try:\n        n = add(n)\n    except BaseException:\n        pass"
    result = run.call({"code": code})
    assert result["error"] == ("stopped: the code tried to make more than 5 tool calls (max_tool_calls=5); "
                               "the calls made are listed")
    assert len(result["calls"]) == 5
    assert run.call({"code": "add(41)"})["value"] == 42  # the next run is not affected


def test_more_tool_calls_than_montys_default_cap_when_max_tool_calls_asks_for_them(registry):
    result = registry.code_tool(max_tool_calls=1500).call({"code": "sum(add(i) for i in range(1400))"})
    assert result["error"] is None and result["value"] == sum(range(1, 1401)) and len(result["calls"]) == 1400


def test_code_mode_through_the_registrys_own_call_path_and_a_chat_registry(registry):
    # the code tool in another registry (as a Chat's list of tools makes one): its calls still go
    # through the registry it was made from
    other = Registry([registry.code_tool()])
    result = other.call("run_code", {"code": "wipe('/q')"})
    assert result["value"] == "wiped /q" and registry.decisions[-1].tool == "wipe"


def test_without_pydantic_monty_the_tool_is_made_and_calling_it_says_what_to_install():
    script = textwrap.dedent("""\
        import sys
        sys.modules["pydantic_monty"] = None  # as if the extra were not installed
        from nbtools import Registry, ToolCallError
        def add(a: int) -> int:
            "Add one."
            return a + 1
        registry = Registry([add])
        run = registry.code_tool()
        assert "def add(a: int) -> int:" in run.description
        try:
            run.call({"code": "add(1)"})
        except ToolCallError as error:
            print(str(error).splitlines()[0])
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert "code mode runs the model's code in Monty" in line and "pip install" in line and "codemode" in line


def test_notebook_08_replays_the_cassette_record_08_makes(tmp_path):
    """The committed cassette is what notebooks/record_08.py records (nbval checks the notebook
    against it), so re-recording after a change to the notebook's chats is one command."""
    import importlib.util
    import json

    notebooks = ROOT / "notebooks"
    spec = importlib.util.spec_from_file_location("record_08", notebooks / "record_08.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path)
    name = "08_codemode.cassette.json"
    assert json.loads((tmp_path / name).read_text()) == json.loads((notebooks / name).read_text())


async def test_a_served_code_tool_asks_with_the_mcp_clients_origin(registry):
    pytest.importorskip("mcp")
    import anyio

    sys.path.insert(0, str(Path(__file__).parent))
    from sessions import session_for

    served = Registry([registry.code_tool()])
    with anyio.fail_after(60):
        async with session_for(served, threads=True) as session:
            result = await session.call_tool("run_code", {"code": "wipe('/served')"})
    assert not result.is_error, result.content
    assert result.structured_content["value"] == "wiped /served"
    origin = registry.asker.asked[-1][2]
    assert origin.startswith("mcp:") and origin.endswith("/code") and registry.decisions[-1].origin == origin


def test_every_kind_of_parameter_in_the_stub_and_in_a_call():
    registry = Registry()

    @tool(registry=registry)
    def mixed(a: int, /, b: str = "x", *rest: int, flag: bool, **extra: float) -> list:
        """Every kind of parameter."""
        return [a, b, list(rest), flag, extra]

    run = registry.code_tool()
    assert "def mixed(a: int, /, b: str = 'x', *rest: int, flag: bool, **extra: float) -> list:" in run.description
    result = run.call({"code": "mixed(1, 'y', 2, 3, flag=True, z=1.5)"})
    assert result["value"] == [1, "y", [2, 3], True, {"z": 1.5}]
    assert result["calls"][0]["arguments"] == {"a": 1, "b": "y", "rest": [2, 3], "flag": True, "z": 1.5}
    assert run.call({"code": "mixed(a=1, flag=True)"})["error"] == (
        "TypeError: mixed() got a positional-only argument passed as keyword: 'a' (line 1)")


def test_runs_side_by_side_in_threads_each_get_their_own_sandbox():
    import threading

    registry = Registry()
    gate = threading.Barrier(3, timeout=30)

    @tool(registry=registry)
    def meet(who: str) -> str:
        """Waits until three runs are in a tool call at once."""
        gate.wait()
        return who

    run = registry.code_tool()
    results: dict[int, dict] = {}

    def one(index: int) -> None:
        results[index] = run.call({"code": f"x = {index}\nmeet('run {index}') + ' saw ' + str(x)"})

    threads = [threading.Thread(target=one, args=(index,)) for index in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert {index: result["value"] for index, result in results.items()} == {
        index: f"run {index} saw {index}" for index in range(3)}


def test_two_runs_at_once_with_one_origin_each_log_their_own_arguments():
    # Review of issue 35: a run's answer took the newest decision for (tool, origin), which two runs
    # at once with the same origin (threads, MCP clients all "mcp:x/code") share: each must show
    # the arguments its own call ran, edits included, never the other run's.
    import threading

    gate = threading.Barrier(2, timeout=30)

    def approve(tool, args, *, origin):
        return Decision(True, args={"path": args["path"] + "-edited"})

    registry = Registry(approve=approve)

    @tool(registry=registry, hints="destructive")
    def remove(path: str) -> str:
        """Delete a file (waits until both runs' calls were approved)."""
        gate.wait()
        return f"removed {path}"

    run = registry.code_tool()
    results: dict[str, dict] = {}

    def one(path: str) -> None:
        with asking_as("mcp:client"):
            results[path] = run.call({"code": f"remove({path!r})"})

    threads = [threading.Thread(target=one, args=(path,)) for path in ("/a", "/b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for path in ("/a", "/b"):
        assert results[path]["value"] == f"removed {path}-edited"
        assert results[path]["calls"] == [{"tool": "remove", "arguments": {"path": f"{path}-edited"}, "ok": True,
                                           "outcome": f"removed {path}-edited"}]
    assert sorted(record.origin for record in registry.decisions) == ["mcp:client/code"] * 2


def test_an_async_approval_callback_answers_calls_from_code():
    asked = []

    async def approve(tool, args, *, origin):
        await asyncio.sleep(0)
        asked.append((args["path"], origin))
        return Decision(args["path"] != "/no", reason="not that one", remember=None)

    registry = Registry(approve=approve)
    registry.add(wipe, hints="destructive")
    result = registry.code_tool().call({"code": "wipe('/yes')\ntry:\n    wipe('/no')\nexcept PermissionError:\n    'refused'"})
    assert result["error"] is None and [call["ok"] for call in result["calls"]] == [True, False]
    assert asked == [("/yes", "call/code"), ("/no", "call/code")]


async def test_a_run_from_an_event_loop_awaits_async_tools_and_callbacks(registry):
    served = Registry([registry.code_tool()])
    result = await served.acall("run_code", {"code": "w = await weather('Oslo')\nwipe('/a')\nw['temperature']"})
    assert result["value"] == 4 and result["error"] is None
    assert registry.asker.asked == [("wipe", {"path": "/a", "force": False}, "call/code")]
