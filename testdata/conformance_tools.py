"""The tools the official MCP conformance suite's server scenarios call, written with
agenttool's own API and served by test_conformance_mcp.py (``serve --http`` and ``asgi_app``).

The names, texts and schemas are the suite's (``@modelcontextprotocol/conformance``: each
scenario's "Server Implementation Requirements" and its reference everything-server).  Only
tools are here: the scenarios for resources, prompts, completions, sampling and roots ask for
what a tool library does not serve, and the baseline says so.
"""

import base64
import json
import time

import agenttool as at

# The suite's own fixtures: a 1x1 PNG and a minimal WAV file.
IMAGE_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
AUDIO_WAV = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")


def _json(value):
    return json.dumps(value, separators=(",", ":"))


@at.tool
def test_simple_text() -> str:
    """Tests simple text content response"""
    return "This is a simple text response for testing."


@at.tool
def test_image_content() -> at.Result:
    """Tests image content response"""
    return at.parts(at.image(IMAGE_PNG, "image/png"))


@at.tool
def test_audio_content() -> at.Result:
    """Tests audio content response"""
    return at.parts(at.file(AUDIO_WAV, filename="test.wav", mime="audio/wav"))


@at.tool
def test_embedded_resource() -> at.Result:
    """Tests embedded resource content response"""
    return at.parts(
        at.file(
            b"This is an embedded resource content.",
            url="test://embedded-resource",
            mime="text/plain",
        )
    )


@at.tool
def test_multiple_content_types() -> at.Result:
    """Tests response with multiple content types (text, image, resource)"""
    return at.parts(
        {"type": "text", "text": "Multiple content types test:"},
        at.image(IMAGE_PNG, "image/png"),
        at.file(
            _json({"test": "data", "value": 123}).encode(),
            url="test://mixed-content-resource",
            mime="application/json",
        ),
    )


@at.tool
def test_tool_with_logging() -> str:
    """Tests tool that emits log messages during execution"""
    # agenttool has no way for a tool to send MCP log messages (notifications/message): the
    # scenario's "logging" feature.  Progress is the nearest thing a tool can send.
    for step in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        at.progress(step)
    return "Tool with logging executed successfully"


@at.tool
def test_tool_with_progress() -> str:
    """Tests tool that reports progress notifications"""
    for done in (0, 50, 100):
        at.progress(f"Completed step {done} of 100", progress=done, total=100)
        if done < 100:
            time.sleep(0.05)
    return "progress reported"


@at.tool
def test_error_handling() -> str:
    """Tests error response handling"""
    raise RuntimeError("This tool intentionally returns an error for testing")


@at.tool
def test_reconnection() -> str:
    """Tests SSE stream disconnection and client reconnection (SEP-1699)."""
    # The server would have to close the call's SSE stream mid-call and resume it: a
    # transport feature agenttool_mcp's server does not offer (the baseline names it).
    time.sleep(0.1)
    return (
        "Reconnection test completed successfully. If you received this, the client properly "
        "reconnected after stream closure."
    )


def _ask(message, schema, label):
    answer = at.elicit(at.Elicitation(message, schema))
    content = answer.content or {}
    return f"{label}: action={answer.action.value}, content={_json(content)}"


@at.tool
def test_elicitation(message: str) -> str:
    """Tests server-initiated elicitation (user input request)

    Args:
        message: The message to show the user
    """
    schema = {
        "type": "object",
        "properties": {"response": {"type": "string", "description": "User's response"}},
        "required": ["response"],
    }
    return _ask(message, schema, "User response")


@at.tool
def test_elicitation_sep1034_defaults() -> str:
    """Tests elicitation with default values per SEP-1034"""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {
                "type": "boolean",
                "description": "Verification status",
                "default": True,
            },
        },
        "required": [],
    }
    return _ask(
        "Please review and update the form fields with defaults", schema, "Elicitation completed"
    )


@at.tool
def test_elicitation_sep1330_enums() -> str:
    """Tests elicitation with enum schema improvements per SEP-1330"""
    options = ["option1", "option2", "option3"]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": options,
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": options},
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]
                },
            },
        },
        "required": [],
    }
    return _ask("Please select options from the enum fields", schema, "Elicitation completed")


