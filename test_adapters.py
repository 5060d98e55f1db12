"""agenttool_adapters against the real frameworks, each driven by a model of the
framework's own kind that answers with a tool call, so the call flows through the framework
into agenttool and back: a stub Agents SDK ``Model``, pydantic-ai's ``FunctionModel``, and
LangChain's own tool-call invocation."""

import asyncio
import importlib.util
import json
import threading
import unittest
from typing import Any

import agenttool as at
from test_agenttool import needs

HAS = {
    m: importlib.util.find_spec(m) is not None for m in ("agents", "pydantic_ai", "langchain_core")
}
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


class Shop:
    """Tools with a resource (calls of one never overlap), an image, a strict schema and a
    failure, each counting what it saw."""

    def __init__(self) -> None:
        self.inside = 0
        self.overlapped = False
        self.lock = threading.Lock()

        @at.tool(resource="db")
        async def write(n: int) -> str:
            """Write a row."""
            with self.lock:
                self.inside += 1
                self.overlapped |= self.inside > 1
            await asyncio.sleep(0.05)
            with self.lock:
                self.inside -= 1
            return f"wrote {n}"

        @at.tool
        def chart() -> at.Result:
            """Draw a chart."""
            return at.parts({"type": "text", "text": "the chart:"}, at.image(PNG))

        @at.tool(strict=True)
        def lookup(city: str) -> str:
            """Look a city up."""
            return f"{city}: sunny"

        @at.tool
        def broken() -> str:
            """Always fails."""
            raise at.ToolError("the service is down")

        self.tools = at.ToolSet([write, chart, lookup, broken])


@needs(HAS["agents"], "the OpenAI Agents SDK (pip install -r .ci/requirements.txt)")
class TestOpenAIAgents(unittest.TestCase):
    def run_agent(
        self, tools: list[Any], calls: list[tuple[str, dict[str, Any]]]
    ) -> tuple[Any, list[Any]]:
        from agents import Agent, Runner, set_tracing_disabled
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import (
            ResponseFunctionToolCall,
            ResponseOutputMessage,
            ResponseOutputText,
        )

        inputs: list[Any] = []

        class StubModel(Model):
            async def get_response(
                self, system_instructions: Any, input: Any, *a: Any, **k: Any
            ) -> Any:
                inputs.append(input)
                if len(inputs) == 1:
                    out: list[Any] = [
                        ResponseFunctionToolCall(
                            type="function_call",
                            id=f"fc{i}",
                            call_id=f"call_{i}",
                            name=name,
                            arguments=json.dumps(args),
                            status="completed",
                        )
                        for i, (name, args) in enumerate(calls)
                    ]
                else:
                    text = ResponseOutputText(type="output_text", text="done", annotations=[])
                    out = [
                        ResponseOutputMessage(
                            type="message",
                            id="m1",
                            role="assistant",
                            status="completed",
                            content=[text],
                        )
                    ]
                return ModelResponse(output=out, usage=Usage(), response_id=None)

            def stream_response(self, *a: Any, **k: Any) -> Any:
                raise NotImplementedError

        set_tracing_disabled(True)  # nothing is exported from a test
        agent = Agent(name="shop", instructions="", tools=tools, model=StubModel())
        result = asyncio.run(Runner.run(agent, "go"))
        return result, inputs

    def outputs(self, inputs: list[Any]) -> dict[str, Any]:
        return {
            i["call_id"]: i["output"]
            for i in inputs[1]
            if isinstance(i, dict) and i.get("type") == "function_call_output"
        }

    def test_calls_flow_through_the_sdk_into_agenttool_and_back(self) -> None:
        import agenttool_adapters as ad

        shop = Shop()
        tools = ad.to_openai_agents(shop.tools)
        schemas = {t.name: t.params_json_schema for t in tools}
        self.assertEqual(schemas["lookup"], shop.tools.lookup("lookup").parameters)  # not rewritten
        self.assertTrue([t for t in tools if t.name == "lookup"][0].strict_json_schema)
        self.assertFalse([t for t in tools if t.name == "write"][0].strict_json_schema)
        result, inputs = self.run_agent(
            tools,
            [
                ("write", {"n": 1}),
                ("write", {"n": 2}),
                ("lookup", {"city": "Porto"}),
                ("broken", {}),
                ("chart", {}),
            ],
        )
        self.assertEqual(result.final_output, "done")
        out = self.outputs(inputs)
        self.assertEqual(out["call_0"], "wrote 1")
        self.assertEqual(out["call_2"], "Porto: sunny")
        self.assertEqual(out["call_3"], "Error: the service is down")  # once, as we say it
        chart = out["call_4"]
        self.assertEqual([p["type"] for p in chart], ["input_text", "input_image"])
        self.assertTrue(chart[1]["image_url"].startswith("data:image/png;base64,"))
        self.assertFalse(shop.overlapped)  # one resource, two concurrent SDK calls, in turn

    def test_an_agents_sdk_tool_as_an_agenttool_tool(self) -> None:
        from agents import function_tool

        import agenttool_adapters as ad

        @function_tool
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        t = ad.from_openai_agents(add)
        self.assertEqual(t.name, "add")
        self.assertEqual(set(t.parameters["properties"]), {"a", "b"})  # type: ignore[index]
        out = at.ToolSet([t]).run(
            [
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "add",
                    "arguments": '{"a": 2, "b": 3}',
                }
            ]
        )
        self.assertEqual(out[0]["output"], "5")


