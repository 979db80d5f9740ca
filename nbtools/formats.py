"""Provider formats: a neutral `Tool` rendered for each provider, and model replies read back.

Every provider quirk lives in this module; everything else works on the neutral form.

Rendering (`render`, pure, never mutates its input):

| fmt              | shape                                                                          |
|------------------|--------------------------------------------------------------------------------|
| None             | `{"name", "description", "parameters"}` (neutral JSON Schema, draft 2020-12)    |
| "openai"         | Chat Completions `{"type": "function", "function": {..., "strict"?: true}}`      |
| "responses"      | Responses API, flat, always with `"strict": bool` (the API defaults it to true)  |
| "anthropic"      | `{"name", "description", "input_schema", "strict"?: true}`                       |
| "gemini"         | one FunctionDeclaration with `parametersJsonSchema` (+ `responseJsonSchema`)     |
| "gemini-openapi" | one FunctionDeclaration with `parameters` in Gemini's OpenAPI 3.0 subset         |
| "mcp"            | `{"name", "description", "inputSchema", "outputSchema"?, "annotations"?}`        |

`strict=True` only changes the formats whose provider has a strict flag (openai, responses,
anthropic); the others have no such mode and ignore it, so a Tool marked strict still renders
everywhere. The strict transform differs per provider (both checked against the providers' docs):

- OpenAI: every object closed and every property required; an optional property becomes
  nullable and a null for it means "left out" (see `drop_absent_nulls`, which dispatch applies).
  Recursive `$ref` is allowed. Supported constraints are kept (pattern, a subset of formats,
  numeric bounds, minItems/maxItems); minLength, maxLength, uniqueItems, defaults, ... are moved
  into the description text so the model still reads them (dispatch still enforces them).
  Limits: 5000 properties, 10 levels of object nesting, 1000 enum values.
- Anthropic: every object closed, but optional properties stay optional (Anthropic's strict mode
  supports them, and nullable unions count against a smaller per-request budget); no recursive
  schemas; no numeric or length constraints, minItems only 0 or 1, pattern and default moved into
  the description. Limits per request: 24 optional properties and 16 union-typed properties.
- Where a value has no faithful strict form (an open map such as `dict[str, int]`, an untyped
  value, a mixed tuple, `propertyNames`, `not`, ...), a `SchemaError` names the tool and the
  parameter and says what to change. Meaning is never changed silently.

Names (`wire_name`): OpenAI and Anthropic accept `[A-Za-z0-9_-]{1,64}`, Gemini
`[A-Za-z0-9_.:-]` starting with a letter or `_` (64 at most), MCP `[A-Za-z0-9_.-]{1,128}`. A name a
provider rejects is mapped deterministically: every `.` becomes `__` (so `obj.fn` -> `obj__fn`);
if that is still invalid or too long, other characters become `_` and the name is cut to a
prefix plus `_` and 8 hex digits of the SHA-256 of the original name. `wire_names(name)` lists
every mapped form so a registry can accept whichever one a model sends back.

Replies (`parse_reply`, `result_message`): the tool calls in a model reply of any supported
provider, as dicts or SDK objects (read through `model_dump()`, the SDKs are never imported), and
the message that carries the results back to that provider.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable

from .errors import SchemaError

FORMATS = (None, "openai", "responses", "anthropic", "gemini", "gemini-openapi", "mcp")
STRICT_FORMATS = frozenset({"openai", "responses", "anthropic"})
DIALECTS = ("openai", "responses", "anthropic", "gemini")

_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "MISSING"})()
_IN_PROGRESS: Any = type("_InProgress", (), {"__repr__": lambda self: "IN_PROGRESS"})()


def _check_format(fmt: str | None) -> None:
    if fmt not in FORMATS:
        valid = ", ".join(repr(item) for item in FORMATS)
        raise ValueError(f"unknown tool format {fmt!r}; valid formats are {valid}")


# ================================================================================================
# Rendering
# ================================================================================================

def render(tool: Any, fmt: str | None = None, strict: bool = False) -> dict:
    """The definition of `tool` in format `fmt` (see the table in the module docstring).

    `strict` applies to openai, responses and anthropic and is ignored elsewhere. Raises
    `ValueError` for an unknown format and `SchemaError` when a schema cannot be expressed.
    Parts of `tool.parameters` / `tool.returns` may be shared with the result: do not mutate it.
    """
    _check_format(fmt)
    name = wire_name(tool.name, fmt)
    description = tool.description or ""
    parameters = tool.parameters
    # Extra keys of the arguments object come from **kwargs: refusals about them name it.
    extras = next((param for param, kind in getattr(tool, "passing", ()) if kind == "varkw"), None)
    if fmt is None:
        return {"name": name, "description": description, "parameters": parameters}
    if fmt in ("openai", "responses"):
        if strict:
            parameters = strict_schema(parameters, tool.name, provider="openai", extras_name=extras)
        if fmt == "openai":
            function = {"name": name, "description": description, "parameters": parameters}
            if strict:
                function["strict"] = True
            return {"type": "function", "function": function}
        return {"type": "function", "name": name, "description": description,
                "parameters": parameters, "strict": bool(strict)}
    if fmt == "anthropic":
        if strict:
            parameters = strict_schema(parameters, tool.name, provider="anthropic", extras_name=extras)
        definition = {"name": name, "description": description, "input_schema": parameters}
        if strict:
            definition["strict"] = True
        return definition
    if fmt == "gemini":
        declaration = {"name": name, "description": description, "parametersJsonSchema": parameters}
        if tool.returns is not None:
            declaration["responseJsonSchema"] = tool.returns
        return declaration
    if fmt == "gemini-openapi":
        declaration = {"name": name, "description": description}
        converted = openapi_schema(parameters, tool.name, extras_name=extras)
        if converted.get("properties"):  # Gemini: "for a function with no parameters, leave it unset"
            declaration["parameters"] = converted
        return declaration
    # mcp
    definition = {"name": name, "description": description, "inputSchema": parameters}
    if tool.returns is not None:
        definition["outputSchema"] = mcp_output_schema(tool.returns)
    annotations = {_MCP_HINTS[hint]: True for hint in sorted(tool.hints) if hint in _MCP_HINTS}
    if annotations:
        definition["annotations"] = annotations
    return definition


_MCP_HINTS = {"read-only": "readOnlyHint", "destructive": "destructiveHint",
              "idempotent": "idempotentHint", "open-world": "openWorldHint"}


def _is_object_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "object"


def mcp_output_schema(returns: dict) -> dict:
    """MCP `outputSchema` for a return schema: objects as they are, anything else wrapped.

    MCP requires an object at the root; a non-object return becomes
    `{"type": "object", "properties": {"result": <schema>}, "required": ["result"]}` and the
    call's `structuredContent` is then `{"result": value}` (see `mcp_wraps_result`). `$defs` move
    to the wrapper's root so `#/$defs/...` references still resolve.
    """
    if _is_object_schema(returns):
        return returns
    inner = dict(returns)
    defs = inner.pop("$defs", None)
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": inner}, "required": ["result"]}
    if defs:
        wrapped["$defs"] = defs
    return wrapped


def mcp_wraps_result(tool: Any) -> bool:
    """Whether an MCP server must send this tool's structured result as `{"result": value}`."""
    return tool.returns is not None and not _is_object_schema(tool.returns)


