"""More tests of agenttool_mcp: results read once, questions that wait within bounds, served
Inject parameters, a name clash that costs only the clashing tools, one strict argument reader
for both modules, no grace wait per call, and a reconnect after a dropped connection.

Skips like test_agenttool_mcp where Python is older than 3.10 or the SDK is missing.
"""

from __future__ import annotations

import inspect
import logging
import os
import signal
import sys
import textwrap
import threading
import unittest
from typing import Annotated, Any, Callable

if sys.version_info < (3, 10):  # agenttool_mcp, imported next, refuses older Pythons
    raise unittest.SkipTest("agenttool_mcp needs Python 3.10 or later (as the mcp SDK does)")

import agenttool as at
import agenttool_mcp as am
import test_agenttool_mcp as base  # a module, so its test classes do not run twice here
from test_agenttool import limit_test_time
from test_agenttool_mcp import CHILD_ENV, SKIP, WAIT, _free_port, _mcpserver, _quiet, _run_one

limit_test_time()

if not SKIP:
    import mcp.types as mt


# ---------------------------------------------------------------------------------------------
# Content: agenttool parts <-> MCP content blocks
# ---------------------------------------------------------------------------------------------


class TestResultsReadOnce(base._Case):
    """Text beside structured content is the output as sent: the JSON is not appended (the
    SDK and fastmcp clients pass the text once); the value stays in ``Result.structured``."""

    def test_text_that_is_not_the_json(self) -> None:
        r = am.result_of(
            mt.CallToolResult(
                content=[mt.TextContent(type="text", text="hi")],
                structured_content={"result": "hi"},
            )
        )
        self.assertEqual((r.output, r.structured), ("hi", {"result": "hi"}))
        two = am.result_of(
            mt.CallToolResult(
                content=[
                    mt.TextContent(type="text", text="a"),
                    mt.TextContent(type="text", text="b"),
                ],
                structured_content={"n": 1},
            )
        )
        self.assertEqual((two.output, two.structured), ("a\nb", {"n": 1}))

    def test_text_with_an_image_and_no_content_at_all(self) -> None:
        img = mt.ImageContent(type="image", data="AAE=", mime_type="image/png")
        both = am.result_of(
            mt.CallToolResult(
                content=[mt.TextContent(type="text", text="caption"), img],
                structured_content={"n": 1},
            )
        )
        self.assertEqual([p["type"] for p in both.output], ["text", "input_image"])
        # with no text at all the JSON is the only text there is, so it stays
        empty = am.result_of(mt.CallToolResult(content=[], structured_content={"n": 1}))
        self.assertEqual(empty.output, '{"n":1}')

    @_quiet("mcp")
    def test_sdk_mcpserver_returning_str_and_int(self) -> None:
        from mcp.server.mcpserver import MCPServer

        server = MCPServer("typed")

        def greet() -> str:
            """Greets."""
            return "hi"

        def count() -> int:
            """Counts."""
            return 7

        server.add_tool(greet)
        server.add_tool(count)
        with am.connect(server=server) as remote:
            greeted = remote.call("greet")
            self.assertEqual((greeted.output, greeted.structured), ("hi", {"result": "hi"}))
            self.assertEqual(remote.call("count").output, "7")
            self.assertEqual(_run_one(remote.lookup("greet"), "").output, "hi")


# ---------------------------------------------------------------------------------------------
# Serve: the server and its calls
# ---------------------------------------------------------------------------------------------


PARKING = """
import asyncio, sys, threading
sys.path.insert(0, sys.argv[1])
import anyio
import agenttool as at, agenttool_mcp as am
import mcp.types as mt
from mcp import Client

at.set_max_threads(8)  # the pool's cap: many more questions than threads wait below

def waits(call):
    return at.text(at.elicit(at.Elicitation("Anyone?")).action.value)

quick = at.new_func("quick", "Q.", None, lambda c: "q")
tools = [at.new_func("waits", "Waits.", None, waits), quick]
server = am.build_server(tools, max_waiting=40)

async def elicit(ctx, params):  # says the client can be asked; answers go in requests
    return mt.ElicitResult(action="accept", content={})

async def main():
    async with Client(server, elicitation_callback=elicit) as client:
        with anyio.fail_after(60):
            pending = [
                await client.session.call_tool("waits", {}, allow_input_required=True)
                for _ in range(40)
            ]
            print(all(isinstance(p, mt.InputRequiredResult) for p in pending))
            print((await client.call_tool("quick", {})).content[0].text)  # still served
            over = await client.session.call_tool("waits", {}, allow_input_required=True)
            print(over.is_error, "max_waiting" in over.content[0].text)
            done = await client.session.call_tool(
                "waits",
                {},
                input_responses={"elicit_1": mt.ElicitResult(action="decline")},
                request_state=pending[0].request_state,
                allow_input_required=True,
            )
            print(done.content[0].text)  # a parked call still completes when answered

asyncio.run(main())
"""