@needs(HAS["pydantic_ai"], "pydantic-ai (pip install -r .ci/requirements.txt)")
class TestPydanticAI(unittest.TestCase):
    def test_calls_flow_through_pydantic_ai_into_agenttool_and_back(self) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
        from pydantic_ai.models.function import FunctionModel

        import agenttool_adapters as ad

        shop = Shop()
        returned: dict[str, Any] = {}

        def model(messages: list[Any], info: Any) -> Any:
            if len(messages) == 1:
                names = {t.name for t in info.function_tools}
                self.assertEqual(names, {"write", "chart", "lookup", "broken"})
                strict = {t.name: t.strict for t in info.function_tools}
                self.assertTrue(strict["lookup"])
                return ModelResponse(
                    parts=[
                        ToolCallPart("write", {"n": 1}, tool_call_id="c1"),
                        ToolCallPart("write", {"n": 2}, tool_call_id="c2"),
                        ToolCallPart("lookup", {"city": "Porto"}, tool_call_id="c3"),
                        ToolCallPart("broken", {}, tool_call_id="c4"),
                        ToolCallPart("chart", {}, tool_call_id="c5"),
                    ]
                )
            for part in messages[-1].parts:
                returned[part.tool_call_id] = part
            return ModelResponse(parts=[TextPart("done")])

        agent = Agent(FunctionModel(model), toolsets=[ad.to_pydantic_ai(shop.tools)])
        self.assertEqual(agent.run_sync("go").output, "done")
        self.assertIsInstance(returned["c1"], ToolReturnPart)
        self.assertEqual(returned["c3"].content, "Porto: sunny")
        self.assertEqual(returned["c4"].content, "Error: the service is down")  # once
        self.assertEqual(returned["c4"].outcome, "failed")
        self.assertFalse(shop.overlapped)
        images = [c for c in returned["c5"].content if not isinstance(c, str)]
        self.assertEqual(images[0].media_type, "image/png")
        self.assertEqual(images[0].data, PNG)

    def test_a_pydantic_ai_tool_as_an_agenttool_tool(self) -> None:
        import datetime

        from pydantic import BaseModel, field_validator
        from pydantic_ai import Tool

        import agenttool_adapters as ad

        class Booking(BaseModel):
            when: datetime.date
            guests: int

            @field_validator("guests")
            @classmethod
            def few(cls, v: int) -> int:
                if v > 8:
                    raise ValueError("at most 8 guests")
                return v

        seen: list[Any] = []

        def book(booking: Booking, note: str = "") -> str:
            """Book a table.

            Args:
                booking: What to book.
                note: A note for the staff.
            """
            seen.append(booking.when)
            return f"{booking.when.isoformat()} for {booking.guests}"

        async def ping() -> str:
            """Answer."""
            return "pong"

        source = Tool(book, sequential=True, timeout=5)
        t = ad.from_pydantic_ai(source)
        self.assertEqual((t.name, t.description), ("book", "Book a table."))
        self.assertEqual(t.parameters, source.tool_def.parameters_json_schema)
        self.assertTrue(at.is_sequential(t))
        self.assertEqual(at.timeout_of(t), 5)
        ts = at.ToolSet([t, ad.from_pydantic_ai(Tool(ping))])

        def out(name: str, args: str) -> str:
            item = {"type": "function_call", "call_id": "c1", "name": name, "arguments": args}
            return str(ts.run([item])[0]["output"])

        self.assertEqual(
            out("book", '{"booking": {"when": "2026-12-24", "guests": 4}}'), "2026-12-24 for 4"
        )
        self.assertEqual(seen, [datetime.date(2026, 12, 24)])  # decoded by pydantic
        self.assertEqual(
            out("book", '{"booking": {"when": "2026-12-24", "guests": 9}}'),
            "Error: invalid arguments: booking.guests: Value error, at most 8 guests",
        )
        self.assertEqual(
            out("book", '{"booking": {"guests": 1}}'),
            'Error: invalid arguments: booking: missing required property "when"',
        )  # this library's validator first
        self.assertEqual(out("ping", "{}"), "pong")
        self.assertTrue(
            at.needs_approval_of(ad.from_pydantic_ai(Tool(ping, requires_approval=True)), {})
        )

        from pydantic_ai import RunContext

        def needs_ctx(ctx: RunContext[None]) -> str:
            """Needs the run."""
            return ""

        with self.assertRaisesRegex(TypeError, "takes a RunContext"):
            ad.from_pydantic_ai(Tool(needs_ctx))


