"""Redacted means redacted: what the model reads under errors="redacted" is decided by where a
message was made: the library's own (invalid arguments, a missing tool, a cancellation or
timeout it decided, a denial) always shows; whatever the tool, its properties or on_start raise
follows the policy, whatever its type.  ToolError stays the one way a tool speaks to the model
on purpose."""

import unittest
from typing import Any

import agenttool as at

SECRET = "postgres://admin:hunter2@db/prod"


def call(name: str, args: Any = "{}", cid: str = "c1") -> dict[str, Any]:
    return {"type": "function_call", "call_id": cid, "name": name, "arguments": args}


class TestRedacted(unittest.TestCase):
    def setUp(self) -> None:
        @at.tool
        def own_validation() -> str:
            """Raises the library's exception type on its own data."""
            raise at.ValidationError("rows[3]", f"bad row from {SECRET}")

        @at.tool
        def own_cancel() -> str:
            """Raises Cancelled itself."""
            raise at.Cancelled(f"gave up talking to {SECRET}")

        @at.tool
        def speaks() -> str:
            """Raises ToolError, meant for the model."""
            raise at.ToolError("no such user; list users first")

        @at.tool
        def needs(n: int) -> str:
            """Takes a number."""
            return str(n)

        @at.tool(timeout=0.05)
        def slow() -> str:
            """Outlives its timeout."""
            at.cancel_event().wait(5)
            return "late"

        self.tools = at.ToolSet([own_validation, own_cancel, speaks, needs, slow])

    def outputs(self, items: list[dict[str, Any]], **run: Any) -> dict[str, str]:
        out = self.tools.run(items, **run)
        return {o["call_id"]: o["output"] for o in out}

    def test_a_tool_s_own_validation_error_or_cancelled_is_redacted(self) -> None:
        for errors in ("redacted", lambda e: "something failed"):
            with self.subTest(errors=errors):
                got = self.outputs(
                    [call("own_validation", cid="a"), call("own_cancel", cid="b")], errors=errors
                )
                for text in got.values():
                    self.assertNotIn("hunter2", text)
                ex = at.Executor(errors=errors)
                for name in ("own_validation", "own_cancel"):
                    job = at.Job(self.tools.lookup(name), at.Call("1"))
                    (_,), (error,) = ex.results([job])
                    self.assertNotIn("hunter2", at.error_message(error))  # type: ignore[arg-type]

    def test_what_the_library_says_is_shown(self) -> None:
        got = self.outputs(
            [
                call("needs", '{"n": "ten"}', "a"),
                call("nope", cid="b"),
                call("speaks", cid="c"),
                call("slow", cid="d"),
            ],
            errors="redacted",
        )
        self.assertIn('expected integer, got "ten"', got["a"])
        self.assertIn('no tool named "nope"', got["b"])
        self.assertEqual(got["c"], "Error: no such user; list users first")
        self.assertIn('tool "slow" timed out after 0.05 s', got["d"])

    def test_one_policy_decides_timeouts_in_executor_and_toolset_run(self) -> None:
        slow = self.tools.lookup("slow")
        (_,), (error,) = at.Executor(errors="redacted").results([at.Job(slow, at.Call("1"))])
        from_run = self.outputs([call("slow")], errors="redacted")["c1"]
        self.assertEqual(from_run, "Error: " + at.error_message(error))  # type: ignore[arg-type]

    def test_a_raising_property_and_on_start_follow_the_policy(self) -> None:
        class Leaky:
            name = "leaky"
            description = ""
            parameters = None

            @property
            def timeout(self) -> float:
                raise RuntimeError(f"config at {SECRET} unreadable")

            def execute(self, c: at.Call) -> at.Result:
                return at.text("ran")

        ex = at.Executor(errors="redacted")
        (_,), (error,) = ex.results([at.Job(Leaky(), at.Call("1"))])  # type: ignore[arg-type]
        self.assertIsNotNone(error)
        self.assertNotIn("hunter2", at.error_message(error))  # type: ignore[arg-type]
        self.assertIn("hunter2", str(error.__cause__.__cause__))  # type: ignore[union-attr]

        class Boom(BaseException):
            pass

        def on_start(job: at.Job) -> None:
            raise Boom(f"host secret {SECRET}")

        ex = at.Executor(errors="redacted", on_start=on_start)
        (_,), (error,) = ex.results([at.Job(self.tools.lookup("needs"), at.Call("1", {"n": 1}))])
        self.assertNotIn("hunter2", at.error_message(error))  # type: ignore[arg-type]

    def test_full_is_unchanged(self) -> None:
        got = self.outputs([call("own_validation")])
        self.assertIn("hunter2", got["c1"])


if __name__ == "__main__":
    unittest.main()
