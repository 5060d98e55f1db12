"""Tests of the tool contract and the executor (DESIGN §2), through the public API."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import decimal
import enum
import json
import os
import random
import threading
import unittest
import uuid
from typing import Any, Dict, List, Optional

import agenttool as at

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "shared", "conformance", "agenttool-schema")


class Bare:
    """A tool written by hand that declares nothing optional."""

    name = "bare"
    description = "does nothing"
    parameters: Optional[Dict[str, Any]] = None

    def execute(self, call: at.Call) -> at.Result:
        return at.text("bare")


class Everything(Bare):
    """A tool written by hand that declares every optional property."""

    name = "everything"
    strict = True
    sequential = False
    resource = "shell:session"
    annotations = at.Annotations(title="All", read_only=True, destructive=False)

    def __init__(self) -> None:
        self.closed = 0

    def confined(self, args: Dict[str, Any]) -> tuple[bool, str]:
        return (True, "landlock+seccomp")

    def replay(self, args: Dict[str, Any]) -> at.Replay:
        return at.Replay.SAFE

    def close(self) -> None:
        self.closed += 1


# A non-default sample for every property in at.PROPERTIES: adding a property to the contract
# without a sample here fails test_every_property_has_a_sample, and a sample wrap does not
# forward fails test_wrap_forwards_every_property.
SAMPLES: Dict[str, Any] = {
    "strict": True,
    "sequential": True,
    "resource": "container:47",
    "annotations": at.Annotations(idempotent=True),
    "confined": lambda args: (True, "container:agent-sandbox"),
    "replay": lambda args: at.Replay.KEYED,
}


def raw(fn: Any, name: str = "raw", **options: Any) -> at.Tool:
    return at.new_func(name, "a raw tool", None, fn, **options)


def finals(events: List[at.Event]) -> List[at.Event]:
    return [e for e in events if e.final]


class TestProperties(unittest.TestCase):
    def test_readers_give_the_defaults_for_a_tool_that_declares_nothing(self) -> None:
        t = Bare()
        self.assertFalse(at.is_strict(t))
        self.assertFalse(at.is_sequential(t))
        self.assertEqual(at.resource_of(t), "")
        self.assertIsNone(at.annotations_of(t))
        self.assertEqual(at.confined_by(t, {}), (False, ""))
        self.assertIs(at.replay_of(t, {}), at.Replay.UNKNOWN)
        self.assertFalse(hasattr(t, "close"))

    def test_readers_read_what_a_tool_declares(self) -> None:
        t = Everything()
        self.assertTrue(at.is_strict(t))
        self.assertEqual(at.resource_of(t), "shell:session")
        self.assertEqual(at.annotations_of(t), at.Annotations("All", True, False))
        self.assertEqual(at.confined_by(t, {}), (True, "landlock+seccomp"))
        self.assertIs(at.replay_of(t, {}), at.Replay.SAFE)

    def test_a_sequential_tool_reads_no_resource(self) -> None:
        t = raw(lambda c: "", sequential=True, resource="shell:session")
        self.assertTrue(at.is_sequential(t))
        self.assertEqual(at.resource_of(t), "")

    def test_an_unknown_replay_answer_reads_unknown(self) -> None:
        t = raw(lambda c: "", replay=lambda args: "maybe")
        self.assertIs(at.replay_of(t, {}), at.Replay.UNKNOWN)
        self.assertIs(at.replay_of(raw(lambda c: "", replay=at.Replay.SAFE), {}), at.Replay.SAFE)

    def test_unstated_annotations_are_none_not_all_false(self) -> None:
        self.assertIsNone(at.annotations_of(raw(lambda c: "")))
        self.assertIsNone(at.Annotations().read_only)

    def test_built_tools_read_like_hand_written_ones(self) -> None:
        hand = Everything()
        built = at.new_func(
            "everything",
            "does nothing",
            None,
            lambda c: "",
            strict=True,
            resource="shell:session",
            annotations=hand.annotations,
            confined=hand.confined,
            replay=hand.replay,
            closer=hand.close,
        )
        for reader in at.PROPERTIES.values():
            args = (built, {}) if reader in (at.confined_by, at.replay_of) else (built,)
            hand_args = (hand, {}) if reader in (at.confined_by, at.replay_of) else (hand,)
            self.assertEqual(reader(*args), reader(*hand_args), reader.__name__)
        self.assertEqual(at.definition(built), at.definition(hand))
        built.close()  # type: ignore[attr-defined]
        self.assertEqual(hand.closed, 1)

    def test_a_tool_without_a_closer_owns_nothing(self) -> None:
        self.assertFalse(hasattr(raw(lambda c: ""), "close"))

    def test_ownership_options_never_change_the_definition(self) -> None:
        plain = raw(lambda c: "")
        owning = raw(
            lambda c: "",
            confined=lambda a: (True, "x"),
            replay=at.Replay.SAFE,
            closer=lambda: None,
        )
        self.assertEqual(at.definition_hash(plain), at.definition_hash(owning))


class TestWrap(unittest.TestCase):
    def test_every_property_has_a_sample(self) -> None:
        self.assertEqual(set(SAMPLES), set(at.PROPERTIES))
        readers = {
            n
            for n in at.__all__
            if n.startswith("is_") or n.endswith("_of") or n.endswith("_by")
        }
        readers -= {"record_of", "schema_of"}
        self.assertEqual(readers, {r.__name__ for r in at.PROPERTIES.values()})

    def test_wrap_forwards_every_property(self) -> None:
        for prop, sample in SAMPLES.items():
            inner = raw(lambda c: "", **{prop: sample})
            w = at.wrap(inner, lambda call: at.text("wrapped"))
            reader = at.PROPERTIES[prop]
            extra = ({},) if reader in (at.confined_by, at.replay_of) else ()
            self.assertEqual(reader(w, *extra), reader(inner, *extra), prop)
            self.assertNotEqual(
                reader(w, *extra), reader(raw(lambda c: ""), *extra), f"{prop} sample is a default"
            )

    def test_wrap_reports_name_description_parameters_and_definition(self) -> None:
        inner = Everything()
        w = at.wrap(inner, inner.execute)
        self.assertEqual(at.definition(w), at.definition(inner))

    def test_wrap_runs_its_own_execute_and_unwrap_returns_the_inner_tool(self) -> None:
        inner = Bare()
        a = at.wrap(inner, lambda call: at.text("a" + inner.execute(call).output))  # type: ignore[operator]
        b = at.wrap(a, lambda call: at.text("b" + str(a.execute(call).output)))
        self.assertEqual(b.execute(at.Call("1")).output, "babare")
        self.assertIs(at.unwrap(at.unwrap(b)), inner)  # type: ignore[arg-type]
        self.assertIsNone(at.unwrap(inner))

    def test_wrap_is_a_closer_exactly_when_the_inner_tool_is(self) -> None:
        self.assertFalse(hasattr(at.wrap(Bare(), Bare().execute), "close"))
        inner = Everything()
        w = at.wrap(inner, inner.execute)
        at.ToolSet([w]).close()
        self.assertEqual(inner.closed, 1)

    def test_wrap_refuses_a_missing_tool(self) -> None:
        with self.assertRaises(TypeError):
            at.wrap(None, lambda c: at.text(""))  # type: ignore[arg-type]


class TestDefinitions(unittest.TestCase):
    def test_no_arguments_are_served_as_an_empty_object_schema(self) -> None:
        d = at.definition(Bare())
        self.assertEqual(
            d,
            {
                "type": "function",
                "name": "bare",
                "description": "does nothing",
                "parameters": {"type": "object", "properties": {}, "required": []},
            },
        )
        self.assertEqual(list(d), ["type", "name", "description", "parameters"])

    def test_strict_is_present_only_when_true(self) -> None:
        self.assertTrue(at.definition(raw(lambda c: "", strict=True))["strict"])
        self.assertNotIn("strict", at.definition(raw(lambda c: "")))

    def test_definition_hashes_match_every_vector(self) -> None:
        path = os.path.join(CORPUS, "definition_hashes.jsonl")
        if not os.path.exists(path):
            self.skipTest("../shared/conformance is not beside the repository")
        with open(path, encoding="utf-8") as f:
            vectors = [json.loads(line) for line in f if line.strip()]
        self.assertGreaterEqual(len(vectors), 4)
        for v in vectors:
            with open(os.path.join(CORPUS, v["fixture"] + ".json"), encoding="utf-8") as f:
                params = json.load(f)
            t = at.new_func(v["name"], v["description"], params, lambda c: "", strict=v["strict"])
            self.assertEqual(at.definition_hash(t), v["hash"], v["fixture"])

    def test_canonical_numbers_follow_ecmascript(self) -> None:
        t = at.new_func("n", "", {"type": "number", "enum": [1.0, 1e-7, 1e21, 0.00001, -0.5]}, print)
        digest = at.definition_hash(t)
        self.assertTrue(digest.startswith("sha256:"))
        self.assertIn('"enum":[1,1e-7,1e+21,0.00001,-0.5]', at._jcs(at.definition(t)))

    def test_toolset_lookup_validate_and_definitions(self) -> None:
        a, b = raw(lambda c: "", name="a"), raw(lambda c: "", name="b")
        s = at.ToolSet([a, b])
        self.assertIs(s.lookup("b"), b)
        self.assertIsNone(s.lookup("c"))
        s.validate()
        self.assertEqual([d["name"] for d in s.definitions()], ["a", "b"])
        with self.assertRaisesRegex(ValueError, 'tool "a": duplicate name'):
            at.ToolSet([a, a]).validate()
        nameless = Bare()
        nameless.name = ""
        with self.assertRaisesRegex(ValueError, r"tool\[0\]: empty name"):
            at.ToolSet([nameless]).validate()

    def test_toolset_close_closes_in_order_and_reports_every_failure(self) -> None:
        order: List[str] = []

        def failing(name: str) -> Any:
            def close() -> None:
                order.append(name)
                raise OSError("boom")

            return close

        s = at.ToolSet(
            [
                raw(lambda c: "", name="one", closer=failing("one")),
                Bare(),
                raw(lambda c: "", name="two", closer=lambda: order.append("two")),
                raw(lambda c: "", name="three", closer=failing("three")),
            ]
        )
        with self.assertRaises(at.CloseError) as caught:
            s.close()
        self.assertEqual(order, ["one", "two", "three"])
        self.assertEqual(
            str(caught.exception),
            'agenttool: close "one": boom\nagenttool: close "three": boom',
        )


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: int


class TestResults(unittest.TestCase):
    def test_return_values_become_what_the_model_sees(self) -> None:
        when = datetime.datetime(2024, 1, 2, 3, 4, 5)
        cases: List[tuple[Any, Any]] = [
            ("hi", "hi"),
            (None, ""),
            (at.text("as is"), "as is"),
            ({"doubled": 4}, '{"doubled":4}'),
            (Point(1, 2), '{"x":1,"y":2}'),
            (Color.RED, '"red"'),
            ({"when": when}, '{"when":"2024-01-02T03:04:05"}'),
            ({"d": datetime.date(2024, 1, 2)}, '{"d":"2024-01-02"}'),
            (uuid.UUID(int=1), '"00000000-0000-0000-0000-000000000001"'),
            (decimal.Decimal("1.10"), '"1.10"'),
            ({3, 1, 2}, "[1,2,3]"),
            (b"\x00\x01", '"AAE="'),
            ([1, "é"], '[1,"é"]'),
        ]
        for value, expected in cases:
            self.assertEqual(at.output(value).output, expected, repr(value))

    def test_parts_pass_as_parts(self) -> None:
        img = at.image(b"\x89PNG", "image/png")
        self.assertEqual(img["image_url"], "data:image/png;base64,iVBORw==")
        self.assertEqual(at.output(img).output, [img])
        both = [{"type": "text", "text": "a"}, img]
        self.assertEqual(at.output(both).output, both)
        self.assertEqual(at.parts(*both).output, both)
        f = at.file(b"hi", filename="a.txt")
        self.assertEqual(f, {"type": "input_file", "filename": "a.txt", "file_data": "aGk="})
        with self.assertRaises(ValueError):
            at.file()

    def test_a_value_json_cannot_hold_is_an_error_not_a_repr(self) -> None:
        with self.assertRaisesRegex(TypeError, "cannot encode object as JSON"):
            at.output(object())

    def test_error_messages(self) -> None:
        self.assertEqual(at.error_result(ValueError("x")).output, "Error: x")
        self.assertEqual(at.error_result(KeyError("x")).output, "Error: KeyError: 'x'")
        self.assertEqual(at.error_result(RuntimeError()).output, "Error: RuntimeError")
        crash = at.ToolCrash("panics", SystemExit("oh no"))
        self.assertEqual(at.error_result(crash).output, 'Error: tool "panics" crashed: SystemExit: oh no')


class TestCallContext(unittest.TestCase):
    def test_context_readers_are_no_ops_outside_a_call(self) -> None:
        self.assertIsNone(at.current_call())
        at.progress("ignored")
        at.write_record(Rec("c1"))
        self.assertFalse(at.cancelled())
        self.assertFalse(at.cancel_event().is_set())
        self.assertIs(at.elicit(at.Elicitation("sure?")).action, at.Action.CANCEL)

    def test_a_tool_reaches_its_call(self) -> None:
        seen: List[Optional[at.Call]] = []
        t = raw(lambda c: seen.append(at.current_call()) or "")
        call = at.Call("call_1", "{}")
        at.Executor().results([at.Job(t, call)])
        t.execute(call)
        self.assertEqual(seen, [call, call])

    def test_progress_outside_an_executor_goes_to_the_calls_on_update(self) -> None:
        updates: List[at.Result] = []
        t = raw(lambda c: at.progress("half", progress=1, total=2) or "done")
        t.execute(at.Call("1", "", on_update=updates.append))
        self.assertEqual(updates, [at.Result("half", at.ProgressInfo(1, 2, None))])

    def test_progress_arrives_as_non_final_events_in_order_and_chains_to_on_update(self) -> None:
        def two(c: at.Call) -> str:
            at.progress("1")
            at.progress(at.text("2"))
            return "done"

        chained: List[Any] = []
        call = at.Call("c", on_update=lambda r: chained.append(r.output))
        events = list(at.Executor().execute([at.Job(raw(two), call)]))
        self.assertEqual([(e.final, e.result.output) for e in events if e.result], [(False, "1"), (False, "2"), (True, "done")])
        self.assertEqual(chained, ["1", "2"])

    def test_progress_after_the_final_result_is_dropped(self) -> None:
        late: List[Any] = []

        def leaves_a_thread(c: at.Call) -> str:
            ctx = __import__("contextvars").copy_context()
            release = threading.Event()
            thread = threading.Thread(target=lambda: (release.wait(), ctx.run(at.progress, "late")))
            thread.start()
            late.append((thread, release))
            return "done"

        events = []
        for e in at.Executor().execute([at.Job(raw(leaves_a_thread), at.Call("c"))]):
            events.append(e)
            thread, release = late[0]
            release.set()
            thread.join()
        self.assertEqual([e.final for e in events], [True])

    def test_records(self) -> None:
        self.assertIsNone(at.record_of(None))
        self.assertIsNone(at.record_of(at.ProgressInfo(1)))
        self.assertIsNone(at.record_of({"plain": 1}))
        self.assertEqual(at.record_of(Rec("c1")), at.Record("shell:container", '{"container":"c1"}'))
        with self.assertRaisesRegex(ValueError, "agenttool: record Empty: empty namespace"):
            at.record_of(Empty())
        with self.assertRaisesRegex(ValueError, "agenttool: record Bad: cannot encode"):
            at.record_of(Bad())

    def test_write_record_reaches_the_recorder_while_the_tool_runs(self) -> None:
        seen: List[tuple[str, at.Record]] = []
        finished = threading.Event()

        def recorder(r: at.Record) -> None:
            call = at.current_call()
            self.assertFalse(finished.is_set())
            seen.append((call.id if call else "", r))

        def records(c: at.Call) -> str:
            at.write_record(Rec("c9"))
            at.write_record({"not": "recordable"})
            finished.set()
            return ""

        at.Executor(recorder=recorder).results([at.Job(raw(records), at.Call("call_1"))])
        self.assertEqual(seen, [("call_1", at.Record("shell:container", '{"container":"c9"}'))])

    def test_a_recorders_error_reaches_the_tool(self) -> None:
        def recorder(r: at.Record) -> None:
            raise OSError("disk full")

        t = raw(lambda c: at.write_record(Rec("x")))
        _, errors = at.Executor(recorder=recorder).results([at.Job(t, at.Call("1"))])
        self.assertEqual(str(errors[0]), "disk full")

    def test_elicit_asks_the_hosts_elicitor(self) -> None:
        asked: List[str] = []

        def elicitor(q: at.Elicitation) -> at.Answer:
            asked.append(q.message)
            return at.Answer(at.Action.ACCEPT, {"ok": True})

        t = raw(lambda c: json.dumps(at.elicit(at.Elicitation("proceed?")).content))
        results, _ = at.Executor(elicitor=elicitor).results([at.Job(t, at.Call("1"))])
        self.assertEqual((asked, results[0].output), (["proceed?"], '{"ok": true}'))  # type: ignore[union-attr]
        results, _ = at.Executor().results([at.Job(t, at.Call("1"))])
        self.assertEqual(results[0].output, "null")  # type: ignore[union-attr]


@dataclasses.dataclass
class Rec:
    container: str
    record_ns = "shell:container"


class Empty:
    record_ns = ""


class Bad:
    record_ns = "a:b"


class Tracker:
    """Counts tools running at once, and the order they started in."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.peak = 0
        self.started: List[str] = []

    def tool(self, name: str = "t", wait: Any = None, **options: Any) -> at.Tool:
        def run(call: at.Call) -> str:
            with self.lock:
                self.active += 1
                self.peak = max(self.peak, self.active)
                self.started.append(call.id)
            try:
                if wait is not None:
                    wait(call)
                return call.id
            finally:
                with self.lock:
                    self.active -= 1

        return at.new_func(name, "", None, run, **options)