class TestQuestionsWaitWithinBounds(base._Case):
    """Questions a client leaves unanswered cannot stop the server."""

    @_quiet("mcp")
    def test_more_waiting_questions_than_pool_threads_and_a_bound_beyond(self) -> None:
        import subprocess
        import sys

        root = os.path.dirname(os.path.abspath(__file__))
        done = subprocess.run(
            [sys.executable, "-c", PARKING, root],
            capture_output=True,
            text=True,
            timeout=90,
            env=CHILD_ENV,
        )
        self.assertEqual(done.stdout, "True\nq\nTrue True\ndecline\n", done.stderr[-3000:])

    def test_max_waiting_is_a_positive_whole_number(self) -> None:
        for bad in (0, -1, 1.5, True):
            with self.assertRaisesRegex(ValueError, "max_waiting"):
                am.build_server([], max_waiting=bad)


class TestServedInject(base._Case):
    """A served tool's Inject parameters get the server's values."""

    def test_served_tools_get_injected_values(self) -> None:
        import asyncio

        from mcp import Client

        def query(sql: str, db: Annotated[dict, at.Inject("db")]) -> str:
            """Run a query."""
            return f"{db['name']}: {sql}"

        server = am.build_server([at.tool(query)], inject={"db": {"name": "prod"}})

        async def main() -> tuple[str, list[str]]:
            async with Client(server) as client:
                listed = await client.list_tools()
                result = await client.call_tool("query", {"sql": "select 1"})
                return result.content[0].text, list(listed.tools[0].input_schema["properties"])

        self.assertEqual(asyncio.run(main()), ("prod: select 1", ["sql"]))  # db is not the model's


# ---------------------------------------------------------------------------------------------
# Consume: a server's tools as agenttool tools
# ---------------------------------------------------------------------------------------------


class TestClashCostsOnlyTheClashingTools(base._Case):
    """Two remote names that map to one local name drop those tools, with a warning naming
    them; every other tool stays usable."""

    @_quiet("mcp")
    def test_dotted_and_underscored(self) -> None:
        server = _mcpserver("a.b", "a_b", "fine")
        with self.assertLogs("agenttool_mcp", logging.WARNING) as logs:
            remote = am.connect(server=server)
        with remote:
            self.assertEqual([t.name for t in remote.tools()], ["fine"])
            self.assertEqual(remote.call("fine").output, "fine")
        text = "\n".join(logs.output)
        self.assertIn('"a.b"', text)
        self.assertIn('"a_b"', text)
        self.assertIn("rename", text)

    @_quiet("mcp")
    def test_three_names_and_a_prefix(self) -> None:
        server = _mcpserver("x.y", "x y", "x_y", "other")
        with self.assertLogs("agenttool_mcp", logging.WARNING) as logs:
            remote = am.connect(server=server, prefix="p")
        with remote:
            self.assertEqual([t.name for t in remote.tools()], ["p__other"])
        text = "\n".join(logs.output)
        for name in ("x.y", "x y", "x_y"):
            self.assertIn(f'"{name}"', text)
        # a rename resolves it
        with am.connect(server=server, rename={"x.y": "dotted", "x y": "spaced"}) as remote:
            self.assertEqual(
                sorted(t.name for t in remote.tools()), ["dotted", "other", "spaced", "x_y"]
            )


