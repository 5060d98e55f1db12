"""Tests of the options for many tools: definition options written only where a provider takes
them, and ToolSet.searchable for providers without tool search of their own."""

from __future__ import annotations

import json
import os
import time
import unittest
from typing import Any

import agenttool as at
from test_agenttool import _conform, anthropic, limit_test_time, needs, openai, pydantic

limit_test_time()

HERE = os.path.dirname(os.path.abspath(__file__))


def lookup(city: str, days: int = 1) -> str:
    """Look up the weather forecast for a city."""
    return f"{city}: sunny for {days} days"


def call(name: str, arguments: Any, call_id: str = "c1") -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(arguments),
    }


class TestDefinitionOptions(unittest.TestCase):
    def test_each_option_is_written_where_its_format_takes_it(self) -> None:
        t = at.new(
            "",
            "",
            lookup,
            defer_loading=True,
            allowed_callers=["direct"],
            input_examples=[{"city": "Lisbon"}, {"city": "Oslo", "days": 3}],
            cache_control={"type": "ephemeral", "ttl": "1h"},
        )
        with self.assertRaisesRegex(ValueError, "responses tool definitions have no input_ex"):
            at.definition(t, "responses")
        anthropic_def = at.definition(t, "anthropic")
        self.assertIs(anthropic_def["defer_loading"], True)
        self.assertEqual(anthropic_def["allowed_callers"], ["direct"])
        self.assertEqual(anthropic_def["input_examples"][1], {"city": "Oslo", "days": 3})
        self.assertEqual(anthropic_def["cache_control"], {"type": "ephemeral", "ttl": "1h"})

        responses = at.new("", "", lookup, defer_loading=True, allowed_callers=["programmatic"])
        out = at.definition(responses, "responses")
        self.assertIs(out["defer_loading"], True)
        self.assertEqual(out["allowed_callers"], ["programmatic"])

    def test_an_option_a_format_lacks_is_refused_by_name(self) -> None:
        cases = {
            "defer_loading": True,
            "allowed_callers": ["direct"],
            "input_examples": [{"city": "Lisbon"}],
            "cache_control": {"type": "ephemeral"},
            "namespace": "weather",
        }
        takes = {
            "defer_loading": {"responses", "anthropic"},
            "allowed_callers": {"responses", "anthropic"},
            "input_examples": {"anthropic"},
            "cache_control": {"anthropic"},
            "namespace": {"responses"},
        }
        for option, value in cases.items():
            t = at.new("", "", lookup, **{option: value})
            for fmt in at._FORMATS:
                if fmt in takes[option]:
                    at.definition(t, fmt)
                    continue
                with self.assertRaisesRegex(ValueError, f"{fmt} tool definitions have no {option}"):
                    at.definition(t, fmt)

    def test_a_caller_the_provider_does_not_know_is_refused(self) -> None:
        t = at.new("", "", lookup, allowed_callers=["code_execution_20250825"])
        self.assertEqual(
            at.definition(t, "anthropic")["allowed_callers"], ["code_execution_20250825"]
        )
        with self.assertRaisesRegex(ValueError, 'responses knows no caller "code_execution_'):
            at.definition(t, "responses")
        programmatic = at.new("", "", lookup, allowed_callers=["programmatic"])
        with self.assertRaisesRegex(ValueError, 'anthropic knows no caller "programmatic"'):
            at.definition(programmatic, "anthropic")

    def test_bad_option_values_are_refused_when_the_tool_is_made(self) -> None:
        bad: list[tuple[str, Any, str]] = [
            ("defer_loading", "yes", "defer_loading must be a bool"),
            ("input_examples", {"city": "x"}, "must be a list of arguments objects"),
            ("input_examples", [{"days": 2}], r'input_examples\[0\] is not valid: .*"city"'),
            ("input_examples", [{"city": "x", "colour": 1}], "unexpected property"),
            ("input_examples", ["x"], "is not an arguments object"),
            ("cache_control", {"type": "persistent"}, "cache_control must be"),
            ("cache_control", {"type": "ephemeral", "ttl": "2h"}, "cache_control must be"),
            ("allowed_callers", [], "non-empty list of names"),
            ("allowed_callers", "direct", "non-empty list of names"),
            ("namespace", "has space", "a namespace's name must be"),
        ]
        for option, value, message in bad:
            with self.assertRaisesRegex((TypeError, ValueError), message, msg=option):
                at.new("", "", lookup, **{option: value})

    def test_definition_options_never_change_the_hash(self) -> None:
        plain = at.new("", "", lookup)
        loaded = at.new(
            "",
            "",
            lookup,
            defer_loading=True,
            input_examples=[{"city": "Lisbon"}],
            cache_control={"type": "ephemeral"},
            allowed_callers=["direct"],
            namespace="weather",
        )
        self.assertEqual(at.definition_hash(plain), at.definition_hash(loaded))

    def test_the_examples_read_back_are_copies(self) -> None:
        examples = [{"city": "Lisbon"}]
        t = at.new("", "", lookup, input_examples=examples)
        examples[0]["city"] = "changed"
        at.input_examples_of(t)[0]["city"] = "changed too"
        self.assertEqual(at.input_examples_of(t), [{"city": "Lisbon"}])

    def test_a_hand_written_tool_declares_them_as_attributes(self) -> None:
        class Hand:
            name = "hand"
            description = "by hand"
            parameters = None
            defer_loading = True
            namespace = "tools"

            def execute(self, call: at.Call) -> at.Result:
                return at.text("")

        out = at.definition(Hand(), "responses")  # type: ignore[arg-type]
        self.assertEqual(out["type"], "namespace")
        self.assertIs(out["tools"][0]["defer_loading"], True)


