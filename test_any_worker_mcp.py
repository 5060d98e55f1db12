"""Tests of questions on any worker: with a state key, a 2026-07-28 question of a tool whose
replay is SAFE carries the whole call in a sealed ``requestState``, so its answers may reach
any worker (which runs the tool again from the top); without a key, or for any other tool,
the question stays with the worker that asked it.

Skips like test_agenttool_mcp where Python is older than 3.10 or the SDK is missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import textwrap
import threading
import time
import unittest
from typing import Any, cast
from unittest import mock

if sys.version_info < (3, 10):  # agenttool_mcp, imported next, refuses older Pythons
    raise unittest.SkipTest("agenttool_mcp needs Python 3.10 or later (as the mcp SDK does)")

import agenttool as at
import agenttool_mcp as am
from test_agenttool import limit_test_time
from test_agenttool_mcp import SKIP, WAIT, _Case, _Fixture, _quiet, _run_one, start_asgi_app

limit_test_time()

if not SKIP:
    import mcp.types as mt
    from mcp import Client
    from mcp.shared.exceptions import MCPError

KEY = "a-test-key-of-forty-characters-0123456789"
OTHER_KEY = "another-key-of-forty-characters-01234567"
FORM = {"type": "object", "properties": {"n": {"type": "string"}}}


def _names(call: at.Call) -> at.Result:
    """Asks a first and a last name, answers with both."""
    first = at.elicit(at.Elicitation("First name?", FORM))
    last = at.elicit(at.Elicitation("Last name?", FORM))
    return at.text(
        " ".join(f"{a.action.value}:{(a.content or {}).get('n')}" for a in (first, last))
    )


def _safe(args: Any) -> at.Replay:
    return at.Replay.SAFE


def _answering(*names: str) -> Any:
    """An SDK elicitation callback accepting each question with the next of ``names``."""
    queue = list(names)

    async def elicit(ctx: Any, params: Any) -> mt.ElicitResult:
        return mt.ElicitResult(action="accept", content={"n": queue.pop(0)})

    return elicit


async def _first_round(server: Any, name: str = "names") -> mt.InputRequiredResult:
    """The input request a call of ``name`` answers with at once (the question not answered)."""
    async with Client(server, elicitation_callback=_answering()) as client:
        first = await client.session.call_tool(name, {}, allow_input_required=True)
    assert isinstance(first, mt.InputRequiredResult), first
    return first


async def _answer(server: Any, state: str | None, name: str = "names") -> Any:
    """The result of answering the first question "Ada" under ``state``, or the JSON-RPC error
    it gets as ``(code, message)``."""
    async with Client(server, elicitation_callback=_answering()) as client:
        try:
            return await client.session.call_tool(
                name,
                {},
                input_responses={"elicit_1": mt.ElicitResult(action="accept", content={"n": "A"})},
                request_state=state,
                allow_input_required=True,
            )
        except MCPError as exc:
            return exc.error.code, exc.error.message


# ---------------------------------------------------------------------------------------------
# Serve: the server and its calls (questions sealed in the requestState)
# ---------------------------------------------------------------------------------------------


class TestSealedQuestions(_Case):
    """A SAFE tool's questions on a server with a state key: sealed, re-run, bounded."""

    def setUp(self) -> None:
        self.runs = 0

        def names(call: at.Call) -> at.Result:
            self.runs += 1
            return _names(call)

        self.names = at.new_func("names", "Names.", None, names, replay=_safe)

    def test_a_safe_tool_is_run_again_with_its_answers_and_nothing_is_parked(self) -> None:
        server = am.build_server([self.names], state_key=KEY)

        async def main() -> str:
            async with Client(server, elicitation_callback=_answering("Ada", "Lovelace")) as c:
                return cast(str, (await c.call_tool("names", {})).content[0].text)  # type: ignore[union-attr]

        self.assertEqual(asyncio.run(main()), "accept:Ada accept:Lovelace")
        self.assertEqual(self.runs, 3)  # asked once, then once again per answer
        self.assertEqual(server._agenttool_state.pending, {})  # type: ignore[attr-defined]

    def test_the_state_carries_the_call_and_lives_abandon_after_seconds(self) -> None:
        server = am.build_server([self.names], state_key=KEY, abandon_after=600)
        before = time.time()
        state = asyncio.run(_first_round(server)).request_state
        after = time.time()
        assert state is not None
        self.assertTrue(state.startswith("at1."), state)
        payload = am._unseal(KEY.encode(), state)
        assert payload is not None
        self.assertEqual((payload["tool"], payload["args"], payload["answers"]), ("names", {}, []))
        self.assertEqual(len(payload["asked"]), 1)
        self.assertLessEqual(before + 600 - 0.01, payload["expires"])
        self.assertLessEqual(payload["expires"], after + 600 + 0.01)

    def test_a_tampered_state_is_a_json_rpc_error(self) -> None:
        server = am.build_server([self.names], state_key=KEY)
        state = asyncio.run(_first_round(server)).request_state
        assert state is not None
        payload = am._unseal(KEY.encode(), state)
        assert payload is not None
        signed, mac = state.rsplit(".", 1)
        # the same MAC over a payload whose arguments changed, and a MAC altered
        other = am._seal(OTHER_KEY.encode(), {**payload, "args": {"n": 1}}).rsplit(".", 1)[0]
        for tampered in (f"{other}.{mac}", f"{signed}.{mac[:-2]}xy", state + "x"):
            with self.subTest(tampered=tampered[-12:]):
                code, message = asyncio.run(_answer(server, tampered))
                self.assertEqual(code, -32602)
                self.assertIn("does not verify under this server's state key", message)

    def test_a_state_forged_under_another_key_is_a_json_rpc_error(self) -> None:
        forger = am.build_server([self.names], state_key=OTHER_KEY)
        forged = asyncio.run(_first_round(forger)).request_state
        server = am.build_server([self.names], state_key=KEY)
        code, message = asyncio.run(_answer(server, forged))
        self.assertEqual(code, -32602)
        self.assertIn("does not verify", message)
        keyless = am.build_server([self.names])  # says what is missing
        code, message = asyncio.run(_answer(keyless, forged))
        self.assertEqual(code, -32602)
        self.assertIn("AGENTTOOL_MCP_STATE_KEY", message)

    def test_an_expired_state_is_a_json_rpc_error(self) -> None:
        server = am.build_server([self.names], state_key=KEY)
        state = asyncio.run(_first_round(server)).request_state
        assert state is not None
        payload = am._unseal(KEY.encode(), state)
        assert payload is not None
        expired = am._seal(KEY.encode(), {**payload, "expires": time.time() - 5})
        code, message = asyncio.run(_answer(server, expired))
        self.assertEqual(code, -32602)
        self.assertIn("expired", message)
        self.assertEqual(self.runs, 1)  # never run again

    def test_a_state_of_another_tool_is_a_json_rpc_error(self) -> None:
        other = at.new_func("other", "Other.", None, _names, replay=_safe)
        server = am.build_server([self.names, other], state_key=KEY)
        state = asyncio.run(_first_round(server, "other")).request_state
        code, message = asyncio.run(_answer(server, state, "names"))
        self.assertEqual(code, -32602)
        self.assertIn('another tool ("other")', message)

    def test_a_question_that_differs_on_the_re_run_is_answered_cancel(self) -> None:
        """The answer was given to another question: the one asked in its place this time is
        answered CANCEL, and the questions after it are answered as before."""
        asked: list[str] = []

        def drifting(call: at.Call) -> at.Result:
            asked.append("x")
            first = at.elicit(at.Elicitation(f"Name, attempt {len(asked)}?", FORM))
            last = at.elicit(at.Elicitation("Last name?", FORM))
            return at.text(f"{first.action.value} {last.action.value}:{(last.content or {})['n']}")

        tool = at.new_func("drifting", "Drifts.", None, drifting, replay=_safe)
        server = am.build_server([tool], state_key=KEY)

        async def main() -> str:
            async with Client(server, elicitation_callback=_answering("Ada", "Lovelace")) as c:
                return cast(str, (await c.call_tool("drifting", {})).content[0].text)  # type: ignore[union-attr]

        self.assertEqual(asyncio.run(main()), "cancel accept:Lovelace")

    def test_questions_past_max_requests_are_answered_cancel(self) -> None:
        server = am.build_server([self.names], state_key=KEY, max_requests=1)

        async def main() -> str:
            async with Client(server, elicitation_callback=_answering("Ada")) as c:
                return cast(str, (await c.call_tool("names", {})).content[0].text)  # type: ignore[union-attr]

        self.assertEqual(asyncio.run(main()), "accept:Ada cancel:None")

    def test_a_call_waiting_on_a_sealed_question_holds_no_thread_nor_waiting_place(self) -> None:
        """Five calls wait for answers on a server that lets one wait: each tool has returned
        (its thread is free) and no place of max_waiting is taken."""
        running = threading.Semaphore(0)
        returned = threading.Semaphore(0)

        def asks(call: at.Call) -> at.Result:
            running.release()
            try:
                return at.text(at.elicit(at.Elicitation("Anyone?")).action.value)
            finally:
                returned.release()

        tool = at.new_func("asks", "Asks.", None, asks, replay=_safe)
        server = am.build_server([tool], state_key=KEY, max_waiting=1)

        async def main() -> list[Any]:
            async with Client(server, elicitation_callback=_answering()) as client:
                return [
                    await client.session.call_tool("asks", {}, allow_input_required=True)
                    for _ in range(5)
                ]

        waiting = asyncio.run(main())
        self.assertEqual([type(w) for w in waiting], [mt.InputRequiredResult] * 5)
        for _ in range(5):
            self.assertTrue(running.acquire(timeout=WAIT))
            self.assertTrue(returned.acquire(timeout=WAIT), "a tool still holds its thread")
        self.assertEqual(server._agenttool_state.pending, {})  # type: ignore[attr-defined]

    def test_without_a_key_or_for_a_tool_not_safe_the_question_is_parked(self) -> None:
        once = at.new_func("once", "Runs once.", None, _names)  # replay unknown
        for server, name in (
            (am.build_server([self.names]), "names"),
            (am.build_server([once], state_key=KEY), "once"),
        ):
            with self.subTest(name):
                state = asyncio.run(_first_round(server, name)).request_state
                assert state is not None
                self.assertFalse(state.startswith("at1."))
                self.assertEqual(list(server._agenttool_state.pending), [state])  # type: ignore[attr-defined]
                server._agenttool_state.pending.pop(state).stop()  # type: ignore[attr-defined]

    def test_the_state_key_is_at_least_32_bytes_of_text_or_bytes(self) -> None:
        with self.assertRaisesRegex(ValueError, "state_key must be at least 32 bytes"):
            am.build_server([], state_key="short")
        with self.assertRaisesRegex(TypeError, "state_key must be str or bytes"):
            am.build_server([], state_key=12345678901234567890123456789012345)  # type: ignore[arg-type]
        am.build_server([], state_key=b"\0" * 32)

    def test_asgi_app_and_the_command_line_read_the_key_from_the_environment(self) -> None:
        with mock.patch.dict(os.environ, {"AGENTTOOL_MCP_STATE_KEY": KEY}):
            with mock.patch.object(am, "build_server", wraps=am.build_server) as built:
                am.asgi_app([self.names])
                self.assertEqual(built.call_args.kwargs["state_key"], KEY)
            with tempfile.TemporaryDirectory() as tmp, mock.patch.object(am, "serve") as served:
                target = os.path.join(tmp, "one_tool.py")
                with open(target, "w", encoding="utf-8") as fh:
                    fh.write(
                        "import agenttool as at\n\n@at.tool\ndef t() -> str:\n    return 't'\n"
                    )
                for http in (["--http", "127.0.0.1:0"], []):
                    self.assertEqual(am.main(["serve", target, *http]), 0)
                    self.assertEqual(served.call_args.kwargs["state_key"], KEY)


