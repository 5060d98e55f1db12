"""Claims that cannot go stale: what the README, the docstrings and the comments say against
what the code has and the benchmark measured.  Standard library only, Python 3.9+.

- every markdown table renders: its rows are contiguous, under a header and a delimiter row,
  each with the header's number of cells;
- the README's benchmark region is what ``bench/results.py`` renders from the committed
  ``bench/results.json`` (``bench/run --readme`` writes it);
- every key of ``agenttool.PROPERTIES`` is named by the README's property table, the ``Tool``
  docstring and ``agenttool_mcp.TOOL_META_KEY``'s docstring, whose ``_meta`` fields are the
  ones the server writes; the options of a function tool are listed once as the source
  (``new()``'s docstring) and the README's list is held to it and both to ``FunctionTool``;
- a package version cited in the code's comments or docstrings is the one CI installs.
"""

import ast
import inspect
import os
import re
import sys
import unittest

import agenttool as at

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import results  # noqa: E402  (bench/results.py)


def read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


README = read("README.md")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1."""
    out, fence = [], ""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        out.append((number, line))
    return out


def cells(line: str) -> list[str]:
    """A table row's cells (an escaped ``\\|`` stays inside its cell)."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip() for c in re.split(r"(?<!\\)\|", inner)]


def tables(text: str) -> list[list[tuple[int, str]]]:
    """Runs of consecutive lines that start with ``|`` (outside code), each a table or not."""
    blocks: list[list[tuple[int, str]]] = []
    previous = -1
    for number, line in prose_lines(text):
        if not line.lstrip().startswith("|"):
            continue
        if number == previous + 1 and blocks:
            blocks[-1].append((number, line))
        else:
            blocks.append([(number, line)])
        previous = number
    return blocks


DELIMITER = re.compile(r"^\s*:?-{3,}:?\s*$")


def table_problems(text: str) -> list[str]:
    problems = []
    for block in tables(text):
        first = block[0][0]
        if len(block) < 2 or not all(DELIMITER.match(c) for c in cells(block[1][1])):
            problems.append(
                f"line {first}: rows with no header and delimiter row right above them"
                " (a blank line inside a table ends it: these render as text)"
            )
            continue
        width = len(cells(block[0][1]))
        for number, line in block[1:]:
            if len(cells(line)) != width:
                problems.append(f"line {number}: {len(cells(line))} cells, the header has {width}")
    return problems


def table_under(text: str, header: str) -> list[list[str]]:
    """The rows (as cells) of the table whose header line starts with ``header``."""
    for block in tables(text):
        if block[0][1].startswith(header):
            return [cells(line) for _, line in block[2:]]
    raise AssertionError(f"no table with the header {header!r}")


class TestTablesRender(unittest.TestCase):
    def test_readme_tables_are_contiguous(self) -> None:
        self.assertEqual(table_problems(README), [])

    def test_bench_readme_tables_are_contiguous(self) -> None:
        self.assertEqual(table_problems(read("bench", "README.md")), [])

    def test_a_blank_line_inside_a_table_is_caught(self) -> None:
        broken = "| a | b |\n|---|---|\n| 1 | 2 |\n\n| 3 | 4 |\n"
        self.assertEqual(len(table_problems(broken)), 1)
        self.assertEqual(table_problems(broken.replace("\n\n", "\n")), [])
        self.assertEqual(len(table_problems("| a | b |\n|---|---|\n| 1 |\n")), 1)


class TestBenchFigures(unittest.TestCase):
    """The README's figures are the committed results file's, rendered, never typed."""

    def test_readme_region_is_rendered_from_results_file(self) -> None:
        self.assertEqual(README.count(results.BEGIN), 1)
        self.assertEqual(README.count(results.END), 1)
        expected = results.render(results.read(results.RESULTS))
        self.assertEqual(
            results.region(README),
            expected,
            "README.md's benchmark region differs from bench/results.json: run "
            "`bench/run --readme` (the figures come from bench/run, bench/isolation.py, "
            "bench/journal.py and bench/scaleout.py, never from an edit)",
        )

    def test_results_file_is_well_formed(self) -> None:
        data = results.read(results.RESULTS)
        self.assertEqual(data["format"], 1)
        runs = {r["id"]: r for r in data["runs"]}
        self.assertTrue(data["rows"])
        for run in runs.values():
            for key in ("command", "date", "commit", "machine", "cores", "python"):
                self.assertTrue(run[key], (run["id"], key))
            for key in ("load_start", "load_end"):
                self.assertEqual(len(run[key]), 3, (run["id"], key))
        order = [results.SECTIONS.index(r["section"]) for r in data["rows"]]
        self.assertEqual(order, sorted(order))
        for r in data["rows"]:
            self.assertIn(r["run"], runs)
            for key in results.FIELDS:
                self.assertIn(key, r)
            self.assertIn(r["met"], (True, False, None))
        self.assertEqual({r["run"] for r in data["rows"]}, set(runs))

    def test_a_changed_figure_is_caught(self) -> None:
        data = results.read(results.RESULTS)
        data["rows"][0]["ours"] += " (edited)"
        self.assertNotEqual(results.render(data), results.region(README))