class TestExecutor(unittest.TestCase):
    def test_calls_run_in_parallel(self) -> None:
        barrier = threading.Barrier(3, timeout=10)
        t = raw(lambda c: str(barrier.wait()))
        results, errors = at.Executor().results([at.Job(t, at.Call(str(i))) for i in range(3)])
        self.assertEqual(errors, [None, None, None])
        self.assertEqual(sorted(r.output for r in results), ["0", "1", "2"])  # type: ignore[union-attr]

    def test_peak_concurrency_stays_within_the_bound(self) -> None:
        for bound in (2, 3):
            tracker = Tracker()
            barrier = threading.Barrier(bound, timeout=10)
            t = tracker.tool(wait=lambda c: barrier.wait())
            jobs = [at.Job(t, at.Call(str(i))) for i in range(bound * 3)]
            _, errors = at.Executor(max_parallel=bound).results(jobs)
            self.assertEqual(errors, [None] * len(jobs))
            self.assertEqual(tracker.peak, bound)

    def test_the_default_bound_is_eight(self) -> None:
        self.assertEqual(at.Executor().max_parallel, 8)
        self.assertEqual(at.Executor(max_parallel=0).max_parallel, 8)
        tracker = Tracker()
        barrier = threading.Barrier(8, timeout=10)
        jobs = [at.Job(tracker.tool(wait=lambda c: barrier.wait()), at.Call(str(i))) for i in range(16)]
        at.Executor().results(jobs)
        self.assertEqual(tracker.peak, 8)

    def test_a_serial_batch_runs_one_at_a_time_in_model_order(self) -> None:
        for executor, seq in (
            (at.Executor(sequential=True), False),
            (at.Executor(max_parallel=1), False),
            (at.Executor(), True),
        ):
            tracker = Tracker()
            plain = tracker.tool("plain", resource="shell:a")
            jobs = [at.Job(plain, at.Call(str(i))) for i in range(5)]
            jobs.insert(2, at.Job(tracker.tool("seq", sequential=seq), at.Call("s")))
            events = finals(list(executor.execute(jobs)))
            self.assertEqual(tracker.peak, 1)
            self.assertEqual(tracker.started, ["0", "1", "s", "2", "3", "4"])
            self.assertEqual([e.index for e in events], list(range(6)))
            self.assertEqual(executor.chains(jobs), [list(range(6))])

    def test_calls_naming_one_resource_run_in_model_order_beside_the_others(self) -> None:
        reads = threading.Barrier(3, timeout=10)
        tracker = Tracker()
        read = at.new_func("read", "", None, lambda c: reads.wait() and c.id or c.id)
        shell = tracker.tool("cd", resource="shell:session")
        restart = tracker.tool("restart", resource="shell:session")
        jobs = [
            at.Job(read, at.Call("r1")),
            at.Job(shell, at.Call("cd_a")),
            at.Job(read, at.Call("r2")),
            at.Job(restart, at.Call("cd_b")),
            at.Job(read, at.Call("r3")),
        ]
        executor = at.Executor()
        self.assertEqual(executor.chains(jobs), [[0], [1, 3], [2], [4]])
        _, errors = executor.results(jobs)
        self.assertEqual(errors, [None] * 5)
        self.assertEqual(tracker.started, ["cd_a", "cd_b"])
        self.assertEqual(tracker.peak, 1)

    def test_chains_grouping(self) -> None:
        shell = raw(lambda c: "", resource="shell")
        other = raw(lambda c: "", resource="other")
        plain = raw(lambda c: "")
        seq = raw(lambda c: "", sequential=True, resource="shell")
        ex = at.Executor()
        self.assertEqual(ex.chains([]), [])
        self.assertEqual(ex.chains([at.Job(plain, at.Call(""))] * 3), [[0], [1], [2]])
        self.assertEqual(ex.chains([at.Job(t, at.Call("")) for t in (shell, plain, shell)]), [[0, 2], [1]])
        self.assertEqual(ex.chains([at.Job(t, at.Call("")) for t in (shell, shell, other)]), [[0, 1], [2]])
        self.assertEqual(at.Executor(sequential=True).chains([at.Job(t, at.Call("")) for t in (shell, plain, shell)]), [[0, 1, 2]])
        self.assertEqual(ex.chains([at.Job(t, at.Call("")) for t in (seq, shell)]), [[0, 1]])
        self.assertEqual(ex.chains([at.Job(None, at.Call("")), at.Job(None, at.Call(""))]), [[0], [1]])

    def test_the_next_call_of_a_chain_starts_after_the_consumer_took_the_final_event(self) -> None:
        tracker = Tracker()
        t = tracker.tool(resource="r")
        jobs = [at.Job(t, at.Call(str(i))) for i in range(4)]
        for event in at.Executor().execute(jobs):
            # While the consumer holds job i's final event, job i+1 has not started.
            self.assertEqual(tracker.started, [str(i) for i in range(event.index + 1)])

    def test_the_consumer_can_cancel_between_calls_of_a_chain(self) -> None:
        tracker = Tracker()
        t = tracker.tool(resource="r")
        cancel = threading.Event()
        jobs = [at.Job(t, at.Call(str(i))) for i in range(3)]
        outcome = {}
        for event in at.Executor().execute(jobs, cancel=cancel):
            outcome[event.index] = event.error
            cancel.set()
        self.assertEqual(tracker.started, ["0"])
        self.assertIsNone(outcome[0])
        self.assertIsInstance(outcome[1], at.Cancelled)
        self.assertEqual(str(outcome[2]), 'call "2" was cancelled before it started')

    def test_on_start_runs_before_the_tool_and_may_refuse_it(self) -> None:
        tracker = Tracker()
        t = tracker.tool()
        seen: List[tuple[str, Optional[str], bool]] = []

        def on_start(job: at.Job) -> None:
            call = at.current_call()
            seen.append((job.call.id, call.id if call else None, threading.current_thread() is threading.main_thread()))
            if job.call.id == "refused":
                raise PermissionError("policy says no")

        results, errors = at.Executor(on_start=on_start).results(
            [at.Job(t, at.Call("ok")), at.Job(t, at.Call("refused"))]
        )
        self.assertEqual(tracker.started, ["ok"])
        self.assertEqual(sorted(seen), [("ok", "ok", False), ("refused", "refused", False)])
        self.assertEqual(str(errors[1]), "policy says no")
        self.assertIsNone(results[1])

    def test_setting_cancel_stops_running_tools_and_completes_unstarted_jobs(self) -> None:
        running = threading.Event()
        saw_cancel: List[bool] = []

        def long(c: at.Call) -> str:
            running.set()
            saw_cancel.append(at.cancel_event().wait(10) and at.cancelled())
            return "stopped early"

        cancel = threading.Event()
        threading.Thread(target=lambda: running.wait(10) and cancel.set()).start()
        jobs = [at.Job(raw(long), at.Call(f"c{i}")) for i in range(4)]
        events = list(at.Executor(max_parallel=1).execute(jobs, cancel=cancel))
        self.assertEqual(saw_cancel, [True])
        self.assertEqual(sorted(e.index for e in events if e.final), [0, 1, 2, 3])
        self.assertEqual(events[0].result.output, "stopped early")  # type: ignore[union-attr]
        for e in events[1:]:
            self.assertIsInstance(e.error, at.Cancelled)

    def test_closing_the_generator_cancels_and_waits_for_running_tools(self) -> None:
        returned = threading.Event()
        running = threading.Barrier(3, timeout=10)

        def long(c: at.Call) -> str:
            if c.id == "fast":
                running.wait()
                return "fast"
            running.wait()
            at.cancel_event().wait(10)
            returned.set()
            return "slow"

        jobs = [at.Job(raw(long), at.Call(i)) for i in ("fast", "slow1", "slow2")]
        gen = at.Executor().execute(jobs)
        first = next(gen)
        self.assertEqual(first.index, 0)
        gen.close()
        self.assertTrue(returned.is_set())
        self.assertEqual(list(gen), [])

    def test_a_crash_completes_its_job_and_never_the_executor(self) -> None:
        def crashes(c: at.Call) -> str:
            if c.id == "exit":
                raise SystemExit("oh no")
            if c.id == "interrupt":
                raise KeyboardInterrupt
            if c.id == "error":
                raise ValueError("bad value")
            return "fine"

        t = raw(crashes, name="panics")
        ids = ["ok1", "exit", "ok2", "interrupt", "error"]
        results, errors = at.Executor().results([at.Job(t, at.Call(i)) for i in ids])
        self.assertEqual([r.output if r else None for r in results], ["fine", None, "fine", None, None])
        self.assertEqual(str(errors[1]), 'tool "panics" crashed: SystemExit: oh no')
        self.assertEqual(str(errors[3]), 'tool "panics" crashed: KeyboardInterrupt')
        self.assertIsInstance(errors[1].__cause__, SystemExit)  # type: ignore[union-attr]
        self.assertIsNotNone(errors[1].__traceback__)  # type: ignore[union-attr]
        self.assertEqual(at.error_result(errors[4]).output, "Error: bad value")  # type: ignore[arg-type]
        self.assertNotIn("Traceback", at.error_result(errors[1]).output)  # type: ignore[arg-type]

    def test_a_missing_tool_completes_with_a_clear_error(self) -> None:
        _, errors = at.Executor().results([at.Job(None, at.Call("call_7"))])
        self.assertEqual(str(errors[0]), 'no tool for call "call_7"')

    def test_results_are_in_job_order(self) -> None:
        gate = threading.Event()

        def slow_first(c: at.Call) -> str:
            if c.id == "slow":
                gate.wait(10)
            else:
                gate.set()
            return c.id

        events = list(at.Executor().execute([at.Job(raw(slow_first), at.Call(i)) for i in ("slow", "fast")]))
        self.assertEqual([e.index for e in events], [1, 0])
        results, _ = at.Executor().results([at.Job(raw(slow_first), at.Call(i)) for i in ("slow", "fast")])
        self.assertEqual([r.output for r in results], ["slow", "fast"])  # type: ignore[union-attr]
        self.assertEqual(at.Executor().results([]), ([], []))

    def test_a_soak_of_5000_jobs_gives_one_final_event_each_and_leaks_no_thread(self) -> None:
        before = threading.active_count()
        rng = random.Random(7)
        plan = [rng.choice(["ok", "fail", "crash", "progress"]) for _ in range(5000)]

        def flaky(c: at.Call) -> str:
            kind = plan[int(c.id)]
            if kind == "fail":
                raise RuntimeError(c.id)
            if kind == "crash":
                raise SystemExit(c.id)
            if kind == "progress":
                at.progress("p")
            return c.id

        tools = [raw(flaky), raw(flaky, resource="r1"), raw(flaky, resource="r2")]
        jobs = [at.Job(tools[i % 3], at.Call(str(i))) for i in range(5000)]
        seen = [0] * 5000
        for event in at.Executor().execute(jobs):
            if event.final:
                seen[event.index] += 1
                kind = plan[event.index]
                self.assertEqual(event.error is None, kind in ("ok", "progress"))
        self.assertEqual(seen, [1] * 5000)
        self.assertEqual(threading.active_count(), before)


