"""Journaled runs: the journal wired into Executor and ToolSet.run, the rules of a
call's life across a crash, crash injection with SIGKILL at each point, and PostgreSQL."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest
from typing import Any

import agenttool as at
import test_journal
from test_agenttool import RUN_SLOW, absent, needs, responses_call, slow
from test_journal import PG_BIN, psycopg

HERE = os.path.dirname(os.path.abspath(__file__))


class Tools:
    """Tools whose side effects count themselves, one of each replay kind."""

    def __init__(self) -> None:
        self.effects: list[tuple[str, str, str]] = []  # (tool, call id, key)

        def body(name: str) -> str:
            call = at.current_call()
            assert call is not None
            self.effects.append((name, call.id, call.idempotency_key))
            at.write_record(at.Record("test:effect", json.dumps({"tool": name})))
            return f"{name} done {call.id}"

        @at.tool(replay=at.Replay.UNKNOWN)
        def charge(cents: int) -> str:
            """Charge a card."""
            return body("charge")

        @at.tool(replay=at.Replay.KEYED)
        def pay(cents: int) -> str:
            """Pay with an idempotency key."""
            return body("pay")

        @at.tool(replay=at.Replay.SAFE)
        def look(q: str) -> str:
            """Look something up."""
            return body("look")

        self.charge, self.pay, self.look = charge, pay, look

    def jobs(self) -> list[at.Job]:
        return [
            at.Job(self.charge, at.Call("c1", {"cents": 300})),
            at.Job(self.pay, at.Call("c2", {"cents": 200})),
            at.Job(self.look, at.Call("c3", {"q": "x"})),
        ]


def finals(events: Any) -> dict[int, at.Event]:
    out: dict[int, at.Event] = {}
    for e in events:
        if e.final:
            assert e.index not in out, "two final events for one job"
            out[e.index] = e
    return out


class TestJournaledExecutor(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "agent.db")
        self.journal = at.Journal(self.path)
        self.tools = Tools()
        self.ex = at.Executor(journal=self.journal)

    def tearDown(self) -> None:
        self.journal.close()
        self.dir.cleanup()

    def interrupt(self, run: str, *jobs: at.Job) -> None:
        """What a crash after the intent leaves: intents with no outcome."""
        for job in jobs:
            assert job.tool is not None and isinstance(job.call.args, dict)
            self.journal.intent(
                run, job.call.id, job.tool.name, at.definition_hash(job.tool), job.call.args
            )

    def test_a_finished_run_is_replayed_not_run(self) -> None:
        first = finals(self.ex.execute(self.tools.jobs(), run="t1"))
        self.assertEqual(len(self.tools.effects), 3)
        again = finals(self.ex.execute(self.tools.jobs(), run="t1"))
        self.assertEqual(len(self.tools.effects), 3)
        for i in range(3):
            self.assertFalse(first[i].replayed)
            self.assertTrue(again[i].replayed)
            self.assertEqual(again[i].result, first[i].result)
        calls = self.journal.calls("t1")
        self.assertEqual([c["status"] for c in calls], ["done"] * 3)
        self.assertEqual(
            [r.ns for r in self.journal.records("t1", "c1")], ["test:effect"]
        )  # records are journaled as the tool writes them

    def test_a_journal_subclass_overriding_outcome_as_before_pages_still_works(self) -> None:
        """A Journal subclass whose outcome() has the signature it had before read_output's
        pages were journaled still gets every outcome that has none."""
        seen: list[str] = []

        class Watched(at.Journal):
            def outcome(  # type: ignore[override]
                self, run: str, call_id: str, outcome: dict[str, Any], status: str = "done"
            ) -> None:
                seen.append(call_id)
                super().outcome(run, call_id, outcome, status)

        journal = Watched(os.path.join(self.dir.name, "watched.db"))
        try:
            ex = at.Executor(journal=journal)
            finals(ex.execute(self.tools.jobs(), run="t1"))
            again = finals(ex.execute(self.tools.jobs(), run="t1"))
        finally:
            journal.close()
        self.assertEqual(sorted(seen), ["c1", "c2", "c3"])
        self.assertTrue(all(e.replayed for e in again.values()))
        self.assertEqual(len(self.tools.effects), 3)

    def test_an_error_outcome_is_replayed_as_the_model_read_it(self) -> None:
        @at.tool(replay=at.Replay.UNKNOWN)
        def broken() -> str:
            raise at.ToolError("the card was declined")

        job = at.Job(broken, at.Call("b1", {}))
        first = finals(self.ex.execute([job], run="e"))[0]
        again = finals(self.ex.execute([job], run="e"))[0]
        self.assertTrue(again.replayed)
        self.assertIsInstance(again.error, at.ToolError)
        self.assertEqual(str(again.error), str(first.error))

    def test_interrupted_calls_follow_their_replay(self) -> None:
        first_key = self.journal.intent(
            "t2", "c2", "pay", at.definition_hash(self.tools.pay), {"cents": 200}
        )["key"]
        self.interrupt("t2", self.tools.jobs()[0], self.tools.jobs()[2])
        got = finals(self.ex.execute(self.tools.jobs(), run="t2"))
        self.assertIsInstance(got[0].error, at.Uncertain)  # UNKNOWN: never run blindly
        self.assertIn('call "c1" of tool "charge" was interrupted', str(got[0].error))
        self.assertIsNone(got[1].error)
        self.assertIsNone(got[2].error)
        self.assertEqual(sorted(e[:2] for e in self.tools.effects), [("look", "c3"), ("pay", "c2")])
        self.assertEqual([e[2] for e in self.tools.effects if e[0] == "pay"], [first_key])
        status = {c["call_id"]: c["status"] for c in self.journal.calls("t2")}
        self.assertEqual(status, {"c1": "uncertain", "c2": "done", "c3": "done"})

    def test_resolve_settles_an_uncertain_call_three_ways(self) -> None:
        jobs = self.tools.jobs()[:1]
        for run, answer in (("r1", at.text("it was charged")), ("r2", "not charged"), ("r3", True)):
            self.interrupt(run, *jobs)
            self.assertIsInstance(finals(self.ex.execute(jobs, run=run))[0].error, at.Uncertain)
            got = finals(self.ex.execute(jobs, run=run, resolve={"c1": answer}))[0]
            later = finals(self.ex.execute(jobs, run=run))[0]
            self.assertTrue(later.replayed)
            if answer is True:
                self.assertEqual(got.result.output, "charge done c1")
                self.assertEqual(len(self.tools.effects), 1)
            elif isinstance(answer, str):
                self.assertEqual((str(got.error), str(later.error)), (answer, answer))
            else:
                self.assertEqual(later.result.output, "it was charged")
        self.assertEqual(self.journal.calls("r1")[0]["status"], "resolved")
        with self.assertRaisesRegex(ValueError, "need a journal"):
            next(at.Executor().execute(jobs, resolve={"c1": True}))

    def test_a_tool_can_reconcile_its_own_uncertain_call(self) -> None:
        seen: list[Any] = []

        def look_up(args: dict[str, Any], key: str, records: list[at.Record]) -> Any:
            seen.append((args, key, records))
            return at.text(f"found payment {key[:4]}") if args["cents"] == 300 else None

        charge = self.tools.charge
        charge.reconcile = look_up  # type: ignore[attr-defined]
        key = self.journal.intent("rc", "c1", "charge", at.definition_hash(charge), {"cents": 300})[
            "key"
        ]
        self.journal.record("rc", "c1", at.Record("shop:attempt", "{}"))
        self.interrupt("rc", at.Job(charge, at.Call("c9", {"cents": 5})))
        got = finals(
            self.ex.execute(
                [
                    at.Job(charge, at.Call("c1", {"cents": 300})),
                    at.Job(charge, at.Call("c9", {"cents": 5})),
                ],
                run="rc",
            )
        )
        self.assertEqual(got[0].result.output, f"found payment {key[:4]}")
        self.assertTrue(got[0].replayed)
        self.assertIsInstance(got[1].error, at.Uncertain)  # reconcile said None: still uncertain
        by_cents = {args["cents"]: (key, records) for args, key, records in seen}
        self.assertEqual(by_cents[300], (key, [at.Record("shop:attempt", "{}")]))
        self.assertEqual(by_cents[5][1], [])
        self.assertEqual(self.tools.effects, [])

    def test_other_arguments_are_refused_and_a_changed_definition_is_uncertain(self) -> None:
        finals(self.ex.execute(self.tools.jobs(), run="t3"))
        changed = at.Job(self.tools.look, at.Call("c3", {"q": "other"}))
        err = finals(self.ex.execute([changed], run="t3"))[0].error
        self.assertIn('call "c3" was not run', str(err))
        self.assertIn("other arguments", str(err))

        @at.tool(replay=at.Replay.SAFE, name="look")
        def look_v2(q: str, limit: int = 3) -> str:
            """Look something up, better."""
            return "v2"

        got = finals(self.ex.execute([at.Job(look_v2, at.Call("c3", {"q": "x"}))], run="t3"))[0]
        self.assertIsInstance(got.error, at.Uncertain)  # never matched to the old output
        self.assertIn("definition has changed", str(got.error))

    def test_a_run_is_held_by_one_process_at_a_time(self) -> None:
        self.journal.hold("held", "elsewhere:1:x", lease=60)
        with self.assertRaisesRegex(at.JournalError, "held by 'elsewhere:1:x'"):
            next(self.ex.execute(self.tools.jobs(), run="held"))
        self.assertEqual(self.tools.effects, [])
        self.journal.hold("expired", "elsewhere:1:x", lease=-1)
        self.assertEqual(len(finals(self.ex.execute(self.tools.jobs(), run="expired"))), 3)
        # a batch gives its lease back when it is over, so the next turn may take it at once
        self.assertIsNone(self.journal.runs()[-1]["owner"])
        with self.assertRaisesRegex(ValueError, "needs run="):
            next(self.ex.execute(self.tools.jobs()))
        with self.assertRaisesRegex(TypeError, "run id"):
            next(self.ex.execute(self.tools.jobs(), run=7))  # type: ignore[arg-type]

    def test_the_lease_is_renewed_while_the_batch_runs(self) -> None:
        journal = at.Journal(self.path, lease=0.3)
        gate = threading.Event()

        @at.tool(replay=at.Replay.UNKNOWN)
        def slow_charge() -> str:
            gate.wait(30)
            return "charged"

        events = at.Executor(journal=journal).execute(
            [at.Job(slow_charge, at.Call("s1", {}))], run="long"
        )
        taken = threading.Thread(target=lambda: list(events))
        taken.start()
        try:
            import time

            time.sleep(0.75)  # two and a half leases long: only renewal keeps it
            with self.assertRaisesRegex(at.JournalError, "is held by"):
                self.journal.hold("long", "elsewhere:1:x")
        finally:
            gate.set()
            taken.join(30)
            journal.close()

    def test_duplicate_or_empty_call_ids_are_refused_in_a_journaled_run(self) -> None:
        jobs = [
            at.Job(self.tools.look, at.Call("same", {"q": "a"})),
            at.Job(self.tools.look, at.Call("same", {"q": "b"})),
            at.Job(self.tools.look, at.Call("", {"q": "c"})),
        ]
        got = finals(self.ex.execute(jobs, run="dup"))
        for i in range(3):
            self.assertIn("unique in the run", str(got[i].error))
        self.assertEqual(self.tools.effects, [])

    def test_an_intent_that_cannot_be_written_means_the_tool_does_not_run(self) -> None:
        import sqlite3

        class Failing:
            """A DB-API connection whose writes fail after the run's lease is taken."""

            def __init__(self) -> None:
                self.conn = sqlite3.connect(os.path.join(self.dir, "f.db"))

            dir = self.dir.name
            broken = False

            def cursor(self) -> Any:
                cur = self.conn.cursor()
                if Failing.broken:
                    real = cur.execute

                    def execute(sql: str, params: Any = ()) -> Any:
                        if sql.startswith("INSERT INTO agenttool_calls"):
                            raise sqlite3.OperationalError("database or disk is full")
                        return real(sql, params)

                    return type(
                        "Cur",
                        (),
                        {
                            "execute": staticmethod(execute),
                            "fetchall": cur.fetchall,
                            "close": cur.close,
                            "description": property(lambda s: cur.description),
                        },
                    )()
                return cur

            def commit(self) -> None:
                self.conn.commit()

            def rollback(self) -> None:
                self.conn.rollback()

            def close(self) -> None:
                self.conn.close()

        journal = at.Journal(connect=Failing, paramstyle="qmark")
        Failing.broken = True
        got = finals(at.Executor(journal=journal).execute(self.tools.jobs(), run="full"))
        for i in range(3):
            self.assertIn("was not run: its intent could not be journaled", str(got[i].error))
            self.assertIn("disk is full", str(got[i].error))
        self.assertEqual(self.tools.effects, [])

    def test_aexecute_journals_the_same_way(self) -> None:
        async def main() -> tuple[dict[int, at.Event], dict[int, at.Event]]:
            one = finals([e async for e in self.ex.aexecute(self.tools.jobs(), run="a")])
            two = finals([e async for e in self.ex.aexecute(self.tools.jobs(), run="a")])
            return one, two

        one, two = asyncio.run(main())
        self.assertEqual(len(self.tools.effects), 3)
        self.assertTrue(all(two[i].replayed and two[i].result == one[i].result for i in range(3)))

    def test_a_journal_written_by_schema_1_is_upgraded(self) -> None:
        import sqlite3

        old = os.path.join(self.dir.name, "old.db")
        conn = sqlite3.connect(old)
        conn.executescript(
            "CREATE TABLE agenttool_meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);"
            "INSERT INTO agenttool_meta VALUES ('schema', '1');"
        )
        conn.close()
        journal = at.Journal(old)
        journal.record("r", "c", at.Record("a:b", "1"))
        self.assertEqual(journal.records("r", "c"), [at.Record("a:b", "1")])
        journal.close()


