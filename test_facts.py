"""Facts: what a call amounts to, asked before it runs.

The readers (``facts_of``, ``is_factual``), the ``facts=`` option of ``@tool`` and ``new``,
forwarding by ``wrap``, the JSON form, and what an approver sees and runs: ``Job.facts``,
``Pending.facts``, the rewrite, the approval hash and the journal.  Standard library only:
runs on CPython 3.9 with nothing installed.
"""

from __future__ import annotations

import json
import os
import tempfile
import unittest
from typing import Any

import agenttool as at


def responses_call(call_id: str, name: str, args: Any) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(args),
    }


def finals(events: Any) -> list[at.Event]:
    return [e for e in events if e.final]


def shell_facts(args: dict[str, Any]) -> at.Facts:
    """The facts of a shell whose command is ``cat .env > out/x``: a read and a write, and
    the command stamped by the rewrite."""
    return at.Facts(
        [
            at.FactCall("read", {"path": ".env"}, "read .env"),
            at.FactCall("write", {"path": "out/x"}),
            at.FactCall("", args),
        ],
        rewrite={"command": args["command"], "stamp": "abc"},
    )


class Ran:
    """A tool body that records the arguments each run got."""

    def __init__(self) -> None:
        self.args: list[dict[str, Any]] = []

    def __call__(self, command: str, stamp: str = "") -> str:
        self.args.append({"command": command, "stamp": stamp})
        return f"ran {command} {stamp}".strip()


class TestFactsValue(unittest.TestCase):
    def test_no_calls_is_the_call_itself_and_an_empty_list_is_not(self) -> None:
        itself, nothing = at.Facts(), at.Facts([])
        self.assertIsNone(itself.calls)
        self.assertEqual(nothing.calls, [])
        self.assertIsNotNone(nothing.calls)
        self.assertNotEqual(itself, nothing)
        self.assertIsNone(itself.rewrite)

    def test_a_fact_call_with_no_tool_names_the_claiming_tool(self) -> None:
        c = at.FactCall(args={"path": "x"})
        self.assertEqual((c.tool, c.args, c.text), ("", {"path": "x"}, ""))

    def test_bad_values_are_refused_when_made(self) -> None:
        for bad in ("x", [{"tool": "a"}], {"tool": "a"}):
            with self.assertRaises(TypeError):
                at.Facts(bad)  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            at.Facts(None, rewrite="x")  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            at.FactCall("a", args="x")  # type: ignore[arg-type]

    def test_the_json_form_keeps_null_calls_apart_from_empty_ones(self) -> None:
        self.assertEqual(json.dumps(at.Facts().to_json()), '{"calls": null}')
        self.assertEqual(json.dumps(at.Facts([]).to_json()), '{"calls": []}')
        f = shell_facts({"command": "cat .env > out/x"})
        self.assertEqual(
            f.to_json(),
            {
                "calls": [
                    {"tool": "read", "args": {"path": ".env"}, "text": "read .env"},
                    {"tool": "write", "args": {"path": "out/x"}},
                    {"tool": "", "args": {"command": "cat .env > out/x"}},
                ],
                "rewrite": {"command": "cat .env > out/x", "stamp": "abc"},
            },
        )
        for facts in (at.Facts(), at.Facts([]), f, at.Facts([at.FactCall("t")])):
            self.assertEqual(at.Facts.from_json(json.loads(json.dumps(facts.to_json()))), facts)

    def test_reading_json_refuses_what_is_not_facts(self) -> None:
        self.assertEqual(at.Facts.from_json({}), at.Facts())  # absent calls: the call itself
        for bad in ([], {"calls": {}}, {"calls": [1]}, {"calls": [{"tool": 1}]}, {"rewrite": 1}):
            with self.assertRaises(ValueError):
                at.Facts.from_json(bad)


