"""Compound schema documents, made plain: every `$ref` written as a pointer from the root.

A schema may embed resources: subschemas with their own `$id`, often with their own `$defs` (a
bundled schema, JSON Schema 2020-12 §9.1.2 and §12.3). A reference written inside one resolves
against that resource (`#/$defs/X` is the resource's X, `#` the resource itself), and a reference
may name a resource by its URI (`https://example.com/item`, relative forms resolved against the
enclosing `$id`) or a location by `$anchor`. Neither the schema reader nor the provider transforms
track base URIs, so `bundle` answers all of that once, here: it returns a schema in which

- the `$defs`/`definitions` of each embedded resource are moved to the root's `$defs` under fresh
  names (a root name is never reused),
- a resource referenced as a whole that is not itself a root definition is moved to the root's
  `$defs` too (its place keeps a `$ref` to it and its annotations),
- every reference that names something in the document is a root-relative JSON pointer, and the
  embedded resources lose their `$id` (kept, it would scope those pointers to the resource again).

A reference to a URI no resource of the document has is left as written (remote documents are
never fetched). A reference written inside an embedded resource, or naming one by its URI, that
points to nothing there is a SchemaError (left alone it would silently mean the root's namesake).
`has_embedded(root)` says whether `bundle` has anything to do; the common schema pays only that.
"""

from __future__ import annotations

from typing import Any

from ..errors import SchemaError

__all__ = ["bundle", "has_embedded"]

# Keywords whose value is a schema, a list of schemas, or a map of name -> schema (2020-12 and
# draft-07 spellings). Only these are walked: `default`, `enum`, `const`, `examples` hold data.
_ONE = frozenset({"additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
                  "unevaluatedItems", "unevaluatedProperties", "additionalItems", "contentSchema", "items"})
_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_MAP = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_DEFS = ("$defs", "definitions")
_KIND = {**{key: _ONE for key in _ONE | _LIST}, **{key: _MAP for key in _MAP}}  # one lookup per key
# What a moved resource's old place keeps beside the `$ref` (words about this use of it).
_KEPT_IN_PLACE = ("description", "title", "default", "examples", "deprecated", "readOnly", "writeOnly")
# The base URI of a document without an absolute `$id` (RFC 3986 §5.1.4: the application's
# choice); it only lets relative `$id`s and references be matched with each other, never leaks.
_PLACEHOLDER_BASE = "https://nbtools.invalid/root"
_PLACEHOLDER_DIR = "https://nbtools.invalid/"

Path = tuple[str, ...]


def _children(node: dict):
    """(key path, subschema) for each subschema directly inside schema `node`."""
    for key, value in node.items():
        if key in _MAP and isinstance(value, dict):
            for name, sub in value.items():
                yield (key, name), sub
        elif key in _LIST and isinstance(value, list):
            for index, sub in enumerate(value):
                yield (key, str(index)), sub
        elif key in _ONE and isinstance(value, dict):
            yield (key,), value


def has_embedded(root: Any) -> bool:
    """True when `root` has something `bundle` rewrites: a subschema with its own `$id`, an
    `$anchor` (or draft-07 `"$id": "#name"`), or a reference by URI in a document with an `$id`.
    Run on every schema read, so written as one tight loop over the subschemas."""
    if not isinstance(root, dict):
        return False
    rooted = isinstance(root.get("$id"), str)
    if "$anchor" in root or (isinstance(root.get("$id"), str) and root["$id"].startswith("#")):
        return True
    stack: list[Any] = [root]
    first = True
    while stack:
        node = stack.pop()
        if first:
            first = False
        elif ("$id" in node and isinstance(node["$id"], str)) or "$anchor" in node:
            return True
        if rooted and isinstance(node.get("$ref"), str) and not node["$ref"].startswith("#"):
            return True
        for key, value in node.items():
            kind = _KIND.get(key)
            if kind is None:
                continue
            if type(value) is dict:
                if kind is _MAP:
                    for sub in value.values():
                        if type(sub) is dict:
                            stack.append(sub)
                elif key in _ONE:
                    stack.append(value)
            elif type(value) is list and key in _LIST:
                for sub in value:
                    if type(sub) is dict:
                        stack.append(sub)
    return False


