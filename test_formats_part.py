"""Tests of the provider formats: definitions out, call items in, output items back.

The SDK tests build the providers' own response objects offline and check our items against
the SDKs' request types; they skip, saying why, where ``openai``, ``anthropic`` or
``google-genai`` is not installed.
"""

from __future__ import annotations

import base64
import json
import unittest
from typing import Any, Callable

import agenttool as at

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 8).decode("ascii")  # 16 bytes
PNG_URL = "data:image/png;base64," + PNG
PDF = base64.b64encode(b"%PDF-1.4 tiny").decode("ascii")  # 13 bytes

WEATHER: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "units": {"type": "string", "enum": ["c", "f"]},
        },
        "required": ["city"],
    },
}
STRICT: dict[str, Any] = {
    "type": "function",
    "name": "search",
    "description": "Search the notes.",
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": ["integer", "null"]},
            "tags": {
                "type": "array",
                "items": {"$ref": "#/$defs/tag"},
            },
        },
        "required": ["query", "limit", "tags"],
        "additionalProperties": False,
        "$defs": {"tag": {"type": "string", "pattern": "^[a-z]+$"}},
    },
    "strict": True,
}
NO_ARGS: dict[str, Any] = {"type": "function", "name": "now", "description": "", "parameters": None}
FORMATS = ("responses", "chat", "anthropic", "gemini")


def text_part(s: str) -> dict[str, Any]:
    return {"type": "text", "text": s}


def image_part(url: str = PNG_URL) -> dict[str, Any]:
    return {"type": "input_image", "image_url": url, "detail": "auto"}


def pdf_part() -> dict[str, Any]:
    return {"type": "input_file", "filename": "report.pdf", "file_data": PDF}


