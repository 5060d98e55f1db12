"""Tests of the command line: in-process through ``main(argv)``, and as a user runs it,
``python -m agenttool`` and ``python agenttool.py``, in a fresh interpreter."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from typing import Any

import agenttool as at

TARGET = textwrap.dedent(
    '''
    """A target module for the command-line tests."""
    import json

    import agenttool


    def _args(call):
        a = call.args
        if isinstance(a, (str, bytes)):
            a = json.loads(a or "{}")
        return a or {}


    def _add(call):
        a = _args(call)
        if "b" not in a:
            raise agenttool.ValidationError("", 'missing required property "b"')
        return agenttool.text(str(a["a"] + a["b"]))


    def _slow(call):
        agenttool.progress("starting", progress=0, total=2)
        agenttool.progress("halfway", progress=1, total=2, message="half")
        return agenttool.Result("done", details={"steps": 2})


    def _pic(call):
        return agenttool.parts(
            {"type": "text", "text": "a dot"}, agenttool.image(b"PNG", "image/png")
        )


    def _boom(call):
        raise RuntimeError("disk on fire")


    ADD_SCHEMA = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    add = agenttool.new_func("add", "Add two integers.", ADD_SCHEMA, _add)
    slow = agenttool.new_func("slow", "Report progress.", None, _slow)
    pic = agenttool.new_func("pic", "Return a picture.", None, _pic)
    boom = agenttool.new_func("boom", "Always fails.", None, _boom)
    also_add = add
    MATH = [add]
    SET = agenttool.ToolSet([add, slow])
    not_a_tool = 42
    '''
)

NAMES = ["add", "slow", "pic", "boom"]


def _repo() -> str:
    import agenttool

    return os.path.dirname(os.path.abspath(agenttool.__file__))


def _has_formats() -> bool:
    import agenttool

    return hasattr(agenttool, "_provider_definition")


def _has_main() -> bool:
    import agenttool

    return callable(getattr(agenttool, "main", None))


class _Workspace(unittest.TestCase):
    """A temporary folder holding target modules, cleaned up with whatever they imported."""

    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="agenttool-cli-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.target = self.write("toolbox_under_test.py", TARGET)
        modules, path, cwd = set(sys.modules), list(sys.path), os.getcwd()

        def restore() -> None:
            for name in set(sys.modules) - modules:
                del sys.modules[name]
            sys.path[:] = path
            os.chdir(cwd)

        self.addCleanup(restore)

    def write(self, name: str, source: str) -> str:
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        return path


class MainTest(_Workspace):
    def run_main(self, *argv: str, stdin: str = "") -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        old_stdin = sys.stdin
        sys.stdin = io.StringIO(stdin)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = at.main(list(argv))
        finally:
            sys.stdin = old_stdin
        return code, out.getvalue(), err.getvalue()

    def test_list_every_tool_of_a_file(self) -> None:
        code, out, err = self.run_main("list", self.target)
        self.assertEqual((code, err), (0, ""))
        defs = json.loads(out)
        self.assertEqual([d["name"] for d in defs], NAMES)
        self.assertEqual(
            defs[0],
            {
                "type": "function",
                "name": "add",
                "description": "Add two integers.",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"],
                },
            },
        )

    @unittest.skipUnless(_has_formats(), "agenttool does not hold the formats part yet")
    def test_list_formats(self) -> None:
        code, out, _ = self.run_main("list", self.target + ":add", "--format", "anthropic")
        self.assertEqual(code, 0)
        self.assertEqual(json.loads(out)[0]["input_schema"]["required"], ["a", "b"], "input_schema")
        code, out, _ = self.run_main("list", self.target + ":add", "--format", "chat")
        self.assertEqual(json.loads(out)[0]["function"]["name"], "add")
        code, out, err = self.run_main("list", self.target, "--format", "bedrock")
        self.assertEqual((code, out), (2, ""))
        self.assertIn('unknown format "bedrock"', err)

    def test_list_by_module_name_and_attr(self) -> None:
        os.chdir(self.dir)
        for target, names in (
            ("toolbox_under_test", NAMES),
            ("toolbox_under_test:MATH", ["add"]),
            ("toolbox_under_test:SET", ["add", "slow"]),
            ("toolbox_under_test:pic", ["pic"]),
        ):
            code, out, err = self.run_main("list", target)
            self.assertEqual((code, err), (0, ""), target)
            self.assertEqual([d["name"] for d in json.loads(out)], names, target)

    def test_unknown_targets_say_what_exists(self) -> None:
        code, out, err = self.run_main("list", self.target + ":nope")
        self.assertEqual((code, out), (2, ""))
        self.assertIn('has no attribute "nope"', err)
        self.assertIn("add, slow, pic, boom, also_add, MATH, SET", err)
        code, _, err = self.run_main("list", self.target + ":not_a_tool")
        self.assertEqual(code, 2)
        self.assertIn("is a int, not a tool, a list of tools or a ToolSet", err)
        code, _, err = self.run_main("list", os.path.join(self.dir, "missing.py"))
        self.assertEqual(code, 2)
        self.assertIn("toolbox_under_test.py", err)
        os.chdir(self.dir)
        code, _, err = self.run_main("call", "no_such_module_here", "add")
        self.assertEqual(code, 2)
        self.assertIn('no module named "no_such_module_here"', err)
        self.assertIn("toolbox_under_test.py", err)

    def test_a_target_that_fails_to_import(self) -> None:
        bad = self.write("broken_target.py", "import agenttool\nraise RuntimeError('half done')\n")
        code, out, err = self.run_main("list", bad)
        self.assertEqual((code, out), (2, ""))
        self.assertIn("Traceback", err)
        self.assertIn("cannot load", err)
        self.assertIn("RuntimeError: half done", err)

    def test_a_module_without_tools(self) -> None:
        empty = self.write("empty_target.py", "X = 1\n")
        code, out, err = self.run_main("list", empty)
        self.assertEqual((code, out), (0, "[]\n"))
        self.assertIn("no tools in", err)

    def test_duplicate_names(self) -> None:
        dup = self.write(
            "dup_target.py",
            "import agenttool\n"
            "a = agenttool.new_func('x', '', None, lambda c: 'a')\n"
            "b = agenttool.new_func('x', '', None, lambda c: 'b')\n",
        )
        code, _, err = self.run_main("list", dup)
        self.assertEqual(code, 2)
        self.assertIn('tool "x": duplicate name', err)

    def test_call_prints_what_the_model_sees(self) -> None:
        code, out, err = self.run_main("call", self.target, "add", '{"a": 2, "b": 3}')
        self.assertEqual((code, out, err), (0, "5\n", ""))

    def test_call_reads_arguments_from_stdin(self) -> None:
        code, out, _ = self.run_main("call", self.target, "add", "-", stdin='{"a": 1, "b": 1}')
        self.assertEqual((code, out), (0, "2\n"))

    def test_call_with_parts_prints_json(self) -> None:
        code, out, _ = self.run_main("call", self.target, "pic")
        self.assertEqual(code, 0)
        self.assertEqual(
            json.loads(out),
            [
                {"type": "text", "text": "a dot"},
                {
                    "type": "input_image",
                    "image_url": "data:image/png;base64,UE5H",
                    "detail": "auto",
                },
            ],
        )

    def test_progress_and_details_go_to_stderr(self) -> None:
        code, out, err = self.run_main("call", self.target, "slow")
        self.assertEqual((code, out), (0, "done\n"))
        self.assertEqual(
            err.splitlines(),
            ["progress: 0/2 starting", "progress: 1/2 half halfway", 'details: {"steps": 2}'],
        )

    def test_failures_read_as_the_model_sees_them(self) -> None:
        code, out, err = self.run_main("call", self.target, "boom")
        self.assertEqual((code, out, err), (1, "Error: disk on fire\n", ""))
        code, out, _ = self.run_main("call", self.target, "add", '{"a": 2}')
        self.assertEqual(code, 1)
        self.assertEqual(out, 'Error: invalid arguments: missing required property "b"\n')
        code, out, err = self.run_main("call", self.target, "boom", "--traceback")
        self.assertEqual((code, out), (1, "Error: disk on fire\n"))
        self.assertIn("Traceback", err)
        self.assertIn("RuntimeError: disk on fire", err)

    def test_unknown_tool_says_what_exists(self) -> None:
        code, out, err = self.run_main("call", self.target, "sub", "{}")
        self.assertEqual((code, out), (2, ""))
        self.assertIn('no tool named "sub"', err)
        self.assertIn('"add", "slow", "pic", "boom"', err)

    def test_usage(self) -> None:
        self.assertEqual(self.run_main()[0], 2)
        self.assertEqual(self.run_main("frobnicate")[0], 2)
        self.assertEqual(self.run_main("call", self.target)[0], 2)
        code, out, _ = self.run_main("--help")
        self.assertEqual(code, 0)
        self.assertIn("exit status", out)


@unittest.skipUnless(_has_main(), "agenttool does not hold the command line yet (before merge)")
class CommandLineTest(_Workspace):
    """The command line as a user runs it, in a fresh interpreter from a temporary folder."""

    def run_cli(self, how: str, *argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = _repo() + os.pathsep + env.get("PYTHONPATH", "")
        env["PYTHONIOENCODING"] = "utf-8"
        if how == "-m":
            cmd = [sys.executable, "-m", "agenttool", *argv]
        else:
            cmd = [sys.executable, os.path.join(_repo(), "agenttool.py"), *argv]
        return subprocess.run(
            cmd, cwd=self.dir, env=env, input=stdin, capture_output=True, text=True, timeout=60
        )

    def test_list_and_call_both_ways(self) -> None:
        for how in ("-m", "script"):
            listed = self.run_cli(how, "list", "toolbox_under_test.py")
            self.assertEqual(listed.returncode, 0, listed.stderr)
            self.assertEqual([d["name"] for d in json.loads(listed.stdout)], NAMES)
            by_module = self.run_cli(how, "list", "toolbox_under_test:SET", "--format", "gemini")
            self.assertEqual(by_module.returncode, 0, by_module.stderr)
            self.assertEqual(
                json.loads(by_module.stdout)[1],
                {
                    "name": "slow",
                    "description": "Report progress.",
                    "parametersJsonSchema": {"type": "object", "properties": {}, "required": []},
                },
            )
            # The tool returns agenttool.text(...): it must be the CLI's own Result class.
            called = self.run_cli(how, "call", "toolbox_under_test.py", "add", '{"a":2,"b":3}')
            self.assertEqual((called.returncode, called.stdout, called.stderr), (0, "5\n", ""))

    def test_exit_codes_and_streams(self) -> None:
        failed = self.run_cli("-m", "call", "toolbox_under_test.py", "boom")
        self.assertEqual((failed.returncode, failed.stdout), (1, "Error: disk on fire\n"))
        progress = self.run_cli("script", "call", "toolbox_under_test.py", "slow")
        self.assertEqual((progress.returncode, progress.stdout), (0, "done\n"))
        self.assertIn("progress: 1/2 half halfway", progress.stderr)
        unknown = self.run_cli("script", "call", "toolbox_under_test.py", "nope")
        self.assertEqual((unknown.returncode, unknown.stdout), (2, ""))
        self.assertIn('"add", "slow", "pic", "boom"', unknown.stderr)
        piped = self.run_cli("-m", "call", "toolbox_under_test", "add", "-", stdin='{"a":1,"b":2}')
        self.assertEqual((piped.returncode, piped.stdout), (0, "3\n"))

    def test_one_module_not_two(self) -> None:
        self.write(
            "identity_target.py",
            "import sys\nimport agenttool\n"
            "def _which(call):\n"
            "    same = sys.modules['agenttool'] is sys.modules['__main__']\n"
            "    return agenttool.text('one module' if same else 'two modules')\n"
            "which = agenttool.new_func('which', 'Which module?', None, _which)\n",
        )
        for how in ("-m", "script"):
            done = self.run_cli(how, "call", "identity_target.py", "which")
            self.assertEqual((done.returncode, done.stdout), (0, "one module\n"), done.stderr)


def _examples() -> str:
    return os.path.join(_repo(), "examples")


@unittest.skipUnless(
    _has_main() and os.path.isfile(os.path.join(_examples(), "toolbox.py")),
    "the examples or the merged command line are not there",
)
class ExamplesTest(unittest.TestCase):
    """The examples a newcomer runs first must keep working."""

    def run_py(self, *argv: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, PYTHONIOENCODING="utf-8")
        env.pop("PYTHONPATH", None)
        return subprocess.run(
            [sys.executable, *argv],
            cwd=_repo(),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def test_demo_runs(self) -> None:
        done = self.run_py(os.path.join("examples", "demo.py"))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("function_call_output", done.stdout)
        self.assertIn("tool_result", done.stdout)

    def test_toolbox_through_the_command_line(self) -> None:
        listed = self.run_py("agenttool.py", "list", "examples/toolbox.py")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        names: Any = [d["name"] for d in json.loads(listed.stdout)]
        self.assertIn("calculate", names)
        done = self.run_py(
            "-m", "agenttool", "call", "examples/toolbox.py", "calculate", '{"expression": "6*7"}'
        )
        self.assertEqual((done.returncode, done.stdout), (0, "42\n"), done.stderr)


if __name__ == "__main__":
    unittest.main()
