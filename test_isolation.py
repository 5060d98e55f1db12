"""Isolated tools: a tool made with isolated=True runs in a worker process that a timeout or a
cancel kills, and whose crash fails only its own call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import unittest
from typing import Any

import agenttool as at
from test_agenttool import at_once, limit_test_time, needs, slow
from testdata import isolated_tools as tools

POSIX = os.name == "posix"
try:
    import distributed
except ImportError:
    distributed = None
limit_test_time()


def run_one(t: at.Tool, args: str = "{}") -> at.Event:
    events = list(at.Executor().execute([at.Job(t, at.Call("c1", args))]))
    return [e for e in events if e.final][0]


DASK_CHAIN = ["call d0: 5", "call d1: 105", "call d2: 205"]


def run_example(name: str) -> list[str]:
    """The lines a README example in examples/ prints, run as a user runs it."""
    root = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run(
        [sys.executable, os.path.join("examples", name)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"examples/{name} failed: {done.stderr}")
    return done.stdout.splitlines()


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs: a zombie has ended (here an orphan's zombie waits for this
    container's init, which reaps every 2 s or so)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:  # no /proc (macOS), or the process was reaped in between
        return True


@unittest.skipUnless(POSIX, "signals and worker pids are checked the POSIX way")
class TestStopped(unittest.TestCase):
    def test_an_endless_loop_and_a_sleep_are_stopped_at_their_timeout(self) -> None:
        for fn in (tools.spin, tools.nap):
            with self.subTest(fn.__name__):
                t = at.tool(fn, isolated=True, timeout=0.25, resource="r")
                following = at.tool(tools.pid, isolated=True, resource="r")
                before = {p.pid for p in _children()}
                jobs = [at.Job(t, at.Call("a", "{}")), at.Job(following, at.Call("b", "{}"))]
                events = [e for e in at.Executor().execute(jobs) if e.final]
                self.assertIsInstance(events[0].error, TimeoutError)
                self.assertEqual(
                    str(events[0].error), f'tool "{fn.__name__}" timed out after 0.25 s'
                )
                self.assertIsNone(events[1].error)
                self.assertIsInstance(events[1].result.structured, int)
                gone = before - {p.pid for p in _children()}
                for p in gone:
                    self.assertFalse(alive(p))

    def test_the_readme_s_hung_tool_example_stops_it_and_runs_the_next_call(self) -> None:
        lines = run_example("hung_tool.py")
        self.assertEqual(len(lines), 2, lines)
        self.assertRegex(lines[0], r'^call 1 after [\d.]+ s: tool "stuck" timed out after 0.5 s$')
        self.assertRegex(lines[1], r"^call 2 after [\d.]+ s: pong$")

    def test_a_cancel_stops_a_running_isolated_call(self) -> None:
        t = at.tool(tools.nap, isolated=True)
        cancel = threading.Event()
        threading.Timer(0.5, cancel.set).start()
        events = [
            e for e in at.Executor().execute([at.Job(t, at.Call("a", "{}"))], cancel) if e.final
        ]
        self.assertIsInstance(events[0].error, at.Cancelled)

    def test_a_worker_stopped_by_two_threads_at_once_is_stopped_once(self) -> None:
        # the canceller and the call's own thread (its pipe closing) both stop the worker:
        # the second close of the pipe failed with EBADF and became the call's error
        import multiprocessing

        for _ in range(5):
            worker = at._Worker(multiprocessing.get_context("spawn"))
            start, errors = threading.Barrier(4), []

            def stop(
                worker: Any = worker,
                start: threading.Barrier = start,
                errors: list[Exception] = errors,
            ) -> None:
                start.wait()
                try:
                    worker.stop()
                except Exception as exc:  # noqa: BLE001 - what the test looks for
                    errors.append(exc)

            at_once(4, stop)
            self.assertEqual(errors, [])
            self.assertFalse(worker.process.is_alive())
            self.assertTrue(worker.conn.closed)


@unittest.skipUnless(POSIX, "signals are POSIX")
class TestCrashes(unittest.TestCase):
    def test_a_dying_worker_fails_only_its_call(self) -> None:
        cases = [
            (
                at.tool(tools.segfault, isolated=True),
                r'tool "segfault" crashed: its worker process exited \(signal 11\)',
            ),
            (
                at.tool(tools.exit3, isolated=True),
                r'tool "exit3" crashed: its worker process exited \(exit status 3\)',
            ),
        ]
        for t, message in cases:
            with self.subTest(t.name):
                good = at.tool(tools.add, isolated=True)
                jobs = [
                    at.Job(t, at.Call("a", "{}")),
                    at.Job(good, at.Call("b", '{"a": 1, "b": 2}')),
                ]
                events = {e.index: e for e in at.Executor().execute(jobs) if e.final}
                self.assertIsInstance(events[0].error, at.WorkerCrash)
                # "status unknown" when another waiter reaped the worker first (seen under load)
                unknown = f'tool "{t.name}" crashed: its worker process exited (status unknown)'
                if str(events[0].error) != unknown:
                    self.assertRegex(str(events[0].error), message)
                self.assertEqual(events[1].result.output, "3")

    def test_allocating_past_max_memory_fails_the_call(self) -> None:
        t = at.tool(tools.hog, isolated=True, max_memory=256 << 20)
        event = run_one(t)
        self.assertIsInstance(event.error, MemoryError)
        self.assertEqual(
            run_one(at.tool(tools.add, isolated=True), '{"a": 2, "b": 2}').result.output, "4"
        )

    def test_an_exception_in_the_worker_is_the_call_s_error(self) -> None:
        event = run_one(at.tool(tools.fails, isolated=True))
        self.assertIsInstance(event.error, ValueError)
        self.assertEqual(str(event.error), "bad input")


class TestContext(unittest.TestCase):
    def test_progress_records_and_elicitation_cross_from_the_worker(self) -> None:
        records: list[at.Record] = []
        executor = at.Executor(
            recorder=records.append,
            elicitor=lambda q: at.Answer(at.Action.ACCEPT, {}),
        )
        t = at.tool(tools.chatty, isolated=True)
        events = list(executor.execute([at.Job(t, at.Call("c7", '{"n": 3}'))]))
        updates = [e.result.output for e in events if not e.final]
        self.assertEqual(updates, ["step 0", "step 1", "step 2"])
        self.assertEqual(records, [at.Record("test:step", '{"n": 3}')])
        self.assertEqual(events[-1].result.output, "accept c7 False")

    def test_without_a_host_an_elicitation_is_cancel(self) -> None:
        self.assertEqual(
            run_one(at.tool(tools.chatty, isolated=True), '{"n": 0}').result.output,
            "cancel c1 False",
        )


@unittest.skipUnless(hasattr(os, "fork"), "fork is POSIX")
class TestFork(unittest.TestCase):
    def test_a_forked_child_has_no_workers_of_its_parent(self) -> None:
        run_one(at.tool(tools.pid, isolated=True))
        self.assertTrue(at._processes.workers())
        read, write = os.pipe()
        child = os.fork()
        if child == 0:
            os.write(write, str(len(at._processes.workers())).encode())
            os._exit(0)
        os.close(write)
        count = os.read(read, 10)
        os.waitpid(child, 0)
        self.assertEqual(count, b"0")

    def test_a_forked_child_starts_workers_of_its_own(self) -> None:
        """The thread that starts workers is not copied by fork: the child's first isolated
        call starts that thread again (it waited forever for one that did not exist)."""
        root = os.path.dirname(os.path.abspath(__file__))
        script = textwrap.dedent(f"""
            import os, sys, warnings
            sys.path.insert(0, {root!r})
            import agenttool as at
            from testdata import isolated_tools as tools
            warnings.simplefilter("ignore", DeprecationWarning)  # fork from a threaded process
            t = at.tool(tools.pid, isolated=True)
            def one():
                return at.Executor().results([at.Job(t, at.Call("a", {{}}))])[0][0].output
            parent = one()
            child = os.fork()
            if child == 0:
                print("child", one() not in (parent, str(os.getpid())), flush=True)
                os._exit(0)
            os.waitpid(child, 0)
        """)
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
        )
        self.assertEqual(out.stdout.strip(), "child True", out.stderr)


def _process_pool_works() -> bool:
    """Debian's PyPy 7.3.11 ships a ProcessPoolExecutor whose submit() itself raises
    AttributeError (it calls the missing _adjust_process_count), for any function."""
    import concurrent.futures.process

    return hasattr(concurrent.futures.process.ProcessPoolExecutor, "_adjust_process_count")


@unittest.skipUnless(
    _process_pool_works(),
    "this interpreter's ProcessPoolExecutor.submit raises AttributeError by itself"
    " (Debian's PyPy 7.3.11 lacks _adjust_process_count)",
)
class TestForeignExecutor(unittest.TestCase):
    def test_a_process_pool_executor_runs_isolated_tools_with_a_chain_in_order(self) -> None:
        import concurrent.futures
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as pool:
            executor = at.Executor(workers=pool)
            t = at.tool(tools.add, isolated=True, resource="r")
            jobs = [at.Job(t, at.Call(str(i), f'{{"a": {i}, "b": 1}}')) for i in range(6)]
            events = [e for e in executor.execute(jobs) if e.final]
            self.assertEqual([e.index for e in events], list(range(6)))
            self.assertEqual([e.result.output for e in events], [str(i + 1) for i in range(6)])
            chatty = at.tool(tools.chatty, isolated=True)
            event = [e for e in executor.execute([at.Job(chatty, at.Call("x", '{"n": 1}'))])][-1]
            self.assertIsInstance(event.error, RuntimeError)
            self.assertIn("cannot cross back from a foreign executor", str(event.error))

    @slow
    @needs(distributed is not None, "the distributed package (Dask) is not installed")
    def test_a_dask_cluster_runs_the_readme_s_batch_with_its_chain_in_model_order(self) -> None:
        # a LocalCluster of two worker processes, through client.get_executor()
        lines = run_example("dask_batch.py")
        self.assertEqual([x for x in lines if x.startswith("call d")], DASK_CHAIN)
        self.assertEqual(
            sorted(x for x in lines if x.startswith("call w")),
            ["call w0: ran in a worker process", "call w1: ran in a worker process"],
        )

    def test_workers_must_be_an_executor(self) -> None:
        with self.assertRaisesRegex(TypeError, "workers must be a concurrent.futures.Executor"):
            at.Executor(workers=3)


class TestRefusedWhenMade(unittest.TestCase):
    def test_what_a_worker_cannot_import_is_refused(self) -> None:
        def local() -> str:
            return ""

        with self.assertRaisesRegex(ValueError, "module-level function importable by name"):
            at.tool(local, isolated=True)
        with self.assertRaisesRegex(ValueError, "lambda"):
            at.new("l", "", lambda: "", isolated=True)

    def test_an_async_tool_is_refused(self) -> None:
        async def coro() -> str:
            return ""

        with self.assertRaisesRegex(ValueError, "async def tool cannot be isolated"):
            at.tool(coro, isolated=True)

    def test_max_memory_needs_isolation_and_a_positive_size(self) -> None:
        with self.assertRaisesRegex(ValueError, "needs isolated=True"):
            at.tool(tools.add, max_memory=1 << 20)
        with self.assertRaisesRegex(ValueError, "max_memory must be a positive"):
            at.tool(tools.add, isolated=True, max_memory=-1)


def _children() -> list[Any]:
    import multiprocessing

    return multiprocessing.active_children()


@unittest.skipUnless(POSIX, "process counting reads /proc or ps")
class TestNothingLeft(unittest.TestCase):
    def test_a_child_that_exits_leaves_no_worker(self) -> None:
        root = os.path.dirname(os.path.abspath(__file__))
        for ending in ("normal", "exception", "sigterm", "ctrl-c"):
            with self.subTest(ending):
                script = textwrap.dedent(f"""
                    import os, signal, sys
                    sys.path.insert(0, {root!r})
                    import agenttool as at
                    from testdata import isolated_tools as tools
                    t = at.tool(tools.pid, isolated=True)
                    job = at.Job(t, at.Call("a", "{{}}"))
                    ev = [e for e in at.Executor().execute([job]) if e.final]
                    print(ev[0].result.output, flush=True)
                    if {ending!r} == "exception":
                        raise SystemExit("bye")
                    if {ending!r} == "sigterm":
                        os.kill(os.getpid(), signal.SIGTERM)
                    if {ending!r} == "ctrl-c":  # handled even if this run ignores SIGINT
                        signal.signal(signal.SIGINT, signal.default_int_handler)
                        os.kill(os.getpid(), signal.SIGINT)
                        signal.pause()
                """)
                out = subprocess.run(
                    [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
                )
                worker = int(out.stdout.split()[0])
                for _ in range(100):
                    if not alive(worker):
                        break
                    time.sleep(0.05)
                self.assertFalse(alive(worker), f"worker {worker} left after {ending}")

    def test_a_worker_outlives_the_pool_thread_that_started_it(self) -> None:
        """Linux's parent-death signal fires when the *thread* that started a child exits:
        a worker started on a pool thread was killed when that thread retired (here after
        0.2 s idle), in the middle of another thread's call or idle in the pool."""
        root = os.path.dirname(os.path.abspath(__file__))
        script = textwrap.dedent(f"""
            import json, sys, threading, time
            sys.path.insert(0, {root!r})
            import agenttool as at
            from testdata import isolated_tools as tools
            at._workers.idle_seconds = 0.2
            def one(tool, args):
                e = [e for e in at.Executor().execute([at.Job(tool, at.Call("a", args))])]
                return e[-1].result.output if e[-1].result else str(e[-1].error)
            first = one(at.tool(tools.pid, isolated=True), {{}})
            # the pool thread that started the worker retires while the worker runs this:
            during = one(at.tool(tools.pid_later, isolated=True), {{"seconds": 0.6}})
            time.sleep(0.4)  # and every pool thread has retired: the idle worker is kept
            after = one(at.tool(tools.pid, isolated=True), {{}})
            print(json.dumps([first, during, after]))
        """)
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
        )
        self.assertEqual(out.returncode, 0, out.stderr)
        first, during, after = json.loads(out.stdout)
        self.assertEqual((during, after), (first, first), "one worker served all three")

    @unittest.skipUnless(sys.platform.startswith("linux"), "PR_SET_PDEATHSIG is Linux's")
    def test_a_busy_worker_dies_with_its_parent(self) -> None:
        root = os.path.dirname(os.path.abspath(__file__))
        script = textwrap.dedent(f"""
            import os, signal, sys
            sys.path.insert(0, {root!r})
            import agenttool as at
            from testdata import isolated_tools as tools
            t = at.tool(tools.busy, isolated=True)
            for event in at.Executor().execute([at.Job(t, at.Call("a", "{{}}"))]):
                print(event.result.output, flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        """)
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
        )
        worker = int(out.stdout.split()[0])
        for _ in range(100):
            if not alive(worker):
                break
            time.sleep(0.05)
        self.assertFalse(alive(worker), f"worker {worker} left after SIGKILL of its parent")


@slow
@unittest.skipUnless(POSIX, "pids are POSIX")
class TestMany(unittest.TestCase):
    def test_200_timeouts_leave_no_process_and_no_thread(self) -> None:
        t = at.tool(tools.spin, isolated=True, timeout=0.05)
        run_one(t)  # the one thread that starts workers, for the process's life, is up
        threads = threading.active_count()
        for _ in range(200):
            event = run_one(t)
            self.assertIsInstance(event.error, TimeoutError)
        for _ in range(100):  # the executor's idle pool threads retire after 2 s
            if threading.active_count() <= threads:
                break
            time.sleep(0.05)
        self.assertLessEqual(len(at._processes.workers()), os.cpu_count() or 1)
        # a worker still starting when its call timed out (spawn is slow on a loaded machine)
        # is stopped as soon as it has started: wait for that, bounded
        for _ in range(200):
            left = [p for p in _children() if p not in at._processes.workers()]
            if not left:
                break
            time.sleep(0.05)
        self.assertEqual(left, [])
        self.assertLessEqual(threading.active_count(), threads, threading.enumerate())


if __name__ == "__main__":
    unittest.main()