class TestStrictRemoteArguments(base._Case):
    """A remote tool's arguments are read by agenttool's own strict reader: a duplicate key or
    NaN is refused before anything reaches the server, as for a local tool."""

    @_quiet("mcp")
    def test_duplicate_key_and_nan(self) -> None:
        from mcp.server.mcpserver import MCPServer

        seen: list[Any] = []
        server = MCPServer("args")

        def take(a: Any = None) -> str:
            """Takes a."""
            seen.append(a)
            return "ok"

        server.add_tool(take, structured_output=False)
        with am.connect(server=server) as remote:
            tool = remote.lookup("take")
            for bad in ('{"a": 1, "a": 2}', '{"a": NaN}', '{"a": Infinity}'):
                event = _run_one(tool, bad)
                self.assertIsNotNone(event.error, bad)
            self.assertEqual(seen, [])
            self.assertEqual(_run_one(tool, '{"a": 1}').output, "ok")
            self.assertEqual(seen, [1])

    def test_parts_crossing_as_json_use_the_core_encoder(self) -> None:
        """A part MCP has no block for crosses as strict JSON text (NaN as null), the text
        agenttool itself writes."""
        import datetime

        odd = {"type": "mystery", "x": float("inf"), "when": datetime.date(2026, 1, 2)}
        bad_file = {"type": "input_file", "filename": "f", "file_data": "!!!", "n": float("nan")}
        blocks = am.content_of([odd, bad_file])
        texts = [b.text for b in blocks if isinstance(b, mt.TextContent)]
        self.assertEqual(texts, [at._dumps(odd), at._dumps(bad_file)])
        self.assertEqual(at._loads(texts[0]), {"type": "mystery", "x": None, "when": "2026-01-02"})
        self.assertEqual(at._loads(texts[1])["n"], None)

    def test_a_data_url_read_as_the_core_reads_it(self) -> None:
        """The core's data-URL reader serves both modules: percent-encoded data is data too."""
        blocks = am.content_of(
            [
                {"type": "input_image", "image_url": "data:image/png,%89PNG"},
                {"type": "input_file", "filename": "a.txt", "file_data": "data:text/plain,hi"},
            ]
        )
        self.assertEqual([b.type for b in blocks], ["image", "resource"])
        image = blocks[0]
        assert isinstance(image, mt.ImageContent)
        self.assertEqual((image.mime_type, image.data), ("image/png", "iVBORw=="))


# ---------------------------------------------------------------------------------------------
# Consume: the connection
# ---------------------------------------------------------------------------------------------


class TestNoGraceByDefault(base.TestRemoteEras):
    """A call returns at once by default (no ``notification_grace`` wait), and a list change
    or progress the tool sent before its result is still seen when the call returns."""

    def check(self, server: Any, era: str, expected: str) -> None:
        with am.connect(server=server, era=era) as remote:
            event = _run_one(remote.lookup("steps"), "")
            self.assertEqual((event.output, [p.output for p in event.progress]), ("done", ["half"]))
            self.assertNotIn("extra", [t.name for t in remote.tools()])
            self.assertEqual(remote.call("grow").output, "grown")
            remote.await_refresh(WAIT)
            self.assertIn("extra", [t.name for t in remote.tools()], (era, server))

    def test_the_default_is_no_wait(self) -> None:
        for fn in (am.connect, am.aconnect):
            self.assertEqual(inspect.signature(fn).parameters["notification_grace"].default, 0)

    @_quiet("mcp")
    def test_async_remote_sees_a_change_sent_before_the_result(self) -> None:
        import asyncio

        async def main() -> list[str]:
            async with am.aconnect(server=self.ours()) as remote:
                self.assertEqual((await remote.call("grow")).output, "grown")
                await remote.await_refresh()
                return [t.name for t in remote.tools()]

        self.assertIn("extra", asyncio.run(main()))


DROPPING = textwrap.dedent(
    '''
    """Tools that note each start in a file beside this one, then wait to be killed."""
    import os
    import threading

    import agenttool as at

    HERE = os.path.dirname(os.path.abspath(__file__))


    def _note(name):
        with open(os.path.join(HERE, name), "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\\n")


    def _stall(call):
        _note("stall.starts")
        threading.Event().wait(120)
        return at.text("woke")


    def _once_stalled(name):
        """The tool of ``name``: its first call waits to be killed, later ones answer."""

        def run(call):
            first = not os.path.exists(os.path.join(HERE, name + ".starts"))
            _note(name + ".starts")
            if first:
                threading.Event().wait(120)
            return at.text(name + "ed")

        return run


    def _upper(call):
        return at.text(str(call.args.get("text", "")).upper())


    stall = at.new_func("stall", "Waits.", None, _stall)
    look = at.new_func(
        "look", "Looks.", None, _once_stalled("look"), replay=lambda args: at.Replay.SAFE
    )
    peek = at.new_func(
        "peek", "Peeks.", None, _once_stalled("peek"), annotations=at.Annotations(read_only=True)
    )
    upper = at.new_func(
        "upper", "Upper.", {"type": "object", "properties": {"text": {"type": "string"}}}, _upper
    )
    '''
)


