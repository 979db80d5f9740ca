"""MCP resources and prompts defined in Python: `@resource(uri)`, `@prompt()`, and the catalog holding them.

A resource function takes no parameters (a resource at a fixed URI) or the parameters named in its
URI's `{...}` variables (a resource template, RFC 6570 level 1: `notes://{topic}`); it returns `str`
(text), `bytes` (a blob) or a JSON value (served as `application/json`). A prompt function's
parameters are the prompt's arguments; it returns a string (one user message) or a list of messages,
each a string or `{"role": "user" | "assistant", "content": text | Image | Audio | Resource}`.
Both may take a `ToolContext` parameter, injected as for a tool. Completion values for a prompt
argument or a template variable come from its `Literal`/`Enum` annotation (the schema's `enum`) or
from a `complete=` callback `complete(argument, value) -> list of str`.

Each registry has one `Catalog` (the default registry's by default); every nbtools MCP server serving
that registry serves its resources and prompts beside its tools (`nbtools.mcp.offerings`). Nothing
here imports mcp: the catalog deals in plain values, the server turns them into MCP messages.
"""

from __future__ import annotations

import itertools
import json
import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable

from .errors import NbtoolsError, ToolCallError

__all__ = ["resource", "prompt", "Catalog", "catalog_of", "ServedResource", "ServedPrompt", "ResourceError"]

MAX_COMPLETIONS = 100  # the MCP spec's limit on `completion.values`
MAX_URI_CHARS = 8192  # a longer resource URI, or completion value, is refused
COMPLETION_SECONDS = 2.0  # a completion still being made after this is stopped
_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


RunSync = Callable[[Callable[[], Any]], Awaitable[Any]]  # runs a plain function elsewhere (a worker thread)


class ResourceError(NbtoolsError, LookupError):
    """An unknown resource or prompt, or arguments a prompt or template cannot take."""


@dataclass
class ServedResource:
    """One resource (fixed `uri`) or resource template (`uri` with `{variables}`)."""

    uri: str
    name: str
    fn: Callable[..., Any]
    description: str | None = None
    mime_type: str | None = None
    complete: Callable[[str, str], Iterable[str]] | None = None
    variables: tuple[str, ...] = ()
    _pattern: Any = field(default=None, repr=False)  # the template as an RE2 pattern
    _tool: Any = field(default=None, repr=False)

    @property
    def is_template(self) -> bool:
        return bool(self.variables)

    def match(self, uri: str) -> dict[str, str] | None:
        """The template variables `uri` gives, or None when it is not this resource's."""
        if not self.is_template:
            return {} if uri == self.uri else None
        if self._pattern is None:
            self._pattern = _template_pattern(self.uri)
        found = self._pattern.fullmatch(uri)
        return None if found is None else found.groupdict()


def _template_pattern(template: str) -> Any:
    """The URI template as an RE2 pattern (each `{variable}` one path segment's worth of text:
    `[^/?#]+`), matched in time linear in the URI whatever the template."""
    import re2  # google-re2 (a base dependency), loaded with the first template

    parts, last = [], 0
    for found in _VARIABLE.finditer(template):
        parts.append(re.escape(template[last:found.start()]))
        parts.append(f"(?P<{found.group(1)}>[^/?#]+)")
        last = found.end()
    parts.append(re.escape(template[last:]))
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 64 << 20  # a template's automaton is small; a huge one fails here, not later
    return re2.compile("".join(parts), options)


def check_length(what: str, text: str) -> None:
    """Refuse a URI or completion value longer than `MAX_URI_CHARS` (a ResourceError naming the limit)."""
    if len(text) > MAX_URI_CHARS:
        raise ResourceError(f"the {what} is {len(text):,} characters long, longer than the {MAX_URI_CHARS:,} "
                            "this server reads; send a shorter one")


