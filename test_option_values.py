"""Option values are checked when given (timeouts and backoffs the clock cannot wait for are a
ValueError naming the option, never an OverflowError later), max_output caps the text summed
over parts; beside them, an open schema's **kwargs never takes a parameter the schema leaves
out, and a CLI target named like a standard module does not replace it."""

import math
import os
import subprocess
import sys
import tempfile
import threading
import unittest
from typing import Any

import agenttool as at
from test_agenttool import isolated

TOO_LONG = (float("inf"), threading.TIMEOUT_MAX * 2)  # PyPy's TIMEOUT_MAX is past 1e10


class TestValues(unittest.TestCase):
    def test_a_tool_or_executor_timeout_the_clock_cannot_wait_for(self) -> None:
        def f() -> str:
            """F."""
            return ""

        for bad in (*TOO_LONG, float("nan"), -1, 0, True):
            with self.subTest(bad):
                with self.assertRaisesRegex(ValueError, "timeout"):
                    at.tool(f, timeout=bad)
                with self.assertRaisesRegex(ValueError, "timeout"):
                    at.Executor(timeout=bad)
        at.tool(f, timeout=threading.TIMEOUT_MAX)  # the longest wait is a wait

    def test_a_hand_written_tool_s_timeout_fails_its_call_saying_so(self) -> None:
        class Tool:
            name = "slow"
            description = ""
            parameters = None
            timeout = math.inf

            def execute(self, call: at.Call) -> at.Result:
                return at.text("ran")

        results, errors = at.Executor().results([at.Job(Tool(), at.Call("1"))])  # type: ignore[arg-type]
        self.assertIsNone(results[0])
        self.assertIn("timeout must be at most", str(errors[0]))

    def test_backoff_values_and_a_backoff_function_s_answer(self) -> None:
        class Flaky:
            name = "flaky"
            description = ""
            parameters = None

            def replay(self, args: object) -> at.Replay:
                return at.Replay.SAFE

            def execute(self, call: at.Call) -> at.Result:
                raise OSError("down")

        for bad in (*TOO_LONG, float("nan"), -1):
            with self.subTest(bad), self.assertRaisesRegex(ValueError, "backoff"):
                at.retrying(Flaky(), backoff=bad)  # type: ignore[arg-type]
        for answer in (math.nan, math.inf, -1.0):
            t = at.retrying(Flaky(), attempts=2, backoff=lambda n, a=answer: a)  # type: ignore[arg-type]
            _, errors = at.Executor().results([at.Job(t, at.Call("1"))])
            self.assertIn("backoff(1) returned", str(errors[0]))

    def test_max_output_caps_the_text_summed_over_parts(self) -> None:
        parts = [{"type": "text", "text": "x" * 1000} for _ in range(100_000)]

        def many(c: at.Call) -> at.Result:
            return at.Result([*parts[:3], at.image(b"png"), *parts[3:]])

        t = at.new_func("many", "", None, many, max_output=20_000)
        (result,), _ = at.Executor().results([at.Job(t, at.Call("1"))])
        assert result is not None
        shown = [p for p in result.output if isinstance(p, dict) and "text" in p]
        self.assertEqual(sum(p["text"].count("x") for p in shown[:-1]), 20_000)  # the note aside
        self.assertEqual(
            shown[-1]["text"], "[... 99979 more text parts (99979000 characters) cut ...]"
        )
        self.assertEqual([p["type"] for p in result.output].count("input_image"), 1)  # kept
        self.assertEqual(len(result.full_output or []), 100_001)  # the host keeps everything
        out = at.ToolSet([t]).run(
            [{"type": "function_call", "call_id": "c", "name": "many", "arguments": "{}"}]
        )
        self.assertLess(len(str(out[0]["output"])), 25_000)  # a second way in: ToolSet.run

    def test_an_infinite_timeout_never_reaches_the_clock(self) -> None:  # the crash first found
        code = """
        def f() -> str:
            return "ok"
        try:
            at.tool(f, timeout=float("inf"))
        except ValueError as e:
            print("refused")
        """
        isolated(self, code, "refused\n", timeout=60)


class TestOpenSchemaKwargs(unittest.TestCase):
    def test_the_model_cannot_set_a_named_parameter_the_schema_leaves_out(self) -> None:
        seen: list[Any] = []

        def f(a: int, secret: str = "host-only", **extra: Any) -> str:
            seen.append((a, secret, extra))
            return "ok"

        schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
        t = at.new("f", "", f, parameters=schema)
        t.execute(at.Call("1", {"a": 1, "color": "red"}))  # an open schema: **extra takes it
        with self.assertRaisesRegex(at.ValidationError, 'unexpected property "secret"'):
            t.execute(at.Call("2", {"a": 1, "secret": "model-chosen"}))
        self.assertEqual(seen, [(1, "host-only", {"color": "red"})])

        # a second case of the class: the keyword-only form
        def g(a: int, *, admin: bool = False, **extra: Any) -> str:
            return "admin" if admin else "user"

        u = at.new("g", "", g, parameters=schema)
        with self.assertRaisesRegex(at.ValidationError, 'unexpected property "admin"'):
            u.execute(at.Call("3", {"a": 1, "admin": True}))


class TestCliTargetNames(unittest.TestCase):
    def test_a_target_file_named_like_a_standard_module(self) -> None:
        root = os.path.dirname(os.path.abspath(__file__))
        with tempfile.TemporaryDirectory() as d:
            for name in ("queue", "heapq", "uuid", "json"):
                with self.subTest(name):
                    path = os.path.join(d, f"{name}.py")
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(
                            "import agenttool\n\n@agenttool.tool\ndef ping(n: int) -> str:\n"
                            '    """Ping."""\n    return f"pong {n}"\n'
                        )
                    done = subprocess.run(
                        [sys.executable, "-m", "agenttool", "call", path, "ping", '{"n": 1}'],
                        capture_output=True,
                        text=True,
                        timeout=60,
                        cwd=root,
                        env=dict(os.environ, PYTHONPATH=root),
                    )
                    self.assertEqual((done.stdout, done.returncode), ("pong 1\n", 0), done.stderr)


if __name__ == "__main__":
    unittest.main()
