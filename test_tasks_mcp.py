"""MCP tasks (the ``io.modelcontextprotocol/tasks`` extension of the 2026-07-28 revision,
SEP-2663) both ways: the ``task`` tool property, our server's tasks on the wire (created before
the answer, polled with ``tasks/get``, cancelled with ``tasks/cancel``, kept ``task_ttl``
seconds, at most ``max_tasks``), and our client taking a task for a call.

The server runs in this process under uvicorn on 127.0.0.1 (a port the system picks); the
wire tests speak raw JSON-RPC to it.  Skips like test_agenttool_mcp where Python is older than
3.10 or the SDK is missing.  Every wait is bounded by ``WAIT``; nothing here asserts a time.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request
from typing import Any

if sys.version_info < (3, 10):  # agenttool_mcp, imported next, refuses older Pythons
    raise unittest.SkipTest("agenttool_mcp needs Python 3.10 or later (as the mcp SDK does)")

import agenttool as at
import agenttool_mcp as am
import test_agenttool_mcp as base  # a module, so its test classes do not run twice here
from test_agenttool import limit_test_time
from test_agenttool_mcp import WAIT, _quiet

limit_test_time()

TASKS = "io.modelcontextprotocol/tasks"


# ---------------------------------------------------------------------------------------------
# The tool property
# ---------------------------------------------------------------------------------------------


class TestTaskProperty(unittest.TestCase):
    def test_reader_and_option(self) -> None:
        def f() -> str:
            return "x"

        self.assertEqual(at.task_support_of(at.new("f", "F.", f)), "forbidden")
        self.assertEqual(at.task_support_of(at.new("f", "F.", f, task=True)), "optional")
        self.assertEqual(at.task_support_of(at.new("f", "F.", f, task="optional")), "optional")
        self.assertEqual(at.task_support_of(at.new("f", "F.", f, task="required")), "required")
        self.assertEqual(at.task_support_of(at.new("f", "F.", f, task=False)), "forbidden")
        self.assertIs(at.PROPERTIES["task"], at.task_support_of)

    def test_a_bad_value_fails_when_the_tool_is_made(self) -> None:
        def f() -> str:
            return "x"

        for bad in ("yes", 1, None, "forbidden "):
            with self.subTest(bad=bad), self.assertRaisesRegex(ValueError, "task must be"):
                at.new("f", "F.", f, task=bad)  # type: ignore[arg-type]

    def test_wrap_and_rename_forward_it(self) -> None:
        t = at.new("f", "F.", lambda: "x", task="required")
        self.assertEqual(at.task_support_of(at.wrap(t, t.execute)), "required")
        renamed = at.ToolSet([t]).prefixed("p").lookup("p__f")
        assert renamed is not None
        self.assertEqual(at.task_support_of(renamed), "required")


# ---------------------------------------------------------------------------------------------
# The fixture: a server in this process
# ---------------------------------------------------------------------------------------------


class _Probe:
    """What the tools saw, for the tests to wait on (each wait bounded)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.release = threading.Event()
        self.slow_runs = 0


def _tools(probe: _Probe) -> list[at.Tool]:
    @at.tool(task=True)
    def slow(steps: int = 2) -> str:
        """Reports progress, then answers."""
        probe.slow_runs += 1
        for i in range(steps):
            at.progress(f"step {i + 1}", progress=i + 1, total=steps)
        probe.release.wait(WAIT)
        return f"done after {steps}"

    @at.tool(task="required")
    def needs_task(x: int) -> str:
        """Only as a task."""
        return f"x={x}"

    @at.tool(task=True)
    def waits() -> str:
        """Waits until cancelled."""
        probe.started.set()
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if at.cancelled():
                probe.cancelled.set()
                return "cancelled"
            time.sleep(0.01)
        return "never cancelled"

    @at.tool(task=True)
    def fails() -> str:
        """A tool error."""
        raise ValueError("no good")

    @at.tool
    def plain() -> str:
        """Never a task."""
        return "plain"

    @at.tool(task=True)
    def asks() -> str:
        """Asks a question, as a task."""
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        answer = at.elicit(at.Elicitation("Go on?", schema))
        return f"{answer.action.value} {(answer.content or {}).get('ok')}"

    return [slow, needs_task, waits, fails, plain, asks]


