"""agenttool_mcp: MCP both ways for agenttool, on the official ``mcp`` SDK 2.x (Python 3.10+).

Serve any agenttool ``Tool`` as an MCP server (``build_server``, ``serve``) and use the tools of
any MCP server as agenttool tools (``connect``, ``aconnect``).  The SDK does the protocol; this
module maps it to the contract both ways.  ``mcp`` is imported lazily, inside the functions that
need it, because importing it costs about 0.6 s.

Command line: ``python -m agenttool_mcp serve TARGET [--http HOST:PORT] [--allow-origin O]``,
``python -m agenttool_mcp list [--prefix P] (--url URL | -- COMMAND ...)`` and
``python -m agenttool_mcp call (--url URL | -- COMMAND ...) --tool NAME --args JSON``.

The sections, in file order:

- Keys and limits both sides share, and the SDK check: the ``_meta`` keys, ``FACTS_METHOD``.
- Content: agenttool parts <-> MCP content blocks (``content_of``, ``result_of``).
- Records in _meta: a result's record, written by the server and read by the client.
- Serve: tools as MCP definitions (input and output schemas, annotations, the tool ``_meta``).
- Serve: the server and its calls (``build_server``, its handlers and questions, ``set_tools``).
- Serve: tasks (the ``io.modelcontextprotocol/tasks`` extension: ``tasks/get``, ``tasks/update``,
  ``tasks/cancel``).
- Serve: stdio and HTTP (the Origin guard, SSE replies, ``serve``, ``asgi_app``).
- Consume: a server's tools as agenttool tools (local names, arguments, claims).
- Consume: the connection (``AsyncRemote``, ``aconnect``, ``Remote``, ``connect``).
- OAuth token stores (the SDK's TokenStorage protocol): ``MemoryTokenStore``, ``FileTokenStore``.
- Command line (``main``).

Copyright (c) 2026 the agenttool authors.  MIT licence (see LICENSE).
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import contextvars
import dataclasses
import functools
import hashlib
import hmac
import itertools
import json
import os
import re
import sys
import threading
import weakref
from collections.abc import (
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, TextIO, cast

import agenttool as at

if sys.version_info < (3, 10):  # pragma: no cover - the mcp SDK and this module need 3.10
    raise ImportError("agenttool_mcp needs Python 3.10 or later (as the mcp SDK does)")

if TYPE_CHECKING:  # pragma: no cover - the SDK is imported lazily at run time
    import asyncio
    import concurrent.futures

    import mcp.types as mt
    from mcp.client.auth import TokenStorage
    from mcp.client.client import Client
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.server.session import ServerSession
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

__all__ = [
    "FACTS_CAPABILITY",
    "FACTS_METHOD",
    "RECORD_META_KEY",
    "TOOL_META_KEY",
    "AsyncRemote",
    "FactsAnswer",
    "FileTokenStore",
    "MCPToolError",
    "MemoryTokenStore",
    "Remote",
    "RemoteError",
    "RemoteRecord",
    "TASKS_EXTENSION",
    "TASK_RECORD",
    "aconnect",
    "build_server",
    "connect",
    "content_of",
    "current_request_context",
    "current_session",
    "asgi_app",
    "main",
    "result_of",
    "serve",
    "set_tools",
]

# ---------------------------------------------------------------------------------------------
# Keys and limits both sides share, and the SDK check
# ---------------------------------------------------------------------------------------------


RECORD_META_KEY = "io.github.christopherdavenport.agenttool/record"
"""The ``_meta`` key of a result that carries a record: ``{"ns", "data"}`` (data: JSON text)."""

TOOL_META_KEY = "io.github.christopherdavenport.agenttool/tool"
"""The ``_meta`` key of a tool definition under which the tool's properties cross as the
server's statements (not MCP's hints): an object of the fields ``facts``, ``replay``,
``readOnly``, ``sequential``, ``resource``, ``task`` and ``wrapped``, each only when true or
non-empty (``task`` only when not ``"forbidden"``), no entry when none is.  ``facts`` says
the tool claims facts (:func:`agenttool.is_factual`), ``replay`` that it answers ``replay`` (so
the server answers :data:`FACTS_METHOD` for it), not that the answer is other than unknown;
``readOnly`` is its annotations' ``read_only``; ``task`` is :func:`agenttool.task_support_of`;
``wrapped`` says the ``outputSchema`` is ``{"result": schema}`` around a schema that is not an
object's, which the client unwraps.

How each of :data:`agenttool.PROPERTIES` crosses (test_readme.py holds this list to it):

- in this entry: ``facts``, ``replay``, ``sequential``, ``resource``, ``task`` (``"optional"``
  or ``"required"``: the 2026-07-28 wire has no ``execution.taskSupport``, and the server
  decides, so this says only what to expect);
- as MCP's own fields: ``annotations`` (the definition's ``annotations``), ``output_schema``
  (its ``outputSchema``);
- not sent, applied where the server runs the call: ``strict``, ``confined``,
  ``needs_approval`` (the server asks its client, by elicitation), ``timeout``,
  ``max_output``, ``isolated``;
- not served: ``cacheable`` (the server keeps no result cache), and the definition options
  MCP has no field for, ``defer_loading``, ``input_examples``, ``cache_control``,
  ``allowed_callers`` and ``namespace``.
"""

FACTS_METHOD = "execution/facts"
"""The MCP method that carries the facts and replay claims of a server's tools, for several
calls in one request (a model response's calls together): params ``{"calls": [{"name",
"arguments"}]}``, result ``{"results": [{"facts"?, "error"?, "replay"}]}`` in the order asked.
``facts`` is :meth:`agenttool.Facts.to_json` when the tool claims facts (``calls`` null for
the call itself, ``[]`` for nothing the tool can state); ``error`` in its place when the claim
failed or no tool has the name; neither when the tool makes no claim; ``replay`` is ``"safe"``
or ``"unknown"`` (``keyed`` crosses as unknown: MCP carries no idempotency key).  Answering
never runs a tool.  A method, not a reserved tool name, so it never reaches a model's list."""