@dataclass
class ServedPrompt:
    """One prompt: its name, description, function and the arguments its signature declares."""

    name: str
    fn: Callable[..., Any]
    description: str | None = None
    complete: Callable[[str, str], Iterable[str]] | None = None
    _tool: Any = field(default=None, repr=False)

    def arguments(self) -> list[dict]:
        """`[{"name", "description", "required"}]` from the function's parameters (context excluded)."""
        schema = _tool_of(self).parameters
        required = set(schema.get("required", ()))
        return [{"name": name, "description": prop.get("description"), "required": name in required}
                for name, prop in schema.get("properties", {}).items()]


def _tool_of(entry: ServedResource | ServedPrompt) -> Any:
    """The Tool behind an entry: nbtools' validation, conversion and context injection for its function."""
    if entry._tool is None:
        from .tool import Tool

        entry._tool = Tool.from_function(entry.fn, name=_safe_name(entry.name))
    return entry._tool


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64] or "resource"


class Catalog:
    """The resources and prompts of one registry, and who is told when they change."""

    def __init__(self) -> None:
        self.resources: dict[str, ServedResource] = {}  # by URI (templates by their URI template)
        self.prompts: dict[str, ServedPrompt] = {}
        self._listeners: list[Callable[[str, str | None], Any]] = []

    # -- membership ---------------------------------------------------------------------------------
    def add_resource(self, entry: ServedResource) -> None:
        self.resources[entry.uri] = entry
        self._tell("resources", None)

    def add_prompt(self, entry: ServedPrompt) -> None:
        self.prompts[entry.name] = entry
        self._tell("prompts", None)

    def remove(self, uri_or_name: str) -> bool:
        """Forget a resource (by URI) or a prompt (by name); whether one was there."""
        for kind, table in (("resources", self.resources), ("prompts", self.prompts)):
            if table.pop(uri_or_name, None) is not None:
                self._tell(kind, None)
                return True
        return False

    def fixed(self) -> list[ServedResource]:
        return [entry for entry in self.resources.values() if not entry.is_template]

    def templates(self) -> list[ServedResource]:
        return [entry for entry in self.resources.values() if entry.is_template]

    # -- change notifications -------------------------------------------------------------------------
    def on_change(self, callback: Callable[[str, str | None], Any]) -> Callable[[], None]:
        """`callback(kind, uri)`: kind "resources"/"prompts" (the list changed, uri None) or "updated"
        (the content of `uri` changed). Returns a function that stops it."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    def updated(self, uri: str) -> None:
        """Tell servers that the content behind `uri` changed (`notifications/resources/updated`)."""
        self._tell("updated", uri)

    def _tell(self, kind: str, uri: str | None) -> None:
        for callback in list(self._listeners):
            try:
                callback(kind, uri)
            except Exception:  # a listener's bug must not undo the change
                pass

    # -- reading ----------------------------------------------------------------------------------------
    def find(self, uri: str) -> tuple[ServedResource, dict[str, str]]:
        check_length("resource URI", uri)
        entry = self.resources.get(uri)
        if entry is not None and not entry.is_template:
            return entry, {}
        for entry in self.templates():
            values = entry.match(uri)
            if values is not None:
                return entry, values
        raise ResourceError(f"Unknown resource {uri!r}: resources/list and resources/templates/list name "
                            "the resources this server has")

    async def read(self, uri: str, *, run_sync: RunSync | None = None) -> tuple[Any, str | None]:
        """The value behind `uri` (str, bytes, or a JSON value; or an Image/Audio record) and its MIME type.
        `run_sync`: where a plain function runs (see `call_func_async`; None: here)."""
        entry, values = self.find(uri)
        value = await _run(entry, values, run_sync)
        return value, entry.mime_type

    async def render_prompt(self, name: str, arguments: dict[str, str] | None, *,
                            run_sync: RunSync | None = None) -> tuple[list[dict], str | None]:
        """The prompt's messages as `[{"role", "content"}]` (content: str or a content record) and its
        description. `run_sync`: as for `read`."""
        entry = self.prompts.get(name)
        if entry is None:
            raise ResourceError(f"Unknown prompt {name!r}: prompts/list names the prompts this server has")
        value = await _run(entry, dict(arguments or {}), run_sync)
        return prompt_messages(name, value), entry.description

    def completions(self, kind: str, key: str, argument: str, value: str) -> list[str]:
        """Completion values for `argument` of the prompt named `key` (kind "prompt") or of the
        resource template `key` (kind "resource"), starting with `value`: at most `MAX_COMPLETIONS`
        and one more (which says there are more)."""
        check_length("completion value", value)
        check_length("resource URI" if kind == "resource" else "prompt name", key)
        if kind == "prompt":
            entry: Any = self.prompts.get(key)
        else:
            entry = self.resources.get(key)
        if entry is None:
            raise ResourceError(f"Unknown {kind} {key!r} for completion")

        def collect() -> list[str]:
            if entry.complete is not None:
                offered: Iterable[Any] = entry.complete(argument, value)
            else:
                prop = _tool_of(entry).parameters.get("properties", {}).get(argument, {})
                offered = (item for item in _enum_values(prop) if str(item).startswith(value))
            # an iterable may be lazy and endless: take no more than is sent, and one to tell there is more
            return [_completion_text(item) for item in itertools.islice(offered, MAX_COMPLETIONS + 1)]

        # Completion answers as a person types, on the transport's thread: a callback that does not
        # finish is stopped (`interp.timeouts`), not left holding the server.
        from .interp.result import TimeoutInterrupt
        from .interp.timeouts import call_with_deadline

        try:
            return call_with_deadline(COMPLETION_SECONDS, collect)
        except TimeoutInterrupt:
            raise ResourceError(f"completing {argument!r} of the {kind} {key!r} took longer than "
                                f"{COMPLETION_SECONDS:g} s and was stopped; its complete= callback must "
                                "answer quickly") from None


def _completion_text(item: Any) -> str:
    text = item if isinstance(item, str) else str(item)
    return text if len(text) <= MAX_URI_CHARS else text[:MAX_URI_CHARS]


def _enum_values(prop: dict) -> list[Any]:
    if "enum" in prop:
        return list(prop["enum"])
    if "const" in prop:
        return [prop["const"]]
    for key in ("anyOf", "oneOf"):
        if key in prop:
            return [value for option in prop[key] for value in _enum_values(option)]
    return []


async def _run(entry: ServedResource | ServedPrompt, texts: dict[str, str], run_sync: RunSync | None = None) -> Any:
    """Call the entry's function with arguments that arrive as text (URI variables, prompt arguments):
    a parameter declared as something other than a string takes the text read as JSON (`"3"` -> 3)."""
    tool = _tool_of(entry)
    properties = tool.parameters.get("properties", {})
    unknown = sorted(set(texts) - set(properties))
    if unknown:
        raise ResourceError(f"{entry.name!r} takes no argument {unknown[0]!r}; it takes: "
                            f"{', '.join(properties) or 'none'}")
    arguments = {name: _from_text(text, properties[name]) for name, text in texts.items()}
    if run_sync is None:
        return await tool.acall(arguments)
    from .call import call_func_async

    return await call_func_async(tool.name, arguments, ns={tool.name: tool}, run_sync=run_sync)


def _from_text(text: Any, schema: dict) -> Any:
    if not isinstance(text, str) or _takes_string(schema):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text  # the validator names the argument and what it expected


def _takes_string(schema: dict) -> bool:
    if not schema or "type" not in schema and not any(key in schema for key in ("anyOf", "oneOf", "enum", "const")):
        return True  # untyped: the text itself
    kind = schema.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    if any(isinstance(item, str) for item in schema.get("enum", ())) or isinstance(schema.get("const"), str):
        return True
    return any(_takes_string(option) for key in ("anyOf", "oneOf") for option in schema.get(key, ()))


def prompt_messages(name: str, value: Any) -> list[dict]:
    """A prompt function's return value as `[{"role", "content"}]`; a clear error for anything else."""
    from .content import Audio, Image, Resource, as_content

    items = [value] if isinstance(value, (str, dict)) or as_content(value) is not None else value
    if not isinstance(items, (list, tuple)):
        raise ToolCallError(name, f"a prompt returns a string or a list of messages, got {type(value).__name__}")
    messages = []
    for item in items:
        role, content = "user", item
        if isinstance(item, dict):
            if "content" not in item:
                raise ToolCallError(name, f"a prompt message is a dict with 'role' and 'content', got {item!r}")
            role, content = item.get("role", "user"), item["content"]
        if role not in ("user", "assistant"):
            raise ToolCallError(name, f"a prompt message's role is 'user' or 'assistant', got {role!r}")
        rich = as_content(content)
        if isinstance(rich, (Image, Audio, Resource)):
            content = rich
        elif not isinstance(content, str):
            raise ToolCallError(name, "a prompt message's content is text, Image, Audio or Resource, "
                                      f"got {type(content).__name__}")
        messages.append({"role": role, "content": content})
    return messages


