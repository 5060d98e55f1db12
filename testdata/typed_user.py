"""User code a type checker must read precisely (test_typing): a decorated tool keeps its
function's signature, and the library's own objects are typed.  Each ``type: ignore`` below
marks an error the checker must find: an unneeded one fails the check."""

# pyright: strict, reportUnnecessaryTypeIgnoreComment=true

from __future__ import annotations

from typing import Any, assert_type

import agenttool


@agenttool.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@agenttool.tool(name="greet", strict=True)
def hello(name: str) -> str:
    """Say hello."""
    return f"hello {name}"


def twice(n: int) -> int:
    return n * 2


made = agenttool.new("double", "Double it.", twice)
assert_type(made(3), int)
agenttool.new("typo", "", twice, stirct=True)  # type: ignore[call-arg]
agenttool.new("late", "", twice, timeout="soon")  # type: ignore[arg-type]

assert_type(add(1, 2), int)
assert_type(hello("x"), str)
add("one", 2)  # type: ignore[arg-type]
hello()  # type: ignore[call-arg]
add(1, 2, 3)  # type: ignore[call-arg]

result = add.execute(agenttool.Call("c1", {"a": 1, "b": 2}))
assert_type(result, agenttool.Result)
assert_type(add.name, str)
assert_type(add.parameters, dict[str, Any] | None)
tools = agenttool.ToolSet([add, hello])
out = tools.run([])
assert_type(out, agenttool.RunOutput)
assert_type(agenttool.is_isolated(add), bool)
events = agenttool.Executor().results([agenttool.Job(add, agenttool.Call("c2", {"a": 1, "b": 1}))])
