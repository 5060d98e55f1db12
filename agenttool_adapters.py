"""agenttool tools inside the frameworks users already live in, and theirs inside agenttool.

- :func:`to_openai_agents` / :func:`from_openai_agents`: the OpenAI Agents SDK's ``FunctionTool``.
- :func:`to_pydantic_ai` / :func:`from_pydantic_ai`: a pydantic-ai ``FunctionToolset`` / ``Tool``.
- :func:`to_langchain` / :func:`from_langchain`: LangChain ``BaseTool``; progress as custom events.

Each framework is imported only when its adapter is used.  What survives the crossing: the
schema exactly as the tool states it (strict when the tool is strict, never rewritten), the
description, image and file parts (as the framework's own types), errors as the framework
expects them (the model reads ``Error: <message>`` once), async tools without a thread,
cancellation (cancelling the framework's task cancels the call), and resource and sequential
ordering across the framework's separate calls: every call of a set runs on the set's one
executor (:attr:`agenttool.ToolSet.executor`).
"""

from __future__ import annotations

import base64
import collections.abc
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import agenttool
from agenttool import Call, Job, Result, Tool, ToolSet

# The name of the LangChain custom event a tool's progress update is sent as: it reaches the
# run's callbacks (``on_custom_event``) and ``astream_events`` with ``{"tool", "output", "parts"}``.
PROGRESS_EVENT = "agenttool_progress"

__all__ = [
    "PROGRESS_EVENT",
    "to_openai_agents",
    "from_openai_agents",
    "to_pydantic_ai",
    "from_pydantic_ai",
    "to_langchain",
    "from_langchain",
]


def _set_of(tools: ToolSet | collections.abc.Iterable[Tool]) -> ToolSet:
    return tools if isinstance(tools, ToolSet) else ToolSet(tools)


async def _call(
    ts: ToolSet,
    name: str,
    call_id: str,
    args: Any,
    progress: Callable[[Result], Awaitable[None]] | None = None,
) -> tuple[Result | None, str]:
    """One call through the set's executor: its result, or ``(None, message)`` with the
    message the model reads for its failure (under the executor's error policy); each
    progress update the tool sends is given to ``progress`` where the framework has a channel."""
    job = Job(ts.lookup(name), Call(call_id or "call_" + uuid.uuid4().hex[:12], args))
    async for event in ts.executor.aexecute([job]):
        if event.final:
            if event.error is not None:
                return None, agenttool.error_message(event.error)
            return event.result or Result(""), ""
        if progress is not None and event.result is not None:
            await progress(event.result)
    raise AssertionError("unreachable: every job has a final event")  # pragma: no cover


def _parts(result: Result) -> list[dict[str, Any]]:
    """The result's output as content parts, text in one spelling (``text``) whichever of
    the three (``text``, ``input_text``, ``output_text``) the tool used."""
    out = result.output
    if isinstance(out, str):
        return [{"type": "text", "text": out}] if out else []
    parts = []
    for p in out:
        if p.get("type") in ("text", "input_text", "output_text"):
            parts.append({"type": "text", "text": p.get("text") or ""})
        else:
            parts.append(dict(p))
    return parts


def _text_of(result: Result) -> str | None:
    """The output as one text when it is only text (None when it holds images or files)."""
    parts = _parts(result)
    if all(p["type"] == "text" for p in parts):
        return "".join(p["text"] for p in parts)
    return None


def _data_of(url: str) -> tuple[str, bytes] | None:
    """``(mime, bytes)`` of a data URL, read by the core's one reader, else None."""
    parsed = agenttool._data_url(url)
    return None if parsed is None else (parsed[0], base64.b64decode(parsed[1]))


# ----- the OpenAI Agents SDK -----------------------------------------------------------------


def to_openai_agents(tools: ToolSet | collections.abc.Iterable[Tool]) -> list[Any]:
    """The tools as the Agents SDK's ``FunctionTool`` objects, the schema as stated (its
    ``strict_json_schema`` the tool's own strictness, so the SDK never rewrites it)."""
    from agents import FunctionTool

    ts = _set_of(tools)
    out = []
    for t in ts:
        schema = t.parameters if t.parameters is not None else agenttool.NO_ARGS

        async def invoke(ctx: Any, arguments: str, name: str = t.name) -> Any:
            result, error = await _call(ts, name, getattr(ctx, "tool_call_id", ""), arguments)
            if result is None:
                return f"Error: {error}"
            return _agents_output(result)

        out.append(
            FunctionTool(
                name=t.name,
                description=t.description,
                params_json_schema=schema,
                on_invoke_tool=invoke,
                strict_json_schema=agenttool.is_strict(t),
            )
        )
    return out