@at.tool
def read_file(path: str, max_bytes: int = 0) -> str:
    """Read a file from disk.

    Args:
        path: Absolute path to read
        max_bytes: Stop after this many bytes
    """
    return f"{path}:{max_bytes}"


@dataclasses.dataclass
class Move:
    to: Point
    speed: float = 1.0


class TestBuildingTools(unittest.TestCase):
    def test_the_decorated_function_is_still_the_plain_function(self) -> None:
        self.assertEqual(read_file("/etc/hosts", 5), "/etc/hosts:5")
        self.assertEqual(read_file.__name__, "read_file")
        self.assertEqual(read_file.name, "read_file")
        self.assertEqual(read_file.description, "Read a file from disk.")

    def test_the_definition_follows_the_corpus(self) -> None:
        path = os.path.join(CORPUS, "read_file.json")
        if not os.path.exists(path):
            self.skipTest("../shared/conformance is not beside the repository")
        with open(path, encoding="utf-8") as f:
            self.assertEqual(read_file.parameters, json.load(f))

    def test_options_with_the_decorator(self) -> None:
        @at.tool(name="shout", description="Shout it.", strict=True, resource="voice")
        def loud(text: str, times: int = 1) -> str:
            return text.upper() * times

        self.assertEqual((loud.name, loud.description), ("shout", "Shout it."))
        self.assertTrue(at.is_strict(loud))
        self.assertEqual(at.resource_of(loud), "voice")
        self.assertEqual(loud.parameters["required"], ["text", "times"])  # type: ignore[index]
        self.assertEqual(loud.execute(at.Call("1", '{"text": "a", "times": null}')).output, "A")
        with self.assertRaises(at.ValidationError) as caught:
            loud.execute(at.Call("1", '{"text": "a", "times": 2, "bogus": 1}'))
        self.assertEqual(str(caught.exception), 'invalid arguments: unexpected property "bogus"')

    def test_arguments_are_validated_and_decoded_before_the_function_runs(self) -> None:
        ran: List[Any] = []

        @at.tool
        def when(day: datetime.date, color: Color, tags: set[str] = frozenset()) -> str:  # type: ignore[assignment]
            ran.append((day, color, tags))
            return "ok"

        self.assertEqual(when.execute(at.Call("1", '{"day": "2024-01-02", "color": "red", "tags": ["a"]}')).output, "ok")
        self.assertEqual(ran, [(datetime.date(2024, 1, 2), Color.RED, {"a"})])
        for args, message in [
            ('{"day": "2024-01-02"}', 'invalid arguments: missing required property "color"'),
            ('{"day": 3, "color": "red"}', "invalid arguments: day: expected string, got 3"),
            ('{"day": "2024-01-02", "color": "blue"}', 'invalid arguments: color: expected one of ["red"], got "blue"'),
            ('{"day": "2024-01-02", "color": "red", "colour": 1}', 'invalid arguments: unexpected property "colour"'),
            ("[1]", "invalid arguments: expected a JSON object"),
            ('"text"', "invalid arguments: expected a JSON object"),
        ]:
            with self.assertRaises(at.ValidationError) as caught:
                when.execute(at.Call("1", args))
            self.assertEqual(str(caught.exception), message)
        self.assertEqual(len(ran), 1)
        with self.assertRaises(at.ValidationError) as caught:
            when.execute(at.Call("1", "{not json"))
        self.assertTrue(str(caught.exception).startswith("invalid arguments: not valid JSON: "))

    def test_empty_arguments_mean_an_empty_object(self) -> None:
        @at.tool
        def ping() -> str:
            return "pong"

        for args in ("", b"", None, {}, "  "):
            self.assertEqual(ping.execute(at.Call("1", args)).output, "pong")
        with self.assertRaises(at.ValidationError) as caught:
            read_file.execute(at.Call("1", ""))
        self.assertEqual(str(caught.exception), 'invalid arguments: missing required property "path"')

    def test_invalid_arguments_reach_the_model_as_an_error_and_never_the_function(self) -> None:
        results, errors = at.Executor().results([at.Job(read_file, at.Call("1", '{"path": 1}'))])
        self.assertIsNone(results[0])
        self.assertEqual(at.error_result(errors[0]).output, "Error: invalid arguments: path: expected string, got 1")  # type: ignore[arg-type]

    def test_a_single_dataclass_parameter_is_a_property_unless_struct_is_asked(self) -> None:
        def move(to: Point) -> str:
            return f"{to.x},{to.y}"

        t = at.new("move", "", move)
        self.assertEqual(list(t.parameters["properties"]), ["to"])  # type: ignore[index]
        self.assertEqual(t.execute(at.Call("1", '{"to": {"x": 1, "y": 2}}')).output, "1,2")

        def go(m: Move) -> str:
            return f"{m.to.x},{m.to.y} at {m.speed}"

        s = at.new("go", "", go, struct=True)
        self.assertEqual(list(s.parameters["properties"]), ["to", "speed"])  # type: ignore[index]
        self.assertEqual(s.execute(at.Call("1", '{"to": {"x": 3, "y": 4}}')).output, "3,4 at 1.0")

    def test_a_supplied_schema_is_served_verbatim_and_not_validated(self) -> None:
        custom = {"type": "object", "properties": {"x": {"type": "string"}}}
        t = at.new("custom", "", lambda **kw: kw, parameters=custom)
        self.assertIs(t.parameters, custom)
        self.assertEqual(t.execute(at.Call("1", '{"x": 1}')).output, '{"x":1}')
        checked = at.new("custom", "", lambda **kw: kw, parameters=custom, validate=True)
        with self.assertRaises(at.ValidationError):
            checked.execute(at.Call("1", '{"x": 1}'))

    def test_a_type_that_cannot_be_expressed_fails_at_registration_naming_the_parameter(self) -> None:
        def bad(opts: Dict[int, str]) -> None: ...

        with self.assertRaisesRegex(TypeError, "opts"):
            at.tool(bad)

    def test_validate_false_skips_the_schema_check_but_still_decodes(self) -> None:
        def double(n: int) -> int:
            return n * 2

        t = at.new("double", "", double, validate=False)
        self.assertIsNotNone(t.parameters)
        self.assertEqual(t.execute(at.Call("1", '{"n": 2}')).output, "4")
        with self.assertRaises(at.ValidationError):
            t.execute(at.Call("1", '{"n": 2, "m": 3}'))

    def test_an_async_function_is_a_tool(self) -> None:
        @at.tool
        async def fetch(url: str) -> Dict[str, str]:
            await asyncio.sleep(0)
            return {"url": url}

        self.assertEqual(fetch.execute(at.Call("1", '{"url": "x"}')).output, '{"url":"x"}')


class TestAsyncTools(unittest.TestCase):
    def test_async_tools_share_one_loop_across_calls(self) -> None:
        loops: List[Any] = []

        async def where(c: at.Call) -> str:
            await asyncio.sleep(0)
            loops.append(asyncio.get_running_loop())
            return f"{c.id} on loop"

        t = raw(where)
        results, _ = at.Executor().results([at.Job(t, at.Call(str(i))) for i in range(3)])
        at.Executor().results([at.Job(t, at.Call("again"))])
        self.assertEqual(len({id(loop) for loop in loops}), 1)
        self.assertEqual(results[0].output, "0 on loop")  # type: ignore[union-attr]

    def test_cancelling_an_async_call_cancels_its_task(self) -> None:
        started = threading.Event()
        cancelled_task = threading.Event()

        async def forever(c: at.Call) -> str:
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled_task.set()
                raise
            return "never"

        cancel = threading.Event()
        threading.Thread(target=lambda: started.wait(10) and cancel.set()).start()
        _, errors = at.Executor().results([at.Job(raw(forever), at.Call("c1"))], cancel=cancel)
        self.assertTrue(cancelled_task.is_set())
        self.assertIsInstance(errors[0], at.Cancelled)


if __name__ == "__main__":
    unittest.main()