# ------------------------------------------------------------------------------------------------
# Names
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _NameRule:
    """What a provider accepts as a tool name.

    Fields: `chars` (a regex character class of allowed characters), `first` (the class the first
    character must match, or None), `max_length`.
    """

    chars: str
    first: str | None
    max_length: int

    def accepts(self, name: str) -> bool:
        first = self.first or self.chars
        return bool(re.fullmatch(f"{first}{self.chars}{{0,{self.max_length - 1}}}", name))


_OPENAI_NAMES = _NameRule("[A-Za-z0-9_-]", None, 64)
_GEMINI_NAMES = _NameRule("[A-Za-z0-9_.:-]", "[A-Za-z_]", 64)
_MCP_NAMES = _NameRule("[A-Za-z0-9_.-]", None, 128)
_NAME_RULES = {"openai": _OPENAI_NAMES, "responses": _OPENAI_NAMES, "anthropic": _OPENAI_NAMES,
               "gemini": _GEMINI_NAMES, "gemini-openapi": _GEMINI_NAMES, "mcp": _MCP_NAMES}
_HASH_DIGITS = 8


@lru_cache(maxsize=4096)
def wire_name(name: str, fmt: str | None) -> str:
    """`name` as provider `fmt` accepts it (unchanged when already valid; see the module docstring)."""
    _check_format(fmt)
    rule = _NAME_RULES.get(fmt)
    if rule is None or rule.accepts(name):
        return name
    dotless = name if re.fullmatch(rule.chars, ".") else name.replace(".", "__")
    if rule.accepts(dotless):
        return dotless
    safe = re.sub(rule.chars.replace("[", "[^", 1), "_", dotless)
    if rule.first is not None and not re.fullmatch(rule.first, safe[:1] or "0"):
        safe = "_" + safe
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:_HASH_DIGITS]
    return f"{safe[: rule.max_length - _HASH_DIGITS - 1]}_{digest}"


def wire_names(name: str) -> set[str]:
    """Every form of `name` some provider may send back (the name itself included)."""
    return {wire_name(name, fmt) for fmt in FORMATS}


# ------------------------------------------------------------------------------------------------
# Shared schema helpers
# ------------------------------------------------------------------------------------------------

# Annotations no provider needs; dropping them changes nothing a value must satisfy.
_DROPPED_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$anchor", "examples", "deprecated",
                                  "readOnly", "writeOnly"})

_UNTYPED = ("an untyped value (no annotation, Any or object) has no {form}; annotate it with a "
            "concrete type{advice}")
_OPEN_MAP = ("an object with arbitrary keys (a dict or mapping) has no {form}{why}; use a dataclass or "
             "TypedDict with fixed keys{advice}")
_MIXED_TUPLE = ("a fixed-length tuple whose items differ in type (prefixItems) has no {form}; use a "
                "list of one type or a dataclass/TypedDict{advice}")

# Keywords with no faithful form in either target dialect, and why.
_NO_FORM = {
    "propertyNames": "constrained mapping keys (propertyNames) have no {form}; use a dataclass or "
                     "TypedDict with fixed keys{advice}",
    "patternProperties": "keys matched by pattern (patternProperties) have no {form}{advice}",
    "not": "a negated schema (not) has no {form}{advice}",
    "if": "a conditional schema (if/then/else) has no {form}{advice}",
    "dependentSchemas": "dependentSchemas has no {form}{advice}",
    "unevaluatedProperties": "unevaluatedProperties has no {form}{advice}",
    "unevaluatedItems": "unevaluatedItems has no {form}{advice}",
    "contains": "an array constraint on some of its items (contains) has no {form}{advice}",
    "$dynamicRef": "$dynamicRef has no {form}{advice}",
}


def _path_text(where: tuple[str, ...]) -> str:
    text = ""
    for segment in where:
        text += segment if segment == "[]" else ("." if text else "") + segment
    return text


def _note_text(notes: dict[str, Any]) -> str:
    """`{"minLength": 3, "": "null leaves it out"}` -> `minLength: 3; null leaves it out`."""
    keywords = ", ".join(f"{key}: {json.dumps(value, default=str)}" for key, value in notes.items() if key)
    words = notes.get("")
    return "; ".join(part for part in (keywords, words) if part)


def _with_notes(description: str | None, notes: dict[str, Any] | str | None) -> str | None:
    """The description with constraints the dialect cannot carry appended in words, e.g. `(minLength: 3)`."""
    if not notes:
        return description
    text = notes if isinstance(notes, str) else _note_text(notes)
    return f"{description} ({text})" if description else f"({text})"


def _split_ref(ref: Any) -> str | None:
    """The `$defs` name a local reference points to, or None when it is not `#/$defs/<name>`."""
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref[len("#/$defs/"):]
        if "/" not in name:
            return name.replace("~1", "/").replace("~0", "~")
    return None


def _is_untyped(schema: dict) -> bool:
    """True for a schema that says nothing about the value's type (`{}`, or only annotations)."""
    return not any(key in schema for key in ("type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref",
                                             "properties", "items", "prefixItems"))


