"""One live session of `connect()`: the `mcp` SDK's `Client`, held open by a task on the connection's
background loop until it is told to end, and what it hears about tool-list changes.

`Client(mode="auto")` sends `server/discover` (protocol 2026-07-28) and falls back to the
`initialize` handshake (2025-11-25); "legacy" does the handshake only. At 2026-07-28 list changes
come only to a `subscriptions/listen` stream, which is opened when the server offers them.
"""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from typing import Any, Awaitable, Callable


class SessionLost(Exception):
    """The server no longer knows the session (restarted) or the connection ended during a call.

    `unsent`: the server refused the request before running it ("Session not found"), so sending it
    again on a new session cannot run the tool twice."""

    def __init__(self, reason: str, unsent: bool):
        super().__init__(reason)
        self.unsent = unsent


class Link:
    """One session: `client` (the SDK `Client` once negotiated), `ready` (settled with the listed
    tools, or the error that prevented them), `closing` (set to end it), `task` (holding it open),
    `lost` (it can serve no more calls)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, target: str):
        self.target = target
        self.client: Any = None
        self.closing = asyncio.Event()
        self.ready: "asyncio.Future[Any]" = loop.create_future()
        self.task: "asyncio.Task[Any] | None" = None
        self.lost = False


OnListChanged = Callable[[Link], Awaitable[None]]


async def open_link(target: str, transport: Any, protocol: str, options: dict[str, Any],
                    on_list_changed: OnListChanged) -> Link:
    """Start holding a session over `transport` (run on the connection's loop); await `link.ready`."""
    loop = asyncio.get_running_loop()
    link = Link(loop, target)
    link.task = loop.create_task(_hold(link, transport, protocol, options, on_list_changed))
    return link


async def _hold(link: Link, transport: Any, protocol: str, options: dict[str, Any],
                on_list_changed: OnListChanged) -> None:
    from mcp import Client

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            asyncio.get_running_loop().create_task(on_list_changed(link))

    # "2026-07-28" probes too (`server/discover` brings the server's name and capabilities), and
    # refuses the session below if the server could only do the handshake.
    mode = "legacy" if protocol == "2025-11-25" else "auto"
    try:
        async with Client(transport, mode=mode, cache=None, message_handler=on_message, **options) as client:
            if protocol not in ("auto", client.protocol_version):
                raise ConnectionError(f"the server speaks protocol {client.protocol_version}, not {protocol} "
                                      "(protocol='auto' takes either)")
            link.client = client
            link.ready.set_result(await list_all_tools(client.session))
            listener = asyncio.get_running_loop().create_task(_listen(link, on_list_changed))
            try:
                await link.closing.wait()
            finally:
                link.lost = True
                listener.cancel()
                with contextlib.suppress(BaseException):
                    await listener
    except BaseException as error:
        if not link.ready.done():
            settle(link.ready, error if isinstance(error, Exception) else RuntimeError(repr(error)))
        if not isinstance(error, (Exception, asyncio.CancelledError)):
            raise
    finally:
        link.lost = True
        link.client = None
        if not link.ready.done():
            settle(link.ready, ConnectionError("the MCP session ended before it was ready"))


async def _listen(link: Link, on_list_changed: OnListChanged) -> None:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    client = link.client
    tools = getattr(client.server_capabilities, "tools", None)
    if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not getattr(tools, "list_changed", False):
        return
    try:
        async with client.listen(tools_list_changed=True) as subscription:
            async for _event in subscription:
                await on_list_changed(link)
    except Exception as error:  # the tools still work; only their updates are lost
        if not link.lost:
            warnings.warn(f"MCP server {link.target}: tool list updates are not followed "
                          f"({leaf_message(error)})", stacklevel=1)


async def stop_link(link: Link, timeout: float) -> None:
    """End a session: politely (its transport closes, a stdio server is stopped), then by cancelling."""
    link.lost = True
    link.closing.set()
    task = link.task
    if task is None:
        return
    if not link.ready.done():  # still connecting: nothing to end politely
        task.cancel()
    with contextlib.suppress(BaseException):
        await asyncio.wait_for(asyncio.shield(task), timeout)
    if not task.done():
        task.cancel()
        # the transport's own clean-up (stopping a stdio server: stdin closed, then SIGTERM) runs now
        await asyncio.wait([task], timeout=10)


async def list_all_tools(session: Any) -> list:
    """Every page of `tools/list` (at most 100 pages: a server whose pages never end cannot hang us)."""
    import mcp_types as types

    listed = await session.list_tools()
    tools = list(listed.tools)
    pages = 0
    while listed.next_cursor and pages < 100:
        listed = await session.list_tools(params=types.PaginatedRequestParams(cursor=listed.next_cursor))
        tools.extend(listed.tools)
        pages += 1
    return tools


def settle(future: "asyncio.Future[Any]", error: BaseException) -> None:
    """Fail `future`, marked as seen: after a time-out nobody awaits it any more, and asyncio would
    print "Future exception was never retrieved" with the whole traceback at exit."""
    future.set_exception(error)
    future.exception()


def leaf_message(error: BaseException) -> str:
    """The first real error inside (nested) exception groups, as `Type: message`."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