def run_calls(
    items: Any, tools: dict[str, Callable[[Any], Any]], format: str | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """What ToolSet.run does, with plain functions: read, run in order, answer."""
    fmt, calls = at._read_calls(items, format)
    outcomes: list[Any] = []
    for c in calls:
        try:
            args = json.loads(c.arguments or "{}") if isinstance(c.arguments, str) else c.arguments
            outcomes.append(tools[c.name](args))
        except Exception as exc:
            outcomes.append(exc)
    return fmt, at._output_items(fmt, calls, outcomes)


def add(args: dict[str, Any]) -> Any:
    return at.Result(str(args["a"] + args["b"]))


TOOLS: dict[str, Callable[[Any], Any]] = {"add": add}


# ---------------------------------------------------------------------------------------------
# Definitions
# ---------------------------------------------------------------------------------------------


class DefinitionTest(unittest.TestCase):
    def test_responses_is_the_canonical_form_copied(self) -> None:
        for defn in (WEATHER, STRICT, NO_ARGS):
            out = at._provider_definition(defn, "responses")
            self.assertEqual(out, defn)
        out = at._provider_definition(STRICT, "responses")
        out["parameters"]["properties"]["query"]["type"] = "integer"
        self.assertEqual(STRICT["parameters"]["properties"]["query"]["type"], "string")

    def test_chat_nests_under_function(self) -> None:
        self.assertEqual(
            at._provider_definition(WEATHER, "chat"),
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": WEATHER["parameters"],
                },
            },
        )
        strict = at._provider_definition(STRICT, "chat")
        self.assertIs(strict["function"]["strict"], True)
        self.assertEqual(strict["function"]["parameters"], STRICT["parameters"])
        self.assertNotIn("strict", at._provider_definition({**WEATHER, "strict": False}, "chat"))

    def test_anthropic_uses_input_schema_and_carries_strict(self) -> None:
        self.assertEqual(
            at._provider_definition(WEATHER, "anthropic"),
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "input_schema": WEATHER["parameters"],
            },
        )
        strict = at._provider_definition(STRICT, "anthropic")
        self.assertIs(strict["strict"], True)
        self.assertEqual(strict["input_schema"], STRICT["parameters"])

    def test_anthropic_root_must_be_an_object(self) -> None:
        untyped = {**WEATHER, "parameters": {"properties": {"x": {}}}}
        out = at._provider_definition(untyped, "anthropic")
        self.assertEqual(out["input_schema"], {"type": "object", "properties": {"x": {}}})
        with self.assertRaisesRegex(ValueError, 'tool "get_weather": anthropic needs an object'):
            at._provider_definition({**WEATHER, "parameters": {"type": "array"}}, "anthropic")

    def test_gemini_is_a_function_declaration_with_json_schema(self) -> None:
        self.assertEqual(
            at._provider_definition(STRICT, "gemini"),
            {
                "name": "search",
                "description": "Search the notes.",
                "parametersJsonSchema": STRICT["parameters"],
            },
        )

    def test_no_parameters_is_the_empty_object_schema(self) -> None:
        empty = {"type": "object", "properties": {}, "required": []}
        self.assertEqual(
            at._provider_definition(NO_ARGS, "chat"),
            {"type": "function", "function": {"name": "now", "parameters": empty}},
        )
        self.assertEqual(
            at._provider_definition(NO_ARGS, "anthropic"), {"name": "now", "input_schema": empty}
        )
        self.assertEqual(
            at._provider_definition(NO_ARGS, "gemini"),
            {"name": "now", "parametersJsonSchema": empty},
        )

    def test_outputs_do_not_share_the_schema(self) -> None:
        for fmt in FORMATS:
            dumped = json.dumps(at._provider_definition(STRICT, fmt))
            self.assertIn('"pattern": "^[a-z]+$"', dumped)
        out = at._provider_definition(STRICT, "gemini")
        out["parametersJsonSchema"]["required"].append("x")
        self.assertEqual(STRICT["parameters"]["required"], ["query", "limit", "tags"])

    def test_names_checked_against_each_provider(self) -> None:
        for fmt in FORMATS:
            at._provider_definition({**WEATHER, "name": "a" * 64}, fmt)
            for bad in ("get weather", "a" * 65, "héllo", "a/b"):
                with self.assertRaises(ValueError) as cm:
                    at._provider_definition({**WEATHER, "name": bad}, fmt)
                msg = str(cm.exception)
                self.assertIn(f'tool "{bad}"', msg)
                self.assertIn(f"{fmt}'s rule", msg)
        # Gemini: a letter or underscore first; dots and colons allowed.
        with self.assertRaisesRegex(ValueError, r'tool "1st".*a letter or "_" first'):
            at._provider_definition({**WEATHER, "name": "1st"}, "gemini")
        at._provider_definition({**WEATHER, "name": "1st"}, "anthropic")
        self.assertEqual(
            at._provider_definition({**WEATHER, "name": "ns.tool:v2"}, "gemini")["name"],
            "ns.tool:v2",
        )
        with self.assertRaisesRegex(ValueError, r"letters, digits, \"_\" and \"-\", 1 to 64"):
            at._provider_definition({**WEATHER, "name": "ns.tool"}, "chat")

    def test_bad_definitions(self) -> None:
        with self.assertRaisesRegex(
            ValueError,
            'unknown format "openai": expected one of "responses", "chat", "anthropic", "gemini"',
        ):
            at._provider_definition(WEATHER, "openai")
        with self.assertRaisesRegex(ValueError, "missing the tool's name"):
            at._provider_definition({"type": "function"}, "chat")
        with self.assertRaisesRegex(ValueError, 'expected a definition of type "function"'):
            at._provider_definition({**WEATHER, "type": "web_search"}, "chat")
        with self.assertRaisesRegex(ValueError, "parameters must be a JSON Schema object"):
            at._provider_definition({**WEATHER, "parameters": True}, "gemini")


# ---------------------------------------------------------------------------------------------
# Calls in (dicts)
# ---------------------------------------------------------------------------------------------