class _Walker:
    """What the two schema transforms share: the tool, the root's `$defs`, error reporting, arrays."""

    form = ""
    advice = ""
    empty_array_items = "null"  # item type written for an always-empty array (`maxItems: 0`)

    def __init__(self, root: dict, tool_name: str, extras_name: str | None = None):
        self.tool = tool_name
        self.extras_name = extras_name
        defs = root.get("$defs") if isinstance(root, dict) else None
        self.source_defs: dict = defs if isinstance(defs, dict) else {}

    def fail(self, where: tuple[str, ...], reason: str) -> None:
        # Plain replacement, not str.format: reasons quote user names that may hold braces.
        reason = reason.replace("{why}", "").replace("{form}", self.form).replace("{advice}", self.advice)
        if len(where) > 1:
            reason = f"at {_path_text(where)}: {reason}"
        raise SchemaError(self.tool, where[0] if where else None, reason)

    def def_of(self, ref: Any, where: tuple[str, ...]) -> tuple[str, Any]:
        name = _split_ref(ref)
        if name is None:
            self.fail(where, f"the reference {ref!r} is not a local '#/$defs/<name>' reference")
        if name not in self.source_defs:
            self.fail(where, f"the reference {ref!r} points to no entry of $defs")
        return name, self.source_defs[name]

    def fail_root_extras(self, where: tuple[str, ...], root: bool, reason: str) -> None:
        """Refuse open extra keys; at the root they are **kwargs, so the error names that parameter."""
        if root:
            name = f"**{self.extras_name}" if self.extras_name else "extra keyword arguments (**kwargs)"
            self.fail((self.extras_name,) if self.extras_name else where,
                      f"{name}: arbitrary extra argument names have no {{form}}; declare them as named "
                      "parameters{advice}")
        self.fail(where, reason)

    def merged_all_of(self, keys: dict, where: tuple[str, ...]) -> dict:
        """A one-part `allOf` merged into its schema (what older generators write around a `$ref`)."""
        parts = keys.pop("allOf")
        if not isinstance(parts, list) or len(parts) != 1 or not isinstance(parts[0], dict):
            self.fail(where, "an intersection of several schemas (allOf) has no {form}; "
                             "merge them into one object type{advice}")
        return {**parts[0], **keys}

    def check_no_form(self, keys: dict, where: tuple[str, ...]) -> None:
        """Refuse keywords with no faithful form (`keys` loses the harmless `unevaluated*: false`)."""
        for keyword in ("unevaluatedProperties", "unevaluatedItems"):
            if keys.get(keyword) is False:
                del keys[keyword]  # closed already: strict objects are closed, OpenAPI cannot say it
        for keyword in keys:
            if keyword in _NO_FORM:
                self.fail(where, _NO_FORM[keyword])

    def opened(self, schema: Any, where: tuple[str, ...]) -> tuple[dict, Any, Any]:
        """A copy of one schema's keys ready to transform (one-part `allOf` merged, `$id`/`examples`
        and the like dropped, keywords with no form refused), and its description and title."""
        if schema is False:
            self.fail(where, "a schema that accepts no value has no {form}")
        if not isinstance(schema, dict) or _is_untyped(schema):
            self.fail(where, _UNTYPED)
        keys = dict(schema)
        if "allOf" in keys:
            return self.opened(self.merged_all_of(keys, where), where)
        description = keys.pop("description", None)
        title = keys.pop("title", None)
        for keyword in _DROPPED_ANNOTATIONS:
            keys.pop(keyword, None)
        self.check_no_form(keys, where)
        return keys, description, title

    def const_and_one_of(self, keys: dict, where: tuple[str, ...]) -> None:
        """`const` as a one-value `enum` (empty when it contradicts `enum`), `oneOf` as `anyOf`."""
        if "const" in keys:
            value = keys.pop("const")
            enum = keys.pop("enum", [value])
            keys["enum"] = [value] if value in enum else []
        if "oneOf" in keys:
            # Disjoint alternatives (tagged unions) mean the same as anyOf; dispatch still checks them.
            if "anyOf" in keys:
                self.fail(where, "a schema with both anyOf and oneOf has no {form}{advice}")
            keys["anyOf"] = keys.pop("oneOf")

    def array_into(self, out: dict, keys: dict, where: tuple[str, ...]) -> None:
        """`items` of an array schema; a tuple of one repeated item type becomes a plain array."""
        if "prefixItems" in keys:
            item = _homogeneous_tuple(keys)
            if item is None:
                self.fail(where, _MIXED_TUPLE)
            keys.pop("prefixItems")
            keys.pop("items", None)
            keys["items"] = item
        items = keys.pop("items", _MISSING)
        if items is _MISSING and keys.get("maxItems") == 0:
            items = {"type": self.empty_array_items}  # an always-empty array: its item type is irrelevant
        if items is _MISSING:
            self.fail(where, _UNTYPED)
        out["items"] = self.node(items, where + ("[]",))


def _homogeneous_tuple(keys: dict) -> dict | None:
    """The item schema of a `prefixItems` tuple whose items all share one schema, else None."""
    prefix = keys.get("prefixItems")
    if not isinstance(prefix, list) or not prefix:
        return None
    count = len(prefix)
    if any(item != prefix[0] for item in prefix) or keys.get("maxItems") != count:
        return None
    if keys.get("items", False) is not False:
        return None
    return prefix[0]


# ------------------------------------------------------------------------------------------------
# Strict (OpenAI / Anthropic)
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StrictRules:
    """What one provider's strict tool mode accepts.

    Fields:
        provider: "openai" or "anthropic" (used in messages).
        keep: validation keywords passed through unchanged (others go into the description).
        formats: string formats the provider accepts (others go into the description).
        all_required: OpenAI lists every property in `required` and makes optional ones nullable;
            Anthropic keeps optional properties optional.
        recursion: whether recursive `$ref`s are accepted.
        min_items: the `minItems` values accepted (None: any).
        max_properties / max_depth / max_enum_values: OpenAI's per-schema limits (None: unchecked).
        max_optional / max_unions: Anthropic's per-request budgets, checked per tool.
    """

    provider: str
    keep: frozenset[str]
    formats: frozenset[str]
    all_required: bool
    recursion: bool
    min_items: frozenset[int] | None = None
    max_properties: int | None = None
    max_depth: int | None = None
    max_enum_values: int | None = None
    max_optional: int | None = None
    max_unions: int | None = None


STRICT_RULES = {
    "openai": StrictRules(
        "openai",
        keep=frozenset({"pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                        "multipleOf", "minItems", "maxItems"}),
        formats=frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6",
                           "uuid"}),
        all_required=True, recursion=True,
        max_properties=5000, max_depth=10, max_enum_values=1000),
    "anthropic": StrictRules(
        "anthropic",
        keep=frozenset({"minItems"}),
        formats=frozenset({"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4",
                           "ipv6", "uuid"}),
        all_required=False, recursion=False, min_items=frozenset({0, 1}),
        max_optional=24, max_unions=16),
}