class TestNamespaces(unittest.TestCase):
    def test_a_namespace_lists_its_tools_in_one_entry_where_the_first_stands(self) -> None:
        crm = at.Namespace("crm", "Customer records")

        def find_customer(email: str) -> str:
            """Find a customer by email."""
            return email

        def close_ticket(ticket: int) -> str:
            """Close a support ticket."""
            return str(ticket)

        tools = at.ToolSet(
            [
                at.new("", "", find_customer, namespace=crm),
                at.new("", "", lookup),
                at.new("", "", close_ticket, namespace=crm),
            ]
        )
        out = tools.definitions("responses")
        self.assertEqual([d.get("name") for d in out], ["crm", "lookup"])
        self.assertEqual(out[0]["type"], "namespace")
        self.assertEqual(out[0]["description"], "Customer records")
        self.assertEqual([t["name"] for t in out[0]["tools"]], ["find_customer", "close_ticket"])
        # a call names the tool alone (with the namespace beside it): found by name
        item = call("close_ticket", {"ticket": 7})
        item["namespace"] = "crm"
        self.assertEqual(tools.run([item])[0]["output"], "7")

    def test_one_namespace_described_two_ways_is_refused(self) -> None:
        def a() -> str:
            return ""

        def b() -> str:
            return ""

        tools = at.ToolSet(
            [
                at.new("", "", a, namespace=at.Namespace("ns", "one")),
                at.new("", "", b, namespace=at.Namespace("ns", "two")),
            ]
        )
        with self.assertRaisesRegex(ValueError, 'namespace "ns" is described two ways'):
            tools.definitions("responses")

    def test_a_bare_name_gets_a_stated_description(self) -> None:
        self.assertEqual(at.Namespace("crm").description, 'Tools under "crm".')
        t = at.new("", "", lookup, namespace="crm")
        self.assertEqual(at.namespace_of(t), at.Namespace("crm"))


@needs(openai is not None and pydantic is not None, "the openai SDK is not installed")
class TestOptionsAgainstOpenAI(unittest.TestCase):
    def test_the_responses_definitions_fit_the_sdk_types(self) -> None:
        from openai.types.responses import FunctionToolParam, NamespaceToolParam

        plain = at.new("", "", lookup, defer_loading=True, allowed_callers=["programmatic"])
        _conform(self, FunctionToolParam, at.definition(plain, "responses"))
        spaced = at.new("", "", lookup, namespace="weather", defer_loading=True)
        entry = at.definition(spaced, "responses")
        _conform(self, NamespaceToolParam, entry)


@needs(anthropic is not None and pydantic is not None, "the anthropic SDK is not installed")
class TestOptionsAgainstAnthropic(unittest.TestCase):
    def test_the_anthropic_definition_fits_the_sdk_type(self) -> None:
        from anthropic.types import ToolParam

        t = at.new(
            "",
            "",
            lookup,
            defer_loading=True,
            allowed_callers=["direct", "code_execution_20250825"],
            input_examples=[{"city": "Lisbon"}],
            cache_control={"type": "ephemeral", "ttl": "5m"},
        )
        _conform(self, ToolParam, at.definition(t, "anthropic"))


def _toolbox() -> at.ToolSet:
    def read_file(path: str) -> str:
        """Read a text file from disk."""
        return f"contents of {path}"

    def send_email(to: str, body: str) -> str:
        """Send an email message to someone."""
        return f"sent to {to}"

    def listFiles(folder: str) -> str:  # noqa: N802 - a camelCase name, as some tools have
        """List the files in a folder."""
        return f"files in {folder}"

    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return f"sunny in {city}"

    return at.ToolSet(at.new("", "", f) for f in (read_file, send_email, listFiles, get_weather))


class TestSearchable(unittest.TestCase):
    def test_the_model_sees_only_the_search_tool_at_first(self) -> None:
        s = _toolbox().searchable(limit=2)
        self.assertEqual([d["name"] for d in s.definitions()], ["search_tools"])
        schema = s.definitions()[0]["parameters"]
        self.assertEqual(schema["required"], ["query"])

    def test_a_search_loads_the_best_matches_for_the_next_turns(self) -> None:
        s = _toolbox().searchable(limit=2)
        out = s.run([call("search_tools", {"query": "files in a folder"})])
        answer = json.loads(out[0]["output"])
        self.assertEqual([d["name"] for d in answer["loaded"]], ["listFiles", "read_file"])
        self.assertIn("parameters", answer["loaded"][0])
        self.assertEqual(
            [d["name"] for d in s.definitions()], ["search_tools", "listFiles", "read_file"]
        )
        ran = s.run([call("listFiles", {"folder": "/tmp"})])
        self.assertEqual(ran[0]["output"], "files in /tmp")

    def test_a_tool_not_loaded_is_refused_with_the_hint_to_search(self) -> None:
        s = _toolbox().searchable()
        out = s.run([call("send_email", {"to": "a", "body": "b"})])
        self.assertEqual(
            out[0]["output"],
            'Error: tool "send_email" is not loaded: call search_tools to find and load it,'
            " then call it on your next turn",
        )
        missing = s.run([call("nothing_here", {})])
        self.assertIn('no tool named "nothing_here"', missing[0]["output"])

    def test_the_ranking_is_deterministic_and_ignores_what_matches_nothing(self) -> None:
        first = _toolbox().searchable(limit=3)
        second = _toolbox().searchable(limit=3)
        for s in (first, second):
            s.run([call("search_tools", {"query": "weather email"})])
        self.assertEqual([t.name for t in first], [t.name for t in second])
        # one word each, as often, in documents of one length: a tie, kept in the set's order
        self.assertEqual([t.name for t in first], ["search_tools", "send_email", "get_weather"])
        none = _toolbox().searchable()
        answer = json.loads(none.run([call("search_tools", {"query": "zebra"})])[0]["output"])
        self.assertEqual(answer["loaded"], [])
        self.assertIn("4 not loaded yet", answer["message"])

    def test_a_loaded_tool_is_not_loaded_twice(self) -> None:
        s = _toolbox().searchable(limit=1)
        for _ in range(2):
            s.run([call("search_tools", {"query": "weather"})])
        names = [t.name for t in s]
        self.assertEqual(names.count("get_weather"), 1)
        self.assertEqual(len(names), len(set(names)))

    def test_closing_closes_every_tool_loaded_or_not(self) -> None:
        closed: list[str] = []

        def make(name: str) -> at.Tool:
            return at.new_func(
                name, f"{name} tool", None, lambda c: "", closer=lambda: closed.append(name)
            )

        s = at.ToolSet([make("alpha"), make("beta")]).searchable(limit=1)
        s.run([call("search_tools", {"query": "alpha"})])
        s.close()
        self.assertEqual(sorted(closed), ["alpha", "beta"])

    def test_bad_arguments_are_refused(self) -> None:
        with self.assertRaisesRegex(ValueError, "positive limit"):
            _toolbox().searchable(limit=0)
        clash = at.ToolSet([at.new_func("search_tools", "mine", None, lambda c: "")])
        with self.assertRaisesRegex(ValueError, 'already named "search_tools"'):
            clash.searchable()


