"""Schema generation from type hints, and decoding of validated arguments into Python values.

One compiler walks a type once, at registration, and yields both the JSON Schema and a tree of
decoding closures, so a call only runs the closures. ``schema_of`` and ``decode`` are thin faces
over it; the tool layer calls ``_arg_spec`` once per tool.
"""

from __future__ import annotations

# __all__ += ["schema_of", "decode"]
import collections.abc
import dataclasses
import enum
import functools
import inspect
import json
import re
import sys
import types
import typing
from typing import Any, Callable, NoReturn, Optional, Union

from agenttool import Meta as Meta
from agenttool import ValidationError as ValidationError

# ---------------------------------------------------------------------------------------------
# Schema generation and decoding
#
# Rules stated once, here:
# - Member order of every generated schema object is _KEY_ORDER, applied in one place
#   (_ordered): the seed's keywords first, then the others, "$defs" last. Properties keep
#   declaration order, "required" field order, "enum" declaration order.
# - Nullability: a type that admits None is written nullable ("type": [T, "null"] for a scalar,
#   an enum gets null appended last, anything else becomes anyOf [T, {"type": "null"}], Any stays
#   {}). Outside strict, a field WITH a default is simply optional and its null is not written
#   (the corpus). Under strict every field is required, a field with a default whose type does
#   not admit None is made nullable and null means "use the default" (the decoder leaves the
#   argument out); where the type admits None, null is None. A TypedDict key that is
#   NotRequired has no default: under strict it stays required and not nullable.
# - Unions: primitive branches merge into one "type" list, others become anyOf. The decoder
#   picks the first branch, in declaration order, that fits structurally (JSON type; for
#   objects the required keys present and, for closed targets, no unknown key; Literal/Enum
#   membership) and decodes; if that branch's decoding fails deeper down, the next fitting
#   branch is tried, and the first branch's error is reported when none succeeds.
# - Recursion: a recursive class is written once under "$defs" (named by its class name, a
#   number appended on a clash) and referred to with "$ref"; a recursive ROOT is inlined and
#   refers to itself with {"$ref": "#"}, so a tool's root stays {"type": "object", ...}.
#   Non-recursive nested types are inlined.
# - Decimal is a string matching a decimal pattern: exact (JSON numbers become floats in
#   Python and lose digits), valid under strict, and what the result encoder writes.
# - bytes is a plain string (base64 content, standard or URL-safe alphabet, padding optional).
# - A bare list/tuple/set/frozenset/dict means items of Any outside strict, and is refused
#   under strict (an array needs items, an object must be closed).
# - Under strict, a field whose null means its default says so in its description
#   ("Default: 3.") when the default is plain JSON.
# - Decoding refuses an unknown argument name with 'unexpected property "x"' at the object's
#   path wherever the target cannot hold it (a function without **kwargs, a dataclass, a
#   NamedTuple, a TypedDict); **kwargs receives it (decoded by its annotation); dict[str, T]
#   and Any hold anything. A ValueError from a class's constructor (__post_init__) becomes a
#   ValidationError at the object's path. Dates and times are ISO 8601, with a Z suffix and
#   any number of fraction digits accepted on every version; a naive value stays naive.
# - Strict keeps OpenAI's documented subset: pattern, format (date-time, time, date, duration,
#   email, hostname, ipv4, ipv6, uuid), minimum/maximum and exclusive forms, multipleOf,
#   minItems/maxItems. minLength, maxLength, uniqueItems, examples and other formats move into
#   the description, and the decoder enforces the moved constraints. Fixed-length tuples
#   (prefixItems) and dict are refused. Size limits: 5,000 properties, 10 levels of object
#   nesting, 1,000 enum values, 120,000 characters of property names, definition names and
#   enum values.
# ---------------------------------------------------------------------------------------------


class _KeyOrder(dict):  # type: ignore[type-arg]
    """Keyword -> rank; a keyword outside the table ranks after all of it."""

    def __missing__(self, key: str) -> int:
        return len(self)


_KEY_ORDER = _KeyOrder(
    (k, i)
    for i, k in enumerate(
        (
            "type",
            "description",
            "format",
            "enum",
            "properties",
            "required",
            "items",
            "additionalProperties",
            "anyOf",
            "$ref",
            "const",
            "prefixItems",
            "minimum",
            "exclusiveMinimum",
            "maximum",
            "exclusiveMaximum",
            "multipleOf",
            "minLength",
            "maxLength",
            "pattern",
            "minItems",
            "maxItems",
            "uniqueItems",
            "examples",
            "$defs",
        )
    )
)

# Meta field -> JSON Schema keyword, in Meta's order.
_META_KEYWORDS: tuple[tuple[str, str], ...] = (
    ("minimum", "minimum"),
    ("maximum", "maximum"),
    ("exclusive_minimum", "exclusiveMinimum"),
    ("exclusive_maximum", "exclusiveMaximum"),
    ("multiple_of", "multipleOf"),
    ("min_length", "minLength"),
    ("max_length", "maxLength"),
    ("pattern", "pattern"),
    ("min_items", "minItems"),
    ("max_items", "maxItems"),
    ("format", "format"),
    ("examples", "examples"),
)

_STRICT_FORMATS = frozenset(
    ("date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid")
)
_STRICT_MAX_PROPERTIES = 5000
_STRICT_MAX_DEPTH = 10
_STRICT_MAX_ENUM_VALUES = 1000
_STRICT_MAX_CHARS = 120_000

_SCALAR_TYPES = frozenset(("string", "integer", "number", "boolean", "null"))
_DECIMAL_PATTERN = r"^-?[0-9]+(\.[0-9]+)?$"
_MISSING: Any = dataclasses.MISSING
_NONE_TYPE = type(None)
_UNION_TYPES: tuple[Any, ...] = (Union, getattr(types, "UnionType", Union))
_WRAPPER_NAMES = frozenset(("Required", "NotRequired", "ReadOnly", "Final"))