_SCALAR_TYPES = frozenset({"string", "integer", "number", "boolean"})


def strict_schema(schema: dict, tool_name: str, provider: str = "openai", *,
                  extras_name: str | None = None) -> dict:
    """`schema` (neutral, root an object) in the form `provider`'s strict tool mode accepts.

    `provider` is "openai" (also the Responses API) or "anthropic"; see the module docstring for
    what each accepts. Raises `SchemaError(tool_name, parameter, reason)` when part of the schema
    has no faithful strict form; `extras_name` (the `**kwargs` parameter, if any) is the parameter
    named when the root's extra keys are the problem. The input is never mutated.
    """
    rules = STRICT_RULES.get(provider)
    if rules is None:
        raise ValueError(f"unknown strict provider {provider!r}; expected one of {', '.join(STRICT_RULES)}")
    return _Strict(schema, tool_name, rules, extras_name).root(schema)


class _Strict(_Walker):
    def __init__(self, root: dict, tool_name: str, rules: StrictRules, extras_name: str | None = None):
        super().__init__(root, tool_name, extras_name)
        self.rules = rules
        self.form = f"{'OpenAI' if rules.provider == 'openai' else 'Anthropic'} strict form"
        self.advice = ", or render this tool without strict=True"
        self.defs: dict[str, Any] = {}  # transformed $defs, in the order first reached

    def root(self, schema: dict) -> dict:
        if not _is_object_schema(schema):
            raise SchemaError(self.tool, None, "the parameters schema must be an object at its root")
        keys = {key: value for key, value in schema.items() if key != "$defs"}
        out = self.node(keys, (), root=True)
        if self.defs:
            out["$defs"] = dict(self.defs)
        self.check_limits(out)
        return out

    # -- one schema ---------------------------------------------------------------------------
    def node(self, schema: Any, where: tuple[str, ...], root: bool = False, note: str | None = None) -> dict:
        """One schema in strict form; `note` is extra text for its description (about defaults)."""
        keys, description, title = self.opened(schema, where)
        notes: dict[str, Any] = {}

        if "$ref" in keys:
            name = self.reach(keys.pop("$ref"), where)
            notes.update(keys)  # siblings of a $ref (e.g. default) are annotations here
            if note:
                notes[""] = note
            return self.annotate({"$ref": f"#/$defs/{name}"}, description, title, notes)

        out: dict[str, Any] = {}
        self.const_and_one_of(keys, where)
        kind = keys.pop("type", None)
        if kind is None and "anyOf" not in keys and "enum" not in keys:
            kind = "object" if "properties" in keys else "array"
        if kind is not None:
            out["type"] = kind
        if "anyOf" in keys:
            options = keys.pop("anyOf")
            out["anyOf"] = [self.node(option, where) for option in options]
        if "enum" in keys:
            out["enum"] = list(keys.pop("enum"))
        kinds = {kind} if isinstance(kind, str) else set(kind or ())
        if "object" in kinds:
            self.object_into(out, keys, where, root)
        if "array" in kinds:
            self.array_into(out, keys, where)
        if "format" in keys:
            fmt = keys.pop("format")
            if fmt in self.rules.formats:
                out["format"] = fmt
            else:
                notes["format"] = fmt
        for keyword, value in keys.items():
            if keyword in self.rules.keep and (keyword != "minItems" or self.rules.min_items is None
                                               or value in self.rules.min_items):
                out[keyword] = value
            else:
                notes[keyword] = value
        if note:
            notes[""] = note
        return self.annotate(out, description, title, notes)

    def annotate(self, out: dict, description: str | None, title: str | None,
                 notes: dict[str, Any] | str | None) -> dict:
        """Attach title and description (with notes) to `out`, never beside a `$ref`."""
        text = _with_notes(description, notes)
        if text is None and title is None:
            return out
        if "$ref" in out:
            # Strict modes refuse keywords beside $ref: inline the finished definition, or (while
            # it is still being built, i.e. recursion) wrap the reference in a one-option anyOf.
            name = _split_ref(out["$ref"])
            done = self.defs.get(name, _IN_PROGRESS)
            out = dict(done) if done is not _IN_PROGRESS else {"anyOf": [out]}
        if title is not None:
            out["title"] = title
        if text is not None:
            out["description"] = text
        return out

    def reach(self, ref: Any, where: tuple[str, ...]) -> str:
        """Transform the `$defs` entry `ref` points to (once); returns its name."""
        name, target = self.def_of(ref, where)
        state = self.defs.get(name, _MISSING)
        if state is _IN_PROGRESS:
            if not self.rules.recursion:
                self.fail(where, f"the recursive type {name!r} has no {{form}} ({self.rules.provider} "
                                 "strict mode refuses recursive schemas){advice}")
            return name
        if state is _MISSING:
            self.defs[name] = _IN_PROGRESS
            self.defs[name] = self.node(target, where)
        return name

    # -- objects and arrays ---------------------------------------------------------------------
    def object_into(self, out: dict, keys: dict, where: tuple[str, ...], root: bool) -> None:
        properties = keys.pop("properties", None) or {}
        required = set(keys.pop("required", ()))
        extra = keys.pop("additionalProperties", _MISSING)
        if extra is not False and not (extra is _MISSING and (properties or root)):
            # An object written with properties but no additionalProperties is a struct (pydantic
            # writes them so); only a key/value mapping would be narrowed by closing it.
            self.fail_root_extras(where, root, _OPEN_MAP.replace(
                "{why}", " (strict mode closes every object, so it would accept only {})"))
        converted: dict[str, Any] = {}
        for name, prop in properties.items():
            converted[name] = self.property(name, prop, name in required, where)
        out["properties"] = converted
        if self.rules.all_required:
            out["required"] = list(converted)
        else:
            out["required"] = [name for name in converted if name in required]
        out["additionalProperties"] = False

    def property(self, name: str, prop: Any, required: bool, where: tuple[str, ...]) -> dict:
        default = prop.get("default", _MISSING) if isinstance(prop, dict) else _MISSING
        if default is not _MISSING:
            prop = {key: value for key, value in prop.items() if key != "default"}
        # OpenAI: an optional property becomes required-but-nullable, and null stands for "left
        # out" (`drop_absent_nulls` undoes it before validation). Already-nullable ones stay as is.
        make_nullable = (not required and self.rules.all_required
                         and not _schema_accepts_null(prop, self.source_defs))
        if make_nullable:
            note = ("null leaves it out" if default is _MISSING
                    else f"null means the default, {json.dumps(default, default=str)}")
        else:
            note = None if default is _MISSING else f"default: {json.dumps(default, default=str)}"
        child = self.node(prop, where + (name,), note=note)
        return _nullable(child) if make_nullable else child

    # -- checks ----------------------------------------------------------------------------------
    def check_limits(self, out: dict) -> None:
        rules = self.rules
        stats = _SchemaStats()
        stats.visit(out, depth=0, param=None)
        for body in self.defs.values():
            stats.visit(body, depth=0, param=None)
        checks = (
            (rules.max_properties, stats.properties, "properties in all", "properties"),
            (rules.max_depth, stats.depth, "levels of nested objects", "levels of nesting"),
            (rules.max_enum_values, stats.enum_values, "enum values", "enum values"),
            (rules.max_optional, stats.optional, "optional properties", "optional properties per request"),
            (rules.max_unions, stats.unions, "properties with a union type (anyOf or a type list)",
             "union-typed properties per request"),
        )
        for limit, count, what, limit_what in checks:
            if limit is not None and count > limit:
                provider = "OpenAI" if rules.provider == "openai" else "Anthropic"
                raise SchemaError(self.tool, stats.deepest_param if what.startswith("levels") else None,
                                  f"the strict schema has {count} {what}; {provider} strict mode allows "
                                  f"at most {limit} {limit_what}. Simplify the parameters or render "
                                  "without strict=True")