ALPHABET = "".join(chr(97 + i % 26) for i in range(200))


def _cut(output: str) -> tuple[str, int]:
    import re

    found = re.search(r'read_output\(handle="(\w+)", offset=(\d+)\) reads them', output)
    assert found is not None, output
    return found[1], int(found[2])


def read(tools: at.ToolSet, handle: str, offset: int, length: int = 0) -> str:
    args = {"handle": handle, "offset": offset, "length": length}
    return str(tools.run([call("read_output", args, "r")])[0]["output"])


class TestPageableOutputs(unittest.TestCase):
    def setUp(self) -> None:
        def big() -> str:
            return ALPHABET

        self.tools = at.ToolSet([at.new("", "", big, max_output=40, pageable=True)]).pageable()

    def test_the_cut_marker_names_a_handle_and_any_slice_can_be_read(self) -> None:
        out = self.tools.run([call("big", {})])[0]["output"]
        self.assertTrue(out.startswith(ALPHABET[:20]) and out.endswith(ALPHABET[-20:]), out)
        handle, offset = _cut(out)
        self.assertEqual(offset, 20)
        middle = read(self.tools, handle, offset)
        self.assertEqual(
            middle, ALPHABET[20:60] + "\n[characters 20 to 60 of 200; 140 more from offset 60]"
        )
        self.assertTrue(read(self.tools, handle, 190).startswith(ALPHABET[190:] + "\n"))
        self.assertIn("the end", read(self.tools, handle, 190))

    def test_a_slice_is_at_most_the_limit_the_output_was_cut_to(self) -> None:
        handle, _ = _cut(self.tools.run([call("big", {})])[0]["output"])
        self.assertTrue(read(self.tools, handle, 0, 5000).startswith(ALPHABET[:40] + "\n["))
        self.assertTrue(read(self.tools, handle, 3, 7).startswith(ALPHABET[3:10] + "\n["))

    def test_a_handle_that_is_gone_or_an_offset_outside_is_refused(self) -> None:
        self.assertIn('no output under handle "out_nothing"', read(self.tools, "out_nothing", 0))
        handle, _ = _cut(self.tools.run([call("big", {})])[0]["output"])
        self.assertIn("offset 500 is outside the output", read(self.tools, handle, 500))

    def test_the_store_is_bounded_in_count_and_characters(self) -> None:
        pages = at._OutputPages(max_texts=2, max_chars=100, lifetime=3600.0)
        first, second, third = (pages.keep("x" * 10, 5) for _ in range(3))
        with self.assertRaisesRegex(at.ToolError, "it is gone"):
            pages.read(first)
        self.assertEqual(pages.read(third), ("x" * 10, 5))
        pages.read(second)  # read last: the third is now the least recently read
        pages.keep("y" * 95, 5)
        with self.assertRaisesRegex(at.ToolError, "it is gone"):
            pages.read(third)

    def test_a_text_is_kept_for_its_lifetime_after_its_last_read(self) -> None:
        pages = at._OutputPages(max_texts=8, max_chars=100, lifetime=0.0)
        handle = pages.keep("text", 2)
        with self.assertRaisesRegex(at.ToolError, "gone"):
            pages.read(handle)

    def test_nothing_is_kept_unless_asked(self) -> None:
        def big() -> str:
            return ALPHABET

        plain = at.ToolSet([at.new("", "", big, max_output=40)])
        out = plain.run([call("big", {})])[0]["output"]
        self.assertIn("[... 160 characters cut ...]", out)
        by_default = at.Executor(pageable=True)
        results, _ = by_default.results([at.Job(plain[0], at.Call("c"))])
        assert results[0] is not None
        self.assertIn("read_output(handle=", str(results[0].output))
        refused = at.new("", "", big, max_output=40, pageable=False)
        results, _ = by_default.results([at.Job(refused, at.Call("c"))])
        assert results[0] is not None
        self.assertNotIn("read_output", str(results[0].output))

    def test_a_cut_text_part_gets_a_handle_too(self) -> None:
        def parts() -> at.Result:
            return at.parts({"type": "input_text", "text": ALPHABET})

        tools = at.ToolSet([at.new("", "", parts, max_output=40, pageable=True)]).pageable()
        out = tools.run([call("parts", {})])[0]["output"]
        handle, offset = _cut(out[0]["text"])
        self.assertTrue(read(tools, handle, offset).startswith(ALPHABET[20:60]))

    def test_pageable_refuses_a_second_read_output(self) -> None:
        with self.assertRaisesRegex(ValueError, 'already named "read_output"'):
            self.tools.pageable()


