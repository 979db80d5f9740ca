"""Replayed tool calls: realistic calls to bound methods of real classes, nbtools beside pydantic.

The tools are the bound methods of eight stateful classes in the style of the multi-turn
function-calling benchmarks (a file system, a ticket desk, a trading bot, a travel agency, a
messenger, a calculator, a car's controls, a social feed), with what real tools take: dataclasses
nested in lists, enums, `Literal`s and lists of them, optional fields, a `date`, a dict of floats,
ints sent for floats, free text with colons and escapes. (The last three classes, 26 calls and 4
refusals were added to find the shapes behind the 1.35x a large recorded replay showed: with them
the replay row still read 0.98-1.15x in six runs, refusals 1.76-2.1x, so those shapes are not it.
Per call, `post` with a colon in its text read 2x, calls with nested objects 1.3-1.4x.) A fixed list of calls (JSON text, as a model sends it) is replayed
in one run, the variants' passes interleaved so machine load hits all alike; each row is the median
of the passes, per call. Every call's result is checked equal across the variants before timing.

Rows:

- replay through `call_func(name, text, ns=registry)` (a `Registry` of the instances' bound methods)
  against `pydantic.validate_call(method)(**json.loads(text))` (the wrapped methods looked up in a
  dict by name): target <= 1.1x.
- refused calls (a word for an int, an unknown enum value, a missing argument, an unexpected key,
  a bad item inside a list of dataclasses), `call_func(..., raise_on_err=False)` returning the text
  the model reads, against pydantic raising `ValidationError` and its text taken: target <= 2x.
- the replay with every tool `destructive` in a registry whose approver answers True at once,
  against the same registry without a policy: target <= 1.2x.
- for information: the replay from dicts (what the Anthropic and Gemini SDKs hand over), a
  namespace given as a fresh list per call, and an unknown tool name (with its "did you mean").

Run: `python bench/bench_replay.py` (prints a table) or through `bench/bench.py`.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


# ==================================================================================================
# The tools: five classes, their bound methods
# ==================================================================================================
class Priority(enum.Enum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    URGENT = "urgent"


class Status(enum.Enum):
    OPEN = "open"
    IN_PROGRESS = "in_progress"
    RESOLVED = "resolved"
    CLOSED = "closed"


class Side(enum.Enum):
    BUY = "buy"
    SELL = "sell"


class Cabin(enum.Enum):
    ECONOMY = "economy"
    PREMIUM = "premium_economy"
    BUSINESS = "business"
    FIRST = "first"


@dataclasses.dataclass
class Attachment:
    filename: str
    size_bytes: int
    mime_type: str = "application/octet-stream"


@dataclasses.dataclass
class TicketUpdate:
    title: str | None = None
    description: str | None = None
    priority: Priority | None = None
    status: Status | None = None
    assignee: str | None = None


@dataclasses.dataclass
class OrderLine:
    symbol: str
    quantity: int
    limit_price: float | None = None


@dataclasses.dataclass
class Passenger:
    first_name: str
    last_name: str
    age: int
    seat: str | None = None


@dataclasses.dataclass
class Address:
    street: str
    city: str
    postcode: str
    country: str = "US"


class FileSystem:
    """A small in-memory file system (calls read it; writes overwrite, so a replay stays flat)."""

    def __init__(self) -> None:
        self.cwd = "/home/user"
        self.files = {"notes.txt": "alpha\nbeta\ngamma\nBeta release\n", "todo.md": "- ship\n- test\n",
                      "report.csv": "id,value\n1,3.5\n2,4.0\n"}
        self.dirs = {"/home/user", "/home/user/projects"}

    def ls(self, path: str = ".", show_hidden: bool = False) -> list[str]:
        """List the files of a folder."""
        return sorted(name for name in self.files if show_hidden or not name.startswith("."))

    def cd(self, folder: str) -> str:
        """Change the current folder."""
        return folder if folder.startswith("/") else f"{self.cwd}/{folder}"

    def mkdir(self, dir_name: str, parents: bool = False) -> str:
        """Make a folder."""
        self.dirs.add(f"{self.cwd}/{dir_name}")
        return f"created {dir_name}"

    def touch(self, file_name: str) -> str:
        """Make an empty file."""
        self.files.setdefault(file_name, "")
        return file_name

    def cat(self, file_name: str) -> str:
        """A file's text."""
        return self.files.get(file_name, "")

    def grep(self, file_name: str, pattern: str, ignore_case: bool = False, max_matches: int | None = None) -> list[str]:
        """Lines of a file that contain `pattern`."""
        lines = self.files.get(file_name, "").splitlines()
        found = [line for line in lines if (pattern.lower() in line.lower() if ignore_case else pattern in line)]
        return found[:max_matches] if max_matches is not None else found

    def wc(self, file_name: str, mode: Literal["lines", "words", "chars"] = "lines") -> int:
        """Count the lines, words or characters of a file."""
        text = self.files.get(file_name, "")
        return len(text.splitlines()) if mode == "lines" else len(text.split()) if mode == "words" else len(text)

    def mv(self, source: str, destination: str) -> str:
        """Move a file (here: report where it would go)."""
        return f"{source} -> {destination}"