class TestBadJournals(unittest.TestCase):
    """Bad input gets a clear error and loses nothing."""

    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "agent.db")

    def tearDown(self) -> None:
        self.dir.cleanup()

    def test_a_truncated_journal_is_refused_naming_the_file(self) -> None:
        journal = at.Journal(self.path)
        for i in range(200):
            journal.intent("r", f"c{i}", "t", "h", {"i": i, "pad": "x" * 500})
        journal.close()
        for name in os.listdir(self.dir.name):
            if name != "agent.db":
                os.remove(os.path.join(self.dir.name, name))  # no WAL to repair it from
        with open(self.path, "r+b") as f:
            f.truncate(os.path.getsize(self.path) // 3)
        with self.assertRaisesRegex(at.JournalError, "agent.db"):
            broken = at.Journal(self.path)
            broken.calls("r")

    def test_a_folder_that_does_not_exist(self) -> None:
        with self.assertRaisesRegex(at.JournalError, "cannot open .*nowhere"):
            at.Journal(os.path.join(self.dir.name, "nowhere", "agent.db"))

    def test_an_outcome_too_large_is_refused_by_size_and_the_model_still_reads_it(self) -> None:
        journal = at.Journal(self.path, max_outcome=1000)
        with self.assertRaisesRegex(at.JournalError, r"'c1' is \d+ bytes, over .* 1000"):
            journal.outcome("r", "c1", {"output": "x" * 2000})

        @at.tool(replay=at.Replay.UNKNOWN)
        def big() -> str:
            return "y" * 5000

        job = [at.Job(big, at.Call("b1", {}))]
        got = finals(at.Executor(journal=journal).execute(job, run="big"))[0]
        self.assertEqual(got.result.output, "y" * 5000)  # the tool ran: the model reads it
        again = finals(at.Executor(journal=journal).execute(job, run="big"))[0]
        self.assertIsInstance(again.error, at.Uncertain)  # and the host is asked on a resume
        journal.close()

    def test_a_bad_lease_or_run(self) -> None:
        for lease in (0, None, -1):
            with self.assertRaisesRegex(ValueError, "lease"):
                at.Journal(self.path, lease=lease)  # type: ignore[arg-type]
        with self.assertRaisesRegex(TypeError, "journal must be a Journal"):
            at.Executor(journal=self.path)  # type: ignore[arg-type]


class TestJournaledToolSet(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.journal = at.Journal(os.path.join(self.dir.name, "agent.db"))
        self.tools = Tools()
        self.ts = at.ToolSet([self.tools.charge, self.tools.pay, self.tools.look])
        self.items = [
            responses_call("c1", "charge", {"cents": 300}),
            responses_call("c2", "pay", {"cents": 200}),
        ]

    def tearDown(self) -> None:
        self.journal.close()
        self.dir.cleanup()

    def test_uncertain_calls_get_no_item_until_resolved(self) -> None:
        self.journal.intent(
            "turn-7", "c1", "charge", at.definition_hash(self.tools.charge), {"cents": 300}
        )
        out = self.ts.run(self.items, journal=self.journal, run="turn-7")
        self.assertEqual([o["call_id"] for o in out], ["c2"])
        self.assertEqual([u.call_id for u in out.uncertain], ["c1"])
        u = out.uncertain[0]
        self.assertEqual((u.name, u.arguments, u.item), ("charge", {"cents": 300}, self.items[0]))
        again = self.ts.run(
            [u.item], journal=self.journal, run="turn-7", resolve={"c1": "the charge failed"}
        )
        self.assertEqual(again[0]["output"], "Error: the charge failed")
        self.assertEqual(again.uncertain, [])
        replay = self.ts.run(self.items, journal=self.journal, run="turn-7")
        self.assertEqual([o["output"] for o in replay], ["Error: the charge failed", "pay done c2"])
        self.assertEqual([e[0] for e in self.tools.effects], ["pay"])

    def test_arun_with_a_journal(self) -> None:
        out = asyncio.run(self.ts.arun(self.items, journal=self.journal, run="t"))
        again = asyncio.run(self.ts.arun(self.items, journal=self.journal, run="t"))
        self.assertEqual(list(out), list(again))
        self.assertEqual(len(self.tools.effects), 2)


class TestApprovals(unittest.TestCase):
    """An approval is for one call."""

    def setUp(self) -> None:
        self.ran: list[str] = []

        @at.tool(needs_approval=True)
        def delete(path: str) -> str:
            """Delete a file."""
            self.ran.append(path)
            return f"deleted {path}"

        self.ts = at.ToolSet([delete])

    def test_replaying_the_approved_items_does_not_run_them_again(self) -> None:
        items = [responses_call("a", "delete", {"path": "/etc/x"})]
        first = self.ts.run(items, approvals={})
        answers = {first.pending[0].hash: True}
        self.assertEqual(self.ts.run(items, approvals=answers)[0]["output"], "deleted /etc/x")
        for _ in range(2):
            out = self.ts.run(items, approvals=answers)
            self.assertIn("was not run again", out[0]["output"])
        self.assertEqual(self.ran, ["/etc/x"])

    def test_a_new_call_id_with_the_same_arguments_asks_again(self) -> None:
        first = self.ts.run([responses_call("a", "delete", {"path": "/etc/x"})], approvals={})
        answers = {first.pending[0].hash: True}
        later = self.ts.run([responses_call("b", "delete", {"path": "/etc/x"})], approvals=answers)
        self.assertEqual(list(later), [])
        self.assertEqual([p.call_id for p in later.pending], ["b"])
        self.assertEqual(self.ran, [])

    def test_with_a_journal_an_interrupted_call_needs_a_new_approval(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            journal = at.Journal(os.path.join(d, "a.db"))
            items = [responses_call("a", "delete", {"path": "/etc/x"})]
            first = self.ts.run(items, approvals={}, journal=journal, run="t")
            spent = {first.pending[0].hash: True}
            # an earlier process began the call with that approval, then died
            delete = self.ts[0]
            journal.intent("t", "a", "delete", at.definition_hash(delete), {"path": "/etc/x"})
            other = at.ToolSet([delete])  # a new process: nothing remembered but the journal
            out = other.run(items, approvals=spent, journal=journal, run="t")
            self.assertEqual(list(out), [])
            self.assertNotEqual(out.pending[0].hash, first.pending[0].hash)
            self.assertEqual(self.ran, [])
            journal.close()

    def test_the_executor_approver_is_asked_for_each_call(self) -> None:
        asked: list[str] = []
        ex = at.Executor(approver=lambda job: asked.append(job.call.id) or True)
        for cid in ("a", "b"):
            self.ts.run([responses_call(cid, "delete", {"path": "/x"})], executor=ex)
        self.assertEqual(asked, ["a", "b"])


class TestJournaledApprovals(unittest.TestCase):
    """An approval is journaled with the intent it let run."""

    def setUp(self) -> None:
        @at.tool(needs_approval=True)
        def delete(path: str) -> str:
            """Delete a file."""
            return f"deleted {path}"

        @at.tool
        def look(path: str) -> str:
            """Look at a file."""
            return path

        self.tools = [delete, look]
        self.dir = tempfile.TemporaryDirectory()
        self.journal = at.Journal(os.path.join(self.dir.name, "a.db"))
        self.addCleanup(self.dir.cleanup)
        self.addCleanup(self.journal.close)

    def approvals_of(self, run: str, call_id: str) -> list[dict[str, Any]]:
        return [
            json.loads(r.data)
            for r in self.journal.records(run, call_id)
            if r.ns == at.APPROVAL_RECORD
        ]

    def test_the_approver_s_answer_is_recorded_with_the_intent(self) -> None:
        def approver(job: at.Job) -> Any:
            return True if job.call.id == "a" else {"path": "/tmp/y"}

        ex = at.Executor(approver=approver, journal=self.journal)
        delete, look = self.tools
        jobs = [
            at.Job(delete, at.Call("a", {"path": "/etc/x"})),
            at.Job(delete, at.Call("b", {"path": "/etc/y"})),
            at.Job(look, at.Call("c", {"path": "/etc/z"})),
        ]
        _, errors = ex.results(jobs, run="t")
        self.assertEqual(errors, [None, None, None])
        (allowed,) = self.approvals_of("t", "a")
        self.assertEqual((allowed["by"], allowed["answer"]), ("approver", "allowed"))
        self.assertEqual(allowed["args_hash"], at._args_hash({"path": "/etc/x"}))
        (edited,) = self.approvals_of("t", "b")
        self.assertEqual(edited["answer"], "edited")
        self.assertEqual(edited["args_hash"], at._args_hash({"path": "/tmp/y"}))  # what ran
        self.assertEqual(self.approvals_of("t", "c"), [])  # it needed none

    def test_a_tool_set_s_approvals_are_recorded_and_a_refused_call_writes_none(self) -> None:
        ts = at.ToolSet(self.tools)
        items = [responses_call("a", "delete", {"path": "/etc/x"})]
        first = ts.run(items, approvals={}, journal=self.journal, run="t")
        ts.run(items, approvals={first.pending[0].hash: True}, journal=self.journal, run="t")
        self.assertEqual([a["by"] for a in self.approvals_of("t", "a")], ["approvals"])
        # the same call id with other arguments is refused: no approval is written for it
        ex = at.Executor(approver=lambda job: True, journal=self.journal)
        _, errors = ex.results([at.Job(self.tools[0], at.Call("a", {"path": "/other"}))], run="t")
        self.assertIn("other arguments", str(errors[0]))
        digest = at.definition_hash(self.tools[0])
        approval = {"by": "approver", "answer": "allowed", "args_hash": ""}
        with self.assertRaisesRegex(at.JournalError, "other arguments"):
            self.journal.intent("t", "a", "delete", digest, {"path": "/other"}, approval)
        self.assertEqual(len(self.approvals_of("t", "a")), 1)


class TestKeys(unittest.TestCase):
    """A harness sending a call again gets the same idempotency key."""

    def test_the_same_call_sent_again_carries_the_same_key(self) -> None:
        keys: list[str] = []

        @at.tool(replay=at.Replay.KEYED)
        def pay(cents: int) -> str:
            """Pay."""
            call = at.current_call()
            assert call is not None
            keys.append(call.idempotency_key)
            return "paid"

        ts = at.ToolSet([at.retrying(pay)])
        item = responses_call("call_42", "pay", {"cents": 5})
        ts.run([item])
        ts.run([item])
        ts.run([responses_call("call_43", "pay", {"cents": 5})])
        ts.run([responses_call("call_42", "pay", {"cents": 6})])
        self.assertEqual(keys[0], keys[1])
        self.assertTrue(keys[0])
        self.assertEqual(len(set(keys)), 3)  # another id or other arguments: another key
        anthropic = {"type": "tool_use", "id": "t1", "name": "pay", "input": {"cents": 5}}
        ts.run([anthropic])
        ts.run([dict(anthropic, input={"cents": 5})])
        self.assertEqual(keys[-1], keys[-2])


class TestOneExecutorPerSet(unittest.TestCase):
    """A ToolSet keeps one executor, so resources hold across separate runs."""

    def test_a_resource_holds_across_runs_from_two_threads(self) -> None:
        inside = [0]
        overlap = [False]
        lock = threading.Lock()
        both = threading.Barrier(2, timeout=30)

        @at.tool(resource="db")
        def write(n: int) -> str:
            """Write to the database."""
            with lock:
                inside[0] += 1
                overlap[0] |= inside[0] > 1
            at.cancel_event().wait(0.2)
            with lock:
                inside[0] -= 1
            return "ok"

        ts = at.ToolSet([write])

        def one(cid: str) -> None:
            both.wait()
            ts.run([responses_call(cid, "write", {"n": 1})])

        threads = [threading.Thread(target=one, args=(c,)) for c in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertFalse(overlap[0])
        self.assertIs(ts.executor, ts.executor)
        mine = at.Executor(max_parallel=2)
        ts.executor = mine
        self.assertIs(ts.executor, mine)
        with self.assertRaises(TypeError):
            ts.executor = "no"  # type: ignore[assignment]


# ----- crash injection -----------------------------------------------------------------------
# A child process runs a journaled batch and dies by SIGKILL at one point of one call's life;
# another process resumes the run.  The points, in the order of a call's life:
POINTS = ("before-intent", "tool-start", "tool-end", "before-outcome", "before-consumer")

CHILD = r"""
import json, os, signal, sqlite3, sys
sys.path.insert(0, {here!r})
import agenttool as at

path, run, point, victim, effects, calls = sys.argv[1:7]
calls = json.loads(calls)
pg = os.environ.get("JOURNAL_PG")

def die():
    os.kill(os.getpid(), signal.SIGKILL)

class Cursor:
    # Dies as the victim's outcome is about to be written (after its tool returned).
    def __init__(self, cur):
        self.cur = cur
    def execute(self, sql, params=()):
        if (point == "before-outcome" and sql.startswith("UPDATE agenttool_calls SET status")
                and params[-1] == victim):
            die()
        return self.cur.execute(sql, params)
    def fetchall(self):
        return self.cur.fetchall()
    def close(self):
        self.cur.close()
    @property
    def description(self):
        return self.cur.description

class Connection:
    def __init__(self):
        if pg:
            import psycopg
            self.conn = psycopg.connect(pg)
        else:
            self.conn = sqlite3.connect(path, timeout=30)
    def cursor(self):
        return Cursor(self.conn.cursor())
    def commit(self):
        self.conn.commit()
    def rollback(self):
        self.conn.rollback()
    def close(self):
        self.conn.close()

if pg or point == "before-outcome":
    journal = at.Journal(connect=Connection, paramstyle="format" if pg else "qmark")
else:
    journal = at.Journal(path)

def body(name):
    call = at.current_call()
    if point == "tool-start" and call.id == victim:
        die()
    with open(effects, "a") as f:
        f.write(json.dumps([name, run, call.id, call.idempotency_key]) + "\n")
    if point == "tool-end" and call.id == victim:
        die()
    return name + " done " + call.id

@at.tool(replay=at.Replay.UNKNOWN)
def charge(n: int) -> str:
    return body("charge")

@at.tool(replay=at.Replay.KEYED)
def pay(n: int) -> str:
    return body("pay")

@at.tool(replay=at.Replay.SAFE)
def look(n: int) -> str:
    return body("look")

tools = {{"charge": charge, "pay": pay, "look": look}}

def on_start(job):
    if point == "before-intent" and job.call.id == victim:
        die()

resolve = json.loads(os.environ.get("RESOLVE", "{{}}"))
ex = at.Executor(journal=journal, on_start=on_start)
jobs = [at.Job(tools[name], at.Call(cid, {{"n": i}})) for i, (cid, name) in enumerate(calls)]
out = {{}}

def take(e):
    if not e.final:
        return
    cid = jobs[e.index].call.id
    if point == "before-consumer" and cid == victim:
        die()
    kind = type(e.error).__name__ if e.error is not None else None
    text = e.result.output if e.result is not None else str(e.error)
    assert cid not in out, "two final events"
    out[cid] = [kind, text, e.replayed]

if os.environ.get("JOURNAL_ASYNC"):
    import asyncio

    async def main():
        async for e in ex.aexecute(jobs, run=run, resolve=resolve):
            take(e)

    asyncio.run(main())
else:
    for e in ex.execute(jobs, run=run, resolve=resolve):
        take(e)
print(json.dumps(out))
"""


def run_child(
    path: str,
    run: str,
    point: str,
    victim: str,
    effects: str,
    calls: list[list[str]],
    resolve: dict[str, Any] | None = None,
    pg: str = "",
) -> tuple[int, dict[str, Any]]:
    env = dict(os.environ, RESOLVE=json.dumps(resolve or {}), JOURNAL_PG=pg)
    env["JOURNAL_ASYNC"] = "1" if run.startswith("async") else ""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD.format(here=HERE),
            path,
            run,
            point,
            victim,
            effects,
            json.dumps(calls),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    if proc.returncode == 0:
        return 0, json.loads(proc.stdout)
    if proc.returncode != -9:
        raise AssertionError(f"child failed ({proc.returncode}): {proc.stderr}")
    return proc.returncode, {}


class CrashChecks:
    """The invariants of a crashed and resumed run, over the effects the tools logged."""

    def check_run(
        self: Any,
        path: str,
        effects: str,
        run: str,
        point: str,
        victim: str,
        calls: list[list[str]],
        pg: str = "",
    ) -> None:
        code, _ = run_child(path, run, point, victim, effects, calls, pg=pg)
        self.assertEqual(code, -9, f"{point} {victim}: the child was not killed")
        code, first = run_child(path, run, "none", "", effects, calls, pg=pg)
        self.assertEqual(code, 0)
        self.assertEqual(sorted(first), sorted(c for c, _ in calls))
        uncertain = {
            c: "settled by the host" for c, (kind, _, _) in first.items() if kind == "Uncertain"
        }
        for cid in uncertain:
            self.assertEqual(dict(calls)[cid], "charge", f"only UNKNOWN calls are uncertain: {cid}")
        code, second = run_child(path, run, "none", "", effects, calls, uncertain, pg=pg)
        code, third = run_child(path, run, "none", "", effects, calls, pg=pg)
        for cid, _ in calls:
            self.assertNotEqual(second[cid][0], "Uncertain")
            self.assertTrue(third[cid][2], f"{cid} is replayed once it has an outcome")
            self.assertEqual(third[cid][:2], second[cid][:2], "replayed as stored")
        with open(effects, encoding="utf-8") as f:
            logged = [json.loads(line) for line in f if line.strip()]
        mine = [e for e in logged if e[1] == run]
        for cid, name in calls:
            runs = [e for e in mine if e[2] == cid]
            if name == "charge":
                self.assertLessEqual(len(runs), 1, f"an UNKNOWN call ran twice: {point} {cid}")
            if name == "pay":
                self.assertLessEqual(
                    len({e[3] for e in runs}), 1, f"a KEYED call got a new key: {cid}"
                )

    def check_runs(
        self: Any,
        path: str,
        effects: str,
        runs: list[tuple[str, str, str]],
        calls: list[list[str]],
        pg: str = "",
    ) -> None:
        """``check_run`` for each (run, point, victim), two at a time: runs are independent
        journal keys, so their crashed and resumed children may share the journal as agents
        on one machine would (each run logs its effects to a file of its own)."""
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            checks = [
                pool.submit(self.check_run, path, f"{effects}-{run}", run, point, victim, calls, pg)
                for run, point, victim in runs
            ]
            for check in checks:
                check.result()


class TestCrashInjection(unittest.TestCase, CrashChecks):
    CALLS = [["k1", "charge"], ["k2", "pay"], ["k3", "look"], ["k4", "charge"]]

    def test_sigkill_at_each_point_of_each_kind_of_call(self) -> None:
        # every point with every kind of call (UNKNOWN k1, KEYED k2, SAFE k3) in the slow
        # suite; in the default run every point once and every kind at least once
        victims = ("k1", "k2", "k3")
        with tempfile.TemporaryDirectory() as d:
            path, effects = os.path.join(d, "agent.db"), os.path.join(d, "effects")
            runs = [
                (f"{point}-{victim}", point, victim)
                for i, point in enumerate(POINTS)
                for victim in (victims if RUN_SLOW else victims[i % 3 : i % 3 + 1])
            ]
            self.check_runs(path, effects, runs, self.CALLS)

    def test_sigkill_during_aexecute(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            path, effects = os.path.join(d, "agent.db"), os.path.join(d, "effects")
            points = ("tool-end", "before-outcome", "before-consumer")
            runs = [(f"async-{point}", point, "k1") for point in points]
            self.check_runs(path, effects, runs, self.CALLS)

    def test_the_host_reads_uncertain_calls_with_the_command_line(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            path, effects = os.path.join(d, "agent.db"), os.path.join(d, "effects")
            run_child(path, "cli", "tool-end", "k1", effects, self.CALLS)
            run_child(path, "cli", "none", "", effects, self.CALLS)
            cli = subprocess.run(
                [sys.executable, os.path.join(HERE, "agenttool.py"), "journal", path],
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual(cli.returncode, 0, cli.stderr)
            self.assertIn("uncertain: k1 charge", cli.stdout)


# Many crashes, cheaply: one driver process forks a child per attempt (the driver itself never
# starts a thread, so forking is safe), kills it at a random point and resumes in another child.
DRIVER = r"""
import json, os, random, signal, sys
sys.path.insert(0, {here!r})
import agenttool as at

path, effects, trials, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
POINTS = {points!r}

def body(name):
    call = at.current_call()
    if POINT[0] == "tool-start" and call.id == VICTIM[0]:
        os.kill(os.getpid(), signal.SIGKILL)
    with open(effects, "a") as f:
        f.write(json.dumps([name, RUN[0], call.id, call.idempotency_key]) + "\n")
    if POINT[0] == "tool-end" and call.id == VICTIM[0]:
        os.kill(os.getpid(), signal.SIGKILL)
    return name + " done " + call.id

@at.tool(replay=at.Replay.UNKNOWN)
def charge(n: int) -> str:
    return body("charge")

@at.tool(replay=at.Replay.KEYED)
def pay(n: int) -> str:
    return body("pay")

@at.tool(replay=at.Replay.SAFE)
def look(n: int) -> str:
    return body("look")

TOOLS = {{"charge": charge, "pay": pay, "look": look}}
POINT, VICTIM, RUN = [""], [""], [""]

class Dying(at.Journal):
    def outcome(self, run, call_id, outcome, status="done"):
        if POINT[0] == "before-outcome" and call_id == VICTIM[0]:
            os.kill(os.getpid(), signal.SIGKILL)
        super().outcome(run, call_id, outcome, status)

def on_start(job):
    if POINT[0] == "before-intent" and job.call.id == VICTIM[0]:
        os.kill(os.getpid(), signal.SIGKILL)

def attempt(calls, resolve, out_path):
    pid = os.fork()
    if pid == 0:
        try:
            pg = os.environ.get("JOURNAL_PG")
            if pg:
                import psycopg

                journal = Dying(connect=lambda: psycopg.connect(pg))
            else:
                journal = Dying(path, synchronous="NORMAL")
            ex = at.Executor(journal=journal, on_start=on_start)
            jobs = [at.Job(TOOLS[n], at.Call(c, {{"n": i}})) for i, (c, n) in enumerate(calls)]
            out = {{}}
            for e in ex.execute(jobs, run=RUN[0], resolve=resolve):
                if e.final:
                    cid = jobs[e.index].call.id
                    if POINT[0] == "before-consumer" and cid == VICTIM[0]:
                        os.kill(os.getpid(), signal.SIGKILL)
                    if cid in out:
                        os._exit(5)
                    text = e.result.output if e.result is not None else str(e.error)
                    kind = type(e.error).__name__ if e.error is not None else None
                    out[cid] = [kind, text, e.replayed]
            with open(out_path, "w") as f:
                json.dump(out, f)
            os._exit(0)
        except BaseException:
            import traceback
            traceback.print_exc()
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return None
    if os.WEXITSTATUS(status) != 0:
        raise SystemExit("attempt failed with status %d" % os.WEXITSTATUS(status))
    with open(out_path) as f:
        return json.load(f)

problems = []
crashed = 0
for trial in range(trials):
    size = rng.randint(1, 5)
    calls = [["t%d-%d" % (trial, i), rng.choice(["charge", "pay", "look"])] for i in range(size)]
    RUN[0] = "run-%d-%d" % (seed, trial)
    POINT[0] = rng.choice(POINTS)
    VICTIM[0] = rng.choice(calls)[0]
    out_path = path + ".out"
    if attempt(calls, {{}}, out_path) is None:
        crashed += 1
    POINT[0] = "none"
    first = attempt(calls, {{}}, out_path)
    resolve = {{c: "settled" for c, v in first.items() if v[0] == "Uncertain"}}
    second = attempt(calls, resolve, out_path)
    third = attempt(calls, {{}}, out_path)
    for c, name in calls:
        if first[c][0] == "Uncertain" and name != "charge":
            problems.append("%s %s uncertain" % (RUN[0], c))
        if second[c][0] == "Uncertain" or not third[c][2] or third[c][:2] != second[c][:2]:
            problems.append("%s %s not settled or not replayed as stored" % (RUN[0], c))
logged = [json.loads(l) for l in open(effects) if l.strip()]
seen = {{}}
for name, run, cid, key in logged:
    seen.setdefault((run, cid, name), []).append(key)
for (run, cid, name), keys in seen.items():
    if name == "charge" and len(keys) > 1:
        problems.append("UNKNOWN ran twice: %s %s" % (run, cid))
    if name == "pay" and len(set(keys)) > 1:
        problems.append("KEYED got a new key: %s %s" % (run, cid))
print(json.dumps({{"trials": trials, "crashed": crashed, "problems": problems}}))
"""


@slow
@unittest.skipUnless(hasattr(os, "fork"), "needs os.fork")
def drive(test: unittest.TestCase, python: str, trials: int, seed: int, pg: str = "") -> None:
    """Run DRIVER's ``trials`` crashed and resumed runs under ``python``; no problem may show."""
    with tempfile.TemporaryDirectory() as d:
        code = DRIVER.format(here=HERE, points=POINTS)
        args = [os.path.join(d, "agent.db"), os.path.join(d, "fx"), str(trials), str(seed)]
        proc = subprocess.run(
            [python, "-c", code, *args],
            capture_output=True,
            text=True,
            timeout=900,
            env=dict(os.environ, JOURNAL_PG=pg),
        )
        test.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        report = json.loads(proc.stdout)
        test.assertEqual(report["problems"], [])
        test.assertGreater(report["crashed"], trials * 0.8)  # nearly every trial really died


class TestRandomCrashes(unittest.TestCase):
    def test_500_runs_killed_at_random_points(self) -> None:
        drive(self, sys.executable, 500, 18)

    def test_on_the_oldest_and_newest_cpython(self) -> None:
        for version in ("3.9.18", "3.13.0"):
            python = f"/root/.pyenv/versions/{version}/bin/python"
            if not os.path.exists(python):
                absent(f"CPython {version} at {python}")
            with self.subTest(version):
                drive(self, python, 100, 39 if version.startswith("3.9") else 313)


@slow
@needs(psycopg is not None and os.path.exists(PG_BIN + "/initdb"), "needs psycopg and PostgreSQL")
class TestPostgresRuns(unittest.TestCase, CrashChecks):
    """The crash points and two racing resumers on the PostgreSQL server the test starts
    (started and stopped as the storage layer's own PostgreSQL tests do)."""

    setUpClass = test_journal.TestJournalPostgres.__dict__["setUpClass"]
    tearDownClass = test_journal.TestJournalPostgres.__dict__["tearDownClass"]
    connect = test_journal.TestJournalPostgres.connect
    port: int

    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"

    def test_sigkill_at_each_point_on_postgres(self) -> None:
        calls = [["p1", "charge"], ["p2", "pay"], ["p3", "look"]]
        with tempfile.TemporaryDirectory() as d:
            effects = os.path.join(d, "effects")
            runs = [(f"pg-{p}-{v}", p, v) for p in POINTS for v in ("p1", "p2")]
            self.check_runs("", effects, runs, calls, pg=self.dsn())

    def test_100_runs_killed_at_random_points_on_postgres(self) -> None:
        drive(self, sys.executable, 100, 5432, pg=self.dsn())

    def test_an_approval_is_recorded_with_the_intent_on_postgres(self) -> None:
        journal = at.Journal(connect=self.connect)
        try:
            digest = "d" * 64
            approval = {"by": "approver", "answer": "allowed", "args_hash": "x"}
            journal.intent("pg-approval", "a1", "delete", digest, {"path": "/x"}, approval)
            with self.assertRaisesRegex(at.JournalError, "other arguments"):
                journal.intent("pg-approval", "a1", "delete", digest, {"path": "/y"}, approval)
            records = journal.records("pg-approval", "a1")
            self.assertEqual(
                [(r.ns, json.loads(r.data)) for r in records], [(at.APPROVAL_RECORD, approval)]
            )
        finally:
            journal.close()

    def test_two_resumers_at_once_get_one_winner(self) -> None:
        journal = at.Journal(connect=self.connect)
        gate = threading.Event()
        started = threading.Event()

        @at.tool(replay=at.Replay.UNKNOWN)
        def hold_on() -> str:
            started.set()
            gate.wait(30)
            return "done"

        job = [at.Job(hold_on, at.Call("h1", {}))]
        first = at.Executor(journal=journal).execute(job, run="race")
        runner = threading.Thread(target=lambda: list(first))
        runner.start()
        try:
            self.assertTrue(started.wait(30))
            other = at.Journal(connect=self.connect)
            with self.assertRaisesRegex(at.JournalError, "is held by"):
                next(at.Executor(journal=other).execute(job, run="race"))
            other.close()
        finally:
            gate.set()
            runner.join(30)
        self.assertEqual(journal.calls("race")[0]["status"], "done")
        journal.close()


if __name__ == "__main__":
    unittest.main()