class _SchemaStats:
    """Counts what providers limit: properties, object nesting, enum values, optional and union properties."""

    def __init__(self) -> None:
        self.properties = 0
        self.depth = 0
        self.deepest_param: str | None = None
        self.enum_values = 0
        self.optional = 0
        self.unions = 0

    def visit(self, schema: Any, depth: int, param: str | None) -> None:
        if not isinstance(schema, dict):
            return
        if "enum" in schema:
            self.enum_values += len(schema["enum"])
        properties = schema.get("properties")
        if isinstance(properties, dict):
            depth += 1
            if depth > self.depth:
                self.depth, self.deepest_param = depth, param
            required = set(schema.get("required", ()))
            for name, prop in properties.items():
                self.properties += 1
                if name not in required:
                    self.optional += 1
                if isinstance(prop, dict) and ("anyOf" in prop or isinstance(prop.get("type"), list)):
                    self.unions += 1
                self.visit(prop, depth, param if param is not None or depth > 1 else name)
        for keyword in ("items",):
            self.visit(schema.get(keyword), depth, param)
        for option in schema.get("anyOf", ()):
            self.visit(option, depth, param)


def _nullable(schema: dict) -> dict:
    """`schema` that also admits null: a type list for plain scalars, else an anyOf with null."""
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _SCALAR_TYPES and "enum" not in schema and "anyOf" not in schema:
        return {**schema, "type": [kind, "null"]}
    if "anyOf" in schema and "type" not in schema and "enum" not in schema:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    inner = {key: value for key, value in schema.items() if key not in ("description", "title")}
    wrapper: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
    for key in ("title", "description"):
        if key in schema:
            wrapper[key] = schema[key]
    return wrapper


# ------------------------------------------------------------------------------------------------
# Gemini's OpenAPI 3.0 subset
# ------------------------------------------------------------------------------------------------

# What google.genai.types.Schema accepts (it forbids any other key), minus what we never emit.
_OPENAPI_KEEP = frozenset({"minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems",
                           "minProperties", "maxProperties", "pattern", "default", "example"})
# Formats Gemini documents per type; others are described in words.
_OPENAPI_FORMATS = {"string": frozenset({"date-time", "date", "email", "byte", "password", "enum"}),
                    "integer": frozenset({"int32", "int64"}),
                    "number": frozenset({"float", "double"})}
_JSON_KIND = {bool: "boolean", int: "integer", float: "number", str: "string"}


def openapi_schema(schema: dict, tool_name: str, *, extras_name: str | None = None) -> dict:
    """`schema` (neutral) in the OpenAPI 3.0 subset of Gemini's `parameters` field.

    `$ref`s are inlined (a recursive type cannot be: `SchemaError`), null becomes
    `nullable: true`, `const` becomes a one-value `enum`, enums of non-strings become typed values
    (contiguous integers as minimum/maximum, others listed in the description), a homogeneous tuple
    becomes an array with a fixed length, `contentEncoding: base64` becomes `format: byte`, and
    keywords Gemini lacks (exclusive bounds, multipleOf, uniqueItems, most formats) are described
    in words. Open maps, untyped values and mixed tuples raise `SchemaError`; render with
    fmt="gemini" (full JSON Schema) for those; `extras_name` (the `**kwargs` parameter, if any) is
    the parameter named when the root's extra keys are the problem. The input is never mutated.
    """
    if not _is_object_schema(schema):
        raise SchemaError(tool_name, None, "the parameters schema must be an object at its root")
    walker = _OpenAPI(schema, tool_name, extras_name)
    keys = {key: value for key, value in schema.items() if key != "$defs"}
    return walker.node(keys, (), root=True)