FACTS_CAPABILITY = "io.github.christopherdavenport.agenttool/facts"
"""The experimental server capability (an empty object) saying the server answers
:data:`FACTS_METHOD`; a client asks only a server that advertises it."""

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The MCP tasks extension (SEP-2663, the 2026-07-28 revision), which both sides speak: a server
advertises it under ``capabilities.extensions``, and a client that declares it in its
capabilities may be answered a call with a task (``resultType: "task"``) to poll with
``tasks/get`` (the result inlined once ``completed``), answer with ``tasks/update`` and end with
``tasks/cancel``.  Which tools run as tasks is the tool's ``task`` property
(:func:`agenttool.task_support_of`), stated in the definition's ``_meta`` (``TOOL_META_KEY``'s
``task``)."""

TASK_RECORD = "agenttool_mcp:task"
"""The record a remote call writes when the server answers it with a task: ``{"taskId",
"tool"}`` (the remote name).  With a journal it is durable before the task is polled, so a run
resumed after a crash settles the call by polling that task (the remote tool's ``reconcile``)
rather than calling again."""

# tasks/get's ``_meta``: the task's last progress, {"progress", "total"?, "message"?}
_TASK_PROGRESS_META_KEY = "io.github.christopherdavenport.agenttool/progress"

# a result's ``_meta`` flag: its structuredContent is ``{"result": value}`` around a non-object
_WRAPPED_META_KEY = "io.github.christopherdavenport.agenttool/wrapped"
# Set by our server when max_output cut the text: the structured value is not added back as text.
_CUT_META_KEY = "io.github.christopherdavenport.agenttool/cut"
_CLOSED = "mcp: connection closed"
_LOST = "mcp: connection closed by the server"
_CONNECTION_CLOSED = -32000  # mcp_types.CONNECTION_CLOSED
_ERAS = ("auto", "legacy", "2026-07-28")  # what connect(era=...) takes
# Our client takes SSE events of up to 256 MiB (the SDK's default is 1 MiB), so a large result
# that a server streams after progress arrives over HTTP as it would over stdio, still bounded.
_CLIENT_SSE_EVENT_LIMIT = 256 * 1024 * 1024


def _mcp_available() -> None:
    """Fail with a clear message when the SDK cannot be used here."""
    if sys.version_info < (3, 10):
        raise RuntimeError("agenttool_mcp needs Python 3.10 or newer (the mcp SDK 2.x does)")
    try:
        import mcp  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "agenttool_mcp needs the mcp SDK: pip install 'agenttool[mcp]' (mcp>=2.3,<3)"
        ) from exc


# ---------------------------------------------------------------------------------------------
# Content: agenttool parts <-> MCP content blocks
# ---------------------------------------------------------------------------------------------


def _is_base64(data: str) -> bool:
    """Standard padded base64, by the core's one rule (the same verdict on every version)."""
    return re.match(at._BASE64, data) is not None


def content_of(output: str | list[dict[str, Any]]) -> list[mt.ContentBlock]:
    """Map a Result's output to MCP content blocks, as the Go server does.

    Text is one text block; text parts are text; a data-URL image is an image block and a plain
    URL a resource link; audio file data (typed audio, or named so) is an audio block, other
    file data an embedded blob (URI ``file_url`` or ``file:///name``), a URL alone a link, a
    name alone text; anything else crosses as its JSON text.
    """
    import mcp.types as mt

    if isinstance(output, str):
        return [mt.TextContent(type="text", text=output)]
    blocks: list[mt.ContentBlock] = []
    for part in output:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
            blocks.append(mt.TextContent(type="text", text=part["text"]))
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            url = part["image_url"]
            split = at._data_url(url)
            if split is not None:
                blocks.append(mt.ImageContent(type="image", data=split[1], mime_type=split[0]))
            else:
                blocks.append(mt.ResourceLink(type="resource_link", uri=url, name="image"))
        elif kind == "input_file" and (audio := _audio_of(part)) is not None:
            blocks.append(audio)
        elif kind == "input_file":
            name = part.get("filename") or ""
            url = part.get("file_url") or ""
            data = part.get("file_data")
            mime: str | None = None
            split = at._data_url(data)
            if split is not None:
                mime, data = split
            if isinstance(data, str) and _is_base64(data):
                uri = url or "file:///" + (name or "file")
                blob = mt.BlobResourceContents(uri=uri, blob=data, mime_type=mime)
                blocks.append(mt.EmbeddedResource(type="resource", resource=blob))
            elif url:
                blocks.append(mt.ResourceLink(type="resource_link", uri=url, name=name or url))
            elif name and data is None:
                blocks.append(mt.TextContent(type="text", text=name))
            else:
                blocks.append(mt.TextContent(type="text", text=at._dumps(part)))
        else:  # the core's encoder: strict JSON (no NaN), any Python value it knows
            blocks.append(mt.TextContent(type="text", text=at._dumps(part)))
    return blocks


_AUDIO_EXT = {
    "audio/wav": ".wav",
    "audio/x-wav": ".wav",
    "audio/wave": ".wav",
    "audio/mpeg": ".mp3",
    "audio/mp3": ".mp3",
    "audio/ogg": ".ogg",
    "audio/flac": ".flac",
    "audio/aac": ".aac",
    "audio/mp4": ".m4a",
    "audio/webm": ".webm",
}


def _audio_name(mime: str) -> str:
    base = mime.split(";", 1)[0].strip().lower()
    return "audio" + _AUDIO_EXT.get(base, "")


def _audio_of(part: dict[str, Any]) -> mt.AudioContent | None:
    """An audio block for a file part whose bytes are inline and whose type (stated, or read
    from its name as the core reads it) is audio; None for any other file."""
    import mcp.types as mt

    mime, data, _ = at._file_source(part)
    if not mime.startswith("audio/") or not data or not _is_base64(data):
        return None
    return mt.AudioContent(type="audio", data=data, mime_type=mime)


def result_of(result: mt.CallToolResult) -> at.Result:
    """Map an MCP tool result to a Result, as the Go client does (``isError`` not handled here).

    Text alone is text joined with newlines; an image, audio or blob makes parts: images as
    ``input_image`` data URLs, audio and blobs as ``input_file``, embedded text as text, links
    as ``resource: <uri>``.  Structured content becomes ``Result.structured`` (unwrapped from
    ``{"result": value}`` when our server wrapped it) and is appended as JSON text only when no
    text block already carries it and our server did not mark the text as cut by
    ``max_output``.  Details are the SDK result, or a ``RemoteRecord`` when its ``_meta``
    carries a record.
    """
    import mcp.types as mt

    items: list[dict[str, Any]] = []
    binary = False
    for block in result.content:
        if isinstance(block, mt.TextContent):
            items.append({"type": "text", "text": block.text})
        elif isinstance(block, mt.ImageContent):
            mime = block.mime_type or "application/octet-stream"
            url = f"data:{mime};base64,{block.data}"
            items.append({"type": "input_image", "image_url": url, "detail": "auto"})
            binary = True
        elif isinstance(block, mt.AudioContent):
            items.append(
                {
                    "type": "input_file",
                    "filename": _audio_name(block.mime_type or ""),
                    "file_data": block.data,
                }
            )
            binary = True
        elif isinstance(block, mt.EmbeddedResource):
            res = block.resource
            if isinstance(res, mt.BlobResourceContents):
                items.append(
                    {"type": "input_file", "filename": str(res.uri), "file_data": res.blob}
                )
                binary = True
            else:
                items.append({"type": "text", "text": res.text})
        elif isinstance(block, mt.ResourceLink):
            items.append({"type": "text", "text": f"resource: {block.uri}"})
        else:  # pragma: no cover - a content kind newer than this module
            items.append({"type": "text", "text": block.model_dump_json(by_alias=True)})
    structured = result.structured_content
    if structured is not None:
        wrapped = (result.meta or {}).get(_WRAPPED_META_KEY) is True
        if wrapped and isinstance(structured, dict) and "result" in structured:
            structured = structured["result"]
        texts = [p["text"] for p in items if p["type"] == "text"]
        cut = (result.meta or {}).get(_CUT_META_KEY) is True
        carried = texts or _carried(texts, items, result.structured_content, structured)
        if not cut and not carried:  # the model reads a text once, as the SDK's client does
            items.append({"type": "text", "text": at._dumps(result.structured_content)})
    details: Any = result
    record = _record_from_meta(result.meta)
    if record is not None:
        details = RemoteRecord(record[0], record[1], result)
    if binary:
        return at.Result(output=items, details=details, structured=structured)
    text = "\n".join(p["text"] for p in items)
    return at.Result(output=text, details=details, structured=structured)


def _carried(texts: Iterable[str], parts: Any, *values: Any) -> bool:
    """Whether the content already carries one of ``values``, so that its JSON text (the block
    the spec asks for beside structured content) must not be added a second time: a text is
    its JSON (empty text carries ``None``, as ``agenttool.output(None)`` is empty), or the
    content ``parts`` are the value (a tool that returned an image part)."""
    if isinstance(parts, list) and any(v == parts or [v] == parts for v in values):
        return True
    for text in texts:
        head = text.lstrip()[:1]
        if not head and any(v is None for v in values):
            return True
        if not head or head not in '{["-0123456789tfn':
            continue
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if any(value == v for v in values):
            return True
    return False


def _error_text(result: mt.CallToolResult) -> str:
    import mcp.types as mt

    texts = [b.text for b in result.content if isinstance(b, mt.TextContent)]
    return "\n".join(texts) or "tool call failed"


# ---------------------------------------------------------------------------------------------
# Records in _meta
# ---------------------------------------------------------------------------------------------


class RemoteRecord(at.Record):
    """The details of a remote result whose ``_meta`` carried a record: the server's record
    (``ns``, and ``data`` as JSON text kept byte for byte), which ``agenttool.record_of``
    passes on as it is, and ``result``, the SDK's ``CallToolResult``.
    """

    __slots__ = ("result",)
    result: Any

    def __init__(self, ns: str, data: str, result: Any = None) -> None:
        super().__init__(ns, data)
        self.result = result


def _record_from_meta(meta: Mapping[str, Any] | None) -> tuple[str, str] | None:
    if not meta:
        return None
    rec = meta.get(RECORD_META_KEY)
    if not isinstance(rec, dict):
        return None
    ns, data = rec.get("ns"), rec.get("data")
    if not isinstance(ns, str) or not ns or not isinstance(data, str):
        return None
    try:
        json.loads(data)
    except ValueError:
        return None
    return ns, data


def _record_meta(details: Any) -> dict[str, Any] | None:
    """The ``_meta`` entry for a result's details: the record, its error, or nothing."""
    if details is None:
        return None
    if isinstance(details, RemoteRecord):
        return {RECORD_META_KEY: {"ns": details.ns, "data": details.data}}
    try:
        rec = at.record_of(details)
    except Exception as exc:
        return {RECORD_META_KEY: {"error": at.error_message(exc)}}
    if rec is None:
        return None
    return {RECORD_META_KEY: {"ns": rec.ns, "data": rec.data}}


# ---------------------------------------------------------------------------------------------
# Serve: tools as MCP definitions
# ---------------------------------------------------------------------------------------------


def _compile(schema: Any) -> Any:
    """agenttool's own compiled validator for ``schema`` (the SDK validates nothing)."""
    return at.validator(schema)


@dataclasses.dataclass
class _Entry:
    tool: at.Tool
    definition: mt.Tool
    validator: Any
    output_check: Any = None  # the validator of the served outputSchema, when there is one
    wrapped: bool = False  # structured values cross as {"result": value}


def _output_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The ``outputSchema`` to serve for a tool's output schema, and whether values are wrapped:
    MCP wants an object, so any other schema becomes ``{"result": ...}`` (``$defs`` stay at
    the root, where their references point)."""
    if schema.get("type") == "object":
        return schema, False
    inner = dict(schema)
    root: dict[str, Any] = {k: inner.pop(k) for k in ("$schema", "$defs") if k in inner}
    wrapped = {"type": "object", "properties": {"result": inner}, "required": ["result"]}
    return {**wrapped, **root}, True


def _unwrapped_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The tool's own output schema from the ``{"result": ...}`` form :func:`_output_schema`
    served (its ``$defs`` back beside it)."""
    inner = schema.get("properties", {}).get("result")
    if not isinstance(inner, dict):
        return schema
    root = {k: schema[k] for k in ("$schema", "$defs") if k in schema}
    return {**inner, **root}


def _title_of(t: at.Tool, ann: at.Annotations | None) -> str | None:
    """The display name to serve: the tool's ``title``, else its annotations' title."""
    title = getattr(t, "title", None)
    if isinstance(title, str) and title:
        return title
    return ann.title if ann is not None else None


def _icons_of(t: at.Tool) -> list[mt.Icon] | None:
    """The tool's ``icons`` (``mcp.types.Icon``, dicts of its fields, or URLs), if it has any."""
    import mcp.types as mt

    icons = getattr(t, "icons", None)
    if not icons:
        return None
    return [
        i if isinstance(i, mt.Icon) else mt.Icon(src=i) if isinstance(i, str) else mt.Icon(**i)
        for i in icons
    ]


def _with_output_reader(tools: Iterable[at.Tool]) -> list[at.Tool]:
    """``tools``, and ``read_output`` beside them when one is pageable (``pageable=True``) and
    none is named so: a cut output's handle is read on the server that cut it."""
    tools = list(tools)
    names = {getattr(t, "name", "") for t in tools}
    if at._READ_OUTPUT in names or not any(getattr(t, "pageable", None) is True for t in tools):
        return tools
    return list(at.ToolSet(tools).pageable())


def _entries_of(tools: Iterable[at.Tool]) -> dict[str, _Entry]:
    import mcp.types as mt

    entries: dict[str, _Entry] = {}
    for t in _with_output_reader(tools):
        name = getattr(t, "name", "")
        if not isinstance(name, str) or not name:
            raise ValueError(f"agenttool_mcp: a tool has no name ({t!r}); give every tool a name")
        if name in entries:
            raise ValueError(f'agenttool_mcp: two tools are named "{name}"; names must be unique')
        schema = t.parameters if t.parameters is not None else dict(at.NO_ARGS)
        try:
            check = _compile(schema)
        except Exception as exc:
            raise ValueError(f'agenttool_mcp: tool "{name}": schema: {exc}') from exc
        annotations = None
        ann = at.annotations_of(t)
        output, wrapped, output_check = None, False, None
        declared = at.output_schema_of(t)
        if declared is not None:
            output, wrapped = _output_schema(declared)
            try:
                output_check = _compile(output)
            except Exception as exc:
                raise ValueError(f'agenttool_mcp: tool "{name}": output schema: {exc}') from exc
        if ann is not None:
            stated: dict[str, Any] = {
                "title": ann.title,
                "read_only_hint": ann.read_only,
                "destructive_hint": ann.destructive,
                "idempotent_hint": ann.idempotent,
                "open_world_hint": ann.open_world,
            }
            stated = {k: v for k, v in stated.items() if v is not None}
            if stated:
                annotations = mt.ToolAnnotations(**stated)
        facts = _tool_meta(t, ann)
        if wrapped:
            facts["wrapped"] = True  # outputSchema is {"result": schema}: clients unwrap it
        try:
            icons = _icons_of(t)
        except Exception as exc:
            raise ValueError(f'agenttool_mcp: tool "{name}": icons: {exc}') from exc
        definition = mt.Tool(
            name=name,
            title=_title_of(t, ann),
            description=t.description,
            input_schema=schema,
            output_schema=output,
            icons=icons,
            annotations=annotations,
            _meta={TOOL_META_KEY: facts} if facts else None,
        )
        entries[name] = _Entry(t, definition, check, output_check, wrapped)
    return entries


def _tool_meta(t: at.Tool, ann: at.Annotations | None) -> dict[str, Any]:
    """The tool's entry under ``TOOL_META_KEY``: only its true or non-empty fields."""
    meta: dict[str, Any] = {}
    if at.is_factual(t):
        meta["facts"] = True
    if callable(getattr(t, "replay", None)):
        meta["replay"] = True
    if ann is not None and ann.read_only is True:
        meta["readOnly"] = True
    if at.is_sequential(t):
        meta["sequential"] = True
    resource = at.resource_of(t)
    if resource:
        meta["resource"] = resource
    support = at.task_support_of(t)
    if support != "forbidden":
        meta["task"] = support
    return meta


# ---------------------------------------------------------------------------------------------
# Serve: the server and its calls
# ---------------------------------------------------------------------------------------------

_session_var: contextvars.ContextVar[ServerSession | None] = contextvars.ContextVar(
    "agenttool_mcp_session", default=None
)
_request_var: contextvars.ContextVar[ServerRequestContext[Any, Any] | None] = (
    contextvars.ContextVar("agenttool_mcp_request", default=None)
)


def current_session() -> ServerSession | None:
    """The MCP session of the client whose call is running (``None`` outside a served call).

    ``client_params`` names the client, ``client_capabilities`` says what it can do.
    """
    return _session_var.get()


def current_request_context() -> ServerRequestContext[Any, Any] | None:
    """The SDK's request context of the running served call (``request`` is the HTTP request)."""
    return _request_var.get()


class _ThreadBus:
    """A subscription bus for ``subscriptions/listen`` that any thread can publish to."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[object, tuple[Callable[[Any], None], asyncio.AbstractEventLoop]] = {}

    async def publish(self, event: Any) -> None:
        self.publish_threadsafe(event)

    def publish_threadsafe(self, event: Any) -> None:
        with self._lock:
            listeners = list(self._listeners.values())
        for listener, loop in listeners:
            try:
                loop.call_soon_threadsafe(listener, event)
            except RuntimeError:  # the loop has closed: that stream is gone
                pass

    def subscribe(self, listener: Callable[[Any], None]) -> Callable[[], None]:
        import asyncio

        token = object()
        with self._lock:
            self._listeners[token] = (listener, asyncio.get_running_loop())

        def unsubscribe() -> None:
            with self._lock:
                self._listeners.pop(token, None)

        return unsubscribe


class _Run:
    """One served call: the tool runs in a worker thread through the executor; the handler
    reads its events (progress, questions, the final result) from an asyncio queue."""

    def __init__(
        self,
        entry: _Entry,
        call: at.Call,
        loop: asyncio.AbstractEventLoop,
        recorder: Callable[[at.Record], None] | None,
        errors: at.ErrorPolicy = "full",
        inject: Mapping[str, Any] | None = None,
        tracer: Any = None,
    ) -> None:
        import asyncio

        self.tracer = tracer
        self.entry = entry
        self.call = call
        self.loop = loop
        self.recorder = recorder
        self.errors = errors
        self.inject = inject
        self.cancel = threading.Event()
        self.queue: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
        self.open: concurrent.futures.Future[at.Answer] | None = None
        self.lock = threading.Lock()
        self.unanswered: set[concurrent.futures.Future[at.Answer]] = set()
        self.asked = 0
        self.count = 0
        self.key = ""
        self.question: at.Elicitation | None = None
        self.abandon: asyncio.TimerHandle | None = None
        # questions on any worker: the sealed record this run resumes (empty for a new call),
        # and whether its questions are sealed rather than parked (decided at its first one)
        self.sealed = _Sealed([], [])
        self.resumable: bool | None = None

    def start(self) -> None:
        # the core's pool of worker threads, which the executor's batches use too
        at._workers.submit(functools.partial(contextvars.copy_context().run, self._work))

    def _post(self, item: tuple[Any, ...]) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the server's loop is gone; nobody is waiting any more
            self.cancel.set()

    def _work(self) -> None:
        executor = at.Executor(
            max_parallel=1,
            recorder=self.recorder,
            elicitor=self._elicit,
            approver=_ask_client,
            errors=self.errors,
            inject=self.inject,
            tracer=self.tracer,
        )
        try:
            for event in executor.execute([at.Job(self.entry.tool, self.call)], cancel=self.cancel):
                self._post(("event", event))
        except BaseException as exc:  # the executor itself failed: still one final answer
            self._post(("event", at.Event(0, True, None, exc)))

    def _elicit(self, question: at.Elicitation) -> at.Answer:
        import concurrent.futures

        replayed = self.sealed.replay(question)
        if replayed is not None:  # a re-run asking again what the client answered already
            return _checked_answer(replayed, question)
        answer: concurrent.futures.Future[at.Answer] = concurrent.futures.Future()
        with self.lock:
            if self.cancel.is_set():
                return at.Answer(at.Action.CANCEL)
            self.unanswered.add(answer)
        self._post(("ask", question, answer))
        try:
            return answer.result()
        finally:
            with self.lock:
                self.unanswered.discard(answer)

    def answer_open(self, answer: at.Answer, question: at.Elicitation | None = None) -> None:
        """Answer the open question; an accepted form is checked against its schema first
        (a bad one reaches the tool as the ``ValidationError`` its ``elicit`` raises)."""
        fut, self.open = self.open, None
        if fut is None or fut.done():
            return
        try:
            fut.set_result(_checked_answer(answer, question))
        except ValueError as exc:
            fut.set_exception(exc)

    def stop(self) -> None:
        """Cancel the tool (cooperatively) and answer CANCEL to any question it waits on."""
        with self.lock:
            self.cancel.set()
            waiting = list(self.unanswered)
        for fut in waiting:
            if not fut.done():
                fut.set_result(at.Answer(at.Action.CANCEL))
        self.open = None
        if self.abandon is not None:
            self.abandon.cancel()


def _checked_answer(answer: at.Answer, question: at.Elicitation | None) -> at.Answer:
    """``answer``, once an accepted form is checked against the question's schema; a ValueError
    saying why it does not fit (the tool's ``elicit`` raises it)."""
    if question is not None and answer.action == at.Action.ACCEPT and question.schema:
        try:
            _compile(question.schema).validate(answer.content or {})
        except Exception as exc:
            reason = str(exc).removeprefix("invalid arguments: ")
            raise ValueError(f"the answer does not fit the question: {reason}") from None
    return answer


class _ServerState:
    def __init__(
        self,
        recorder: Callable[[at.Record], None] | None,
        page_size: int | None,
        max_requests: int,
        abandon_after: float,
        errors: at.ErrorPolicy = "full",
        max_waiting: int = 64,
        inject: Mapping[str, Any] | None = None,
        max_tasks: int = 64,
        task_ttl: float = 3600.0,
    ) -> None:
        self.lock = threading.Lock()
        self.tracer: Any = None
        self.max_tasks = max_tasks
        self.task_ttl = task_ttl
        self.tasks: dict[str, _Task] = {}
        self.inject = inject
        self.errors = errors
        self.max_waiting = max_waiting
        self.entries: dict[str, _Entry] = {}
        self.recorder = recorder
        self.page_size = page_size
        self.max_requests = max_requests
        self.abandon_after = abandon_after
        self.ids = itertools.count(1)
        # legacy sessions to tell about list changes, held weakly by their connection so a
        # client that went away is forgotten
        self.sessions: weakref.WeakKeyDictionary[
            Any, tuple[ServerSession, asyncio.AbstractEventLoop]
        ] = weakref.WeakKeyDictionary()
        self.bus = _ThreadBus()
        self.pending: dict[str, _Run] = {}
        self.state_key: bytes | None = None  # seals the requestState of SAFE calls' questions


@functools.cache
def _facts_params() -> type[Any]:
    """The params model of ``FACTS_METHOD`` (made on first use: the SDK is imported lazily)."""
    import mcp.types as mt

    class FactsParams(mt.RequestParams):
        calls: list[dict[str, Any]] = []

    return FactsParams


def _answer_facts(t: at.Tool, args: Any, errors: at.ErrorPolicy) -> dict[str, Any]:
    """One call's answer to ``FACTS_METHOD``: the tool's claims, asked and never run.  A
    claim's error follows the server's error policy, as the tool's own failure would."""
    answer: dict[str, Any] = {}
    if not isinstance(args, dict):
        return {"error": "invalid arguments: expected a JSON object", "replay": "unknown"}
    try:
        facts, claims = at.facts_of(t, args)
        if claims:
            answer["facts"] = facts.to_json()
    except Exception as exc:
        answer["error"] = at.error_message(at._policy_error(exc, errors, t.name))
    answer["replay"] = "safe" if _replay_is_safe(t, args) else "unknown"
    return answer


def _replay_is_safe(t: at.Tool, args: Any) -> bool:
    """Whether ``t`` answers SAFE for running this call again (a failing answer is no)."""
    try:
        return at.replay_of(t, args) is at.Replay.SAFE
    except Exception:
        return False


def build_server(
    tools: Iterable[at.Tool],
    *,
    name: str = "agenttool",
    version: str | None = None,
    instructions: str | None = None,
    recorder: Callable[[at.Record], None] | None = None,
    page_size: int | None = None,
    max_requests: int = 10,
    abandon_after: float = 1800.0,
    errors: at.ErrorPolicy = "full",
    max_waiting: int = 64,
    inject: Mapping[str, Any] | None = None,
    tracer: Any = None,
    max_tasks: int = 64,
    task_ttl: float = 3600.0,
    state_key: str | bytes | None = None,
) -> Server[Any]:
    """Build the SDK's low-level MCP server for ``tools``.

    Schemas are served verbatim, arguments are checked with agenttool's validator before the
    tool runs, failures come back as ``isError`` results with the model's message, each call
    runs through ``agenttool.Executor`` in a worker thread (so progress, cancellation,
    elicitation and records work inside it), and ``tools.listChanged`` is advertised and sent
    by ``set_tools``.  ``recorder`` takes the records tools write; ``page_size`` splits
    ``tools/list`` into pages; a call may ask ``max_requests`` questions on a 2026-07-28
    session, whose answers must come within ``abandon_after`` seconds; at most
    ``max_waiting`` calls wait for answers on the server (the era has no session to count
    by), and a call asking beyond that ends with an error saying so.  A waiting call holds
    its tool's thread and its batch's, neither counted against the pool's thread cap.

    ``state_key`` (at least 32 bytes of secret, shared by every worker) lets any worker take
    the answers: a 2026-07-28 question of a tool whose replay is SAFE for the call's arguments
    (:func:`agenttool.replay_of`) then carries the whole call in its ``requestState``, sealed
    with HMAC-SHA256 under the key; the run stops, holding no thread and no ``max_waiting``
    place, and the answered call re-runs the tool from the top on whichever worker it
    reaches, each earlier question answered from the sealed answers (CANCEL for a question
    that is not the one asked at its place before) and the newest from the client.  A sealed
    state expires ``abandon_after`` seconds after it was issued; one altered, forged or
    expired is refused with JSON-RPC -32602.  Other tools' questions wait in the worker that
    asked them, as without a key.
    ``version`` defaults to agenttool's own; ``inject`` gives the tools' ``Inject("key")``
    parameters their values, as ``Executor(inject=...)`` does.  ``errors`` is the error policy, as
    ``agenttool.Executor`` takes it (``"redacted"`` keeps a tool's own exception text from
    the client).  A tool with an output schema (``agenttool.output_schema_of``) serves it
    as ``outputSchema`` and its ``Result.structured`` as ``structuredContent`` (checked
    against the schema first); a value that is not an object crosses as
    ``{"result": value}``.  ``tracer`` traces each call as ``Executor(tracer=...)`` does,
    its span the child of the caller's when the request's ``_meta`` carries a W3C
    ``traceparent`` (and ``tracestate``), as our client sends it.

    A tool whose ``task`` property is set (:func:`agenttool.task_support_of`) runs as a task
    for a client that declares :data:`TASKS_EXTENSION` (2026-07-28 era): the call is answered
    at once with the task, which the client polls; ``"required"`` refuses a client that does
    not declare it (JSON-RPC -32021).  At most ``max_tasks`` tasks are kept at once, running
    or ended (a call beyond them ends with an error saying so); an ended task's result is
    kept ``task_ttl`` seconds, then forgotten.  Tasks live in the process that made them.
    """
    _mcp_available()
    from mcp.server.subscriptions import ListenHandler

    state = _server_state(
        tools, recorder, page_size, max_requests, abandon_after, errors, max_waiting, inject
    )
    state.tracer = tracer
    state.state_key = _state_key(state_key)
    state.max_tasks = _positive_count("max_tasks", max_tasks)
    state.task_ttl = _task_ttl(task_ttl)
    server = _server_class()(
        name,
        version=version if version is not None else at.__version__,
        instructions=instructions,
        on_list_tools=functools.partial(_list_tools, state),
        get_tool_input_schema=functools.partial(_input_schema, state),
        # a task's answer is a dict (CreateTaskResult), which the SDK's runner serves as is
        on_call_tool=cast(Any, functools.partial(_call_tool, state)),
        on_subscriptions_listen=ListenHandler(state.bus),
    )
    _add_handlers(server, state)
    return server


def _server_state(
    tools: Iterable[at.Tool],
    recorder: Callable[[at.Record], None] | None,
    page_size: int | None,
    max_requests: int,
    abandon_after: float,
    errors: at.ErrorPolicy,
    max_waiting: int,
    inject: Mapping[str, Any] | None,
) -> _ServerState:
    """The state a server's handlers share, built from ``build_server``'s checked options."""
    at._check_errors(errors)
    state = _ServerState(
        recorder,
        page_size,
        max_requests,
        abandon_after,
        errors,
        _positive_count("max_waiting", max_waiting),
        inject,
    )
    state.entries = _entries_of(tools)
    return state


@functools.cache
def _server_class() -> type[Server[Any]]:
    """The SDK's low-level ``Server`` that advertises ``FACTS_CAPABILITY`` and list changes."""
    from mcp.server.lowlevel import NotificationOptions, Server

    class _AgentServer(Server[Any]):
        def get_capabilities(self, *args: Any, **kwargs: Any) -> mt.ServerCapabilities:
            # both eras: initialize and server/discover read the capabilities from here
            caps = super().get_capabilities(*args, **kwargs)
            caps.experimental = {**(caps.experimental or {}), FACTS_CAPABILITY: {}}
            caps.extensions = {**(caps.extensions or {}), TASKS_EXTENSION: {}}
            return caps

        def create_initialization_options(
            self,
            notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None,
        ) -> Any:
            return super().create_initialization_options(
                notification_options or NotificationOptions(tools_changed=True),
                experimental_capabilities,
                extensions,
            )

    return _AgentServer


def _add_handlers(server: Server[Any], state: _ServerState) -> None:
    """Register what the constructor takes no argument for: ``FACTS_METHOD``, ``initialized``."""
    import mcp.types as mt

    server.add_request_handler(FACTS_METHOD, _facts_params(), functools.partial(_facts, state))
    _add_task_handlers(server, state)
    server.add_notification_handler(
        "notifications/initialized", mt.NotificationParams, functools.partial(_initialized, state)
    )
    server._agenttool_state = state  # type: ignore[attr-defined]


def _input_schema(state: _ServerState, name: str) -> Mapping[str, Any] | None:
    """A served tool's ``inputSchema`` by name (None: no such tool), for the SDK's check of a
    2026-07-28 call's ``Mcp-Param-*`` headers.  Without it the SDK finds the schema by running
    the whole ``tools/list`` handler once per call (a dispatch of its own, every page); the
    list is the same for every caller here, so the lookup answers what that listing would."""
    with state.lock:
        entry = state.entries.get(name)
    return None if entry is None else entry.definition.input_schema


async def _list_tools(
    state: _ServerState,
    ctx: ServerRequestContext[Any, Any],
    params: mt.PaginatedRequestParams | None,
) -> mt.ListToolsResult:
    """``tools/list``: every definition, or one page of ``page_size`` (cursors are offsets)."""
    import mcp.types as mt

    with state.lock:
        defs = [e.definition for e in state.entries.values()]
    size = state.page_size or len(defs) or 1
    start = 0
    cursor = params.cursor if params is not None else None
    if cursor is not None:
        # the cursors issued are the offsets of later pages, written plainly
        start = int(cursor) if cursor.isdigit() and cursor == str(int(cursor)) else -1
        if start <= 0 or start >= len(defs) or start % size:
            from mcp.shared.exceptions import MCPError

            raise MCPError(-32602, f"invalid cursor {cursor!r}: this server never issued it")
    if not state.page_size:
        return mt.ListToolsResult(tools=defs)
    end = start + size
    nxt = str(end) if end < len(defs) else None
    return mt.ListToolsResult(tools=defs[start:end], next_cursor=nxt)


async def _call_tool(
    state: _ServerState, ctx: ServerRequestContext[Any, Any], params: mt.CallToolRequestParams
) -> mt.CallToolResult | mt.InputRequiredResult | dict[str, Any]:
    """``tools/call``: a new call checked and started, a parked one resumed, or a sealed one
    run again from the top with its answers, then driven."""
    import asyncio

    sealed: tuple[Any, _Sealed] | None = None
    if params.request_state:
        if state.state_key is not None and params.request_state.startswith(_SEALED_PREFIX):
            sealed = _unseal_call(state, params)
        else:
            return await _resume_parked(state, ctx, params)
    with state.lock:
        entry = state.entries.get(params.name)
        names = list(state.entries)
    if entry is None:
        return _error_result(
            f'unknown tool "{params.name}"; the tools are: {", ".join(names) or "none"}'
        )
    if sealed is not None:
        args = sealed[0]  # the sealed arguments, not the request's: the answers are theirs
    else:
        args = params.arguments if params.arguments is not None else {}
        if getattr(entry.tool, "lenient", None) is True:  # a lenient tool stays so when served
            args = at._lenient_args(entry.tool.parameters or at.NO_ARGS, args)
    try:
        entry.validator.validate(args)
    except Exception as exc:
        return _error_result(at.error_message(exc))
    if sealed is not None and not await asyncio.to_thread(_replay_is_safe, entry.tool, args):
        return _error_result(
            f'agenttool_mcp: tool "{entry.tool.name}" cannot take these answers here: its '
            "replay is not SAFE for these arguments on this server, and answers reach a call "
            "anywhere only by running it again; call the tool again"
        )
    as_task = sealed is None and _as_task(ctx, entry)
    call = at.Call(id=f"mcp_{next(state.ids)}", args=args)
    run = _Run(
        entry,
        call,
        asyncio.get_running_loop(),
        state.recorder,
        state.errors,
        state.inject,
        state.tracer,
    )
    if sealed is not None:
        run.sealed, run.resumable = sealed[1], True
    _session_var.set(ctx.session)
    _request_var.set(ctx)
    at._continue_trace(params.meta)  # the caller's span, the parent of the call's
    if as_task:
        return _start_task(state, ctx, run)
    run.start()
    return await _drive(state, ctx, run)


async def _resume_parked(
    state: _ServerState, ctx: ServerRequestContext[Any, Any], params: mt.CallToolRequestParams
) -> mt.CallToolResult | mt.InputRequiredResult:
    """Answers for a call parked in this worker: its open question answered, then driven on."""
    assert params.request_state is not None
    with state.lock:
        run = state.pending.pop(params.request_state, None)
    if run is None or run.entry.tool.name != params.name:
        from mcp.shared.exceptions import MCPError

        hint = ""
        if params.request_state.startswith(_SEALED_PREFIX):
            hint = (
                "; it was sealed by a server with a state key, and this one has none (give "
                "every worker the same AGENTTOOL_MCP_STATE_KEY)"
            )
        # an unknown state (tampered, expired, answered already, another worker's) is the
        # client's invalid parameter, as the 2026-07-28 revision says: a JSON-RPC error
        raise MCPError(
            -32602,
            f'agenttool_mcp: tool "{params.name}": the call these answers belong to is '
            f"no longer waiting for them (requestState unknown here{hint}); call the tool again",
        )
    if run.abandon is not None:
        run.abandon.cancel()
    response = (params.input_responses or {}).get(run.key)
    run.answer_open(_answer_of(response), run.question)
    return await _drive(state, ctx, run)


async def _drive(
    state: _ServerState, ctx: ServerRequestContext[Any, Any], run: _Run
) -> mt.CallToolResult | mt.InputRequiredResult:
    """Relay a run's progress and questions to the client until its result, or until a
    2026-07-28 question is sent (the run parked here, or stopped with the call sealed)."""
    import mcp.types as mt

    parked = False
    try:
        while True:
            item = await run.queue.get()
            if item[0] == "event":
                event: at.Event = item[1]
                if not event.final:
                    await _send_progress(ctx, run, event.result)
                    continue
                return _final(event, run.entry)
            question: at.Elicitation = item[1]
            run.open = item[2]
            if not _can_elicit(ctx, question):
                run.answer_open(at.Answer(at.Action.CANCEL))
                continue
            from mcp_types.version import MODERN_PROTOCOL_VERSIONS

            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                reply: mt.CallToolResult | mt.InputRequiredResult | None
                if await _resumable(state, run):
                    reply = _seal_question(state, run, question)  # the run is stopped below
                else:
                    reply = _park(state, run, question)
                    parked = isinstance(reply, mt.InputRequiredResult)
                if reply is None:
                    continue
                return reply
            try:
                answer = await _elicit_legacy(ctx, question)
            except Exception:
                answer = at.Answer(at.Action.CANCEL)
            run.answer_open(answer, question)
    finally:
        if not parked:
            run.stop()


def _park(
    state: _ServerState, run: _Run, question: at.Elicitation
) -> mt.CallToolResult | mt.InputRequiredResult | None:
    """A 2026-07-28 question as the client's input request, the run parked under a token
    until the answers come back; ``None`` (answered CANCEL) past ``max_requests``, an error
    past ``max_waiting``."""
    import secrets

    import mcp.types as mt

    run.asked += 1
    if run.asked > state.max_requests:
        run.answer_open(at.Answer(at.Action.CANCEL))
        return None
    token = secrets.token_urlsafe(24)
    run.key = f"elicit_{run.asked}"
    run.question = question
    with state.lock:
        full = len(state.pending) >= state.max_waiting
        if not full:
            state.pending[token] = run
    if full:  # the run is stopped (its tool cancelled) on the way out
        return _error_result(
            f'agenttool_mcp: tool "{run.entry.tool.name}" asked a question, but '
            f"{state.max_waiting} calls already wait for answers on this server "
            f"(its max_waiting): answer them, or let them expire after "
            f"{state.abandon_after:g} s, and call again"
        )
    run.abandon = _running_loop().call_later(state.abandon_after, _abandon, state, token)
    return mt.InputRequiredResult(
        input_requests={run.key: mt.ElicitRequest(params=_elicit_params(question))},
        request_state=token,
    )


# Questions on any worker.  With a state key (build_server's state_key, AGENTTOOL_MCP_STATE_KEY
# for asgi_app and the command line), a 2026-07-28 question of a call whose replay is SAFE is
# not parked: its requestState is the call itself, sealed, and the run stops.  The answered
# call runs the tool again from the top on whatever worker it reaches; its questions are
# answered in order from the sealed answers while each is the question asked at that place
# before (CANCEL for one that is not: its answer was given to another question), and the
# first question past them goes to the client sealed again.  A tool whose replay is not SAFE
# must not run twice, so its questions stay parked with their worker.
#
# The token: "at1." + base64url(payload) + "." + base64url(HMAC-SHA256(key, all before the
# last ".")); the payload is the compact JSON {"tool", "args", "asked": [question digests],
# "answers": [[action, content]], "expires": unix seconds}, readable by the client (it holds
# its own answers) and tamper-evident, never secret.

_SEALED_PREFIX = "at1."  # a sealed requestState, version 1 of its format
_STATE_KEY_MIN = 32  # bytes: the SDK's own request-state keys want as many


def _state_key(value: str | bytes | None) -> bytes | None:
    """``build_server``'s ``state_key`` as the HMAC key (``None``: no key), or an error naming
    the option when it is not text or bytes, or shorter than 32 bytes."""
    if value is None:
        return None
    if not isinstance(value, (str, bytes)):
        raise TypeError(
            f"agenttool_mcp: state_key must be str or bytes, not {type(value).__name__}"
        )
    key = value.encode() if isinstance(value, str) else bytes(value)
    if len(key) < _STATE_KEY_MIN:
        raise ValueError(
            f"agenttool_mcp: state_key must be at least {_STATE_KEY_MIN} bytes of secret "
            f'randomness, not {len(key)} (make one with: python -c "import secrets; '
            'print(secrets.token_urlsafe(32))")'
        )
    return key


class _Sealed:
    """The questions a sealed call put to the client (``asked``: each one's digest, in order)
    and the answers it got (``answers``: as many once the newest came back), which a re-run
    of the call takes in order (``replay``)."""

    def __init__(self, asked: list[str], answers: list[at.Answer]) -> None:
        self.asked = asked
        self.answers = answers
        self.position = 0  # how many questions the re-run asked so far

    def replay(self, question: at.Elicitation) -> at.Answer | None:
        """The re-run's next question answered from the sealed answers: as the client
        answered it when it is the question asked at this place before, else CANCEL; ``None``
        past the sealed answers (that question goes to the client)."""
        if self.position >= len(self.answers):
            return None
        place = self.position
        self.position += 1
        if _question_id(question) != self.asked[place]:
            return at.Answer(at.Action.CANCEL)
        return self.answers[place]


def _question_id(question: at.Elicitation) -> str:
    """A question's digest (message, schema, URL): a re-run's question is the one sealed at
    its place when the digests are equal."""
    text = at._dumps([question.message, question.schema, question.url])
    return _b64url(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16])


def _b64url(data: bytes) -> str:
    """``data`` in unpadded base64url: text a requestState carries as it is."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _state_mac(key: bytes, signed: str) -> str:
    """The HMAC-SHA256 under ``key`` of a sealed requestState's text before its MAC."""
    return _b64url(hmac.new(key, signed.encode("ascii"), hashlib.sha256).digest())


def _seal(key: bytes, payload: dict[str, Any]) -> str:
    """``payload`` as a sealed requestState: its compact JSON with an HMAC-SHA256 under ``key``."""
    signed = _SEALED_PREFIX + _b64url(at._dumps(payload).encode("utf-8", "surrogatepass"))
    return f"{signed}.{_state_mac(key, signed)}"


def _unseal(key: bytes, token: str) -> dict[str, Any] | None:
    """The payload of a requestState this key sealed, ``None`` for any other text."""
    signed, dot, mac = token.rpartition(".")
    if not dot or not token.isascii() or not signed.startswith(_SEALED_PREFIX):
        return None
    if not hmac.compare_digest(mac, _state_mac(key, signed)):
        return None
    body = signed[len(_SEALED_PREFIX) :]
    try:
        payload = at._loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except Exception:  # pragma: no cover - only a holder of the key could seal such a text
        return None
    return payload if isinstance(payload, dict) else None


def _sealed_call(payload: dict[str, Any] | None) -> tuple[str, Any, _Sealed, float] | None:
    """A sealed payload's tool name, arguments, questions and answers, and expiry; ``None``
    when it is not of the shape ``_seal_question`` writes."""
    if payload is None:
        return None
    try:
        tool, args, asked = payload["tool"], payload["args"], payload["asked"]
        answers = [at.Answer(at.Action(a), c) for a, c in payload["answers"]]
        expires = float(payload["expires"])
    except (KeyError, TypeError, ValueError):  # pragma: no cover - sealed by a key holder
        return None
    if not isinstance(tool, str) or not isinstance(asked, list) or len(asked) != len(answers) + 1:
        return None  # pragma: no cover - as above
    return tool, args, _Sealed(asked, answers), expires


def _unseal_call(state: _ServerState, params: mt.CallToolRequestParams) -> tuple[Any, _Sealed]:
    """The arguments and answers a sealed requestState carries for the tool called, the
    newest answer read from the request's ``inputResponses``; JSON-RPC -32602 (the client's
    invalid parameter, as for an unknown state) when it does not verify, names another tool
    or has expired."""
    import time

    from mcp.shared.exceptions import MCPError

    assert state.state_key is not None and params.request_state is not None
    name = params.name
    sealed = _sealed_call(_unseal(state.state_key, params.request_state))
    if sealed is None:
        raise MCPError(
            -32602,
            f'agenttool_mcp: tool "{name}": the requestState does not verify under this '
            "server's state key (altered, forged, or sealed under another key); call the "
            "tool again",
        )
    tool, args, record, expires = sealed
    if tool != name:
        raise MCPError(
            -32602,
            f'agenttool_mcp: tool "{name}": the requestState belongs to a call of another tool '
            f"({json.dumps(tool, ensure_ascii=False)}); call the tool again",
        )
    late = time.time() - expires
    if late >= 0:
        raise MCPError(
            -32602,
            f'agenttool_mcp: tool "{name}": the requestState expired {late:.0f} s ago (a '
            "question's answers are taken for abandon_after seconds); call the tool again",
        )
    response = (params.input_responses or {}).get(f"elicit_{len(record.asked)}")
    record.answers.append(_answer_of(response))
    return args, record


async def _resumable(state: _ServerState, run: _Run) -> bool:
    """Whether a run's questions are sealed for any worker to resume (the server has a state
    key and the tool's replay is SAFE for the call) rather than parked here; decided at its
    first question, in a worker thread since ``replay`` is the tool's own code."""
    import asyncio

    if run.resumable is None:
        run.resumable = state.state_key is not None and await asyncio.to_thread(
            _replay_is_safe, run.entry.tool, run.call.args
        )
    return run.resumable


def _seal_question(
    state: _ServerState, run: _Run, question: at.Elicitation
) -> mt.InputRequiredResult | None:
    """A resumable run's question as the client's input request, the whole call sealed in
    its requestState (the tool, its arguments, the questions and answers so far, an expiry
    ``abandon_after`` seconds on); the caller stops the run, so nothing waits here.  ``None``
    (answered CANCEL) past ``max_requests`` questions put to the client."""
    import time

    import mcp.types as mt

    assert state.state_key is not None
    if len(run.sealed.asked) >= state.max_requests:
        run.answer_open(at.Answer(at.Action.CANCEL))
        return None
    asked = [*run.sealed.asked, _question_id(question)]
    payload = {
        "tool": run.entry.tool.name,
        "args": run.call.args,
        "asked": asked,
        "answers": [[a.action.value, a.content] for a in run.sealed.answers],
        "expires": round(time.time() + state.abandon_after, 3),
    }
    return mt.InputRequiredResult(
        input_requests={f"elicit_{len(asked)}": mt.ElicitRequest(params=_elicit_params(question))},
        request_state=_seal(state.state_key, payload),
    )


async def _initialized(
    state: _ServerState, ctx: ServerRequestContext[Any, Any], params: mt.NotificationParams
) -> None:
    """Remember a legacy session (held weakly by its connection) to tell it of list changes."""
    import asyncio

    owner = getattr(ctx.session, "_connection", None) or ctx.session
    with state.lock:
        state.sessions[owner] = (ctx.session, asyncio.get_running_loop())


async def _facts(
    state: _ServerState, ctx: ServerRequestContext[Any, Any], params: Any
) -> dict[str, Any]:
    """``FACTS_METHOD``: each call's claims, asked of its tool in a worker thread, in order."""
    import asyncio

    with state.lock:
        entries = dict(state.entries)
    _session_var.set(ctx.session)  # a tool's facts may read the client's session
    _request_var.set(ctx)
    results = []
    for c in params.calls:
        name = c.get("name")
        entry = entries.get(name) if isinstance(name, str) else None
        if entry is None:
            results.append(
                {
                    "error": f"unknown tool {json.dumps(name, ensure_ascii=False)}",
                    "replay": "unknown",
                }
            )
            continue
        args = c.get("arguments")
        results.append(
            await asyncio.to_thread(
                _answer_facts, entry.tool, {} if args is None else args, state.errors
            )
        )
    return {"results": results}


def _running_loop() -> asyncio.AbstractEventLoop:
    import asyncio

    return asyncio.get_running_loop()


def _positive_count(option: str, value: Any) -> int:
    """``value`` when it is a whole number of at least 1, else a ValueError naming ``option``."""
    if at._positive(value, (int,)) is None:
        raise ValueError(f"agenttool_mcp: {option} must be a whole number of at least 1")
    return int(value)


def _abandon(state: _ServerState, token: str) -> None:
    with state.lock:
        run = state.pending.pop(token, None)
    if run is not None:
        run.stop()


def _ask_client(job: at.Job) -> bool | str:
    """Approve a served call that needs it by asking the MCP client (elicitation): accepted,
    it runs; declined, cancelled, or a client that cannot be asked, it is denied."""
    assert job.tool is not None
    name = job.tool.name
    args = json.dumps(job.call.args, ensure_ascii=False)
    if len(args) > 1000:
        args = args[:1000] + " ..."
    answer = at.elicit(
        at.Elicitation(
            f'Allow the tool "{name}" to run with these arguments? {args}',
            dict(at.NO_ARGS),
        )
    )
    if answer.action == at.Action.ACCEPT:
        return True
    return f'call to "{name}" was not approved ({answer.action.value}); it did not run'


def _error_result(message: str) -> mt.CallToolResult:
    import mcp.types as mt

    return mt.CallToolResult(content=[mt.TextContent(type="text", text=message)], is_error=True)


def _final(event: at.Event, entry: _Entry) -> mt.CallToolResult:
    import mcp.types as mt

    if event.error is not None or event.result is None:
        err = event.error if event.error is not None else RuntimeError("the tool gave no result")
        return _error_result(at.error_message(err))
    result = event.result
    meta = _record_meta(result.details)
    content = content_of(result.output)
    if entry.output_check is None:
        return mt.CallToolResult(content=content, is_error=False, _meta=meta)
    structured = {"result": result.structured} if entry.wrapped else result.structured
    try:
        entry.output_check.validate(structured)
    except Exception as exc:
        reason = str(exc).removeprefix("invalid arguments: ")
        return _error_result(
            f'tool "{entry.tool.name}" returned a value that does not fit its output schema: '
            f"{reason}"
        )
    texts = [b.text for b in content if isinstance(b, mt.TextContent)]
    # The spec's text block, unless the text is there already or max_output cut it on purpose.
    cut = result.full_output is not None
    if not cut and not _carried(texts, result.output, structured, result.structured):
        content.append(mt.TextContent(type="text", text=at._dumps(structured)))
    if entry.wrapped:
        meta = {**(meta or {}), _WRAPPED_META_KEY: True}
    if cut:
        meta = {**(meta or {}), _CUT_META_KEY: True}
    return mt.CallToolResult(
        content=content, structured_content=structured, is_error=False, _meta=meta
    )


def _progress_of(run: _Run, update: at.Result) -> tuple[float, float | None, str | None]:
    """A tool's progress update as MCP's (progress, total, message): its count unless it
    says a number."""
    run.count += 1
    text = update.output if isinstance(update.output, str) else ""
    progress: float = run.count
    total: float | None = None
    message: str | None = text or None
    info = update.details
    if isinstance(info, at.ProgressInfo):
        if info.progress is not None:
            progress = info.progress
        total = info.total
        if info.message is not None:
            message = info.message
    return progress, total, message


async def _send_progress(
    ctx: ServerRequestContext[Any, Any], run: _Run, update: at.Result | None
) -> None:
    if update is None:
        return
    progress, total, message = _progress_of(run, update)
    try:
        await ctx.session.report_progress(progress, total, message)
    except Exception:  # progress is best effort: a gone client must not fail the call
        pass


def _can_elicit(ctx: ServerRequestContext[Any, Any], question: at.Elicitation) -> bool:
    return _caps_elicit(ctx.session.client_capabilities, question)


def _caps_elicit(caps: Any, question: at.Elicitation) -> bool:
    """Whether a client of these capabilities can be asked ``question``."""
    if caps is None or caps.elicitation is None:
        return False
    if question.url:
        return caps.elicitation.url is not None
    # an empty elicitation capability means form mode (the 2025-06-18 spelling)
    return caps.elicitation.form is not None or caps.elicitation.url is None


def _elicit_params(question: at.Elicitation) -> Any:
    import mcp.types as mt

    if question.url:
        import secrets

        return mt.ElicitRequestURLParams(
            message=question.message, url=question.url, elicitation_id=secrets.token_hex(8)
        )
    schema = question.schema if question.schema is not None else dict(at.NO_ARGS)
    return mt.ElicitRequestFormParams(message=question.message, requested_schema=schema)


async def _elicit_legacy(
    ctx: ServerRequestContext[Any, Any], question: at.Elicitation
) -> at.Answer:
    import mcp.types as mt

    params = _elicit_params(question)
    result = await ctx.session.send_request(
        mt.ElicitRequest(params=params),
        mt.ElicitResult,
        metadata=_related(ctx),
    )
    return _answer_of(result)


def _related(ctx: ServerRequestContext[Any, Any]) -> Any:
    from mcp.shared.message import ServerMessageMetadata

    return ServerMessageMetadata(related_request_id=ctx.request_id)


def _answer_of(response: Any) -> at.Answer:
    import mcp.types as mt

    if isinstance(response, mt.ElicitResult):
        action = at.Action(response.action)
        content = response.content if action == at.Action.ACCEPT else None
        return at.Answer(action, content)
    return at.Answer(at.Action.CANCEL)


def set_tools(server: Server[Any], tools: Iterable[at.Tool]) -> None:
    """Replace the tools ``server`` (from ``build_server``) serves and tell every client.

    Callable from any thread; legacy sessions get ``notifications/tools/list_changed``,
    2026-07-28 clients get it on their ``subscriptions/listen`` stream.
    """
    import asyncio

    from mcp.shared.subscriptions import ToolsListChanged

    state: _ServerState | None = getattr(server, "_agenttool_state", None)
    if state is None:
        raise ValueError("set_tools: this server was not built by agenttool_mcp.build_server")
    entries = _entries_of(tools)
    with state.lock:
        state.entries = entries
        sessions = list(state.sessions.items())
    state.bus.publish_threadsafe(ToolsListChanged())
    for owner, (session, loop) in sessions:

        async def send(s: ServerSession = session, key: Any = owner) -> None:
            try:
                await s.send_tool_list_changed()
            except Exception:  # that client is gone
                with state.lock:
                    state.sessions.pop(key, None)

        try:
            asyncio.run_coroutine_threadsafe(send(), loop)
        except RuntimeError:  # its loop has closed
            with state.lock:
                state.sessions.pop(owner, None)


# ---------------------------------------------------------------------------------------------
# Serve: tasks
# ---------------------------------------------------------------------------------------------

_TASK_POLL_MS = 200  # the pollIntervalMs the server states for its tasks
_TERMINAL = ("completed", "failed", "cancelled")


def _task_ttl(value: Any) -> float:
    """``task_ttl`` when it is a positive number of seconds, else a ValueError naming it."""
    if at._positive(value, (int, float)) is None or not value <= threading.TIMEOUT_MAX:
        raise ValueError("agenttool_mcp: task_ttl must be a positive number of seconds")
    return float(value)


def _now() -> str:
    """The time now as the tasks extension writes it (ISO 8601, UTC, milliseconds)."""
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


class _Task:
    """One call run as a task: its run, its state as ``tasks/get`` reports it, and, once it
    ended, when it is forgotten (``expires``, on the server loop's clock)."""

    def __init__(self, task_id: str, run: _Run, ttl: float, caps: Any) -> None:
        self.id = task_id
        self.run = run
        self.ttl = ttl
        self.caps = caps  # the client capabilities of the call that made it
        self.status = "working"
        self.created = self.updated = _now()
        self.message: str | None = None
        self.progress: dict[str, Any] | None = None
        self.inputs: dict[str, Any] = {}  # the open input requests, while input_required
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.expires: float | None = None
        self.driver: asyncio.Task[None] | None = None
        self.abandon: asyncio.TimerHandle | None = None  # an unanswered question's expiry

    def base(self) -> dict[str, Any]:
        """The fields every task answer has (``Task``)."""
        out: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttlMs": max(1, round(self.ttl * 1000)),
            "pollIntervalMs": _TASK_POLL_MS,
        }
        if self.message is not None:
            out["statusMessage"] = self.message
        return out

    def detailed(self) -> dict[str, Any]:
        """``tasks/get``'s answer (``DetailedTask``): the result or error inlined once ended,
        the open input requests while it waits for answers."""
        out = {**self.base(), "resultType": "complete"}
        if self.status == "completed":
            out["result"] = self.result
        elif self.status == "failed":
            out["error"] = self.error
        elif self.status == "input_required":
            out["inputRequests"] = dict(self.inputs)
        if self.progress is not None:
            out["_meta"] = {_TASK_PROGRESS_META_KEY: self.progress}
        return out

    def move(self, status: str) -> None:
        self.status = status
        self.updated = _now()
        if self.abandon is not None:
            self.abandon.cancel()
            self.abandon = None
        if status in _TERMINAL:
            self.inputs = {}
            self.expires = _running_loop().time() + self.ttl