class ReadCallsTest(unittest.TestCase):
    def check(self, items: Any, fmt: str, expected: list[tuple[str, str, Any]]) -> None:
        got_fmt, calls = at._read_calls(items, None)
        self.assertEqual(got_fmt, fmt)
        self.assertEqual([(c.call_id, c.name, c.arguments) for c in calls], expected)
        # The same with the format given.
        self.assertEqual(at._read_calls(items, fmt)[1], calls)

    def test_responses_items(self) -> None:
        output = [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_a",
                "name": "add",
                "arguments": '{"a": 1, "b": 2}',
                "status": "completed",
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "and"}],
            },
            {"type": "function_call", "call_id": "call_b", "name": "add", "arguments": "{oops"},
        ]
        expected = [("call_a", "add", '{"a": 1, "b": 2}'), ("call_b", "add", "{oops")]
        self.check(output, "responses", expected)
        self.check({"object": "response", "id": "resp_1", "output": output}, "responses", expected)
        self.check(output[1], "responses", expected[:1])
        fmt, calls = at._read_calls(iter(output), None)
        self.assertEqual([(c.call_id, c.name, c.arguments) for c in calls], expected)

    def test_chat_shapes(self) -> None:
        tool_calls = [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a":1,"b":2}'},
            },
            {"id": "call_2", "type": "custom", "custom": {"name": "grammar", "input": "x"}},
            {"id": "call_3", "type": "function", "function": {"name": "add", "arguments": ""}},
        ]
        message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
        completion = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
        }
        expected = [("call_1", "add", '{"a":1,"b":2}'), ("call_3", "add", "")]
        for items in (tool_calls, message, [message], completion, completion["choices"][0]):
            self.check(items, "chat", expected)
        self.check({"role": "assistant", "content": "done", "tool_calls": None}, "chat", [])

    def test_anthropic_shapes(self) -> None:
        content = [
            {"type": "thinking", "thinking": "...", "signature": "s"},
            {"type": "text", "text": "Let me add."},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
            {"type": "tool_use", "id": "toolu_2", "name": "add", "input": {}},
        ]
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": "tool_use",
        }
        expected = [("toolu_1", "add", {"a": 1, "b": 2}), ("toolu_2", "add", {})]
        for items in (message, content, content[2:]):
            self.check(items, "anthropic", expected)
        self.check({**message, "content": content[:2], "stop_reason": "end_turn"}, "anthropic", [])

    def test_gemini_shapes(self) -> None:
        parts = [
            {"text": "Adding."},
            {"functionCall": {"id": "fc-9", "name": "add", "args": {"a": 1, "b": 2}}},
            {"functionCall": {"name": "add", "args": {"a": 3, "b": 4}}, "thoughtSignature": "x"},
            {"function_call": {"name": "now"}},  # snake_case, as model_dump() writes it
        ]
        content = {"role": "model", "parts": parts}
        response = {"candidates": [{"content": content, "finishReason": "STOP"}]}
        expected = [
            ("fc-9", "add", {"a": 1, "b": 2}),
            ("call_1", "add", {"a": 3, "b": 4}),
            ("call_2", "now", {}),
        ]
        for items in (response, content, parts, [content]):
            self.check(items, "gemini", expected)
        bare = [{"name": "add", "args": {"a": 1, "b": 2}}]
        self.check(bare, "gemini", [("call_0", "add", {"a": 1, "b": 2})])

    def test_gemini_minted_ids_are_stable_unique_and_never_sent_back(self) -> None:
        parts = [
            {"functionCall": {"name": "add", "args": {"a": 1, "b": 1}}},
            {"functionCall": {"id": "call_0", "name": "add", "args": {"a": 2, "b": 2}}},
        ]
        fmt, calls = at._read_calls(parts, None)
        self.assertEqual([c.call_id for c in calls], ["call_0_1", "call_0"])
        self.assertEqual([c.minted for c in calls], [True, False])
        self.assertEqual(at._read_calls(parts, None)[1], calls)
        items = at._output_items(fmt, calls, [at.Result("2"), at.Result("4")])
        self.assertEqual(
            items,
            [
                {"functionResponse": {"name": "add", "response": {"output": "2"}}},
                {"functionResponse": {"id": "call_0", "name": "add", "response": {"output": "4"}}},
            ],
        )

    def test_no_calls(self) -> None:
        self.assertEqual(at._read_calls([], None), ("responses", []))
        self.assertEqual(at._read_calls([], "gemini"), ("gemini", []))
        self.assertEqual(at._read_calls({"candidates": []}, None), ("gemini", []))
        self.assertEqual(
            at._read_calls([{"type": "message", "role": "assistant", "content": []}], None),
            ("responses", []),
        )

    def test_mixed_formats_are_refused(self) -> None:
        items = [
            {"type": "function_call", "call_id": "c1", "name": "add", "arguments": "{}"},
            {"type": "tool_use", "id": "t1", "name": "add", "input": {}},
        ]
        with self.assertRaisesRegex(
            ValueError, r"items mix provider formats \(responses at item 0; anthropic at item 1\)"
        ):
            at._read_calls(items, None)

    def test_a_format_that_disagrees_is_refused(self) -> None:
        items = [{"type": "tool_use", "id": "t1", "name": "add", "input": {}}]
        with self.assertRaisesRegex(
            ValueError, 'format "chat" was given but item 0 is in the anthropic format'
        ):
            at._read_calls(items, "chat")
        with self.assertRaisesRegex(ValueError, 'unknown format "claude"'):
            at._read_calls(items, "claude")

    def test_shapes_nobody_uses_are_refused(self) -> None:
        with self.assertRaisesRegex(ValueError, r"item 1: expected a provider's item .*got str"):
            at._read_calls([{"type": "message"}, "add(1, 2)"], None)
        with self.assertRaisesRegex(
            ValueError, "item 0: not a function call of any provider.*got arguments, name"
        ):
            at._read_calls([{"name": "add", "arguments": "{}"}], None)
        with self.assertRaisesRegex(ValueError, "items: expected a provider's item"):
            at._read_calls(None, None)  # type: ignore[arg-type]

    def test_calls_without_ids_or_names_are_refused(self) -> None:
        cases: list[tuple[Any, str]] = [
            (
                [{"type": "function_call", "name": "add", "arguments": "{}"}],
                "item 0: function_call without call_id",
            ),
            ([{"type": "tool_use", "id": "t", "input": {}}], "item 0: tool_use block without name"),
            (
                {
                    "role": "assistant",
                    "tool_calls": [{"type": "function", "function": {"name": "x"}}],
                },
                r"items.tool_calls\[0\]: tool call without id",
            ),
            ([{"functionCall": {"args": {}}}], "item 0: functionCall without name"),
        ]
        for items, msg in cases:
            with self.assertRaisesRegex(ValueError, msg):
                at._read_calls(items, None)


