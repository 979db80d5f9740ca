"""The official conformance suite's client scenarios (`@modelcontextprotocol/conformance` 0.2.0-alpha.12,
`tests/npm` as `conformance-next`), run for nbtools' `connect()` and for the `mcp` SDK's own `Client`
in the same test: nbtools must pass every scenario the SDK's client passes, at each protocol revision.

Both clients are `tests/conformance_client.py`, doing the same steps. The OAuth scenarios (`auth/*`)
are not run: `connect()` sends a bearer token or headers, it does not do OAuth flows.
Skipped (with the install command) when the npm peers are not installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.peers import NODE, NPM_DIR, require_peers

ROOT = Path(__file__).resolve().parent.parent
SUITE = NPM_DIR / "node_modules" / "conformance-next" / "dist" / "index.js"
CLIENT = ROOT / "tests" / "conformance_client.py"


SCENARIOS = [
    ("initialize", "2025-11-25"),
    ("tools_call", "2025-11-25"),
    ("tools_call", "2026-07-28"),
    ("elicitation-sep1034-client-defaults", "2025-11-25"),
    ("sse-retry", "2025-11-25"),
    ("request-metadata", "2026-07-28"),
    ("sep-2322-client-request-state", "2026-07-28"),
    ("http-standard-headers", "2026-07-28"),
    ("http-custom-headers", "2026-07-28"),
    ("http-invalid-tool-headers", "2026-07-28"),
    ("json-schema-ref-no-deref", "2026-07-28"),
    ("json-schema-2020-12-preservation", "2025-11-25"),  # a root allOf and $schema, echoed as listed
    ("json-schema-2020-12-preservation", "2026-07-28"),
]


def run_scenario(flavour: str, scenario: str, version: str, out: Path) -> list[dict]:
    """Run one scenario against one client; return its checks (what the suite's server saw)."""
    folder = out / flavour
    command = f"{sys.executable} {CLIENT} {flavour}"
    finished = subprocess.run([str(NODE), str(SUITE), "client", "--command", command, "--scenario", scenario,
                               "--spec-version", version, "-o", str(folder)],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
    results = sorted(folder.glob("*/checks.json"))
    assert results, f"the suite wrote no checks for {scenario} ({flavour}):\n{finished.stdout[-3000:]}{finished.stderr[-2000:]}"
    return json.loads(results[-1].read_text())


def failures(checks: list[dict]) -> list[dict]:
    return [check for check in checks if check["status"] == "FAILURE"]


@pytest.mark.parametrize(("scenario", "version"), SCENARIOS)
def test_nbtools_passes_what_the_sdk_client_passes(scenario, version, tmp_path):
    require_peers()
    if not SUITE.exists():
        pytest.skip("conformance-next is not installed: run `npm ci --prefix tests/npm`")
    sdk = run_scenario("sdk", scenario, version, tmp_path)
    nbtools = run_scenario("nbtools", scenario, version, tmp_path)
    print(f"{scenario}@{version}: sdk {len(sdk) - len(failures(sdk))}/{len(sdk)}, "
          f"nbtools {len(nbtools) - len(failures(nbtools))}/{len(nbtools)}")
    assert any(check["status"] == "SUCCESS" for check in sdk), sdk  # the scenario really ran
    sdk_failed = {check["id"] for check in failures(sdk)}
    worse = [check for check in failures(nbtools) if check["id"] not in sdk_failed]
    assert not worse, json.dumps(worse, indent=1)[:4000]
    assert {check["id"] for check in nbtools} >= {check["id"] for check in sdk if check["status"] == "SUCCESS"}
