"""The strict form of a parameters schema: what OpenAI's and Anthropic's strict tool modes accept.

The transform differs per provider (both checked against the providers' docs):

- OpenAI: every object closed and every property required; an optional property becomes
  nullable and a null for it means "left out" (dispatch reads it so: an optional parameter that
  cannot hold null takes its default). Recursive `$ref` is allowed. Supported constraints are kept
  (pattern, a subset of formats, numeric bounds, minItems/maxItems); minLength, maxLength,
  uniqueItems, defaults, ... are moved into the description text so the model still reads them
  (dispatch still enforces them). Limits: 5000 properties, 10 levels of object nesting, 1000 enum
  values.
- Anthropic: every object closed, but optional properties stay optional (Anthropic's strict mode
  supports them, and nullable unions count against a smaller per-request budget); no recursive
  schemas; no numeric or length constraints, minItems only 0 or 1, pattern and default moved into
  the description. Limits per request: 24 optional properties and 16 union-typed properties.
- Typed maps (`dict[str, V]`, `Mapping[str, V]`, `dict[int, V]`, `**kwargs: V`): strict mode closes
  every object, so a map is written as an array of closed `{"key": string, "value": V}` pairs
  (the key carries the map's `propertyNames`; `minProperties`/`maxProperties` become
  `minItems`/`maxItems`). Dispatch accepts that form wherever the type is a map and turns it back
  into the dict (a key given twice is refused); a plain object keeps working. Typed `**kwargs`
  become one more property of the arguments object, `PAIRS_PROPERTY` ("extra-arguments"): a
  name that is not a Python identifier, so no parameter can have it (a schema that already uses it
  is refused), and one both providers accept as a property name.
- Where a value has no faithful strict form (an untyped value or map value, a mixed tuple,
  `propertyNames` outside a map, `not`, ...), a `SchemaError` names the tool and the parameter and
  says what to change. Meaning is never changed silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import SchemaError
from .walk import (
    IN_PROGRESS, MISSING, Walker, is_typed_map, is_untyped, pop_type, split_ref, type_list, with_notes,
)


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
INLINE_NODES = 200  # a finished definition larger than this (written out) is referenced, not copied


def _written_nodes(schema: Any, sizes: dict[int, int]) -> int:
    """How many dicts and lists `schema` has written out, each distinct one counted once per use;
    computed once per object (`sizes`), so linear however often a copy is shared."""
    if not isinstance(schema, (dict, list)):
        return 0
    known = sizes.get(id(schema))
    if known is None:
        values = schema.values() if isinstance(schema, dict) else schema
        known = sizes[id(schema)] = 1 + sum(_written_nodes(value, sizes) for value in values)
    return known

_UNTYPED_MAP = ("an object with arbitrary keys and untyped values (a bare dict, dict[str, Any]) has no {form} "
                "(strict mode closes every object, so it would accept only {}); give the values a type "
                "(a typed map is sent as key/value pairs) or use a dataclass or TypedDict with fixed keys{advice}")

_OPEN_ROOT = ("the arguments object is explicitly open (additionalProperties true or {}), and untyped extra "
              "arguments have no {form} (strict mode closes every object, so none could be sent); give "
              "them a type (`additionalProperties: <schema>`, sent as key/value pairs) or close the "
              "object (`additionalProperties: false`){advice}")

PAIRS_PROPERTY = "extra-arguments"
"""The property that carries typed `**kwargs` as key/value pairs in strict mode (not an identifier)."""

_PAIRS_NOTE = "key/value pairs, each key at most once"


def strict_schema(schema: dict, tool_name: str, provider: str = "openai", *,
                  extras_name: str | None = None, varargs_name: str | None = None) -> dict:
    """`schema` (neutral, root an object) in the form `provider`'s strict tool mode accepts.

    `provider` is "openai" (also the Responses API) or "anthropic"; see the module docstring for
    what each accepts. Raises `SchemaError(tool_name, parameter, reason)` when part of the schema
    has no faithful strict form; `extras_name` (the `**kwargs` parameter, if any) is the parameter
    named when the root's extra keys are the problem. Optional catch-alls never make the tool
    unusable: untyped `**kwargs` and a `*args` property (`varargs_name`) with no strict form are
    left out (the model cannot send them; the function gets its defaults). The input is never mutated.
    """
    rules = STRICT_RULES.get(provider)
    if rules is None:
        raise ValueError(f"unknown strict provider {provider!r}; expected one of {', '.join(STRICT_RULES)}")
    return _Strict(schema, tool_name, rules, extras_name, varargs_name).root()


class _Strict(Walker):
    """The strict transform for one provider's `StrictRules`; `$defs` are transformed once, when reached."""

    def __init__(self, root: dict, tool_name: str, rules: StrictRules, extras_name: str | None = None,
                 varargs_name: str | None = None):
        super().__init__(root, tool_name, extras_name, varargs_name)
        self.rules = rules
        self.form = f"{'OpenAI' if rules.provider == 'openai' else 'Anthropic'} strict form"
        self.advice = ", or render this tool without strict=True"
        self.defs: dict[str, Any] = {}  # transformed $defs, in the order first reached
        self.sizes: dict[int, int] = {}  # written-out size of finished schemas (see `_written_nodes`)

    def root(self) -> dict:
        out = self.node(self.root_keys(None), (), root=True)
        if self.defs:
            out["$defs"] = dict(self.defs)
        self.check_limits(out)
        return out

    # -- one schema ---------------------------------------------------------------------------
    def node(self, schema: Any, where: tuple[str, ...], root: bool = False, note: str | None = None) -> dict:
        """One schema in strict form; `note` is extra text for its description (about defaults)."""
        names: Any = MISSING
        is_map = not root and is_typed_map(schema)
        if is_map:  # propertyNames become the pairs' key schema (elsewhere they have no strict form)
            schema = dict(schema)
            names = schema.pop("propertyNames", MISSING)
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
        kind = pop_type(keys)
        if kind is not None:
            out["type"] = kind
        if "anyOf" in keys:
            options = keys.pop("anyOf")
            out["anyOf"] = [self.node(option, where) for option in options]
        if "enum" in keys:
            out["enum"] = list(keys.pop("enum"))
        kinds = type_list(kind)
        if is_map and "object" in kinds:
            self.map_into(out, keys, names, where)
            notes[""] = _PAIRS_NOTE
        elif "object" in kinds:
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
            notes[""] = f"{notes['']}; {note}" if "" in notes else note
        return self.annotate(out, description, title, notes)

    def annotate(self, out: dict, description: str | None, title: str | None,
                 notes: dict[str, Any] | str | None) -> dict:
        """Attach title and description (with notes) to `out`, never beside a `$ref`."""
        text = with_notes(description, notes)
        if text is None and title is None:
            return out
        if "$ref" in out:
            # Strict modes refuse keywords beside $ref: inline the finished definition, or (while
            # it is still being built, i.e. recursion, or when it is large: a shared type nested
            # many levels, copied at every use, would double the schema per level) wrap the
            # reference in a one-option anyOf.
            name = split_ref(out["$ref"])
            done = self.defs.get(name, IN_PROGRESS)
            if done is IN_PROGRESS or _written_nodes(done, self.sizes) > INLINE_NODES:
                out = {"anyOf": [out]}
            else:
                out = dict(done)
        if title is not None:
            out["title"] = title
        if text is not None:
            out["description"] = text
        return out

    def reach(self, ref: Any, where: tuple[str, ...]) -> str:
        """Transform the `$defs` entry `ref` points to (once); returns its name."""
        name, target = self.def_of(ref, where)
        state = self.defs.get(name, MISSING)
        if state is IN_PROGRESS:
            if not self.rules.recursion:
                self.fail(where, f"the recursive type {name!r} has no {{form}} ({self.rules.provider} "
                                 "strict mode refuses recursive schemas){advice}")
            return name
        if state is MISSING:
            self.defs[name] = IN_PROGRESS
            self.defs[name] = self.node(target, where)
        return name

    # -- objects and arrays ---------------------------------------------------------------------
    def map_into(self, out: dict, keys: dict, names: Any, where: tuple[str, ...]) -> None:
        """A typed map as an array of closed `{"key", "value"}` pairs (`out["type"]` says array)."""
        kinds = ["array" if kind == "object" else kind for kind in type_list(out["type"])]
        out["type"] = kinds[0] if len(kinds) == 1 else kinds
        keys.pop("properties", None)
        for bound, items in (("minProperties", "minItems"), ("maxProperties", "maxItems")):
            if bound in keys:
                keys[items] = keys.pop(bound)
        out["items"] = self.pair(names, keys.pop("additionalProperties"), where + ("[]",))

    def pair(self, names: Any, value: Any, where: tuple[str, ...]) -> dict:
        key = {"type": "string", **names} if isinstance(names, dict) else {"type": "string"}
        return {"type": "object",
                "properties": {"key": self.node(key, where + ("key",)),
                               "value": self.node(value, where + ("value",))},
                "required": ["key", "value"], "additionalProperties": False}

    def object_into(self, out: dict, keys: dict, where: tuple[str, ...], root: bool) -> None:
        properties = keys.pop("properties", None) or {}
        required = set(keys.pop("required", ()))
        extra = keys.pop("additionalProperties", MISSING)
        if root and isinstance(extra, dict) and not is_untyped(extra):
            # typed **kwargs: one more (optional) property holding them as pairs
            if PAIRS_PROPERTY in properties:
                self.fail((PAIRS_PROPERTY,), f"the property name {PAIRS_PROPERTY!r} is taken, so the extra "
                          "arguments cannot be given as key/value pairs in the {form}{advice}")
            properties = {**properties, PAIRS_PROPERTY: {
                "type": "object", "additionalProperties": extra,
                "description": "extra keyword arguments"
                               + (f" (**{self.extras_name})" if self.extras_name else "")}}
            extra = False
        elif root and extra is not MISSING and extra is not False:
            if self.extras_name is None:  # a schema read back, open on purpose: not a catch-all
                self.fail(where, _OPEN_ROOT)
            extra = False  # a function's untyped **kwargs: an optional catch-all with no strict form, left out
        if extra is not False and not (extra is MISSING and (properties or root)):
            # An object written with properties but no additionalProperties is a struct (pydantic
            # writes them so); only a key/value mapping would be narrowed by closing it.
            self.fail(where, _UNTYPED_MAP)
        converted: dict[str, Any] = {}
        for name, prop in properties.items():
            if root and name == self.varargs_name and name not in required:
                before = dict(self.defs)
                try:
                    converted[name] = self.property(name, prop, False, where)
                except SchemaError:  # *args with no strict form: left out, the tool stays usable
                    self.defs = before
                continue
            converted[name] = self.property(name, prop, name in required, where)
        out["properties"] = converted
        if self.rules.all_required:
            out["required"] = list(converted)
        else:
            out["required"] = [name for name in converted if name in required]
        out["additionalProperties"] = False

    def property(self, name: str, prop: Any, required: bool, where: tuple[str, ...]) -> dict:
        default = prop.get("default", MISSING) if isinstance(prop, dict) else MISSING
        if default is not MISSING:
            prop = {key: value for key, value in prop.items() if key != "default"}
        # OpenAI: an optional property becomes required-but-nullable, and null stands for "left
        # out" (dispatch then applies the default). Already-nullable ones stay as is.
        make_nullable = (not required and self.rules.all_required
                         and not _schema_accepts_null(prop, self.source_defs))
        if make_nullable:
            note = ("null leaves it out" if default is MISSING
                    else f"null means the default, {json.dumps(default, default=str)}")
        else:
            note = None if default is MISSING else f"default: {json.dumps(default, default=str)}"
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



def _resolve(schema: Any, defs: dict) -> Any:
    """`schema` with local `$ref`s followed (at most 32 deep, so a reference loop ends)."""
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 32:
        target = defs.get(split_ref(schema["$ref"]) or "")
        if target is None:
            return schema
        schema, seen = target, seen + 1
    return schema


def _schema_accepts_null(schema: Any, defs: dict) -> bool:
    """Whether the JSON Schema `schema` admits null (an untyped one does), `$ref`s followed.

    One rule in two forms: dispatch asks `ir.accepts_null` of the intermediate form, which says
    which nulls mean "left out" (`readback.null_means_absent`). This transform works on JSON Schema
    from anywhere (`Tool.from_schema`, a pydantic model's own schema) before, or without, any
    reading into that form, so it asks the schema itself. The two must agree: an optional property
    made nullable here is exactly one whose null dispatch drops (tests/test_round_trips.py checks
    it behind references).
    """
    schema = _resolve(schema, defs)
    if not isinstance(schema, dict) or is_untyped(schema):
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


__all__ = ["StrictRules", "STRICT_RULES", "strict_schema", "PAIRS_PROPERTY"]