# ---------------------------------------------------------------------------------------------
# Output items back
# ---------------------------------------------------------------------------------------------


def calls_for(fmt: str, n: int = 1) -> list[Any]:
    return [at._ProviderCall(f"id{i}", "add", "{}") for i in range(n)]


class OutputItemsTest(unittest.TestCase):
    def test_text(self) -> None:
        out = at.Result("3")
        self.assertEqual(
            [at._output_items(fmt, calls_for(fmt), [out])[0] for fmt in FORMATS],
            [
                {"type": "function_call_output", "call_id": "id0", "output": "3"},
                {"role": "tool", "tool_call_id": "id0", "content": "3"},
                {
                    "type": "tool_result",
                    "tool_use_id": "id0",
                    "content": [{"type": "text", "text": "3"}],
                },
                {"functionResponse": {"id": "id0", "name": "add", "response": {"output": "3"}}},
            ],
        )

    def test_empty_output(self) -> None:
        out = at.Result("")
        self.assertEqual(
            [at._output_items(fmt, calls_for(fmt), [out])[0] for fmt in FORMATS],
            [
                {"type": "function_call_output", "call_id": "id0", "output": ""},
                {"role": "tool", "tool_call_id": "id0", "content": ""},
                {"type": "tool_result", "tool_use_id": "id0"},
                {"functionResponse": {"id": "id0", "name": "add", "response": {"output": ""}}},
            ],
        )

    def test_errors_read_error_once(self) -> None:
        for exc, msg in (
            (ValueError("city not found"), "city not found"),
            (KeyError("x"), "KeyError: 'x'"),
        ):
            items = [at._output_items(fmt, calls_for(fmt), [exc])[0] for fmt in FORMATS]
            self.assertEqual(at.error_message(exc), msg)
            self.assertEqual(
                items,
                [
                    {"type": "function_call_output", "call_id": "id0", "output": "Error: " + msg},
                    {"role": "tool", "tool_call_id": "id0", "content": "Error: " + msg},
                    {
                        "type": "tool_result",
                        "tool_use_id": "id0",
                        "content": [{"type": "text", "text": msg}],
                        "is_error": True,
                    },
                    {"functionResponse": {"id": "id0", "name": "add", "response": {"error": msg}}},
                ],
            )

    def test_parts_responses(self) -> None:
        out = at.Result(
            [text_part("see"), image_part(), pdf_part(), {"type": "input_text", "text": "x"}]
        )
        (item,) = at._output_items("responses", calls_for("responses"), [out])
        self.assertEqual(
            item["output"],
            [
                {"type": "input_text", "text": "see"},
                image_part(),
                pdf_part(),
                {"type": "input_text", "text": "x"},
            ],
        )

    def test_parts_chat_say_what_was_dropped(self) -> None:
        out = at.Result(
            [
                text_part("see"),
                image_part(),
                pdf_part(),
                image_part("https://example.com/cat.jpg"),
                {"type": "input_file", "filename": "notes.txt", "file_url": "https://e.com/n.txt"},
            ]
        )
        (item,) = at._output_items("chat", calls_for("chat"), [out])
        self.assertEqual(
            item["content"],
            "see\n[image omitted: image/png, 16 bytes]\n"
            "[file omitted: report.pdf, application/pdf, 13 bytes]\n"
            "[image omitted: https://example.com/cat.jpg]\n"
            "[file omitted: notes.txt, text/plain, https://e.com/n.txt]",
        )

    def test_parts_anthropic(self) -> None:
        notes = base64.b64encode("héllo".encode()).decode()
        out = at.Result(
            [
                text_part("see"),
                text_part(""),
                image_part(),
                image_part("https://example.com/cat.jpg"),
                image_part("data:image/bmp;base64,AAAA"),
                pdf_part(),
                {"type": "input_file", "file_url": "https://example.com/a.pdf"},
                {
                    "type": "input_file",
                    "filename": "n.txt",
                    "file_data": "data:text/plain;base64," + notes,
                },
                {"type": "input_file", "filename": "a.zip", "file_data": "AAAA"},
            ]
        )
        (item,) = at._output_items("anthropic", calls_for("anthropic"), [out])
        self.assertEqual(
            item["content"],
            [
                {"type": "text", "text": "see"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                },
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
                {"type": "text", "text": "[image omitted: image/bmp, 3 bytes]"},
                {
                    "type": "document",
                    "title": "report.pdf",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                },
                {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
                {
                    "type": "document",
                    "title": "n.txt",
                    "source": {"type": "text", "media_type": "text/plain", "data": "héllo"},
                },
                {"type": "text", "text": "[file omitted: a.zip, application/zip, 3 bytes]"},
            ],
        )
        self.assertNotIn("is_error", item)

    def test_parts_gemini(self) -> None:
        out = at.Result(
            [text_part("see"), image_part(), pdf_part(), image_part("https://example.com/cat.jpg")]
        )
        (item,) = at._output_items("gemini", calls_for("gemini"), [out])
        self.assertEqual(
            item,
            {
                "functionResponse": {
                    "id": "id0",
                    "name": "add",
                    "response": {"output": "see\n[image omitted: https://example.com/cat.jpg]"},
                    "parts": [
                        {"inlineData": {"mimeType": "image/png", "data": PNG}},
                        {
                            "inlineData": {
                                "mimeType": "application/pdf",
                                "data": PDF,
                                "displayName": "report.pdf",
                            }
                        },
                    ],
                }
            },
        )

    def test_bad_outcomes(self) -> None:
        with self.assertRaisesRegex(ValueError, "2 calls but 1 outcomes"):
            at._output_items("chat", calls_for("chat", 2), [at.Result("x")])
        with self.assertRaisesRegex(TypeError, 'outcome for call "id0": expected a Result'):
            at._output_items("chat", calls_for("chat"), ["x"])  # type: ignore[list-item]
        with self.assertRaisesRegex(ValueError, "unknown format"):
            at._output_items("mcp", [], [])

    def test_crash_outside_exception(self) -> None:
        exc = KeyboardInterrupt()
        (item,) = at._output_items("responses", calls_for("responses"), [exc])
        self.assertEqual(item["output"], at.error_result(exc).output)
        self.assertTrue(item["output"].startswith("Error: "))
        self.assertFalse(item["output"].startswith("Error: Error"))


# ---------------------------------------------------------------------------------------------
# Round trips with dicts, as a provider sends them
# ---------------------------------------------------------------------------------------------


class RoundTripTest(unittest.TestCase):
    def test_responses(self) -> None:
        items = [
            {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a":1,"b":2}'},
            {"type": "function_call", "call_id": "c2", "name": "add", "arguments": '{"a":1}'},
        ]
        fmt, out = run_calls(items, TOOLS)
        self.assertEqual(fmt, "responses")
        self.assertEqual(
            out,
            [
                {"type": "function_call_output", "call_id": "c1", "output": "3"},
                {"type": "function_call_output", "call_id": "c2", "output": "Error: KeyError: 'b'"},
            ],
        )

    def test_chat(self) -> None:
        message = {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":1,"b":2}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":5,"b":2}'},
                },
            ],
        }
        fmt, out = run_calls(message, TOOLS)
        self.assertEqual(fmt, "chat")
        self.assertEqual(
            out,
            [
                {"role": "tool", "tool_call_id": "c1", "content": "3"},
                {"role": "tool", "tool_call_id": "c2", "content": "7"},
            ],
        )

    def test_anthropic(self) -> None:
        message = {
            "type": "message",
            "role": "assistant",
            "stop_reason": "tool_use",
            "content": [
                {"type": "text", "text": "adding"},
                {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1, "b": 2}},
                {"type": "tool_use", "id": "t2", "name": "nope", "input": {}},
            ],
        }
        fmt, out = run_calls(message, TOOLS)
        self.assertEqual(fmt, "anthropic")
        self.assertEqual(
            out,
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "3"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": [{"type": "text", "text": "KeyError: 'nope'"}],
                    "is_error": True,
                },
            ],
        )

    def test_gemini(self) -> None:
        response = {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}},
                            {"functionCall": {"id": "x9", "name": "add", "args": {"a": 2, "b": 2}}},
                        ],
                    }
                }
            ]
        }
        fmt, out = run_calls(response, TOOLS)
        self.assertEqual(fmt, "gemini")
        self.assertEqual(
            out,
            [
                {"functionResponse": {"name": "add", "response": {"output": "3"}}},
                {"functionResponse": {"id": "x9", "name": "add", "response": {"output": "4"}}},
            ],
        )