class TestPagesLiveWithTheRun(unittest.TestCase):
    """A journaled call's read_output handles live in its run's journal: read by a later
    batch on that journal, in another process too, until the run is forgotten."""

    def setUp(self) -> None:
        import tempfile

        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "agent.db")
        self.journal = at.Journal(self.path)

    def tearDown(self) -> None:
        self.journal.close()
        self.dir.cleanup()

    def read(self, handle: str, offset: int, run: str, journal: at.Journal | None) -> str:
        tools = at.ToolSet([]).pageable()
        args = {"handle": handle, "offset": offset}
        items = [call("read_output", args, "r")]
        out = tools.run(items, journal=journal, run=run) if journal else tools.run(items)
        return str(out[0]["output"])

    def test_a_handle_is_read_after_the_process_that_cut_it_is_gone(self) -> None:
        import subprocess
        import sys

        child = (
            "import json, sys, agenttool as at\n"
            f"text = {ALPHABET!r}\n"
            "t = at.new('big', '', lambda: text, max_output=40, pageable=True)\n"
            "item = {'type': 'function_call', 'call_id': 'c1', 'name': 'big', 'arguments': '{}'}\n"
            "out = at.ToolSet([t]).run([item], journal=at.Journal(sys.argv[1]), run='turn-1')\n"
            "print(out[0]['output'])\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", child, self.path],
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        handle, offset = _cut(done.stdout)
        middle = self.read(handle, offset, "turn-2", self.journal)
        self.assertEqual(
            middle, ALPHABET[20:60] + "\n[characters 20 to 60 of 200; 140 more from offset 60]"
        )
        # the run's outcome replays with the same handle, which still reads
        again = at.ToolSet([at.new("big", "", lambda: "", max_output=40, pageable=True)]).run(
            [call("big", {})], journal=self.journal, run="turn-1"
        )
        self.assertEqual(again[0]["output"], done.stdout[:-1])
        self.assertIn("the end", self.read(handle, 190, "turn-3", self.journal))

    def test_a_cut_part_is_read_on_its_journal_only_and_until_its_run_is_forgotten(self) -> None:
        def parts() -> at.Result:
            head = {"type": "input_text", "text": "head"}
            return at.parts(head, {"type": "input_text", "text": ALPHABET})

        tools = at.ToolSet([at.new("", "", parts, max_output=40, pageable=True)])
        out = tools.run([call("parts", {})], journal=self.journal, run="turn-1")[0]["output"]
        handle, offset = _cut(out[1]["text"])
        self.assertEqual(offset, 18)
        page = self.read(handle, offset, "turn-2", self.journal)
        self.assertTrue(page.startswith(ALPHABET[18:54] + "\n["), page)
        elsewhere = self.read(handle, offset, "", None)  # a batch on no journal
        self.assertIn(f'no output under handle "{handle}"', elsewhere)
        self.assertIn("a journaled run's, in a batch on its journal", elsewhere)
        self.journal.forget("turn-1")
        self.assertIn("it is gone", self.read(handle, offset, "turn-3", self.journal))

    def test_a_call_run_again_takes_its_earlier_handles_with_it(self) -> None:
        """A finished call run again (its tool changed, the host said run it) keeps only the
        handles of its new output: an old handle never reads another output's text."""
        first = at.new("big", "first", lambda: ALPHABET, max_output=40, pageable=True)
        out = at.ToolSet([first]).run([call("big", {})], journal=self.journal, run="turn-1")
        old, _ = _cut(out[0]["output"])
        changed = at.new("big", "changed", lambda: ALPHABET[::-1], max_output=40, pageable=True)
        again = at.ToolSet([changed]).run(
            [call("big", {})], journal=self.journal, run="turn-1", resolve={"c1": True}
        )
        new, offset = _cut(again[0]["output"])
        self.assertNotEqual(new, old)
        self.assertIn("it is gone", self.read(old, offset, "turn-2", self.journal))
        page = self.read(new, offset, "turn-3", self.journal)
        self.assertTrue(page.startswith(ALPHABET[::-1][20:60] + "\n["), page)


class _Captured(list):  # type: ignore[type-arg]
    """The records the "agenttool" logger emits while installed, at every level."""

    def __enter__(self) -> _Captured:
        import logging

        class Keep(logging.Handler):
            def emit(inner, record: logging.LogRecord) -> None:  # noqa: N805
                self.append(record)

        self.logger = logging.getLogger("agenttool")
        self.handler = Keep(logging.DEBUG)
        self.level = self.logger.level
        self.logger.addHandler(self.handler)
        self.logger.setLevel(logging.DEBUG)
        return self

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.level)


