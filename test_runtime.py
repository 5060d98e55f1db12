"""The runtime's promise under load, each fault in a fresh interpreter bounded in
time (a hang fails as a timeout), with a second case of its class."""

from __future__ import annotations

import unittest

from test_agenttool import isolated, limit_test_time

limit_test_time()

# Tools that hold their thread past their timeout, ignoring cancellation, until released.
STUCK = """
        import threading, time
        release = threading.Event()

        def stuck(c):
            release.wait(60)
            return "late"

        def quick(c):
            return "quick " + c.id
"""


class TestDeadlinesAtTheCap(unittest.TestCase):
    def test_calls_past_the_thread_cap_time_out_at_their_own_deadline(self) -> None:
        # Every pool thread is held by a tool that ignores its timeout: a later call still
        # runs (a fresh thread takes an abandoned one's place), sync and async.
        code = (
            STUCK
            + """
        import asyncio
        at.set_max_threads(2)
        hang = at.new_func("hang", "", None, stuck, timeout=0.1)
        fast = at.new_func("fast", "", None, quick, timeout=5)
        ex = at.Executor()
        _, errors = ex.results([at.Job(hang, at.Call(str(i))) for i in range(2)])
        print([type(e).__name__ for e in errors], at.abandoned_threads())
        print(ex.results([at.Job(fast, at.Call("s"))])[0][0].output)

        async def host():
            return [e async for e in ex.aexecute([at.Job(fast, at.Call("a"))])]

        print(asyncio.run(asyncio.wait_for(host(), 10))[-1].result.output)
        release.set()
        """
        )
        isolated(self, code, "['TimeoutError', 'TimeoutError'] 2\nquick s\nquick a\n", timeout=60)

    def test_waiting_for_a_thread_is_inside_the_timeout(self) -> None:
        # Abandoned threads past their bound keep counting: a call that cannot get a thread
        # completes at its own deadline instead of waiting forever.
        code = (
            STUCK
            + """
        at.set_max_threads(1)
        at._workers.max_threads = 1
        hang = at.new_func("hang", "", None, stuck, timeout=0.1)
        ex = at.Executor(max_parallel=16)
        jobs = [at.Job(hang, at.Call(str(i))) for i in range(4)]
        _, errors = ex.results(jobs)
        print(sorted(str(e) for e in errors)[0])
        release.set()
        """
        )
        isolated(self, code, 'tool "hang" timed out after 0.1 s\n', timeout=60)

    def test_an_executor_reused_after_timed_out_calls_still_runs_calls(self) -> None:
        code = (
            STUCK
            + """
        hang = at.new_func("hang", "", None, stuck, timeout=0.1)
        fast = at.new_func("fast", "", None, quick)
        ex = at.Executor(max_parallel=2)
        for _ in range(3):
            ex.results([at.Job(hang, at.Call("h1")), at.Job(hang, at.Call("h2"))])
        print(ex.results([at.Job(fast, at.Call("later"))])[0][0].output)
        release.set()
        """
        )
        isolated(self, code, "quick later\n", timeout=60)

    def test_a_call_of_a_resource_held_by_a_late_call_fails_at_its_deadline_naming_it(
        self,
    ) -> None:
        code = (
            STUCK
            + """
        hang = at.new_func("hang", "", None, stuck, timeout=0.1, resource="db")
        next_one = at.new_func("next", "", None, quick, timeout=0.2, resource="db")
        ex = at.Executor()
        print(ex.results([at.Job(hang, at.Call("h"))])[1][0])
        print(ex.results([at.Job(next_one, at.Call("n"))])[1][0])
        _, errors = ex.results([at.Job(hang, at.Call("a")), at.Job(next_one, at.Call("b"))])
        print(errors[1])
        release.set()
        """
        )
        isolated(
            self,
            code,
            'tool "hang" timed out after 0.1 s\n'
            'tool "next" timed out after 0.2 s: resource "db" is held by call "h" (tool "hang"),'
            " which timed out and has not returned\n"
            'tool "next" timed out after 0.2 s: resource "db" is held by call "h" (tool "hang"),'
            " which timed out and has not returned\n",
            timeout=60,
        )

    def test_a_serial_batch_behind_a_late_call_ends_at_its_deadlines(self) -> None:
        code = (
            STUCK
            + """
        hang = at.new_func("hang", "", None, stuck, timeout=0.1)
        fast = at.new_func("fast", "", None, quick, timeout=0.2)
        ex = at.Executor(sequential=True)
        _, errors = ex.results([at.Job(hang, at.Call("a")), at.Job(fast, at.Call("b"))])
        print(errors[1])
        release.set()
        """
        )
        isolated(
            self,
            code,
            'tool "fast" timed out after 0.2 s: call "a" (tool "hang"), before it in its'
            " chain, timed out and has not returned\n",
            timeout=60,
        )

    def test_nested_batches_finish_at_the_cap_without_the_consumer_running_a_call(self) -> None:
        code = """
        import threading
        at.set_max_threads(1)
        consumers = set()
        leaf = at.new_func("leaf", "", None, lambda c: threading.get_ident())

        def agent(c):
            consumers.add(threading.get_ident())
            results, _ = at.Executor().results([at.Job(leaf, at.Call("l"))])
            return str(results[0].output)

        outer = at.new_func("agent", "", None, agent)
        results, errors = at.Executor().results([at.Job(outer, at.Call("o"))])
        print(errors == [None], int(results[0].output) not in consumers)
        """
        isolated(self, code, "True True\n", timeout=60)

    def test_each_timeout_is_one_warning_saying_what_runs_on(self) -> None:
        # a cooperative tool (returns once cancelled) and one that ignores the cancel, in the
        # sync and the async API: one WARNING per timed-out call, never a second one
        code = (
            STUCK
            + """
        import asyncio, logging, time
        lines = []
        handler = logging.Handler()
        handler.emit = lambda record: lines.append(record.getMessage())
        logging.getLogger("agenttool").addHandler(handler)

        def polite(c):
            while not at.cancelled():
                time.sleep(0.005)
            return "stopped"

        coop = at.new_func("coop", "", None, polite, timeout=0.1)
        hang = at.new_func("hang", "", None, stuck, timeout=0.1)
        ex = at.Executor()
        ex.results([at.Job(coop, at.Call("1")), at.Job(hang, at.Call("2"))])

        async def host():
            return [e async for e in ex.aexecute([at.Job(coop, at.Call("3"))])]

        asyncio.run(host())
        release.set()
        time.sleep(0.2)
        print(sorted(line.split(";")[0] for line in lines))
        print(all("thread" in line for line in lines))
        """
        )
        expected = (
            '[\'tool "coop" (call "1") timed out after 0.1 s\', '
            '\'tool "coop" (call "3") timed out after 0.1 s\', '
            '\'tool "hang" (call "2") timed out after 0.1 s\']\nTrue\n'
        )
        isolated(self, code, expected, timeout=60)

    def test_calls_waiting_for_a_person_do_not_hold_the_pool(self) -> None:
        # 24 calls ask at once under a cap of 8 threads, and the person answers only once
        # all have asked: the askers' threads let others start, so the batch completes
        code = """
        import threading
        at.set_max_threads(8)
        asked, everyone = [], threading.Event()

        def elicitor(question):
            asked.append(question.message)
            if len(asked) == 24:
                everyone.set()
            everyone.wait(30)
            return at.Answer(at.Action.ACCEPT, {})

        def ask(c):
            return at.elicit(at.Elicitation("ok?")).action.value

        t = at.new_func("ask", "", None, ask, timeout=40)
        ex = at.Executor(max_parallel=24, elicitor=elicitor)
        results, errors = ex.results([at.Job(t, at.Call(str(i))) for i in range(24)])
        print(sorted({r.output for r in results}), errors.count(None), everyone.is_set())
        """
        isolated(self, code, "['accept'] 24 True\n", timeout=60)


