"""The module's layout holds: its map names its sections, and what grows by name is a table.

These tests fail when a maintainer adds a section without its line in the map, a banner in a
second style, or a provider format without every piece the library needs of it.
"""

from __future__ import annotations

import ast
import functools
import inspect
import os
import re
import unittest
from typing import Any

import agenttool

HERE = os.path.dirname(os.path.abspath(__file__))
DASHES = "# " + "-" * 93


def module_text() -> str:
    with open(os.path.join(HERE, "agenttool.py"), encoding="utf-8") as f:
        return f.read()


def banner_titles(text: str) -> list[str]:
    """The titles of the top-level banners: after a blank line, a line of dashes and ``# Title``."""
    lines = text.split("\n")
    return [
        lines[i + 1][2:]
        for i in range(1, len(lines) - 1)
        if lines[i] == DASHES and lines[i - 1] == "" and re.match(r"# [^-]", lines[i + 1])
    ]


def map_titles(doc: str) -> list[str]:
    """The section lines of the module docstring's map, in order."""
    head, found, rest = doc.partition("a test holds this map to\nthe banners):\n")
    if not found:
        raise AssertionError("the module docstring has no map of its sections")
    block = rest.strip("\n").split("\n\n", 1)[0]
    return [line.strip() for line in block.split("\n")]


class TestMap(unittest.TestCase):
    def test_the_map_names_every_section_in_file_order(self) -> None:
        self.assertEqual(map_titles(agenttool.__doc__ or ""), banner_titles(module_text()))

    def test_a_section_without_its_line_in_the_map_is_caught(self) -> None:
        text = module_text().replace(
            "\n\n" + DASHES + "\n# Wrapping\n",
            "\n\n" + DASHES + "\n# A new section\n" + DASHES + "\n\n\n" + DASHES + "\n# Wrapping\n",
        )
        self.assertNotEqual(map_titles(agenttool.__doc__ or ""), banner_titles(text))

    def test_the_core_tests_follow_the_module_s_sections_in_order(self) -> None:
        """The banners of test_agenttool and test_rules are the module's section titles, in the
        module's order (test_agenttool's shared helpers first and its tests that cross the
        sections last)."""
        sections = banner_titles(module_text())
        for name in ("test_agenttool.py", "test_rules.py"):
            with self.subTest(name), open(os.path.join(HERE, name), encoding="utf-8") as f:
                titles = banner_titles(f.read())
                if name == "test_agenttool.py":
                    self.assertTrue(titles[0].startswith("Helpers shared"), titles[0])
                    self.assertTrue(titles[-1].startswith("Across the sections"), titles[-1])
                    titles = titles[1:-1]
                self.assertEqual([t for t in titles if t not in sections], [], "not a section")
                self.assertEqual(titles, sorted(titles, key=sections.index), "out of order")

    def test_banners_are_in_one_of_two_styles(self) -> None:
        """A section's banner is a line of 93 dashes, the title, a line of dashes; a part of a
        section is one line, ``# ----- title ---``, 95 characters wide."""
        for n, line in enumerate(module_text().split("\n"), 1):
            if re.fullmatch(r"# -{10,}", line):
                self.assertEqual(line, DASHES, f"line {n}: a banner of another width")
            elif re.match(r"# -{2,} ", line):
                self.assertRegex(
                    line, r"^# ----- [^-].* -+$", f"line {n}: a second sub-banner style"
                )
                self.assertEqual(len(line), 95, f"line {n}: a sub-banner of another width")


def sample_calls() -> dict[str, Any]:
    """One call of ``echo`` in each provider format's own items, by format."""
    return {
        "responses": [
            {"type": "function_call", "call_id": "c1", "name": "echo", "arguments": '{"s": "hi"}'}
        ],
        "chat": {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "echo", "arguments": '{"s": "hi"}'},
                }
            ],
        },
        "anthropic": [{"type": "tool_use", "id": "c1", "name": "echo", "input": {"s": "hi"}}],
        "gemini": [{"functionCall": {"id": "c1", "name": "echo", "args": {"s": "hi"}}}],
    }


@agenttool.tool
def echo(s: str) -> str:
    """Say it back."""
    return s


def fails(s: str) -> str:
    raise RuntimeError("it broke")