PROPERTIES = at.PROPERTIES
OPTIONS_ONLY_README = {"name", "description"}  # new()'s positional arguments, @tool's options


def function_tool_options() -> set[str]:
    """FunctionTool's keyword parameters (``raw`` is new_func's), and new()'s ``closer``."""
    params = inspect.signature(at.FunctionTool.__init__).parameters
    names = {n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    return (names - {"name", "description", "raw"}) | {"closer"}


def new_options() -> set[str]:
    """The options ``new()``'s docstring lists, one ``- ``name``: ...`` item each."""
    doc = inspect.getdoc(at.new) or ""
    found: set[str] = set()
    for item in re.split(r"\n- ", doc[doc.index("Options") :])[1:]:
        head = " ".join(item.split()).split(": ", 1)[0]
        found |= set(re.findall(r"``(\w+)(?:=[^`]*)?``", head))
    return found


def readme_options() -> set[str]:
    """The options the README's "Building tools" names, in its sentence starting "Options"."""
    bullet = README[README.index("- **Building tools**") :]
    sentence = bullet[bullet.index("Options") :]
    sentence = re.split(r"\.\s", sentence, maxsplit=1)[0]
    return set(re.findall(r"`(\w+)`", sentence))


def mcp_module() -> ast.Module:
    return ast.parse(read("agenttool_mcp.py"))


def tool_meta_doc() -> str:
    body = mcp_module().body
    for i, node in enumerate(body):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "TOOL_META_KEY" for t in node.targets
        ):
            doc = body[i + 1]
            assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
            return str(doc.value.value)
    raise AssertionError("agenttool_mcp.py has no TOOL_META_KEY")


def server_meta_fields() -> set[str]:
    """The keys agenttool_mcp's server writes under TOOL_META_KEY: those ``_tool_meta`` sets
    and those its caller adds to the dict it returns (read from the source, so that this
    runs without the mcp SDK)."""
    functions = {n.name: n for n in ast.walk(mcp_module()) if isinstance(n, ast.FunctionDef)}

    def keys_set(fn: ast.FunctionDef, names: set[str]) -> set[str]:
        found = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if (
                        isinstance(t, ast.Subscript)
                        and isinstance(t.value, ast.Name)
                        and t.value.id in names
                        and isinstance(t.slice, ast.Constant)
                    ):
                        found.add(t.slice.value)
        return found

    made = keys_set(functions["_tool_meta"], {"meta"})
    for fn in functions.values():
        holders = {
            t.id
            for node in ast.walk(fn)
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "_tool_meta"
            for t in node.targets
            if isinstance(t, ast.Name)
        }
        if holders:
            made |= keys_set(fn, holders)
    return made


class TestPropertyLists(unittest.TestCase):
    """Every list of the tool properties or options kept by hand names every one."""

    def test_readme_property_table(self) -> None:
        rows = table_under(README, "| property |")
        named = {r[0]: r for r in rows}
        self.assertEqual(set(named), set(PROPERTIES) | {"closer"})
        for key, reader in PROPERTIES.items():
            self.assertIn(f"`{reader.__name__}(", named[key][2], key)
        self.assertEqual(len(rows), len(named), "a property has two rows")

    def test_tool_docstring(self) -> None:
        doc = inspect.getdoc(at.Tool)
        for key, reader in PROPERTIES.items():
            pattern = rf"``{key}(\(args\))?``\s+\(:func:`{reader.__name__}`"
            self.assertRegex(doc, pattern, f"the Tool docstring does not name {key}")
        self.assertIn("``close()``", doc)

    def test_new_docstring_lists_every_option(self) -> None:
        self.assertEqual(new_options(), function_tool_options())
        self.assertLessEqual(set(PROPERTIES), new_options())

    def test_readme_lists_the_same_options(self) -> None:
        self.assertEqual(readme_options(), new_options() | OPTIONS_ONLY_README)

    def test_tool_meta_docstring_names_every_property(self) -> None:
        doc = tool_meta_doc()
        crossing = doc[doc.index("How each of") :]
        items = re.split(r"\n- ", crossing)[1:]
        for key in PROPERTIES:
            holders = [i for i in items if f"``{key}``" in i]
            self.assertEqual(len(holders), 1, f"TOOL_META_KEY's docstring on {key}")

    def test_tool_meta_fields_are_what_the_server_writes(self) -> None:
        doc = " ".join(tool_meta_doc().split())
        stated = doc[doc.index("the fields") : doc.index("each only when")]
        written = server_meta_fields()
        self.assertIn("facts", written)
        self.assertEqual(set(re.findall(r"``(\w+)``", stated)), written)
        entry = doc[doc.index("- in this entry:") :].split(";")[0]
        self.assertLessEqual(set(re.findall(r"``(\w+)``", entry)), written)