class TestLogs(unittest.TestCase):
    def run_one(self, t: at.Tool, **options: Any) -> None:
        at.Executor(**options).results([at.Job(t, at.Call("c7", {}))])

    def test_a_failing_tool_is_a_warning_with_its_traceback(self) -> None:
        def broken() -> str:
            raise ValueError("disk on fire")

        with _Captured() as records:
            self.run_one(at.new("", "", broken))
        self.assertEqual([r.levelname for r in records], ["WARNING"])
        self.assertEqual(
            records[0].getMessage(), 'tool "broken" (call "c7") failed: ValueError: disk on fire'
        )
        self.assertIsNotNone(records[0].exc_info)

    def test_a_crash_is_an_error(self) -> None:
        def leaves() -> str:
            raise SystemExit(3)

        with _Captured() as records:
            self.run_one(at.new("", "", leaves))
        self.assertEqual([r.levelname for r in records], ["ERROR"])
        self.assertIn("crashed: SystemExit: 3", records[0].getMessage())

    def test_a_timeout_and_a_denial_are_warnings(self) -> None:
        release = __import__("threading").Event()

        def slow() -> str:
            release.wait(10)
            return ""

        def guarded() -> str:
            return ""

        with _Captured() as records:
            self.run_one(at.new("", "", slow, timeout=0.05))
            release.set()
            self.run_one(at.new("", "", guarded, needs_approval=True))
            self.run_one(at.new("", "", guarded, needs_approval=True), approver=lambda job: "no")
        messages = [(r.levelname, r.getMessage()) for r in records]
        timeouts = [(level, m.split(";")[0]) for level, m in messages if '"slow"' in m]
        self.assertEqual(timeouts, [("WARNING", 'tool "slow" (call "c7") timed out after 0.05 s')])
        self.assertIn(
            ("WARNING", 'call "c7" of tool "guarded" denied: there is no approver'), messages
        )
        self.assertIn(("WARNING", 'call "c7" of tool "guarded" denied by its approver'), messages)

    def test_nothing_is_logged_for_calls_that_go_well_or_are_the_models_mistake(self) -> None:
        def fine(n: int) -> str:
            return str(n)

        def refuses() -> str:
            raise at.ToolError("list users first")

        with _Captured() as records:
            tools = at.ToolSet([at.new("", "", fine), at.new("", "", refuses)])
            tools.run([call("fine", {"n": 1}), call("fine", {"n": "x"}, "c2")])
            tools.run([call("refuses", {}), call("missing", {}, "c3")])
        self.assertEqual(records, [])

    def test_without_logging_configured_nothing_reaches_stderr(self) -> None:
        import subprocess
        import sys
        import textwrap

        code = textwrap.dedent(
            """
            import logging, agenttool as at
            def broken() -> str:
                raise ValueError("x")
            at.Executor().results([at.Job(at.new("", "", broken), at.Call("c"))])
            assert "logging" in __import__("sys").modules
            assert any(isinstance(h, logging.NullHandler)
                       for h in logging.getLogger("agenttool").handlers)
            """
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=HERE
        )
        self.assertEqual((done.returncode, done.stderr), (0, ""))


