"""Records the cassette notebook 08_codemode.ipynb replays: `python record_08.py` in this folder.

The notebook's two chats (the same task with direct tool calls, then with code mode), made here with
`Chat(..., record=PATH)` against the recorded model of the tests (tests/recorded_model.py: an HTTP
server on loopback answering with provider responses written in advance), so that the notebook runs
offline and under nbval with `nbtools.replay(PATH)`. The tools, the code tool's options, the prompts
and the order of the chats must stay those of the notebook: a replayed request that differs raises
`CassetteMismatch` naming the difference.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from recorded_model import RecordedModel, make_client, openai_reply  # noqa: E402

from nbtools import Chat, Decision, Registry  # noqa: E402

# -- the notebook's tools, exactly -----------------------------------------------------------------
SALES = {"north": 120, "south": 95, "east": 140, "west": 80}


def regions() -> list[str]:
    "The sales regions."
    return list(SALES)


def sales(region: str) -> int:
    "Units sold in a region last month."
    return SALES[region]


def email(to: str, body: str) -> str:
    "Send an email."
    return f"sent to {to}"


def approve(tool, args, *, origin):
    if not args["to"].endswith("@example.com"):
        return Decision(False, reason="only colleagues at example.com")
    return True


tools = Registry(approve=approve)
tools.add(regions, hints="read-only")
tools.add(sales, hints="read-only")
tools.add(email, hints="destructive")
run_code = tools.code_tool(max_tool_calls=50, timeout=10)

PROMPT = "Which region sold most last month? Email the answer to lead@example.com."
CODE = """\
totals = {region: sales(region) for region in regions()}
best = max(totals, key=lambda region: totals[region])
email("lead@example.com", f"{best} sold most last month: {totals[best]} units")
print(totals)
best"""

REPLIES = [
    # direct calls: one request per round of calls
    openai_reply([("call_1", "regions", {})]),
    openai_reply([(f"call_{index + 2}", "sales", {"region": region}) for index, region in enumerate(SALES)]),
    openai_reply([("call_6", "email", {"to": "lead@example.com", "body": "east sold most last month: 140 units"})]),
    openai_reply(text="East sold the most (140 units); I emailed lead@example.com."),
    # code mode: the same work in one run of code
    openai_reply([("call_7", "run_code", {"code": CODE})]),
    openai_reply(text="East sold the most (140 units); I emailed lead@example.com."),
]


def main(folder: Path = HERE) -> None:
    """Record the cassette into `folder` (the notebook's own folder by default)."""
    path = folder / "08_codemode.cassette.json"
    if path.exists():
        path.unlink()  # the first Chat of a process appends to a fresh file anyway; start clean
    with RecordedModel([(200, body) for body in REPLIES]) as model:
        client = make_client("openai", model.url)
        Chat(client, model="gpt-4.1-mini", tools=tools, show=False, record=path)(PROMPT)
        Chat(client, model="gpt-4.1-mini", tools=[run_code], show=False, record=path)(PROMPT)
        assert len(model.requests) == len(REPLIES), len(model.requests)
    print("recorded", path.name)


if __name__ == "__main__":
    main()