def bundle(root: dict) -> dict:
    """`root` with the references of its embedded resources made root-relative (see the module
    text). The input is not changed; when `has_embedded(root)` is False it is returned as is.
    SchemaError for a reference inside (or into) an embedded resource that points to nothing."""
    if not has_embedded(root):
        return root
    return _Bundler(root).run()


class _Bundler:
    """One document: its resources and anchors (pass 1), where each reference points (pass 2),
    what moves to the root's `$defs` (pass 3), and the rewritten copy (pass 4)."""

    def __init__(self, root: dict):
        self.root = root
        self.resources: dict[str, Path] = {}     # absolute URI (no fragment) -> path of the resource
        self.anchors: dict[tuple[str, str], Path] = {}  # (resource URI, anchor name) -> path
        self.refs: list[tuple[Path, str, str, str]] = []  # (path of the node, $ref, base URI, resource URI)
        self.targets: dict[Path, Path | None] = {}  # path of a node with $ref -> path it points to
        self.moves: dict[Path, Path] = {}          # old path -> new path ("$defs", fresh)
        self.remote: dict[Path, str] = {}          # path of a node with $ref -> another document's URI
        self.base = _PLACEHOLDER_BASE
        self.taken = {name for kind in _DEFS for name in (root.get(kind) or {})}

    def run(self) -> dict:
        # 1. index resources and anchors, collect references, with the base URI each was written under
        own = self.root.get("$id")
        base = _join(_PLACEHOLDER_BASE, own) if isinstance(own, str) and not own.startswith("#") \
            else _PLACEHOLDER_BASE
        self.resources[base] = ()
        self.base = base
        self._index(self.root, (), base, base, top=True)
        # 2. where each reference points (a path in the original document, None: left as written)
        for path, ref, ref_base, resource in self.refs:
            self.targets[path] = self._target(path, ref, ref_base, resource)
        # 3. fresh root names for embedded resources' definitions, and for resources referenced whole
        for uri, where in self.resources.items():
            if where:
                node = _at(self.root, where)
                for kind in _DEFS:
                    for name in node.get(kind) or {}:
                        self.moves[(*where, kind, name)] = ("$defs", self._fresh(name))
        referenced = set(self.targets.values())
        for uri, where in self.resources.items():
            moved = self._moved(where)
            if where and where in referenced and not (len(moved) == 2 and moved[0] in _DEFS):
                self.moves[where] = ("$defs", self._fresh(where[-1]))
        # 4. the copy: moved subschemas written at the root, references rewritten
        self.embedded = {where for where in self.resources.values() if where}
        out = self._copy(self.root, ())
        added = {new[1]: self._copy(_at(self.root, old), old, moved_here=True) for old, new in self.moves.items()}
        out["$defs"] = {**(out.get("$defs") or {}), **added}
        return out

    # -- pass 1 ----------------------------------------------------------------------------------
    def _index(self, node: Any, path: Path, base: str, resource: str, top: bool = False) -> None:
        if not isinstance(node, dict):
            return
        own = node.get("$id")
        if isinstance(own, str) and own.startswith("#"):  # draft-07 plain-name fragment: an anchor
            self.anchors.setdefault((resource, own[1:]), path)
        elif isinstance(own, str) and not top:
            base = resource = _join(base, own)
            self.resources.setdefault(resource, path)
        if isinstance(node.get("$anchor"), str):
            self.anchors.setdefault((resource, node["$anchor"]), path)
        if isinstance(node.get("$ref"), str):
            self.refs.append((path, node["$ref"], base, resource))
        for keys, sub in _children(node):
            self._index(sub, (*path, *keys), base, resource)

    # -- pass 2 ----------------------------------------------------------------------------------
    def _target(self, path: Path, ref: str, base: str, resource: str) -> Path | None:
        if ref.startswith("#"):
            uri, fragment = resource, ref[1:]
        else:
            absolute = _join(base, ref)
            uri, _, fragment = absolute.partition("#")
            if uri not in self.resources:  # another document: never fetched; written absolute when the
                if resource != self.base and not absolute.startswith(_PLACEHOLDER_DIR):  # $id goes
                    self.remote[path] = absolute
                return None
        where = self.resources[uri]
        if fragment.startswith("/") or not fragment:
            path = (*where, *(_segment(part) for part in fragment[1:].split("/"))) if fragment else where
            if _exists(self.root, path):
                return path
        elif (uri, fragment) in self.anchors:
            return self.anchors[(uri, fragment)]
        if not where and ref.startswith("#"):
            return None  # the root's own broken reference: as before (the reader ignores it)
        raise SchemaError(None, None, f"the reference {ref!r} (in the schema resource {_shown(uri)}) points "
                                      "to nothing in that resource; check its $defs, $anchor and $id")

    # -- pass 3 ----------------------------------------------------------------------------------
    def _fresh(self, name: str) -> str:
        name = "".join("_" if char in "/~%#" else char for char in name) or "Def"
        fresh, counter = name, 2
        while fresh in self.taken:
            fresh, counter = f"{name}_{counter}", counter + 1
        self.taken.add(fresh)
        return fresh

    def _moved(self, path: Path) -> Path:
        """Where `path` is in the bundled document (the longest moved prefix decides)."""
        for length in range(len(path), 0, -1):
            new = self.moves.get(path[:length])
            if new is not None:
                return new + path[length:]
        return path

    # -- pass 4 ----------------------------------------------------------------------------------
    def _copy(self, node: Any, path: Path, moved_here: bool = False) -> Any:
        if not isinstance(node, dict):
            return node
        if path in self.moves and not moved_here:  # a resource moved to the root keeps a reference here
            kept = {key: node[key] for key in _KEPT_IN_PLACE if key in node}
            return {"$ref": _pointer(self.moves[path]), **kept}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                target = self.targets.get(path)
                out[key] = self.remote.get(path, value) if target is None else _pointer(self._moved(target))
            elif key == "$id" and path in self.embedded:
                continue  # its references are root-relative now; a kept $id would re-scope them
            elif key in _MAP and isinstance(value, dict):
                kept_map = {name: self._copy(sub, (*path, key, name)) for name, sub in value.items()
                            if not (key in _DEFS and (*path, key, name) in self.moves)}
                if kept_map or key not in _DEFS:
                    out[key] = kept_map
            elif key in _LIST and isinstance(value, list):
                out[key] = [self._copy(sub, (*path, key, str(index))) for index, sub in enumerate(value)]
            elif key in _ONE and isinstance(value, dict):
                out[key] = self._copy(value, (*path, key))
            else:
                out[key] = value
        return out


def _join(base: str, ref: str) -> str:
    """`ref` resolved against `base`, without an empty fragment."""
    from urllib.parse import urljoin  # here: `import nbtools` need not load urllib

    joined = urljoin(base, ref)
    return joined[:-1] if joined.endswith("#") else joined


def _segment(part: str) -> str:
    """One JSON-pointer segment of a URI fragment: percent-decoded, then `~1` -> `/`, `~0` -> `~`."""
    if "%" in part:
        from urllib.parse import unquote

        part = unquote(part)
    return part.replace("~1", "/").replace("~0", "~")


def _pointer(path: Path) -> str:
    return "#" + "".join("/" + part.replace("~", "~0").replace("/", "~1").replace("%", "%25") for part in path)


def _at(root: Any, path: Path) -> Any:
    node = root
    for part in path:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _exists(root: Any, path: Path) -> bool:
    node = root
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True


def _shown(uri: str) -> str:
    """A resource's URI as written for a person (the placeholder base never shows)."""
    if uri == _PLACEHOLDER_BASE:
        return "at the document's root"
    return repr(uri.removeprefix(_PLACEHOLDER_DIR))