# -- one catalog per registry ---------------------------------------------------------------------------
_CATALOGS: "weakref.WeakKeyDictionary[Any, Catalog]" = weakref.WeakKeyDictionary()


def catalog_of(registry: Any = None) -> Catalog:
    """The catalog of `registry` (None: the default registry); a `select()` view shares its parent's."""
    if registry is None:
        from .registry import registry as default

        registry = default
    while getattr(registry, "_parent", None) is not None:
        registry = registry._parent
    catalog = _CATALOGS.get(registry)
    if catalog is None:
        catalog = _CATALOGS[registry] = Catalog()
    return catalog


def lend_default_catalog(registry: Any) -> Catalog:
    """Give `registry` the default registry's catalog unless it has one of its own (a registry that
    `nbtools serve` built from a notebook's or module's tools serves the resources and prompts that
    its code registered on the default registry)."""
    if registry not in _CATALOGS:
        _CATALOGS[registry] = catalog_of(None)
    return _CATALOGS[registry]


def resource(uri: str, *, name: str | None = None, description: str | None = None, mime_type: str | None = None,
             registry: Any = None, complete: Callable[[str, str], Iterable[str]] | None = None) -> Callable:
    """Decorator: serve the function as the MCP resource `uri` (a template when `uri` has `{variables}`,
    each one a parameter of the function) on every nbtools MCP server of `registry` (default: the
    default registry). Returns the function unchanged."""
    if not isinstance(uri, str) or "://" not in uri and ":" not in uri:
        raise TypeError(f"@resource(uri): a URI such as 'notes://today' is needed, got {uri!r}")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        import inspect

        variables = tuple(_VARIABLE.findall(uri))
        doc = description if description is not None else (inspect.getdoc(fn) or None)
        entry = ServedResource(uri=uri, name=name or getattr(fn, "__name__", uri), fn=fn, description=doc,
                               mime_type=mime_type, complete=complete, variables=variables)
        schema = _tool_of(entry).parameters  # the parameters a client fills (a ToolContext is not one)
        params = set(schema.get("properties", {}))
        missing = [p for p in schema.get("required", ()) if p not in variables]
        extra = [v for v in variables if v not in params]
        if missing or extra:
            raise TypeError(f"@resource({uri!r}) on {getattr(fn, '__name__', fn)!r}: the URI's {{variables}} and "
                            f"the function's parameters must match (parameters not in the URI: {missing}; "
                            f"variables with no parameter: {extra})")
        catalog_of(registry).add_resource(entry)
        return fn

    return register


def prompt(name: str | Callable | None = None, *, description: str | None = None, registry: Any = None,
           complete: Callable[[str, str], Iterable[str]] | None = None) -> Callable:
    """Decorator (`@prompt` or `@prompt("name", description=...)`): serve the function as an MCP prompt
    whose arguments are its parameters, on every nbtools MCP server of `registry`. Returns the function."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        import inspect

        prompt_name = name if isinstance(name, str) else getattr(fn, "__name__", None)
        if not prompt_name or prompt_name == "<lambda>":
            raise TypeError("@prompt on a lambda needs a name: prompt('name')(fn)")
        doc = description if description is not None else (inspect.getdoc(fn) or None)
        entry = ServedPrompt(name=prompt_name, fn=fn, description=doc, complete=complete)
        entry.arguments()  # builds the schema now, so a bad signature fails at definition, not when served
        catalog_of(registry).add_prompt(entry)
        return fn

    if callable(name) and not isinstance(name, str):
        return register(name)
    return register