def _takes_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request's client declared the tasks extension (a 2026-07-28 request
    carries its capabilities in its ``_meta``)."""
    caps = ctx.session.client_capabilities
    extensions = getattr(caps, "extensions", None) if caps is not None else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def _missing_tasks(what: str) -> Exception:
    """The -32021 error (missing required client capability) naming the tasks extension."""
    from mcp.shared.exceptions import MCPError

    return MCPError(
        -32021,
        f"agenttool_mcp: {what} needs the client capability extensions[{TASKS_EXTENSION!r}]",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def _as_task(ctx: ServerRequestContext[Any, Any], entry: _Entry) -> bool:
    """Whether this call runs as a task: its tool supports tasks and the client takes them;
    a tool that requires a task refuses a client that does not (-32021)."""
    support = at.task_support_of(entry.tool)
    if support == "forbidden":
        return False
    if _takes_tasks(ctx):
        return True
    if support == "required":
        raise _missing_tasks(f'tool "{entry.tool.name}" runs only as a task, which')
    return False


def _forget_expired(state: _ServerState) -> None:
    now = _running_loop().time()
    with state.lock:
        gone = [k for k, t in state.tasks.items() if t.expires is not None and t.expires <= now]
        for key in gone:
            del state.tasks[key]


def _start_task(
    state: _ServerState, ctx: ServerRequestContext[Any, Any], run: _Run
) -> dict[str, Any]:
    """Register the call as a task (so a ``tasks/get`` right after the answer finds it), start
    it, and answer the ``CreateTaskResult``; an error result past ``max_tasks``."""
    import asyncio
    import secrets

    _forget_expired(state)
    task = _Task(secrets.token_urlsafe(16), run, state.task_ttl, ctx.session.client_capabilities)
    with state.lock:
        full = len(state.tasks) >= state.max_tasks
        if not full:
            state.tasks[task.id] = task
    if full:
        name = run.entry.tool.name
        result = _error_result(
            f'agenttool_mcp: tool "{name}" runs as a task, but {state.max_tasks} tasks are '
            f"kept on this server already (its max_tasks): an ended task's result is kept "
            f"{state.task_ttl:g} s (its task_ttl); cancel one or wait, and call again"
        )
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped
    run.start()
    task.driver = asyncio.ensure_future(_drive_task(state, task))
    return {**task.base(), "resultType": "task"}


async def _drive_task(state: _ServerState, task: _Task) -> None:
    """Follow a task's run to its end: progress into its state, questions as input requests
    (answered by ``tasks/update``), the final result (or the error) kept."""
    import mcp.types as mt

    run = task.run
    try:
        while True:
            item = await run.queue.get()
            if item[0] == "event":
                event: at.Event = item[1]
                if not event.final:
                    _task_progress(task, event.result)
                    continue
                if task.status not in _TERMINAL:
                    final = _final(event, run.entry)
                    task.result = final.model_dump(by_alias=True, mode="json", exclude_none=True)
                    task.move("completed")
                return
            question: at.Elicitation = item[1]
            run.open = item[2]
            run.asked += 1
            if (
                task.status in _TERMINAL
                or run.asked > state.max_requests
                or not _caps_elicit(task.caps, question)
            ):
                run.answer_open(at.Answer(at.Action.CANCEL))
                continue
            run.key, run.question = f"elicit_{run.asked}", question
            request = mt.ElicitRequest(params=_elicit_params(question))
            task.inputs = {run.key: request.model_dump(by_alias=True, mode="json")}
            task.move("input_required")
            # a question nobody answers ends the task after abandon_after, as a parked call
            task.abandon = _running_loop().call_later(state.abandon_after, _abandon_task, task)
    except Exception as exc:  # our own failure, not the tool's: the task failed
        if task.status not in _TERMINAL:
            task.error = {"code": -32603, "message": f"agenttool_mcp: {_describe(exc)}"}
            task.move("failed")
    finally:
        run.stop()


def _abandon_task(task: _Task) -> None:
    if task.status == "input_required":
        task.abandon = None
        task.move("cancelled")
        task.run.stop()


def _task_progress(task: _Task, update: at.Result | None) -> None:
    """A progress update of the task's tool as its ``statusMessage`` and its ``_meta``."""
    if update is None:
        return
    number, total, message = _progress_of(task.run, update)
    task.progress = {"progress": number}
    if total is not None:
        task.progress["total"] = total
    if message is not None:
        task.progress["message"] = task.message = message
    task.updated = _now()