@needs(HAS["langchain_core"], "langchain-core (pip install -r .ci/requirements.txt)")
class TestLangChain(unittest.TestCase):
    def test_a_tool_call_through_langchain(self) -> None:
        import agenttool_adapters as ad

        shop = Shop()
        tools = {t.name: t for t in ad.to_langchain(shop.tools)}
        self.assertEqual(tools["lookup"].args_schema, shop.tools.lookup("lookup").parameters)

        async def main() -> list[Any]:
            calls = [
                ("lookup", {"city": "Porto"}, "c1"),
                ("broken", {}, "c2"),
                ("write", {"n": 1}, "c3"),
                ("write", {"n": 2}, "c4"),
                ("chart", {}, "c5"),
            ]
            return await asyncio.gather(
                *(
                    tools[name].ainvoke(
                        {"type": "tool_call", "name": name, "args": args, "id": cid}
                    )
                    for name, args, cid in calls
                )
            )

        messages = asyncio.run(main())
        self.assertEqual([m.tool_call_id for m in messages], ["c1", "c2", "c3", "c4", "c5"])
        self.assertEqual(messages[0].content, "Porto: sunny")
        self.assertEqual(messages[1].content, "Error: the service is down")
        self.assertFalse(shop.overlapped)
        self.assertEqual([b["type"] for b in messages[4].content], ["text", "image"])

    def test_progress_reaches_the_run_s_callbacks_as_custom_events(self) -> None:
        import agenttool_adapters as ad

        @at.tool
        async def crawl(pages: int) -> str:
            """Crawl pages."""
            for i in range(pages):
                at.progress(f"page {i + 1} of {pages}")
                await asyncio.sleep(0)
            return "crawled"

        [t] = ad.to_langchain([crawl])

        async def main() -> list[Any]:
            seen = []
            async for event in t.astream_events({"pages": 3}, version="v2"):
                if event["event"] == "on_custom_event":
                    self.assertEqual(event["name"], ad.PROGRESS_EVENT)
                    seen.append(event["data"]["output"])
                elif event["event"] == "on_tool_end":
                    seen.append(event["data"]["output"])
            return seen

        self.assertEqual(
            asyncio.run(main()), ["page 1 of 3", "page 2 of 3", "page 3 of 3", "crawled"]
        )
        self.assertEqual(asyncio.run(t.ainvoke({"pages": 1})), "crawled")  # no run: no events

    def test_a_langchain_tool_as_an_agenttool_tool(self) -> None:
        from langchain_core.tools import tool

        import agenttool_adapters as ad

        @tool
        def multiply(a: int, b: int) -> int:
            """Multiply two numbers."""
            return a * b

        t = ad.from_langchain(multiply)
        self.assertEqual(set(t.parameters["properties"]), {"a", "b"})  # type: ignore[index]
        out = at.ToolSet([t]).run(
            [
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "multiply",
                    "arguments": '{"a": 4, "b": 5}',
                }
            ]
        )
        self.assertEqual(out[0]["output"], "20")


@needs(all(HAS.values()), "the three frameworks (pip install -r .ci/requirements.txt)")
class TestReadmeExample(unittest.TestCase):
    def test_the_readme_block_runs(self) -> None:
        import contextlib
        import io
        import os
        import re

        from test_agenttool import ROOT

        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
        (block,) = [b for b in blocks if re.search(r"^import agenttool_adapters", b, re.M)]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, "README adapters", "exec"), {"__name__": "readme"})
        self.assertEqual(out.getvalue(), "['save'] ['save']\n")


if __name__ == "__main__":
    unittest.main()