class TestFactsReaders(unittest.TestCase):
    def test_a_tool_without_facts_claims_none_and_reads_as_the_call_itself(self) -> None:
        @at.tool
        def plain(command: str) -> str:
            """Run it."""
            return command

        self.assertFalse(at.is_factual(plain))
        self.assertEqual(at.facts_of(plain, {"command": "ls"}), (at.Facts(), False))

    def test_the_option_of_tool_and_new_and_a_method_all_claim(self) -> None:
        @at.tool(facts=shell_facts)
        def sh(command: str, stamp: str = "") -> str:
            """Run a command."""
            return command

        made = at.new("sh2", "Run a command.", Ran(), facts=shell_facts)

        class HandWritten:
            name, description, parameters = "hand", "Hand written.", None

            def facts(self, args: dict[str, Any]) -> at.Facts:
                return at.Facts([])

            def execute(self, call: at.Call) -> at.Result:
                return at.text("ran")

        args = {"command": "cat .env > out/x"}
        for t in (sh, made):
            self.assertTrue(at.is_factual(t))
            self.assertEqual(at.facts_of(t, args), (shell_facts(args), True))
        self.assertTrue(at.is_factual(HandWritten()))
        self.assertEqual(at.facts_of(HandWritten(), {}), (at.Facts([]), True))
        self.assertEqual(sh(command="ls"), "ls")  # still the plain function

    def test_is_factual_never_asks_the_tool(self) -> None:
        asked: list[Any] = []
        t = at.new("t", "T.", Ran(), facts=lambda args: asked.append(args) or at.Facts())
        self.assertTrue(at.is_factual(t))
        self.assertEqual(asked, [])

    def test_an_error_propagates_from_facts_of(self) -> None:
        def broken(args: dict[str, Any]) -> at.Facts:
            raise LookupError("cannot read the command")

        t = at.new("t", "T.", Ran(), facts=broken)
        with self.assertRaisesRegex(LookupError, "cannot read the command"):
            at.facts_of(t, {"command": "ls"})

    def test_an_answer_that_is_not_facts_raises(self) -> None:
        t = at.new("t", "T.", Ran(), facts=lambda args: {"calls": None})
        with self.assertRaisesRegex(TypeError, 'tool "t": facts.*must return a Facts'):
            at.facts_of(t, {})

    def test_a_rewrite_is_checked_against_the_schema(self) -> None:
        t = at.new("t", "T.", Ran(), facts=lambda args: at.Facts(rewrite={"command": 5}))
        with self.assertRaisesRegex(ValueError, r'tool "t".*rewrite.*expected string'):
            at.facts_of(t, {"command": "ls"})
        ok = at.new("t", "T.", Ran(), facts=lambda args: at.Facts(rewrite={"command": "ls -l"}))
        self.assertEqual(at.facts_of(ok, {"command": "ls"})[0].rewrite, {"command": "ls -l"})

    def test_an_option_that_is_not_a_function_is_refused(self) -> None:
        with self.assertRaisesRegex(TypeError, "'t': facts must be a function"):
            at.new("t", "T.", Ran(), facts=at.Facts())  # type: ignore[arg-type]

    def test_facts_are_never_part_of_the_definition_or_its_hash(self) -> None:
        plain = at.new("sh", "Run a command.", Ran())
        factual = at.new("sh", "Run a command.", Ran(), facts=shell_facts)
        self.assertEqual(at.definition(plain), at.definition(factual))
        self.assertEqual(at.definition_hash(plain), at.definition_hash(factual))

    def test_facts_is_a_property_with_its_reader(self) -> None:
        self.assertIs(at.PROPERTIES["facts"], at.facts_of)

    def test_wrap_prefix_and_retrying_forward_facts_and_their_presence(self) -> None:
        inner = at.new("sh", "Run a command.", Ran(), facts=shell_facts)
        args = {"command": "ls"}
        for outer in (
            at.wrap(inner, inner.execute),
            at.ToolSet([inner]).prefixed("x")[0],
            at.retrying(inner),
        ):
            self.assertTrue(at.is_factual(outer))
            self.assertEqual(at.facts_of(outer, args), at.facts_of(inner, args))
        plain = at.wrap(at.new("p", "P.", Ran()), lambda call: at.text(""))
        self.assertFalse(at.is_factual(plain))


