"""Tools as a command line (the Go seed's v0.0.16-17): agenttool.command(tools, prog=...) and
python -m agenttool run TARGET, driven as a user drives them: exit statuses, streams and
signals in a fresh interpreter, the rest through kit's main() here; usage_markdown as an agent
reads it."""

import concurrent.futures
import functools
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
import unittest
from typing import Any

import agenttool as at
from test_agenttool import share_bytecode_with_children

share_bytecode_with_children()  # each test starts kit.py in a fresh interpreter
ROOT = os.path.dirname(os.path.abspath(at.__file__))

KIT = '''\
import dataclasses
import enum
import sys
from typing import Any, Literal, Optional, Union

import agenttool


class Level(enum.Enum):
    LOW = "low"
    HIGH = "high"


@dataclasses.dataclass
class Target:
    host: str
    port: int = 22


@dataclasses.dataclass
class Point:
    x: int


@agenttool.tool(annotations=agenttool.Annotations(read_only=True))
def read_file(path: str, max_bytes: int = 0) -> dict:
    """Read a file from disk.

    Args:
        path: Absolute path to read
        max_bytes: Stop after this many bytes
    """
    return {"path": path, "max_bytes": max_bytes}


@agenttool.tool(annotations=agenttool.Annotations(destructive=True, open_world=True))
def tag(
    tags: list[str],
    verbose: bool = False,
    level: Level = Level.LOW,
    ratio: float = 1.5,
    target: Optional[Target] = None,
    limits: dict[str, int] = {},
    points: list[Point] = [],
    either: Union[int, str] = 1,
    mode: Literal["fast", "slow"] = "fast",
) -> dict:
    """Set tags.

    Args:
        tags: Tags to set
        target: Where to send them
        limits: Limits by name
    """
    return {
        "tags": tags, "verbose": verbose, "level": level, "ratio": ratio, "target": target,
        "limits": limits, "points": points, "either": either, "mode": mode,
    }


@agenttool.tool
def fail() -> str:
    """Always fails."""
    raise RuntimeError("disk on fire")


@agenttool.tool
def ask() -> str:
    """Ask twice."""
    first = agenttool.elicit(agenttool.Elicitation("Go on?"))
    if first.action != agenttool.Action.ACCEPT:
        return "stopped: " + first.action.value
    form = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    second = agenttool.elicit(agenttool.Elicitation("Your name?", schema=form))
    if second.action != agenttool.Action.ACCEPT:
        return "no name: " + second.action.value
    return "hello " + second.content["name"]


@agenttool.tool(needs_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return "deleted " + path


class Done:
    record_ns = "kit:done"

    def __init__(self, n: int) -> None:
        self.n = n


@dataclasses.dataclass
class Step:
    n: int
    record_ns: str = "kit:step"


@agenttool.tool
def work(steps: int = 2) -> agenttool.Result:
    """Report progress and records."""
    for n in range(steps):
        agenttool.progress("step", progress=n + 1, total=steps)
        agenttool.write_record(Step(n))
    return agenttool.Result("worked", details=Step(99))


@agenttool.tool
def shot() -> agenttool.Result:
    """Take a screenshot."""
    return agenttool.parts(
        agenttool.image(b"PNG-BYTES"),
        {"type": "input_text", "text": "a picture"},
        agenttool.file(b"hello file", filename="notes.txt"),
        agenttool.image("https://example.com/a.png"),
    )


def _raw(call: agenttool.Call) -> agenttool.Result:
    return agenttool.text("raw " + str(call.args))


raw = agenttool.new_func(
    "raw",
    "A schema from elsewhere.",
    {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 1, "default": 3},
            "mixed": {},
            "a=b": {"type": "string"},
        },
    },
    _raw,
    validate=True,
)


loose = agenttool.new_func(
    "loose", "A schema naming no properties.", {"type": "object"}, lambda call: str(call.args)
)


@agenttool.tool
def wait() -> str:
    """Wait until cancelled."""
    agenttool.progress("waiting")
    return "cancelled" if agenttool.cancel_event().wait(60) else "not cancelled"


@agenttool.tool(strict=True)
def fetch(url: str, retries: int = 2, note: Optional[str] = None) -> dict:
    """Fetch a URL, with a strict schema."""
    return {"url": url, "retries": retries, "note": note}


@agenttool.tool
def helpful(help: str) -> str:
    """A parameter named help."""
    return "help is " + help


TOOLS = [read_file, tag, fail, ask, delete, work, shot, raw, loose, wait, fetch, helpful]
main = agenttool.command(TOOLS, prog="kit")

if __name__ == "__main__":
    sys.exit(main())
'''