class _OpenAPI(_Walker):
    form = "form in Gemini's OpenAPI schema subset"
    advice = ", or render with fmt='gemini' (parametersJsonSchema), which takes full JSON Schema"
    empty_array_items = "string"

    def __init__(self, root: dict, tool_name: str, extras_name: str | None = None):
        super().__init__(root, tool_name, extras_name)
        self.expanding: list[str] = []  # $defs being inlined, to detect recursion

    def node(self, schema: Any, where: tuple[str, ...], root: bool = False) -> dict:
        keys, description, title = self.opened(schema, where)
        notes: dict[str, Any] = {}

        if "$ref" in keys:
            out = self.inline(keys.pop("$ref"), where)
            for keyword, value in keys.items():
                if keyword in _OPENAPI_KEEP:
                    out[keyword] = value
                else:
                    notes[keyword] = value
            return self.finish(out, description or out.pop("description", None), title, notes, False)

        self.const_and_one_of(keys, where)
        kind = keys.pop("type", None)
        kinds = [kind] if isinstance(kind, str) else list(kind or ())
        nullable = "null" in kinds
        kinds = [item for item in kinds if item != "null"]
        if not kinds and kind is None and "anyOf" not in keys and "enum" not in keys:
            kinds = ["object" if "properties" in keys else "array"]

        if "enum" in keys:
            values = list(keys.pop("enum"))
            if None in values:
                nullable = True
                values = [value for value in values if value is not None]
            out = self.enum(values, kinds, notes, where)
        elif "anyOf" in keys:
            options = []
            for option in keys.pop("anyOf"):
                if isinstance(option, dict) and option.get("type") == "null" and len(option) == 1:
                    nullable = True
                    continue
                converted = self.node(option, where)
                if converted.pop("nullable", False):
                    nullable = True
                options.append(converted)
            if len(options) == 1:
                out = options[0]
                description = description or out.pop("description", None)
            elif options:
                out = {"anyOf": options}
            else:
                out = {"type": "null"}
        elif len(kinds) > 1:
            # Several types without a union keyword: one option per type, each with the keywords.
            out = {"anyOf": [self.node({**keys, "type": item}, where) for item in kinds]}
            keys = {}
        elif kinds:
            out = {"type": kinds[0]}
        else:
            out = {"type": "null"}

        current = out.get("type")
        if current == "object" and "properties" not in out:
            self.object_into(out, keys, where, root)
        elif current == "array" and "items" not in out:
            self.array_into(out, keys, where)
        elif current in ("integer", "number"):
            self.bounds_into(out, keys, current, notes)
        self.format_into(out, keys, current, notes)
        for keyword, value in keys.items():
            if keyword in _OPENAPI_KEEP:
                out[keyword] = value
            else:
                notes[keyword] = value
        return self.finish(out, description, title, notes, nullable)

    @staticmethod
    def finish(out: dict, description: str | None, title: str | None, notes: dict, nullable: bool) -> dict:
        if nullable:
            out["nullable"] = True
        if title is not None:
            out["title"] = title
        text = _with_notes(description, notes)
        if text is not None:
            out["description"] = text
        return out

    def inline(self, ref: Any, where: tuple[str, ...]) -> dict:
        name, target = self.def_of(ref, where)
        if name in self.expanding:
            self.fail(where, f"the recursive type {name!r} has no {{form}} (it has no references, "
                             "so a type that contains itself cannot be written out){advice}")
        self.expanding.append(name)
        try:
            return self.node(target, where)
        finally:
            self.expanding.pop()

    def enum(self, values: list, kinds: list[str], notes: dict, where: tuple[str, ...]) -> dict:
        """Gemini's enum holds strings only: other values become typed schemas that say which.

        Contiguous integers become exact minimum/maximum bounds; other values are listed in the
        description (dispatch still checks them).
        """
        groups: dict[str, list] = {}
        for value in values:
            kind = _JSON_KIND.get(type(value))
            if kind is None:
                self.fail(where, "an enum of objects or arrays has no {form}{advice}")
            if kind == "integer" and "number" in kinds and "integer" not in kinds:
                kind = "number"
            groups.setdefault(kind, []).append(value)
        options = []
        for kind, group in groups.items():
            if kind == "string":
                options.append({"type": "string", "enum": group})
            elif kind == "integer" and sorted(group) == list(range(min(group), max(group) + 1)):
                options.append({"type": "integer", "minimum": min(group), "maximum": max(group)})
            else:
                options.append({"type": kind, "description": f"({_note_text({'enum': group})})"})
        if not options:
            return {"type": "null"}
        if len(options) == 1:
            only = options[0]
            if only.pop("description", None) is not None:
                notes["enum"] = values  # merged with the schema's own description
            return only
        return {"anyOf": options}

    def object_into(self, out: dict, keys: dict, where: tuple[str, ...], root: bool) -> None:
        properties = keys.pop("properties", None) or {}
        required = keys.pop("required", None)
        extra = keys.pop("additionalProperties", _MISSING)
        open_keys = extra is not False and extra is not _MISSING
        if not properties and (open_keys or (extra is _MISSING and not root)):
            self.fail_root_extras(where, root and open_keys, _OPEN_MAP.replace(
                "{why}", " (an OpenAPI object is described by its properties only)"))
        if not properties and not root:
            self.fail(where, "an object with no fields has no {form} (Gemini needs at least one "
                             "property){advice}")
        if open_keys:
            keys["additionalProperties"] = extra  # extra keys beside fixed ones: described in words
        out["properties"] = {name: self.node(prop, where + (name,)) for name, prop in properties.items()}
        if required:
            out["required"] = [name for name in required if name in properties]

    @staticmethod
    def bounds_into(out: dict, keys: dict, kind: str, notes: dict) -> None:
        """Exclusive integer bounds become inclusive ones (same meaning); others are described."""
        for exclusive, inclusive, step in (("exclusiveMinimum", "minimum", 1), ("exclusiveMaximum", "maximum", -1)):
            if exclusive not in keys:
                continue
            bound = keys.pop(exclusive)
            if kind == "integer" and isinstance(bound, (int, float)) and not isinstance(bound, bool):
                whole = math.floor(bound) + 1 if step > 0 else math.ceil(bound) - 1
                current = keys.get(inclusive)
                keys[inclusive] = whole if current is None else (max(current, whole) if step > 0
                                                                 else min(current, whole))
            else:
                notes[exclusive] = bound

    @staticmethod
    def format_into(out: dict, keys: dict, kind: Any, notes: dict) -> None:
        fmt = keys.pop("format", None)
        encoding = keys.pop("contentEncoding", None)
        if kind == "string" and encoding == "base64" and fmt is None:
            fmt = "byte"  # OpenAPI 3.0 spells base64 text as format: byte
        elif encoding is not None:
            notes["contentEncoding"] = encoding
        if fmt is None:
            return
        if fmt in _OPENAPI_FORMATS.get(kind, ()):
            out["format"] = fmt
        else:
            notes["format"] = fmt


# ================================================================================================
# Strict-mode nulls back to "left out"
# ================================================================================================