class TicketDesk:
    """Support tickets (created tickets overwrite one slot per title)."""

    def __init__(self) -> None:
        self.tickets: dict[str, dict] = {}

    def create_ticket(self, title: str, description: str = "", priority: Priority = Priority.MEDIUM,
                      tags: list[str] | None = None, attachments: list[Attachment] | None = None) -> dict:
        """Open a ticket."""
        ticket = {"title": title, "priority": priority.value, "tags": tags or [],
                  "files": [item.filename for item in attachments or ()], "length": len(description)}
        self.tickets[title] = ticket
        return ticket

    def edit_ticket(self, ticket_id: int, updates: TicketUpdate) -> dict:
        """Change some fields of a ticket."""
        return {"id": ticket_id, **{key: (value.value if isinstance(value, enum.Enum) else value)
                                    for key, value in dataclasses.asdict(updates).items() if value is not None}}

    def close_ticket(self, ticket_id: int, resolution: str) -> str:
        """Close a ticket with a resolution note."""
        return f"ticket {ticket_id} closed: {resolution}"

    def search_tickets(self, query: str, statuses: list[Status] | None = None, limit: int = 10) -> list[str]:
        """Search tickets by text and status."""
        return [query, *(status.value for status in statuses or ())][:limit]


class TradingBot:
    """A paper-trading account."""

    PRICES = {"AAPL": 227.16, "NVDA": 142.5, "MSFT": 415.3, "TSLA": 251.05, "GOOG": 166.2}

    def place_order(self, order_type: Side, symbol: str, price: float, amount: int) -> dict:
        """Place one order."""
        return {"side": order_type.value, "symbol": symbol, "total": round(price * amount, 2)}

    def place_basket(self, lines: list[OrderLine], account_id: int, dry_run: bool = False) -> dict:
        """Place several orders at once."""
        total = sum(line.quantity * (line.limit_price or self.PRICES.get(line.symbol, 0.0)) for line in lines)
        return {"account": account_id, "lines": len(lines), "total": round(total, 2), "dry_run": dry_run}

    def get_stock_info(self, symbol: str) -> dict:
        """The price of a stock."""
        return {"symbol": symbol, "price": self.PRICES.get(symbol)}

    def add_to_watchlist(self, stocks: list[str]) -> list[str]:
        """Watch some stocks."""
        return sorted(set(stocks))

    def set_alert(self, symbol: str, above: float | None = None, below: float | None = None) -> str:
        """Alert when a price crosses a bound."""
        return f"{symbol}: above {above}, below {below}"


class TravelAgency:
    """Flights and addresses."""

    def book_flight(self, access_token: str, card_id: str, travel_date: datetime.date, travel_from: str,
                    travel_to: str, travel_class: Cabin, passengers: list[Passenger]) -> dict:
        """Book a flight for some passengers."""
        return {"date": travel_date.isoformat(), "route": f"{travel_from}-{travel_to}", "class": travel_class.value,
                "names": [f"{p.first_name} {p.last_name}" for p in passengers], "card": card_id[-4:]}

    def get_flight_cost(self, travel_from: str, travel_to: str, travel_date: datetime.date,
                        travel_class: Cabin = Cabin.ECONOMY) -> float:
        """The price of a flight."""
        return 120.0 * (1 + list(Cabin).index(travel_class)) + travel_date.day

    def register_address(self, owner: str, address: Address, billing: Address | None = None) -> str:
        """Keep an address (and a billing address) for a customer."""
        return f"{owner}: {address.city}" + (f" (billing {billing.city})" if billing else "")

    def compute_exchange_rate(self, base_currency: str, target_currency: str, value: float) -> float:
        """Convert an amount between currencies."""
        return round(value * (1.1 if base_currency == "EUR" else 0.9), 4)


