"""agenttool part: the JSON Schema validator (pasted into agenttool.py as its own section)."""

from __future__ import annotations

# __all__ += ["validator", "Validator"]
import json
import math
import re
import sys
from typing import Any, Callable

from agenttool import SchemaError, ValidationError

# ---------------------------------------------------------------------------------------------
# JSON Schema validation
#
# validator(schema) compiles a JSON Schema (draft 2020-12 or draft 7) once into a Validator whose
# validate(value) and validate_json(text) raise ValidationError(path, msg).  Each keyword writes
# a few lines of Python through its generator (_KEYWORDS, the table from keyword to generator);
# the whole schema becomes one module of source that compile() turns into functions, like
# fastjsonschema does, and the code is 2.5 to 5 times faster than fastjsonschema (bench/).
# Schema strings reach the source only through repr(); regexes and other values are constants.
#
# Decisions, stated once:
# - Drafts: no $schema means 2020-12, also honouring draft 7's spellings (items as an array with
#   additionalItems, dependencies, definitions).  The draft 7 URI (http or https, with or
#   without "#") selects draft 7: $ref hides its siblings and 2020-12-only keywords are ignored.
#   The 2020-12 URI selects 2020-12; any other $schema is a SchemaError.
# - Refused when compiled, with a SchemaError naming the keyword and its place: unevaluated-
#   Properties and unevaluatedItems (unless true), $dynamicRef, a $ref outside the document or
#   that does not resolve, an unknown type name ('"strng" is not a JSON Schema type', checked
#   here rather than at validation time), a keyword value of the wrong type, an invalid
#   pattern, draft 4's boolean exclusiveMinimum/exclusiveMaximum.
# - Ignored, as the specification says: annotations (title, description, default, examples,
#   $comment, format, content*, readOnly...), $vocabulary and unknown keywords.
# - JSON truths: true is not a number, 1.0 is an integer, enum/const/uniqueItems use JSON
#   equality (1 == 1.0 but true != 1), lengths count code points, a tuple is an array.
#   pattern is an ECMA-262 regex run with re.search: \d \w \b are ASCII, \s is ECMA's
#   whitespace, $ is the very end, \p{L} is a letter; other \p{..} are refused.
# - Nesting: validate_json reports "nesting too deep" when the parser gives up; validate
#   reports it wherever checking walks deeper than the recursion limit.  A schema that does not
#   look inside a value ({} or true) accepts it without walking it.
# - Messages follow the Go seed: required (in the list's order) before properties, properties
#   in sorted name order (an unexpected key sorting first wins), enum before type except that a
#   null the type refuses is a type error.  Paths are dotted with [i] for items; a key that is
#   not a Python identifier is written ["content-type"].  Keys matched only by
#   patternProperties or an additionalProperties schema are checked in the object's order.
# ---------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------
# Runtime helpers the generated code calls (only on the error path, except _canon and _dup)
# ---------------------------------------------------------------------------------------------


class _Invalid(Exception):
    """An error inside generated code: the message and the path below the raising function."""

    __slots__ = ("msg", "path")

    def __init__(self, msg: str, path: tuple[object, ...] = ()) -> None:
        self.msg = msg
        self.path = path


def _at(err: _Invalid, *segments: object) -> _Invalid:
    """Prefix ``err``'s path with the caller's segments as it leaves a function call."""
    err.path = segments + err.path
    return err


def _index(items: Any, item: object, start: int) -> int:
    """The index of the first item from ``start`` that is ``item`` (on the error path only)."""
    for i in range(start, len(items)):
        if items[i] is item:
            return i
    return -1


def _format_path(path: tuple[object, ...]) -> str:
    """``list[0].name``; a key that is not an identifier is ``["content-type"]``."""
    out: list[str] = []
    for seg in path:
        if isinstance(seg, int):
            out.append(f"[{seg}]")
        elif isinstance(seg, str) and seg.isidentifier():
            out.append("." + seg if out else seg)
        else:
            out.append("[" + json.dumps(seg, ensure_ascii=False) + "]")
    return "".join(out)


def _number_text(v: float) -> str:
    """A number as written in JSON; an integer too long to print says how long it is."""
    if isinstance(v, int):
        try:
            return str(v)
        except ValueError:  # over sys.get_int_max_str_digits()
            return f"an integer of about {int(v.bit_length() * 0.30103)} digits"
    return repr(v)


def _describe(v: object) -> str:
    """A value for a message: strings quoted (long ones cut), numbers as written, kinds."""
    if isinstance(v, str):
        if len(v) > 60:
            return json.dumps(v[:57], ensure_ascii=False)[:-1] + '..."'
        return json.dumps(v, ensure_ascii=False)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return _number_text(v)
    if isinstance(v, dict):
        return "object"
    if isinstance(v, (list, tuple)):
        return "array"
    return type(v).__name__


