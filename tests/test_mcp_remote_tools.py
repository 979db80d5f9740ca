"""`connect()` to an nbtools MCP server: the other server's tools as nbtools Tools.

Against real servers: `nbtools serve` as a subprocess over stdio and over streamable HTTP on
127.0.0.1, and `nbtools.mcp.start` in this process. What it proves: the remote tools keep the
originals' schemas, hints and signatures and call like them; the server's errors come back once, as
the same ToolCallError, rebuilt from the result's fields and not its text; property names that are
not identifiers, the server's environment, a schema that cannot be read, and a server that is not
there or never answers. Transport and session details of `connect()` are in test_mcp_connect.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest
from test_mcp import DEADLINE, EXAMPLE_TARGET, ROOT, free_port, http_server_process, text_of

import nbtools.mcp as nbmcp
from nbtools import Registry, ToolCallError
from tests import mcp_example_tools as examples


# ------------------------------------------------------------------------------------------------
# connect(): another server's tools as nbtools Tools
# ------------------------------------------------------------------------------------------------
def check_remote_tools(remote: nbmcp.Connection) -> None:
    tools = {item.name: item for item in remote}
    assert set(tools) == set(examples.example_tools.names())
    assert remote.server_name.startswith("nbtools")
    # the same interface as the originals, so they render the same for any provider
    for name, original in ((name, examples.example_tools.get(name)) for name in tools):
        assert tools[name].parameters == {"$schema": "https://json-schema.org/draft/2020-12/schema", **original.parameters}  # kept (SEP-1613)
        assert tools[name].schema("openai") == original.schema("openai")
        # every hint survives; what the server leaves unsaid takes the MCP default (issue 10)
        assert original.hints <= tools[name].hints
        assert tools[name].hints == nbmcp.hints_from_annotations(original.schema("mcp").get("annotations"))
        assert tools[name].schema("openai")["function"]["parameters"] == original.schema("openai")["function"]["parameters"]
    assert tools["add"].returns == {"type": "integer"}  # unwrapped from the MCP wrapper
    # the function mk_tool built: a real signature and docstring
    import inspect

    assert str(inspect.signature(tools["add"].fn)) == "(a: int, b: int = 1)"
    assert "Add two integers." in tools["add"].fn.__doc__
    # calling: directly, through Tool.call (validated here first), and through a Registry
    assert tools["add"].fn(2, 3) == 5
    assert tools["add"].call({"a": 2}) == 3
    assert tools["stats"].call({"numbers": [2, 4]}) == {"count": 2, "mean": 3.0, "largest": 4.0}
    assert tools["greet"].fn("Bo") == "Hello, Bo!"
    local = Registry(remote)
    assert local.call("add", '{"a": 20, "b": 22}') == 42
    # errors: the server's error text comes back as a ToolCallError
    with pytest.raises(ToolCallError, match="ZeroDivisionError") as raised:
        tools["divide"].fn(1, 0)
    assert str(raised.value).startswith("Error calling tool 'divide': the tool raised ZeroDivisionError")
    # sent as is (no local check): the server's refusal, with the argument it names
    with pytest.raises(ToolCallError) as raised:
        remote.call("add", {"a": "five"})
    assert raised.value.argument == "a" and str(raised.value).count("Error calling tool") == 1
    with pytest.raises(ToolCallError, match="ZeroDivisionError"):
        local.call("divide", {"numerator": 1, "denominator": 0})
    # bad arguments are refused on this side already, before anything is sent
    with pytest.raises(ToolCallError, match="'a'"):
        tools["add"].call({"a": "five"})
    with pytest.raises(ToolCallError, match="no_such_tool"):
        remote.call("no_such_tool", {})
    assert tools["add"].fn(1) == 2  # still connected after errors


def test_connect_over_stdio():
    command = [sys.executable, "-m", "nbtools.cli", "serve", EXAMPLE_TARGET]
    remote = nbmcp.connect(command, cwd=str(ROOT), timeout=DEADLINE, errlog=subprocess.DEVNULL)
    try:
        check_remote_tools(remote)
        assert remote.call("delete_note", {"title": "todo"}) is True
        assert "todo" in examples.notes  # the server process's notes changed, not ours
    finally:
        remote.close()
    assert "closed" in repr(remote)
    with pytest.raises(ToolCallError, match="closed"):
        remote.call("add", {"a": 1})
    remote.close()  # idempotent


def test_connect_over_http():
    with http_server_process() as url:
        with nbmcp.connect(url, timeout=DEADLINE) as remote:
            check_remote_tools(remote)


def test_connect_failure_names_the_target():
    port = free_port()  # nothing listens there
    with pytest.raises(ConnectionError, match=f"127.0.0.1:{port}"):
        nbmcp.connect(f"http://127.0.0.1:{port}/mcp", timeout=5)
    with pytest.raises(ConnectionError, match="no-such-command-xyz"):
        nbmcp.connect("no-such-command-xyz --flag", timeout=5)
    server = nbmcp.start(examples.example_tools, port=0)
    try:
        with pytest.raises(ConnectionError, match="Not Found \\(is the path right\\? .* serves at /mcp\\)"):
            nbmcp.connect(f"http://127.0.0.1:{server.port}/", timeout=DEADLINE)
    finally:
        server.stop(timeout=DEADLINE)


def test_connect_to_a_command_that_never_answers_says_so_and_leaves_nothing_behind():
    token = f"nbtools-silent-{os.getpid()}-{time.monotonic_ns()}"  # finds this test's process only
    silent = [sys.executable, "-c", "import time; time.sleep(600)", token]
    script = textwrap.dedent(f'''
        import nbtools.mcp as nbmcp
        try:
            nbmcp.connect({silent!r}, timeout=1)
        except ConnectionError as error:
            print(error)
    ''')
    # in a child, so that what asyncio prints at exit (a failed future nobody retrieved) is seen
    finished = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                              timeout=DEADLINE * 2)
    assert "no answer to the handshake (`server/discover`, `initialize`) within 1 s" in finished.stdout, finished
    assert "never retrieved" not in finished.stderr and "Traceback" not in finished.stderr, finished.stderr
    leftover = subprocess.run(["pgrep", "-f", token], capture_output=True, text=True)
    assert leftover.stdout == ""  # the server process was stopped


def test_hints_from_annotations_and_result_values():
    import mcp_types as types

    # MCP defaults (issue 10): an omitted hint is destructiveHint/openWorldHint true, the others false
    assert nbmcp.hints_from_annotations({"readOnlyHint": True, "destructiveHint": False}) == \
        {"read-only", "not-destructive", "open-world"}
    assert nbmcp.hints_from_annotations({"readOnlyHint": True, "destructiveHint": False,
                                         "openWorldHint": False}) == {"read-only", "not-destructive", "not-open-world"}
    assert nbmcp.hints_from_annotations(None) == {"destructive", "open-world"}
    wrapper = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}
    text = [types.TextContent(type="text", text="5")]
    assert nbmcp.result_value(types.CallToolResult(content=text, structured_content={"result": 5}), wrapper) == 5
    assert nbmcp.result_value(types.CallToolResult(content=text, structured_content={"result": 5}), None) == {"result": 5}
    assert nbmcp.result_value(types.CallToolResult(content=text)) == 5
    words = [types.TextContent(type="text", text="plain words")]
    assert nbmcp.result_value(types.CallToolResult(content=words)) == "plain words"


def quoted_registry() -> Registry:
    """A tool whose property name holds a quote: its repr is `"it's"`, not `'it's'`."""
    from nbtools import Tool

    return Registry([Tool.from_schema("t", "Takes a quoted name.", {
        "type": "object", "properties": {"it's": {"type": "integer"}}, "required": ["it's"]}, lambda **kw: kw)])


async def test_error_results_carry_the_error_fields_and_are_rebuilt_without_parsing_text():
    quoted = quoted_registry()
    cases = [
        (quoted, "t", {"it's": "x"}),  # a bad argument whose name needs double quotes
        (quoted, "t", {}),  # a missing argument
        (examples.example_tools, "divide", {"numerator": 1, "denominator": 0}),  # the tool raised
        (examples.example_tools, "no_such_tool", {}),  # unknown tool
    ]
    for registry, name, arguments in cases:
        with pytest.raises(ToolCallError) as raised:
            registry.call(name, arguments)
        local = raised.value
        result = await nbmcp.call_result(registry, name, arguments)
        assert result.is_error and text_of(result) == str(local)
        rebuilt = nbmcp.remote_error(name, result)
        assert (rebuilt.tool, rebuilt.argument, rebuilt.problem, rebuilt.schema) == \
            (local.tool, local.argument, local.problem, local.schema)
        assert str(rebuilt) == str(local) and str(rebuilt).count("Error calling tool") == 1
    assert rebuilt.argument is None
    with pytest.raises(ToolCallError) as raised:
        quoted.call("t", {"it's": "x"})
    assert raised.value.argument == "it's"


def test_error_result_of_another_server_keeps_its_text_and_a_malformed_record_is_ignored():
    import mcp_types as types

    def error(text: str, meta: dict | None = None):
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True, _meta=meta)

    plain = nbmcp.remote_error("x", error("Error executing tool x: boom"))
    assert str(plain) == "Error calling tool 'x': Error executing tool x: boom" and plain.argument is None
    for record in ({"problem": 5}, {"problem": "p", "argument": ["a"]}, {"problem": "p", "schema": "s"}, "text"):
        odd = nbmcp.remote_error("x", error("the text", {nbmcp.ERROR_META_KEY: record}))
        assert str(odd) == "Error calling tool 'x': the text"
    # the name the caller used, whatever name the record gives
    named = nbmcp.remote_error("x", error("t", {nbmcp.ERROR_META_KEY: {"tool": "other", "problem": "p"}}))
    assert str(named) == "Error calling tool 'x': p"
    assert str(nbmcp.remote_error("x", types.CallToolResult(content=[], is_error=True))) == \
        "Error calling tool 'x': the server reported an error"


def test_a_connected_tool_raises_the_servers_own_error_once():
    """An argument named `it's` used to come back as
    `Error calling tool 't': Error calling tool 't', argument "it's": …` (its text parsed by a regex)."""
    server = nbmcp.start(quoted_registry(), port=0)
    try:
        with nbmcp.connect(server.url, timeout=DEADLINE) as remote:
            with pytest.raises(ToolCallError) as raised:
                remote.call("t", {"it's": "x"})
    finally:
        server.stop()
    with pytest.raises(ToolCallError) as local:
        quoted_registry().call("t", {"it's": "x"})
    assert raised.value.argument == "it's" and raised.value.schema == local.value.schema
    assert str(raised.value) == str(local.value)
    assert str(raised.value).startswith("Error calling tool 't', argument \"it's\": ")
    assert str(raised.value).count("Error calling tool") == 1


def test_connected_tool_with_property_names_that_are_not_identifiers():
    """Tool calls send `city-name`; a person calls `fn(city_name=...)` or positionally: both reach the server as `city-name`."""
    from nbtools import Tool

    received = []

    def forecast(**arguments):
        received.append(arguments)
        return f"{arguments['city-name']}: {arguments.get('class', 0)}"

    def echo(**arguments):
        return arguments

    served = Registry([Tool.from_schema(
        "forecast", "Weather for a city.",
        {"type": "object", "properties": {"city-name": {"type": "string"}, "class": {"type": "integer"}},
         "required": ["city-name"]}, forecast)])
    # property names that are also names the forwarding code uses for itself
    served.add(Tool.from_schema("echo", "", {"type": "object", "properties": {
        "tool_name": {"type": "string"}, "name": {"type": "string"}, "arguments": {"type": "integer"},
        "self": {"type": "integer"}, "from": {"type": "string"}}}, echo))
    server = nbmcp.start(served, port=0)
    try:
        with nbmcp.connect(server.url, timeout=DEADLINE) as remote:
            remote_tool = remote[0]
            import inspect

            assert str(inspect.signature(remote_tool.fn)) == "(city_name: str, class_: int | None = None)"
            assert remote_tool.call({"city-name": "Oslo", "class": 2}) == "Oslo: 2"
            assert remote_tool.fn(city_name="Bergen", class_=3) == "Bergen: 3"
            assert remote_tool.fn("Tromsø") == "Tromsø: 0"
            assert remote_tool("Oslo", 1) == "Oslo: 1"
            with pytest.raises(TypeError, match=r"forecast\(\): missing a required argument: 'city_name'"):
                remote_tool.fn(town="Oslo")
            echo_tool = remote[1]
            everything = {"tool_name": "t", "name": "n", "arguments": 1, "self": 2, "from": "f"}
            assert echo_tool.call(everything) == everything
            assert echo_tool.fn(tool_name="t", name="n", arguments=1, self=2, from_="f") == everything
    finally:
        server.stop()
    assert received == [{"city-name": "Oslo", "class": 2}, {"city-name": "Bergen", "class": 3},
                        {"city-name": "Tromsø"}, {"city-name": "Oslo", "class": 1}]


def test_connect_passes_env_on_top_of_a_minimal_environment(monkeypatch):
    """As documented on `connect`: the server gets PATH & co. plus `env`, not this process's secrets."""
    monkeypatch.setenv("NBTOOLS_TEST_SECRET", "s3cret")
    server_code = textwrap.dedent('''
        import os
        from nbtools import Registry
        from nbtools.mcp import serve

        def variable(name: str) -> str:
            "An environment variable of the server process."
            return os.environ.get(name, "<unset>")

        serve(Registry([variable]))
    ''')
    with nbmcp.connect([sys.executable, "-c", server_code], env={"NBTOOLS_TEST_EXTRA": "yes"}, cwd=str(ROOT),
                       timeout=DEADLINE, errlog=subprocess.DEVNULL) as remote:
        variable = remote[0].fn
        assert variable("NBTOOLS_TEST_EXTRA") == "yes"
        assert variable("NBTOOLS_TEST_SECRET") == "<unset>"
        assert variable("PATH") != "<unset>"


def test_connect_skips_a_tool_whose_schema_cannot_be_read_and_keeps_the_others():
    import warnings as warnings_module

    from nbtools import Registry, Tool

    deep: dict = {"type": "integer"}
    for _ in range(150):  # deeper than inverse.MAX_SCHEMA_DEPTH: refused on the client side
        deep = {"type": "array", "items": deep}
    registry = Registry([examples.add])
    registry.add(Tool(name="too_deep", description="", parameters={"type": "object", "properties": {"x": deep}},
                      fn=lambda x: x))
    server = nbmcp.start(registry, port=0)
    try:
        with warnings_module.catch_warnings(record=True) as caught:
            warnings_module.simplefilter("always")
            with nbmcp.connect(server.url, timeout=DEADLINE) as remote:
                assert [item.name for item in remote] == ["add"]
                assert "too_deep" in remote.skipped
                assert remote[0].fn(2, b=5) == 7
        assert any("tool 'too_deep' skipped" in str(item.message) for item in caught)
    finally:
        server.stop()