def _agents_output(result: Result) -> Any:
    """A result as the Agents SDK takes a tool's output: a str, or its structured parts."""
    text = _text_of(result)
    if text is not None:
        return text
    from agents import ToolOutputFileContent, ToolOutputImage, ToolOutputText

    out: list[Any] = []
    for p in _parts(result):
        kind = p["type"]
        if kind == "text":
            out.append(ToolOutputText(text=p["text"]))
        elif kind == "input_image":
            out.append(ToolOutputImage(image_url=p["image_url"], detail=p.get("detail")))
        elif kind == "input_file":
            out.append(
                ToolOutputFileContent(
                    file_data=p.get("file_data"),
                    file_url=p.get("file_url"),
                    filename=p.get("filename"),
                )
            )
    return out


def from_openai_agents(tool: Any) -> Tool:
    """An Agents SDK ``FunctionTool`` as an agenttool tool: its name, description and schema
    (strict as it says), its ``on_invoke_tool`` run with a context naming the call."""
    from agents.tool_context import ToolContext

    async def run(call: Call) -> Any:
        args = call.args if isinstance(call.args, str) else agenttool._dumps(call.args or {})
        ctx = ToolContext(
            context=None, tool_name=tool.name, tool_call_id=call.id, tool_arguments=args
        )
        return _from_agents_output(await tool.on_invoke_tool(ctx, args))

    return agenttool.new_func(
        tool.name,
        tool.description,
        tool.params_json_schema,
        run,
        strict=bool(tool.strict_json_schema),
    )


def _field(item: Any, key: str) -> Any:
    """A field of an Agents SDK output, a model or its dict form."""
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def _from_agents_output(value: Any) -> Any:
    """An Agents SDK tool's output as agenttool's: a str, or a Result of parts."""
    parts: list[dict[str, Any]] = []
    for item in value if isinstance(value, list) else [value]:
        kind = _field(item, "type")
        if kind == "text":
            parts.append({"type": "text", "text": _field(item, "text") or ""})
        elif kind == "image":
            parts.append({"type": "input_image", "image_url": _field(item, "image_url") or ""})
        elif kind == "file":
            part = {"type": "input_file"}
            for k in ("file_data", "file_url", "filename"):
                if _field(item, k):
                    part[k] = _field(item, k)
            parts.append(part)
        else:
            parts.append({"type": "text", "text": item if isinstance(item, str) else str(item)})
    if len(parts) == 1 and parts[0]["type"] == "text":
        return parts[0]["text"]
    return Result(parts)


# ----- pydantic-ai ---------------------------------------------------------------------------


def to_pydantic_ai(tools: ToolSet | collections.abc.Iterable[Tool]) -> Any:
    """The tools as a pydantic-ai ``FunctionToolset``: each schema as stated (strict when
    the tool is), a failure raised as ``ToolFailed`` with the model's message, images and
    files as ``BinaryContent`` (inline data) or ``ImageUrl``/``DocumentUrl``."""
    from pydantic_ai import RunContext
    from pydantic_ai.tools import Tool as PydanticTool
    from pydantic_ai.toolsets import FunctionToolset

    ts = _set_of(tools)
    made = []
    for t in ts:

        async def run(ctx: RunContext[Any], /, _name: str = t.name, **kwargs: Any) -> Any:
            from pydantic_ai.exceptions import ToolFailed

            result, error = await _call(ts, _name, ctx.tool_call_id or "", kwargs)
            if result is None:
                raise ToolFailed(f"Error: {error}")
            return _pydantic_ai_output(result)

        tool = PydanticTool.from_schema(
            run,
            name=t.name,
            description=t.description,
            json_schema=t.parameters if t.parameters is not None else agenttool.NO_ARGS,
            takes_ctx=True,
            sequential=agenttool.is_sequential(t),
        )
        tool.strict = agenttool.is_strict(t) or None
        made.append(tool)
    return FunctionToolset(made)


# The same walk over the parts as _agents_output's (duplicates pairs them, as boilerplate):
# each SDK takes its own types for a text, an image and a file.
def _pydantic_ai_output(result: Result) -> Any:
    text = _text_of(result)
    if text is not None:
        return text
    from pydantic_ai import BinaryContent, DocumentUrl, ImageUrl

    out: list[Any] = []
    for p in _parts(result):
        if p["type"] == "text":
            out.append(p["text"])
            continue
        url = p.get("image_url") or p.get("file_data") or p.get("file_url") or ""
        inline = _data_of(url)
        if inline is not None:
            out.append(BinaryContent(data=inline[1], media_type=inline[0]))
        elif p["type"] == "input_image":
            out.append(ImageUrl(url=url))
        else:
            out.append(DocumentUrl(url=url))
    return out


