"""Claims over MCP, as the Go module's v0.0.20 carries them: ``execution/facts``, its capability and
the tool ``_meta``, served by ``build_server`` and read by ``connect(claims=True)``, both ways
against our own server and client, with the wire checked byte for byte against the Go
module's documented examples (``mcpserver/facts.go``).

Skips, saying why, where Python is older than 3.10 or the ``mcp`` SDK is absent (under
CI=true a missing SDK fails), as test_agenttool_mcp.py does.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import unittest
from typing import Any

import agenttool as at
from test_agenttool import limit_test_time

if sys.version_info >= (3, 10):  # test_agenttool_mcp imports agenttool_mcp, which needs 3.10
    from test_agenttool_mcp import PYPATH, SKIP, _Case
else:
    SKIP = "agenttool_mcp needs Python 3.10+ (the mcp SDK 2.x does)"

    class _Case(unittest.TestCase):
        @classmethod
        def setUpClass(cls) -> None:
            raise unittest.SkipTest(SKIP)


limit_test_time()

if not SKIP:
    import mcp.types as mt
    from mcp import Client
    from pydantic import TypeAdapter

    import agenttool_mcp as am

HERE = os.path.dirname(os.path.abspath(__file__))


class Claimer:
    """Tools that make claims and count what they are asked; none of them may run."""

    def __init__(self) -> None:
        self.asked = 0
        self.executed = 0
        self.lock = threading.Lock()

    def never(self, call: at.Call) -> str:
        with self.lock:
            self.executed += 1
        return "ran"

    def counted(self, fn: Any) -> Any:
        def facts(args: dict[str, Any]) -> at.Facts:
            with self.lock:
                self.asked += 1
            return fn(args)  # type: ignore[no-any-return]

        return facts

    def tool(self, name: str, **options: Any) -> at.Tool:
        return at.new_func(name, name, {"type": "object"}, self.never, **options)

    def shell(self) -> at.Tool:
        def facts(args: dict[str, Any]) -> at.Facts:
            return at.Facts(
                [
                    at.FactCall("read", {"path": ".env"}, "read .env"),
                    at.FactCall("write", {"path": "out/x"}),
                    at.FactCall("", args),
                ],
                rewrite={"command": args["command"], "stamp": "abc"},
            )

        return self.tool("sh", facts=self.counted(facts), replay=at.Replay.SAFE)

    def tools(self) -> list[at.Tool]:
        def broken(args: dict[str, Any]) -> at.Facts:
            raise LookupError("cannot read the command")

        return [
            self.shell(),
            self.tool("nothing", facts=self.counted(lambda a: at.Facts([]))),
            self.tool("itself", facts=self.counted(lambda a: at.Facts())),
            self.tool("broken", facts=self.counted(broken)),
            self.tool("session", facts=self.counted(self.needs_session)),
            self.tool("keyed", replay=at.Replay.KEYED),
            self.tool("plain"),
            Bare("bare"),
        ]

    @staticmethod
    def needs_session(args: dict[str, Any]) -> at.Facts:
        if am.current_session() is None:
            raise RuntimeError("no session")
        return at.Facts()


class Bare:
    """A tool that declares nothing at all, not even replay."""

    description = "bare"
    parameters = None

    def __init__(self, name: str) -> None:
        self.name = name

    def execute(self, call: at.Call) -> at.Result:
        return at.text("ran")


def count_requests(server: Any) -> list[int]:
    """Count the ``execution/facts`` requests ``server`` receives."""
    entry = server._request_handlers[am.FACTS_METHOD]
    seen = [0]

    async def counted(ctx: Any, params: Any) -> Any:
        seen[0] += 1
        return await entry.handler(ctx, params)

    server.add_request_handler(am.FACTS_METHOD, entry.params_type, counted)
    return seen


async def raw_facts(server: Any, calls: list[dict[str, Any]], mode: str = "legacy") -> Any:
    """Send ``execution/facts`` with the SDK's own client; the server's result as JSON."""
    params = am._facts_params()
    async with Client(server, mode=mode) as client:
        request: Any = mt.Request[params, str](method=am.FACTS_METHOD, params=params(calls=calls))  # type: ignore[valid-type]
        return await client.session.send_request(request, TypeAdapter(dict[str, Any]))  # type: ignore[type-var]


# ---------------------------------------------------------------------------------------------
# Serve: the server and its calls
# ---------------------------------------------------------------------------------------------


class TestServedClaims(_Case):
    def setUp(self) -> None:
        self.c = Claimer()
        self.server = am.build_server(self.c.tools())

    def test_the_capability_is_advertised_in_both_eras(self) -> None:
        async def caps(mode: str) -> Any:
            async with Client(self.server, mode=mode) as client:
                return client.server_capabilities.experimental

        for mode in ("legacy", "auto"):  # auto discovers, and speaks 2026-07-28 here
            self.assertEqual(asyncio.run(caps(mode)), {am.FACTS_CAPABILITY: {}}, mode)

    def test_the_wire_is_the_go_modules_byte_for_byte(self) -> None:
        self.assertEqual(am.FACTS_METHOD, "execution/facts")
        self.assertEqual(am.FACTS_CAPABILITY, "io.github.christopherdavenport.agenttool/facts")
        self.assertEqual(am.TOOL_META_KEY, "io.github.christopherdavenport.agenttool/tool")
        # the request and answer documented in mcpserver/facts.go, compact as Go writes them
        asked = json.loads(
            '{"calls": [{"name": "sh", "arguments": {"command": "cat .env > out/x"}}]}'
        )
        got = asyncio.run(raw_facts(self.server, asked["calls"]))
        self.assertEqual(
            json.dumps({"results": got["results"]}, separators=(",", ":")),
            '{"results":[{"facts":{"calls":['
            '{"tool":"read","args":{"path":".env"},"text":"read .env"},'
            '{"tool":"write","args":{"path":"out/x"}},'
            '{"tool":"","args":{"command":"cat .env > out/x"}}],'
            '"rewrite":{"command":"cat .env > out/x","stamp":"abc"}},"replay":"safe"}]}',
        )

    def test_each_call_is_answered_in_order_and_no_tool_runs(self) -> None:
        names = ["nothing", "itself", "broken", "nope", "keyed", "plain", "bare", "session"]
        for mode in ("legacy", "2026-07-28"):
            got = asyncio.run(raw_facts(self.server, [{"name": n} for n in names], mode))
            self.assertEqual(
                got["results"],
                [
                    {"facts": {"calls": []}, "replay": "unknown"},
                    {"facts": {"calls": None}, "replay": "unknown"},
                    {"error": "cannot read the command", "replay": "unknown"},
                    {"error": 'unknown tool "nope"', "replay": "unknown"},
                    {"replay": "unknown"},  # KEYED crosses as unknown: no key on MCP
                    {"replay": "unknown"},
                    {"replay": "unknown"},
                    {"facts": {"calls": None}, "replay": "unknown"},  # the session was there
                ],
                mode,
            )
        self.assertEqual(self.c.executed, 0)
        self.assertEqual(self.c.asked, 8)  # nothing, itself, broken, session, in each era

    def test_a_claims_error_follows_the_servers_error_policy(self) -> None:
        server = am.build_server(self.c.tools(), errors="redacted")
        got = asyncio.run(raw_facts(server, [{"name": "broken"}]))
        self.assertEqual(got["results"], [{"error": 'tool "broken" failed', "replay": "unknown"}])

    def test_arguments_that_are_not_an_object_are_an_error_for_that_call(self) -> None:
        got = asyncio.run(raw_facts(self.server, [{"name": "sh", "arguments": [1]}]))
        self.assertEqual(got["results"][0]["error"], "invalid arguments: expected a JSON object")

    def test_the_tool_meta_holds_only_true_or_non_empty_fields(self) -> None:
        tools = [
            *self.c.tools(),
            self.c.tool("seq", sequential=True, resource="ignored:1"),
            self.c.tool("res", resource="shell:session"),
            self.c.tool("ro", annotations=at.Annotations(read_only=True)),
            self.c.tool("rw", annotations=at.Annotations(read_only=False)),
        ]

        async def listed() -> dict[str, Any]:
            async with Client(am.build_server(tools)) as client:
                return {t.name: t.meta for t in (await client.list_tools()).tools}

        meta = asyncio.run(listed())
        key = am.TOOL_META_KEY
        self.assertEqual(meta["sh"], {key: {"facts": True, "replay": True}})
        self.assertEqual(meta["plain"], {key: {"replay": True}})
        self.assertEqual(meta["seq"], {key: {"replay": True, "sequential": True}})
        self.assertEqual(meta["res"], {key: {"replay": True, "resource": "shell:session"}})
        self.assertEqual(meta["ro"], {key: {"replay": True, "readOnly": True}})
        self.assertEqual(meta["rw"], {key: {"replay": True}})
        self.assertIsNone(meta["bare"])  # nothing to say: no entry at all

    def test_null_calls_cross_a_real_transport_as_null(self) -> None:
        target = os.path.join(HERE, "testdata", "facts_tools.py")
        request = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "execution/facts", "params": {
                "calls": [{"name": "itself"}, {"name": "nothing"}]}},
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": PYPATH}
        proc = subprocess.Popen(
            [sys.executable, "-m", "agenttool_mcp", "serve", target],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            for message in request:
                proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            lines = [proc.stdout.readline(), proc.stdout.readline()]
        finally:
            proc.stdin.close()
            proc.wait(30)
            proc.stdout.close()
        init, answer = (json.loads(line) for line in lines)
        self.assertEqual(init["result"]["capabilities"]["experimental"], {am.FACTS_CAPABILITY: {}})
        self.assertIn(
            '"results":[{"facts":{"calls":null},"replay":"unknown"},'
            '{"facts":{"calls":[]},"replay":"unknown"}]',
            lines[1].replace(" ", ""),
        )
        self.assertEqual(answer["id"], 2)


# ---------------------------------------------------------------------------------------------
# Consume: a server's tools as agenttool tools
# ---------------------------------------------------------------------------------------------


class TestClaimsClient(_Case):
    def setUp(self) -> None:
        self.c = Claimer()
        self.server = am.build_server(self.c.tools())
        self.requests = count_requests(self.server)

    def connect(self, **kw: Any) -> am.Remote:
        remote = am.connect(server=self.server, **kw)
        self.addCleanup(remote.close)
        return remote

    def claims_of(self, remote: am.Remote, name: str, args: Any) -> tuple[at.Facts, bool]:
        tool = remote.lookup(name)
        assert tool is not None
        return at.facts_of(tool, args)

    def test_remote_tools_claim_what_the_server_claims(self) -> None:
        for era in ("legacy", "auto"):  # auto speaks 2026-07-28, learning the capability
            remote = self.connect(claims=True, era=era)
            self.assertEqual(remote.protocol_version == "2026-07-28", era == "auto")
            facts, claims = self.claims_of(remote, "sh", {"command": "cat .env > out/x"})
            self.assertTrue(claims)
            self.assertEqual(
                facts,
                at.Facts(
                    [
                        at.FactCall("read", {"path": ".env"}, "read .env"),
                        at.FactCall("write", {"path": "out/x"}),
                        at.FactCall("", {"command": "cat .env > out/x"}),
                    ],
                    rewrite={"command": "cat .env > out/x", "stamp": "abc"},
                ),
            )
            self.assertEqual(self.claims_of(remote, "nothing", {}), (at.Facts([]), True))
            self.assertEqual(self.claims_of(remote, "itself", {}), (at.Facts(), True))
            with self.assertRaisesRegex(am.RemoteError, "^cannot read the command$"):
                self.claims_of(remote, "broken", {})
            self.assertEqual(self.claims_of(remote, "session", {}), (at.Facts(), True))
            for name in ("keyed", "plain", "bare"):
                tool = remote.lookup(name)
                assert tool is not None
                self.assertFalse(at.is_factual(tool), name)
                self.assertEqual(at.facts_of(tool, {}), (at.Facts(), False))
        self.assertEqual(self.c.executed, 0)

    def test_replay_is_the_servers_answer_safe_or_unknown(self) -> None:
        remote = self.connect(claims=True)
        expected = {
            "sh": at.Replay.SAFE,
            "keyed": at.Replay.UNKNOWN,  # the key does not cross MCP
            "plain": at.Replay.UNKNOWN,
            "bare": at.Replay.UNKNOWN,
        }
        for name, replay in expected.items():
            tool = remote.lookup(name)
            assert tool is not None
            self.assertIs(at.replay_of(tool, {"command": "ls"}), replay, name)
        self.assertEqual(self.c.executed, 0)

    def test_a_batch_is_one_request_answered_as_the_tools_answer_one_at_a_time(self) -> None:
        remote = self.connect(claims=True, prefix="x")
        calls: list[tuple[str, Any]] = [
            ("x__sh", {"command": "ls"}),
            ("x__bare", None),
            ("x__broken", "{}"),
            ("sh", {}),  # not this remote's name for it
            ("x__nothing", {}),
            ("x__keyed", {}),
        ]
        before = self.requests[0]
        got = remote.facts(calls)
        self.assertEqual(self.requests[0] - before, 1)
        self.assertTrue(got[0].claimed and got[0].error is None)
        self.assertEqual(len(got[0].facts.calls or []), 3)
        self.assertIs(got[0].replay, at.Replay.SAFE)
        self.assertEqual(got[1], am.FactsAnswer())
        self.assertTrue(got[2].claimed)
        self.assertEqual(str(got[2].error), "cannot read the command")
        self.assertTrue(got[3].claimed)
        self.assertEqual(str(got[3].error), 'mcp: no tool "sh"')
        self.assertEqual(got[4], am.FactsAnswer(claimed=True, facts=at.Facts([])))
        self.assertEqual(got[5], am.FactsAnswer())
        for (name, args), answer in zip(calls, got):
            tool = remote.lookup(name)
            if tool is None:
                continue
            decoded = json.loads(args) if isinstance(args, str) else args or {}
            if answer.error is not None:
                with self.assertRaises(am.RemoteError):
                    at.facts_of(tool, decoded)
            else:
                self.assertEqual(at.facts_of(tool, decoded), (answer.facts, answer.claimed))
            self.assertIs(at.replay_of(tool, decoded), answer.replay)

    def test_a_batch_of_calls_that_claim_nothing_sends_nothing(self) -> None:
        remote = self.connect(claims=True)
        before = self.requests[0]
        self.assertEqual(remote.facts([("bare", {}), ("bare", None)]), [am.FactsAnswer()] * 2)
        self.assertEqual(self.requests[0], before)

    def test_without_claims_no_claim_is_trusted_and_nothing_is_asked(self) -> None:
        remote = self.connect()
        tool = remote.lookup("sh")
        assert tool is not None
        self.assertFalse(at.is_factual(tool))
        self.assertIs(at.replay_of(tool, {}), at.Replay.UNKNOWN)
        self.assertEqual(remote.facts([("sh", {})]), [am.FactsAnswer()])
        self.assertEqual(self.requests[0], 0)

    def test_a_server_without_the_capability_is_never_asked(self) -> None:
        from mcp.server.lowlevel import Server

        listed = am.build_server(self.c.tools())

        async def list_tools(ctx: Any, params: Any) -> Any:
            return mt.ListToolsResult(
                tools=[e.definition for e in listed._agenttool_state.entries.values()]  # type: ignore[attr-defined]
            )

        old = Server("old", on_list_tools=list_tools)  # marks its tools, answers no facts
        with am.connect(server=old, claims=True) as remote:
            tool = remote.lookup("sh")
            assert tool is not None
            self.assertFalse(at.is_factual(tool))
            self.assertIs(at.replay_of(tool, {}), at.Replay.UNKNOWN)
            self.assertEqual(remote.facts([("sh", {})]), [am.FactsAnswer()])
        with am.connect(server=self.server, claims=True, era="2026-07-28") as remote:
            tool = remote.lookup("sh")  # a forced era discovers no capability
            assert tool is not None
            self.assertFalse(at.is_factual(tool))
        self.assertEqual(self.c.asked, 0)
        self.assertEqual(self.requests[0], 0)

    def test_the_sequential_and_resource_meta_are_read_without_claims(self) -> None:
        server = am.build_server(
            [self.c.tool("seq", sequential=True), self.c.tool("res", resource="shell:session")]
        )
        with am.connect(server=server) as remote:
            seq, res = remote.lookup("seq"), remote.lookup("res")
            assert seq is not None and res is not None
            self.assertTrue(at.is_sequential(seq))
            self.assertEqual(at.resource_of(res), "shell:session")

    def test_an_approver_decides_on_the_servers_facts_and_the_rewrite_runs_there(self) -> None:
        ran: list[dict[str, Any]] = []

        def run(call: at.Call) -> str:
            ran.append(dict(call.args))  # type: ignore[arg-type]
            return "ok"

        def facts(args: dict[str, Any]) -> at.Facts:
            return at.Facts([at.FactCall("rm", {"path": "/etc/hosts"}, "deletes /etc/hosts")],
                            rewrite={**args, "resolved": True})  # fmt: skip

        server = am.build_server([at.new_func("sh", "Run.", {"type": "object"}, run, facts=facts)])
        seen: list[at.Job] = []

        def policy(job: at.Job) -> Any:
            seen.append(job)
            assert job.facts is not None and job.facts.calls is not None
            return True if job.facts.calls[0].text == "deletes /etc/hosts" else "no"

        with am.connect(server=server, claims=True) as remote:
            tool = remote.lookup("sh")
            assert tool is not None
            asking = at.wrap(tool, tool.execute)
            asking.needs_approval = True  # type: ignore[attr-defined]  # the host's policy
            job = at.Job(asking, at.Call("c1", '{"command": "rm hosts"}'))
            event = [e for e in at.Executor(approver=policy).execute([job]) if e.final][0]
        assert event.result is not None, event.error
        self.assertEqual(event.result.output, "ok")
        self.assertEqual(seen[0].facts.calls[0].text, "deletes /etc/hosts")  # type: ignore[union-attr,index]
        self.assertEqual(ran, [{"command": "rm hosts", "resolved": True}])

    def test_a_closed_remote_fails_its_claims(self) -> None:
        remote = am.connect(server=self.server, claims=True)
        tool = remote.lookup("sh")
        assert tool is not None
        remote.close()
        with self.assertRaisesRegex(am.RemoteError, "execution/facts: mcp: connection closed"):
            at.facts_of(tool, {"command": "ls"})
        self.assertIs(at.replay_of(tool, {}), at.Replay.UNKNOWN)


# ---------------------------------------------------------------------------------------------
# Consume: the connection
# ---------------------------------------------------------------------------------------------


class TestAsyncClaims(_Case):
    def test_async_remote_facts_batches_on_the_callers_loop(self) -> None:
        c = Claimer()
        server = am.build_server(c.tools())
        requests = count_requests(server)

        async def main() -> list[Any]:
            async with am.aconnect(server=server, claims=True) as remote:
                return await remote.facts([("sh", {"command": "ls"}), ("nothing", {})])

        got = asyncio.run(main())
        self.assertEqual(requests[0], 1)
        self.assertTrue(got[0].claimed)
        self.assertEqual(got[1].facts, at.Facts([]))


if __name__ == "__main__":
    unittest.main()