class TestReconnectAfterADrop(base._Fixture):
    """A Remote whose server died during a call reconnects on its next call (HTTP and stdio,
    both eras); the call in flight fails saying so and is sent again only when its replay is
    SAFE, which only the server's answer can make it (connect(claims=True)), never a hint."""

    fixture = DROPPING
    fixture_file = "dropping_tools.py"
    serve_at = base.TestSessionRestart.serve_at

    def setUp(self) -> None:
        for name in ("stall.starts", "look.starts", "peek.starts"):
            path = os.path.join(self.tmp, name)
            if os.path.exists(path):
                os.remove(path)

    def starts(self, name: str) -> list[int]:
        path = os.path.join(self.tmp, name)
        if not os.path.exists(path):
            return []
        with open(path, encoding="utf-8") as fh:
            return [int(line) for line in fh.read().split()]

    def in_flight(self, remote: am.Remote, name: str, kill: Any) -> Any:
        """Call ``name`` in a thread, ``kill()`` the server once the tool started; the outcome
        (a Result or the exception)."""
        box: list[Any] = []

        def run() -> None:
            try:
                box.append(remote.call(name))
            except Exception as exc:
                box.append(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        for _ in range(int(WAIT / 0.02)):
            if self.starts(f"{name}.starts"):
                break
            threading.Event().wait(0.02)
        kill()
        thread.join(WAIT)
        self.assertFalse(thread.is_alive())
        return box[0]

    @_quiet("mcp")
    @_quiet("httpx2")
    @_quiet("agenttool_mcp")
    def test_http_restart_mid_call(self) -> None:
        for era in ("legacy", "auto"):
            self.setUp()
            port = _free_port()
            stop = self.serve_at(port)
            with am.connect(url=f"http://127.0.0.1:{port}/mcp", era=era) as remote:
                self.assertEqual(remote.call("upper", {"text": "a"}).output, "A")
                outcome = self.in_flight(remote, "stall", stop)
                self.assertIsInstance(outcome, am.RemoteError, era)
                self.assertIn("lost during the call", str(outcome))
                self.assertIn("not sent again", str(outcome))
                stop = self.serve_at(port)
                self.assertEqual(remote.call("upper", {"text": "b"}).output, "B", era)
                self.assertFalse(remote.closed)
                self.assertEqual(len(self.starts("stall.starts")), 1, era)  # never resent
            stop()

    @_quiet("mcp")
    @_quiet("agenttool_mcp")
    def test_stdio_child_killed_mid_call(self) -> None:
        def kill() -> None:
            os.kill(self.starts("stall.starts")[-1], signal.SIGKILL)

        for era in ("legacy", "auto"):
            self.setUp()
            with am.connect(self.serve_command(), env=CHILD_ENV, era=era) as remote:
                outcome = self.in_flight(remote, "stall", kill)
                self.assertIsInstance(outcome, am.RemoteError, era)
                self.assertIn("not sent again", str(outcome))
                self.assertEqual(remote.call("upper", {"text": "c"}).output, "C", era)
                self.assertEqual(len(self.starts("stall.starts")), 1, era)

    def restarting(self, port: int) -> Callable[[], None]:
        """Serve on ``port``; the function returned kills that server and starts another."""
        stop = [self.serve_at(port)]

        def restart() -> None:
            stop[0]()
            stop[0] = self.serve_at(port)

        return restart

    @_quiet("mcp")
    @_quiet("httpx2")
    @_quiet("agenttool_mcp")
    def test_a_safe_call_is_sent_again(self) -> None:
        port = _free_port()
        restart = self.restarting(port)
        with am.connect(url=f"http://127.0.0.1:{port}/mcp", claims=True) as remote:
            outcome = self.in_flight(remote, "look", restart)
            self.assertIsInstance(outcome, at.Result)
            self.assertEqual(outcome.output, "looked")
            self.assertEqual(len(self.starts("look.starts")), 2)

    @_quiet("mcp")
    @_quiet("httpx2")
    @_quiet("agenttool_mcp")
    def test_a_read_only_hint_never_makes_a_call_safe_to_send_again(self) -> None:
        """readOnlyHint is the server's word, held to nothing: the call is not sent again, with
        claims trusted or not; and a tool claiming replay is not sent again untrusted."""
        port = _free_port()
        restart = self.restarting(port)
        for claims, name in ((False, "peek"), (True, "peek"), (False, "look")):
            self.setUp()
            with am.connect(url=f"http://127.0.0.1:{port}/mcp", claims=claims) as remote:
                tool = {t.name: t for t in remote.tools()}[name]
                self.assertIs(at.replay_of(tool, {}), at.Replay.UNKNOWN)
                outcome = self.in_flight(remote, name, restart)
                self.assertIsInstance(outcome, am.RemoteError, (claims, name))
                self.assertIn("not sent again", str(outcome))
                self.assertEqual(len(self.starts(f"{name}.starts")), 1, (claims, name))


if __name__ == "__main__":
    unittest.main()
