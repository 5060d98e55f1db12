"""agenttool: the tool contract for Python agents, in one file.

A *tool* is something a model can call: a name, a description, a JSON Schema for its
arguments and a way to run one call.  This module turns typed Python functions into tools,
generates their schemas, validates what the model wrote before anything runs, converts what
the function returns into what the model sees, and runs batches of calls in parallel with
ordering rules a model can rely on.  Standard library only; CPython 3.9 to 3.13.

Copyright (c) 2026 the agenttool authors.  MIT licence (see LICENSE).
"""

from __future__ import annotations

import contextvars
import dataclasses
import enum
import functools
import inspect
import json
import re
import sys
import threading
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Union,
    overload,
    runtime_checkable,
)

__version__ = "0.1.0"

__all__ = [
    # errors
    "ValidationError",
    "SchemaError",
    "ToolCrash",
    "Cancelled",
    "NoTool",
    "CloseError",
    # schema, validation, decoding
    "Meta",
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
    # tools
    "Tool",
    "Annotations",
    "Replay",
    "PROPERTIES",
    "NO_ARGS",
    "is_strict",
    "is_sequential",
    "resource_of",
    "annotations_of",
    "confined_by",
    "replay_of",
    "FunctionTool",
    "tool",
    "new",
    "new_func",
    "wrap",
    "unwrap",
    # definitions and sets
    "definition",
    "definition_hash",
    "ToolSet",
    # the executor
    "DEFAULT_MAX_PARALLEL",
    "Job",
    "Event",
    "Executor",
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
        super().__init__(f"invalid arguments: {path}: {msg}" if path else f"invalid arguments: {msg}")


class SchemaError(ValueError):
    """A JSON Schema the validator cannot honour, refused when it is compiled."""


# ---------------------------------------------------------------------------------------------
# Meta: constraints and descriptions inside Annotated[...]
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Meta:
    """Schema facts for one type, written inside ``Annotated[T, Meta(...)]``.

    Every field left ``None`` says nothing; the others become the JSON Schema keyword of the
    same meaning (``min_length`` is ``minLength``, and so on).
    """

    description: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    exclusive_maximum: float | None = None
    multiple_of: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    format: str | None = None
    examples: list[Any] | None = None


# ---------------------------------------------------------------------------------------------
# Results and content parts
# ---------------------------------------------------------------------------------------------

Part = Dict[str, Any]
"""An Open Responses content part: ``text``/``input_text``, ``input_image`` or ``input_file``."""

_PART_TYPES = frozenset({"text", "input_text", "output_text", "input_image", "input_file"})


@dataclasses.dataclass
class Result:
    """What one call gives back: ``output`` for the model, ``details`` for the host only.

    ``output`` is text or a list of content parts; ``terminate`` hints that the agent loop may
    stop after this batch.  A failed call is never a ``Result`` with error text: the tool
    raises, and the host renders the failure once with :func:`error_result`.
    """

    output: Union[str, List[Part]] = ""
    details: Any = None
    terminate: bool = False


def text(s: str) -> Result:
    """A result whose output is the text ``s``."""
    return Result(s)


def parts(*content: Part) -> Result:
    """A result whose output is the content parts given, in order."""
    return Result(list(content))


def image(data: Union[bytes, str], mime: str = "image/png", *, detail: str = "auto") -> Part:
    """An ``input_image`` part: ``data`` as bytes (sent as a data URL) or an image URL."""
    if isinstance(data, str):
        url = data
    else:
        import base64

        url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return {"type": "input_image", "image_url": url, "detail": detail}


def file(
    data: Optional[bytes] = None, *, filename: str = "", url: str = "", mime: str = ""
) -> Part:
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
    non-empty list of them, is parts; anything else is compact JSON (dataclasses as their
    fields, enums by value, datetimes in ISO 8601, UUID, Decimal and paths as strings, sets as
    lists, bytes as base64), never a Python repr.
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
    """Compact JSON for the model and for records, through :func:`_jsonable`."""
    return json.dumps(value, default=_jsonable, ensure_ascii=False, separators=(",", ":"))


def _jsonable(value: Any) -> Any:
    """The ``default=`` hook of :func:`_dumps`: JSON for the values tools commonly return."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset)):
        try:
            return sorted(value)
        except TypeError:
            return list(value)
    if isinstance(value, (bytes, bytearray)):
        import base64

        return base64.b64encode(value).decode("ascii")
    isoformat = getattr(value, "isoformat", None)
    if callable(isoformat) and type(value).__module__ == "datetime":
        return isoformat()
    if type(value).__module__ in ("uuid", "decimal", "pathlib", "ipaddress", "fractions"):
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
        detail = str(value)
        kind = type(value).__name__
        super().__init__(f'tool "{tool}" crashed: {kind}: {detail}' if detail else f'tool "{tool}" crashed: {kind}')


class Cancelled(Exception):
    """A call that was cancelled: before it started, or while an ``async def`` tool ran."""


class NoTool(LookupError):
    """A job whose tool does not exist: the model named a tool nobody has."""


def error_message(exc: BaseException) -> str:
    """The model's message for a failure: ``str(exc)``, led by the type name where that alone
    says little (an empty message, or a bare key as ``KeyError`` gives it)."""
    msg = str(exc)
    kind = type(exc).__name__
    if not msg:
        return kind
    if isinstance(exc, KeyError):
        return f"{kind}: {msg}"
    return msg


def error_result(exc: BaseException) -> Result:
    """The result the model sees for a failure: ``Error: <message>``, exactly once."""
    return Result("Error: " + error_message(exc))


# ---------------------------------------------------------------------------------------------
# Calls and the call's context: progress, records, elicitation, cancellation
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Call:
    """One call a model made: its id, the arguments as JSON text or a decoded dict, the
    harness's idempotency key (kept across a re-run, fresh for any other call) and where
    progress goes when the call runs outside an executor."""

    id: str
    args: Union[str, bytes, Dict[str, Any], None] = ""
    idempotency_key: str = ""
    on_update: Optional[Callable[[Result], None]] = None


@dataclasses.dataclass
class ProgressInfo:
    """The details of a progress update, as MCP has them: how far, out of how much, and why."""

    progress: Optional[float] = None
    total: Optional[float] = None
    message: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Record:
    """A durable fact about a call: a namespace ``owner:kind`` and the value's JSON text."""

    ns: str
    data: str


class Action(str, enum.Enum):
    """How a person answered an elicitation."""

    ACCEPT = "accept"
    DECLINE = "decline"
    CANCEL = "cancel"


@dataclasses.dataclass
class Elicitation:
    """A question a tool asks a person mid-call: a message, a JSON Schema for a form answer,
    or a URL to send them to."""

    message: str
    schema: Optional[Dict[str, Any]] = None
    url: str = ""


@dataclasses.dataclass
class Answer:
    """The answer to an :class:`Elicitation`; ``content`` is the form's object on ACCEPT."""

    action: Action
    content: Optional[Dict[str, Any]] = None


Recorder = Callable[[Record], None]
Elicitor = Callable[[Elicitation], Answer]


class _Cancellation:
    """A call's cancellation: an event a thread can wait on, plus hooks run once when set
    (an ``async def`` tool cancels its task through one)."""

    __slots__ = ("event", "_hooks", "_lock")

    def __init__(self) -> None:
        self.event = threading.Event()
        self._hooks: List[Callable[[], None]] = []
        self._lock = threading.Lock()

    def cancel(self) -> None:
        with self._lock:
            if self.event.is_set():
                return
            self.event.set()
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            hook()

    def on_cancel(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Run ``hook`` when cancelled (now, if already); returns a function that forgets it."""
        with self._lock:
            if not self.event.is_set():
                self._hooks.append(hook)
                return lambda: self._forget(hook)
        hook()
        return lambda: None

    def _forget(self, hook: Callable[[], None]) -> None:
        with self._lock:
            if hook in self._hooks:
                self._hooks.remove(hook)


class _Scope:
    """What a running call sees through ``contextvars``; installed per call by the executor."""

    __slots__ = ("call", "tool", "cancellation", "recorder", "elicitor", "emit")

    def __init__(
        self,
        call: Call,
        tool: str,
        cancellation: _Cancellation,
        recorder: Optional[Recorder],
        elicitor: Optional[Elicitor],
        emit: Optional[Callable[[Result], None]],
    ) -> None:
        self.call = call
        self.tool = tool
        self.cancellation = cancellation
        self.recorder = recorder
        self.elicitor = elicitor
        self.emit = emit


_scope: contextvars.ContextVar[Optional[_Scope]] = contextvars.ContextVar(
    "agenttool_scope", default=None
)


def current_call() -> Optional[Call]:
    """The call running on this thread or task, or ``None`` outside a call."""
    scope = _scope.get()
    return scope.call if scope else None


def progress(
    update: Union[str, Result],
    *,
    progress: Optional[float] = None,
    total: Optional[float] = None,
    message: Optional[str] = None,
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
        result = dataclasses.replace(result, details=ProgressInfo(progress, total, message))
    scope.emit(result)


def cancelled() -> bool:
    """Whether the running call has been cancelled.

    Cancellation is cooperative for threads: Python cannot stop a thread from outside, so a
    long tool should look here (or wait on :func:`cancel_event`) and return early.  An
    ``async def`` tool is cancelled for real: its task receives ``CancelledError``.
    """
    scope = _scope.get()
    return scope is not None and scope.cancellation.event.is_set()


def cancel_event() -> threading.Event:
    """An event set when the running call is cancelled (never set outside a call), so a
    tool can ``wait(timeout)`` on it instead of sleeping."""
    scope = _scope.get()
    return scope.cancellation.event if scope else threading.Event()


def record_of(details: Any) -> Optional[Record]:
    """The :class:`Record` of a recordable details value, or ``None`` for any other value.

    A value is recordable when it has a ``record_ns`` attribute (class attribute or property)
    naming ``owner:kind``; its data is its JSON (a dataclass as its fields, ``record_ns``
    left out).  An empty namespace or a value JSON cannot hold raises ``ValueError``.
    """
    if details is None or isinstance(details, ProgressInfo):
        return None
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
    refused, and reaches the tool as it is.
    """
    scope = _scope.get()
    if scope is None or scope.elicitor is None:
        return Answer(Action.CANCEL)
    return scope.elicitor(question)


# ---------------------------------------------------------------------------------------------
# Tools and their properties
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Annotations:
    """MCP's hints about a tool; each field is ``None`` until stated.

    Hints, not guarantees: a policy may use them to be stricter, never alone to allow a call.
    """

    title: Optional[str] = None
    read_only: Optional[bool] = None
    destructive: Optional[bool] = None
    idempotent: Optional[bool] = None
    open_world: Optional[bool] = None


class Replay(str, enum.Enum):
    """Whether a call whose outcome is unknown may run again: never (UNKNOWN), freely (SAFE),
    or only with the same idempotency key (KEYED)."""

    UNKNOWN = "unknown"
    SAFE = "safe"
    KEYED = "keyed"


@runtime_checkable
class Tool(Protocol):
    """Something a model can call.  ``parameters`` is the JSON Schema of the arguments
    object, ``None`` for no arguments.  ``execute`` raises to fail.

    Optional properties a tool may declare, each read by exactly one function that supplies
    the default: ``strict`` (:func:`is_strict`), ``sequential`` (:func:`is_sequential`),
    ``resource`` (:func:`resource_of`), ``annotations`` (:func:`annotations_of`),
    ``confined(args)`` (:func:`confined_by`), ``replay(args)`` (:func:`replay_of`), and
    ``close()``, whose presence says the tool owns something the host must close.
    """

    name: str
    description: str
    parameters: Optional[Dict[str, Any]]

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


def annotations_of(t: Tool) -> Optional[Annotations]:
    """The tool's annotations, or ``None`` when it states none (not "harmless")."""
    annotations = getattr(t, "annotations", None)
    return annotations if isinstance(annotations, Annotations) else None


def confined_by(t: Tool, args: Dict[str, Any]) -> Tuple[bool, str]:
    """Whether this call runs confined and by what (``"landlock+seccomp"``); default
    ``(False, "")``, unconfined as far as anyone stated."""
    confined = getattr(t, "confined", None)
    if not callable(confined):
        return (False, "")
    answer = confined(args)
    return (bool(answer[0]), str(answer[1]))


def replay_of(t: Tool, args: Dict[str, Any]) -> Replay:
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


PROPERTIES: Dict[str, Callable[..., Any]] = {
    "strict": is_strict,
    "sequential": is_sequential,
    "resource": resource_of,
    "annotations": annotations_of,
    "confined": confined_by,
    "replay": replay_of,
}
"""The optional properties a tool may declare, each with its one reader (``close`` aside,
which is read by presence).  :func:`wrap` forwards every one of them."""

NO_ARGS: Dict[str, Any] = {"type": "object", "properties": {}, "required": []}
"""The schema served for a tool whose ``parameters`` is ``None``."""


def _parse_arguments(args: Union[str, bytes, Dict[str, Any], None]) -> Dict[str, Any]:
    """The model's arguments as a dict: empty means ``{}``, anything but an object is refused."""
    if args is None:
        return {}
    if isinstance(args, dict):
        return args
    if isinstance(args, (str, bytes, bytearray)):
        if not args.strip():
            return {}
        value = _loads(args)
        if isinstance(value, dict):
            return value
    raise ValidationError("", "expected a JSON object")


class FunctionTool:
    """A tool made from a Python function by :func:`tool` or :func:`new`.

    Arguments are validated against the generated schema (the strict one for a strict tool)
    and decoded into the values the hints promise before the function runs; invalid
    arguments never reach it.  Still callable as the plain function.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str = "",
        description: str = "",
        strict: bool = False,
        sequential: bool = False,
        resource: str = "",
        annotations: Optional[Annotations] = None,
        confined: Optional[Callable[[Dict[str, Any]], Tuple[bool, str]]] = None,
        replay: Union[Replay, Callable[[Dict[str, Any]], Replay], None] = None,
        parameters: Optional[Dict[str, Any]] = None,
        validate: Optional[bool] = None,
        struct: bool = False,
        raw: bool = False,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"agenttool: tool {name!r}: fn must be callable, got {fn!r}")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "")
        if not self.name or self.name == "<lambda>":
            raise ValueError("agenttool: a tool needs a name; give name=... for a lambda")
        self.description = description or _doc_summary(fn)
        self.strict = strict
        self.sequential = sequential
        self.resource = resource
        self.annotations = annotations
        self._confined = confined
        self._replay = replay
        self._raw = raw
        self._is_async = inspect.iscoroutinefunction(fn)
        self._decode: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None
        try:
            if raw or parameters is not None:
                self.parameters: Optional[Dict[str, Any]] = parameters
                checked = bool(validate) and parameters is not None
            else:
                spec = _arg_spec(fn, strict=strict, struct=struct)
                self.parameters = spec.schema
                self._decode = spec.decode
                checked = validate is not False
            self._validator = validator(self.parameters) if checked and self.parameters else None
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"agenttool: tool {self.name!r}: {exc}") from exc
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<agenttool tool {self.name!r}>"

    def confined(self, args: Dict[str, Any]) -> Tuple[bool, str]:
        return self._confined(args) if self._confined else (False, "")

    def replay(self, args: Dict[str, Any]) -> Replay:
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
        if self._raw:
            value = self.fn(call)
        else:
            args = _parse_arguments(call.args)
            if self._validator is not None:
                self._validator.validate(args)
            kwargs = self._decode(args) if self._decode is not None else args
            value = self.fn(**kwargs) if not self._is_async else None
            if self._is_async:
                value = _run_async(self.fn(**kwargs), scope)
        if self._raw and inspect.isawaitable(value):
            value = _run_async(value, scope)
        return output(value)


class _ClosingFunctionTool(FunctionTool):
    """A function tool that owns something: the host closes it through ``close()``."""

    def __init__(self, fn: Callable[..., Any], *, closer: Callable[[], Any], **options: Any):
        super().__init__(fn, **options)
        self._closer = closer

    def close(self) -> None:
        self._closer()


_ToolOption = Any


def new(name: str, description: str, fn: Callable[..., Any], **options: _ToolOption) -> FunctionTool:
    """Build a tool from a typed function; ``name`` and ``description`` may be ``""`` for the
    function's name and docstring summary.

    Options: ``strict``, ``sequential``, ``resource``, ``annotations``, ``confined``,
    ``replay`` (a :class:`Replay` or a function of the arguments), ``closer``,
    ``parameters`` (a supplied schema, then not validated unless ``validate=True``),
    ``validate=False`` (skip validation of the generated schema) and ``struct=True`` (the
    function's one parameter is a dataclass or TypedDict whose schema is the root).
    """
    closer = options.pop("closer", None)
    if closer is not None:
        return _ClosingFunctionTool(fn, closer=closer, name=name, description=description, **options)
    return FunctionTool(fn, name=name, description=description, **options)


def new_func(
    name: str,
    description: str,
    parameters: Optional[Dict[str, Any]],
    fn: Callable[[Call], Any],
    **options: _ToolOption,
) -> FunctionTool:
    """Build a tool from a raw ``fn(call)`` that reads ``call.args`` itself.

    ``parameters`` is served as given (``None`` means no arguments) and not validated unless
    ``validate=True``.  ``fn`` may return a :class:`Result` or anything :func:`output` takes.
    """
    if not name:
        raise ValueError("agenttool: new_func needs a name")
    return new(name, description, fn, parameters=parameters, raw=True, **options)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    fn: None = None, /, **options: _ToolOption
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Optional[Callable[..., Any]] = None, /, **options: _ToolOption
) -> Union[FunctionTool, Callable[[Callable[..., Any]], FunctionTool]]:
    """Make a function a tool: ``@tool`` or ``@tool(name=..., strict=True, ...)``.

    The options are those of :func:`new`, plus ``name`` and ``description``.  The decorated
    object is still callable as the plain function.
    """

    def make(f: Callable[..., Any]) -> FunctionTool:
        name = options.pop("name", "")
        description = options.pop("description", "")
        return new(name, description, f, **options)

    return make(fn) if fn is not None else make


# ---------------------------------------------------------------------------------------------
# async def tools: one event loop in a thread of its own, shared by every call
# ---------------------------------------------------------------------------------------------

_loop_lock = threading.Lock()
_loop: Any = None


def _event_loop() -> Any:
    """The loop ``async def`` tools run on, started on first use in a daemon thread and kept,
    so an async client a tool made once keeps working across calls and batches."""
    global _loop
    with _loop_lock:
        if _loop is None:
            import asyncio

            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="agenttool-async", daemon=True).start()
            _loop = loop
        return _loop


def _run_async(awaitable: Any, scope: _Scope) -> Any:
    """Run a coroutine on the shared loop in this call's context; cancelling the call
    cancels its task."""
    import concurrent.futures

    loop = _event_loop()
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()
    context = contextvars.copy_context()
    tasks: List[Any] = []

    async def runner() -> Any:
        return await awaitable

    def start() -> None:
        task = context.run(loop.create_task, runner())
        tasks.append(task)

        def finished(t: Any) -> None:
            if t.cancelled():
                done.set_exception(Cancelled(f'call "{scope.call.id}" was cancelled'))
            elif t.exception() is not None:
                done.set_exception(t.exception())
            else:
                done.set_result(t.result())

        task.add_done_callback(finished)

    loop.call_soon_threadsafe(start)
    forget = scope.cancellation.on_cancel(
        lambda: loop.call_soon_threadsafe(lambda: [t.cancel() for t in tasks])
    )
    try:
        return done.result()
    finally:
        forget()


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
    def parameters(self) -> Optional[Dict[str, Any]]:
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


def unwrap(w: Tool) -> Optional[Tool]:
    """The tool ``w`` wraps, or ``None`` when ``w`` is not a wrapper."""
    return w._inner if isinstance(w, _Wrapper) else None


# ---------------------------------------------------------------------------------------------
# Definitions, their hash, and sets of tools
# ---------------------------------------------------------------------------------------------


def definition(t: Tool, format: str = "responses") -> Dict[str, Any]:
    """The tool as a provider wants it in a request's ``tools``; by default the Open
    Responses function tool ``{"type", "name", "description", "parameters", "strict"?}``."""
    canonical: Dict[str, Any] = {
        "type": "function",
        "name": t.name,
        "description": t.description or "",
        "parameters": t.parameters if t.parameters is not None else NO_ARGS,
    }
    if is_strict(t):
        canonical["strict"] = True
    if format == "responses":
        return canonical
    return _provider_definition(canonical, format)


def definition_hash(t: Tool) -> str:
    """``sha256:`` and the hex digest of the canonical definition in RFC 8785 (JCS) form,
    so the same tool hashes the same in every language."""
    import hashlib

    canonical = _jcs(definition(t)).encode("utf-8")
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def _jcs(value: Any) -> str:
    """RFC 8785 canonical JSON: members sorted by UTF-16 code units, no whitespace,
    numbers as ECMAScript writes them."""
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

    def __init__(self, errors: List[BaseException]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


class ToolSet(List[Tool]):
    """The tools offered to a model, in order: a list with lookups, checks, definitions and
    one call from a provider's tool calls to the output items to send back."""

    def lookup(self, name: str) -> Optional[Tool]:
        """The tool of that name, or ``None``."""
        for t in self:
            if t.name == name:
                return t
        return None

    def validate(self) -> None:
        """Refuse empty and duplicate names (a provider refuses the request for either)."""
        problems: List[str] = []
        seen: set[str] = set()
        for i, t in enumerate(self):
            if not t.name:
                problems.append(f"tool[{i}]: empty name")
            elif t.name in seen:
                problems.append(f'tool "{t.name}": duplicate name')
            seen.add(t.name)
        if problems:
            raise ValueError("agenttool: " + "; ".join(problems))

    def close(self) -> None:
        """Close every tool that owns something, in order, and report every failure."""
        errors: List[BaseException] = []
        for t in self:
            closer = getattr(t, "close", None)
            if callable(closer):
                try:
                    closer()
                except Exception as exc:  # noqa: BLE001 - every failure is reported
                    err = RuntimeError(f'agenttool: close "{t.name}": {exc}')
                    err.__cause__ = exc
                    errors.append(err)
        if errors:
            raise CloseError(errors)

    def definitions(self, format: str = "responses") -> List[Dict[str, Any]]:
        """Every tool's definition, in order, for the provider named by ``format``."""
        return [definition(t, format) for t in self]


# ---------------------------------------------------------------------------------------------
# The executor
# ---------------------------------------------------------------------------------------------

DEFAULT_MAX_PARALLEL = 8


@dataclasses.dataclass
class Job:
    """One call of a batch; ``tool`` is ``None`` when the model named a tool nobody has."""

    tool: Optional[Tool]
    call: Call


@dataclasses.dataclass
class Event:
    """What the executor reports about job ``index``: a progress update (``final`` false,
    ``result`` the update) or its one final outcome (``result`` or ``error``)."""

    index: int
    final: bool
    result: Optional[Result] = None
    error: Optional[BaseException] = None


class _JobState:
    """One job's outbox: progress goes out until the final event, and never after it."""

    __slots__ = ("index", "lock", "finished", "events")

    def __init__(self, index: int, events: Any) -> None:
        self.index = index
        self.lock = threading.Lock()
        self.finished = False
        self.events = events

    def emit(self, result: Result) -> None:
        with self.lock:
            if not self.finished:
                self.events.put(Event(self.index, False, result))

    def finish(self, result: Optional[Result], error: Optional[BaseException]) -> None:
        with self.lock:
            self.finished = True
            self.events.put(Event(self.index, True, result, error))


class Executor:
    """Runs a batch of calls on threads, with the ordering rules a model can rely on.

    - At most ``max_parallel`` tools run at once (8 by default; 0 or less means 8).
    - A serial batch runs one call at a time in model order: asked for with
      ``sequential=True``, by ``max_parallel == 1``, or by any sequential tool in the batch.
    - Otherwise calls naming one resource form a chain that runs in model order, and every
      other call (a missing tool included) is a chain of its own; :meth:`chains` shows it.
      The next call of a chain starts only after the consumer has taken the previous one's
      final event (the generator resumed past it), so the consumer can cancel in between.
    - ``on_start(job)`` runs on the job's thread once it has its slot and turn, with the call
      installed, before the tool; raising there completes the job with that error.
    - Every job completes exactly once, whatever its tool raises (``BaseException``
      included); the executor itself never fails because of a tool.

    ``recorder`` receives :func:`write_record` calls and ``elicitor`` answers :func:`elicit`
    for every call of the batches this executor runs.
    """

    def __init__(
        self,
        max_parallel: int = DEFAULT_MAX_PARALLEL,
        sequential: bool = False,
        recorder: Optional[Recorder] = None,
        elicitor: Optional[Elicitor] = None,
        on_start: Optional[Callable[[Job], None]] = None,
    ) -> None:
        self.max_parallel = max_parallel if max_parallel > 0 else DEFAULT_MAX_PARALLEL
        self.sequential = sequential
        self.recorder = recorder
        self.elicitor = elicitor
        self.on_start = on_start

    def chains(self, jobs: Sequence[Job]) -> List[List[int]]:
        """The grouping :meth:`execute` runs: lists of job indexes, each run in order."""
        if not jobs:
            return []
        if (
            self.sequential
            or self.max_parallel == 1
            or any(j.tool is not None and is_sequential(j.tool) for j in jobs)
        ):
            return [list(range(len(jobs)))]
        chains: List[List[int]] = []
        by_resource: Dict[str, List[int]] = {}
        for i, job in enumerate(jobs):
            resource = resource_of(job.tool) if job.tool is not None else ""
            if not resource:
                chains.append([i])
            elif resource in by_resource:
                by_resource[resource].append(i)
            else:
                by_resource[resource] = [i]
                chains.append(by_resource[resource])
        return chains

    def execute(
        self, jobs: Sequence[Job], cancel: Optional[threading.Event] = None
    ) -> Iterator[Event]:
        """Run the batch, yielding its events on the caller's thread one at a time: progress
        as it comes, and one final event per job in completion order.

        Setting ``cancel`` cancels the batch: running tools see :func:`cancelled`, unstarted
        jobs complete with :class:`Cancelled`, and every job still gets its final event.
        Closing the generator early cancels the same way and waits for running tools.
        """
        import queue

        jobs = list(jobs)
        chains = self.chains(jobs)
        if not chains:
            return
        events: queue.SimpleQueue[Event] = queue.SimpleQueue()
        ready: queue.SimpleQueue[Optional[int]] = queue.SimpleQueue()
        position = [0] * len(chains)
        states = [_JobState(i, events) for i in range(len(jobs))]
        batch = _Cancellation()
        context = contextvars.copy_context()

        def work() -> None:
            while True:
                chain = ready.get()
                if chain is None:
                    return
                index = chains[chain][position[chain]]
                self._run(jobs[index], states[index], batch, context)

        workers = [
            threading.Thread(target=work, name=f"agenttool-worker-{n}", daemon=True)
            for n in range(min(self.max_parallel, len(chains)))
        ]
        for chain in range(len(chains)):
            ready.put(chain)
        for worker in workers:
            worker.start()
        chain_of = {index: c for c, members in enumerate(chains) for index in members}
        pending = len(jobs)
        try:
            while pending:
                if cancel is None or batch.event.is_set():
                    event = events.get()
                else:
                    try:
                        event = events.get(timeout=0.05)
                    except queue.Empty:
                        event = None
                    if cancel.is_set():
                        batch.cancel()
                    if event is None:
                        continue
                if not event.final:
                    on_update = jobs[event.index].call.on_update
                    if on_update is not None and event.result is not None:
                        on_update(event.result)
                    yield event
                    continue
                pending -= 1
                yield event
                if cancel is not None and cancel.is_set():
                    batch.cancel()
                chain = chain_of[event.index]
                position[chain] += 1
                if position[chain] < len(chains[chain]):
                    ready.put(chain)
        finally:
            if pending:
                batch.cancel()
            for _ in workers:
                ready.put(None)
            for worker in workers:
                worker.join()

    def results(
        self, jobs: Sequence[Job], cancel: Optional[threading.Event] = None
    ) -> Tuple[List[Optional[Result]], List[Optional[BaseException]]]:
        """Run the batch and return ``(results, errors)`` in job order: ``None`` in
        ``results`` where a job failed and in ``errors`` where it succeeded."""
        results: List[Optional[Result]] = [None] * len(jobs)
        errors: List[Optional[BaseException]] = [None] * len(jobs)
        for event in self.execute(jobs, cancel):
            if event.final:
                results[event.index] = event.result
                errors[event.index] = event.error
        return results, errors

    def _run(
        self, job: Job, state: _JobState, batch: _Cancellation, context: contextvars.Context
    ) -> None:
        """Run one job on this worker thread and post its final event."""
        call = job.call
        if batch.event.is_set():
            state.finish(None, Cancelled(f'call "{call.id}" was cancelled before it started'))
            return
        if job.tool is None:
            state.finish(None, NoTool(f'no tool for call "{call.id}"'))
            return
        scope = _Scope(call, job.tool.name, batch, self.recorder, self.elicitor, state.emit)
        result, error = context.copy().run(self._call_tool, job, job.tool, scope)
        state.finish(result, error)

    def _call_tool(
        self, job: Job, t: Tool, scope: _Scope
    ) -> Tuple[Optional[Result], Optional[BaseException]]:
        token = _scope.set(scope)
        try:
            if self.on_start is not None:
                try:
                    self.on_start(job)
                except Exception as exc:
                    return None, exc
                except BaseException as exc:
                    refusal = RuntimeError(
                        f'agenttool: on_start for call "{job.call.id}" crashed: '
                        f"{type(exc).__name__}: {exc}"
                    )
                    refusal.__cause__ = exc
                    return None, refusal
            try:
                result = t.execute(job.call)
            except Exception as exc:
                return None, exc
            except BaseException as exc:
                crash = ToolCrash(t.name, exc)
                crash.__cause__ = exc
                return None, crash.with_traceback(exc.__traceback__)
            if not isinstance(result, Result):
                return None, TypeError(
                    f'tool "{t.name}" returned {type(result).__name__}, not a Result'
                )
            return result, None
        finally:
            _scope.reset(token)


# TEMPORARY until the schema part is merged
def _doc_summary(fn: Any) -> str:
    return (inspect.getdoc(fn) or "").split("\n\n")[0].replace("\n", " ")


def _loads(text: Any) -> Any:
    return json.loads(text)