def drop_absent_nulls(parameters: dict, arguments: Any) -> Any:
    """`arguments` without the nulls that stand for "left out" under OpenAI strict mode.

    Strict mode makes every property required and an optional one nullable, so a model says "use
    the default" by sending null. For a property that is optional in `parameters` (the neutral
    schema) and does not itself accept null, such a null is removed (in nested objects too), so
    the default applies. Anything else is returned unchanged; the input is never mutated.
    """
    if not isinstance(arguments, dict) or not isinstance(parameters, dict):
        return arguments
    defs = parameters.get("$defs") if isinstance(parameters.get("$defs"), dict) else {}
    return _drop_nulls(parameters, arguments, defs, 0)


def _resolve(schema: Any, defs: dict) -> Any:
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 32:
        target = defs.get(_split_ref(schema["$ref"]) or "")
        if target is None:
            return schema
        schema, seen = target, seen + 1
    return schema


def _schema_accepts_null(schema: Any, defs: dict) -> bool:
    schema = _resolve(schema, defs)
    if not isinstance(schema, dict) or _is_untyped(schema):
        return True
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        return all(_schema_accepts_null(part, defs) for part in all_of)
    kind = schema.get("type")
    if "enum" in schema and None not in schema["enum"]:
        return False
    if "const" in schema:
        return schema["const"] is None
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if kind is None and "enum" in schema:
        return True
    options = schema.get("anyOf") or schema.get("oneOf") or ()
    return any(_schema_accepts_null(option, defs) for option in options)


def _object_options(schema: Any, defs: dict) -> list[dict]:
    schema = _resolve(schema, defs)
    if not isinstance(schema, dict):
        return []
    if isinstance(schema.get("properties"), dict):
        return [schema]
    found: list[dict] = []
    for option in schema.get("anyOf") or schema.get("oneOf") or ():
        found.extend(_object_options(option, defs))
    return found


def _drop_nulls(schema: Any, value: Any, defs: dict, depth: int) -> Any:
    if depth > 64:
        return value
    if isinstance(value, dict):
        options = _object_options(schema, defs)
        chosen = next((option for option in options if set(value) <= set(option["properties"])), None)
        if chosen is None:
            return value
        properties, required = chosen["properties"], set(chosen.get("required", ()))
        cleaned = {}
        for key, item in value.items():
            prop = properties.get(key)
            if item is None and key not in required and not _schema_accepts_null(prop, defs):
                continue
            cleaned[key] = _drop_nulls(prop, item, defs, depth + 1)
        return cleaned
    if isinstance(value, list):
        resolved = _resolve(schema, defs)
        items = resolved.get("items") if isinstance(resolved, dict) else None
        if isinstance(items, dict):
            return [_drop_nulls(items, item, defs, depth + 1) for item in value]
    return value


# ================================================================================================
# Model replies
# ================================================================================================