class _Server(base._Case):
    """A server built with ``options`` serving ``_tools`` under uvicorn in a thread."""

    options: dict[str, Any] = {}

    def setUp(self) -> None:
        self.probe = _Probe()
        self.probe.release.set()
        server = am.build_server(_tools(self.probe), **self.options)
        self.http = am._http_server(server, "127.0.0.1", 0, None)
        thread = threading.Thread(target=self.http.run, daemon=True)
        thread.start()

        def stop() -> None:
            self.probe.release.set()
            self.http.should_exit = True
            thread.join(WAIT)

        self.addCleanup(stop)
        deadline = time.monotonic() + WAIT
        while not self.http.started and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertTrue(self.http.started, "the server never started")
        port = self.http.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/mcp"

    def rpc(
        self, method: str, params: dict[str, Any], *, tasks: bool = True, name: str | None = None
    ) -> dict[str, Any]:
        """One 2026-07-28 request, raw: the response object (``result`` or ``error``)."""
        caps: dict[str, Any] = {"extensions": {TASKS: {}}, "elicitation": {}} if tasks else {}
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": method,
            "params": {
                **params,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": caps,
                    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
                },
            },
        }
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": method,
        }
        named = name if name is not None else params.get("name", params.get("taskId"))
        if isinstance(named, str):
            headers["Mcp-Name"] = named
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=WAIT) as response:
                raw = response.read().decode()
        except urllib.error.HTTPError as exc:
            raw = exc.read().decode()
        for line in raw.splitlines():  # an SSE reply: its last data line is the answer
            if line.startswith("data:"):
                raw = line[5:]
        answer: dict[str, Any] = json.loads(raw)
        return answer

    def result(self, method: str, params: dict[str, Any], **kw: Any) -> dict[str, Any]:
        answer = self.rpc(method, params, **kw)
        self.assertIn("result", answer, answer)
        result: dict[str, Any] = answer["result"]
        return result

    def settled(self, task_id: str) -> dict[str, Any]:
        """``tasks/get`` until the task is terminal (bounded by ``WAIT``)."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            got = self.result("tasks/get", {"taskId": task_id})
            if got["status"] in ("completed", "failed", "cancelled"):
                return got
            time.sleep(0.02)
        self.fail(f"task {task_id} never settled")


# ---------------------------------------------------------------------------------------------
# Our server on the wire
# ---------------------------------------------------------------------------------------------


class TestServerWire(_Server):
    def test_discovery_and_definitions(self) -> None:
        caps = self.result("server/discover", {})["capabilities"]
        self.assertIn(TASKS, caps.get("extensions", {}))
        tools = {t["name"]: t for t in self.result("tools/list", {})["tools"]}
        meta = {n: t.get("_meta", {}).get(am.TOOL_META_KEY, {}) for n, t in tools.items()}
        self.assertEqual(meta["slow"]["task"], "optional")
        self.assertEqual(meta["needs_task"]["task"], "required")
        self.assertNotIn("task", meta["plain"])

    def test_a_task_created_polled_and_completed(self) -> None:
        self.probe.release.clear()
        created = self.result("tools/call", {"name": "slow", "arguments": {"steps": 2}})
        self.assertEqual(created["resultType"], "task")
        for key in ("taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"):
            self.assertIn(key, created)
        for key in ("result", "error", "requestState", "ttl", "pollInterval", "task"):
            self.assertNotIn(key, created)
        self.assertIsInstance(created["ttlMs"], int)
        # created before the answer: a tasks/get right away finds it, still working
        got = self.result("tasks/get", {"taskId": created["taskId"]})
        self.assertEqual((got["taskId"], got["status"]), (created["taskId"], "working"))
        self.assertEqual(got["resultType"], "complete")
        self.assertNotIn("result", got)
        self.probe.release.set()
        done = self.settled(created["taskId"])
        self.assertEqual(done["status"], "completed")
        self.assertEqual(done["result"]["content"][0]["text"], "done after 2")
        self.assertFalse(done["result"].get("isError", False))
        # cancelling a task that ended is the same empty ack, and changes nothing
        ack = self.result("tasks/cancel", {"taskId": created["taskId"]})
        self.assertEqual(ack, {"resultType": "complete", **({"_meta": ack["_meta"]})})
        self.assertEqual(self.settled(created["taskId"])["status"], "completed")

    def test_a_tool_error_completes_with_is_error(self) -> None:
        created = self.result("tools/call", {"name": "fails", "arguments": {}})
        done = self.settled(created["taskId"])
        self.assertEqual(done["status"], "completed")
        self.assertTrue(done["result"]["isError"])
        self.assertIn("no good", done["result"]["content"][0]["text"])

    def test_cancel_reaches_the_tool(self) -> None:
        created = self.result("tools/call", {"name": "waits", "arguments": {}})
        self.assertTrue(self.probe.started.wait(WAIT))
        ack = self.result("tasks/cancel", {"taskId": created["taskId"]})
        self.assertEqual(ack["resultType"], "complete")
        self.assertNotIn("status", ack)
        self.assertTrue(self.probe.cancelled.wait(WAIT), "the tool never saw cancelled()")
        self.assertEqual(self.settled(created["taskId"])["status"], "cancelled")

    def test_plain_call_of_an_optional_tool_without_the_extension(self) -> None:
        plain = self.result("tools/call", {"name": "slow", "arguments": {"steps": 1}}, tasks=False)
        self.assertEqual(plain["resultType"], "complete")
        self.assertNotIn("taskId", plain)
        self.assertEqual(plain["content"][0]["text"], "done after 1")
        # a tool that is never a task stays plain for a client that takes tasks
        self.assertNotIn("taskId", self.result("tools/call", {"name": "plain", "arguments": {}}))

    def test_required_task_refused_without_the_extension(self) -> None:
        answer = self.rpc("tools/call", {"name": "needs_task", "arguments": {"x": 1}}, tasks=False)
        self.assertEqual(answer["error"]["code"], -32021, answer)
        self.assertIn(TASKS, answer["error"]["data"]["requiredCapabilities"]["extensions"])
        self.assertIn("needs_task", answer["error"]["message"])

    def test_errors_of_the_task_methods(self) -> None:
        unknown = self.rpc("tasks/get", {"taskId": "nope"})
        self.assertEqual(unknown["error"]["code"], -32602)
        self.assertEqual(self.rpc("tasks/cancel", {"taskId": "nope"})["error"]["code"], -32602)
        gated = self.rpc("tasks/get", {"taskId": "nope"}, tasks=False)
        self.assertEqual(gated["error"]["code"], -32021)
        for removed in ("tasks/result", "tasks/list"):
            self.assertEqual(self.rpc(removed, {"taskId": "x"})["error"]["code"], -32601)
        created = self.result("tools/call", {"name": "needs_task", "arguments": {"x": 2}})
        mismatch = self.rpc("tasks/get", {"taskId": created["taskId"]}, name="other")
        self.assertEqual(mismatch["error"]["code"], -32020)


class TestServerLimits(_Server):
    options = {"max_tasks": 1, "task_ttl": 0.5}  # read in time under load

    def test_ttl_then_gone_and_the_bound(self) -> None:
        created = self.result("tools/call", {"name": "needs_task", "arguments": {"x": 3}})
        self.assertEqual(created["ttlMs"], 500)
        self.assertEqual(self.settled(created["taskId"])["result"]["content"][0]["text"], "x=3")
        # kept task_ttl seconds after it ended, then forgotten: tasks/get says unknown
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            answer = self.rpc("tasks/get", {"taskId": created["taskId"]})
            if "error" in answer:
                break
            time.sleep(0.02)
        self.assertEqual(answer["error"]["code"], -32602)
        # one task at most: a second while the first runs is refused, saying the limit
        self.probe.release.clear()
        first = self.result("tools/call", {"name": "slow", "arguments": {}})
        self.assertEqual(first["resultType"], "task")
        second = self.result("tools/call", {"name": "slow", "arguments": {}})
        self.assertTrue(second["isError"], second)
        self.assertIn("max_tasks", second["content"][0]["text"])
        self.probe.release.set()


class TestServerQuestions(_Server):
    options = {"abandon_after": 0.05}

    def test_a_question_waits_as_input_required_then_expires(self) -> None:
        created = self.result("tools/call", {"name": "asks", "arguments": {}})
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            got = self.result("tasks/get", {"taskId": created["taskId"]})
            if got["status"] != "working":
                break
            time.sleep(0.01)
        # asked, it waits for tasks/update; unanswered past abandon_after, it is cancelled
        self.assertIn(got["status"], ("input_required", "cancelled"))
        if got["status"] == "input_required":
            (request,) = got["inputRequests"].values()
            self.assertEqual(request["method"], "elicitation/create")
            self.assertEqual(request["params"]["message"], "Go on?")
        self.assertEqual(self.settled(created["taskId"])["status"], "cancelled")


# ---------------------------------------------------------------------------------------------
# Our client
# ---------------------------------------------------------------------------------------------


class TestClient(_Server):
    @_quiet("mcp")
    def test_a_task_call_returns_its_result_with_progress(self) -> None:
        with am.connect(url=self.url) as remote:
            seen: list[str] = []
            result = remote.call("slow", {"steps": 2})
            self.assertEqual(result.output, "done after 2")
            # progress reaches the caller (what the task said last, on each poll)
            outcome = base._run_one(remote.lookup("slow"), {"steps": 3})
            seen = [p for p in outcome.progress]
            self.assertEqual(outcome.result.output, "done after 3")
            self.assertTrue(seen, "no progress was forwarded")
            self.assertEqual(remote.call("needs_task", {"x": 5}).output, "x=5")
            # the server's word on each tool, read as the tool's own property
            needs, plain = remote.lookup("needs_task"), remote.lookup("plain")
            assert needs is not None and plain is not None
            self.assertEqual(at.task_support_of(needs), "required")
            self.assertEqual(at.task_support_of(plain), "forbidden")
            with self.assertRaisesRegex(am.MCPToolError, "no good"):
                remote.call("fails")

    @_quiet("mcp")
    def test_a_question_of_a_task_reaches_the_elicitor(self) -> None:
        asked: list[str] = []

        def elicitor(question: at.Elicitation) -> at.Answer:
            asked.append(question.message)
            return at.Answer(at.Action.ACCEPT, {"ok": True})

        with am.connect(url=self.url, elicitation=True) as remote:
            outcome = base._run_one(remote.lookup("asks"), {}, elicitor=elicitor)
        self.assertEqual(outcome.output, "accept True")
        self.assertEqual(asked, ["Go on?"])

    @_quiet("mcp")
    def test_cancelling_the_call_cancels_the_task(self) -> None:
        with am.connect(url=self.url) as remote:
            cancel = threading.Event()
            events: list[at.Event] = []

            def run() -> None:
                job = at.Job(remote.lookup("waits"), at.Call("c1", {}))
                events.extend(at.Executor().execute([job], cancel=cancel))

            thread = threading.Thread(target=run)
            thread.start()
            self.assertTrue(self.probe.started.wait(WAIT))
            cancel.set()
            self.assertTrue(self.probe.cancelled.wait(WAIT), "the tool never saw cancelled()")
            thread.join(WAIT)
            self.assertFalse(thread.is_alive())
            final = [e for e in events if e.final]
            self.assertEqual(len(final), 1)
            self.assertIsNotNone(final[0].error)


CRASHING_HOST = """
import json, sys
import agenttool as at, agenttool_mcp as am