# ---------------------------------------------------------------------------------------------
# Through the contract: ToolSet.run with the executor (``core`` is ``at`` once merged)
# ---------------------------------------------------------------------------------------------


def _core_add(call: Any) -> Any:
    args = call.args if isinstance(call.args, dict) else json.loads(call.args or "{}")
    if "b" not in args:
        raise ValueError('missing required property "b"')
    return args["a"] + args["b"]


ADD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


def core_toolset() -> Any:
    import agenttool as core

    return core.ToolSet([core.new_func("add", "Add two integers.", ADD_SCHEMA, _core_add)])


def _merged() -> bool:
    import agenttool as core

    return hasattr(core, "_read_calls") and hasattr(core, "new_func")


@unittest.skipUnless(_merged(), "agenttool does not hold the formats part yet (before merge)")
class ToolSetRunTest(unittest.TestCase):
    def test_every_format_through_run(self) -> None:
        ts = core_toolset()
        cases: list[tuple[Any, list[dict[str, Any]]]] = [
            (
                [
                    {
                        "type": "function_call",
                        "call_id": "c1",
                        "name": "add",
                        "arguments": '{"a": 1, "b": 2}',
                    },
                    {
                        "type": "function_call",
                        "call_id": "c2",
                        "name": "add",
                        "arguments": '{"a": 1}',
                    },
                ],
                [
                    {"type": "function_call_output", "call_id": "c1", "output": "3"},
                    {
                        "type": "function_call_output",
                        "call_id": "c2",
                        "output": 'Error: missing required property "b"',
                    },
                ],
            ),
            (
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "add", "arguments": '{"a":2,"b":2}'},
                        },
                    ],
                },
                [{"role": "tool", "tool_call_id": "c1", "content": "4"}],
            ),
            (
                {
                    "type": "message",
                    "role": "assistant",
                    "stop_reason": "tool_use",
                    "content": [
                        {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1}},
                    ],
                },
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": [{"type": "text", "text": 'missing required property "b"'}],
                    }
                ],
            ),
            (
                {
                    "candidates": [
                        {
                            "content": {
                                "role": "model",
                                "parts": [
                                    {"functionCall": {"name": "add", "args": {"a": 3, "b": 4}}},
                                ],
                            }
                        }
                    ]
                },
                [{"functionResponse": {"name": "add", "response": {"output": "7"}}}],
            ),
        ]
        for calls, expected in cases:
            self.assertEqual(ts.run(calls), expected)

    def test_definitions_through_the_contract(self) -> None:
        ts = core_toolset()
        self.assertEqual(
            ts.definitions("anthropic"),
            [{"name": "add", "description": "Add two integers.", "input_schema": ADD_SCHEMA}],
        )
        self.assertEqual(ts.definitions("gemini")[0]["parametersJsonSchema"], ADD_SCHEMA)
        with self.assertRaisesRegex(ValueError, "unknown format"):
            ts.definitions("bedrock")