class _DecodeFail(Exception):
    """A decoding failure on its way up; containers append their path segment."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg)
        self.msg = msg
        self.rpath: list[str | int] = []

    def error(self) -> ValidationError:
        out = ""
        for seg in reversed(self.rpath):
            if isinstance(seg, int):
                out += f"[{seg}]"
            else:
                out = f"{out}.{seg}" if out else seg
        return ValidationError(out, self.msg)


def _describe_json(v: Any) -> str:
    """A JSON value as a message shows it: strings quoted, containers by kind."""
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    if isinstance(v, str):
        s = json.dumps(v if len(v) <= 60 else v[:57] + "...", ensure_ascii=False)
        return s
    if isinstance(v, dict):
        return "object"
    if isinstance(v, (list, tuple)):
        return "array"
    return type(v).__name__


def _join_desc(desc: str | None, extra: str) -> str:
    if not desc:
        return extra
    if desc[-1] in ".!?:;":
        return f"{desc} {extra}"
    return f"{desc}. {extra}"


class _TypeNode:
    """One compiled type: its schema, its decoder, and a shallow fit test for unions."""

    __slots__ = ("schema", "decode", "fits", "admits_none", "ident")

    def __init__(
        self,
        schema: dict[str, Any],
        decode: Callable[[Any], Any],
        fits: Callable[[Any], bool],
        admits_none: bool = False,
        ident: bool = False,
    ) -> None:
        self.schema = schema
        self.decode = decode
        self.fits = fits
        self.admits_none = admits_none
        self.ident = ident


class _ClassState:
    """A class being compiled; filled in when done, so recursive references can point at it."""

    __slots__ = ("ref", "decode", "fits")

    def __init__(self) -> None:
        self.ref = ""
        self.decode: Callable[[Any], Any] = _identity
        self.fits: Callable[[Any], bool] = _is_dict


class _Field:
    """One property of an object target before compilation."""

    __slots__ = ("name", "tp", "has_default", "default", "required", "doc")

    def __init__(
        self,
        name: str,
        tp: Any,
        has_default: bool,
        default: Any,
        required: bool | None = None,
        doc: str | None = None,
    ) -> None:
        self.name = name
        self.tp = tp
        self.has_default = has_default
        self.default = default
        self.required = required  # a TypedDict key's totality; None elsewhere
        self.doc = doc


class _ArgSpec:
    """A function's compiled arguments: the schema and the decoder, built once at registration.

    ``decode(args)`` takes the validated arguments object and returns the keyword arguments to
    call the function with; it raises ``ValidationError`` naming the path.
    """

    __slots__ = ("schema", "decode")

    def __init__(
        self, schema: dict[str, Any], decode: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> None:
        self.schema = schema
        self.decode = decode


# ----- leaf decoders and fit tests -----------------------------------------------------------


def _identity(v: Any) -> Any:
    return v


def _always(v: Any) -> bool:
    return True


def _is_dict(v: Any) -> bool:
    return type(v) is dict


def _is_str(v: Any) -> bool:
    return type(v) is str


def _is_bool(v: Any) -> bool:
    return v is True or v is False


def _is_int(v: Any) -> bool:
    t = type(v)
    return t is int or (t is float and v.is_integer())


def _is_number(v: Any) -> bool:
    t = type(v)
    return t is int or t is float


def _is_array(v: Any) -> bool:
    t = type(v)
    return t is list or t is tuple


def _is_none(v: Any) -> bool:
    return v is None


def _dec_str(v: Any) -> Any:
    if type(v) is str:
        return v
    raise _DecodeFail(f"expected string, got {_describe_json(v)}")


def _dec_bool(v: Any) -> Any:
    if v is True or v is False:
        return v
    raise _DecodeFail(f"expected boolean, got {_describe_json(v)}")


def _dec_int(v: Any) -> Any:
    t = type(v)
    if t is int:
        return v
    if t is float and v.is_integer():
        return int(v)
    raise _DecodeFail(f"expected integer, got {_describe_json(v)}")


def _dec_float(v: Any) -> Any:
    t = type(v)
    if t is float:
        return v
    if t is int:
        return float(v)
    raise _DecodeFail(f"expected number, got {_describe_json(v)}")


def _dec_none(v: Any) -> Any:
    if v is None:
        return None
    raise _DecodeFail(f"expected null, got {_describe_json(v)}")


def _json_key(v: Any) -> tuple[str, Any]:
    """A hashable key under which JSON-equal values meet (1 == 1.0, but true is not 1)."""
    if v is True or v is False:
        return ("b", v)
    if isinstance(v, (int, float)):
        return ("n", v)
    return ("s" if isinstance(v, str) else "z", v)


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if v is True or v is False:
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    return ""


def _parse_iso(kind: str, cls: Any) -> Callable[[Any], Any]:
    """An ISO 8601 parser for datetime/date/time accepting a Z suffix and any fraction digits
    on every Python version (3.9 and 3.10's fromisoformat accept neither)."""
    frac = re.compile(r"\.([0-9]+)")
    word = {"datetime": "date-time", "date": "date", "time": "time"}[kind]

    def norm(s: str) -> str:
        if s[-1:] in ("Z", "z"):
            s = s[:-1] + "+00:00"
        if kind != "date":
            s = frac.sub(lambda m: "." + (m.group(1) + "000000")[:6], s, count=1)
            m = re.search(r"([+-])([0-9]{2})([0-9]{2})$", s)
            if m and (kind == "time" or len(s) > 10):
                s = s[: m.start()] + f"{m.group(1)}{m.group(2)}:{m.group(3)}"
        if kind == "datetime" and len(s) > 10 and s[10] in ("t", " "):
            s = s[:10] + "T" + s[11:]
        return s

    fromiso = cls.fromisoformat

    def dec(v: Any) -> Any:
        if type(v) is not str:
            raise _DecodeFail(f"expected string, got {_describe_json(v)}")
        try:
            return fromiso(norm(v))
        except ValueError:
            raise _DecodeFail(f"expected an ISO 8601 {word}, got {_describe_json(v)}") from None

    return dec


def _dec_base64(v: Any) -> Any:
    if type(v) is not str:
        raise _DecodeFail(f"expected string, got {_describe_json(v)}")
    import base64
    import binascii

    s = v.replace("-", "+").replace("_", "/").rstrip("=")
    if len(s) % 4 == 1:
        raise _DecodeFail(f"expected base64 data, got {_describe_json(v)}")
    try:
        return base64.b64decode(s + "=" * (-len(s) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise _DecodeFail(f"expected base64 data, got {_describe_json(v)}") from None


def _converter(cls: Any, word: str) -> Callable[[Any], Any]:
    """A decoder for a string-shaped type built by calling ``cls(str)``."""

    def dec(v: Any) -> Any:
        if type(v) is not str:
            raise _DecodeFail(f"expected string, got {_describe_json(v)}")
        try:
            return cls(v)
        except (ValueError, TypeError, ArithmeticError):
            raise _DecodeFail(f"expected {word}, got {_describe_json(v)}") from None

    return dec


def _dec_decimal_from(cls: Any) -> Callable[[Any], Any]:
    to_str = _converter(cls, "a decimal number")

    def dec(v: Any) -> Any:
        t = type(v)
        if t is int:
            return cls(v)
        if t is float:
            return cls(repr(v))
        return to_str(v)

    return dec


# ----- type inspection -----------------------------------------------------------------------


def _tname(tp: Any) -> str:
    if isinstance(tp, type) and typing.get_origin(tp) is None:
        return tp.__qualname__
    return repr(tp).replace("typing_extensions.", "").replace("typing.", "")


def _special_name(origin: Any) -> str:
    name = getattr(origin, "_name", None)
    if isinstance(name, str):
        return name
    return repr(origin).rsplit(".", 1)[-1]


def _unwrap_markers(tp: Any) -> tuple[Any, bool | None]:
    """Strips Required/NotRequired/ReadOnly/Final (typing or typing_extensions, recognised by
    name), also under Annotated; returns the type and True/False for Required/NotRequired."""
    req: bool | None = None
    while True:
        origin = typing.get_origin(tp)
        if origin is None:
            return tp, req
        if origin is typing.Annotated:
            args = typing.get_args(tp)
            inner, inner_req = _unwrap_markers(args[0])
            if inner is args[0]:
                return tp, req
            return _annotated(inner, args[1:]), inner_req if req is None else req
        name = _special_name(origin)
        if name not in _WRAPPER_NAMES:
            return tp, req
        if name == "Required":
            req = True if req is None else req
        elif name == "NotRequired":
            req = False if req is None else req
        tp = typing.get_args(tp)[0]


def _admits_none(tp: Any) -> bool:
    """Whether the type itself accepts None (Optional, a Union with None, Any, Literal[None])."""
    if type(tp) is type:
        return tp is _NONE_TYPE or tp is object
    if tp is None or tp is _NONE_TYPE or tp is Any or tp is object:
        return True
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _admits_none(typing.get_args(tp)[0])
    if origin in _UNION_TYPES:
        return any(_admits_none(a) for a in typing.get_args(tp))
    if origin is typing.Literal:
        return any(a is None for a in typing.get_args(tp))
    return False


def _strip_none(tp: Any) -> Any:
    """The type without its None (for a non-strict field with a default)."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        args = typing.get_args(tp)
        return _annotated(_strip_none(args[0]), args[1:])
    if origin in _UNION_TYPES:
        rest = [a for a in typing.get_args(tp) if a is not _NONE_TYPE and a is not None]
        rest = [_strip_none(a) for a in rest]
        return rest[0] if len(rest) == 1 else Union[tuple(rest)]
    if origin is typing.Literal:
        vals = [a for a in typing.get_args(tp) if a is not None]
        return typing.Literal[tuple(vals)] if vals else tp
    return tp


def _annotated(inner: Any, metadata: tuple[Any, ...]) -> Any:
    params = (inner, *metadata)
    return typing.Annotated[params]


def _has_own_description(tp: Any) -> bool:
    """Whether Annotated metadata on the type itself describes it."""
    while typing.get_origin(tp) is typing.Annotated:
        args = typing.get_args(tp)
        for meta in args[1:]:
            if isinstance(meta, str) or (isinstance(meta, Meta) and meta.description is not None):
                return True
        tp = args[0]
    return False


def _stdlib(mod: str, name: str) -> Any:
    m = sys.modules.get(mod)
    return getattr(m, name, None) if m is not None else None


def _is_typeddict(tp: Any) -> bool:
    return (
        isinstance(tp, type)
        and issubclass(tp, dict)
        and hasattr(tp, "__required_keys__")
        and hasattr(tp, "__annotations__")
    )


def _is_namedtuple(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields")


def _class_hints(cls: Any, kind: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except NameError:
        # A self-referencing class defined in a function: let it find its own name.
        try:
            local = {**vars(cls), cls.__name__: cls}
            return typing.get_type_hints(cls, localns=local, include_extras=True)
        except Exception as exc:
            _hint_failure(cls, kind, exc)
    except Exception as exc:
        _hint_failure(cls, kind, exc)


def _hint_failure(obj: Any, kind: str, exc: Exception) -> NoReturn:
    """Names the field of a class whose annotation cannot be evaluated."""
    anns: dict[str, Any] = {}
    for base in reversed(obj.__mro__):
        anns.update(base.__dict__.get("__annotations__", {}))
    globalns = vars(sys.modules.get(obj.__module__, types.ModuleType("x")))
    localns: dict[str, Any] = {**vars(obj), obj.__name__: obj}
    for name, ann in anns.items():
        if not isinstance(ann, str):
            continue
        try:
            eval(ann, globalns, localns)
        except Exception as inner:
            hint = ""
            if "|" in ann and sys.version_info < (3, 10):
                hint = (
                    "; X | Y in an annotation needs Python 3.10: write Optional[X] or Union[X, Y]"
                )
            what = "the return type" if name == "return" else f'{kind} "{name}"'
            raise TypeError(
                f"{what}: cannot evaluate the annotation {ann!r}: {inner}{hint}"
            ) from inner
    raise TypeError(f"cannot read the type hints of {_tname(obj)}: {exc}") from exc


def _auto_doc(cls: Any) -> bool:
    """Whether a class docstring was generated (dataclass, namedtuple, Enum) rather than written."""
    doc = cls.__doc__ or ""
    return (
        doc.startswith(cls.__name__ + "(")
        or (isinstance(cls, type) and issubclass(cls, enum.Enum))
        or (_is_typeddict(cls) and doc.startswith("dict()"))
    )


# ----- docstrings ----------------------------------------------------------------------------

_GOOGLE_PARAMS = (  # patterns compile on first use (re's cache), not at import
    r"(?i)(args|arguments|parameters|params|attributes|fields|keyword args|keyword arguments"
    r"|other parameters)\s*:\s*$"
)
_GOOGLE_SECTION = (
    r"(?i)(args|arguments|parameters|params|attributes|fields|keyword args|keyword arguments"
    r"|other parameters|returns?|yields?|raises?|warns?|examples?|notes?|warnings?|see also"
    r"|references|todo|methods)\s*:\s*$"
)
_NUMPY_PARAMS = frozenset(("parameters", "attributes", "other parameters", "keyword arguments"))
_GOOGLE_ENTRY = r"\*{0,2}([A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:(.*)$"
_NUMPY_ENTRY = r"\*{0,2}([A-Za-z_]\w*(?:\s*,\s*\*{0,2}[A-Za-z_]\w*)*)\s*(?::.*)?$"
_SPHINX_ENTRY = (
    r":(?:param|parameter|arg|argument|key|keyword|ivar|var|cvar)\s+"
    r"(?:[^:]*?\s)?\*{0,2}([A-Za-z_]\w*)\s*:(.*)$"
)
_DASHES = r"-{3,}\s*$"


def _raw_doc(obj: Any) -> str:
    while isinstance(obj, functools.partial):
        obj = obj.func
    if isinstance(obj, type) and _auto_doc(obj):
        return ""
    doc = getattr(obj, "__doc__", None)
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _fold(parts: list[str]) -> str:
    return " ".join(" ".join(parts).split())


def _section_start(lines: list[str], i: int) -> bool:
    s = lines[i].strip()
    if re.match(_GOOGLE_SECTION, s) or s.startswith(":") and re.match(_SPHINX_ENTRY, s):
        return True
    if s.startswith((":returns", ":return", ":raises", ":rtype", ":type")):
        return True
    return i + 1 < len(lines) and bool(s) and bool(re.match(_DASHES, lines[i + 1].strip()))


def _doc_summary_of(doc: str) -> str:
    lines = doc.splitlines()
    para: list[str] = []
    for i, line in enumerate(lines):
        if not line.strip():
            if para:
                break
            continue
        if _section_start(lines, i):
            break
        para.append(line)
    return _fold(para)


def _doc_summary(fn: Any) -> str:
    """The docstring's first paragraph, whitespace folded: a tool's default description.

    A docstring that opens with a parameter section (``Args:``) has no summary.
    """
    return _doc_summary_of(_raw_doc(fn))


def _doc_params(doc: str) -> dict[str, str]:
    """Parameter descriptions from Google, NumPy or Sphinx sections; never raises."""
    out: dict[str, str] = {}
    if not doc:
        return out
    try:
        lines = doc.splitlines()
        n = len(lines)
        i = 0
        while i < n:
            line = lines[i]
            s = line.strip()
            ind = _indent(line)
            if re.match(_GOOGLE_PARAMS, s):
                # A docstring opening with "Args:" loses its relative indent to cleandoc.
                i = _google_section(lines, i + 1, ind if i else -1, out)
                continue
            if s.lower() in _NUMPY_PARAMS and i + 1 < n and re.match(_DASHES, lines[i + 1].strip()):
                i = _numpy_section(lines, i + 2, _indent(line), out)
                continue
            m = re.match(_SPHINX_ENTRY, s)
            if m:
                parts = [m.group(2)]
                i += 1
                while i < n and lines[i].strip() and _indent(lines[i]) > ind:
                    if lines[i].strip().startswith(":"):
                        break
                    parts.append(lines[i])
                    i += 1
                out.setdefault(m.group(1), _fold(parts))
                continue
            i += 1
    except Exception:  # a docstring is prose: never fail a tool over it
        pass
    return out


def _google_section(lines: list[str], i: int, header: int, out: dict[str, str]) -> int:
    n = len(lines)
    entry = -1
    name = ""
    parts: list[str] = []
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        ind = _indent(line)
        if ind <= header:
            break
        if entry < 0:
            entry = ind
        if ind == entry:
            if name:
                out.setdefault(name, _fold(parts))
            m = re.match(_GOOGLE_ENTRY, line.strip())
            name, parts = (m.group(1), [m.group(2)]) if m else ("", [])
        elif name:
            parts.append(line)
        i += 1
    if name:
        out.setdefault(name, _fold(parts))
    return i


def _numpy_section(lines: list[str], i: int, header: int, out: dict[str, str]) -> int:
    n = len(lines)
    names: list[str] = []
    parts: list[str] = []

    def flush() -> None:
        for nm in names:
            out.setdefault(nm, _fold(parts))

    while i < n:
        line = lines[i]
        s = line.strip()
        if not s:
            i += 1
            continue
        ind = _indent(line)
        if ind < header or (i + 1 < n and re.match(_DASHES, lines[i + 1].strip())):
            break
        if ind == header:
            flush()
            m = re.match(_NUMPY_ENTRY, s)
            names = [x.strip().lstrip("*") for x in m.group(1).split(",")] if m else []
            parts = []
        else:
            parts.append(line)
        i += 1
    flush()
    return i


_PRIMITIVES: dict[Any, _TypeNode] = {
    bool: _TypeNode({"type": "boolean"}, _dec_bool, _is_bool),
    int: _TypeNode({"type": "integer"}, _dec_int, _is_int),
    float: _TypeNode({"type": "number"}, _dec_float, _is_number),
    str: _TypeNode({"type": "string"}, _dec_str, _is_str),
    bytes: _TypeNode({"type": "string"}, _dec_base64, _is_str),
    _NONE_TYPE: _TypeNode({"type": "null"}, _dec_none, _is_none, admits_none=True),
    object: _TypeNode({}, _identity, _always, admits_none=True, ident=True),
}  # shared: a node's schema is never changed in place
_ANY_NODE = _PRIMITIVES[object]

# ----- the compiler --------------------------------------------------------------------------


class _Compiler:
    """Compiles types into _TypeNodes for one schema (one strictness, one set of $defs)."""

    def __init__(self, strict: bool, param: str | None = None, root: Any = None) -> None:
        self.strict = strict
        self.param = param
        self.root = root
        self.path: list[str] = []
        self.defs: dict[str, dict[str, Any]] = {}
        self.def_owner: dict[str, Any] = {}
        self.busy: dict[Any, _ClassState] = {}
        self.done: dict[Any, _TypeNode] = {}
        self.top_params = False  # the object being built is a function's parameters

    # errors

    def fail(self, msg: str) -> NoReturn:
        where = f'parameter "{self.param}": ' if self.param is not None else ""
        if self.path:
            field = ""
            for seg in self.path:
                field += seg if (seg.startswith("[") or not field) else "." + seg
            where += f'field "{field}": '
        raise TypeError(where + msg)

    def cannot(self, tp: Any, why: str) -> NoReturn:
        self.fail(f"cannot express type {_tname(tp)}: {why}")

    # the dispatcher

    def compile(self, tp: Any) -> _TypeNode:
        kind = type(tp)
        if kind is type or kind is enum.EnumMeta:  # a plain class: the common case, first
            prim = _PRIMITIVES.get(tp)
            return prim if prim is not None else self.compile_class(tp)
        tp, _ = _unwrap_markers(tp)
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            return self.annotated(tp)
        if tp is Any or tp is object:
            return _ANY_NODE
        if tp is None:
            return _PRIMITIVES[_NONE_TYPE]
        supertype = getattr(tp, "__supertype__", None)
        if supertype is not None:  # typing.NewType
            return self.compile(supertype)
        if isinstance(tp, type) and origin is None:
            return self.compile_class(tp)
        if origin in _UNION_TYPES:
            return self.union(tp)
        if origin is typing.Literal:
            return self.literal(tp)
        if origin is not None:
            return self.generic(tp, origin, typing.get_args(tp))
        if isinstance(tp, typing.TypeVar):
            self.cannot(tp, "a type variable has no schema; use a concrete type")
        if isinstance(tp, (str, typing.ForwardRef)):
            self.cannot(tp, "an unresolved forward reference")
        self.cannot(tp, "not a type agenttool can describe")

    def compile_class(self, tp: type) -> _TypeNode:
        if issubclass(tp, enum.Enum):
            return self.enum_node(tp)
        if issubclass(tp, bool):
            return _TypeNode({"type": "boolean"}, _dec_bool, _is_bool)
        for base, name, dec, fits in (
            (int, "integer", _dec_int, _is_int),
            (float, "number", _dec_float, _is_number),
            (str, "string", _dec_str, _is_str),
        ):
            if tp is base:
                return _TypeNode({"type": name}, dec, fits)
            if issubclass(tp, base):
                return _TypeNode({"type": name}, _then(dec, tp), fits)
        if tp is bytes or tp is bytearray:
            if tp is bytes:
                return _TypeNode({"type": "string"}, _dec_base64, _is_str)
            return _TypeNode({"type": "string"}, _then(_dec_base64, bytearray), _is_str)
        special = self.stdlib_node(tp)
        if special is not None:
            return special
        if dataclasses.is_dataclass(tp) or _is_typeddict(tp) or _is_namedtuple(tp):
            return self.object_class(tp)
        if tp in (list, tuple, set, frozenset, dict):
            if self.strict:
                kind = "an object must be closed" if tp is dict else "an array needs items"
                self.fail(
                    f"cannot express a bare {tp.__name__} in a strict schema ({kind}): "
                    f"write {tp.__name__}[...] with its item type"
                )
            if tp is dict:
                return self.generic(tp, dict, (str, Any))
            return self.generic(tp, tp, (Any, ...) if tp is tuple else (Any,))
        self.cannot(
            tp,
            "not a dataclass, TypedDict, NamedTuple, Enum or a supported scalar; "
            "use one of those, or supply the schema with parameters=",
        )

    def stdlib_node(self, tp: type) -> _TypeNode | None:
        for name, fmt in (("datetime", "date-time"), ("date", "date"), ("time", "time")):
            cls = _stdlib("datetime", name)  # datetime before date: it is a subclass
            if cls is not None and issubclass(tp, cls):
                return _TypeNode({"type": "string", "format": fmt}, _parse_iso(name, tp), _is_str)
        if tp is _stdlib("uuid", "UUID"):
            return _TypeNode(
                {"type": "string", "format": "uuid"}, _converter(tp, "a UUID"), _is_str
            )
        if tp is _stdlib("decimal", "Decimal"):
            return _TypeNode(
                {"type": "string", "pattern": _DECIMAL_PATTERN},
                _dec_decimal_from(tp),
                _is_str,
            )
        pure = _stdlib("pathlib", "PurePath")
        if pure is not None and issubclass(tp, pure):
            return _TypeNode({"type": "string"}, _converter(tp, "a path"), _is_str)
        return None

    # Annotated: descriptions and Meta

    def annotated(self, tp: Any) -> _TypeNode:
        args = typing.get_args(tp)
        node = self.compile(args[0])
        schema = dict(node.schema)
        dec = node.decode
        for meta in args[1:]:
            if isinstance(meta, str):
                schema["description"] = meta
            elif isinstance(meta, Meta):
                if meta.description is not None:
                    schema["description"] = meta.description
                for attr, key in _META_KEYWORDS:
                    val = getattr(meta, attr)
                    if val is not None:
                        schema[key] = list(val) if key == "examples" else val
                if meta.pattern is not None:
                    try:
                        re.compile(meta.pattern)
                    except re.error as exc:
                        self.fail(f"Meta(pattern={meta.pattern!r}) is not a valid pattern: {exc}")
        if self.strict:
            schema, dec = self.strict_move(schema, dec)
        if schema == node.schema:
            return node
        return _TypeNode(schema, dec, node.fits, node.admits_none, node.ident and dec is _identity)

    def strict_move(
        self, schema: dict[str, Any], dec: Callable[[Any], Any]
    ) -> tuple[dict[str, Any], Callable[[Any], Any]]:
        """Moves keywords a strict provider refuses into the description; the decoder keeps
        enforcing the constraints among them."""
        notes: list[str] = []
        lo = schema.pop("minLength", None)
        hi = schema.pop("maxLength", None)
        if lo is not None:
            notes.append(f"At least {lo} characters.")
        if hi is not None:
            notes.append(f"At most {hi} characters.")
        if lo is not None or hi is not None:
            dec = _length_check(dec, lo, hi)
        if schema.pop("uniqueItems", None):
            notes.append("Items must be unique.")
            dec = _unique_check(dec)
        fmt = schema.get("format")
        if fmt is not None and fmt not in _STRICT_FORMATS:
            del schema["format"]
            notes.append(f"Format: {fmt}.")
        examples = schema.pop("examples", None)
        if examples is not None:
            try:
                notes.append("Examples: " + ", ".join(json.dumps(e) for e in examples) + ".")
            except (TypeError, ValueError):
                self.fail(f"Meta(examples={examples!r}) must be JSON values")
        for note in notes:
            schema["description"] = _join_desc(schema.get("description"), note)
        return schema, dec

    # Union and Literal and Enum

    def union(self, tp: Any) -> _TypeNode:
        args = typing.get_args(tp)
        nodes = [self.compile(a) for a in args]
        non_null = [n for n in nodes if n.schema != {"type": "null"}]
        admits = any(n.admits_none for n in nodes)
        if len(non_null) == 1 and len(nodes) == 2:
            inner = non_null[0]
            idec = inner.decode
            ifits = inner.fits

            def dec_opt(v: Any) -> Any:
                return None if v is None else idec(v)

            def fits_opt(v: Any) -> bool:
                return v is None or ifits(v)

            return _TypeNode(_nullable(inner.schema), dec_opt, fits_opt, admits_none=True)
        # null goes last in the schema, as a nullable type writes it; decoding keeps source order
        shown = sorted(nodes, key=lambda n: n.schema == {"type": "null"})
        if all(set(n.schema) == {"type"} and isinstance(n.schema["type"], str) for n in nodes):
            kinds: list[str] = []
            for n in shown:
                if n.schema["type"] not in kinds:
                    kinds.append(n.schema["type"])
            schema: dict[str, Any] = {"type": kinds}
        else:
            schema = {"anyOf": [n.schema for n in shown]}
        branches = [(n.fits, n.decode) for n in nodes]
        label = " or ".join(_label(n.schema) for n in nodes)

        def dec(v: Any) -> Any:
            first: _DecodeFail | None = None
            for fits, d in branches:
                if fits(v):
                    try:
                        return d(v)
                    except _DecodeFail as exc:
                        first = first or exc
            if first is not None:
                raise first
            raise _DecodeFail(f"expected {label}, got {_describe_json(v)}")

        def fits_any(v: Any) -> bool:
            return any(f(v) for f, _ in branches)

        return _TypeNode(schema, dec, fits_any, admits_none=admits)

    def literal(self, tp: Any) -> _TypeNode:
        values: list[Any] = []
        members: list[Any] = []
        for a in typing.get_args(tp):
            v = a.value if isinstance(a, enum.Enum) else a
            if not _json_type(v):
                self.cannot(
                    tp, f"Literal value {a!r} is not a JSON string, number, boolean or null"
                )
            values.append(v)
            members.append(a)
        return self.choice(values, members)

    def enum_node(self, tp: type[enum.Enum]) -> _TypeNode:
        members = list(tp)
        if not members:
            self.cannot(tp, "an Enum without members")
        values = [m.value for m in members]
        for m in members:
            if not _json_type(m.value):
                self.cannot(tp, f"member {m.name} has value {m.value!r}, not a JSON scalar")
        return self.choice(values, members)

    def choice(self, values: list[Any], members: list[Any]) -> _TypeNode:
        kinds: list[str] = []
        for v in values:
            k = _json_type(v)
            if k not in kinds:
                kinds.append(k)
        lookup = {_json_key(v): m for v, m in zip(values, members)}

        def dec(v: Any) -> Any:
            try:
                return lookup[_json_key(v)]
            except (KeyError, TypeError):
                shown = ", ".join(_describe_json(x) for x in values)
                raise _DecodeFail(f"expected one of [{shown}], got {_describe_json(v)}") from None

        def fits(v: Any) -> bool:
            try:
                return _json_key(v) in lookup
            except TypeError:
                return False

        schema = {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": list(values)}
        return _TypeNode(schema, dec, fits, admits_none="null" in kinds)

    # containers

    def generic(self, tp: Any, origin: Any, args: tuple[Any, ...]) -> _TypeNode:
        abc = collections.abc
        if origin in (list, abc.Sequence, abc.MutableSequence, abc.Collection, abc.Iterable):
            if not args:
                return self.compile_class(list)
            return self.array(self.item(args[0]), list)
        if origin in (set, frozenset, abc.Set, abc.MutableSet):
            if not args:
                return self.compile_class(set)
            return self.array(self.item(args[0]), frozenset if origin is frozenset else set)
        if origin is tuple:
            if not args:
                return self.compile_class(tuple)
            if len(args) == 2 and args[1] is Ellipsis:
                return self.array(self.item(args[0]), tuple)
            return self.fixed_tuple(tp, args)
        if origin in (dict, abc.Mapping, abc.MutableMapping):
            if not args:
                return self.compile_class(dict)
            key = _unwrap_markers(args[0])[0]
            while typing.get_origin(key) is typing.Annotated:
                key = typing.get_args(key)[0]
            if key is not str:
                self.cannot(tp, "JSON object keys are strings; use dict[str, ...]")
            if self.strict:
                self.fail(
                    f"cannot express {_tname(tp)} in a strict schema: strict objects are "
                    "closed; use a list of key/value dataclasses, or strict=False"
                )
            return self.mapping(self.item(args[1]))
        self.cannot(tp, "not a JSON shape (supported: list, tuple, set, frozenset, dict[str, T])")

    def item(self, tp: Any) -> _TypeNode:
        self.path.append("[]")
        try:
            return self.compile(tp)
        finally:
            self.path.pop()

    def array(self, item: _TypeNode, build: Any) -> _TypeNode:
        schema: dict[str, Any] = {"type": "array", "items": item.schema}
        idec = item.decode
        ident = item.ident

        def dec_items(v: Any) -> Any:
            if type(v) is not list and type(v) is not tuple:
                raise _DecodeFail(f"expected array, got {_describe_json(v)}")
            if ident:
                return v if build is list and type(v) is list else build(v)
            out = []
            i = 0
            try:
                for i, x in enumerate(v):  # noqa: B007
                    out.append(idec(x))
            except _DecodeFail as exc:
                exc.rpath.append(i)
                raise
            return out if build is list else build(out)

        dec: Callable[[Any], Any] = dec_items
        if build in (set, frozenset):
            schema["uniqueItems"] = True
            if self.strict:
                schema, dec = self.strict_move(schema, dec)
            dec = _set_guard(dec)

        return _TypeNode(schema, dec, _is_array)

    def fixed_tuple(self, tp: Any, args: tuple[Any, ...]) -> _TypeNode:
        if self.strict:
            self.fail(
                f"cannot express {_tname(tp)} in a strict schema (strict providers do not "
                "support prefixItems): use a NamedTuple or a dataclass"
            )
        if args == ((),):
            args = ()
        items = []
        for k, a in enumerate(args):
            self.path.append(f"[{k}]")
            try:
                items.append(self.compile(a))
            finally:
                self.path.pop()
        n = len(items)
        schema: dict[str, Any]
        if n == 0:
            schema = {"type": "array", "maxItems": 0}
        else:
            schema = {
                "type": "array",
                "items": False,
                "prefixItems": [it.schema for it in items],
                "minItems": n,
                "maxItems": n,
            }
        decs = [it.decode for it in items]

        def dec(v: Any) -> Any:
            if type(v) is not list and type(v) is not tuple:
                raise _DecodeFail(f"expected array, got {_describe_json(v)}")
            if len(v) != n:
                raise _DecodeFail(f"expected an array of {n} items, got {len(v)}")
            out = []
            for i, (d, x) in enumerate(zip(decs, v)):
                try:
                    out.append(d(x))
                except _DecodeFail as exc:
                    exc.rpath.append(i)
                    raise
            return tuple(out)

        return _TypeNode(schema, dec, _is_array)

    def mapping(self, value: _TypeNode) -> _TypeNode:
        schema = {"type": "object", "additionalProperties": value.schema}
        vdec = value.decode
        ident = value.ident

        def dec(v: Any) -> Any:
            if type(v) is not dict:
                raise _DecodeFail(f"expected object, got {_describe_json(v)}")
            if ident:
                return dict(v)
            out = {}
            for k, x in v.items():
                try:
                    out[k] = vdec(x)
                except _DecodeFail as exc:
                    exc.rpath.append(k)
                    raise
            return out

        return _TypeNode(schema, dec, _is_dict)

    # objects

    def object_class(self, cls: Any) -> _TypeNode:
        done = self.done.get(cls)
        if done is not None:
            return done
        busy = self.busy.get(cls)
        if busy is not None:  # a recursive reference
            st = busy
            if not st.ref:
                st.ref = "#" if cls is self.root else "#/$defs/" + self.def_name(cls)
            return _TypeNode({"$ref": st.ref}, lambda v: st.decode(v), lambda v: st.fits(v))
        state = _ClassState()
        self.busy[cls] = state
        try:
            node = self.object_node(self.class_fields(cls), _class_builder(cls), None)
        finally:
            del self.busy[cls]
        if cls is not self.root:
            summary = _doc_summary_of(_raw_doc(cls))
            if summary:
                node.schema = {**node.schema, "description": summary}
        state.decode = node.decode
        state.fits = node.fits
        if state.ref and state.ref != "#":
            self.defs[state.ref[len("#/$defs/") :]] = node.schema
            node = _TypeNode({"$ref": state.ref}, node.decode, node.fits)
        self.done[cls] = node
        return node

    def def_name(self, cls: Any) -> str:
        name: str = cls.__name__
        k = 1
        while self.def_owner.get(name, cls) is not cls:
            k += 1
            name = f"{cls.__name__}{k}"
        self.def_owner[name] = cls
        return name

    def class_fields(self, cls: Any) -> list[_Field]:
        hints = _class_hints(cls, "field")
        docs = _doc_params(_raw_doc(cls))
        fields: list[_Field] = []
        if dataclasses.is_dataclass(cls):
            for f in dataclasses.fields(cls):
                if not f.init:
                    continue
                has = f.default is not _MISSING or f.default_factory is not _MISSING
                default = f.default if f.default is not _MISSING else _MISSING
                desc = f.metadata.get("description") if f.metadata else None
                tp = hints.get(f.name, f.type)
                fields.append(_Field(f.name, tp, has, default, None, desc or docs.get(f.name)))
        elif _is_typeddict(cls):
            required = cls.__required_keys__
            for name, tp in hints.items():
                tp, marker = _unwrap_markers(tp)
                req = marker if marker is not None else name in required
                fields.append(_Field(name, tp, False, _MISSING, req, docs.get(name)))
        else:
            defaults = getattr(cls, "_field_defaults", {})
            for name in cls._fields:
                if name not in hints:
                    self.path.append(name)
                    self.fail("has no type annotation; write a NamedTuple class with types")
                has = name in defaults
                fields.append(
                    _Field(name, hints[name], has, defaults.get(name), None, docs.get(name))
                )
        return fields

    def object_node(
        self,
        fields: list[_Field],
        build: Callable[[dict[str, Any]], Any] | None,
        extras: _TypeNode | None,
    ) -> _TypeNode:
        """The object for a list of fields; ``build`` turns the decoded keyword dict into the
        target (None keeps the dict), ``extras`` decodes unknown names (a **kwargs)."""
        strict = self.strict
        props: dict[str, Any] = {}
        required: list[str] = []
        table: dict[str, tuple[Callable[[Any], Any], bool, bool]] = {}
        needed: list[str] = []
        top, self.top_params = self.top_params, False
        for f in fields:
            if top:  # errors name the parameter, then the field path inside it
                self.param = f.name
            else:
                self.path.append(f.name)
            try:
                schema, fdec, null_default = self.field(f)
            finally:
                if top:
                    self.param = None
                else:
                    self.path.pop()
            props[f.name] = schema
            py_required = not f.has_default and f.required is not False
            if strict or py_required:
                required.append(f.name)
            if py_required:
                needed.append(f.name)
            table[f.name] = (fdec, py_required, null_default)
        out: dict[str, Any] = {"type": "object", "properties": props, "required": required}
        if strict:
            out["additionalProperties"] = False
        elif extras is not None and extras.schema:
            out["additionalProperties"] = extras.schema
        n_needed = len(needed)
        xdec = extras.decode if extras is not None else None
        known = frozenset(table)

        def dec(v: Any) -> Any:
            if type(v) is not dict:
                raise _DecodeFail(f"expected object, got {_describe_json(v)}")
            kw: dict[str, Any] = {}
            seen = 0
            for k, x in v.items():
                entry = table.get(k)
                try:
                    if entry is None:
                        if xdec is None:
                            first = min(key for key in v if key not in table)
                            raise _DecodeFail(f'unexpected property "{first}"')
                        kw[k] = xdec(x)
                        continue
                    if entry[1]:
                        seen += 1
                    elif x is None and entry[2]:
                        continue  # strict: null means "use the default"
                    kw[k] = entry[0](x)
                except _DecodeFail as exc:
                    if entry is not None or xdec is not None:
                        exc.rpath.append(k)
                    raise
            if seen != n_needed:
                missing = next(name for name in needed if name not in v)
                raise _DecodeFail(f'missing required property "{missing}"')
            if build is None:
                return kw
            try:
                return build(kw)
            except ValueError as exc:  # the class's own checks (__post_init__)
                raise _DecodeFail(str(exc) or type(exc).__name__) from None

        closed = xdec is None
        needed_set = frozenset(needed)

        def fits(v: Any) -> bool:
            if type(v) is not dict:
                return False
            keys = v.keys()
            return needed_set <= keys and (not closed or keys <= known)

        return _TypeNode(out, dec, fits)

    def field(self, f: _Field) -> tuple[dict[str, Any], Callable[[Any], Any], bool]:
        """A property's schema and decoder; True when null means its default (strict)."""
        tp = f.tp
        if f.has_default and f.default is None and not _admits_none(tp):
            tp = Optional[tp]  # a None default makes the type Optional, on every version
        admits = _admits_none(tp)
        if f.has_default and admits and not self.strict:
            node = self.compile(_strip_none(tp))
            inner = node.decode
            dec = inner if node.admits_none else _none_or(inner)
        else:
            node = self.compile(tp)
            dec = node.decode
        schema = node.schema
        if f.doc and not _has_own_description(tp):  # Annotated wins, then the field's doc
            schema = {**schema, "description": f.doc}
        null_default = False
        if self.strict and f.has_default and not admits:
            null_default = True
            schema = _nullable(schema)
            text = _default_text(f.default)
            if text is not None:
                schema["description"] = _join_desc(schema.get("description"), text)
        return schema, dec, null_default

    def finish(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self.defs:
            schema = {**schema, "$defs": self.defs}
        out: dict[str, Any] = _ordered(schema)
        if self.strict:
            _check_strict_limits(out)
        return out


def _then(dec: Callable[[Any], Any], conv: Any) -> Callable[[Any], Any]:
    def run(v: Any) -> Any:
        return conv(dec(v))

    return run


def _set_guard(dec: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(v: Any) -> Any:
        try:
            return dec(v)
        except TypeError as exc:  # an unhashable item
            raise _DecodeFail(f"items cannot form a set: {exc}") from None

    return run


def _none_or(dec: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(v: Any) -> Any:
        return None if v is None else dec(v)

    return run


def _length_check(
    dec: Callable[[Any], Any], lo: int | None, hi: int | None
) -> Callable[[Any], Any]:
    def run(v: Any) -> Any:
        if type(v) is str:
            if lo is not None and len(v) < lo:
                raise _DecodeFail(f"expected at least {lo} characters, got {len(v)}")
            if hi is not None and len(v) > hi:
                raise _DecodeFail(f"expected at most {hi} characters, got {len(v)}")
        return dec(v)

    return run


def _unique_check(dec: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(v: Any) -> Any:
        if type(v) is list or type(v) is tuple:
            seen: set[str] = set()
            for i, x in enumerate(v):
                key = json.dumps(x, sort_keys=True)
                if key in seen:
                    raise _DecodeFail(f"expected unique items, item {i} repeats an earlier one")
                seen.add(key)
        return dec(v)

    return run


def _class_builder(cls: Any) -> Callable[[dict[str, Any]], Any] | None:
    if _is_typeddict(cls):
        return None
    built: Callable[[dict[str, Any]], Any] = lambda kw: cls(**kw)  # noqa: E731
    return built


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema that also admits null (see the rules at the top of this section)."""
    if not schema:
        return {}
    t = schema.get("type")
    if isinstance(t, str) and t in _SCALAR_TYPES:
        out = {**schema, "type": [t, "null"] if t != "null" else t}
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    if isinstance(t, list) and "properties" not in schema and "items" not in schema:
        out = {**schema, "type": t if "null" in t else [*t, "null"]}
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    if "anyOf" in schema:
        branches = schema["anyOf"]
        if {"type": "null"} in branches:
            return dict(schema)
        return {**schema, "anyOf": [*branches, {"type": "null"}]}
    inner = {k: v for k, v in schema.items() if k != "description"}
    out = {"anyOf": [inner, {"type": "null"}]}
    if "description" in schema:
        out["description"] = schema["description"]
    return out


def _label(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of [" + ", ".join(_describe_json(v) for v in schema["enum"]) + "]"
    t = schema.get("type")
    if isinstance(t, str):
        return t
    if isinstance(t, list):
        return " or ".join(t)
    if "$ref" in schema:
        return "object"
    if "anyOf" in schema:
        return " or ".join(_label(s) for s in schema["anyOf"])
    return "any value"


def _default_text(default: Any) -> str | None:
    """ "Default: X." for a strict field's description, when the default is plain JSON."""
    if default is _MISSING:
        return None
    if isinstance(default, enum.Enum):
        default = default.value
    if not isinstance(default, (str, int, float, bool, list, dict, tuple)):
        return None
    try:
        return f"Default: {json.dumps(default, allow_nan=False)}."
    except (TypeError, ValueError):
        return None


def _ordered(schema: Any) -> Any:
    """A copy of the schema with every member in _KEY_ORDER (the one place order is set)."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for k in sorted(schema, key=_KEY_ORDER.__getitem__):
        v = schema[k]
        if k in ("properties", "$defs"):
            v = {name: _ordered(s) for name, s in v.items()}
        elif k in ("items", "additionalProperties"):
            v = _ordered(v)
        elif k in ("anyOf", "prefixItems"):
            v = [_ordered(s) for s in v]
        elif k in ("enum", "required", "examples"):
            v = list(v)
        out[k] = v
    return out


def _check_strict_limits(schema: dict[str, Any]) -> None:
    """Refuses a strict schema beyond OpenAI's documented limits."""
    props = 0
    enums = 0
    chars = 0
    depth_max = 0
    stack: list[tuple[Any, int]] = [(schema, 0)]
    while stack:
        s, depth = stack.pop()
        if not isinstance(s, dict):
            continue
        if "properties" in s:
            depth += 1
            depth_max = max(depth_max, depth)
            props += len(s["properties"])
            for name, sub in s["properties"].items():
                chars += len(name)
                stack.append((sub, depth))
        if "enum" in s:
            enums += len(s["enum"])
            chars += sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in s["enum"])
        for name, sub in s.get("$defs", {}).items():
            chars += len(name)
            stack.append((sub, 0))
        for key in ("items", "additionalProperties"):
            if key in s:
                stack.append((s[key], depth))
        for sub in s.get("anyOf", ()):
            stack.append((sub, depth))
    for count, limit, what in (
        (props, _STRICT_MAX_PROPERTIES, "properties in total"),
        (depth_max, _STRICT_MAX_DEPTH, "levels of object nesting"),
        (enums, _STRICT_MAX_ENUM_VALUES, "enum values in total"),
        (chars, _STRICT_MAX_CHARS, "characters of property names and enum values"),
    ):
        if count > limit:
            raise TypeError(
                f"strict schema too large: {count:,} {what}; strict providers allow {limit:,}"
            )


# ----- functions ---------------------------------------------------------------------------


def _is_function(obj: Any) -> bool:
    if hasattr(obj, "__supertype__"):  # typing.NewType, a function on 3.9
        return False
    if inspect.isroutine(obj) or isinstance(obj, functools.partial):
        return True
    if isinstance(obj, type) or typing.get_origin(obj) is not None:
        return False
    mod = type(obj).__module__
    return callable(obj) and mod not in ("typing", "types", "typing_extensions")


_POS, _KW, _POS_ONLY, _VAR_POS, _VAR_KW = "pos", "kw", "pos-only", "*", "**"
_EMPTY: Any = inspect.Parameter.empty
_KINDS = {
    inspect.Parameter.POSITIONAL_OR_KEYWORD: _POS,
    inspect.Parameter.KEYWORD_ONLY: _KW,
    inspect.Parameter.POSITIONAL_ONLY: _POS_ONLY,
    inspect.Parameter.VAR_POSITIONAL: _VAR_POS,
    inspect.Parameter.VAR_KEYWORD: _VAR_KW,
}
_ANNOTATION_CODE: dict[str, types.CodeType] = {}


def _plain_function(fn: Any) -> tuple[types.FunctionType, bool] | None:
    """The plain function behind fn (and whether it is bound), when its code object tells its
    signature: not wrapped, no __signature__; None otherwise."""
    bound = type(fn) is types.MethodType
    f = fn.__func__ if bound else fn
    if type(f) is not types.FunctionType or "__wrapped__" in f.__dict__:
        return None
    if "__signature__" in f.__dict__:
        return None
    return f, bound


def _code_params(f: types.FunctionType, bound: bool) -> list[tuple[str, str, Any]] | None:
    """(name, kind, default) per parameter, read from the code object as inspect would."""
    code = f.__code__
    names = code.co_varnames
    n_pos = code.co_argcount
    n_kw = code.co_kwonlyargcount
    n_only = code.co_posonlyargcount
    defaults = f.__defaults__ or ()
    kwdefaults = f.__kwdefaults__ or {}
    first_default = n_pos - len(defaults)
    out: list[tuple[str, str, Any]] = []
    for i in range(n_pos):
        default = defaults[i - first_default] if i >= first_default else _EMPTY
        out.append((names[i], _POS_ONLY if i < n_only else _POS, default))
    at_var = n_pos + n_kw
    if code.co_flags & inspect.CO_VARARGS:
        out.append((names[at_var], _VAR_POS, _EMPTY))
        at_var += 1
    for name in names[n_pos : n_pos + n_kw]:
        out.append((name, _KW, kwdefaults.get(name, _EMPTY)))
    if code.co_flags & inspect.CO_VARKEYWORDS:
        out.append((names[at_var], _VAR_KW, _EMPTY))
    if bound:
        if not out or out[0][1] not in (_POS, _POS_ONLY):
            return None
        out = out[1:]
    return out


def _resolved(tp: Any) -> bool:
    """Whether an evaluated annotation holds no forward reference left to evaluate."""
    if isinstance(tp, (str, typing.ForwardRef)):
        return False
    origin = typing.get_origin(tp)
    if origin is None or origin is typing.Literal:
        return True
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _resolved(args[0])
    return all(_resolved(a) for a in args if a is not Ellipsis and not isinstance(a, list))


def _code_hints(f: types.FunctionType) -> dict[str, Any] | None:
    """A plain function's hints, evaluated with cached code objects (get_type_hints compiles
    every string annotation anew); None sends the caller to typing.get_type_hints."""
    globalns = f.__globals__
    out: dict[str, Any] = {}
    for name, ann in f.__annotations__.items():
        if name == "return":
            continue
        if type(ann) is str:
            code = _ANNOTATION_CODE.get(ann)
            try:
                if code is None:
                    code = compile(ann, "<annotation>", "eval")
                    if len(_ANNOTATION_CODE) >= 1024:
                        _ANNOTATION_CODE.clear()
                    _ANNOTATION_CODE[ann] = code
                ann = eval(code, globalns)
            except Exception:
                return None
        if ann is None:
            ann = _NONE_TYPE
        elif not (type(ann) is type or _resolved(ann)):
            return None
        out[name] = ann
    return out


def _function_parts(fn: Any) -> tuple[list[tuple[str, str, Any]], dict[str, Any], dict[str, str]]:
    """A callable's parameters (name, kind, default), hints and docstring descriptions."""
    target = fn
    while isinstance(target, functools.partial):
        target = target.func
    if not (inspect.isroutine(target) or isinstance(target, type)) and callable(target):
        target = type(target).__call__
    plain = _plain_function(fn)
    params = _code_params(*plain) if plain is not None else None
    if params is None:
        params = [
            (p.name, _KINDS[p.kind], p.default) for p in inspect.signature(fn).parameters.values()
        ]
    hints = _code_hints(plain[0]) if plain is not None else None
    if hints is None:
        try:
            hints = typing.get_type_hints(target, include_extras=True)
        except Exception:
            hints = _hints_one_by_one(target, [p[0] for p in params])
    return params, hints, _doc_params(_raw_doc(target))


def _hints_one_by_one(target: Any, names: list[str]) -> dict[str, Any]:
    """The parameters' hints evaluated one at a time, so the one that fails is named and a bad
    return annotation (not part of the arguments) does not matter."""
    nsobj = target
    while hasattr(nsobj, "__wrapped__"):
        nsobj = nsobj.__wrapped__
    globalns = getattr(nsobj, "__globals__", {})
    anns = getattr(target, "__annotations__", None) or {}
    out: dict[str, Any] = {}
    for name in names:
        if name not in anns:
            continue
        ann = anns[name]
        stub = types.SimpleNamespace(__annotations__={name: ann}, __globals__=globalns)
        try:
            out[name] = typing.get_type_hints(stub, include_extras=True)[name]
        except Exception as exc:
            hint = ""
            if isinstance(ann, str) and "|" in ann and sys.version_info < (3, 10):
                hint = (
                    "; X | Y in an annotation needs Python 3.10: write Optional[X] or Union[X, Y]"
                )
            raise TypeError(
                f'parameter "{name}": cannot evaluate the annotation {ann!r}: {exc}{hint}'
            ) from exc
    return out


def _arg_spec(fn: Callable[..., Any], *, strict: bool, struct: bool = False) -> _ArgSpec:
    """Compiles a function's arguments once: the schema and the decoder to keyword arguments.

    Signature form (default): each parameter is a property. ``struct=True``: the only parameter
    is a dataclass or TypedDict whose schema is the root, and decoding gives ``{param: value}``.
    Raises ``TypeError`` naming the parameter or field when a type cannot be expressed.
    """
    params, hints, docs = _function_parts(fn)
    if struct:
        if len(params) != 1:
            raise TypeError(
                f"struct=True needs exactly one parameter (a dataclass or TypedDict), "
                f"got {len(params)}"
            )
        pname = params[0][0]
        tp = _unwrap_markers(hints.get(pname, Any))[0]
        while typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
        if not (dataclasses.is_dataclass(tp) and isinstance(tp, type)) and not _is_typeddict(tp):
            raise TypeError(
                f'parameter "{pname}": struct=True needs a dataclass or TypedDict, got {_tname(tp)}'
            )
        comp = _Compiler(strict, root=tp)
        node = comp.object_class(tp)
        schema = comp.finish(node.schema)
        root_dec = node.decode

        def decode_struct(args: dict[str, Any]) -> dict[str, Any]:
            try:
                return {pname: root_dec(args)}
            except _DecodeFail as exc:
                raise exc.error() from None

        return _ArgSpec(schema, decode_struct)

    comp = _Compiler(strict)
    fields: list[_Field] = []
    extras: _TypeNode | None = None
    for name, kind, default in params:
        if kind == _VAR_POS:
            raise TypeError(
                f'parameter "*{name}": a tool receives named arguments; '
                f"write {name}: list[T] instead"
            )
        if kind == _POS_ONLY:
            raise TypeError(
                f'parameter "{name}": positional-only, but a tool receives named arguments'
            )
        if name not in hints:
            if kind == _VAR_KW:
                extras = _ANY_NODE
                continue
            raise TypeError(
                f'parameter "{name}": no type annotation; write {name}: Any to accept '
                "any JSON value"
            )
        comp.param = name
        if kind == _VAR_KW:
            extras = comp.compile(hints[name])
            continue
        has = default is not _EMPTY
        fields.append(
            _Field(name, hints[name], has, default if has else _MISSING, None, docs.get(name))
        )
    comp.param = None
    comp.top_params = True
    node = comp.object_node(fields, None, extras)
    comp.top_params = False
    schema = comp.finish(node.schema)
    obj_dec = node.decode

    def decode_args(args: dict[str, Any]) -> dict[str, Any]:
        try:
            out: dict[str, Any] = obj_dec(args)
            return out
        except _DecodeFail as exc:
            raise exc.error() from None

    return _ArgSpec(schema, decode_args)


def _type_spec(tp: Any, strict: bool) -> tuple[dict[str, Any], Callable[[Any], Any]]:
    root = tp if isinstance(tp, type) else None
    comp = _Compiler(strict, root=root)
    node = comp.compile(tp)
    return comp.finish(node.schema), node.decode


def schema_of(type_or_function: Any, *, strict: bool = False) -> dict[str, Any]:
    """The JSON Schema of a function's arguments (each parameter a property) or of a type.

    Built from ``typing.get_type_hints(include_extras=True)``; descriptions come from
    ``Annotated[T, "text"]``, ``Meta``, dataclass field metadata and the docstring's parameter
    section. ``strict=True`` gives a schema strict providers accept. A type that cannot be
    expressed raises ``TypeError`` naming the parameter or field.
    """
    if _is_function(type_or_function):
        return _arg_spec(type_or_function, strict=strict).schema
    return _type_spec(type_or_function, strict)[0]


_DECODERS: dict[tuple[int, bool], tuple[Any, Callable[[Any], Any]]] = {}


def decode(type_or_function: Any, value: Any, *, strict: bool = False) -> Any:
    """Turns a validated JSON value into what the hints promise: for a function, the keyword
    arguments to call it with; for a type, its instance. Raises ``ValidationError`` with the
    path of a value that does not fit (an unexpected property, bad base64, a bad date)."""
    # Keyed by identity: Union[int, float] == Union[float, int], but they decode differently.
    key = (id(type_or_function), strict)
    hit = _DECODERS.get(key)
    if hit is not None and hit[0] is type_or_function:
        dec = hit[1]
    else:
        if _is_function(type_or_function):
            dec = _arg_spec(type_or_function, strict=strict).decode
        else:
            dec = _type_spec(type_or_function, strict)[1]
        if len(_DECODERS) >= 256:
            _DECODERS.clear()
        _DECODERS[key] = (type_or_function, dec)
    try:
        return dec(value)
    except _DecodeFail as exc:
        raise exc.error() from None
