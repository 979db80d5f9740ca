"""A registry's resources, prompts and completions (`nbtools.resources.Catalog`) on an `mcp` low-level Server.

Handlers for `resources/list`, `resources/templates/list`, `resources/read`, `resources/subscribe`,
`resources/unsubscribe`, `prompts/list`, `prompts/get` and `completion/complete`, and the notifications
a catalog change sends: `notifications/resources/list_changed`, `notifications/prompts/list_changed`
(to every connected client) and `notifications/resources/updated` (to the clients subscribed to that
URI). Unknown resources, prompts and bad arguments are JSON-RPC errors (-32602, with the resource's
URI in `data` for an unknown resource, as the spec asks); a function that raises is an internal error
(-32603) whose message says what went wrong. A read or render is stopped as a tool call is: by the
person's Interrupt (an error naming it) and by the client's cancellation (no answer, as the spec says).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from typing import Any

from ..context import reset_context, use_context
from ..errors import ToolCallError
from ..resources import MAX_COMPLETIONS, Catalog, ResourceError, check_length
from .stopping import interruptible

SUBSCRIPTIONS_KEY = "nbtools/subscriptions"  # a connection's subscribed URIs, in its `state`
RESOURCE_NOT_FOUND = -32002  # the spec's code for resources/read of an unknown URI


def add_offerings(server: Any, catalog: Catalog, connections: Any, *, activity: Any = None, calls: Any = None,
                  run_sync: Any = None) -> None:
    """Register the handlers on `server`; `connections` is the server's `_Clients` (see `server.py`);
    `activity` records each `resources/read` and `prompts/get`; `calls`: see `server.build_server`;
    `run_sync`: where plain resource and prompt functions run (worker threads under `nbtools serve`,
    as plain tools do)."""
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    from .access import proxied_user
    from .served import ServedContext, client_name, connection_of, round_outcome

    def failure(error: BaseException) -> MCPError:
        if isinstance(error, MCPError):
            return error
        if isinstance(error, ResourceError):
            return MCPError(types.INVALID_PARAMS, str(error))
        if isinstance(error, ToolCallError):
            return MCPError(types.INVALID_PARAMS if error.argument else types.INTERNAL_ERROR, str(error))
        return MCPError(types.INTERNAL_ERROR, f"{type(error).__name__}: {error}")

    async def run(ctx: Any, params: Any, make: Any, build: Any, what: tuple[str, str, Any]) -> Any:
        """Run a catalog call with the request's ToolContext (log, progress, elicit reach the client);
        `build(value)` makes the result; at 2026-07-28 unanswered questions make an InputRequiredResult.
        `what`: (kind, name, arguments) for the activity log. The function runs where tools run (on a
        kernel's main thread when `calls` is given)."""
        connections.add(connection_of(ctx))
        served = ServedContext(ctx, asyncio.get_running_loop(), params)
        record = (activity.begin(client_name(ctx), what[1], what[2], kind=what[0], user=proxied_user(ctx))
                  if activity is not None else None)

        async def call() -> Any:
            token = use_context(served)
            try:
                # stopped like a tool call: a person's Interrupt, or the client's cancellation
                # (`stopping.cancel_served` interrupts what holds the kernel's main thread)
                async with interruptible():
                    return await make()
            except KeyboardInterrupt:
                raise MCPError(types.INTERNAL_ERROR, f"the {what[0]} {what[1]!r} was interrupted by the person "
                                                     "running the server") from None
            finally:
                reset_context(token)

        def note() -> str:
            return "; ".join(served.notes)

        def stopped() -> None:
            if record is not None:
                activity.end(record, cancelled=True, note=note())

        try:
            try:
                value = await (call() if calls is None else calls.run(call, stopping=served.cancel, ended=stopped))
            except Exception as error:
                await served.flush()
                if served.input_required() is None and not (served.missing is not None and served._input_required):
                    raise failure(error) from None
                result = round_outcome(served, None)
            else:
                await served.flush()
                # the function caught the end of its run: still ask
                result = served.input_required() if served.input_required() is not None else build(value)
        except asyncio.CancelledError:
            served.cancel()
            if calls is None:
                stopped()
            raise
        except MCPError as error:
            if record is not None:
                activity.end(record, error=error, note=note())
            raise
        except Exception as error:
            if record is not None:
                activity.end(record, error=error, note=note())
            raise failure(error) from None
        if record is not None:
            activity.end(record, result, note=note())
        return result

    async def list_resources(ctx: Any, params: Any) -> Any:
        connections.add(connection_of(ctx))
        return types.ListResourcesResult(resources=[
            types.Resource(uri=entry.uri, name=entry.name, description=entry.description, mime_type=entry.mime_type)
            for entry in catalog.fixed()])

    async def list_templates(ctx: Any, params: Any) -> Any:
        connections.add(connection_of(ctx))
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=entry.uri, name=entry.name, description=entry.description,
                                   mime_type=entry.mime_type)
            for entry in catalog.templates()])

    async def read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        try:
            check_length("resource URI", uri)
        except ResourceError as error:
            raise failure(error) from None
        try:
            catalog.find(uri)
        except ResourceError as error:
            raise MCPError(RESOURCE_NOT_FOUND, str(error), data={"uri": uri}) from None
        return await run(ctx, params, lambda: catalog.read(uri, run_sync=run_sync),
                         lambda read: types.ReadResourceResult(contents=resource_contents_list(uri, *read)),
                         ("resource", uri, None))

    async def subscribe(ctx: Any, params: Any) -> Any:
        try:
            check_length("resource URI", str(params.uri))  # kept per connection: no unbounded keys
        except ResourceError as error:
            raise failure(error) from None
        connection = connection_of(ctx)
        connections.add(connection)
        if connection is not None:
            connection.state.setdefault(SUBSCRIPTIONS_KEY, set()).add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(ctx: Any, params: Any) -> Any:
        connection = connection_of(ctx)
        if connection is not None:
            connection.state.get(SUBSCRIPTIONS_KEY, set()).discard(str(params.uri))
        return types.EmptyResult()

    async def list_prompts(ctx: Any, params: Any) -> Any:
        connections.add(connection_of(ctx))
        return types.ListPromptsResult(prompts=[
            types.Prompt(name=entry.name, description=entry.description,
                         arguments=[types.PromptArgument(**argument) for argument in entry.arguments()])
            for entry in catalog.prompts.values()])

    async def get_prompt(ctx: Any, params: Any) -> Any:
        def build(rendered: Any) -> Any:
            messages, description = rendered
            return types.GetPromptResult(description=description, messages=[
                types.PromptMessage(role=message["role"], content=prompt_content(message["content"]))
                for message in messages])

        return await run(ctx, params,
                         lambda: catalog.render_prompt(params.name, params.arguments, run_sync=run_sync), build,
                         ("prompt", params.name, params.arguments))

    async def complete(ctx: Any, params: Any) -> Any:
        ref = params.ref
        kind, key = ("prompt", ref.name) if ref.type == "ref/prompt" else ("resource", str(ref.uri))
        try:
            values = catalog.completions(kind, key, params.argument.name, params.argument.value)
        except Exception as error:
            raise failure(error) from None
        more = len(values) > MAX_COMPLETIONS  # `completions` takes one value past the limit, no more
        return types.CompleteResult(completion=types.Completion(
            values=values[:MAX_COMPLETIONS], total=None if more else len(values), has_more=more))

    for method, params_type, handler in (
        ("resources/list", types.PaginatedRequestParams, list_resources),
        ("resources/templates/list", types.PaginatedRequestParams, list_templates),
        ("resources/read", types.ReadResourceRequestParams, read_resource),
        ("resources/subscribe", types.SubscribeRequestParams, subscribe),
        ("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe),
        ("prompts/list", types.PaginatedRequestParams, list_prompts),
        ("prompts/get", types.GetPromptRequestParams, get_prompt),
        ("completion/complete", types.CompleteRequestParams, complete),
    ):
        server.add_request_handler(method, params_type, handler)


def resource_contents_list(uri: str, value: Any, mime: str | None) -> list:
    """The contents of a resource's value: one entry, or one per item of a list holding content objects
    (`[text, Image, ...]`: a notebook cell's source and its pictures); a plain JSON list stays one entry."""
    from ..content import Audio, Image, Resource

    if isinstance(value, list) and any(isinstance(item, (Image, Audio, Resource)) for item in value):
        return [resource_contents(uri, item, mime if isinstance(item, str) else None) for item in value]
    return [resource_contents(uri, value, mime)]


def resource_contents(uri: str, value: Any, mime: str | None) -> Any:
    """A resource function's value as TextResourceContents or BlobResourceContents."""
    import mcp_types as types

    from ..content import Audio, Image, Resource

    if isinstance(value, (Image, Audio)):
        return types.BlobResourceContents(uri=uri, mime_type=value.mime, blob=value.base64())
    if isinstance(value, Resource):
        if value.text is not None:
            return types.TextResourceContents(uri=uri, mime_type=value.mime or mime or "text/plain", text=value.text)
        return types.BlobResourceContents(uri=uri, mime_type=value.mime or mime or "application/octet-stream",
                                          blob=base64.b64encode(value.blob or b"").decode("ascii"))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return types.BlobResourceContents(uri=uri, mime_type=mime or "application/octet-stream",
                                          blob=base64.b64encode(bytes(value)).decode("ascii"))
    if isinstance(value, str):
        return types.TextResourceContents(uri=uri, mime_type=mime or "text/plain", text=value)
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ToolCallError(uri, f"a resource function returns str, bytes or a JSON value; got "
                                 f"{type(value).__name__} ({error})") from None
    return types.TextResourceContents(uri=uri, mime_type=mime or "application/json", text=text)


def prompt_content(content: Any) -> Any:
    """A prompt message's content (text or a content record) as an MCP content block."""
    from ..content import Resource
    from .toolresults import content_blocks

    if isinstance(content, Resource):  # embedded resources keep their own URI and MIME type
        return content_blocks([content], 10**9)[0]
    return content_blocks([content], 10**9)[0]


class Announcer:
    """Sends a catalog's changes to a server's clients (on the server's loop, from whatever thread changed it)."""

    def __init__(self, connections: Any) -> None:
        self.connections = connections

    def __call__(self, kind: str, uri: str | None) -> None:
        loop = self.connections.loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(lambda: loop.create_task(self._send(kind, uri)))

    async def _send(self, kind: str, uri: str | None) -> None:
        await self.connections.publish(kind, uri)  # 2026-07-28 listen streams
        for connection in list(self.connections.connections.values()):
            with contextlib.suppress(Exception):  # best-effort: a client that left is forgotten at teardown
                if kind == "resources":
                    await connection.send_resource_list_changed()
                elif kind == "prompts":
                    await connection.send_prompt_list_changed()
                elif uri in connection.state.get(SUBSCRIPTIONS_KEY, ()):
                    await connection.send_resource_updated(uri)