# ---------------------------------------------------------------------------------------------
# The real SDK types, built offline
# ---------------------------------------------------------------------------------------------


def _names(module: str, *names: str) -> Any:
    """Names from an SDK module (typed Any: the SDKs need not be installed to check types)."""
    mod = __import__(module, fromlist=["_"])
    return tuple(getattr(mod, n) for n in names)


def _import(name: str) -> Any:
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        return None


pydantic = _import("pydantic")
openai = _import("openai")
anthropic = _import("anthropic")
genai_types = _import("google.genai.types")


def _conform(test: unittest.TestCase, td: Any, value: dict[str, Any]) -> None:
    """``value`` validates as the TypedDict ``td`` and has no key ``td`` does not know."""
    pydantic.TypeAdapter(td).validate_python(value)
    known = set(td.__required_keys__) | set(td.__optional_keys__)
    test.assertLessEqual(set(value), known, f"keys unknown to {td.__name__}")


@unittest.skipIf(openai is None or pydantic is None, "the openai SDK is not installed")
class OpenAISDKTest(unittest.TestCase):
    def test_responses_objects(self) -> None:
        Response, ResponseFunctionToolCall = _names(
            "openai.types.responses", "Response", "ResponseFunctionToolCall"
        )

        call = ResponseFunctionToolCall(
            type="function_call",
            id="fc_1",
            call_id="call_1",
            name="add",
            arguments='{"a": 1, "b": 2}',
            status="completed",
        )
        response = Response.model_validate(
            {
                "id": "resp_1",
                "created_at": 0,
                "model": "gpt-5",
                "object": "response",
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "output": [
                    {"type": "reasoning", "id": "rs_1", "summary": []},
                    call.model_dump(),
                    {
                        "type": "function_call",
                        "call_id": "call_2",
                        "name": "add",
                        "arguments": '{"a": 5, "b": 5}',
                    },
                ],
            }
        )
        for items in ([call], response, response.output):
            fmt, out = run_calls(items, TOOLS)
            self.assertEqual(fmt, "responses")
            self.assertEqual(
                out[0], {"type": "function_call_output", "call_id": "call_1", "output": "3"}
            )
        self.assertEqual(run_calls(response, TOOLS)[1][1]["output"], "10")
        if _merged():
            self.assertEqual([o["output"] for o in core_toolset().run(response)], ["3", "10"])

    def test_responses_output_items_are_valid_input(self) -> None:
        (FunctionCallOutput,) = _names(
            "openai.types.responses.response_input_param", "FunctionCallOutput"
        )

        calls = calls_for("responses", 3)
        outs: list[Any] = [
            at.Result("3"),
            at.Result([text_part("t"), image_part(), pdf_part()]),
            ValueError("no"),
        ]
        for item in at._output_items("responses", calls, outs):
            _conform(self, FunctionCallOutput, item)

    def test_responses_definitions(self) -> None:
        (FunctionToolParam,) = _names("openai.types.responses", "FunctionToolParam")

        _conform(self, FunctionToolParam, at._provider_definition(STRICT, "responses"))
        # FunctionToolParam requires "strict" (nullable); the canonical form omits a false
        # strict, which OpenAI reads as "try strict" (see the report): adding it conforms.
        _conform(
            self,
            FunctionToolParam,
            {**at._provider_definition(WEATHER, "responses"), "strict": False},
        )

    def test_chat_objects(self) -> None:
        (ChatCompletion,) = _names("openai.types.chat", "ChatCompletion")

        completion = ChatCompletion.model_validate(
            {
                "id": "chatcmpl-1",
                "created": 0,
                "model": "gpt-5",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "add", "arguments": '{"a":1,"b":2}'},
                                },
                                {
                                    "id": "call_2",
                                    "type": "custom",
                                    "custom": {"name": "g", "input": "x"},
                                },
                            ],
                        },
                    }
                ],
            }
        )
        message = completion.choices[0].message
        for items in (completion, message, message.tool_calls, completion.choices[0]):
            fmt, out = run_calls(items, TOOLS)
            self.assertEqual(fmt, "chat")
            self.assertEqual(out, [{"role": "tool", "tool_call_id": "call_1", "content": "3"}])
            if _merged():
                self.assertEqual(core_toolset().run(items), out)

    def test_chat_items_are_valid(self) -> None:
        ChatCompletionToolMessageParam, ChatCompletionToolParam = _names(
            "openai.types.chat", "ChatCompletionToolMessageParam", "ChatCompletionToolParam"
        )
        (FunctionDefinition,) = _names("openai.types.shared_params", "FunctionDefinition")

        for defn in (WEATHER, STRICT, NO_ARGS):
            out = at._provider_definition(defn, "chat")
            _conform(self, ChatCompletionToolParam, out)
            _conform(self, FunctionDefinition, out["function"])
        outs: list[Any] = [at.Result("3"), at.Result([text_part("t"), image_part()]), KeyError("k")]
        for item in at._output_items("chat", calls_for("chat", 3), outs):
            _conform(self, ChatCompletionToolMessageParam, item)