class TestResultCache(unittest.TestCase):
    def setUp(self) -> None:
        self.runs: list[str] = []

        def price(item: str) -> str:
            """The price of an item."""
            self.runs.append(item)
            return f"{item}: 3 EUR"

        self.price = price

    def tool(self, **options: Any) -> at.Tool:
        options.setdefault("cacheable", True)
        options.setdefault("replay", at.Replay.SAFE)
        return at.new("", "", self.price, **options)

    def finals(self, executor: at.Executor, t: at.Tool, args: Any) -> at.Event:
        events = [e for e in executor.execute([at.Job(t, at.Call("c", args))]) if e.final]
        return events[0]

    def test_a_safe_cacheable_call_is_answered_from_the_cache(self) -> None:
        executor, t = at.Executor(cache=True), self.tool()
        first = self.finals(executor, t, {"item": "tea"})
        second = self.finals(executor, t, '{"item": "tea"}')
        self.assertEqual(self.runs, ["tea"])
        self.assertFalse(first.cached)
        self.assertTrue(second.cached)
        assert second.result is not None
        self.assertEqual(second.result.output, "tea: 3 EUR")
        other = self.finals(executor, t, {"item": "milk"})
        self.assertFalse(other.cached)
        self.assertEqual(self.runs, ["tea", "milk"])

    def test_only_a_tool_that_is_cacheable_and_reads_safe_is_cached(self) -> None:
        for t in (
            self.tool(cacheable=False),
            self.tool(replay=at.Replay.KEYED),
            self.tool(replay=lambda args: at.Replay.SAFE if args["item"] != "tea" else "?"),
        ):
            self.runs.clear()
            executor = at.Executor(cache=True)
            for _ in range(2):
                self.assertFalse(self.finals(executor, t, {"item": "tea"}).cached)
            self.assertEqual(self.runs, ["tea", "tea"])

    def test_an_edited_tool_never_answers_from_an_old_entry(self) -> None:
        cache = at.ResultCache()
        self.finals(at.Executor(cache=cache), self.tool(), {"item": "tea"})
        edited = at.new(
            "", "The price of an item, in cents.", self.price, cacheable=True, replay=at.Replay.SAFE
        )
        self.assertFalse(self.finals(at.Executor(cache=cache), edited, {"item": "tea"}).cached)
        self.assertTrue(self.finals(at.Executor(cache=cache), self.tool(), {"item": "tea"}).cached)

    def test_failures_are_never_stored(self) -> None:
        attempts: list[int] = []

        def flaky(n: int) -> str:
            attempts.append(n)
            if len(attempts) == 1:
                raise ValueError("try again")
            return "ok"

        t = at.new("", "", flaky, cacheable=True, replay=at.Replay.SAFE)
        executor = at.Executor(cache=True)
        self.assertIsNotNone(self.finals(executor, t, {"n": 1}).error)
        self.assertEqual(self.finals(executor, t, {"n": 1}).result.output, "ok")  # type: ignore[union-attr]
        self.assertTrue(self.finals(executor, t, {"n": 1}).cached)
        self.assertIsNotNone(self.finals(executor, t, {"n": "x"}).error)  # invalid: runs, fails

    def test_no_policy_is_skipped_by_a_cached_answer(self) -> None:
        asked: list[str] = []
        executor = at.Executor(cache=True, approver=lambda job: asked.append(job.call.id) or True)
        t = self.tool(needs_approval=True)
        self.finals(executor, t, {"item": "tea"})
        self.assertTrue(self.finals(executor, t, {"item": "tea"}).cached)
        self.assertEqual(asked, ["c", "c"])

    def test_a_cached_result_is_a_copy(self) -> None:
        def listing() -> list[str]:
            return ["a", "b"]

        t = at.new("", "", listing, cacheable=True, replay=at.Replay.SAFE)
        executor = at.Executor(cache=True)
        first = self.finals(executor, t, {})
        assert first.result is not None and first.result.structured is not None
        first.result.structured.append("mutated")
        second = self.finals(executor, t, {})
        self.assertEqual(second.result.structured, ["a", "b"])  # type: ignore[union-attr]

    def test_the_cache_is_bounded_and_entries_expire(self) -> None:
        cache = at.ResultCache(max_entries=2, ttl=300)
        for key in "abc":
            cache.put(key, at.text(key))
        self.assertEqual(len(cache), 2)
        self.assertIsNone(cache.get("a"))
        expired = at.ResultCache(ttl=1e-9)
        expired.put("k", at.text("v"))
        self.assertIsNone(expired.get("k"))
        for bad in ({"max_entries": 0}, {"ttl": float("inf")}, {"ttl": -1}):
            with self.assertRaises(ValueError):
                at.ResultCache(**bad)  # type: ignore[arg-type]
        with self.assertRaisesRegex(TypeError, "cache must be True or a ResultCache"):
            at.Executor(cache="yes")  # type: ignore[arg-type]

    def test_with_a_journal_the_cache_is_shared_by_processes_and_survives_them(self) -> None:
        """Executor(journal=j, cache=True) keeps entries in the journal's database: another
        executor on the same file (another process, a restart) is answered from them, an
        edited tool is not, and expired entries are not served."""
        import subprocess
        import sys
        import tempfile
        import textwrap

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "agent.db")
            journal = at.Journal(path)
            executor, t = at.Executor(journal=journal, cache=True), self.tool()
            job = at.Job(t, at.Call("c", {"item": "tea"}))
            turn_1 = [e for e in executor.execute([job], run="turn-1") if e.final]
            turn_2 = [e for e in executor.execute([job], run="turn-2") if e.final]
            self.assertEqual([turn_1[0].cached, turn_2[0].cached], [False, True])
            journal.close()
            child = textwrap.dedent(f"""
                import json, sys
                sys.path.insert(0, {HERE!r})
                import agenttool as at

                def price(item: str) -> str:
                    \"\"\"The price of an item.\"\"\"
                    return "ran in the child"

                t = at.new("", "", price, cacheable=True, replay=at.Replay.SAFE)
                ex = at.Executor(journal=at.Journal({path!r}), cache=True)
                job = at.Job(t, at.Call("c", {{"item": "tea"}}))
                e = [e for e in ex.execute([job], run="child-turn") if e.final]
                print(json.dumps([e[0].cached, e[0].result.output]))
            """)
            done = subprocess.run(
                [sys.executable, "-c", child], capture_output=True, text=True, timeout=60
            )
            self.assertEqual(json.loads(done.stdout), [True, "tea: 3 EUR"], done.stderr)
            self.assertEqual(self.runs, ["tea"])
            journal = at.Journal(path)
            edited = at.new("", "In cents.", self.price, cacheable=True, replay=at.Replay.SAFE)
            cache = at.ResultCache(journal=journal)
            self.assertFalse(self.finals(at.Executor(cache=cache), edited, {"item": "tea"}).cached)
            expired = at.ResultCache(ttl=0.05, journal=journal)
            self.assertFalse(
                self.finals(at.Executor(cache=expired), self.tool(), {"item": "milk"}).cached
            )
            time.sleep(0.1)  # past the entry's ttl: it is not served
            self.assertFalse(
                self.finals(at.Executor(cache=expired), self.tool(), {"item": "milk"}).cached
            )
            journal.close()

    def test_a_journal_cache_is_bounded_and_skips_what_is_not_json(self) -> None:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            journal = at.Journal(os.path.join(d, "agent.db"))
            cache = at.ResultCache(max_entries=2, journal=journal)
            for key in "abc":
                cache.put(key, at.text(key))
            self.assertEqual(len(cache), 2)
            self.assertIsNone(cache.get("a"))
            self.assertEqual(cache.get("c").output, "c")  # type: ignore[union-attr]
            with self.assertLogs("agenttool", "WARNING") as logged:
                cache.put("d", at.Result("x", structured={1j}))  # not JSON: not stored
            self.assertIn("not stored in the result cache", logged.output[0])
            self.assertIsNone(cache.get("d"))
            with self.assertRaisesRegex(TypeError, "journal must be a Journal"):
                at.ResultCache(journal="agent.db")  # type: ignore[arg-type]
            journal.close()

    def test_async_tools_are_cached_under_aexecute(self) -> None:
        import asyncio

        runs: list[int] = []

        async def fetch(n: int) -> str:
            runs.append(n)
            return str(n)

        t = at.new("", "", fetch, cacheable=True, replay=at.Replay.SAFE)
        executor = at.Executor(cache=True)

        async def go() -> list[bool]:
            seen = []
            for _ in range(2):
                async for e in executor.aexecute([at.Job(t, at.Call("c", {"n": 4}))]):
                    if e.final:
                        seen.append(e.cached)
            return seen

        self.assertEqual(asyncio.run(go()), [False, True])
        self.assertEqual(runs, [4])


try:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
except ImportError:  # pragma: no cover - CI has it
    TracerProvider = None


class _FakeSpan:
    def __init__(self, name: str, attributes: dict[str, Any], log: list[Any]) -> None:
        self.name, self.attributes, self.log = name, dict(attributes), log

    def __enter__(self) -> _FakeSpan:
        self.log.append(("start", self.name))
        return self

    def __exit__(self, *exc: object) -> None:
        self.log.append(("end", self.name))

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value


