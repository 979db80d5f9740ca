"""An MCP `ClientSession` talking to nbtools' server in the same process, over memory streams: the
real SDK client and the real server handlers, without a socket (fast; for edge cases)."""

from __future__ import annotations

import contextlib
from typing import Any, AsyncIterator

import anyio


@contextlib.asynccontextmanager
async def session_for(registry: Any, *, threads: bool = False, activity: Any = None,
                      **callbacks: Any) -> AsyncIterator[Any]:
    """A ClientSession to `build_server(registry, activity=activity)`; `callbacks` go to the ClientSession
    (sampling_callback, elicitation_callback, ...). `session.initialized` is the initialize result."""
    from mcp import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    import nbtools.mcp as nbmcp

    server = nbmcp.build_server(registry, threads=threads, activity=activity)
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: server.run(server_streams[0], server_streams[1],
                                                server.create_initialization_options()))
            try:
                async with ClientSession(*client_streams, **callbacks) as session:
                    session.initialized = await session.initialize()  # for the capability checks
                    yield session
            finally:
                group.cancel_scope.cancel()
