"""agenttool in one minute: run ``python examples/demo.py`` from the repository root.

It plays the part of an agent loop with the toolbox in ``examples/toolbox.py``, with no model
and nothing installed: a batch of calls runs in parallel with progress, calls sharing a
resource keep the model's order, a bad call gets an error the model can fix, and the same
calls come back as the output items OpenAI's Responses API and Anthropic's Messages API take.
"""

import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the repository root, where agenttool.py lives

SANDBOX = tempfile.mkdtemp(prefix="agenttool-demo-")
os.environ["AGENTTOOL_SANDBOX"] = SANDBOX  # the toolbox's files go to a fresh folder

import toolbox  # noqa: E402  (examples/, beside this file)

import agenttool  # noqa: E402
from agenttool import Call, Executor, Job  # noqa: E402

TOOLS = toolbox.TOOLS


def heading(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 72 - len(title)))


def job(name: str, args: dict[str, Any], call_id: str) -> Job:
    """One call as a model makes it: a tool name, arguments as JSON text, an id."""
    return Job(TOOLS.lookup(name), Call(call_id, json.dumps(args)))


def seen(result: Optional[agenttool.Result], error: Optional[BaseException] = None) -> str:
    """What the model sees: the output (parts as JSON), or the error read once."""
    if error is not None or result is None:
        return str(agenttool.error_result(error or RuntimeError("no result")).output)
    out = result.output
    return out if isinstance(out, str) else json.dumps(out)


def parallel_batch() -> None:
    heading("1. A batch runs in parallel; progress arrives as it happens")
    jobs = [
        job("get_weather", {"city": "Lisbon"}, "call_1"),
        job("get_weather", {"city": "Oslo", "units": "celsius"}, "call_2"),
        job("get_weather", {"city": "Nairobi", "units": "fahrenheit"}, "call_3"),
        job("calculate", {"expression": "2 * (3 + 4) ** 2"}, "call_4"),
    ]
    start = time.perf_counter()
    for event in Executor().execute(jobs):
        when = f"{time.perf_counter() - start:5.2f}s"
        call_id = jobs[event.index].call.id
        if not event.final:
            print(f"  {when} {call_id} progress: {seen(event.result)}")
        else:
            print(f"  {when} {call_id} done: {seen(event.result, event.error)}")
    took = time.perf_counter() - start
    print(f"  three 0.2 s weather lookups took {took:.2f} s in all (0.6 s one after another)")


def resource_chain() -> None:
    heading("2. Calls naming one resource keep the model's order")
    jobs = [
        job("write_file", {"path": "notes.txt", "content": "first line\n"}, "w1"),
        job("read_file", {"path": "notes.txt"}, "r1"),
        job("write_file", {"path": "notes.txt", "content": "second line\n", "append": True}, "w2"),
        job("read_file", {"path": "notes.txt"}, "r2"),
        job("get_weather", {"city": "Lima"}, "lima"),
    ]
    print(f"  the file tools share resource {toolbox.FILES!r}; chains: {Executor().chains(jobs)}")
    results, errors = Executor().results(jobs)
    for j, result, error in zip(jobs, results, errors):
        name = j.tool.name if j.tool is not None else "?"
        print(f"  {j.call.id:5} {name:11} -> {seen(result, error)!r}")


def fixable_error() -> None:
    heading("3. A bad call gets an error the model can fix in one retry")
    tool = TOOLS.lookup("calculate")
    attempts = [
        '{"expr": "1 + 1"}',  # a misspelt argument
        '{"expression": 12}',  # the wrong type
        '{"expression": "1 / 0"}',  # valid arguments, but the tool fails
        '{"expression": "1 + 1"}',  # the model's retry
    ]
    for args in attempts:
        results, errors = Executor().results([Job(tool, Call("c", args))])
        print(f"  calculate {args:26} -> {seen(results[0], errors[0])}")


def output_items() -> None:
    heading("4. A model's response in, the items to send back out")
    # What OpenAI's Responses API returns: function_call items among other output items.  The
    # same shape as test_agenttool.py's test_responses_items (duplicates pairs them): a real
    # response's items, written out whole for the reader.
    response_output = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "function_call",
            "call_id": "call_a",
            "name": "calculate",
            "arguments": '{"expression": "sqrt(2)"}',
        },
        {
            "type": "function_call",
            "call_id": "call_b",
            "name": "get_weather",
            "arguments": '{"city": "Paris", "units": "kelvin"}',
        },
    ]
    print("  Responses (function_call_output items for the next request's input):")
    print(indent(json.dumps(TOOLS.run(response_output), indent=2)))
    # What Anthropic's Messages API returns: an assistant message with tool_use blocks.
    message = {
        "type": "message",
        "role": "assistant",
        "stop_reason": "tool_use",
        "content": [
            {"type": "text", "text": "Let me check."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "calculate",
                "input": {"expression": "sqrt(2)"},
            },
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "get_weather",
                "input": {"city": "Paris", "units": "kelvin"},
            },
        ],
    }
    print("  Anthropic (tool_result blocks for the next user message):")
    print(indent(json.dumps(TOOLS.run(message), indent=2)))


def indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def main() -> None:
    print(f"agenttool {agenttool.__version__}: {len(TOOLS)} tools from examples/toolbox.py")
    for t in TOOLS:
        print(f"  {t.name:11} {t.description}")
    try:
        parallel_batch()
        resource_chain()
        fixable_error()
        output_items()
    finally:
        shutil.rmtree(SANDBOX, ignore_errors=True)
    print("\nNext: python -m agenttool list examples/toolbox.py --format anthropic")


if __name__ == "__main__":
    main()