@unittest.skipIf(anthropic is None or pydantic is None, "the anthropic SDK is not installed")
class AnthropicSDKTest(unittest.TestCase):
    def test_message_objects(self) -> None:
        Message, ToolUseBlock = _names("anthropic.types", "Message", "ToolUseBlock")

        message = Message.model_validate(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude",
                "content": [
                    {"type": "text", "text": "adding"},
                    {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
                ],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        )
        block = ToolUseBlock(type="tool_use", id="toolu_2", name="add", input={"a": 2, "b": 2})
        expect = {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [{"type": "text", "text": "3"}],
        }
        for items in (message, message.content):
            self.assertEqual(run_calls(items, TOOLS), ("anthropic", [expect]))
            if _merged():
                self.assertEqual(core_toolset().run(items), [expect])
        self.assertEqual(run_calls([block], TOOLS)[1][0]["tool_use_id"], "toolu_2")

    def test_items_are_valid(self) -> None:
        MessageParam, ToolParam, ToolResultBlockParam = _names(
            "anthropic.types", "MessageParam", "ToolParam", "ToolResultBlockParam"
        )

        for defn in (WEATHER, STRICT, NO_ARGS):
            _conform(self, ToolParam, at._provider_definition(defn, "anthropic"))
        rich = at.Result(
            [
                text_part("t"),
                image_part(),
                image_part("https://example.com/x.png"),
                pdf_part(),
                {"type": "input_file", "file_url": "https://example.com/a.pdf"},
                {
                    "type": "input_file",
                    "filename": "n.txt",
                    "file_data": base64.b64encode(b"hi").decode(),
                },
            ]
        )
        outs: list[Any] = [at.Result("3"), rich, at.Result(""), ValueError("no")]
        items = at._output_items("anthropic", calls_for("anthropic", 4), outs)
        for item in items:
            _conform(self, ToolResultBlockParam, item)
        pydantic.TypeAdapter(MessageParam).validate_python({"role": "user", "content": items})


@unittest.skipIf(genai_types is None, "the google-genai SDK is not installed")
class GeminiSDKTest(unittest.TestCase):
    def test_response_objects(self) -> None:
        T = genai_types
        response = T.GenerateContentResponse(
            candidates=[
                T.Candidate(
                    content=T.Content(
                        role="model",
                        parts=[
                            T.Part(text="adding"),
                            T.Part(function_call=T.FunctionCall(name="add", args={"a": 1, "b": 2})),
                            T.Part(
                                function_call=T.FunctionCall(
                                    id="fc7", name="add", args={"a": 3, "b": 4}
                                )
                            ),
                        ],
                    )
                )
            ]
        )
        content = response.candidates[0].content
        expect = [
            {"functionResponse": {"name": "add", "response": {"output": "3"}}},
            {"functionResponse": {"id": "fc7", "name": "add", "response": {"output": "7"}}},
        ]
        for items in (response, content, content.parts, response.function_calls):
            self.assertEqual(run_calls(items, TOOLS), ("gemini", expect))
            if _merged():
                self.assertEqual(core_toolset().run(items), expect)
        for item in expect:
            T.Part.model_validate(item)

    def test_items_are_valid(self) -> None:
        T = genai_types
        decls = [at._provider_definition(d, "gemini") for d in (WEATHER, STRICT, NO_ARGS)]
        for decl in decls:
            T.FunctionDeclaration.model_validate(decl)
        T.Tool.model_validate({"functionDeclarations": decls})
        outs: list[Any] = [
            at.Result("3"),
            at.Result([text_part("t"), image_part(), pdf_part()]),
            ValueError("no"),
        ]
        items = at._output_items("gemini", calls_for("gemini", 3), outs)
        parsed = [T.Part.model_validate(item) for item in items]
        self.assertEqual(parsed[1].function_response.parts[0].inline_data.data[:4], b"\x89PNG")
        self.assertEqual(parsed[2].function_response.response, {"error": "no"})
        T.Content.model_validate({"role": "user", "parts": items})


if __name__ == "__main__":
    unittest.main()