def from_pydantic_ai(tool: Any) -> Tool:
    """A pydantic-ai ``Tool`` as an agenttool tool: its name, description and schema (strict
    as it says), its ``sequential``, ``timeout`` and ``requires_approval``; the model's
    arguments checked against that schema, then decoded by the tool's own pydantic validator
    (its error read as ``invalid arguments: <path>: <message>``).  A tool that takes a
    ``RunContext`` is refused: outside an agent run there is no context to give it."""
    if tool.takes_ctx:
        raise TypeError(
            f"agenttool_adapters: pydantic-ai tool {tool.name!r} takes a RunContext, which only"
            " a pydantic-ai agent run has; make it a plain function to use it here"
        )
    schema = tool.function_schema
    definition = tool.tool_def

    async def run(call: Call) -> Any:
        args = agenttool._loads(call.args) if isinstance(call.args, (str, bytes)) else call.args
        try:
            checked = schema.validator.validate_python(args or {})
        except ValueError as exc:  # pydantic's ValidationError
            raise _invalid(exc) from None
        return await schema.call(checked, None)

    options: dict[str, Any] = {"validate": True, "strict": bool(tool.strict)}
    if tool.sequential:
        options["sequential"] = True
    if tool.timeout:
        options["timeout"] = tool.timeout
    if tool.requires_approval:
        options["needs_approval"] = True
    return agenttool.new_func(
        tool.name, definition.description or "", definition.parameters_json_schema, run, **options
    )


def _invalid(exc: Exception) -> agenttool.ValidationError:
    """pydantic's first error as agenttool's ``invalid arguments`` error, at its path."""
    errors = getattr(exc, "errors", None)
    first = errors()[0] if callable(errors) and errors() else {}
    path = agenttool._format_path(tuple(first.get("loc", ())))
    return agenttool.ValidationError(path, str(first.get("msg") or exc))


# ----- LangChain -----------------------------------------------------------------------------


def to_langchain(tools: ToolSet | collections.abc.Iterable[Tool]) -> list[Any]:
    """The tools as LangChain ``StructuredTool`` objects with the schema as stated (a JSON
    Schema ``args_schema``), async without a thread, a failure given to the model as
    ``Error: <message>``, images and files as LangChain's standard content blocks."""
    from langchain_core.callbacks import adispatch_custom_event
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import StructuredTool, ToolException

    ts = _set_of(tools)
    out = []
    for t in ts:
        # LangChain passes ``callbacks`` (the tool run's child callback manager) to a
        # coroutine with that parameter: progress goes out through it
        async def arun(callbacks: Any = None, _name: str = t.name, **kwargs: Any) -> Any:
            async def progress(update: Result) -> None:
                data = {"tool": _name, "output": _text_of(update) or "", "parts": _parts(update)}
                config = RunnableConfig(callbacks=callbacks)
                await adispatch_custom_event(PROGRESS_EVENT, data, config=config)

            result, error = await _call(ts, _name, "", kwargs, progress if callbacks else None)
            if result is None:
                raise ToolException(error)
            return _langchain_output(result)

        def sync_run(**kwargs: Any) -> Any:
            raise ToolException("agenttool tools run asynchronously: call ainvoke")

        out.append(
            StructuredTool(
                name=t.name,
                description=t.description,
                args_schema=t.parameters if t.parameters is not None else agenttool.NO_ARGS,
                coroutine=arun,
                func=sync_run,
                handle_tool_error=lambda e: f"Error: {e}",
            )
        )
    return out


def _langchain_output(result: Result) -> Any:
    text = _text_of(result)
    if text is not None:
        return text
    blocks: list[dict[str, Any]] = []
    for p in _parts(result):
        if p["type"] == "text":
            blocks.append({"type": "text", "text": p["text"]})
            continue
        url = p.get("image_url") or p.get("file_data") or p.get("file_url") or ""
        kind = "image" if p["type"] == "input_image" else "file"
        inline = _data_of(url)
        if inline is not None:
            data = base64.b64encode(inline[1]).decode("ascii")
            blocks.append({"type": kind, "base64": data, "mime_type": inline[0]})
        else:
            blocks.append({"type": kind, "url": url})
    return blocks


def from_langchain(tool: Any) -> Tool:
    """A LangChain ``BaseTool`` as an agenttool tool: its name, description and argument
    schema, run through its ``ainvoke`` (its own validation)."""
    schema = tool.tool_call_schema
    params = schema if isinstance(schema, dict) else schema.model_json_schema()
    params = {k: v for k, v in params.items() if k not in ("title", "description")}

    async def run(call: Call) -> Any:
        args = agenttool._loads(call.args) if isinstance(call.args, (str, bytes)) else call.args
        return await tool.ainvoke(args or {})

    return agenttool.new_func(tool.name, tool.description, params, run)