@functools.cache
def _task_params() -> tuple[type[Any], type[Any]]:
    """The params models of ``tasks/get`` and ``tasks/cancel``, and of ``tasks/update``."""
    import mcp.types as mt

    class TaskParams(mt.RequestParams):
        task_id: str

    class UpdateParams(TaskParams):
        input_responses: dict[str, Any] = {}

    return TaskParams, UpdateParams


def _add_task_handlers(server: Server[Any], state: _ServerState) -> None:
    params, update = _task_params()
    server.add_request_handler("tasks/get", params, functools.partial(_tasks_get, state))
    server.add_request_handler("tasks/update", update, functools.partial(_tasks_update, state))
    server.add_request_handler("tasks/cancel", params, functools.partial(_tasks_cancel, state))


def _task_of(state: _ServerState, ctx: ServerRequestContext[Any, Any], params: Any) -> _Task:
    """The task a ``tasks/*`` request names: -32021 for a client without the extension, -32020
    for an ``Mcp-Name`` header that is not its ``taskId``, -32602 for a task not known here
    (never made, expired, or another process's)."""
    from mcp.shared.exceptions import MCPError
    from mcp.shared.inbound import decode_header_value

    if not _takes_tasks(ctx):
        raise _missing_tasks(ctx.method if hasattr(ctx, "method") else "this method")
    headers = getattr(ctx.request, "headers", None)
    named = headers.get("mcp-name") if headers is not None else None
    if named is not None and decode_header_value(named.strip()) != params.task_id:
        raise MCPError(-32020, "agenttool_mcp: the Mcp-Name header is not the body's taskId")
    _forget_expired(state)
    with state.lock:
        task = state.tasks.get(params.task_id)
    if task is None:
        raise MCPError(
            -32602,
            f"agenttool_mcp: no task {params.task_id!r} here (never made, or its result "
            f"expired after task_ttl, {state.task_ttl:g} s)",
        )
    return task


async def _tasks_get(
    state: _ServerState, ctx: ServerRequestContext[Any, Any], params: Any
) -> dict[str, Any]:
    return _task_of(state, ctx, params).detailed()


async def _tasks_update(
    state: _ServerState, ctx: ServerRequestContext[Any, Any], params: Any
) -> dict[str, Any]:
    """Answers to the task's open input requests; keys it did not ask are ignored."""
    import mcp.types as mt

    task = _task_of(state, ctx, params)
    run = task.run
    for key, response in params.input_responses.items():
        if task.status != "input_required" or key not in task.inputs or key != run.key:
            continue
        try:
            answer = _answer_of(mt.ElicitResult.model_validate(response))
        except Exception:
            answer = at.Answer(at.Action.CANCEL)
        del task.inputs[key]
        run.answer_open(answer, run.question)
        task.move("working")
    return {"resultType": "complete"}


async def _tasks_cancel(
    state: _ServerState, ctx: ServerRequestContext[Any, Any], params: Any
) -> dict[str, Any]:
    """Cancel the task's tool (it sees ``cancelled()``); an ended task stays as it ended."""
    task = _task_of(state, ctx, params)
    if task.status not in _TERMINAL:
        task.move("cancelled")
        task.run.stop()
    return {"resultType": "complete"}


# ---------------------------------------------------------------------------------------------
# Serve: stdio and HTTP
# ---------------------------------------------------------------------------------------------


async def _serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
_LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
_SSE_EVENT_LIMIT = 1024 * 1024  # the SDK client refuses a larger SSE event (and drops the link)
_SSE_DEFERRAL = 30.0  # seconds a reply may wait for its JSON form before the stream is opened


def _origin_allowed(origin: str, allowed: Sequence[str]) -> bool:
    """Whether ``origin`` is one of ``allowed`` (``scheme://host:*`` allows any port)."""
    for pattern in allowed:
        if origin == pattern or (pattern.endswith(":*") and origin.startswith(pattern[:-1])):
            return True
    return False