class _FakeTracer:
    """Only the shape the core relies on: start_as_current_span(name, attributes=...)."""

    def __init__(self) -> None:
        self.log: list[Any] = []
        self.spans: list[_FakeSpan] = []

    def start_as_current_span(self, name: str, attributes: Any = None) -> _FakeSpan:
        span = _FakeSpan(name, attributes or {}, self.log)
        self.spans.append(span)
        return span


class TestTracesWithAnyTracer(unittest.TestCase):
    def test_a_tracer_of_the_shape_needs_no_opentelemetry(self) -> None:
        def greet(name: str) -> str:
            """Say hello."""
            return f"hello {name}"

        tracer = _FakeTracer()
        tools = at.ToolSet([at.new("", "", greet)])
        out = tools.run([call("greet", {"name": "ada"})], tracer=tracer)
        self.assertEqual(out[0]["output"], "hello ada")
        (span,) = tracer.spans
        self.assertEqual(span.name, "execute_tool greet")
        self.assertEqual(
            span.attributes,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "greet",
                "gen_ai.tool.call.id": "c1",
                "gen_ai.tool.type": "function",
                "gen_ai.tool.description": "Say hello.",
            },
        )
        self.assertEqual(
            tracer.log, [("start", "execute_tool greet"), ("end", "execute_tool greet")]
        )

    def test_without_a_tracer_nothing_is_traced(self) -> None:
        def noop() -> str:
            return ""

        tracer = _FakeTracer()
        at.ToolSet([at.new("", "", noop)]).run([call("noop", {})])
        at.Executor().results([at.Job(at.new("", "", noop), at.Call("c"))])
        self.assertEqual(tracer.spans, [])


class TestTraceContext(unittest.TestCase):
    """The W3C trace context (traceparent, tracestate) that carries a span to a served call or
    a worker process, read strictly: anything malformed is no parent, never an error."""

    VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    def test_a_valid_traceparent_is_read_with_its_tracestate(self) -> None:
        parent = at._trace_parent_of({"traceparent": self.VALID, "tracestate": "a=1, b@k=x y"})
        self.assertEqual(
            parent,
            (0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, 1, "a=1, b@k=x y"),
        )
        later = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-what-comes-next"
        self.assertEqual(at._trace_parent_of({"traceparent": later})[2:], (9, ""))  # type: ignore[index]

    def test_an_invalid_traceparent_is_no_parent(self) -> None:
        ids = "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"
        for value in (
            None,
            42,
            "",
            "garbage",
            f"00-{ids}",  # no flags
            f"00-{ids}-01-",  # version 00 has nothing after its flags
            f"00-{ids}-1",
            f"ff-{ids}-01",  # the version that is never valid
            f"0-{ids}-01",
            f"cc-{ids}-01extra",  # a later version's extra fields follow a dash
            f"00-{ids.upper()}-01",  # lower-case hex only
            f"00-{'0' * 32}-00f067aa0ba902b7-01",  # all-zero trace id
            f"00-4bf92f3577b34da6a3ce929d0e0e4736-{'0' * 16}-01",  # all-zero parent id
            f" {self.VALID}",
            f"{self.VALID}\n",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        ):
            with self.subTest(value):
                self.assertIsNone(at._trace_parent_of({"traceparent": value}))
        self.assertIsNone(at._trace_parent_of(None))
        self.assertIsNone(at._trace_parent_of({"tracestate": "a=1"}))

    def test_an_invalid_tracestate_is_dropped_and_the_parent_kept(self) -> None:
        for state in (7, "UPPER=1", "a=1,a=2", "a", "a=" + "x" * 257, ",".join(["k=v"] * 33)):
            with self.subTest(state):
                parent = at._trace_parent_of({"traceparent": self.VALID, "tracestate": state})
                self.assertEqual(parent and parent[3], "")

    def test_without_opentelemetry_loaded_nothing_is_sent(self) -> None:
        """The core never imports OpenTelemetry: a process without it has no span to send."""
        import subprocess
        import sys

        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); import agenttool as at; "
            "print(at._trace_context(), 'opentelemetry' in sys.modules)"
        )
        done = subprocess.run([sys.executable, "-c", code, HERE], capture_output=True, text=True)
        self.assertEqual(done.stdout.split(), ["{}", "False"], done.stderr)