class TestCancelWins(unittest.TestCase):
    def test_a_cancel_while_the_approver_decides_ends_the_job_and_the_tool_never_runs(
        self,
    ) -> None:
        code = """
        import threading, time
        ran = []
        asked = threading.Event()
        answer = threading.Event()

        def approver(job):
            asked.set()
            answer.wait(30)
            return True

        @at.tool(needs_approval=True)
        def delete(path: str) -> str:
            \"\"\"Delete a file.\"\"\"
            ran.append(path)
            return "deleted " + path

        cancel = threading.Event()
        ex = at.Executor(approver=approver)
        threading.Thread(target=lambda: (asked.wait(30), cancel.set())).start()
        start = time.monotonic()
        _, errors = ex.results([at.Job(delete, at.Call("1", {"path": "/etc/shadow"}))], cancel)
        print(type(errors[0]).__name__)
        answer.set()
        time.sleep(0.2)
        print(ran)
        """
        isolated(self, code, "Cancelled\n[]\n", timeout=60)

    def test_a_cancel_while_on_start_blocks_ends_the_job_and_the_tool_never_runs(self) -> None:
        code = """
        import threading, time
        ran = []
        started = threading.Event()
        go = threading.Event()

        def on_start(job):
            started.set()
            go.wait(30)

        t = at.new_func("t", "", None, lambda c: ran.append(c.id) or "ran")
        cancel = threading.Event()
        threading.Thread(target=lambda: (started.wait(30), cancel.set())).start()
        _, errors = at.Executor(on_start=on_start).results([at.Job(t, at.Call("1"))], cancel)
        print(type(errors[0]).__name__)
        go.set()
        time.sleep(0.2)
        print(ran)
        """
        isolated(self, code, "Cancelled\n[]\n", timeout=60)

    def test_a_hanging_approver_is_inside_the_tools_timeout(self) -> None:
        code = """
        import threading
        never = threading.Event()
        ran = []

        @at.tool(needs_approval=True, timeout=0.2)
        def act(x: int) -> int:
            \"\"\"Act.\"\"\"
            ran.append(x)
            return x

        ex = at.Executor(approver=lambda job: never.wait(60))
        _, errors = ex.results([at.Job(act, at.Call("1", {"x": 1}))])
        print(errors[0])
        never.set()
        import time; time.sleep(0.2)
        print(ran)
        """
        isolated(self, code, 'tool "act" timed out after 0.2 s\n[]\n', timeout=60)


if __name__ == "__main__":
    unittest.main()
