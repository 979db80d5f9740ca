"""Type graphs and schemas that explode (issue 25), each in a child process with memory and time
limits, so a regression fails one test instead of running for minutes.

- Shared (not recursive) dataclasses or pydantic models nested 30 levels, each using the level
  below twice: written out at every use, the schema doubles per level (minutes, megabytes). Each
  shared type goes in `$defs` once in every format that has references; Gemini's OpenAPI subset
  has none, and refuses such a schema with a clear error past a bound.
- A tool (as `connect()` reads a server's tools) whose schema has 30,000 required properties:
  reading it was quadratic (a list membership test per property, 18 s).
"""

from __future__ import annotations

import json
import subprocess
import sys
import dataclasses
import textwrap
from dataclasses import dataclass

import pytest

from nbtools import get_schema

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX rlimits")

MEMORY_LIMIT = 1 << 30
WALL_LIMIT = 20

PRELUDE = textwrap.dedent(f"""\
    import json, resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))
    """)


def in_child(body: str, wall: float = WALL_LIMIT) -> dict:
    """Run `body` (which prints one JSON line last) in a limited child; what it printed."""
    try:
        done = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], capture_output=True,
                              text=True, timeout=wall)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {wall} s")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


SHARED_GRAPH = """
    import dataclasses
    from typing import Annotated
    from nbtools import get_schema
    from nbtools.errors import SchemaError
    kind = {kind!r}
    if kind == "dataclass":
        level = dataclasses.make_dataclass("T0", [("x", int)])
        for index in range(1, 31):
            # described uses: strict modes cannot put a description beside a $ref, and copied
            # the definition at every use (2**30 copies)
            level = dataclasses.make_dataclass(f"T{{index}}", [("a", Annotated[level, "first"]),
                                                              ("b", Annotated[level, "second"])])
    else:
        import pydantic
        level = pydantic.create_model("T0", x=(int, ...))
        for index in range(1, 31):
            level = pydantic.create_model(f"T{{index}}", a=(level, ...), b=(level, ...))
    def deep(top: int) -> int:
        "Thirty levels of shared types."
        return 0
    deep.__annotations__["top"] = level
    report = {{}}
    for fmt, strict in [(None, False), ("openai", False), ("openai", True), ("anthropic", True),
                        ("responses", False), ("gemini", False), ("mcp", False), ("gemini-openapi", False)]:
        started = time.monotonic()
        try:
            text = json.dumps(get_schema(deep, fmt, strict=strict))
            outcome = len(text)
        except SchemaError as error:
            outcome = str(error)
        report[f"{{fmt}}{{'-strict' if strict else ''}}"] = [outcome, time.monotonic() - started]
    print(json.dumps(report))
"""


@pytest.mark.parametrize("kind", ["dataclass", "pydantic"])
def test_shared_types_nested_thirty_levels_are_written_once(kind):
    report = in_child(SHARED_GRAPH.format(kind=kind))
    refused = report.pop("gemini-openapi")[0]
    assert isinstance(refused, str) and "has no references" in refused and "shared types" in refused, refused
    for fmt, (outcome, _) in report.items():
        # before: 2**30 copies of T0 (the dataclass graph never finished; pydantic's only in gemini-openapi)
        if isinstance(outcome, str):  # a strict mode's own limits may refuse it, quickly
            assert fmt.endswith("-strict") and "strict mode allows at most" in outcome, (fmt, outcome)
        else:
            assert outcome < 200_000, (fmt, outcome)
    assert report["None"][0] < 20_000 and report["mcp"][0] < 20_000, report  # references, not copies


@dataclass
class Point:
    x: int
    y: int


@dataclass
class Segment:
    start: Point
    end: Point


def draw(segment: Segment, origin: Point) -> str:
    """Draw."""
    return ""


def shared_levels(count: int) -> type:
    level = dataclasses.make_dataclass("T0", [("x", int)])
    for index in range(1, count + 1):
        level = dataclasses.make_dataclass(f"T{index}", [("a", level), ("b", level)])
    return level


def test_shared_types_each_in_defs_once():
    top = shared_levels(12)  # 2**12 uses of T0 written out

    def deep(top: int) -> int:
        """Twelve levels."""
        return 0

    deep.__annotations__["top"] = top
    schema = get_schema(deep)["parameters"]
    assert set(schema["$defs"]) == {f"T{index}" for index in range(12)}
    assert schema["properties"]["top"]["properties"]["a"] == {"$ref": "#/$defs/T11"}
    assert schema["$defs"]["T5"]["properties"] == {"a": {"$ref": "#/$defs/T4"}, "b": {"$ref": "#/$defs/T4"}}
    # a small schema still writes its shared types out where they are used (easier for a model)
    small = get_schema(draw)["parameters"]
    assert "$defs" not in small and small["properties"]["origin"]["properties"]["x"] == {"type": "integer"}


def test_reading_a_tool_with_thirty_thousand_required_properties_is_linear():
    report = in_child("""
        from nbtools import Tool
        count = 30_000
        schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(count)},
                  "required": [f"p{i}" for i in range(count)]}
        started = time.monotonic()
        tool = Tool.from_schema("wide", "", schema, lambda **kwargs: None)
        print(json.dumps({"seconds": time.monotonic() - started,
                          "required": sum(item.required for item in tool.args.fields)}))
    """, wall=12)  # before: 18 s (quadratic); after: 1.4 s
    assert report["required"] == 30_000, report


# An optional property behind a reference loop through `anyOf`: the strict renderer asks whether it
# already admits null (OpenAI makes optional properties required-but-nullable) and followed the loop
# forever. Each loop is followed once: a loop alone adds no null, the `null` option does.
REF_LOOPS = {
    "self": ({"A": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "string"}]}}, False),
    "mutual": ({"A": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "string"}]},
                "B": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "integer"}]}}, False),
    "mutual-nullable": ({"A": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "string"}]},
                         "B": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}}, True),
}


@pytest.mark.parametrize("loop", sorted(REF_LOOPS))
def test_an_optional_property_behind_a_reference_loop_renders_in_strict_mode(loop):
    defs, nullable = REF_LOOPS[loop]
    report = in_child(f"""
        from nbtools import Registry, Tool, get_schema
        schema = {{"type": "object", "properties": {{"x": {{"$ref": "#/$defs/A"}}}}, "$defs": {defs!r}}}
        tool = Tool.from_schema("looped", "A looped value.", schema, lambda x="left out": x)
        rendered = get_schema(tool, "openai", strict=True)["function"]["parameters"]
        registry = Registry([tool])
        served = registry.schemas("openai", strict=True)[0]["function"]["parameters"]
        print(json.dumps({{"rendered": rendered, "same": served == rendered, "null_gives": tool.call({{"x": None}})}}))
    """, wall=20)
    x = report["rendered"]["properties"]["x"]
    assert report["same"], report
    assert report["rendered"]["required"] == ["x"], report  # OpenAI: every property required
    if nullable:  # already admits null through the loop: kept as is, and null is a value
        assert x == {"$ref": "#/$defs/A"} and report["null_gives"] is None, report
    else:  # made nullable: null stands for "left out", as dispatch reads it
        assert {"type": "null"} in x["anyOf"] and "null leaves it out" in x["description"], report
        assert report["null_gives"] == "left out", report