url, path = sys.argv[1], sys.argv[2]
with am.connect(url=url) as remote:
    tools = at.ToolSet(remote.tools())
    turn = [{"type": "function_call", "call_id": "c1", "name": "slow", "arguments": "{}"}]
    tools.run(turn, journal=at.Journal(path), run="turn-1")
"""


class TestJournal(_Server):
    """A journaled call that became a task keeps the task id as a record
    (``agenttool_mcp:task``), so a run resumed after a crash polls that task for its result
    rather than calling again (which a tool whose replay is unknown must not)."""

    @_quiet("mcp")
    def test_a_resumed_run_polls_the_task(self) -> None:
        import os
        import signal
        import subprocess
        import sys
        import tempfile

        folder = tempfile.mkdtemp(prefix="tasks-journal-")
        self.addCleanup(__import__("shutil").rmtree, folder, True)
        path = os.path.join(folder, "agent.db")
        script = os.path.join(folder, "host.py")
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(CRASHING_HOST)
        self.probe.release.clear()  # the task runs until the host has died
        child = subprocess.Popen(
            [sys.executable, script, self.url, path],
            env={**os.environ, **base.CHILD_ENV},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.addCleanup(child.wait, WAIT)
        self.addCleanup(lambda: child.poll() is None and os.killpg(child.pid, signal.SIGKILL))
        journal = at.Journal(path)
        self.addCleanup(journal.close)
        deadline, records = time.monotonic() + WAIT, []
        while time.monotonic() < deadline and not records and child.poll() is None:
            try:
                records = [r for r in journal.records("turn-1", "c1") if r.ns == am.TASK_RECORD]
            except at.JournalError:
                records = []  # the host has not written its schema yet
            time.sleep(0.02)
        self.assertTrue(records, "the host never journaled its task")
        self.assertEqual(json.loads(records[0].data)["tool"], "slow")
        os.killpg(child.pid, signal.SIGKILL)  # the host dies while the task runs
        child.wait(WAIT)
        self.probe.release.set()
        with am.connect(url=self.url) as remote:
            tools = at.ToolSet(remote.tools())
            turn = [{"type": "function_call", "call_id": "c1", "name": "slow", "arguments": "{}"}]
            out = tools.run(turn, journal=journal, run="turn-1")
        self.assertEqual([o["output"] for o in out], ["done after 2"])
        self.assertEqual(out.uncertain, [])
        self.assertEqual(self.probe.slow_runs, 1)  # polled, not called again


STDIO_TOOLS = """
import agenttool as at


@at.tool(task="required")
def needs_task(x: int) -> str:
    \"\"\"Only as a task.\"\"\"
    at.progress("working on it", progress=1, total=2)
    return f"x={x}"
"""


class TestStdio(base._Fixture):
    fixture = STDIO_TOOLS
    fixture_file = "task_tools.py"

    @_quiet("mcp")
    def test_a_required_task_over_stdio(self) -> None:
        remote = self.stdio()
        self.assertEqual(remote.protocol_version, "2026-07-28")
        outcome = base._run_one(remote.lookup("needs_task"), {"x": 7})
        self.assertEqual(outcome.output, "x=7")  # refused with -32021 unless it ran as a task
        self.assertEqual([p.output for p in outcome.progress], ["working on it"])


if __name__ == "__main__":
    unittest.main()