# SEP-1613 / SEP-2106: served verbatim, as agenttool serves every tool's own schema.
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

json_schema_2020_12_tool = at.new_func(
    "json_schema_2020_12_tool",
    "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    JSON_SCHEMA_2020_12,
    lambda call: at.text(f"JSON Schema 2020-12 tool called with: {_json(call.args)}"),
)


# The 2026-07-28 revision's multi-round-trip scenarios (SEP-2322): each question is an
# agenttool.elicit, which the server turns into an input request.
NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


@at.tool
def test_input_required_result_elicitation() -> str:
    """Asks for the user's name, then greets them (SEP-2322)."""
    answer = at.elicit(at.Elicitation("What is your name?", NAME_SCHEMA))
    name = (answer.content or {}).get("name", "")
    return f"Hello, {name}!" if answer.action is at.Action.ACCEPT else "No name given"


@at.tool
def test_input_required_result_request_state() -> str:
    """Asks for a confirmation and reports it (SEP-2322)."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    answer = at.elicit(at.Elicitation("Please confirm", schema))
    return f"Confirmed: {(answer.content or {}).get('ok')}"


@at.tool
def test_input_required_result_multi_round() -> str:
    """Asks two questions in turn (SEP-2322)."""
    first = at.elicit(at.Elicitation("Step 1: What is your name?", NAME_SCHEMA))
    name = (first.content or {}).get("name", "")
    schema = {
        "type": "object",
        "properties": {"color": {"type": "string"}},
        "required": ["color"],
    }
    second = at.elicit(
        at.Elicitation(f"Step 2: Hello {name}, what is your favorite color?", schema)
    )
    return f"{name} likes {(second.content or {}).get('color', '')}"


@at.tool
def test_input_required_result_tampered_state() -> str:
    """Asks one question; a tampered requestState must be refused (SEP-2322)."""
    answer = at.elicit(at.Elicitation("What is your name?", NAME_SCHEMA))
    return f"Hello, {(answer.content or {}).get('name', '')}!"


@at.tool
def test_input_required_result_capabilities() -> str:
    """Asks only what the client can answer: an elicitation, which the server sends only to a
    client declaring that capability (SEP-2322)."""
    answer = at.elicit(at.Elicitation("What is your name?", NAME_SCHEMA))
    return f"answered: {answer.action.value}"


@at.tool
def test_missing_capability() -> str:
    """Needs the client's elicitation capability (SEP-2575: -32021 when it is missing)."""
    answer = at.elicit(at.Elicitation("What is your name?", NAME_SCHEMA))
    return f"answered: {answer.action.value}"


# The tasks extension's scenarios (io.modelcontextprotocol/tasks, SEP-2663): the fixtures they
# name.  A task-supporting tool runs as a task for a client that declares the extension.
@at.tool
def greet(name: str) -> str:
    """Greets someone (sync-only)."""
    return f"Hello, {name}!"


@at.tool(task=True)
def slow_compute(seconds: float = 1.0, label: str = "") -> str:
    """Sleeps for the given seconds, then answers; a cancel ends it early (task-supporting)."""
    deadline = time.monotonic() + max(0.0, seconds)
    while time.monotonic() < deadline:
        if at.cancelled():
            return f"cancelled: {label}"
        time.sleep(0.02)
    return f"computed {label} after {seconds:g} s"


@at.tool(task="required")
def failing_job() -> str:
    """Fails with a tool error after about a second (runs only as a task)."""
    time.sleep(1.0)
    raise RuntimeError("failing_job failed, as it always does")


@at.tool(task=True)
def protocol_error_job() -> str:
    """Meant to fail at the protocol level; an agenttool tool's exception is a tool error."""
    raise RuntimeError("protocol_error_job failed")


@at.tool(task=True)
def confirm_delete(filename: str) -> str:
    """Asks to confirm deleting a file, then says what it did (task-supporting)."""
    schema = {
        "type": "object",
        "properties": {"confirm": {"type": "boolean"}},
        "required": ["confirm"],
    }
    answer = at.elicit(at.Elicitation(f"Delete {filename}?", schema))
    confirmed = answer.action is at.Action.ACCEPT and (answer.content or {}).get("confirm")
    return f"deleted {filename}" if confirmed else f"kept {filename}"