class TestFormatsTable(unittest.TestCase):
    def test_every_format_has_a_sample_here(self) -> None:
        """A new format fails here until it has a sample call (and so the round trip below)."""
        self.assertEqual(sorted(sample_calls()), sorted(agenttool._FORMATS))

    def test_every_format_writes_reads_and_answers(self) -> None:
        tools = agenttool.ToolSet([echo])
        for fmt, items in sample_calls().items():
            with self.subTest(fmt):
                definition = agenttool.definition(echo, fmt)
                self.assertIn("echo", str(definition))
                out = tools.run(items, format=fmt)
                self.assertEqual(len(out), 1)
                self.assertIn("hi", str(out[0]))
                self.assertIn("c1", str(out[0]))

    def test_every_format_answers_a_failure(self) -> None:
        tools = agenttool.ToolSet([agenttool.new("echo", "Always fails.", fails)])
        for fmt, items in sample_calls().items():
            with self.subTest(fmt):
                out = tools.run(items, format=fmt)
                self.assertEqual(len(out), 1)
                self.assertIn("it broke", str(out[0]))
                self.assertRegex(str(out[0]), "Error: it broke|is_error|'error'")

    def test_a_format_missing_a_piece_fails_when_made(self) -> None:
        """The table's entries are made when the module loads: a piece left out fails there."""
        whole = agenttool._FORMAT_TABLE["chat"]
        pieces = [whole.define, whole.read_call, whole.error_item, whole.result_item]
        for i in range(len(pieces)):
            given: list[Any] = list(pieces)
            given[i] = None
            with self.subTest(piece=i), self.assertRaises(TypeError):
                agenttool._Format("mistral", *given, whole.name_rule)
        with self.assertRaises(TypeError):
            agenttool._Format("mistral")  # type: ignore[call-arg]

    def test_the_command_line_offers_the_table_formats(self) -> None:
        self.assertIn("|".join(agenttool._FORMATS), agenttool._CLI_USAGE)

    def test_an_unknown_format_is_refused_naming_the_known_ones(self) -> None:
        with self.assertRaises(ValueError) as caught:
            agenttool.definition(echo, "mistral")
        for fmt in agenttool._FORMATS:
            self.assertIn(f'"{fmt}"', str(caught.exception))


@functools.cache
def option_classes() -> dict[str, ast.ClassDef]:
    """agenttool's option TypedDicts by name, read from the source once (they are defined for
    type checkers only, so as not to cost import time)."""
    return {
        node.name: node
        for node in ast.walk(ast.parse(module_text()))
        if isinstance(node, ast.ClassDef) and node.name.endswith("Options")
    }


def typed_keys(name: str) -> set[str]:
    """The keys of one of agenttool's option TypedDicts, its bases' included."""
    node = option_classes()[name]
    keys = {
        item.target.id
        for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    }
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id in option_classes():
            keys |= typed_keys(base.id)
    return keys


class TestToolOptions(unittest.TestCase):
    def test_the_typed_options_are_function_tools_keyword_parameters(self) -> None:
        """A new FunctionTool option without its typed entry (or the reverse) fails here."""
        signature = inspect.signature(agenttool.FunctionTool.__init__)
        keywords = {p.name for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY}
        self.assertEqual(
            typed_keys("_ToolOptions"), keywords - {"name", "description"} | {"closer"}
        )
        self.assertEqual(
            typed_keys("_DecoratorOptions"), typed_keys("_ToolOptions") | {"name", "description"}
        )
        self.assertEqual(
            typed_keys("_FuncOptions"), typed_keys("_ToolOptions") - {"parameters", "raw"}
        )


class TestTwins(unittest.TestCase):
    def test_the_async_twins_take_the_same_parameters(self) -> None:
        """A parameter added to run and not to arun (or to execute and not aexecute) fails."""
        for sync, asynchronous in (
            (agenttool.ToolSet.run, agenttool.ToolSet.arun),
            (agenttool.Executor.execute, agenttool.Executor.aexecute),
        ):
            with self.subTest(sync.__name__):
                self.assertEqual(
                    list(inspect.signature(sync).parameters),
                    list(inspect.signature(asynchronous).parameters),
                )


if __name__ == "__main__":
    unittest.main()