@dataclass(frozen=True)
class ToolCallRequest:
    """One tool call a model asked for.

    Fields:
        id: the provider's call id (tool_call_id, call_id, tool_use id, Gemini function_call.id),
            None when the provider sent none (older Gemini models).
        name: the tool name as the model sent it (possibly a provider-mapped form, see `wire_name`).
        arguments: as sent: JSON text (OpenAI) or a dict (Anthropic, Gemini).
    """

    id: str | None
    name: str
    arguments: Any


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one tool call, ready to go back to the model.

    Fields:
        request: the call this answers.
        content: text for the model (the serialised result, or the error text).
        value: the result as a JSON-able value (Gemini's `{"result": value}`); the error text on failure.
        is_error: whether the call was refused or failed.
    """

    request: ToolCallRequest
    content: str
    value: Any
    is_error: bool


_RESPONSES_ITEM_TYPES = frozenset({
    "message", "function_call", "function_call_output", "reasoning", "web_search_call",
    "file_search_call", "computer_call", "code_interpreter_call", "image_generation_call",
    "local_shell_call", "mcp_call", "mcp_list_tools", "mcp_approval_request", "custom_tool_call",
    "shell_call", "apply_patch_call", "compaction"})
_ANTHROPIC_BLOCK_TYPES = frozenset({
    "text", "tool_use", "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result",
    "web_fetch_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result", "mcp_tool_use", "mcp_tool_result",
    "container_upload", "tool_result", "image", "document", "search_result"})
_GEMINI_PART_KEYS = frozenset({"text", "function_call", "functionCall", "function_response",
                               "functionResponse", "inline_data", "inlineData", "file_data", "fileData",
                               "executable_code", "executableCode", "code_execution_result",
                               "codeExecutionResult", "thought", "thought_signature", "thoughtSignature"})


def _plain(value: Any) -> Any:
    """An SDK (pydantic) object as plain data; anything else unchanged."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump()
    return value


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(map(repr, list(value)[:8]))
        return f"a dict with keys {keys}" if keys else "an empty dict"
    if isinstance(value, list):
        return f"a list of {len(value)} items" + (f" (first: {_describe(_plain(value[0]))})" if value else "")
    return f"a {type(value).__module__}.{type(value).__qualname__}"


def _unrecognised(reply: Any) -> ValueError:
    return ValueError(
        f"unrecognised model reply: got {_describe(reply)}; expected an OpenAI chat completion or its "
        "message, an OpenAI Responses response or its output list, an Anthropic message or its content "
        "list, or a Gemini response, content or parts list (dicts or SDK objects)")


def parse_reply(reply: Any) -> tuple[str, list[ToolCallRequest]]:
    """The provider dialect of `reply` and the tool calls in it (in order; parallel calls included).

    The dialect is "openai", "responses", "anthropic" or "gemini". A reply without tool calls gives
    an empty list; a shape none of them has raises `ValueError` naming what was received.
    """
    data = _plain(reply)
    if isinstance(data, list):
        return _parse_list([_plain(item) for item in data], reply)
    if not isinstance(data, dict):
        raise _unrecognised(reply)
    if isinstance(data.get("choices"), list):  # chat completion
        choices = data["choices"]
        if not choices:
            return "openai", []
        message = _plain(choices[0]).get("message") if isinstance(_plain(choices[0]), dict) else None
        if not isinstance(message, dict):
            raise _unrecognised(reply)
        return "openai", _openai_calls(message)
    if isinstance(data.get("output"), list) and (data.get("object") == "response" or "output_text" in data
                                                 or all(isinstance(item, dict) and "type" in item
                                                        for item in data["output"])):
        return "responses", _responses_calls(data["output"])
    if "candidates" in data:  # Gemini GenerateContentResponse
        candidates = data.get("candidates") or []
        if not candidates:
            return "gemini", []
        content = _plain(candidates[0]).get("content") or {}
        return "gemini", _gemini_calls(_plain(content).get("parts") or [])
    if isinstance(data.get("content"), dict) and "parts" in data["content"]:  # a Gemini candidate
        return "gemini", _gemini_calls(data["content"].get("parts") or [])
    if "parts" in data and (data.get("parts") is None or isinstance(data["parts"], list)):  # Gemini Content
        return "gemini", _gemini_calls(data.get("parts") or [])
    if data.get("type") == "message" and isinstance(data.get("content"), list):  # Anthropic Message
        return "anthropic", _anthropic_calls(data["content"])
    if "role" in data and ("tool_calls" in data or "function_call" in data
                           or data.get("content") is None or isinstance(data.get("content"), str)):
        return "openai", _openai_calls(data)
    if data.get("role") == "assistant" and isinstance(data.get("content"), list):
        # An assistant message with content blocks: Anthropic's (OpenAI's content is text).
        return "anthropic", _anthropic_calls(data["content"])
    raise _unrecognised(reply)


def _parse_list(items: list, reply: Any) -> tuple[str, list[ToolCallRequest]]:
    if not items:
        raise ValueError("unrecognised model reply: an empty list does not say which provider it comes "
                         "from; pass the whole response or message instead")
    if all(isinstance(item, dict) for item in items):
        types = {item.get("type") for item in items}
        if types <= _RESPONSES_ITEM_TYPES:
            return "responses", _responses_calls(items)
        if types <= _ANTHROPIC_BLOCK_TYPES:
            return "anthropic", _anthropic_calls(items)
        if all(item.get("type") is None and (set(item) & _GEMINI_PART_KEYS) for item in items):
            return "gemini", _gemini_calls(items)
    raise _unrecognised(reply)


def _openai_calls(message: dict) -> list[ToolCallRequest]:
    calls = []
    for call in message.get("tool_calls") or ():
        call = _plain(call)
        if call.get("type", "function") != "function":
            continue  # custom/grammar tools are not ours to run
        function = _plain(call.get("function")) or {}
        calls.append(ToolCallRequest(call.get("id"), function.get("name", ""), function.get("arguments")))
    legacy = _plain(message.get("function_call"))
    if not calls and isinstance(legacy, dict):  # the deprecated single function_call
        calls.append(ToolCallRequest(None, legacy.get("name", ""), legacy.get("arguments")))
    return calls


def _responses_calls(items: Iterable[Any]) -> list[ToolCallRequest]:
    return _typed_calls(items, "function_call", "call_id", "arguments")


def _anthropic_calls(blocks: Iterable[Any]) -> list[ToolCallRequest]:
    return _typed_calls(blocks, "tool_use", "id", "input")


def _typed_calls(items: Iterable[Any], kind: str, id_key: str, arguments_key: str) -> list[ToolCallRequest]:
    """The calls among `items` (dicts or SDK objects) whose "type" is `kind`."""
    calls = []
    for item in map(_plain, items):
        if isinstance(item, dict) and item.get("type") == kind:
            calls.append(ToolCallRequest(item.get(id_key), item.get("name", ""), item.get(arguments_key)))
    return calls


def _gemini_calls(parts: Iterable[Any]) -> list[ToolCallRequest]:
    calls = []
    for part in parts:
        part = _plain(part)
        if not isinstance(part, dict):
            continue
        call = _plain(part.get("function_call") or part.get("functionCall"))
        if isinstance(call, dict):
            args = call.get("args")
            calls.append(ToolCallRequest(call.get("id") or None, call.get("name") or "",
                                         {} if args is None else args))
    return calls


def _json_value(result: ToolResult) -> Any:
    """The result as JSON data for Gemini's `{"result": ...}`: `value` when it is plain JSON, else the
    parsed `content` text (the serialised value), else that text itself."""
    try:
        json.dumps(result.value, allow_nan=False)
        return result.value
    except (TypeError, ValueError):
        pass
    try:
        return json.loads(result.content)
    except ValueError:
        return result.content


def result_message(dialect: str, results: list[ToolResult]) -> Any:
    """What carries `results` back to the model, in `dialect`'s shape.

    openai: a list of `{"role": "tool", "tool_call_id", "content"}` messages (`{"role": "function",
    "name", "content"}` for the deprecated `function_call`, which has no id); responses: a list of
    `{"type": "function_call_output", "call_id", "output"}` items; anthropic: one user message of
    `tool_result` blocks (`is_error: true` only on failures); gemini: one user content of
    `function_response` parts with `response` `{"result": value}` or `{"error": text}` (no `id` when
    the call had none). A reply without tool calls gets `[]` in the list dialects and None in the
    message dialects: Anthropic and Gemini reject an empty user message, and either way the result
    is falsy, so `while results := run_tool_calls(reply): ...` ends when the model stops calling.
    """
    if not results and dialect in ("anthropic", "gemini"):
        return None
    if dialect == "openai":
        # a call without an id came from the deprecated `function_call`, answered by a `function` message
        return [{"role": "tool", "tool_call_id": result.request.id, "content": result.content}
                if result.request.id is not None else
                {"role": "function", "name": result.request.name, "content": result.content}
                for result in results]
    if dialect == "responses":
        return [{"type": "function_call_output", "call_id": result.request.id, "output": result.content}
                for result in results]
    if dialect == "anthropic":
        blocks = []
        for result in results:
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.request.id,
                                     "content": result.content}
            if result.is_error:
                block["is_error"] = True
            blocks.append(block)
        return {"role": "user", "content": blocks}
    if dialect == "gemini":
        parts = []
        for result in results:
            response = {"error": result.content} if result.is_error else {"result": _json_value(result)}
            function_response: dict[str, Any] = {"name": result.request.name}
            if result.request.id is not None:
                function_response["id"] = result.request.id
            function_response["response"] = response
            parts.append({"function_response": function_response})
        return {"role": "user", "parts": parts}
    raise ValueError(f"unknown reply dialect {dialect!r}; expected one of {', '.join(DIALECTS)}")


__all__ = [
    "FORMATS", "STRICT_FORMATS", "DIALECTS", "render", "strict_schema", "openapi_schema", "wire_name",
    "wire_names", "mcp_output_schema", "mcp_wraps_result", "drop_absent_nulls", "StrictRules",
    "STRICT_RULES", "ToolCallRequest", "ToolResult", "parse_reply", "result_message",
]