@needs(TracerProvider is not None, "opentelemetry-sdk is not installed")
class TestTracesWithOpenTelemetry(unittest.TestCase):
    def setUp(self) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("test")

    def spans(self) -> dict[str, Any]:
        return {span.name: span for span in self.exporter.get_finished_spans()}

    def test_the_tools_own_spans_nest_under_the_call_on_threads_and_on_the_loop(self) -> None:
        import asyncio

        tracer = self.tracer

        def on_thread() -> str:
            with tracer.start_as_current_span("inner thread"):
                return "t"

        async def on_loop() -> str:
            with tracer.start_as_current_span("inner loop"):
                await asyncio.sleep(0)
                return "l"

        tools = at.ToolSet([at.new("", "", on_thread), at.new("", "", on_loop)])
        calls = [call("on_thread", {}, "c1"), call("on_loop", {}, "c2")]
        asyncio.run(tools.arun(calls, tracer=tracer))
        spans = self.spans()
        for tool, inner in (("on_thread", "inner thread"), ("on_loop", "inner loop")):
            outer = spans[f"execute_tool {tool}"]
            self.assertEqual(spans[inner].parent.span_id, outer.context.span_id, tool)
            self.assertEqual(outer.attributes["gen_ai.tool.name"], tool)

    def test_the_approver_and_each_retry_attempt_are_children(self) -> None:
        attempts: list[int] = []

        def flaky() -> str:
            attempts.append(1)
            if len(attempts) < 2:
                raise ConnectionError("try again")
            return "ok"

        t = at.retrying(
            at.new("", "", flaky, needs_approval=True, replay=at.Replay.SAFE), backoff=0
        )
        executor = at.Executor(approver=lambda job: True, tracer=self.tracer)
        results, errors = executor.results([at.Job(t, at.Call("c9"))])
        self.assertEqual((results[0].output, errors[0]), ("ok", None))  # type: ignore[union-attr]
        spans = self.spans()
        outer = spans["execute_tool flaky"]
        for child in ("approve flaky", "attempt 1 of flaky", "attempt 2 of flaky"):
            self.assertEqual(spans[child].parent.span_id, outer.context.span_id, child)
        self.assertEqual(spans["attempt 1 of flaky"].status.status_code.name, "ERROR")

    def test_a_failure_sets_error_type_and_the_status(self) -> None:
        def broken() -> str:
            raise KeyError("x")

        release = __import__("threading").Event()

        def hangs() -> str:
            release.wait(10)
            return ""

        executor = at.Executor(tracer=self.tracer)
        executor.results([at.Job(at.new("", "", broken), at.Call("c1"))])
        executor.results([at.Job(at.new("", "", hangs, timeout=0.05), at.Call("c2"))])
        release.set()
        for _ in range(200):  # the timed-out tool's span ends when the tool returns
            if "execute_tool hangs" in self.spans():
                break
            __import__("time").sleep(0.01)
        spans = self.spans()
        self.assertEqual(spans["execute_tool broken"].attributes["error.type"], "KeyError")
        self.assertEqual(spans["execute_tool broken"].status.status_code.name, "ERROR")
        self.assertEqual(spans["execute_tool hangs"].attributes["error.type"], "TimeoutError")

    def test_content_only_when_asked_and_cut(self) -> None:
        def echo(text: str) -> str:
            return text

        long = "x" * 10_000
        for record in (False, True):
            self.exporter.clear()
            executor = at.Executor(tracer=self.tracer, record_content=record)
            executor.results([at.Job(at.new("", "", echo), at.Call("c", {"text": long}))])
            attributes = self.spans()["execute_tool echo"].attributes
            if not record:
                self.assertNotIn("gen_ai.tool.call.arguments", attributes)
                self.assertNotIn("gen_ai.tool.call.result", attributes)
                continue
            self.assertIn("characters cut", attributes["gen_ai.tool.call.arguments"])
            self.assertLessEqual(len(attributes["gen_ai.tool.call.result"]), 4100)
            self.assertTrue(attributes["gen_ai.tool.call.result"].startswith("xxx"))

    def test_nothing_is_recorded_without_a_tracer(self) -> None:
        def noop() -> str:
            return ""

        at.ToolSet([at.new("", "", noop)]).run([call("noop", {})])
        self.assertEqual(self.exporter.get_finished_spans(), ())

    def test_the_current_span_is_sent_as_a_w3c_traceparent(self) -> None:
        from opentelemetry import trace

        self.assertEqual(at._trace_context(), {})  # no span, nothing to send
        state = trace.TraceState([("vendor", "x")])
        caller = trace.SpanContext(0xAB, 0xCD, is_remote=True, trace_flags=trace.TraceFlags(1))
        with trace.use_span(trace.NonRecordingSpan(caller)):
            self.assertEqual(at._trace_context(), {"traceparent": f"00-{0xAB:032x}-{0xCD:016x}-01"})
        with self.tracer.start_as_current_span(
            "s",
            context=trace.set_span_in_context(
                trace.NonRecordingSpan(
                    trace.SpanContext(0xAB, 0xCD, True, trace.TraceFlags(1), state)
                )
            ),
        ) as span:
            sent = at._trace_context()
        own = span.get_span_context()
        self.assertEqual(
            sent,
            {"traceparent": f"00-{0xAB:032x}-{own.span_id:016x}-01", "tracestate": "vendor=x"},
        )
        self.assertEqual(at._trace_parent_of(sent), (0xAB, own.span_id, 1, "vendor=x"))

    def test_an_isolated_tool_s_own_spans_nest_under_the_call_in_its_worker(self) -> None:
        """The call's span crosses to the worker with the job: the tool's own span, exported
        by the worker's own provider, is its child (the built-in pool and a foreign one)."""
        import concurrent.futures
        import multiprocessing

        from opentelemetry import trace

        from testdata import traced_tools

        t = at.tool(traced_tools.parent_seen, isolated=True)
        pool = concurrent.futures.ProcessPoolExecutor(1, multiprocessing.get_context("spawn"))
        self.addCleanup(pool.shutdown)
        state = trace.TraceState([("vendor", "x")])
        above = trace.NonRecordingSpan(
            trace.SpanContext(0xAB, 0xCD, True, trace.TraceFlags(1), state)
        )
        for workers in (None, pool):
            with self.subTest("foreign" if workers else "built-in"):
                self.exporter.clear()
                executor = at.Executor(tracer=self.tracer, workers=workers)
                with trace.use_span(above):
                    results, errors = executor.results([at.Job(t, at.Call("c1"))])
                self.assertIsNone(errors[0])
                seen = results[0].structured  # type: ignore[union-attr]
                outer = self.spans()["execute_tool parent_seen"].context
                self.assertEqual(
                    seen,
                    {
                        "trace_id": f"{outer.trace_id:032x}",
                        "parent": f"{outer.span_id:016x}",
                        "remote": True,
                        "tracestate": "vendor=x",
                    },
                )

    def test_an_isolated_call_outside_any_span_has_no_parent_in_its_worker(self) -> None:
        from testdata import traced_tools

        t = at.tool(traced_tools.parent_seen, isolated=True)
        results, errors = at.Executor().results([at.Job(t, at.Call("c1"))])
        self.assertIsNone(errors[0])
        self.assertEqual(results[0].structured["parent"], "")  # type: ignore[union-attr,index]


if __name__ == "__main__":
    unittest.main()