def _header(scope: Mapping[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


class _HTTPGuard:
    """ASGI middleware in front of the SDK's streamable HTTP app.

    A present ``Origin`` that is not allowed gets 403 (the spec's MUST, on every bind).  A
    POST's reply is sent as ``application/json`` unless the call streams something first
    (progress, a question) or runs past ``_SSE_DEFERRAL`` seconds: the SDK client refuses an
    SSE event over 1 MiB, so a large result as one event would kill the connection.  On a
    stream already open, a reply too large for one event becomes a JSON-RPC error saying so.
    """

    def __init__(self, app: Any, origins: Sequence[str]) -> None:
        self.app = app
        self.origins = tuple(origins)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        origin = _header(scope, b"origin")
        if origin is not None and not _origin_allowed(origin, self.origins):
            await send(
                {
                    "type": "http.response.start",
                    "status": 403,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8")],
                }
            )
            await send({"type": "http.response.body", "body": b"Forbidden: Origin not allowed"})
            return
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, _Reply(send).send)


class _Reply:
    """The sending side of one POST: holds an SSE reply back until its first message shows
    whether it can go as plain JSON (see ``_HTTPGuard``)."""

    def __init__(self, send: Any) -> None:
        import time

        self._send = send
        self._since = time.monotonic()
        self._start: dict[str, Any] | None = None  # a held text/event-stream response start
        self._held: list[bytes] = []  # events held with it (pings, a priming event)
        self._rest = b""  # an event not yet complete
        self._open = False  # the SSE stream went out
        self._done = False  # the reply went out as JSON: the app's later sends are dropped

    async def send(self, message: dict[str, Any]) -> None:
        if self._done:
            return
        kind = message["type"]
        if kind == "http.response.start":
            content_type = dict(message.get("headers", ())).get(b"content-type", b"")
            if bytes(content_type).startswith(b"text/event-stream"):
                self._start = message
                return
        elif kind == "http.response.body" and self._start is not None:
            await self._body(message.get("body", b""), message.get("more_body", False))
            return
        await self._send(message)

    async def _body(self, body: bytes, more: bool) -> None:
        data = self._rest + body
        while True:
            cut, size = _event_end(data)
            if cut < 0:
                break
            await self._event(data[: cut + size])
            if self._done:
                return
            data = data[cut + size :]
        self._rest = data
        if not more:
            await self._commit()
            await self._send({"type": "http.response.body", "body": data, "more_body": False})

    async def _event(self, event: bytes) -> None:
        import time

        payload = _event_data(event)
        if not self._open:
            if payload is None:  # a ping or a priming event
                self._held.append(event)
                if time.monotonic() - self._since >= _SSE_DEFERRAL:
                    await self._commit()
                return
            if _is_reply(payload):
                await self._json(payload)
                return
            await self._commit()
        if payload is not None and len(event) > _SSE_EVENT_LIMIT:
            message = _json_or_none(payload)
            if not isinstance(message, dict) or "method" in message:
                return  # a notification no client would take: dropped, the call goes on
            event = _sse_event_of(_too_large(message, len(payload)))
        await self._send({"type": "http.response.body", "body": event, "more_body": True})

    async def _commit(self) -> None:
        if self._open or self._start is None:
            return
        self._open = True
        await self._send(self._start)
        for event in self._held:
            await self._send({"type": "http.response.body", "body": event, "more_body": True})
        self._held = []

    async def _json(self, payload: bytes) -> None:
        assert self._start is not None
        dropped = (b"content-type", b"content-length", b"cache-control", b"connection")
        headers = [(k, v) for k, v in self._start.get("headers", ()) if k.lower() not in dropped]
        headers += [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
        ]
        self._done = True
        status = self._start.get("status", 200)
        await self._send({"type": "http.response.start", "status": status, "headers": headers})
        await self._send({"type": "http.response.body", "body": payload, "more_body": False})


def _line_end(data: bytes, pos: int) -> int:
    """The index of the first CR or LF at or after ``pos`` (``-1`` for none): one ``memchr``
    each, as a JSON message has neither inside it."""
    ends = [i for i in (data.find(b"\n", pos), data.find(b"\r", pos)) if i >= 0]
    return min(ends) if ends else -1


def _eol_size(data: bytes, i: int) -> int:
    return 2 if data.startswith(b"\r\n", i) else 1


def _event_end(data: bytes) -> tuple[int, int]:
    """Where the first complete SSE event in ``data`` ends, as (index of its blank line's
    line end, length of both line ends), or (-1, 0) while it is incomplete."""
    pos = 0
    while True:
        i = _line_end(data, pos)
        if i < 0:
            return -1, 0
        j = i + _eol_size(data, i)
        if j >= len(data) or (data[j] == 13 and j + 1 == len(data)):
            return -1, 0  # the next line, or a CR's LF, has not arrived yet
        if data[j] in (10, 13):  # an empty line: the event ends
            return i, j - i + _eol_size(data, j)
        pos = j


def _event_data(event: bytes) -> bytes | None:
    """The data of one SSE event, or ``None`` for an event with none (a comment, a ping)."""
    lines: list[bytes] = []
    pos, end = 0, len(event)
    while pos < end:
        stop = min(i for i in (event.find(b"\r", pos), event.find(b"\n", pos), end) if i >= 0)
        if event.startswith(b"data:", pos):
            start = pos + 6 if event.startswith(b" ", pos + 5) else pos + 5
            lines.append(event[start:stop])
        pos = stop + 1
    return lines[0] if len(lines) == 1 else b"\n".join(lines) if lines else None


def _is_reply(payload: bytes) -> bool:
    """Whether a JSON-RPC message is a response (what ends a POST), not a request or notice:
    read from its first member after ``id`` (a response has no ``method``), parsing the
    whole message only when its head does not tell."""
    head = payload[:512]
    where = {key: head.find(key) for key in (b'"method"', b'"result"', b'"error"')}
    seen = {key: i for key, i in where.items() if i >= 0}
    if seen:
        return min(seen, key=seen.__getitem__) != b'"method"'
    message = _json_or_none(payload)
    return isinstance(message, dict) and "method" not in message and "id" in message


def _json_or_none(payload: bytes) -> Any:
    try:
        return json.loads(payload)
    except ValueError:
        return None


def _too_large(reply: dict[str, Any], size: int) -> dict[str, Any]:
    """What goes in place of a reply too large for one SSE event: a tool call's failed result
    (the model reads why), any other request's JSON-RPC error."""
    text = (
        f"mcp: the result is {size / (1024 * 1024):.1f} MiB, too large for one event of the "
        "SSE stream this call had opened (it reported progress, asked a question or ran for "
        f"over {_SSE_DEFERRAL:.0f} s); return less, or report no progress"
    )
    result = reply.get("result")
    if isinstance(result, dict) and "content" in result:
        kept = {k: v for k, v in result.items() if k not in ("content", "structuredContent")}
        answer = {**kept, "content": [{"type": "text", "text": text}], "isError": True}
        return {"jsonrpc": "2.0", "id": reply.get("id"), "result": answer}
    error = {"code": -32603, "message": text}
    return {"jsonrpc": "2.0", "id": reply.get("id"), "error": error}


def _sse_event_of(message: dict[str, Any]) -> bytes:
    return b"event: message\r\ndata: " + json.dumps(message).encode() + b"\r\n\r\n"


def _url_host(host: str) -> str:
    """``host`` as it goes in a URL: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _http_app(
    server: Server[Any],
    *,
    host: str | None = None,
    allow_origins: Iterable[str] = (),
    stateless: bool = False,
) -> Any:
    """The ASGI app serving ``server`` at ``/mcp``, behind ``_HTTPGuard``.

    On a loopback ``host`` the SDK also checks ``Host`` (DNS rebinding) and loopback origins
    are allowed beside ``allow_origins``; ``host=None`` is a bind nobody knows (``asgi_app``).
    """
    from mcp.server.transport_security import TransportSecuritySettings

    origins = list(allow_origins)
    security = None
    if host in _LOOPBACK_HOSTS:
        origins += _LOOPBACK_ORIGINS
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=origins,
        )
    app = server.streamable_http_app(
        host=host or "0.0.0.0",  # noqa: S104 - only read to pick the SDK's loopback defaults
        transport_security=security,
        stateless_http=stateless,
    )
    return _HTTPGuard(app, origins)


def _http_server(
    server: Server[Any],
    host: str,
    port: int,
    announce: TextIO | None,
    allow_origins: Iterable[str] = (),
) -> Any:
    import uvicorn

    host = host.removeprefix("[").removesuffix("]")
    app = _http_app(server, host=host, allow_origins=allow_origins)

    class _Announcing(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if announce is not None and self.started:
                bound = port
                for srv in getattr(self, "servers", []):
                    for sock in srv.sockets:
                        bound = sock.getsockname()[1]
                        break
                url = f"http://{_url_host(host)}:{bound}/mcp"
                print(f"agenttool_mcp: serving at {url}", file=announce)
                announce.flush()

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    return _Announcing(config)


def serve(
    tools: Iterable[at.Tool],
    *,
    name: str = "agenttool",
    version: str | None = None,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    instructions: str | None = None,
    recorder: Callable[[at.Record], None] | None = None,
    allow_origins: Iterable[str] = (),
    errors: at.ErrorPolicy = "full",
    inject: Mapping[str, Any] | None = None,
    tracer: Any = None,
    page_size: int | None = None,
    max_requests: int = 10,
    abandon_after: float = 1800.0,
    max_waiting: int = 64,
    max_tasks: int = 64,
    task_ttl: float = 3600.0,
    state_key: str | bytes | None = None,
) -> None:
    """Serve ``tools`` over stdio (default) or streamable HTTP at ``http://host:port/mcp``.

    Blocks until the client hangs up (stdio) or the process is interrupted (HTTP).  With
    ``port=0`` the system picks a free port; the address is printed on stderr.  Over HTTP a
    request whose ``Origin`` is present and not in ``allow_origins`` gets 403 (loopback origins
    are allowed on a loopback host); a request without ``Origin`` is served.  ``inject``
    gives the tools' ``Inject("key")`` parameters their values, as ``Executor(inject=...)``;
    ``tracer`` traces the calls; these and the other options are :func:`build_server`'s.
    """
    server = build_server(
        tools,
        name=name,
        version=version,
        instructions=instructions,
        recorder=recorder,
        errors=errors,
        inject=inject,
        tracer=tracer,
        page_size=page_size,
        max_requests=max_requests,
        abandon_after=abandon_after,
        max_waiting=max_waiting,
        max_tasks=max_tasks,
        task_ttl=task_ttl,
        state_key=state_key,
    )
    if transport == "stdio":
        import anyio

        anyio.run(_serve_stdio, server)
    elif transport == "http":
        _http_server(server, host, port, sys.stderr, allow_origins).run()
    else:
        raise ValueError(f'serve: transport must be "stdio" or "http", not {transport!r}')


def asgi_app(
    target: str | Iterable[at.Tool] | None = None,
    *,
    allow_origins: Iterable[str] | None = None,
    **options: Any,
) -> Any:
    """An ASGI application serving tools at ``/mcp``, for any ASGI server and any number of
    workers: ``uvicorn --factory agenttool_mcp:asgi_app --workers 4``.

    ``target`` is a tools file or module as the command line takes it, or the tools; without
    it, ``AGENTTOOL_MCP_TARGET`` names it.  Stateless, so any worker serves any request: the
    2026-07-28 era is stateless already, and legacy requests carry no session (list changes
    are not pushed).  ``allow_origins`` defaults to ``AGENTTOOL_MCP_ALLOW_ORIGINS``
    (comma-separated) and ``state_key`` to ``AGENTTOOL_MCP_STATE_KEY`` (questions of SAFE
    tools answered on any worker); ``options`` go to :func:`build_server`.
    """
    if target is None:
        target = os.environ.get("AGENTTOOL_MCP_TARGET", "")
        if not target:
            raise ValueError("asgi_app: give a target, or set AGENTTOOL_MCP_TARGET")
    tools = _load_tools(target) if isinstance(target, str) else list(target)
    if allow_origins is None:
        listed = os.environ.get("AGENTTOOL_MCP_ALLOW_ORIGINS", "")
        allow_origins = [o.strip() for o in listed.split(",") if o.strip()]
    if options.get("state_key") is None:
        options["state_key"] = _env_state_key()
    server = build_server(tools, **options)
    return _http_app(server, allow_origins=allow_origins, stateless=True)


# ---------------------------------------------------------------------------------------------
# Consume: a server's tools as agenttool tools
# ---------------------------------------------------------------------------------------------


class RemoteError(RuntimeError):
    """A remote call or listing that failed below the tool: transport, timeout, closed."""


class MCPToolError(RuntimeError):
    """A remote tool answered ``isError``; the message is its joined text.

    ``details`` is what the Result's details would have been (the SDK result or a
    ``RemoteRecord``), ``result`` the SDK's ``CallToolResult``.
    """

    def __init__(self, message: str, result: Any = None, details: Any = None) -> None:
        super().__init__(message)
        self.result = result
        self.details = details


def _annotations_of(tool: mt.Tool) -> at.Annotations | None:
    """MCP annotations as agenttool's: absent destructive/openWorld read True, no block None.

    The destructive hint means something only when the tool is not read-only (the spec)."""
    ann = tool.annotations
    if ann is None:
        return None
    destructive = ann.destructive_hint
    return at.Annotations(
        title=tool.title or ann.title,
        read_only=ann.read_only_hint,
        destructive=not ann.read_only_hint and (destructive is None or destructive),
        idempotent=ann.idempotent_hint,
        open_world=True if ann.open_world_hint is None else ann.open_world_hint,
    )


_NAME_MAX = 64  # the length the core's tool name rule allows (a test holds the two together)


def _is_provider_name(name: str) -> bool:
    """Whether ``name`` keeps the core's tool name rule, what the model providers take."""
    return re.fullmatch(at._NAME_RULE, name) is not None


def _local_name(name: str) -> str:
    """A deterministic provider-safe name for ``name``: other characters become ``_``; an
    over-long name is cut and ends in a short hash of the original, so cuts stay distinct."""
    if _is_provider_name(name):
        return name
    safe = "".join(c if _is_provider_name(c) else "_" for c in name) or "_"
    if len(safe) <= _NAME_MAX:
        return safe
    import hashlib

    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return f"{safe[: _NAME_MAX - len(digest) - 1]}_{digest}"


def _decode_args(args: str | bytes | dict[str, Any] | None) -> dict[str, Any]:
    if args is None or args == "" or args == b"":
        return {}
    if isinstance(args, dict):
        return args
    value = at._loads(args)  # the core's strict reader: no duplicate keys, no NaN
    if not isinstance(value, dict):
        raise at.ValidationError("", "expected a JSON object")
    return value


class _RemoteTool:
    """One tool of a remote server, as an agenttool Tool."""

    def __init__(self, remote: AsyncRemote, definition: mt.Tool, local: str) -> None:
        self._remote = remote
        self.remote_name = definition.name
        self.name = local
        self.description = definition.description or ""
        schema = definition.input_schema
        self.parameters: dict[str, Any] | None = dict(schema) if schema else {"type": "object"}
        self.annotations = _annotations_of(definition)
        facts = (definition.meta or {}).get(TOOL_META_KEY)
        facts = facts if isinstance(facts, dict) else {}
        opts = remote._opts
        self.sequential = bool(facts.get("sequential")) or bool(
            {definition.name, local} & set(opts.sequential)
        )
        resource = facts.get("resource") if isinstance(facts.get("resource"), str) else ""
        for key in (definition.name, local):
            if key in opts.resources:
                resource = opts.resources[key]
        self.resource = "" if self.sequential else (resource or "")
        # the server's word on tasks (its TOOL_META_KEY "task"); a 2026-07-28 call declares
        # the extension whatever it says, and the server decides
        task = facts.get("task")
        self.task: bool | str = task if task in ("optional", "required") else False
        self.read_only = bool(facts.get("readOnly")) or bool(
            self.annotations is not None and self.annotations.read_only
        )
        self._confined: Callable[[Any], tuple[bool, str]] | None = None
        for key in (definition.name, local):
            if key in opts.confined:
                self._confined = opts.confined[key]
        # the server's claims, where the host trusts them (connect(claims=True)) and the
        # server answers FACTS_METHOD; facts is set only then, as is_factual reads presence
        trusted = remote._claims_on()
        self.claims_facts = trusted and facts.get("facts") is True
        self.claims_replay = trusted and facts.get("replay") is True
        if self.claims_facts:
            self.facts = self._facts
        self.definition = definition
        output = dict(definition.output_schema) if definition.output_schema else None
        if output is not None and facts.get("wrapped") is True:  # our server wrapped it
            output = _unwrapped_schema(output)
        self.output_schema = output

    def replay(self, args: Any) -> at.Replay:
        """The server's answer for this call where it claims replay (``claims=True``; an
        answer that cannot be had is UNKNOWN); otherwise UNKNOWN: a hint (``readOnlyHint``, a
        ``readOnly`` in ``_meta``) never makes a call safe to run twice, as the Go contract
        says, since nothing holds a server to it."""
        if self.claims_replay:
            try:
                return self._remote._answers_sync([(self.name, args)])[0].replay
            except Exception:
                return at.Replay.UNKNOWN
        return at.Replay.UNKNOWN

    def _facts(self, args: Any) -> at.Facts:
        """What the server says this call amounts to; its error raised as a RemoteError."""
        answer = self._remote._answers_sync([(self.name, args)])[0]
        if answer.error is not None:
            raise answer.error
        return answer.facts

    def confined(self, args: Any) -> tuple[bool, str]:
        if self._confined is None:
            return (False, "")
        return self._confined(args)

    def reconcile(self, args: Any, key: str, records: Sequence[at.Record]) -> at.Result | None:
        """A journaled call interrupted while its task ran (its :data:`TASK_RECORD` says
        which): the task's result, polled as the call would have; ``None`` (the call stays
        uncertain) without such a record, or for a task the server no longer has, one that
        failed or was cancelled, or a result that is an error."""
        task_id = None
        for record in records:
            if record.ns == TASK_RECORD:
                with contextlib.suppress(ValueError, AttributeError):
                    task_id = json.loads(record.data).get("taskId")
        if not isinstance(task_id, str):
            return None
        return self._remote._resume_task_sync(self, task_id)

    def execute(self, call: at.Call) -> at.Result:
        return self._remote._call_sync(self, call)

    def __repr__(self) -> str:
        return f"<remote tool {self.name!r}>"


@dataclasses.dataclass
class FactsAnswer:
    """The answer for one call of ``Remote.facts``: what ``agenttool.facts_of`` and
    ``agenttool.replay_of`` report for that call on the remote's tool of that name.

    ``claimed`` says the tool claims facts (when not, ``facts`` is ``Facts()``, the call
    itself); ``error`` is the claim's error, a call nothing can be said about, which a policy
    must not allow (a name the remote does not have is one); ``replay`` is the server's
    answer, never KEYED (the idempotency key does not cross MCP).
    """

    claimed: bool = False
    facts: at.Facts = dataclasses.field(default_factory=at.Facts)
    error: Exception | None = None
    replay: at.Replay = at.Replay.UNKNOWN


# ---------------------------------------------------------------------------------------------
# Consume: the connection
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Options:
    command: Sequence[str] | None
    url: str | None
    server: Any
    prefix: str
    env: Mapping[str, str] | None
    cwd: str | None
    headers: Mapping[str, str] | None
    auth: Any
    sequential: Sequence[str]
    resources: Mapping[str, str]
    confined: Mapping[str, Callable[[Any], tuple[bool, str]]]
    elicitation: bool
    notification_grace: float
    timeout: float | None
    connect_timeout: float
    stderr: TextIO | None
    on_refresh_error: Callable[[BaseException], None] | None
    rename: Mapping[str, str]
    era: str
    max_timeout: float | None
    claims: bool = False


class _Flight:
    """A call in flight: where the tool thread waits for progress, questions and the end.

    ``elicitor`` is set for a call made with ``AsyncRemote.call``: its questions go there
    (in a worker thread) instead of to a waiting tool thread.
    """

    def __init__(self, tool: _RemoteTool, elicitor: at.Elicitor | None = None) -> None:
        import queue

        self.tool = tool
        self.elicitor = elicitor
        self.inbox: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()

    async def ask(self, question: at.Elicitation) -> at.Answer:
        import asyncio
        import concurrent.futures

        if self.elicitor is not None:
            return await asyncio.get_running_loop().run_in_executor(None, self.elicitor, question)
        answer: concurrent.futures.Future[at.Answer] = concurrent.futures.Future()
        self.inbox.put(("ask", question, answer))
        return await asyncio.wrap_future(answer)


