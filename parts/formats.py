"""Provider formats: tool definitions out, call items in, output items back (DESIGN §4).

The canonical form is Open Responses.  Four wire formats are spoken:

* ``responses``: Open Responses (and OpenAI's Responses API).
* ``chat``: OpenAI Chat Completions (and the many servers that copy it).
* ``anthropic``: Anthropic Messages.
* ``gemini``: Google Gemini (``google-genai`` and the REST API).

Everything here is a pure function over dicts, or over the provider SDKs' own objects read by
attribute, so nothing needs an SDK installed and nothing here calls a model.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import json
import re
from typing import Any, Union

from agenttool import Result as Result
from agenttool import error_message as error_message
from agenttool import error_result as error_result

# __all__ += []  (this part has no public names: ToolSet.run and definition() are its faces)

_FORMATS = ("responses", "chat", "anthropic", "gemini")

# Open Responses, OpenAI (both APIs) and Anthropic share one rule for tool names.
_NAME_RULE = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_NAME_RULE_TEXT = 'letters, digits, "_" and "-", 1 to 64 characters'
# google-genai 3.6.1 allows 128 characters; Vertex's REST reference says 64.  The stricter
# length is checked so that one definition works on both services.
_GEMINI_NAME_RULE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}")
_GEMINI_NAME_RULE_TEXT = (
    'a letter or "_" first, then letters, digits, "_", ".", ":" and "-", at most 64 characters'
)

# What Anthropic takes inside a tool_result (anthropic 2.14.0 Base64ImageSourceParam).
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

_NO_ARGS_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "required": []}

_Outcome = Union[Result, BaseException]


def _check_format(format: str) -> str:
    if format not in _FORMATS:
        known = ", ".join(f'"{f}"' for f in _FORMATS)
        given = json.dumps(format) if isinstance(format, str) else repr(format)
        raise ValueError(f"unknown format {given}: expected one of {known}")
    return format


# ---------------------------------------------------------------------------------------------
# Definitions out
# ---------------------------------------------------------------------------------------------


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
    import copy

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
    if format == "responses":
        return copy.deepcopy(dict(defn))

    description = defn.get("description")
    params = defn.get("parameters")
    schema: Any = copy.deepcopy(params) if params is not None else copy.deepcopy(_NO_ARGS_SCHEMA)
    if not isinstance(schema, dict):
        raise ValueError(
            f'tool "{name}": parameters must be a JSON Schema object, got {type(schema).__name__}'
        )
    strict = defn.get("strict") is True

    if format == "chat":
        fn: dict[str, Any] = {"name": name}
        if description:
            fn["description"] = description
        fn["parameters"] = schema
        if strict:
            fn["strict"] = True
        return {"type": "function", "function": fn}

    if format == "anthropic":
        root = schema.get("type", "object")
        if root != "object":
            raise ValueError(
                f'tool "{name}": anthropic needs an object schema at the root of input_schema, '
                f"got type {json.dumps(root)}"
            )
        if "type" not in schema:
            schema = {"type": "object", **schema}
        out: dict[str, Any] = {"name": name}
        if description:
            out["description"] = description
        out["input_schema"] = schema
        if strict:
            out["strict"] = True
        return out

    decl: dict[str, Any] = {"name": name}
    if description:
        decl["description"] = description
    decl["parametersJsonSchema"] = schema
    return decl


def _check_name(name: str, format: str) -> None:
    if format == "gemini":
        rule, text = _GEMINI_NAME_RULE, _GEMINI_NAME_RULE_TEXT
    else:
        rule, text = _NAME_RULE, _NAME_RULE_TEXT
    if rule.fullmatch(name) is None:
        raise ValueError(
            f'tool "{name}": the name does not fit {format}\'s rule ^{rule.pattern}$ ({text})'
        )


# ---------------------------------------------------------------------------------------------
# Calls in
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _ProviderCall:
    """One function call read from a provider's items, in the provider's own terms.

    ``arguments`` is passed on untouched: the JSON text the model wrote (Responses, Chat) or
    the object the provider decoded (Anthropic, Gemini).  ``minted`` says the id was made up
    here because the provider gave none (Gemini); it is then never sent back.
    """

    call_id: str
    name: str
    arguments: str | dict[str, Any]
    minted: bool = False


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


@dataclasses.dataclass
class _FoundItem:
    fmt: str
    where: str
    call: Any  # the raw call item; None for evidence of a format without a call


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
            calls.append(_read_one(f.fmt, f.call, f.where))
    if fmt == "gemini":
        _mint_ids(calls)
    return fmt, calls


def _read_one(fmt: str, item: Any, where: str) -> _ProviderCall:
    args: Any
    if fmt == "responses":
        call_id = _text_field(item, "call_id", where, "function_call")
        name = _text_field(item, "name", where, "function_call")
        args = _field(item, "arguments")
        return _ProviderCall(call_id, name, "" if args is None else args)
    if fmt == "chat":
        call_id = _text_field(item, "id", where, "tool call")
        fn = _field(item, "function")
        name = _text_field(fn, "name", f"{where}.function", "tool call")
        args = _field(fn, "arguments")
        return _ProviderCall(call_id, name, "" if args is None else args)
    if fmt == "anthropic":
        call_id = _text_field(item, "id", where, "tool_use block")
        name = _text_field(item, "name", where, "tool_use block")
        args = _field(item, "input")
        return _ProviderCall(call_id, name, {} if args is None else args)
    fc = _field(item, "function_call")
    name = _text_field(fc, "name", where, "functionCall")
    call_id = _field(fc, "id")
    args = _field(fc, "args")
    if not isinstance(call_id, str) or not call_id:
        return _ProviderCall("", name, {} if args is None else args, minted=True)
    return _ProviderCall(call_id, name, {} if args is None else args)


def _mint_ids(calls: list[_ProviderCall]) -> None:
    """Give Gemini calls without an id a stable one, ``call_<i>`` by position, never reused."""
    taken = {c.call_id for c in calls if not c.minted}
    for i, c in enumerate(calls):
        if c.minted:
            candidate, n = f"call_{i}", 1
            while candidate in taken:
                candidate, n = f"call_{i}_{n}", n + 1
            taken.add(candidate)
            c.call_id = candidate


# ---------------------------------------------------------------------------------------------
# Output items back
# ---------------------------------------------------------------------------------------------


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
            items.append(_error_item(format, call, outcome))
        elif isinstance(outcome, Result):
            items.append(_result_item(format, call, outcome.output))
        else:
            raise TypeError(
                f'outcome for call "{call.call_id}": expected a Result or an exception, '
                f"got {type(outcome).__name__}"
            )
    return items


def _error_item(format: str, call: _ProviderCall, exc: BaseException) -> dict[str, Any]:
    if format == "anthropic":
        return {
            "type": "tool_result",
            "tool_use_id": call.call_id,
            "content": [{"type": "text", "text": error_message(exc)}],
            "is_error": True,
        }
    if format == "gemini":
        return _gemini_item(call, {"error": error_message(exc)}, [])
    output = error_result(exc).output
    text = output if isinstance(output, str) else "Error: " + error_message(exc)
    if format == "chat":
        return {"role": "tool", "tool_call_id": call.call_id, "content": text}
    return {"type": "function_call_output", "call_id": call.call_id, "output": text}


def _result_item(format: str, call: _ProviderCall, output: Any) -> dict[str, Any]:
    parts = _parts_of(output)
    if format == "responses":
        out: Any = output if isinstance(output, str) else [_responses_part(p) for p in parts]
        return {"type": "function_call_output", "call_id": call.call_id, "output": out}
    if format == "chat":
        text = output if isinstance(output, str) else "\n".join(_text_or_note(p) for p in parts)
        return {"role": "tool", "tool_call_id": call.call_id, "content": text}
    if format == "anthropic":
        item: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.call_id}
        blocks = [b for b in (_anthropic_block(p) for p in parts) if b is not None]
        if blocks:  # Anthropic refuses empty text blocks; no content says "nothing".
            item["content"] = blocks
        return item
    texts: list[str] = []
    media: list[dict[str, Any]] = []
    for p in parts:
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