class TestApproverSeesFacts(unittest.TestCase):
    def setUp(self) -> None:
        self.ran = Ran()
        self.asked: list[dict[str, Any]] = []

        def facts(args: dict[str, Any]) -> at.Facts:
            self.asked.append(args)
            return shell_facts(args)

        self.sh = at.new("sh", "Run a command.", self.ran, facts=facts, needs_approval=True)

    def run_one(self, tool: at.Tool, args: dict[str, Any], **options: Any) -> at.Event:
        job = at.Job(tool, at.Call("c1", json.dumps(args)))
        return finals(at.Executor(**options).execute([job]))[0]

    def test_the_approver_reads_the_jobs_facts_and_the_rewrite_runs(self) -> None:
        seen: list[at.Job] = []
        event = self.run_one(
            self.sh, {"command": "cat .env > out/x"}, approver=lambda job: seen.append(job) or True
        )
        self.assertEqual(event.result, at.text("ran cat .env > out/x abc"))
        self.assertEqual(seen[0].facts, shell_facts({"command": "cat .env > out/x"}))
        self.assertEqual(seen[0].call.args, {"command": "cat .env > out/x"})  # as the model wrote
        self.assertEqual(self.ran.args, [{"command": "cat .env > out/x", "stamp": "abc"}])

    def test_a_policy_decides_on_what_the_call_amounts_to(self) -> None:
        def policy(job: at.Job) -> Any:
            assert job.facts is not None and job.facts.calls is not None
            if any(c.tool == "read" and c.args == {"path": ".env"} for c in job.facts.calls):
                return "reading .env is not allowed"
            return True

        event = self.run_one(self.sh, {"command": "cat .env > out/x"}, approver=policy)
        self.assertEqual(
            at.error_result(event.error), at.text("Error: reading .env is not allowed")
        )
        self.assertEqual(self.ran.args, [])

    def test_a_dict_answer_runs_as_the_approver_wrote_it(self) -> None:
        event = self.run_one(
            self.sh, {"command": "rm -r /"}, approver=lambda job: {"command": "ls"}
        )
        self.assertEqual(event.result, at.text("ran ls"))
        self.assertEqual(self.ran.args, [{"command": "ls", "stamp": ""}])

    def test_a_facts_error_denies_the_call_and_it_never_runs(self) -> None:
        def broken(args: dict[str, Any]) -> at.Facts:
            raise LookupError("cannot parse the command")

        asked: list[at.Job] = []
        t = at.new("sh", "Run.", self.ran, facts=broken, needs_approval=True)
        event = self.run_one(t, {"command": "ls"}, approver=lambda job: asked.append(job) or True)
        self.assertIsInstance(event.error, at.ToolError)
        self.assertIn("could not be established", at.error_message(event.error))
        self.assertIsInstance(event.error.__cause__, LookupError)
        self.assertEqual((asked, self.ran.args), ([], []))
        for errors in ("redacted", "full"):  # the library's denial, whatever the policy
            event = self.run_one(t, {"command": "ls"}, approver=lambda job: True, errors=errors)
            self.assertNotIn("cannot parse", at.error_message(event.error))

    def test_a_rewrite_the_schema_refuses_denies_the_call(self) -> None:
        t = at.new(
            "sh", "Run.", self.ran, facts=lambda a: at.Facts(rewrite={"x": 1}), needs_approval=True
        )
        event = self.run_one(t, {"command": "ls"}, approver=lambda job: True)
        self.assertIsInstance(event.error, at.ToolError)
        self.assertIn("missing required property", str(event.error.__cause__))
        self.assertEqual(self.ran.args, [])

    def test_an_empty_list_reaches_the_approver_as_an_empty_list(self) -> None:
        seen: list[at.Job] = []
        t = at.new("t", "T.", self.ran, facts=lambda a: at.Facts([]), needs_approval=True)
        self.run_one(t, {"command": "ls"}, approver=lambda job: seen.append(job) or True)
        assert seen[0].facts is not None
        self.assertEqual(seen[0].facts.calls, [])

    def test_a_tool_that_claims_nothing_reaches_the_approver_as_the_call_itself(self) -> None:
        seen: list[at.Job] = []
        t = at.new("t", "T.", self.ran, needs_approval=True)
        self.run_one(t, {"command": "ls"}, approver=lambda job: seen.append(job) or True)
        self.assertEqual(seen[0].facts, at.Facts())
        self.assertEqual(self.ran.args, [{"command": "ls", "stamp": ""}])

    def test_on_start_sees_the_facts_and_the_call_that_runs(self) -> None:
        started: list[at.Job] = []
        self.run_one(self.sh, {"command": "ls"}, approver=lambda job: True, on_start=started.append)
        self.assertEqual(started[0].facts, shell_facts({"command": "ls"}))
        self.assertEqual(started[0].call.args, {"command": "ls", "stamp": "abc"})

    def test_a_call_that_needs_no_approval_is_not_asked_for_facts(self) -> None:
        t = at.new("sh", "Run.", self.ran, facts=shell_facts)
        started: list[at.Job] = []
        event = self.run_one(t, {"command": "ls"}, on_start=started.append)
        self.assertEqual(event.result, at.text("ran ls"))
        self.assertIsNone(started[0].facts)
        self.assertEqual(self.asked, [])

    def test_without_an_approver_the_call_is_denied_unasked(self) -> None:
        event = self.run_one(self.sh, {"command": "ls"})
        self.assertIn("no approver", at.error_message(event.error))
        self.assertEqual((self.asked, self.ran.args), ([], []))


