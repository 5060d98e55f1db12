"""Rules of agenttool that no other test held: each was broken by hand with the rest of the
suite still passing, and each test here fails with its break.

Standard library only, runnable as ``python -m unittest test_rules`` with nothing installed.
Whatever could hang is bounded (a subprocess with a timeout, joins and waits with a bound), so
a broken rule fails instead; nothing asserts how long anything took.
"""

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import unittest
from typing import Annotated, Any, Callable, Optional, Union

import agenttool as at

HERE = os.path.dirname(os.path.abspath(__file__))

# A generous bound for what should happen at once: reached only when a rule is broken.
BOUND = 20.0


def wait_for(predicate: Callable[[], object], seconds: float = BOUND) -> bool:
    """Whether ``predicate`` came true within ``seconds`` (looked at every 10 ms)."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def seen(event: at.Event) -> Any:
    """What the model reads of a final event."""
    if event.error is not None:
        return at.error_result(event.error).output
    assert event.result is not None
    return event.result.output


def run_one(
    t: at.Tool, args: Any = None, executor: Optional[at.Executor] = None
) -> tuple[Optional[at.Result], Optional[BaseException]]:
    """``(result, error)`` of one call of ``t`` run by an executor."""
    results, errors = (executor or at.Executor()).results([at.Job(t, at.Call("1", args or {}))])
    return results[0], errors[0]


def read(t: at.Tool, args: Any = None, executor: Optional[at.Executor] = None) -> Any:
    """What the model reads of one call of ``t`` run by an executor: its output, or
    ``Error: ...``."""
    result, error = run_one(t, args, executor)
    if error is not None:
        return at.error_result(error).output
    assert result is not None
    return result.output


def in_thread(target: Callable[[], object]) -> threading.Thread:
    """``target`` started on a daemon thread (joined by the test, with a bound)."""
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def run_python(test: unittest.TestCase, code: str, timeout: float = 120.0) -> str:
    """Run ``code`` in a fresh interpreter beside this module; its standard output, the test
    failing (not hanging) when it does not finish or exits with an error."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        test.fail(f"the child did not finish within {timeout:g} s: {exc.stdout!r} {exc.stderr!r}")
    test.assertEqual(done.returncode, 0, done.stdout + done.stderr)
    return done.stdout


