"""agenttool: the tool contract for Python agents, in one file.

A *tool* is something a model can call: a name, a description, a JSON Schema for its
arguments and a way to run one call.  This module turns typed Python functions into tools,
generates their schemas, validates what the model wrote before anything runs, converts what
the function returns into what the model sees, and runs batches of calls in parallel with
ordering rules a model can rely on.  Standard library only; CPython 3.9 to 3.13.

The sections, in file order (each starts at a banner of that title; a test holds this map to
the banners):

    Errors shared by every section
    Messages: what the model reads of a value, cut to size
    Meta: constraints and descriptions inside Annotated[...]
    Schema generation and decoding
    Type inspection: what an annotation says
    Docstrings: the descriptions of a tool and of its parameters
    From types to schemas and decoders: the translator
    Functions: a signature as a tool's parameters
    JSON Schema validation
    ECMA-262 patterns: parsed once, run by Python's re where it cannot backtrack, else linearly
    Validators: validator(), Validator and JSON text
    Results and content parts
    Failures: the one message the model sees
    Calls and the call's context: progress, records, elicitation, cancellation
    Tools and their properties
    async def tools: where their coroutines run
    Wrapping
    Definitions, their hash, and sets of tools
    Isolated tools: the function of a tool made with isolated=True runs in a worker process
    The executor
    The journal: runs that survive a crash
    Provider formats: definitions out, calls in, output items back
    The command line: python -m agenttool (or python agenttool.py) list | call | journal
    Tools as a command line: command(tools, prog=...), usage_markdown, python -m agenttool run
    Unicode tables for \\p{..} in patterns

Copyright (c) 2026 the agenttool authors.  MIT licence (see LICENSE).
"""

from __future__ import annotations

import collections.abc
import contextvars
import dataclasses
import enum
import functools
import inspect
import json
import os
import re
import sys
import threading
import types
import typing
from collections.abc import AsyncIterator, Generator, Iterator, Sequence
from typing import (
    Any,
    Callable,
    Generic,
    NoReturn,
    Optional,
    Protocol,
    SupportsIndex,
    TextIO,
    TypeVar,
    Union,
    overload,
    runtime_checkable,
)

if typing.TYPE_CHECKING:
    import queue

    from typing_extensions import ParamSpec, Unpack  # read by type checkers only, never imported

    _P = ParamSpec("_P")
elif sys.version_info >= (3, 10):
    _P = typing.ParamSpec("_P")
else:  # 3.9 has no ParamSpec at run time: a stand-in, since only type checkers read it
    _P = TypeVar("_P")
_R = TypeVar("_R")
_T = TypeVar("_T")
_E = TypeVar("_E", bound=BaseException)

__version__ = "0.1.0"

__all__ = [
    # errors
    "ValidationError",
    "SchemaError",
    "ToolCrash",
    "WorkerCrash",
    "Cancelled",
    "NoTool",
    "CloseError",
    # schema, validation, decoding
    "Meta",
    "schema_of",
    "decode",
    "validator",
    "Validator",
    # results
    "Part",
    "Result",
    "text",
    "parts",
    "output",
    "image",
    "file",
    "error_message",
    "error_result",
    "ToolError",
    # calls and their context
    "Call",
    "ProgressInfo",
    "current_call",
    "progress",
    "cancelled",
    "cancel_event",
    "Record",
    "record_of",
    "write_record",
    "Elicitation",
    "Answer",
    "Action",
    "elicit",
    "Recorder",
    "Elicitor",
    # tools
    "Tool",
    "Annotations",
    "Replay",
    "Facts",
    "FactCall",
    "PROPERTIES",
    "NO_ARGS",
    "is_strict",
    "is_sequential",
    "resource_of",
    "annotations_of",
    "confined_by",
    "replay_of",
    "facts_of",
    "is_factual",
    "Inject",
    "output_schema_of",
    "needs_approval_of",
    "timeout_of",
    "max_output_of",
    "defer_loading_of",
    "input_examples_of",
    "cache_control_of",
    "allowed_callers_of",
    "namespace_of",
    "Namespace",
    "is_cacheable",
    "is_isolated",
    "task_support_of",
    "ResultCache",
    "Journal",
    "APPROVAL_RECORD",
    "JournalError",
    "Uncertain",
    "FunctionTool",
    "tool",
    "new",
    "new_func",
    "wrap",
    "unwrap",
    "retrying",
    # definitions and sets
    "definition",
    "definition_hash",
    "ToolSet",
    "Pending",
    "UncertainCall",
    "RunOutput",
    # the executor
    "DEFAULT_MAX_PARALLEL",
    "DEFAULT_MAX_THREADS",
    "set_max_threads",
    "Job",
    "Event",
    "Executor",
    "EventStream",
    # the command line
    "command",
    "usage_markdown",
    "main",
]

# ---------------------------------------------------------------------------------------------
# Errors shared by every section
# ---------------------------------------------------------------------------------------------


class ValidationError(ValueError):
    """Arguments that do not match a tool's schema, worded for the model.

    ``str(err)`` is ``invalid arguments: <path>: <msg>``, the path dotted with ``[i]`` for
    items and left out at the root, so the model can fix the call in one retry.
    """

    def __init__(self, path: str, msg: str) -> None:
        self.path = path
        self.msg = msg
        super().__init__(
            f"invalid arguments: {path}: {msg}" if path else f"invalid arguments: {msg}"
        )


class SchemaError(ValueError):
    """A JSON Schema the validator cannot honour, refused when it is compiled."""


class _Value:
    """Base of the library's small value types: ``repr`` and ``==`` from ``__slots__``.

    Written by hand rather than with ``@dataclass``, which costs about 0.4 ms a class at
    import time, and import time is a feature of this module.
    """

    __slots__: tuple[str, ...] = ()

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None  # type: ignore[assignment]


class _Frozen(_Value):
    """A value type whose fields are set once, in ``__init__``, and hash by value."""

    __slots__: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, name):
            raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")
        object.__setattr__(self, name, value)

    def __hash__(self) -> int:  # type: ignore[override]
        # by repr, because a field may hold a list (Meta.examples)
        return hash(tuple(repr(getattr(self, k)) for k in self.__slots__))


# Logs go to logging.getLogger("agenttool"), which has a NullHandler (as a library's logger
# should), so nothing shows until the host configures logging.  What is logged: a tool's crash
# (a BaseException) at ERROR and its other failures at WARNING, each with its traceback; a
# timeout and a denial at WARNING.  Nothing is logged per call at INFO or below.  The logging
# module is imported on the first such event, never at import.
_logger: Any = None


def _log(level: int, message: str, exc: BaseException | None = None) -> None:
    """Log ``message`` (with ``exc``'s traceback) on the "agenttool" logger; never raises."""
    global _logger
    try:
        if _logger is None:
            import logging

            logger = logging.getLogger("agenttool")
            logger.addHandler(logging.NullHandler())
            _logger = logger
        if _logger.isEnabledFor(level):
            exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
            _logger.log(level, "%s", message, exc_info=exc_info)
    except Exception:  # noqa: BLE001, S110 - a broken handler never fails a call
        pass


_ERROR, _WARNING = 40, 30  # logging.ERROR and logging.WARNING, without importing logging


# ---------------------------------------------------------------------------------------------
# Messages: what the model reads of a value, cut to size
# ---------------------------------------------------------------------------------------------

# Messages quote what the model or the schema wrote, cut so that a whole message stays within
# about 2 KB whatever the input: a quoted string or path segment at _QUOTE_LIMIT characters, a
# path at _PATH_LIMIT, a list of values (enum, shapes) at _LIST_LIMIT, each cut saying how much
# was left out.
_QUOTE_LIMIT = 200
_PATH_LIMIT = 600
_LIST_LIMIT = 600
_MESSAGE_LIMIT = 1400  # the last resort, should the parts of a message add up past it


def _cut(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, saying how many were left out."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 3]}... ({len(text) - limit + 3} more characters)"


def _quote(s: str, limit: int = _QUOTE_LIMIT) -> str:
    """A string as JSON for a message: cut to ``limit`` characters (saying how many more),
    lone surrogates escaped so the message can always be printed or sent."""
    more = len(s) - limit
    text = json.dumps(s[: limit - 3] if more > 0 else s, ensure_ascii=False)
    if more > 0:
        text = f'{text[:-1]}..." ({more + 3} more characters)'
    return _printable(text)


def _format_path(path: tuple[object, ...]) -> str:
    """``list[0].name``; a key that is not an identifier is ``["content-type"]``."""
    out: list[str] = []
    for seg in path:
        if isinstance(seg, int):
            out.append(f"[{seg}]")
        elif isinstance(seg, str) and seg.isidentifier() and len(seg) <= _QUOTE_LIMIT:
            out.append("." + seg if out else seg)
        elif isinstance(seg, str):
            out.append("[" + _quote(seg) + "]")
        else:
            out.append(f"[{_compact(seg, _QUOTE_LIMIT)}]")
    return _cut("".join(out), _PATH_LIMIT)


def _number_text(v: float) -> str:
    """A number as written in JSON; an integer too long to print says how long it is."""
    if isinstance(v, int):
        try:
            text = str(v)
        except ValueError:  # over sys.get_int_max_str_digits()
            return f"an integer of about {int(v.bit_length() * 0.30103)} digits"
        if len(text) > _QUOTE_LIMIT:
            return f"an integer of {len(text.lstrip('-'))} digits"
        return text
    return repr(v)


def _describe(v: object) -> str:
    """A value for a message: strings quoted (long ones cut), numbers as written, kinds."""
    if isinstance(v, str):
        return _quote(v, 60)
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


def _compact(v: object, limit: int = _QUOTE_LIMIT) -> str:
    """Compact JSON for values named in messages (enum members, schemas), cut at ``limit``."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return _number_text(v)
    if isinstance(v, str):
        return _quote(v, limit)
    try:
        text = json.dumps(v, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        text = _describe(v)
    return _cut(_printable(text), limit)


def _printable(text: str) -> str:
    """``text`` with lone surrogates escaped, so that a message can always be encoded."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _listing(values: Any, limit: int = _LIST_LIMIT) -> str:
    """``[a, b, c]`` of compact values, cut once past ``limit`` characters with how many more."""
    shown: list[str] = []
    size = 0
    for i, value in enumerate(values):
        text = _compact(value)
        size += len(text) + 2
        if size > limit and shown:
            shown.append(f"... ({len(values) - i} more)")
            break
        shown.append(text)
    return "[" + ", ".join(shown) + "]"


def _join_or(names: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    if len(names) <= 2:
        return " or ".join(names)
    return ", ".join(names[:-1]) + " or " + names[-1]


def _plural(n: int, word: str) -> str:
    if word == "property":
        return f"{n} property" if n == 1 else f"{n} properties"
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _is_finite(f: float) -> bool:
    """Whether a float is neither NaN nor infinite (``f - f`` is NaN for those); spares
    importing ``math`` for one test."""
    return f - f == 0.0


def _m_unexpected(key: object) -> str:
    if not isinstance(key, str):
        return _m_key(key)
    return f"unexpected property {_quote(key)}"


def _m_key(key: object) -> str:
    """A key that is not a string (from Python): not JSON, whatever the schema says of it."""
    return f"property name {_compact(key, 60)} is not a string; JSON object keys are strings"


# ---------------------------------------------------------------------------------------------
# Meta: constraints and descriptions inside Annotated[...]
# ---------------------------------------------------------------------------------------------


class Meta(_Frozen):
    """Schema facts for one type, written inside ``Annotated[T, Meta(...)]``.

    Every field left ``None`` says nothing; the others become the JSON Schema keyword of the
    same meaning (``min_length`` is ``minLength``, and so on).
    """

    __slots__ = (
        "description",
        "minimum",
        "maximum",
        "exclusive_minimum",
        "exclusive_maximum",
        "multiple_of",
        "min_length",
        "max_length",
        "pattern",
        "min_items",
        "max_items",
        "format",
        "examples",
    )
    description: str | None
    minimum: float | None
    maximum: float | None
    exclusive_minimum: float | None
    exclusive_maximum: float | None
    multiple_of: float | None
    min_length: int | None
    max_length: int | None
    pattern: str | None
    min_items: int | None
    max_items: int | None
    format: str | None
    examples: list[Any] | None

    def __init__(
        self,
        description: str | None = None,
        minimum: float | None = None,
        maximum: float | None = None,
        exclusive_minimum: float | None = None,
        exclusive_maximum: float | None = None,
        multiple_of: float | None = None,
        min_length: int | None = None,
        max_length: int | None = None,
        pattern: str | None = None,
        min_items: int | None = None,
        max_items: int | None = None,
        format: str | None = None,
        examples: list[Any] | None = None,
    ) -> None:
        self.description = description
        self.minimum = minimum
        self.maximum = maximum
        self.exclusive_minimum = exclusive_minimum
        self.exclusive_maximum = exclusive_maximum
        self.multiple_of = multiple_of
        self.min_length = min_length
        self.max_length = max_length
        self.pattern = pattern
        self.min_items = min_items
        self.max_items = max_items
        self.format = format
        self.examples = examples


# ---------------------------------------------------------------------------------------------
# Schema generation and decoding
#
# Rules stated once, here:
# - Member order of every generated schema object is _KEY_ORDER, applied in one place
#   (_ordered): the seed's keywords first, then the others, "$defs" last. Properties keep
#   declaration order, "required" field order, "enum" declaration order.
# - Nullability: a type that admits None admits null in every mode, with or without a default,
#   and null decodes to None. It is written nullable ("type": [T, "null"] for a scalar, an enum
#   gets null appended last, anything else becomes anyOf [T, {"type": "null"}], Any stays {}).
#   A None default makes the type Optional. Outside strict, a field whose type does not admit
#   None but has a default is simply optional. Under strict every field is required, and such a
#   field is made nullable with null meaning "use the default" (the decoder leaves the argument
#   out). A TypedDict key that is NotRequired has no default: under strict it stays required and
#   not nullable.
# - Unions: primitive branches merge into one "type" list, others become anyOf. The decoder
#   picks the first branch, in declaration order, that fits structurally (JSON type; for
#   objects the required keys present and, for closed targets, no unknown key; Literal/Enum
#   membership) and decodes; if that branch's decoding fails deeper down, the next fitting
#   branch is tried, and the first branch's error is reported when none succeeds. Two
#   refinements: a JSON number keeps its kind where the union has both int and float (1.0 a
#   float, 1 an int); classes told apart by a key (a Literal or Enum each requires, no value
#   shared) are decided by that key, whose errors then name it. Messages name classes.
# - Recursion: a recursive class is written once under "$defs" (named by its class name, a
#   number appended on a clash) and referred to with "$ref"; a recursive ROOT is inlined and
#   refers to itself with {"$ref": "#"}, so a tool's root stays {"type": "object", ...}.
#   Non-recursive nested types are inlined, except large repeats (Size, below).
# - Decimal is a string matching a decimal pattern: exact (JSON numbers become floats in
#   Python and lose digits), valid under strict, and what the result encoder writes.
# - bytes is a plain string of base64: the standard alphabet with its padding, nothing else.
# - A bare list/tuple/set/frozenset/dict means items of Any outside strict, and is refused
#   under strict (an array needs items, an object must be closed).
# - Under strict, a field whose null means its default says so in its description
#   ("Default: 3.") when the default is plain JSON.
# - Decoding refuses an unknown argument name with 'unexpected property "x"' at the object's
#   path wherever the target cannot hold it (a function without **kwargs, a dataclass, a
#   NamedTuple, a TypedDict); **kwargs receives it (decoded by its annotation); dict[str, T]
#   and Any hold anything. A ValueError from a class's constructor (__post_init__) becomes a
#   ValidationError at the object's path. Dates and times are RFC 3339 (see _RFC3339), the same on
#   every version; a naive value stays naive.
# - Strict keeps OpenAI's documented subset: pattern, format (date-time, time, date, duration,
#   email, hostname, ipv4, ipv6, uuid), minimum/maximum and exclusive forms, multipleOf,
#   minItems/maxItems. minLength, maxLength, uniqueItems, examples and other formats move into
#   the description, and the decoder enforces the moved constraints. Fixed-length tuples
#   (prefixItems) and dict are refused. Size limits: 5,000 properties, 10 levels of object
#   nesting, 1,000 enum values, 120,000 characters of property names, definition names and
#   enum values, 15,000 characters in one enum of more than 250 strings. A "$ref" with
#   siblings (a description) becomes {"description": ..., "anyOf": [{"$ref": ...}]}.
# - Size: a class that appears in several places and whose schema holds more than
#   _INLINE_LIMIT (16) schema objects is written once under "$defs" and referred to; smaller
#   repeats stay inline (the corpus's). A schema is linear in the size of its types.
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

# Meta field -> the JSON type it constrains; what to write instead on another type.
_META_APPLIES = {
    "minimum": "number",
    "maximum": "number",
    "exclusive_minimum": "number",
    "exclusive_maximum": "number",
    "multiple_of": "number",
    "min_length": "string",
    "max_length": "string",
    "pattern": "string",
    "min_items": "array",
    "max_items": "array",
}
_META_TYPES = {
    "number": frozenset(("number", "integer")),
    "string": frozenset(("string",)),
    "array": frozenset(("array",)),
}
_META_INSTEAD = {
    ("min_length", "array"): "min_items",
    ("max_length", "array"): "max_items",
    ("min_items", "string"): "min_length",
    ("max_items", "string"): "max_length",
    ("minimum", "string"): "min_length",
    ("maximum", "string"): "max_length",
    ("minimum", "array"): "min_items",
    ("maximum", "array"): "max_items",
    ("min_length", "number"): "minimum",
    ("max_length", "number"): "maximum",
    ("min_items", "number"): "minimum",
    ("max_items", "number"): "maximum",
}
# Python-only regex syntax a Meta pattern may not use (patterns are ECMA-262), after escapes
# and character classes are blanked out, with what to write instead.
_PYTHON_ONLY_SYNTAX = (
    (
        r"\(\?[aiLmsux-]+[:)]",
        "inline flags such as (?i) are Python's; spell the cases out ([Aa] for a letter in "
        "either case)",
    ),
    (r"\(\?P[<=>]", "named groups (?P<name>...) are Python's; write a plain group (...)"),
    (r"\(\?#", "comments (?#...) are Python's; remove them"),
    (r"\(\?>|[*+?}]\+", "atomic groups and possessive quantifiers are not ECMA-262; remove them"),
    (r"\{,", "{,n} is Python's; write {0,n}"),
)

# The string formats (the JSON Schema keyword, not the provider formats) a strict schema keeps.
_STRICT_STRING_FORMATS = frozenset(
    ("date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid")
)
_STRICT_MAX_PROPERTIES = 5000
_STRICT_MAX_DEPTH = 10
_STRICT_MAX_ENUM_VALUES = 1000
_STRICT_MAX_CHARS = 120_000
_STRICT_MAX_LONG_ENUM = 250  # an enum of more strings than this ...
_STRICT_MAX_LONG_ENUM_CHARS = 15_000  # ... may hold this many characters in all

_SCALAR_TYPES = frozenset(("string", "integer", "number", "boolean", "null"))
_DECIMAL_PATTERN = r"^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$"  # str(Decimal) writes 0E-8
_MISSING: Any = dataclasses.MISSING
_NONE_TYPE = type(None)
_UNION_TYPES: tuple[Any, ...] = (Union, getattr(types, "UnionType", Union))
_BARE_TUPLE: Any = typing.Tuple  # noqa: UP006 (the bare form, told apart from Tuple[()])
_WRAPPER_NAMES = frozenset(("Required", "NotRequired", "ReadOnly", "Final"))


class _DecodeFail(Exception):
    """A decoding failure on its way up; containers append their path segment."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg)
        self.msg = msg
        self.rpath: list[str | int] = []

    def error(self) -> ValidationError:
        out = ""
        segments = self.rpath[::-1]
        if len(segments) > 2 * _PATH_SHOWN:  # deep data: the path's two ends
            segments[_PATH_SHOWN:-_PATH_SHOWN] = [f"<{len(segments) - 2 * _PATH_SHOWN} more>"]
        for seg in segments:
            if isinstance(seg, int):
                out += f"[{seg}]"
            else:
                out = f"{out}.{seg}" if out else seg
        return ValidationError(out, self.msg)


_PATH_SHOWN = 12  # path segments a decoding error shows at each end of a deeper path


def _join_desc(desc: str | None, extra: str) -> str:
    if not desc:
        return extra
    if desc[-1] in ".!?:;":
        return f"{desc} {extra}"
    return f"{desc}. {extra}"


class _TypeNode:
    """One compiled type: its schema, its decoder, and a shallow fit test for unions.  A class's
    node also has its name and tags (required keys whose type is a Literal or Enum -> their
    values), which name it in union messages and can decide a union of classes."""

    __slots__ = ("schema", "decode", "fits", "admits_none", "ident", "name", "tags")

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
        self.name = ""
        self.tags: dict[str, tuple[Any, ...]] = {}


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
    call the function with; it raises ``ValidationError`` naming the path.  ``injected`` lists
    the parameters the host fills (see :func:`_host_params`).
    """

    __slots__ = ("schema", "decode", "injected")

    def __init__(
        self,
        schema: dict[str, Any],
        decode: Callable[[dict[str, Any]], dict[str, Any]],
        injected: tuple[tuple[str, str, Any], ...] = (),
    ) -> None:
        self.schema = schema
        self.decode = decode
        self.injected = injected


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
        if v.isascii():
            return v
        return _unicode_text(v)
    raise _DecodeFail(f"expected string, got {_describe(v)}")


def _unicode_text(v: str) -> str:
    """The string, unless it holds a lone surrogate (JSON's "\\ud800" escape parses to one): no
    text a tool could write or print holds one."""
    where = _lone_surrogate(v)
    if where:
        raise _DecodeFail(f"expected Unicode text, got {where}")
    return v


def _lone_surrogate(v: str) -> str:
    """Where a string holds a lone surrogate, for a message; "" when it holds none."""
    m = re.search("[\ud800-\udfff]", v)
    return f"a lone surrogate (\\u{ord(m.group()):04x}) at character {m.start()}" if m else ""


def _dec_bool(v: Any) -> Any:
    if v is True or v is False:
        return v
    raise _DecodeFail(f"expected boolean, got {_describe(v)}")


def _dec_int(v: Any) -> Any:
    t = type(v)
    if t is int:
        return v
    if t is float and v.is_integer():
        return int(v)
    if t is float and not _is_finite(v):
        raise _DecodeFail(_NOT_FINITE)
    raise _DecodeFail(f"expected integer, got {_describe(v)}")


_NOT_FINITE = "expected a finite number (JSON has no NaN or infinity; 1e400 is out of range)"


def _dec_float(v: Any) -> Any:
    t = type(v)
    if t is float:
        if _is_finite(v):
            return v
        raise _DecodeFail(_NOT_FINITE)
    if t is int:
        try:
            return float(v)
        except OverflowError:
            raise _DecodeFail(
                f"expected a number within a float's range (about 1.8e308), got an integer of "
                f"{len(str(abs(v)))} digits"
            ) from None
    raise _DecodeFail(f"expected number, got {_describe(v)}")


def _dec_none(v: Any) -> Any:
    if v is None:
        return None
    raise _DecodeFail(f"expected null, got {_describe(v)}")


def _json_key(v: Any) -> tuple[str, Any]:
    """A hashable key under which JSON-equal values meet (1 == 1.0, but true is not 1)."""
    if v is True or v is False:
        return ("b", v)
    if isinstance(v, (int, float)):
        return ("n", v)
    return ("s" if isinstance(v, str) else "z", v)


def _literal_type(v: Any) -> str:
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


# RFC 3339, with the latitude its section 5.6 note and ISO 8601's extended form allow: "t" or a
# space for "T", seconds and fraction optional, any number of fraction digits (microseconds
# kept), "Z"/"z" or a +HH:MM offset.  Compact (20240101) and week (2024-W01) forms are refused on
# every version, although 3.11's fromisoformat takes them.
_RFC3339_DATE = r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
_RFC3339_TIME = (  # hour, minute, second, fraction, offset
    r"([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]+))?)?([Zz]|[+-][0-9]{2}:[0-9]{2})?"
)
_RFC3339 = {
    "date": _RFC3339_DATE,
    "time": _RFC3339_TIME,
    "datetime": _RFC3339_DATE + "(?:[Tt ]" + _RFC3339_TIME + ")?",
}


def _parse_iso(kind: str, cls: Any) -> Callable[[Any], Any]:
    """The decoder of a datetime, date or time class (``kind``) from RFC 3339 text: one meaning
    on every Python version.  A datetime may be a date alone (midnight); a value without an
    offset stays naive."""
    import datetime as dt

    form = re.compile(_RFC3339[kind] + r"\Z", re.ASCII)
    word = {"datetime": "date-time", "date": "date", "time": "time"}[kind]

    def dec(v: Any) -> Any:
        if type(v) is not str:
            raise _DecodeFail(f"expected string, got {_describe(v)}")
        m = form.match(v)
        try:
            if m is None:
                if not v.isascii():
                    _unicode_text(v)  # a lone surrogate is named, never quoted
                raise ValueError(v)
            parts = m.groups()
            if kind == "date":
                return cls(*map(int, parts))
            hour, minute, sec, frac, off = parts[-5:]
            clock = (
                int(hour or 0),
                int(minute or 0),
                int(sec or 0),
                int((frac or "0")[:6].ljust(6, "0")),
            )
            tz = None
            if off in ("Z", "z"):
                tz = dt.timezone.utc
            elif off:
                delta = dt.timedelta(hours=int(off[1:3]), minutes=int(off[4:6]))
                tz = dt.timezone(-delta if off[0] == "-" else delta)
            if kind == "time":
                return cls(*clock, tzinfo=tz)
            return cls(*map(int, parts[:3]), *clock, tzinfo=tz)
        except ValueError:
            raise _DecodeFail(f"expected an RFC 3339 {word}, got {_describe(v)}") from None

    return dec


_BASE64 = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\Z"


def _dec_base64(v: Any) -> Any:
    """Standard base64 (RFC 4648 section 4) with its padding, nothing else: the same verdict on
    every version (b64decode's own validate= differs between 3.9 and 3.13)."""
    if type(v) is not str:
        raise _DecodeFail(f"expected string, got {_describe(v)}")
    if not re.match(_BASE64, v):
        if not v.isascii():
            _unicode_text(v)  # a lone surrogate is named, never quoted
        raise _DecodeFail(
            f"expected base64 (A-Z, a-z, 0-9, + and /, padded with = to a multiple of 4 "
            f"characters), got {_describe(v)}"
        )
    import binascii

    return binascii.a2b_base64(v)


def _converter(cls: Any, word: str) -> Callable[[Any], Any]:
    """A decoder for a string-shaped type built by calling ``cls(str)``."""

    def dec(v: Any) -> Any:
        if type(v) is not str:
            raise _DecodeFail(f"expected string, got {_describe(v)}")
        try:
            return cls(v if v.isascii() else _unicode_text(v))
        except (ValueError, TypeError, ArithmeticError):
            raise _DecodeFail(f"expected {word}, got {_describe(v)}") from None

    return dec


def _dec_decimal_from(cls: Any) -> Callable[[Any], Any]:
    """A Decimal's decoder: text its schema's pattern accepts (what str() writes, exponent
    forms included), nothing Decimal() alone would take besides (" 1", "1_000", "Infinity")."""
    to_str = _converter(cls, "a decimal number")
    form = re.compile(_DECIMAL_PATTERN, re.ASCII)

    def dec(v: Any) -> Any:
        t = type(v)
        if t is int:
            return cls(v)
        if t is float:
            # repr is the shortest text that reads back as the float: the digits the JSON held
            # (0.1 stays 0.1, not Decimal(0.1)'s binary expansion).
            return cls(repr(_dec_float(v)))
        if t is str and form.match(v) is None:
            if not v.isascii():
                _unicode_text(v)  # a lone surrogate is named, never quoted
            raise _DecodeFail(f"expected a decimal number, got {_describe(v)}")
        return to_str(v)

    return dec


# ---------------------------------------------------------------------------------------------
# Type inspection: what an annotation says
# ---------------------------------------------------------------------------------------------


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
        if origin is None or type(origin) is type:  # a marker's origin is a special form
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


def _extension_form(origin: Any) -> str:
    """The name of a typing_extensions special form ("Literal", "LiteralString"), recognised
    without importing typing_extensions; "" for anything else."""
    if type(origin).__module__ == "typing_extensions":
        name = getattr(origin, "_name", None)
        return name if isinstance(name, str) else ""
    return ""


def _is_literal(origin: Any) -> bool:
    """Whether a typing origin is ``Literal``, from typing or typing_extensions (they differ on
    3.9)."""
    return origin is typing.Literal or _extension_form(origin) == "Literal"


def _admits_none(tp: Any) -> bool:
    """Whether the type itself accepts None (Optional, a Union with None, Any, Literal[None])."""
    if type(tp) is type:
        return tp is _NONE_TYPE or tp is object
    if tp is None or tp is _NONE_TYPE or tp is Any or tp is object:
        return True
    origin = typing.get_origin(tp)
    if origin is None:
        return False
    if origin is typing.Annotated:
        return _admits_none(typing.get_args(tp)[0])
    if origin in _UNION_TYPES:
        for a in typing.get_args(tp):  # a loop: a generator costs as much as the rest here
            if _admits_none(a):
                return True
        return False
    if _is_literal(origin):
        return any(a is None for a in typing.get_args(tp))
    return False


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


def _is_object_class(tp: Any) -> bool:
    """Whether a class becomes an object of its fields (a dataclass, TypedDict, NamedTuple or
    attrs class)."""
    return isinstance(tp, type) and (
        dataclasses.is_dataclass(tp) or _is_typeddict(tp) or _is_namedtuple(tp) or _is_attrs(tp)
    )


def _is_attrs(tp: Any) -> bool:
    """Whether ``tp`` is an attrs class (read from its ``__attrs_attrs__``; attrs is never
    imported here)."""
    return isinstance(tp, type) and isinstance(getattr(tp, "__attrs_attrs__", None), tuple)


def _attrs_key(a: Any) -> str:
    """The name an attrs field has in ``__init__`` and in JSON: its alias (``_x`` is ``x``)."""
    alias = getattr(a, "alias", None)
    return alias if isinstance(alias, str) and alias else str(a.name).lstrip("_")


def _is_type_alias(tp: Any) -> bool:
    """Whether ``tp`` is a ``type X = ...`` alias or a TypeAliasType (typing's or
    typing_extensions'), recognised by name."""
    return type(tp).__name__ == "TypeAliasType" and hasattr(tp, "__value__")


def _type_arguments(cls: Any, args: tuple[Any, ...]) -> dict[Any, Any]:
    """Type variable -> type for a generic class's fields: its own parameters bound to
    ``args`` (Box[int]), then what its generic bases were given (class IntBox(Box[int])),
    each base's resolved in terms of the class below it."""
    out: dict[Any, Any] = {}
    own = tuple(getattr(cls, "__parameters__", ()) or ())
    if args:
        if len(args) != len(own):
            raise TypeError(
                f"cannot express type {_tname(cls)}[...]: {cls.__qualname__} takes "
                f"{len(own)} type arguments, got {len(args)}"
            )
        out.update(zip(own, args))
    pending = [(cls, out)]
    seen: set[int] = set()
    while pending:
        klass, here = pending.pop()
        for base in getattr(klass, "__orig_bases__", ()):
            origin = typing.get_origin(base)
            params = tuple(getattr(origin, "__parameters__", ()) or ())
            if not params or id(origin) in seen:
                continue
            seen.add(id(origin))
            given = {p: _substitute(a, here) for p, a in zip(params, typing.get_args(base))}
            for p, a in given.items():
                out.setdefault(p, a)
            pending.append((origin, given))
    return {p: a for p, a in out.items() if a is not p}


def _substitute(tp: Any, typevars: dict[Any, Any]) -> Any:
    """``tp`` with its type variables replaced as ``typevars`` says (list[T] -> list[int])."""
    if not typevars:
        return tp
    if isinstance(tp, typing.TypeVar):
        return typevars.get(tp, tp)
    params = getattr(tp, "__parameters__", None)
    if params and typing.get_origin(tp) is not None:
        try:
            return tp[tuple(typevars.get(p, p) for p in params)]
        except TypeError:
            return tp
    return tp


def _init_false_fields(cls: Any) -> frozenset[str]:
    """A dataclass's fields that __init__ does not take (init=False): output() writes them,
    so decoding accepts them and leaves them to the class to compute."""
    if _is_attrs(cls):
        return frozenset(_attrs_key(a) for a in cls.__attrs_attrs__ if not a.init)
    if not dataclasses.is_dataclass(cls):
        return frozenset()
    return frozenset(f.name for f in dataclasses.fields(cls) if not f.init)


def _class_hints(cls: Any, kind: str) -> dict[str, Any]:
    ready = _evaluated_annotations(cls)
    if ready is not None:
        return ready
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except TypeError as exc:
        # 3.9 and 3.10 refuse a string annotation that is not a type, such as InitVar[int]
        # under `from __future__ import annotations`: evaluate them as written.
        try:
            return _annotations_as_written(cls)
        except Exception:
            _hint_failure(cls, kind, exc)
    except NameError:
        # A self-referencing class defined in a function: let it find its own name.
        try:
            local = {**vars(cls), cls.__name__: cls}
            for param in getattr(cls, "__type_params__", ()):  # class Box[T] (PEP 695)
                local[param.__name__] = param
            return typing.get_type_hints(cls, localns=local, include_extras=True)
        except Exception as exc:
            _hint_failure(cls, kind, exc)
    except Exception as exc:
        _hint_failure(cls, kind, exc)


def _evaluated_annotations(cls: Any) -> dict[str, Any] | None:
    """A class's annotations, its bases' first, when none is left to evaluate (no string, no
    forward reference): what get_type_hints gives, without its cost; else None."""
    out: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        annotations = base.__dict__.get("__annotations__", {})
        if type(annotations) is not dict:
            return None
        for name, ann in annotations.items():
            if ann is None:
                ann = _NONE_TYPE
            elif not _resolved(ann):
                return None
            out[name] = ann
    return out


def _annotations_as_written(cls: Any) -> dict[str, Any]:
    """A class's annotations (its bases' first), each evaluated in its own module."""
    out: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        module = sys.modules.get(base.__module__)
        globalns = vars(module) if module is not None else {}
        localns = {**vars(base), base.__name__: base}
        for name, ann in base.__dict__.get("__annotations__", {}).items():
            out[name] = eval(ann, globalns, localns) if isinstance(ann, str) else ann
    return out


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


# ---------------------------------------------------------------------------------------------
# Docstrings: the descriptions of a tool and of its parameters
# ---------------------------------------------------------------------------------------------

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
    return _clean_doc(doc) if isinstance(doc, str) else ""


@functools.lru_cache(maxsize=512)
def _clean_doc(doc: str) -> str:
    """``inspect.cleandoc``, remembered: one class's docstring is read for every tool using it."""
    return inspect.cleandoc(doc)


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


# Sections a tool's description leaves out: the schema says what they say (parameters), or
# they are about the Python call, not the model's (returns, yields, raises, warns).
_DOC_DROPPED = frozenset(
    (
        "args",
        "arguments",
        "parameters",
        "params",
        "attributes",
        "fields",
        "keyword args",
        "keyword arguments",
        "other parameters",
        "return",
        "returns",
        "yield",
        "yields",
        "receives",
        "raise",
        "raises",
        "warns",
    )
)
_DOC_ITEM = r"(>>>|[-*+|] |\d+[.)] |-{3,}\s*$)"  # a list item, a doctest, a NumPy rule


def _doc_description(fn: Any) -> str:
    """A tool's default description: its docstring without the sections about parameters,
    returns, yields and raises (examples, notes and the rest stay)."""
    return _doc_description_of(_raw_doc(fn))


@functools.lru_cache(maxsize=512)
def _doc_description_of(doc: str) -> str:
    """The docstring's kept text.  Prose lines of a paragraph are folded into one line (a
    one-paragraph docstring reads as it always did); indented lines, list items, doctests
    and the line after a colon keep their lines; paragraphs stay apart by one blank line."""
    lines = doc.splitlines()
    out: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i].rstrip()
        end = _dropped_section_end(lines, i) if line and _section_start(lines, i) else None
        if end is not None:
            i = end
            continue
        if not line:
            if out and out[-1]:
                out.append("")
        elif (
            out
            and out[-1]
            and not line[0].isspace()
            and not out[-1][0].isspace()
            and not out[-1].endswith(":")
            and not re.match(_DOC_ITEM, line)
            and not re.match(_DOC_ITEM, out[-1])
        ):
            out[-1] = _fold([out[-1], line])
        else:
            out.append(line if line[0].isspace() else _fold([line]))
        i += 1
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)


def _dropped_section_end(lines: list[str], i: int) -> int | None:
    """Where the section starting at line ``i`` ends when the description drops it; ``None``
    when it is kept (its lines are read as any others)."""
    s = lines[i].strip()
    numpy = i + 1 < len(lines) and re.match(_DASHES, lines[i + 1].strip()) is not None
    if s.startswith(":"):  # a Sphinx field (:param x:, :returns:, ...) and its continuation
        header = _indent(lines[i])
        i += 1
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > header):
            if lines[i].strip().startswith(":"):
                break
            i += 1
        return i
    if s.rstrip(":").strip().lower() not in _DOC_DROPPED:
        return None
    # A Google section's body is indented under its header (a docstring opening with "Args:"
    # loses that to cleandoc: then it runs to the next section); a NumPy one runs to the next.
    header = -1 if numpy or i == 0 else _indent(lines[i])
    i += 2 if numpy else 1
    while i < len(lines):
        line = lines[i]
        if line.strip():
            if _indent(line) <= header or _section_start(lines, i):
                break
        i += 1
    return i


@functools.lru_cache(maxsize=512)
def _doc_params(doc: str) -> collections.abc.Mapping[str, str]:
    """Parameter descriptions from Google, NumPy or Sphinx sections; never raises.  Remembered
    by text, so a read-only mapping."""
    out: dict[str, str] = {}
    if not doc:
        return types.MappingProxyType(out)
    try:
        lines = doc.splitlines()
        n = len(lines)
        i = 0
        while i < n:
            line = lines[i]
            s = line.strip()
            ind = _indent(line)
            if s.endswith(":") and re.match(_GOOGLE_PARAMS, s):
                # A docstring opening with "Args:" loses its relative indent to cleandoc.
                i = _google_section(lines, i + 1, ind if i else -1, out)
                continue
            if s.lower() in _NUMPY_PARAMS and i + 1 < n and re.match(_DASHES, lines[i + 1].strip()):
                i = _numpy_section(lines, i + 2, _indent(line), out)
                continue
            m = re.match(_SPHINX_ENTRY, s) if s.startswith(":") else None
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
    return types.MappingProxyType(out)


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

# ---------------------------------------------------------------------------------------------
# From types to schemas and decoders: the translator
# ---------------------------------------------------------------------------------------------


class _TypeTranslator:
    """Translates types into _TypeNodes for one schema (one strictness, one set of $defs)."""

    def __init__(self, strict: bool, param: str | None = None, root: Any = None) -> None:
        self.strict = strict
        self.param = param
        self.root = root
        self.path: list[str] = []
        self.defs: dict[str, dict[str, Any]] = {}
        self.def_owner: dict[str, Any] = {}
        self.busy: dict[Any, _ClassState] = {}
        self.done: dict[Any, _TypeNode] = {}
        self.uses: dict[Any, int] = {}  # class -> the places it appears in the types
        self.inlined: list[tuple[Any, dict[str, Any]]] = []  # (class, its schema), done order
        self.top_params = False  # the object being built is a function's parameters
        self.owners: list[Any] = []  # the classes being compiled, innermost last
        self.namespaces: list[dict[str, Any]] = []  # the modules of the aliases being compiled

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

    def translate(self, tp: Any) -> _TypeNode:
        kind = type(tp)
        if kind is type or kind is enum.EnumMeta:  # a plain class: the common case, first
            prim = _PRIMITIVES.get(tp)
            return prim if prim is not None else self.translate_class(tp)
        tp, _ = _unwrap_markers(tp)
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            return self.annotated(tp)
        if origin is not None:  # subscripted: none of the forms checked next has an origin
            return self.subscripted(tp, origin)
        if tp is Any or tp is object:
            return _ANY_NODE
        if tp is None:
            return _PRIMITIVES[_NONE_TYPE]
        supertype = getattr(tp, "__supertype__", None)
        if supertype is not None:  # typing.NewType
            return self.translate(supertype)
        if _is_type_alias(tp):  # `type X = ...` (3.12), or a TypeAliasType
            return self.alias(tp, ())
        if tp is getattr(typing, "LiteralString", str) or _extension_form(tp) == "LiteralString":
            return _PRIMITIVES[str]
        if isinstance(tp, type):
            return self.translate_class(tp)
        if isinstance(tp, typing.TypeVar):
            return self.type_variable(tp)
        if isinstance(tp, (str, typing.ForwardRef)):
            resolved = self.resolve(tp)
            if resolved is not None:
                return self.translate(resolved)
            self.cannot(tp, "an unresolved forward reference")
        self.cannot(tp, "not a type agenttool can describe")

    def subscripted(self, tp: Any, origin: Any) -> _TypeNode:
        """A form with an origin: Union, Literal, an alias or a generic class given types."""
        if origin in _UNION_TYPES:
            return self.union(tp)
        if _is_literal(origin):
            return self.literal(tp)
        if _is_type_alias(origin):  # type Pair[T] = ..., as Pair[int]
            return self.alias(origin, typing.get_args(tp))
        if _is_object_class(origin):  # a generic dataclass, TypedDict or NamedTuple
            return self.object_class(origin, typing.get_args(tp))
        return self.generic(tp, origin, typing.get_args(tp))

    def translate_class(self, tp: type) -> _TypeNode:
        if issubclass(tp, enum.Flag):
            return self.flag_node(tp)
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
        foreign = _foreign_model(tp)
        if foreign is not None:
            return self.foreign_node(tp, *foreign)
        if _is_object_class(tp):
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
            "not a dataclass, TypedDict, NamedTuple, Enum, pydantic model, msgspec Struct or a "
            "supported scalar; use one of those, or supply the schema with parameters=",
        )

    def foreign_node(
        self, tp: type, kind: str, schema: dict[str, Any], decode: Callable[[Any], Any]
    ) -> _TypeNode:
        """A class another library describes (see _foreign_model): its own schema, its
        "$defs" moved into this schema's (renamed where a name is taken), and its own
        validation as the decoder, its errors in this library's form."""
        schema = dict(schema)
        defs = schema.pop("$defs", None) or {}
        renamed: dict[str, str] = {}
        for name, sub in defs.items():
            new = name
            while new in self.defs and self.defs[new] != sub:
                new += "_"
            renamed[name] = new
        for name, sub in defs.items():
            self.defs[renamed[name]] = _renamed_refs(sub, renamed)
        schema = _renamed_refs(schema, renamed)
        if self.strict:
            schema = self.strict_foreign(tp, kind, schema)
        node = _TypeNode(schema, decode, _is_dict)
        node.name = tp.__name__
        return node

    def strict_foreign(self, tp: type, kind: str, schema: dict[str, Any]) -> dict[str, Any]:
        """A strict schema needs every property required and no others: a model with an
        optional field is refused (saying which), else its object is closed."""
        if schema.get("type") != "object" or "properties" not in schema:
            return schema
        optional = sorted(set(schema["properties"]) - set(schema.get("required", ())))
        if optional:
            self.fail(
                f"cannot express {kind} {tp.__name__} in a strict schema: field "
                f"{optional[0]!r} has a default (strict schemas require every property)"
            )
        return {**schema, "additionalProperties": False}

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
        node = self.translate(args[0])
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
                        self.meta_fits(args[0], node.schema, attr, val)
                        schema[key] = list(val) if key == "examples" else val
                if meta.pattern is not None:
                    problem = _ecma_pattern_problem(meta.pattern)
                    if problem:
                        self.fail(f"Meta(pattern={meta.pattern!r}): {problem}")
        if self.strict:
            schema, dec = self.strict_move(schema, dec)
        if schema == node.schema:
            return node
        return _TypeNode(schema, dec, node.fits, node.admits_none, node.ident and dec is _identity)

    def meta_fits(self, tp: Any, schema: dict[str, Any], attr: str, val: Any) -> None:
        """Refuses a Meta keyword that cannot apply to the type (max_length on a list), saying
        what to write instead."""
        applies = _META_APPLIES.get(attr)
        kinds = _json_types(schema)
        if applies is None or kinds is None or kinds & _META_TYPES[applies]:
            return
        have = next(
            k
            for k in ("array", "string", "integer", "number", "boolean", "object", "null")
            if k in kinds
        )
        instead = _META_INSTEAD.get((attr, "number" if have == "integer" else have))
        advice = f"write Meta({instead}={val!r}) instead" if instead else "remove it"
        if attr == "pattern" and have == "array":
            advice = "put it on the item type: list[Annotated[str, Meta(pattern=...)]]"
        elif applies == "number" and tp is _stdlib("decimal", "Decimal"):
            advice = "a Decimal is written as a string; check the bound in the function"
        article = "an" if have[0] in "aeiou" else "a"
        self.fail(
            f"Meta({attr}={val!r}) applies to {applies}s, and {_tname(tp)} is {article} {have}: "
            + advice
        )

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
        if fmt is not None and fmt not in _STRICT_STRING_FORMATS:
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
        nodes = [self.translate(a) for a in args]
        non_null = [n for n in nodes if n.schema != {"type": "null"}]
        if len(non_null) == 1 and len(nodes) == 2:
            inner = non_null[0]
            idec = inner.decode
            ifits = inner.fits

            def dec_opt(v: Any) -> Any:
                return None if v is None else idec(v)

            def fits_opt(v: Any) -> bool:
                return v is None or ifits(v)

            return _TypeNode(_nullable(inner.schema), dec_opt, fits_opt, admits_none=True)
        admits = any(n.admits_none for n in nodes)
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
        label = _join_or([n.name or _label(n.schema) for n in nodes])
        # A JSON number keeps its kind where the union has both: 1.0 a float, 1 an int.
        by_kind = {
            t: [b for n, b in zip(nodes, branches) if n.schema.get("type") == k]
            + [b for n, b in zip(nodes, branches) if n.schema.get("type") != k]
            for t, k in ((int, "integer"), (float, "number"))
        }
        if not all(any(n.schema.get("type") == k for n in nodes) for k in ("integer", "number")):
            by_kind = {}
        classes = [n for n in nodes if n.name]
        objects_elsewhere = any(
            not n.name and "object" in (_json_types(n.schema) or ("object",)) for n in nodes
        )
        tag = "" if objects_elsewhere else _deciding_key(classes)
        decided: dict[Any, Callable[[Any], Any]] = {}
        if tag:
            decided = {_json_key(x): n.decode for n in classes for x in n.tags[tag]}
            names = ", ".join(n.name for n in classes[:-1]) + " and " + classes[-1].name
            shown_tags = ", ".join(_describe(x) for n in classes for x in n.tags[tag])

        def dec(v: Any) -> Any:
            if tag and type(v) is dict:
                if tag not in v:
                    raise _DecodeFail(
                        f'missing required property "{tag}" (it decides between {names})'
                    )
                try:
                    return decided[_json_key(v[tag])](v)
                except (KeyError, TypeError):
                    exc = _DecodeFail(
                        f"expected one of [{shown_tags}] (it decides between {names}), got "
                        f"{_describe(v[tag])}"
                    )
                    exc.rpath.append(tag)
                    raise exc from None
            first: _DecodeFail | None = None
            for fits, d in by_kind.get(type(v), branches):
                if fits(v):
                    try:
                        return d(v)
                    except _DecodeFail as exc:
                        first = first or exc
            if first is not None:
                raise first
            msg = f"expected {label}, got {_describe(v)}"
            if classes and type(v) is dict:
                try:  # what the first class would need, so one retry can fix the call
                    classes[0].decode(v)
                except _DecodeFail as exc:
                    err = exc.error()
                    msg += f"; as {classes[0].name}: " + (
                        f"{err.path}: {err.msg}" if err.path else err.msg
                    )
            raise _DecodeFail(msg)

        def fits_any(v: Any) -> bool:
            return any(f(v) for f, _ in branches)

        return _TypeNode(schema, dec, fits_any, admits_none=admits)

    def literal(self, tp: Any) -> _TypeNode:
        values: list[Any] = []
        members: list[Any] = []
        for a in typing.get_args(tp):
            v = a.value if isinstance(a, enum.Enum) else a
            if not _literal_type(v):
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
            if not _literal_type(m.value):
                self.cannot(tp, f"member {m.name} has value {m.value!r}, not a JSON scalar")
        return self.choice(values, members)

    def flag_node(self, tp: type[enum.Flag]) -> _TypeNode:
        """A Flag or IntFlag is an integer bitmask: any combination of its members, 0 included.
        Its members are read from __members__ (aliases too, in declaration order), which lists
        the same names on every version, unlike iteration."""
        named = [(k, m.value) for k, m in tp.__members__.items() if m.value]
        if not all(type(v) is int and v > 0 for _, v in named):
            self.cannot(tp, "a Flag whose values are not positive integers")
        mask = 0
        for _, v in named:
            mask |= v
        listed = ", ".join(f"{k}={v}" for k, v in named)
        schema = {
            "type": "integer",
            "description": f"A bitmask of the flags {listed} (bitwise OR; 0 for none).",
            "minimum": 0,
            "maximum": mask,
        }

        def dec(v: Any) -> Any:
            n = _dec_int(v)
            if n < 0 or n & ~mask:
                raise _DecodeFail(f"expected a bitmask of the flags {listed}, got {n}")
            return tp(n)

        return _TypeNode(schema, dec, _is_int)

    def choice(self, values: list[Any], members: list[Any]) -> _TypeNode:
        kinds: list[str] = []
        for v in values:
            k = _literal_type(v)
            if k not in kinds:
                kinds.append(k)
        lookup = {_json_key(v): m for v, m in zip(values, members)}

        def dec(v: Any) -> Any:
            try:
                return lookup[_json_key(v)]
            except (KeyError, TypeError):
                if type(v) is str and not v.isascii():
                    _unicode_text(v)  # a lone surrogate is named, never quoted
                shown = ", ".join(_describe(x) for x in values)
                raise _DecodeFail(f"expected one of [{shown}], got {_describe(v)}") from None

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
                return self.translate_class(list)
            return self.array(self.item(args[0]), list)
        if origin in (set, frozenset, abc.Set, abc.MutableSet):
            if not args:
                return self.translate_class(set)
            return self.array(self.item(args[0]), frozenset if origin is frozenset else set)
        if origin is tuple:
            if not args:  # typing.Tuple alone, or tuple[()] (3.11+ and 3.9's tuple[()])
                bare = tp is _BARE_TUPLE
                return self.translate_class(tuple) if bare else self.fixed_tuple(tp, ())
            if len(args) == 2 and args[1] is Ellipsis:
                return self.array(self.item(args[0]), tuple)
            return self.fixed_tuple(tp, args)
        if origin in (dict, abc.Mapping, abc.MutableMapping):
            if not args:
                return self.translate_class(dict)
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
        if isinstance(origin, type):
            self.cannot(
                tp,
                f"{origin.__qualname__} is a generic class that is not a dataclass, TypedDict, "
                "NamedTuple or container; use one of those, or supply the schema with "
                "parameters=",
            )
        self.cannot(tp, f"the typing form {_special_name(origin)}[...] has no JSON shape")

    def item(self, tp: Any) -> _TypeNode:
        self.path.append("[]")
        try:
            return self.translate(tp)
        finally:
            self.path.pop()

    def array(self, item: _TypeNode, build: Any) -> _TypeNode:
        schema: dict[str, Any] = {"type": "array", "items": item.schema}
        idec = item.decode
        ident = item.ident

        def dec_items(v: Any) -> Any:
            if type(v) is not list and type(v) is not tuple:
                raise _DecodeFail(f"expected array, got {_describe(v)}")
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
                items.append(self.translate(a))
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
                raise _DecodeFail(f"expected array, got {_describe(v)}")
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
                raise _DecodeFail(f"expected object, got {_describe(v)}")
            for k in v:
                where = "" if k.isascii() else _lone_surrogate(k)
                if where:
                    raise _DecodeFail(f"expected keys of Unicode text, got {where} of a key")
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

    def object_class(self, cls: Any, args: tuple[Any, ...] = ()) -> _TypeNode:
        """A dataclass, TypedDict or NamedTuple, with ``args`` for its type parameters (a
        generic class written ``Box[int]``); keyed by both, so Box[int] and Box[str] differ."""
        key = (cls, args) if args else cls
        self.uses[key] = self.uses.get(key, 0) + 1
        found = self.made_or_referred(key, cls.__name__)
        if found is not None:
            return found
        state = _ClassState()
        self.busy[key] = state
        self.owners.append(cls)
        try:
            fields = self.class_fields(cls, _type_arguments(cls, args))
            ignored = _init_false_fields(cls)
            node = self.object_node(fields, _class_builder(cls), None, ignored)
        finally:
            del self.busy[key]
            self.owners.pop()
        if key != self.root:
            summary = _doc_summary_of(_raw_doc(cls))
            if summary:
                node.schema = {**node.schema, "description": summary}
        state.decode = node.decode
        state.fits = node.fits
        if state.ref and state.ref != "#":
            self.defs[state.ref[len("#/$defs/") :]] = node.schema
            tags = node.tags
            node = _TypeNode({"$ref": state.ref}, node.decode, node.fits)
            node.tags = tags
        elif key != self.root:
            self.inlined.append((key, node.schema))
        node.name = cls.__name__
        self.done[key] = node
        return node

    def made_or_referred(self, key: Any, name: str | None = None) -> _TypeNode | None:
        """The node made for a class or alias already; while it is being made (a recursive
        reference), a ``$ref`` to it (named ``name``); ``None`` for one not seen yet."""
        done = self.done.get(key)
        if done is not None:
            return done
        st = self.busy.get(key)
        if st is None:
            return None
        if not st.ref:
            st.ref = "#" if key == self.root else "#/$defs/" + self.def_name(key)

        def dec_ref(v: Any) -> Any:
            try:
                return st.decode(v)
            except RecursionError:  # the path is added on the way up
                raise _DecodeFail("nesting too deep for Python to decode") from None

        ref = _TypeNode({"$ref": st.ref}, dec_ref, lambda v: st.fits(v))
        if name is not None:
            ref.name = name
        return ref

    def def_name(self, key: Any) -> str:
        """The "$defs" name of a class or alias (``key`` may be (class, type arguments)): its
        own name, a number appended on a clash."""
        base: str = (key[0] if isinstance(key, tuple) else key).__name__
        name = base
        k = 1
        while self.def_owner.get(name, key) != key:
            k += 1
            name = f"{base}{k}"
        self.def_owner[name] = key
        return name

    # aliases and type variables

    def alias(self, tp: Any, args: tuple[Any, ...]) -> _TypeNode:
        """A ``type X = ...`` alias or a TypeAliasType (``args`` for ``type Pair[T] = ...``
        written ``Pair[int]``).  A recursive alias is written once under "$defs" and referred
        to, as a recursive class is; forward references in its value resolve in its module."""
        key = (tp, args) if args else tp
        found = self.made_or_referred(key)
        if found is not None:
            return found
        params = tuple(getattr(tp, "__type_params__", ()) or ())
        if len(args) != len(params) and args:
            self.cannot(tp, f"takes {len(params)} type arguments, got {len(args)}")
        value = _substitute(tp.__value__, dict(zip(params, args)))
        module = sys.modules.get(getattr(tp, "__module__", "") or "")
        state = _ClassState()
        self.busy[key] = state
        self.namespaces.append(vars(module) if module is not None else {})
        try:
            node = self.translate(value)
        finally:
            del self.busy[key]
            self.namespaces.pop()
        state.decode = node.decode
        state.fits = node.fits
        if state.ref and state.ref != "#":
            self.defs[state.ref[len("#/$defs/") :]] = node.schema
            node = _TypeNode({"$ref": state.ref}, node.decode, node.fits, node.admits_none)
        self.done[key] = node
        return node

    def resolve(self, ref: Any) -> Any:
        """A forward reference inside an alias's value, evaluated in the alias's module; None
        when there is no such module or the name is not there."""
        if not self.namespaces:
            return None
        text = ref if isinstance(ref, str) else ref.__forward_arg__
        try:
            return eval(text, dict(self.namespaces[-1]))
        except Exception:
            return None

    def type_variable(self, tv: Any) -> _TypeNode:
        """A type variable left free (a generic used bare, a generic function's parameter):
        its PEP 696 default, else its bound, else the union of its constraints."""
        has_default = getattr(tv, "has_default", None)
        if callable(has_default) and has_default():
            return self.translate(tv.__default__)
        if tv.__bound__ is not None:
            return self.translate(tv.__bound__)
        if tv.__constraints__:
            return self.translate(Union[tv.__constraints__])
        owner = self.owners[-1].__name__ if self.owners else ""
        advice = (
            f"write {owner}[...] with concrete types, such as {owner}[int]"
            if owner
            else "use a concrete type, or give it a bound"
        )
        self.cannot(tv, f"a free type variable (no bound, constraints or default): {advice}")

    def class_fields(self, cls: Any, typevars: dict[Any, Any]) -> list[_Field]:
        hints = _class_hints(cls, "field")
        if typevars:
            hints = {name: _substitute(tp, typevars) for name, tp in hints.items()}
        docs = _doc_params(_raw_doc(cls))
        fields: list[_Field] = []
        if dataclasses.is_dataclass(cls):
            # __init__'s parameters: the fields with init=True and the InitVar pseudo-fields
            # (arguments of __init__ that __post_init__ receives), in declaration order.
            regular = {f.name for f in dataclasses.fields(cls)}
            for f in cls.__dataclass_fields__.values():
                tp = hints.get(f.name, f.type)
                if isinstance(tp, dataclasses.InitVar):
                    tp = tp.type
                elif tp is dataclasses.InitVar:
                    self.path.append(f.name)
                    self.fail("an InitVar needs its type: write InitVar[T]")
                elif f.name not in regular:
                    continue  # a ClassVar
                if not f.init:
                    continue
                has = f.default is not _MISSING or f.default_factory is not _MISSING
                default = f.default if f.default is not _MISSING else _MISSING
                desc = f.metadata.get("description") if f.metadata else None
                fields.append(_Field(f.name, tp, has, default, None, desc or docs.get(f.name)))
        elif _is_attrs(cls):
            for a in cls.__attrs_attrs__:
                if not a.init:
                    continue
                tp = hints.get(a.name, a.type)
                if tp is None:
                    self.path.append(a.name)
                    self.fail("has no type; give the attrs field a type annotation")
                default = a.default
                has = type(default).__name__ != "_Nothing"  # attrs.NOTHING: required
                plain = has and not hasattr(default, "factory")  # a Factory has no value
                desc = a.metadata.get("description") if a.metadata else None
                fields.append(
                    _Field(
                        _attrs_key(a),
                        tp,
                        has,
                        default if plain else _MISSING,
                        None,
                        desc or docs.get(a.name),
                    )
                )
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
        ignored: frozenset[str] = frozenset(),
    ) -> _TypeNode:
        """The object for a list of fields; ``build`` turns the decoded keyword dict into the
        target (None keeps the dict), ``extras`` decodes unknown names (a **kwargs), and the
        ``ignored`` names (a dataclass's init=False fields) are accepted and left out."""
        strict = self.strict
        props: dict[str, Any] = {}
        required: list[str] = []
        table: dict[str, tuple[Callable[[Any], Any], bool, bool]] = {}
        needed: list[str] = []
        tags: dict[str, tuple[Any, ...]] = {}
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
            if py_required and "enum" in schema and None not in schema["enum"]:
                tags[f.name] = tuple(schema["enum"])
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
        known = frozenset(table) | ignored

        def dec(v: Any) -> Any:
            if type(v) is not dict:
                raise _DecodeFail(f"expected object, got {_describe(v)}")
            kw: dict[str, Any] = {}
            seen = 0
            for k, x in v.items():
                entry = table.get(k)
                try:
                    if entry is None:
                        if k in ignored:
                            continue
                        if xdec is None:
                            first = min(key for key in v if key not in known)
                            raise _DecodeFail(f"unexpected property {_quote(first)}")
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

        node = _TypeNode(out, dec, fits)
        node.tags = tags
        return node

    def field(self, f: _Field) -> tuple[dict[str, Any], Callable[[Any], Any], bool]:
        """A property's schema and decoder; True when null means its default (strict)."""
        tp = f.tp
        if f.has_default and f.default is None and not _admits_none(tp):
            tp = Optional[tp]  # a None default makes the type Optional, on every version
        node = self.translate(tp)
        dec = node.decode
        schema = node.schema
        if f.doc and not _has_own_description(tp):  # Annotated wins, then the field's doc
            schema = {**schema, "description": f.doc}
        null_default = False
        if self.strict and f.has_default and not _admits_none(tp):
            null_default = True
            schema = _nullable(schema)
            text = _default_text(f.default)
            if text is not None:
                schema["description"] = _join_desc(schema.get("description"), text)
        return schema, dec, null_default

    def finish(self, schema: dict[str, Any]) -> dict[str, Any]:
        if any(self.uses[cls] > 1 for cls, _ in self.inlined):
            schema = self.share_repeats(schema)
        if self.defs:
            schema = {**schema, "$defs": self.defs}
        out: dict[str, Any] = _ordered(schema)
        if self.strict:
            out = _refs_alone(out)
            _check_strict_limits(out)
        return out

    def share_repeats(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Moves each class that appears in more than one place and whose schema is bigger than
        _INLINE_LIMIT schema objects under "$defs", so the schema stays linear in the size of
        the types (inlined, a class used twice at each of 15 levels is 2**15 copies).  Smaller
        repeats stay inline.  Classes are decided in the order they were finished, nested ones
        first, each counting a shared class inside it as one object."""
        sizes: dict[int, int] = {}  # id(a class's "properties") -> its size inline
        shared: dict[int, tuple[str, dict[str, Any]]] = {}
        for cls, own in self.inlined:
            size = _inline_size(own, sizes, top=True)
            if self.uses[cls] > 1 and size > _INLINE_LIMIT:
                shared[id(own["properties"])] = ("#/$defs/" + self.def_name(cls), own)
                size = 1
            sizes[id(own["properties"])] = size
        if not shared:
            return schema
        memo: dict[int, Any] = {}
        defs = {name: _share(s, shared, memo, top=True) for name, s in self.defs.items()}
        for ref, own in shared.values():
            defs[ref[len("#/$defs/") :]] = _share(own, shared, memo, top=True)
        self.defs = defs
        out: dict[str, Any] = _share(schema, shared, memo, top=True)
        return out


_INLINE_LIMIT = 16  # schema objects a class repeated in several places may have, inline
_SUBSCHEMA_LISTS = ("anyOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "$defs")
_SUBSCHEMAS = ("items", "additionalProperties")


def _foreign_model(tp: type) -> tuple[str, dict[str, Any], Callable[[Any], Any]] | None:
    """A class a library describes by its own protocol, never imported here: a pydantic
    model (``model_json_schema``, ``model_validate``) or a msgspec Struct (through the msgspec
    module that defined it); its kind, its schema and its decoder, or None."""
    if callable(getattr(tp, "model_json_schema", None)) and callable(
        getattr(tp, "model_validate", None)
    ):
        return "pydantic model", tp.model_json_schema(), _foreign_decoder(tp.model_validate)  # type: ignore[attr-defined]
    msgspec = sys.modules.get("msgspec")
    if msgspec is not None and isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        schema = msgspec.json.schema(tp)
        ref = schema.get("$ref", "")
        if ref.startswith("#/$defs/") and len(schema) == 2:  # msgspec refers even at the top
            defs = dict(schema["$defs"])
            top = defs.pop(ref[8:])
            if ref in json.dumps(top) or ref in json.dumps(defs):  # recursive: keep the ref
                defs[ref[8:]] = top
                top = {"$ref": ref}
            schema = {**top, "$defs": defs} if defs else top
        return "msgspec Struct", schema, _foreign_decoder(lambda v: msgspec.convert(v, tp))
    return None


def _foreign_decoder(validate: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A decoder through another library's validation: its error as a _DecodeFail, at the
    path it names (pydantic's ``errors()`` locations)."""

    def dec(v: Any) -> Any:
        try:
            return validate(v)
        except (ValueError, TypeError) as exc:
            errors = getattr(exc, "errors", None)
            first = errors()[0] if callable(errors) and errors() else None
            fail = _DecodeFail(str(first.get("msg", exc)) if first else _safe_str(exc))
            if first:
                fail.rpath = [
                    p for p in reversed(first.get("loc", ())) if isinstance(p, (str, int))
                ]
            raise fail from exc

    return dec


def _renamed_refs(node: Any, renamed: dict[str, str]) -> Any:
    """``node`` with each ``"$ref": "#/$defs/<old>"`` pointing at its new name."""
    if isinstance(node, dict):
        out = {k: _renamed_refs(v, renamed) for k, v in node.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in renamed:
            out["$ref"] = "#/$defs/" + renamed[ref[8:]]
        return out
    if isinstance(node, list):
        return [_renamed_refs(v, renamed) for v in node]
    return node


def _inline_size(schema: Any, sizes: dict[int, int], top: bool = False) -> int:
    """Schema objects in a generated schema, a class's schema below the top counting as its
    size in ``sizes`` (which already counts the shared classes inside it as one)."""
    if not isinstance(schema, dict):
        return 0
    props = schema.get("properties")
    if not top and props is not None and id(props) in sizes:
        return sizes[id(props)]
    n = 1
    for key in _SUBSCHEMA_MAPS:
        for sub in schema.get(key, {}).values():
            n += _inline_size(sub, sizes)
    for key in _SUBSCHEMAS:
        n += _inline_size(schema.get(key), sizes)
    for key in _SUBSCHEMA_LISTS:
        for sub in schema.get(key, ()):
            n += _inline_size(sub, sizes)
    return n


def _share(
    schema: Any,
    shared: dict[int, tuple[str, dict[str, Any]]],
    memo: dict[int, Any],
    top: bool = False,
) -> Any:
    """The schema with every shared class replaced by its "$ref" (keeping what the place added
    to it, such as a description); ``memo`` visits each object once, since the schemas
    compiled from types share their parts."""
    if not isinstance(schema, dict):
        return schema
    hit = memo.get(id(schema))
    if hit is not None and not top:
        return hit
    props = schema.get("properties")
    entry = shared.get(id(props)) if props is not None and not top else None
    if entry is not None:
        ref, own = entry
        out: dict[str, Any] = {"$ref": ref}
        for k, v in schema.items():  # what this place added, such as its own description
            if own.get(k, _MISSING) is not v:
                out[k] = v
    else:
        out = dict(schema)
        for key in _SUBSCHEMA_MAPS:
            if key in out:
                out[key] = {k: _share(v, shared, memo) for k, v in out[key].items()}
        for key in _SUBSCHEMAS:
            if key in out:
                out[key] = _share(out[key], shared, memo)
        for key in _SUBSCHEMA_LISTS:
            if key in out:
                out[key] = [_share(v, shared, memo) for v in out[key]]
    if not top:
        memo[id(schema)] = out
    return out


def _refs_alone(schema: Any) -> Any:
    """A strict schema where no "$ref" has siblings (OpenAI's strict mode refuses them): the
    reference goes into a one-branch "anyOf" beside the description."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k in _SUBSCHEMA_MAPS:
            v = {name: _refs_alone(s) for name, s in v.items()}
        elif k in _SUBSCHEMAS:
            v = _refs_alone(v)
        elif k in _SUBSCHEMA_LISTS:
            v = [_refs_alone(s) for s in v]
        out[k] = v
    if "$ref" in out and len(out) > 1:
        ref = out.pop("$ref")
        out = _ordered({**out, "anyOf": [{"$ref": ref}]})
    return out


def _deciding_key(classes: list[_TypeNode]) -> str:
    """The key whose value tells a union's classes apart: one every class requires as a
    Literal or Enum, with no value shared by two classes; "" when there is none."""
    if len(classes) < 2:
        return ""
    for key in classes[0].tags:
        seen: set[Any] = set()
        count = 0
        for n in classes:
            values = n.tags.get(key)
            if values is None:
                break
            seen.update(_json_key(x) for x in values)
            count += len(values)
        else:
            if len(seen) == count:
                return key
    return ""


def _then(dec: Callable[[Any], Any], conv: Any) -> Callable[[Any], Any]:
    def decoded(v: Any) -> Any:
        return conv(dec(v))

    return decoded


def _set_guard(dec: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def decoded(v: Any) -> Any:
        try:
            return dec(v)
        except TypeError as exc:  # an unhashable item
            raise _DecodeFail(f"items cannot form a set: {exc}") from None

    return decoded


def _length_check(
    dec: Callable[[Any], Any], lo: int | None, hi: int | None
) -> Callable[[Any], Any]:
    def decoded(v: Any) -> Any:
        if type(v) is str:
            if lo is not None and len(v) < lo:
                raise _DecodeFail(f"expected at least {lo} characters, got {len(v)}")
            if hi is not None and len(v) > hi:
                raise _DecodeFail(f"expected at most {hi} characters, got {len(v)}")
        return dec(v)

    return decoded


def _unique_check(dec: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def decoded(v: Any) -> Any:
        if type(v) is list or type(v) is tuple:
            seen: set[str] = set()
            for i, x in enumerate(v):
                key = json.dumps(x, sort_keys=True)
                if key in seen:
                    raise _DecodeFail(f"expected unique items, item {i} repeats an earlier one")
                seen.add(key)
        return dec(v)

    return decoded


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
        return "one of [" + ", ".join(_describe(v) for v in schema["enum"]) + "]"
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


def _json_types(schema: dict[str, Any]) -> frozenset[str] | None:
    """The JSON types a generated schema admits; None where it cannot tell (Any)."""
    t = schema.get("type")
    if isinstance(t, str):
        return frozenset((t,))
    if isinstance(t, list):
        return frozenset(t)
    if "$ref" in schema:
        return frozenset(("object",))
    if "anyOf" in schema:
        out: set[str] = set()
        for branch in schema["anyOf"]:
            kinds = _json_types(branch)
            if kinds is None:
                return None
            out |= kinds
        return frozenset(out)
    return None


def _ecma_pattern_problem(source: str) -> str:
    """What makes a Meta pattern unfit for a schema whose patterns are ECMA-262 ("" when
    nothing): Python-only syntax (with what to write instead), or what the validator's
    ECMA-262 parser refuses."""
    blanked = re.sub(r"\\[^AZ]", "_", source)
    anchor = re.search(r"\\[AZ]", blanked)
    if anchor:
        return f"{anchor.group()} is Python's; write {'$' if anchor.group().endswith('Z') else '^'}"
    blanked = re.sub(r"\[(?:\\.|[^\]\\])*\]", "_", blanked)
    for syntax, advice in _PYTHON_ONLY_SYNTAX:
        if re.search(syntax, blanked):
            return advice
    refused = _ecma_pattern_error(source)
    return f"not a valid ECMA-262 pattern: {refused}" if refused else ""


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
            values = s["enum"]
            enums += len(values)
            text = sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in values)
            chars += text
            strings = [v for v in values if isinstance(v, str)]
            if len(strings) > _STRICT_MAX_LONG_ENUM and text > _STRICT_MAX_LONG_ENUM_CHARS:
                raise TypeError(
                    f"strict schema too large: an enum of {len(strings):,} strings holding "
                    f"{text:,} characters; strict providers allow {_STRICT_MAX_LONG_ENUM_CHARS:,}"
                    f" characters in an enum of more than {_STRICT_MAX_LONG_ENUM} strings"
                )
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


# ---------------------------------------------------------------------------------------------
# Functions: a signature as a tool's parameters
# ---------------------------------------------------------------------------------------------


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
    if type(tp) is type:
        return True
    if isinstance(tp, (str, typing.ForwardRef)):
        return False
    origin = typing.get_origin(tp)
    if origin is None or _is_literal(origin):
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


def _function_parts(
    fn: Any,
) -> tuple[list[tuple[str, str, Any]], dict[str, Any], collections.abc.Mapping[str, str]]:
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
    params, injected, hidden = _host_params(fn, params, hints)
    if struct:
        if len(params) != 1:
            raise TypeError(
                f"struct=True needs exactly one parameter (a dataclass or TypedDict) besides "
                f"the injected ones, got {len(params)}"
            )
        pname = params[0][0]
        tp = _unwrap_markers(hints.get(pname, Any))[0]
        while typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
        if not (dataclasses.is_dataclass(tp) and isinstance(tp, type)) and not _is_typeddict(tp):
            raise TypeError(
                f'parameter "{pname}": struct=True needs a dataclass or TypedDict, got {_tname(tp)}'
            )
        comp = _TypeTranslator(strict, root=tp)
        node = comp.object_class(tp)
        schema = comp.finish(node.schema)
        root_dec = node.decode

        def decode_struct(args: dict[str, Any]) -> dict[str, Any]:
            try:
                return {pname: root_dec(args)}
            except _DecodeFail as exc:
                raise exc.error() from None

        return _ArgSpec(schema, decode_struct, injected)

    comp = _TypeTranslator(strict)
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
            if name in ("self", "cls") and kind == _POS and name == params[0][0]:
                raise TypeError(_method_advice(fn, name))
            raise TypeError(
                f'parameter "{name}": no type annotation; write {name}: Any to accept '
                "any JSON value"
            )
        comp.param = name
        if kind == _VAR_KW:
            unpacked = _unpacked_typeddict(hints[name])
            if unpacked is None:
                extras = comp.translate(hints[name])
                continue
            # **kwargs: Unpack[TD] (PEP 692): the TypedDict's keys are named parameters
            for f in comp.class_fields(unpacked, {}):
                if any(f.name == p[0] for p in params):
                    raise TypeError(
                        f'parameter "**{name}": {_tname(unpacked)} has the key "{f.name}", '
                        "which is also a parameter"
                    )
                fields.append(f)
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
    # Without **kwargs the decoder refuses every name it does not know; with it, a hidden name
    # would land in **kwargs (or override a partial's keyword), so it is refused here.
    refused = hidden if extras is not None else frozenset()

    def decode_args(args: dict[str, Any]) -> dict[str, Any]:
        if refused and not refused.isdisjoint(args):
            _refuse_keys(args, refused)
        try:
            out: dict[str, Any] = obj_dec(args)
            return out
        except _DecodeFail as exc:
            raise exc.error() from None

    return _ArgSpec(schema, decode_args, injected)


def _unpacked_typeddict(tp: Any) -> Any:
    """The TypedDict of ``Unpack[TD]`` (typing's or typing_extensions'), else None."""
    origin = typing.get_origin(tp)
    if origin is None or _special_name(origin) != "Unpack":
        return None
    inner = typing.get_args(tp)[0]
    if not _is_typeddict(inner):
        raise TypeError(f"**kwargs: Unpack[...] needs a TypedDict, got {_tname(inner)}")
    return inner


def _method_advice(fn: Any, first: str) -> str:
    """What to write instead of ``@tool`` on a method in a class body, where the function is
    not yet bound and its first parameter would become an argument the model fills."""
    path = getattr(fn, "__qualname__", "").split(".")
    owner = path[-2] if len(path) > 1 and path[-2] != "<locals>" else "its class"
    name = getattr(fn, "__name__", "method")
    made = f"an instance: agenttool.tool(instance.{name})"
    if first == "cls":
        made = f"the class: agenttool.tool({owner}.{name}) with {name} a @classmethod"
    return (
        f'parameter "{first}": {name} looks like a method of {owner}, and {first} is not the '
        f"model's to fill. @tool in a class body sees the plain function: make the tool from "
        f"{made}, or write @staticmethod above @tool and drop {first}"
    )


def _host_params(
    fn: Any, params: list[tuple[str, str, Any]], hints: dict[str, Any]
) -> tuple[list[tuple[str, str, Any]], tuple[tuple[str, str, Any], ...], frozenset[str]]:
    """Splits a function's parameters into the model's and the host's.

    The host's are those a ``functools.partial`` bound by keyword (already given), a parameter
    typed :class:`Call` (it receives the call) and ``Annotated[T, Inject("key")]`` (the host's
    value for ``key``).  The model never sees them: they are in no schema and no message, and
    a model that sends one is refused like any unknown property.  Returns the model's
    parameters, ``(name, key, default)`` per injected parameter (key ``""`` for the call),
    and every hidden name.
    """
    bound: set[str] = set()
    target = fn
    while isinstance(target, functools.partial):
        bound.update(target.keywords)
        target = target.func
    model: list[tuple[str, str, Any]] = []
    injected: list[tuple[str, str, Any]] = []
    for name, kind, default in params:
        if name in bound:
            continue
        key = _injection_key(hints[name]) if name in hints else None
        if key is None:
            model.append((name, kind, default))
        elif kind in (_POS, _KW):
            injected.append((name, key, default))
        else:
            raise TypeError(f'parameter "{name}": an injected parameter must be passable by name')
    hidden = frozenset(bound).union(name for name, _, _ in injected)
    return model, tuple(injected), hidden


def _injection_key(tp: Any) -> str | None:
    """``""`` for a parameter typed :class:`Call` (``Optional`` or ``Annotated`` too), the key
    of an :class:`Inject` marker, ``None`` for a parameter the model fills."""
    if tp is Call:
        return ""
    if type(tp) is type:
        return None
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        for marker in tp.__metadata__:
            if isinstance(marker, Inject):
                return marker.key
        return _injection_key(typing.get_args(tp)[0])
    if origin in _UNION_TYPES:
        members = [a for a in typing.get_args(tp) if a is not _NONE_TYPE]
        if len(members) == 1:
            return _injection_key(members[0])
    return None


def _refuse_keys(
    args: dict[str, Any], names: collections.abc.Set[str], unknown: bool = False
) -> None:
    """Refuses the arguments named in ``names`` (with ``unknown``, those not named there) as
    the validator refuses an unknown property: the first in sorted order."""
    bad = [k for k in args if (k not in names) is unknown]
    if bad:
        raise ValidationError("", _m_unexpected(min(bad)))


def _type_spec(tp: Any, strict: bool) -> tuple[dict[str, Any], Callable[[Any], Any]]:
    root: Any = tp if isinstance(tp, type) or _is_type_alias(tp) else None
    origin = typing.get_origin(tp)
    if _is_object_class(origin) or _is_type_alias(origin):
        root = (origin, typing.get_args(tp))  # Box[int]: the key object_class and alias use
    comp = _TypeTranslator(strict, root=root)
    node = comp.translate(tp)
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


# ---------------------------------------------------------------------------------------------
# JSON Schema validation
#
# validator(schema) compiles a JSON Schema (2020-12, 2019-09, 7 or 6) once into a Validator whose
# validate(value) and validate_json(text) raise ValidationError(path, msg).  Each keyword writes
# a few lines of Python through its generator (_KEYWORDS, the table from keyword to generator);
# the whole schema becomes one module of source that compile() turns into functions, like
# fastjsonschema does, and the code runs faster than fastjsonschema's (the README's Benchmarks).
# Schema strings reach the source only through repr(); regexes and other values are constants.
#
# Decisions, stated once:
# - Drafts: no $schema means 2020-12, also honouring draft 7's spellings (items as an array with
#   additionalItems, dependencies, definitions).  The URIs of drafts 2020-12, 2019-09, 7 and 6
#   (http or https, with or without "#") select that draft: each ignores the keywords it does
#   not know (_UNKNOWN); in 7 and 6 $ref hides its siblings; 2019-09 has $recursiveRef (a
#   function per dynamic scope, _Site.scope).  Any other $schema is a SchemaError.
# - Refused when compiled, with a SchemaError naming the keyword and its place: a schema that
#   is not JSON (a tuple, a key that is not a string: the cache is keyed by the JSON text, so
#   one answer per schema), a keyword value the draft's metaschema refuses anywhere in the
#   schema (_keyword_fault: an unknown type name, a negative count, draft 4's boolean
#   exclusiveMinimum...), a cycle of subschemas applied to the same value (_refuse_cycles),
#   unevaluatedProperties and unevaluatedItems (unless true), $dynamicRef, $recursiveRef
#   outside 2019-09, a $ref outside the document or that does not resolve, an invalid pattern.
# - Ignored, as the specification says: annotations (title, description, default, examples,
#   $comment, format, content*, readOnly...), $vocabulary and unknown keywords.
# - JSON truths: true is not a number, 1.0 is an integer, enum/const/uniqueItems use JSON
#   equality (1 == 1.0 but true != 1), lengths count code points, a tuple is an array.
#   pattern is an ECMA-262 regex (the u flag), searched in time linear in the string: see
#   "ECMA-262 patterns" below.
# - JSON text (_loads, also for tool arguments): NaN, Infinity, 1e400 and a key written twice
#   are refused; an integer over Python's digit limit is refused in JSON terms.  A key that is
#   not a string (from Python) is refused wherever checking looks at keys.
# - Messages stay within about 2 KB: what they quote is cut (_quote, _listing, _format_path),
#   saying how much was left out, and lone surrogates are escaped.
# - Nesting: validate_json reports "nesting too deep" when the parser gives up; validate
#   reports it wherever checking walks deeper than the recursion limit.  A schema that does not
#   look inside a value ({} or true) accepts it without walking it.
# - Messages follow the Go seed: required (in the list's order) before properties, properties
#   in sorted name order (an unexpected key sorting first wins), enum before type except that a
#   null the type refuses is a type error.  Paths are dotted with [i] for items; a key that is
#   not a Python identifier is written ["content-type"].  Keys matched only by
#   patternProperties or an additionalProperties schema are checked in the object's order.
# ---------------------------------------------------------------------------------------------

# ----- runtime helpers the generated code calls ----------------------------------------------
# Only on the error path, except _canon and _dup.


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


_HASHED_ALIKE = frozenset([str, int, float, bool, type(None)])


def _dup(items: Any) -> tuple[int, int] | None:
    """The indexes of the first two equal items, or None."""
    if set(map(type, items)) <= _HASHED_ALIKE and len(set(items)) == len(items):
        return None  # JSON-equal scalars are equal in Python too (1 == 1.0), so none are
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
    if isinstance(v, float) and not _is_finite(v):
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
    return f"missing required property {_quote(missing)}"


def _m_dependent(obj: Any, names: tuple[str, ...], when: str) -> str:
    missing = next(n for n in names if n not in obj)
    return f"missing required property {_quote(missing)} (required when {_quote(when)} is present)"


def _first_extra(obj: Any, known: Callable[[str], bool]) -> object | None:
    """The unexpected key reported: a key that is not a string first, else the least."""
    odd: list[object] = [k for k in obj if not isinstance(k, str)]
    if odd:
        return odd[0]
    extras: list[str] = [k for k in obj if not known(k)]
    return min(extras) if extras else None


def _extra_first(
    err: _Invalid, obj: Any, known: Callable[[str], bool], depth: int, path: tuple[object, ...]
) -> _Invalid:
    """Keys are checked in sorted order: an unexpected key sorting first wins over ``err``."""
    extra = _first_extra(obj, known)
    if extra is not None and len(err.path) > depth:
        failed = err.path[depth]
        if not isinstance(extra, str) or (isinstance(failed, str) and extra < failed):
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
        return _Invalid(_m_type(v, _cut(_join_or([shape for _, shape, _ in infos]), _LIST_LIMIT)))
    shapes = [shape for _, shape, _ in infos]
    listed = ", ".join(shapes[:-1]) + ", or " + shapes[-1] if len(shapes) > 1 else shapes[0]
    listed = _cut(listed, _LIST_LIMIT)
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


# ----- the compiler: schema -> Python source -> functions ------------------------------------

_DRAFT6 = 6
_DRAFT7 = 7
_DRAFT2019 = 2019
_DRAFT2020 = 2020
_SCHEMA_URIS = {
    "http://json-schema.org/draft-06/schema": _DRAFT6,
    "https://json-schema.org/draft-06/schema": _DRAFT6,
    "http://json-schema.org/draft-07/schema": _DRAFT7,
    "https://json-schema.org/draft-07/schema": _DRAFT7,
    "http://json-schema.org/draft/2019-09/schema": _DRAFT2019,
    "https://json-schema.org/draft/2019-09/schema": _DRAFT2019,
    "http://json-schema.org/draft/2020-12/schema": _DRAFT2020,
    "https://json-schema.org/draft/2020-12/schema": _DRAFT2020,
}
_ONLY_2020 = frozenset(  # unknown keywords to drafts 6 and 7, so ignored there
    ["prefixItems", "dependentRequired", "dependentSchemas", "minContains", "maxContains",
     "$anchor", "$dynamicAnchor", "$dynamicRef", "unevaluatedProperties", "unevaluatedItems",
     "$defs", "$recursiveAnchor", "$vocabulary"]
)  # fmt: skip
# The keywords each draft does not know (ignored there, as unknown keywords are).
_UNKNOWN = {
    _DRAFT6: _ONLY_2020 | {"if", "then", "else"},
    _DRAFT7: _ONLY_2020,
    _DRAFT2019: frozenset(["prefixItems", "$dynamicAnchor", "$dynamicRef"]),
    _DRAFT2020: frozenset(),
}
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
    "array": "(type({v}) is list or isinstance({v}, (list, tuple)))",  # two types cost more
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
    "_m_key": _m_key,
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


# Draft 2019-09's dynamic scope, as far as $recursiveRef needs it: the outermost schema resource
# entered with "$recursiveAnchor": true (its node, its base and its location), or None.
_Scoped = Optional[tuple[Any, str, str]]


def _pointer_escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


class _Site:
    """Where generated code for one subschema goes: the variable holding the value, its path,
    the indentation and how many blocks deep it sits (both bounded), the schema location (for
    SchemaError), the base URI and the type known."""

    __slots__ = (
        "var",
        "path",
        "indent",
        "depth",
        "loc",
        "base",
        "known",
        "present",
        "fetched",
        "scope",
    )

    def __init__(
        self,
        var: str,
        path: tuple[str, ...],
        indent: int,
        depth: int,
        loc: str,
        base: str,
        known: frozenset[str] | None,
        scope: _Scoped = None,
    ) -> None:
        self.var = var
        self.path = path  # Python expressions, one per path segment
        self.indent = indent
        self.depth = depth
        self.loc = loc
        self.base = base
        self.known = known
        self.present: frozenset[str] = frozenset()  # keys a required check has proven there
        self.fetched: dict[str, str] = {}  # of those, the ones already read: name -> variable
        self.scope = scope  # draft 2019-09: the outermost resource with $recursiveAnchor true

    def child(self, var: str, seg: str | None, loc: str, indent: int = 0, blocks: int = 0) -> _Site:
        """The site of a subschema ``indent`` levels and ``blocks`` blocks further in."""
        path = self.path if seg is None else self.path + (seg,)
        return _Site(
            var, path, self.indent + indent, self.depth + blocks, loc, self.base, None, self.scope
        )


_Generator = Callable[["_Compiler", _Site, dict[str, Any]], None]


class _Compiler:
    """Writes the source of one schema: a function per referenced subschema, one per branch."""

    def __init__(self, root: Any, draft: int) -> None:
        self.root = root
        self.draft = draft
        self.lines: list[str] = []
        self.consts: dict[str, object] = dict(_HELPERS)
        self.hides = draft in (_DRAFT6, _DRAFT7)  # $ref hides its siblings
        self.unknown = _UNKNOWN[draft]
        self.functions: dict[tuple[int, str, int], str] = {}
        self.pending: list[tuple[str, Any, str, str, _Scoped]] = []
        self.counter = 0
        self.resources: dict[str, Any] = {}
        self.anchors: dict[str, Any] = {}
        self.bases: dict[int, str] = {}
        self.nodes: list[tuple[Any, str, str]] = []  # every subschema: node, base, location
        self.refers = False  # a subschema holds a reference: only then can subschemas cycle
        self.resources[_ROOT_BASE] = root
        self._index_resources(root, _ROOT_BASE, "#", False)
        if self.refers:
            self._refuse_cycles()

    # -- errors and small emitters ------------------------------------------------------------

    def error(self, loc: str, keyword: str, msg: str) -> SchemaError:
        return SchemaError(f'schema keyword "{keyword}" at {_cut(loc, _PATH_LIMIT)}: {msg}')

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
        if isinstance(value, float) and _is_finite(value):
            return repr(value)
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() < 3000:
            return repr(value)
        return self.const(value)

    # -- references -----------------------------------------------------------------------------

    def _keys(self, node: dict[str, Any]) -> dict[str, Any]:
        """The keywords this draft honours in ``node`` (drafts 6 and 7: $ref hides its
        siblings; each draft ignores the keywords it does not know)."""
        if self.hides and "$ref" in node:
            return {"$ref": node["$ref"]}
        if self.unknown.isdisjoint(node):
            return node
        return {k: v for k, v in node.items() if k not in self.unknown}

    def _join(self, base: str, ref: str) -> str:
        if ref.startswith("#"):
            return base.partition("#")[0] + ref
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", ref):
            return ref
        from urllib.parse import urljoin

        return urljoin(base, ref)

    def _own_base(self, node: dict[str, Any], base: str) -> str:
        """The base URI inside ``node``: its own ``$id`` (not a bare fragment) applied."""
        ident = node.get("$id")
        if isinstance(ident, str) and not ident.startswith("#"):
            if not (self.hides and "$ref" in node):
                return self._join(base, ident).partition("#")[0]
        return base

    def _index_resources(self, node: Any, base: str, loc: str, hidden: bool) -> None:
        """Check every subschema's keywords and record every $id, $anchor and the base URI in
        effect at each subschema (not below a draft 6/7 ``$ref``, whose siblings are hidden)."""
        if not isinstance(node, dict):
            if node is not True and node is not False:
                raise SchemaError(
                    f"schema at {_cut(loc, _PATH_LIMIT)} must be an object or a boolean,"
                    f" got {_compact(node, 60)}"
                )
            return
        for kw, value in node.items():
            if kw not in self.unknown:
                _check_keyword(self, loc, kw, value)
        if not self.refers and ("$ref" in node or "$recursiveRef" in node or "$dynamicRef" in node):
            self.refers = True
        if not hidden:
            self.bases[id(node)] = base
            self.nodes.append((node, base, loc))
        schema_uri = node.get("$schema")
        if schema_uri is not None and node is not self.root:
            if _SCHEMA_URIS.get(str(schema_uri).rstrip("#")) != self.draft:
                raise self.error(
                    loc, "$schema", f"{_compact(schema_uri)} is not this schema's draft"
                )
        ident = node.get("$id")
        if ident is not None and not hidden and not (self.hides and "$ref" in node):
            uri, _, fragment = self._join(base, ident).partition("#")
            if ident.startswith("#"):
                self.anchors[uri + "#" + fragment] = node
            else:
                self.resources[uri] = node
                base = uri
                if fragment:
                    self.anchors[uri + "#" + fragment] = node
        if not hidden and not (self.hides and "$ref" in node):
            for anchor_kw in ("$anchor", "$dynamicAnchor"):
                anchor = node.get(anchor_kw)
                if isinstance(anchor, str) and anchor_kw not in self.unknown:
                    self.anchors[base.partition("#")[0] + "#" + anchor] = node
        for kw, sub in node.items():
            if kw not in _SCHEMA_PLACES:
                continue  # holds no subschema
            # "$defs" is no keyword of drafts 6 and 7, yet where their schemas often keep
            # definitions: the schemas in it are indexed (their $id found) all the same.
            known = kw not in self.unknown
            if not known and kw != "$defs":
                continue
            below = hidden or (self.hides and "$ref" in node and kw != "definitions")
            where = loc + "/" + _pointer_escape(kw)
            if kw in _SCHEMA_LIST and isinstance(sub, list):
                for i, value in enumerate(sub):
                    self._index_resources(value, base, f"{where}/{i}", below)
            elif kw in _ONE_SCHEMA:
                self._index_resources(sub, base, where, below)
            elif kw in _SCHEMA_MAP and isinstance(sub, dict):
                for key, value in sub.items():
                    if (known or isinstance(value, dict)) and not (
                        kw == "dependencies" and isinstance(value, list)
                    ):
                        self._index_resources(
                            value, base, where + "/" + _pointer_escape(key), below
                        )

    # -- cycles that consume no input -----------------------------------------------------------

    def _in_place(self, node: Any, base: str, loc: str) -> list[tuple[Any, str, str, str]]:
        """The subschemas applied to the same value as ``node`` (``$ref`` targets, ``allOf``
        branches...): each with its base URI, its location and the keyword leading there."""
        if not isinstance(node, dict):
            return []
        keys = self._keys(node)
        base = self._own_base(node, base)
        out: list[tuple[Any, str, str, str]] = []
        for kw in ("$ref", "$recursiveRef"):
            ref = keys.get(kw)
            if isinstance(ref, str):
                try:
                    target, target_base, target_loc = self.resolve(ref, base, loc)
                except SchemaError:
                    continue  # reported where it is used, if it is
                out.append((target, target_base, target_loc, kw))
        for kw in ("allOf", "anyOf", "oneOf"):
            for i, sub in enumerate(keys.get(kw, ())):
                out.append((sub, base, f"{loc}/{kw}/{i}", kw))
        for kw in ("not", "if", "then", "else") if "if" in keys else ("not",):
            if kw in keys:
                out.append((keys[kw], base, f"{loc}/{kw}", kw))
        for kw in ("dependentSchemas", "dependencies"):
            for key, sub in keys.get(kw, {}).items():
                if not isinstance(sub, list):
                    out.append((sub, base, f"{loc}/{kw}/{_pointer_escape(key)}", kw))
        return out

    def _refuse_cycles(self) -> None:
        """Refuse a cycle of subschemas applied to the same value (``{"$ref": "#"}``, through
        allOf, anyOf, not, if...): checking any value would never end.  A depth-first walk
        with its own stack, so that a long chain of references is no RecursionError."""
        done: set[tuple[int, str]] = set()
        for node, base, loc in self.nodes:  # grows as resolving indexes more
            start = (id(node), base)
            if start in done:
                continue
            path = [(start, loc, iter(self._in_place(node, base, loc)))]
            on_path = {start: 0}
            while path:
                key, where, edges = path[-1]
                edge = next(edges, None)
                if edge is None:
                    path.pop()
                    del on_path[key]
                    done.add(key)
                    continue
                sub, sub_base, sub_loc, kw = edge
                sub_key = (id(sub), sub_base)
                if sub_key in done:
                    continue
                if sub_key in on_path:
                    shown = " -> ".join([at for _, at, _ in path[on_path[sub_key] :]] + [sub_loc])
                    raise self.error(
                        where,
                        kw,
                        f"a cycle of subschemas that consumes no input ({_cut(shown, 300)});"
                        " checking any value would never end",
                    )
                on_path[sub_key] = len(path)
                path.append((sub_key, sub_loc, iter(self._in_place(sub, sub_base, sub_loc))))

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
        if id(node) not in self.bases:  # somewhere no keyword puts a schema: checked now
            self._index_resources(node, doc, target_loc, False)
        return node, self.bases.get(id(node), doc), target_loc

    def function(self, node: Any, base: str, loc: str, scope: _Scoped) -> str:
        """The name of the generated function checking ``node`` (written once, later)."""
        key = (id(node), base, id(scope[0]) if scope is not None else 0)
        name = self.functions.get(key)
        if name is None:
            name = self.functions[key] = self.name("f")
            self.pending.append((name, node, base, loc, scope))
        return name

    # -- schemas --------------------------------------------------------------------------------

    def schema(self, node: Any, site: _Site) -> None:
        """Write the checks of ``node`` for the value in ``site.var``."""
        if node is True:
            return
        if node is False:
            self.fail(site, site.indent, "'no value is allowed here'")
            return
        if not isinstance(node, dict):
            raise SchemaError(
                f"schema at {_cut(site.loc, _PATH_LIMIT)} must be an object or a boolean,"
                f" got {_compact(node, 60)}"
            )
        if site.depth > _MAX_BLOCKS or site.indent > _MAX_INDENT:
            fn = self.function(node, site.base, site.loc, site.scope)
            self.call(site, site.indent, f"{fn}({site.var})")
            return
        outer = site.base
        site.base = self._own_base(node, site.base)
        if (
            site.scope is None
            and node.get("$recursiveAnchor") is True
            and self.draft == _DRAFT2019
            and (node is self.root or site.base != outer)
        ):
            site.scope = (node, outer, site.loc)
        keys = self._keys(node)
        for kw in _REFUSED:
            if kw in keys and not (kw.startswith("unevaluated") and keys[kw] is True):
                raise self.error(site.loc, kw, "is not supported by this validator")
        # Consecutive table entries for the same JSON type share one guard (``if isinstance``).
        runs: list[tuple[str | None, list[_Generator]]] = []
        for entry in sorted({i for k in keys for i in _KEYWORD_ENTRIES.get(k, ())}):
            _, guard, generate = _KEYWORDS[entry]
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
            ind = site.indent
            if guard is not None:
                self.emit(ind, f"if {_TYPE_TEST[guard].format(v=site.var)}:")
                inner = _Site(
                    site.var,
                    site.path,
                    ind + 1,
                    site.depth,
                    site.loc,
                    site.base,
                    frozenset([guard]),
                    site.scope,
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
            self.emit(site.indent + indent, "pass")  # a block whose subschema checks nothing

    def write_function(self, name: str, node: Any, base: str, loc: str, scope: _Scoped) -> None:
        self.emit(0, f"def {name}(x):")
        mark = len(self.lines)
        self.schema(node, _Site("x", (), 1, 0, loc, base, None, scope))
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
        self.emit(2, "raise _ValidationError(_format_path(e.path), _cut(e.msg, _MESSAGE_LIMIT))")
        self.emit(1, "except RecursionError:")
        self.emit(2, "raise _ValidationError('', 'nesting too deep') from None")
        while self.pending:
            self.write_function(*self.pending.pop())
        self.consts["_ValidationError"] = ValidationError
        self.consts["_format_path"] = _format_path
        self.consts["_cut"] = _cut
        self.consts["_MESSAGE_LIMIT"] = _MESSAGE_LIMIT
        return _compiled_on_first_use("\n".join(self.lines) + "\n", self.consts)


def _compiled_on_first_use(source: str, namespace: dict[str, Any]) -> Callable[[object], None]:
    """The ``validate`` function of ``source``, which Python compiles when it first runs:
    CPython's ``compile()`` is most of a schema's cost, and many tools' arguments are never
    checked in a process.  Until then ``validate`` is a stand-in whose code is replaced by
    the real function's (same globals, no closure), so whoever holds it runs the real code
    from then on, at no cost per call.  (The source is checked and written here, so a
    schema's errors are still raised when it is compiled.)"""
    lock = threading.Lock()

    def compile_now() -> Callable[[object], None]:
        with lock:
            if stand_in.__code__ is waiting:
                exec(compile(source, "<agenttool schema>", "exec"), namespace)
                stand_in.__code__ = namespace["validate"].__code__
        return stand_in

    namespace["_compile_now"] = compile_now
    exec(_STAND_IN, namespace)
    stand_in: Callable[[object], None] = namespace["validate"]
    waiting = stand_in.__code__
    stand_in.source = source  # type: ignore[attr-defined] # Validator.source shows it
    return stand_in


_STAND_IN = compile(
    "def validate(x):\n    return _compile_now()(x)\n", "<agenttool schema>", "exec"
)


# ----- keyword generators: one function per keyword or group acting together -----------------


# What the drafts' metaschemas allow as each keyword's value, checked over the whole schema
# (unreferenced definitions too) before any code is written.  Annotations (title, description,
# default, examples, format, content*, readOnly...) are not checked: they change no verdict.
_COUNTS = frozenset(
    ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
     "minContains", "maxContains"]
)  # fmt: skip
_LIMITS = frozenset(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"])
_STRINGS = frozenset(["$ref", "$recursiveRef", "$dynamicRef", "$id", "$schema", "pattern"])
_ANCHOR = {  # the anchor names each draft allows (compiled on first use, by re's cache)
    _DRAFT2019: r"[A-Za-z][-A-Za-z0-9.:_]*\Z",
    _DRAFT2020: r"[A-Za-z_][-A-Za-z0-9._]*\Z",
}


def _is_count(value: Any) -> bool:
    """A non-negative integer as the metaschemas mean it (2.0 is one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return value >= 0 and (isinstance(value, int) or value.is_integer())


def _is_names(value: Any) -> bool:
    """An array of unique strings (required, dependentRequired's values)."""
    return (
        isinstance(value, list)
        and all(isinstance(n, str) for n in value)
        and len(set(value)) == len(value)
    )


def _is_schema(value: Any) -> bool:
    return isinstance(value, (dict, bool))


def _keyword_fault(draft: int, kw: str, value: Any) -> str | None:
    """What the draft's metaschema finds wrong with ``value`` under keyword ``kw``, or None."""
    if kw in _COUNTS:
        return None if _is_count(value) else "a non-negative integer"
    if kw in _LIMITS:
        if isinstance(value, bool):
            return "a number (draft 4's boolean form is not supported)"
        return None if _is_number(value) else "a number"
    if kw == "multipleOf":
        return None if _is_number(value) and value > 0 else "a number greater than 0"
    if kw in _STRINGS:
        return None if isinstance(value, str) else "a string"
    if kw == "uniqueItems" or (kw == "$recursiveAnchor" and draft == _DRAFT2019):
        return None if isinstance(value, bool) else "a boolean"
    if kw == "type":
        names = [value] if isinstance(value, str) else value
        if not isinstance(names, list) or not names:
            return "a type name or a non-empty list of them"
        for name in names:
            if name not in _TYPES:
                return f"type names, and {_compact(name, 60)} is not a JSON Schema type"
        return None if len(set(names)) == len(names) else "a list of distinct type names"
    if kw == "enum":
        return None if isinstance(value, list) else "an array"
    if kw == "required":
        return None if _is_names(value) else "an array of distinct strings"
    if kw == "dependentRequired":
        ok = isinstance(value, dict) and all(_is_names(v) for v in value.values())
        return None if ok else "an object whose values are arrays of distinct strings"
    if kw in _SCHEMA_MAP:
        if not isinstance(value, dict):
            return "an object"
        if kw == "dependencies" and not all(_is_names(v) or _is_schema(v) for v in value.values()):
            return "an object whose values are schemas or arrays of distinct strings"
        return None  # the schemas in it are checked where they are
    if kw in ("allOf", "anyOf", "oneOf", "prefixItems"):
        return None if isinstance(value, list) and value else "a non-empty array of schemas"
    if kw == "items":
        if isinstance(value, list) and not value:
            return "a schema or a non-empty array of schemas"
        return None
    if kw in ("$anchor", "$dynamicAnchor", "$recursiveAnchor"):  # the last: 2020-12's form
        pattern = _ANCHOR[_DRAFT2019 if draft == _DRAFT2019 else _DRAFT2020]
        if isinstance(value, str) and re.match(pattern, value):
            return None
        return "an anchor name (a letter or _, then letters, digits, -, . or _)"
    if kw == "$vocabulary":
        ok = isinstance(value, dict) and all(isinstance(v, bool) for v in value.values())
        return None if ok else "an object of booleans"
    return None


def _check_keyword(c: _Compiler, loc: str, kw: str, value: Any) -> None:
    """Refuse a keyword value the draft's metaschema refuses, naming the keyword and place."""
    if kw == "$recursiveRef" and c.draft != _DRAFT2019:
        raise c.error(
            loc,
            kw,
            "is draft 2019-09's; say so with"
            ' "$schema": "https://json-schema.org/draft/2019-09/schema"',
        )
    fault = _keyword_fault(c.draft, kw, value)
    if fault is not None:
        raise c.error(loc, kw, f"must be {fault}, got {_compact(value, 60)}")


# The generators below write code for values _check_keyword has already accepted.


def _count_kw(keys: dict[str, Any], kw: str) -> int | None:
    value = keys.get(kw)
    if value is None:
        return None
    return min(int(value), sys.maxsize)  # no length is longer; keeps the source short


def _gen_type(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """type, enum, const: enum and const first, except that a refused null is a type error."""
    v, ind = site.var, site.indent
    types: list[str] | None = None
    if "type" in keys:
        raw = keys["type"]
        types = [raw] if isinstance(raw, str) else raw
        names = repr(_join_or(list(types)))
        if "null" not in types and ("enum" in keys or "const" in keys):
            c.emit(ind, f"if {v} is None:")
            c.fail(site, ind + 1, f"_m_type({v}, {names})")
    if "enum" in keys:
        members = keys["enum"]
        listed = repr(_listing(members))
        allowed = c.const(frozenset(_canon(m) for m in members))
        plain = _plain_type_test(members, v)
        c.emit(ind, f"if not ({v} in {allowed} if {plain} else _canon({v}) in {allowed}):")
        c.fail(site, ind + 1, f"_m_enum({v}, {listed})")
    if "const" in keys:
        value = keys["const"]
        expected = c.const(_canon(value))
        c.emit(ind, f"if ({v} if {_plain_type_test([value], v)} else _canon({v})) != {expected}:")
        c.fail(site, ind + 1, f"_m_const({v}, {_compact(value)!r})")
    if types is not None:
        only = keys["enum"] if "enum" in keys else [keys["const"]] if "const" in keys else None
        if only is None or not all(_of_types(m, types) for m in only):
            c.emit(ind, f"if not ({_types_test(types, v)}):")
            c.fail(site, ind + 1, f"_m_type({v}, {names})")
        # else the value passed enum or const, so it is of the types already
        site.known = frozenset(types)


def _plain_type_test(members: list[Any], v: str) -> str:
    """A test that the value in ``v`` is its own ``_canon`` key (a str, int or float exactly),
    naming the type the first of ``members`` has, which the value most likely has too."""
    first = type(members[0]) if members else str
    return f"type({v}) is {first.__name__ if first in (int, float) else 'str'}"


def _of_types(value: Any, types: list[str]) -> bool:
    """Whether the JSON ``value`` is of one of the ``types`` (2.0 is an integer)."""
    kind = _json_type(value)
    if kind == "number" and "number" not in types:
        return "integer" in types and (isinstance(value, int) or value.is_integer())
    return kind in types


def _types_test(types: list[str], v: str) -> str:
    """An expression true when the value in ``v`` is of one of the JSON ``types``."""
    kinds = [t for t in types if not (t == "integer" and "number" in types)]
    return " or ".join(_TYPE_TEST[t].format(v=v) for t in kinds)


def _gen_string(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """minLength, maxLength (in code points) and pattern (ECMA-262, searched)."""
    v, ind = site.var, site.indent
    for kw, op, least in (("minLength", "<", True), ("maxLength", ">", False)):
        n = _count_kw(keys, kw)
        if n is not None:
            c.emit(ind, f"if len({v}) {op} {n}:")
            c.fail(site, ind + 1, f"_m_len({v}, {least}, {n}, 'character')")
    if "pattern" in keys:
        source = keys["pattern"]
        search = c.const(_regex(c, site, "pattern", source))
        msg = f"expected a string matching {_quote(source)}, got "
        c.emit(ind, f"if {search}({v}) is None:")
        c.fail(site, ind + 1, f"{msg!r} + _describe({v})")
        c.consts["_describe"] = _describe


def _gen_number(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf."""
    v, ind = site.var, site.indent
    for kw, fails, op in (
        ("minimum", "<", ">="),
        ("exclusiveMinimum", "<=", ">"),
        ("maximum", ">", "<="),
        ("exclusiveMaximum", ">=", "<"),
    ):
        limit = keys.get(kw)
        if limit is not None:
            c.emit(ind, f"if {v} {fails} {c.literal(limit)}:")
            c.fail(site, ind + 1, f"_m_min({v}, {op!r}, {_number_text(limit)!r})")
    m = keys.get("multipleOf")
    if m is not None:
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
            c.emit(ind, f"if not ({_decimal_multiple(c, v, m)}):")
        c.fail(site, ind + 1, f"{msg} + _describe({v})")
        c.consts["_describe"] = _describe


def _decimal_multiple(c: _Compiler, v: str, m: float) -> str:
    """An expression true when the number in ``v`` is a multiple of the decimal ``m`` as
    written (0.01: prices), exact and without fractions on the common path.

    ``m`` is ``units / scale`` exactly (``scale`` a power of ten).  A float ``v`` with
    ``|v| * scale < 2**50`` is a multiple exactly when ``r = round(v * scale)`` gives back ``v``
    as ``r / scale`` (one correctly rounded division) and ``units`` divides ``r``: below that
    bound at most one decimal of that many places lies within half a unit in the last place of
    ``v``, so it is the shortest repr of ``v``, the number as written.  Anything else (larger
    floats, bool-like subclasses) takes the exact ``Fraction`` path."""
    exact = f"_multiple_of({v}, {c.literal(m)})"
    digits, _, exponent = repr(m).partition("e")
    whole, _, fraction = digits.partition(".")
    places = len(fraction) - int(exponent or 0)
    if not 0 < places <= 22:  # 10**22 is the last power of ten a float holds exactly
        return exact
    units, scale = int(whole + fraction), 10**places
    bound = 2.0**50 / scale
    # round(x) with no call: adding then taking away 1.5 * 2**52 leaves x rounded to a whole
    # number (ties to even, as round does) for |x| < 2**51, in float operations alone
    rounded = f"({v} * {float(scale)!r} + 6755399441055744.0 - 6755399441055744.0)"
    if units == 1:
        on_float, on_int = f"{rounded} / {float(scale)!r} == {v}", "True"
    else:
        r = c.name("r")
        on_float = f"({r} := {rounded}) % {units} == 0 and {r} / {float(scale)!r} == {v}"
        on_int = f"{v} * {scale} % {units} == 0"
    return (
        f"({on_float}) if type({v}) is float and {-bound!r} < {v} < {bound!r} else"
        f" ({on_int} if type({v}) is int else {exact})"
    )


def _has_all(c: _Compiler, v: str, names: tuple[str, ...]) -> str:
    """An expression true when the object in ``v`` has every one of ``names``."""
    if len(names) <= 12:  # a chain of lookups is quicker than the set comparison up to here
        return " and ".join(f"{n!r} in {v}" for n in names)
    return f"{v}.keys() >= {c.const(frozenset(names))}"


def _gen_required(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """required, reported in the list's order; then dependentRequired and array dependencies."""
    v, ind = site.var, site.indent
    if "required" in keys:
        names = tuple(keys["required"])
        props = keys.get("properties", {})
        # Required properties that have checks are read here, where a missing one is a
        # KeyError, rather than looked up and then read; a dict subclass is asked first, as
        # it may answer a missing key (Counter, defaultdict).
        read = {n: c.name("v") for n in names if isinstance(props.get(n), dict) and props[n]}
        missing = f"_m_required({v}, {names!r})"
        if read:
            c.emit(ind, f"if type({v}) is not dict and not ({_has_all(c, v, tuple(read))}):")
            c.fail(site, ind + 1, missing)
            c.emit(ind, "try:")
            for name, var in read.items():
                c.emit(ind + 1, f"{var} = {v}[{name!r}]")
            c.emit(ind, "except KeyError:")
            c.emit(ind + 1, f"raise _Invalid({missing}, {c.path_code(site)}) from None")
            rest = tuple(n for n in names if n not in read)
            if rest:
                c.emit(ind, f"if not ({_has_all(c, v, rest)}):")
                c.fail(site, ind + 1, missing)
            site.fetched = read
        elif names:
            c.emit(ind, f"if not ({_has_all(c, v, names)}):")
            c.fail(site, ind + 1, missing)
        site.present = frozenset(names)
    for kw in ("dependentRequired", "dependencies"):
        for when, needed in keys.get(kw, {}).items():
            names = tuple(needed) if isinstance(needed, list) else ()
            if not names:
                continue
            c.emit(ind, f"if {when!r} in {v} and not ({_has_all(c, v, names)}):")
            c.fail(site, ind + 1, f"_m_dependent({v}, {names!r}, {when!r})")


def _gen_size(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """minProperties, maxProperties."""
    for kw, op, least in (("minProperties", "<", True), ("maxProperties", ">", False)):
        n = _count_kw(keys, kw)
        if n is not None:
            c.emit(site.indent, f"if len({site.var}) {op} {n}:")
            c.fail(site, site.indent + 1, f"_m_len({site.var}, {least}, {n}, 'property')")


def _is_true(node: Any) -> bool:
    return node is True or (isinstance(node, dict) and not node)


def _gen_properties(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """properties (sorted), patternProperties, additionalProperties, as one loop over keys."""
    v, ind, loc = site.var, site.indent, site.loc
    props = keys.get("properties", {})
    patterns = keys.get("patternProperties", {})
    extra = keys.get("additionalProperties", True)
    regexes = [
        (c.const(_regex(c, site, "patternProperties", p)), p, s) for p, s in patterns.items()
    ]
    closed = extra is False
    known_fn = ""
    if closed:
        known_fn = c.const(_known_keys(frozenset(props), tuple(c.consts[r] for r, _, _ in regexes)))
    names = sorted(props)
    checked = [(n, props[n]) for n in names if not _is_true(props[n])]
    # A closed object without patterns counts the properties it has as it checks them: its
    # length then tells whether a key is unexpected (keys() <= K costs more than the object's
    # other checks together).
    count, unchecked = "", []
    if closed and not regexes:
        unchecked = [n for n in names if n not in site.present and _is_true(props[n])]
        if len(unchecked) <= 4:
            count = c.name("n")
            c.emit(ind, f"{count} = {len(site.present & props.keys())}")
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
        if count and not there:
            c.emit(at, f"{count} += 1")
        item = site.fetched.get(name, "")
        if not item:
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
        elif count:
            terms = "".join(f" + ({n!r} in {v})" for n in unchecked)
            c.emit(ind, f"if len({v}) != {count}{terms}:")
        else:
            c.emit(ind, f"if not {v}.keys() <= {c.const(frozenset(props))}:")
        c.fail(site, ind + 1, f"_m_unexpected(_first_extra({v}, {known_fn}))")
    loop_extra = not closed and not _is_true(extra)
    active = [(r, p, s) for r, p, s in regexes if not _is_true(s)]
    if not active and not loop_extra:
        return
    key, item = c.name("k"), c.name("v")
    c.emit(ind, f"for {key}, {item} in {v}.items():")
    _key_check(c, site, ind + 1, key)
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


def _key_check(c: _Compiler, site: _Site, ind: int, key: str) -> None:
    """Refuse a key that is not a string (only Python can pass one) where keys are looked at."""
    c.emit(ind, f"if type({key}) is not str and not isinstance({key}, str):")
    c.fail(site, ind + 1, f"_m_key({key})")


def _gen_property_names(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """propertyNames: each key checked as a string, the message naming the key."""
    node = keys["propertyNames"]
    if _is_true(node):
        return
    fn = c.function(node, site.base, site.loc + "/propertyNames", site.scope)
    key = c.name("k")
    c.emit(site.indent, f"for {key} in {site.var}:")
    _key_check(c, site, site.indent + 1, key)
    c.emit(site.indent + 1, "try:")
    c.emit(site.indent + 2, f"{fn}({key})")
    c.emit(site.indent + 1, "except _Invalid as e:")
    c.emit(site.indent + 2, f"raise _at(_m_name({key}, e), {', '.join(site.path)}) from None")


def _gen_dependent_schemas(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """dependentSchemas and draft 7's schema-valued dependencies: applied when the key is there."""
    for kw in ("dependentSchemas", "dependencies"):
        table = keys.get(kw)
        if table is None:
            continue
        for when, node in table.items():
            if isinstance(node, list) or _is_true(node):
                continue
            c.emit(site.indent, f"if {when!r} in {site.var}:")
            where = f"{site.loc}/{kw}/{_pointer_escape(when)}"
            c.sub(node, site, site.var, None, where, indent=1)


def _gen_array_size(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """minItems, maxItems, uniqueItems."""
    v, ind = site.var, site.indent
    for kw, op, least in (("minItems", "<", True), ("maxItems", ">", False)):
        n = _count_kw(keys, kw)
        if n is not None:
            c.emit(ind, f"if len({v}) {op} {n}:")
            c.fail(site, ind + 1, f"_m_len({v}, {least}, {n}, 'item')")
    if keys.get("uniqueItems"):
        c.emit(ind, f"if len({v}) > 1 and _dup({v}) is not None:")
        c.fail(site, ind + 1, f"_m_dup({v})")


def _gen_items(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """prefixItems (or draft 7's array items), then items (or additionalItems) for the rest."""
    v, ind, loc = site.var, site.indent, site.loc
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
    least = _count_kw(keys, "minContains")
    most = _count_kw(keys, "maxContains")
    least = 1 if least is None else least
    if least == 0 and most is None:
        return
    v, ind = site.var, site.indent
    fn = c.function(node, site.base, site.loc + "/contains", site.scope)
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


def _gen_ref(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """$ref, and draft 2019-09's $recursiveRef: a call to the target's function (which is how
    recursion works).  $recursiveRef goes to the outermost resource in the dynamic scope with
    "$recursiveAnchor": true when its own target has one too; each scope gets its functions."""
    for kw in ("$ref", "$recursiveRef"):
        if kw in keys:
            node, base, loc = c.resolve(keys[kw], site.base, site.loc)
            if kw == "$recursiveRef" and site.scope is not None:
                if isinstance(node, dict) and node.get("$recursiveAnchor") is True:
                    node, base, loc = site.scope
            _call_schema(c, site, node, base, loc)


def _call_schema(c: _Compiler, site: _Site, node: Any, base: str, loc: str) -> None:
    if _is_true(node) and not isinstance(node, dict):
        return
    fn = c.function(node, base, loc, site.scope)
    c.call(site, site.indent, f"{fn}({site.var})")


def _gen_all_of(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """allOf: every subschema written in place."""
    for i, node in enumerate(keys["allOf"]):
        c.sub(node, site, site.var, None, f"{site.loc}/allOf/{i}")


def _gen_any_of(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """anyOf and oneOf: each branch a function; see _shapes_error for the message."""
    for kw, helper in (("anyOf", "_any_of"), ("oneOf", "_one_of")):
        if kw not in keys:
            continue
        nodes = list(keys[kw])
        where = [f"{site.loc}/{kw}/{i}" for i in range(len(nodes))]
        fns = [c.function(n, site.base, w, site.scope) for n, w in zip(nodes, where)]
        infos = c.const(
            tuple(
                (_accepts(c, n, site.base, 0), _shape(c, n, site.base, 0), _bare_type(n))
                for n in nodes
            )
        )
        check = f"{helper}({site.var}, ({', '.join(fns)},), {infos})"
        passes = _bare_branches_test(c, nodes, site.var) if kw == "anyOf" else None
        if passes == "True":
            continue  # a branch accepts every value
        if passes is None:
            c.call(site, site.indent, check)
        else:  # a value one bare-type branch takes (null for Optional) needs no call
            c.emit(site.indent, f"if not ({passes}):")
            c.call(site, site.indent + 1, check)


def _bare_branches_test(c: _Compiler, nodes: list[Any], v: str) -> str | None:
    """An expression true when the value in ``v`` satisfies one of the ``nodes`` that check
    nothing but the type, ``"True"`` when one checks nothing, None when none is so plain."""
    tests: list[str] = []
    for node in nodes:
        if _is_true(node):
            return "True"
        if not isinstance(node, dict):
            continue
        keys = c._keys(node)
        raw = keys.get("type")
        if raw is not None and all(k == "type" or k in _ANNOTATIONS for k in keys):
            tests.append(_types_test([raw] if isinstance(raw, str) else raw, v))
    return " or ".join(tests) if tests else None


def _gen_not(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """not: the value must fail the subschema."""
    node = keys["not"]
    fn = c.function(node, site.base, site.loc + "/not", site.scope)
    c.call(site, site.indent, f"_not({site.var}, {fn}, {_compact(node, 80)!r})")


def _gen_if(c: _Compiler, site: _Site, keys: dict[str, Any]) -> None:
    """if/then/else: then's or else's errors are reported as they are."""
    then, orelse = keys.get("then", True), keys.get("else", True)
    if "if" not in keys or (_is_true(then) and _is_true(orelse)):
        return
    fn = c.function(keys["if"], site.base, site.loc + "/if", site.scope)
    ind = site.indent
    c.emit(ind, "try:")
    c.emit(ind + 1, f"{fn}({site.var})")
    c.emit(ind, "except _Invalid:")
    mark = len(c.lines)
    c.sub(orelse, site, site.var, None, site.loc + "/else", indent=1, blocks=2)
    if len(c.lines) == mark:
        c.emit(ind + 1, "pass")
    if not _is_true(then):
        c.emit(ind, "else:")
        c.sub(then, site, site.var, None, site.loc + "/then", indent=1, blocks=2)


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
    (("$ref", "$recursiveRef"), None, _gen_ref),
    (("allOf",), None, _gen_all_of),
    (("anyOf", "oneOf"), None, _gen_any_of),
    (("not",), None, _gen_not),
    (("if",), None, _gen_if),
]  # fmt: skip


def _entries_by_keyword() -> dict[str, tuple[int, ...]]:
    """Keyword -> the positions of the table entries it belongs to, so that a schema's few
    keys find their generators without a pass over the whole table."""
    entries: dict[str, tuple[int, ...]] = {}
    for i, (names, _, _) in enumerate(_KEYWORDS):
        for name in names:
            entries[name] = entries.get(name, ()) + (i,)
    return entries


_KEYWORD_ENTRIES = _entries_by_keyword()

# Where subschemas sit (for $id and $anchor indexing).
_ONE_SCHEMA = frozenset(
    ["additionalProperties", "propertyNames", "items", "additionalItems", "contains", "not",
     "if", "then", "else", "unevaluatedItems", "unevaluatedProperties"]
)  # fmt: skip
_SCHEMA_MAP = frozenset(
    ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"]
)
_SCHEMA_LIST = frozenset(["allOf", "anyOf", "oneOf", "prefixItems", "items"])
_SCHEMA_PLACES = _ONE_SCHEMA | _SCHEMA_MAP | _SCHEMA_LIST


# ----- what a branch accepts, for anyOf/oneOf messages ---------------------------------------


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


def _bare_type(node: Any) -> bool:
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
        return "one of " + _listing(keys["enum"], 60)
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
# ECMA-262 patterns: parsed once, run by Python's re where it cannot backtrack, else linearly
# ---------------------------------------------------------------------------------------------
# - The dialect is ECMA-262 with the u flag, what `new RegExp(p, "u")` accepts; what it refuses
#   is a SchemaError (a{,2}, (?i), \Z, \A, \a, a++, a lone { or ], \p{Greek}...).  Patterns are
#   searched (unanchored), over code points: . is any code point but \n \r U+2028 U+2029, ^ and
#   $ are the very start and end, \d \w \b are ASCII, \s is ECMA's white space and line
#   terminators, \uD83D\uDE00 is one astral character, \u{1F600} too, \p{..} takes the
#   General_Category values and aliases and every binary property ECMA-262 lists (Alphabetic,
#   Emoji, ID_Start, ...; with their short names), from the Unicode tables this file carries
#   (one Unicode version, _UNICODE_VERSION, whatever Python runs: its own unicodedata differs
#   from 3.9 to 3.13).  A backreference to a group not closed yet matches "", as in ECMA.
#   Accepted by ECMA but refused here, saying so: \p{Script=..} and \p{Script_Extensions=..}
#   (their tables would double this file's Unicode data), a variable-width lookbehind, a
#   backreference to a group inside a repeat (ECMA clears the group each time round, re keeps
#   it), and, when re cannot run it safely, a pattern whose counted repeats written out pass
#   12,000 NFA states (a plain string, however long, runs on re: its search for one is KMP,
#   linear) or whose position sets would cost too much: more than 1,000,000 NFA state visits
#   to build (x(a?){3000}y), or (moves per character) x (positions + 500) past 500,000, about
#   20 us a character on CPython (eleven alternatives of different lengths repeated 100 times).
# - Time: every accepted pattern runs in time linear in the string.  Python's re runs a pattern
#   when backtracking cannot multiply: it is unambiguous (from any point, at most one way
#   through the pattern consumes the next character) and anchored by a leading ^ or short, or
#   it has no loop and its ways through times its length are few (1,000, or 1,000,000 when
#   anchored), so the tries are few or each cheap (an optional head or tail is dropped first,
#   and a+ at either end becomes a: neither can change whether a search finds a match).
#   Every other pattern runs on a lazy DFA over its NFA, which also takes lookaheads right
#   after a leading ^: a step costs a dict lookup once the DFA state is known, and a new one a
#   pass over the NFA states (n x m/8 int operations at worst, about 80 ms for 10 KB on a
#   200-state pattern whose DFA blows up).  When a text makes it explode (the DFA started over
#   twice in one search), the search goes on over sets of pattern positions held in one int,
#   a character a few shifts and masks of it (_PositionSearch), in memory bounded by the
#   pattern.  A pattern past 2,000 NFA states (counted repeats: ^(\w{1,50}\s?){1,100}$ has
#   10,202) skips the DFA after its first character: its position sets are built when it is
#   compiled, a counted repeat's copies moving by the same few distances; where every
#   position of a run exits to one position (\w{1,50} to \s), one addition per character
#   carries out of all such runs at once, and exits by distances few others take are tested
#   per position entered.
#   A pattern that needs re (a backreference, another lookaround) but may backtrack is refused.

_MAX_CODE_POINT = 0x10FFFF
_Ranges = tuple[tuple[int, int], ...]  # sorted, disjoint, non-adjacent (lo, hi) code points
_DIGIT: _Ranges = ((0x30, 0x39),)
_WORD: _Ranges = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_SPACE: _Ranges = (
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
)
_ANY: _Ranges = ((0, _MAX_CODE_POINT),)
_DOT: _Ranges = ((0, 0x09), (0x0B, 0x0C), (0x0E, 0x2027), (0x202A, _MAX_CODE_POINT))
_CONTROL_ESCAPES = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
_SYNTAX_CHARS = "^$\\.*+?()[]{}|/"
_GENERAL_CATEGORIES = {  # ECMA-262's General_Category value aliases -> unicodedata's names
    "Cased_Letter": "Lu Ll Lt",
    "LC": "Lu Ll Lt",
    "Close_Punctuation": "Pe",
    "Connector_Punctuation": "Pc",
    "Control": "Cc",
    "cntrl": "Cc",
    "Currency_Symbol": "Sc",
    "Dash_Punctuation": "Pd",
    "Decimal_Number": "Nd",
    "digit": "Nd",
    "Enclosing_Mark": "Me",
    "Final_Punctuation": "Pf",
    "Format": "Cf",
    "Initial_Punctuation": "Pi",
    "Letter": "Lu Ll Lt Lm Lo",
    "L": "Lu Ll Lt Lm Lo",
    "Letter_Number": "Nl",
    "Line_Separator": "Zl",
    "Lowercase_Letter": "Ll",
    "Mark": "Mn Mc Me",
    "M": "Mn Mc Me",
    "Combining_Mark": "Mn Mc Me",
    "Math_Symbol": "Sm",
    "Modifier_Letter": "Lm",
    "Modifier_Symbol": "Sk",
    "Nonspacing_Mark": "Mn",
    "Number": "Nd Nl No",
    "N": "Nd Nl No",
    "Open_Punctuation": "Ps",
    "Other": "Cc Cf Cs Co Cn",
    "C": "Cc Cf Cs Co Cn",
    "Other_Letter": "Lo",
    "Other_Number": "No",
    "Other_Punctuation": "Po",
    "Other_Symbol": "So",
    "Paragraph_Separator": "Zp",
    "Private_Use": "Co",
    "Punctuation": "Pc Pd Ps Pe Pi Pf Po",
    "P": "Pc Pd Ps Pe Pi Pf Po",
    "punct": "Pc Pd Ps Pe Pi Pf Po",
    "Separator": "Zs Zl Zp",
    "Z": "Zs Zl Zp",
    "Space_Separator": "Zs",
    "Spacing_Mark": "Mc",
    "Surrogate": "Cs",
    "Symbol": "Sm Sc Sk So",
    "S": "Sm Sc Sk So",
    "Titlecase_Letter": "Lt",
    "Unassigned": "Cn",
    "Uppercase_Letter": "Lu",
}
_CATEGORY_NAMES = (
    "Cc Cf Co Cs Ll Lm Lo Lt Lu Mc Me Mn Nd Nl No Pc Pd Pe Pf Pi Po Ps Sc Sk Sm So Zl Zp Zs".split()
)  # every General_Category value but Cn (unassigned), which is what none of them holds
_GENERAL_CATEGORIES.update((short, short) for short in (*_CATEGORY_NAMES, "Cn"))
# ECMA-262's binary properties by their short names (those in the tables by their long ones).
_PROPERTY_ALIASES = {
    "AHex": "ASCII_Hex_Digit",
    "Alpha": "Alphabetic",
    "Bidi_C": "Bidi_Control",
    "Bidi_M": "Bidi_Mirrored",
    "CI": "Case_Ignorable",
    "CWCF": "Changes_When_Casefolded",
    "CWCM": "Changes_When_Casemapped",
    "CWKCF": "Changes_When_NFKC_Casefolded",
    "CWL": "Changes_When_Lowercased",
    "CWT": "Changes_When_Titlecased",
    "CWU": "Changes_When_Uppercased",
    "DI": "Default_Ignorable_Code_Point",
    "Dep": "Deprecated",
    "Dia": "Diacritic",
    "EBase": "Emoji_Modifier_Base",
    "EComp": "Emoji_Component",
    "EMod": "Emoji_Modifier",
    "EPres": "Emoji_Presentation",
    "Ext": "Extender",
    "ExtPict": "Extended_Pictographic",
    "Gr_Base": "Grapheme_Base",
    "Gr_Ext": "Grapheme_Extend",
    "Hex": "Hex_Digit",
    "IDC": "ID_Continue",
    "IDS": "ID_Start",
    "IDSB": "IDS_Binary_Operator",
    "IDST": "IDS_Trinary_Operator",
    "Ideo": "Ideographic",
    "Join_C": "Join_Control",
    "LOE": "Logical_Order_Exception",
    "Lower": "Lowercase",
    "NChar": "Noncharacter_Code_Point",
    "Pat_Syn": "Pattern_Syntax",
    "Pat_WS": "Pattern_White_Space",
    "QMark": "Quotation_Mark",
    "RI": "Regional_Indicator",
    "SD": "Soft_Dotted",
    "STerm": "Sentence_Terminal",
    "Term": "Terminal_Punctuation",
    "UIdeo": "Unified_Ideograph",
    "Upper": "Uppercase",
    "VS": "Variation_Selector",
    "XIDC": "XID_Continue",
    "XIDS": "XID_Start",
    "space": "White_Space",
}


def _merge(ranges: Sequence[tuple[int, int]]) -> _Ranges:
    """Sorted, disjoint, non-adjacent ranges covering the same code points."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def _negate(ranges: _Ranges) -> _Ranges:
    out, nxt = [], 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= _MAX_CODE_POINT:
        out.append((nxt, _MAX_CODE_POINT))
    return tuple(out)


@functools.cache
def _unicode_tables() -> dict[str, _Ranges]:
    """The code points of each General_Category value (but Cn) and each binary property in
    the tables below, as ranges: decoded when a pattern first names one (a few ms)."""
    import base64
    import zlib

    data = zlib.decompress(base64.b64decode(_UNICODE_TABLES))
    out: dict[str, _Ranges] = {}
    i = 0

    def varint() -> int:
        nonlocal i
        n = shift = 0
        while True:
            byte = data[i]
            i += 1
            n |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return n

    while i < len(data):
        end = data.index(0, i)
        name = data[i:end].decode("ascii")
        i = end + 1
        ranges, prev = [], -1
        for _ in range(varint()):
            lo = prev + 1 + varint()
            prev = lo + varint()
            ranges.append((lo, prev))
        out[name] = tuple(ranges)
    return out


@functools.cache
def _category_ranges(categories: str) -> _Ranges:
    """The code points in any of the space-separated General_Category values (Cn: those in
    none of the others)."""
    table = _unicode_tables()
    if categories == "Cn":
        return _negate(_merge([r for name in _CATEGORY_NAMES for r in table[name]]))
    return _merge(
        [
            r
            for name in categories.split()
            for r in (_category_ranges("Cn") if name == "Cn" else table[name])
        ]
    )


def _property_ranges(name: str) -> _Ranges:
    """The code points of ``\\p{name}``; ValueError for what ECMA refuses or Python cannot do."""
    key, _, value = name.partition("=")
    if value:
        if key in ("General_Category", "gc") and value in _GENERAL_CATEGORIES:
            return _category_ranges(_GENERAL_CATEGORIES[value])
        if key in ("Script", "sc", "Script_Extensions", "scx") and value.replace("_", "").isalpha():
            raise ValueError(f"\\p{{{name}}}: scripts are not supported (no script tables here)")
        raise ValueError(f"invalid Unicode property \\p{{{name}}}")
    if name in _GENERAL_CATEGORIES:
        return _category_ranges(_GENERAL_CATEGORIES[name])
    if name == "Any":
        return _ANY
    if name == "ASCII":
        return ((0, 0x7F),)
    if name == "Assigned":
        return _negate(_category_ranges("Cn"))
    name = _PROPERTY_ALIASES.get(name, name)
    if name == "ASCII_Hex_Digit":
        return ((0x30, 0x39), (0x41, 0x46), (0x61, 0x66))
    if name == "White_Space":
        return _merge(_SPACE[:-1] + ((0x85, 0x85),))  # \s without U+FEFF, with U+0085
    if name not in _CATEGORY_NAMES and name in _unicode_tables():
        return _unicode_tables()[name]
    raise ValueError(f"invalid Unicode property \\p{{{name}}}")


# The parsed pattern, as tuples: ("char", ranges), ("seq", [nodes]), ("alt", [nodes]),
# ("group", capture number or 0, node), ("repeat", node, min, max or -1, greedy),
# ("assert", "^" "$" "b" or "B"), ("look", "=" "!" "<=" or "<!", node), ("backref", number).
_Node = tuple[Any, ...]
_INFINITE = -1
_MAX_NESTING = 100  # groups in groups (valid ECMA deeper, refused: the walks here recurse)


class _EcmaParser:
    """A recursive-descent parser for ECMA-262 RegExp syntax with the u flag."""

    def __init__(self, source: str) -> None:
        self.s, self.i = source, 0
        self.groups, self.names = self._scan_groups()
        self.group_count = 0
        self.closed: set[int] = set()
        self.has_backref = False
        self.depth = -1  # the pattern itself is no group

    def fail(self, why: str) -> NoReturn:
        raise ValueError(f"{why} at offset {self.i}")

    def _scan_groups(self) -> tuple[int, dict[str, int]]:
        """The number of capturing groups and their names (ECMA allows forward references)."""
        s, i, count, in_class = self.s, 0, 0, False
        names: dict[str, int] = {}
        while i < len(s):
            ch = s[i]
            if ch == "\\":
                i += 2
                continue
            if in_class:
                in_class = ch != "]"
            elif ch == "[":
                in_class = True
            elif ch == "(" and (not s.startswith("(?", i) or s.startswith("(?<", i)):
                if not s.startswith(("(?<=", "(?<!"), i):
                    count += 1
                    if s.startswith("(?<", i):
                        end = s.find(">", i)
                        names.setdefault(_group_name(s[i + 3 : end] if end > 0 else ""), count)
            i += 1
        return count, names

    def parse(self) -> _Node:
        node = self.disjunction()
        if self.i < len(self.s):
            self.fail("unmatched )")
        return node

    def disjunction(self) -> _Node:
        self.depth += 1
        if self.depth > _MAX_NESTING:
            self.fail(f"groups nested more than {_MAX_NESTING} deep")
        alternatives = [self.alternative()]
        while self.s.startswith("|", self.i):
            self.i += 1
            alternatives.append(self.alternative())
        self.depth -= 1
        return alternatives[0] if len(alternatives) == 1 else ("alt", alternatives)

    def alternative(self) -> _Node:
        items: list[_Node] = []
        while self.i < len(self.s) and self.s[self.i] not in "|)":
            items.append(self.term())
        return items[0] if len(items) == 1 else ("seq", items)

    def term(self) -> _Node:
        s, i = self.s, self.i
        ch = s[i]
        if ch in "^$" or s.startswith(("\\b", "\\B"), i):
            self.i += 1 if ch in "^$" else 2
            atom: _Node = ("assert", s[self.i - 1])
            quantifiable = False
        elif s.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
            kind = s[i + 2 : i + 4] if s[i + 2] == "<" else s[i + 2]
            self.i += 2 + len(kind)
            atom = ("look", kind, self.disjunction())
            self.close()
            quantifiable = False
        elif ch == "(":
            atom, quantifiable = self.group(), True
        elif ch in "*+?{":
            self.fail("nothing to repeat")
        elif ch in "}]":
            self.fail(f"lone {ch}")
        else:
            atom, quantifiable = self.atom(), True
        if self.i < len(s) and s[self.i] in "*+?{":
            if not quantifiable:
                self.fail("an assertion cannot be repeated")
            return self.quantifier(atom)
        return atom

    def close(self) -> None:
        if not self.s.startswith(")", self.i):
            self.fail("missing )")
        self.i += 1

    def group(self) -> _Node:
        s, i, name = self.s, self.i, None
        if s.startswith("(?:", i):
            self.i += 3
            node = self.disjunction()
            self.close()
            return node
        if s.startswith("(?<", i):
            end = s.find(">", i)
            name = _group_name(s[i + 3 : end] if end > 0 else "")
            if not _is_group_name(name):
                self.fail("invalid group name")
            self.i = end + 1
        elif s.startswith("(?", i):
            self.fail("invalid group")
        else:
            self.i += 1
        self.group_count += 1
        number = self.group_count
        if name is not None and self.names.get(name) != number:
            self.fail("duplicate group name")
        node = self.disjunction()
        self.close()
        self.closed.add(number)
        return ("group", number, node)

    def quantifier(self, atom: _Node) -> _Node:
        s = self.s
        ch = s[self.i]
        if ch == "{":
            m = re.compile(r"\{(\d+)(,(\d*))?\}").match(s, self.i)
            if m is None:
                self.fail("incomplete quantifier")
            low = int(m.group(1))
            high = low if m.group(2) is None else int(m.group(3)) if m.group(3) else _INFINITE
            if high != _INFINITE and high < low:
                self.fail("numbers out of order in {} quantifier")
            self.i = m.end()
        else:
            low, high = {"*": (0, _INFINITE), "+": (1, _INFINITE), "?": (0, 1)}[ch]
            self.i += 1
        greedy = not s.startswith("?", self.i)
        self.i += 0 if greedy else 1
        return ("repeat", atom, low, high, greedy)

    def atom(self) -> _Node:
        s = self.s
        ch = s[self.i]
        if ch == ".":
            self.i += 1
            return ("char", _DOT)
        if ch == "[":
            return ("char", self.char_class())
        if ch == ")":
            self.fail("unmatched )")
        if ch != "\\":
            self.i += 1
            return ("char", ((ord(ch), ord(ch)),))
        nxt = s[self.i + 1 : self.i + 2]
        if nxt == "k":
            m = re.compile(r"\\k<([^>]*)>").match(s, self.i)
            if m is None or _group_name(m.group(1)) not in self.names:
                self.fail("invalid named reference")
            self.i = m.end()
            return self.backref(self.names[_group_name(m.group(1))])
        if nxt.isdigit() and nxt != "0":
            m = re.compile(r"\\(\d+)").match(s, self.i)
            assert m is not None
            number = int(m.group(1))
            if number > self.groups:
                self.fail("invalid escape")
            self.i = m.end()
            return self.backref(number)
        return ("char", self.escape())

    def backref(self, number: int) -> _Node:
        """A backreference; one to a group not closed yet always matches "" in ECMA-262."""
        if number not in self.closed:
            return ("seq", [])
        self.has_backref = True
        return ("backref", number)

    def char_class(self) -> _Ranges:
        self.i += 1
        negated = self.s.startswith("^", self.i)
        self.i += 1 if negated else 0
        parts: list[tuple[int, int]] = []
        while True:
            if self.i >= len(self.s):
                self.fail("unterminated character class")
            if self.s[self.i] == "]":
                self.i += 1
                break
            first, one = self.class_atom()
            if self.s.startswith("-", self.i) and not self.s.startswith("-]", self.i):
                self.i += 1
                if self.i >= len(self.s):
                    self.fail("unterminated character class")
                last, also_one = self.class_atom()
                if not (one and also_one):
                    self.fail("a class escape cannot bound a range")
                if first[0][0] > last[0][0]:
                    self.fail("range out of order in character class")
                parts.append((first[0][0], last[0][0]))
            else:
                parts.extend(first)
        ranges = _merge(parts)
        return _negate(ranges) if negated else ranges

    def class_atom(self) -> tuple[_Ranges, bool]:
        """A class member as ranges, and whether it is one character (a range may end there)."""
        ch = self.s[self.i]
        if ch != "\\":
            self.i += 1
            return _single(ord(ch)), True
        nxt = self.s[self.i + 1 : self.i + 2]
        if nxt in ("b", "-"):
            self.i += 2
            return _single(8 if nxt == "b" else 0x2D), True
        return self.escape(), nxt not in "dDwWsSpP"

    def escape(self) -> _Ranges:
        """A character escape or class escape after a backslash, as ranges."""
        s = self.s
        start = self.i
        nxt = s[start + 1 : start + 2]
        self.i += 2
        if nxt == "":
            self.fail("\\ at end of pattern")
        if nxt in "dDwWsS":
            ranges = {"d": _DIGIT, "w": _WORD, "s": _SPACE}[nxt.lower()]
            return _negate(ranges) if nxt.isupper() else ranges
        if nxt in "pP":
            end = s.find("}", self.i)
            if not s.startswith("{", self.i) or end < 0:
                self.fail("invalid property name")
            ranges = _property_ranges(s[self.i + 1 : end])
            self.i = end + 1
            return _negate(ranges) if nxt == "P" else ranges
        if nxt in _CONTROL_ESCAPES:
            return _single(_CONTROL_ESCAPES[nxt])
        if nxt == "c":
            letter = s[self.i : self.i + 1]
            if not (letter.isascii() and letter.isalpha()):
                self.fail("invalid control escape")
            self.i += 1
            return _single(ord(letter) % 32)
        if nxt == "0":
            if s[self.i : self.i + 1].isdigit():
                self.fail("invalid decimal escape")
            return _single(0)
        if nxt == "x":
            digits = s[self.i : self.i + 2]
            if len(digits) != 2 or not _is_hex(digits):
                self.fail("invalid \\x escape")
            self.i += 2
            return _single(int(digits, 16))
        if nxt == "u":
            return _single(self.unicode_escape())
        if nxt in _SYNTAX_CHARS:
            return _single(ord(nxt))
        self.fail("invalid escape")

    def unicode_escape(self) -> int:
        s = self.s
        if s.startswith("{", self.i):
            end = s.find("}", self.i)
            digits = s[self.i + 1 : end]
            if end < 0 or not digits or not _is_hex(digits) or int(digits, 16) > _MAX_CODE_POINT:
                self.fail("invalid Unicode escape")
            self.i = end + 1
            return int(digits, 16)
        digits = s[self.i : self.i + 4]
        if len(digits) != 4 or not _is_hex(digits):
            self.fail("invalid Unicode escape")
        self.i += 4
        code = int(digits, 16)
        trail = s[self.i + 2 : self.i + 6]
        if (
            0xD800 <= code <= 0xDBFF
            and s.startswith("\\u", self.i)
            and len(trail) == 4
            and _is_hex(trail)
            and 0xDC00 <= int(trail, 16) <= 0xDFFF
        ):
            self.i += 6  # a surrogate pair written as two escapes is one code point
            return 0x10000 + ((code - 0xD800) << 10) + (int(trail, 16) - 0xDC00)
        return code


def _single(code: int) -> _Ranges:
    return ((code, code),)


def _is_hex(text: str) -> bool:
    return all(ch in "0123456789abcdefABCDEF" for ch in text)


def _group_name(raw: str) -> str:
    """A group name with its \\uXXXX and \\u{X} escapes decoded, as ECMA-262 allows."""
    return re.sub(
        r"\\u\{([0-9a-fA-F]{1,6})\}|\\u([0-9a-fA-F]{4})",
        lambda m: chr(min(int(m.group(1) or m.group(2), 16), _MAX_CODE_POINT)),
        raw,
    )


def _is_group_name(name: str) -> bool:
    return (
        bool(name)
        and (name[0].isidentifier() or name[0] == "$")
        and all((ch == "$" or ("a" + ch).isidentifier()) for ch in name)
    )


# ----- Python's re, for the patterns it runs safely ------------------------------------------


def _re_char(code: int) -> str:
    ch = chr(code)
    if ch.isascii() and ch.isalnum():
        return ch
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


def _re_ranges(ranges: _Ranges) -> str:
    """A class for re; ``[^...]`` when that is shorter (re compiles wide ranges slowly)."""
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _re_char(ranges[0][0])
    if not ranges:
        return "[^\\x00-\\U0010ffff]"
    negated = ranges[-1][1] == _MAX_CODE_POINT and ranges != _ANY
    listed = _negate(ranges) if negated else ranges
    parts = (_re_char(lo) if lo == hi else f"{_re_char(lo)}-{_re_char(hi)}" for lo, hi in listed)
    return ("[^" if negated else "[") + "".join(parts) + "]"


_RE_ASSERTIONS = {
    "^": "^",
    "$": "\\Z",
    "b": "(?a:\\b)",
    "B": "(?a:\\B|\\A\\Z)",
}  # re's \B misses ""
_RE_LIMIT = 4294967294  # re's largest count; ECMA's larger ones cannot matter on real strings


def _re_source(node: _Node) -> str:
    """The parsed pattern in Python's re syntax, with ECMA's meaning."""
    kind = node[0]
    if kind == "char":
        return _re_ranges(node[1])
    if kind == "seq":
        return "".join(_re_source(n) for n in node[1])
    if kind == "alt":
        return "(?:" + "|".join(_re_source(n) for n in node[1]) + ")"
    if kind == "group":
        return "(" + _re_source(node[2]) + ")"
    if kind == "assert":
        return _RE_ASSERTIONS[node[1]]
    if kind == "look":
        return f"(?{node[1]}{_re_source(node[2])})"
    if kind == "backref":
        return f"(?({node[1]})\\{node[1]})"  # ECMA: a group that did not take part matches ""
    _, body, low, high, greedy = node
    if low > _RE_LIMIT:
        return "[^\\x00-\\U0010ffff]"
    text = _re_source(body)
    if not (body[0] == "group" or (body[0] == "char" and not text.startswith("(?"))):
        text = "(?:" + text + ")"
    high = _INFINITE if high > _RE_LIMIT else high
    count = {(0, _INFINITE): "*", (1, _INFINITE): "+", (0, 1): "?"}.get((low, high))
    if low == high:
        return text if low == 1 else f"{text}{{{low}}}"
    if count is None:
        count = f"{{{low},}}" if high == _INFINITE else f"{{{low},{high}}}"
    return text + count + ("" if greedy else "?")


# ----- the NFA: the matcher's program and the ground for the safety analysis -----------------

_NFA_LIMIT = 12_000  # NFA states the matcher builds (a{1000} is 1,000 of them)
_DFA_LIMIT = 2_000  # past it, a search leaves the DFA after one character for position sets
_CLOSURE_BUDGET = 1_000_000  # NFA states visited building a large pattern's position sets
_STEP_BUDGET = 500_000  # a large pattern's (moves per character) x (positions + 500) at most
_FEW_MOVERS = 4  # past _DFA_LIMIT, a distance fewer move by is tested per position entered
_ANALYSIS_LIMIT = 50_000  # NFA states the safety analysis looks at (each count at most 2)
_BOUNDED_LENGTH = 64  # the longest unanchored match left to re's search


class _Unsupported(Exception):
    """A construct the linear matcher cannot run (a backreference, most lookarounds)."""


class _Nfa:
    """Thompson NFA over code-point ranges, built back to front from the parsed pattern.

    Each state is (kind, arg, out1, out2): "char" (arg: ranges), "split", "assert" (arg: the
    assertion), "look" (arg: the lookaround's own NFA start, analysis only), "match".  For the
    analysis a backreference is modelled as any text ([\\s\\S]*), which over-counts its ways.
    """

    def __init__(self, analysis: bool) -> None:
        self.analysis = analysis
        self.kind: list[str] = []
        self.arg: list[Any] = []
        self.out1: list[int] = []
        self.out2: list[int] = []
        self.match = self.add("match", None, -1)

    def add(self, kind: str, arg: Any, out1: int, out2: int = -1) -> int:
        limit = _ANALYSIS_LIMIT if self.analysis else _NFA_LIMIT
        if len(self.kind) >= limit:
            raise ValueError(
                f"too large to run in linear time (more than {limit:,} NFA states, its counted"
                " repeats written out, and not a pattern Python's re runs safely)"
            )
        self.kind.append(kind)
        self.arg.append(arg)
        self.out1.append(out1)
        self.out2.append(out2)
        return len(self.kind) - 1

    def build(self, node: _Node, nxt: int) -> int:
        """The state that matches ``node`` and then continues at ``nxt``."""
        kind = node[0]
        if kind == "char":
            return self.add("char", node[1], nxt)
        if kind == "seq":
            for item in reversed(node[1]):
                nxt = self.build(item, nxt)
            return nxt
        if kind == "alt":
            starts = [self.build(n, nxt) for n in node[1]]
            state = starts[-1]
            for start in reversed(starts[:-1]):
                state = self.add("split", None, start, state)
            return state
        if kind == "group":
            return self.build(node[2], nxt)
        if kind == "assert":
            return self.add("assert", node[1], nxt)
        if kind == "repeat":
            _, body, low, high, _ = node
            if self.analysis:  # two copies show any ambiguity a thousand would
                low, high = (
                    min(low, 2),
                    high if high == _INFINITE else min(low, 2) + min(high - low, 2),
                )
            if high == _INFINITE:
                loop = self.add("split", None, -1, nxt)
                self.out1[loop] = self.build(body, loop)
                nxt = loop
            else:
                end = nxt  # X{2,4} is X X (X (X)?)?: each optional copy may skip to the end
                for _ in range(min(high, _NFA_LIMIT) - low):
                    nxt = self.add("split", None, self.build(body, nxt), end)
            for _ in range(min(low, _NFA_LIMIT)):
                nxt = self.build(body, nxt)
            return nxt
        if not self.analysis:
            raise _Unsupported(kind)
        if kind == "look":
            return self.add("look", self.build(node[2], self.match), nxt)
        return self.build(("repeat", ("char", _ANY), 0, _INFINITE, True), nxt)  # a backreference


def _contains(ranges: _Ranges, code: int) -> bool:
    from bisect import bisect_right

    k = bisect_right(ranges, (code, _MAX_CODE_POINT + 1)) - 1
    return k >= 0 and ranges[k][1] >= code


def _overlapping(sets: list[_Ranges]) -> bool:
    """True when two of ``sets`` share a code point."""
    bounds = sorted(r for ranges in sets for r in ranges)
    return any(bounds[k][0] <= bounds[k - 1][1] for k in range(1, len(bounds)))


def _ambiguous(nfa: _Nfa, start: int) -> bool:
    """True when, from some point, two ways through the pattern can take the next character.

    From the start and after each character, the states reachable without consuming must be
    reached by one path each (two paths, or a loop that consumes nothing, let a backtracking
    matcher try the same thing twice over), and their character sets must be disjoint.
    """
    sources = {start}
    for state, kind in enumerate(nfa.kind):
        if kind == "char":
            sources.add(nfa.out1[state])
        elif kind == "look":
            sources.add(nfa.arg[state])
    for source in sources:
        seen: set[int] = set()
        leaves: list[_Ranges] = []
        stack = [source]
        while stack:
            state = stack.pop()
            if state in seen:
                return True
            seen.add(state)
            kind = nfa.kind[state]
            if kind == "char":
                leaves.append(nfa.arg[state])
            elif kind == "split":
                stack += (nfa.out1[state], nfa.out2[state])
            elif kind != "match":
                stack.append(nfa.out1[state])
        if _overlapping(leaves):
            return True
    return False


_UNBOUNDED = 1 << 62


def _max_length(node: _Node, groups: dict[int, _Node]) -> int:
    """The most characters ``node`` can consume (``_UNBOUNDED`` for no limit)."""
    kind = node[0]
    if kind == "char":
        return 1
    if kind in ("assert", "look"):
        return 0
    if kind == "seq":
        return min(_UNBOUNDED, sum(_max_length(n, groups) for n in node[1]))
    if kind == "alt":
        return max(_max_length(n, groups) for n in node[1])
    if kind == "group":
        return _max_length(node[2], groups)
    if kind == "backref":
        target = groups.pop(node[1], None)  # popped: a reference inside its own group is empty
        return 0 if target is None else _max_length(target, groups)
    _, body, _, high, _ = node
    most = _max_length(body, groups)
    if most == 0:
        return 0
    return _UNBOUNDED if high == _INFINITE else min(_UNBOUNDED, most * high)


def _walk(node: _Node) -> Iterator[_Node]:
    """``node`` and every node inside it."""
    yield node
    kind = node[0]
    if kind in ("seq", "alt"):
        for item in node[1]:
            yield from _walk(item)
    elif kind in ("group", "look"):
        yield from _walk(node[2])
    elif kind == "repeat":
        yield from _walk(node[1])


def _nullable_and_plain(node: _Node) -> bool:
    """True when ``node`` can match the empty string and holds no assertion."""
    kind = node[0]
    if any(n[0] in ("assert", "look", "backref") for n in _walk(node)):
        return False
    if kind == "char":
        return False
    if kind == "seq":
        return all(_nullable_and_plain(n) for n in node[1])
    if kind == "alt":
        return any(_nullable_and_plain(n) for n in node[1])
    if kind == "group":
        return _nullable_and_plain(node[2])
    return bool(node[2] == 0 or _nullable_and_plain(node[1]))


def _trim(node: _Node) -> _Node:
    """A pattern a search finds exactly where ``node`` is found, with less to backtrack over.

    An optional tail or head cannot decide whether a search succeeds (``x*`` matches
    nothing), and ``a+`` at either end finds a match exactly where ``a`` does.  Not for a
    pattern with backreferences, whose groups must stay.
    """
    if node[0] == "alt":
        return ("alt", [_trim(n) for n in node[1]])
    items = list(node[1]) if node[0] == "seq" else [node]
    for end in (-1, 0):
        while items and _nullable_and_plain(items[end]):
            items.pop(end)
        if items and items[end][0] == "repeat" and items[end][3] == _INFINITE:
            _, body, low, _, greedy = items[end]
            items[end] = ("repeat", body, low, low, greedy)
    return items[0] if len(items) == 1 else ("seq", items)


def _leading_lookaheads(node: _Node) -> tuple[list[_Node], _Node]:
    """``^(?=a)(?!b)rest`` as its lookaheads and ``^rest``: each is run once, at the start."""
    items = list(node[1]) if node[0] == "seq" else [node]
    looks: list[_Node] = []
    if items and items[0] == ("assert", "^"):
        while len(items) > 1 and items[1][0] == "look" and items[1][1] in ("=", "!"):
            looks.append(items.pop(1))
    return looks, items[0] if len(items) == 1 else ("seq", items)


def _path_count(node: _Node) -> int:
    """How many ways a loop-free ``node`` has through it (``_UNBOUNDED`` with a loop)."""
    kind = node[0]
    if kind in ("char", "assert", "look"):
        return 1
    if kind == "group":
        return _path_count(node[2])
    if kind == "seq" or kind == "alt":
        counts = [_path_count(n) for n in node[1]]
        total = 1 if kind == "seq" else 0
        for count in counts:
            total = min(_UNBOUNDED, total * count if kind == "seq" else total + count)
        return total
    if kind == "backref":
        return 1  # it matches the group's text or nothing
    if node[3] == _INFINITE:
        return _UNBOUNDED
    body, low, high = node[1], int(node[2]), int(node[3])
    once = _path_count(body)
    if once == 1:
        return min(_UNBOUNDED, high - low + 1)
    if low >= 62:
        return _UNBOUNDED
    ways, total = 1, 0
    for k in range(min(high, 62) + 1):  # X{2,3} has ways(X)**2 + ways(X)**3 ways
        total += ways if k >= low else 0
        ways = min(_UNBOUNDED, ways * once)
    return _UNBOUNDED if high > 62 else min(_UNBOUNDED, total)


def _starts_anchored(node: _Node) -> bool:
    return node == ("assert", "^") or (node[0] == "seq" and node[1][:1] == [("assert", "^")])


def _literal(node: _Node) -> bool:
    """True for a plain string, perhaps ending in ``$``: re's search finds it with a failure
    table (KMP), linear in the text however long the string."""
    items = list(node[1]) if node[0] == "seq" else [node]
    if items and items[-1] == ("assert", "$"):
        items.pop()
    return bool(items) and all(
        n[0] == "char" and len(n[1]) == 1 and n[1][0][0] == n[1][0][1] for n in items
    )


def _re_safe(node: _Node) -> bool:
    """True when Python's re, backtracking, runs ``node`` in time linear in the string.

    So when each try of it costs a bounded amount (it is unambiguous, or has no loop and few
    ways through: its ways times its length is small), and the tries are few (it is anchored at
    the start) or short.
    """
    groups = {n[1]: n[2] for n in _walk(node) if n[0] == "group"}
    looks, rest = _leading_lookaheads(node)
    anchored = _starts_anchored(rest)
    if not anchored and _max_length(node, dict(groups)) > _BOUNDED_LENGTH and not _literal(node):
        return False
    for look in _walk(rest):
        if look[0] == "look" and _max_length(look[2], dict(groups)) > _BOUNDED_LENGTH:
            return False  # a lookaround reached at many places must cost little at each
    cost = _path_count(node) * max(1, _max_length(node, dict(groups)))  # of one try, at most
    if cost <= (1_000_000 if anchored else 1000) and not any(n[0] == "look" for n in _walk(node)):
        return True  # (a lookaround's own cost is not counted here: the analysis looks inside)
    nfa = _Nfa(analysis=True)
    return not _ambiguous(nfa, nfa.build(node, nfa.match))


class _LinearSearch:
    """``re.search``'s yes or no in linear time: a DFA over sets of NFA states, made lazily.

    A set of NFA states is an int, one bit a state.  A DFA state is a dict from a character,
    and from a character class (characters no set in the pattern tells apart), to the next DFA
    state, ``True`` once a match is found, ``False`` once none can be; it keeps (pending states,
    previous character was a word character, at the start) under the key -1.  A transition not
    made yet costs a pass over the pending set a byte of bits at a time, through tables also
    filled on use.
    """

    _MAX_STATES = 4096
    _MAX_CHARS = 256  # transitions a DFA state keeps by character (beyond, found by class)

    def __init__(self, node: _Node, anchored: bool) -> None:
        self.nfa = nfa = _Nfa(analysis=False)
        self.start = 1 << nfa.build(node, nfa.match)
        self.match = 1 << nfa.match
        self.width = (len(nfa.kind) + 7) // 8  # bytes in a set of states
        self.anchored = anchored
        self.words = any(k == "assert" and a in "bB" for k, a in zip(nfa.kind, nfa.arg))
        bounds = {0}
        for kind, arg in zip(nfa.kind, nfa.arg):
            if kind == "char":
                bounds.update(b for lo, hi in arg for b in (lo, hi + 1))
        if self.words:
            bounds.update(b for lo, hi in _WORD for b in (lo, hi + 1))
        self.bounds = sorted(b for b in bounds if b <= _MAX_CODE_POINT)
        self.takes: dict[int, int] = {}  # class -> the char states that take it
        self.tables: dict[Any, list[dict[int, int]]] = {}  # per context, per byte of states
        self.singles: dict[Any, list[int]] = {}  # per context, per state (-1: not yet)
        self.known: dict[tuple[int, bool, bool], dict[Any, Any]] = {}
        self.resets = 0  # times the DFA was full and started over: it is exploding
        self.positions: _PositionSearch | None = None  # made when the DFA explodes
        self.visits = 0  # NFA states closure() has visited, to bound building position sets
        self.initial = self.state(self.start, False, True)
        self.direct = len(nfa.kind) > _DFA_LIMIT  # its DFA states would be large and slow
        if self.direct:
            self.positions = _PositionSearch(self)
            self.singles.clear()  # a closure per state (n x n bits): a search needs a few again
            self.tables.clear()

    def state(self, pending: int, prev_word: bool, at_start: bool) -> dict[Any, Any]:
        key = (pending, prev_word and self.words, at_start)
        found = self.known.get(key)
        if found is None:
            if len(self.known) >= self._MAX_STATES:  # start over; a search under way keeps its own
                self.resets += 1
                first = self.initial[-1]
                self.known = {first: {-1: first}}
                self.initial = self.known[first]
            found = self.known.setdefault(key, {-1: key})
        return found

    def closure(self, state: int, context: tuple[bool, bool, bool, bool]) -> int:
        """The char states (and match) reachable from ``state`` without consuming."""
        at_start, at_end, prev_word, next_word = context
        nfa, seen, out, stack = self.nfa, set(), 0, [state]
        while stack:
            state = stack.pop()
            if state in seen:
                continue
            seen.add(state)
            kind = nfa.kind[state]
            if kind in ("char", "match"):
                out |= 1 << state
            elif kind == "split":
                stack += (nfa.out1[state], nfa.out2[state])
            else:
                test = nfa.arg[state]
                if test == "^":
                    holds = at_start
                elif test == "$":
                    holds = at_end
                else:
                    holds = (prev_word != next_word) == (test == "b")
                if holds:
                    stack.append(nfa.out1[state])
        self.visits += len(seen)
        return out

    def spread(self, states: int, context: Any) -> int:
        """The union of what each of ``states`` leads to: closures, or (context None) the
        states after each char state."""
        tables = self.tables.get(context)
        if tables is None:
            self.singles[context] = [-1] * (self.width * 8)  # first: tables imply singles
            tables = self.tables[context] = [{} for _ in range(self.width)]
        out = 0
        for at, byte in enumerate(states.to_bytes(self.width, "little")):
            if byte:
                union = tables[at].get(byte)
                if union is None:
                    union = tables[at][byte] = self.union(at * 8, byte, context)
                out |= union
        return out

    def reach(self, state: int, context: Any) -> int:
        """What the one state ``state`` leads to (as ``spread`` says), without a pass over
        every byte of a set: building position sets asks this once a state."""
        singles = self.singles.get(context)
        if singles is None:
            self.spread(0, context)
            singles = self.singles[context]
        one = singles[state]
        if one < 0:
            nfa = self.nfa
            one = 1 << nfa.out1[state] if context is None else self.closure(state, context)
            singles[state] = one
        return one

    def union(self, base: int, byte: int, context: Any) -> int:
        singles = self.singles[context]
        out = 0
        for state in range(base, base + 8):
            if byte >> (state - base) & 1:
                one = singles[state]
                if one < 0:
                    nfa = self.nfa
                    one = 1 << nfa.out1[state] if context is None else self.closure(state, context)
                    singles[state] = one
                out |= one
        return out

    def step(self, state: dict[Any, Any], k: int) -> Any:
        pending, prev_word, at_start = state[-1]
        code = self.bounds[k]
        word = self.words and _contains(_WORD, code)
        live = self.spread(pending, (at_start, False, prev_word, word))
        if live & self.match:
            result: Any = True
        else:
            following = self.spread(live & self.taking(k), None)
            if not self.anchored:
                following |= self.start
            result = self.state(following, word, False) if following else False
        state[k] = result
        return result

    def taking(self, k: int) -> int:
        """The char states that take a character of class ``k`` (found once per class)."""
        takes = self.takes.get(k)
        if takes is None:
            code = self.bounds[k]
            takes = self.takes[k] = sum(
                1 << s
                for s, kind in enumerate(self.nfa.kind)
                if kind == "char" and _contains(self.nfa.arg[s], code)
            )
        return takes

    def move(self, state: dict[Any, Any], ch: str) -> Any:
        """The transition on ``ch`` not yet kept by character: by its class, then kept."""
        from bisect import bisect_right

        k = bisect_right(self.bounds, ord(ch)) - 1
        nxt = state.get(k)
        if nxt is None:
            nxt = self.step(state, k)
        if len(state) < self._MAX_CHARS:
            state[ch] = nxt
        return nxt

    def __call__(self, text: str) -> bool | None:
        state = self.initial
        resets = self.resets
        chars = iter(text)
        for ch in chars:
            try:
                nxt = state[ch]
            except KeyError:
                pending, prev_word, at_start = state[-1]
                if (self.direct or self.resets > resets + 1) and not at_start:  # the DFA explodes
                    return self._bitwise(ch, chars, pending, prev_word)
                nxt = self.move(state, ch)
            if nxt is True:
                return True
            if nxt is False:
                return None
            state = nxt
        pending, prev_word, at_start = state[-1]
        final = state.get(-2)
        if final is None:
            final = state[-2] = self._matches_at_end(pending, prev_word, at_start)
        return True if final else None

    def _matches_at_end(self, pending: int, prev_word: bool, at_start: bool) -> bool:
        return bool(self.spread(pending, (at_start, True, prev_word, False)) & self.match)

    def _bitwise(
        self, first: str, chars: Iterator[str], pending: int, prev_word: bool
    ) -> bool | None:
        """The rest of a search whose DFA explodes (``^(a|b)*a(a|b){20}$``): on position sets,
        built once for the pattern, whose memory is bounded however long the text."""
        positions = self.positions
        if positions is None:  # threads may each build one: the last one kept is as good
            positions = self.positions = _PositionSearch(self)
        return positions.search(first, chars, pending, prev_word)


def _set_bits(bits: int) -> list[int]:
    """The indexes of the bits set in ``bits``, lowest first (by str.find, the sets here often
    holding hundreds; the first few by isolating the lowest bit, as a long sparse set's are)."""
    out: list[int] = []
    for _ in range(4):
        if not bits:
            return out
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    if not bits:
        return out
    digits = bin(bits)[:1:-1]
    at = digits.find("1")
    while at >= 0:
        out.append(at)
        at = digits.find("1", at + 1)
    return out


class _OtherMoves:
    """The moves of a step beyond its inline shifts: a shift per distance when they are few,
    else a table lookup per byte of the positions moving (at most 256 entries a byte); and a
    test per position entered from many distances (where a counted repeat's copies exit)."""

    _MAX_SHIFTS = 6
    _MAX_TABLE_BYTES = 256  # wider sets shift (tables would take up to 256 x width**2 bytes)

    def __init__(
        self,
        terms: list[tuple[int, int]],
        gathers: list[tuple[int, int]],
        carries: list[tuple[int, int, int]],
    ) -> None:
        self.terms = terms  # (distance, the positions moving by it)
        self.gathers = gathers  # (the positions entering it, a position)
        self.carries = carries  # (runs, the bit above each, distance on to the position entered)
        self.sources = 0
        for _, sources in terms:
            self.sources |= sources
        self.width = (self.sources.bit_length() + 7) // 8
        self.tables: list[dict[int, int]] = [{} for _ in range(self.width)]
        self.by_table = len(terms) > self._MAX_SHIFTS and self.width <= self._MAX_TABLE_BYTES

    def __call__(self, states: int) -> int:
        """Where these moves take ``states``."""
        out = 0
        for sources, target in self.gathers:
            if states & sources:
                out |= target
        for runs, above, distance in self.carries:
            out |= ((states & runs) + runs & above) << distance  # a run with a bit set carries
        if not self.by_table:
            return out | self.shifted(states)
        tables = self.tables
        for at, byte in enumerate((states & self.sources).to_bytes(self.width, "little")):
            if byte:
                union = tables[at].get(byte)
                if union is None:
                    union = tables[at][byte] = self.shifted(byte << 8 * at)
                out |= union
        return out

    def shifted(self, states: int) -> int:
        """The same, a shift per distance."""
        out = 0
        for distance, sources in self.terms:
            moving = states & sources
            out |= moving << distance if distance >= 0 else moving >> -distance
        return out


class _Blocks:
    """Positions entered from every position of a run of them below (a counted repeat's
    copies exiting, as \\w{1,50} does from each of its 50): adding the runs to the positions
    in them sets the bit above each run where one is set, for all runs at once."""

    _MIN_RUN = 4
    _MAX_LAYERS = 16  # each costs a character four operations; a run past them moves by shifts

    def __init__(self, edges: list[tuple[int, list[int]]]) -> None:
        preds: dict[int, int] = {}
        for p, targets in edges:
            for q in targets:
                preds[q] = preds.get(q, 0) | 1 << p
        self.targets: set[int] = set()
        self.layers: list[tuple[int, int, list[tuple[int, int, int]]]] = []  # distance, taken
        for q, sources in preds.items():  # and (run, bit above it, position entered)
            low = (sources & -sources).bit_length() - 1
            top = sources.bit_length()  # the bit above the run
            if top - low < self._MIN_RUN or q < top or sources != (1 << top) - (1 << low):
                continue
            taken = (1 << top + 1) - (1 << low)  # no run may hold another's bit above
            for at, (distance, used, runs) in enumerate(self.layers):
                if distance == q - top and not used & taken:
                    self.layers[at] = (distance, used | taken, runs)
                    break
            else:
                if len(self.layers) >= self._MAX_LAYERS:
                    continue
                runs = []
                self.layers.append((q - top, taken, runs))
            runs.append((sources, 1 << top, q))
            self.targets.add(q)

    def into(self, takes: int) -> list[tuple[int, int, int]]:
        """Per layer, its runs whose position entered is among ``takes``, and their bits above."""
        out = []
        for distance, _, runs in self.layers:
            fill = above = 0
            for run, bit, q in runs:
                if takes >> q & 1:
                    fill |= run
                    above |= bit
            if above:
                out.append((fill, above, distance))
        return out


class _PositionSearch:
    """A search over sets of pattern positions as ints, for texts that make the DFA explode.

    A position is a char state of the NFA (states no text tells apart, ``a`` and ``b`` in
    ``(a|b)``, merged into one), its bit in the pattern's order, so that most moves span a
    few fixed distances: a character costs ``Follow(R) & B[class]`` as masked copies of R
    shifted by each distance (Shift-And over Glushkov positions), a few int operations.
    """

    _MAX_CHARS = 4096  # characters whose steps are kept (beyond, looked up by class)

    def __init__(self, linear: _LinearSearch) -> None:
        nfa, spread, match = linear.nfa, linear.spread, linear.match
        self.linear = linear
        chars = [s for s in reversed(range(len(nfa.kind))) if nfa.kind[s] == "char"]
        char_bits = sum(1 << c for c in chars)
        words = (False, True) if linear.words else (False,)
        mid = [(False, False, prev, nxt) for prev in words for nxt in words]
        ends = [(False, True, prev, False) for prev in words]
        reach, budget = linear.reach, _CLOSURE_BUDGET + linear.visits if linear.direct else None
        follows, finals = {}, {}
        for c in chars:
            follows[c] = [reach(nfa.out1[c], context) for context in mid]
            finals[c] = [reach(nfa.out1[c], context) & match for context in ends]
            if budget is not None and linear.visits > budget:
                raise ValueError(
                    f"too large to run in linear time (its position sets take more than"
                    f" {_CLOSURE_BUDGET:,} NFA state visits to build: optional parts repeated"
                    " many times over, like (a?){3000})"
                )
        firsts = [spread(linear.start, context) for context in mid]
        preds = {c: [0] * len(mid) for c in chars}
        for c in chars:
            for at, follow in enumerate(follows[c]):
                for d in _set_bits(follow & char_bits):
                    preds[d][at] |= 1 << c
        groups: dict[Any, list[int]] = {}
        for c in chars:
            key = (
                tuple(follows[c]),
                tuple(preds[c]),
                tuple(first >> c & 1 for first in firsts),
                tuple(finals[c]),
            )
            groups.setdefault(key, []).append(c)
        self.members = list(groups.values())  # per position, its char states
        self.position = {c: at for at, members in enumerate(self.members) for c in members}
        unanchored = not linear.anchored
        self.always = (1 << len(self.members)) if unanchored else 0  # a bit R keeps unanchored
        heads = [members[0] for members in self.members]
        self.last = [
            sum(1 << p for p, c in enumerate(heads) if follows[c][at] & match)
            | (self.always if firsts[at] & match else 0)
            for at in range(len(mid))
        ]
        self.first = [self.of_states(first) if unanchored else 0 for first in firsts]
        self.final = [
            sum(1 << p for p, c in enumerate(heads) if finals[c][at])
            | (self.always if spread(linear.start, ends[at]) & match else 0)
            for at in range(len(ends))
        ]
        self.moves: list[dict[int, int]] = []  # per context: distance -> the positions moving by it
        self.gathers: list[dict[int, int]] = []  # per context: position -> those entering it
        self.blocks: list[_Blocks] = []  # per context: positions entered from a run before them
        for at in range(len(mid)):  # by a distance few move by (a counted repeat's exits)
            edges = [(p, _set_bits(self.of_states(follows[c][at]))) for p, c in enumerate(heads)]
            blocks = _Blocks(edges) if linear.direct else _Blocks([])
            self.blocks.append(blocks)
            movers: dict[int, int] = {}
            for p, targets in edges:
                for q in targets:
                    if q not in blocks.targets:
                        movers[q - p] = movers.get(q - p, 0) + 1
            moves: dict[int, int] = {}
            gathers: dict[int, int] = {}
            for p, targets in edges:
                for q in targets:
                    if q in blocks.targets:
                        continue
                    if linear.direct and movers[q - p] < _FEW_MOVERS:
                        gathers[q] = gathers.get(q, 0) | 1 << p
                    else:
                        moves[q - p] = moves.get(q - p, 0) | 1 << p
            self.moves.append(moves)
            self.gathers.append(gathers)
            cost = (len(moves) + len(gathers) + 2 * len(blocks.layers)) * (len(self.members) + 500)
            if linear.direct and cost > _STEP_BUDGET:
                raise ValueError(
                    f"too large to run in linear time ({len(self.members):,} positions moving"
                    f" by {len(moves):,} distances, {len(gathers):,} gathers and"
                    f" {len(blocks.layers):,} carries: more than {_STEP_BUDGET:,} for (moves) x"
                    " (positions + 500), a character's cost)"
                )
        self.by_class: dict[int, Any] = {}
        self.of_char: dict[str, Any] = {}

    def of_states(self, states: int) -> int:
        """The positions of the char states among ``states``."""
        position, out = self.position, 0
        for s in _set_bits(states):
            if s in position:  # merged states share a bit: or, not sum
                out |= 1 << position[s]
        return out

    def steps(self, ch: str) -> Any:
        """Per previous character not a word one, and a word one, the step for ``ch``: (its
        word-ness, the positions a match follows, the positions entered afresh, then the
        distances and masks of the moves into positions that take it)."""
        from bisect import bisect_right

        linear = self.linear
        k = bisect_right(linear.bounds, ord(ch)) - 1
        found = self.by_class.get(k)
        if found is None:
            word = linear.words and _contains(_WORD, linear.bounds[k])
            takes = self.of_states(linear.taking(k))
            if linear.words:  # contexts are (previous, next) word-ness: 0 to 3
                found = (self.step(int(word), word, takes), self.step(2 + word, word, takes))
            else:
                found = (self.step(0, word, takes),) * 2
            self.by_class[k] = found
        if len(self.of_char) < self._MAX_CHARS:
            self.of_char[ch] = found
        return found

    def step(self, at: int, word: bool, takes: int) -> tuple[Any, ...]:
        """The step into the positions ``takes`` in context ``at``: the moves into them by
        distance, the two moving the most positions forward inline."""
        terms = []
        for distance, sources in self.moves[at].items():
            into = takes >> distance if distance >= 0 else takes << -distance
            if sources & into:
                terms.append((distance, sources & into))
        terms.sort(key=lambda term: -bin(term[1]).count("1"))
        inline = [term for term in terms if term[0] >= 0][:2]  # search() shifts two inline
        others = [term for term in terms if term not in inline]
        inline += [(0, 0)] * (2 - len(inline))
        (shift1, mask1), (shift2, mask2) = inline
        first = self.first[at] & takes | self.always
        gathers = [(sources, 1 << q) for q, sources in self.gathers[at].items() if takes >> q & 1]
        carries = self.blocks[at].into(takes)
        rest = _OtherMoves(others, gathers, carries) if others or gathers or carries else None
        return (word, self.last[at], first, shift1, mask1, shift2, mask2, rest)

    def search(
        self, first: str, chars: Iterator[str], pending: int, prev_word: bool
    ) -> bool | None:
        """The rest of a search from ``pending`` (NFA states) before ``first``."""
        from bisect import bisect_right

        linear = self.linear
        word = self.steps(first)[prev_word][0]
        live = linear.spread(pending, (False, False, prev_word, word))
        if live & linear.match:
            return True
        k = bisect_right(linear.bounds, ord(first)) - 1
        now = self.of_states(live & linear.taking(k)) | self.always
        prev_word, of_char = word, self.of_char
        for ch in chars:
            known = of_char.get(ch)
            if known is None:
                known = self.steps(ch)
            word, last, entered, shift1, mask1, shift2, mask2, rest = known[prev_word]
            if now & last:
                return True
            if rest is not None:
                entered |= rest(now)
            now = (now & mask1) << shift1 | (now & mask2) << shift2 | entered
            if not now:
                return None
            prev_word = word
        return True if now & self.final[prev_word] else None


def _linear_search(node: _Node) -> Callable[[str], Any]:
    """A search function that runs in linear time; _Unsupported for what it cannot run."""
    looks, rest = _leading_lookaheads(node)
    main = _LinearSearch(rest, _starts_anchored(rest))
    if not looks:
        return main
    checks = [
        (_LinearSearch(("seq", [("assert", "^"), look[2]]), True), look[1] == "=") for look in looks
    ]

    def search(text: str) -> bool | None:
        for check, wanted in checks:
            if (check(text) is not None) != wanted:
                return None
        return main(text)

    return search


def _check_backrefs(node: _Node) -> None:
    """ValueError for a backreference to a group inside a repeat.

    ECMA-262 clears a group's capture each time round its repeat, Python's re keeps the last
    one, so the two could disagree: such a backreference is refused, not translated.
    """
    groups_in_repeats: set[int] = set()
    for inner in _walk(node):
        if inner[0] == "repeat" and (inner[3] == _INFINITE or inner[3] > 1):
            groups_in_repeats.update(n[1] for n in _walk(inner[1]) if n[0] == "group")
    for inner in _walk(node):
        if inner[0] == "backref" and inner[1] in groups_in_repeats:
            raise ValueError(
                "a backreference to a repeated group (ECMA-262 clears it each time round, "
                "Python keeps it): valid ECMA-262 that is not translated"
            )


@functools.lru_cache(maxsize=1024)
def _ecma_search(source: str) -> Callable[[str], Any]:
    """A search function for an ECMA-262 pattern (not None where it matches); ValueError if bad."""
    parser = _EcmaParser(source)
    tree = parser.parse()
    if parser.has_backref:
        _check_backrefs(tree)
    else:
        tree = _trim(tree)
    if _re_safe(tree):
        return _python_search(tree)
    try:
        return _linear_search(tree)
    except _Unsupported as err:
        _python_search(tree)  # says so when re cannot run it at all (a variable lookbehind)
        what = "a backreference" if str(err) == "backref" else "a lookaround"
        raise ValueError(
            f"{what} in a pattern that could take more than linear time to match"
        ) from None


def _python_search(tree: _Node) -> Callable[[str], Any]:
    try:
        return re.compile(_re_source(tree)).search
    except re.error as err:
        raise ValueError(f"valid ECMA-262 that Python's re cannot run ({err})") from None


def _ecma_pattern_error(source: str) -> str | None:
    """Why ``source`` is not an ECMA-262 pattern this library runs, or None when it is."""
    try:
        _ecma_search(source)
    except ValueError as err:
        return str(err)
    return None


def _regex(c: _Compiler, site: _Site, kw: str, source: Any) -> Callable[[str], Any]:
    """The search function for a pattern keyword's value, or a SchemaError naming it."""
    if not isinstance(source, str):
        raise c.error(site.loc, kw, f"patterns must be strings, got {_compact(source, 60)}")
    try:
        return _ecma_search(source)
    except ValueError as err:
        raise c.error(site.loc, kw, f"{_compact(source, 60)} is not a valid regex: {err}") from None


# ---------------------------------------------------------------------------------------------
# Validators: validator(), Validator and JSON text
# ---------------------------------------------------------------------------------------------


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    """A JSON number with a fraction or exponent; one too large for a float (1e400) is refused
    as NaN and Infinity are, rather than becoming infinity."""
    value = float(text)
    if value - value != 0.0:
        raise ValueError(f"{_cut(text, 40)} is not a finite number")
    return value


def _object_pairs(pairs: list[tuple[str, Any]], dict: Any = dict, len: Any = len) -> Any:
    """A JSON object; a key written twice is refused (a model that wrote both meant neither)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {_quote(key)}")
            seen.add(key)
    return obj


_DECODER = json.JSONDecoder(
    parse_constant=_refuse_constant, parse_float=_finite_float, object_pairs_hook=_object_pairs
)


def _loads(text: str | bytes | bytearray) -> Any:
    """Parse JSON as JSON means it: NaN, Infinity, numbers too large for a float and duplicate
    keys refused, bytes in any UTF encoding, deep nesting a ``ValidationError`` rather than a
    ``RecursionError``, an integer longer than Python converts (``sys.get_int_max_str_digits()``,
    which guards against quadratic parsing) said in JSON terms."""
    try:
        if not isinstance(text, str):
            if not isinstance(text, (bytes, bytearray)):
                raise ValidationError(
                    "", f"expected JSON text (str or bytes), got {type(text).__name__}"
                )
            text = text.decode(json.detect_encoding(text), "surrogatepass")
        if "\ufeff" in text[:64] and text.lstrip(" \t\r\n").startswith("\ufeff"):
            raise ValidationError(
                "",
                "not valid JSON: the text starts with a byte order mark (U+FEFF); decoded "
                "JSON text has none (send bytes, or strip it)",
            )
        return _DECODER.decode(text)
    except ValidationError:  # said above already, in full
        raise
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, NaN and Infinity
        reason = str(err)
        if "integer string conversion" in reason:
            limit = sys.get_int_max_str_digits()  # type: ignore[attr-defined,unused-ignore]
            reason = f"an integer has more than {limit} digits, more than this parser accepts"
        raise ValidationError("", f"not valid JSON: {reason}") from None
    except RecursionError:
        raise ValidationError("", "nesting too deep") from None


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

    @property
    def source(self) -> str:
        """The Python source generated for this schema (what ``validate`` runs), to read
        what a schema compiles to, as fastjsonschema's ``compile_to_code`` shows it."""
        return str(getattr(self.validate, "source", ""))


def _json_validator(check: Callable[[object], None]) -> Callable[[str | bytes], Any]:
    def validate_json(text: str | bytes) -> Any:
        """Parse ``text`` (refusing NaN, Infinity, 1e400 and duplicate keys), validate it and
        return the value."""
        value = _loads(text)
        check(value)
        return value

    return validate_json


_CACHE: dict[str, Callable[[object], None]] = {}
_CACHE_SIZE = 256


def validator(schema: dict[str, Any] | bool) -> Validator:
    """Compile ``schema`` once into a ``Validator``; raise ``SchemaError`` naming the keyword
    when it cannot be honoured.  Compiled checkers are shared between schemas of the same JSON
    text; a schema that is not JSON (a tuple, a key that is not a string) is always refused."""
    key = _schema_text(schema)
    check = _CACHE.get(key) if key is not None else None
    if check is None:
        if key is None:
            try:
                _refuse_not_json(schema, "#")
            except RecursionError:
                raise SchemaError("schema nested too deeply to compile") from None
        check = _compile(schema)
        if key is not None:
            if len(_CACHE) >= _CACHE_SIZE:
                _CACHE.clear()
            _CACHE[key] = check
    return Validator(schema, check)


def _schema_text(schema: Any) -> str | None:
    """The JSON text of a schema that is exactly JSON (it reads back equal), else None."""
    try:
        text = json.dumps(schema, allow_nan=False)
        return text if json.loads(text) == schema else None
    except (TypeError, ValueError, RecursionError):
        return None


def _refuse_not_json(value: Any, loc: str) -> None:
    """Raise a ``SchemaError`` at the first place in a schema that is not JSON."""
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not _is_finite(value):
            raise SchemaError(
                f"schema at {_cut(loc, _PATH_LIMIT)}: {value!r} is not JSON (not a finite number)"
            )
    elif isinstance(value, dict):
        for key, sub in value.items():
            if not isinstance(key, str):
                raise SchemaError(
                    f"schema at {_cut(loc, _PATH_LIMIT)}: property name {_compact(key, 60)}"
                    " is not a string; a schema must be JSON"
                )
            _refuse_not_json(sub, loc + "/" + _pointer_escape(key))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            _refuse_not_json(sub, f"{loc}/{i}")
    else:
        kind = (
            "a tuple (JSON arrays are lists)" if isinstance(value, tuple) else type(value).__name__
        )
        raise SchemaError(f"schema at {_cut(loc, _PATH_LIMIT)}: {kind} is not JSON")


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
                " (drafts 2020-12, 2019-09, 7 and 6 are)"
            )
        draft = found
    try:
        return _Compiler(schema, draft).build()
    except RecursionError:
        raise SchemaError("schema nested too deeply to compile") from None


# ---------------------------------------------------------------------------------------------
# Results and content parts
# ---------------------------------------------------------------------------------------------

Part = dict[str, Any]
"""An Open Responses content part: ``text``/``input_text``, ``input_image`` or ``input_file``."""

_PART_TYPES = frozenset({"text", "input_text", "output_text", "input_image", "input_file"})


class Result(_Value):
    """What one call gives back: ``output`` for the model, ``details`` for the host only.

    ``output`` is text or a list of content parts; ``terminate`` hints that the agent loop may
    stop after this batch.  A failed call is never a ``Result`` with error text: the tool
    raises, and the host renders the failure once with :func:`error_result`.
    ``structured`` is the JSON value of a tool with an output schema (:func:`output_schema_of`).


    ``full_output`` is the output before a ``max_output`` limit cut it (``None`` when
    nothing was cut): the host keeps everything, the model sees the cut ``output``.
    """

    __slots__ = ("output", "details", "terminate", "structured", "full_output")
    output: str | list[Part]
    details: Any
    terminate: bool
    structured: Any

    full_output: str | list[Part] | None

    def __init__(
        self,
        output: str | list[Part] = "",
        details: Any = None,
        terminate: bool = False,
        structured: Any = None,
        full_output: str | list[Part] | None = None,
    ) -> None:
        self.output = output
        self.details = details
        self.terminate = terminate
        self.structured = structured
        self.full_output = full_output


def text(s: str) -> Result:
    """A result whose output is the text ``s``."""
    return Result(s)


def parts(*content: Part) -> Result:
    """A result whose output is the content parts given, in order."""
    return Result(list(content))


def image(data: bytes | str, mime: str = "image/png", *, detail: str = "auto") -> Part:
    """An ``input_image`` part: ``data`` as bytes (sent as a data URL) or an image URL."""
    if isinstance(data, str):
        url = data
    else:
        import base64

        url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return {"type": "input_image", "image_url": url, "detail": detail}


def file(data: bytes | None = None, *, filename: str = "", url: str = "", mime: str = "") -> Part:
    """An ``input_file`` part: the file's bytes (sent base64), or a URL to it.

    ``mime`` is carried as a data URL prefix on ``file_data`` when given, the form Open
    Responses accepts for inline files.
    """
    if data is None and not url:
        raise ValueError("file() needs the file's data or its url")
    part: Part = {"type": "input_file"}
    if filename:
        part["filename"] = filename
    if data is not None:
        import base64

        encoded = base64.b64encode(data).decode("ascii")
        part["file_data"] = f"data:{mime};base64,{encoded}" if mime else encoded
    if url:
        part["file_url"] = url
    return part


def _is_part(value: object) -> bool:
    return isinstance(value, dict) and value.get("type") in _PART_TYPES


def output(value: Any) -> Result:
    """Convert what a tool function returned into the :class:`Result` the model sees.

    ``Result`` passes through; ``str`` is text; ``None`` is empty; a content part, or a
    non-empty list of them, is parts; anything else is compact JSON (dataclasses and
    NamedTuples as objects of their fields, enums by value, datetimes in ISO 8601, UUID,
    Decimal and paths as strings, sets as lists, bytes as base64, NaN and infinities as
    ``null``), never a Python repr.  Records are encoded by the same rules.
    """
    if isinstance(value, Result):
        return value
    if isinstance(value, str):
        return Result(value)
    if value is None:
        return Result("")
    if _is_part(value):
        return Result([value])
    if isinstance(value, list) and value and all(_is_part(p) for p in value):
        return Result(list(value))
    return Result(_dumps(value))


def _dumps(value: Any) -> str:
    """Compact JSON for the model and for records: :func:`_json_ready` first (a NamedTuple as an
    object, a non-finite float as null), then :func:`_jsonable` for the other Python types."""
    return json.dumps(
        _json_ready(value),
        default=_jsonable,
        ensure_ascii=False,
        separators=(",", ":"),
        allow_nan=False,
    )


_JSON_LEAVES = frozenset((str, int, bool, _NONE_TYPE))


def _json_ready(value: Any) -> Any:
    """The value with every NamedTuple as an object of its fields (the shape tools take it in)
    and every NaN or infinity as None (JSON has neither; pydantic writes null too).  Containers
    with nothing to change are returned as they are, so the common case copies nothing."""
    kind = type(value)
    if kind is dict or kind is list or kind is tuple:
        out: Any = None
        for k, x in value.items() if kind is dict else enumerate(value):
            t = type(x)
            if t in _JSON_LEAVES or (t is float and x - x == 0.0):
                continue
            y = _json_ready(x)
            if y is not x:
                if out is None:
                    out = dict(value) if kind is dict else list(value)
                out[k] = y
        return value if out is None else out
    if isinstance(value, float):
        return value if _is_finite(value) else None
    if isinstance(value, tuple) and _is_namedtuple(kind):
        return _json_ready(dict(zip(kind._fields, value)))
    return value


# Values of these modules' types are written as their str(); the top package is what counts,
# since 3.13 moved the path classes to pathlib._local.
_WRITTEN_AS_STRINGS = frozenset(("uuid", "decimal", "pathlib", "ipaddress", "fractions"))


def _jsonable(value: Any) -> Any:
    """The ``default=`` hook of :func:`_dumps`: JSON for the values tools commonly return."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):  # a pydantic model, as it writes itself
        return dump(mode="json")
    msgspec = sys.modules.get("msgspec")
    if msgspec is not None and isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _json_ready({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if _is_attrs(type(value)):
        return _json_ready({_attrs_key(a): getattr(value, a.name) for a in value.__attrs_attrs__})
    if isinstance(value, enum.Enum):
        return _json_ready(value.value)
    if isinstance(value, (set, frozenset)):
        try:
            return _json_ready(sorted(value))
        except TypeError:
            return _json_ready(list(value))
    if isinstance(value, (bytes, bytearray)):
        import base64

        return base64.b64encode(value).decode("ascii")
    isoformat = getattr(value, "isoformat", None)
    if callable(isoformat) and type(value).__module__ == "datetime":
        return isoformat()
    if type(value).__module__.partition(".")[0] in _WRITTEN_AS_STRINGS:
        return str(value)
    raise TypeError(
        f"cannot encode {type(value).__name__} as JSON; return a str, a dict, a dataclass "
        "or a Result"
    )


# ---------------------------------------------------------------------------------------------
# Failures: the one message the model sees
# ---------------------------------------------------------------------------------------------


class ToolCrash(Exception):
    """A tool raised something outside ``Exception`` (``SystemExit``, ``KeyboardInterrupt``).

    The Python form of the seed's panic: the job completes with this error, the executor goes
    on, and the original exception stays on ``__cause__`` with its traceback for the host.
    """

    def __init__(self, tool: str, value: BaseException) -> None:
        self.tool = tool
        self.value = value
        detail = _safe_str(value)
        kind = type(value).__name__
        super().__init__(
            f'tool "{tool}" crashed: {kind}: {detail}'
            if detail
            else f'tool "{tool}" crashed: {kind}'
        )


class Cancelled(Exception):
    """A call that was cancelled: before it started, or while an ``async def`` tool ran."""


class NoTool(LookupError):
    """A job whose tool does not exist: the model named a tool nobody has."""


def error_message(exc: BaseException) -> str:
    """The model's message for a failure: ``str(exc)``, led by the type name where that alone
    says little (an empty message, or a bare key as ``KeyError`` gives it).

    Never raises: an exception whose ``__str__`` fails reads ``<Type>: <str() failed>``.  A
    failure from a call with a ``max_output`` limit is cut to it like an output would be.
    """
    msg = _safe_str(exc)
    kind = type(exc).__name__
    if not msg:
        msg = kind
    elif isinstance(exc, KeyError) or msg == _STR_FAILED:
        msg = f"{kind}: {msg}"
    limit = getattr(exc, "__dict__", {}).get(_LIMIT_ATTR)
    return _cut_middle(msg, limit) if isinstance(limit, int) else msg


_STR_FAILED = "<str() failed>"
_LIMIT_ATTR = "_agenttool_max_output"  # set by the executor on a failure of a limited call


def _safe_str(value: object) -> str:
    """``str(value)``, or ``<str() failed>`` when its ``__str__`` raises anything at all: a
    message must never take down the code reporting a failure."""
    try:
        return str(value)
    except BaseException:  # noqa: BLE001 - whatever __str__ raises, the report goes on
        return _STR_FAILED


def _cut_middle(text: str, limit: int, handle: str | None = None) -> str:
    """``text`` with at most ``limit`` of its characters: the head and the tail around a
    marker that says how many characters were cut from the middle (and, with the ``handle``
    it is kept under, the ``read_output`` call that reads them)."""
    if len(text) <= limit:
        return text
    head = (limit + 1) // 2
    tail = text[len(text) - (limit - head) :] if limit > head else ""
    cut = f"{len(text) - limit} characters cut"
    if handle is not None:
        cut += f'; {_READ_OUTPUT}(handle="{handle}", offset={head}) reads them'
    return f"{text[:head]}\n[... {cut} ...]\n{tail}"


_Keeper = Callable[[str, int, int], str]
"""Where a pageable output's cut text is kept: called with the whole text, the limit it was
cut to and its part's index in the output (-1 for a plain text), it returns the handle."""


def _limit_output(result: Result, limit: int, keep: _Keeper | None = None) -> Result:
    """``result`` with its text cut to ``limit`` characters, the uncut output kept as
    ``full_output``; ``result`` itself when nothing needs cutting.  The limit is on all the
    text the model sees from the call, summed over its text parts: parts are kept whole while
    they fit, the one that crosses the limit is cut in the middle (given to ``keep`` for
    ``read_output`` when the tool is pageable), and the text parts after it are replaced by
    one note saying how many were cut.  Image and file parts are not text: they are not
    counted and always kept."""
    out = result.output
    if isinstance(out, str):
        if len(out) <= limit:
            return result
        cut: str | list[Part] = _cut_middle(out, limit, keep(out, limit, -1) if keep else None)
    else:
        texts = [p for p in out if isinstance(p.get("text"), str)]
        if sum(len(p["text"]) for p in texts) <= limit:
            return result
        left = limit
        kept: list[Part] = []
        dropped = dropped_chars = 0
        for index, p in enumerate(out):
            text = p.get("text")
            if not isinstance(text, str):
                kept.append(p)
            elif left < 0:
                dropped += 1
                dropped_chars += len(text)
            elif len(text) <= left:
                kept.append(p)
                left -= len(text)
            else:
                handle = keep(text, left, index) if keep else None
                kept.append({**p, "text": _cut_middle(text, left, handle)})
                left = -1
        if dropped:
            note = (
                f"[... {_plural(dropped, 'more text part')} ({dropped_chars} characters) cut ...]"
            )
            kept.append({"type": "text", "text": note})
        cut = kept
    return Result(
        cut, result.details, result.terminate, structured=result.structured, full_output=out
    )


def error_result(exc: BaseException) -> Result:
    """The result the model sees for a failure: ``Error: <message>``, exactly once."""
    return Result("Error: " + error_message(exc))


# ----- pageable outputs ----------------------------------------------------------------------
# Opt-in (pageable=True on a tool, Executor(pageable=True) the default for tools that do not set
# it): when max_output cuts a text, the whole text is kept under a handle the cut marker names,
# and the companion tool read_output(handle, offset, length) (added by ToolSet.pageable())
# returns any slice of it, at most the limit it was cut to.  Handles live with the run: a call
# of a journaled run keeps its handle in the journal, beside the whole output its outcome
# already stores (read back by a read_output call of any later batch on that journal, after a
# restart too, until the run is forgotten or pruned); any other call keeps the text in one
# process-wide store: at most 256 texts and 64 Mi characters, each kept an hour after its last
# read, the least recently used dropped first.  A handle that is gone is refused saying so.

_READ_OUTPUT = "read_output"


def _new_handle() -> str:
    """A new ``read_output`` handle: random, so no handle can be guessed from another."""
    return "out_" + os.urandom(8).hex()


class _OutputPages:
    """The bounded store of cut texts behind ``read_output`` handles."""

    def __init__(self, max_texts: int, max_chars: int, lifetime: float) -> None:
        self.max_texts = max_texts
        self.max_chars = max_chars
        self.lifetime = lifetime
        self._lock = threading.Lock()
        self._texts: collections.OrderedDict[str, tuple[str, int, float]] = (
            collections.OrderedDict()
        )
        self._chars = 0

    def keep(self, text: str, limit: int, part: int = -1) -> str:
        """Keep ``text`` (cut to ``limit`` for the model) and return its new handle (a
        :data:`_Keeper`; the text itself is kept, so its part's index is not needed)."""
        import time

        handle = _new_handle()
        with self._lock:
            self._texts[handle] = (text, limit, time.monotonic() + self.lifetime)
            self._chars += len(text)
            self._evict(time.monotonic())
        return handle

    def read(self, handle: str) -> tuple[str, int]:
        """The text and limit under ``handle``; a :class:`ToolError` once it is gone."""
        import time

        now = time.monotonic()
        with self._lock:
            self._evict(now)
            entry = self._texts.get(handle)
            if entry is None:
                raise ToolError(
                    f'no output under handle "{handle}": it was never made, or it is gone'
                    f" (outputs are kept {self.lifetime / 60:g} minutes after their last read,"
                    f" {self.max_texts} at most; a journaled run's, in a batch on its journal"
                    " until the run is forgotten)"
                )
            self._texts[handle] = (entry[0], entry[1], now + self.lifetime)
            self._texts.move_to_end(handle)
        return entry[0], entry[1]

    def _evict(self, now: float) -> None:
        """Drop the expired texts, then the least recently read while over a bound."""
        texts = self._texts
        for handle in [h for h, (_, _, expires) in texts.items() if expires <= now]:
            self._chars -= len(texts.pop(handle)[0])
        while texts and (len(texts) > self.max_texts or self._chars > self.max_chars):
            _, (text, _, _) = texts.popitem(last=False)
            self._chars -= len(text)


_pages = _OutputPages(max_texts=256, max_chars=64 * 2**20, lifetime=3600.0)


def _read_output(handle: str, offset: int = 0, length: int = 0) -> str:
    """Read part of a tool output that was cut short: length characters from offset (0, or
    more than the output was cut to, reads as much as it was cut to).

    Args:
        handle: The handle the cut output names
        offset: Where to start, in characters from the start of the whole output
        length: How many characters to read
    """
    scope = _scope.get()
    journal = scope.journal if scope is not None else None
    kept = journal.page(handle) if journal is not None else None
    text, limit = kept if kept is not None else _pages.read(handle)
    if offset < 0 or offset > len(text):
        raise ToolError(f"offset {offset} is outside the output, which has {len(text)} characters")
    length = limit if length <= 0 or length > limit else length
    end = min(len(text), offset + length)
    left = len(text) - end
    after = f"; {left} more from offset {end}" if left else "; the end"
    return f"{text[offset:end]}\n[characters {offset} to {end} of {len(text)}{after}]"


# ----- the error policy ----------------------------------------------------------------------
# What the model reads of a tool's failure, under Executor(errors=...) or ToolSet.run(errors=):
# - "full" (the default, and the contract): the exception's own message.
# - "redacted": 'tool "x" failed'; the exception stays on the event, as the __cause__ of the
#   ToolError the job fails with, for the host's logs.
# - a function of the exception returning the message; one that raises or returns anything
#   but a str falls back to "redacted".
# What the library itself says is always shown whatever the policy, since the model must act
# on it: invalid arguments, a missing tool, a cancellation, a timeout, a denial (see _says), and
# a ToolError, which a tool raises to be read.  Whether a message is the library's is decided by
# where it was made, not by its type: a tool raising ValidationError or Cancelled on its own
# data follows the policy like any other failure of the tool.


class ToolError(Exception):
    """A failure whose message always reaches the model, whatever the error policy.

    Raise it from a tool for a message written for the model (``ToolError("no such user;
    list users first")``); the library uses it for denials and for messages a policy chose.
    """


ErrorPolicy = Union[str, Callable[[BaseException], str]]
_SAYS = "_agenttool_says"  # set on an error whose message this library made (see _says)


def _says(exc: _E) -> _E:
    """Mark ``exc`` as made by this library (invalid arguments, a missing tool, a cancellation
    or a timeout it decided): the model always reads it, whatever the policy.  The same types
    raised by a tool follow the policy: what is shown is decided by where it was made."""
    setattr(exc, _SAYS, True)
    return exc


def _check_errors(errors: ErrorPolicy | None) -> None:
    """Refuse an error policy that is not ``"full"``, ``"redacted"``, a function or None."""
    if errors is None or errors in ("full", "redacted") or callable(errors):
        return
    raise ValueError(
        f'agenttool: errors must be "full", "redacted" or a function of the exception, '
        f"got {errors!r}"
    )


def _policy_error(exc: BaseException, errors: ErrorPolicy | None, tool: str) -> BaseException:
    """The error a job fails with under the policy: ``exc`` itself where the model may read
    it, else a :class:`ToolError` with the policy's message and ``exc`` as its cause."""
    if errors is None or errors == "full" or isinstance(exc, ToolError):
        return exc
    if exc.__dict__.get(_SAYS) if hasattr(exc, "__dict__") else False:
        return exc
    message = f'tool "{tool}" failed'
    if callable(errors):
        try:
            chosen = errors(exc)
        except BaseException:  # noqa: BLE001 - a failing policy falls back to redacted
            chosen = None
        if isinstance(chosen, str):
            message = chosen[7:] if chosen.startswith("Error: ") else chosen
    shown = ToolError(message)
    shown.__cause__ = exc
    return shown


# ---------------------------------------------------------------------------------------------
# Calls and the call's context: progress, records, elicitation, cancellation
# ---------------------------------------------------------------------------------------------


class Call(_Value):
    """One call a model made: its id, the arguments as JSON text or a decoded dict, the
    harness's idempotency key (kept across a re-run, fresh for any other call) and where
    progress goes when the call runs outside an executor."""

    __slots__ = ("id", "args", "idempotency_key", "on_update")
    id: str
    args: str | bytes | dict[str, Any] | None
    idempotency_key: str
    on_update: Callable[[Result], None] | None

    def __init__(
        self,
        id: str,
        args: str | bytes | dict[str, Any] | None = "",
        idempotency_key: str = "",
        on_update: Callable[[Result], None] | None = None,
    ) -> None:
        self.id = id
        self.args = args
        self.idempotency_key = idempotency_key
        self.on_update = on_update


class ProgressInfo(_Value):
    """The details of a progress update, as MCP has them: how far, out of how much, and why."""

    __slots__ = ("progress", "total", "message")
    progress: float | None
    total: float | None
    message: str | None

    def __init__(
        self, progress: float | None = None, total: float | None = None, message: str | None = None
    ) -> None:
        self.progress = progress
        self.total = total
        self.message = message


class Record(_Frozen):
    """A durable fact about a call: a namespace ``owner:kind`` and the value's JSON text."""

    __slots__ = ("ns", "data")
    ns: str
    data: str

    def __init__(self, ns: str, data: str) -> None:
        self.ns = ns
        self.data = data


class Action(str, enum.Enum):
    """How a person answered an elicitation."""

    ACCEPT = "accept"
    DECLINE = "decline"
    CANCEL = "cancel"


class Elicitation(_Value):
    """A question a tool asks a person mid-call: a message, a JSON Schema for a form answer,
    or a URL to send them to."""

    __slots__ = ("message", "schema", "url")
    message: str
    schema: dict[str, Any] | None
    url: str

    def __init__(self, message: str, schema: dict[str, Any] | None = None, url: str = "") -> None:
        self.message = message
        self.schema = schema
        self.url = url


class Answer(_Value):
    """The answer to an :class:`Elicitation`; ``content`` is the form's object on ACCEPT."""

    __slots__ = ("action", "content")
    action: Action
    content: dict[str, Any] | None

    def __init__(self, action: Action, content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = content


Recorder = Callable[[Record], None]
Elicitor = Callable[[Elicitation], Answer]


class _Cancellation:
    """A call's cancellation: a flag, an event a thread can wait on (made when first asked
    for: most calls never wait), and hooks run once when set (an ``async def`` tool cancels
    its task through one)."""

    __slots__ = ("is_set", "_event", "_hooks", "_lock")

    def __init__(self) -> None:
        self.is_set = False
        self._event: threading.Event | None = None
        self._hooks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    @property
    def event(self) -> threading.Event:
        with self._lock:
            if self._event is None:
                self._event = threading.Event()
                if self.is_set:
                    self._event.set()
            return self._event

    def cancel(self) -> None:
        with self._lock:
            if self.is_set:
                return
            self.is_set = True
            event = self._event
            hooks, self._hooks = self._hooks, []
        if event is not None:
            event.set()
        for hook in hooks:
            try:
                hook()
            except Exception:  # noqa: BLE001 - a hook whose loop is gone has nothing to stop
                pass

    def on_cancel(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Run ``hook`` when cancelled (now, if already); returns a function that forgets it."""
        with self._lock:
            if not self.is_set:
                self._hooks.append(hook)
                return lambda: self._forget(hook)
        hook()
        return lambda: None

    def _forget(self, hook: Callable[[], None]) -> None:
        with self._lock:
            if hook in self._hooks:
                self._hooks.remove(hook)


class _Scope:
    """What a running call sees through ``contextvars``; installed per call by the executor.

    ``loop`` is the loop an ``async def`` tool of the call runs on (the caller's, under
    ``aexecute``); ``own_loop`` says the batch's consumer blocks a loop of this module's, so an
    async tool must get a loop of its own, and ``host_loop`` that it blocks the host's, where
    an async tool is refused; ``bounds`` are the executor bounds the call runs under (a batch run
    from inside the call on the same executor is bounded on its own instead of waiting for
    the slot its parent holds); ``journal`` is the journal of the call's run, if it has one
    (where its ``read_output`` handles live).
    """

    __slots__ = (
        "call",
        "tool",
        "cancellation",
        "recorder",
        "elicitor",
        "emit",
        "loop",
        "own_loop",
        "host_loop",
        "bounds",
        "inject",
        "workers",
        "journal",
    )

    def __init__(
        self,
        call: Call,
        tool: str,
        cancellation: _Cancellation,
        recorder: Recorder | None,
        elicitor: Elicitor | None,
        emit: Callable[[Result], None] | None,
        inject: collections.abc.Mapping[str, Any] = types.MappingProxyType({}),
        loop: Any = None,
        own_loop: bool = False,
        bounds: _Bounds | None = None,
        workers: Any = None,
        host_loop: bool = False,
        journal: Journal | None = None,
    ) -> None:
        self.call = call
        self.tool = tool
        self.cancellation = cancellation
        self.recorder = recorder
        self.elicitor = elicitor
        self.emit = emit
        self.inject = inject  # the host's values for Inject("key") parameters
        self.loop = loop
        self.own_loop = own_loop
        self.host_loop = host_loop
        self.bounds = bounds
        self.workers = workers  # Executor(workers=...): where isolated tools run, if not ours
        self.journal = journal


_scope: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar(
    "agenttool_scope", default=None
)


def _swap_call(call: Call) -> Call:
    """Make ``call`` (the same call with other arguments or key) the running call."""
    scope = _scope.get()
    if scope is not None and scope.call.id == call.id:
        scope.call = call
    return call


def current_call() -> Call | None:
    """The call running on this thread or task, or ``None`` outside a call."""
    scope = _scope.get()
    return scope.call if scope else None


def progress(
    update: str | Result,
    *,
    progress: float | None = None,
    total: float | None = None,
    message: str | None = None,
) -> None:
    """Send a progress update for the running call: a text or a :class:`Result`, with
    :class:`ProgressInfo` details when ``progress``, ``total`` or ``message`` is given.

    A no-op outside a call; updates sent after the call's final result are dropped.
    """
    scope = _scope.get()
    if scope is None or scope.emit is None:
        return
    result = Result(update) if isinstance(update, str) else update
    if progress is not None or total is not None or message is not None:
        result = Result(result.output, ProgressInfo(progress, total, message), result.terminate)
    scope.emit(result)


def cancelled() -> bool:
    """Whether the running call has been cancelled.

    Cancellation is cooperative for threads: Python cannot stop a thread from outside, so a
    long tool should look here (or wait on :func:`cancel_event`) and return early.  An
    ``async def`` tool is cancelled for real: its task receives ``CancelledError``.
    """
    scope = _scope.get()
    return scope is not None and scope.cancellation.is_set


def cancel_event() -> threading.Event:
    """An event set when the running call is cancelled (never set outside a call), so a
    tool can ``wait(timeout)`` on it instead of sleeping."""
    scope = _scope.get()
    return scope.cancellation.event if scope else threading.Event()


def record_of(details: Any) -> Record | None:
    """The :class:`Record` of a recordable details value, or ``None`` for any other value.

    A :class:`Record` is its own record.  Another value is recordable when it has a
    ``record_ns`` attribute (class attribute or property) naming ``owner:kind``; its data is
    its JSON (a dataclass as its fields, ``record_ns`` left out).  An empty namespace or a
    value JSON cannot hold raises ``ValueError``.
    """
    if details is None or isinstance(details, ProgressInfo):
        return None
    if isinstance(details, Record):  # a record made elsewhere (a remote tool's) passes as it is
        return Record(details.ns, details.data)
    ns = getattr(details, "record_ns", None)
    if ns is None:
        return None
    kind = type(details).__name__
    if not isinstance(ns, str) or not ns:
        raise ValueError(f"agenttool: record {kind}: empty namespace")
    value = details
    if dataclasses.is_dataclass(details) and not isinstance(details, type):
        value = {
            f.name: getattr(details, f.name)
            for f in dataclasses.fields(details)
            if f.name != "record_ns"
        }
    try:
        data = _dumps(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"agenttool: record {kind}: {exc}") from exc
    return Record(ns, data)


def write_record(details: Any) -> None:
    """Hand a recordable value to the host's recorder now, while the call runs.

    Returns once the recorder has returned (made the record durable); its error is the
    tool's to handle.  A no-op with no recorder, outside a call, or for a value that is not
    recordable.
    """
    scope = _scope.get()
    if scope is None or scope.recorder is None:
        return
    record = record_of(details)
    if record is not None:
        scope.recorder(record)


def elicit(question: Elicitation) -> Answer:
    """Ask a person through the host's elicitor; CANCEL when nobody can be asked.

    An exception from the elicitor means the host failed to ask, not that the person
    refused, and reaches the tool as it is.  This waits for the answer: an ``async def`` tool
    calls it through ``asyncio.to_thread`` so the shared event loop is not held up.
    """
    scope = _scope.get()
    if scope is None or scope.elicitor is None:
        return Answer(Action.CANCEL)
    # a pool thread waiting for a person: another may take its place meanwhile, so calls
    # waiting for answers never starve the pool (their number is the host's to bound)
    blocked = _workers.block()
    try:
        return scope.elicitor(question)
    finally:
        if blocked:
            _workers.unblock()


# ---------------------------------------------------------------------------------------------
# Tools and their properties
# ---------------------------------------------------------------------------------------------


class Annotations(_Frozen):
    """MCP's hints about a tool; each field is ``None`` until stated.

    Hints, not guarantees: a policy may use them to be stricter, never alone to allow a call.
    """

    __slots__ = ("title", "read_only", "destructive", "idempotent", "open_world")
    title: str | None
    read_only: bool | None
    destructive: bool | None
    idempotent: bool | None
    open_world: bool | None

    def __init__(
        self,
        title: str | None = None,
        read_only: bool | None = None,
        destructive: bool | None = None,
        idempotent: bool | None = None,
        open_world: bool | None = None,
    ) -> None:
        self.title = title
        self.read_only = read_only
        self.destructive = destructive
        self.idempotent = idempotent
        self.open_world = open_world


class Replay(str, enum.Enum):
    """Whether a call whose outcome is unknown may run again: never (UNKNOWN), freely (SAFE),
    or only with the same idempotency key (KEYED)."""

    UNKNOWN = "unknown"
    SAFE = "safe"
    KEYED = "keyed"


class FactCall(_Frozen):
    """One thing a call amounts to: a call of ``tool`` with ``args``, and ``text`` saying it
    in words (``"deletes /etc/hosts"``).  An empty ``tool`` is the claiming tool itself;
    ``args`` is ``None`` when the tool states none."""

    __slots__ = ("tool", "args", "text")
    tool: str
    args: dict[str, Any] | None
    text: str

    def __init__(self, tool: str = "", args: dict[str, Any] | None = None, text: str = "") -> None:
        if not isinstance(tool, str) or not isinstance(text, str):
            raise TypeError(
                f"agenttool: FactCall: tool and text must be str, got {tool!r}, {text!r}"
            )
        if args is not None and not isinstance(args, dict):
            raise TypeError(f"agenttool: FactCall: args must be an arguments object, got {args!r}")
        self.tool = tool
        self.args = args
        self.text = text


class Facts(_Frozen):
    """What a call amounts to, stated by its tool before it runs (its ``facts(args)``), so a
    policy can decide on "deletes /etc/hosts" rather than on raw arguments.

    ``calls`` is ``None`` for "the call itself" (what a tool that states nothing amounts
    to), or the list of :class:`FactCall` the call amounts to; an **empty list** says it
    amounts to nothing the tool can state, and is never to be read as the call itself.
    ``rewrite`` is the arguments object the call runs with once allowed (``None``: its own),
    checked against the tool's schema by :func:`facts_of`.  A tool whose ``facts`` raises
    states that nothing can be said about the call: a policy must not allow it.
    """

    __slots__ = ("calls", "rewrite")
    calls: list[FactCall] | None
    rewrite: dict[str, Any] | None

    def __init__(
        self,
        calls: Sequence[FactCall] | None = None,
        rewrite: dict[str, Any] | None = None,
    ) -> None:
        if calls is not None:
            if isinstance(calls, (str, bytes, dict)) or not all(
                isinstance(c, FactCall) for c in calls
            ):
                raise TypeError(f"agenttool: Facts: calls must be FactCall values, got {calls!r}")
            calls = list(calls)
        if rewrite is not None and not isinstance(rewrite, dict):
            raise TypeError(
                f"agenttool: Facts: rewrite must be an arguments object, got {rewrite!r}"
            )
        self.calls = calls
        self.rewrite = rewrite

    def to_json(self) -> dict[str, Any]:
        """The JSON form, as MCP's ``execution/facts`` carries it and an approval hash covers
        it: ``{"calls": null | [{"tool", "args"?, "text"?}], "rewrite"?}``."""
        out: dict[str, Any] = {"calls": None}
        if self.calls is not None:
            out["calls"] = [
                {
                    "tool": c.tool,
                    **({"args": c.args} if c.args is not None else {}),
                    **({"text": c.text} if c.text else {}),
                }
                for c in self.calls
            ]
        if self.rewrite is not None:
            out["rewrite"] = self.rewrite
        return out

    @classmethod
    def from_json(cls, value: Any) -> Facts:
        """Read the form :meth:`to_json` writes (``null`` members read as absent); anything
        else raises ValueError saying what is wrong."""
        if not isinstance(value, dict):
            raise ValueError(f"facts must be a JSON object, got {_json_type(value)}")
        calls = value.get("calls")
        if calls is not None and not isinstance(calls, list):
            raise ValueError(f'facts: "calls" must be null or an array, got {_json_type(calls)}')
        read: list[FactCall] | None = None
        if calls is not None:
            read = []
            for i, c in enumerate(calls):
                if not isinstance(c, dict):
                    raise ValueError(f"facts: calls[{i}] must be an object, got {_json_type(c)}")
                tool, args, text = c.get("tool") or "", c.get("args"), c.get("text") or ""
                if not isinstance(tool, str) or not isinstance(text, str):
                    raise ValueError(f'facts: calls[{i}]: "tool" and "text" must be strings')
                if args is not None and not isinstance(args, dict):
                    raise ValueError(f'facts: calls[{i}]: "args" must be an object')
                read.append(FactCall(tool, args, text))
        rewrite = value.get("rewrite")
        if rewrite is not None and not isinstance(rewrite, dict):
            raise ValueError(f'facts: "rewrite" must be an object, got {_json_type(rewrite)}')
        return cls(read, rewrite)


class Namespace(_Frozen):
    """A group of tools a provider lists under one name (OpenAI's Responses ``namespace``
    tools: the model sees ``crm`` and its tools); ``description`` is what the model reads of
    the group, ``Tools under "crm".`` when empty.  A tool's ``namespace="crm"`` means
    ``Namespace("crm")``."""

    __slots__ = ("name", "description")
    name: str
    description: str

    def __init__(self, name: str, description: str = "") -> None:
        if not isinstance(name, str) or re.fullmatch(_NAME_RULE, name) is None:
            raise ValueError(
                f"agenttool: a namespace's name must be {_NAME_RULE_TEXT}, got {name!r}"
            )
        if not isinstance(description, str):
            raise TypeError(f"agenttool: namespace {name!r}: description must be a str")
        self.name = name
        self.description = description or f'Tools under "{name}".'


@runtime_checkable
class Tool(Protocol):
    """Something a model can call.  ``parameters`` is the JSON Schema of the arguments
    object, ``None`` for no arguments.  ``execute`` raises to fail.

    Optional properties a tool may declare, each read by exactly one function that supplies
    the default (:data:`PROPERTIES` maps each name to its reader): ``strict``
    (:func:`is_strict`), ``sequential`` (:func:`is_sequential`), ``resource``
    (:func:`resource_of`), ``annotations`` (:func:`annotations_of`), ``confined(args)``
    (:func:`confined_by`), ``replay(args)`` (:func:`replay_of`), ``facts(args)``
    (:func:`facts_of`, its presence :func:`is_factual`), ``output_schema``
    (:func:`output_schema_of`), ``needs_approval(args)`` (:func:`needs_approval_of`),
    ``timeout`` (:func:`timeout_of`), ``max_output`` (:func:`max_output_of`), ``cacheable``
    (:func:`is_cacheable`), ``isolated`` (:func:`is_isolated`), ``task``
    (:func:`task_support_of`), and the definition options
    ``defer_loading`` (:func:`defer_loading_of`), ``input_examples``
    (:func:`input_examples_of`), ``cache_control`` (:func:`cache_control_of`),
    ``allowed_callers`` (:func:`allowed_callers_of`) and ``namespace`` (:func:`namespace_of`);
    and ``close()``, whose presence says the tool owns something the host must close.
    """

    name: str
    description: str
    parameters: dict[str, Any] | None

    def execute(self, call: Call) -> Result: ...


def is_strict(t: Tool) -> bool:
    """Whether the tool's schema follows strict rules (sent as ``strict: true``); default no."""
    return getattr(t, "strict", False) is True


def is_sequential(t: Tool) -> bool:
    """Whether a batch holding this tool must run one call at a time; default no."""
    return getattr(t, "sequential", False) is True


def resource_of(t: Tool) -> str:
    """The resource the tool's calls share (calls naming one resource run in model order);
    ``""`` for none, and for a sequential tool, whose whole batch is serial anyway."""
    if is_sequential(t):
        return ""
    resource = getattr(t, "resource", "")
    return resource if isinstance(resource, str) else ""


def annotations_of(t: Tool) -> Annotations | None:
    """The tool's annotations, or ``None`` when it states none (not "harmless")."""
    annotations = getattr(t, "annotations", None)
    return annotations if isinstance(annotations, Annotations) else None


def confined_by(t: Tool, args: dict[str, Any]) -> tuple[bool, str]:
    """Whether this call runs confined and by what (``"landlock+seccomp"``); default
    ``(False, "")``, unconfined as far as anyone stated."""
    confined = getattr(t, "confined", None)
    if not callable(confined):
        return (False, "")
    answer = confined(args)
    return (bool(answer[0]), str(answer[1]))


def replay_of(t: Tool, args: dict[str, Any]) -> Replay:
    """Whether this call may run again when its outcome is unknown; ``Replay.UNKNOWN``
    (never) by default and for any answer that is not a :class:`Replay` value."""
    replay = getattr(t, "replay", None)
    if not callable(replay):
        return Replay.UNKNOWN
    answer = replay(args)
    try:
        return Replay(answer)
    except ValueError:
        return Replay.UNKNOWN


def is_factual(t: Tool) -> bool:
    """Whether the tool states what its calls amount to (it has ``facts(args)``), readable
    without asking it about any call; default no."""
    return callable(getattr(t, "facts", None))


def facts_of(t: Tool, args: dict[str, Any]) -> tuple[Facts, bool]:
    """What this call amounts to, and whether the tool claims facts at all.

    A tool without ``facts`` gives ``(Facts(), False)``: the call itself.  Whatever the
    tool's ``facts`` raises propagates (a policy must then not allow the call), and so does
    a TypeError for an answer that is not a :class:`Facts` and a ValueError for a
    ``rewrite`` the tool's schema refuses, so a rewrite read here is one that can run.
    """
    facts = getattr(t, "facts", None)
    if not callable(facts):
        return Facts(), False
    answer = facts(args)
    if not isinstance(answer, Facts):
        raise TypeError(
            f'agenttool: tool "{_safe_name(t)}": facts(args) must return a Facts, got'
            f" {type(answer).__name__}"
        )
    if answer.rewrite is not None:
        try:
            _check_args(t.parameters if t.parameters is not None else NO_ARGS, answer.rewrite)
        except ValidationError as exc:
            raise ValueError(
                f'agenttool: tool "{_safe_name(t)}": its facts rewrite the call to arguments'
                f" its schema refuses ({exc})"
            ) from exc
    return answer, True


def output_schema_of(t: Tool) -> dict[str, Any] | None:
    """The JSON Schema of the tool's structured result (``Result.structured``), or ``None``
    when its results are text only."""
    schema = getattr(t, "output_schema", None)
    return schema if isinstance(schema, dict) else None


def needs_approval_of(t: Tool, args: dict[str, Any]) -> bool:
    """Whether this call must be approved before it runs; default no.

    A tool declares ``needs_approval = True`` or a ``needs_approval(args)`` method of the
    arguments object.  Any true answer counts, so a doubtful answer asks rather than runs.
    """
    needs = getattr(t, "needs_approval", False)
    return bool(needs(args) if callable(needs) else needs)


def timeout_of(t: Tool) -> float | None:
    """Seconds one call of the tool may run before it completes as timed out; ``None`` (the
    executor's default applies) when it states no positive number.  One the clock cannot wait
    for (infinite, or past ``threading.TIMEOUT_MAX``) raises ValueError: its calls fail
    saying so."""
    value: float | None = _positive(getattr(t, "timeout", None), (int, float))
    if value is not None and not value <= threading.TIMEOUT_MAX:
        raise ValueError(_too_long("timeout", value))
    return value


def _too_long(option: str, value: Any) -> str:
    return (
        f"{option} must be at most {threading.TIMEOUT_MAX:g} seconds (the longest wait the"
        f" platform's clock allows), got {value!r}"
    )


def max_output_of(t: Tool) -> int | None:
    """The most characters of output (and of error message) the model sees from one call;
    ``None`` (the executor's default applies) when it states no positive integer."""
    value: int | None = _positive(getattr(t, "max_output", None), (int,))
    return value


def defer_loading_of(t: Tool) -> bool:
    """Whether a provider with tool search leaves the tool out of the model's first view, to
    be found by a search (``defer_loading``); default no."""
    return getattr(t, "defer_loading", False) is True


def input_examples_of(t: Tool) -> list[dict[str, Any]]:
    """Example arguments objects shown to the model beside the schema (Anthropic's
    ``input_examples``), copies; ``[]`` when the tool states none."""
    import copy

    examples = getattr(t, "input_examples", None)
    if not isinstance(examples, (list, tuple)):
        return []
    return [copy.deepcopy(e) for e in examples if isinstance(e, dict)]


def cache_control_of(t: Tool) -> dict[str, Any] | None:
    """The prompt-cache breakpoint to set after this tool's definition (Anthropic's
    ``cache_control``, such as ``{"type": "ephemeral"}``), or ``None`` for none."""
    control = getattr(t, "cache_control", None)
    return dict(control) if isinstance(control, dict) else None


def allowed_callers_of(t: Tool) -> tuple[str, ...]:
    """Who may call the tool, in the provider's words (``"direct"``, OpenAI's
    ``"programmatic"``, Anthropic's ``"code_execution_20250825"``); ``()`` when unstated,
    which every provider reads as the model calling it directly."""
    callers = getattr(t, "allowed_callers", None)
    if not isinstance(callers, (list, tuple)):
        return ()
    return tuple(c for c in callers if isinstance(c, str) and c)


def namespace_of(t: Tool) -> Namespace | None:
    """The namespace the tool is listed under where the provider groups tools (OpenAI's
    Responses ``namespace`` tools), or ``None``."""
    namespace = getattr(t, "namespace", None)
    if isinstance(namespace, str) and namespace:
        return Namespace(namespace)
    return namespace if isinstance(namespace, Namespace) else None


def is_cacheable(t: Tool) -> bool:
    """Whether the executor's result cache may answer the tool's calls (those its ``replay``
    reads as :attr:`Replay.SAFE`); default no."""
    return getattr(t, "cacheable", False) is True


def is_isolated(t: Tool) -> bool:
    """Whether the tool's calls run in a worker process, which a timeout or a cancel kills
    (``isolated=True``: see "isolation"); default no, a thread."""
    return getattr(t, "isolated", False) is True


def task_support_of(t: Tool) -> str:
    """Whether an MCP server runs the tool's calls as tasks (the ``io.modelcontextprotocol/tasks``
    extension: created, polled, cancelled, the result kept a while): ``"optional"`` (``task =
    True`` or ``"optional"``: a task when the client can take one, else a plain call),
    ``"required"`` (a client that cannot take a task is refused), or ``"forbidden"``, the
    default: always a plain call.  Only a server reads it; an executor runs every call the
    same way."""
    value = getattr(t, "task", False)
    if value is True or value == "optional":
        return "optional"
    return "required" if value == "required" else "forbidden"


def _task_option(owner: str, value: Any) -> bool | str:
    """The ``task`` option as given: a bool, ``"optional"`` or ``"required"``."""
    if isinstance(value, bool) or value in ("optional", "required"):
        return value  # type: ignore[no-any-return]
    raise ValueError(
        f'agenttool: {owner}: task must be True, False, "optional" or "required", got {value!r}'
    )


def _positive(value: Any, kinds: tuple[type, ...]) -> Any:
    """``value`` when it is a positive number of one of ``kinds`` (never a bool), else None."""
    if value is None:
        return None
    if isinstance(value, kinds) and not isinstance(value, bool) and value > 0:  # type: ignore[operator]
        return value
    return None


PROPERTIES: dict[str, Callable[..., Any]] = {
    "strict": is_strict,
    "sequential": is_sequential,
    "resource": resource_of,
    "annotations": annotations_of,
    "confined": confined_by,
    "replay": replay_of,
    "facts": facts_of,
    "output_schema": output_schema_of,
    "needs_approval": needs_approval_of,
    "timeout": timeout_of,
    "max_output": max_output_of,
    "defer_loading": defer_loading_of,
    "input_examples": input_examples_of,
    "cache_control": cache_control_of,
    "allowed_callers": allowed_callers_of,
    "namespace": namespace_of,
    "cacheable": is_cacheable,
    "isolated": is_isolated,
    "task": task_support_of,
}
"""The optional properties a tool may declare, each with its one reader (``close`` aside,
which is read by presence).  :func:`wrap` forwards every one of them."""

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
"""The schema served for a tool whose ``parameters`` is ``None``."""


class Inject(_Frozen):
    """Marks a parameter the host fills: ``db: Annotated[Database, Inject("db")]`` receives
    the value given for ``"db"`` as ``Executor(inject={"db": ...})`` or
    ``ToolSet.run(..., inject={"db": ...})``; a parameter typed :class:`Call` receives the
    call itself.

    The model never sees such a parameter: it is in no schema and no error message, and a
    model that sends it is refused like any unknown property.  When the host gave no value
    for the key, a parameter with a default takes its default and any other fails the call;
    the model reads only that the tool is not available, and the host finds what is missing
    on the error's ``__cause__``.
    """

    __slots__ = ("key",)
    key: str

    def __init__(self, key: str) -> None:
        if not isinstance(key, str) or not key:
            raise TypeError(f"agenttool: Inject needs a non-empty key, got {key!r}")
        self.key = key


# The values ToolSet.run(..., inject=...) gives the batch it runs, over its executor's: the
# executor copies the caller's context into every job, so a running tool reads them here.
_run_inject: contextvars.ContextVar[collections.abc.Mapping[str, Any]] = contextvars.ContextVar(
    "agenttool_run_inject", default=types.MappingProxyType({})
)


def _missing_injection(tool: str, key: str) -> RuntimeError:
    """The failure of a call whose tool needs a host value nobody gave: a message the model
    can act on (stop trying), the host's on ``__cause__``."""
    err = RuntimeError(f'tool "{tool}" is not available: its host has not configured it')
    err.__cause__ = LookupError(
        f'agenttool: tool "{tool}" needs the host value "{key}" (Inject("{key}")): give it as '
        f'Executor(inject={{"{key}": ...}}) or ToolSet.run(..., inject={{"{key}": ...}})'
    )
    return err


def _supplied_schema_keys(
    fn: Any, schema: dict[str, Any]
) -> tuple[tuple[tuple[str, str, Any], ...], frozenset[str] | None, frozenset[str]]:
    """For a tool with a supplied schema: its injected parameters, the argument names the
    model may send (``None``: any, when the function takes ``**kwargs`` and the schema leaves
    additional properties open), and the hidden names refused either way.  A schema naming a
    property the function cannot take, or one the host fills, is refused now."""
    try:
        params, hints, _ = _function_parts(fn)
    except (TypeError, ValueError):  # no signature to read (a builtin): no checks to make
        return (), None, frozenset()
    params, injected, hidden = _host_params(fn, params, hints)
    props = schema.get("properties") if isinstance(schema, dict) else None
    names = frozenset(props) if isinstance(props, dict) else frozenset()
    takes_any = any(kind == _VAR_KW for _, kind, _ in params)
    takes = {name for name, kind, _ in params if kind in (_POS, _KW)}
    for name in sorted(names):
        if name in hidden:
            raise TypeError(
                f'the supplied schema names "{name}", a parameter the host fills '
                "(bound by functools.partial, typed Call, or Inject)"
            )
        if name not in takes and not takes_any:
            raise TypeError(f'the supplied schema names "{name}", which the function does not take')
    is_open = schema.get("additionalProperties", True) is not False or "patternProperties" in schema
    if takes_any and is_open:  # any name goes to **kwargs, but not one the schema leaves out
        return injected, None, frozenset(hidden | (takes - names))
    return injected, names, hidden


def _parse_arguments(
    args: str | bytes | dict[str, Any] | None, lenient: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The model's arguments as a dict: empty means ``{}``, anything but an object is refused.

    With ``lenient`` (the tool's schema), arguments encoded twice and objects or arrays sent
    as JSON strings are repaired first (:func:`_lenient_args`).
    """
    if args is None:
        return {}
    value: Any = args
    if isinstance(args, (str, bytes, bytearray)):
        if not args.strip():
            return {}
        value = _loads(args)
        if lenient is not None and isinstance(value, str):  # the whole object encoded twice
            try:
                value = _loads(value)
            except ValidationError:
                pass
    if isinstance(value, dict):
        return _lenient_args(lenient, value) if lenient is not None else value
    raise ValidationError("", "expected a JSON object")


# ----- lenient decoding ----------------------------------------------------------------------
# Opt-in (the lenient= tool option, Executor(lenient=...) as the default for tools that set
# none).  Small models send nested objects and arrays as JSON strings and loop on the mistake.
# Rules: arguments that already validate are left alone (a str field is never touched); else
# each string sitting where the schema admits an object or array but no string (through
# anyOf/oneOf, nullable types, local $ref, properties, items) is parsed once, and the repaired
# arguments are used only if they then validate; otherwise the model's own arguments go on,
# with their own error.

_LENIENT_DEPTH = 64


def _lenient_args(schema: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """``args`` with strings that should have been objects or arrays parsed, if that makes
    them valid under ``schema``; else ``args`` unchanged."""
    try:
        check = validator(schema)
    except SchemaError:
        return args
    try:
        check.validate(args)
        return args
    except ValidationError:
        pass
    repaired: dict[str, Any] = _repair(schema, args, schema, 0)
    try:
        check.validate(repaired)
    except ValidationError:
        return args
    return repaired


def _resolve_local(node: Any, root: dict[str, Any]) -> Any:
    """``node`` with a local ``$ref`` (``#`` or a JSON pointer into the root) followed."""
    for _ in range(_LENIENT_DEPTH):
        ref = node.get("$ref") if isinstance(node, dict) else None
        if not isinstance(ref, str) or not ref.startswith("#"):
            return node
        node = root
        for seg in filter(None, ref[1:].split("/")):
            seg = seg.replace("~1", "/").replace("~0", "~")
            node = node.get(seg) if isinstance(node, dict) else None
    return node


def _branches(node: Any, root: dict[str, Any]) -> list[dict[str, Any]]:
    """The schema ``node`` and the branches of its anyOf/oneOf/allOf, references followed."""
    node = _resolve_local(node, root)
    if not isinstance(node, dict):
        return []
    found = [node]
    for kw in ("anyOf", "oneOf", "allOf"):
        for branch in node.get(kw) or ():
            branch = _resolve_local(branch, root)
            if isinstance(branch, dict):
                found.append(branch)
    return found


def _admitted(branches: list[dict[str, Any]]) -> set[str] | None:
    """The JSON types the branches name; ``None`` when none names a type (anything goes)."""
    types: set[str] = set()
    for b in branches:
        t = b.get("type")
        types.update([t] if isinstance(t, str) else t if isinstance(t, list) else ())
    return types or None


def _repair(node: Any, value: Any, root: dict[str, Any], depth: int) -> Any:
    """``value`` with misplaced JSON strings parsed, following ``node``; the same object
    when nothing changed."""
    if depth > _LENIENT_DEPTH:
        return value
    branches = _branches(node, root)
    if isinstance(value, str):
        types = _admitted(branches)
        if types is None or "string" in types or not types & {"object", "array"}:
            return value
        try:
            parsed = _loads(value)
        except ValidationError:
            return value
        if not (isinstance(parsed, dict) and "object" in types) and not (
            isinstance(parsed, list) and "array" in types
        ):
            return value
        return _repair(node, parsed, root, depth + 1)  # inside it, strings still parse once
    if isinstance(value, dict):
        changed = {}
        for key, item in value.items():
            sub = _member_schema(branches, key)
            if sub is not None:
                fixed = _repair(sub, item, root, depth + 1)
                if fixed is not item:
                    changed[key] = fixed
        return {**value, **changed} if changed else value
    if isinstance(value, list):
        fixed_items = [
            _repair(sub, item, root, depth + 1) if sub is not None else item
            for sub, item in zip((_item_schema(branches, i) for i in range(len(value))), value)
        ]
        if any(a is not b for a, b in zip(fixed_items, value)):
            return fixed_items
    return value


def _member_schema(branches: list[dict[str, Any]], key: str) -> Any:
    """The schema a key's value follows: the first branch naming it, else additionalProperties."""
    for b in branches:
        props = b.get("properties")
        if isinstance(props, dict) and key in props:
            return props[key]
    for b in branches:
        extra = b.get("additionalProperties")
        if isinstance(extra, dict):
            return extra
    return None


def _item_schema(branches: list[dict[str, Any]], i: int) -> Any:
    """The schema item ``i`` of an array follows: prefixItems, else items."""
    for b in branches:
        prefix = b.get("prefixItems")
        if isinstance(prefix, list) and i < len(prefix):
            return prefix[i]
        items = b.get("items")
        if isinstance(items, dict):
            return items
    return None


class FunctionTool(Generic[_P, _R]):
    """A tool made from a Python function by :func:`tool` or :func:`new`.

    Arguments are validated against the generated schema (the strict one for a strict tool)
    and decoded into the values the hints promise before the function runs; invalid
    arguments never reach it.  Still callable as the plain function, with its signature:
    a type checker reads ``FunctionTool[P, R]`` as the function's parameters and result.
    """

    if not typing.TYPE_CHECKING and sys.version_info < (3, 10):
        # 3.9 has no ParamSpec: FunctionTool[[int], str] is FunctionTool there
        def __class_getitem__(cls, params: Any) -> Any:
            return cls

    # Set only when stated, so that its presence says the tool claims facts (is_factual).
    facts: Callable[[dict[str, Any]], Facts]
    # Definition options, set only when stated (their readers supply the defaults).
    defer_loading: bool
    input_examples: list[dict[str, Any]]
    cache_control: dict[str, Any]
    allowed_callers: tuple[str, ...]
    namespace: Namespace

    def __init__(
        self,
        fn: Callable[_P, _R],
        *,
        name: str = "",
        description: str = "",
        strict: bool = False,
        sequential: bool = False,
        resource: str = "",
        annotations: Annotations | None = None,
        confined: Callable[[dict[str, Any]], tuple[bool, str]] | None = None,
        replay: Replay | Callable[[dict[str, Any]], Replay] | None = None,
        facts: Callable[[dict[str, Any]], Facts] | None = None,
        needs_approval: bool | Callable[[dict[str, Any]], bool] = False,
        lenient: bool | None = None,
        timeout: float | None = None,
        max_output: int | None = None,
        pageable: bool | None = None,
        cacheable: bool = False,
        isolated: bool = False,
        max_memory: int | None = None,
        task: bool | str = False,
        parameters: dict[str, Any] | None = None,
        validate: bool | None = None,
        struct: bool = False,
        raw: bool = False,
        output_schema: bool | dict[str, Any] | None = None,
        defer_loading: bool = False,
        input_examples: Sequence[dict[str, Any]] | None = None,
        cache_control: dict[str, Any] | None = None,
        allowed_callers: Sequence[str] | None = None,
        namespace: str | Namespace | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"agenttool: tool {name!r}: fn must be callable, got {fn!r}")
        self.fn = fn
        named = fn
        while isinstance(named, functools.partial):  # a partial is named for its function
            named = named.func
        self.name: str = name or getattr(named, "__name__", "")
        if not self.name or self.name == "<lambda>":
            raise ValueError("agenttool: a tool needs a name; give name=... for a lambda")
        self.description = description or _doc_description(fn)
        self.strict = strict
        self.sequential = sequential
        self.resource = resource
        self.annotations = annotations
        self._confined = confined
        self._replay = replay
        if facts is not None:
            if not callable(facts):
                raise TypeError(
                    f"agenttool: tool {self.name!r}: facts must be a function of the arguments"
                    f" object returning a Facts, got {facts!r}"
                )
            self.facts = facts
        self.needs_approval = needs_approval
        self.lenient = lenient
        self.pageable = pageable
        self.cacheable = cacheable
        self.task = _task_option(f"tool {self.name!r}", task)
        self.timeout = _option(f"tool {self.name!r}", "timeout", timeout, (int, float), "seconds")
        self.max_output = _option(
            f"tool {self.name!r}", "max_output", max_output, (int,), "characters"
        )
        self._raw = raw
        self._output = _output_option(self.name, output_schema)
        self._decode: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self._validator: Validator | None = None
        self._unchecked: dict[str, Any] | None = None  # a schema to compile on the first call
        self._injected: tuple[tuple[str, str, Any], ...] = ()  # (name, key, default)
        self._allowed: frozenset[str] | None = None  # a supplied schema's names, if closed
        self._hidden: frozenset[str] = frozenset()  # names the model may never send
        try:
            if raw or parameters is not None:
                self.parameters: dict[str, Any] | None = parameters
                if validate and parameters is not None:
                    self._validator = validator(parameters)  # a bad supplied schema fails now
                if not raw and parameters is not None:
                    self._injected, self._allowed, self._hidden = _supplied_schema_keys(
                        fn, parameters
                    )
            else:
                spec = _arg_spec(fn, strict=strict, struct=struct)
                self.parameters = spec.schema
                self._decode = spec.decode
                self._injected = spec.injected
                # A generated schema always compiles; compiling it on the first call keeps
                # registration cheap (the validator costs more to build than the schema).
                self._unchecked = spec.schema if validate is not False else None
        except (TypeError, ValueError) as exc:
            # the same kind of error, naming the tool (SchemaError, else TypeError/ValueError)
            kind = next(k for k in (SchemaError, TypeError, ValueError) if isinstance(exc, k))
            raise kind(f"agenttool: tool {self.name!r}: {exc}") from exc
        _set_definition_options(
            self, defer_loading, input_examples, cache_control, allowed_callers, namespace
        )
        functools.update_wrapper(self, fn)
        self._async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            type(fn).__call__
        )
        if self._async:
            _mark_coroutine_function(self)
        self.isolated = isolated
        self.max_memory = max_memory
        if isolated or max_memory is not None:
            _check_isolated(self, isolated, max_memory)

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<agenttool tool {self.name!r}>"

    def confined(self, args: dict[str, Any]) -> tuple[bool, str]:
        return self._confined(args) if self._confined else (False, "")

    def replay(self, args: dict[str, Any]) -> Replay:
        if self._replay is None:
            return Replay.UNKNOWN
        return self._replay if isinstance(self._replay, Replay) else self._replay(args)

    def execute(self, call: Call) -> Result:
        """Run one call: check and decode the arguments, run the function, convert its value."""
        scope = _scope.get()
        if scope is None or scope.call is not call:
            scope = _Scope(call, self.name, _Cancellation(), None, None, call.on_update)
            token = _scope.set(scope)
            try:
                return self._run(call, scope)
            finally:
                _scope.reset(token)
        return self._run(call, scope)

    def _run(self, call: Call, scope: _Scope) -> Result:
        value = self._begin(call)
        if type(value) not in _NEVER_AWAITABLE and inspect.isawaitable(value):
            value = _run_async(value, scope)
        return self._result(value)

    def _begin(self, call: Call) -> Any:
        """Check and decode the arguments and call the function: its value, a coroutine for
        an ``async def`` (which the executor may run as a task on the caller's loop)."""
        fn: Callable[..., Any] = self.fn  # called with what the arguments decode to
        try:  # what is wrong with the model's arguments is said by this library
            if self._raw:
                if self._validator is not None:  # a raw tool reads call.args itself
                    self._validator.validate(_parse_arguments(call.args))
            else:
                lenient = (self.parameters or NO_ARGS) if self.lenient else None
                args = self._checked(_parse_arguments(call.args, lenient))
        except ValidationError as exc:
            raise _says(exc) from None
        if self._raw:
            if self.isolated:
                return _processes.run(self, (Call(call.id, call.args, call.idempotency_key),), {})
            return fn(call)
        if self._injected:
            args = self._with_injected(args, call)
        if self.isolated:
            return _processes.run(self, (), args)
        return fn(**args)

    def _checked(self, args: dict[str, Any]) -> dict[str, Any]:
        """The model's arguments object validated and decoded into what the function takes
        (the injected values aside); a ValidationError says what is wrong."""
        if self._validator is None and self._unchecked is not None:
            self._validator = validator(self._unchecked)
        if self._validator is not None:
            self._validator.validate(args)
        if self._decode is not None:
            args = self._decode(args)
        elif self._allowed is not None:
            if not self._allowed.issuperset(args):
                _refuse_keys(args, self._allowed, unknown=True)
        elif self._hidden:
            _refuse_keys(args, self._hidden)
        return args

    def _result(self, value: Any) -> Result:
        """What the function returned as the model sees it, with its structured value."""
        result = output(value)
        if not isinstance(value, Result) and self.output_schema is not None:
            result.structured = _structured(value, result)
        return result

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The schema of the structured result: supplied, or generated from the return hint
        on first use (registration stays cheap); ``None`` when there is none."""
        if self._output is _FROM_HINT:
            self._output = _output_schema_from_hint(self.fn)
        return typing.cast(Optional[dict[str, Any]], self._output)

    def _with_injected(self, args: dict[str, Any], call: Call) -> dict[str, Any]:
        """The keyword arguments with the host's parameters filled in (see :class:`Inject`)."""
        out = dict(args)
        given = _run_inject.get()  # ToolSet.run(inject=...), over the executor's
        scope = _scope.get()
        host = scope.inject if scope is not None else {}
        for name, key, default in self._injected:
            if not key:
                out[name] = call
            elif key in given:
                out[name] = given[key]
            elif key in host:
                out[name] = host[key]
            elif default is _EMPTY:
                raise _missing_injection(self.name, key)
        return out


# What a tool function commonly returns, which is never awaitable: no isawaitable check (an ABC
# check, slow for a no) on the executor's hot path.
_NEVER_AWAITABLE = frozenset((str, dict, list, int, float, bool, type(None), Result))


# ----- output schemas: the structured result of a function tool ------------------------------

_FROM_HINT: Any = object()  # FunctionTool._output until the return hint has been read
_TEXT_RETURNS = (str, Result, object)


def _output_option(name: str, option: Any) -> Any:
    """``output_schema=``: ``None``/``True`` from the return hint, ``False`` none, a dict."""
    if option is None or option is True:
        return _FROM_HINT
    if option is False:
        return None
    if isinstance(option, dict):
        return option
    raise TypeError(
        f"agenttool: tool {name!r}: output_schema must be a bool or a dict, not {option!r}"
    )


def _output_schema_from_hint(fn: Callable[..., Any]) -> dict[str, Any] | None:
    """The schema of what ``fn`` returns, from the schema generator; ``None`` for no hint, a
    text or ``Result`` return (or a union holding one), and a type no schema expresses."""
    target = fn.func if isinstance(fn, functools.partial) else fn
    if not inspect.isroutine(target) and not isinstance(target, type):
        target = getattr(target, "__call__", target)  # noqa: B004 - a callable object's hints
    try:
        hint = typing.get_type_hints(target, include_extras=True).get("return", _EMPTY)
    except Exception:
        return None
    bare = _bare_hint(hint)
    if bare is None or bare is _NONE_TYPE:
        return None
    union = typing.get_origin(bare) is Union or type(bare).__name__ == "UnionType"
    for member in typing.get_args(bare) if union else (bare,):
        member = _bare_hint(member)
        if member is _EMPTY or member is Any or member in _TEXT_RETURNS:
            return None
        if isinstance(member, type) and issubclass(member, (str, Result)):
            return None
    try:
        return _type_spec(hint, False)[0]
    except (TypeError, ValueError):
        return None


def _bare_hint(tp: Any) -> Any:
    """The type under ``Annotated`` and the Required/ReadOnly/Final markers."""
    tp = _unwrap_markers(tp)[0]
    return typing.get_args(tp)[0] if typing.get_origin(tp) is typing.Annotated else tp


def _structured(value: Any, result: Result) -> Any:
    """The JSON value of what a tool returned: the output text read back when it is that JSON."""
    if isinstance(result.output, str) and value is not None and not isinstance(value, str):
        return json.loads(result.output)
    return json.loads(_dumps(value))


def _set_definition_options(
    t: FunctionTool[..., Any],
    defer_loading: Any,
    input_examples: Any,
    cache_control: Any,
    allowed_callers: Any,
    namespace: Any,
) -> None:
    """Check and keep the options that shape only a tool's definition (see
    ``_DEFINITION_OPTIONS``): each example must be valid arguments for the tool."""
    owner = f"agenttool: tool {t.name!r}"
    if not isinstance(defer_loading, bool):
        raise TypeError(f"{owner}: defer_loading must be a bool, got {defer_loading!r}")
    t.defer_loading = defer_loading
    if input_examples is not None:
        if isinstance(input_examples, (str, bytes, dict)) or not isinstance(
            input_examples, collections.abc.Iterable
        ):
            raise TypeError(f"{owner}: input_examples must be a list of arguments objects")
        examples = list(input_examples)
        for i, example in enumerate(examples):
            if not isinstance(example, dict):
                raise TypeError(f"{owner}: input_examples[{i}] is not an arguments object")
            try:
                if t._raw:
                    validator(t.parameters if t.parameters is not None else NO_ARGS).validate(
                        example
                    )
                else:
                    t._checked(json.loads(json.dumps(example)))
            except ValidationError as exc:
                raise ValueError(f"{owner}: input_examples[{i}] is not valid: {exc}") from exc
        t.input_examples = json.loads(json.dumps(examples))
    if cache_control is not None:
        ttl = cache_control.get("ttl", "5m") if isinstance(cache_control, dict) else None
        if (
            not isinstance(cache_control, dict)
            or cache_control.get("type") != "ephemeral"
            or set(cache_control) - {"type", "ttl"}
            or ttl not in ("5m", "1h")
        ):
            raise ValueError(
                f'{owner}: cache_control must be {{"type": "ephemeral"}}, with "ttl" "5m" or'
                f' "1h" if given, got {cache_control!r}'
            )
        t.cache_control = dict(cache_control)
    if allowed_callers is not None:
        callers = [] if isinstance(allowed_callers, str) else list(allowed_callers)
        if not callers or not all(isinstance(c, str) and c for c in callers):
            raise ValueError(
                f"{owner}: allowed_callers must be a non-empty list of names, got"
                f" {allowed_callers!r}"
            )
        t.allowed_callers = tuple(callers)
    if namespace is not None:
        t.namespace = namespace if isinstance(namespace, Namespace) else Namespace(namespace)


def _option(owner: str, option: str, value: Any, kinds: tuple[type, ...], unit: str) -> Any:
    """A numeric option as given: ``None``, or a positive number of ``kinds`` (NaN is not);
    seconds no longer than the platform's clock can wait (``threading.TIMEOUT_MAX``)."""
    if value is None:
        return value
    if _positive(value, kinds) is None:
        raise ValueError(f"agenttool: {owner}: {option} must be a positive number of {unit}")
    if unit == "seconds" and not value <= threading.TIMEOUT_MAX:
        raise ValueError(f"agenttool: {owner}: {_too_long(option, value)}")
    return value


def _mark_coroutine_function(obj: Any) -> None:
    """Make ``inspect.iscoroutinefunction(obj)`` (3.12+) and ``asyncio.iscoroutinefunction``
    (every version) true for a tool made from an ``async def``."""
    import asyncio.coroutines  # only for an async tool, which needs asyncio to run anyway

    marker = getattr(asyncio.coroutines, "_is_coroutine", None)
    if marker is not None:
        obj._is_coroutine = marker
    if hasattr(inspect, "markcoroutinefunction"):
        inspect.markcoroutinefunction(obj)


class _ClosingFunctionTool(FunctionTool[_P, _R]):
    """A function tool that owns something: the host closes it through ``close()``."""

    def __init__(self, fn: Callable[_P, _R], *, closer: Callable[[], Any], **options: Any):
        super().__init__(fn, **options)
        self._closer = closer

    def close(self) -> None:
        self._closer()


if typing.TYPE_CHECKING:  # read by type checkers only: classes made at import cost time

    class _FuncOptions(typing.TypedDict, total=False):
        """The options of a function tool, as :func:`new_func` takes them (it sets ``parameters``
        and ``raw`` itself): with :class:`_ToolOptions`, :class:`FunctionTool`'s keyword parameters
        (a test holds the two to each other) and ``closer``, so a type checker flags a misspelt
        option or a value of the wrong type."""

        strict: bool
        sequential: bool
        resource: str
        annotations: Annotations | None
        confined: Callable[[dict[str, Any]], tuple[bool, str]] | None
        replay: Replay | Callable[[dict[str, Any]], Replay] | None
        facts: Callable[[dict[str, Any]], Facts] | None
        needs_approval: bool | Callable[[dict[str, Any]], bool]
        lenient: bool | None
        timeout: float | None
        max_output: int | None
        pageable: bool | None
        cacheable: bool
        isolated: bool
        max_memory: int | None
        task: bool | str
        validate: bool | None
        struct: bool
        output_schema: bool | dict[str, Any] | None
        defer_loading: bool
        input_examples: Sequence[dict[str, Any]] | None
        cache_control: dict[str, Any] | None
        allowed_callers: Sequence[str] | None
        namespace: str | Namespace | None
        closer: Callable[[], Any] | None

    class _ToolOptions(_FuncOptions, total=False):
        """What :func:`new` takes: the options of :func:`new_func`, a supplied ``parameters``
        schema and ``raw`` (``fn`` reads the :class:`Call` itself)."""

        parameters: dict[str, Any] | None
        raw: bool

    class _DecoratorOptions(_ToolOptions, total=False):
        """What :func:`tool` takes: the options of :func:`new`, and the tool's name and
        description."""

        name: str
        description: str


def new(
    name: str, description: str, fn: Callable[_P, _R], **options: Unpack[_ToolOptions]
) -> FunctionTool[_P, _R]:
    """Build a tool from a typed function; ``name`` and ``description`` may be ``""`` for the
    function's name and docstring summary.

    Options, each a keyword (this list is the one source: the README's "Building tools" names
    the same options, and test_readme.py holds both to :class:`FunctionTool`'s parameters):

    - ``strict``: the schema follows strict rules (sent as ``strict: true``)
    - ``sequential``: a batch holding the tool runs one call at a time
    - ``resource``: calls naming one resource run in model order
    - ``annotations``: an :class:`Annotations`
    - ``confined``: a function of the arguments: whether the call runs confined, and by what
    - ``replay``: a :class:`Replay` or a function of the arguments
    - ``facts``: a function of the arguments object returning :class:`Facts`: what a call
      amounts to, which an approver reads (see :func:`facts_of`)
    - ``needs_approval``: a bool or a function of the arguments object
    - ``lenient=True``: repair objects and arrays sent as JSON strings (see
      :func:`lenient_args`); ``None`` leaves it to the executor's default
    - ``timeout``: seconds a call may run
    - ``max_output``: characters of output the model sees
    - ``pageable=True``: a cut output can be read in slices through ``read_output`` (see
      :meth:`ToolSet.pageable`); ``None`` leaves it to the executor's default
    - ``cacheable=True``: the executor's result cache may answer its calls that ``replay``
      reads as SAFE
    - ``isolated=True``: each call runs in a worker process, which a timeout or a cancel kills
    - ``max_memory``: bytes of address space for an isolated call's worker
    - ``task``: ``True`` (or ``"optional"``) or ``"required"``: an MCP server runs its calls
      as tasks (see :func:`task_support_of`)
    - ``closer``: what the tool's ``close()`` calls: the tool owns something the host closes
    - ``parameters``: a supplied schema, then not validated unless ``validate=True``
    - ``validate=False``: skip validation of the generated schema
    - ``struct=True``: the function's one parameter is a dataclass or TypedDict whose schema
      is the root
    - ``output_schema``: ``False`` for none, or a dict; by default from the return hint
    - ``defer_loading``, ``input_examples``, ``cache_control``, ``allowed_callers``,
      ``namespace``: definition options, each written only where a provider's format takes it
      (see :func:`definition`)
    """
    given: dict[str, Any] = dict(options)
    closer = given.pop("closer", None)
    if closer is not None:
        return _ClosingFunctionTool(fn, closer=closer, name=name, description=description, **given)
    return FunctionTool(fn, name=name, description=description, **given)


def new_func(
    name: str,
    description: str,
    parameters: dict[str, Any] | None,
    fn: Callable[[Call], _R],
    **options: Unpack[_FuncOptions],
) -> FunctionTool[[Call], _R]:
    """Build a tool from a raw ``fn(call)`` that reads ``call.args`` itself.

    ``parameters`` is served as given (``None`` means no arguments) and not validated unless
    ``validate=True``.  ``fn`` may return a :class:`Result` or anything :func:`output` takes.
    """
    if not name:
        raise ValueError("agenttool: new_func needs a name")
    return new(name, description, fn, parameters=parameters, raw=True, **options)


class _ToolDecorator(Protocol):
    """What ``tool(**options)`` returns: a decorator keeping the function's signature."""

    def __call__(self, fn: Callable[_P, _R], /) -> FunctionTool[_P, _R]: ...


@overload
def tool(fn: Callable[_P, _R], /) -> FunctionTool[_P, _R]: ...


@overload
def tool(fn: None = None, /, **options: Unpack[_DecoratorOptions]) -> _ToolDecorator: ...


def tool(
    fn: Callable[..., Any] | None = None, /, **options: Unpack[_DecoratorOptions]
) -> FunctionTool[..., Any] | _ToolDecorator:
    """Make a function a tool: ``@tool`` or ``@tool(name=..., strict=True, ...)``.

    The options are those of :func:`new`, plus ``name`` and ``description``.  The decorated
    object is still callable as the plain function, and keeps its signature for a type
    checker.  One ``tool(...)`` may decorate several functions, each with all the options.
    """

    def make(f: Callable[_P, _R], /) -> FunctionTool[_P, _R]:
        own: dict[str, Any] = dict(options)  # each function gets every option, name too
        return new(own.pop("name", ""), own.pop("description", ""), f, **own)

    return make(fn) if fn is not None else make


# ---------------------------------------------------------------------------------------------
# async def tools: where their coroutines run
#
# Under the synchronous API an async tool runs on one shared loop in a daemon thread, started on
# first use and kept, so an async client a tool made once keeps working across calls; under
# Executor.aexecute it runs as a task on the caller's loop.  A batch whose consumer blocks a loop
# (the synchronous API called from a coroutine, or from an async tool: an agent as a tool) runs
# each of its async calls on a fresh loop instead, so no loop ever waits on itself.  Whatever a
# tool raises (SystemExit and KeyboardInterrupt included) becomes the call's failure and never
# reaches a loop.  A forked child starts a new shared loop: the parent's thread is not there.
# ---------------------------------------------------------------------------------------------

_loop_lock = threading.Lock()
_loop: Any = None
_loop_thread: threading.Thread | None = None
_own_loops: set[int] = set()  # ids of the loops this module runs (the shared one, fresh ones)


def _event_loop() -> Any:
    """The shared loop, started (again, should its thread be gone) on first use."""
    global _loop, _loop_thread
    with _loop_lock:
        if _loop is None or _loop_thread is None or not _loop_thread.is_alive():
            import asyncio

            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=_serve_forever, args=(loop,), name="agenttool-async", daemon=True
            )
            thread.start()
            if _loop is not None:
                _own_loops.discard(id(_loop))
            _own_loops.add(id(loop))
            _loop, _loop_thread = loop, thread
        return _loop


def _serve_forever(loop: Any) -> None:
    """Run the shared loop for good: whatever escapes a callback stops ``run_forever``, which
    then simply runs again."""
    while True:
        try:
            loop.run_forever()
            return
        except BaseException:  # noqa: BLE001, S112 - the shared loop outlives anything raised
            continue


def _running_loop() -> Any:
    """The event loop running on this thread, or ``None`` (always, when asyncio is not even
    imported, which keeps this free for hosts that never use it)."""
    asyncio = sys.modules.get("asyncio")
    return asyncio._get_running_loop() if asyncio is not None else None


def _blocks_host_loop() -> bool:
    """Whether this thread runs a loop of the host's (not one of this module's), which the
    synchronous API would block: a tool bound to that loop could never finish there."""
    loop = _running_loop()
    return loop is not None and id(loop) not in _own_loops


def _host_loop_refusal(name: str) -> RuntimeError:
    """Why an async tool is not run by the synchronous API on a thread running the host's
    loop (one message wherever that is found)."""
    return _says(
        RuntimeError(
            f'agenttool: async tool "{name}" was called through the synchronous API from '
            "inside a running event loop, which it would block (anything bound to that loop "
            "would wait forever): await ToolSet.arun(...) or Executor.aexecute(...) instead"
        )
    )


async def _guarded(awaitable: Any) -> tuple[Any, BaseException | None]:
    """Await ``awaitable`` and give its outcome as ``(value, None)`` or ``(None, error)``:
    nothing but cancellation leaves the task, so no tool's exception reaches a loop."""
    import asyncio

    try:
        return await awaitable, None
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit too: it is the call's failure
        return None, exc


def _close_unawaited(awaitable: Any) -> None:
    """Close a coroutine that will never run, so it is not reported as never awaited."""
    close = getattr(awaitable, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # noqa: BLE001, S110 - it never ran: there is nothing to report
            pass


def _run_async(awaitable: Any, scope: _Scope) -> Any:
    """Run a tool's coroutine to its end for a thread that waits for it, on the loop that
    cannot be waiting on this very thread; cancelling the call cancels its task."""
    here = _running_loop()
    loop = scope.loop
    if loop is not None and loop is not here and loop.is_running():
        return _wait_on(loop, awaitable, scope)
    if scope.host_loop or _blocks_host_loop():
        _close_unawaited(awaitable)
        raise _host_loop_refusal(scope.tool)
    if scope.own_loop or here is not None:
        return _run_on_own_loop(awaitable, scope)
    return _wait_on(_event_loop(), awaitable, scope)


def _wait_on(loop: Any, awaitable: Any, scope: _Scope, drive: bool = False) -> Any:
    """Run ``awaitable`` as a task on ``loop`` in this call's context and wait for its
    outcome; with ``drive`` this thread runs the loop until the task is done."""
    import concurrent.futures

    done: concurrent.futures.Future[Any] = concurrent.futures.Future()
    context = contextvars.copy_context()
    tasks: list[Any] = []

    def finished(task: Any) -> None:
        if task.cancelled():
            _close_unawaited(awaitable)  # cancelled before its first step
            done.set_exception(_says(Cancelled(f'call "{scope.call.id}" was cancelled')))
        else:
            value, error = task.result()
            if error is None:
                done.set_result(value)
            else:
                done.set_exception(error)
        if drive:
            loop.stop()

    def start() -> None:
        task = context.run(loop.create_task, _guarded(awaitable))
        tasks.append(task)
        task.add_done_callback(finished)

    try:
        loop.call_soon_threadsafe(start)
    except RuntimeError:  # the loop is closed
        _close_unawaited(awaitable)
        raise
    forget = scope.cancellation.on_cancel(
        lambda: loop.call_soon_threadsafe(lambda: [t.cancel() for t in tasks])
    )
    blocked = not drive and _workers.block()  # a pool thread waiting: another may start
    try:
        if drive:
            loop.run_forever()
        return done.result()
    finally:
        forget()
        if blocked:
            _workers.unblock()


def _run_on_own_loop(awaitable: Any, scope: _Scope) -> Any:
    """Run ``awaitable`` on a fresh loop: driven by this thread, or by a thread of its own
    when this thread already runs a loop (which waits for the call and must not run it)."""
    import asyncio

    loop = asyncio.new_event_loop()
    _own_loops.add(id(loop))
    try:
        if _running_loop() is None:
            return _wait_on(loop, awaitable, scope, drive=True)
        outcome: list[tuple[Any, BaseException | None]] = []

        def drive() -> None:
            try:
                outcome.append((_wait_on(loop, awaitable, scope, drive=True), None))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                outcome.append((None, exc))

        thread = threading.Thread(target=drive, name="agenttool-async", daemon=True)
        try:
            thread.start()
        except RuntimeError:
            _close_unawaited(awaitable)
            raise
        thread.join()
        value, error = outcome[0]
        if error is not None:
            raise error
        return value
    finally:
        _own_loops.discard(id(loop))
        loop.close()


# ---------------------------------------------------------------------------------------------
# Wrapping
# ---------------------------------------------------------------------------------------------


class _Wrapper:
    """Stands in for a tool with another ``execute``; every other attribute is the inner
    tool's, so every property (and ``close`` exactly when the inner tool has it) reads as
    it does on the inner tool."""

    def __init__(self, inner: Tool, execute: Callable[[Call], Result]) -> None:
        self._inner = inner
        self._execute = execute

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def description(self) -> str:
        return self._inner.description

    @property
    def parameters(self) -> dict[str, Any] | None:
        return self._inner.parameters

    def execute(self, call: Call) -> Result:
        return self._execute(call)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr in ("_inner", "_execute"):
            raise AttributeError(attr)
        return getattr(self._inner, attr)

    def __repr__(self) -> str:
        return f"<agenttool wrapper of {self._inner!r}>"


def wrap(t: Tool, execute: Callable[[Call], Result]) -> Tool:
    """A tool that runs ``execute`` in place of ``t.execute`` and reports every property of
    ``t`` unchanged (``close`` only when ``t`` has it); ``execute`` may call ``t.execute``."""
    if t is None or execute is None:
        raise TypeError("agenttool: wrap needs a tool and an execute function")
    return _Wrapper(t, execute)  # type: ignore[return-value]


def unwrap(w: Tool) -> Tool | None:
    """The tool ``w`` wraps, or ``None`` when ``w`` is not a wrapper."""
    return w._inner if isinstance(w, _Wrapper) else None


class _Renamed(_Wrapper):
    """A tool under another name (:meth:`ToolSet.prefixed`, :meth:`ToolSet.renamed`); the
    inner tool runs unchanged and every property reads as on it."""

    def __init__(self, inner: Tool, name: str) -> None:
        super().__init__(inner, inner.execute)
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def __getattr__(self, attr: str) -> Any:
        if attr == "_name":
            raise AttributeError(attr)
        return super().__getattr__(attr)

    def __repr__(self) -> str:
        return f"<agenttool {self._name!r}: {self._inner!r}>"


class _Approved(_Wrapper):
    """A tool whose call was approved already (``ToolSet.run``'s approvals): it needs no
    other approval, and every other property reads as on the inner tool.  ``asked`` is the
    call as the model wrote it, before its answer or its facts' rewrite changed it."""

    needs_approval = False

    def __init__(self, inner: Tool, asked: Call) -> None:
        super().__init__(inner, inner.execute)
        self.asked = asked

    def __getattr__(self, attr: str) -> Any:
        if attr == "asked":
            raise AttributeError(attr)
        return super().__getattr__(attr)


# ----- retries -------------------------------------------------------------------------------


def retrying(
    t: Tool,
    attempts: int = 3,
    backoff: float | Callable[[int], float] = 0.5,
    on: type[BaseException] | tuple[type[BaseException], ...] = (Exception,),
) -> Tool:
    """``t`` retried on failure, where running a call again is allowed.

    A call is retried only when :func:`replay_of` says it may run again: ``Replay.SAFE``
    freely, ``Replay.KEYED`` with the same idempotency key on every attempt (one is minted
    once when the call has none), never for ``Replay.UNKNOWN``.  Up to ``attempts`` runs in
    all; a failure that is not one of ``on``, invalid arguments, or a cancelled call is not
    retried, and any other exception from ``t.execute`` counts as a failure (an executor's
    timeout too, when it surfaces there).  Between attempts it waits ``backoff`` seconds
    doubled each time (or ``backoff(attempt)`` seconds), ending early when the call is
    cancelled, and the call's last failure is raised.  Each failed attempt is reported as
    progress and written as an ``agenttool:retry`` record (``tool``, ``attempt``,
    ``attempts``, ``error`` (the type), ``message`` and ``delay`` in seconds).  Built on
    :func:`wrap`: every property of ``t`` reads the same.  The executor itself never retries.
    """
    if not isinstance(attempts, int) or attempts < 1:
        raise ValueError(f"agenttool: retrying needs attempts >= 1, got {attempts!r}")
    if not callable(backoff) and (
        isinstance(backoff, bool)
        or not isinstance(backoff, (int, float))
        or not 0 <= backoff <= threading.TIMEOUT_MAX
    ):
        raise ValueError(
            f"agenttool: retrying needs backoff >= 0 (seconds, at most"
            f" {threading.TIMEOUT_MAX:g}) or a function, got {backoff!r}"
        )

    def delay(attempt: int) -> float:
        """Seconds before the next attempt, doubled each time and capped at what the clock
        can wait; a backoff function's NaN, negative or infinite answer is refused."""
        if not callable(backoff):
            return float(min(backoff * 2 ** (attempt - 1), threading.TIMEOUT_MAX))
        wait = float(backoff(attempt))
        if not 0 <= wait <= threading.TIMEOUT_MAX:
            raise ValueError(f"agenttool: retrying: backoff({attempt}) returned {wait!r}")
        return wait

    def execute(call: Call) -> Result:
        try:
            args = _parse_arguments(call.args)
        except ValidationError:
            return t.execute(call)  # refused by the tool as ever, never retried
        replay = replay_of(t, args)
        if replay is Replay.UNKNOWN:
            return t.execute(call)
        if replay is Replay.KEYED and not call.idempotency_key:
            import uuid

            call = _swap_call(Call(call.id, call.args, uuid.uuid4().hex, call.on_update))
        for attempt in range(1, attempts + 1):
            try:
                with _child_span(f"attempt {attempt} of {t.name}", {"agenttool.attempt": attempt}):
                    return t.execute(call)
            except (ValidationError, Cancelled):
                raise
            except on as exc:
                if attempt == attempts or cancelled():
                    raise
                wait = delay(attempt)
                kind = type(exc).__name__
                progress(f"attempt {attempt} of {attempts} failed ({kind}); retrying in {wait:g} s")
                facts = {
                    "tool": t.name,
                    "attempt": attempt,
                    "attempts": attempts,
                    "error": kind,
                    "message": error_message(exc),
                    "delay": wait,
                }
                write_record(Record("agenttool:retry", _dumps(facts)))
                if cancel_event().wait(wait):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    return wrap(t, execute)


# ---------------------------------------------------------------------------------------------
# Definitions, their hash, and sets of tools
# ---------------------------------------------------------------------------------------------


def definition(t: Tool, format: str = "responses") -> dict[str, Any]:
    """The tool as a provider wants it in a request's ``tools``: by default the Open
    Responses function tool ``{"type", "name", "description", "parameters", "strict"}``.

    ``strict`` is always stated: OpenAI's Responses API reads a missing ``strict`` as "make
    the schema strict if you can", which would turn optional arguments into required nullable
    ones.  ``format`` is ``responses``, ``chat``, ``anthropic`` or ``gemini``.

    Every format gives a copy (editing it never changes the tool, its validation or its
    hash) and checks the name against that provider's rule, raising ``ValueError``.
    """
    canonical = _canonical_definition(t)
    if format == "responses":
        canonical["strict"] = is_strict(t)
    return _with_definition_options(t, _provider_definition(canonical, format), format)


# Options that shape only a tool's definition for a provider, never what the tool does (so
# definition_hash leaves them out): (option, its reader, the formats whose definitions take it).
# A tool stating one is refused by name for a format not listed, never sent where the provider
# would reject the request or silently read as unset.
_DEFINITION_OPTIONS: tuple[tuple[str, Callable[[Tool], Any], tuple[str, ...]], ...] = (
    ("defer_loading", defer_loading_of, ("responses", "anthropic")),
    ("allowed_callers", allowed_callers_of, ("responses", "anthropic")),
    ("input_examples", input_examples_of, ("anthropic",)),
    ("cache_control", cache_control_of, ("anthropic",)),
    ("namespace", namespace_of, ("responses",)),
)
# The callers each format's allowed_callers names (Anthropic's code-execution tool versions
# by prefix, as its API adds them).
_CALLERS = {"responses": ("direct", "programmatic"), "anthropic": ("direct", "code_execution_")}


def _with_definition_options(t: Tool, out: dict[str, Any], format: str) -> dict[str, Any]:
    """``out``, the provider's definition of ``t``, with the definition options ``t`` states;
    a namespaced tool comes as a namespace holding it (:meth:`ToolSet.definitions` merges a
    namespace's tools into one entry)."""
    for option, reader, formats in _DEFINITION_OPTIONS:
        value = reader(t)
        if not value:
            continue
        if format not in formats:
            takes = " and ".join(formats)
            raise ValueError(
                f'tool "{t.name}": {format} tool definitions have no {option} (only {takes}'
                f" {'takes' if len(formats) == 1 else 'take'} it)"
            )
        if option == "allowed_callers":
            known = _CALLERS[format]
            bad = [c for c in value if c not in known and not c.startswith(known[-1])]
            if bad:
                raise ValueError(
                    f'tool "{t.name}": {format} knows no caller {json.dumps(bad[0])} in'
                    f" allowed_callers (it takes {', '.join(json.dumps(k) for k in known)}"
                    f"{'...' if known[-1].endswith('_') else ''})"
                )
            value = list(value)
        if option != "namespace":
            out[option] = value
    namespace = namespace_of(t)
    if namespace is not None:
        return {
            "type": "namespace",
            "name": namespace.name,
            "description": namespace.description,
            "tools": [out],
        }
    return out


def _canonical_definition(t: Tool) -> dict[str, Any]:
    """The contract's canonical definition: ``strict`` only when true, ``description``
    always, ``parameters`` always an object schema (what :func:`definition_hash` hashes)."""
    canonical: dict[str, Any] = {
        "type": "function",
        "name": t.name,
        "description": t.description or "",
        "parameters": t.parameters if t.parameters is not None else NO_ARGS,
    }
    if is_strict(t):
        canonical["strict"] = True
    return canonical


def definition_hash(t: Tool) -> str:
    """``sha256:`` and the hex digest of the canonical definition in RFC 8785 (JCS) form,
    so the same tool hashes the same in every language (``strict`` counts only when true)."""
    import hashlib

    canonical = _jcs(_canonical_definition(t)).encode("utf-8")
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def _jcs(value: Any) -> str:
    """RFC 8785 canonical JSON: members sorted by UTF-16 code units, no whitespace,
    numbers as ECMAScript writes them."""
    if _jcs_plain(value):  # json writes it canonically already, in C (5 us, not 21, for a call)
        return _JCS_ENCODER.encode(value)
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(_jcs(str(k)) + ":" + _jcs(value[k]) for k in keys) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_jcs(v) for v in value) + "]"
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _ecmascript_number(value)
    raise TypeError(f"cannot canonicalise {type(value).__name__}")


# json's writing with sorted keys and no spaces, the RFC 8785 form of a value _jcs_plain admits
# (whose walk raises on a cycle first: the encoder need not look for one).
_JCS_ENCODER = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), check_circular=False
)


def _jcs_plain(value: Any) -> bool:
    """Whether ``_JCS_ENCODER`` writes ``value`` in its RFC 8785 form: only str, int, bool and
    None leaves (json writes floats as Python's repr, not as ECMAScript does), lists, tuples,
    and dicts whose keys are strs below U+D800 (where sorting by code point, as json does, is
    sorting by UTF-16 code units, as RFC 8785 does).  Call arguments nearly always are."""
    kind = type(value)
    if kind in _JSON_LEAVES:
        return True
    if kind is dict:
        for k, v in value.items():
            if type(k) is not str or not (k.isascii() or max(k) < "\ud800"):
                return False
            if type(v) not in _JSON_LEAVES and not _jcs_plain(v):
                return False
        return True
    if kind is list or kind is tuple:
        return all(type(v) in _JSON_LEAVES or _jcs_plain(v) for v in value)
    return False


def _args_hash(args: Any) -> str:
    """``sha256:`` and the hex digest of the RFC 8785 form of a JSON value (a call's arguments)."""
    import hashlib

    return "sha256:" + hashlib.sha256(_jcs(args).encode()).hexdigest()


def _ecmascript_number(f: float) -> str:
    """A float as ECMAScript's Number.prototype.toString writes it (RFC 8785 §3.2.2.3)."""
    if f != f or f in (float("inf"), float("-inf")):
        raise ValueError("NaN and Infinity are not JSON")
    if f == 0:
        return "0"
    sign = "-" if f < 0 else ""
    mantissa, _, exp = repr(abs(f)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + int(exp or 0)  # the decimal point stands after this many digits
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    n = point
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    head = digits[0] + ("." + digits[1:] if k > 1 else "")
    return sign + head + "e" + ("+" if e > 0 else "-") + str(abs(e))


class CloseError(Exception):
    """Closing a set of tools failed for one or more of them; ``errors`` holds each."""

    def __init__(self, errors: list[BaseException]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


def _is_tool(obj: Any) -> bool:
    """Whether ``obj`` is a tool instance: a name, a description, parameters and ``execute``."""
    return (
        not isinstance(obj, type)
        and isinstance(getattr(obj, "name", None), str)
        and hasattr(obj, "description")
        and hasattr(obj, "parameters")
        and callable(getattr(obj, "execute", None))
    )


def _not_a_tool(obj: Any, where: str) -> TypeError:
    """The refusal of something that is not a tool, saying how to make one from a function."""
    if isinstance(obj, type):
        return TypeError(
            f"agenttool: {where}: {obj.__name__} is a class; a tool is an instance "
            f"(write {obj.__name__}(...))"
        )
    if callable(obj):
        name = getattr(obj, "__name__", "") or "fn"
        return TypeError(
            f"agenttool: {where}: {name} is a plain function, not a tool; make it one with "
            f"agenttool.tool({name}), or @agenttool.tool where it is defined"
        )
    return TypeError(
        f"agenttool: {where}: expected a tool (name, description, parameters and execute), "
        f"got {type(obj).__name__}"
    )


def _name_problems(tools: Sequence[Any], start: int, names: set[str]) -> list[str]:
    """Empty and duplicate names among ``tools`` (numbered from ``start``), given the names
    already taken; a provider refuses the request for either."""
    problems: list[str] = []
    for i, t in enumerate(tools, start):
        if not t.name:
            problems.append(f"tool[{i}]: empty name")
        elif t.name in names:
            problems.append(f'tool "{t.name}": duplicate name')
        names.add(t.name)
    return problems


# ----- approvals -----------------------------------------------------------------------------
# A call whose tool reads needs_approval_of(t, args) true runs only once approved.  An answer,
# from Executor(approver=fn) or from ToolSet.run(approvals={hash: answer}), is True (run),
# False or a string (deny; the string is what the model reads), or a dict (run with these
# arguments instead, validated first); anything else denies.  The approver sees the arguments
# after lenient repair and validation, so nobody is asked about a call that cannot run.
#
# Facts (a tool's facts(args), see facts_of) are read for a call that needs approval, after
# validation and before anyone is asked: the approver finds them on job.facts, ToolSet.run on
# Pending.facts.  A facts error denies the call (nothing can be said about it, so no policy
# may allow it).  A True answer runs the facts' rewrite when there is one (checked against
# the schema by facts_of); a dict answer runs that dict, the approver's own word, as is.  A
# call needing no approval is not asked for facts and runs as the model wrote it: facts serve
# a policy, and asking costs (a remote tool asks its server).  Under ToolSet.run(approvals=)
# the answer's hash covers a factual tool's facts too, so an approval given for "deletes
# /etc/hosts" never runs a call that now amounts to something else.  The journal keeps the
# call as the model wrote it (its identity in the run, what a resumed run sends again); a
# rewrite is asked for again, and approved again, on every attempt.


class Pending(_Value):
    """A call of :meth:`ToolSet.run` waiting for approval: its call id, tool name,
    arguments object, the provider's item as given (send it again with the answer), and
    ``hash``, the key of its answer: ``sha256:`` and the hex digest of the RFC 8785 form of
    ``{"call_id", "name", "arguments"}`` (key order does not matter; another call id or
    changed arguments give another hash; a journaled call that an earlier attempt began
    adds ``"attempt"``, so an approval never covers a second execution; a factual tool's
    call adds ``"facts"``, their :meth:`Facts.to_json`, so an approval covers what the call
    amounted to when it was asked).  ``facts`` is what the call amounts to
    (:func:`facts_of`), the question a policy answers; approved, its ``rewrite`` is what runs.
    """

    __slots__ = ("call_id", "name", "arguments", "item", "hash", "facts")
    call_id: str
    name: str
    arguments: dict[str, Any]
    item: Any
    hash: str
    facts: Facts

    def __init__(
        self,
        call_id: str,
        name: str,
        arguments: dict[str, Any],
        item: Any,
        hash: str,
        facts: Facts | None = None,
    ) -> None:
        self.call_id = call_id
        self.name = name
        self.arguments = arguments
        self.item = item
        self.hash = hash
        self.facts = facts if facts is not None else Facts()


class UncertainCall(_Value):
    """A journaled call of :meth:`ToolSet.run` that a crash interrupted and that may not
    run again blindly (see :class:`Uncertain`): its call id, tool name, arguments, the key
    its first attempt carried, the records it wrote, and the provider's item (send it again
    with ``resolve={call_id: answer}``)."""

    __slots__ = ("call_id", "name", "arguments", "key", "records", "item")
    call_id: str
    name: str
    arguments: Any
    key: str
    records: list[Record]
    item: Any

    def __init__(
        self, call_id: str, name: str, arguments: Any, key: str, records: list[Record], item: Any
    ) -> None:
        self.call_id = call_id
        self.name = name
        self.arguments = arguments
        self.key = key
        self.records = records
        self.item = item


class RunOutput(list[dict[str, Any]]):
    """What :meth:`ToolSet.run` returns: the output items, in call order, of every call
    that ran or was refused; ``pending``, the calls still waiting for approval; and
    ``uncertain``, the journaled calls waiting for the host to resolve them."""

    def __init__(
        self,
        items: list[dict[str, Any]],
        pending: list[Pending],
        uncertain: list[UncertainCall] | None = None,
    ) -> None:
        super().__init__(items)
        self.pending = pending
        self.uncertain = uncertain or []


def _approval_hash(
    call_id: str, name: str, args: dict[str, Any], attempt: int = 0, facts: Facts | None = None
) -> str:
    """The key of a pending call's answer (see :class:`Pending`); ``facts`` for a factual tool."""
    keyed: dict[str, Any] = {"call_id": call_id, "name": name, "arguments": args}
    if attempt:
        keyed["attempt"] = attempt
    if facts is not None:
        keyed["facts"] = facts.to_json()
    return _args_hash(keyed)


def _facts_for_approval(t: Tool, call: Call) -> tuple[Facts, bool]:
    """The facts of a call about to be approved, and whether the tool claims them; a
    :class:`ToolError` denying the call when they cannot be read (the reason on its cause)."""
    try:
        return facts_of(t, call.args)  # type: ignore[arg-type]  # an object once screened
    except BaseException as exc:  # noqa: BLE001 - nothing can be said: no policy may allow it
        _log(_WARNING, f'call "{call.id}" of tool "{t.name}" denied: its facts failed', exc)
        raise ToolError(
            f'call to "{t.name}" was denied: what it would do could not be established, and it'
            " did not run"
        ) from exc


def _screen(t: Tool, call: Call, lenient: bool) -> tuple[Call, bool]:
    """The call as it will run (arguments repaired when lenient applies), and whether it
    needs approval first.  Arguments that cannot be approved raise the ValidationError the
    model reads; a ``needs_approval`` that raises counts as needing approval."""
    needs = getattr(t, "needs_approval", False)
    own = getattr(t, "lenient", None)
    repair = own is True or (own is None and lenient is True)
    if needs is False and not repair:
        return call, False
    schema = t.parameters if t.parameters is not None else NO_ARGS
    try:
        args = _parse_arguments(call.args, schema if repair else None)
    except ValidationError as exc:
        raise _says(exc) from None
    try:
        needed = needs_approval_of(t, args)
    except BaseException:  # noqa: BLE001 - a doubtful answer asks rather than runs
        needed = True
    if needed:
        try:
            _check_args(schema, args)
        except ValidationError as exc:
            raise _says(exc) from None
    if repair or needed:  # the approver and the tool read the arguments object
        call = Call(call.id, args, call.idempotency_key, call.on_update)
    return call, needed


def _check_args(schema: dict[str, Any], args: dict[str, Any]) -> None:
    """Validate arguments about to be approved; a schema the validator refuses checks nothing
    (the tool then judges the arguments itself, as it would without approval)."""
    try:
        check = validator(schema)
    except SchemaError:
        return
    check.validate(args)


def _answered(t: Tool, call: Call, answer: Any, facts: Facts | None = None) -> Call:
    """The call to run for an approval answer (``True`` runs the ``facts``' rewrite, when
    there is one), or the :class:`ToolError` of a denial."""
    if answer is True:
        if facts is not None and facts.rewrite is not None:
            return Call(call.id, facts.rewrite, call.idempotency_key, call.on_update)
        return call
    if isinstance(answer, dict):
        try:
            _check_args(t.parameters if t.parameters is not None else NO_ARGS, answer)
        except ValidationError as exc:
            raise ToolError(
                f'call to "{t.name}" was not run: the arguments it was approved with are '
                f"invalid ({exc})"
            ) from exc
        return Call(call.id, answer, call.idempotency_key, call.on_update)
    if isinstance(answer, str) and answer:
        raise ToolError(answer)
    raise ToolError(f'call to "{t.name}" was denied: it was not approved, and did not run')


def _approve(job: Job, approver: Callable[[Job], Any] | None, lenient: bool) -> tuple[Job, Any]:
    """The job the executor runs, and the approver's answer (``None`` when none was asked):
    its call repaired when lenient applies, and where the tool needs approval, with its facts
    and as the approver answered; a denial raises :class:`ToolError`."""
    t = job.tool
    assert t is not None
    own = getattr(t, "lenient", None)
    if (
        getattr(t, "needs_approval", False) is False
        and own is not True
        and not (own is None and lenient)
    ):
        return job, None  # the common case, kept cheap: nothing to ask, nothing to repair
    call, needed = _screen(t, job.call, lenient)
    if not needed:
        return (job if call is job.call else Job(t, call)), None
    if approver is None:
        _log(_WARNING, f'call "{call.id}" of tool "{t.name}" denied: there is no approver')
        raise ToolError(
            f'call to "{t.name}" needs approval and this host has no approver; it did not run'
        )
    facts, _ = _facts_for_approval(t, call)
    try:
        with _child_span(f"approve {t.name}", {_GENAI["call_id"]: call.id}):
            answer = approver(Job(t, call, facts))
    except BaseException as exc:  # noqa: BLE001 - an approver that fails denies
        _log(_WARNING, f'call "{call.id}" of tool "{t.name}" denied: its approver failed', exc)
        raise ToolError(
            f'call to "{t.name}" was denied: its approval failed, and it did not run'
        ) from exc
    if answer is not True and not isinstance(answer, dict):
        _log(_WARNING, f'call "{call.id}" of tool "{t.name}" denied by its approver')
    return Job(t, _answered(t, call, answer, facts), facts), answer


def _check_clashes(names: list[str], what: str, old: list[str] | None = None) -> None:
    """Refuse two tools under one name, naming each clash (and the old names it came from)."""
    holders: dict[str, list[str]] = {}
    for i, name in enumerate(names):
        holders.setdefault(name, []).append(old[i] if old is not None else name)
    clashes = [
        f'"{name}" would name {len(was)} tools'
        + (" (" + ", ".join(f'"{w}"' for w in was) + ")" if set(was) != {name} else "")
        for name, was in holders.items()
        if len(was) > 1
    ]
    if clashes:
        raise ValueError(f"agenttool: {what}: " + "; ".join(clashes))


def _check_rule(names: list[str], what: str) -> None:
    """Refuse names a provider refuses (Responses, Chat, Anthropic), naming each."""
    bad = [f'"{n}"' for n in names if not re.fullmatch(_NAME_RULE, n)]
    if bad:
        raise ValueError(
            f"agenttool: {what}: {', '.join(bad)} "
            f"{'breaks' if len(bad) == 1 else 'break'} the tool name rule ({_NAME_RULE_TEXT})"
        )


class _RunValues:
    """``with _RunValues(inject, tracer):`` gives a run's ``inject`` values, over the
    executor's, and its tracer to the batch started inside the block (it copies the context
    it starts in)."""

    def __init__(
        self, values: collections.abc.Mapping[str, Any] | None, tracer: Any = None
    ) -> None:
        self.values = values
        self.tracer = tracer
        self.token: contextvars.Token[collections.abc.Mapping[str, Any]] | None = None
        self.tracer_token: contextvars.Token[Any] | None = None

    def __enter__(self) -> None:
        if self.values:
            self.token = _run_inject.set({**_run_inject.get(), **self.values})
        if self.tracer is not None:
            self.tracer_token = _run_tracer.set(self.tracer)

    def __exit__(self, *exc: object) -> None:
        if self.token is not None:
            _run_inject.reset(self.token)
        if self.tracer_token is not None:
            _run_tracer.reset(self.tracer_token)


class _Run:
    """One :meth:`ToolSet.run` (or ``arun``): the calls read, the jobs run for them and where
    each answers, and the outcomes of the calls that need no job (refused, or pending)."""

    def __init__(self, fmt: str, found: list[_ProviderCall], names: str) -> None:
        self.fmt = fmt
        self.found = found
        self.names = names  # the tools there are, for a missing tool's message
        self.outcomes: list[Result | BaseException | None] = [None] * len(found)
        self.pending: list[Pending] = []
        self.uncertain: list[UncertainCall] = []
        self.jobs: list[Job] = []
        self.places: list[int] = []  # the call each job answers

    def items(
        self,
        results: list[Result | None],
        failures: list[BaseException | None],
        errors: ErrorPolicy | None,
    ) -> RunOutput:
        """The output items for the jobs' outcomes, in call order, with what is pending."""
        for i, job, result, error in zip(self.places, self.jobs, results, failures):
            if isinstance(error, Uncertain):
                found = self.found[i]
                self.uncertain.append(
                    UncertainCall(
                        found.call_id,
                        found.name,
                        error.arguments,
                        error.key,
                        error.records,
                        found.item,
                    )
                )
                continue
            if isinstance(error, NoTool):
                error = _says(
                    NoTool(f'no tool named "{self.found[i].name}"; the tools are {self.names}')
                )
            if error is not None and job.tool is not None:
                error = _policy_error(error, errors, job.tool.name)
            self.outcomes[i] = error if error is not None else result or Result("")
        done = [(c, o) for c, o in zip(self.found, self.outcomes) if o is not None]
        items = _output_items(self.fmt, [c for c, _ in done], [o for _, o in done])
        return RunOutput(items, self.pending, self.uncertain)


def _call_key(c: _ProviderCall) -> str:
    """The idempotency key of a provider's call: the same for the same call sent again (call
    id, tool name and arguments), another for any other call.  A journal, when there is one,
    replaces it with the key it minted."""
    import hashlib

    try:
        text = c.arguments if isinstance(c.arguments, str) else _jcs(c.arguments)
    except (TypeError, ValueError):  # arguments JSON cannot hold: refused when the call runs
        text = repr(c.arguments)
    data = f"{c.call_id}\0{c.name}\0{text}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:32]


_SPENT_APPROVALS = 100_000  # answered call hashes a ToolSet remembers, oldest forgotten first


class ToolSet(list[Tool]):
    """The tools offered to a model, in order: a list with lookups, checks, definitions and
    one call from a provider's tool calls to the output items to send back.

    Every way of putting a tool in (construction, ``append``, ``extend``, ``insert``,
    ``+=``, item and slice assignment) refuses what is not a tool (``TypeError``; a plain
    function is made a tool with :func:`tool`) and an empty or duplicate name
    (``ValueError``), naming the operation.  ``validate()`` checks again, for names changed
    after the tools were added.  ``a + b`` is :meth:`merge`.

    Sets compose without changing the original: :meth:`filtered`, :meth:`prefixed`,
    :meth:`renamed`, :meth:`merge` and ``+`` return new sets.  Renamed tools are wrappers
    (:func:`unwrap` gives the original) that report every property as the original does;
    the other tools are the same objects, so closing either set closes them.
    """

    def __init__(self, tools: collections.abc.Iterable[Tool] = ()) -> None:
        items = list(tools)
        self._admit("ToolSet", items, [])
        super().__init__(items)

    def _admit(self, where: str, items: list[Any], kept: Sequence[Tool]) -> None:
        """Refuses ``items`` unless each is a tool whose name is not empty and not taken,
        among themselves or by ``kept`` (the tools that stay)."""
        for t in items:
            if not _is_tool(t):
                raise _not_a_tool(t, where)
        problems = _name_problems(items, len(kept), {t.name for t in kept})
        if problems:
            raise ValueError(f"agenttool: {where}: " + "; ".join(problems))

    def append(self, tool: Tool) -> None:
        self._admit("ToolSet.append", [tool], self)
        super().append(tool)

    def insert(self, index: SupportsIndex, tool: Tool) -> None:
        self._admit("ToolSet.insert", [tool], self)
        super().insert(index, tool)

    def extend(self, tools: collections.abc.Iterable[Tool]) -> None:
        items = list(tools)
        self._admit("ToolSet.extend", items, self)
        super().extend(items)

    def __iadd__(self, tools: collections.abc.Iterable[Tool]) -> ToolSet:  # type: ignore[override]
        items = list(tools)
        self._admit("ToolSet +=", items, self)
        super().extend(items)
        return self

    def __imul__(self, n: SupportsIndex) -> ToolSet:
        if n.__index__() > 1 and self:
            raise ValueError(f'agenttool: ToolSet *=: tool "{self[0].name}": duplicate name')
        super().__imul__(n)
        return self

    @overload
    def __setitem__(self, index: SupportsIndex, tool: Tool) -> None: ...

    @overload
    def __setitem__(self, index: slice, tool: collections.abc.Iterable[Tool]) -> None: ...

    def __setitem__(self, index: Any, tool: Any) -> None:
        kept = list(self)
        del kept[index]  # an index out of range fails here as it would in the list
        items = list(tool) if isinstance(index, slice) else [tool]
        self._admit("ToolSet[...] =", items, kept)
        super().__setitem__(index, items if isinstance(index, slice) else tool)

    def lookup(self, name: str) -> Tool | None:
        """The tool of that name, or ``None``."""
        for t in self:
            if t.name == name:
                return t
        return None

    def validate(self) -> None:
        """Refuse empty and duplicate names (a provider refuses the request for either)."""
        problems = _name_problems(self, 0, set())
        if problems:
            raise ValueError("agenttool: " + "; ".join(problems))

    def close(self) -> None:
        """Close every tool that owns something, in order, and report every failure."""
        errors: list[BaseException] = []
        for t in self:
            closer = getattr(t, "close", None)
            if callable(closer):
                try:
                    closer()
                except Exception as exc:  # noqa: BLE001 - every failure is reported
                    err = RuntimeError(f'agenttool: close "{t.name}": {exc}')
                    err.__cause__ = exc
                    errors.append(err)
        self.__dict__.pop("_executor", None)
        if errors:
            raise CloseError(errors)

    def definitions(self, format: str = "responses") -> list[dict[str, Any]]:
        """Every tool's definition, in order, for the provider named by ``format``; the tools
        of one namespace are listed in one namespace entry, where the first of them stands
        (their names stay unique across the set, so a call finds its tool by name alone)."""
        out: list[dict[str, Any]] = []
        namespaces: dict[str, dict[str, Any]] = {}
        for t in self:
            entry = definition(t, format)
            if entry.get("type") == "namespace":
                held = namespaces.get(entry["name"])
                if held is not None:
                    if held["description"] != entry["description"]:
                        raise ValueError(
                            f'agenttool: namespace "{entry["name"]}" is described two ways'
                            f' (tool "{t.name}" and an earlier one): give both one Namespace'
                        )
                    held["tools"].extend(entry["tools"])
                    continue
                namespaces[entry["name"]] = entry
            out.append(entry)
        return out

    def pageable(self) -> ToolSet:
        """This set's tools and ``read_output(handle, offset, length)``, which reads any slice
        of an output ``max_output`` cut from a pageable tool (``pageable=True`` on the tool,
        or ``Executor(pageable=True)``): the cut marker names the handle and where the cut
        begins.  A slice is at most the limit the output was cut to."""
        if self.lookup(_READ_OUTPUT) is not None:
            raise ValueError(f'agenttool: pageable: a tool is already named "{_READ_OUTPUT}"')
        reader = new(  # its slices are bounded already: no executor default cuts them again
            _READ_OUTPUT,
            "",
            _read_output,
            annotations=Annotations(read_only=True, open_world=False),
            max_output=sys.maxsize,
        )
        return ToolSet([*self, reader])

    def searchable(self, limit: int = 5) -> ToolSet:
        """A set for a provider without tool search of its own: the model sees one
        ``search_tools(query)`` tool plus the tools it has loaded so far.

        A search ranks the tools not loaded yet by their names and descriptions (BM25, ties
        in this set's order, so the same query always loads the same tools), loads the best
        ``limit`` of them into the set for the following turns (send the set's
        ``definitions`` again each turn) and answers with their definitions.  Loaded tools
        run like any other; a call of a tool not loaded yet is refused with the hint to
        search.  Closing the set closes every tool, loaded or not.
        """
        return _SearchableToolSet(self, limit)

    def filtered(self, names_or_predicate: Any) -> ToolSet:
        """The tools named (an iterable of names, in this set's order) or those for which
        ``predicate(tool)`` is true.  A name this set does not have is a ``ValueError``."""
        if callable(names_or_predicate):
            return ToolSet([t for t in self if names_or_predicate(t)])
        if isinstance(names_or_predicate, str):
            raise TypeError("agenttool: filtered takes a list of names or a predicate")
        wanted = set(names_or_predicate)
        self._require(wanted, "filtered")
        return ToolSet([t for t in self if t.name in wanted])

    def prefixed(self, prefix: str) -> ToolSet:
        """Every tool renamed ``<prefix>__<name>``, as the MCP client names remote tools;
        a name that then breaks the provider rule is a ``ValueError`` naming it."""
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"agenttool: prefixed needs a non-empty prefix, got {prefix!r}")
        return self._named([f"{prefix}__{t.name}" for t in self], f'prefix "{prefix}"')

    def renamed(self, mapping: collections.abc.Mapping[str, str]) -> ToolSet:
        """The tools with ``mapping``'s old names given its new ones, the others unchanged.
        A name this set does not have, a clash, or a new name breaking the provider rule is
        a ``ValueError`` naming the names."""
        self._require(set(mapping), "renamed")
        return self._named([mapping.get(t.name, t.name) for t in self], "renamed")

    @staticmethod
    def merge(*sets: collections.abc.Iterable[Tool]) -> ToolSet:
        """One set of every tool of ``sets``, in order; a name in two of them is a
        ``ValueError`` naming it.  ``a + b`` is ``ToolSet.merge(a, b)``."""
        tools = [t for s in sets for t in s]
        _check_clashes([t.name for t in tools], "merge")
        return ToolSet(tools)

    def __add__(self, other: collections.abc.Iterable[Tool]) -> ToolSet:  # type: ignore[override]
        return ToolSet.merge(self, other)

    def _require(self, names: set[str], what: str) -> None:
        unknown = sorted(names - {t.name for t in self})
        if unknown:
            have = ", ".join(f'"{t.name}"' for t in self) or "none"
            listed = ", ".join(f'"{n}"' for n in unknown)
            raise ValueError(f"agenttool: {what}: no tool named {listed}; the tools are {have}")

    def _named(self, names: list[str], what: str) -> ToolSet:
        _check_rule([n for t, n in zip(self, names) if n != t.name], what)
        _check_clashes(names, what, [t.name for t in self])
        return ToolSet(
            [t if n == t.name else _Renamed(t, n) for t, n in zip(self, names)]  # type: ignore[misc]
        )

    @property
    def executor(self) -> Executor:
        """The executor this set runs every :meth:`run` and :meth:`arun` on, made on first
        use, so ``max_parallel``, resources and sequential tools hold across separate runs
        (a framework sending one call at a time keeps them).  Assign another to replace it;
        ``executor=`` of a run goes over it for that run.  A derived set has its own."""
        runner = self.__dict__.get("_executor")
        if runner is None:
            runner = self.__dict__["_executor"] = Executor()
        return runner

    @executor.setter
    def executor(self, runner: Executor) -> None:
        if not isinstance(runner, Executor):
            raise TypeError(f"agenttool: ToolSet.executor must be an Executor, got {runner!r}")
        self.__dict__["_executor"] = runner

    def run(
        self,
        calls: Any,
        *,
        format: str | None = None,
        executor: Executor | None = None,
        inject: collections.abc.Mapping[str, Any] | None = None,
        errors: ErrorPolicy | None = None,
        approvals: collections.abc.Mapping[str, Any] | None = None,
        tracer: Any = None,
        journal: Journal | None = None,
        run: str | None = None,
        resolve: collections.abc.Mapping[str, Any] | None = None,
    ) -> RunOutput:
        """Run a model's tool calls and return the output items to send back, in call order.

        ``calls`` is what the provider returned (Responses ``function_call`` items, a Chat
        Completions message or its ``tool_calls``, Anthropic ``tool_use`` blocks or the
        message holding them, Gemini ``functionCall`` parts or the response holding them),
        as dicts or as the provider SDK's objects; ``format`` is detected when ``None``.
        ``inject`` gives values for ``Inject("key")`` parameters in this run, over the
        executor's own for the same key.  The calls run on :attr:`executor` unless
        ``executor`` is given.

        ``errors`` is the error policy for this run (see :class:`Executor`).  With
        ``approvals`` (a dict, even empty) the run pauses instead of asking the executor's
        approver: a call needing approval runs only when ``approvals`` holds an answer under
        its hash (which names its call id), and otherwise gets no output item and is listed
        in the result's ``pending``; send ``[p.item for p in pending]`` again with the
        answers.  An answer is used once: this set remembers the answered calls, so sending
        the same items again does not run them again.  ``tracer`` traces this run's calls,
        over the executor's (see :class:`Executor`).

        With a ``journal`` (or the executor's) the calls are the run named ``run``: a call
        the journal finished is not run again (its stored output item is returned), and an
        interrupted call that may not run again gets no output item and is listed in the
        result's ``uncertain``; ``resolve={call_id: answer}`` settles it (see
        :class:`Journal`).
        """
        _check_errors(errors)
        runner = executor or self.executor
        plan = self._prepare(calls, format, runner, approvals, journal, run)
        with _RunValues(inject, tracer):
            results, failures = runner.results(plan.jobs, run=run, journal=journal, resolve=resolve)
        return plan.items(results, failures, errors)

    # arun repeats run's signature (a coroutine function cannot share a function's); test_layout
    # holds the two, and Executor.execute and aexecute, to the same parameters.
    async def arun(
        self,
        calls: Any,
        *,
        format: str | None = None,
        executor: Executor | None = None,
        inject: collections.abc.Mapping[str, Any] | None = None,
        errors: ErrorPolicy | None = None,
        approvals: collections.abc.Mapping[str, Any] | None = None,
        tracer: Any = None,
        journal: Journal | None = None,
        run: str | None = None,
        resolve: collections.abc.Mapping[str, Any] | None = None,
    ) -> RunOutput:
        """:meth:`run` for an asyncio host: the same output items (``pending`` and
        ``uncertain`` too), the batch run through :meth:`Executor.aexecute` (``async def``
        tools as tasks on the running loop, sync tools on the worker threads)."""
        _check_errors(errors)
        runner = executor or self.executor
        plan = self._prepare(calls, format, runner, approvals, journal, run)
        results: list[Result | None] = [None] * len(plan.jobs)
        failures: list[BaseException | None] = [None] * len(plan.jobs)
        with _RunValues(inject, tracer):
            async for event in runner.aexecute(
                plan.jobs, run=run, journal=journal, resolve=resolve
            ):
                if event.final:
                    results[event.index] = event.result
                    failures[event.index] = event.error
        return plan.items(results, failures, errors)

    def _prepare(
        self,
        calls: Any,
        format: str | None,
        runner: Executor,
        approvals: collections.abc.Mapping[str, Any] | None,
        journal: Journal | None = None,
        run: str | None = None,
    ) -> _Run:
        """The provider's calls read, and the jobs to run for them (under ``approvals``, a
        call still waiting for its answer is set aside as pending, a refused one answered)."""
        fmt, found = _read_calls(calls, format)
        plan = _Run(fmt, found, ", ".join(f'"{t.name}"' for t in self) or "none")
        journal = journal or runner.journal
        begun: dict[str, dict[str, Any]] = {}  # the calls an earlier attempt of the run began
        if approvals is not None and journal is not None and isinstance(run, str):
            begun = journal.snapshot(run)
        for i, c in enumerate(found):
            job = Job(self.lookup(c.name), Call(c.call_id, c.arguments, _call_key(c)))
            if approvals is not None and job.tool is not None:
                row = begun.get(c.call_id)
                if row is not None and row["outcome"] is not None:
                    pass  # finished: the journal replays it, nobody is asked again
                else:
                    try:
                        approved = self._approved(
                            job, c, approvals, runner.lenient, plan.pending, row is not None
                        )
                    except Exception as exc:  # noqa: BLE001 - a refusal is this call's outcome
                        plan.outcomes[i] = exc
                        continue
                    if approved is None:
                        continue
                    job = approved
            plan.jobs.append(job)
            plan.places.append(i)
        return plan

    def _approved(
        self,
        job: Job,
        found: _ProviderCall,
        approvals: collections.abc.Mapping[str, Any],
        lenient: bool,
        pending: list[Pending],
        again: bool = False,
    ) -> Job | None:
        """The job to run for a call under ``approvals``, or None when it is left pending;
        ``again`` for a journaled call an earlier attempt began (its old answer is spent)."""
        assert job.tool is not None
        call, needed = _screen(job.tool, job.call, lenient)
        if not needed:
            return Job(job.tool, call)
        args = _parse_arguments(call.args)
        facts, factual = _facts_for_approval(job.tool, call)
        key = _approval_hash(
            found.call_id, job.tool.name, args, 2 if again else 0, facts if factual else None
        )
        if key not in approvals:
            pending.append(Pending(found.call_id, found.name, args, found.item, key, facts))
            return None
        spent = self.__dict__.setdefault("_spent", collections.OrderedDict())
        if key in spent:
            raise ToolError(
                f'call "{found.call_id}" to "{job.tool.name}" was not run again: its approval'
                " was used when it ran (an approval covers one call)"
            )
        call = _answered(job.tool, call, approvals[key], facts)
        spent[key] = None
        while len(spent) > _SPENT_APPROVALS:
            spent.popitem(last=False)
        return Job(_Approved(job.tool, job.call), call, facts)  # type: ignore[arg-type]


# ----- tool search ---------------------------------------------------------------------------
# ToolSet.searchable: for providers without native tool search.  Documents are a tool's name
# (counted twice: names are chosen words) and description, cut into lower-case words at
# non-letters and camelCase humps, a plural "s" dropped; scored by Okapi BM25 (k1 1.2, b 0.75).

_SEARCH_TOOL = "search_tools"
_BM25_K1, _BM25_B = 1.2, 0.75


def _search_words(text: str) -> list[str]:
    """The words of ``text`` as a search compares them."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    words = re.findall(r"[^\W_]+", spaced.lower())
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


def _bm25_ranked(query: str, documents: list[list[str]]) -> list[int]:
    """Indexes of the documents that share a word with ``query``, best first (ties in order)."""
    import math

    terms = set(_search_words(query))
    if not terms or not documents:
        return []
    average = sum(len(d) for d in documents) / len(documents) or 1.0
    frequency = {w: sum(1 for d in documents if w in d) for w in terms}
    scores: list[tuple[float, int]] = []
    for i, words in enumerate(documents):
        score = 0.0
        for w in terms:
            count = words.count(w)
            if not count:
                continue
            idf = math.log(1 + (len(documents) - frequency[w] + 0.5) / (frequency[w] + 0.5))
            norm = count + _BM25_K1 * (1 - _BM25_B + _BM25_B * len(words) / average)
            score += idf * count * (_BM25_K1 + 1) / norm
        if score > 0:
            scores.append((-score, i))
    return [i for _, i in sorted(scores)]


class _SearchableToolSet(ToolSet):
    """What :meth:`ToolSet.searchable` returns: ``search_tools`` and the loaded tools, with
    the tools not loaded yet kept aside in their order."""

    def __init__(self, tools: ToolSet, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"agenttool: searchable needs a positive limit, got {limit!r}")
        if tools.lookup(_SEARCH_TOOL) is not None:
            raise ValueError(f'agenttool: searchable: a tool is already named "{_SEARCH_TOOL}"')
        self._limit = limit
        self._lock = threading.Lock()
        self._hidden: list[Tool] = list(tools)
        self._documents = [_search_words(f"{t.name} {t.name} {t.description}") for t in tools]
        super().__init__([self._search_tool()])

    def _search_tool(self) -> Tool:
        def search_tools(query: str) -> str:
            return self._search(query)

        return new(
            _SEARCH_TOOL,
            f"Find tools by what they do and load the best {self._limit} matches. Call the"
            " loaded tools from your next turn; only loaded tools can be called.",
            search_tools,
            annotations=Annotations(read_only=True, open_world=False),
        )

    def _search(self, query: str) -> str:
        with self._lock:
            ranked = _bm25_ranked(query, self._documents)[: self._limit]
            found = [self._hidden[i] for i in ranked]
            for i in sorted(ranked, reverse=True):
                del self._hidden[i], self._documents[i]
            for t in found:
                list.append(self, t)
            left = len(self._hidden)
        if not found:
            return json.dumps(
                {"loaded": [], "message": f"no tool matches {query!r}; {left} not loaded yet"}
            )
        loaded = [
            {"name": t.name, "description": t.description or "", "parameters": d["parameters"]}
            for t in found
            for d in [_canonical_definition(t)]
        ]
        return json.dumps({"loaded": loaded}, ensure_ascii=False)

    def lookup(self, name: str) -> Tool | None:
        found = super().lookup(name)
        if found is not None:
            return found
        with self._lock:
            hidden = next((t for t in self._hidden if t.name == name), None)
        return None if hidden is None else _NotLoaded(hidden)  # type: ignore[return-value]

    def close(self) -> None:
        with self._lock:
            hidden = list(self._hidden)
        ToolSet(list(self) + hidden).close()


class _NotLoaded(_Wrapper):
    """A tool of a searchable set that no search has loaded yet: its calls are refused
    (never asked about: nothing runs)."""

    needs_approval = False
    lenient = False

    def __init__(self, inner: Tool) -> None:
        super().__init__(inner, self._refuse)

    def _refuse(self, call: Call) -> Result:
        raise ToolError(
            f'tool "{self._inner.name}" is not loaded: call {_SEARCH_TOOL} to find and load it,'
            " then call it on your next turn"
        )


# ---------------------------------------------------------------------------------------------
# Isolated tools: the function of a tool made with isolated=True runs in a worker process
#
# - Workers are started with "spawn" (never fork from a threaded process), on first use, at
#   most os.cpu_count() at once; each takes one call at a time over its own pipe.  A worker
#   that dies is dropped and the next call starts a fresh one.
# - What crosses: the function by module and qualified name, the decoded keyword arguments
#   and the returned value, pickled; an exception raised in the worker is raised again here.
#   The call's span crosses as its W3C traceparent (see "traces") and is the current span
#   around the tool when the worker has opentelemetry.trace loaded by then (the tool's module
#   imported it); the worker's spans go to the tracer provider the worker configures.
# - A cancel or a timeout of the call kills its worker (SIGTERM, then SIGKILL after
#   _KILL_GRACE seconds) from the cancellation's hook, so the call returns at once.
# - A worker that exits mid-call fails that call only: 'tool "x" crashed: its worker process
#   exited (signal 11)' (or "exit status 3").
# - Nothing is left behind: workers are daemonic (multiprocessing ends them at exit), each
#   exits when its pipe closes (the parent gone), on Linux a busy one is killed when its parent
#   dies (PR_SET_PDEATHSIG), and a forked child forgets its parent's.  The signal follows the
#   thread that started the worker, so one thread (agenttool-spawner, idle in a queue's get)
#   starts them all and lives as long as the process.
# ---------------------------------------------------------------------------------------------

_KILL_GRACE = 0.2  # seconds between SIGTERM and SIGKILL for a worker being stopped


class WorkerCrash(ToolCrash):
    """An isolated tool's worker process exited during its call (a signal or an exit status)."""

    def __init__(self, tool: str, how: str) -> None:
        Exception.__init__(self, f'tool "{tool}" crashed: its worker process exited ({how})')
        self.tool = tool
        self.value = RuntimeError(how)


def _importable_problem(fn: Any) -> str:
    """Why ``fn`` cannot be found by a spawned worker ("" when it can)."""
    name = getattr(fn, "__qualname__", "")
    module = getattr(fn, "__module__", None)
    if not isinstance(fn, types.FunctionType):
        return "it is not a plain function"
    if "<lambda>" in name or "<locals>" in name:
        return "a lambda or a function defined inside another cannot be found by name"
    if module in (None, "__main__"):
        return "a function of __main__ cannot be imported by a spawned worker"
    return ""


def _isolated_worker(conn: Any) -> None:
    """A worker process's loop: run each call sent over ``conn`` until the pipe closes, with
    the call's context installed: progress, records and elicitations go back over the pipe."""
    import importlib

    if sys.platform.startswith("linux"):  # die with the parent, even one killed mid-call
        import ctypes
        import signal

        try:
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

    def ask(message: tuple[str, Any]) -> Any:
        conn.send(message)
        kind, value = conn.recv()
        if kind == "error":
            raise value
        return value

    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        module, qualname, args, kwargs, max_memory, call, name, carrier = message
        scope = _Scope(
            call,
            name,
            _Cancellation(),
            lambda record: ask(("record", record)),
            lambda question: ask(("elicit", question)),
            lambda update: conn.send(("progress", update)),
        )
        token = _scope.set(scope)
        limits = None
        try:
            if max_memory:
                import resource

                limits = resource.getrlimit(resource.RLIMIT_AS)
                resource.setrlimit(resource.RLIMIT_AS, (max_memory, limits[1]))
            target: Any = importlib.import_module(module)
            for part in qualname.split("."):
                target = getattr(target, part)
            with _as_current_parent(_trace_parent_of(carrier)):  # after the tool's imports
                reply = ("ok", target(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - sent back as the call's failure
            reply = ("error", exc)
        finally:
            _scope.reset(token)
            if limits is not None:
                import resource

                resource.setrlimit(resource.RLIMIT_AS, limits)
        try:
            conn.send(reply)
        except Exception as exc:  # noqa: BLE001 - a value that cannot be pickled
            conn.send(("error", TypeError(f"the result cannot cross back: {exc}")))


def _serve_worker(conn: Any, scope: _Scope | None) -> tuple[str, Any]:
    """Read a worker's messages for its call until its outcome: progress, records and
    elicitations are handed to the call's scope on this thread, as on a thread tool."""
    while True:
        kind, value = conn.recv()
        if kind == "progress":
            if scope is not None and scope.emit is not None:
                scope.emit(value)
        elif kind in ("record", "elicit"):
            try:
                if kind == "record":
                    if scope is not None and scope.recorder is not None:
                        scope.recorder(value)
                    answer: Any = None
                elif scope is not None and scope.elicitor is not None:
                    answer = scope.elicitor(value)
                else:
                    answer = Answer(Action.CANCEL)
                conn.send(("ok", answer))
            except Exception as exc:  # noqa: BLE001 - the tool's to handle, as on a thread
                conn.send(("error", exc))
        else:
            return kind, value


class _Spawner:
    """Starts worker processes from one thread that lives as long as the process: Linux's
    parent-death signal (PR_SET_PDEATHSIG) fires when the *thread* that started a child
    exits, so a worker started on a pool thread died when that thread retired."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: Any = None
        self._pid = 0

    def start(self, process: Any) -> None:
        """``process.start()`` on the spawner's thread (begun on first use, and again in a
        forked child, which has no threads of its parent's)."""
        import queue

        with self._lock:
            if self._requests is None or self._pid != os.getpid():
                self._requests, self._pid = queue.SimpleQueue(), os.getpid()
                threading.Thread(
                    target=self._serve,
                    args=(self._requests,),
                    name="agenttool-spawner",
                    daemon=True,
                ).start()
            requests = self._requests
        done = threading.Event()
        failed: list[BaseException] = []
        requests.put((process, done, failed))
        done.wait()
        if failed:
            raise failed[0]

    @staticmethod
    def _serve(requests: Any) -> None:
        while True:
            process, done, failed = requests.get()
            try:
                process.start()
            except BaseException as exc:  # noqa: BLE001 - raised on the asking thread
                failed.append(exc)
            done.set()


_spawner = _Spawner()


class _Worker:
    """One worker process and the parent's end of its pipe."""

    __slots__ = ("process", "conn", "lock", "stopped")

    def __init__(self, context: Any) -> None:
        parent, child = context.Pipe()
        self.process = context.Process(
            target=_isolated_worker, args=(child,), name="agenttool-isolated", daemon=True
        )
        _spawner.start(self.process)
        child.close()
        self.conn = parent
        self.lock = threading.Lock()
        self.stopped = False

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after a short grace; the process is reaped.  Once: the
        canceller and the call's own thread (seeing its pipe close) may both stop it, and a
        second close of the pipe would fail with EBADF; the later one waits for the first."""
        with self.lock:
            if self.stopped:
                return
            self.stopped = True
            process = self.process
            if process.is_alive():
                process.terminate()
                process.join(_KILL_GRACE)
                if process.is_alive():
                    process.kill()
            process.join()
            self.conn.close()


class _ProcessPool:
    """The worker processes isolated calls run in: idle ones are reused, at most ``size``
    run at once (a call beyond waits), a dead or killed one is replaced on the next call."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every worker: a forked child has none of its parent's."""
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._slots = threading.Semaphore(os.cpu_count() or 1)
        self._context: Any = None

    def workers(self) -> list[Any]:
        """The idle workers' processes (the busy ones belong to their calls)."""
        with self._lock:
            return [w.process for w in self._idle]

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.process.is_alive():
                    return worker
                worker.stop()
            if self._context is None:
                import multiprocessing

                self._context = multiprocessing.get_context("spawn")
            context = self._context
        return _Worker(context)

    def run(self, t: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run ``t.fn(*args, **kwargs)`` in a worker; stopped at once when the call is cancelled."""
        scope = _scope.get()
        cancellation = scope.cancellation if scope is not None else _Cancellation()
        if cancellation.is_set:
            raise _says(Cancelled(f'tool "{t.name}" was cancelled before it started'))
        fn = t.fn
        if scope is not None and scope.workers is not None:
            return _run_foreign(scope.workers, cancellation, t, args, kwargs)
        with self._slots:
            worker = self._take()
            forget = cancellation.on_cancel(worker.stop)  # now, if it came while starting
            try:
                if cancellation.is_set:
                    raise _says(Cancelled(f'tool "{t.name}" was stopped'))
                try:
                    call = scope.call if scope is not None else Call("")
                    sent = Call(call.id, call.args, call.idempotency_key)
                    job = (fn.__module__, fn.__qualname__, args, kwargs, t.max_memory, sent)
                    worker.conn.send((*job, t.name, _trace_context()))
                except Exception as exc:
                    self._give_back(worker)
                    raise TypeError(
                        f'agenttool: tool "{t.name}": its arguments cannot cross to the worker'
                        f" process: {exc}"
                    ) from exc
                try:
                    kind, value = _serve_worker(worker.conn, scope)
                except (EOFError, OSError):
                    worker.stop()
                    if cancellation.is_set:
                        raise _says(Cancelled(f'tool "{t.name}" was stopped')) from None
                    code = worker.process.exitcode
                    if code is None:  # reaped by another waiter: the status is not known
                        how = "status unknown"
                    else:
                        how = f"signal {-code}" if code < 0 else f"exit status {code}"
                    raise WorkerCrash(t.name, how) from None
            finally:
                forget()
            self._give_back(worker)
        if kind == "error":
            raise value
        return value

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)


_processes = _ProcessPool()


def _foreign_call(
    module: str,
    qualname: str,
    args: Any,
    kwargs: Any,
    max_memory: Any,
    carrier: dict[str, str] | None = None,
) -> Any:
    """An isolated call on a foreign executor's worker: the call's context has no way back,
    so progress, records and elicitations are refused there (_no_channel); its span
    (``carrier``) is the current span around the tool, as in the built-in pool."""
    import importlib

    scope = _Scope(Call(""), qualname, _Cancellation(), _no_channel, _no_channel, _no_channel)
    token = _scope.set(scope)
    try:
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        with _as_current_parent(_trace_parent_of(carrier)):
            return target(*args, **kwargs)
    finally:
        _scope.reset(token)


def _no_channel(_: Any) -> Any:
    raise RuntimeError(
        "agenttool: progress, write_record and elicit cannot cross back from a foreign"
        " executor (Executor(workers=...)); the built-in worker pool carries them"
    )


def _run_foreign(
    workers: Any, cancellation: _Cancellation, t: Any, args: Any, kwargs: dict[str, Any]
) -> Any:
    """Submit the call to ``workers`` and wait; a cancel or timeout cancels the future (what
    a running call does then is the engine's to say)."""
    fn = t.fn
    future = workers.submit(
        _foreign_call, fn.__module__, fn.__qualname__, args, kwargs, None, _trace_context()
    )
    forget = cancellation.on_cancel(future.cancel)
    try:
        return future.result()
    except BaseException as exc:
        if cancellation.is_set and type(exc).__name__ == "CancelledError":
            raise _says(Cancelled(f'tool "{t.name}" was cancelled')) from None
        if type(exc).__name__ == "BrokenProcessPool":
            raise WorkerCrash(t.name, "a worker of the foreign executor died") from exc
        raise
    finally:
        forget()


def _check_isolated(t: Any, isolated: Any, max_memory: Any) -> None:
    """Refuse, when the tool is made, an isolated tool a worker could not run."""
    owner = f"agenttool: tool {t.name!r}"
    if not isinstance(isolated, bool):
        raise TypeError(f"{owner}: isolated must be a bool, got {isolated!r}")
    if max_memory is not None:
        _option(f"tool {t.name!r}", "max_memory", max_memory, (int,), "bytes")
        if not isolated:
            raise ValueError(f"{owner}: max_memory needs isolated=True (a thread has no limit)")
        try:
            import resource

            resource.RLIMIT_AS  # noqa: B018 - present where the limit can be set
        except (ImportError, AttributeError):
            raise ValueError(f"{owner}: max_memory cannot be set on this platform") from None
    if not isolated:
        return
    if t._async:
        raise ValueError(
            f"{owner}: an async def tool cannot be isolated: its task is cancelled for real already"
        )
    problem = _importable_problem(t.fn)
    if problem:
        raise ValueError(
            f"{owner}: isolated=True needs a module-level function importable by name: {problem}"
        )


# ---------------------------------------------------------------------------------------------
# The executor
#
# How a batch runs, stated once:
# - A batch (_Batch) offers the head of each chain; _Bounds, one per Executor, admits a call
#   when fewer than max_parallel of the executor's calls run, its resource is free and no
#   sequential call runs (a sequential call waits for the executor to be empty).  A call that
#   does not fit waits in line; each call leaving lets in, in order, those that fit.
# - An admitted sync call goes to the batch's `runs`; the batch holds at most max_parallel pool
#   threads, each taking calls from `runs` until none is left: pool threads never wait for a
#   consumer.  The thread waiting for a batch runs one of its calls itself when the pool has no
#   thread free (its cap reached, or no thread could start).  Under aexecute an async tool's
#   call is a task on the caller's loop instead.
# - A job's tool runs through one pipeline (Executor._run_job / _arun_job); whatever escapes it
#   still completes the job, once (_JobState.finish is first-wins).
# - The consumer enforces deadlines while it waits: a job past its timeout completes at once
#   and its tool sees cancelled(); the job leaves the bounds and its chain moves on only when
#   the tool has returned and the consumer has taken its final event.
#
# A call's life, as _JobState's flags record it (each set once, under the job's lock):
#   waiting    in the bounds' line or the batch's `waiting` deque          (no flag yet)
#   admitted   holds a place among max_parallel and its resource            admitted, holds
#   armed      its clock runs (from its launch, or from waiting behind a late call)  armed
#   claimed    a thread or task took it: its approval and on_start decide   started
#   in tool    its tool runs                                                in_tool
#   returned   its tool is not running any more, or never will             returned
# Beside the life, and in any order with it: finished (its one final event is posted, first
# wins: a timeout or cancel can finish a call whose tool still runs), taken (the consumer has
# that event), late (finished by its deadline while its tool runs on: it keeps its resource,
# not its max_parallel place) and followed (the next call of its chain was offered).  The life
# is not one state: a call cancelled in line is returned without being claimed, and a late call
# is finished long before it returns, so these stay flags.
# ---------------------------------------------------------------------------------------------

DEFAULT_MAX_PARALLEL = 8

DEFAULT_MAX_THREADS = 128
"""The most worker threads the process runs for all executors together, unless
:func:`set_max_threads` says otherwise: well inside a container's usual pid limit, and far more
than the I/O-bound tools of a few agents keep busy."""

_POLL_SECONDS = 0.05  # how often a waiting consumer looks at a threading.Event it was given
_PROGRESS_BACKLOG = 16  # updates kept per job for a slower consumer; beyond, the latest wins


class Job(_Value):
    """One call of a batch; ``tool`` is ``None`` when the model named a tool nobody has.

    ``facts`` is what the call amounts to (:func:`facts_of`), read by the executor for a
    call that needs approval before its approver is asked, and kept on the job ``on_start``
    sees; ``None`` where nobody asked.
    """

    __slots__ = ("tool", "call", "facts")
    tool: Tool | None
    call: Call
    facts: Facts | None

    def __init__(self, tool: Tool | None, call: Call, facts: Facts | None = None) -> None:
        self.tool = tool
        self.call = call
        self.facts = facts


class Event(_Value):
    """What the executor reports about job ``index``: a progress update (``final`` false,
    ``result`` the update) or its one final outcome (``result`` or ``error``); ``cached``
    says a final result came from the executor's result cache, ``replayed`` that it came
    from the run's journal (stored by an earlier attempt, or settled by the host): in both
    the tool did not run."""

    __slots__ = ("index", "final", "result", "error", "cached", "replayed")
    index: int
    final: bool
    result: Result | None
    error: BaseException | None
    cached: bool
    replayed: bool

    def __init__(
        self,
        index: int,
        final: bool,
        result: Result | None = None,
        error: BaseException | None = None,
        cached: bool = False,
        replayed: bool = False,
    ) -> None:
        self.index = index
        self.final = final
        self.result = result
        self.error = error
        self.cached = cached
        self.replayed = replayed


def _drained(line: collections.deque[_T]) -> Iterator[_T]:
    """Take the items of a deque other threads may take from too, first first, until none is
    left (``popleft`` is atomic; a check for emptiness before it would race)."""
    while True:
        try:
            yield line.popleft()
        except IndexError:
            return


class _JobState:
    """One job's place in its batch: its outbox (progress, at most ``_PROGRESS_BACKLOG``
    updates waiting with the latest always kept, then exactly one final event), its
    cancellation, and how far it has got."""

    __slots__ = (
        "index",
        "batch",
        "alone",
        "resource",
        "lock",
        "finished",
        "progress",
        "cancellation",
        "admitted",
        "holds",
        "returned",
        "taken",
        "cached",
        "armed",
        "started",
        "in_tool",
        "thread",
        "late",
        "behind",
        "waiter",
        "followed",
        "intended",
        "replayed",
        "pages",
    )

    def __init__(self, index: int, batch: _Batch, alone: bool, resource: str) -> None:
        self.index = index
        self.batch = batch
        self.alone = alone  # a sequential tool's call: runs beside nothing of its executor
        self.resource = resource
        self.lock = threading.Lock()
        self.finished = False
        self.progress: collections.deque[Result] | None = None  # updates not yet taken
        self.cancellation: _Cancellation | None = None  # made when the job is launched
        self.admitted = False  # holds a place among its executor's max_parallel
        self.holds = False  # holds its resource (or, sequential, the whole executor)
        self.returned = False  # its tool is not running (any more, or ever)
        self.taken = False  # the consumer has its final event
        self.cached = False  # its result came from the executor's cache
        self.armed = False  # its clock runs
        self.started = False  # a thread has taken it (or it was dropped before one did)
        self.in_tool = False  # past its approval and on_start: its tool runs
        self.thread: threading.Thread | None = None  # the pool thread running it
        self.late = False  # timed out while its tool runs on
        self.behind: _JobState | None = None  # the late call it waits for
        self.waiter: _JobState | None = None  # late: the next of its chain, waiting for it
        self.followed = False  # the next call of its chain has been offered (or is waiting)
        self.intended = False  # its intent is in the run's journal: its outcome goes there
        self.replayed = False  # its outcome came from the journal: its tool did not run
        self.pages: list[tuple[str, int, int]] = []  # journaled read_output handles (_keeper)

    def emit(self, result: Result) -> None:
        """A progress update.  A consumer that keeps up gets every one; for a slower one the
        backlog stops growing and its newest entry is replaced by the latest update, so a
        tool faster than its consumer never fills memory."""
        with self.lock:
            if self.finished:
                return
            if self.progress is None:
                self.progress = collections.deque()
            fresh = len(self.progress) < _PROGRESS_BACKLOG
            if fresh:
                self.progress.append(result)
            else:
                self.progress[-1] = result
        if fresh:
            self.batch.post(self)

    def finish(self, result: Result | None, error: BaseException | None) -> bool:
        """Post the final event unless there already is one; whether this call posted it."""
        with self.lock:
            if self.finished:
                return False
            self.finished = True
        journal = self.batch.journal
        if journal is not None and self.intended:
            journal.outcome(self.batch.jobs[self.index].call.id, result, error, self.pages)
        self.batch.post(Event(self.index, True, result, error, self.cached, self.replayed))
        return True


class _NoThread(RuntimeError):
    """No worker thread could be started, and none is at work to take the task later."""


class _WorkerPool:
    """The threads every executor's batches (and the MCP server's calls) run on.

    At most ``max_threads`` threads count against the cap: a task beyond them waits for the
    next thread to come free, never fails.  Two kinds of thread count against no cap (each
    may be replaced by a fresh thread at once): a thread blocked as the consumer of a batch
    run from inside a call (what keeps nested batches live at the cap, with no call ever run
    on a thread that also keeps deadlines, cancels and events), and a thread whose call timed
    out and has not returned (abandoned: at most ``max_threads`` of them; see
    :func:`abandoned_threads`).  When no thread can be started (a container's pid limit), a
    task waits for the threads at work, or, when none is, :class:`_NoThread` is raised.  A
    thread left idle for ``idle_seconds`` exits, so a busy agent reuses threads and a quiet
    process keeps none.  A task never takes its thread down (the executor's tasks raise
    nothing; anything else raised is dropped).
    """

    def __init__(self, idle_seconds: float, max_threads: int) -> None:
        self.idle_seconds = idle_seconds
        self.max_threads = max_threads
        self.reset()

    def reset(self) -> None:
        """Forget every thread and task: a forked child has none of its parent's threads."""
        self._lock = threading.Lock()
        self._idle = 0  # idle threads no task has been handed to yet
        self._queued = 0  # queued tasks no thread is on its way to
        self._tasks: queue.SimpleQueue[Callable[[], None]] | None = None
        self._threads: set[threading.Thread] = set()
        self._blocked: set[threading.Thread] = set()  # consumers of nested batches
        self._abandoned: set[threading.Thread] = set()  # running a call past its timeout
        self._excused = 0  # threads in either set: they count against no cap
        self._local = threading.local()  # .worker is set on the pool's own threads

    def submit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on a pool thread, now or once one comes free."""
        with self._lock:
            if self._tasks is None:
                import queue

                self._tasks = queue.SimpleQueue()
            if self._idle:
                self._idle -= 1
                self._tasks.put(fn)
                return
            if len(self._threads) - self._excused >= self.max_threads:
                self._queued += 1
                self._tasks.put(fn)
                return
            thread = self._thread(fn)
        try:
            thread.start()
        except RuntimeError as exc:  # "can't start new thread"
            with self._lock:
                self._threads.discard(thread)
                if len(self._threads) - self._excused <= 0:
                    raise _NoThread(f"{type(exc).__name__}: {exc}") from exc
                self._queued += 1  # a thread at work takes it when it comes free
                self._tasks.put(fn)

    def _thread(self, first: Callable[[], None] | None) -> threading.Thread:
        assert self._tasks is not None
        thread = threading.Thread(
            target=self._work, args=(self._tasks, first), name="agenttool-worker", daemon=True
        )
        self._threads.add(thread)
        return thread

    def _replace(self) -> None:
        """Start a thread for a waiting task, now that a thread stopped counting."""
        with self._lock:
            if not self._queued or len(self._threads) - self._excused >= self.max_threads:
                return
            self._queued -= 1
            thread = self._thread(None)
        try:
            thread.start()
        except RuntimeError:  # the waiting task goes on waiting for a thread at work
            with self._lock:
                self._threads.discard(thread)
                self._queued += 1

    def _excuse(self, thread: threading.Thread, into: set[threading.Thread]) -> bool:
        with self._lock:
            if thread not in self._threads or thread in into:
                return False
            if into is self._abandoned and len(self._abandoned) >= self.max_threads:
                return False
            into.add(thread)
            if thread not in (self._abandoned if into is self._blocked else self._blocked):
                self._excused += 1
        self._replace()
        return True

    def _unexcuse(self, thread: threading.Thread, into: set[threading.Thread]) -> None:
        with self._lock:
            if thread in into:
                into.discard(thread)
                if thread not in (self._abandoned if into is self._blocked else self._blocked):
                    self._excused -= 1

    def block(self) -> bool:
        """This thread (when it is the pool's) waits for a nested batch, an async tool's task
        or a person's answer: let another take its place.  Whether it was excused (then
        :meth:`unblock` it when the wait ends)."""
        if not getattr(self._local, "worker", False):
            return False
        return self._excuse(threading.current_thread(), self._blocked)

    def unblock(self) -> None:
        self._unexcuse(threading.current_thread(), self._blocked)

    def abandon(self, thread: threading.Thread) -> bool:
        """``thread`` runs a call past its timeout: it stops counting against the cap, unless
        ``max_threads`` threads are abandoned already.  Whether it was."""
        return self._excuse(thread, self._abandoned)

    def reclaim(self) -> None:
        """This thread's call has returned: it counts again (if it was abandoned)."""
        self._unexcuse(threading.current_thread(), self._abandoned)

    def is_worker(self) -> bool:
        """Whether this thread is one of the pool's."""
        return getattr(self._local, "worker", False) is True

    def threads(self) -> list[threading.Thread]:
        """The pool's threads now, idle or not."""
        with self._lock:
            return list(self._threads)

    def abandoned(self) -> int:
        with self._lock:
            return len(self._abandoned)

    def _work(
        self, tasks: queue.SimpleQueue[Callable[[], None]], fn: Callable[[], None] | None
    ) -> None:
        import queue

        self._local.worker = True
        me = threading.current_thread()
        while True:
            if fn is None:
                try:
                    fn = tasks.get(timeout=self.idle_seconds)
                except queue.Empty:
                    with self._lock:
                        if self._idle:  # no task is on its way to this thread: retire
                            self._idle -= 1
                            self._threads.discard(me)
                            return
                    continue
            try:
                fn()
            except BaseException:  # noqa: BLE001, S110 - the thread the pool counts lives on
                pass
            fn = None
            with self._lock:
                if self._queued:
                    self._queued -= 1  # this thread takes a task that waited for one
                elif len(self._threads) - self._excused > self.max_threads:
                    self._threads.discard(me)  # a replacement took this thread's place
                    return
                else:
                    self._idle += 1


_workers = _WorkerPool(idle_seconds=2.0, max_threads=DEFAULT_MAX_THREADS)
_fork_generation = 0  # counts forks into this process, so state from before one is dropped


def set_max_threads(n: int) -> int:
    """Set the most worker threads the process runs for all executors together (at least 1;
    :data:`DEFAULT_MAX_THREADS` to begin with) and return the previous cap.  Calls beyond it
    wait for a thread, their deadlines running.  Neither a thread waiting for a batch run from
    inside its call (so nested batches finish at the cap) nor an abandoned one (see
    :func:`abandoned_threads`) counts against the cap."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError("agenttool: the thread cap must be a positive integer")
    previous, _workers.max_threads = _workers.max_threads, n
    return previous


def abandoned_threads() -> int:
    """How many worker threads are running a call past its timeout now.

    Python cannot stop a thread: a sync tool that ignores :func:`cancelled` keeps its thread
    after its call timed out.  Such a thread counts against neither the thread cap nor its
    executor's ``max_parallel`` (a fresh thread takes its place), until it returns; at most
    as many threads as the cap are abandoned so, each reported by a warning on the
    ``agenttool`` logger.  Past that bound they count again, and calls wait for a thread
    (their deadlines running).  Tools that must be stoppable belong in a process."""
    return _workers.abandoned()


def _after_fork_in_child() -> None:
    """A forked child keeps only the forking thread: start over with no pool threads, no
    shared loop and fresh locks, and let every executor drop the bounds it counted."""
    global _fork_generation, _loop, _loop_thread, _loop_lock
    _fork_generation += 1
    _workers.reset()
    _processes.reset()
    _loop = _loop_thread = None
    _loop_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Bounds:
    """One executor's bounds across all of its batches in flight: at most ``limit`` calls
    running, one call at a time per resource, and a sequential tool's call beside nothing.

    A call that does not fit waits in line; each call leaving lets in, in order, the waiting
    calls that fit then (none jumps a waiting sequential call).  A call that timed out while
    its tool goes on running (late) gives up its place among the ``limit`` but keeps its
    resource closed, and a sequential call waits for it as for any running call: the calls
    it keeps waiting are timed from then (see :meth:`_Batch.wait_behind`)."""

    __slots__ = (
        "limit",
        "lock",
        "running",
        "held",
        "alone",
        "line",
        "alone_waiting",
        "generation",
        "late",
    )

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.lock = threading.Lock()
        self.running = 0
        self.held: set[str] = set()
        self.alone = False  # a sequential tool's call is running
        self.line: collections.deque[_JobState] = collections.deque()
        self.alone_waiting = 0  # sequential calls in line: nothing arriving jumps them
        self.generation = _fork_generation
        self.late: list[_JobState] = []  # timed out, their tools still running

    def _fits(self, s: _JobState) -> bool:
        return (
            self.running < self.limit
            and not self.alone
            and (not s.alone or (self.running == 0 and not self.late))
            and not (s.resource and s.resource in self.held)
        )

    def _take(self, s: _JobState) -> None:
        self.running += 1
        self.alone = s.alone
        if s.resource:
            self.held.add(s.resource)
        s.admitted = True
        s.holds = True

    def _blocker(self, s: _JobState) -> _JobState | None:
        """The late call that keeps ``s`` waiting, if one does."""
        for late in self.late:
            if late.alone or s.alone or (s.resource and s.resource == late.resource):
                return late
        return None

    def enter(self, s: _JobState, wait: bool = True) -> bool:
        """Take a place for ``s`` now (``True``), or put it in line (``False``; with
        ``wait=False`` it is left out instead).  In line, ``s.behind`` names the late call
        that keeps it waiting, if one does."""
        with self.lock:
            if self._fits(s) and not self.alone_waiting:
                self._take(s)
                return True
            if wait:
                self.line.append(s)
                self.alone_waiting += s.alone
                s.behind = self._blocker(s)
            return False

    def remove(self, s: _JobState) -> bool:
        """Take ``s`` out of line; whether it was there."""
        with self.lock:
            try:
                self.line.remove(s)
            except ValueError:
                return False
            self.alone_waiting -= s.alone
            return True

    def leave(self, s: _JobState, late: bool = False) -> tuple[list[_JobState], list[_JobState]]:
        """Give up ``s``'s place: all of it, or with ``late`` (its call timed out, its tool
        still runs) only its place among the ``limit``.  The calls that lets in, to be
        launched by the caller, and with ``late`` the calls in line that ``s`` now keeps
        waiting."""
        with self.lock:
            if s.admitted:
                self.running -= 1
                s.admitted = False
            blocked: list[_JobState] = []
            if late:
                self.late.append(s)
                for waiting in self.line:
                    if waiting.behind is None and self._blocker(waiting) is s:
                        waiting.behind = s
                        blocked.append(waiting)
            elif s.holds:
                s.holds = False
                if s in self.late:
                    self.late.remove(s)
                if s.alone:
                    self.alone = False
                self.held.discard(s.resource)
            let_in: list[_JobState] = []
            line, i = self.line, 0
            while i < len(line) and self.running < self.limit and not self.alone:
                waiting = line[i]
                if self._fits(waiting):
                    del line[i]
                    self.alone_waiting -= waiting.alone
                    self._take(waiting)
                    let_in.append(waiting)
                elif waiting.alone:
                    break
                else:
                    i += 1
            return let_in, blocked

    def withdraw(self, batch: _Batch) -> list[_JobState]:
        """Take a cancelled batch's calls out of line."""
        with self.lock:
            gone = [s for s in self.line if s.batch is batch]
            if gone:
                self.line = collections.deque(s for s in self.line if s.batch is not batch)
                self.alone_waiting -= sum(s.alone for s in gone)
            return gone


def _job_bounds(job: Job) -> tuple[bool, str]:
    """``(sequential, resource)`` of a job's tool; a tool whose properties cannot be read
    reads as neither (its call then fails when it runs, as one job, not the batch)."""
    if job.tool is None:
        return False, ""
    try:
        return is_sequential(job.tool), resource_of(job.tool)
    except Exception:  # noqa: BLE001 - reported by the job, not here
        return False, ""


def _runs_as_task(t: Tool | None) -> bool:
    """Whether ``aexecute`` runs this tool as a task on the caller's loop: a function tool
    made from an ``async def`` whose ``execute`` is its own (a wrapper runs on a thread)."""
    return isinstance(t, FunctionTool) and t._async and type(t).execute is FunctionTool.execute


def _not_started(call: Call) -> Cancelled:
    return _says(Cancelled(f'call "{call.id}" was cancelled before it started'))


def _exception_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {_safe_str(exc)}"


def _limited(exc: BaseException, limit: int | None) -> BaseException:
    """``exc``, its message for the model cut to ``limit`` characters (see error_message)."""
    if limit:
        try:
            exc.__dict__[_LIMIT_ATTR] = limit
        except Exception:  # noqa: BLE001, S110 - an exception without __dict__ stays uncut
            pass
    return exc


class _Batch:
    """One ``execute`` or ``aexecute`` in flight: its jobs and chains, the bounds it runs
    under, where its events go (``post``, callable from any thread), the calls launched but
    waiting for a pool thread, and the deadlines its consumer enforces."""

    def __init__(
        self,
        executor: Executor,
        jobs: list[Job],
        post: Callable[[Any], None],
        loop: Any,
        journal: _RunJournal | None = None,
    ) -> None:
        self.executor = executor
        self.jobs = jobs
        self.journal = journal  # the run this batch journals, its lease taken
        self.post = post
        self.loop = loop  # the caller's loop under aexecute: async tools run there as tasks
        self.loop_thread = threading.get_ident()
        blocked = _running_loop() if loop is None else None  # the consumer waits on its thread
        self.own_loop = blocked is not None
        self.host_loop = blocked is not None and id(blocked) not in _own_loops
        bounds = executor._bounds()
        parent = _scope.get()
        if parent is not None and parent.bounds is bounds:
            bounds = _Bounds(executor.max_parallel)  # run from one of this executor's calls
        self.bounds = bounds
        known: dict[int, tuple[bool, str, tuple[str, float] | None]] = {}  # often one tool
        props = [
            known[id(j.tool)]
            if id(j.tool) in known
            else known.setdefault(id(j.tool), (*_job_bounds(j), _job_clock(j, executor)))
            for j in jobs
        ]
        self.chains = executor._chains([(alone, resource) for alone, resource, _ in props])
        self.following = [-1] * len(jobs)
        for chain in self.chains:
            for a, b in zip(chain, chain[1:]):
                self.following[a] = b
        self.states = [_JobState(i, self, *props[i][:2]) for i in range(len(jobs))]
        self.clocks = [clock for _, _, clock in props]  # (tool name, timeout) where one is set
        self.lock = threading.Lock()
        self.cancelled = False
        self.runs: collections.deque[_JobState] = collections.deque()
        # Plain calls (no resource, not sequential) waiting for a place the batch holds: a call
        # of the batch that returns hands its place on to one of them while nobody waits in
        # the bounds' line, so a long batch takes no executor-wide lock per call (with eight
        # threads returning calls, that lock was the batch's bottleneck).
        self.waiting: collections.deque[_JobState] = collections.deque()
        self.drainers = 0  # pool turns taking calls from runs: never more than the bound
        self.deadlines: list[tuple[float, int, str, float]] = []
        self.context = contextvars.copy_context()

    def start(self) -> None:
        held = False  # a plain call of this batch holds a place, or waits in line for one
        for chain in self.chains:
            s = self.states[chain[0]]
            if not self._unbound(s):
                self._offer(s)
            elif self.waiting or (held and not self.bounds.enter(s, wait=False)):
                self.waiting.append(s)
            elif held:
                self._launch(s)  # admitted by the enter just above
            else:
                self._offer(s)
                held = True

    def _unbound(self, s: _JobState) -> bool:
        """Whether a call is bound by nothing but max_parallel: not sequential, no resource,
        a tool found."""
        return not s.alone and not s.resource and self.jobs[s.index].tool is not None

    def _hand_on(self, s: _JobState) -> _JobState | None:
        """The waiting call that takes over the place of ``s`` (whose tool returned) when
        nobody waits in the bounds' line; ``None`` when the place goes back to the bounds."""
        if s.alone or s.resource or self.cancelled or not self.waiting or self.bounds.line:
            return None
        try:
            following = self.waiting.popleft()
        except IndexError:  # another of the batch's threads took the last one meanwhile
            return None
        s.admitted = s.holds = False
        following.admitted = following.holds = True
        return following

    def _offer(self, s: _JobState) -> None:
        """The job's turn in its chain has come: run it when its bounds let it in (a job
        that waits there behind a call that timed out and still runs is timed from now)."""
        call = self.jobs[s.index].call
        if s.finished:  # timed out while it waited for a late call before it
            self._returned(s)
        elif self.cancelled:
            self._skip(s, _not_started(call))
        elif self.jobs[s.index].tool is None:
            self._skip(s, _says(NoTool(f'no tool for call "{call.id}"')))
        elif self.bounds.enter(s):
            self._launch(s)
        elif s.behind is not None:
            self._arm(s)

    def _skip(self, s: _JobState, error: BaseException) -> None:
        """Complete a job whose tool will not run."""
        s.finish(None, error)
        self._returned(s)

    def _launch(self, s: _JobState) -> None:
        """Start an admitted job's clock and the job: a task on the caller's loop, or a pool
        thread's turn."""
        if s.started:  # its deadline passed before it could start: its place is given back
            return
        s.behind = None
        cancelled = self.cancelled
        if not cancelled:
            s.cancellation = cancellation = _Cancellation()
            if self.cancelled:  # cancel() may have looked at this job before it had one
                cancellation.cancel()
        if cancelled:
            call = self.jobs[s.index].call
            self._skip(s, _not_started(call))
            return
        self._arm(s)
        if self.loop is not None and _runs_as_task(self.jobs[s.index].tool):
            if threading.get_ident() == self.loop_thread:
                self._start_task(s)
                return
            try:
                self.loop.call_soon_threadsafe(self._start_task, s)
            except RuntimeError:  # the caller's loop is closed: nobody runs or reads it
                self._skip(s, _not_started(self.jobs[s.index].call))
            return
        self.runs.append(s)
        if self.drainers >= self.bounds.limit:
            return  # one of the batch's threads takes it (see _drain)
        with self.lock:
            if self.drainers >= self.bounds.limit:
                return
            self.drainers += 1
        try:
            _workers.submit(self._drain)
        except _NoThread as exc:
            with self.lock:
                self.drainers -= 1
                alone = self.drainers == 0  # no thread of the batch will take what waits
            while alone:
                try:
                    waiting = self.runs.popleft()
                except IndexError:
                    break
                error = RuntimeError(
                    f'agenttool: no thread could be started to run call "'
                    f'{self.jobs[waiting.index].call.id}" and none is free ({exc}); it did not run'
                )
                self._skip(waiting, error)

    def _start_task(self, s: _JobState) -> None:
        task = self.context.copy().run(self.loop.create_task, self.executor._arun_job(self, s))
        task.add_done_callback(functools.partial(self._task_done, s))
        assert s.cancellation is not None
        s.cancellation.on_cancel(lambda: self.loop.call_soon_threadsafe(task.cancel))

    def _task_done(self, s: _JobState, task: Any) -> None:
        if task.cancelled():  # cancelled before its first step: _arun_job never ran
            call = self.jobs[s.index].call
            self._skip(s, _not_started(call))

    def _drain(self) -> None:
        """A pool thread's turn: run the launched calls waiting for a thread, oldest first,
        until none is left.  A batch takes at most as many threads as its bound: a call
        launched while they are all taken waits for the first of them to come free."""
        while True:
            try:
                s = self.runs.popleft()
            except IndexError:
                with self.lock:
                    self.drainers -= 1
                # A call appended while this thread still counted may have been left for it:
                # take it back on if so (and if the bound lets it), else leave.
                if not self.runs:
                    return
                with self.lock:
                    if self.drainers >= self.bounds.limit:
                        return
                    self.drainers += 1
                continue
            self.executor._perform(self, s)

    def claim(self, s: _JobState) -> bool:
        """This thread (or task) takes the job to run it: ``False`` when its deadline passed
        first and it was dropped."""
        with s.lock:
            if s.started:
                return False
            s.started = True
        return True

    def _returned(self, s: _JobState) -> None:
        """The job's tool is not running (any more, or ever): free what it holds in the
        bounds, launch whoever that lets in, and move its chain on once the consumer has its
        final event.  Once per job."""
        with s.lock:
            if s.returned:
                return
            s.returned = True
            follow = s.taken and not s.followed
            s.followed = s.followed or follow
            waiter, s.waiter = s.waiter, None
        if s.admitted:
            self._free_place(s)
        elif s.holds:  # late: its place among max_parallel went when it timed out
            for other in self.bounds.leave(s)[0]:
                other.batch._launch(other)
        if follow:
            self._follow(s)
        if waiter is not None:
            waiter.batch._offer(waiter)

    def _free_place(self, s: _JobState, late: bool = False) -> None:
        """Give up the place of ``s`` (with ``late``, only among max_parallel: its tool runs
        on past its timeout) and let in whoever fits."""
        if not late:
            following = self._hand_on(s)
            if following is not None:
                self._launch(following)
                return
        let_in, blocked = self.bounds.leave(s, late)
        for other in let_in:
            other.batch._launch(other)
        for other in blocked:
            other.batch._arm(other)
        try:  # the batch's next waiting call queues for a place like any other
            self._offer(self.waiting.popleft())
        except IndexError:
            pass

    def taken(self, s: _JobState) -> None:
        """The consumer has the job's final event (and has resumed past it)."""
        if self.following[s.index] < 0:
            return  # the last of its chain: nothing waits for this
        with s.lock:
            s.taken = True
            follow = (s.returned or s.late) and not s.followed
            s.followed = s.followed or follow
        if follow:
            self._follow(s)

    def _follow(self, s: _JobState) -> None:
        """Offer the next call of the chain of ``s``; while a late call before it still runs,
        it waits for that call instead, timed from now."""
        following = self.following[s.index]
        if following < 0:
            return
        n = self.states[following]
        holder = s if s.late else s.behind
        if holder is not None and holder.batch is self:
            with holder.lock:
                if not holder.returned:
                    holder.waiter = n
                    n.behind = holder
            if n.behind is holder:
                self._arm(n)
                return
        self._offer(n)

    def cancel(self) -> None:
        """Running tools see :func:`cancelled`; every job not started completes now, even
        one whose turn in its chain would come only after a tool that never returns, and so
        does a job waiting for its approver or ``on_start``, whose tool then never runs."""
        with self.lock:
            if self.cancelled:
                return
            self.cancelled = True
        for line in (self.bounds.withdraw(self), _drained(self.waiting)):
            for s in line:
                s.finish(None, _not_started(self.jobs[s.index].call))
                with s.lock:
                    s.returned = True  # never admitted: nothing to leave
        for s in _drained(self.runs):
            if self.claim(s):
                self._skip(s, _not_started(self.jobs[s.index].call))
        for s in self.states:
            with s.lock:
                cancellation = s.cancellation
                deciding = s.started and not s.in_tool and not s.returned
            if cancellation is not None:
                cancellation.cancel()
            if deciding:
                s.finish(None, _not_started(self.jobs[s.index].call))
            if s.finished and not s.returned:
                self._end_chain_after(s)

    def _end_chain_after(self, s: _JobState) -> None:
        """In a cancelled batch, complete now the chain's calls waiting behind ``s``, a
        timed-out tool still running: their turn would come only when it returns."""
        following = self.following[s.index]
        while following >= 0:
            self.states[following].finish(None, _not_started(self.jobs[following].call))
            following = self.following[following]

    def _arm(self, s: _JobState) -> None:
        """Start the job's clock (once): when it is let in to run, or when it begins to wait
        for a call that timed out and still runs."""
        clock = self.clocks[s.index]
        if clock is None:
            return
        import heapq
        import time

        tool, seconds = clock
        with self.lock:
            if s.armed:
                return
            s.armed = True
            heapq.heappush(self.deadlines, (time.monotonic() + seconds, s.index, tool, seconds))
        self.post(None)  # the consumer waits no longer than this deadline

    def expire(self) -> float | None:
        """Complete every job whose deadline has passed (its tool sees :func:`cancelled`);
        the seconds to the next deadline, ``None`` when there is none."""
        if not self.deadlines:
            return None
        import heapq
        import time

        now = time.monotonic()
        expired = []
        with self.lock:
            while self.deadlines and self.deadlines[0][0] <= now:
                expired.append(heapq.heappop(self.deadlines))
            wait = self.deadlines[0][0] - now if self.deadlines else None
        for _, index, tool, seconds in expired:
            self._time_out(self.states[index], tool, seconds)
        return wait

    def _time_out(self, s: _JobState, tool: str, seconds: float) -> None:
        """Complete a job past its deadline wherever it is: waiting (it never runs), deciding
        or running (its tool sees :func:`cancelled`; a thread that does not return stops
        counting against the bounds)."""
        if s.finished:
            return
        behind = s.behind
        if not s.admitted:
            self.bounds.remove(s)
        dropped = self.claim(s)
        message = f'tool "{tool}" timed out after {seconds:g} s'
        if dropped and behind is not None:
            message += ": " + _held_by(s, behind)
        if not s.finish(None, _says(TimeoutError(message))):
            return
        if s.cancellation is not None:
            s.cancellation.cancel()
        running_on = ""
        if dropped:
            if behind is not None:
                with behind.lock:
                    if behind.waiter is s:
                        behind.waiter = None
            self._returned(s)
        elif s.thread is not None:
            running_on = self._abandon(s)
        # one warning per timeout, saying what is left running
        _log(
            _WARNING,
            f'tool "{tool}" (call "{self.jobs[s.index].call.id}")'
            + message[len(tool) + 7 :]
            + running_on,
        )
        if not dropped and self.cancelled:
            self._end_chain_after(s)

    def _abandon(self, s: _JobState) -> str:
        """A thread's call timed out and its tool runs on: free its thread and its place
        among max_parallel (its resource stays closed until the tool returns); what that
        means for the thread cap, for the timeout's warning."""
        with s.lock:
            if s.returned:
                return ""
            s.late = True
        thread = s.thread
        freed = thread is not None and _workers.abandon(thread)
        count = _workers.abandoned()
        self._free_place(s, late=True)
        if freed:
            return (
                "; until its tool returns, its thread no longer counts against the thread cap"
                f" ({count} abandoned)"
            )
        return f"; its tool runs on, and its thread still counts ({count} abandoned already)"

    def event_of(self, item: Any) -> Event | None:
        """The event an outbox item stands for: a final event as posted, a job's latest
        progress (handed to its call's ``on_update`` too), ``None`` for a wake-up."""
        if item is None or isinstance(item, Event):
            return item
        with item.lock:
            if not item.progress:
                return None
            result = item.progress.popleft()
        on_update = self.jobs[item.index].call.on_update
        if on_update is not None:
            on_update(result)
        return Event(item.index, False, result)

    def settle(self) -> None:
        """Wait for the cancelled tools still running to return, each at most until its
        deadline (a tool that ignores cancellation and has no timeout is waited for)."""
        import time

        while any(s.cancellation is not None and not s.finished for s in self.states):
            self.expire()
            time.sleep(0.005)

    def end_journal(self) -> None:
        """The batch is over for its consumer: stop renewing the run's lease, and give it back
        when none of its tools still runs."""
        if self.journal is not None:
            running = any(
                (s.in_tool and not s.finished) or (s.late and not s.returned) for s in self.states
            )
            self.journal.end(not running)


def _not_run(call: Call, why: str, exc: BaseException) -> RuntimeError:
    """The error of a journaled call that did not run because of the journal."""
    error = RuntimeError(f'agenttool: call "{call.id}" was not run: {why}: {_exception_text(exc)}')
    error.__cause__ = exc
    return error


def _job_clock(job: Job, executor: Executor) -> tuple[str, float] | None:
    """``(tool name, timeout)`` of a job whose tool (or executor) sets a timeout; a tool
    whose properties cannot be read has none (its call fails when it runs)."""
    if job.tool is None:
        return None
    try:
        seconds = timeout_of(job.tool) or executor.timeout
        name = job.tool.name
    except Exception:  # noqa: BLE001 - reported by the job, not here
        return None
    return (name, seconds) if seconds and isinstance(name, str) else None


def _held_by(s: _JobState, late: _JobState) -> str:
    """Why ``s`` waited until its deadline: a late call before it, still running."""
    job = late.batch.jobs[late.index]
    who = f'call "{job.call.id}" (tool "{_safe_name(job.tool)}")'
    if late.resource and late.resource == s.resource:
        return f'resource "{s.resource}" is held by {who}, which timed out and has not returned'
    if late.alone:
        return f"{who}, which runs beside nothing, timed out and has not returned"
    return f"{who}, before it in its chain, timed out and has not returned"


def _next_event(
    batch: _Batch, outbox: queue.SimpleQueue[Any], cancel: threading.Event | None
) -> Event:
    """The next event of a batch for a consumer that waits on its thread: meanwhile it passes
    ``cancel`` on (a ``threading.Event`` cannot call back, so it is looked at every 50 ms) and
    enforces deadlines.  It never runs a call: a pool thread waiting here lets another thread
    take its place instead (see _WorkerPool)."""
    import queue

    while True:
        if cancel is not None and cancel.is_set():
            batch.cancel()
        wait = batch.expire()
        if cancel is not None and not batch.cancelled:
            wait = _POLL_SECONDS if wait is None else min(wait, _POLL_SECONDS)
        try:
            item = outbox.get_nowait()
        except queue.Empty:
            blocked = _workers.block()
            try:
                item = outbox.get(timeout=wait)
            except queue.Empty:
                continue
            finally:
                if blocked:
                    _workers.unblock()
        event = batch.event_of(item)
        if event is not None:
            return event


def _wake(waiter: Any) -> None:
    if not waiter.done():
        waiter.set_result(None)


# ----- traces --------------------------------------------------------------------------------
# Executor(tracer=...) and ToolSet.run/arun(..., tracer=...) take any object shaped like an
# OpenTelemetry Tracer (its start_as_current_span); nothing is imported.  Each call gets one
# span, "execute_tool <tool name>", from its turn to its outcome and current throughout, so
# the approver's span, each retry attempt and the tool's own spans nest under it, on a pool
# thread and on the caller's loop alike.  Its attributes follow the GenAI conventions, named
# once in _GENAI; record_content=True adds the arguments and the result the model reads, each
# cut to _SPAN_CONTENT_LIMIT characters (they may hold secrets, so only when asked).  A
# failure sets error.type (the exception's class; "TimeoutError" when the deadline ended the
# call) and the span's status, through opentelemetry.trace when the tracer's process has it.
#
# Past the process the span travels as W3C Trace Context, written and read here without
# OpenTelemetry: _trace_context() is the current span's traceparent (and tracestate), read
# through opentelemetry.trace when the process has it loaded, {} when there is no span;
# _trace_parent_of() reads one back strictly (a malformed traceparent is no parent, a
# malformed tracestate is dropped).  It crosses in a served MCP call's params._meta (the MCP
# module writes and reads it; _continue_trace() makes it the parent of the call's span unless
# the current span continues that trace already, as the MCP SDK's own server span does) and
# with an isolated call's job to its worker, where it is the current span around the tool.
# A parent is made current through opentelemetry.trace only, where that process has it
# loaded: without it no tracer there could use it, so nothing is done.

_GENAI = {
    "operation": "gen_ai.operation.name",
    "tool_name": "gen_ai.tool.name",
    "call_id": "gen_ai.tool.call.id",
    "description": "gen_ai.tool.description",
    "tool_type": "gen_ai.tool.type",
    "arguments": "gen_ai.tool.call.arguments",
    "result": "gen_ai.tool.call.result",
    "error": "error.type",
}
_SPAN_CONTENT_LIMIT = 4000

# The tracer a job runs under, for the spans of what happens inside its call (the approver,
# retry attempts); set in the job's own context only.
_tracing: contextvars.ContextVar[Any] = contextvars.ContextVar("agenttool_tracing", default=None)
# The tracer ToolSet.run(..., tracer=...) gives the batch it runs, over its executor's.
_run_tracer: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "agenttool_run_tracer", default=None
)
# The remote parent of the calls started in this context: a served call's caller's span.
_remote_parent: contextvars.ContextVar[tuple[int, int, int, str] | None] = contextvars.ContextVar(
    "agenttool_remote_parent", default=None
)
# Compiled on first use (re's cache), not at import.
_TRACEPARENT = r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?"
_TRACESTATE_MEMBER = (  # a key (simple, or tenant@system), "=", a value
    r"(?:[a-z][a-z0-9_*/-]{0,255}|[a-z0-9][a-z0-9_*/-]{0,240}@[a-z][a-z0-9_*/-]{0,13})"
    r"=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]"
)


class _NoSpan:
    """The context manager of a span nobody records."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class _Within:
    """``with _Within(outer, make) as x``: ``outer`` entered, then the context manager
    ``make()`` returns inside it (x is what that one gives); left in the reverse order."""

    __slots__ = ("outer", "make", "inner")

    def __init__(self, outer: Any, make: Callable[[], Any]) -> None:
        self.outer, self.make = outer, make

    def __enter__(self) -> Any:
        self.outer.__enter__()
        try:
            self.inner = self.make()
            return self.inner.__enter__()
        except BaseException:
            self.outer.__exit__(*sys.exc_info())
            raise

    def __exit__(self, *exc: Any) -> Any:
        try:
            return self.inner.__exit__(*exc)
        finally:
            self.outer.__exit__(None, None, None)


def _trace_context() -> dict[str, str]:
    """The current OpenTelemetry span as W3C Trace Context: ``traceparent`` and, when it has
    one, ``tracestate``; ``{}`` when there is no valid span or the process has not loaded
    ``opentelemetry.trace`` (then nothing can have made one)."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return {}
    try:
        span = trace.get_current_span().get_span_context()
        if not span.is_valid:
            return {}
        flags = int(span.trace_flags) & 0xFF
        carrier = {"traceparent": f"00-{span.trace_id:032x}-{span.span_id:016x}-{flags:02x}"}
        state = span.trace_state.to_header() if span.trace_state else ""
        if state:
            carrier["tracestate"] = state
        return carrier
    except Exception:  # noqa: BLE001 - a span that cannot be read is not sent
        return {}


def _trace_parent_of(carrier: Any) -> tuple[int, int, int, str] | None:
    """The parent ``carrier["traceparent"]`` names, as (trace id, span id, flags,
    tracestate), read strictly as W3C Trace Context says: lower-case hex fields of their exact
    lengths, version ``ff`` never, version ``00`` with nothing after its flags, neither id all
    zeros; anything else is None (no parent, never an error).  A ``tracestate`` that breaks
    its grammar (over 32 members, a key twice) is dropped, the parent kept."""
    value = carrier.get("traceparent") if isinstance(carrier, collections.abc.Mapping) else None
    match = re.fullmatch(_TRACEPARENT, value, re.S) if isinstance(value, str) else None
    if match is None:
        return None
    version, trace_id, span_id, flags, rest = match.groups()
    if version == "ff" or (version == "00" and rest is not None):
        return None
    parent = (int(trace_id, 16), int(span_id, 16))
    if not all(parent):
        return None
    state = carrier.get("tracestate")
    return (*parent, int(flags, 16), state if _valid_tracestate(state) else "")


def _valid_tracestate(state: Any) -> bool:
    if not isinstance(state, str):
        return False
    members = [m.strip(" \t") for m in state.split(",")]
    members = [m for m in members if m]
    keys = {m.partition("=")[0] for m in members}
    return (
        0 < len(members) <= 32
        and len(keys) == len(members)
        and all(re.fullmatch(_TRACESTATE_MEMBER, m) for m in members)
    )


def _continue_trace(carrier: Any) -> None:
    """Make the trace context in ``carrier`` (a served call's ``params._meta``) the remote
    parent of the calls started in this context from now on (none when it is malformed)."""
    _remote_parent.set(_trace_parent_of(carrier))


def _as_current_parent(parent: tuple[int, int, int, str] | None) -> Any:
    """A context manager making ``parent`` (from :func:`_trace_parent_of`) the current span,
    through ``opentelemetry.trace`` where this process has it loaded; else nothing."""
    trace = sys.modules.get("opentelemetry.trace")
    if parent is None or trace is None:
        return _NoSpan()
    try:
        trace_id, span_id, flags, state = parent
        remote = trace.SpanContext(
            trace_id,
            span_id,
            is_remote=True,
            trace_flags=trace.TraceFlags(flags),
            trace_state=trace.TraceState.from_header([state]) if state else None,
        )
        return trace.use_span(trace.NonRecordingSpan(remote), end_on_exit=False)
    except Exception:  # noqa: BLE001 - a parent that cannot be made is no parent
        return _NoSpan()


def _served_parent() -> Any:
    """The remote parent of a served call, made current, unless the current span already
    continues its trace (the MCP SDK's own server span, a batch inside a served call)."""
    parent = _remote_parent.get()
    if parent is None:
        return None
    current = _trace_parent_of(_trace_context())
    if current is not None and current[0] == parent[0]:
        return None
    return _as_current_parent(parent)


def _child_span(name: str, attributes: dict[str, Any] | None = None) -> Any:
    """A span under the running call's, when the call is traced; else nothing."""
    tracer = _tracing.get()
    if tracer is None:
        return _NoSpan()
    return tracer.start_as_current_span(name, attributes=attributes or {})


def _error_type(exc: BaseException) -> str:
    kind = type(exc)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def _span_text(value: Any) -> str:
    text = value if isinstance(value, str) else _dumps(value)
    return _cut_middle(text, _SPAN_CONTENT_LIMIT)


def _call_span(tracer: Any, job: Job, record_content: bool) -> Any:
    """The context manager of a call's span, its attributes set (see "traces")."""
    name = _safe_name(job.tool)
    attributes: dict[str, Any] = {
        _GENAI["operation"]: "execute_tool",
        _GENAI["tool_name"]: name,
        _GENAI["call_id"]: job.call.id,
        _GENAI["tool_type"]: "function",
    }
    description = getattr(job.tool, "description", "")
    if isinstance(description, str) and description:
        attributes[_GENAI["description"]] = description
    if record_content:
        args = job.call.args
        attributes[_GENAI["arguments"]] = _span_text(
            args.decode("utf-8", "replace") if isinstance(args, bytes) else args or {}
        )
    title = f"execute_tool {name}"
    parent = _served_parent()
    if parent is None:
        return tracer.start_as_current_span(title, attributes=attributes)
    return _Within(parent, lambda: tracer.start_as_current_span(title, attributes=attributes))


def _end_span(
    span: Any, s: _JobState, result: Result | None, error: BaseException | None, content: bool
) -> None:
    """Record a call's outcome on its span: the error's type and the status, the result."""
    try:
        if s.finished and error is None:  # the deadline completed the call meanwhile
            error = _says(TimeoutError("the call's deadline passed"))
        if error is not None:
            span.set_attribute(_GENAI["error"], _error_type(error))
            trace = sys.modules.get("opentelemetry.trace")
            if trace is not None:
                span.set_status(trace.Status(trace.StatusCode.ERROR, error_message(error)))
        if content:
            shown = error_result(error) if error is not None else result
            if shown is not None:
                span.set_attribute(_GENAI["result"], _span_text(shown.output))
    except Exception:  # noqa: BLE001, S110 - a span that cannot record never fails a call
        pass


def _safe_name(t: Tool | None) -> str:
    try:
        name = t.name if t is not None else ""
        return name if isinstance(name, str) else ""
    except Exception:  # noqa: BLE001 - its call fails on it later, as one job
        return ""


# ----- the result cache ----------------------------------------------------------------------
# Opt-in: Executor(cache=True) or cache=ResultCache(...).  A call is answered from the cache only
# when its tool declares cacheable=True and its replay reads Replay.SAFE for those arguments; the
# key is the tool's definition_hash and the RFC 8785 hash of its arguments object, so an edited
# tool never answers from an old entry; only successful results are stored; the final event of
# an answer from the cache has cached=True, and the tool did not run.  It is looked up once the
# call is admitted, approved and started (on_start), so no policy is skipped.  With a journal
# (Executor(journal=j, cache=True), or ResultCache(journal=j)) the entries are rows of the
# journal's agenttool_cache table, shared by the processes on that database.


class ResultCache:
    """An in-memory LRU of results: at most ``max_entries`` (1,024 by default), each kept
    ``ttl`` seconds (300) after it was stored; safe to share between executors and threads.

    With ``journal`` the entries live in the journal's database instead, shared by every
    process on it and kept across restarts: the bound drops the oldest stored first, and a
    result that is not JSON (an image part) or that the database refuses is not stored (the
    call's result still goes out; a failure is logged)."""

    def __init__(
        self, max_entries: int = 1024, ttl: float = 300.0, *, journal: Journal | None = None
    ) -> None:
        if journal is not None and not isinstance(journal, Journal):
            raise TypeError(f"agenttool: ResultCache: journal must be a Journal, got {journal!r}")
        self.journal = journal
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise ValueError(
                f"agenttool: ResultCache: max_entries must be a positive int, got {max_entries!r}"
            )
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl < 1e9:
            raise ValueError(
                f"agenttool: ResultCache: ttl must be a positive number of seconds, got {ttl!r}"
            )
        self.max_entries = max_entries
        self.ttl = float(ttl)
        self._lock = threading.Lock()
        self._entries: collections.OrderedDict[str, tuple[float, Result]] = (
            collections.OrderedDict()
        )

    def get(self, key: str) -> Result | None:
        """A copy of the result stored under ``key``, or ``None`` (absent or expired)."""
        import time

        if self.journal is not None:
            try:
                outcome = self.journal.cached(key)
            except JournalError as exc:
                _log(_WARNING, "the result cache could not be read", exc)
                return None
            return None if outcome is None else _restored(outcome)[0]
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] <= time.monotonic():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
        return _copy_result(entry[1])

    def put(self, key: str, result: Result) -> None:
        """Store a copy of ``result`` under ``key``, dropping the least recently used beyond
        the bound."""
        import time

        if self.journal is not None:
            try:
                self.journal.cache(key, _stored(result, None), self.ttl, self.max_entries)
            except (JournalError, TypeError, ValueError) as exc:  # not JSON, or refused
                _log(_WARNING, "a result was not stored in the result cache", exc)
            return
        kept = _copy_result(result)
        with self._lock:
            self._entries[key] = (time.monotonic() + self.ttl, kept)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        if self.journal is not None:
            return self.journal.cached_count()
        with self._lock:
            return len(self._entries)


def _copy_result(result: Result) -> Result:
    """A copy no holder of ``result`` can change (outputs and structured values are nested)."""
    import copy

    return copy.deepcopy(result)


# ---------------------------------------------------------------------------------------------
# The journal: runs that survive a crash
# ---------------------------------------------------------------------------------------------
# The durable record of runs (issue 18).  A run names one batch of the model's calls (an
# agent's turn); its calls are keyed by (run, call id).  The rules, in the order of a call's
# life (DESIGN §8):
# 1. A call's intent (tool, definition hash, arguments hash, the idempotency key the journal
#    mints once, time) is committed after its approval and on_start, before its tool starts;
#    if it cannot be written the tool does not run and the model reads why.
# 2. Its outcome (output or error text, structured value, terminate, the cut output) is
#    committed before its final event is posted; its records as they are written.
# 3. The same run again: a call with an outcome is not run, its stored outcome is its final
#    event (``replayed``).  A call with an intent and no outcome runs again when its replay
#    is SAFE, again with the same key when KEYED, and never when UNKNOWN: it is uncertain.
# 4. An uncertain call is the host's to settle: its tool's ``reconcile(args, key, records)``
#    may return the Result of what happened; else the job fails with Uncertain (ToolSet.run
#    lists it in ``.uncertain``) until ``resolve={call_id: answer}`` settles it: a Result (what
#    happened), True (run it again, same key) or a string (the model reads it as its error).
# 5. Other arguments under a journaled call id are refused naming the call; a changed
#    definition makes an interrupted or finished call uncertain, never matched to old output.
# 6. A run is held by one process at a time: a lease (owner, expiry) renewed while the batch
#    runs; a live lease of another owner refuses the batch, an expired one is taken over.
# An outcome that cannot be written is logged and the result still reaches the model (the
# tool has run); the journal then reads the call as interrupted, so a resume asks the host.

_JOURNAL_SCHEMA = 2
# How the journal writes an outcome (and a cached one): made once, not per call as json.dumps
# with options does.
_OUTCOME_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True)
_LEASE_SECONDS = 30.0
_MAX_OUTCOME = 256 * 1024 * 1024  # bytes of one stored outcome, well under SQLite's 1 GB


def _lease_owner() -> str:
    """A batch's name on the leases it holds: ``host:pid:tag``."""
    import os
    import socket
    import uuid

    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _dead_owner(owner: Any) -> bool:
    """Whether a lease's owner (``host:pid:tag``) was a process of this host that is gone."""
    import os
    import socket

    parts = owner.split(":") if isinstance(owner, str) else []
    if os.name != "posix" or len(parts) != 3 or parts[0] != socket.gethostname():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except (ValueError, OSError):
        return False
    return False


# A statement run inside a journal's write transaction: execute(text, params) -> its rows and
# the driver's rowcount (how many rows it changed; -1 when the driver cannot say).
_Execute = Callable[[str, "tuple[Any, ...]"], "tuple[list[Any], int]"]


def _close_quietly(conn: Any) -> None:
    """Close a database connection, ignoring a failure (closing is best effort)."""
    try:
        conn.close()
    except Exception:  # noqa: BLE001 - see the docstring
        pass


class JournalError(Exception):
    """A journal that cannot be opened, read or written, or a run held by another owner."""


class Journal:
    """The durable record of runs: ``Journal("agent.db")`` (SQLite) or ``Journal(connect=fn)``
    for any DB-API 2.0 connection (``paramstyle`` read from the driver's module or given)."""

    def __init__(
        self,
        path: str | None = None,
        *,
        connect: Callable[[], Any] | None = None,
        paramstyle: str | None = None,
        synchronous: str = "FULL",
        timeout: float = 30.0,
        lease: float = _LEASE_SECONDS,
        max_outcome: int = _MAX_OUTCOME,
    ) -> None:
        if (path is None) == (connect is None):
            raise ValueError("agenttool: Journal: give a file path or connect=, not both")
        if synchronous not in ("FULL", "NORMAL", "EXTRA"):
            raise ValueError(
                "agenttool: Journal: synchronous must be FULL, NORMAL or EXTRA,"
                f" got {synchronous!r}"
            )
        self.path = path
        self._connect = connect
        self._sqlite = connect is None
        self._synchronous = synchronous
        self._timeout = timeout
        if lease is None:
            raise ValueError("agenttool: Journal: lease must be a positive number of seconds")
        self.lease = _option("Journal", "lease", lease, (int, float), "seconds")
        self.max_outcome = _option("Journal", "max_outcome", max_outcome, (int,), "bytes")
        self._local = threading.local()
        self._opened: list[tuple[threading.Thread, Any]] = []  # each thread's connection
        self._opened_lock = threading.Lock()
        try:
            if paramstyle is None and connect is not None:
                import sys

                conn = self._connection()
                module = sys.modules.get(type(conn).__module__.split(".")[0])
                paramstyle = getattr(module, "paramstyle", "qmark")
            self._paramstyle = paramstyle or "qmark"
            self._create()
        except BaseException:  # not a journal, a newer schema...: nothing is left open
            self.close()
            raise

    def _connection(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._sqlite:
            import sqlite3

            assert self.path is not None
            conn = None
            try:
                # used by one thread only, but closed by whichever thread closes the journal
                conn = sqlite3.connect(
                    self.path,
                    timeout=self._timeout,
                    isolation_level=None,
                    check_same_thread=False,
                )
                self._switch_to_wal(conn)
                conn.execute(f"PRAGMA synchronous={self._synchronous}").fetchall()
            except sqlite3.DatabaseError as e:
                if conn is not None:  # opened, then refused: not left open
                    conn.close()
                if isinstance(e, sqlite3.OperationalError):  # a missing folder, no access
                    raise JournalError(f"agenttool: Journal: cannot open {self.path!r}: {e}") from e
                raise JournalError(
                    f"agenttool: Journal: {self.path!r} is not a journal: {e}"
                ) from e
        else:
            assert self._connect is not None
            conn = self._connect()
        self._local.conn = conn
        with self._opened_lock:  # the connections of threads that have ended are closed now
            gone = [c for t, c in self._opened if not t.is_alive()]
            self._opened = [(t, c) for t, c in self._opened if t.is_alive()]
            self._opened.append((threading.current_thread(), conn))
        for old in gone:
            _close_quietly(old)
        return conn

    def _switch_to_wal(self, conn: Any) -> None:
        """Put the file in WAL mode, waiting up to the journal's timeout for a writer: SQLite
        refuses the switch at once, without its busy wait, while another connection writes to
        a file still in rollback mode (a new file that another agent is opening too)."""
        import sqlite3
        import time

        deadline = time.monotonic() + self._timeout
        while True:
            try:
                # fetched, so no statement stays open (PyPy's sqlite3 then refuses a commit)
                conn.execute("PRAGMA journal_mode=WAL").fetchall()
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.005)

    def _sql(self, text: str) -> str:
        if self._paramstyle in ("format", "pyformat"):
            return text.replace("?", "%s")
        return text

    def _write(self, steps: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        """Run ``steps`` in one transaction taken for writing (BEGIN IMMEDIATE on SQLite) and
        commit it; the rows of the last step's query come back."""
        return self._transaction(lambda execute: [execute(*step) for step in steps][-1][0])

    def _transaction(self, body: Callable[[_Execute], _T]) -> _T:
        """Run ``body(execute)`` in one transaction taken for writing (BEGIN IMMEDIATE on
        SQLite) and commit it; ``execute(text, params)`` runs a statement and returns its rows
        and the driver's rowcount, so a body can choose its next statement by what the last
        one did.  Any failure rolls the transaction back and raises JournalError."""
        conn = self._connection()
        sqlite = self._sqlite

        def execute(text: str, params: tuple[Any, ...]) -> tuple[list[Any], int]:
            # a cursor per statement, closed before the commit (PyPy); sqlite3's execute makes
            # it in C, with the statement (0.8 us less per statement than cursor() and execute)
            if sqlite:
                cur = conn.execute(text, params)
            else:
                cur = conn.cursor()
                cur.execute(self._sql(text), params)
            rows = list(cur.fetchall()) if cur.description else []
            count = getattr(cur, "rowcount", -1)
            cur.close()
            return rows, count

        try:
            if self._sqlite:
                conn.execute("BEGIN IMMEDIATE")
            done = body(execute)
            if self._sqlite:
                conn.execute("COMMIT")
            else:
                conn.commit()
        except Exception as e:
            try:
                if self._sqlite:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                else:
                    conn.rollback()
            except Exception:
                pass
            if isinstance(e, JournalError):
                raise
            raise JournalError(
                f"agenttool: Journal: cannot write {self.path or 'the database'}: {e}"
            ) from e
        return done

    def _read(self, text: str, params: tuple[Any, ...] = ()) -> list[Any]:
        conn = self._connection()
        cur = conn.cursor()
        try:
            cur.execute(self._sql(text), params)
            rows = list(cur.fetchall())
            cur.close()
            if not self._sqlite:
                conn.commit()
        except Exception as e:
            raise JournalError(
                f"agenttool: Journal: cannot read {self.path or 'the database'}: {e}"
            ) from e
        return rows

    def _create(self) -> None:
        """Make the tables if they are missing and check the schema's version.  Two agents
        making them at once may collide (PostgreSQL's CREATE TABLE IF NOT EXISTS can fail on
        its catalog while the other's transaction commits): the loser tries again and finds
        them made."""
        for attempt in (1, 2, 3):
            try:
                self._make_tables()
                break
            except JournalError:
                if attempt == 3:
                    raise
        rows = self._read("SELECT v FROM agenttool_meta WHERE k = 'schema'")
        if rows and int(rows[0][0]) > _JOURNAL_SCHEMA:
            raise JournalError(
                f"agenttool: Journal: schema {rows[0][0]} was written by a newer agenttool"
                f" (this one reads {_JOURNAL_SCHEMA})"
            )
        if not rows or int(rows[0][0]) < _JOURNAL_SCHEMA:  # new, or schema 1 (no records)
            self._write(  # an upsert: another agent may be writing the same row
                [
                    (
                        "INSERT INTO agenttool_meta (k, v) VALUES ('schema', ?)"
                        " ON CONFLICT (k) DO UPDATE SET v = excluded.v",
                        (str(_JOURNAL_SCHEMA),),
                    ),
                ]
            )

    def _make_tables(self) -> None:
        self._write(
            [
                (
                    "CREATE TABLE IF NOT EXISTS agenttool_meta"
                    " (k TEXT PRIMARY KEY, v TEXT NOT NULL)",
                    (),
                ),
                (
                    "CREATE TABLE IF NOT EXISTS agenttool_runs (run TEXT PRIMARY KEY, owner TEXT,"
                    " expires DOUBLE PRECISION, created DOUBLE PRECISION NOT NULL)",
                    (),
                ),
                (
                    "CREATE TABLE IF NOT EXISTS agenttool_calls"
                    " (run TEXT NOT NULL, call_id TEXT NOT NULL,"
                    " tool TEXT NOT NULL, definition_hash TEXT NOT NULL, args_hash TEXT NOT NULL,"
                    " idem_key TEXT NOT NULL, status TEXT NOT NULL, outcome TEXT,"
                    " started DOUBLE PRECISION NOT NULL, PRIMARY KEY (run, call_id))",
                    (),
                ),
                (  # a ResultCache(journal=...)'s entries: outcomes as the calls keep them
                    "CREATE TABLE IF NOT EXISTS agenttool_cache (k TEXT PRIMARY KEY,"
                    " outcome TEXT NOT NULL, expires DOUBLE PRECISION NOT NULL)",
                    (),
                ),
                (
                    "CREATE TABLE IF NOT EXISTS agenttool_records"
                    " (run TEXT NOT NULL, call_id TEXT NOT NULL, seq INTEGER NOT NULL,"
                    " ns TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run, call_id, seq))",
                    (),
                ),
                (  # read_output handles: a part (-1: the whole text) of a call's full_output
                    "CREATE TABLE IF NOT EXISTS agenttool_pages (handle TEXT PRIMARY KEY,"
                    " run TEXT NOT NULL, call_id TEXT NOT NULL, part INTEGER NOT NULL,"
                    " cut_to INTEGER NOT NULL)",
                    (),
                ),
            ]
        )

    def hold(self, run: str, owner: str, lease: float | None = None) -> None:
        """Take or renew the lease on ``run`` for ``owner``; a live lease of another owner
        raises JournalError.  An expired lease is taken over, and so is one whose owner was
        an executor's process on this host that no longer exists (it was killed)."""
        import time

        if not isinstance(run, str):
            raise TypeError(f"agenttool: Journal: a run id is a str, got {run!r}")
        lease = self.lease if lease is None else lease
        now = time.time()
        rows = self._write(
            [
                (
                    "INSERT INTO agenttool_runs (run, owner, expires, created) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (run) DO UPDATE SET owner = excluded.owner,"
                    " expires = excluded.expires"
                    " WHERE agenttool_runs.owner = excluded.owner OR agenttool_runs.expires < ?"
                    " OR agenttool_runs.owner IS NULL",
                    (run, owner, now + lease, now, now),
                ),
                ("SELECT owner FROM agenttool_runs WHERE run = ?", (run,)),
            ]
        )
        holder = rows[0][0]
        if holder != owner and _dead_owner(holder):
            rows = self._write(
                [
                    (
                        "UPDATE agenttool_runs SET owner = ?, expires = ? WHERE run = ?"
                        " AND owner = ?",
                        (owner, now + lease, run, holder),
                    ),
                    ("SELECT owner FROM agenttool_runs WHERE run = ?", (run,)),
                ]
            )
        if rows[0][0] != owner:
            raise JournalError(f"agenttool: Journal: run {run!r} is held by {rows[0][0]!r}")

    def release(self, run: str, owner: str) -> None:
        """Give up the lease on ``run`` if ``owner`` holds it."""
        self._write(
            [("UPDATE agenttool_runs SET owner = NULL WHERE run = ? AND owner = ?", (run, owner))]
        )

    def intent(
        self,
        run: str,
        call_id: str,
        tool: str,
        definition: str,
        args: dict[str, Any],
        approval: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Make the call's intent durable, or read the one already there: a dict with
        ``status`` (intent, done, uncertain, resolved), ``key`` (minted once), ``outcome`` and
        ``definition_changed``.  Other arguments under the same call id raise JournalError.
        An ``approval`` (who answered, how, the hash of the arguments it let run) is written
        in the same transaction, as the call's :data:`APPROVAL_RECORD` record: consumed with
        the intent, so it never covers another attempt."""
        import time
        import uuid

        args_hash = _args_hash(args)
        minted = uuid.uuid4().hex  # the call's key, if this is its first intent

        def write(execute: _Execute) -> list[Any] | None:
            _, inserted = execute(
                "INSERT INTO agenttool_calls (run, call_id, tool, definition_hash, args_hash,"
                " idem_key, status, outcome, started)"
                " VALUES (?, ?, ?, ?, ?, ?, 'intent', NULL, ?)"
                " ON CONFLICT (run, call_id) DO NOTHING",
                (run, call_id, tool, definition, args_hash, minted, time.time()),
            )
            if approval is not None:
                guard = (tool, args_hash)  # not for a call id journaled with other arguments
                execute(*_record_insert(run, call_id, APPROVAL_RECORD, _dumps(approval), guard))
            if inserted == 1:  # the driver says the row is the one just written: no read-back
                return None
            rows, _ = execute(  # the intent an earlier attempt wrote (or ours: rowcount -1)
                "SELECT tool, definition_hash, args_hash, idem_key, status, outcome"
                " FROM agenttool_calls WHERE run = ? AND call_id = ?",
                (run, call_id),
            )
            return rows

        rows = self._transaction(write)
        if rows is None:
            return {"status": "intent", "key": minted, "outcome": None, "definition_changed": False}
        old_tool, old_def, old_args, key, status, outcome = rows[0]
        if old_tool != tool or old_args != args_hash:
            raise JournalError(
                f"agenttool: Journal: call {call_id!r} of run {run!r} was journaled with other"
                " arguments or another tool; refused"
            )
        return {
            "status": status,
            "key": key,
            "outcome": None if outcome is None else json.loads(outcome),
            "definition_changed": old_def != definition,
        }

    def outcome(
        self,
        run: str,
        call_id: str,
        outcome: dict[str, Any],
        status: str = "done",
        pages: Sequence[tuple[str, int, int]] = (),
    ) -> None:
        """Make the call's outcome (a JSON object) durable, with the ``read_output`` handles
        of its cut text (handle, the part of its ``full_output`` or -1, the limit it was cut
        to); one over ``max_outcome`` bytes raises JournalError naming its size (SQLite's own
        limit on a value is 1 GB)."""
        text = _OUTCOME_ENCODER.encode(outcome)
        size = len(text.encode("utf-8"))
        if size > self.max_outcome:
            raise JournalError(
                f"agenttool: Journal: the outcome of call {call_id!r} is {size} bytes, over the"
                f" journal's max_outcome of {self.max_outcome}"
            )
        self._write(
            [
                (
                    "UPDATE agenttool_calls SET status = ?, outcome = ?"
                    " WHERE run = ? AND call_id = ?",
                    (status, text, run, call_id),
                ),
                *(  # an earlier attempt's handles go with the output they read
                    [("DELETE FROM agenttool_pages WHERE run = ? AND call_id = ?", (run, call_id))]
                    if pages
                    else []
                ),
                *(
                    (
                        "INSERT INTO agenttool_pages (handle, run, call_id, part, cut_to)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (handle, run, call_id, part, cut_to),
                    )
                    for handle, part, cut_to in pages
                ),
            ]
        )

    def page(self, handle: str) -> tuple[str, int] | None:
        """The whole text a ``read_output`` handle names and the limit it was cut to, from
        its call's stored outcome; None when the journal has no such handle."""
        rows = self._read(
            "SELECT p.part, p.cut_to, c.outcome FROM agenttool_pages p JOIN agenttool_calls c"
            " ON c.run = p.run AND c.call_id = p.call_id WHERE p.handle = ?",
            (handle,),
        )
        if not rows or rows[0][2] is None:
            return None
        part, cut_to, outcome = int(rows[0][0]), int(rows[0][1]), json.loads(rows[0][2])
        whole = outcome.get("full_output")
        if part >= 0:
            parts = whole if isinstance(whole, list) else []
            whole = parts[part].get("text") if part < len(parts) else None
        return (whole, cut_to) if isinstance(whole, str) else None

    def cached(self, key: str) -> dict[str, Any] | None:
        """The outcome a result cache stored under ``key``, or None (absent or expired)."""
        import time

        rows = self._read(
            "SELECT outcome FROM agenttool_cache WHERE k = ? AND expires > ?", (key, time.time())
        )
        return json.loads(rows[0][0]) if rows else None

    def cache(self, key: str, outcome: dict[str, Any], ttl: float, max_entries: int) -> None:
        """Store a result cache's ``outcome`` under ``key`` for ``ttl`` seconds; the expired
        entries go, then the oldest beyond ``max_entries``."""
        import time

        text = _OUTCOME_ENCODER.encode(outcome)
        if len(text.encode("utf-8")) > self.max_outcome:
            raise JournalError(f"agenttool: Journal: a cached result is over {self.max_outcome}")
        now = time.time()
        self._write(
            [
                (
                    "INSERT INTO agenttool_cache (k, outcome, expires) VALUES (?, ?, ?)"
                    " ON CONFLICT (k) DO UPDATE SET outcome = excluded.outcome,"
                    " expires = excluded.expires",
                    (key, text, now + ttl),
                ),
                ("DELETE FROM agenttool_cache WHERE expires <= ?", (now,)),
                (
                    "DELETE FROM agenttool_cache WHERE k NOT IN (SELECT k FROM agenttool_cache"
                    " ORDER BY expires DESC, k LIMIT ?)",
                    (max_entries,),
                ),
            ]
        )

    def cached_count(self) -> int:
        """How many result cache entries have not expired."""
        import time

        rows = self._read("SELECT COUNT(*) FROM agenttool_cache WHERE expires > ?", (time.time(),))
        return int(rows[0][0])

    def snapshot(self, run: str) -> dict[str, dict[str, Any]]:
        """What the journal holds for ``run``, by call id: ``tool``, ``definition`` (its
        hash), ``args_hash``, ``key``, ``status`` and ``outcome``; read once as a batch
        begins (the batch's lease keeps it current)."""
        rows = self._read(
            "SELECT call_id, tool, definition_hash, args_hash, idem_key, status, outcome"
            " FROM agenttool_calls WHERE run = ?",
            (run,),
        )
        return {
            r[0]: {
                "tool": r[1],
                "definition": r[2],
                "args_hash": r[3],
                "key": r[4],
                "status": r[5],
                "outcome": None if r[6] is None else json.loads(r[6]),
            }
            for r in rows
        }

    def record(self, run: str, call_id: str, record: Record) -> None:
        """Make one of the call's records durable, after those it wrote before."""
        self._write([_record_insert(run, call_id, record.ns, record.data)])

    def records(self, run: str, call_id: str) -> list[Record]:
        """The records the call wrote, over all its attempts, in order."""
        rows = self._read(
            "SELECT ns, data FROM agenttool_records WHERE run = ? AND call_id = ? ORDER BY seq",
            (run, call_id),
        )
        return [Record(r[0], r[1]) for r in rows]

    def mark_uncertain(self, run: str, call_id: str) -> None:
        """Record that an interrupted call may not be run again blindly."""
        self._write(
            [
                (
                    "UPDATE agenttool_calls SET status = 'uncertain'"
                    " WHERE run = ? AND call_id = ? AND status = 'intent'",
                    (run, call_id),
                )
            ]
        )

    def runs(self) -> list[dict[str, Any]]:
        """Every run: its id, owner (None when released), lease expiry and creation time."""
        rows = self._read(
            "SELECT run, owner, expires, created FROM agenttool_runs ORDER BY created, run"
        )
        return [{"run": r[0], "owner": r[1], "expires": r[2], "created": r[3]} for r in rows]

    def calls(self, run: str) -> list[dict[str, Any]]:
        """What happened in ``run``: each call's id, tool, status, key and outcome."""
        rows = self._read(
            "SELECT call_id, tool, status, idem_key, outcome FROM agenttool_calls"
            " WHERE run = ? ORDER BY started, call_id",
            (run,),
        )
        return [
            {
                "call_id": r[0],
                "tool": r[1],
                "status": r[2],
                "key": r[3],
                "outcome": None if r[4] is None else json.loads(r[4]),
            }
            for r in rows
        ]

    def forget(self, run: str) -> None:
        """Delete ``run``, its calls, their records and their ``read_output`` handles."""
        self._write(
            [
                ("DELETE FROM agenttool_pages WHERE run = ?", (run,)),
                ("DELETE FROM agenttool_records WHERE run = ?", (run,)),
                ("DELETE FROM agenttool_calls WHERE run = ?", (run,)),
                ("DELETE FROM agenttool_runs WHERE run = ?", (run,)),
            ]
        )

    def prune(self, older_than: float) -> int:
        """Delete the runs created more than ``older_than`` seconds ago (and the result
        cache's expired entries); how many runs went."""
        import time

        self._write([("DELETE FROM agenttool_cache WHERE expires <= ?", (time.time(),))])
        cutoff = time.time() - older_than
        old = [
            r[0] for r in self._read("SELECT run FROM agenttool_runs WHERE created < ?", (cutoff,))
        ]
        for run in old:
            self.forget(run)
        return len(old)

    def close(self) -> None:
        """Close every connection this journal opened, on any thread; a later use opens a
        new one."""
        with self._opened_lock:
            opened, self._opened = self._opened, []
        self._local = threading.local()
        for _, conn in opened:
            _close_quietly(conn)


class Uncertain(Exception):
    """A journaled call that a crash interrupted after its intent, which may not run again
    blindly (its replay is UNKNOWN, or its tool's definition changed): the host settles it
    with ``resolve=`` (see :class:`Journal`).  It carries what the host needs to decide."""

    def __init__(
        self,
        call_id: str,
        tool: str,
        arguments: Any,
        key: str,
        records: list[Record],
        why: str = "may have taken effect",
    ) -> None:
        super().__init__(
            f'call "{call_id}" of tool "{tool}" was interrupted in an earlier attempt and {why};'
            " it was not run again: the host must resolve it"
        )
        self.call_id = call_id
        self.tool = tool
        self.arguments = arguments
        self.key = key
        self.records = records


# The library's errors a replayed outcome is raised as again (any other reads as RuntimeError,
# so an error policy treats it as it treated the tool's own exception).
_REPLAYED_ERRORS: dict[str, type[BaseException]] = {
    "ToolError": ToolError,
    "Cancelled": Cancelled,
    "TimeoutError": TimeoutError,
}


def _stored(result: Result | None, error: BaseException | None) -> dict[str, Any]:
    """A call's outcome as the journal keeps it (the model's view; details stay the host's)."""
    if error is not None:
        return {"error": error_message(error), "type": type(error).__name__}
    assert result is not None
    out: dict[str, Any] = {"output": result.output}
    if result.structured is not None:
        out["structured"] = result.structured
    if result.terminate:
        out["terminate"] = True
    if result.full_output is not None:
        out["full_output"] = result.full_output
    return out


def _restored(outcome: dict[str, Any]) -> tuple[Result | None, BaseException | None]:
    """A stored outcome as the job's result or error again."""
    if "error" in outcome:
        kind = _REPLAYED_ERRORS.get(outcome.get("type", ""), RuntimeError)
        return None, kind(outcome["error"])
    return (
        Result(
            outcome.get("output", ""),
            structured=outcome.get("structured"),
            terminate=outcome.get("terminate", False),
            full_output=outcome.get("full_output"),
        ),
        None,
    )


APPROVAL_RECORD = "agenttool:approval"
"""The namespace of the record a journal writes with a call's intent when an approval let
that attempt run: ``{"by": "approver" | "approvals", "answer": "allowed" | "edited",
"args_hash": ...}`` (the RFC 8785 hash of the arguments that ran)."""


def _record_insert(
    run: str, call_id: str, ns: str, data: str, intent: tuple[str, str] | None = None
) -> tuple[str, tuple[Any, ...]]:
    """The statement that appends a record to a call's, after those written before; with
    ``intent`` (tool, arguments' hash), only when the call's intent is that one."""
    text = (
        "INSERT INTO agenttool_records (run, call_id, seq, ns, data)"
        " SELECT ?, ?, COALESCE(MAX(seq), 0) + 1, ?, ? FROM agenttool_records"
        " WHERE run = ? AND call_id = ?"
    )
    params: tuple[Any, ...] = (run, call_id, ns, data, run, call_id)
    if intent is not None:
        text += (
            " HAVING EXISTS (SELECT 1 FROM agenttool_calls"
            " WHERE run = ? AND call_id = ? AND tool = ? AND args_hash = ?)"
        )
        params += (run, call_id, *intent)
    return text, params


class _RunJournal:
    """One batch's use of a journal under a run id: the run's lease (taken as the batch
    begins, renewed while it runs), what the journal held for the run then, and the writes
    of each call's life (the rules above the Journal class)."""

    def __init__(
        self,
        journal: Journal,
        run: str,
        resolve: collections.abc.Mapping[str, Any] | None,
        jobs: list[Job],
    ) -> None:
        if not isinstance(run, str) or not run:
            raise TypeError(f"agenttool: a journaled run needs a run id, a non-empty str: {run!r}")
        self.journal = journal
        self.run = run
        self.resolve = dict(resolve or {})
        self.owner = _lease_owner()
        self.known: dict[str, dict[str, Any]] = {}
        self.stopped = threading.Event()
        self.renewer: threading.Thread | None = None
        self.hashes: dict[int, tuple[Tool, str]] = {}  # definition_hash by tool, for the batch
        seen: dict[str, int] = {}
        for job in jobs:
            seen[job.call.id] = seen.get(job.call.id, 0) + 1
        self.ambiguous = {i for i, n in seen.items() if n > 1 or not i}

    def begin(self) -> None:
        """Take the run's lease (JournalError when another live owner holds it) and read
        what the journal holds for it."""
        self.journal.hold(self.run, self.owner)
        self.known = self.journal.snapshot(self.run)
        self.renewer = threading.Thread(target=self._renew, name="agenttool-lease", daemon=True)
        self.renewer.start()

    def _renew(self) -> None:
        while not self.stopped.wait(self.journal.lease / 3):
            try:
                self.journal.hold(self.run, self.owner)
            except Exception as exc:  # noqa: BLE001 - logged; the next renewal tries again
                _log(_WARNING, f'run "{self.run}": the lease could not be renewed', exc)

    def end(self, release: bool) -> None:
        """Stop renewing; give the lease back when no tool of the batch still runs (else it
        expires, so nobody resumes the run while a late tool may still act)."""
        self.stopped.set()
        if release and self.renewer is not None:
            try:
                self.journal.release(self.run, self.owner)
            except Exception as exc:  # noqa: BLE001 - the lease then expires on its own
                _log(_WARNING, f'run "{self.run}": the lease could not be released', exc)

    def earlier(
        self, t: Tool, call: Call, name: str
    ) -> tuple[Result | None, BaseException | None, bool] | None:
        """What an earlier attempt of the run decides for this call, before it is approved:
        ``None`` when the call runs (new to the run, or allowed to run again), else the job's
        outcome and whether it is one the journal or the host gave (stored, reconciled,
        resolved) rather than a refusal (Uncertain, a clash)."""
        if call.id in self.ambiguous:
            return (
                None,
                _says(
                    ValueError(
                        f'agenttool: call "{call.id}" of tool "{name}" was not run: a journaled'
                        " run needs each call's id, unique in the run"
                    )
                ),
                False,
            )
        row = self.known.get(call.id)
        if row is None:
            return None
        args = _parse_arguments(call.args)
        if row["tool"] != name or row["args_hash"] != _args_hash(args):
            return (
                None,
                _says(
                    JournalError(
                        f'agenttool: call "{call.id}" was not run: run "{self.run}" journaled it'
                        " with other arguments or another tool"
                    )
                ),
                False,
            )
        changed = row["definition"] != self.definition(t)
        if row["outcome"] is not None and not changed:
            return (*_restored(row["outcome"]), True)
        answer = self.resolve.get(call.id)
        if answer is True:
            return None
        if isinstance(answer, Result) or (isinstance(answer, str) and answer):
            error = ToolError(answer) if isinstance(answer, str) else None
            result = answer if isinstance(answer, Result) else None
            self.journal.outcome(self.run, call.id, _stored(result, error), "resolved")
            return result, error, True
        if answer is not None:
            return (
                None,
                TypeError(
                    f'agenttool: resolve["{call.id}"] must be a Result, True or a message, got'
                    f" {answer!r}"
                ),
                False,
            )
        records = self.journal.records(self.run, call.id)
        reconcile = getattr(t, "reconcile", None)
        if callable(reconcile) and not changed:
            settled = reconcile(args, row["key"], records)
            if isinstance(settled, Result):
                self.journal.outcome(self.run, call.id, _stored(settled, None), "resolved")
                return settled, None, True
        replay = Replay.UNKNOWN if changed else replay_of(t, args)
        if replay is not Replay.UNKNOWN:
            return None  # it runs again, with the key its intent holds
        self.journal.mark_uncertain(self.run, call.id)
        why = "its tool's definition has changed since" if changed else "may have taken effect"
        return None, _says(Uncertain(call.id, name, args, row["key"], records, why)), False

    def definition(self, t: Tool) -> str:
        """The tool's :func:`definition_hash`, computed once per tool for the batch."""
        known = self.hashes.get(id(t))
        if known is None or known[0] is not t:
            known = self.hashes[id(t)] = (t, definition_hash(t))
        return known[1]

    def intent(
        self, t: Tool, asked: Call, name: str, approval: dict[str, Any] | None = None
    ) -> str:
        """Make the call's intent durable before its tool starts, under the arguments the
        model wrote (``asked``, the call's identity in the run, whatever an approval or a
        rewrite runs instead), with the approval this attempt runs under; the key the journal
        minted for it (once, kept across attempts)."""
        args = _parse_arguments(asked.args)
        got = self.journal.intent(self.run, asked.id, name, self.definition(t), args, approval)
        return str(got["key"])

    def outcome(
        self,
        call_id: str,
        result: Result | None,
        error: BaseException | None,
        pages: Sequence[tuple[str, int, int]] = (),
    ) -> None:
        """Make the call's outcome durable before its final event, with the ``read_output``
        handles of its cut output; a failure is logged and the result still goes out (the
        tool ran; a resume will ask the host)."""
        try:
            stored = _stored(result, error)
            if pages:
                self.journal.outcome(self.run, call_id, stored, pages=pages)
            else:  # as before pages existed: a subclass's outcome() may not take them
                self.journal.outcome(self.run, call_id, stored)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            _log(_ERROR, f'run "{self.run}": the outcome of call "{call_id}" was not saved', exc)

    def recorder(self, call_id: str, host: Recorder | None) -> Recorder:
        """The call's recorder: each record made durable in the journal, then the host's."""

        def record(r: Record) -> None:
            self.journal.record(self.run, call_id, r)
            if host is not None:
                host(r)

        return record


class EventStream:
    """The events of a batch as :meth:`Executor.execute` yields them: an iterator, and a
    context manager whose exit says how the consumer left.  Leaving the ``with`` block by an
    exception (Ctrl-C in the loop's body) cancels the batch without waiting for its running
    tools, as an exception while waiting for an event does; leaving it otherwise (``break``,
    the events all taken) is closing: the batch is cancelled and its running tools are
    waited for, each at most until its timeout."""

    __slots__ = ("_events",)

    def __init__(self, events: Generator[Event, None, None]) -> None:
        self._events = events

    def __iter__(self) -> Iterator[Event]:
        return self._events  # a for loop runs the generator itself, at no cost per event

    def __next__(self) -> Event:
        return next(self._events)

    def close(self) -> None:
        """Stop consuming: as a ``break`` does (see the class)."""
        self._events.close()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            self.close()
            return
        try:
            self._events.throw(exc)
        except BaseException:  # noqa: BLE001, S110 - exc itself, raised again by the with
            pass


class Executor:
    """Runs a batch of calls on threads (or, under :meth:`aexecute`, async tools as tasks on
    the caller's loop), with the ordering rules a model can rely on.

    - At most ``max_parallel`` tools of this executor run at once (8 by default; 0 or less
      means 8), across every batch it runs at the same time.  A batch run from inside one of
      its calls (an agent as a tool) is bounded on its own, since its parent holds a place.
    - A serial batch runs one call at a time in model order: asked for with
      ``sequential=True``, by ``max_parallel == 1``, or by any sequential tool in the batch;
      a sequential tool's call never runs beside another call of this executor.
    - Otherwise calls naming one resource form a chain that runs in model order, and every
      other call (a missing tool included) is a chain of its own; :meth:`chains` shows it.
      Two calls naming one resource never run at once, in one batch or in two.  The next
      call of a chain starts only after the consumer has taken the previous one's final
      event (the generator resumed past it) and the previous tool has returned.
    - ``timeout`` (seconds) is the default for tools that set none: a call running longer
      completes at once with ``tool "x" timed out after 30 s`` and sees :func:`cancelled`.
      ``max_output`` (characters) is the default limit on what the model sees of an output
      or an error message (:attr:`Result.full_output` keeps the whole); ``pageable=True``
      is the default for tools that do not set ``pageable``: see :meth:`ToolSet.pageable`.
    - ``cache=True`` (or a :class:`ResultCache`) answers the calls of ``cacheable`` tools
      whose ``replay`` reads SAFE from earlier successful results of the same definition and
      arguments; such a final event has ``cached=True``.  With ``journal`` given here,
      ``cache=True`` keeps the entries in the journal's database.
    - ``tracer`` (an OpenTelemetry ``Tracer``, or anything with its ``start_as_current_span``)
      gives each call an ``execute_tool <name>`` span with the GenAI conventions' attributes;
      ``record_content=True`` adds the arguments and the result.
    - ``on_start(job)`` runs on the job's thread once it has its slot and turn, with the call
      installed, before the tool; raising there completes the job with that error.
    - Every job completes exactly once, whatever its tool, its tool's properties or its
      exception's ``__str__`` raise; the executor itself never fails because of a tool.

    ``recorder`` receives :func:`write_record` calls and ``elicitor`` answers :func:`elicit`
    for every call of the batches this executor runs; ``inject`` holds the values of the
    tools' ``Annotated[T, Inject("key")]`` parameters, by key.

    ``journal`` (a :class:`Journal`) makes each batch durable under the run id its
    ``execute(jobs, run=...)`` names: see the rules above the Journal class.

    ``approver(job)`` decides each call whose tool needs approval (:func:`needs_approval_of`),
    on the job's thread before ``on_start``, with the call installed (so it may :func:`elicit`):
    ``True`` runs it, ``False`` or a string denies it (the string is the model's message), a
    dict runs it with those arguments once they validate; an approver that raises denies.
    Without an approver such calls are denied, never run.  ``errors`` is the error policy
    (``"full"``, the default; ``"redacted"``; or a function of the exception returning the
    model's message): see :class:`ToolError`.  ``lenient=True`` repairs objects and arrays
    sent as JSON strings for every tool that does not set ``lenient`` itself.
    """

    def __init__(
        self,
        max_parallel: int = DEFAULT_MAX_PARALLEL,
        sequential: bool = False,
        recorder: Recorder | None = None,
        elicitor: Elicitor | None = None,
        on_start: Callable[[Job], None] | None = None,
        inject: collections.abc.Mapping[str, Any] | None = None,
        approver: Callable[[Job], Any] | None = None,
        errors: ErrorPolicy = "full",
        lenient: bool = False,
        timeout: float | None = None,
        max_output: int | None = None,
        pageable: bool = False,
        cache: bool | ResultCache | None = None,
        tracer: Any = None,
        record_content: bool = False,
        workers: Any = None,
        journal: Journal | None = None,
    ) -> None:
        _check_errors(errors)
        if journal is not None and not isinstance(journal, Journal):
            raise TypeError(f"agenttool: Executor: journal must be a Journal, got {journal!r}")
        self.journal = journal
        if workers is not None and not callable(getattr(workers, "submit", None)):
            raise TypeError(
                "agenttool: Executor: workers must be a concurrent.futures.Executor, got"
                f" {workers!r}"
            )
        self.workers = workers
        self.max_parallel = max_parallel if max_parallel > 0 else DEFAULT_MAX_PARALLEL
        self.sequential = sequential
        self.recorder = recorder
        self.elicitor = elicitor
        self.on_start = on_start
        self.inject = dict(inject or {})  # values for Inject("key") parameters (tools section)
        self.approver = approver
        self.errors = errors
        self.lenient = lenient

        self.timeout = _option("Executor", "timeout", timeout, (int, float), "seconds")
        self.max_output = _option("Executor", "max_output", max_output, (int,), "characters")
        self.pageable = pageable
        self.tracer = tracer
        self.record_content = record_content
        if cache is not None and not isinstance(cache, (bool, ResultCache)):
            raise TypeError(
                f"agenttool: Executor: cache must be True or a ResultCache, got {cache!r}"
            )
        self._result_cache = (  # cache=True keeps its entries in the journal when there is one
            cache
            if isinstance(cache, ResultCache)
            else ResultCache(journal=journal)
            if cache
            else None
        )
        self._bounds_now = _Bounds(self.max_parallel)

    def _bounds(self) -> _Bounds:
        """The bounds shared by this executor's batches (fresh after a fork, or once
        ``max_parallel`` was changed)."""
        bounds = self._bounds_now
        if bounds.generation != _fork_generation or bounds.limit != self.max_parallel:
            bounds = self._bounds_now = _Bounds(self.max_parallel)
        return bounds

    def chains(self, jobs: Sequence[Job]) -> list[list[int]]:
        """The grouping :meth:`execute` runs: lists of job indexes, each run in order."""
        return self._chains([_job_bounds(j) for j in jobs])

    def _chains(self, props: list[tuple[bool, str]]) -> list[list[int]]:
        if not props:
            return []
        if self.sequential or self.max_parallel == 1 or any(alone for alone, _ in props):
            return [list(range(len(props)))]
        chains: list[list[int]] = []
        by_resource: dict[str, list[int]] = {}
        for i, (_, resource) in enumerate(props):
            if not resource:
                chains.append([i])
            elif resource in by_resource:
                by_resource[resource].append(i)
            else:
                by_resource[resource] = [i]
                chains.append(by_resource[resource])
        return chains

    def execute(
        self,
        jobs: Sequence[Job],
        cancel: threading.Event | None = None,
        *,
        run: str | None = None,
        journal: Journal | None = None,
        resolve: collections.abc.Mapping[str, Any] | None = None,
    ) -> EventStream:
        """Run the batch, yielding its events on the caller's thread one at a time: progress
        as it comes (the latest update per job when the consumer is slower), and one final
        event per job in completion order.

        Setting ``cancel`` cancels the batch: running tools see :func:`cancelled`, unstarted
        jobs complete with :class:`Cancelled`, and every job still gets its final event.
        Closing the generator early cancels the same way and waits for the running tools
        (each at most until its timeout); an exception in the consumer (Ctrl-C) cancels and
        does not wait.  No tool starts after either.  Python cannot tell a generator whether
        it is closed by a ``break`` or by an exception raised in the loop's body, so consume
        it as ``with executor.execute(jobs) as events: for event in events: ...`` for a
        Ctrl-C there not to wait either (the events are a :class:`EventStream`).

        With a journal (this executor's, or ``journal`` over it) the batch is the run named
        ``run`` (an agent's turn), its calls keyed by call id; ``resolve`` settles the run's
        uncertain calls by call id.  Another live process holding the run raises
        :class:`JournalError` before any event.  On a thread running the host's event loop,
        which this would block, a batch with an ``async def`` tool raises ``RuntimeError``
        before any event: await :meth:`aexecute` there.
        """
        return EventStream(self._events(list(jobs), cancel, run, journal, resolve))

    def _events(
        self,
        jobs: list[Job],
        cancel: threading.Event | None,
        run: str | None,
        journal: Journal | None,
        resolve: collections.abc.Mapping[str, Any] | None,
    ) -> Generator[Event, None, None]:
        import queue

        if not jobs:
            return
        if _blocks_host_loop():
            for t in (job.tool for job in jobs):
                if t is not None and getattr(t, "_async", False) is True and not is_isolated(t):
                    raise _host_loop_refusal(t.name)
        outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        batch = _Batch(self, jobs, outbox.put, None, self._run_journal(jobs, run, journal, resolve))
        pending = len(jobs)
        try:
            batch.start()
            while pending:
                event = _next_event(batch, outbox, cancel)
                if event.final:
                    pending -= 1
                yield event
                if event.final:
                    if cancel is not None and cancel.is_set():
                        batch.cancel()
                    batch.taken(batch.states[event.index])
        except GeneratorExit:
            batch.cancel()
            batch.settle()
            raise
        except BaseException:
            batch.cancel()
            raise
        finally:
            batch.end_journal()

    async def aexecute(
        self,
        jobs: Sequence[Job],
        cancel: Any = None,
        *,
        run: str | None = None,
        journal: Journal | None = None,
        resolve: collections.abc.Mapping[str, Any] | None = None,
    ) -> AsyncIterator[Event]:
        """:meth:`execute` for an asyncio host: the same events and rules (the journal's
        too), as an async generator.  ``async def`` tools run as tasks on the running loop
        (objects bound to it work, and they take no thread); other tools run on the worker
        pool.

        ``cancel`` is a ``threading.Event`` or an ``asyncio.Event``; cancelling the task that
        consumes the events, or closing the generator, cancels the batch the same way (without
        waiting for running thread tools).
        """
        import asyncio

        jobs = list(jobs)
        if not jobs:
            return
        loop = asyncio.get_running_loop()
        inbox: collections.deque[Any] = collections.deque()
        waiting: list[Any] = [None]  # the future the consumer awaits while the inbox is empty

        def deliver(item: Any) -> None:
            inbox.append(item)
            if waiting[0] is not None:
                _wake(waiting[0])

        def post(item: Any) -> None:
            if threading.get_ident() == batch.loop_thread:
                deliver(item)
                return
            try:
                loop.call_soon_threadsafe(deliver, item)
            except RuntimeError:  # the loop is closed: nobody reads the events any more
                pass

        batch = _Batch(self, jobs, post, loop, self._run_journal(jobs, run, journal, resolve))
        polled = cancel if isinstance(cancel, threading.Event) else None
        watcher = None
        if cancel is not None and polled is None:
            watcher = loop.create_task(cancel.wait())
            watcher.add_done_callback(lambda t: None if t.cancelled() else batch.cancel())
        pending = len(jobs)
        try:
            batch.start()
            while pending:
                if polled is not None and polled.is_set():
                    batch.cancel()
                wait = batch.expire()
                if not inbox:
                    if polled is not None and not batch.cancelled:
                        wait = _POLL_SECONDS if wait is None else min(wait, _POLL_SECONDS)
                    waiting[0] = waiter = loop.create_future()
                    timer = loop.call_later(wait, _wake, waiter) if wait is not None else None
                    try:
                        await waiter
                    finally:
                        waiting[0] = None
                        if timer is not None:
                            timer.cancel()
                    continue
                event = batch.event_of(inbox.popleft())
                if event is None:
                    continue
                if event.final:
                    pending -= 1
                yield event
                if event.final:
                    if cancel is not None and cancel.is_set():
                        batch.cancel()
                    batch.taken(batch.states[event.index])
        except BaseException:
            batch.cancel()
            raise
        finally:
            if watcher is not None:
                watcher.cancel()
            batch.end_journal()

    def results(
        self,
        jobs: Sequence[Job],
        cancel: threading.Event | None = None,
        *,
        run: str | None = None,
        journal: Journal | None = None,
        resolve: collections.abc.Mapping[str, Any] | None = None,
    ) -> tuple[list[Result | None], list[BaseException | None]]:
        """Run the batch and return ``(results, errors)`` in job order: ``None`` in
        ``results`` where a job failed and in ``errors`` where it succeeded."""
        results: list[Result | None] = [None] * len(jobs)
        errors: list[BaseException | None] = [None] * len(jobs)
        with self.execute(jobs, cancel, run=run, journal=journal, resolve=resolve) as events:
            for event in events:
                if event.final:
                    results[event.index] = event.result
                    errors[event.index] = event.error
        return results, errors

    def _run_journal(
        self,
        jobs: list[Job],
        run: str | None,
        journal: Journal | None,
        resolve: collections.abc.Mapping[str, Any] | None,
    ) -> _RunJournal | None:
        """The batch's journal under ``run``, its lease taken, or None for a batch without."""
        journal = journal or self.journal
        if journal is None:
            if run is not None or resolve:
                raise ValueError("agenttool: run= and resolve= need a journal (journal=...)")
            return None
        if run is None:
            raise ValueError(
                "agenttool: a batch with a journal needs run=, the id of the agent's turn"
            )
        rj = _RunJournal(journal, run, resolve, jobs)
        rj.begin()
        return rj

    # ----- the per-job pipeline -------------------------------------------------------------

    def _perform(self, batch: _Batch, s: _JobState) -> None:
        """Run one job on this thread and complete it; nothing raised gets past here."""
        if not batch.claim(s):
            return  # its deadline passed while it waited for a thread
        s.thread = threading.current_thread()
        try:
            result, error = batch.context.copy().run(self._traced_job, batch, s)
        except BaseException as exc:  # noqa: BLE001 - the job still completes, once
            result, error = None, self._internal_failure(batch, s, exc)
        if s.late:
            _workers.reclaim()
        s.finish(result, error)
        batch._returned(s)

    def _traced_job(
        self, batch: _Batch, s: _JobState
    ) -> tuple[Result | None, BaseException | None]:
        """:meth:`_run_job`, inside the call's span when a tracer is given (see "traces")."""
        tracer = self.tracer or _run_tracer.get()
        if tracer is None:
            return self._run_job(batch, s)
        content = self.record_content
        with _call_span(tracer, batch.jobs[s.index], content) as span:
            token = _tracing.set(tracer)
            try:
                result, error = self._run_job(batch, s)
            finally:
                _tracing.reset(token)
            _end_span(span, s, result, error, content)
        return result, error

    def _run_job(self, batch: _Batch, s: _JobState) -> tuple[Result | None, BaseException | None]:
        """The per-job pipeline, for a tool run on this thread.  In order, each step that
        fails completing the job with its error:

        1. :meth:`_admit_job`: the call's scope installed, the tool's name and limits read,
           ``on_start`` run: the place for checks that may refuse a call or answer with the
           call to run instead;
        2. the tool's ``execute`` of that call (which checks the arguments) under the job's
           deadline; what it raises becomes the failure (:meth:`_failure`);
        3. :meth:`_complete_job`: the result checked and cut to ``max_output``.

        :meth:`_arun_job` runs the same steps around an async tool's task.
        """
        admitted = self._admit_job(batch, s)
        if isinstance(admitted, BaseException):
            return None, admitted
        if isinstance(admitted, Result):
            return admitted, None
        call, name, limit = admitted
        job = batch.jobs[s.index]
        assert job.tool is not None
        key = self._cache_key(job.tool, call)
        if key is not None and self._result_cache is not None:
            hit = self._result_cache.get(key)
            if hit is not None:
                s.cached = True
                return hit, None
        if not self._enter_tool(s):
            return None, _not_started(call)
        try:
            returned = job.tool.execute(call)
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: the job's failure
            return None, self._shown(self._failure(name, exc), name, limit)
        result, error = self._complete_job(name, returned, limit, self._keeper(s, job.tool))
        if key is not None and result is not None and self._result_cache is not None:
            self._result_cache.put(key, result)
        return result, error if error is None else self._shown(error, name, limit)

    async def _arun_job(self, batch: _Batch, s: _JobState) -> None:
        """Steps 1 to 3 of :meth:`_run_job` for an ``async def`` tool, as a task on the
        caller's loop (inside the call's span when traced); cancelling the task (cancel,
        timeout) completes the job as cancelled."""
        result: Result | None
        error: BaseException | None
        if not batch.claim(s):
            return  # its deadline passed before its task began
        try:
            tracer = self.tracer or _run_tracer.get()
            if tracer is None:
                result, error = await self._arun_steps(batch, s)
            else:
                content = self.record_content
                with _call_span(tracer, batch.jobs[s.index], content) as span:
                    token = _tracing.set(tracer)
                    try:
                        result, error = await self._arun_steps(batch, s)
                    finally:
                        _tracing.reset(token)
                    _end_span(span, s, result, error, content)
        except BaseException as exc:  # noqa: BLE001 - the job still completes, once
            result, error = None, self._internal_failure(batch, s, exc)
        s.finish(result, error)
        batch._returned(s)

    async def _arun_steps(
        self, batch: _Batch, s: _JobState
    ) -> tuple[Result | None, BaseException | None]:
        import asyncio

        admitted = self._admit_job(batch, s)
        if isinstance(admitted, BaseException):
            return None, admitted
        if isinstance(admitted, Result):
            return admitted, None
        call, name, limit = admitted
        job = batch.jobs[s.index]
        assert isinstance(job.tool, FunctionTool)
        key = self._cache_key(job.tool, call)
        cache = self._result_cache
        hit = cache.get(key) if key is not None and cache is not None else None
        if hit is not None:
            s.cached = True
            return hit, None
        if not self._enter_tool(s):
            return None, _not_started(call)
        try:
            value = job.tool._begin(call)
            if inspect.isawaitable(value):
                value = await value
            done = job.tool._result(value)
        except asyncio.CancelledError:
            return None, _says(Cancelled(f'call "{job.call.id}" was cancelled'))
        except BaseException as exc:  # noqa: BLE001 - the job's failure
            return None, self._shown(self._failure(name, exc), name, limit)
        result, error = self._complete_job(name, done, limit, self._keeper(s, job.tool))
        if error is not None:
            return None, self._shown(error, name, limit)
        if key is not None and result is not None and cache is not None:
            cache.put(key, result)
        return result, None

    def _admit_job(
        self, batch: _Batch, s: _JobState
    ) -> tuple[Call, str, int | None] | BaseException | Result:
        """Step 1: install the call's scope, ask the run's journal, approve, run ``on_start``
        and journal the intent; the call to run (a check placed here, such as an approval,
        may answer with another), the tool's name and output limit, or the outcome that
        completes the job instead (an error, or a result from the journal).  (Its timeout
        was read when it was let in: its clock runs from then.)"""
        job = batch.jobs[s.index]
        call = job.call
        assert s.cancellation is not None
        if s.cancellation.is_set:
            return _not_started(call)
        try:
            name = job.tool.name  # type: ignore[union-attr]
            if not isinstance(name, str):
                raise TypeError(f"its name is a {type(name).__name__}, not a str")
            timeout_of(job.tool)  # type: ignore[arg-type]
            limit = max_output_of(job.tool) or self.max_output  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - a broken tool fails its own call only
            error = RuntimeError(
                f'agenttool: the tool of call "{call.id}" cannot be used: {_exception_text(exc)}'
            )
            error.__cause__ = exc
            return _policy_error(error, self.errors, _safe_name(job.tool))  # its text is the tool's
        journal = batch.journal
        scope = _Scope(
            call,
            name,
            s.cancellation,
            self.recorder if journal is None else journal.recorder(call.id, self.recorder),
            self.elicitor,
            s.emit,
            loop=batch.loop,
            own_loop=batch.own_loop,
            host_loop=batch.host_loop,
            bounds=batch.bounds,
            inject=self.inject,
            workers=self.workers,
            journal=None if journal is None else journal.journal,
        )
        _scope.set(scope)  # in the job's own copy of the context, dropped with it
        # the call as the model wrote it: its identity in the journal, whatever runs instead
        asked = job.tool.asked if isinstance(job.tool, _Approved) else call
        if journal is not None:
            try:
                earlier = journal.earlier(job.tool, asked, name)  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - the journal or a reconcile failed
                return _not_run(call, "its run's journal could not be read", exc)
            if earlier is not None:
                done, failed, s.replayed = earlier
                return failed if failed is not None else done or Result("")
        try:
            job, answer = _approve(job, self.approver, self.lenient)
        except Exception as exc:  # noqa: BLE001 - a denial: the job's error
            return self._shown(exc, name, limit)
        if job.call is not call:
            call = _swap_call(job.call)
        if self.on_start is not None:
            try:
                self.on_start(job)
            except Exception as exc:  # noqa: BLE001 - a refusal: the job's error
                return self._shown(exc, name, limit)
            except BaseException as exc:  # noqa: BLE001
                refusal = RuntimeError(
                    f'agenttool: on_start for call "{call.id}" crashed: {_exception_text(exc)}'
                )
                refusal.__cause__ = exc
                return self._shown(refusal, name, limit)
        if journal is not None:
            approval = None
            if answer is not None:
                approval = {
                    "by": "approver",
                    "answer": "edited" if answer is not True else "allowed",
                }
            elif isinstance(job.tool, _Approved):
                approval = {"by": "approvals", "answer": "allowed"}
            if approval is not None:  # what ran, by its arguments' hash
                approval["args_hash"] = _args_hash(_parse_arguments(call.args))
            try:
                key = journal.intent(job.tool, asked, name, approval)  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - no intent, no run
                return _not_run(call, "its intent could not be journaled", exc)
            call = _swap_call(Call(call.id, call.args, key, call.on_update))
            s.intended = True
        return call, name, limit

    @staticmethod
    def _enter_tool(s: _JobState) -> bool:
        """Past its approval and ``on_start``, the job's tool is about to run: ``False`` when
        the job was cancelled or timed out meanwhile (cancel wins: the tool never runs)."""
        assert s.cancellation is not None
        with s.lock:
            if s.cancellation.is_set:
                return False
            s.in_tool = True
        return True

    def _shown(self, error: BaseException, name: str, limit: int | None) -> BaseException:
        """The job's error as the model may read it: under the error policy (see
        :class:`ToolError`), its message cut to the output limit."""
        return _limited(_policy_error(error, self.errors, name), limit)

    @staticmethod
    def _failure(name: str, exc: BaseException) -> BaseException:
        """What a tool raised, as the job's error: an ``Exception`` as it is, anything else
        (``SystemExit``, ``KeyboardInterrupt``) as a :class:`ToolCrash` caused by it."""
        scope = _scope.get()
        where = f'tool "{name}" (call "{scope.call.id}")' if scope is not None else f'tool "{name}"'
        if isinstance(exc, Exception):
            if not isinstance(exc, (ValidationError, ToolError, Cancelled)):
                _log(_WARNING, f"{where} failed: {_exception_text(exc)}", exc)
            return exc
        _log(_ERROR, f"{where} crashed: {_exception_text(exc)}", exc)
        crash = ToolCrash(name, exc)
        crash.__cause__ = exc
        return crash.with_traceback(exc.__traceback__)

    def _cache_key(self, t: Tool, call: Call) -> str | None:
        """The result cache's key for this call, or ``None`` when it may not be cached: no
        cache, a tool not ``cacheable``, or arguments it does not read as ``Replay.SAFE``."""
        if self._result_cache is None or not is_cacheable(t):
            return None
        try:
            args = _parse_arguments(call.args)
            if replay_of(t, args) is not Replay.SAFE:
                return None
            return f"{definition_hash(t)} {_args_hash(args)}"
        except Exception:  # noqa: BLE001 - arguments it cannot read run and fail as usual
            return None

    def _keeper(self, s: _JobState, t: Tool) -> _Keeper | None:
        """Where a cut output of the job's tool is kept for ``read_output``: nowhere unless it
        is pageable (its own ``pageable``, else this executor's default); in the run's journal,
        with the job's outcome, when the job is journaled; else in the process's store."""
        own = getattr(t, "pageable", None)
        if not (own if isinstance(own, bool) else self.pageable):
            return None
        if not s.intended:
            return _pages.keep

        def keep(text: str, limit: int, part: int) -> str:
            handle = _new_handle()
            s.pages.append((handle, part, limit))
            return handle

        return keep

    @staticmethod
    def _complete_job(
        name: str, result: Any, limit: int | None, keep: _Keeper | None = None
    ) -> tuple[Result | None, BaseException | None]:
        """Step 3: the tool's result checked, and cut to ``limit`` characters."""
        if not isinstance(result, Result):
            if inspect.isawaitable(result):  # an async execute nobody will await
                _close_unawaited(result)
            return None, TypeError(f'tool "{name}" returned {type(result).__name__}, not a Result')
        return (_limit_output(result, limit, keep) if limit else result), None

    @staticmethod
    def _internal_failure(batch: _Batch, s: _JobState, exc: BaseException) -> BaseException:
        error = RuntimeError(
            f'agenttool: call "{batch.jobs[s.index].call.id}" failed in the executor: '
            f"{_exception_text(exc)}"
        )
        error.__cause__ = exc
        return error


# ---------------------------------------------------------------------------------------------
# Provider formats: definitions out, calls in, output items back
# ---------------------------------------------------------------------------------------------

# Each format is one entry of _FORMAT_TABLE (at the end of this section): its definition
# writer, call reader, the two answer writers and its name rule.  _FORMATS, the command line's
# --format and the messages read the table; adding a format is adding an entry, and an entry
# missing a piece fails when the module loads.

# Open Responses, OpenAI (both APIs) and Anthropic share one rule for tool names.
_NAME_RULE = r"[a-zA-Z0-9_-]{1,64}"
_NAME_RULE_TEXT = 'letters, digits, "_" and "-", 1 to 64 characters'
# google-genai 3.3.0 allows 128 characters; Vertex's REST reference says 64.  The stricter
# length is checked so that one definition works on both services.
_GEMINI_NAME_RULE = r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}"
_GEMINI_NAME_RULE_TEXT = (
    'a letter or "_" first, then letters, digits, "_", ".", ":" and "-", at most 64 characters'
)

# What Anthropic takes inside a tool_result (anthropic 2.10.0 Base64ImageSourceParam).
_ANTHROPIC_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
# What Gemini takes as inline data in a functionResponse's parts (images, PDFs, plain text).
_GEMINI_INLINE_TYPES = (
    "image/png",
    "image/jpeg",
    "image/webp",
    "image/heic",
    "image/heif",
    "application/pdf",
    "text/plain",
)

_Outcome = Union[Result, BaseException]


def _check_format(format: str) -> str:
    if format not in _FORMAT_TABLE:
        known = ", ".join(f'"{f}"' for f in _FORMATS)
        given = json.dumps(format) if isinstance(format, str) else repr(format)
        raise ValueError(f"unknown format {given}: expected one of {known}")
    return format


# ----- definitions out -----------------------------------------------------------------------


def _provider_definition(defn: dict[str, Any], format: str) -> dict[str, Any]:
    """The canonical Open Responses function tool ``defn`` in the wire shape of ``format``.

    ``responses`` is the canonical form itself (copied).  ``chat`` nests it under
    ``function``.  ``anthropic`` is ``{name, description, input_schema, strict?}``.  ``gemini``
    is a FunctionDeclaration (to be listed under a Tool's ``functionDeclarations``) whose
    schema goes in ``parametersJsonSchema``: that field takes JSON Schema as it is, so our
    schemas (type arrays for null, ``additionalProperties``, ``$defs``/``$ref``) reach the model
    unchanged, where ``parameters`` would need a lossy rewrite into Gemini's OpenAPI subset.
    ``strict`` is carried to Chat Completions and Anthropic when true; Gemini has no such flag.
    The tool name is checked against the provider's rule; a bad one raises ``ValueError``.
    """
    _check_format(format)
    if not isinstance(defn, collections.abc.Mapping):
        raise ValueError(f"definition: expected a dict, got {type(defn).__name__}")
    name = defn.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("definition: missing the tool's name")
    kind = defn.get("type", "function")
    if kind != "function":
        raise ValueError(f'tool "{name}": expected a definition of type "function", got {kind!r}')
    _check_name(name, format)
    return _FORMAT_TABLE[format].define(defn, name)


def _responses_definition(defn: collections.abc.Mapping[str, Any], name: str) -> dict[str, Any]:
    """Open Responses: the canonical form itself, copied."""
    import copy

    return copy.deepcopy(dict(defn))


def _definition_fields(
    defn: collections.abc.Mapping[str, Any], name: str
) -> tuple[Any, dict[str, Any], bool]:
    """``(description, a copy of the parameters schema, strict)`` of a canonical definition."""
    import copy

    params = defn.get("parameters")
    schema: Any = copy.deepcopy(params) if params is not None else copy.deepcopy(NO_ARGS)
    if not isinstance(schema, dict):
        raise ValueError(
            f'tool "{name}": parameters must be a JSON Schema object, got {type(schema).__name__}'
        )
    return defn.get("description"), schema, defn.get("strict") is True


def _chat_definition(defn: collections.abc.Mapping[str, Any], name: str) -> dict[str, Any]:
    """Chat Completions: the function nested under ``function``."""
    description, schema, strict = _definition_fields(defn, name)
    return {
        "type": "function",
        "function": _declaration(name, description, "parameters", schema, strict),
    }


def _anthropic_definition(defn: collections.abc.Mapping[str, Any], name: str) -> dict[str, Any]:
    """Anthropic: ``{name, description, input_schema, strict?}``, an object schema at the root."""
    description, schema, strict = _definition_fields(defn, name)
    root = schema.get("type", "object")
    if root != "object":
        raise ValueError(
            f'tool "{name}": anthropic needs an object schema at the root of input_schema, '
            f"got type {json.dumps(root)}"
        )
    if "type" not in schema:
        schema = {"type": "object", **schema}
    return _declaration(name, description, "input_schema", schema, strict)


def _gemini_definition(defn: collections.abc.Mapping[str, Any], name: str) -> dict[str, Any]:
    """Gemini: a FunctionDeclaration with the schema as it is in ``parametersJsonSchema``."""
    description, schema, _ = _definition_fields(defn, name)  # Gemini has no strict flag
    return _declaration(name, description, "parametersJsonSchema", schema, False)


def _declaration(
    name: str, description: Any, schema_key: str, schema: dict[str, Any], strict: bool
) -> dict[str, Any]:
    """``{name, description?, <schema_key>: schema, strict?}``, the shape the formats share."""
    out: dict[str, Any] = {"name": name}
    if description:
        out["description"] = description
    out[schema_key] = schema
    if strict:
        out["strict"] = True
    return out


def _check_name(name: str, format: str) -> None:
    rule, text = _FORMAT_TABLE[format].name_rule
    if re.fullmatch(rule, name) is None:
        raise ValueError(f'tool "{name}": the name does not fit {format}\'s rule ^{rule}$ ({text})')


# ----- calls in ------------------------------------------------------------------------------


class _ProviderCall(_Value):
    """One function call read from a provider's items, in the provider's own terms.

    ``arguments`` is passed on untouched: the JSON text the model wrote (Responses, Chat) or
    the object the provider decoded (Anthropic, Gemini).  ``minted`` says the id was made up
    here because the provider gave none (Gemini); it is then never sent back.
    """

    __slots__ = ("call_id", "name", "arguments", "minted", "item")
    call_id: str
    name: str
    arguments: str | dict[str, Any]
    minted: bool
    item: Any  # the provider's own item, as the host gave it

    def __init__(
        self, call_id: str, name: str, arguments: str | dict[str, Any], minted: bool = False
    ) -> None:
        self.call_id = call_id
        self.name = name
        self.arguments = arguments
        self.minted = minted
        self.item = None


_ABSENT = object()


def _camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _field(obj: Any, name: str) -> Any:
    """``obj[name]`` for a mapping, ``obj.name`` for an SDK object; None when absent.

    ``name`` is snake_case; the camelCase spelling (Gemini's REST JSON) is tried as well.
    """
    camel = _camel_case(name)
    if isinstance(obj, collections.abc.Mapping):
        value = obj.get(name, _ABSENT)
        if value is _ABSENT and camel != name:
            value = obj.get(camel, _ABSENT)
    else:
        value = getattr(obj, name, _ABSENT)
        if value is _ABSENT and camel != name:
            value = getattr(obj, camel, _ABSENT)
    return None if value is _ABSENT else value


def _has_field(obj: Any, name: str) -> bool:
    camel = _camel_case(name)
    if isinstance(obj, collections.abc.Mapping):
        return name in obj or camel in obj
    return hasattr(obj, name) or hasattr(obj, camel)


def _as_list(value: Any) -> list[Any] | None:
    if isinstance(value, (list, tuple)):
        return list(value)
    return None


# Keys of a Gemini Part other than functionCall: such parts are skipped, not refused.
_GEMINI_PART_KEYS = (
    "text",
    "thought",
    "thought_signature",
    "inline_data",
    "file_data",
    "executable_code",
    "code_execution_result",
    "function_response",
    "video_metadata",
)


class _FoundItem(_Value):
    __slots__ = ("fmt", "where", "call")
    fmt: str
    where: str
    call: Any

    def __init__(self, fmt: str, where: str, call: Any) -> None:
        self.fmt = fmt
        self.where = where
        self.call = call


def _walk_items(obj: Any, where: str, out: list[_FoundItem]) -> None:
    """Collect the function calls (and format evidence) in one item, depth first, in order."""
    if obj is None or isinstance(obj, (str, bytes, bytearray, int, float, bool)):
        raise ValueError(
            f"{where}: expected a provider's item (a dict or an SDK object), "
            f"got {type(obj).__name__}"
        )
    items = _as_list(obj)
    if items is not None:
        for i, item in enumerate(items):
            _walk_items(item, f"{where}[{i}]", out)
        return

    kind = _field(obj, "type")
    # Calls themselves.
    if kind == "function_call":
        out.append(_FoundItem("responses", where, obj))
        return
    if kind == "tool_use":
        out.append(_FoundItem("anthropic", where, obj))
        return
    if kind == "function" and _field(obj, "function") is not None:
        out.append(_FoundItem("chat", where, obj))
        return
    # Containers, outermost first.
    tool_calls = _field(obj, "tool_calls")
    if tool_calls is not None or (
        _field(obj, "role") == "assistant" and _has_field(obj, "tool_calls")
    ):
        out.append(_FoundItem("chat", where, None))
        for i, item in enumerate(_as_list(tool_calls) or []):
            _walk_items(item, f"{where}.tool_calls[{i}]", out)
        return
    choices = _as_list(_field(obj, "choices"))
    if choices is not None:
        # Choices are alternatives, not a batch: the first is the answer (n=1, the default).
        out.append(_FoundItem("chat", where, None))
        if choices:
            _walk_items(choices[0], f"{where}.choices[0]", out)
        return
    if _field(obj, "finish_reason") is not None and _field(obj, "message") is not None:
        out.append(_FoundItem("chat", where, None))
        _walk_items(_field(obj, "message"), f"{where}.message", out)
        return
    if _field(obj, "object") == "response" or kind == "response":
        out.append(_FoundItem("responses", where, None))
        for i, item in enumerate(_as_list(_field(obj, "output")) or []):
            _walk_items(item, f"{where}.output[{i}]", out)
        return
    candidates = _as_list(_field(obj, "candidates"))
    if candidates is not None:
        # Like choices: candidates are alternatives, the first is the answer.
        out.append(_FoundItem("gemini", where, None))
        if candidates:
            _walk_items(candidates[0], f"{where}.candidates[0]", out)
        return
    function_call = _field(obj, "function_call")
    if function_call is not None and kind is None and _field(obj, "role") is None:
        out.append(_FoundItem("gemini", where, obj))
        return
    parts = _as_list(_field(obj, "parts"))
    if parts is not None:
        out.append(_FoundItem("gemini", where, None))
        for i, item in enumerate(parts):
            _walk_items(item, f"{where}.parts[{i}]", out)
        return
    content = _field(obj, "content")
    blocks = _as_list(content)
    if blocks is not None:
        if kind == "message" and _field(obj, "stop_reason") is not None:
            out.append(_FoundItem("anthropic", where, None))
        for i, item in enumerate(blocks):
            _walk_items(item, f"{where}.content[{i}]", out)
        return
    if content is not None and not isinstance(content, str) and _has_field(content, "parts"):
        _walk_items(content, f"{where}.content", out)  # a Gemini Candidate
        return
    if kind is None and _field(obj, "name") is not None and _has_field(obj, "args"):
        out.append(_FoundItem("gemini", where, {"function_call": obj}))  # a bare FunctionCall
        return
    # Not a function call: another item type (a message, reasoning, text, a hosted tool's
    # call, a Gemini text part...).  Those are skipped; a shape nobody uses is refused.
    if isinstance(kind, str) or _field(obj, "role") is not None:
        return
    if any(_field(obj, key) is not None for key in _GEMINI_PART_KEYS) or _has_field(
        obj, "function_call"
    ):
        return
    keys = (
        sorted(str(k) for k in obj)
        if isinstance(obj, collections.abc.Mapping)
        else [type(obj).__name__]
    )
    raise ValueError(
        f"{where}: not a function call of any provider (a Responses function_call, a Chat "
        f"Completions tool call, an Anthropic tool_use block or a Gemini functionCall part), "
        f"got {', '.join(keys) or 'an empty dict'}"
    )


def _text_field(obj: Any, name: str, where: str, what: str) -> str:
    value = _field(obj, name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}: {what} without {name}")
    return value


def _read_calls(
    items: collections.abc.Iterable[Any], format: str | None
) -> tuple[str, list[_ProviderCall]]:
    """The function calls in a provider's items, in model order, and the provider's format.

    ``items`` is whatever the host holds: a whole response (Responses ``Response``, a
    ``ChatCompletion``, an Anthropic ``Message``, a ``GenerateContentResponse``), a message or
    Content, its list of items, blocks or parts, or the calls alone; dicts or SDK objects.
    Items that are not function calls are skipped (messages, reasoning, text, thinking, hosted
    or custom tool calls, Chat's deprecated ``function_call``: those are the host's).  Of a
    response's ``choices`` or ``candidates`` the first is read (they are alternatives, not a
    batch).  Gemini calls without an id get ``call_<i>`` by position, never sent back to
    Gemini, which pairs responses by name and order.  With ``format`` None it is told from the
    items; items of two formats, or a format that disagrees with ``format``, raise
    ``ValueError``.  With no calls the format is the given one, else the one the items show,
    else ``responses`` (there is nothing to answer either way).
    """
    if format is not None:
        _check_format(format)
    if isinstance(items, (list, tuple)) or isinstance(items, collections.abc.Iterator):
        top = list(items)
        found: list[_FoundItem] = []
        for i, item in enumerate(top):
            _walk_items(item, f"item {i}", found)
    else:
        found = []
        _walk_items(items, "items", found)

    seen: dict[str, str] = {}
    for f in found:
        seen.setdefault(f.fmt, f.where)
    if len(seen) > 1:
        which = "; ".join(f"{fmt} at {where}" for fmt, where in seen.items())
        raise ValueError(f"items mix provider formats ({which}): pass one provider's items")
    told = next(iter(seen), None)
    if format is not None and told is not None and told != format:
        raise ValueError(f'format "{format}" was given but {seen[told]} is in the {told} format')
    fmt = format or told or "responses"

    calls: list[_ProviderCall] = []
    for f in found:
        if f.call is not None:
            calls.append(_FORMAT_TABLE[f.fmt].read_call(f.call, f.where))
            calls[-1].item = f.call
    _mint_ids(calls)
    return fmt, calls


def _read_responses_call(item: Any, where: str) -> _ProviderCall:
    call_id = _text_field(item, "call_id", where, "function_call")
    name = _text_field(item, "name", where, "function_call")
    args = _field(item, "arguments")
    return _ProviderCall(call_id, name, "" if args is None else args)


def _read_chat_call(item: Any, where: str) -> _ProviderCall:
    call_id = _text_field(item, "id", where, "tool call")
    fn = _field(item, "function")
    name = _text_field(fn, "name", f"{where}.function", "tool call")
    args = _field(fn, "arguments")
    return _ProviderCall(call_id, name, "" if args is None else args)


def _read_anthropic_call(item: Any, where: str) -> _ProviderCall:
    call_id = _text_field(item, "id", where, "tool_use block")
    name = _text_field(item, "name", where, "tool_use block")
    args = _field(item, "input")
    return _ProviderCall(call_id, name, {} if args is None else args)


def _read_gemini_call(item: Any, where: str) -> _ProviderCall:
    """A Gemini functionCall; one without an id is ``minted`` (:func:`_mint_ids` names it)."""
    fc = _field(item, "function_call")
    name = _text_field(fc, "name", where, "functionCall")
    call_id = _field(fc, "id")
    args = _field(fc, "args")
    if not isinstance(call_id, str) or not call_id:
        return _ProviderCall("", name, {} if args is None else args, minted=True)
    return _ProviderCall(call_id, name, {} if args is None else args)


def _mint_ids(calls: list[_ProviderCall]) -> None:
    """Give the calls read without an id (Gemini's) a stable one, ``call_<i>`` by position,
    never reused."""
    taken = {c.call_id for c in calls if not c.minted}
    for i, c in enumerate(calls):
        if c.minted:
            candidate, n = f"call_{i}", 1
            while candidate in taken:
                candidate, n = f"call_{i}_{n}", n + 1
            taken.add(candidate)
            c.call_id = candidate


# ----- output items back ---------------------------------------------------------------------


def _output_items(
    format: str, calls: list[_ProviderCall], outcomes: list[_Outcome]
) -> list[dict[str, Any]]:
    """The provider's output items for ``calls``, in call order; ``outcomes[i]`` answers call i.

    An outcome is the tool's ``Result`` or the exception it failed with.  A failure reads
    ``Error: <message>`` where the provider has no error flag (Responses, Chat); Anthropic
    gets ``is_error: true`` and Gemini an ``{"error": message}`` response, the message then
    without the ``Error: `` prefix, since the flag already says it (Anthropic's own examples
    write it so).  Parts a provider cannot hold become a line of text saying what was left out,
    like ``[image omitted: image/png, 1234 bytes]``: Chat Completions takes text only (parts
    joined by newlines); Anthropic takes text, images (jpeg, png, gif, webp; base64 or URL)
    and documents (PDF, plain text); Gemini takes the text as ``{"output": text}`` and inline
    images and PDFs in ``functionResponse.parts`` (Gemini 3's multimodal function responses;
    URLs cannot go there in the Gemini API).  Send Anthropic's items as a user message's
    content, Gemini's as a Content's parts.
    """
    _check_format(format)
    if len(calls) != len(outcomes):
        raise ValueError(f"{len(calls)} calls but {len(outcomes)} outcomes: expected one per call")
    items: list[dict[str, Any]] = []
    for call, outcome in zip(calls, outcomes):
        if isinstance(outcome, BaseException):
            items.append(_FORMAT_TABLE[format].error_item(call, outcome))
        elif isinstance(outcome, Result):
            items.append(_FORMAT_TABLE[format].result_item(call, outcome.output))
        else:
            raise TypeError(
                f'outcome for call "{call.call_id}": expected a Result or an exception, '
                f"got {type(outcome).__name__}"
            )
    return items


def _error_text(exc: BaseException) -> str:
    """What a format without an error flag reads of a failure: ``Error: <message>``."""
    output = error_result(exc).output
    return output if isinstance(output, str) else "Error: " + error_message(exc)


def _responses_error(call: _ProviderCall, exc: BaseException) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call.call_id, "output": _error_text(exc)}


def _responses_result(call: _ProviderCall, output: Any) -> dict[str, Any]:
    out: Any = (
        output if isinstance(output, str) else [_responses_part(p) for p in _parts_of(output)]
    )
    return {"type": "function_call_output", "call_id": call.call_id, "output": out}


def _chat_error(call: _ProviderCall, exc: BaseException) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call.call_id, "content": _error_text(exc)}


def _chat_result(call: _ProviderCall, output: Any) -> dict[str, Any]:
    if not isinstance(output, str):
        output = "\n".join(_text_or_note(p) for p in _parts_of(output))
    return {"role": "tool", "tool_call_id": call.call_id, "content": output}


def _anthropic_error(call: _ProviderCall, exc: BaseException) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": call.call_id,
        "content": [{"type": "text", "text": error_message(exc)}],
        "is_error": True,
    }


def _anthropic_result(call: _ProviderCall, output: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.call_id}
    blocks = [b for b in (_anthropic_block(p) for p in _parts_of(output)) if b is not None]
    if blocks:  # Anthropic refuses empty text blocks; no content says "nothing".
        item["content"] = blocks
    return item


def _gemini_error(call: _ProviderCall, exc: BaseException) -> dict[str, Any]:
    return _gemini_item(call, {"error": error_message(exc)}, [])


def _gemini_result(call: _ProviderCall, output: Any) -> dict[str, Any]:
    texts: list[str] = []
    media: list[dict[str, Any]] = []
    for p in _parts_of(output):
        inline = _gemini_inline(p)
        if inline is not None:
            media.append(inline)
        else:
            texts.append(_text_or_note(p))
    return _gemini_item(call, {"output": "\n".join(texts)}, media)


def _gemini_item(
    call: _ProviderCall, response: dict[str, Any], media: list[dict[str, Any]]
) -> dict[str, Any]:
    fr: dict[str, Any] = {}
    if not call.minted:
        fr["id"] = call.call_id
    fr["name"] = call.name
    fr["response"] = response
    if media:
        fr["parts"] = media
    return {"functionResponse": fr}


def _parts_of(output: Any) -> list[dict[str, Any]]:
    """A Result's output as a list of parts: text becomes one text part (none when empty)."""
    if output is None or output == "":
        return []
    if isinstance(output, str):
        return [{"type": "text", "text": output}]
    if isinstance(output, (list, tuple)):
        return [
            dict(p) if isinstance(p, collections.abc.Mapping) else {"type": "text", "text": str(p)}
            for p in output
        ]
    return [{"type": "text", "text": json.dumps(output, default=str)}]


def _responses_part(part: collections.abc.Mapping[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind in ("text", "input_text", "output_text"):
        return {"type": "input_text", "text": _part_text(part)}
    if kind in ("input_image", "input_file", "input_video"):
        return dict(part)
    return {"type": "input_text", "text": _omitted_note(part)}


def _part_text(part: collections.abc.Mapping[str, Any]) -> str:
    value = part.get("text")
    return value if isinstance(value, str) else ""


def _text_or_note(part: collections.abc.Mapping[str, Any]) -> str:
    if part.get("type") in ("text", "input_text", "output_text"):
        return _part_text(part)
    return _omitted_note(part)


def _data_url(url: Any) -> tuple[str, str] | None:
    """``(mime, base64 data)`` of a ``data:`` URL, or None for anything else."""
    if not isinstance(url, str) or not url.startswith("data:") or "," not in url:
        return None
    header, data = url[5:].split(",", 1)
    fields = header.split(";")
    mime = fields[0].strip().lower() or "text/plain"
    if "base64" in (f.strip().lower() for f in fields[1:]):
        return mime, data.strip()
    import base64
    import urllib.parse

    return mime, base64.b64encode(urllib.parse.unquote_to_bytes(data)).decode("ascii")


def _b64_size(data: str) -> int:
    n = len(data)
    return max(0, n * 3 // 4 - (2 if data.endswith("==") else 1 if data.endswith("=") else 0))


def _file_source(part: collections.abc.Mapping[str, Any]) -> tuple[str, str, str]:
    """``(mime, base64 data, url)`` of an ``input_file`` part; empty where absent."""
    filename = part.get("filename") or ""
    mime = str(part.get("mime_type") or part.get("media_type") or "")
    data = part.get("file_data") or ""
    url = part.get("file_url") or ""
    parsed = _data_url(data)
    if parsed is not None:
        mime, data = mime or parsed[0], parsed[1]
    if not mime and (filename or url):
        import mimetypes

        mime = mimetypes.guess_type(filename or url)[0] or ""
    return mime, data if isinstance(data, str) else "", url if isinstance(url, str) else ""


def _omitted_note(part: collections.abc.Mapping[str, Any]) -> str:
    """A line of text saying what part was left out, for a provider that cannot hold it."""
    kind = str(part.get("type") or "unknown")
    label = kind[6:] if kind.startswith("input_") else kind
    facts: list[str] = []
    if kind == "input_image":
        url = part.get("image_url")
        parsed = _data_url(url)
        if parsed is not None:
            facts = [parsed[0], f"{_b64_size(parsed[1])} bytes"]
        elif isinstance(url, str) and url:
            facts = [url]
    elif kind == "input_file":
        mime, data, url = _file_source(part)
        facts = [str(part.get("filename") or ""), mime]
        facts.append(f"{_b64_size(data)} bytes" if data else url)
    else:
        facts = [str(part.get(k)) for k in ("mime_type", "url", "video_url") if part.get(k)]
    facts = [f for f in facts if f]
    return f"[{label} omitted: {', '.join(facts)}]" if facts else f"[{label} omitted]"


def _anthropic_block(part: collections.abc.Mapping[str, Any]) -> dict[str, Any] | None:
    kind = part.get("type")
    if kind in ("text", "input_text", "output_text"):
        text = _part_text(part)
        return {"type": "text", "text": text} if text else None
    if kind == "input_image":
        url = part.get("image_url")
        parsed = _data_url(url)
        if parsed is not None and parsed[0] in _ANTHROPIC_IMAGE_TYPES:
            source = {"type": "base64", "media_type": parsed[0], "data": parsed[1]}
            return {"type": "image", "source": source}
        if parsed is None and isinstance(url, str) and url.startswith(("https://", "http://")):
            return {"type": "image", "source": {"type": "url", "url": url}}
    if kind == "input_file":
        mime, data, url = _file_source(part)
        title = part.get("filename")
        doc: dict[str, Any] | None = None
        if mime == "application/pdf" and data:
            doc = {
                "type": "document",
                "source": {"type": "base64", "media_type": mime, "data": data},
            }
        elif mime == "application/pdf" and url.startswith(("https://", "http://")):
            doc = {"type": "document", "source": {"type": "url", "url": url}}
        elif mime == "text/plain" and data:
            decoded = _decode_text(data)
            if decoded is not None:
                source = {"type": "text", "media_type": "text/plain", "data": decoded}
                doc = {"type": "document", "source": source}
        if doc is not None:
            if isinstance(title, str) and title:
                doc["title"] = title
            return doc
    return {"type": "text", "text": _omitted_note(part)}


def _decode_text(data: str) -> str | None:
    import base64
    import binascii

    try:
        return base64.b64decode(data, validate=False).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def _gemini_inline(part: collections.abc.Mapping[str, Any]) -> dict[str, Any] | None:
    """A functionResponse part with the part's bytes inline, or None when Gemini cannot hold it.

    The Gemini API takes media in a function response only inline (``fileData`` there is
    Vertex-only), so URLs are described in text instead.
    """
    kind = part.get("type")
    mime, data = "", ""
    if kind == "input_image":
        parsed = _data_url(part.get("image_url"))
        if parsed is not None:
            mime, data = parsed
    elif kind == "input_file":
        mime, data, _ = _file_source(part)
    if not data or mime not in _GEMINI_INLINE_TYPES:
        return None
    blob: dict[str, Any] = {"mimeType": mime, "data": data}
    filename = part.get("filename")
    if isinstance(filename, str) and filename:
        blob["displayName"] = filename
    return {"inlineData": blob}


# ----- the formats' table --------------------------------------------------------------------


class _Format(_Value):
    """One provider format: every piece the library needs of it, all required.

    ``define(defn, name)`` writes a canonical definition in the format's shape; ``read_call(item,
    where)`` reads one of its function-call items; ``error_item(call, exc)`` and
    ``result_item(call, output)`` write the answer to a call; ``name_rule`` is the provider's
    rule for tool names, ``(regex, the rule in words)``.
    """

    __slots__ = ("name", "define", "read_call", "error_item", "result_item", "name_rule")
    name: str
    define: Callable[[collections.abc.Mapping[str, Any], str], dict[str, Any]]
    read_call: Callable[[Any, str], _ProviderCall]
    error_item: Callable[[_ProviderCall, BaseException], dict[str, Any]]
    result_item: Callable[[_ProviderCall, Any], dict[str, Any]]
    name_rule: tuple[str, str]

    def __init__(
        self,
        name: str,
        define: Callable[[collections.abc.Mapping[str, Any], str], dict[str, Any]],
        read_call: Callable[[Any, str], _ProviderCall],
        error_item: Callable[[_ProviderCall, BaseException], dict[str, Any]],
        result_item: Callable[[_ProviderCall, Any], dict[str, Any]],
        name_rule: tuple[str, str],
    ) -> None:
        pieces = (define, read_call, error_item, result_item)
        if not all(callable(p) for p in pieces) or len(name_rule) != 2:
            raise TypeError(f"format {name!r}: every piece must be given")
        self.name = name
        self.define = define
        self.read_call = read_call
        self.error_item = error_item
        self.result_item = result_item
        self.name_rule = name_rule


_OPENAI_NAMES = (_NAME_RULE, _NAME_RULE_TEXT)
_FORMAT_TABLE: dict[str, _Format] = {
    f.name: f
    for f in (
        _Format(
            "responses",
            _responses_definition,
            _read_responses_call,
            _responses_error,
            _responses_result,
            _OPENAI_NAMES,
        ),
        _Format(
            "chat", _chat_definition, _read_chat_call, _chat_error, _chat_result, _OPENAI_NAMES
        ),
        _Format(
            "anthropic",
            _anthropic_definition,
            _read_anthropic_call,
            _anthropic_error,
            _anthropic_result,
            _OPENAI_NAMES,
        ),
        _Format(
            "gemini",
            _gemini_definition,
            _read_gemini_call,
            _gemini_error,
            _gemini_result,
            (_GEMINI_NAME_RULE, _GEMINI_NAME_RULE_TEXT),
        ),
    )
}
_FORMATS = tuple(_FORMAT_TABLE)


def _check_format_names() -> None:
    """Every format that a definition option or a caller list names is in the table, so a
    format renamed or removed fails when the module loads, not at a user's call."""
    named = {f for _, _, formats in _DEFINITION_OPTIONS for f in formats} | set(_CALLERS)
    unknown = sorted(named - set(_FORMAT_TABLE))
    if unknown:
        raise ImportError(f"agenttool: formats {unknown} are named but not in _FORMAT_TABLE")


_check_format_names()


# ---------------------------------------------------------------------------------------------
# The command line: python -m agenttool (or python agenttool.py) list | call | journal
# ---------------------------------------------------------------------------------------------

_CLI_USAGE = f"""\
python -m agenttool list TARGET [--format {"|".join(_FORMATS)}]
       python -m agenttool call TARGET TOOL [ARGS_JSON | -] [--traceback]
       python -m agenttool run TARGET [--answer A]... [--record F] [--out D] TOOL [FLAGS] [JSON|-]
       python -m agenttool journal FILE"""

_CLI_EPILOG = """\
TARGET is a .py file or an importable module, optionally with :attr naming a tool, a list of
tools or a ToolSet.  Without :attr, the tools the module lists in __all__ (a list of tools or a
ToolSet there gives its tools), or without __all__ every public tool the module defines itself
(not one whose name starts with "_", not one it imported).

exit status: 0 the call succeeded (or the list was printed); 1 the call failed, and stdout has
the "Error: ..." the model would see; 2 an unknown target or tool, or a usage error.

run makes the tools one program whose commands take flags read from their schemas, the form
agenttool.command(tools, prog=...) gives a console script: run TARGET help prints its usage
(exit statuses 0, 1 with "Error: ..." on stderr, 2, and 3 for a question to answer)."""


_CLI_OFFERED = (
    "a tool the module imports, or names with a leading _, is offered when __all__ lists it"
)


class _CliTargetError(Exception):
    """A target or tool the command line cannot find: exit status 2, the message says what
    exists instead."""


def _cli_is_tool_list(obj: Any) -> bool:
    return isinstance(obj, (list, tuple)) and all(_is_tool(t) for t in obj)


def _cli_names(tools: list[Any]) -> str:
    return ", ".join(f'"{t.name}"' for t in tools) if tools else "none"


def _cli_python_files(folder: str) -> str:
    try:
        found = sorted(f for f in os.listdir(folder) if f.endswith(".py"))
    except OSError:
        found = []
    return ", ".join(found) if found else "none"


def _cli_search_path(folder: str | None = None) -> None:
    """Puts ``folder`` and the working directory (where ``sys.path`` has it, as under ``-m``)
    after the standard library and before installed packages: a target's sibling modules
    import as under ``python file.py``, but a file there named like a standard module
    (``queue.py``) cannot replace one this module imports later."""

    def where(entry: str) -> str:
        return os.path.normcase(os.path.abspath(entry or os.curdir))

    home = getattr(os, "__file__", None)  # a frozen interpreter may not have one
    stdlib = where(os.path.dirname(home)) if home else "\0"
    cwd = where(os.curdir)
    moved = [] if folder is None else [folder]
    if any(where(p) == cwd for p in sys.path) and cwd not in map(where, moved):
        moved.append(os.getcwd())
    gone = {cwd, *map(where, moved)}
    entries = [p for p in sys.path if where(p) not in gone]
    last = -1
    for i, entry in enumerate(entries):
        path = where(entry)
        zipped = path.endswith(".zip") and os.path.dirname(path) == os.path.dirname(stdlib)
        if path == stdlib or path.startswith(stdlib + os.sep) or zipped:
            last = i
    entries[last + 1 : last + 1] = moved
    sys.path[:] = entries


def _cli_import_target(ref: str) -> Any:
    """The module a target names: a ``.py`` file by path, or a module by import name."""
    import importlib
    import importlib.util

    is_path = os.sep in ref or (os.altsep is not None and os.altsep in ref)
    if os.path.isdir(ref) and (is_path or not os.path.isfile(os.path.join(ref, "__init__.py"))):
        raise _CliTargetError(
            f"{ref} is a folder; TARGET is a .py file or an importable module (optionally "
            f"with :attr): the .py files in {ref} are: {_cli_python_files(ref)}"
        )
    if ref.endswith(".py") or is_path:
        path = os.path.abspath(ref)
        if not os.path.isfile(path):
            folder = os.path.dirname(path)
            raise _CliTargetError(
                f"no file {ref}; the .py files in {folder or '.'} are: {_cli_python_files(folder)}"
            )
        stem = os.path.splitext(os.path.basename(path))[0]
        name = stem if _cli_free_name(stem, path) else f"_agenttool_{stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise _CliTargetError(f"cannot load {ref} as Python")
        module = importlib.util.module_from_spec(spec)
        _cli_search_path(os.path.dirname(path))
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(name, None)
            raise _cli_cannot_load(ref, exc) from exc
        return module
    _cli_search_path(os.getcwd())  # as `python -m` does, for `python agenttool.py` too
    try:
        return importlib.import_module(ref)
    except ModuleNotFoundError as exc:
        if exc.name and (ref == exc.name or ref.startswith(exc.name + ".")):
            raise _CliTargetError(
                f'no module named "{ref}"; the .py files here are: {_cli_python_files(".")}'
            ) from None
        raise _cli_cannot_load(ref, exc) from exc
    except Exception as exc:
        raise _cli_cannot_load(ref, exc) from exc


def _cli_free_name(stem: str, path: str) -> bool:
    """Whether a target file may be registered under its own name: an identifier that names
    no module already imported or importable from elsewhere (``queue.py`` must not stand in
    for the standard library's ``queue``, which this module imports later)."""
    import importlib.util

    if not stem.isidentifier() or stem in sys.modules:
        return False
    if stem in getattr(sys, "stdlib_module_names", ()):
        return False
    try:
        found = importlib.util.find_spec(stem)
    except (ImportError, ValueError):
        return False
    origin = getattr(found, "origin", None)
    return found is None or (origin is not None and os.path.abspath(origin) == path)


def _cli_cannot_load(ref: str, exc: Exception) -> _CliTargetError:
    """The target's own code failed: its traceback on stderr, then a one-line error."""
    import traceback

    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    return _CliTargetError(f"cannot load {ref}: {type(exc).__name__}: {exc}")


def _cli_split_target(target: str) -> tuple[str, str]:
    """``TARGET`` as the module it names and its ``:attr`` (``""`` for none)."""
    head, sep, tail = target.rpartition(":")
    if sep and head and all(p.isidentifier() for p in tail.split(".")):
        return head, tail
    return target, ""


def _cli_load_target(target: str) -> list[Tool]:
    """The tools a ``TARGET`` names, in order (see the module docstring)."""
    ref, attr = _cli_split_target(target)
    module = _cli_import_target(ref)
    if not attr:
        return _cli_module_tools(module, ref)
    obj: Any = module
    for i, step in enumerate(attr.split(".")):
        if not hasattr(obj, step):
            where = ref if i == 0 else f"{ref}:{'.'.join(attr.split('.')[:i])}"
            found = [k for k, v in vars(module).items() if _is_tool(v) or _cli_is_tool_list(v)]
            listed = ", ".join(found) if found else "none"
            raise _CliTargetError(
                f'{where} has no attribute "{step}"; its tools and tool lists are: {listed}'
            )
        obj = getattr(obj, step)
    if _is_tool(obj):
        return [obj]
    if _cli_is_tool_list(obj):
        return list(obj)
    raise _CliTargetError(
        f"{target} is a {type(obj).__name__}, not a tool, a list of tools or a ToolSet"
    )


def _cli_module_tools(module: Any, ref: str) -> list[Tool]:
    """The tools a module offers: those its ``__all__`` lists, in that order (a list of tools
    or a ToolSet listed there gives its tools), or without ``__all__`` every public tool the
    module defines itself, in definition order; a tool it imported, or one under a name that
    starts with ``_``, is not offered."""
    names = getattr(module, "__all__", None)
    found: list[Any] = []
    if names is not None:
        for name in names:
            if not hasattr(module, name):
                raise _CliTargetError(f'{ref}: __all__ lists "{name}", which it does not define')
            value = getattr(module, name)
            found.extend(value if _cli_is_tool_list(value) else [value])
    else:
        found = [
            value
            for name, value in vars(module).items()
            if not name.startswith("_") and _cli_defined_in(value, module.__name__)
        ]
    tools: list[Tool] = []
    for value in found:
        if _is_tool(value) and all(value is not t for t in tools):
            tools.append(value)
    return tools


def _cli_defined_in(value: Any, module: str) -> bool:
    """Whether the tool ``value`` was made in ``module``: its function (through wrappers and
    partials) or its class comes from there."""
    while isinstance(value, _Wrapper):
        value = value._inner
    fn = getattr(value, "fn", value) if isinstance(value, FunctionTool) else value
    while isinstance(fn, functools.partial):
        fn = fn.func
    return type(value).__module__ == module or getattr(fn, "__module__", None) == module


def _cli_text_of(output: Any) -> str:
    """The output as the model sees it: text as is, parts as JSON."""
    if isinstance(output, str):
        return output
    return json.dumps(output, indent=2, ensure_ascii=False, default=str)


def _cli_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _cli_progress_line(result: Result) -> str:
    info = result.details if isinstance(result.details, ProgressInfo) else None
    bits: list[str] = []
    if info is not None and info.progress is not None:
        total = f"/{_cli_number(info.total)}" if info.total is not None else ""
        bits.append(_cli_number(info.progress) + total)
    if info is not None and info.message:
        bits.append(info.message)
    said = _cli_text_of(result.output)
    if said and (info is None or said != info.message):
        bits.append(said)
    return "progress: " + " ".join(bits)


def _cli_write(stream: TextIO, text: str) -> None:
    text = text if text.endswith("\n") or not text else text + "\n"
    try:
        stream.write(text)
    except UnicodeEncodeError:  # a lone surrogate the model wrote: printed escaped
        encoding = getattr(stream, "encoding", None) or "utf-8"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
    stream.flush()


def _cli_ask(question: Elicitation) -> Answer:
    """Ask the person at the terminal: a URL to visit, a yes/no, or a JSON answer to a form."""
    err = sys.stderr
    err.write(f"\nthe tool asks: {question.message}\n")
    if question.url:
        err.write(f"open {question.url}\n")
    if question.schema:
        err.write(f"answer as JSON matching {json.dumps(question.schema)}\n")
        err.write("(an empty line declines): ")
    else:
        err.write("accept? [y/N] ")
    err.flush()
    line = sys.stdin.readline()
    if not line:
        return Answer(Action.CANCEL)
    line = line.strip()
    if not question.schema:
        return Answer(Action.ACCEPT if line.lower() in ("y", "yes") else Action.DECLINE)
    if not line:
        return Answer(Action.DECLINE)
    try:
        content = json.loads(line)
    except ValueError:
        err.write("not JSON: declined\n")
        return Answer(Action.DECLINE)
    if not isinstance(content, dict):
        err.write("not a JSON object: declined\n")
        return Answer(Action.DECLINE)
    return Answer(Action.ACCEPT, content)


def _cli_approve(job: Job) -> bool:
    """Ask the person at the terminal before a call that needs approval runs."""
    assert job.tool is not None
    args = json.dumps(job.call.args, ensure_ascii=False)
    return _cli_ask(Elicitation(f'run "{job.tool.name}" with {args}?')).action == Action.ACCEPT


def _cli_print_record(record: Record) -> None:
    _cli_write(sys.stderr, f"record {record.ns}: {record.data}")


def _cli_list(target: str, format: str) -> int:
    tools = ToolSet(_cli_load_target(target))
    if not tools:
        _cli_write(
            sys.stderr,
            f"agenttool: no tools in {target} (a tool has a name, a description, parameters "
            f"and execute; @agenttool.tool makes one from a function; {_CLI_OFFERED})",
        )
    _cli_write(sys.stdout, json.dumps(tools.definitions(format), indent=2, ensure_ascii=False))
    return 0


def _cli_call(target: str, name: str, args: str, show_traceback: bool) -> int:
    tools = ToolSet(_cli_load_target(target))
    chosen = tools.lookup(name)
    if chosen is None:
        raise _CliTargetError(
            f'no tool named "{name}" in {target}; the tools are: {_cli_names(tools)}'
            + ("" if _cli_split_target(target)[1] else f" ({_CLI_OFFERED})")
        )
    interactive = args != "-" and sys.stdin is not None and sys.stdin.isatty()
    if args == "-":
        args = sys.stdin.read()
    executor = Executor(
        recorder=_cli_print_record,
        elicitor=_cli_ask if interactive else None,
        approver=_cli_approve if interactive else None,
    )
    cancel = threading.Event()
    final = None
    events = executor.execute([Job(chosen, Call("cli", args))], cancel=cancel)
    try:
        for event in events:
            if not event.final:
                if event.result is not None:
                    _cli_write(sys.stderr, _cli_progress_line(event.result))
                continue
            final = event
    except KeyboardInterrupt:
        cancel.set()
        close = getattr(events, "close", None)  # a generator: closing waits for the tool
        if close is not None:
            close()
        _cli_write(sys.stderr, "agenttool: interrupted; the call was cancelled")
        return 130
    if final is None:
        return 1
    if final.error is not None:
        if show_traceback:
            import traceback

            err = final.error
            traceback.print_exception(type(err), err, err.__traceback__, file=sys.stderr)
        _cli_write(sys.stdout, str(error_result(final.error).output))
        return 1
    result = final.result if final.result is not None else Result("")
    _cli_write(sys.stdout, _cli_text_of(result.output))
    if result.details is not None:
        _cli_write(sys.stderr, "details: " + json.dumps(result.details, default=repr))
    if result.terminate:
        _cli_write(sys.stderr, "terminate: true")
    return 0


def _cli_journal(file: str) -> int:
    """Print each run of the journal in ``file`` and its calls that have no outcome."""
    if not os.path.exists(file):
        raise JournalError(f"agenttool: journal: no such file: {file!r}")
    journal = Journal(file)
    try:
        for run in journal.runs():
            calls = journal.calls(run["run"])
            done = sum(c["status"] in ("done", "resolved") for c in calls)
            _cli_write(sys.stdout, f"{run['run']}: {len(calls)} calls, {done} done")
            for c in calls:
                if c["status"] in ("intent", "uncertain"):
                    _cli_write(sys.stdout, f"  {c['status']}: {c['call_id']} {c['tool']}")
    finally:
        journal.close()
    return 0


# ---------------------------------------------------------------------------------------------
# Tools as a command line: command(tools, prog=...), usage_markdown, python -m agenttool run
#
# A tool set becomes one program whose commands are its tools, for a host (or a person) that
# reaches tools through a shell.  Rules, stated once:
# - The command line is the program's options, the command, its flags, then at most one JSON
#   argument:  prog [--answer A]... [--record FILE] [--out DIR] <command> [--flag V]... [<json> | -]
#   The program's options come before the command, so a tool's flags are named by its schema
#   alone (a tool may well have a parameter called "answer").
# - Flags are read from the schema the tool serves (any Tool, not only a FunctionTool), after
#   local $refs and nullable unions: a property of one JSON type among string, integer,
#   number and boolean has a flag; an array of such repeats its flag; an object with
#   properties all of which have flags gives each member a flag --object.member (recursively,
#   _CLI_DEPTH levels, never through a $ref already followed); an object of
#   additionalProperties of such a type (a map) takes --map key=value, repeated.  A flag is
#   the property's name, and "-" may stand for "_" (--max-bytes for max_bytes) unless another
#   property is spelled that way.  Anything else (an object in an array, a union, a tuple, a
#   value of any type, a name with ".", "=" or spaces) is JSON only, and the usage says so.
# - A flag value is converted to its JSON type and no more: whether it is in the enum, in
#   range, or present when required is said by the tool's own validator, in the words a model
#   would read (exit status 1).  A value that is not of the type (--max-bytes ten) is a
#   command line not understood (2).
# - A property is given once: as a flag (a repeated flag builds one array, key=value flags
#   one map) or in the JSON argument, whose top-level keys no flag may also give.
# - A strict tool's parameter with a default (required and nullable, null meaning the default)
#   is an optional flag, sent as null when not given, as a model sends it.
# - Exit status: 0 the call succeeded, its output on stdout (text as is; a file or an image
#   carried as data written under --out or a new temporary folder, its path printed); 1 the
#   tool failed or refused its arguments, "Error: ..." on stderr; 2 the command line was not
#   understood, one line on stderr saying what would be right (also when an --answer was left
#   over: the call ran, its outcome is reported as usual first); 3 the tool asked a question
#   (an elicitation, or an approval of a call that needs one) that no --answer answered: the
#   question as JSON on stdout.  Answers are used in the order given, so the same command with
#   every earlier --answer again and one more goes one question further.  130 on Ctrl-C.
# - Progress goes to stderr; records to the --record file (appended, one JSON line each,
#   flushed and synced before the tool goes on) and never to stdout.  One call per process:
#   a resource or sequential tool orders nothing against a call in another process.
# ---------------------------------------------------------------------------------------------

_CLI_DEPTH = 4  # how deep --a.b.c flags reach into nested objects
_CLI_SCALARS = ("string", "integer", "number", "boolean")
_CLI_RESERVED = ("help", "schema")  # the program's own commands
_CLI_ANNOTATIONS = frozenset(("description", "default", "title", "examples", "$comment"))
# Patterns compiled on first use (re's cache), not at import: a property name a flag can
# carry (no ".", "=", space), an integer, a number.
_CLI_NAME = r"[^\W][\w-]*"
_CLI_INTEGER = r"[-+]?[0-9]+"
_CLI_NUMBER = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
_CLI_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}
_CLI_EXTENSIONS = {  # the common types by name: mimetypes lists several for some, in no order
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    "application/json": ".json",
    "application/octet-stream": ".bin",
}


class _CliUsage(Exception):
    """A command line the program did not understand: exit status 2, the message in one
    line saying what would be right."""


class _CliParam:
    """One property of a command's arguments as the command line reads it.

    ``path`` names it from the root (``("target", "host")``); ``kind`` is ``value`` (one
    scalar flag), ``repeated`` (an array of scalars, one flag per element), ``map`` (an
    object of scalars, ``--map key=value``), ``object`` (its members have flags of their own)
    or ``json`` (JSON only); ``type`` is the JSON type of one flag value.  ``required`` is
    whether the object holding it requires it.  ``null_default`` marks a strict tool's
    parameter whose ``null`` means its default: required by the schema, left out of the
    command line, and sent as ``null``.
    """

    __slots__ = (
        "path",
        "kind",
        "type",
        "required",
        "description",
        "enum",
        "default",
        "members",
        "null_default",
    )

    def __init__(
        self,
        path: tuple[str, ...],
        kind: str,
        type: str,
        required: bool,
        description: str,
        enum: list[Any],
        default: Any,
        members: list[_CliParam],
    ) -> None:
        self.path = path
        self.kind = kind
        self.type = type
        self.required = required
        self.description = description
        self.enum = enum
        self.default = default
        self.members = members
        self.null_default = False

    @property
    def flag(self) -> str:
        return ".".join(self.path)


class _CliCommand:
    """One tool as a command: what the parser reads and the usage renders, from one
    description so the two cannot drift."""

    __slots__ = ("tool", "name", "description", "schema", "params", "flags")

    def __init__(self, t: Tool) -> None:
        self.tool = t
        self.name = t.name
        self.description = t.description or ""
        self.schema: dict[str, Any] = t.parameters if t.parameters is not None else NO_ARGS
        root = self.schema if isinstance(self.schema, dict) else {}  # a schema of true: JSON
        self.params = _cli_params(root, root, (), _cli_defaults(t), 0, ())
        # every spelling of every flag, the schema's own first so an alias never shadows one
        self.flags: dict[str, _CliParam] = {}
        leaves = [p for p in _cli_walk(self.params) if p.kind in ("value", "repeated", "map")]
        for p in leaves:
            self.flags[p.flag] = p
        for p in leaves:
            self.flags.setdefault(p.flag.replace("_", "-"), p)


def _cli_walk(params: list[_CliParam]) -> Iterator[_CliParam]:
    """Every parameter, members after the object that holds them, in schema order."""
    for p in params:
        yield p
        yield from _cli_walk(p.members)


def _cli_defaults(t: Tool) -> dict[str, Any]:
    """The defaults of a function tool's parameters, which its generated schema leaves out
    (the schema's own ``default`` keyword is read where a schema has one)."""
    inner: Any = t
    while unwrap(inner) is not None:
        inner = unwrap(inner)
    if not isinstance(inner, FunctionTool) or inner._decode is None:
        return {}
    try:
        params = _function_parts(inner.fn)[0]
    except (TypeError, ValueError):
        return {}
    return {name: default for name, _, default in params if default is not _EMPTY}


def _cli_shape(node: Any, root: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The schema a property's value follows, with a local ``$ref`` followed and ``null``
    set aside, and its one JSON type (``""`` for none or several)."""
    node = _resolve_local(node, root)
    if not isinstance(node, dict):
        return {}, ""
    for kw in ("anyOf", "oneOf"):
        branches = node.get(kw)
        if isinstance(branches, list):
            kept = [b for b in branches if _resolve_local(b, root) != {"type": "null"}]
            if len(kept) != 1 or not _CLI_ANNOTATIONS.issuperset(set(node) - {kw}):
                return node, ""
            inner, kind = _cli_shape(kept[0], root)
            if "description" in node:
                inner = {**inner, "description": node["description"]}
            return inner, kind
    t = node.get("type")
    names = [t] if isinstance(t, str) else t if isinstance(t, list) else []
    names = [n for n in names if n != "null"]
    if not names and "type" not in node:
        if isinstance(node.get("properties"), dict):
            names = ["object"]
        elif isinstance(node.get("enum"), list):  # a Literal with no type: its values say
            kinds = {_literal_type(v) for v in node["enum"] if v is not None}
            names = list(kinds) if len(kinds) == 1 else []
    if names == ["integer", "number"] or names == ["number", "integer"]:
        names = ["number"]
    return node, names[0] if len(names) == 1 else ""


def _cli_type_words(node: dict[str, Any], kind: str, root: dict[str, Any], depth: int) -> str:
    """A JSON-only value's type in words: ``array of object``, ``integer or string``."""
    if depth > 2:
        return kind or "any JSON value"
    if kind == "array":
        items, item_kind = _cli_shape(node.get("items"), root)
        said = _cli_type_words(items, item_kind, root, depth + 1) if items else ""
        return f"array of {said}" if said and said != "any JSON value" else "array"
    if kind:
        return kind
    words: list[str] = []
    for branch in node.get("anyOf") or node.get("oneOf") or ():
        inner, inner_kind = _cli_shape(branch, root)
        if inner != {"type": "null"}:
            words.append(_cli_type_words(inner, inner_kind, root, depth + 1))
    t = node.get("type")
    if not words and isinstance(t, list):
        words = [n for n in t if isinstance(n, str) and n != "null"]
    return " or ".join(dict.fromkeys(words)) if words else "any JSON value"


def _cli_params(
    schema: dict[str, Any],
    root: dict[str, Any],
    path: tuple[str, ...],
    defaults: dict[str, Any],
    depth: int,
    refs: tuple[str, ...],
) -> list[_CliParam]:
    """The properties of the object ``schema``, in schema order, as the command line reads
    them (see the rules above)."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        return []
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    out: list[_CliParam] = []
    for name, sub in props.items():
        own = sub if isinstance(sub, dict) else {}  # its description and default win
        ref = own.get("$ref")
        node, kind = _cli_shape(sub, root)
        description = own.get("description", node.get("description"))
        enum = node.get("enum")
        default = own.get("default", node.get("default", defaults.get(name, _MISSING)))
        where = (*path, name)
        shape, members = "json", []
        nameable = isinstance(name, str) and re.fullmatch(_CLI_NAME, name) is not None
        if nameable and kind in _CLI_SCALARS:
            shape = "value"
        elif nameable and kind == "array":
            items, item_kind = _cli_shape(node.get("items"), root)
            if item_kind in _CLI_SCALARS:
                shape, kind, enum = "repeated", item_kind, items.get("enum")
        elif nameable and kind == "object":
            extra, extra_kind = _cli_shape(node.get("additionalProperties"), root)
            if node.get("properties"):
                again = isinstance(ref, str) and ref in refs
                if depth + 1 < _CLI_DEPTH and not again:
                    seen = (*refs, ref) if isinstance(ref, str) else refs
                    members = _cli_params(node, root, where, {}, depth + 1, seen)
                    if members and all(m.kind != "json" for m in members):
                        shape = "object"
                    else:
                        members = []
            elif extra_kind in _CLI_SCALARS and "patternProperties" not in node:
                shape, kind, enum = "map", extra_kind, extra.get("enum")
        enum_values = [v for v in enum if v is not None] if isinstance(enum, list) else []
        if shape == "json":
            kind = _cli_type_words(node, kind, root, 0)
        # strict: a parameter with a default is required and nullable, null meaning the default
        null_default = name in required and name in defaults and _cli_admits_null(sub, root)
        out.append(
            _CliParam(
                where,
                shape,
                kind,
                name in required and not null_default,
                description if isinstance(description, str) else "",
                enum_values,
                _cli_plain_default(default),
                members,
            )
        )
        out[-1].null_default = null_default
    return out


def _cli_admits_null(node: Any, root: dict[str, Any]) -> bool:
    """Whether a property's schema admits ``null`` (a nullable type or a null branch)."""
    node = _resolve_local(node, root)
    if not isinstance(node, dict):
        return False
    t = node.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    branches = node.get("anyOf") or node.get("oneOf") or ()
    return any(_resolve_local(b, root) == {"type": "null"} for b in branches)


def _cli_plain_default(default: Any) -> Any:
    """The default as JSON can say it, or ``_MISSING`` for none (or one JSON cannot hold)."""
    if isinstance(default, enum.Enum):
        default = default.value
    if default is _MISSING or not isinstance(
        default, (str, int, float, bool, list, dict, tuple, _NONE_TYPE)
    ):
        return _MISSING
    try:
        json.dumps(default, allow_nan=False)
    except (TypeError, ValueError):
        return _MISSING
    return default


def _cli_commands(tools: Sequence[Tool]) -> list[_CliCommand]:
    """Every tool as a command, in order; a set the program could not run is a ValueError:
    an empty or duplicate name, or a tool named as one of the program's own commands."""
    ToolSet(tools).validate()
    for t in tools:
        if t.name in _CLI_RESERVED:
            raise ValueError(
                f'agenttool: command: tool "{t.name}" is named as one of the program\'s own '
                f"commands ({', '.join(_CLI_RESERVED)}); rename it (ToolSet.rename)"
            )
    return [_CliCommand(t) for t in tools]


# ----- reading a command line ----------------------------------------------------------------


def _cli_quote(text: str) -> str:
    """A value from the command line quoted in a message, a bounded amount of it."""
    return json.dumps(_cut_middle(text, 80), ensure_ascii=False)


def _cli_convert(flag: str, kind: str, text: str) -> Any:
    """One flag value as the JSON value of ``kind``; a _CliUsage when it is not one."""
    if kind == "string":
        return text
    if kind == "integer" and re.fullmatch(_CLI_INTEGER, text):
        try:
            return int(text)
        except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
            pass
    if kind == "number" and re.fullmatch(_CLI_NUMBER, text):
        number = float(text) if any(c in text for c in ".eE") else int(text)
        if _is_finite(float(number)):
            return number
    if kind == "boolean" and text.lower() in _CLI_BOOLEANS:
        return _CLI_BOOLEANS[text.lower()]
    said = {"integer": "an integer", "number": "a number", "boolean": "true or false"}[kind]
    alone = " (alone it means true)" if kind == "boolean" else ""
    raise _CliUsage(f"--{flag} takes {said}{alone}, got {_cli_quote(text)}")


def _cli_put(args: dict[str, Any], p: _CliParam, spelled: str, text: str) -> None:
    """Put one flag's value where its path says, refusing a property given twice."""
    holder = args
    for step in p.path[:-1]:
        holder = holder.setdefault(step, {})
    key = p.path[-1]
    if p.kind == "value":
        if key in holder:
            raise _CliUsage(f"--{spelled} given twice; give it once")
        holder[key] = _cli_convert(spelled, p.type, text)
    elif p.kind == "repeated":
        holder.setdefault(key, []).append(_cli_convert(spelled, p.type, text))
    else:
        entry, eq, value = text.partition("=")
        if not eq or not entry:
            raise _CliUsage(
                f"--{spelled} takes key=value (--{spelled} name=<{p.type}>), got {_cli_quote(text)}"
            )
        entries = holder.setdefault(key, {})
        if entry in entries:
            raise _CliUsage(f"--{spelled} {entry} given twice; give each key once")
        entries[entry] = _cli_convert(f"{spelled} {entry}=", p.type, value)


def _cli_unknown_flag(cmd: _CliCommand, prog: str, spelled: str) -> _CliUsage:
    """An unknown flag: the nearest one a person may have meant, or the flags there are."""
    import difflib

    own = sorted({p.flag for p in cmd.flags.values()})
    near = difflib.get_close_matches(spelled, list(cmd.flags), n=1)
    if spelled in ("answer", "record", "out"):
        hint = f"--{spelled} goes before the command: {prog} --{spelled} ... {cmd.name} ..."
    elif near:
        hint = f"did you mean --{near[0]}?"
    elif own:
        hint = "its flags are " + ", ".join(f"--{f}" for f in own)
    else:
        hint = "it takes no flags"
    json_only = [p.flag for p in _cli_walk(cmd.params) if p.kind == "json"]
    if spelled in json_only or any(spelled.startswith(f + ".") for f in json_only):
        hint = f"{spelled.split('.')[0]} is JSON only: give it in the JSON argument"
    return _CliUsage(f"unknown flag --{spelled}; {hint}")


def _cli_parse(cmd: _CliCommand, prog: str, argv: list[str]) -> dict[str, Any] | None:
    """The arguments object a command line gives (``None``: it asked for the usage)."""
    args: dict[str, Any] = {}
    by_flags: dict[str, str] = {}  # top-level property -> the flag that gave it
    spelled_as: dict[tuple[str, ...], str] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if token == "--":
            rest = argv[i:]
            break
        if token == "-" or not token.startswith("-"):
            rest = argv[i - 1 :]
            break
        if token in ("-h", "--help") and "help" not in cmd.flags:
            return None
        if not token.startswith("--"):
            raise _CliUsage(f"unknown flag {token}; flags are written --name")
        spelled, eq, value = token[2:].partition("=")
        p = cmd.flags.get(spelled)
        if p is None:
            raise _cli_unknown_flag(cmd, prog, spelled)
        if not eq:
            if p.type == "boolean" and p.kind != "map":
                value = "true"
            elif i < len(argv):
                value = argv[i]
                i += 1
            else:
                raise _CliUsage(f"--{spelled} needs a value: --{spelled} <{p.type}>")
        if p.kind == "value" and spelled_as.get(p.path, spelled) != spelled:
            raise _CliUsage(
                f"--{p.flag} given twice, as --{spelled_as[p.path]} and --{spelled}; give it once"
            )
        spelled_as[p.path] = spelled
        by_flags.setdefault(p.path[0], spelled)
        _cli_put(args, p, spelled, value)
    if len(rest) > 1:
        extra = rest[1]
        if extra.startswith("--"):
            raise _CliUsage(f"flags go before the JSON argument: {extra} came after it")
        raise _CliUsage(
            f"one JSON argument at most, after the flags; got {len(rest)} arguments "
            f"({', '.join(json.dumps(r, ensure_ascii=False) for r in rest[:3])})"
        )
    if rest:
        given = _cli_json_argument(rest[0])
        for key in given:
            if key in by_flags:
                raise _CliUsage(
                    f'--{by_flags[key]} and the JSON argument both give "{key}"; give it once'
                )
        args.update(given)
    for p in cmd.params:
        if p.null_default and p.path[0] not in args:
            args[p.path[0]] = None  # what a model sends under strict for "the default"
    return args


def _cli_json_argument(text: str) -> dict[str, Any]:
    """The JSON argument (``-``: read from stdin) as an object; a _CliUsage when it is not."""
    source = "the JSON argument"
    if text == "-":
        text = sys.stdin.read() if sys.stdin is not None else ""
        source = "the JSON on stdin"
    try:
        value = _loads(text) if text.strip() else {}
    except ValidationError as exc:
        shown = _cli_quote(text)
        hint = "" if text.lstrip().startswith(("{", "[")) else "; to give a value, use its flag"
        raise _CliUsage(f"{source} {shown} is {exc.msg}{hint}") from None
    if not isinstance(value, dict):
        raise _CliUsage(f"{source} must be a JSON object, got {_json_type(value)} {text}")
    return value


def _cli_answer(text: str) -> Answer:
    """One --answer: an action alone, or the JSON object a form asks for (accepted)."""
    if text in ("accept", "decline", "cancel"):
        return Answer(Action(text))
    try:
        value = _loads(text)
    except ValidationError:
        value = None
    if not isinstance(value, dict):
        raise _CliUsage(
            f"--answer takes accept, decline, cancel or a JSON object, got {_cli_quote(text)}"
        )
    return Answer(Action.ACCEPT, value)


class _CliAnswers:
    """A call's questions answered from --answer in order; the first question nobody answered
    is kept (and told CANCEL, as :func:`elicit` is when nobody can be asked)."""

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = answers
        self.used = 0
        self.pending: Elicitation | None = None
        self.given = 0  # how many answers the pending question came after
        self._lock = threading.Lock()

    def elicit(self, question: Elicitation) -> Answer:
        with self._lock:
            if self.used < len(self.answers):
                self.used += 1
                return self.answers[self.used - 1]
            if self.pending is None:
                self.pending, self.given = question, self.used
            return Answer(Action.CANCEL)

    def approve(self, job: Job) -> Any:
        """An approval is a question too: accept runs the call, a JSON object runs it with
        those arguments, anything else denies it."""
        assert job.tool is not None
        args = json.dumps(_parse_arguments(job.call.args), ensure_ascii=False)
        answer = self.elicit(Elicitation(f'run "{job.tool.name}" with {args}?'))
        if answer.action != Action.ACCEPT:
            return False
        return answer.content if answer.content is not None else True


class _CliRecordFile:
    """The --record file: each record appended as one JSON line, flushed and synced before
    the tool goes on (a recorder makes a record durable before it returns)."""

    def __init__(self, path: str, tool: str, call_id: str) -> None:
        self.file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self.tool = tool
        self.call_id = call_id
        self.failed: BaseException | None = None
        self._lock = threading.Lock()

    def write(self, record: Record) -> None:
        import datetime

        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
        line = {
            "time": now.replace("+00:00", "Z"),
            "tool": self.tool,
            "call": self.call_id,
            "ns": record.ns,
            "data": _cli_record_data(record.data),
        }
        with self._lock:
            try:
                self.file.write(json.dumps(line, ensure_ascii=False) + "\n")
                self.file.flush()
                os.fsync(self.file.fileno())
            except OSError as exc:
                self.failed = self.failed or exc
                raise

    def close(self) -> None:
        self.file.close()


def _cli_record_data(data: str) -> Any:
    """A record's data as the JSON value it holds (as a string when it holds none, as a
    record made elsewhere may)."""
    try:
        return _loads(data)
    except ValidationError:
        return data


# ----- running a command line ----------------------------------------------------------------


def command(
    tools: collections.abc.Iterable[Tool], *, prog: str | None = None
) -> Callable[..., int]:
    """A program whose commands are ``tools``: a ``main(argv=None) -> int`` to expose as a
    console script (``kit = mypackage.tools:main``) or call with a list of arguments.

    ``prog`` is the program's name in its usage and messages (default: the name it was run
    by).  Each tool is a command taking its arguments as flags read from its schema, as one
    JSON object, or as ``-`` for JSON on stdin; ``help <command>`` prints its usage and
    ``schema <command>`` its JSON Schema.  The exit status is 0 for success (the output on
    stdout), 1 for a tool that failed or refused its arguments (why on stderr), 2 for a
    command line not understood (one line on stderr saying what would be right) and 3 for a
    question no ``--answer`` answered (the question as JSON on stdout): see
    :func:`usage_markdown` for the whole of it as an agent reads it.  A set the program could
    not run (an empty or duplicate name, a tool named ``help`` or ``schema``) is refused now
    with ``ValueError``.  Each run is one call and closes nothing: the tools' owner does.
    """
    commands = _cli_commands(list(tools))

    def main(argv: list[str] | None = None) -> int:
        name = prog or os.path.basename(sys.argv[0] if sys.argv else "") or "tools"
        return _cli_command_line(name, commands, list(sys.argv[1:] if argv is None else argv))

    main.__doc__ = "Run one command line (``sys.argv[1:]`` by default); the exit status."
    return main


def usage_markdown(tools: collections.abc.Iterable[Tool], *, prog: str) -> str:
    """How to call the program :func:`command` makes of ``tools``, as Markdown an agent reads
    as a skill (or a section of AGENTS.md): the calling conventions, the exit statuses, and
    one section per command with its flags read from the schema (types, required, enums,
    defaults, what is JSON only) and the tool's annotations in words.  Headings start at
    level two, so it nests under a document's title.  Rendered from the same description the
    parser reads, and deterministic, so it can be committed and diffed."""
    commands = _cli_commands(list(tools))
    body = "".join("\n" + _cli_usage_of(prog, c) for c in commands)
    return _cli_calling(prog) + "\n## Commands\n" + body


def _cli_command_line(prog: str, commands: list[_CliCommand], argv: list[str]) -> int:
    """Run one command line of the program ``prog``; the exit status."""
    try:
        return _cli_dispatch(prog, commands, argv)
    except _CliUsage as exc:
        _cli_write(sys.stderr, f"{prog}: {exc}")
        return 2


def _cli_dispatch(prog: str, commands: list[_CliCommand], argv: list[str]) -> int:
    answers: list[Answer] = []
    options: dict[str, str] = {}
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        token = argv[i]
        i += 1
        if token in ("-h", "--help"):
            _cli_write(sys.stdout, _cli_calling(prog) + _cli_index(commands))
            return 0
        option, eq, value = token.partition("=")
        if option not in ("--answer", "--record", "--out"):
            raise _CliUsage(
                f"unknown option {option}; the program's options are --answer, --record and "
                f"--out, before the command, and a command's flags come after it "
                f"({prog} help <command>)"
            )
        if not eq:
            if i == len(argv):
                raise _CliUsage(f"{option} needs a value")
            value = argv[i]
            i += 1
        if option == "--answer":
            answers.append(_cli_answer(value))
        elif option in options:
            raise _CliUsage(f"{option} given twice; give it once")
        else:
            options[option] = value
    if i == len(argv):
        _cli_write(sys.stderr, _cli_calling(prog) + _cli_index(commands))
        return 2
    name, rest = argv[i], argv[i + 1 :]
    by_name = {c.name: c for c in commands}
    if name in _CLI_RESERVED:
        if name == "help" and not rest:
            _cli_write(sys.stdout, _cli_calling(prog) + _cli_index(commands))
            return 0
        if len(rest) != 1:
            raise _CliUsage(f"{name} takes one command: {prog} {name} <command>")
        chosen = _cli_find(prog, by_name, rest[0])
        if name == "help":
            _cli_write(sys.stdout, _cli_usage_of(prog, chosen))
        else:
            _cli_write(sys.stdout, json.dumps(chosen.schema, indent=2, ensure_ascii=False))
        return 0
    chosen = _cli_find(prog, by_name, name)
    try:
        args = _cli_parse(chosen, prog, rest)
    except _CliUsage as exc:
        raise _CliUsage(f"{chosen.name}: {exc}") from None
    if args is None:
        _cli_write(sys.stdout, _cli_usage_of(prog, chosen))
        return 0
    return _cli_run_call(prog, chosen, args, answers, options)


def _cli_find(prog: str, by_name: dict[str, _CliCommand], name: str) -> _CliCommand:
    found = by_name.get(name)
    if found is not None:
        return found
    import difflib

    near = difflib.get_close_matches(name, list(by_name), n=1)
    names = ", ".join(f'"{n}"' for n in by_name) or "none"
    hint = f'did you mean "{near[0]}"?' if near else f"the commands are: {names}"
    raise _CliUsage(f'unknown command "{name}"; {hint} ({prog} help lists them)')


def _cli_run_call(
    prog: str,
    cmd: _CliCommand,
    args: dict[str, Any],
    answers: list[Answer],
    options: dict[str, str],
) -> int:
    """One call of the command's tool through an Executor, reported by the exit status."""
    import secrets

    call_id = "cli_" + secrets.token_hex(8)
    records: _CliRecordFile | None = None
    if "--record" in options:
        try:
            records = _CliRecordFile(options["--record"], cmd.name, call_id)
        except OSError as exc:
            raise _CliUsage(f"--record {options['--record']}: {exc.strerror or exc}") from None
    asked = _CliAnswers(answers)
    executor = Executor(
        recorder=records.write if records is not None else None,
        elicitor=asked.elicit,
        approver=asked.approve,
    )
    cancel = threading.Event()
    final = None
    events = executor.execute([Job(cmd.tool, Call(call_id, args))], cancel=cancel)
    try:
        try:
            for event in events:
                if event.final:
                    final = event
                elif event.result is not None:
                    _cli_write(sys.stderr, _cli_progress_line(event.result))
        except KeyboardInterrupt:
            cancel.set()
            close = getattr(events, "close", None)  # a generator: closing waits for the tool
            if close is not None:
                close()
            _cli_write(sys.stderr, f"{prog}: interrupted; the call was cancelled")
            return 130
        if records is not None and final is not None and final.result is not None:
            try:  # the final result's record, as a host files a completed call's details
                record = record_of(final.result.details)
                if record is not None:
                    records.write(record)
            except (ValueError, OSError) as exc:
                _cli_write(sys.stderr, f"{prog}: --record: {exc}")
    finally:
        if records is not None:
            records.close()
    if records is not None and records.failed is not None:
        _cli_write(sys.stderr, f"{prog}: --record: {records.failed}")
    outcome = (
        str(error_result(final.error).output)
        if final is not None and final.error is not None
        else None
    )
    if asked.pending is not None:
        question: dict[str, Any] = {"message": asked.pending.message}
        if asked.pending.schema:
            question["schema"] = asked.pending.schema
        if asked.pending.url:
            question["url"] = asked.pending.url
        question["answers_given"] = asked.given
        if final is not None:
            question["tool_said"] = outcome if outcome is not None else _cli_said(final.result)
        _cli_write(sys.stdout, json.dumps(question, ensure_ascii=False))
        earlier = f"its {asked.given} earlier --answer and " if asked.given else ""
        _cli_write(
            sys.stderr,
            f"{prog}: {cmd.name} asked a question nobody was there to answer (on stdout); run "
            f"the same command again with {earlier}--answer accept, decline or '{{...}}' "
            "before the command name",
        )
        return 3
    status = 0
    if outcome is not None or final is None:
        _cli_write(sys.stderr, outcome or "Error: the call did not complete")
        status = 1
    else:
        result = final.result if final.result is not None else Result("")
        try:
            _cli_print_output(result.output, options.get("--out", ""), prog)
        except OSError as exc:
            _cli_write(
                sys.stderr, f"{prog}: the call succeeded, but writing its output failed: {exc}"
            )
    if asked.used < len(answers):
        asked_for = f"only {asked.used} question(s)" if asked.used else "no question"
        raise _CliUsage(
            f"{cmd.name} asked {asked_for}, so {len(answers) - asked.used} --answer went "
            "unused (the call ran): give --answer only for the questions a call asks"
        )
    return status


def _cli_said(result: Result | None) -> str:
    """What the tool returned, as text, for the question's JSON."""
    return _cli_text_of(result.output) if result is not None else ""


def _cli_print_output(out: str | list[Part], folder: str, prog: str) -> None:
    """The output on stdout: text as is; a file or image carried as data written to disk
    (under ``folder``, else a new temporary folder) and its path printed; a URL printed;
    any other part as its JSON."""
    if isinstance(out, str):
        _cli_write(sys.stdout, out)
        return
    saved = [0]
    for part in out:
        kind = part.get("type") if isinstance(part, dict) else None
        inline = _data_url(part.get("image_url")) if kind == "input_image" else None
        if kind in ("text", "input_text", "output_text"):
            _cli_write(sys.stdout, _part_text(part))
        elif inline is not None:
            folder = _cli_save(folder, prog, "", inline[0], inline[1], saved)
        elif kind == "input_image" and part.get("image_url"):
            _cli_write(sys.stdout, str(part["image_url"]))
        elif kind == "input_file" and (_file_source(part)[1] or _file_source(part)[2]):
            mime, data, url = _file_source(part)
            if data:
                folder = _cli_save(folder, prog, str(part.get("filename") or ""), mime, data, saved)
            else:
                _cli_write(sys.stdout, url)
        elif kind in ("input_image", "input_file") and part.get("file_id"):
            _cli_write(sys.stdout, f"file_id: {part['file_id']}")
        else:
            _cli_write(sys.stdout, json.dumps(part, ensure_ascii=False, default=str))


def _cli_save(folder: str, prog: str, name: str, mime: str, data: str, saved: list[int]) -> str:
    """Write one file of the output and print its path; the folder files go to."""
    import base64
    import binascii
    import mimetypes
    import tempfile

    try:
        content = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        _cli_write(sys.stdout, data)
        return folder
    if not folder:
        stem = re.sub(r"[^\w.-]", "_", prog.split()[0] if prog.split() else "tools")
        folder = tempfile.mkdtemp(prefix=f"{os.path.basename(stem)}-")
    os.makedirs(folder, exist_ok=True)
    saved[0] += 1
    base = os.path.basename(name.replace("\\", "/"))
    if base in ("", ".", ".."):
        ext = _CLI_EXTENSIONS.get(mime) or mimetypes.guess_extension(mime) or ".bin"
        base = f"output-{saved[0]}{ext}"
    elif saved[0] > 1:
        base = f"{saved[0]}-{base}"
    stem, ext = os.path.splitext(base)
    for n in range(1, 1000):  # a name not taken yet: --out may name a folder used before
        path = os.path.join(folder, base if n == 1 else f"{stem}-{n}{ext}")
        try:
            with open(path, "xb") as f:
                f.write(content)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"{folder}: no free name for {base}")
    _cli_write(sys.stdout, path)
    return folder


# ----- usage, generated from the same description the parser reads ---------------------------


def _cli_calling(prog: str) -> str:
    """The part of the usage every command shares: the forms of a call, the exit statuses
    and how to answer a question."""
    return f"""\
## Calling `{prog}`

Run one command per call. A command takes its arguments as flags, as one JSON object, or both:

```sh
{prog} <command> --name value
{prog} <command> '{{"name": "value"}}'
{prog} <command> - <<'EOF'
{{"name": "it's"}}
EOF
```

Give a JSON argument in single quotes on one line, as the second form does: the shell passes \
single-quoted text to the command unchanged. JSON that holds a single quote goes on stdin in a \
quoted heredoc instead, as the last form does. Flags go before the JSON argument, and a \
property is given once, as a flag or in the JSON. A flag is named as its property, and `-` may \
stand for `_` (`--max-bytes` for `max_bytes`). A boolean flag stands alone for true, or takes \
`=false`. An array's flag is given once per element, a member of an object is \
`--object.member value`, and an entry of a map is `--map key=value`. What no flag can express \
is marked JSON only: give it in the JSON argument.

The exit status says what happened:

- 0: the command succeeded, and its output is on stdout.
- 1: the tool failed or refused the arguments, and says why on stderr. Correct the call and \
run it again.
- 2: the command line was not understood, and stderr says why in one line.
- 3: the tool asked a question that nobody was there to answer, and stdout holds the question \
as JSON. Ask the user, then run the same command again with `--answer` before the command \
name: `--answer accept`, `--answer decline`, or `--answer '{{...}}'` with the fields a form \
asks for. A command that asks again needs every earlier answer again, in the order given.

A file a command produces, such as an image, is written to disk (in the folder `--out DIR` \
names, or a new temporary one) and its path printed. `--record FILE` appends the records a \
call writes to FILE, one JSON line each. Both go before the command name. `{prog} help \
<command>` prints one command's usage and `{prog} schema <command>` its JSON Schema.
"""


def _cli_index(commands: list[_CliCommand]) -> str:
    """The list of commands with the first line of each description, for ``help`` alone."""
    lines = ["\n## Commands\n"]
    for c in commands:
        first = c.description.strip().split("\n")[0]
        lines.append(f"- `{c.name}`: {first}" if first else f"- `{c.name}`")
    return "\n".join(lines) + "\n"


def _cli_usage_of(prog: str, cmd: _CliCommand) -> str:
    """One command's section: its description and hints, its synopsis, and each parameter."""
    text = cmd.description.strip()
    hints = _cli_hints(annotations_of(cmd.tool))
    head = "\n\n".join(s for s in (text, hints, _cli_approval(cmd.tool)) if s)
    lines = [f"### `{cmd.name}`", ""]
    if head:
        lines += [head, ""]
    lines += ["```sh", _cli_synopsis(prog, cmd), "```"]
    params = list(_cli_walk(cmd.params))
    if params:
        lines.append("")
        lines += [f"- {_cli_param_line(p)}" for p in params]
    return "\n".join(lines) + "\n"


def _cli_approval(t: Tool) -> str:
    """Says that calls may need approval, when the tool's reader answers so for no arguments
    (a ``needs_approval(args)`` function may answer otherwise for others: hence "may")."""
    try:
        needs = needs_approval_of(t, {})
    except Exception:  # a needs_approval(args) that cannot answer for no arguments
        return ""
    if not needs:
        return ""
    return "A call may need approval first: it exits 3 with the question until answered."


def _cli_synopsis(prog: str, cmd: _CliCommand) -> str:
    """The command line with every flag: required ones bare, optional ones in brackets,
    repeated ones with an ellipsis, and the JSON argument when a parameter has no flag."""
    words = [prog, cmd.name]
    # a schema naming no properties (true, {"type": "object"}) takes its arguments as JSON
    json_only = not isinstance(cmd.schema, dict) or "properties" not in cmd.schema
    json_required = False
    for p in _cli_walk(cmd.params):
        if p.kind == "json":
            json_only = True
            json_required = json_required or (p.required and len(p.path) == 1)
            continue
        if p.kind == "object":
            continue
        word = f"--{p.flag} <{p.type}>"
        if p.kind == "map":
            word = f"--{p.flag} <key>=<{p.type}>"
        elif p.type == "boolean":
            word = f"--{p.flag}"
        if p.kind != "value":
            word += " ..."
        if not (p.required and all(q.required for q in _cli_holders(cmd, p))):
            word = f"[{word}]"
        words.append(word)
    if json_required:
        words.append("(<json> | -)")
    elif json_only:
        words.append("[<json> | -]")
    return " ".join(words)


def _cli_holders(cmd: _CliCommand, p: _CliParam) -> list[_CliParam]:
    """The objects holding ``p``, outermost first."""
    found: list[_CliParam] = []
    params = cmd.params
    for step in p.path[:-1]:
        holder = next(q for q in params if q.path[-1] == step)
        found.append(holder)
        params = holder.members
    return found


def _cli_param_line(p: _CliParam) -> str:
    """One parameter: its flag or JSON name, its type, whether it is required, its default,
    its description and its enum."""
    facts: list[str] = []
    if p.kind == "object":
        name = f"`{p.flag}`"
        facts.append(f"object, its members as the `--{p.flag}.*` flags below")
    elif p.kind == "json":
        name = f"`{p.flag}`"
        facts.append(f"{p.type}, JSON only")
    else:
        name = f"`--{p.flag}`"
        facts.append(
            f"array of {p.type}, repeatable"
            if p.kind == "repeated"
            else f"map of {p.type}, repeatable as key=value"
            if p.kind == "map"
            else p.type
        )
    if p.required:
        facts.append("required" if len(p.path) == 1 else f"required in `{'.'.join(p.path[:-1])}`")
    if p.default is not _MISSING:
        facts.append(f"default `{json.dumps(p.default, ensure_ascii=False)}`")
    line = f"{name} ({', '.join(facts)})"
    if p.description.strip():
        line += ": " + " ".join(p.description.split())
    if p.enum:
        line += (
            (" " if line.endswith(".") else ". ")
            + "One of "
            + ", ".join(f"`{json.dumps(v, ensure_ascii=False)}`" for v in p.enum)
        )
    return line


_CLI_HINTS = (  # an annotation, what it says when True, when False (None says nothing)
    ("read_only", "read-only", "changes things"),
    ("destructive", "may be destructive", "makes only additive changes"),
    ("idempotent", "idempotent", "not idempotent: running it twice does it twice"),
    ("open_world", "reaches outside systems", "works only within its own domain"),
)


def _cli_hints(a: Annotations | None) -> str:
    """A tool's annotations in words, only what it stated (an unstated hint says nothing, so
    the usage never claims more than the tool did); destructive and idempotent matter only
    for a tool that is not read-only, as in MCP.  The title is a display name, not a hint."""
    if a is None:
        return ""
    hints: list[str] = []
    for field, said_true, said_false in _CLI_HINTS:
        value = getattr(a, field)
        if value is not None and not (a.read_only and field in ("destructive", "idempotent")):
            hints.append(said_true if value else said_false)
    return f"Hints from the tool: {'; '.join(hints)}." if hints else ""


def _cli_run(argv: list[str]) -> int:
    """``python -m agenttool run TARGET ...``: the tools of TARGET as :func:`command` makes
    them, with everything after TARGET as the program's command line."""
    if not argv or argv[0] in ("-h", "--help"):
        out = sys.stdout if argv else sys.stderr
        _cli_write(
            out,
            "usage: python -m agenttool run TARGET [--answer A]... [--record FILE] [--out DIR] "
            "<command> [--flag value]... [<json> | -]  (python -m agenttool run TARGET help "
            "prints the commands)",
        )
        return 0 if argv else 2
    target = argv[0]
    main = command(_cli_load_target(target), prog=f"python -m agenttool run {target}")
    status: int = main(argv[1:])
    return status


# ----- python -m agenttool: list | call | journal | run --------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (``sys.argv[1:]`` by default); the exit status."""
    _cli_search_path()
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["run"]:  # everything after TARGET is the tools' program's own
        try:
            return _cli_run(argv[1:])
        except (_CliTargetError, ValueError) as exc:
            return _cli_refused(exc)
    import argparse

    class Parser(argparse.ArgumentParser):
        """Usage errors in one line saying what would be right, status 2 (argparse prints
        the whole usage above them, which buries the line that matters)."""

        def error(self, message: str) -> NoReturn:
            self.exit(2, f"{self.prog}: {message} ({self.prog} --help shows the usage)\n")

    class Once(argparse.Action):
        """An option given twice is a mistake, not "the last one wins"."""

        def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
            if getattr(namespace, f"_given_{self.dest}", False):
                parser.error(f"{option} given twice; give it once")
            setattr(namespace, f"_given_{self.dest}", True)
            setattr(namespace, self.dest, values)

    parser = Parser(
        prog="python -m agenttool",
        usage=_CLI_USAGE,
        description="List and call the tools of a Python module, as a model would.",
        epilog=_CLI_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agenttool {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="{list,call,run,journal}")
    listing = commands.add_parser(
        "list", prog="python -m agenttool list", help="print the tools' definitions as a JSON array"
    )
    listing.set_defaults(handle=lambda ns: _cli_list(ns.target, ns.format))
    listing.add_argument("target", metavar="TARGET")
    listing.add_argument(
        "--format",
        action=Once,
        default=_FORMATS[0],
        help=f"{_FORMATS[0]} (default), {', '.join(_FORMATS[1:-1])} or {_FORMATS[-1]}",
    )
    calling = commands.add_parser(
        "call", prog="python -m agenttool call", help="run one call and print what the model sees"
    )
    calling.set_defaults(handle=lambda ns: _cli_call(ns.target, ns.tool, ns.args, ns.traceback))
    calling.add_argument("target", metavar="TARGET")
    calling.add_argument("tool", metavar="TOOL")
    calling.add_argument(
        "args", metavar="ARGS_JSON", nargs="?", default="", help="a JSON object; - reads stdin"
    )
    calling.add_argument(
        "--traceback", action="store_true", help="print a failed call's traceback on stderr"
    )
    commands.add_parser(  # listed for --help; main() hands "run ..." to _cli_run before this
        "run", help="run the tools as a program whose flags are read from their schemas"
    )
    journaling = commands.add_parser(
        "journal", prog="python -m agenttool journal", help="list a journal's runs and open calls"
    )
    journaling.set_defaults(handle=lambda ns: _cli_journal(ns.file))
    journaling.add_argument("file", metavar="FILE")
    try:
        ns = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors and --help
        return exc.code if isinstance(exc.code, int) else 2
    handle = getattr(ns, "handle", None)  # each command's parser sets its handler
    if handle is None:
        parser.print_usage(sys.stderr)
        return 2
    try:
        return int(handle(ns))
    except (_CliTargetError, ValueError, JournalError) as exc:  # ValueError: a bad format
        return _cli_refused(exc)


def _cli_refused(exc: Exception) -> int:
    """A target, tool or option the command line refused: one line on stderr, status 2."""
    message = str(exc)
    _cli_write(
        sys.stderr, message if message.startswith("agenttool: ") else f"agenttool: {message}"
    )
    return 2


# ---------------------------------------------------------------------------------------------
# Unicode tables for \p{..} in patterns
#
# One Unicode version whatever Python runs.  Between the markers, what
# `node testdata/unicode_tables.js` prints (test_types checks it is).
# ---------------------------------------------------------------------------------------------
# unicode tables: begin
_UNICODE_VERSION = "17.0"
_UNICODE_TABLES = (  # 14212 characters, from node v20.20.2, ICU 78.2
    "eNrtfQl8XVW1/vetvfc5Z587Zs7NnKZtmjRt0oGOdiIFChQolGLhPQyhTSFakhqCz5kytIoFRJGpFB4goGUSEFTg"
    "XygoFRwe5Wl5DoiICM7wFEEZ/+xzb9IkHaFF0deeX5Pcc+89wx7WWvtb6/tO6xIIqttqWpeh6Gbiv0NTjI3EOKxU"
    "XIAbq/BqSpfpcZr2sxsU/ka5vxYpPHVg6skLRD3S4K/+WQuq2lq7oVZuVG+MW3n+lNfeUPLaG6r1VHDlreqN1Pzl"
    "uNS0Z6ahoYQ+8bY27uL1LjZxP0WivxS1+ymS3et+Mtrv/qaIh753dno+us8o8O1unkBI6L7XcyVzP6NDKslH+TBS"
    "yQ6+qt3lCic07/o09m1dnOxBU7/1rWXUt4sbRf5qzJl5AXHa6Flx1i4D331b8M6fITChH/i5nwlxP/1Akx6UkIES"
    "Bn4o5OfdQFYoh4aGMFAa++HGomZC5TpMu64z5p1vFfrR2eIjCIML//TWvl2wk/c+Neil7OFl+oNHts6+2u5RDYY2"
    "mx46K0CUQeFOr9EE/hEbr6QX1+uDzPdt/adZdzlDJumRZyXHf6Lo7uLqlTeyenrppu8wU+YxryxTppwFYFiWGbKV"
    "V5TSlA35T9yRtCzwzEsFtfNPwRG3mjwdS2rX7KvcxT6h8AxxLXmeUKMaFgpXEV8ifmhxOu7U+EkCH8AvNTYrcwtn"
    "JjBs+G0GCaTjPy/h/xL3EVsURmuDdh4vFz9BPGXN+YIeVPAjwQKU4GSluEWhGOcQy1HEk5TF6i8TY/hkyrCBwYUx"
    "1GCL4MIqPLOW6lUlo3i9js8mkeSrpyvXGredMONhejf7uFDjuxrzu3GZvoFIYaVAq83k3V6ZVmOqaevIE4lShiJI"
    "g5WVi2MorSkqaiz1Q1NCLz1q+n4K+fBtOql9oRTRI5RSSCNBSpIhAqOz+6N/1YookHRAYXafdt9PsQSxvu9H+6pI"
    "SSEPNEqoorlERSUqVoyJPoXFTCmUCSmsgs7usdE3hUwxz51hlLtqI4GUGpOnSpzdEG9aMxk30xkZ8BKClrQQXaJq"
    "MMtnXbk+tbEQaaOVgqIvOh7HBx8SKvEIuvZUUtP/KskpVLL/iNQHf6clzYw5xPP9vER+Mi8Zp6QmjELrME70tdQS"
    "5oCwalyl6NhonZlUbCfeyrF5/qTKBMPRZXUNElZ+UNGQCncH6qWSyaXF1uOg7UvOuOhFAXishmnk8XnVLamV+r4J"
    "s79wLfli0FofrBGdCrk/xh2wnjgJyqNQsbhyQnLcTKNAxsrD4kyFP3aMliDUHFUi9AtTNApqnDNaot38KqUKfSSN"
    "GDHuKj7HYZVffG+8WLecvf8fRDpbXbPFnQeMevUDtb+V/Fmy36hYr+Zqdlo2SZWKvi1SF2OG+SSTkhj20VWqQrU0"
    "VycK6Hsjwkqp0/5KHnZifTDh3yfEvya2KPQvpRFwtGsJKQ6LbdWcfDIsCjNeZuRkj7ORUhRWNFaoijqf5eX7hUVh"
    "fiKva97XWTdSEbdKg8e0kFMqQgRFjXljC8uL4xOnUpBoqiktq6uEIBimEG9OqiIQdXksLeCsqEeZpPXHjhw0GPMR"
    "11U2sjwjiAyIpon5qlCqmgtJfINjG9Tw5kJMb0zgoLIR3l0c/QP6AvFJlqRAvM+XkWkQFQjrfRQhNqYA+fO+zZrq"
    "gMPzMK5yhTvTiCJkjJsjSZSMIs+W/BQYZ+3HccRl/jP8Jr9XeELqK0GeyaytNpv0XftVPpX4hvar8g7Pq8xvnlBo"
    "8r+q6i9Shxh8hVumNlS395w39xpJoVIESRWsUWfnv9/EVeDb5+fiL6qpFvdLZf7op1XZr1gpeIRVFJKeaItf0KNy"
    "fcZv8Z5QsSwbnNHSmUx4fQGT5PYPiFJERd9V0dRKG6Fm+lvDfv59qblimJw3Rm6dlvqDvqbgCv1U7Dsjzfr95/ci"
    "fFBF0d5IXDQ9crVxpNCM+afhs2ZOpqOYXu3bdDeyi9e7E+9mrQ9FXINEP/pvNdof2Sb40R3s+nyyQ3e3e5sbVIJs"
    "N7jt6mwAHMDLHpZMM6iDyI6CYhNdtoxveYei1sGRqrzDYY+MeLg4inj+2yy6MA9eo8hGeTcGrW+3Nd/KGfoCVhPL"
    "7Qn8eSruNh1TqwXarbdEoLSX/YASFdJgBl4tbG7JLc0iK+gspLzzbRJEMd3337FgdU9WhiDCQcO5L/hU218M6iF7"
    "1PYWbaW48RZmHozC03V94elvE+OvYF98Orv02y4+dVu0uhVncvyyTJlbifr0yl0gpAnllQ+IWKtKa/s23Dms9rAl"
    "uJ9n5WMyRAJFjuc0caFAiNGYJvtjmgQg9+M0Z8uj/csYrXQlRIPMUDPcO9oZd8sKJDlNTPReIw8Vz8/nd4SzcCOp"
    "4UGYcQGiV0QxglD+GkcVziB8n/yJKBFNmicZncuCDMzniBYX2mtyBqqgKXgPRJylbfED3kgU4Wsj+efn3P0v5vjU"
    "+WQzWqgp0kVhKcaAOAVCgz9k40riwodc+56OMaJ5Kko5HS1imcDxzmLjBko1p2VvUSxCHi3OYEc+Dh0SUOH94rkJ"
    "gT9QPCX4oAR0J3FrvpPgbnWV++ZLLkTT0Tg4n+LWe0ejkjPxcHZcfJtI4v2RM9hCrUk8IYyjhe5gvz6Lcm3FpJP5"
    "5wdIzxzWAfNpyzuacGVcUdasETmsC3+QlV73haLPkaZcdIV5YUthGh2e6wSqOlSV/Vs4LbAoVXRhrh4t04PGElZP"
    "doPU11BeyEpMg1YBClkG4VToqPVcYK0Qc6+1u41CFhtiWtQSAXzGWIUZiGM8FCbDdSiV21sZfcaDYSErOJXZI1di"
    "HnwhjoN4cf9ESBDzDmZ5NNAnJ1z3mpB1FsuiuNaNEy1plYDQQwr3Gbndl0pWsYqzSS+AhBZjhDiNw/Ah0bTw5Kdu"
    "DExzqzQ3+3zPCloSrJJYoWqJIBiDUUGcNW5ZLlMiT0yZ5gsvpTBOz41QxU2ctdnENVTs9RI5jzih+gatPsAf/o7Q"
    "toYLeIEDnjQyNLiELMtLYKSfCcdKC0QJ69Hqxj/jCNCMCc5QujtCIwP80RkFjVuvJH5hUunU9308RVxEvTohpFGj"
    "ROM6coNWc/QG4WHmwHCc+hgmJRsgDGWcEvqYIcM1/ZmIc2IQKkGbs8R0ENgVhPKLOJUKIzylDzSJqHmTXOS7GVOC"
    "ow2hSf6RygWR5e4NkO93zWWIDkQRmT7LDeeVWajrAjcNNGrsKCMqgDUiY+Pkpuzq/mF6bq17VJFEa7aPRssG1/7z"
    "XNvip8IYJ2q3Mi/BrxrgJR86NqZkY4Ge7l0aYJY6Et+4jPzF8DFSfJWWPF+8KvUFyj2pSXpcgCSKNZObQxehR+H1"
    "UlxF7yXBDPWqUq+Tf3bt6dPgJ8o7xbvzKy3P8fClmNdir4/b1bSbaNcp+6FtthPsh+yB9mKxB9pNSTvS3iR2Je31"
    "tJ79Gu0x7que3XSh2OuNHemOUmyPsRcre/GbH1kds6vzrGfXee4777EX0B3oMXnzwC+KXWa9gvn2emWX2YuNPca+"
    "SHugnWSfEfvYWbTX52cPfrG2L95L+8OicRvz3YdfVPYl2i2evXiEPXw5En8cI88VDhP1egUyQVJu/APt5js48Xsu"
    "cltNfcPsrlWXUA7vxrzbSQORO/PNX8V8WFbR+zG9vOA2Ze8MCv4c2CcVLkpAGc9uYqoBj5nphxe9qCt/E+ILVn2G"
    "tspnssbWJ5//Lc2jt7FpjsrjFikbru4I/YxXHxyqi81VbnktY2YHE1klh+qT/VK/wfuOmCel6kraRrXCW82CV6Tg"
    "wZC3qOBZL/8HXuHqS+hd6RWvf4gF8YLlpf/VGFztT3PLy/lNTD7gxxcsgdeGn89iAZ64R7FUniMWLEXhGDweYgLu"
    "r8CqAOekzRkVDummRgXuVShANy64XHEEQqwnnqzAvYIFHZjfgAmoxobKN5dPTySxvgCTkcLLzgdX4d5gkFNdgJr+"
    "v7+wfY8/+81IuRbX9X2vKff7JrVNpCC8cq3Cj4lKDA0l8qLfNzC6MhfHL1iG8B7iZzOhUIGHyqMgQZCCwoJOxG4k"
    "fj/TOXBkhrzZjQdYK7l4iyEVyzEXBkn6uNcgwH8r04BJ0UmaWEgyAcohahlGJ35DmZSsxirntc8lPoyPYLVCHM8J"
    "jkPILzNJrMAhWrPb3Eg8rYNVHj4uB/EKCmWEobpL+CNypZvnV5GhVyEfV9P1TM72Y3jAY+AHgfPbKnRLuLUZRa7A"
    "Z0ntsPogWvcw1LTiIpy4yE1KpmIDceavHfQlSxDiVPOqqGM4SohxbEZ7PM2Pq08yzb8R117rQPdiFFKUA3d853d5"
    "EYc0x3AI1ypZZ9CCKxWeNc63VuMCCUZihbe/d6z6qoezqZvUBnqnkOqTqoVHKA3XUovNB3CDC196dPim4z0ZL7O4"
    "Uyri83Em5VXi0yKXE//uLxTq4+3/EG26kasMD4l/hXg+0K8W85VeriLm6ABf1vIlUd8W/L/LiGen6z8X4wmPC07F"
    "EaMwHtW4NzdGX8+Hwsi9Ok4zyN/JSMXVaxX+Z6cj1V2fW1svXIKi4fiE+o3Fx/AnxT8p+vgL8SnBgxqXF+BbebUv"
    "ni/45o0OWFxL/NSFmS/OUleuVri1AAs/gOr3vRnfHBQt/RXO0SqeMM4pp09DkmeGuGMsKDFJuI3ravnL37PY8iRu"
    "9pHkpquYfsWtOa4hLvm10gtPQetopGUGiDHQGIFqvG7wWS33TEQC9ZKQNUS99jBXmyjcEviojpI91WukhsehqnSU"
    "2aJgMcnvxmbRUhWmVsqZLJ6pq+UMaSkU8/h/KnzDLYuvZe5cZxGeurqcT56psDmFDKqH/L9pLJ8oCBZ2435en3Xs"
    "xKM+PiM8nf/lFgQFfIk4S+MvgjOdmzybeIRowKeUpFxcYAqjpl9F30UIRj1IPm/sD9z6FFew9hdibXBWzDUuQ+fi"
    "Td/aIsZktF6YRquzIAM9OjATrDpXfF0gnixgZabeO6g4PPKw4q+RAfcLuvgSm0bPfoMrdXMRvZFyDn9F8yvh2AwX"
    "x7ewLKWRYBwOzNos1LZmhEW6KlYZIFUdjkzdJxsnzLrgZk76hafcVNmg5eFrmPqDpGZzkj9GnlYuMGKCd0kwNS3C"
    "uEJz08txPqLx6cB/Jo2L8nyd/s7FVAaPXUP8suo5hqK+qrziVOqEU9/zF4YjZbqRYvqV+j1FcxTu5jHr7Rtqshrv"
    "M0E+lMDjxW7B8KgZrZfEk5JkksNLruKUisRoHfhMmrV8meZHRqVVXP2YXkwjFdOTA+vVB5US05z5PxIkJK5CNYXQ"
    "KYlp63+e/LcQxy0Hvzwbx60A18/GcafCr8Hp+PlovJEfDkczrqrGnOUrTm4/saO3cwn+ZuZkvEwzQmiYYlbxYdWH"
    "8B+DyrwI/enDWQp4FD/D4DpyhMAbVZ/oi9aDMq0qQzOZXrKDvva1RPB5c2JpaY19cxlhSiS/IAeg+wgawpjyvEOZ"
    "ouhkIp8DYXT3tzuiC/B0nCG0cBCcrrV2CwD4isgzMeFAYN39TYWUKlJaOBDRjI5rXYCuE0hzW5Bda7dQUvAwKp4D"
    "2x3E7qy/i7NVheJWyD33jlsrJCQej4D3aB9hlK+LDYX98HvgBryfz8RU43mYsBWGz6dbKcJDMgfE63ydYl3rJEJ0"
    "elaoJIJ5pJHf2yUYn14kRvUB8ir0C2KF8YLoyhifIPlJaLQu9hsdIM+YDkr6QPlyPVMKxqOEMRk3gUn6ExpEhaMZ"
    "JicVS1gnoWkUacih9OY+FtTGLhIxMkKM9KXUq2Ri1HtCTykxOm6EXm+U5elwAYDlAPjFzRSjNfJG3exNuDj5tPsO"
    "sxk8mewjvU0KgNXN2KIkE/hatF7kCY+lGpQKOPdmto6Rc0WlQhaONb5aUR/IMjmysJA1pRPirUSTi+glrDHDEhVq"
    "PGMppFOh5iSbyC9WcyOUQiQlKtYP/7ORCe+jRQMzACO9uDaxHecAhme8TGzx9nMAB0xcI9ksQKVpNFEOgLrxCubX"
    "6TpdH0yI53CRPnxE9WUGSqMc1wE7Tw8o0vjbTxBMHp8Yn6gfVq5gil9mgxvtaTNe1IA8gT1gtA6nWCRKS8bnKZcl"
    "sLOorDPWLk9QK/DUzK2ZgiklatuZ5eaN8Sr6MgbZ3ypamqJpjvtAoVTNkSh3sJ94GTNspnPa0/cTHFQmiSLvLk45"
    "aVZ1Xwqh0k06Ucf7Msat6Mjy8WLzDjLIn3eSv9jlEJrciBtXKUVMHOyuY7TKAdPCUpdRGO7AHaJk9NlSbNMcpaTb"
    "5RSWdeVtm1QY++iApEJaVRea/FtV0w84q6ZUSpsO0VP8tMsmxj2bzTG81holFbn9TIPGL8YezQP7gaxYlHCdnYWy"
    "WN4HZfEHIqUsZdWQ//4dySrPbGH/atHMqMWKptBL9+Uuyp/uy10UBXxyQNZieqvzXHfYPc5dvKAzXsbLvFix4xTG"
    "/p1LO9tau7t6e7qXQ6+L438nsExPVtH+wzp7erp7OpaiZxTzoyRQNmIbgxRer1A/S3JdAUNOYpK3ERuplEvGOXsc"
    "Xa4ODJhnlGWUPK8WZWAp+cbFCdQlkgpUIX1uCBKHIJuiMMqISlyoisQwEcA3KoJ7ROsIuQiNMJ7voK7swDT0pJQx"
    "auXGjG4Un/Vuea+0EQ2l6RLDZ2mVbVmxo/0blRV/wzplDK/hoJtyluClWxSm5rbW9lM72g4+qau7p/3E5R3YrOrh"
    "IYa6KJTU2SURX1L3OfwU7hZfofeIM3/j+tGvJsRMGBJ1CB0K5rt+dOmgCAULXWxYWjJamhxmEDRMHYiBJZD6O6Ng"
    "scChYBZ8CzjY+/Ck3hYJUzAYoydgzs6xsHoEY3aNhc02Rw0Aw8a7yoOlG9SAeD2uA4Yuyo4qzBh5qwk1a0r4QfkE"
    "Ujgh8joYrpQ2ON4MrE04UbnPV6gFTNYejhJZphSDnWFpeSji/v1oWh1iA/C0ciSj30u1lY/0w2oXMr1BpxTiqWEQ"
    "BxL4/WOoGWPYiiI5Q+dAt1VB5CI26SHY20iUaeIehx1P3A4C504VYvw/Dwo3B5cNxOG2NKQH4nA2W/jxlMIsZ6yZ"
    "6Cv9uDJDqsdz0JxN7QKac8b2Kiaed+DcK0oPBOcsNivvFP8rRfqMS13h4Uo+RzfXl+JKDomhHyCVfoQyzGeVPgGN"
    "UWS5vTDajrqkuC/GU1eZRWLOzIsirtn3cfYexllGIxdpVSveNjTW+vyfOCa/8mx2KMX5hYZyp+cinlw90TlBxstc"
    "Z484oU7X9Q4JTb6pXOLizaDkQTs+Mf74orBobfGsJ2/IesubvsM9831RtdEqmfH5vNbfpyIv1Hpye9dJHae2vffk"
    "jq421+DLupcv7ViKF/WczHEIi+nX7KVM+VssOOSA37vOledyNrvMlZN7NVf+ItG4nWx5MeKidny70RrsXylj3oJL"
    "sxPtBs+cmWffxTlzQ/mHZM3TzSJijIiJqbh2v9e7Qk8PY1IFuN3L3Jrcly7/+6TLXx5ghXeRNn+BtduYx1PaV6zo"
    "WIqzIqc0zRnIKs7iQpZLIvLC/848r4w55MNZ5Kg2JsrfksoYhA4HdD7LlYH3+6yxqubNWzg767fCkZf2+S2RgX7r"
    "LnfzaXzwcjeKT9sd/5UbZeVb3dQKZyj9Dn+wrypfzYTMsMkou17KplI+7qFid/xVYjtu6gW2Dmq4+d3/0dGzJPLm"
    "v9X/NPVX/yCfsoP6q2Bf9dW+6iu/NEcciGnnR2J6nxd51xZdDfUehx94aOvACHuzNydzAPzc5bj8aASAv514W/on"
    "pvwdYm27S4uo9qY9bA+qjeh/I8X2pzsdnqW9AeG2v5O2+ZcLtr9ALFY/N/7HSSyEYJgIXiO3GJyOURyLSbARfUgj"
    "7u5J+8gbsOcZRgZ2LE7kJcZ8zeci/XwQxezLhSHzWO54JLP3he8DzO6QPnDBfEICBa1cUkv7IuIz5Zo1Lsq4mePM"
    "TCAJ+PlSxngM73VzInSYqUi/aQlptPaaHTR3jZttfyXvlM/w6hAnSQe+KNtYc0//vaz5x/EVwULEt7AR+4FyAgVt"
    "GHe8SpxQxfpgLN+QjU/vPYNPnr03TX72Lvau0S/Uwqc8ZeEdsXGtq0txx7TZCFC15hJYYMm2Cay4yhQXSoz5dHlT"
    "cLUbxRvYl8tSLiEWfCoY5E1+p3QOBRroVJ69nOr2mrqnAy/pzzb36d1Eg74oMu7W9IzP59U+sefpi2/p0FSxukzq"
    "0C3ZhPqVBXb1X9UV+qk1TW9UD3J6R3f2Lu/IRv5/03vIFR5qW/eEKxyFzQO5wrqPKRz91Nhe7L+dPfJWxqrazigd"
    "xBU2u1w4jn4rTGJM/BdhEo8b+XxFlkT8x+wKuOfd6J28d5iTu9sc4scEtSmN73qZTckBxGGXdwjx93Ig7zRteC8s"
    "CgaShnWO+T90i+0WYXgAWLIrsvB/DV0XLFqxog8cefmfyESa7cEj2zOZ3Gcg/w4G8qGBUgv7rORWKzkxG4s7C6mh"
    "+m2kxqP7rOS720rObT/1ZJQOrfafgXqkXIH62aW7LPuf27Gs/bTlvVvrRdpau5d2tC3o7uzqRd7NxNUG3zN4oJg/"
    "iHORfiVSxEm9UIvLL1Op5+jEFo4IvvS3SA9n1c9a3qie27Gip2NJe2/HUgQPC9aHOMsVq6xP88E8c5fhY3dNxtzO"
    "9iU9na7683FurXB2RSlXkr4xeVFhymvUjxKT+4tSzqLvqtyoqaQ1KkQZxk/6DTZdPgNpKFWBQ5BGV+5/s7wHafj4"
    "j/49pzCNj6MbcUN8AAl9aK5cRHN/IWdiBchR1DrjESHvN3KHzyp8gaHFT0WuFRT6gpakhCopsXlIYWQwidMQ4/6u"
    "2KM04uXJ+JktdSY2IhxU6vF8RjYIXlamU7XhT78l4iQqeBSTtctkGTzGMQKXEOV5U9VwtCGO4biIMkdNiMoyVpKu"
    "JuMML3W+9BdgvGrwnzYqvHhNZ0su7tHGlVyc69Ljrtxio6uRnscPcybmw8rJvJ1cwDRKPaWPFVeh0AaFj/EV8pP4"
    "EE/FecIzXXnEOoeZ5ONIXKdwpnMdR2IOnhWW4PcNyR8fi6je4Q7Na3R6AV/PVjmcMTNb4KBMELGPzqyc8UCOY/S6"
    "4ZPGO0UoB5zS/f5OXMI6V9Bju6Fx3izE8SOiGMeZFJ9zBSrXE5lQy7eJZ129tsU0RW0j2Z+sg3Xzy6FbgTg7aWIx"
    "ZnWM8iHMN1nnZ+AWYjE6NMREDrGQxrj6q6iw3fTNPQ+ucDBkKld37hafMbaIRRJJvCB8REkBJ0DjJxZx/Nh95rcv"
    "e/iOG/mMMwmxh2bIEhRCgiLewlrpdqVAcpQIVwtnxgxLfIofd/hlVNUtCGhhJC5BFEjo7FUsajnA+KKUVRGGKPaX"
    "jGlcLmNp+Q2uGFRpHTVkW2v3KSu6uzq6ehFmW/QHs7CFuPFuhceeVZlXlL41pn5/bktb9uOHdS/tXNbZ0QO+8qyv"
    "B+9r27/91A6MumI+fkqk1UuX+niPi2vkNEpYlK9cw4gf4boPO89QBM1bKEovRFosYrjPtWvge7BWZApmRDM2Txj/"
    "FaUxyJ5sQU/HqR1dve29nd1dOHLtgfw+lSNKnKNZxPGx0ShAAgHzaBjAoMjhnFF/+dCsiIqPXP/MkFIk8VMv6pZb"
    "zvFdZ9zLbEeg1HVEVK59C2viAQ9gUbxR63haQR1I8G7KzIRiST7KmMAxR7cc4JYGopSK0Q921uQf7u3oWtqxtG1B"
    "55Le7pN62lec3LkE67ie/8TDuF4tjaWYQpIj7IrccC6YXJ4Mo+FMZYu9ezhgQCvzGt/ykE4r0Ej8JxwRV1P80Izy"
    "qxhXkrAj49mGXuwnP8eV8pqfa+MejP46canmHz3cpfCidtI7x+J5B95+Mx9TnJzP+QpzcU49RuuTcro9L8bwgL9V"
    "pueVLxMXpPndWCQU9W2L6wS9/JOSRyw2evj1WnKdjSR6HnqKvM3ih54c5Hq145SO7Gz4tF/zvto4H9UrfDERlF7A"
    "n9OP2AfjRMbmhCVsmTZ5NgaOKUpxaeC43dDVkpPuSTZaT5XoSJjIT7LUgKGpTjdMneRAtEBRfCsVLt88UMrHVZ25"
    "qN4J+ugSgyEMBClVhG8dTBrHIP6BCiLjkaKO+Qg4qE7agaMUptwx82LbkfkxyJK1FYoKPWG/5I9SBZHoj7a+ZdjP"
    "QYjGa4kLFC0lGWbFf8ioztAR2a3OCLeyECw9z11zvJmM+UF8xDZyQHTGQ9WUSFkUDiVYl+9WWHqc4/XERzRlme9S"
    "KkqldNwV3TLJ+ii/+9dd8BNMhcp4i8TIOqMWO7EgRZuTC5KINR8LlPWsFxrrLd4qHaRzVHofqiHLV/BCNUWoJvfx"
    "6hPuW4ljmkOlfFbYmFRrepMZUesTzQFNUs0wjRLGkHCMEePWjmZHtXVJJsQwXxynJDQlfkuaDhpXtTPXUF9misOi"
    "C5PyV1E0TTm6AlPb0BVqjx+WoyFN9VJcpJc6qgIX2Wb+/mmqSfanUjhWI6yWI8QEj7MwHckVlYrW1psctIax0jhH"
    "BKUxxCu9ZhdtOQYHQ+2xlKPcAIq5oQGxUs3xA+SL0uIPYC9M172uAF5ZbxsGw0AA+BxTk0rb4mER8OuiO72OW2WM"
    "HOyboAwiMhjRTeq9WUrUWaxQLekyXWcrzYiwksN1ovEKivVypIZYbLdJDTwoCFrySVOjykzZyMm6QMZmNY9ChyHN"
    "qhnuxex+qkLKTMZXcW9BRGzwG+LWGxGUBNzMKjYoCNMmCOrrg6JYUJyn1cjywmIL7pfytKMUIN4StadKlvrW1hnY"
    "vGAYJTbBwgW3TLEglsdyRW24VRwp9MZSEnbodI7Gd0R9iG8lPoBM5aqQyfrJTmSBhQ6yqGp2KFgWvxYV2Os5lnSi"
    "C1I2fHwQAdkx68ULGt0hAnrWK6goU5EIgy2+i2Od61p6VLxfY8mVWHuKYu2BvjQEiqocYb1H7Vt4VGMSkCAxz7fv"
    "jdZXi2uT1gs4IgmasEJVZyJQ4tCcBJO1XkSZ0NEC07feaG1fZL4om2RdQFV8DFLjEmv9ZV3UMUefODExSJMpLspu"
    "iigUtHoBrVfpI2z2k6Glx4hMMXUTjzMRmcJMjsVnq6TeLSqFs+9PVr3KLLUu3bY9at1HC+IF8WNs6ae4+6mG23SO"
    "iee9EFRly03ZFHpiNTc6joW2BptVubaPsVJCjY0DdKIGMS4kaGn1oa3m57zW+e95gHucu5jI82UAJzC8eRAn8Ef+"
    "DgmByaB++5TAZauCHdM4+l1u1vfjjawUh/epPZficPcXwAmP7A4RwVmrAL6ErMJ0MMoLj9oeGYERUhK9doSErWdx"
    "pAQdGf4AR759eQ5VEdES3po8R5aQYLWMzJIRTI6KoKdsR5bjXI1vsmarKofpdKocijtR5SCaclwCwfC3oMzxR+HP"
    "9B6KcxBBlhigBtECmOukpKd0a18sLC7y3UoROLJvP8nfuZ7ahijgD6IJ/IUI1V4S65AdSXXEeGOfWMeVWvctmN+2"
    "XMeWm1siKsC8jg+3ze08qbMXXov1TZlZ/5qKfh88d2Hb/p1d7T0faTtiRUdPe293D9TzbRT7vwruzaN7hrzLP7Xx"
    "4LkRu6qz67QO/Kc7YkaDEcfAnX0IUzevN8fT1f30Amrp4+kGTUN4ugfrDvpimS9IT5Olyf2i1cyY/HKdZegewpV0"
    "bw8MiiVwdjVLy5VYdBVDiLkCp/7jZrij5vqpwdRcsVm1g5QSa10YM8CXRscWX3T2czum5ypHRUradI6gK+74ys8R"
    "dMWmB1B0+95ztsOdO6LCjnf2yhF0xYaDKLoKOiLpelYcTTdJW781PC52oTE9p/5QgxJ6Noslass6XcA8Z0+mHuwd"
    "tttkXREbJLch7BbZolgfYXeh45+LrRWG3lbSbiys7wuCR5TrmayQ0LMJBFltoPnK5gXxU+OTA6tasrTdtHCkuUjv"
    "ThVuiuNYgIosCypSDcrLMUrE5BglqT7e7kuFT9MLtlJ2UyXbUnZXackkGRF2xeP7tk/XLS9s1pY9I7Jk3UkaBRPi"
    "B4TWK1Fgi9TFK9TsZOhVOZquWK9YzYtIujocQtJ1dVfebhJ1dSqdctF2jQt2C3KzKjx2R6TdTxNnuiA3heqhzN2t"
    "Ye5e4u6KaNRk+buVmSH83cB6I5TmAAbvsBBBTXVRo+PvHlidstN9JEp9602k1SqoE9i5WjEeMXiHD+LvTjPWG8Tg"
    "pXXTL2L5eeIpHRvK4vUTrDzEWK2qDiBc6LqfBCVm2GyFmB05xY9CVUlq63l3cVrHwUUDWbxB3AWoY9zr8pkBgoNV"
    "jsObcgFpE4OULR3K4g2CXEDqZKT7wtEsi1cnwkVDeLzpojAXiE7tC0K9w10QKjo2yaq4tVk+r7KbhjB6Gds9Rq/i"
    "ozV2td7WYag94TrJuJV6oMMJtkf7VQmxGvdLVd7Ux1TDY2x8cFvab8xrOFTb6/e8buaOMrt6J7Hi6stGP+f80sLe"
    "9p5e3LRj4YgzXKC1Y92Ig5zUcmNWaDlFf4jUcqQXUZRFbEr6RJcbpuVEl1OpfyrRZW/adlCWop3ILue9fcWHARLM"
    "dVm1h1HbCjAfheMHKzBvq/DwtniHO/ASu5B2uF73yzpovQtZh3SVHJGTdUjvSOG5AmlN26/xXDxE4Vkk9CU+2Hv0"
    "VG4HILF7LvKQE3reiyIPO9SAjlxE3chy69yDx7T5x4lA926VcHibKtCjB2tAb1evYZAI9LZ6DQb7Z9Xfdw9keGbP"
    "1Rr6AITtSDRsFzaY3urvDZmGnUlMH7y0oz9LUrT6BDoFvgf9+ybMfuOLXHk73WD/zG+JRH8bHbhGnb2WOz7gId2d"
    "Xf2CDzx3Nud3n9S5pH152xE9Szt62g748JKOFVFmyd9YoT+mny8SwctXS4RS97OrcJ1pz/mM4fseybKzR7LkqOPZ"
    "YiFR/wefy0LV/1yW+zhn30NZdlpQ+ZHIG5+yzZNZtlc/FJUO++qdb5936vEssmovPp7F7u2HsxQ5Gz1YTmHbWqJ+"
    "EYVV4V59TssqmXFHXu1h7b0n4zw6ucHqnPBOVnDwR0YEZRT5rJbzJqJcYlBIIKmKdEzPcet+ap0/IKZTEbZCoxLE"
    "3JJICJq62iloJ9eIU+E5DlVlLu0f8zYoxq12UTiVTkYqIDHfcKqTyVFWNsuslfKG6hMp/LqTAbzGiRRW5nR0BgoV"
    "fjZ8C7yBlU17AXV/oiA4vLtrycntPe1Lejt6BpZh5W9+RVWfr/n6G2qP/i9o7+3t6OlqW/iRrt72D6OiNhl6rpvL"
    "1DCvj9qmI6nJElTj0pklQVLyaW+TR8xV/Iuu+l2wUp9+hhJdmsJ5axVXSf8h33tyZ29H28IV7Us6YKzOx1J8ehZL"
    "eeRp3dl6j7bD2ns+gMSwNw9/lnvuzeMz/Qw/VYGHlUrI1euU2uAG83E8qn2pc+pQK4/PZjGP6jips7urfXnbwV3u"
    "nQiefOaXfmZhR1dvR9eSjrajO3pO6exqX47FtYgjjYdDXEi5gxgtLxIzIjLzdcKnE7zYg+YqD5vIK8gxMLhb+JSo"
    "axhltSvlHnIOr/VRQitfycjtggSKebPCq78hzhf+0vnC14XHsA2XkhdSLqCTV73+Wuesp0O5ahB3DXPwQhFfs5FQ"
    "Kk9Tp8sZzmKmuZjkcqeSehr/IjTJTv6NssoNlVfI9/JaxTsMD+H6ixkJoTKG9ZpfFqxeR/x6OhZ2L+ttm9vd64rr"
    "hnXyW8RlgipMRCE2Ck5807meMx4TkIByGplX0BVwPUbeXozrHvE4fgfb6jzcJixDX0O2LTita0nvadkynd7aCPGN"
    "UeFeDwHO0JiKeUgi28Qh8TtykqEfqeO+YHkToc3XhRd5/lYNXIV6JRzQ2hTX2nrm0NZ2kkBuAXyT4iu/iaRtf0md"
    "a/FLKBdSTkd6a5NPFar17L/CORDcHaAFq61Trv2aS32YueZY9Q0/q1m7YkBX6GxHSJzPiFJDu0LzSiVj4PRpeWOo"
    "/7Ym2yMSuh75ktD1yLPT1aIuVz61tK0/2kV65cnZIPf8O7IzKsutFXlsjR4a3NZFgW1/dTu+sO/JK/uevLKP+/8O"
    "P3mlbJ8SwL/g41fOT0diXce093RmA46FHcs7lrhwQa9pEeL576rU86smPsfFAzOb1+9OZjOSodmX2dyX2XzXZTZd"
    "6cU/Prf5Gfe4jAiitl4uvVk70Gh8Yl+ec1+ec1+e863lORf3Jzq/uotE5yCVtP+biU4kBic6Ee5LdO4o0blL/fp/"
    "XKJzgCP5j0EOJEp6Tt7R8233pT33pT3fLWnP/w9SUsaQ"
)
# unicode tables: end


# This block belongs at the very end of agenttool.py.  Run as a script or with -m, the file is
# the module `__main__`; registering it as `agenttool` too means a target's `import agenttool`
# gets this very module (the same classes) instead of loading the file a second time.
if __name__ == "__main__":
    sys.modules.setdefault("agenttool", sys.modules[__name__])
    sys.exit(main())