class AsyncRemote:
    """A connection to one MCP server for asyncio hosts (``aconnect``); its tools as Tools.

    Use ``async with aconnect(...) as remote``.  ``tools()`` is the current snapshot;
    ``await remote.call(name, args)`` runs one call on this loop.  The tools' own ``execute``
    (what an executor calls, from its threads) hops onto this connection's loop.
    """

    def __init__(self, opts: _Options) -> None:
        self._opts = opts
        self._client: Client | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._closed = False
        self._close_error: str = _CLOSED
        self._tools: list[_RemoteTool] = []
        self._by_name: dict[str, _RemoteTool] = {}
        self._seen = 0
        self._applied = 0
        self._refresh_error: BaseException | None = None
        self._refresher: asyncio.Task[None] | None = None
        self._changed: asyncio.Condition | None = None
        self._calls: set[asyncio.Task[Any]] = set()
        self._flights: list[_Flight] = []
        self._flights_lock = threading.Lock()
        self._generation = 0  # one per session: a new one after the server forgot the last
        self._expired = 0  # the generation whose session the server answered 404 for
        self._renewed: asyncio.Future[None] | None = None  # set while a new session starts
        self._listening = False  # a modern-era subscriptions/listen stream is open
        self._listener: asyncio.Task[None] | None = None  # the task that follows it
        self._relisten = False  # the stream was lost: open it again after a call succeeds
        self._dropped = 0  # the generation whose connection dropped: the next call reconnects
        self._reopen_error = ""  # why the last attempt to connect again failed

    # --- lifecycle ----------------------------------------------------------------------

    async def __aenter__(self) -> AsyncRemote:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Connect, handshake and list every tool; fails with ``mcp: connect: ...``."""
        import asyncio

        if self._holder is not None:
            raise RuntimeError("this remote is already open")
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._changed = asyncio.Condition()
        ready: asyncio.Future[None] = self._loop.create_future()
        self._holder = asyncio.ensure_future(self._hold(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), self._opts.connect_timeout)
        except BaseException as exc:
            self._stop.set()
            self._closed = True
            if not ready.done():
                ready.cancel()  # the holder must not leave an exception nobody retrieves
                self._holder.cancel()
            try:
                await self._holder
            except BaseException:
                pass
            if isinstance(exc, asyncio.TimeoutError):
                raise RemoteError(
                    f"mcp: connect: no answer within {self._opts.connect_timeout:g}s"
                ) from None
            forced = ""
            if self._opts.era not in ("auto", "legacy"):
                forced = (
                    f' (era="{self._opts.era}" was forced; "auto" speaks what the server offers)'
                )
            if isinstance(exc, RemoteError):
                raise RemoteError(f"{exc}{forced}") from exc.__cause__
            raise RemoteError(f"mcp: connect: {_describe(exc)}{forced}") from exc

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        """Own the SDK client for the connection's life (anyio needs one task for both ends).

        When the server forgot the session (HTTP 404), ``_renew`` wakes this task, which hangs
        up and opens a new session in the same task."""

        assert self._stop is not None
        try:
            while True:
                try:
                    await self._session(ready)
                except Exception as exc:
                    if not ready.done() or self._closed or not self._reconnects():
                        raise
                    await self._dropped_session(exc)
                if self._closed or self._renewed is None or self._renewed.done():
                    break
                self._stop.clear()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            elif not self._closed:
                self._close_error = f"mcp: connection lost: {_describe(exc)}"
            if not isinstance(exc, Exception):
                raise
        finally:
            self._closed = True
            self._client = None
            if self._renewed is not None and not self._renewed.done():
                self._renewed.set_result(None)  # the waiters see ``closed``
            for task in list(self._calls):
                task.cancel()
            self._fail_flights()

    async def _session(self, ready: asyncio.Future[None]) -> None:
        """Open one session, list the tools, and hold it until ``_stop`` is set."""
        import contextlib

        assert self._stop is not None
        async with contextlib.AsyncExitStack() as stack:
            generation = self._generation + 1
            client = await stack.enter_async_context(await self._make_client(stack, generation))
            self._client, self._generation = client, generation
            self._relisten = False
            await self._start_listener(client)
            try:
                await self._list_all()
                if not ready.done():
                    ready.set_result(None)
                if self._renewed is not None and not self._renewed.done():
                    self._renewed.set_result(None)
                await self._stop.wait()
            finally:
                await self._stop_listener()

    def _reconnects(self) -> bool:
        """Whether a dropped connection can be opened again (a command or a URL can)."""
        return bool(self._opts.command or self._opts.url)

    async def _dropped_session(self, exc: Exception) -> None:
        """A session failed (or hanging it up did): unless a new one was asked for and this is
        the old one ending, wait until the next call asks for one (``_renew``)."""
        assert self._stop is not None
        self._client = None
        self._dropped = self._generation
        renewing = self._renewed is not None and not self._renewed.done()
        if renewing and self._stop.is_set():
            return  # the old session ended badly on the way out: open the new one
        self._reopen_error = f"mcp: connection lost: {_describe(exc)}"
        if self._renewed is not None and not self._renewed.done():
            self._renewed.set_result(None)  # this attempt failed; the next call tries again
        self._stop.clear()
        await self._stop.wait()

    async def _reconnect(self, patient: bool) -> None:
        """Open a new session for a dropped one; ``patient`` (a SAFE call sent again) tries
        again, backing off, for up to ``connect_timeout`` while the server is still down."""
        import asyncio

        assert self._loop is not None
        self._dropped = self._generation
        give_up = self._loop.time() + self._opts.connect_timeout
        pause = 0.05
        while True:
            await self._renew(self._generation)
            if self._client is not None:
                return
            if not patient or self._loop.time() + pause > give_up:
                raise _NotSent(self._reopen_error)
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)

    async def _renew(self, generation: int) -> None:
        """Replace the session ``generation`` with a new one (once) and wait until it is ready,
        as long as ``connect_timeout`` allows; past it the connection is over."""
        import asyncio

        assert self._stop is not None and self._loop is not None
        if self._generation == generation and (self._renewed is None or self._renewed.done()):
            self._renewed = self._loop.create_future()
            self._stop.set()
        if self._renewed is not None:
            limit = self._opts.connect_timeout
            try:
                await asyncio.wait_for(asyncio.shield(self._renewed), limit)
            except asyncio.TimeoutError:
                if not self._closed:
                    self._lost(f"mcp: connection lost: no new session within {limit:g}s")
                    if self._holder is not None:
                        self._holder.cancel()  # stuck opening the new session
        if self._closed:
            raise RemoteError(self._close_error)

    async def _start_listener(self, client: Client) -> None:
        """On the modern era, follow tool-list changes on a ``subscriptions/listen`` stream.

        Returns once the server acknowledged the stream (or refused it: then changes are seen
        only on ``refresh()``), so no change made after connecting is missed.  A stream lost
        later (a server restarted behind the same URL) is opened again after the next call
        that succeeds (proof the server is back), and the tools listed again: nothing is
        replayed.  Trying sooner could meet the server down, which ends the SDK's connection."""
        import asyncio
        import logging

        from mcp.types.version import MODERN_PROTOCOL_VERSIONS

        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return
        assert self._loop is not None
        acked: asyncio.Future[None] = self._loop.create_future()
        again = self._relisten
        self._relisten = False

        async def follow() -> None:
            try:
                async with client.listen(tools_list_changed=True) as events:
                    self._listening = True
                    acked.set_result(None)
                    if again:
                        await self._note_change()  # what changed while it was lost
                    async for _event in events:
                        await self._note_change()
            except Exception as exc:
                logging.getLogger("agenttool_mcp").debug("tools/list_changed stream: %s", exc)
                # refused at once: this server has no listen; lost later: open it again
                self._relisten = acked.done() and not _connection_ended(client, exc)
            finally:
                self._listening = False
                if not acked.done():
                    acked.set_result(None)

        self._listener = asyncio.ensure_future(follow())
        await asyncio.shield(acked)

    async def _stop_listener(self) -> None:
        import asyncio

        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            await asyncio.gather(listener, return_exceptions=True)

    async def _make_client(self, stack: Any, generation: int) -> Client:
        from mcp import Client
        from mcp.types import Implementation

        opts = self._opts
        transport: Any
        if opts.server is not None:
            transport = opts.server
        elif opts.command:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            cmd = list(opts.command)
            # "replace": one invalid UTF-8 byte must not kill the SDK's reader (a silent hang)
            params = StdioServerParameters(
                command=cmd[0],
                args=cmd[1:],
                env=dict(opts.env) if opts.env else None,
                cwd=opts.cwd,
                encoding_error_handler="replace",
            )
            transport = stdio_client(params, errlog=opts.stderr or sys.stderr)
        elif opts.url:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            http = await stack.enter_async_context(
                create_mcp_http_client(headers=dict(opts.headers or {}), auth=opts.auth)
            )

            async def note_expiry(response: Any) -> None:
                # the spec: a 404 for a request that carried the session id ends the session
                if response.status_code == 404 and "mcp-session-id" in response.request.headers:
                    self._expired = generation

            http.event_hooks["response"].append(note_expiry)
            transport = streamable_http_client(
                opts.url, http_client=http, max_sse_event_size=_CLIENT_SSE_EVENT_LIMIT
            )
        else:  # pragma: no cover - connect() checks this
            raise ValueError("connect: give command=[...] or url=...")
        return Client(
            transport,
            mode=opts.era,
            cache=None,
            extensions=[_tasks_extension(self)],
            message_handler=self._on_message,
            elicitation_callback=cast(Any, self._on_elicit) if opts.elicitation else None,
            client_info=Implementation(name="agenttool", version=at.__version__),
        )

    async def close(self) -> None:
        """End every call in flight with ``mcp: connection closed`` and hang up."""
        if self._closed and self._holder is None:
            return
        self._closed = True
        for task in list(self._calls):
            task.cancel()
        self._fail_flights()
        if self._stop is not None:
            self._stop.set()
        holder, self._holder = self._holder, None
        if holder is not None:
            try:
                await holder
            except BaseException:
                pass

    def _lost(self, message: str = _LOST) -> None:
        """The server hung up: fail what is in flight and later calls, and clean up."""
        self._closed = True
        self._close_error = message
        for task in list(self._calls):
            if task is not _current_task():
                task.cancel()
        self._fail_flights()
        if self._stop is not None:
            self._stop.set()

    def _fail_flights(self) -> None:
        with self._flights_lock:
            flights = list(self._flights)
        for flight in flights:
            flight.inbox.put(("closed",))

    # --- facts --------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def tools(self) -> list[at.Tool]:
        """The server's tools as of the last listing (all pages)."""
        return list(self._tools)

    @property
    def server_info(self) -> mt.Implementation | None:
        return self._client.server_info if self._client is not None else None

    @property
    def instructions(self) -> str | None:
        return self._client.instructions if self._client is not None else None

    @property
    def client(self) -> Client | None:
        """The SDK's ``mcp.Client`` under this connection (``None`` once closed)."""
        return self._client

    @property
    def protocol_version(self) -> str | None:
        """The protocol version spoken, such as ``"2026-07-28"`` (``None`` once closed)."""
        return self._client.protocol_version if self._client is not None else None

    def lookup(self, name: str) -> at.Tool | None:
        """The tool named ``name`` (the local, prefixed name) or ``None``."""
        return self._by_name.get(name)

    # --- claims (FACTS_METHOD) ---------------------------------------------------------

    def _claims_on(self) -> bool:
        """Whether this remote's tools carry the server's claims: the host asked for them
        (``claims=True``) and the server advertises ``FACTS_CAPABILITY``."""
        client = self._client
        caps = client.server_capabilities if client is not None else None
        return (
            self._opts.claims and caps is not None and FACTS_CAPABILITY in (caps.experimental or {})
        )

    async def facts(
        self, calls: Iterable[tuple[str, Mapping[str, Any] | str | bytes | None]]
    ) -> list[FactsAnswer]:
        """Ask the server about several calls, ``(local name, arguments)`` pairs, in one
        ``FACTS_METHOD`` request; one :class:`FactsAnswer` each, in order.

        A name this remote has no tool for is answered with an error; a call of a tool that
        claims neither facts nor replay (or any call, without ``claims=True`` or on a server
        that does not advertise the capability) is answered as no claim without being sent,
        so a batch of such calls sends nothing.  The request's own failure raises
        :class:`RemoteError`; each call's is in its answer."""
        asked = list(calls)
        out = [FactsAnswer() for _ in asked]
        send: list[dict[str, Any]] = []
        places: list[tuple[int, _RemoteTool]] = []
        for i, (name, args) in enumerate(asked):
            tool = self._by_name.get(name)
            if tool is None:
                out[i] = FactsAnswer(claimed=True, error=RemoteError(f'mcp: no tool "{name}"'))
                continue
            if not (tool.claims_facts or tool.claims_replay):
                continue
            try:
                decoded = _decode_args(dict(args) if isinstance(args, Mapping) else args)
            except at.ValidationError as exc:
                out[i] = FactsAnswer(claimed=tool.claims_facts, error=exc)
                continue
            send.append({"name": tool.remote_name, "arguments": decoded})
            places.append((i, tool))
        if not send:
            return out
        for (i, tool), answer in zip(places, await self._ask_facts(send)):
            out[i] = _read_answer(answer, tool)
        return out

    async def _ask_facts(self, calls: list[dict[str, Any]]) -> list[Any]:
        """One ``FACTS_METHOD`` request under ``timeout``: the server's answers, one a call."""
        import asyncio

        import mcp.types as mt
        from mcp.shared.exceptions import MCPError
        from pydantic import TypeAdapter

        if self._closed:
            raise RemoteError(f"mcp: {FACTS_METHOD}: {self._close_error}")
        client = self._require()
        params = _facts_params()
        request: Any = mt.Request[params, str](  # type: ignore[valid-type]
            method=FACTS_METHOD, params=params(calls=calls)
        )
        task = asyncio.current_task()
        if task is not None:
            self._calls.add(task)  # close() ends it like a call in flight
        try:
            sent = client.session.send_request(request, cast(Any, TypeAdapter(dict[str, Any])))
            got = await asyncio.wait_for(sent, self._opts.timeout)
        except asyncio.TimeoutError:
            raise RemoteError(
                f"mcp: {FACTS_METHOD}: no answer within {self._opts.timeout:g}s"
            ) from None
        except asyncio.CancelledError:
            if self._closed:
                raise RemoteError(f"mcp: {FACTS_METHOD}: {self._close_error}") from None
            raise
        except MCPError as exc:
            if self._closed:
                raise RemoteError(f"mcp: {FACTS_METHOD}: {self._close_error}") from exc
            raise RemoteError(f"mcp: {FACTS_METHOD}: {exc.error.message}") from exc
        except Exception as exc:
            raise RemoteError(f"mcp: {FACTS_METHOD}: {_describe(exc)}") from exc
        finally:
            if task is not None:
                self._calls.discard(task)
        results = got.get("results")
        if not isinstance(results, list) or len(results) != len(calls):
            n = len(results) if isinstance(results, list) else 0
            raise RemoteError(f"mcp: {FACTS_METHOD}: {n} answers for {len(calls)} calls")
        return results

    def _loop_from_thread(self, what: str, misuse: str) -> asyncio.AbstractEventLoop:
        """The connection's loop, for a blocking caller on another thread: a closed
        connection raises ``RemoteError`` led by ``what``, and a caller on the loop's own
        thread (which would wait on itself for good) a RuntimeError saying ``misuse``."""
        import asyncio

        loop = self._loop
        if self._closed or loop is None:
            raise RemoteError(f"{what}: {self._close_error}")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise RuntimeError(misuse)
        return loop

    def _answers_sync(
        self, calls: list[tuple[str, Mapping[str, Any] | str | bytes | None]]
    ) -> list[FactsAnswer]:
        """:meth:`facts` from a thread other than this connection's loop (a tool's
        ``facts`` or ``replay``, asked by an executor or a policy)."""
        import asyncio

        loop = self._loop_from_thread(
            f"mcp: {FACTS_METHOD}",
            "agenttool_mcp: a remote tool's claims were asked on the connection's own event"
            " loop; ask from a thread, or await AsyncRemote.facts()",
        )
        try:
            return asyncio.run_coroutine_threadsafe(self.facts(calls), loop).result()
        except RuntimeError as exc:
            if loop.is_closed() or not loop.is_running():
                raise RemoteError(f"mcp: {FACTS_METHOD}: {self._close_error}") from exc
            raise

    # --- listing and refresh ------------------------------------------------------------

    async def _list_all(self) -> None:
        """List every page of tools, each page under ``timeout``, and name them locally."""
        import asyncio

        import mcp.types as mt

        client = self._require()
        defs: list[mt.Tool] = []
        cursor: str | None = None
        seen_cursors: set[str] = set()
        limit = self._opts.timeout
        try:
            while True:
                try:
                    page = await asyncio.wait_for(
                        client.session.list_tools(params=mt.PaginatedRequestParams(cursor=cursor)),
                        limit,
                    )
                except asyncio.TimeoutError:
                    raise RemoteError(f"mcp: list tools: no answer within {limit:g}s") from None
                defs.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
                if cursor in seen_cursors:
                    raise RemoteError(f"mcp: list tools: the server repeated cursor {cursor!r}")
                seen_cursors.add(cursor)
        except RemoteError:
            raise
        except Exception as exc:
            raise RemoteError(f"mcp: list tools: {_describe(exc)}") from exc
        opts = self._opts
        named: dict[str, list[mt.Tool]] = {}
        for d in defs:
            local = opts.rename.get(d.name) or _local_name(
                f"{opts.prefix}__{d.name}" if opts.prefix else d.name
            )
            named.setdefault(local, []).append(d)
        by_name: dict[str, _RemoteTool] = {}
        for local, group in named.items():
            if len(group) == 1:
                by_name[local] = _RemoteTool(self, group[0], local)
                continue
            import logging  # a clash costs only the clashing tools

            remote_names = " and ".join(f'"{d.name}"' for d in group)
            logging.getLogger("agenttool_mcp").warning(
                'agenttool_mcp: the remote tools %s would all be named "%s" and are left out; '
                "name them with connect(rename={...})",
                remote_names,
                local,
            )
        self._tools = list(by_name.values())
        self._by_name = by_name

    async def _relist(self) -> None:
        """List the tools again; when the server forgot the session, a new one lists them."""
        generation = self._generation
        try:
            await self._list_all()
        except RemoteError:
            if self._expired != generation or self._closed:
                raise
            await self._renew(generation)

    def _require(self) -> Client:
        if self._closed or self._client is None:
            raise RemoteError(self._close_error)
        return self._client

    async def _on_message(self, message: Any) -> None:
        import mcp.types as mt

        if isinstance(message, mt.ToolListChangedNotification):
            await self._note_change()

    async def _note_change(self) -> None:
        import asyncio

        assert self._changed is not None
        async with self._changed:
            self._seen += 1
            self._changed.notify_all()
        if self._refresher is None or self._refresher.done():
            self._refresher = asyncio.ensure_future(self._refresh_loop())

    async def _refresh_loop(self) -> None:
        assert self._changed is not None
        while self._applied < self._seen and not self._closed:
            target = self._seen
            try:
                await self._relist()
            except Exception as exc:
                self._refresh_error = exc
                self._report_refresh_error(exc)
                async with self._changed:
                    self._changed.notify_all()
                return
            self._refresh_error = None
            async with self._changed:
                self._applied = target
                self._changed.notify_all()

    def _report_refresh_error(self, exc: BaseException) -> None:
        if self._opts.on_refresh_error is not None:
            try:
                self._opts.on_refresh_error(exc)
            except Exception:
                pass
            return
        import logging

        logging.getLogger("agenttool_mcp").warning(
            "agenttool_mcp: refresh after tool-list-changed failed: %s", exc
        )

    async def refresh(self) -> None:
        """List the server's tools again now (all pages)."""
        assert self._changed is not None
        async with self._changed:
            target = self._seen
        await self._relist()
        self._refresh_error = None
        async with self._changed:
            self._applied = max(self._applied, target)
            self._changed.notify_all()

    async def await_refresh(self) -> None:
        """Return once the snapshot reflects every tool-list change received before the call.

        Raises the refresh's error when the last refresh failed (the old snapshot stays).
        """
        import asyncio

        assert self._changed is not None
        async with self._changed:
            target = self._seen
            while self._applied < target:
                if self._closed:
                    raise RemoteError(self._close_error)
                running = self._refresher is not None and not self._refresher.done()
                if not running:
                    if self._refresh_error is not None:
                        raise RemoteError(
                            f"mcp: refresh: {_describe(self._refresh_error)}"
                        ) from self._refresh_error
                    self._refresher = asyncio.ensure_future(self._refresh_loop())
                await self._changed.wait()

    async def _settle(self, tool: _RemoteTool, seen_before: int) -> None:
        """After a call: wait a short grace for a list change it caused, then for the refresh."""
        import asyncio

        assert self._changed is not None
        client = self._client
        if self._seen == seen_before:
            grace = self._opts.notification_grace
            caps = client.server_capabilities if client is not None else None
            listed = self._listening or (
                caps is not None and caps.tools is not None and bool(caps.tools.list_changed)
            )
            if grace <= 0 or tool.read_only or not listed:
                return
            try:
                async with self._changed:
                    await asyncio.wait_for(
                        self._changed.wait_for(lambda: self._seen != seen_before), grace
                    )
            except asyncio.TimeoutError:
                return
        try:
            await self.await_refresh()
        except RemoteError:
            pass  # reported through on_refresh_error; the call itself succeeded

    # --- calls --------------------------------------------------------------------------

    async def call(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        on_progress: Callable[[float, float | None, str | None], Any] | None = None,
        elicitor: at.Elicitor | None = None,
    ) -> at.Result:
        """Call the tool ``name`` (local name) on this loop; an ``isError`` answer raises.

        ``on_progress(progress, total, message)`` (a function or a coroutine function) gets
        the server's progress; ``elicitor`` answers its questions (run in a worker thread).
        """
        tool = self._by_name.get(name)
        if tool is None:
            if self._closed:
                raise RemoteError(f'mcp: call "{name}": {self._close_error}')
            raise RemoteError(
                f'mcp: no tool "{name}"; the tools are: {", ".join(self._by_name) or "none"}'
            )
        progress = None
        if on_progress is not None:
            callback = on_progress

            async def progress(p: float, total: float | None, message: str | None) -> None:
                value = callback(p, total, message)
                if isinstance(value, Awaitable):
                    await value

        flight = _Flight(tool, elicitor if elicitor is not None else _cancel_all)
        with self._flights_lock:
            self._flights.append(flight)
        try:
            return await self._call(tool, dict(args or {}), progress)
        finally:
            with self._flights_lock:
                if flight in self._flights:
                    self._flights.remove(flight)

    async def _call(
        self,
        tool: _RemoteTool,
        args: dict[str, Any],
        progress: Callable[[float, float | None, str | None], Awaitable[None]] | None,
    ) -> at.Result:
        import asyncio

        from mcp.shared.exceptions import MCPError

        if self._closed:
            raise RemoteError(f'mcp: call "{tool.remote_name}": {self._close_error}')
        task = asyncio.current_task()
        if task is not None:
            self._calls.add(task)
        seen_before = self._seen
        try:
            result = await self._send_call(tool, args, progress)
        except asyncio.CancelledError:
            if self._closed:
                raise RemoteError(f'mcp: call "{tool.remote_name}": {self._close_error}') from None
            raise
        except (_NoAnswer, _NotSent) as exc:
            raise RemoteError(f'mcp: call "{tool.remote_name}": {exc}') from None
        except _Ended as exc:
            if not self._closed:
                self._lost()
            raise RemoteError(f'mcp: call "{tool.remote_name}": {self._close_error}') from exc
        except MCPError as exc:  # the server's own error, whatever its code
            if self._closed:
                raise RemoteError(f'mcp: call "{tool.remote_name}": {self._close_error}') from exc
            raise RemoteError(f'mcp: call "{tool.remote_name}": {exc.error.message}') from exc
        except Exception as exc:
            if self._closed:
                raise RemoteError(f'mcp: call "{tool.remote_name}": {self._close_error}') from exc
            raise RemoteError(f'mcp: call "{tool.remote_name}": {_describe(exc)}') from exc
        finally:
            if task is not None:
                self._calls.discard(task)
        if result is None:
            raise RemoteError(f'mcp: call "{tool.remote_name}": mcp: empty result')
        if self._relisten and self._client is not None:
            await self._start_listener(self._client)
        await self._settle(tool, seen_before)
        if result.is_error:
            details: Any = result
            record = _record_from_meta(result.meta)
            if record is not None:
                details = RemoteRecord(record[0], record[1], result)
            raise MCPToolError(_error_text(result), result, details)
        return result_of(result)

    async def _send_call(
        self,
        tool: _RemoteTool,
        args: dict[str, Any],
        progress: Callable[[float, float | None, str | None], Awaitable[None]] | None,
    ) -> mt.CallToolResult:
        """One ``tools/call`` under the time limits; sent again once on a new session when the
        server forgot ours (HTTP 404: it never processed the request).

        Raises ``_Ended`` when the connection is over, ``_NoAnswer`` past a time limit, and
        ``MCPError`` for the server's own JSON-RPC error."""
        import asyncio

        from mcp.shared.exceptions import MCPError

        for attempt in range(2):
            if self._renewed is not None and not self._renewed.done():
                await asyncio.shield(self._renewed)
            if self._closed:
                raise _Ended(self._close_error)
            if self._reconnects() and (
                self._dropped == self._generation or _session_over(self._client)
            ):
                await self._reconnect(patient=attempt > 0)  # before sending
            client, generation = self._require(), self._generation
            try:
                return await self._timed(client, tool.remote_name, args, progress)
            except MCPError as exc:
                renew = self._expired == generation or self._generation != generation
                if attempt == 0 and renew and not self._closed:
                    await self._renew(generation)
                    continue
                if _connection_ended(client, exc):
                    if self._closed or not self._reconnects():
                        raise _Ended(self._close_error) from exc
                    self._dropped = generation
                    if attempt == 0 and await self._safe_to_send_again(tool, args):
                        continue  # its replay is SAFE: send it again on a new connection
                    raise _NotSent(
                        "mcp: the connection was lost during the call; it was not sent again "
                        "(only a tool whose replay is SAFE is); the next call connects again"
                    ) from exc
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _safe_to_send_again(self, tool: _RemoteTool, args: dict[str, Any]) -> bool:
        """Whether a call lost with its connection may be sent again: only when the server
        claims replay for the tool (and the host trusts claims) and answers SAFE for these
        arguments, asked on a new connection since the old one is gone; never on a hint."""
        if not tool.claims_replay:
            return False
        try:
            await self._reconnect(patient=True)
            (answer,) = await self.facts([(tool.name, args)])
        except Exception:  # noqa: BLE001 - no answer is no permission
            return False
        return answer.replay is at.Replay.SAFE

    async def _timed(
        self,
        client: Client,
        name: str,
        args: dict[str, Any],
        progress: Callable[[float, float | None, str | None], Awaitable[None]] | None,
    ) -> mt.CallToolResult:
        """Call ``name`` under ``timeout`` (idle: each progress notification starts it again)
        and ``max_timeout`` (from the start, whatever the progress)."""
        import asyncio

        idle, hard = self._opts.timeout, self._opts.max_timeout
        # the caller's span (W3C traceparent, tracestate), the parent of the served call's
        meta = cast(Any, at._trace_context() or None)
        if idle is None and hard is None:
            token = _task_call_var.set(_TaskCall(progress, None))
            try:
                return await client.call_tool(
                    name, args, progress_callback=cast(Any, progress), meta=meta
                )
            finally:
                _task_call_var.reset(token)
        loop = asyncio.get_running_loop()
        start = last = loop.time()

        def alive() -> None:  # a poll of the call's task answered: the server is there
            nonlocal last
            last = loop.time()

        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            alive()
            if progress is not None:
                await progress(p, total, message)

        token = _task_call_var.set(_TaskCall(on_progress, alive))

        def first_limit() -> tuple[float, str]:
            limits = [(last + idle, f"no answer within {idle:g}s")] if idle is not None else []
            if hard is not None:
                limits.append((start + hard, f"not done within {hard:g}s (max_timeout)"))
            return min(limits)

        try:
            task = asyncio.ensure_future(
                client.call_tool(name, args, progress_callback=cast(Any, on_progress), meta=meta)
            )
        finally:
            _task_call_var.reset(token)  # the task keeps its own copy of the context
        try:
            while True:
                deadline = first_limit()[0]
                done, _ = await asyncio.wait({task}, timeout=max(0.0, deadline - loop.time()))
                if done:
                    return task.result()
                deadline, reason = first_limit()  # progress may have moved it
                if loop.time() >= deadline:
                    raise _NoAnswer(reason)
        finally:
            if not task.done():
                task.cancel()  # the SDK tells the server the request is cancelled
                await asyncio.gather(task, return_exceptions=True)

    # --- tasks (TASKS_EXTENSION) -----------------------------------------------------------

    async def _resolve_task(self, created: Any, ctx: Any) -> mt.CallToolResult:
        """A call answered with a task: poll ``tasks/get`` at the server's ``pollIntervalMs``
        until it ends, passing its progress on and answering its questions (``tasks/update``);
        its result is the call's.  A call cancelled or timed out here cancels the task."""
        import asyncio

        import mcp.types as mt
        from mcp.shared.exceptions import MCPError

        hooks = _task_call_var.get()
        task_id: str = created.task_id
        noted = _task_note_var.get()
        if noted is not None:
            await noted(task_id)
        interval = _poll_seconds(created.poll_interval_ms, 0.5)
        answered: set[str] = set()
        said: Any = None
        try:
            while True:
                await asyncio.sleep(interval)
                got = await self._task_request(ctx.session, "tasks/get", task_id)
                if hooks is not None and hooks.alive is not None:
                    hooks.alive()
                interval = _poll_seconds(got.get("pollIntervalMs"), interval)
                progress = (got.get("_meta") or {}).get(_TASK_PROGRESS_META_KEY)
                if isinstance(progress, dict) and progress != said:
                    said = progress
                    if hooks is not None and hooks.progress is not None:
                        p = progress.get("progress")
                        await hooks.progress(
                            float(p) if isinstance(p, (int, float)) else 0.0,
                            progress.get("total"),
                            progress.get("message"),
                        )
                status = got.get("status")
                if status == "completed":
                    return mt.CallToolResult.model_validate(got.get("result") or {})
                if status == "failed":
                    error = got.get("error") or {}
                    code = error.get("code")
                    raise MCPError(
                        code if isinstance(code, int) else -32603,
                        str(error.get("message") or "the task failed"),
                    )
                if status == "cancelled":
                    raise RuntimeError(f"mcp: the server cancelled the task {task_id}")
                if status == "input_required":
                    await self._answer_task(ctx.session, task_id, got, answered)
        except asyncio.CancelledError:
            await self._cancel_task(ctx.session, task_id)
            raise

    def _resume_task_sync(self, tool: _RemoteTool, task_id: str) -> at.Result | None:
        """Poll the task ``task_id`` to its end from a thread (``reconcile``): its result, or
        ``None`` when there is none to have (within ``max_timeout``, when set)."""
        import asyncio
        import concurrent.futures
        import types

        try:
            loop = self._loop_from_thread(
                f'mcp: call "{tool.remote_name}"', "reconcile() ran on the connection's loop"
            )
            session = types.SimpleNamespace(session=self._require().session)
            created = _created_task_model()(task_id=task_id)
            fut = asyncio.run_coroutine_threadsafe(self._resolve_task(created, session), loop)
        except Exception:  # noqa: BLE001 - no connection: the call stays uncertain
            return None
        try:
            result = fut.result(self._opts.max_timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            return None
        except Exception:  # noqa: BLE001 - gone, failed or cancelled: the host decides
            return None
        return None if result.is_error else result_of(result)

    async def _task_request(
        self, session: Any, method: str, task_id: str, **params: Any
    ) -> dict[str, Any]:
        """One ``tasks/*`` request (its ``Mcp-Name`` header the task id); its result."""
        from pydantic import TypeAdapter

        plain, update = _task_params()
        model = update if params else plain
        request = _task_request_class()(method=method, params=model(task_id=task_id, **params))
        got = await session.send_request(request, cast(Any, TypeAdapter(dict[str, Any])))
        return got if isinstance(got, dict) else {}

    async def _answer_task(
        self, session: Any, task_id: str, got: dict[str, Any], answered: set[str]
    ) -> None:
        """Answer the task's new input requests (questions: as ``_on_elicit`` answers one)."""
        import mcp.types as mt

        responses: dict[str, Any] = {}
        requests = got.get("inputRequests")
        for key, request in (requests if isinstance(requests, dict) else {}).items():
            if key in answered:
                continue
            answered.add(key)
            try:
                params = mt.ElicitRequest.model_validate(request).params
            except Exception:
                reply: Any = mt.ElicitResult(action="cancel")
            else:
                reply = await self._on_elicit(None, params)
            if isinstance(reply, mt.ErrorData):
                reply = mt.ElicitResult(action="cancel")
            responses[key] = reply.model_dump(by_alias=True, mode="json", exclude_none=True)
        if responses:
            await self._task_request(session, "tasks/update", task_id, input_responses=responses)

    async def _cancel_task(self, session: Any, task_id: str) -> None:
        """Tell the server to cancel the task, within a few seconds; a failure is ignored (the
        call ended already, and an unanswered task ends with its ttl)."""
        import asyncio

        try:
            await asyncio.wait_for(self._task_request(session, "tasks/cancel", task_id), 5.0)
        except BaseException:  # noqa: BLE001 - best effort, the call is over either way
            pass

    def _call_sync(self, tool: _RemoteTool, call: at.Call) -> at.Result:
        """Run one call from a tool thread: progress, questions and cancellation cross here."""
        import asyncio
        import concurrent.futures
        import queue

        loop = self._loop_from_thread(
            f'mcp: call "{tool.remote_name}"',
            f'tool "{tool.name}": execute() was called on the connection\'s own event loop; '
            "run it in a thread (an executor does) or await AsyncRemote.call()",
        )
        args = _decode_args(call.args)
        flight = _Flight(tool)
        inbox = flight.inbox
        in_call = at.current_call() is not None
        want_progress = in_call or call.on_update is not None

        async def progress(p: float, total: float | None, message: str | None) -> None:
            inbox.put(("progress", p, total, message))

        async def note(task_id: str) -> None:  # the record is made in the tool's thread
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            inbox.put(("task", task_id, done))
            await asyncio.wrap_future(done)

        async def call_noting() -> at.Result:
            if in_call:
                _task_note_var.set(note)
            return await self._call(tool, args, progress if want_progress else None)

        with self._flights_lock:
            self._flights.append(flight)
        try:
            fut = asyncio.run_coroutine_threadsafe(call_noting(), loop)
        except RuntimeError:
            with self._flights_lock:
                self._flights.remove(flight)
            raise RemoteError(f'mcp: call "{tool.remote_name}": {self._close_error}') from None
        fut.add_done_callback(lambda _f: inbox.put(("done",)))
        cancel = at.cancel_event() if in_call else None
        try:
            while True:
                try:
                    item = inbox.get(timeout=0.05 if cancel is not None else None)
                except queue.Empty:
                    if cancel is not None and cancel.is_set():
                        fut.cancel()
                        raise RemoteError(f'mcp: call "{tool.remote_name}": cancelled') from None
                    continue
                kind = item[0]
                if kind == "done":
                    return fut.result()
                if kind == "closed":  # close() cancels the call's task itself
                    raise RemoteError(f'mcp: call "{tool.remote_name}": {self._close_error}')
                if kind == "progress":
                    _, p, total, message = item
                    info = at.ProgressInfo(progress=p, total=total, message=message)
                    if in_call:
                        at.progress(message or "", progress=p, total=total, message=message)
                    elif call.on_update is not None:
                        call.on_update(at.Result(output=message or "", details=info))
                elif kind == "task":  # durable (with a journal) before the task is polled
                    try:
                        data = json.dumps({"taskId": item[1], "tool": tool.remote_name})
                        at.write_record(at.Record(TASK_RECORD, data))
                    finally:
                        item[2].set_result(None)
                elif kind == "ask":
                    question, answer = item[1], item[2]
                    try:
                        reply = at.elicit(question) if in_call else at.Answer(at.Action.CANCEL)
                    except BaseException as exc:
                        answer.set_exception(exc)
                    else:
                        answer.set_result(reply)
        finally:
            with self._flights_lock:
                if flight in self._flights:
                    self._flights.remove(flight)
            # answer any question still open so the server is not left waiting
            while True:
                try:
                    item = inbox.get_nowait()
                except queue.Empty:
                    break
                if item[0] == "ask" and not item[2].done():
                    item[2].set_result(at.Answer(at.Action.CANCEL))
                elif item[0] == "task" and not item[2].done():
                    item[2].set_result(None)

    async def _on_elicit(self, ctx: Any, params: mt.ElicitRequestParams) -> Any:
        """Route a server's question to the sole call in flight (nobody: ``cancel``)."""

        import mcp.types as mt

        with self._flights_lock:
            flights = list(self._flights)
        if len(flights) != 1:
            return mt.ElicitResult(action="cancel")
        if isinstance(params, mt.ElicitRequestURLParams):
            question = at.Elicitation(params.message, None, params.url)
        else:
            question = at.Elicitation(params.message, dict(params.requested_schema))
        try:
            reply = await flights[0].ask(question)
        except Exception as exc:
            return mt.ErrorData(code=-32603, message=f"mcp: elicitation: {_describe(exc)}")
        try:
            action = at.Action(reply.action)
        except ValueError:
            return mt.ErrorData(
                code=-32603, message=f"mcp: elicitation answer: unknown action {reply.action!r}"
            )
        if action != at.Action.ACCEPT:
            return mt.ElicitResult(action=action.value)
        if reply.content is not None and not isinstance(reply.content, dict):
            return mt.ErrorData(
                code=-32603, message="mcp: elicitation answer: accept content must be a JSON object"
            )
        content = _with_defaults(question.schema, reply.content)
        return mt.ElicitResult(action="accept", content=content)


@dataclasses.dataclass
class _TaskCall:
    """What a call's task resolver reports to: progress, and that a poll was answered (which
    restarts the idle ``timeout``, as progress does)."""

    progress: Callable[[float, float | None, str | None], Awaitable[None]] | None
    alive: Callable[[], None] | None


_task_call_var: contextvars.ContextVar[_TaskCall | None] = contextvars.ContextVar(
    "agenttool_mcp_task_call", default=None
)
# A call from a tool thread: where its task's id goes to be written as a TASK_RECORD.
_task_note_var: contextvars.ContextVar[Callable[[str], Awaitable[None]] | None] = (
    contextvars.ContextVar("agenttool_mcp_task_note", default=None)
)


def _poll_seconds(value: Any, default: float) -> float:
    """The server's ``pollIntervalMs`` in seconds, kept within 10 ms and 5 s (``default`` for
    none), so neither a zero nor an hour from the server stalls or floods a call."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return default
    return min(max(value / 1000.0, 0.01), 5.0)


@functools.cache
def _task_request_class() -> type[Any]:
    """The SDK request for ``tasks/*``, whose ``Mcp-Name`` header is the ``taskId``."""
    import mcp.types as mt

    class TaskRequest(mt.Request[Any, str]):
        name_param = "taskId"

    return TaskRequest


@functools.cache
def _created_task_model() -> type[Any]:
    """The ``CreateTaskResult`` (``resultType: "task"``) as the SDK's claims parse it."""
    from typing import Literal

    import mcp.types as mt

    class CreatedTask(mt.Result):
        result_type: Literal["task"] = "task"
        task_id: str
        status: str = "working"
        poll_interval_ms: int | None = None
        ttl_ms: int | None = None

    return CreatedTask


def _tasks_extension(remote: AsyncRemote) -> Any:
    """The client side of :data:`TASKS_EXTENSION` for ``remote``: declared in every 2026-07-28
    request's capabilities, and a task answering a call resolved by polling it."""
    from mcp.client.extension import ClientExtension, ResultClaim

    class _Tasks(ClientExtension):
        identifier = TASKS_EXTENSION

        def claims(self) -> Any:
            return [
                ResultClaim(
                    result_type="task", model=_created_task_model(), resolve=remote._resolve_task
                )
            ]

    return _Tasks()


def _with_defaults(schema: Any, content: dict[str, Any] | None) -> dict[str, Any] | None:
    """An accepted form's content with the schema's defaults for the fields the answer left
    out, as SEP-1034 asks of a client (a field the answer gives is never touched)."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return content
    filled = dict(content or {})
    for name, field in properties.items():
        if name not in filled and isinstance(field, dict) and "default" in field:
            filled[name] = field["default"]
    return filled if filled or content is not None else content


def _read_answer(answer: Any, tool: _RemoteTool) -> FactsAnswer:
    """A server's answer for one call, as the local tool reports it: a claim the tool's
    ``_meta`` does not mark reads as none; a malformed one as an error (no policy allows it)."""
    out = FactsAnswer()
    if not isinstance(answer, dict):
        answer = {"error": f"mcp: {FACTS_METHOD}: the server's answer is not an object"}
    if tool.claims_facts:
        error, facts = answer.get("error"), answer.get("facts")
        if isinstance(error, str) and error:
            out.claimed, out.error = True, RemoteError(error)
        elif facts is not None:
            out.claimed = True
            try:
                out.facts = at.Facts.from_json(facts)
            except ValueError as exc:
                out.error = RemoteError(f"mcp: {FACTS_METHOD}: {exc}")
    if tool.claims_replay and answer.get("replay") == "safe":
        out.replay = at.Replay.SAFE
    return out


class _Ended(Exception):
    """The connection under a call is over (the SDK's own "connection closed")."""


class _NotSent(Exception):
    """A call failed with its connection and was not sent again; the next call reconnects."""


def _session_over(client: Client | None) -> bool:
    """Whether the SDK's session under ``client`` has stopped (its dispatcher closed)."""
    if client is None:
        return False
    try:
        return getattr(client.session._dispatcher, "_closed", None) is True
    except RuntimeError:  # the client is no longer entered
        return True


class _NoAnswer(Exception):
    """A call passed its ``timeout`` or ``max_timeout``; the message says which."""


def _connection_ended(client: Client, exc: BaseException) -> bool:
    """Whether an ``MCPError`` is the SDK's own "connection closed", not the server's error.

    A server may answer any code (-32000 included), so the code alone proves nothing: the SDK
    raises its own only once its dispatcher has stopped."""
    from mcp.shared.exceptions import MCPError

    if not isinstance(exc, MCPError) or exc.error.code != _CONNECTION_CLOSED:
        return False
    try:
        stopped = getattr(client.session._dispatcher, "_closed", None)
    except RuntimeError:  # the client is no longer entered
        return True
    if isinstance(stopped, bool):
        return stopped
    return exc.error.message == "Connection closed" and exc.error.data is None  # pragma: no cover


def _cancel_all(question: at.Elicitation) -> at.Answer:
    return at.Answer(at.Action.CANCEL)


def _current_task() -> asyncio.Task[Any] | None:
    import asyncio

    return asyncio.current_task()


def _describe(exc: BaseException) -> str:
    """A one-line account of a failure, reaching into exception groups."""
    group = getattr(builtins, "BaseExceptionGroup", None)
    if group is not None and isinstance(exc, group) and exc.exceptions:
        return _describe(exc.exceptions[0])
    text = str(exc)
    if isinstance(exc, (OSError, ConnectionError)) or not text:
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text


def _options(
    command: Sequence[str] | None,
    url: str | None,
    server: Any,
    **kw: Any,
) -> _Options:
    given = sum(x is not None and x != [] for x in (command, url, server))
    if given != 1:
        raise ValueError("connect: give exactly one of command=[...], url=... or server=...")
    if command is not None and (isinstance(command, str) or not command):
        raise ValueError('connect: command must be a non-empty list, such as ["node", "x.js"]')
    if kw["era"] not in _ERAS:
        raise ValueError(f"connect: era must be one of {', '.join(map(repr, _ERAS))}")
    for remote, local in kw["rename"].items():
        if not _is_provider_name(local):
            raise ValueError(
                f'connect: rename: "{remote}" to "{local}": a tool name must match '
                f"^{at._NAME_RULE}$"
            )
    for key in ("timeout", "max_timeout"):
        if kw[key] is not None and not kw[key] > 0:
            raise ValueError(f"connect: {key} must be a positive number of seconds or None")
    return _Options(command=command, url=url, server=server, **kw)


def aconnect(
    command: Sequence[str] | None = None,
    *,
    url: str | None = None,
    server: Any = None,
    prefix: str = "",
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    headers: Mapping[str, str] | None = None,
    auth: Any = None,
    sequential: Sequence[str] = (),
    resources: Mapping[str, str] | None = None,
    confined: Mapping[str, Callable[[Any], tuple[bool, str]]] | None = None,
    elicitation: bool = False,
    notification_grace: float = 0,
    timeout: float | None = None,
    connect_timeout: float = 30.0,
    stderr: TextIO | None = None,
    on_refresh_error: Callable[[BaseException], None] | None = None,
    rename: Mapping[str, str] | None = None,
    era: str = "auto",
    max_timeout: float | None = None,
    claims: bool = False,
) -> AsyncRemote:
    """An ``AsyncRemote`` for asyncio hosts: ``async with aconnect(...) as remote``.

    Same options as ``connect``.
    """
    _mcp_available()
    opts = _options(
        command,
        url,
        server,
        prefix=prefix,
        env=env,
        cwd=cwd,
        headers=headers,
        auth=auth,
        sequential=tuple(sequential),
        resources=dict(resources or {}),
        confined=dict(confined or {}),
        elicitation=elicitation,
        notification_grace=notification_grace,
        timeout=timeout,
        connect_timeout=connect_timeout,
        stderr=stderr,
        on_refresh_error=on_refresh_error,
        rename=dict(rename or {}),
        era=era,
        max_timeout=max_timeout,
        claims=claims,
    )
    return AsyncRemote(opts)


class Remote:
    """A connection to one MCP server with a synchronous face, callable from any thread.

    It owns an event loop in a thread of its own; ``tools()`` are agenttool Tools an executor
    runs like any other.  A context manager: leaving it closes the connection.  ``aio`` is the
    ``AsyncRemote`` underneath, for code already on that loop.
    """

    def __init__(self, aio: AsyncRemote) -> None:
        import asyncio

        self.aio = aio
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="agenttool_mcp remote", daemon=True
        )
        self._thread.start()
        try:
            self._run(aio.open())
        except BaseException:
            self._stop_loop()
            raise

    def _run(self, coro: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
        import asyncio

        if threading.current_thread() is self._thread:
            raise RuntimeError("Remote: a blocking method was called on the connection's own loop")
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result(timeout)

    def __enter__(self) -> Remote:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def tools(self) -> list[at.Tool]:
        """The server's tools as of the last listing (all pages), named with the prefix."""
        return self.aio.tools()

    def lookup(self, name: str) -> at.Tool | None:
        return self.aio.lookup(name)

    @property
    def server_info(self) -> mt.Implementation | None:
        return self.aio.server_info

    @property
    def instructions(self) -> str | None:
        return self.aio.instructions

    @property
    def closed(self) -> bool:
        return self.aio.closed

    @property
    def protocol_version(self) -> str | None:
        return self.aio.protocol_version

    def call(self, name: str, args: Mapping[str, Any] | str | None = None) -> at.Result:
        """Call one tool by its local name outside any executor; ``isError`` raises."""
        tool = self.aio.lookup(name)
        if tool is None:
            if self.aio.closed:
                raise RemoteError(f'mcp: call "{name}": {self.aio._close_error}')
            raise RemoteError(
                f'mcp: no tool "{name}"; the tools are: {", ".join(t.name for t in self.tools())}'
            )
        value: str | dict[str, Any] = args if isinstance(args, str) else dict(args or {})
        return tool.execute(at.Call(id="call", args=value))

    def facts(
        self, calls: Iterable[tuple[str, Mapping[str, Any] | str | bytes | None]]
    ) -> list[FactsAnswer]:
        """Ask the server about several calls, ``(local name, arguments)`` pairs, in one
        request: see :meth:`AsyncRemote.facts`."""
        result: list[FactsAnswer] = self._run(self.aio.facts(list(calls)))
        return result

    def refresh(self) -> None:
        """List the server's tools again now."""
        self._run(self.aio.refresh())

    def await_refresh(self, timeout: float | None = None) -> None:
        """Wait until the snapshot reflects every tool-list change received so far."""
        self._run(self.aio.await_refresh(), timeout)

    def close(self) -> None:
        """End calls in flight with ``mcp: connection closed``, hang up, stop the loop."""
        if not self._loop.is_running():
            return
        try:
            self._run(self.aio.close(), 30)
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        if threading.current_thread() is not self._thread:
            self._thread.join(10)
        if not self._loop.is_running() and not self._loop.is_closed():
            self._loop.close()


# connect repeats aconnect's signature, and passes each option on, on purpose (duplicates pairs
# the two): the public options stay spelled out, typed and defaulted on both faces.
def connect(
    command: Sequence[str] | None = None,
    *,
    url: str | None = None,
    server: Any = None,
    prefix: str = "",
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    headers: Mapping[str, str] | None = None,
    auth: Any = None,
    sequential: Sequence[str] = (),
    resources: Mapping[str, str] | None = None,
    confined: Mapping[str, Callable[[Any], tuple[bool, str]]] | None = None,
    elicitation: bool = False,
    notification_grace: float = 0,
    timeout: float | None = None,
    connect_timeout: float = 30.0,
    stderr: TextIO | None = None,
    on_refresh_error: Callable[[BaseException], None] | None = None,
    rename: Mapping[str, str] | None = None,
    era: str = "auto",
    max_timeout: float | None = None,
    claims: bool = False,
) -> Remote:
    """Connect to an MCP server and return its tools' ``Remote`` (a context manager).

    ``command`` runs a server over stdio (the child sees only a few variables of this
    environment plus ``env``); ``url`` speaks streamable HTTP with ``headers`` and ``auth``
    (an ``httpx2.Auth`` such as the SDK's ``OAuthClientProvider``); ``server`` takes an
    in-process SDK ``Server``/``MCPServer`` or any SDK transport.  Tools are named
    ``<prefix>__<name>`` with a prefix.  ``sequential`` names tools that must run alone,
    ``resources`` maps a tool to its resource, ``confined`` maps a tool to its
    ``confined(args)`` (names local or remote).  A remote name that breaks
    ``^[a-zA-Z0-9_-]{1,64}$`` is given a deterministic local one (other characters become
    ``_``; an over-long name is cut and ends in a short hash); ``rename`` maps a remote name
    to the local name of your choice; tools that would share one name are left out, with a
    warning naming them (the others stay).  ``notification_grace`` is how long a call that
    may change the tool list waits for a list change sent apart from its result (default 0:
    a change sent before the result is seen without it).  ``elicitation`` offers the server
    form and URL questions, routed to the call's elicitor.  ``timeout`` bounds the wait for
    the answer to a call (started again by each progress notification) or to a page of the
    tool list (None: no limit); ``max_timeout`` bounds the whole call whatever its progress;
    ``connect_timeout`` the handshake (and a new session).  ``era`` picks the protocol:
    ``"auto"`` speaks 2026-07-28 when the server offers it and the legacy handshake otherwise
    (as the SDK's client does), ``"legacy"`` or ``"2026-07-28"`` force one.  Over HTTP, a
    server that forgot the session (404 after a restart) gets a new one and the request once
    more.  A dropped connection (stdio or HTTP) is opened again by the next call; the call in
    flight fails and is sent again only when the server answers its replay SAFE (under
    ``claims=True``; a read-only hint never makes a call safe to send twice).
    ``claims=True`` trusts the server's claims (see ``FACTS_METHOD``), off by default since a
    claim is only as true as the server: on a server that advertises ``FACTS_CAPABILITY``, a
    tool its ``_meta`` marks ``facts`` is factual (``agenttool.facts_of`` asks the server about
    each call) and one marked ``replay`` reads the server's replay answer (``safe`` is SAFE,
    anything else UNKNOWN); ``Remote.facts`` asks about several calls in one request.  With
    ``era="2026-07-28"`` forced the client discovers nothing, so no capability is known and
    claims stay off; ``"auto"`` discovers them.  Every 2026-07-28 request declares
    :data:`TASKS_EXTENSION`: a call the server answers with a task is polled (``tasks/get``, at
    its ``pollIntervalMs``) to its result, which the call returns; cancelling the call, or a
    time limit, cancels the task, and a journaled call keeps the task id (:data:`TASK_RECORD`).
    """
    aio = aconnect(
        command,
        url=url,
        server=server,
        prefix=prefix,
        env=env,
        cwd=cwd,
        headers=headers,
        auth=auth,
        sequential=sequential,
        resources=resources,
        confined=confined,
        elicitation=elicitation,
        notification_grace=notification_grace,
        timeout=timeout,
        connect_timeout=connect_timeout,
        stderr=stderr,
        on_refresh_error=on_refresh_error,
        rename=rename,
        era=era,
        max_timeout=max_timeout,
        claims=claims,
    )
    return Remote(aio)


# ---------------------------------------------------------------------------------------------
# OAuth token stores (the SDK's TokenStorage protocol)
# ---------------------------------------------------------------------------------------------


class MemoryTokenStore:
    """Tokens and client registration in memory, copied in and out.

    A refresh answer without a refresh token keeps the one stored (servers that do not rotate);
    a rotated one replaces it.
    """

    def __init__(self) -> None:
        self._tokens: OAuthToken | None = None
        self._client: OAuthClientInformationFull | None = None
        self._lock = threading.Lock()

    async def get_tokens(self) -> OAuthToken | None:
        with self._lock:
            return self._tokens.model_copy() if self._tokens is not None else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        with self._lock:
            self._tokens = _keep_refresh(self._tokens, tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        with self._lock:
            return self._client.model_copy() if self._client is not None else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        with self._lock:
            self._client = client_info.model_copy()


def _keep_refresh(old: OAuthToken | None, new: OAuthToken) -> OAuthToken:
    new = new.model_copy()
    if new.refresh_token is None and old is not None and old.refresh_token is not None:
        new.refresh_token = old.refresh_token
    return new


class FileTokenStore:
    """Tokens and client registration in one JSON file that only its owner can read (0600).

    Every write replaces the file atomically, so a rotated refresh token is on disk before the
    SDK uses it.  Processes sharing the file take turns through a lock file beside it
    (``fcntl.flock``; an exclusive-create lock where that is absent), so no update is lost.  A
    corrupted file reads as empty, with a warning, and the next write replaces it.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.path.expanduser(os.fspath(path))
        self._lock = threading.Lock()

    def _read(self) -> dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            return {}
        except ValueError as exc:
            self._corrupt(f"not valid JSON ({exc})")
            return {}
        if not isinstance(data, dict):
            self._corrupt("not a JSON object")
            return {}
        return data

    def _corrupt(self, what: str) -> None:
        import warnings

        warnings.warn(
            f"FileTokenStore: {self.path} is {what}; read as empty, the next write replaces it",
            RuntimeWarning,
            stacklevel=3,
        )

    def _entry(self, raw: Any, model: Any) -> Any:
        """``raw`` read as the pydantic ``model``; ``None`` (with a warning) when it is not."""
        if not raw:
            return None
        try:
            return model.model_validate(raw)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            self._corrupt(f"holding an entry that is not a {model.__name__} ({exc})")
            return None

    def _write(self, data: dict[str, Any]) -> None:
        import tempfile

        folder = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tokens-", dir=folder)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def _update(self, key: str, change: Callable[[Any], Any]) -> None:
        """Read, change one entry and write, holding the lock of threads and of processes."""
        with self._lock, _file_lock(self.path + ".lock"):
            data = self._read()
            data[key] = change(data.get(key))
            self._write(data)

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        with self._lock:
            raw = self._read().get("tokens")
        return cast("OAuthToken | None", self._entry(raw, OAuthToken))

    async def set_tokens(self, tokens: OAuthToken) -> None:
        from mcp.shared.auth import OAuthToken

        def change(raw: Any) -> Any:
            old = self._entry(raw, OAuthToken)
            return _keep_refresh(old, tokens).model_dump(mode="json", exclude_none=True)

        self._update("tokens", change)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        with self._lock:
            raw = self._read().get("client_info")
        return cast(
            "OAuthClientInformationFull | None", self._entry(raw, OAuthClientInformationFull)
        )

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._update(
            "client_info", lambda _: client_info.model_dump(mode="json", exclude_none=True)
        )


_STALE_LOCK = 30.0  # seconds after which an exclusive-create lock file is taken as abandoned


@contextlib.contextmanager
def _file_lock(path: str, flock: bool = True) -> Iterator[None]:
    """An exclusive lock between processes on ``path``: ``flock`` where ``fcntl`` exists
    (and ``flock``), else a lock file created exclusively (one left by a dead process
    expires)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
    fcntl: Any = None
    if flock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            pass
    if fcntl is not None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock
        return
    import time

    while True:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            break
        except FileExistsError:
            try:
                if time.time() - os.path.getmtime(path) > _STALE_LOCK:
                    os.unlink(path)
                    continue
            except OSError:
                continue
            time.sleep(0.005)
    try:
        yield
    finally:
        os.unlink(path)


if TYPE_CHECKING:  # both stores satisfy the SDK's protocol
    _memory_store: TokenStorage = MemoryTokenStore()
    _file_store: TokenStorage = FileTokenStore("")


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------


def _load_tools(target: str) -> list[at.Tool]:
    """The tools of TARGET, read by the core's loader exactly as ``python -m agenttool`` reads
    it: a ``.py`` path or a module name, optionally ``:attr``."""
    tools = at._cli_load_target(target)
    if not tools:
        raise ValueError(f"target {target!r} has no tools at its top level")
    return tools


def _print_output(result: at.Result, out: TextIO) -> None:
    if isinstance(result.output, str):
        out.write(result.output)
        if not result.output.endswith("\n"):
            out.write("\n")
    else:
        out.write(json.dumps(result.output) + "\n")


def _env_state_key() -> str | None:
    """``AGENTTOOL_MCP_STATE_KEY``, the state key the workers share (``None`` when unset or
    empty); read from the environment so that it never shows in a process list."""
    return os.environ.get("AGENTTOOL_MCP_STATE_KEY") or None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agenttool_mcp serve|list|call ...``; returns the exit code."""
    import argparse

    args = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in args:
        cut = args.index("--")
        args, command = args[:cut], args[cut + 1 :]
    parser = argparse.ArgumentParser(
        prog="python -m agenttool_mcp", description="MCP both ways for agenttool tools."
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_serve = sub.add_parser("serve", help="serve the tools of TARGET over stdio or HTTP")
    p_serve.set_defaults(run=_cli_serve)
    p_serve.add_argument("target", help="a .py file or module, optionally :attr")
    p_serve.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at /mcp")
    p_serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed over HTTP (repeatable; scheme://host:* for any port)",
    )
    p_serve.add_argument("--name", default="agenttool")
    p_serve.add_argument(
        "--errors",
        choices=("full", "redacted"),
        default="full",
        help="what a client reads of a tool's failure (default: full; see agenttool's policy)",
    )
    p_list = sub.add_parser("list", help="print a server's tools as definitions")
    p_list.set_defaults(run=_cli_remote, act=_cli_list)
    p_list.add_argument("--prefix", default="")
    p_list.add_argument("--url")
    p_call = sub.add_parser("call", help="call one tool of a server")
    p_call.set_defaults(run=_cli_remote, act=_cli_call)
    p_call.add_argument("--url")
    p_call.add_argument("--tool", required=True)
    p_call.add_argument("--args", default="{}")
    ns = parser.parse_args(args)
    try:
        _mcp_available()
    except RuntimeError as exc:
        print(f"agenttool_mcp: {exc}", file=sys.stderr)
        return 2

    run: Callable[[Any, list[str], Any], int] = ns.run  # each command's parser sets its own
    return run(ns, command, parser)


def _cli_serve(ns: Any, command: list[str], parser: Any) -> int:
    """``serve TARGET [--http HOST:PORT]``: serve the target's tools until stopped, with
    ``AGENTTOOL_MCP_STATE_KEY`` (if set) as the state key, never an argument a process list
    would show."""
    if command:
        parser.error("serve takes no command after --")
    try:
        tools = _load_tools(ns.target)
    except Exception as exc:
        print(f"agenttool_mcp: {exc}", file=sys.stderr)
        return 2
    if ns.http:
        host, sep, port = ns.http.rpartition(":")
        if not sep or not port.isdigit() or (":" in host and not host.startswith("[")):
            parser.error(f"--http wants HOST:PORT or [IPv6]:PORT, not {ns.http!r}")
        serve(
            tools,
            name=ns.name,
            transport="http",
            host=host or "127.0.0.1",
            port=int(port),
            allow_origins=ns.allow_origin,
            errors=ns.errors,
            state_key=_env_state_key(),
        )
    else:
        serve(tools, name=ns.name, errors=ns.errors, state_key=_env_state_key())
    return 0


def _cli_remote(ns: Any, command: list[str], parser: Any) -> int:
    """``list`` and ``call``: connect to the server (``--url`` or ``-- COMMAND``), then act."""
    if bool(ns.url) == bool(command):
        parser.error("give the server as --url URL or as -- COMMAND ...")
    try:
        remote = connect(
            command or None,
            url=ns.url,
            env=dict(os.environ) if command else None,  # the command sees this environment
            prefix=getattr(ns, "prefix", ""),
            notification_grace=0,
        )
    except Exception as exc:
        print(f"agenttool_mcp: {exc}", file=sys.stderr)
        return 2
    act: Callable[[Remote, Any], int] = ns.act
    with remote:
        return act(remote, ns)


def _cli_list(remote: Remote, ns: Any) -> int:
    """``list``: the server's tools as definitions."""
    defs = [at.definition(t) for t in remote.tools()]
    print(json.dumps(defs, indent=2))
    return 0


def _cli_call(remote: Remote, ns: Any) -> int:
    """``call --tool NAME``: one call, its progress on stderr, its output on stdout."""
    tool = remote.lookup(ns.tool)
    if tool is None:
        names = ", ".join(t.name for t in remote.tools())
        print(f'agenttool_mcp: no tool "{ns.tool}"; the tools are: {names}', file=sys.stderr)
        return 2
    call = at.Call(id="cli", args=ns.args)
    event = None
    for event in at.Executor(max_parallel=1).execute([at.Job(tool, call)]):
        if not event.final and event.result is not None:
            text = event.result.output if isinstance(event.result.output, str) else ""
            print(text, file=sys.stderr)
    assert event is not None
    if event.error is not None:
        print(at.error_result(event.error).output)
        return 1
    assert event.result is not None
    _print_output(event.result, sys.stdout)
    return 0


if __name__ == "__main__":
    # a target's own ``import agenttool_mcp`` must see this module, not load a second copy
    # whose current_session() would never be set
    sys.modules.setdefault("agenttool_mcp", sys.modules[__name__])
    sys.exit(main())