class TestPendingFacts(unittest.TestCase):
    def setUp(self) -> None:
        self.ran = Ran()
        self.sh = at.new("sh", "Run a command.", self.ran, facts=shell_facts, needs_approval=True)
        self.ts = at.ToolSet([self.sh])

    def test_a_pending_call_carries_its_facts_and_its_approval_runs_the_rewrite(self) -> None:
        items = [responses_call("a", "sh", {"command": "cat .env > out/x"})]
        out = self.ts.run(items, approvals={})
        self.assertEqual(list(out), [])
        p = out.pending[0]
        self.assertEqual(p.facts, shell_facts({"command": "cat .env > out/x"}))
        self.assertEqual(p.arguments, {"command": "cat .env > out/x"})
        again = self.ts.run([p.item], approvals={p.hash: True})
        self.assertEqual(again[0]["output"], "ran cat .env > out/x abc")
        self.assertEqual(self.ran.args, [{"command": "cat .env > out/x", "stamp": "abc"}])

    def test_the_hash_covers_a_factual_tools_facts(self) -> None:
        box = {"target": "/etc/hosts"}

        def deletes(args: dict[str, Any]) -> at.Facts:
            return at.Facts(
                [at.FactCall("rm", {"path": box["target"]}, f"deletes {box['target']}")]
            )

        t = at.new("sh", "Run.", self.ran, facts=deletes, needs_approval=True)
        ts = at.ToolSet([t])
        item = responses_call("a", "sh", {"command": "rm link"})
        first = ts.run([item], approvals={})
        box["target"] = "/etc/passwd"  # the link now points elsewhere: another call
        out = ts.run([item], approvals={first.pending[0].hash: True})
        self.assertEqual(list(out), [])
        self.assertEqual(out.pending[0].facts.calls[0].text, "deletes /etc/passwd")  # type: ignore[index]
        self.assertNotEqual(out.pending[0].hash, first.pending[0].hash)
        self.assertEqual(self.ran.args, [])

    def test_a_tool_that_claims_nothing_keeps_the_hash_of_its_call_alone(self) -> None:
        t = at.new("plain", "Run.", self.ran, needs_approval=True)
        out = at.ToolSet([t]).run([responses_call("a", "plain", {"command": "ls"})], approvals={})
        p = out.pending[0]
        self.assertEqual(p.facts, at.Facts())
        keyed = {"call_id": "a", "name": "plain", "arguments": {"command": "ls"}}
        canonical = json.dumps(keyed, sort_keys=True, separators=(",", ":"))
        import hashlib

        self.assertEqual(p.hash, "sha256:" + hashlib.sha256(canonical.encode()).hexdigest())

    def test_a_facts_error_refuses_the_call_rather_than_leaving_it_pending(self) -> None:
        def broken(args: dict[str, Any]) -> at.Facts:
            raise LookupError("cannot parse")

        t = at.new("sh", "Run.", self.ran, facts=broken, needs_approval=True)
        out = at.ToolSet([t]).run([responses_call("a", "sh", {"command": "ls"})], approvals={})
        self.assertEqual(out.pending, [])
        self.assertIn("could not be established", out[0]["output"])
        self.assertEqual(self.ran.args, [])


class TestFactsAndTheJournal(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.journal = at.Journal(os.path.join(self.dir.name, "j.db"))
        self.ran = Ran()
        self.sh = at.new(
            "sh",
            "Run.",
            self.ran,
            facts=shell_facts,
            needs_approval=True,
            replay=at.Replay.SAFE,
        )

    def tearDown(self) -> None:
        self.journal.close()
        self.dir.cleanup()

    def test_the_journal_keeps_the_call_as_the_model_wrote_it_under_a_rewrite(self) -> None:
        ex = at.Executor(journal=self.journal, approver=lambda job: True)
        job = at.Job(self.sh, at.Call("c1", '{"command": "ls"}'))
        first = finals(ex.execute([job], run="r"))[0]
        self.assertEqual(first.result, at.text("ran ls abc"))
        again = finals(ex.execute([job], run="r"))[0]  # resumed: replayed, not refused
        self.assertTrue(again.replayed)
        self.assertEqual(again.result, at.text("ran ls abc"))
        self.assertEqual(len(self.ran.args), 1)

    def test_an_approvers_dict_answer_is_journaled_as_the_model_wrote_it(self) -> None:
        plain = at.new("sh", "Run.", self.ran, needs_approval=True, replay=at.Replay.SAFE)
        ex = at.Executor(journal=self.journal, approver=lambda job: {"command": "ls -l"})
        job = at.Job(plain, at.Call("c1", '{"command": "rm -r /"}'))
        first = finals(ex.execute([job], run="r"))[0]
        self.assertEqual(first.result, at.text("ran ls -l"))
        again = finals(ex.execute([job], run="r"))[0]
        self.assertTrue(again.replayed, again.error)
        self.assertEqual(len(self.ran.args), 1)

    def test_an_approved_pending_call_is_journaled_as_the_model_wrote_it(self) -> None:
        ts = at.ToolSet([self.sh])
        items = [responses_call("a", "sh", {"command": "ls"})]
        first = ts.run(items, approvals={}, journal=self.journal, run="t")
        answers = {first.pending[0].hash: True}
        out = ts.run(items, approvals=answers, journal=self.journal, run="t")
        self.assertEqual(out[0]["output"], "ran ls abc")
        replayed = ts.run(items, approvals=answers, journal=self.journal, run="t")
        self.assertEqual(replayed[0]["output"], "ran ls abc")
        self.assertEqual(len(self.ran.args), 1)


if __name__ == "__main__":
    unittest.main()
