"""The README's agent loops, run with the real OpenAI and Anthropic SDKs against a
local endpoint that answers as each provider does: first a tool call, then, once the tool's
result comes back, a text naming what the tool returned."""

from __future__ import annotations

import contextlib
import http.server
import importlib.util
import io
import json
import os
import re
import threading
import unittest
from typing import Any
from unittest import mock

from test_agenttool import ROOT, needs


def readme_block(module: str) -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    (block,) = [b for b in blocks if re.search(rf"^from {module} import", b, re.M)]
    return block


def temperature(request: dict[str, Any]) -> float | None:
    """The temperature the tool's result carried back to the model, if it came back."""
    found = re.search(r'temperature\\?":\s*([0-9.]+)', json.dumps(request))
    return float(found.group(1)) if found else None


def responses_reply(request: dict[str, Any]) -> dict[str, Any]:
    base = {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": request["model"],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": request.get("tools", []),
    }
    assert request["tools"][0]["name"] == "get_weather", request["tools"]
    degrees = temperature(request)
    if degrees is None:
        call = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Lisbon"}',
            "status": "completed",
        }
        return {**base, "output": [call]}
    text = {
        "type": "output_text",
        "text": f"It is {degrees:g} degrees in Lisbon.",
        "annotations": [],
    }
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [text],
    }
    return {**base, "output": [message]}


def messages_reply(request: dict[str, Any]) -> dict[str, Any]:
    base = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": request["model"],
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    assert request["tools"][0]["name"] == "get_weather", request["tools"]
    degrees = temperature(request)
    if degrees is None:
        use = {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "get_weather",
            "input": {"city": "Lisbon"},
        }
        return {**base, "content": [use], "stop_reason": "tool_use"}
    text = {"type": "text", "text": f"It is {degrees:g} degrees in Lisbon."}
    return {**base, "content": [text], "stop_reason": "end_turn"}


class FakeProvider(http.server.BaseHTTPRequestHandler):
    """POST /v1/responses answers as OpenAI, POST /v1/messages as Anthropic."""

    seen: list[tuple[str, dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        path = self.path.split("?")[0]
        FakeProvider.seen.append((path, body))
        if path == "/v1/responses":
            reply = responses_reply(body)
        elif path == "/v1/messages":
            reply = messages_reply(body)
        else:
            self.send_error(404)
            return
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


class TestAgentLoops(unittest.TestCase):
    server: http.server.ThreadingHTTPServer

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeProvider)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.shutdown()
        cls.server.server_close()

    def run_block(self, module: str, env: dict[str, str]) -> str:
        FakeProvider.seen.clear()
        out = io.StringIO()
        with mock.patch.dict(os.environ, env), contextlib.redirect_stdout(out):
            exec(
                compile(readme_block(module), f"README {module} loop", "exec"),
                {"__name__": "readme"},
            )
        return out.getvalue()

    @needs(importlib.util.find_spec("openai") is not None, "the openai SDK")
    def test_the_openai_loop(self) -> None:
        port = self.server.server_address[1]
        env = {"OPENAI_API_KEY": "test", "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
        self.assertEqual(self.run_block("openai", env), "It is 21.5 degrees in Lisbon.\n")
        self.assertEqual([p for p, _ in FakeProvider.seen], ["/v1/responses"] * 2)
        sent = FakeProvider.seen[1][1]["input"]
        self.assertEqual(sent[-1]["type"], "function_call_output")
        self.assertEqual(sent[-1]["call_id"], "call_1")
        self.assertEqual(json.loads(sent[-1]["output"]), {"city": "Lisbon", "temperature": 21.5})

    @needs(importlib.util.find_spec("anthropic") is not None, "the anthropic SDK")
    def test_the_anthropic_loop(self) -> None:
        port = self.server.server_address[1]
        env = {"ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}
        self.assertEqual(self.run_block("anthropic", env), "It is 21.5 degrees in Lisbon.\n")
        self.assertEqual([p for p, _ in FakeProvider.seen], ["/v1/messages"] * 2)
        last = FakeProvider.seen[1][1]["messages"][-1]
        self.assertEqual(last["role"], "user")
        self.assertEqual(last["content"][0]["type"], "tool_result")
        self.assertEqual(last["content"][0]["tool_use_id"], "toolu_1")


if __name__ == "__main__":
    unittest.main()