# ---------------------------------------------------------------------------------------------
# Serve: stdio and HTTP (two workers behind a round-robin proxy)
# ---------------------------------------------------------------------------------------------


class _RoundRobinProxy:
    """A loopback HTTP proxy that hands each request to the next backend in turn, on a
    connection of its own (``Connection: close`` both ways, so a client never keeps one
    worker), and notes the JSON-RPC method and backend of each (``routed``).  It runs on a
    thread of its own until the test ends."""

    def __init__(self, case: unittest.TestCase, urls: list[str]) -> None:
        self.backends = [int(u.rsplit(":", 1)[1].split("/")[0]) for u in urls]
        self.routed: list[tuple[str, int]] = []
        self.turn = 0
        self.relays: set[asyncio.Task[None]] = set()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        case.addCleanup(self.close)
        listening = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self.relay, "127.0.0.1", 0), self.loop
        )
        self.server = listening.result(WAIT)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/mcp"

    def close(self) -> None:
        async def stop() -> None:
            self.server.close()
            for relay in self.relays:
                relay.cancel()
            await asyncio.gather(*self.relays, return_exceptions=True)
            await self.server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(WAIT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(WAIT)
        self.loop.close()

    async def relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One request to the next backend, its reply back until either side hangs up."""
        backend = self.turn % len(self.backends)
        self.turn += 1
        upstream: asyncio.StreamWriter | None = None
        relay = asyncio.current_task()
        assert relay is not None
        self.relays.add(relay)
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
            lines = head.decode("latin-1").split("\r\n")[:-2]
            fields = [ln for ln in lines[1:] if not ln.lower().startswith("connection:")]
            sizes = [
                int(ln.split(":")[1]) for ln in fields if ln.lower().startswith("content-length:")
            ]
            body = await asyncio.wait_for(reader.readexactly(sizes[0] if sizes else 0), WAIT)
            method = json.loads(body).get("method", "?") if body else lines[0].split()[0]
            self.routed.append((method, backend))
            up_reader, upstream = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", self.backends[backend]), WAIT
            )
            upstream.write("\r\n".join([lines[0], *fields, "Connection: close", "", ""]).encode())
            upstream.write(body)
            await upstream.drain()
            reply = asyncio.ensure_future(self.pump(up_reader, writer))
            hangup = asyncio.ensure_future(reader.read())  # the client's EOF (it sends no more)
            try:
                await asyncio.wait({reply, hangup}, timeout=WAIT, return_when="FIRST_COMPLETED")
            finally:
                reply.cancel()
                hangup.cancel()
                await asyncio.gather(reply, hangup, return_exceptions=True)
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            pass  # a client or backend gone: the connection ends
        finally:
            self.relays.discard(relay)
            for w in (upstream, writer):
                if w is not None:
                    w.close()

    @staticmethod
    async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while chunk := await source.read(65536):
            sink.write(chunk)
            await sink.drain()


WORKER_TOOLS = textwrap.dedent(
    """
    import os

    import agenttool as at

    HERE = os.path.dirname(os.path.abspath(__file__))
    FORM = {"type": "object", "properties": {"n": {"type": "string"}}}


    def _asking(name):
        \"\"\"A tool that notes the process of each run, then asks two names.\"\"\"

        def run(call):
            with open(os.path.join(HERE, name + ".runs"), "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\\n")
            first = at.elicit(at.Elicitation("First name?", FORM))
            last = at.elicit(at.Elicitation("Last name?", FORM))
            return at.text(" ".join(str((a.content or {}).get("n")) for a in (first, last)))

        return run


    greet = at.new_func("greet", "Greets.", None, _asking("greet"), replay=lambda a: at.Replay.SAFE)
    enrol = at.new_func("enrol", "Enrols; must not run twice.", None, _asking("enrol"))
    """
)


def _children() -> set[int]:
    """The ids of this process's child processes (Linux's /proc)."""
    mine = str(os.getpid())
    out = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                if fh.read().rsplit(")", 1)[1].split()[1] == mine:
                    out.add(int(pid))
        except OSError:  # that process has ended
            pass
    return out


@unittest.skipUnless(os.path.isdir("/proc"), "counting child processes reads /proc")
class TestQuestionsOnAnyWorker(_Fixture):
    """Two uvicorn processes serving asgi_app behind a round-robin proxy: each answer reaches
    the worker that did not ask."""

    fixture = WORKER_TOOLS
    fixture_file = "worker_tools.py"

    def setUp(self) -> None:
        self.children = _children()
        for name in ("greet.runs", "enrol.runs"):
            if os.path.exists(os.path.join(self.tmp, name)):
                os.remove(os.path.join(self.tmp, name))

    def workers(self, *keys: str | None) -> _RoundRobinProxy:
        """One uvicorn process serving asgi_app per key (``None``: no key), behind a proxy."""
        urls = [
            start_asgi_app(self, self.target, env={"AGENTTOOL_MCP_STATE_KEY": key} if key else {})
            for key in keys
        ]
        return _RoundRobinProxy(self, urls)

    def runs(self, name: str) -> list[int]:
        with open(os.path.join(self.tmp, name + ".runs"), encoding="utf-8") as fh:
            return [int(line) for line in fh.read().split()]

    def sdk_call(self, url: str, name: str) -> Any:
        """``name`` called through the SDK's client, answering "Ada" then "Lovelace": its
        text, or the JSON-RPC error as ``(code, message)``."""

        async def main() -> Any:
            async with Client(url, elicitation_callback=_answering("Ada", "Lovelace")) as c:
                try:
                    return (await c.call_tool(name, {})).content[0].text  # type: ignore[union-attr]
                except MCPError as exc:
                    return exc.error.code, exc.error.message

        return asyncio.run(main())

    def tearDown(self) -> None:
        self.doCleanups()  # the proxy and both workers, then nothing of them is left
        self.assertEqual(_children() - self.children, set())

    @_quiet("mcp")
    @_quiet("httpx2")
    def test_a_safe_tool_s_answers_land_on_the_other_worker_and_other_tools_keep_theirs(
        self,
    ) -> None:
        proxy = self.workers(KEY, KEY)
        self.assertEqual(self.sdk_call(proxy.url, "greet"), "Ada Lovelace")
        calls = [backend for method, backend in proxy.routed if method == "tools/call"]
        self.assertEqual(len(calls), 3)  # asked, answered once, answered twice
        self.assertTrue(calls[0] != calls[1] != calls[2], calls)
        self.assertEqual(len(set(self.runs("greet"))), 2)  # the tool ran in both workers
        # our own client the same way
        answers = iter(["Grace", "Hopper"])

        def elicitor(question: at.Elicitation) -> at.Answer:
            return at.Answer(at.Action.ACCEPT, {"n": next(answers)})

        with am.connect(url=proxy.url, elicitation=True, connect_timeout=WAIT) as remote:
            before = len(proxy.routed)
            out = _run_one(remote.lookup("greet"), {}, elicitor=elicitor)
            self.assertEqual(out.output, "Grace Hopper")
            later = [b for m, b in proxy.routed[before:] if m == "tools/call"]
            self.assertTrue(len(later) == 3 and later[0] != later[1] != later[2], later)
        # a tool whose replay is not SAFE: its question stays with the worker that asked
        before = len(proxy.routed)
        code, message = self.sdk_call(proxy.url, "enrol")
        self.assertEqual(code, -32602)
        self.assertIn("no longer waiting for them (requestState unknown here)", message)
        calls = [backend for method, backend in proxy.routed[before:] if method == "tools/call"]
        self.assertEqual(len(calls), 2)
        self.assertNotEqual(calls[0], calls[1])
        self.assertEqual(len(self.runs("enrol")), 1)  # never run twice

    @_quiet("mcp")
    @_quiet("httpx2")
    def test_a_worker_without_the_key_refuses_sealed_answers_naming_the_key(self) -> None:
        proxy = self.workers(None, KEY)
        code, message = self.sdk_call(proxy.url, "greet")
        self.assertEqual(
            proxy.routed[:3], [("server/discover", 0), ("tools/call", 1), ("tools/call", 0)]
        )
        self.assertEqual(code, -32602)
        self.assertIn("requestState unknown here", message)
        self.assertIn("give every worker the same AGENTTOOL_MCP_STATE_KEY", message)
        self.assertEqual(len(self.runs("greet")), 1)


if __name__ == "__main__":
    unittest.main()