@functools.cache
def kit_module() -> types.ModuleType:
    """kit.py as a module of this process, made once."""
    module = types.ModuleType("test_command_kit")
    sys.modules[module.__name__] = module  # as an import would: type hints are read from it
    exec(compile(KIT, "kit.py", "exec"), module.__dict__)
    return module


class _Kit(unittest.TestCase):
    """A folder holding kit.py, run as the console script a user would install."""

    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="agenttool-command-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        with open(os.path.join(self.dir, "kit.py"), "w", encoding="utf-8") as f:
            f.write(KIT)

    def env(self) -> dict[str, str]:
        env = dict(os.environ, PYTHONIOENCODING="utf-8")
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        return env

    # kit's main() runs in this process (a child costs 0.1 s each), except for the classes
    # that check what a fresh interpreter does: exit statuses, streams, signals, `run`.
    in_process = True

    def kit(self, *argv: str, stdin: str = "") -> "subprocess.CompletedProcess[str]":
        if self.in_process:
            return self.kit_here(list(argv), stdin)
        return subprocess.run(
            [sys.executable, "kit.py", *argv],
            cwd=self.dir,
            env=self.env(),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def kit_here(self, argv: list[str], stdin: str) -> "subprocess.CompletedProcess[str]":
        """kit.py's main() run here on ``argv``, with its streams captured, in kit's folder."""
        streams = [io.TextIOWrapper(io.BytesIO(), encoding="utf-8") for _ in range(3)]
        streams[0].write(stdin)
        streams[0].seek(0)
        saved, cwd = (sys.stdin, sys.stdout, sys.stderr), os.getcwd()
        os.chdir(self.dir)
        sys.stdin, sys.stdout, sys.stderr = streams
        try:
            status = kit_module().main(argv)
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
            os.chdir(cwd)
        out, err = (stream.buffer.getvalue().decode() for stream in streams[1:])  # type: ignore
        return subprocess.CompletedProcess(["kit.py", *argv], status, out, err)

    def args_of(self, *argv: str, stdin: str = "") -> Any:
        """The arguments the tool received, for a command that succeeds."""
        done = self.kit(*argv, stdin=stdin)
        self.assertEqual((done.returncode, done.stderr), (0, ""), done.stdout)
        return json.loads(done.stdout)

    def usage_error(self, *argv: str, says: str) -> str:
        """A command line not understood: status 2, nothing on stdout, one line on stderr."""
        done = self.kit(*argv)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertEqual(done.stdout, "")
        self.assertEqual(done.stderr.count("\n"), 1, done.stderr)
        self.assertIn(says, done.stderr)
        return done.stderr


class TestCommandFlags(_Kit):
    def test_a_scalar_flag_takes_its_value_converted_to_the_schema_s_type(self) -> None:
        got = self.args_of("read_file", "--path", "/etc/hosts", "--max_bytes", "10")
        self.assertEqual(got, {"path": "/etc/hosts", "max_bytes": 10})
        got = self.args_of("read_file", "--path=a b", "--max_bytes=-3")
        self.assertEqual(got, {"path": "a b", "max_bytes": -3})

    def test_a_dash_stands_for_an_underscore(self) -> None:
        got = self.args_of("read_file", "--path", "x", "--max-bytes", "10")
        self.assertEqual(got["max_bytes"], 10)

    def test_a_boolean_stands_alone_for_true_or_takes_false(self) -> None:
        self.assertIs(self.args_of("tag", "--tags", "a", "--verbose")["verbose"], True)
        self.assertIs(self.args_of("tag", "--tags", "a", "--verbose=false")["verbose"], False)
        self.assertIs(self.args_of("tag", "--tags", "a", "--verbose=true")["verbose"], True)

    def test_an_array_flag_is_repeated_once_per_element(self) -> None:
        self.assertEqual(self.args_of("tag", "--tags", "a", "--tags", "b")["tags"], ["a", "b"])

    def test_a_member_of_a_nested_object_is_a_dotted_flag(self) -> None:
        got = self.args_of("tag", "--tags", "a", "--target.host", "h", "--target.port", "2")
        self.assertEqual(got["target"], {"host": "h", "port": 2})

    def test_a_map_takes_key_value_flags(self) -> None:
        got = self.args_of("tag", "--tags", "a", "--limits", "cpu=2", "--limits", "mem=4")
        self.assertEqual(got["limits"], {"cpu": 2, "mem": 4})

    def test_a_number_and_an_enum_from_flags(self) -> None:
        got = self.args_of("tag", "--tags", "a", "--ratio", "2.5", "--level", "high")
        self.assertEqual((got["ratio"], got["level"]), (2.5, "high"))

    def test_a_strict_tool_s_defaults_need_no_flag(self) -> None:
        # under strict every property is required and null means the default: a flag left
        # out is sent as null, as a model would send it
        got = self.args_of("fetch", "--url", "u")
        self.assertEqual(got, {"url": "u", "retries": 2, "note": None})
        got = self.args_of("fetch", "--url", "u", "--retries", "5", "--note", "n")
        self.assertEqual(got, {"url": "u", "retries": 5, "note": "n"})
        self.assertIn(
            "kit fetch --url <string> [--retries <integer>] [--note <string>]",
            self.kit("help", "fetch").stdout,
        )

    def test_a_tool_with_a_help_parameter_keeps_its_flag(self) -> None:
        done = self.kit("helpful", "--help", "me")
        self.assertEqual((done.returncode, done.stdout), (0, "help is me\n"), done.stderr)


class TestCommandJson(_Kit):
    def test_one_json_object_argument(self) -> None:
        got = self.args_of("read_file", '{"path": "p", "max_bytes": 1}')
        self.assertEqual(got, {"path": "p", "max_bytes": 1})

    def test_a_dash_reads_the_json_object_from_stdin(self) -> None:
        got = self.args_of("read_file", "-", stdin='{"path": "it\'s here"}')
        self.assertEqual(got["path"], "it's here")

    def test_flags_and_json_together_each_property_once(self) -> None:
        got = self.args_of("tag", "--tags", "a", '{"points": [{"x": 1}], "either": "s"}')
        self.assertEqual((got["points"], got["either"]), ([{"x": 1}], "s"))
        self.usage_error(
            "read_file", "--path", "x", '{"path": "y"}', says="--path and the JSON argument both"
        )

    def test_what_a_flag_cannot_express_is_json_only(self) -> None:
        # an object in an array, a union, a value of any type, a name a flag cannot carry
        self.usage_error("tag", "--tags", "a", "--points", "1", says="points is JSON only")
        self.usage_error("tag", "--tags", "a", "--either", "1", says="either is JSON only")
        usage = self.kit("help", "tag").stdout
        self.assertIn("- `points` (array of object, JSON only, default `[]`)", usage)
        self.assertIn("- `either` (integer or string, JSON only", usage)
        raw = self.kit("help", "raw").stdout
        self.assertIn("- `mixed` (any JSON value, JSON only)", raw)
        self.assertIn("- `a=b` (string, JSON only)", raw)
        self.assertIn("kit raw [--count <integer>] [<json> | -]", raw)

    def test_a_schema_naming_no_properties_takes_json(self) -> None:
        self.assertIn("kit loose [<json> | -]\n", self.kit("help", "loose").stdout)
        done = self.kit("loose", '{"any": 1}')
        self.assertEqual((done.returncode, done.stdout), (0, "{'any': 1}\n"), done.stderr)
        self.usage_error("loose", "--any", "1", says="unknown flag --any; it takes no flags")

    def test_json_that_is_not_an_object_is_not_understood(self) -> None:
        self.usage_error("read_file", "[1]", says="must be a JSON object, got array")
        self.usage_error("read_file", "go.mod", says="is not valid JSON")
        self.usage_error("read_file", "{}", "{}", says="one JSON argument at most")
        self.usage_error("read_file", "{}", "--path", "x", says="flags go before the JSON")


class TestCommandExitStatus(_Kit):
    in_process = False

    def test_0_the_output_on_stdout_and_nothing_else(self) -> None:
        done = self.kit("read_file", "--path", "x")
        self.assertEqual((done.returncode, done.stderr), (0, ""))
        self.assertEqual(done.stdout, '{"path":"x","max_bytes":0}\n')

    def test_1_a_tool_that_fails_says_why_on_stderr(self) -> None:
        done = self.kit("fail")
        self.assertEqual((done.returncode, done.stdout), (1, ""))
        self.assertEqual(done.stderr, "Error: disk on fire\n")

    def test_1_arguments_the_tool_s_own_validator_refuses(self) -> None:
        # flags are converted to their JSON type only: the enum, the range and a missing
        # required property are the tool's to refuse, in the words the model would read
        done = self.kit("tag", "--tags", "a", "--level", "mid")
        self.assertEqual((done.returncode, done.stdout), (1, ""))
        self.assertEqual(
            done.stderr,
            'Error: invalid arguments: level: expected one of ["low", "high"], got "mid"\n',
        )
        done = self.kit("raw", "--count", "0")
        self.assertEqual(done.returncode, 1)
        self.assertIn("invalid arguments: count: ", done.stderr)
        missing = self.kit("read_file")
        self.assertEqual(missing.returncode, 1)
        self.assertIn('missing required property "path"', missing.stderr)

    def test_2_what_a_person_would_mistype_gets_one_line(self) -> None:
        self.usage_error("read_file", "--pth", "x", says="unknown flag --pth; did you mean --path?")
        self.usage_error("read_file", "--path", "x", "--path", "y", says="--path given twice")
        self.usage_error(
            "read_file", "--path", "x", "--max-bytes", "1", "--max_bytes", "2", says="given twice"
        )
        self.usage_error(
            "read_file", "--path", "x", "--max-bytes", "ten", says='takes an integer, got "ten"'
        )
        self.usage_error("tag", "--tags", "a", "--verbose=maybe", says="takes true or false")
        self.usage_error("tag", "--tags", "a", "--ratio", "nan", says="takes a number")
        self.usage_error("tag", "--tags", "a", "--limits", "cpu", says="takes key=value")
        self.usage_error("read_file", "--path", says="--path needs a value")
        self.usage_error("reed_file", says='unknown command "reed_file"; did you mean "read_file"')
        self.usage_error("--verbose", "read_file", says="unknown option --verbose")
        self.usage_error("--answer", "maybe", "ask", says="--answer takes accept, decline")
        self.usage_error("--record", "a", "--record", "b", "read_file", says="given twice")
        self.usage_error(
            "read_file", "--path", "x", "--answer", "accept", says="--answer goes before the"
        )

    def test_2_a_huge_value_is_quoted_in_part(self) -> None:
        said = self.usage_error(
            "read_file", "--path", "x", "--max-bytes", "9" * 5000, says="takes an integer"
        )
        self.assertLess(len(said), 400)

    def test_2_an_answer_no_question_used(self) -> None:
        done = self.kit("--answer", "accept", "read_file", "--path", "x")
        self.assertEqual(done.returncode, 2)
        self.assertEqual(done.stdout, '{"path":"x","max_bytes":0}\n')  # the call ran
        self.assertEqual(done.stderr.count("\n"), 1)
        self.assertIn("read_file asked no question, so 1 --answer went unused", done.stderr)

    def test_2_no_command(self) -> None:
        done = self.kit()
        self.assertEqual((done.returncode, done.stdout), (2, ""))
        self.assertIn("## Commands", done.stderr)

    @unittest.skipIf(sys.platform == "win32", "SIGINT is POSIX")
    def test_ctrl_c_cancels_the_call_and_exits_130(self) -> None:
        import signal

        # kit.py as its console script runs it, with SIGINT handled even when this run
        # inherited it ignored (a background job)
        script = (
            "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "runpy.run_path('kit.py', run_name='__main__')"
        )
        argv = [sys.executable, "-c", script, "wait"]
        with subprocess.Popen(
            argv, cwd=self.dir, env=self.env(), stdout=-1, stderr=-1, stdin=-3, text=True
        ) as proc:
            try:
                assert proc.stderr is not None
                self.assertIn("waiting", proc.stderr.readline())  # the tool is running
                proc.send_signal(signal.SIGINT)
                out, err = proc.communicate(timeout=60)
            except BaseException:
                proc.kill()
                raise
        self.assertEqual((proc.returncode, out), (130, ""), err)
        self.assertIn("kit: interrupted; the call was cancelled", err)

    def test_progress_goes_to_stderr(self) -> None:
        done = self.kit("work")
        self.assertEqual((done.returncode, done.stdout), (0, "worked\n"))
        self.assertIn("progress: 1/2 step", done.stderr)


class TestCommandQuestions(_Kit):
    def test_3_the_question_as_json_then_answers_in_order(self) -> None:
        first = self.kit("ask")
        self.assertEqual(first.returncode, 3)
        question = json.loads(first.stdout)
        self.assertEqual(
            question, {"message": "Go on?", "answers_given": 0, "tool_said": "stopped: cancel"}
        )
        self.assertIn("--answer", first.stderr)
        second = self.kit("--answer", "accept", "ask")
        self.assertEqual(second.returncode, 3)
        question = json.loads(second.stdout)
        self.assertEqual((question["message"], question["answers_given"]), ("Your name?", 1))
        self.assertEqual(question["schema"]["required"], ["name"])
        done = self.kit("--answer", "accept", "--answer", '{"name": "Ada"}', "ask")
        self.assertEqual((done.returncode, done.stdout, done.stderr), (0, "hello Ada\n", ""))
        declined = self.kit("--answer=decline", "ask")
        self.assertEqual((declined.returncode, declined.stdout), (0, "stopped: decline\n"))

    def test_an_approval_is_a_question_too(self) -> None:
        asked = self.kit("delete", "--path", "/x")
        self.assertEqual(asked.returncode, 3)
        self.assertEqual(json.loads(asked.stdout)["message"], 'run "delete" with {"path": "/x"}?')
        done = self.kit("--answer", "accept", "delete", "--path", "/x")
        self.assertEqual((done.returncode, done.stdout), (0, "deleted /x\n"))
        denied = self.kit("--answer", "decline", "delete", "--path", "/x")
        self.assertEqual((denied.returncode, denied.stdout), (1, ""))
        self.assertIn('call to "delete" was denied', denied.stderr)
        # a form answer to an approval runs the call with those arguments, once they validate
        rewritten = self.kit("--answer", '{"path": "/tmp/y"}', "delete", "--path", "/x")
        self.assertEqual((rewritten.returncode, rewritten.stdout), (0, "deleted /tmp/y\n"))
        self.assertIn("A call may need approval first", self.kit("help", "delete").stdout)
        self.assertNotIn("approval", self.kit("help", "read_file").stdout)


class TestCommandRecordsAndFiles(_Kit):
    def test_records_are_appended_to_the_record_file_never_stdout(self) -> None:
        path = os.path.join(self.dir, "records.jsonl")
        for _ in range(2):
            done = self.kit("--record", path, "work")
            self.assertEqual((done.returncode, done.stdout), (0, "worked\n"), done.stderr)
            self.assertNotIn("kit:step", done.stderr)
        with open(path, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual([line["data"]["n"] for line in lines], [0, 1, 99, 0, 1, 99])
        self.assertEqual({line["ns"] for line in lines}, {"kit:step"})
        self.assertEqual({line["tool"] for line in lines}, {"work"})
        self.assertEqual(len({line["call"] for line in lines}), 2)  # one call id per run
        self.assertTrue(all(line["time"].endswith("Z") for line in lines))

    def test_a_record_file_that_cannot_be_opened_is_not_understood(self) -> None:
        missing = os.path.join(self.dir, "no", "such", "folder", "r.jsonl")
        self.usage_error("--record", missing, "work", says="--record")

    def test_a_file_or_image_part_is_written_to_disk_and_its_path_printed(self) -> None:
        out = os.path.join(self.dir, "out")
        done = self.kit("--out", out, "shot")
        self.assertEqual(done.returncode, 0, done.stderr)
        image, said, notes, url = done.stdout.splitlines()
        self.assertEqual((said, url), ("a picture", "https://example.com/a.png"))
        self.assertEqual(os.path.dirname(image), out)
        self.assertTrue(image.endswith(".png"), image)
        with open(image, "rb") as f:
            self.assertEqual(f.read(), b"PNG-BYTES")
        self.assertTrue(notes.endswith("notes.txt"), notes)
        with open(notes, "rb") as f:
            self.assertEqual(f.read(), b"hello file")
        again = self.kit("--out", out, "shot")  # the folder used before: new names, no clash
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertNotEqual(again.stdout.splitlines()[0], image)

    def test_without_out_files_go_to_a_new_temporary_folder(self) -> None:
        done = self.kit("shot")
        self.assertEqual(done.returncode, 0, done.stderr)
        image = done.stdout.splitlines()[0]
        self.addCleanup(shutil.rmtree, os.path.dirname(image), True)
        with open(image, "rb") as f:
            self.assertEqual(f.read(), b"PNG-BYTES")


class TestCommandUsage(_Kit):
    def test_help_a_command_from_its_schema(self) -> None:
        done = self.kit("help", "tag")
        self.assertEqual((done.returncode, done.stderr), (0, ""))
        usage = done.stdout
        self.assertIn("Hints from the tool: may be destructive; reaches outside systems.", usage)
        self.assertIn("- `--tags` (array of string, repeatable, required): Tags to set", usage)
        self.assertIn('- `--level` (string, default `"low"`). One of `"low"`, `"high"`', usage)
        self.assertIn("- `--verbose` (boolean, default `false`)", usage)
        self.assertIn("- `--target.host` (string, required in `target`)", usage)
        self.assertIn("- `--limits` (map of integer, repeatable as key=value, default `{}`)", usage)
        self.assertIn(
            "kit tag --tags <string> ... [--verbose] [--level <string>] [--ratio <number>] "
            "[--target.host <string>] [--target.port <integer>] [--limits <key>=<integer> ...]",
            usage,
        )
        self.assertEqual(self.kit("tag", "--help").stdout, usage)
        self.assertEqual(self.kit("tag", "-h").stdout, usage)
        read = self.kit("help", "read_file").stdout
        self.assertIn("Hints from the tool: read-only.", read)
        self.assertIn("- `--max_bytes` (integer, default `0`): Stop after this many bytes", read)
        self.assertIn("- `--count` (integer, default `3`)", self.kit("help", "raw").stdout)

    def test_schema_prints_the_json_schema(self) -> None:
        code = "import json, kit\nprint(json.dumps({t.name: t.parameters for t in kit.TOOLS}))"
        served = subprocess.run(
            [sys.executable, "-c", code],
            cwd=self.dir,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(served.returncode, 0, served.stderr)
        for name, parameters in json.loads(served.stdout).items():
            done = self.kit("schema", name)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(json.loads(done.stdout), parameters or at.NO_ARGS)
        self.usage_error("schema", says="schema takes one command")

    def test_help_alone_is_the_calling_conventions_and_the_commands(self) -> None:
        done = self.kit("help")
        self.assertEqual(done.returncode, 0)
        self.assertTrue(done.stdout.startswith("## Calling `kit`\n"), done.stdout)
        self.assertIn("- `read_file`: Read a file from disk.\n", done.stdout)
        self.assertEqual(self.kit("--help").stdout, done.stdout)


class TestUsageMarkdown(_Kit):
    def markdown(self, seed: str) -> str:
        code = (
            "import sys, agenttool, kit\n"
            "sys.stdout.write(agenttool.usage_markdown(kit.TOOLS, prog='kit'))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=self.dir,
            env=dict(self.env(), PYTHONHASHSEED=seed),
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_the_skill_is_the_committed_usage_byte_for_byte(self) -> None:
        # deterministic (the same under any hash seed, on 3.9 and 3.13), so it can be
        # committed and diffed: testdata/command_usage.md is what an agent reads
        first = self.markdown("1")
        self.assertEqual(self.markdown("2"), first)
        with open(os.path.join(ROOT, "testdata", "command_usage.md"), encoding="utf-8") as f:
            self.assertEqual(first, f.read())

    def test_the_skill_has_the_conventions_the_statuses_and_each_command(self) -> None:
        text = self.markdown("0")
        for said in (
            "## Calling `kit`",
            "kit <command> - <<'EOF'",
            "- 3: the tool asked a question",
            "## Commands",
            "### `read_file`",
            "### `helpful`",
            "`--max-bytes` for `max_bytes`",
            "JSON only",
        ):
            self.assertIn(said, text)
        # help <command> prints the very section the skill holds
        self.assertIn("\n" + self.kit("help", "ask").stdout, text)


class TestCommandBuilding(unittest.TestCase):
    def test_a_set_the_program_could_not_run_is_refused_when_built(self) -> None:
        def help() -> str:
            """Named as the program's own command."""
            return ""

        def ping() -> str:
            """Ping."""
            return "pong"

        with self.assertRaisesRegex(ValueError, 'tool "help" is named as one of the program'):
            at.command([at.tool(help)], prog="kit")
        with self.assertRaisesRegex(ValueError, "duplicate"):
            at.command([at.tool(ping), at.tool(ping)], prog="kit")
        with self.assertRaisesRegex(ValueError, "schema"):
            at.usage_markdown([at.tool(ping, name="schema")], prog="kit")

    def test_main_runs_in_process_with_a_list_of_arguments(self) -> None:
        import contextlib
        import io

        def ping(times: int = 1) -> str:
            """Ping."""
            return "pong" * times

        main = at.command(at.ToolSet([at.tool(ping)]), prog="kit")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            self.assertEqual(main(["ping", "--times", "2"]), 0)
            self.assertEqual(main(["ping", "--times", "two"]), 2)
        self.assertEqual(out.getvalue(), "pongpong\n")
        self.assertEqual(err.getvalue(), 'kit: ping: --times takes an integer, got "two"\n')

    def test_command_and_usage_markdown_are_public(self) -> None:
        self.assertIn("command", at.__all__)
        self.assertIn("usage_markdown", at.__all__)


class TestRunSubcommand(_Kit):
    in_process = False

    def run_module(self, how: str, *argv: str) -> "subprocess.CompletedProcess[str]":
        lead = ["-m", "agenttool"] if how == "-m" else [os.path.join(ROOT, "agenttool.py")]
        return subprocess.run(
            [sys.executable, *lead, *argv],
            cwd=self.dir,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )

    def test_run_makes_a_file_of_tools_the_same_program(self) -> None:
        commands = [("read_file", "--max-bytes", "2", "--path", "p"), ("fail",), ("ask",)]
        commands.append(("read_file", "--bogus"))
        runs = [(how, "run", "kit.py", *c) for how in ("-m", "script") for c in commands]
        runs.append(("-m", "run", "kit.py", "help"))
        with concurrent.futures.ThreadPoolExecutor(4) as pool:  # independent children
            done = list(pool.map(lambda argv: self.run_module(*argv), runs))
        for i in (0, 4):
            read, failed, asked, wrong = done[i : i + 4]
            self.assertEqual((read.returncode, read.stderr), (0, ""))
            self.assertEqual(json.loads(read.stdout), {"path": "p", "max_bytes": 2})
            self.assertEqual((failed.returncode, failed.stderr), (1, "Error: disk on fire\n"))
            self.assertEqual(asked.returncode, 3)
            self.assertEqual((wrong.returncode, wrong.stderr.count("\n")), (2, 1))
            self.assertIn("python -m agenttool run kit.py: read_file: unknown flag", wrong.stderr)
        usage = done[8].stdout
        self.assertTrue(usage.startswith("## Calling `python -m agenttool run kit.py`"), usage)

    def test_run_without_a_target_or_with_a_missing_one(self) -> None:
        bare = self.run_module("-m", "run")
        self.assertEqual((bare.returncode, bare.stdout), (2, ""))
        self.assertIn("usage: python -m agenttool run TARGET", bare.stderr)
        missing = self.run_module("-m", "run", "nowhere.py", "x")
        self.assertEqual((missing.returncode, missing.stderr.count("\n")), (2, 1))
        self.assertIn("no file nowhere.py", missing.stderr)

    def test_the_existing_subcommands_keep_working(self) -> None:
        listed = self.run_module("-m", "list", "kit.py")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertIn("read_file", [d["name"] for d in json.loads(listed.stdout)])
        called = self.run_module("-m", "call", "kit.py", "read_file", '{"path": "q"}')
        self.assertEqual((called.returncode, called.stdout), (0, '{"path":"q","max_bytes":0}\n'))
        helped = self.run_module("-m", "--help")
        self.assertIn("run TARGET", helped.stdout)

    def test_the_existing_subcommands_mistyped_get_one_line(self) -> None:
        for argv, says in (
            (("list",), "the following arguments are required: TARGET"),
            (("list", "kit.py", "--format", "chat", "--format", "gemini"), "given twice"),
            (("call", "kit.py", "read_file", "--bogus"), "unrecognized arguments: --bogus"),
            (("lsit", "kit.py"), "invalid choice: 'lsit'"),
        ):
            done = self.run_module("-m", *argv)
            self.assertEqual((done.returncode, done.stdout), (2, ""), argv)
            self.assertEqual(done.stderr.count("\n"), 1, done.stderr)
            self.assertIn(says, done.stderr)


class TestReadmeCommands(unittest.TestCase):
    def test_the_readme_s_run_commands_work_when_pasted(self) -> None:
        import re

        if shutil.which("bash") is None:
            self.skipTest("no bash to paste into")
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        section = readme.split("### A tool set as a command", 1)[1].split("\n## ", 1)[0]
        (block,) = [b for b in re.findall(r"```sh\n(.*?)```", section, re.S) if " run " in b]
        bin_dir = tempfile.mkdtemp(prefix="agenttool-bin-")
        self.addCleanup(shutil.rmtree, bin_dir, True)
        os.symlink(sys.executable, os.path.join(bin_dir, "python"))
        env = dict(os.environ, PYTHONIOENCODING="utf-8")
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        for line in block.strip().splitlines():
            with self.subTest(line):
                done = subprocess.run(
                    ["bash", "-c", line],
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                self.assertEqual(done.returncode, 0, done.stderr)
                said = re.search(r'echo "exit \$\?"\s*# (\d)', line)
                if said:  # the status the comment promises
                    self.assertIn(f"exit {said.group(1)}", done.stdout)
                else:
                    self.assertTrue(done.stdout.strip(), line)


if __name__ == "__main__":
    unittest.main()