def _compact(v: object, limit: int = 0) -> str:
    """Compact JSON for values named in messages (enum members, schemas), cut at ``limit``."""
    try:
        text = json.dumps(v, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        text = _describe(v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        text = _number_text(v)
    if limit and len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def _join_or(names: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    if len(names) <= 2:
        return " or ".join(names)
    return ", ".join(names[:-1]) + " or " + names[-1]


def _plural(n: int, word: str) -> str:
    if word == "property":
        return f"{n} property" if n == 1 else f"{n} properties"
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


_BOOL = object()  # tags keeping true/false apart from 1/0 under JSON equality
_ARRAY = object()
_OBJECT = object()


def _canon(v: object) -> object:
    """A hashable key equal exactly when two values are equal as JSON (1 == 1.0, true != 1)."""
    t = type(v)
    if t is str or t is int or t is float or v is None:
        return v
    if t is bool:
        return (_BOOL, v)
    if isinstance(v, dict):
        return (_OBJECT, frozenset([(k, _canon(x)) for k, x in v.items()]))
    if isinstance(v, (list, tuple)):
        return (_ARRAY, tuple([_canon(x) for x in v]))
    if isinstance(v, bool):
        return (_BOOL, bool(v))
    if isinstance(v, (int, float, str)):
        return v
    return (type(v), repr(v))


def _dup(items: Any) -> tuple[int, int] | None:
    """The indexes of the first two equal items, or None."""
    seen: dict[object, int] = {}
    for i, item in enumerate(items):
        j = seen.setdefault(item if type(item) is str else _canon(item), i)
        if j != i:
            return (j, i)
    return None


def _multiple_of(v: Any, m: Any) -> bool:
    """Exact ``multipleOf`` on the numbers as written (0.0075 is a multiple of 0.0001)."""
    if isinstance(v, int) and isinstance(m, int):
        return v % m == 0
    if isinstance(v, float) and not math.isfinite(v):
        return False
    if isinstance(m, int) and isinstance(v, float) and v.is_integer():
        return int(v) % m == 0
    from fractions import Fraction

    def exact(x: Any) -> Fraction:
        return Fraction(x) if isinstance(x, int) else Fraction(repr(x))

    return (exact(v) / exact(m)).denominator == 1


def _json_type(v: object) -> str:
    if isinstance(v, str):
        return "string"
    if v is None:
        return "null"
    if v is True or v is False:
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, dict):
        return "object"
    return "array"


def _m_type(v: object, names: str) -> str:
    return f"expected {names}, got {_describe(v)}"


def _m_enum(v: object, listed: str) -> str:
    return f"expected one of {listed}, got {_describe(v)}"


def _m_const(v: object, listed: str) -> str:
    return f"expected exactly {listed}, got {_describe(v)}"


def _m_required(obj: Any, names: tuple[str, ...]) -> str:
    missing = next(n for n in names if n not in obj)
    return f"missing required property {json.dumps(missing, ensure_ascii=False)}"


def _m_dependent(obj: Any, names: tuple[str, ...], when: str) -> str:
    missing = next(n for n in names if n not in obj)
    return (
        f"missing required property {json.dumps(missing, ensure_ascii=False)}"
        f" (required when {json.dumps(when, ensure_ascii=False)} is present)"
    )


def _first_extra(obj: Any, known: Callable[[str], bool]) -> str | None:
    extras = [k for k in obj if not known(k)]
    return min(extras) if extras else None


def _m_unexpected(key: object) -> str:
    return f"unexpected property {json.dumps(key, ensure_ascii=False)}"


def _extra_first(
    err: _Invalid, obj: Any, known: Callable[[str], bool], depth: int, path: tuple[object, ...]
) -> _Invalid:
    """Keys are checked in sorted order: an unexpected key sorting first wins over ``err``."""
    extra = _first_extra(obj, known)
    if extra is not None and len(err.path) > depth:
        failed = err.path[depth]
        if isinstance(failed, str) and extra < failed:
            return _Invalid(_m_unexpected(extra), path)
    return err


def _known_keys(names: frozenset[str], patterns: tuple[Any, ...]) -> Callable[[str], bool]:
    def known(key: str) -> bool:
        return key in names or any(p(key) for p in patterns)

    return known


def _m_min(v: Any, op: str, limit: str) -> str:
    return f"expected a number {op} {limit}, got {_describe(v)}"


def _m_len(v: Any, least: bool, n: int, word: str) -> str:
    bound = "at least" if least else "at most"
    return f"expected {bound} {_plural(n, word)}, got {len(v)}"


def _m_dup(v: Any) -> str:
    pair = _dup(v)
    assert pair is not None
    return f"expected unique items; items {pair[0]} and {pair[1]} are equal"


def _m_name(key: str, err: _Invalid) -> _Invalid:
    return _Invalid(f"invalid property name {_describe(key)}: {err.msg}")


def _shapes_error(
    v: object, errors: list[_Invalid], infos: tuple[tuple[frozenset[str], str, bool], ...]
) -> _Invalid:
    """anyOf/oneOf with no match: the one branch for the value's JSON type, else the shapes."""
    kind = _json_type(v)
    hits = [i for i, (types, _, _) in enumerate(infos) if kind in types]
    if len(hits) == 1:
        return errors[hits[0]]
    if all(plain for _, _, plain in infos):  # bare types: say it as a type union does
        return _Invalid(_m_type(v, _join_or([shape for _, shape, _ in infos])))
    shapes = [shape for _, shape, _ in infos]
    listed = ", ".join(shapes[:-1]) + ", or " + shapes[-1] if len(shapes) > 1 else shapes[0]
    return _Invalid(
        f"expected a value matching one of the {len(shapes)} allowed shapes ({listed}),"
        f" got {_describe(v)}"
    )


def _any_of(v: object, branches: tuple[Callable[[object], None], ...], infos: Any) -> None:
    errors: list[_Invalid] = []
    for branch in branches:
        try:
            branch(v)
            return
        except _Invalid as err:
            errors.append(err)
    raise _shapes_error(v, errors, infos)


def _one_of(v: object, branches: tuple[Callable[[object], None], ...], infos: Any) -> None:
    errors: list[_Invalid] = []
    for branch in branches:
        try:
            branch(v)
        except _Invalid as err:
            errors.append(err)
    matched = len(branches) - len(errors)
    if matched == 1:
        return
    if matched == 0:
        raise _shapes_error(v, errors, infos)
    raise _Invalid(f"expected exactly one of the allowed shapes to match, but {matched} did")


def _not(v: object, branch: Callable[[object], None], shown: str) -> None:
    try:
        branch(v)
    except _Invalid:
        return
    raise _Invalid(f"expected a value not matching {shown}, got {_describe(v)}")


def _count(v: Any, branch: Callable[[object], None], stop: int) -> int:
    """How many items match ``branch``, stopping early once ``stop`` have (0: never)."""
    n = 0
    for item in v:
        try:
            branch(item)
        except _Invalid:
            continue
        n += 1
        if n == stop:
            break
    return n


# ---------------------------------------------------------------------------------------------
# The compiler: schema -> Python source -> functions
# ---------------------------------------------------------------------------------------------

_DRAFT7 = 7
_DRAFT2020 = 2020
_SCHEMA_URIS = {
    "http://json-schema.org/draft-07/schema": _DRAFT7,
    "https://json-schema.org/draft-07/schema": _DRAFT7,
    "http://json-schema.org/draft/2020-12/schema": _DRAFT2020,
    "https://json-schema.org/draft/2020-12/schema": _DRAFT2020,
}
_ONLY_2020 = frozenset(  # unknown keywords to draft 7, so ignored there
    ["prefixItems", "dependentRequired", "dependentSchemas", "minContains", "maxContains",
     "$anchor", "$dynamicAnchor", "$dynamicRef", "unevaluatedProperties", "unevaluatedItems"]
)  # fmt: skip
_REFUSED = ("unevaluatedProperties", "unevaluatedItems", "$dynamicRef")
_ROOT_BASE = "https://agenttool.invalid/schema.json"  # the base URI of a root without $id
_TYPES = ("string", "integer", "number", "boolean", "object", "array", "null")
_ALL_TYPES = frozenset(["string", "number", "boolean", "object", "array", "null"])
_MAX_BLOCKS = 9  # nested for/try blocks before a subschema becomes its own function
_MAX_INDENT = 30

# The Python test for each JSON type, for a value held in the variable {v}.
_TYPE_TEST = {
    "string": "isinstance({v}, str)",
    "integer": (
        "(type({v}) is int or (isinstance({v}, int) and not isinstance({v}, bool))"
        " or (isinstance({v}, float) and {v}.is_integer()))"
    ),
    "number": (
        "(type({v}) is int or type({v}) is float"
        " or (isinstance({v}, (int, float)) and not isinstance({v}, bool)))"
    ),
    "boolean": "({v} is True or {v} is False)",
    "object": "isinstance({v}, dict)",
    "array": "isinstance({v}, (list, tuple))",
    "null": "{v} is None",
}

_HELPERS: dict[str, object] = {
    "_Invalid": _Invalid,
    "_at": _at,
    "_index": _index,
    "_canon": _canon,
    "_dup": _dup,
    "_multiple_of": _multiple_of,
    "_m_type": _m_type,
    "_m_enum": _m_enum,
    "_m_const": _m_const,
    "_m_required": _m_required,
    "_m_dependent": _m_dependent,
    "_m_unexpected": _m_unexpected,
    "_first_extra": _first_extra,
    "_extra_first": _extra_first,
    "_m_min": _m_min,
    "_m_len": _m_len,
    "_m_dup": _m_dup,
    "_m_name": _m_name,
    "_any_of": _any_of,
    "_one_of": _one_of,
    "_not": _not,
    "_count": _count,
}


def _pointer_escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


class _Site:
    """Where generated code for one subschema goes: the value's variable, its path, the
    indentation, the schema location (for SchemaError), the base URI and the type known."""

    __slots__ = ("v", "path", "ind", "blocks", "loc", "base", "known", "present")

    def __init__(
        self,
        v: str,
        path: tuple[str, ...],
        ind: int,
        blocks: int,
        loc: str,
        base: str,
        known: frozenset[str] | None,
    ) -> None:
        self.v = v
        self.path = path  # Python expressions, one per path segment
        self.ind = ind
        self.blocks = blocks
        self.loc = loc
        self.base = base
        self.known = known
        self.present: frozenset[str] = frozenset()  # keys a required check has proven there

    def child(self, v: str, seg: str | None, loc: str, indent: int = 0, blocks: int = 0) -> _Site:
        path = self.path if seg is None else self.path + (seg,)
        return _Site(v, path, self.ind + indent, self.blocks + blocks, loc, self.base, None)


_Generator = Callable[["_Compiler", _Site, dict[str, Any]], None]


class _Compiler:
    """Writes the source of one schema: a function per referenced subschema, one per branch."""

    def __init__(self, root: Any, draft: int) -> None:
        self.root = root
        self.draft = draft
        self.lines: list[str] = []
        self.consts: dict[str, object] = dict(_HELPERS)
        self.functions: dict[tuple[int, str], str] = {}
        self.pending: list[tuple[str, Any, str, str]] = []
        self.counter = 0
        self.resources: dict[str, Any] = {}
        self.anchors: dict[str, Any] = {}
        self.bases: dict[int, str] = {}
        self.resources[_ROOT_BASE] = root
        self._index(root, _ROOT_BASE, "#")

    # -- errors and small emitters ------------------------------------------------------------

    def error(self, loc: str, keyword: str, msg: str) -> SchemaError:
        return SchemaError(f'schema keyword "{keyword}" at {loc}: {msg}')

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value: object, prefix: str = "K") -> str:
        name = self.name(prefix)
        self.consts[name] = value
        return name

    def emit(self, ind: int, text: str) -> None:
        self.lines.append("    " * ind + text)

    def path_code(self, site: _Site) -> str:
        if not site.path:
            return "()"
        return "(" + ", ".join(site.path) + ",)"

    def fail(self, site: _Site, ind: int, msg: str) -> None:
        """``raise`` the message expression ``msg`` at the site's path."""
        self.emit(ind, f"raise _Invalid({msg}, {self.path_code(site)})")

    def call(self, site: _Site, ind: int, expr: str) -> None:
        """Call generated or helper code that raises _Invalid below this site's path."""
        if not site.path:
            self.emit(ind, expr)
            return
        self.emit(ind, "try:")
        self.emit(ind + 1, expr)
        self.emit(ind, "except _Invalid as e:")
        self.emit(ind + 1, f"raise _at(e, {', '.join(site.path)})")

    def literal(self, value: Any) -> str:
        """A number or string as a Python literal; anything else as a constant."""
        if isinstance(value, str):
            return repr(value)
        if isinstance(value, float) and math.isfinite(value):
            return repr(value)
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() < 3000:
            return repr(value)
        return self.const(value)

    # -- references -----------------------------------------------------------------------------

    def _keys(self, node: dict[str, Any]) -> dict[str, Any]:
        """The keywords this draft honours in ``node`` (draft 7: $ref hides its siblings)."""
        if self.draft == _DRAFT7:
            if "$ref" in node:
                return {"$ref": node["$ref"]}
            return {k: v for k, v in node.items() if k not in _ONLY_2020}
        return node

    def _join(self, base: str, ref: str) -> str:
        if ref.startswith("#"):
            return base.partition("#")[0] + ref
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", ref):
            return ref
        from urllib.parse import urljoin

        return urljoin(base, ref)

    def _index(self, node: Any, base: str, loc: str) -> None:
        """Record every $id, $anchor and the base URI in effect at each subschema."""
        if not isinstance(node, dict):
            return
        self.bases[id(node)] = base
        schema_uri = node.get("$schema")
        if schema_uri is not None and node is not self.root:
            if _SCHEMA_URIS.get(str(schema_uri).rstrip("#")) != self.draft:
                raise self.error(
                    loc, "$schema", f"{_compact(schema_uri)} is not this schema's draft"
                )
        ident = node.get("$id")
        if ident is not None and not (self.draft == _DRAFT7 and "$ref" in node):
            if not isinstance(ident, str):
                raise self.error(loc, "$id", f"must be a string, got {_compact(ident, 60)}")
            uri, _, fragment = self._join(base, ident).partition("#")
            if ident.startswith("#"):
                self.anchors[uri + "#" + fragment] = node
            else:
                self.resources[uri] = node
                base = uri
                if fragment:
                    self.anchors[uri + "#" + fragment] = node
        keys = self._keys(node) if self.draft == _DRAFT7 else node
        for anchor_kw in ("$anchor", "$dynamicAnchor"):
            anchor = keys.get(anchor_kw)
            if isinstance(anchor, str):
                self.anchors[base.partition("#")[0] + "#" + anchor] = node
        for kw, sub in node.items():
            if self.draft == _DRAFT7 and "$ref" in node and kw != "definitions":
                continue
            where = loc + "/" + _pointer_escape(kw)
            if kw in _ONE_SCHEMA:
                self._index(sub, base, where)
            elif kw in _SCHEMA_MAP and isinstance(sub, dict):
                for key, value in sub.items():
                    self._index(value, base, where + "/" + _pointer_escape(key))
            elif kw in _SCHEMA_LIST and isinstance(sub, list):
                for i, value in enumerate(sub):
                    self._index(value, base, f"{where}/{i}")

    def resolve(self, ref: str, base: str, loc: str) -> tuple[Any, str, str]:
        """The subschema ``ref`` names, the base URI in effect there, and its location."""
        uri = self._join(base, ref)
        doc, _, fragment = uri.partition("#")
        if doc not in self.resources:
            raise self.error(
                loc,
                "$ref",
                f"{_compact(ref)} refers outside this schema ({doc});"
                " only references within the document are supported",
            )
        node = self.resources[doc]
        if fragment.startswith("/") or not fragment:
            from urllib.parse import unquote

            where = "#"
            for token in fragment.split("/")[1:]:
                key = unquote(token).replace("~1", "/").replace("~0", "~")
                where += "/" + _pointer_escape(key)
                if isinstance(node, dict) and key in node:
                    node = node[key]
                elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                    node = node[int(key)]
                else:
                    raise self.error(loc, "$ref", f"{_compact(ref)} does not resolve")
            target_loc = where if doc == _ROOT_BASE else doc + where
        elif uri in self.anchors:
            node = self.anchors[uri]
            target_loc = uri
        else:
            raise self.error(loc, "$ref", f"{_compact(ref)} does not resolve")
        return node, self.bases.get(id(node), doc), target_loc

    def function(self, node: Any, base: str, loc: str) -> str:
        """The name of the generated function checking ``node`` (written once, later)."""
        key = (id(node), base)
        name = self.functions.get(key)
        if name is None:
            name = self.functions[key] = self.name("f")
            self.pending.append((name, node, base, loc))
        return name

    # -- schemas --------------------------------------------------------------------------------

    def schema(self, node: Any, site: _Site) -> None:
        """Write the checks of ``node`` for the value in ``site.v``."""
        if node is True:
            return
        if node is False:
            self.fail(site, site.ind, "'no value is allowed here'")
            return
        if not isinstance(node, dict):
            raise SchemaError(
                f"schema at {site.loc} must be an object or a boolean, got {_compact(node, 60)}"
            )
        if site.blocks > _MAX_BLOCKS or site.ind > _MAX_INDENT:
            fn = self.function(node, site.base, site.loc)
            self.call(site, site.ind, f"{fn}({site.v})")
            return
        ident = node.get("$id")
        if isinstance(ident, str) and not ident.startswith("#"):
            if not (self.draft == _DRAFT7 and "$ref" in node):
                site.base = self._join(site.base, ident).partition("#")[0]
        keys = self._keys(node)
        for kw in _REFUSED:
            if kw in keys and not (kw.startswith("unevaluated") and keys[kw] is True):
                raise self.error(site.loc, kw, "is not supported by this validator")
        # Consecutive table entries for the same JSON type share one guard (``if isinstance``).
        runs: list[tuple[str | None, list[_Generator]]] = []
        for names, guard, generate in _KEYWORDS:
            if any(k in keys for k in names):
                if runs and runs[-1][0] == guard:
                    runs[-1][1].append(generate)
                else:
                    runs.append((guard, [generate]))
        for guard, entries in runs:
            known = site.known
            if guard is not None and known is not None:
                if guard not in known and not (guard == "number" and "integer" in known):
                    continue  # the type check already refused every value these apply to
                if len(known) == 1 or (guard == "number" and known <= {"number", "integer"}):
                    guard = None
            ind = site.ind
            if guard is not None:
                self.emit(ind, f"if {_TYPE_TEST[guard].format(v=site.v)}:")
                inner = _Site(
                    site.v, site.path, ind + 1, site.blocks, site.loc, site.base, frozenset([guard])
                )
            else:
                inner = site
            mark = len(self.lines)
            for generate in entries:
                generate(self, inner, keys)
            if guard is not None and len(self.lines) == mark:
                self.emit(ind + 1, "pass")

    def sub(
        self,
        node: Any,
        site: _Site,
        v: str,
        seg: str | None,
        loc: str,
        indent: int = 0,
        blocks: int = 0,
    ) -> None:
        """Write the checks of a subschema at ``loc`` for the value in ``v``."""
        mark = len(self.lines)
        self.schema(node, site.child(v, seg, loc, indent, blocks))
        if indent and len(self.lines) == mark:
            self.emit(site.ind + indent, "pass")  # a block whose subschema checks nothing

    def write_function(self, name: str, node: Any, base: str, loc: str) -> None:
        self.emit(0, f"def {name}(x):")
        mark = len(self.lines)
        self.schema(node, _Site("x", (), 1, 0, loc, base, None))
        if len(self.lines) == mark:
            self.emit(1, "return")

    def build(self) -> Callable[[object], None]:
        self.emit(0, "def validate(x):")
        self.emit(1, "try:")
        mark = len(self.lines)
        self.schema(self.root, _Site("x", (), 2, 1, "#", _ROOT_BASE, None))
        if len(self.lines) == mark:
            self.emit(2, "return")
        self.emit(1, "except _Invalid as e:")
        self.emit(2, "raise _ValidationError(_format_path(e.path), e.msg) from None")
        self.emit(1, "except RecursionError:")
        self.emit(2, "raise _ValidationError('', 'nesting too deep') from None")
        while self.pending:
            self.write_function(*self.pending.pop())
        self.consts["_ValidationError"] = ValidationError
        self.consts["_format_path"] = _format_path
        namespace = self.consts
        exec(compile("\n".join(self.lines), "<agenttool schema>", "exec"), namespace)
        check: Callable[[object], None] = namespace["validate"]  # type: ignore[assignment]
        return check


# ---------------------------------------------------------------------------------------------
# Keyword generators: one function per keyword (or group of keywords that act together)
# ---------------------------------------------------------------------------------------------


def _need(c: _Compiler, site: _Site, kw: str, value: Any, ok: bool, what: str) -> None:
    if not ok:
        raise c.error(site.loc, kw, f"must be {what}, got {_compact(value, 60)}")


def _count_kw(c: _Compiler, site: _Site, keys: dict[str, Any], kw: str) -> int | None:
    value = keys.get(kw)
    if value is None:
        return None
    ok = (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer()
    )
    _need(c, site, kw, value, ok and value >= 0, "a non-negative integer")
    return min(int(value), sys.maxsize)  # no length is longer; keeps the source short


def _number_kw(c: _Compiler, site: _Site, keys: dict[str, Any], kw: str) -> Any:
    value = keys.get(kw)
    if value is not None:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        _need(c, site, kw, value, ok, "a number (draft 4's boolean form is not supported)")
    return value


def _gen_type(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """type, enum, const: enum and const first, except that a refused null is a type error."""
    v, ind = site.v, site.ind
    types: list[str] | None = None
    if "type" in keys:
        raw = keys["type"]
        types = [raw] if isinstance(raw, str) else raw
        _need(
            c,
            site,
            "type",
            raw,
            isinstance(types, list) and len(types) > 0,
            "a type name or a non-empty list of them",
        )
        assert types is not None
        for t in types:
            if t not in _TYPES:
                raise c.error(site.loc, "type", f"{_compact(t, 60)} is not a JSON Schema type")
        names = repr(_join_or(list(types)))
        if "null" not in types and ("enum" in keys or "const" in keys):
            c.emit(ind, f"if {v} is None:")
            c.fail(site, ind + 1, f"_m_type({v}, {names})")
    if "enum" in keys:
        members = keys["enum"]
        _need(c, site, "enum", members, isinstance(members, list), "an array")
        listed = repr("[" + ", ".join(_compact(m) for m in members) + "]")
        allowed = c.const(frozenset(_canon(m) for m in members))
        c.emit(ind, f"if not ({v} in {allowed} if type({v}) is str else _canon({v}) in {allowed}):")
        c.fail(site, ind + 1, f"_m_enum({v}, {listed})")
    if "const" in keys:
        value = keys["const"]
        expected = c.const(_canon(value))
        c.emit(ind, f"if ({v} if type({v}) is str else _canon({v})) != {expected}:")
        c.fail(site, ind + 1, f"_m_const({v}, {_compact(value)!r})")
    if types is not None:
        kinds = [t for t in types if not (t == "integer" and "number" in types)]
        test = " or ".join(_TYPE_TEST[t].format(v=v) for t in kinds)
        c.emit(ind, f"if not ({test}):")
        c.fail(site, ind + 1, f"_m_type({v}, {names})")
        site.known = frozenset(types)


def _gen_string(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """minLength, maxLength (in code points) and pattern (ECMA-262, searched)."""
    v, ind = site.v, site.ind
    for kw, op, least in (("minLength", "<", True), ("maxLength", ">", False)):
        n = _count_kw(c, site, keys, kw)
        if n is not None:
            c.emit(ind, f"if len({v}) {op} {n}:")
            c.fail(site, ind + 1, f"_m_len({v}, {least}, {n}, 'character')")
    if "pattern" in keys:
        source = keys["pattern"]
        _need(c, site, "pattern", source, isinstance(source, str), "a string")
        search = c.const(_regex(c, site, "pattern", source).search)
        msg = f"expected a string matching {json.dumps(source, ensure_ascii=False)}, got "
        c.emit(ind, f"if {search}({v}) is None:")
        c.fail(site, ind + 1, f"{msg!r} + _describe({v})")
        c.consts["_describe"] = _describe


def _gen_number(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf."""
    v, ind = site.v, site.ind
    for kw, fails, op in (
        ("minimum", "<", ">="),
        ("exclusiveMinimum", "<=", ">"),
        ("maximum", ">", "<="),
        ("exclusiveMaximum", ">=", "<"),
    ):
        limit = _number_kw(c, site, keys, kw)
        if limit is not None:
            c.emit(ind, f"if {v} {fails} {c.literal(limit)}:")
            c.fail(site, ind + 1, f"_m_min({v}, {op!r}, {_number_text(limit)!r})")
    m = _number_kw(c, site, keys, "multipleOf")
    if m is not None:
        _need(c, site, "multipleOf", m, m > 0, "a number greater than 0")
        if isinstance(m, float) and m.is_integer() and abs(m) < 2**63:
            m = int(m)
        msg = repr(f"expected a multiple of {_number_text(m)}, got ")
        if isinstance(m, int):
            c.emit(
                ind,
                f"if not ({v} % {m} == 0 if type({v}) is int else "
                f"_multiple_of({v}, {c.literal(m)})):",
            )
        else:
            c.emit(ind, f"if not _multiple_of({v}, {c.literal(m)}):")
        c.fail(site, ind + 1, f"{msg} + _describe({v})")
        c.consts["_describe"] = _describe


def _names(c: _Compiler, site: _Site, kw: str, value: Any) -> tuple[str, ...]:
    ok = isinstance(value, list) and all(isinstance(n, str) for n in value)
    _need(c, site, kw, value, ok, "an array of strings")
    return tuple(value)


def _has_all(c: _Compiler, v: str, names: tuple[str, ...]) -> str:
    """An expression true when the object in ``v`` has every one of ``names``."""
    if len(names) <= 4:
        return " and ".join(f"{n!r} in {v}" for n in names)
    return f"{v}.keys() >= {c.const(frozenset(names))}"


def _gen_required(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """required, reported in the list's order; then dependentRequired and array dependencies."""
    v, ind = site.v, site.ind
    if "required" in keys:
        names = _names(c, site, "required", keys["required"])
        if names:
            c.emit(ind, f"if not ({_has_all(c, v, names)}):")
            c.fail(site, ind + 1, f"_m_required({v}, {names!r})")
            site.present = frozenset(names)
    deps: list[tuple[str, Any]] = []
    for kw in ("dependentRequired", "dependencies"):
        table = keys.get(kw)
        if table is not None:
            _need(c, site, kw, table, isinstance(table, dict), "an object")
            deps.extend((kw, item) for item in table.items() if isinstance(item[1], list))
    for kw, (when, needed) in deps:
        names = _names(c, site, kw, needed)
        if names:
            c.emit(ind, f"if {when!r} in {v} and not ({_has_all(c, v, names)}):")
            c.fail(site, ind + 1, f"_m_dependent({v}, {names!r}, {when!r})")


def _gen_size(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """minProperties, maxProperties."""
    for kw, op, least in (("minProperties", "<", True), ("maxProperties", ">", False)):
        n = _count_kw(c, site, keys, kw)
        if n is not None:
            c.emit(site.ind, f"if len({site.v}) {op} {n}:")
            c.fail(site, site.ind + 1, f"_m_len({site.v}, {least}, {n}, 'property')")


def _is_true(node: Any) -> bool:
    return node is True or (isinstance(node, dict) and not node)


def _gen_properties(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """properties (sorted), patternProperties, additionalProperties, as one loop over keys."""
    v, ind, loc = site.v, site.ind, site.loc
    props = keys.get("properties", {})
    patterns = keys.get("patternProperties", {})
    _need(c, site, "properties", props, isinstance(props, dict), "an object")
    _need(c, site, "patternProperties", patterns, isinstance(patterns, dict), "an object")
    extra = keys.get("additionalProperties", True)
    regexes = [
        (c.const(_regex(c, site, "patternProperties", p).search), p, s) for p, s in patterns.items()
    ]
    closed = extra is False
    known_fn = ""
    if closed:
        known_fn = c.const(_known_keys(frozenset(props), tuple(c.consts[r] for r, _, _ in regexes)))
    checked = [(n, props[n]) for n in sorted(props) if not _is_true(props[n])]
    body_ind = ind
    if closed and checked:
        c.emit(ind, "try:")
        body_ind = ind + 1
    for name, node in checked:
        where = f"{loc}/properties/{_pointer_escape(name)}"
        there = name in site.present
        if not there:
            c.emit(body_ind, f"if {name!r} in {v}:")
        at = body_ind if there else body_ind + 1
        if node is False:
            c.fail(site, at, f"_m_unexpected({name!r})")
            continue
        item = c.name("v")
        c.emit(at, f"{item} = {v}[{name!r}]")
        c.sub(
            node, site, item, repr(name), where, indent=at - ind, blocks=1 if body_ind != ind else 0
        )
    if closed and checked:
        c.emit(ind, "except _Invalid as e:")
        c.emit(
            ind + 1,
            f"raise _extra_first(e, {v}, {known_fn}, {len(site.path)}, "
            f"{c.path_code(site)}) from None",
        )
    if closed:
        if regexes:
            c.emit(ind, f"if _first_extra({v}, {known_fn}) is not None:")
        else:
            c.emit(ind, f"if not {v}.keys() <= {c.const(frozenset(props))}:")
        c.fail(site, ind + 1, f"_m_unexpected(_first_extra({v}, {known_fn}))")
    loop_extra = not closed and not _is_true(extra)
    active = [(r, p, s) for r, p, s in regexes if not _is_true(s)]
    if not active and not loop_extra:
        return
    key, item = c.name("k"), c.name("v")
    c.emit(ind, f"for {key}, {item} in {v}.items():")
    seg = key
    if loop_extra and regexes:
        matched = c.name("m")
        c.emit(ind + 1, f"{matched} = False")
    for r, p, s in regexes:
        if _is_true(s) and not loop_extra:
            continue
        c.emit(ind + 1, f"if {r}({key}) is not None:")
        if loop_extra:
            c.emit(ind + 2, f"{matched} = True")
        where = f"{loc}/patternProperties/{_pointer_escape(p)}"
        if s is False:
            c.fail(site, ind + 2, f"_m_unexpected({key})")
        elif not _is_true(s):
            c.sub(s, site, item, seg, where, indent=2, blocks=1)
    if loop_extra:
        conds = [f"not {matched}"] if regexes else []
        if props:
            conds.append(f"{key} not in {c.const(frozenset(props))}")
        at = ind + 1
        if conds:
            c.emit(at, f"if {' and '.join(conds)}:")
            at += 1
        c.sub(extra, site, item, seg, f"{loc}/additionalProperties", indent=at - ind, blocks=1)


def _gen_property_names(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """propertyNames: each key checked as a string, the message naming the key."""
    node = keys["propertyNames"]
    if _is_true(node):
        return
    fn = c.function(node, site.base, site.loc + "/propertyNames")
    key = c.name("k")
    c.emit(site.ind, f"for {key} in {site.v}:")
    c.emit(site.ind + 1, "try:")
    c.emit(site.ind + 2, f"{fn}({key})")
    c.emit(site.ind + 1, "except _Invalid as e:")
    c.emit(site.ind + 2, f"raise _at(_m_name({key}, e), {', '.join(site.path)}) from None")


def _gen_dependent_schemas(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """dependentSchemas and draft 7's schema-valued dependencies: applied when the key is there."""
    for kw in ("dependentSchemas", "dependencies"):
        table = keys.get(kw)
        if table is None:
            continue
        _need(c, site, kw, table, isinstance(table, dict), "an object")
        for when, node in table.items():
            if isinstance(node, list) or _is_true(node):
                continue
            c.emit(site.ind, f"if {when!r} in {site.v}:")
            where = f"{site.loc}/{kw}/{_pointer_escape(when)}"
            c.sub(node, site, site.v, None, where, indent=1)


def _gen_array_size(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """minItems, maxItems, uniqueItems."""
    v, ind = site.v, site.ind
    for kw, op, least in (("minItems", "<", True), ("maxItems", ">", False)):
        n = _count_kw(c, site, keys, kw)
        if n is not None:
            c.emit(ind, f"if len({v}) {op} {n}:")
            c.fail(site, ind + 1, f"_m_len({v}, {least}, {n}, 'item')")
    unique = keys.get("uniqueItems")
    if unique is not None:
        _need(c, site, "uniqueItems", unique, isinstance(unique, bool), "a boolean")
        if unique:
            c.emit(ind, f"if len({v}) > 1 and _dup({v}) is not None:")
            c.fail(site, ind + 1, f"_m_dup({v})")


def _gen_items(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """prefixItems (or draft 7's array items), then items (or additionalItems) for the rest."""
    v, ind, loc = site.v, site.ind, site.loc
    items = keys.get("items", True)
    prefix_kw = "prefixItems"
    if isinstance(items, list):
        if "prefixItems" in keys:
            raise c.error(loc, "items", "must be a schema when prefixItems is given")
        prefix: Any = items
        prefix_kw = "items"
        rest, rest_kw = keys.get("additionalItems", True), "additionalItems"
    else:
        prefix = keys.get("prefixItems", [])
        rest, rest_kw = items, "items"
    _need(c, site, prefix_kw, prefix, isinstance(prefix, list), "an array of schemas")
    for i, node in enumerate(prefix):
        if _is_true(node):
            continue
        c.emit(ind, f"if len({v}) > {i}:")
        item = c.name("v")
        c.emit(ind + 1, f"{item} = {v}[{i}]")
        c.sub(node, site, item, str(i), f"{loc}/{prefix_kw}/{i}", indent=1)
    n = len(prefix)
    if _is_true(rest):
        return
    if rest is False:
        c.emit(ind, f"if len({v}) > {n}:")
        c.fail(site, ind + 1, f"_m_len({v}, False, {n}, 'item')")
        return
    item = c.name("v")
    c.emit(ind, f"for {item} in {v}[{n}:]:" if n else f"for {item} in {v}:")
    # The index is found only when an error is raised: the first item identical to the failing
    # one fails the same checks, so it is the failing index.
    c.sub(rest, site, item, f"_index({v}, {item}, {n})", f"{loc}/{rest_kw}", indent=1, blocks=1)


def _gen_contains(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """contains with minContains (default 1) and maxContains."""
    if "contains" not in keys:
        return
    node = keys["contains"]
    least = _count_kw(c, site, keys, "minContains")
    most = _count_kw(c, site, keys, "maxContains")
    least = 1 if least is None else least
    if least == 0 and most is None:
        return
    v, ind = site.v, site.ind
    fn = c.function(node, site.base, site.loc + "/contains")
    shown = _compact(node, 80)
    count = c.name("n")
    c.emit(ind, f"{count} = _count({v}, {fn}, {0 if most is not None else least})")
    what = f'matching the "contains" schema {shown}'
    c.emit(ind, f"if {count} < {least}:")
    c.fail(
        site,
        ind + 1,
        repr(f"expected at least {_plural(least, 'item')} {what}, got ") + f" + str({count})",
    )
    if most is not None:
        c.emit(ind, f"if {count} > {most}:")
        c.fail(
            site,
            ind + 1,
            repr(f"expected at most {_plural(most, 'item')} {what}, got ") + f" + str({count})",
        )


def _schema_list(c: _Compiler, site: _Site, kw: str, keys: dict[str, Any]) -> list[Any]:
    value = keys[kw]
    _need(
        c,
        site,
        kw,
        value,
        isinstance(value, list) and len(value) > 0,
        "a non-empty array of schemas",
    )
    return list(value)


def _gen_ref(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """$ref: a call to the target's function (which is how recursion works)."""
    ref = keys["$ref"]
    _need(c, site, "$ref", ref, isinstance(ref, str), "a string")
    node, base, loc = c.resolve(ref, site.base, site.loc)
    if _is_true(node) and not isinstance(node, dict):
        return
    fn = c.function(node, base, loc)
    c.call(site, site.ind, f"{fn}({site.v})")


def _gen_all_of(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """allOf: every subschema written in place."""
    for i, node in enumerate(_schema_list(c, site, "allOf", keys)):
        c.sub(node, site, site.v, None, f"{site.loc}/allOf/{i}")


def _gen_any_of(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """anyOf and oneOf: each branch a function; see _shapes_error for the message."""
    for kw, helper in (("anyOf", "_any_of"), ("oneOf", "_one_of")):
        if kw not in keys:
            continue
        nodes = _schema_list(c, site, kw, keys)
        where = [f"{site.loc}/{kw}/{i}" for i in range(len(nodes))]
        fns = [c.function(n, site.base, w) for n, w in zip(nodes, where)]
        infos = c.const(
            tuple(
                (_accepts(c, n, site.base, 0), _shape(c, n, site.base, 0), _plain(n)) for n in nodes
            )
        )
        c.call(site, site.ind, f"{helper}({site.v}, ({', '.join(fns)},), {infos})")


def _gen_not(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """not: the value must fail the subschema."""
    node = keys["not"]
    fn = c.function(node, site.base, site.loc + "/not")
    c.call(site, site.ind, f"_not({site.v}, {fn}, {_compact(node, 80)!r})")


def _gen_if(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """if/then/else: then's or else's errors are reported as they are."""
    then, orelse = keys.get("then", True), keys.get("else", True)
    if "if" not in keys or (_is_true(then) and _is_true(orelse)):
        return
    fn = c.function(keys["if"], site.base, site.loc + "/if")
    ind = site.ind
    c.emit(ind, "try:")
    c.emit(ind + 1, f"{fn}({site.v})")
    c.emit(ind, "except _Invalid:")
    mark = len(c.lines)
    c.sub(orelse, site, site.v, None, site.loc + "/else", indent=1, blocks=2)
    if len(c.lines) == mark:
        c.emit(ind + 1, "pass")
    if not _is_true(then):
        c.emit(ind, "else:")
        c.sub(then, site, site.v, None, site.loc + "/then", indent=1, blocks=2)


# The table: keywords acting together -> the JSON type they apply to -> their generator, in
# the order their checks run (so the order in which their messages win).
_KEYWORDS: list[tuple[tuple[str, ...], str | None, _Generator]] = [
    (("type", "enum", "const"), None, _gen_type),
    (("minLength", "maxLength", "pattern"), "string", _gen_string),
    (("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"), "number",
     _gen_number),
    (("required", "dependentRequired", "dependencies"), "object", _gen_required),
    (("minProperties", "maxProperties"), "object", _gen_size),
    (("properties", "patternProperties", "additionalProperties"), "object", _gen_properties),
    (("propertyNames",), "object", _gen_property_names),
    (("dependentSchemas", "dependencies"), "object", _gen_dependent_schemas),
    (("minItems", "maxItems", "uniqueItems"), "array", _gen_array_size),
    (("prefixItems", "items", "additionalItems"), "array", _gen_items),
    (("contains",), "array", _gen_contains),
    (("$ref",), None, _gen_ref),
    (("allOf",), None, _gen_all_of),
    (("anyOf", "oneOf"), None, _gen_any_of),
    (("not",), None, _gen_not),
    (("if",), None, _gen_if),
]  # fmt: skip
# Where subschemas sit (for $id and $anchor indexing).
_ONE_SCHEMA = frozenset(
    ["additionalProperties", "propertyNames", "items", "additionalItems", "contains", "not",
     "if", "then", "else", "unevaluatedItems", "unevaluatedProperties"]
)  # fmt: skip
_SCHEMA_MAP = frozenset(
    ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"]
)
_SCHEMA_LIST = frozenset(["allOf", "anyOf", "oneOf", "prefixItems", "items"])


# ---------------------------------------------------------------------------------------------
# What a branch accepts, for anyOf/oneOf messages
# ---------------------------------------------------------------------------------------------


def _accepts(c: _Compiler, node: Any, base: str, depth: int) -> frozenset[str]:
    """The JSON types a subschema can accept at all (``number`` standing for integers too)."""
    if node is False:
        return frozenset()
    if not isinstance(node, dict) or depth > 4:
        return _ALL_TYPES
    keys = c._keys(node)
    result = _ALL_TYPES
    raw = keys.get("type")
    if raw is not None:
        listed = [raw] if isinstance(raw, str) else list(raw)
        result &= frozenset("number" if t == "integer" else t for t in listed)
    if isinstance(keys.get("enum"), list):
        result &= frozenset(_json_type(m) for m in keys["enum"])
    if "const" in keys:
        result &= frozenset([_json_type(keys["const"])])
    if isinstance(keys.get("$ref"), str):
        target, target_base, _ = c.resolve(keys["$ref"], base, "#")
        result &= _accepts(c, target, target_base, depth + 1)
    if isinstance(keys.get("allOf"), list):
        for sub in keys["allOf"]:
            result &= _accepts(c, sub, base, depth + 1)
    for kw in ("anyOf", "oneOf"):
        if isinstance(keys.get(kw), list):
            union: frozenset[str] = frozenset()
            for sub in keys[kw]:
                union |= _accepts(c, sub, base, depth + 1)
            result &= union
    return result


_ANNOTATIONS = frozenset(["title", "description", "default", "examples", "$comment", "format"])


def _plain(node: Any) -> bool:
    """Whether a branch is a bare ``type`` (with annotations), named by its type alone."""
    return (
        isinstance(node, dict)
        and isinstance(node.get("type"), str)
        and all(k == "type" or k in _ANNOTATIONS for k in node)
    )


def _shape(c: _Compiler, node: Any, base: str, depth: int) -> str:
    """A few words for what a subschema accepts: ``string``, ``object with "path"``."""
    if node is True or node == {}:
        return "any value"
    if node is False:
        return "no value"
    if not isinstance(node, dict):
        return _compact(node, 60)
    keys = c._keys(node)
    if "const" in keys:
        return _compact(keys["const"], 60)
    if isinstance(keys.get("enum"), list):
        return "one of [" + ", ".join(_compact(m) for m in keys["enum"]) + "]"
    raw = keys.get("type")
    if raw is not None:
        listed = [raw] if isinstance(raw, str) else list(raw)
        text = _join_or([str(t) for t in listed])
        required = keys.get("required")
        if listed == ["object"] and isinstance(required, list) and required:
            text += " with " + ", ".join(_compact(r) for r in required[:3])
            text += ", ..." if len(required) > 3 else ""
        items = keys.get("items")
        if listed == ["array"] and isinstance(items, dict) and "type" in items and depth < 2:
            text += " of " + _shape(c, items, base, depth + 1)
        return text
    if isinstance(keys.get("$ref"), str) and depth < 3:
        target, target_base, _ = c.resolve(keys["$ref"], base, "#")
        return _shape(c, target, target_base, depth + 1)
    return _compact(node, 60)


# ---------------------------------------------------------------------------------------------
# ECMA-262 patterns in Python's re
# ---------------------------------------------------------------------------------------------

_ECMA_SPACE = r"\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_CLASS_ESCAPES = {"d": "0-9", "w": "a-zA-Z0-9_", "s": _ECMA_SPACE}
_ESCAPES = {
    "d": "[0-9]",
    "D": "[^0-9]",
    "w": "[a-zA-Z0-9_]",
    "W": "[^a-zA-Z0-9_]",
    "s": "[" + _ECMA_SPACE + "]",
    "S": "[^" + _ECMA_SPACE + "]",
    "b": r"(?a:\b)",
    "B": r"(?a:\B)",
}
_PROPERTIES = {  # \p{...} and \P{...} that Python's re can express
    "L": (r"[^\W\d_]", r"[\W\d_]"),
    "Letter": (r"[^\W\d_]", r"[\W\d_]"),
    "Nd": (r"\d", r"\D"),
    "digit": (r"\d", r"\D"),
}


def _translate(source: str) -> str:
    """ECMA-262 regex syntax to Python's: ASCII \\d \\w \\b, ``$`` at the very end, \\p{L}."""
    out: list[str] = []
    i, n, in_class = 0, len(source), False
    while i < n:
        ch = source[i]
        if ch == "\\" and i + 1 < n:
            nxt = source[i + 1]
            if nxt in "pP" and source.startswith("{", i + 2):
                end = source.find("}", i)
                name = source[i + 3 : end]
                if end < 0 or in_class or name not in _PROPERTIES:
                    raise ValueError(f"unsupported Unicode property escape {source[i : end + 1]}")
                out.append(_PROPERTIES[name][0 if nxt == "p" else 1])
                i = end + 1
                continue
            if nxt == "c" and source[i + 2 : i + 3].isalpha() and source[i + 2].isascii():
                out.append(f"\\x{ord(source[i + 2]) % 32:02x}")  # \cX: a control character
                i += 3
                continue
            if in_class and nxt in _CLASS_ESCAPES:
                out.append(_CLASS_ESCAPES[nxt])
            elif not in_class and nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
            else:
                out.append(source[i : i + 2])
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
            out.append("\\[" if ch == "[" else ch)
            i += 1
            continue
        if source.startswith("[]", i):  # ECMA: an empty class, never matches
            out.append("(?!)")
            i += 2
        elif source.startswith("[^]", i):  # ECMA: any character at all
            out.append(r"[\s\S]")
            i += 3
        elif ch == "[":
            in_class = True
            caret = source.startswith("[^", i)
            out.append("[^" if caret else "[")
            i += 2 if caret else 1
        elif ch == "$":
            out.append(r"\Z")
            i += 1
        elif source.startswith("(?<", i) and source[i + 3 : i + 4] not in ("=", "!"):
            out.append("(?P<")
            i += 3
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _regex(c: _Compiler, site: _Site, kw: str, source: Any) -> re.Pattern[str]:
    if not isinstance(source, str):
        raise c.error(site.loc, kw, f"patterns must be strings, got {_compact(source, 60)}")
    try:
        return re.compile(_translate(source))
    except (re.error, ValueError) as err:
        raise c.error(site.loc, kw, f"{_compact(source, 60)} is not a valid regex: {err}") from None


# ---------------------------------------------------------------------------------------------
# Public face
# ---------------------------------------------------------------------------------------------


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


class Validator:
    """A JSON Schema compiled once.  ``validate(value)`` and ``validate_json(text)`` raise
    ``ValidationError(path, msg)``; ``validate_json`` returns the parsed value.

    ``validate`` and ``validate_json`` are the generated functions themselves (instance
    attributes, not methods): a bound method would add a call to every validation.
    """

    __slots__ = ("schema", "validate", "validate_json")

    schema: dict[str, Any] | bool
    validate: Callable[[object], None]
    validate_json: Callable[[str | bytes], Any]

    def __init__(self, schema: dict[str, Any] | bool, check: Callable[[object], None]) -> None:
        self.schema = schema
        self.validate = check
        self.validate_json = _json_validator(check)

    def __repr__(self) -> str:
        return f"Validator({_compact(self.schema, 80)})"


def _json_validator(check: Callable[[object], None]) -> Callable[[str | bytes], Any]:
    decode = _DECODER.decode

    def validate_json(text: str | bytes) -> Any:
        """Parse ``text`` (refusing NaN and Infinity), validate it and return the value."""
        try:
            if not isinstance(text, str):
                if not isinstance(text, (bytes, bytearray)):
                    raise TypeError(
                        f"validate_json() takes str or bytes, not {type(text).__name__}"
                    )
                text = text.decode(json.detect_encoding(text), "surrogatepass")
            value = decode(text)
        except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, NaN and Infinity
            raise ValidationError("", f"not valid JSON: {err}") from None
        except RecursionError:
            raise ValidationError("", "nesting too deep") from None
        check(value)
        return value

    return validate_json


_CACHE: dict[str, Callable[[object], None]] = {}
_CACHE_SIZE = 256


def validator(schema: dict[str, Any] | bool) -> Validator:
    """Compile ``schema`` once into a ``Validator``; raise ``SchemaError`` naming the keyword
    when it cannot be honoured.  Compiled checkers are shared between equal schemas."""
    try:
        key: str | None = json.dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        key = None
    check = _CACHE.get(key) if key is not None else None
    if check is None:
        check = _compile(schema)
        if key is not None:
            if len(_CACHE) >= _CACHE_SIZE:
                _CACHE.clear()
            _CACHE[key] = check
    return Validator(schema, check)


def _compile(schema: Any) -> Callable[[object], None]:
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(f"a schema must be an object or a boolean, got {_compact(schema, 60)}")
    draft = _DRAFT2020
    if isinstance(schema, dict) and "$schema" in schema:
        uri = schema["$schema"]
        found = _SCHEMA_URIS.get(uri.rstrip("#")) if isinstance(uri, str) else None
        if found is None:
            raise SchemaError(
                f'schema keyword "$schema" at #: {_compact(uri, 80)} is not supported'
                " (draft 2020-12 and draft 7 are)"
            )
        draft = found
    try:
        return _Compiler(schema, draft).build()
    except RecursionError:
        raise SchemaError("schema nested too deeply to compile") from None