class Messenger:
    """Direct messages."""

    def send_message(self, receiver_id: str, message: str) -> dict:
        """Send a message to a user."""
        return {"to": receiver_id, "chars": len(message)}

    def view_messages(self, user_id: str | None = None, limit: int = 20, unread_only: bool = False) -> list[str]:
        """The latest messages."""
        return [f"{user_id or 'all'}:{limit}:{unread_only}"]


class Calculator:
    """Arithmetic over floats and lists of them (models send ints for floats: `2`, not `2.0`)."""

    def add(self, a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    def divide(self, a: float, b: float) -> float:
        """Divide a by b."""
        return round(a / b, 6)

    def mean(self, numbers: list[float]) -> float:
        """The mean of some numbers."""
        return sum(numbers) / len(numbers)

    def percentage(self, part: float, whole: float, decimals: int = 2) -> float:
        """`part` as a percentage of `whole`."""
        return round(100 * part / whole, decimals)

    def si_unit_conversion(self, value: float, unit_in: str, unit_out: str) -> float:
        """Convert a value between units of one quantity."""
        return value * {"km": 1000.0, "m": 1.0, "cm": 0.01}.get(unit_in, 1.0) / {"km": 1000.0, "m": 1.0, "cm": 0.01}.get(unit_out, 1.0)


class Car:
    """A car's controls: flags, `Literal` choices, lists of them, a dict of readings."""

    def start_engine(self, ignition_mode: Literal["START", "STOP"]) -> dict:
        """Start or stop the engine."""
        return {"engine": ignition_mode.lower()}

    def lock_doors(self, unlock: bool, door: list[Literal["driver", "passenger", "rear_left", "rear_right"]]) -> dict:
        """Lock or unlock some doors."""
        return {"unlocked" if unlock else "locked": sorted(door)}

    def set_climate(self, temperature: float, unit: Literal["celsius", "fahrenheit"] = "celsius",
                    fan_speed: int = 50, mode: Literal["auto", "cool", "heat", "defrost"] = "auto") -> str:
        """Set the cabin's temperature."""
        return f"{temperature} {unit} fan {fan_speed} {mode}"

    def set_navigation(self, destination: str, avoid_tolls: bool | None = None) -> str:
        """Navigate to an address."""
        return f"to {destination}" + ("" if avoid_tolls is None else f" tolls {'avoided' if avoid_tolls else 'ok'}")

    def check_tire_pressure(self, readings: dict[str, float] | None = None, threshold: float = 30.0) -> list[str]:
        """Which tires are under `threshold` psi."""
        return sorted(name for name, value in (readings or {}).items() if value < threshold)


class SocialFeed:
    """Posts with lists of tags and mentions, optional fields, replies by id."""

    def post(self, content: str, tags: list[str] | None = None, mentions: list[str] | None = None) -> dict:
        """Post some text."""
        return {"chars": len(content), "tags": tags or [], "mentions": mentions or []}

    def comment(self, post_id: int, text: str) -> str:
        """Comment on a post."""
        return f"{post_id}: {text[:20]}"

    def follow(self, username: str) -> bool:
        """Follow a user."""
        return bool(username)

    def search_posts(self, keyword: str, since: datetime.date | None = None, limit: int = 10) -> list[str]:
        """Posts containing a keyword."""
        return [keyword, since.isoformat() if since else "-", str(limit)]


def bound_methods() -> list[Callable]:
    """Every public method of one instance of each class, bound."""
    methods = []
    for instance in (FileSystem(), TicketDesk(), TradingBot(), TravelAgency(), Messenger(), Calculator(), Car(),
                     SocialFeed()):
        for name in dir(type(instance)):
            value = getattr(instance, name)
            if not name.startswith("_") and callable(value) and not isinstance(value, type):
                methods.append(value)
    return methods


# ==================================================================================================
# The calls
# ==================================================================================================
CALLS: list[tuple[str, str]] = [
    ("ls", '{}'),
    ("ls", '{"path": "projects", "show_hidden": true}'),
    ("cd", '{"folder": "projects"}'),
    ("mkdir", '{"dir_name": "temp", "parents": false}'),
    ("touch", '{"file_name": "draft.txt"}'),
    ("cat", '{"file_name": "notes.txt"}'),
    ("grep", '{"file_name": "notes.txt", "pattern": "beta", "ignore_case": true}'),
    ("grep", '{"file_name": "notes.txt", "pattern": "a", "max_matches": 2}'),
    ("wc", '{"file_name": "todo.md", "mode": "words"}'),
    ("mv", '{"source": "draft.txt", "destination": "archive/draft-2024.txt"}'),
    ("create_ticket", '{"title": "Login fails on Safari", "description": "Users report a blank page after '
                      'submitting the form: steps attached.", "priority": "high", "tags": ["auth", "web"]}'),
    ("create_ticket", '{"title": "Export is slow", "priority": "low", "attachments": [{"filename": "trace.json", '
                      '"size_bytes": 48211, "mime_type": "application/json"}, {"filename": "screen.png", '
                      '"size_bytes": 120334}]}'),
    ("edit_ticket", '{"ticket_id": 4812, "updates": {"status": "in_progress", "assignee": "dana"}}'),
    ("edit_ticket", '{"ticket_id": 77, "updates": {"priority": "urgent", "title": "Outage: EU region"}}'),
    ("close_ticket", '{"ticket_id": 4812, "resolution": "Fixed in 3.2.1 (cookie SameSite flag)."}'),
    ("search_tickets", '{"query": "timeout", "statuses": ["open", "in_progress"], "limit": 5}'),
    ("place_order", '{"order_type": "buy", "symbol": "NVDA", "price": 142.5, "amount": 100}'),
    ("place_order", '{"order_type": "sell", "symbol": "AAPL", "price": 227.16, "amount": 15}'),
    ("place_basket", '{"lines": [{"symbol": "AAPL", "quantity": 10}, {"symbol": "MSFT", "quantity": 5, '
                     '"limit_price": 410.0}, {"symbol": "GOOG", "quantity": 20, "limit_price": null}], '
                     '"account_id": 1001}'),
    ("get_stock_info", '{"symbol": "TSLA"}'),
    ("add_to_watchlist", '{"stocks": ["NVDA", "AAPL", "GOOG", "NVDA"]}'),
    ("set_alert", '{"symbol": "MSFT", "below": 400.5}'),
    ("book_flight", '{"access_token": "abc123xyz", "card_id": "card_3478", "travel_date": "2024-11-15", '
                    '"travel_from": "SFO", "travel_to": "LAX", "travel_class": "business", "passengers": '
                    '[{"first_name": "Ada", "last_name": "Lovelace", "age": 36, "seat": "2A"}, '
                    '{"first_name": "Alan", "last_name": "Turing", "age": 41}]}'),
    ("get_flight_cost", '{"travel_from": "JFK", "travel_to": "LHR", "travel_date": "2025-01-03", '
                        '"travel_class": "first"}'),
    ("register_address", '{"owner": "Ada Lovelace", "address": {"street": "12 St James Sq", "city": "London", '
                         '"postcode": "SW1Y 4JH", "country": "UK"}}'),
    ("compute_exchange_rate", '{"base_currency": "EUR", "target_currency": "USD", "value": 250.0}'),
    ("send_message", '{"receiver_id": "USR002", "message": "The quarterly numbers are in: see report.csv."}'),
    ("view_messages", '{"user_id": "USR002", "limit": 5}'),
    # the shapes most of a recorded multi-turn replay is made of: a few scalars, ints for floats
    ("add", '{"a": 2, "b": 3.5}'),
    ("add", '{"a": 1200, "b": 45}'),
    ("divide", '{"a": 227.16, "b": 3}'),
    ("mean", '{"numbers": [3, 4.5, 10, 2, 7.25]}'),
    ("percentage", '{"part": 45, "whole": 1200}'),
    ("si_unit_conversion", '{"value": 12.5, "unit_in": "km", "unit_out": "m"}'),
    ("start_engine", '{"ignition_mode": "START"}'),
    ("lock_doors", '{"unlock": false, "door": ["driver", "passenger", "rear_left", "rear_right"]}'),
    ("set_climate", '{"temperature": 22, "unit": "celsius", "fan_speed": 30}'),
    ("set_climate", '{"temperature": 71.5, "unit": "fahrenheit", "mode": "cool"}'),
    ("set_navigation", '{"destination": "2107 Channing Way, Berkeley, CA"}'),
    ("check_tire_pressure", '{"readings": {"front_left": 32.0, "front_right": 28.5, "rear_left": 31, '
                            '"rear_right": 29.9}}'),
    ("post", '{"content": "Shipped 3.2.1 today: the login fix is in.", "tags": ["#release", "#auth"], '
             '"mentions": ["@dana"]}'),
    ("post", '{"content": "Quarterly numbers are up."}'),
    ("comment", '{"post_id": 10, "text": "Great work, thanks for the quick fix!"}'),
    ("follow", '{"username": "ada_l"}'),
    ("search_posts", '{"keyword": "release", "since": "2024-10-01", "limit": 3}'),
    ("ls", '{"path": "."}'),
    ("cat", '{"file_name": "todo.md"}'),
    ("get_stock_info", '{"symbol": "NVDA"}'),
    ("send_message", '{"receiver_id": "USR005", "message": "On my way."}'),
    # text as models write it: colons (times, URLs, "Note:") and escapes (newlines, quotes, \\u) in strings
    ("send_message", '{"receiver_id": "USR003", "message": "Meeting moved to 10:30; agenda: https://ex.com/a"}'),
    ("touch", '{"file_name": "notes: draft.txt"}'),
    ("post", '{"content": "Release notes:\\n- login fix\\n- faster export\\n\\"Thanks\\" to all", '
             '"tags": ["#release"]}'),
    ("create_ticket", '{"title": "Caf\\u00e9 menu: prices wrong", "description": "Steps:\\n1. open menu\\n2. '
                      'see \\"12:00\\" special", "priority": "medium"}'),
    ("grep", '{"file_name": "notes.txt", "pattern": "Beta\\trelease"}'),
]

REFUSED: list[tuple[str, str]] = [
    ("place_order", '{"order_type": "buy", "symbol": "NVDA", "price": 142.5, "amount": "ten"}'),
    ("create_ticket", '{"title": "Printer on fire", "priority": "critical"}'),
    ("close_ticket", '{"ticket_id": 12}'),
    ("grep", '{"file_name": "notes.txt", "patern": "beta"}'),
    ("place_basket", '{"lines": [{"symbol": "AAPL", "quantity": 10}, {"symbol": "MSFT"}], "account_id": 1001}'),
    ("book_flight", '{"access_token": "t", "card_id": "c", "travel_date": "next friday", "travel_from": "SFO", '
                    '"travel_to": "LAX", "travel_class": "economy", "passengers": []}'),
    ("add", '{"a": "two", "b": 3}'),
    ("start_engine", '{"ignition_mode": "start"}'),
    ("lock_doors", '{"unlock": "maybe", "door": ["driver"]}'),
    ("mean", '{"numbers": [1, "x", 3]}'),
]


# ==================================================================================================
# Timing
# ==================================================================================================
def per_call_us(passes: dict[str, Callable[[], int]], rounds: int = 31, repeat: int = 20) -> dict[str, float]:
    """Median µs per call of each pass function (which makes some calls and returns how many).

    Rounds interleave the variants so drift and load hit all alike; the collector is off while
    timing. The time is this process's CPU time: waiting for a core on a shared machine is not work."""
    samples: dict[str, list[float]] = {name: [] for name in passes}
    for run_pass in passes.values():  # warm caches (compiled plans, pydantic validators)
        for _ in range(3):
            run_pass()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            for name, run_pass in passes.items():
                calls = 0
                start = time.process_time_ns()
                for _ in range(repeat):
                    calls += run_pass()
                samples[name].append((time.process_time_ns() - start) / calls / 1000)
    finally:
        if gc_was_enabled:
            gc.enable()
    return {name: statistics.median(values) for name, values in samples.items()}


def row(name: str, ours: float, ref_name: str, ref: float, target: str, limit: float | None) -> dict:
    ratio = ours / ref
    return {"name": name, "ours_us": ours, "ref_name": ref_name, "ref_us": ref, "ratio": ratio,
            "target": target, "ok": None if limit is None else ratio <= limit}


def _forget_decisions(registry: Any) -> None:
    """Registries that keep a log of approval decisions grow by one entry per call: keep memory flat."""
    decisions = getattr(registry, "decisions", None)
    if decisions is not None and hasattr(decisions, "clear"):
        decisions.clear()


def run() -> list[dict]:
    import pydantic

    from nbtools import Registry
    from nbtools.call import call_func

    methods = bound_methods()
    by_name = {method.__name__: method for method in methods}
    registry = Registry(methods)
    plain = Registry()
    approving = Registry(approve=lambda tool, args: True)
    for method in methods:
        plain.add(method, hints="destructive")
        approving.add(method, hints="destructive")
    validated = {name: pydantic.validate_call(method) for name, method in by_name.items()}
    loads = json.loads
    calls = [(name, text, loads(text)) for name, text in CALLS]

    for name, text, data in calls:  # the same answers, or the comparison means nothing
        ours = call_func(name, text, ns=registry)
        theirs = validated[name](**loads(text))
        assert ours == theirs, (name, ours, theirs)
        assert call_func(name, data, ns=registry) == ours == call_func(name, text, ns=approving)
        assert call_func(name, text, ns=list(methods)) == ours, name
    refusal_texts = []
    for name, text in REFUSED:
        answer = call_func(name, text, ns=registry, raise_on_err=False)
        assert isinstance(answer, str) and "refused" not in answer and name in answer, answer
        try:
            validated[name](**loads(text))
        except pydantic.ValidationError as error:
            refusal_texts.append(str(error))
        else:
            raise AssertionError(f"pydantic accepted the refused call {name} {text}")
    count, refused_count = len(calls), len(REFUSED)

    def ours() -> int:
        for name, text, _ in calls:
            call_func(name, text, ns=registry)
        return count

    def theirs() -> int:
        for name, text, _ in calls:
            validated[name](**loads(text))
        return count

    def ours_dicts() -> int:
        for name, _, data in calls:
            call_func(name, data, ns=registry)
        return count

    def ours_fresh_list() -> int:
        for name, text, _ in calls:
            call_func(name, text, ns=list(methods))
        return count

    def approved() -> int:
        _forget_decisions(approving)
        for name, text, _ in calls:
            call_func(name, text, ns=approving)
        return count

    def no_policy() -> int:
        for name, text, _ in calls:
            call_func(name, text, ns=plain)
        return count

    def ours_refused() -> int:
        for name, text in REFUSED:
            call_func(name, text, ns=registry, raise_on_err=False)
        return refused_count

    def theirs_refused() -> int:
        for name, text in REFUSED:
            try:
                validated[name](**loads(text))
            except pydantic.ValidationError as error:
                str(error)
        return refused_count

    def unknown_name() -> int:
        call_func("place_oder", '{"symbol": "NVDA"}', ns=registry, raise_on_err=False)
        return 1

    times = per_call_us({
        "ours": ours, "pydantic": theirs, "approved": approved, "no_policy": no_policy,
        "ours_refused": ours_refused, "pydantic_refused": theirs_refused, "ours_dicts": ours_dicts,
        "fresh_list": ours_fresh_list, "unknown_name": unknown_name,
    })
    what = f"replay ({count} calls, {len(by_name)} methods)"
    return [
        row(what, times["ours"], "pydantic.validate_call", times["pydantic"], "<= 1.1x", 1.1),
        row(f"refused calls ({refused_count} kinds)", times["ours_refused"], "pydantic's refusal",
            times["pydantic_refused"], "<= 2x", 2.0),
        row("replay, approver says yes", times["approved"], "no policy", times["no_policy"], "<= 1.2x", 1.2),
        row("replay from dicts", times["ours_dicts"], "pydantic.validate_call", times["pydantic"], "info", None),
        row("replay, ns a fresh list", times["fresh_list"], "pydantic.validate_call", times["pydantic"], "info", None),
        row("unknown tool name", times["unknown_name"], "pydantic's refusal", times["pydantic_refused"], "info", None),
    ]


def main() -> int:
    rows = run()
    header = ["name", "ours_us", "ref_name", "ref_us", "ratio", "target", "ok"]
    table = [header] + [[f"{value:.2f}" if isinstance(value, float) else str(value) for value in
                         (item[key] for key in header)] for item in rows]
    widths = [max(len(line[index]) for line in table) for index in range(len(header))]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)))
    return 0 if all(item["ok"] is not False for item in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
