"""A tool's parameters schema -> its arguments object: the `ir.Object` dispatch validates against.

`parameters_root` makes a provider's dialect plain (`formats.plainschema`: a schema written for
Gemini reads as JSON Schema), checks that the schema describes an object and copies it;
`arguments_object` reads it with `schema_to_ir`. Used by `Tool.from_schema`, the inverse (`schema2sig`, `mk_tool`) and
dispatch (for a Tool built without an arguments object). Errors are `SchemaError`s naming the tool.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .. import ir
from ..errors import SchemaError
from ..formats.plainschema import plain_copy
from .read import check_json_depth, json_types, schema_to_ir

__all__ = ["arguments_object", "parameters_root", "schema_error", "root_constraints", "ROOT_CONSTRAINTS", "extra_declared"]

ROOT_CONSTRAINTS = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentRequired",
                    "dependentSchemas")
"""Keywords a root object schema may carry beside its properties (JSON Schema 2020-12, MCP SEP-2106):
they constrain which arguments go together; the arguments object is read from the rest."""


def root_constraints(parameters: dict) -> dict:
    """The composition/conditional keywords of an object root that has properties (else {})."""
    if not isinstance(parameters, dict) or "properties" not in parameters:
        return {}
    return {key: parameters[key] for key in ROOT_CONSTRAINTS if key in parameters}


def schema_error(tool: str | None, reason: str) -> SchemaError:
    """A SchemaError about the parameters schema of `tool`: its text starts `tool 'name': `, and its
    `function` field is the tool's name."""
    error = SchemaError(None, None, f"tool {tool!r}: {reason}" if tool else reason)
    error.function = tool
    return error


def parameters_root(name: str, parameters: Any) -> dict:
    """A private copy of tool `name`'s parameters schema, in plain JSON Schema (a provider's dialect
    rewritten by `formats.plainschema`), checked to be an object schema, with `type` spelled out
    (None: no parameters). SchemaError when it is not one."""
    if parameters is None:
        return {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise schema_error(name, "parameters must be a JSON Schema object (a dict), "
                                 f"got {type(parameters).__name__}")
    check_json_depth(parameters, f"parameters schema of tool {name!r}")
    copied = plain_copy(parameters)  # a private copy, a provider's dialect (Gemini's "OBJECT", `nullable`) made plain
    types = json_types(copied)
    if types is None and "$ref" not in copied and "type" in parameters or \
            types is not None and types != ["object"]:
        raise schema_error(name, f"parameters must be a JSON Schema of type 'object', got type {parameters['type']!r}")
    if types is None and "$ref" not in copied:
        copied = {"type": "object", **copied}
    return copied


def constrained(name: str, parameters: dict, fn: Any) -> Any:
    """`fn`, checking first that its arguments meet the root's composition/conditional keywords
    (`root_constraints`), with the `jsonschema` validator (draft 2020-12); a call that does not is
    refused with a ToolCallError saying which rule failed. `fn` itself when there are none."""
    constraints = root_constraints(parameters)
    if not constraints or fn is None:
        return fn
    try:
        import jsonschema
    except ImportError:
        raise schema_error(name, f"its parameters use {', '.join(constraints)} at the root; checking them "
                                 "needs the jsonschema package: pip install jsonschema") from None
    import functools
    import inspect

    from ..errors import ToolCallError

    rules = dict(constraints)
    if "$defs" in parameters:
        rules["$defs"] = parameters["$defs"]
    validator = jsonschema.Draft202012Validator(rules)

    def check(arguments: dict) -> None:
        problem = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
        if problem is not None:
            keyword = "/".join(str(part) for part in problem.schema_path) or "root"
            raise ToolCallError(name, f"the arguments do not meet the schema's {keyword} rule: {problem.message}")

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def checked_async(**arguments: Any) -> Any:
            check(arguments)
            return await fn(**arguments)

        return checked_async

    @functools.wraps(fn)
    def checked(**arguments: Any) -> Any:
        check(arguments)
        return fn(**arguments)

    return checked


def arguments_object(name: str, parameters: dict) -> ir.Object:
    """The arguments object (an `ir.Object` whose fields are the properties) of tool `name`'s
    parameters schema (checked by `parameters_root`); a schema of extra keys only (a map) becomes an
    Object with no fields and `extra`. Extra keys are accepted only when the root declares them
    (`extra_declared`). SchemaError, naming the tool, when it describes no object or
    is too large to read."""
    all_of = parameters.get("allOf")
    if isinstance(all_of, list) and len(all_of) > 1:
        parameters = _one_object(name, parameters, all_of)
    constraints = root_constraints(parameters)
    if constraints:  # read the object itself; `Tool.from_schema` checks the constraints on each call
        parameters = {key: value for key, value in parameters.items() if key not in constraints}
    try:
        node = schema_to_ir(parameters)
    except SchemaError as error:
        raise schema_error(name, str(error)) from None
    if isinstance(node, ir.Ref) and node.target is not None:
        node = node.target()
    if isinstance(node, ir.Map):
        node = ir.Object(fields=(), kind="dict", extra=node.value, description=node.description)
    if not isinstance(node, ir.Object):
        raise schema_error(name, "parameters must describe a JSON object with named properties; "
                                 f"read it as {type(node).__name__}")
    if node.extra is not None and not extra_declared(parameters):
        # Undeclared arguments are refused unless the root welcomes them: `Tool.call` and the
        # `mk_tool` function (whose signature has no **kwargs then) give one answer.
        node = dataclasses.replace(node, extra=None)
    return node


def _one_object(name: str, parameters: dict, all_of: list) -> dict:
    """A root whose properties are spread over an `allOf` (JSON Schema 2020-12, MCP SEP-2106), as one
    object to read the arguments from: the parts intersected (`formats.allof`). The root as it is
    when they cannot be written as one and the root names properties of its own (its `allOf` is then
    only checked, by `constrained`); SchemaError when they cannot and it names none."""
    from ..formats.allof import intersect  # only for such roots: dispatch's imports stay small
    from ..formats.walk import split_ref

    definitions = {**(parameters.get("definitions") or {}), **(parameters.get("$defs") or {})}

    def local_target(part: dict) -> dict | None:
        target = definitions.get(split_ref(part.get("$ref")))
        return target if isinstance(target, dict) else None

    own = {key: value for key, value in parameters.items() if key not in ("allOf", "$defs", "definitions")}
    merged, why = intersect([own, *[part for part in all_of if isinstance(part, dict)]], local_target)
    if merged is None:
        if "properties" in parameters:
            return parameters
        raise schema_error(name, f"its root allOf cannot be read as one object ({why}); "
                                 "write the properties in one object schema")
    return {**merged, **({"$defs": parameters["$defs"]} if "$defs" in parameters else {}),
            **({"definitions": parameters["definitions"]} if "definitions" in parameters else {})}


def extra_declared(parameters: dict) -> bool:
    """Whether the root says extra properties are welcome (`additionalProperties: true` or a schema);
    left out, JSON Schema would allow them, but a tool's arguments are the ones it names."""
    additional = parameters.get("additionalProperties")
    return additional is True or isinstance(additional, dict)
