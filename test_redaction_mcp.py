"""The error policy over MCP: agenttool_mcp serving takes the core's errors= policy (and
--errors on its command line), the default unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap

import agenttool as at
import test_agenttool_mcp as base  # a module, so its test classes do not run twice here
from test_agenttool import limit_test_time

limit_test_time()
SECRET = "postgres://admin:hunter2@db/prod"


def leaky_tools() -> list[at.Tool]:
    @at.tool
    def leaky() -> str:
        """Fails with a secret in its message."""
        raise ConnectionError(f"cannot reach {SECRET}")

    @at.tool
    def needs(n: int) -> str:
        """Takes a number."""
        return str(n)

    return [leaky, needs]


# ---------------------------------------------------------------------------------------------
# Serve: the server and its calls
# ---------------------------------------------------------------------------------------------


class TestServedRedaction(base._Case):
    def call(self, errors: str | None, name: str, args: dict[str, object]) -> str:
        import agenttool_mcp as am

        options = {} if errors is None else {"errors": errors}
        server = am.build_server(leaky_tools(), **options)  # type: ignore[arg-type]
        with am.connect(server=server) as remote:
            try:
                return str(remote.call(name, args).output)
            except Exception as exc:  # noqa: BLE001 - a failed remote call says why
                return at.error_message(exc)

    def test_redacted_keeps_the_secret_from_the_client(self) -> None:
        self.assertIn("hunter2", self.call(None, "leaky", {}))  # the default: full
        got = self.call("redacted", "leaky", {})
        self.assertNotIn("hunter2", got)
        self.assertIn('tool "leaky" failed', got)
        # what the library says still reaches the client
        self.assertIn('expected integer, got "x"', self.call("redacted", "needs", {"n": "x"}))

    def test_a_bad_policy_is_refused_when_the_server_is_built(self) -> None:
        import agenttool_mcp as am

        with self.assertRaisesRegex(ValueError, "errors must be"):
            am.build_server(leaky_tools(), errors="quiet")

    def test_the_command_line_takes_errors(self) -> None:
        root = os.path.dirname(os.path.abspath(__file__))
        with tempfile.TemporaryDirectory() as d:
            target = os.path.join(d, "leaky_target.py")
            with open(target, "w", encoding="utf-8") as f:
                f.write(
                    textwrap.dedent(
                        f"""
                        import agenttool

                        @agenttool.tool
                        def leaky() -> str:
                            \"\"\"Fails with a secret.\"\"\"
                            raise ConnectionError("cannot reach {SECRET}")
                        """
                    )
                )
            env = dict(os.environ, PYTHONPATH=root)
            serve = [sys.executable, "-m", "agenttool_mcp", "serve", "--errors", "redacted", target]
            done = subprocess.run(
                [sys.executable, "-m", "agenttool_mcp", "call", "--tool", "leaky", "--", *serve],
                capture_output=True,
                text=True,
                timeout=120,
                env=env,
                cwd=root,
            )
            self.assertNotIn("hunter2", done.stdout + done.stderr)
            self.assertIn('tool "leaky" failed', done.stdout + done.stderr)
