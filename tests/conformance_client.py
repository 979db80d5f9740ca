"""A client for the official conformance suite's client scenarios, in two flavours sharing one script.

    python tests/conformance_client.py nbtools|sdk SERVER_URL

The suite (`conformance client --command ...`) appends the URL, sets `MCP_CONFORMANCE_SCENARIO` (and
`MCP_CONFORMANCE_PROTOCOL_VERSION`, `MCP_CONFORMANCE_CONTEXT`), and checks what reaches its server.
`nbtools` does each scenario through `nbtools.mcp.connect()`; `sdk` through the `mcp` SDK's own
`Client`, the reference the nbtools client is measured against. Both do the same steps.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

SCENARIO = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
VERSION = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
CONTEXT: dict = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
HANDSHAKE = VERSION is not None and VERSION < "2026"  # dated revisions up to 2025-11-25: the handshake
# json-schema-ref-no-deref: the suite's mock speaks only the handshake, whatever version it reports
if SCENARIO == "json-schema-ref-no-deref":
    HANDSHAKE = True


def stub_arguments(schema: dict) -> dict:
    """The least arguments a tool's schema requires: one plain value per required property."""
    by_type = {"string": "x", "integer": 0, "number": 0, "boolean": False, "object": {}, "array": [], "null": None}
    properties = schema.get("properties") or {}
    return {name: by_type.get((properties.get(name) or {}).get("type"), "x") for name in schema.get("required") or []}


def answer_for(scenario: str, defaults: dict) -> dict:
    """What the person would answer an elicitation with, in each scenario."""
    return {"confirmed": True} if scenario == "sep-2322-client-request-state" else defaults


def steps(scenario: str, names: list[str], schema_of: Any) -> list[tuple[str, dict]]:
    """The tool calls a scenario expects after the tools are listed: [(name, arguments)]."""
    if scenario in ("tools_call", "request-metadata", "http-standard-headers"):
        return [("add_numbers", {"a": 5, "b": 3})]
    if scenario == "sse-retry":
        return [("test_reconnection", {})]
    if scenario == "elicitation-sep1034-client-defaults":
        return [("test_client_elicitation_defaults", {})]
    if scenario == "sep-2322-client-request-state":
        return [(name, {}) for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state",
                                        "test_mrtr_no_result_type")]
    if scenario == "http-invalid-tool-headers":
        return [(name, stub_arguments(schema_of(name))) for name in names]
    if scenario == "http-custom-headers":
        return [(call["name"], call.get("arguments") or {}) for call in CONTEXT.get("toolCalls", [])
                if call["name"] in names]
    if scenario == "json-schema-2020-12-preservation":
        return [("json_schema_echo", {"schema": schema_of("json_schema_2020_12_tool")})]
    return []  # initialize, json-schema-ref-no-deref: connecting and listing is the whole scenario


def run_nbtools(url: str) -> None:
    from nbtools.mcp import connect

    with connect(url, timeout=20, protocol="2025-11-25" if HANDSHAKE else "auto",
                 on_elicit=lambda asked: answer_for(SCENARIO, asked.defaults())) as conn:
        names = [tool.name for tool in conn]
        for name, arguments in steps(SCENARIO, names, lambda name: conn[name].parameters):
            try:
                print(name, "->", conn.call(name, arguments))
            except Exception as error:  # the scenario judges what was sent; a refused call is one step
                print(name, "failed:", error, file=sys.stderr)


async def run_sdk(url: str) -> None:
    import mcp_types as types
    from mcp import Client

    async def elicit(context: Any, params: Any) -> Any:
        defaults = {name: spec["default"] for name, spec in (getattr(params, "requested_schema", None) or {})
                    .get("properties", {}).items() if isinstance(spec, dict) and "default" in spec}
        return types.ElicitResult(action="accept", content=answer_for(SCENARIO, defaults))

    async with Client(url, mode="legacy" if HANDSHAKE else "auto", elicitation_callback=elicit) as client:
        listed = (await client.list_tools()).tools
        schemas = {tool.name: tool.input_schema for tool in listed}
        for name, arguments in steps(SCENARIO, list(schemas), schemas.__getitem__):
            try:
                print(name, "->", await client.call_tool(name, arguments))
            except Exception as error:
                print(name, "failed:", error, file=sys.stderr)


if __name__ == "__main__":
    flavour, server_url = sys.argv[1], sys.argv[-1]
    if flavour == "nbtools":
        run_nbtools(server_url)
    else:
        asyncio.run(run_sdk(server_url))