def mcp_installed() -> bool:
    import importlib.util

    return sys.version_info >= (3, 10) and importlib.util.find_spec("mcp") is not None


@unittest.skipUnless(mcp_installed(), "needs the mcp SDK (Python 3.10+)")
class TestToolMetaServed(unittest.TestCase):
    """What a server built by agenttool_mcp writes under TOOL_META_KEY, with every field set,
    is what the docstring names (the source reading above runs without the SDK)."""

    def test_served_fields(self) -> None:
        import agenttool_mcp as am

        def listed(country: str) -> list[str]:
            """Cities."""
            return [country]

        def used(name: str) -> str:
            """A resource's user."""
            return name

        everything = at.tool(
            listed,
            facts=lambda args: at.Facts(),
            replay=at.Replay.SAFE,
            annotations=at.Annotations(read_only=True),
            sequential=True,
        )
        shared = at.tool(used, resource="db", task=True)
        written = set()
        for entry in am._entries_of([everything, shared]).values():
            written |= set((entry.definition.meta or {}).get(am.TOOL_META_KEY, {}))
        self.assertEqual(written, server_meta_fields())


def pins(path: str) -> dict[str, str]:
    """A requirements file's ``name==version`` pins, names normalized."""
    found = {}
    for line in read(path).splitlines():
        m = re.match(r"^\s*([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==([0-9][0-9A-Za-z.]*)", line)
        if m:
            found[norm(m.group(1))] = m.group(2)
    return found


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def version_claims(text: str, names: set[str]) -> list[tuple[int, str, str]]:
    """``(line, name, version)`` for each ``<name> <version>`` (``mcp SDK 2.x`` too) in the
    text, a version being two components or more."""
    spelled = "|".join(
        sorted({re.escape(n).replace("\\-", "[-_]") for n in names}, key=len, reverse=True)
    )
    pattern = re.compile(
        rf"(?<![\w.-])({spelled})(?: SDK)? v?(\d+(?:\.(?:\d+|x))+)\b", re.IGNORECASE
    )
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if "==" in line:
            continue  # a pin itself
        for m in pattern.finditer(line):
            out.append((number, norm(m.group(1)), m.group(2)))
    return out


def agrees(cited: str, pinned: str) -> bool:
    """Whether each component cited is the pin's (``x`` stands for any)."""
    have = pinned.split(".")
    want = cited.split(".")
    return len(want) <= len(have) and all(w in ("x", h) for w, h in zip(want, have))


class TestVersionClaims(unittest.TestCase):
    """A package version named in the code is the one its requirements file pins."""

    def check(self, files: list[str], requirements: str) -> None:
        pinned = pins(requirements)
        wrong = []
        for path in files:
            for number, name, version in version_claims(read(path), set(pinned)):
                if not agrees(version, pinned[name]):
                    wrong.append(
                        f"{path}:{number}: {name} {version}, {requirements} pins {pinned[name]}"
                    )
        self.assertEqual(wrong, [])

    def test_modules_and_tests(self) -> None:
        files = ["agenttool.py", "agenttool_mcp.py", "agenttool_adapters.py"]
        files += sorted(f for f in os.listdir(ROOT) if re.match(r"test_.*\.py$", f))
        self.check(files, os.path.join(".ci", "requirements.txt"))

    def test_bench(self) -> None:
        files = [
            os.path.join("bench", f)
            for f in sorted(os.listdir(os.path.join(ROOT, "bench")))
            if f.endswith(".py")
        ]
        self.check(files, os.path.join("bench", "requirements.txt"))

    def test_the_check_sees_a_wrong_version(self) -> None:
        names = {"google-genai", "anthropic", "mcp"}
        text = "# google-genai {}.6.1 allows\n# (anthropic 2.{}.0 Base64)\n# the mcp SDK 2.x\n"
        claims = version_claims(text.format(3, 14), names)  # written so as not to be one here
        self.assertEqual(
            claims, [(1, "google-genai", "3.6.1"), (2, "anthropic", "2.14.0"), (3, "mcp", "2.x")]
        )
        self.assertFalse(agrees("3.6.1", "3.3.0"))
        self.assertTrue(agrees("2.x", "2.3.0"))
        self.assertTrue(agrees("2.14", "2.14.4"))


if __name__ == "__main__":
    unittest.main()