def call_item(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A Responses ``function_call`` item, as a provider sends it."""
    arguments = json.dumps(args)
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


@at.tool
def query(sql: str) -> str:
    """Run a query."""
    if "drop" in sql.lower():
        raise at.ToolError("read-only: use SELECT")
    raise ConnectionError("cannot reach postgres://admin:hunter2@db/prod")


QUERIES = [
    call_item("1", "query", {"sql": "select 1"}),
    call_item("2", "query", {"sql": "DROP t"}),
]


# ---------------------------------------------------------------------------------------------
# Messages: what the model reads of a value, cut to size
# ---------------------------------------------------------------------------------------------


class TestMessagePaths(unittest.TestCase):
    def test_a_path_is_cut_at_600_characters(self) -> None:
        """The path a validation message names is cut at 600 characters, saying how many
        more there were."""
        keys = [f"segment_{i:012d}" for i in range(40)]
        value: Any = 1
        for key in reversed(keys):
            value = {key: value}
        path = ".".join(keys)
        self.assertGreater(len(path), 600)
        check = at.validator({"type": "object", "additionalProperties": {"$ref": "#"}})
        with self.assertRaises(at.ValidationError) as caught:
            check.validate(value)
        message = str(caught.exception)
        cut = f"{path[:597]}... ({len(path) - 597} more characters): expected object"
        self.assertEqual(message, f"invalid arguments: {cut}, got 1")


# ---------------------------------------------------------------------------------------------
# Failures: the one message the model sees
# ---------------------------------------------------------------------------------------------


class TestMaxOutput(unittest.TestCase):
    def test_exactly_the_limit_is_not_cut(self) -> None:
        """An output (text, or text parts) and a failure message of exactly ``max_output``
        characters reach the model whole, with no ``full_output``."""

        @at.tool(max_output=10)
        def ten() -> str:
            return "x" * 10

        @at.tool(max_output=10)
        def parts() -> at.Result:
            return at.parts({"type": "text", "text": "x" * 6}, {"type": "text", "text": "y" * 4})

        @at.tool(max_output=10)
        def fails() -> str:
            raise ValueError("e" * 10)

        result, _ = run_one(ten)
        assert result is not None
        self.assertEqual(result.output, "x" * 10)
        self.assertIsNone(result.full_output)
        result, _ = run_one(parts)
        assert result is not None
        self.assertEqual([p["text"] for p in result.output], ["x" * 6, "y" * 4])
        self.assertIsNone(result.full_output)
        self.assertEqual(read(fails), "Error: " + "e" * 10)

    def test_a_cut_keeps_the_first_and_last_halves_the_head_taking_the_odd_character(
        self,
    ) -> None:
        """A cut output keeps the first and last halves of the limit around the marker; an
        odd limit gives the head the extra character."""
        text = "".join(chr(ord("a") + i % 26) for i in range(100))

        def cut(limit: int) -> Any:
            t = at.new("cut", "Cut.", lambda: text, max_output=limit)
            result, _ = run_one(t)
            assert result is not None
            self.assertEqual(result.full_output, text)
            return result.output

        odd = cut(11)
        self.assertTrue(odd.startswith(text[:6] + "\n["), odd)
        self.assertTrue(odd.endswith("]\n" + text[-5:]), odd)
        even = cut(10)
        self.assertTrue(even.startswith(text[:5] + "\n["), even)
        self.assertTrue(even.endswith("]\n" + text[-5:]), even)

    def test_full_output_is_set_only_when_something_was_cut(self) -> None:
        """``full_output`` stays ``None`` for an output within the limit (text or parts) and
        holds the whole output once something was cut."""

        def limited(value: Any, limit: int) -> at.Result:
            t = at.new("out", "Out.", lambda: value, max_output=limit, output_schema=False)
            result, error = run_one(t)
            self.assertIsNone(error)
            assert result is not None
            return result

        self.assertIsNone(limited("short", 10).full_output)
        self.assertIsNone(limited("x" * 10, 10).full_output)
        two = at.parts({"type": "text", "text": "ab"}, {"type": "text", "text": "cd"})
        self.assertIsNone(limited(two, 4).full_output)
        self.assertEqual(limited("x" * 11, 10).full_output, "x" * 11)
        over = limited(at.parts({"type": "text", "text": "abc"}, {"type": "text", "text": "de"}), 4)
        self.assertEqual([p["text"] for p in over.full_output], ["abc", "de"])


class TestErrorPolicy(unittest.TestCase):
    def test_a_cancellation_is_shown_under_every_policy(self) -> None:
        """A cancellation the library decided (an ``async def`` tool's task cancelled under
        the synchronous API) reaches the model as such, whatever the executor's policy."""
        policies: list[Any] = ["redacted", lambda exc: "the policy's words"]
        for errors in policies:
            with self.subTest(errors=errors):
                error = self.cancelled_async_call(at.Executor(errors=errors))
                self.assertIsInstance(error, at.Cancelled)
                assert error is not None
                self.assertEqual(at.error_result(error).output, 'Error: call "1" was cancelled')

    @staticmethod
    def cancelled_async_call(executor: at.Executor) -> Optional[BaseException]:
        """The error of an ``async def`` tool's call cancelled while it awaits."""
        started = threading.Event()

        @at.tool
        async def waits() -> str:
            """Wait to be cancelled."""
            started.set()
            await asyncio.sleep(BOUND)
            return "not cancelled"

        cancel = threading.Event()
        setter = in_thread(lambda: started.wait(BOUND) and cancel.set())
        _, errors = executor.results([at.Job(waits, at.Call("1", {}))], cancel)
        setter.join(BOUND)
        return errors[0]

    def test_a_policy_function_returning_no_string_falls_back_to_redacted(self) -> None:
        """A policy function that returns anything but a string (a number, bytes, None)
        gives the redacted message, never the exception's text or the returned value."""
        tools = at.ToolSet([query])
        for answer in (42, b"Error: bytes", None, ["a"]):
            with self.subTest(answer=answer):

                def policy(exc: BaseException, answer: Any = answer) -> Any:
                    return answer

                out = tools.run(QUERIES[:1], errors=policy)
                self.assertEqual(out[0]["output"], 'Error: tool "query" failed')
                _, error = run_one(query, {"sql": "select 1"}, at.Executor(errors=policy))
                self.assertIsInstance(error, at.ToolError)
                assert error is not None
                self.assertEqual(at.error_result(error).output, 'Error: tool "query" failed')
                self.assertIsInstance(error.__cause__, ConnectionError)


# ---------------------------------------------------------------------------------------------
# Tools and their properties
# ---------------------------------------------------------------------------------------------


class TestLenientDecoding(unittest.TestCase):
    def test_a_string_where_the_schema_admits_a_string_is_never_touched(self) -> None:
        """Lenient repair parses a string only where the schema wants an object or array and
        no string: a value whose schema admits a string as well stays the string it was, even
        when other values of the call are repaired."""

        @at.tool(lenient=True)
        def search(filters: dict, note: Union[str, dict], tags: Optional[Union[str, list]]) -> str:
            """Search."""
            return json.dumps([filters, note, tags])

        args = {"filters": '{"a": 1}', "note": '{"b": 2}', "tags": '["x"]'}
        result, error = run_one(search, args)
        self.assertIsNone(error)
        assert result is not None
        self.assertEqual(json.loads(result.output), [{"a": 1}, '{"b": 2}', '["x"]'])


class TestInjection(unittest.TestCase):
    def test_an_injected_parameter_sent_by_the_model_is_refused_under_an_open_schema(
        self,
    ) -> None:
        """Under a supplied schema that leaves additional properties open, with a function
        taking ``**kwargs``, a model that sends an injected parameter (``Inject`` or a
        ``Call``) is refused like an unknown property; other names still reach ``**kwargs``."""

        def find(
            q: str, who: Annotated[str, at.Inject("user")], call: at.Call, **kwargs: Any
        ) -> str:
            return json.dumps({"q": q, "who": who, "call": call.id, "kwargs": kwargs})

        schema = {"type": "object", "properties": {"q": {"type": "string"}}}
        t = at.new("find", "Find.", find, parameters=schema)
        host = at.Executor(inject={"user": "host"})
        for sent in ("who", "call"):
            with self.subTest(sent=sent):
                result, error = run_one(t, {"q": "x", sent: "model"}, host)
                self.assertIsNone(result)
                self.assertIsInstance(error, at.ValidationError)
                self.assertIn(f'unexpected property "{sent}"', str(error))
        result, error = run_one(t, {"q": "x", "colour": "red"}, host)
        self.assertIsNone(error)
        assert result is not None
        self.assertEqual(
            json.loads(result.output),
            {"q": "x", "who": "host", "call": "1", "kwargs": {"colour": "red"}},
        )


class TestOutputSchemas(unittest.TestCase):
    def test_a_none_return_has_no_output_schema(self) -> None:
        """A function whose return hint is ``None`` has no output schema, and its results
        carry no structured value."""

        @at.tool
        def nothing(x: int) -> None:
            """Do nothing."""

        self.assertIsNone(at.output_schema_of(nothing))
        result = nothing.execute(at.Call("1", {"x": 1}))
        self.assertEqual(result.output, "")
        self.assertIsNone(result.structured)


# ---------------------------------------------------------------------------------------------
# Wrapping
# ---------------------------------------------------------------------------------------------


class TestRetrying(unittest.TestCase):
    def counted(self, t: at.Tool) -> tuple[at.Tool, list[str]]:
        """``t`` wrapped so that every attempt to run it is counted (by call id)."""
        attempts: list[str] = []

        def execute(call: at.Call) -> at.Result:
            attempts.append(call.id)
            return t.execute(call)

        return at.wrap(t, execute), attempts

    def test_invalid_arguments_are_never_retried(self) -> None:
        """A call whose arguments do not validate runs once and fails with what is wrong."""

        @at.tool(replay=at.Replay.SAFE)
        def lookup(name: str) -> str:
            """Look a name up."""
            return name

        inner, attempts = self.counted(lookup)
        flaky = at.retrying(inner, attempts=3, backoff=0)
        result, error = run_one(flaky, {"name": 5})
        self.assertIsNone(result)
        self.assertIsInstance(error, at.ValidationError)
        self.assertEqual(attempts, ["1"])

    def test_a_cancelled_call_is_never_retried(self) -> None:
        """A call that fails as cancelled runs once: a ``Cancelled`` is never retried, nor is
        any failure once the call itself was cancelled."""

        @at.tool(replay=at.Replay.SAFE)
        def stopped() -> str:
            """Stopped from inside (a nested batch's cancellation)."""
            raise at.Cancelled("the nested batch was cancelled")

        inner, attempts = self.counted(stopped)
        _, error = run_one(at.retrying(inner, attempts=3, backoff=0))
        self.assertIsInstance(error, at.Cancelled)
        self.assertEqual(attempts, ["1"])

        started = threading.Event()

        @at.tool(replay=at.Replay.SAFE)
        def busy() -> str:
            """Fail once cancelled."""
            started.set()
            at.cancel_event().wait(BOUND)
            raise TimeoutError("gave up")

        inner, attempts = self.counted(busy)
        cancel = threading.Event()
        setter = in_thread(lambda: started.wait(BOUND) and cancel.set())
        job = at.Job(at.retrying(inner, attempts=3, backoff=0), at.Call("2", {}))
        _, errors = at.Executor().results([job], cancel)
        setter.join(BOUND)
        self.assertIsInstance(errors[0], TimeoutError)
        self.assertEqual(attempts, ["2"])


# ---------------------------------------------------------------------------------------------
# Definitions, their hash, and sets of tools
# ---------------------------------------------------------------------------------------------


class TestToolSetArun(unittest.TestCase):
    def test_arun_applies_its_errors_policy(self) -> None:
        """``await ToolSet.arun(calls, errors=...)`` gives the model what the policy says,
        as ``run`` does: redacted, the password never reaches an output item."""
        tools = at.ToolSet([query])

        def name_only(exc: BaseException) -> str:
            return type(exc).__name__

        out = asyncio.run(tools.arun(QUERIES, errors="redacted"))
        self.assertEqual(
            [item["output"] for item in out],
            ['Error: tool "query" failed', "Error: read-only: use SELECT"],
        )
        self.assertNotIn("hunter2", json.dumps(list(out)))
        out = asyncio.run(tools.arun(QUERIES[:1], errors=name_only))
        self.assertEqual(out[0]["output"], "Error: ConnectionError")


# ---------------------------------------------------------------------------------------------
# The executor
# ---------------------------------------------------------------------------------------------


class TestTimeouts(unittest.TestCase):
    def setUp(self) -> None:
        self.release = threading.Event()  # lets the tools that ignore cancellation return
        self.addCleanup(self.release.set)

    def test_the_executors_timeout_is_only_the_default_for_tools_stating_none(self) -> None:
        """A tool's own ``timeout`` wins over ``Executor(timeout=)``; a tool stating none
        takes the executor's."""
        release = self.release

        @at.tool(timeout=0.2)
        def own() -> str:
            """Ignore cancellation."""
            release.wait(BOUND)
            return "not timed out"

        @at.tool
        def none() -> str:
            """Ignore cancellation."""
            release.wait(BOUND)
            return "not timed out"

        own_first = read(own, executor=at.Executor(timeout=600))
        self.assertEqual(own_first, 'Error: tool "own" timed out after 0.2 s')
        default = read(none, executor=at.Executor(timeout=0.2))
        self.assertEqual(default, 'Error: tool "none" timed out after 0.2 s')

    def test_a_timeout_in_a_cancelled_batch_completes_the_calls_of_the_resource_behind_it(
        self,
    ) -> None:
        """In a batch already cancelled, a call whose tool ignores the cancellation and
        then times out lets the call of its resource waiting behind it complete at once, as
        cancelled."""
        release, ran = self.release, []

        @at.tool(resource="r", timeout=1)
        def hold() -> str:
            """Hold the resource, ignoring cancellation."""
            at.progress("holding")
            release.wait(BOUND * 3)
            return "returned"

        @at.tool(resource="r", timeout=BOUND / 2)
        def behind() -> str:
            """Run after hold."""
            ran.append("behind")
            return "ran"

        jobs = [at.Job(hold, at.Call("h", {})), at.Job(behind, at.Call("b", {}))]
        cancel = threading.Event()
        finals: dict[int, at.Event] = {}
        with at.Executor().execute(jobs, cancel) as events:
            for event in events:
                if not event.final:
                    cancel.set()  # the tool holds the resource: cancel before its timeout
                else:
                    finals[event.index] = event
        self.assertIn("timed out", seen(finals[0]))
        self.assertIsInstance(finals[1].error, at.Cancelled)
        self.assertEqual(ran, [])


class TestPoolThreads(unittest.TestCase):
    def test_an_idle_pool_thread_exits(self) -> None:
        """A pool thread left idle exits (after 2 s, shortened here to 0.2 s): a process that
        ran a batch keeps no worker thread once it is quiet."""
        out = run_python(
            self,
            """
            import json, threading, time
            import agenttool as at

            def workers():
                return [t for t in threading.enumerate() if t.name == "agenttool-worker"]

            @at.tool
            def where() -> str:
                return threading.current_thread().name

            at._workers.idle_seconds = 0.2
            ran_on = at.Executor().results([at.Job(where, at.Call("1", {}))])[0][0].output
            deadline = time.monotonic() + 60
            while workers() and time.monotonic() < deadline:
                time.sleep(0.05)
            print(json.dumps({"ran_on": ran_on, "left": len(workers())}))
            """,
        )
        self.assertEqual(json.loads(out), {"ran_on": "agenttool-worker", "left": 0})

    @unittest.skipUnless(hasattr(os, "fork"), "os.fork is not available here")
    def test_a_forked_child_starts_with_no_pool_threads(self) -> None:
        """A child forked while the pool has an idle thread starts with none of the parent's
        threads, and its first batch runs (it does not wait for a thread the fork left
        behind)."""
        out = run_python(
            self,
            """
            import os, sys, time, warnings
            import agenttool as at

            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads, 3.12+

            @at.tool
            def ping() -> str:
                return "pong"

            ex = at.Executor()
            assert ex.results([at.Job(ping, at.Call("1", {}))])[0][0].output == "pong"
            pid = os.fork()  # the pool's thread is idle now
            if pid == 0:
                try:
                    out = ex.results([at.Job(ping, at.Call("2", {}))])[0][0].output
                    code = 0 if out == "pong" else 2
                except BaseException:
                    code = 3
                os._exit(code)
            deadline = time.monotonic() + 60
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    print("exit", os.WEXITSTATUS(status) if os.WIFEXITED(status) else status)
                    break
                if time.monotonic() > deadline:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    print("the child's first batch hung")
                    break
                time.sleep(0.05)
            """,
        )
        self.assertEqual(out.strip(), "exit 0")


class TestBounds(unittest.TestCase):
    def setUp(self) -> None:
        self.release: list[threading.Event] = []
        self.addCleanup(lambda: [e.set() for e in self.release])

    def event(self) -> threading.Event:
        """An event set when the test ends, whatever happened."""
        e = threading.Event()
        self.release.append(e)
        return e

    def test_a_sequential_call_waits_for_the_executor_to_be_empty_and_nothing_jumps_it(
        self,
    ) -> None:
        """A sequential tool's call waiting in line runs only once none of the executor's
        calls runs; a call arriving after it (another batch's) waits behind it, and none is
        let in past it when a running call leaves."""
        ex = at.Executor(max_parallel=4)
        line = ex._bounds().line  # white-box: the executor's line, to know who waits
        log: list[str] = []
        first, second = self.event(), self.event()

        @at.tool
        def work(n: int) -> str:
            """Run until released."""
            log.append(f"a{n} start")
            (first if n == 1 else second).wait(BOUND)
            log.append(f"a{n} end")
            return "a"

        @at.tool(sequential=True)
        def alone() -> str:
            """Run beside nothing."""
            log.append("s start")
            log.append("s end")
            return "s"

        @at.tool
        def later() -> str:
            """Arrive after the sequential call."""
            log.append("c start")
            return "c"

        jobs = [at.Job(work, at.Call("a1", {"n": 1})), at.Job(work, at.Call("a2", {"n": 2}))]
        threads = [in_thread(lambda: ex.results(jobs))]
        self.assertTrue(wait_for(lambda: "a1 start" in log and "a2 start" in log))
        threads.append(in_thread(lambda: ex.results([at.Job(alone, at.Call("s", {}))])))
        self.assertTrue(wait_for(lambda: len(line) == 1))
        threads.append(in_thread(lambda: ex.results([at.Job(later, at.Call("c", {}))])))
        self.assertTrue(wait_for(lambda: len(line) == 2 or "c start" in log))
        first.set()
        self.assertTrue(wait_for(lambda: "a1 end" in log and ex._bounds().running == 1))
        second.set()
        for thread in threads:
            thread.join(BOUND)
            self.assertFalse(thread.is_alive())
        self.assertGreater(log.index("s start"), log.index("a1 end"), log)
        self.assertGreater(log.index("s start"), log.index("a2 end"), log)
        self.assertGreater(log.index("c start"), log.index("s end"), log)

    def test_bounds_follow_a_changed_max_parallel(self) -> None:
        """After ``executor.max_parallel`` is changed, the executor runs that many calls at
        once."""
        ex = at.Executor(max_parallel=2)
        ex.results([at.Job(query, at.Call("0", {"sql": "select 1"}))])  # the bounds in use
        ex.max_parallel = 4
        barrier = threading.Barrier(4, timeout=BOUND)

        @at.tool
        def meet(i: int) -> str:
            """Wait until four calls run at once."""
            barrier.wait()
            return "met"

        results, errors = ex.results([at.Job(meet, at.Call(str(i), {"i": i})) for i in range(4)])
        self.assertEqual(errors, [None] * 4)
        self.assertEqual([r.output for r in results if r is not None], ["met"] * 4)

    def test_cancelling_completes_at_once_the_calls_waiting_in_the_executors_line(
        self,
    ) -> None:
        """Cancelling a batch completes at once, as cancelled, its calls waiting in the
        executor's line for another batch's call to leave (the first in the line, and the
        batch's others waiting behind it for a place)."""
        ex = at.Executor(max_parallel=2)
        line = ex._bounds().line  # white-box: the executor's line, to know who waits
        holding, hold_on = [], self.event()
        ran: list[str] = []

        @at.tool
        def hold() -> str:
            """Hold one of the executor's two places until released."""
            holding.append(True)
            hold_on.wait(BOUND * 3)
            return "held"

        @at.tool
        def waiting() -> str:
            """Wait in line."""
            ran.append("waiting")
            return "ran"

        held = [at.Job(hold, at.Call(f"h{i}", {})) for i in range(2)]
        holder = in_thread(lambda: ex.results(held))
        self.assertTrue(wait_for(lambda: len(holding) == 2))
        cancel = threading.Event()
        outcome: list[Any] = []
        jobs = [at.Job(waiting, at.Call(f"w{i}", {})) for i in range(3)]
        waiter = in_thread(lambda: outcome.append(ex.results(jobs, cancel)))
        self.assertTrue(wait_for(lambda: len(line) == 1))
        cancel.set()
        waiter.join(BOUND)
        self.assertFalse(waiter.is_alive(), "the cancelled call waited for the holder")
        self.assertTrue(holder.is_alive())
        ((results, errors),) = outcome
        self.assertEqual(results, [None] * 3)
        for error in errors:
            self.assertIsInstance(error, at.Cancelled)
        hold_on.set()
        holder.join(BOUND)
        self.assertEqual(ran, [])


class TestAexecute(unittest.TestCase):
    def test_cancelling_the_consuming_task_cancels_the_batch(self) -> None:
        """Cancelling the asyncio task that consumes ``aexecute`` cancels the batch: a
        running thread tool sees its call cancelled."""
        started = threading.Event()
        saw: list[bool] = []

        @at.tool
        def waits() -> str:
            """Wait to be cancelled."""
            started.set()
            saw.append(at.cancel_event().wait(BOUND))
            return "done"

        async def main() -> None:
            async def consume() -> None:
                async for _ in at.Executor().aexecute([at.Job(waits, at.Call("1", {}))]):
                    pass

            task = asyncio.ensure_future(consume())
            loop = asyncio.get_running_loop()
            self.assertTrue(await loop.run_in_executor(None, started.wait, BOUND))
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task
            self.assertTrue(await loop.run_in_executor(None, wait_for, lambda: saw))

        asyncio.run(main())
        self.assertEqual(saw, [True])


if __name__ == "__main__":
    unittest.main()
