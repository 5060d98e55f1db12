"""Tests of agenttool, the core: runnable with ``python -m unittest`` and nothing installed.

Tests that need ``jsonschema``, ``hypothesis`` or a provider SDK skip, saying why, where it is
absent; CI installs them, and under ``CI=true`` their absence fails instead (``needs``).  The
conformance corpora are read from ``../shared/conformance``.  Every test has a time limit
(``AGENTTOOL_TEST_TIME_LIMIT`` seconds, 120 by default): a hang fails as the named test.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import collections
import contextlib
import dataclasses
import datetime
import decimal
import enum
import faulthandler
import functools
import glob
import inspect
import io
import json
import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
import unittest.mock
import uuid
from collections.abc import Mapping, Sequence
from typing import (
    Annotated,
    Any,
    Callable,
    Literal,
    NamedTuple,
    NoReturn,
    Optional,
    TypedDict,
    Union,
)

import agenttool as at

# Annotations in this file are evaluated at run time by get_type_hints, on 3.9 too: keep
# Optional/Union.
# ruff: noqa: UP007, UP045

ROOT = os.path.dirname(os.path.abspath(__file__))
HERE = ROOT
CONFORMANCE = os.path.join(ROOT, "..", "shared", "conformance")
SUITE = os.path.join(CONFORMANCE, "json-schema-test-suite")
CORPUS = os.path.join(CONFORMANCE, "agenttool-schema")

# Every test runs under a time limit, so a hang fails as the named test with every thread's
# traceback instead of eating CI's whole budget.  A watchdog thread names the test; faulthandler
# (which needs no GIL) is the backstop for a hang that holds the GIL, such as a C-level loop.
TEST_TIME_LIMIT = float(os.environ.get("AGENTTOOL_TEST_TIME_LIMIT", "120"))


def limit_test_time() -> None:
    """Wrap ``unittest.TestCase.run`` so that each test ends the process once over the limit."""
    run = unittest.TestCase.run
    if getattr(run, "time_limited", False):
        return

    def time_limited_run(self: unittest.TestCase, result: Any = None) -> Any:
        def expire() -> None:
            sys.stderr.write(f"\nTIMEOUT: {self.id()} ran over {TEST_TIME_LIMIT:g} s\n")
            faulthandler.dump_traceback(sys.stderr, all_threads=True)
            sys.stderr.flush()
            os._exit(3)

        watchdog = threading.Timer(TEST_TIME_LIMIT, expire)
        watchdog.daemon = True
        watchdog.start()
        faulthandler.dump_traceback_later(TEST_TIME_LIMIT + 30, exit=True)
        try:
            return run(self, result)
        finally:
            watchdog.cancel()
            watchdog.join()  # gone before the next test counts threads
            faulthandler.cancel_dump_traceback_later()

    time_limited_run.time_limited = True  # type: ignore[attr-defined]
    unittest.TestCase.run = time_limited_run  # type: ignore[method-assign]


limit_test_time()


def share_bytecode_with_children() -> None:
    """Let the interpreters the tests start (command lines, workers, crashing children) import
    agenttool from one bytecode cache made for this run, in a temporary folder removed at exit:
    under a shell's PYTHONDONTWRITEBYTECODE each of them would compile the whole module again,
    a third of a second each, and the suite starts hundreds."""
    if os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    folder = tempfile.mkdtemp(prefix="agenttool-tests-pyc-")
    atexit.register(shutil.rmtree, folder, True)
    os.environ["PYTHONPYCACHEPREFIX"] = folder
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


share_bytecode_with_children()

# Under CI=true nothing that CI provides may skip (the corpora, jsonschema, hypothesis, the
# SDKs, mcp, the node peers): its absence fails the test there, and skips, saying why, for a
# newcomer's plain ``python -m unittest``.  Version-dependent skips are not about this.
IN_CI = os.environ.get("CI") == "true"


def absent(reason: str) -> NoReturn:
    """Skip the running test because ``reason`` is missing, or fail it under CI=true."""
    if IN_CI:
        raise AssertionError(f"CI provides this, yet: {reason}")
    raise unittest.SkipTest(reason)


def needs(present: bool, reason: str) -> Callable[[Any], Any]:
    """Decorate a test or test class that needs what ``absent`` speaks of."""
    if present:
        return lambda obj: obj
    if not IN_CI:
        return unittest.skip(reason)

    def failing(obj: Any) -> Any:
        if isinstance(obj, type):
            obj.setUpClass = classmethod(lambda cls: absent(reason))
            return obj

        @functools.wraps(obj)
        def fail(*args: Any, **kwargs: Any) -> None:
            absent(reason)

        return fail

    return failing


# The slow suite: crash injection, real database servers and clusters, long soaks.  A plain
# ``python -m unittest`` skips it (saying so) to stay fast; ``AGENTTOOL_SLOW=1`` runs it, and so
# does CI (CI=true), where it is part of the whole suite.
RUN_SLOW = IN_CI or os.environ.get("AGENTTOOL_SLOW") == "1"


def slow(obj: Any) -> Any:
    """Decorate a test or test class of the slow suite."""
    if RUN_SLOW:
        return obj
    return unittest.skip("the slow suite: AGENTTOOL_SLOW=1 python -m unittest runs it")(obj)


# ---------------------------------------------------------------------------------------------
# Helpers shared by the tests of several sections (and by the other test modules)
# ---------------------------------------------------------------------------------------------


class Opaque:
    pass


@dataclasses.dataclass
class Item:
    name: str
    Tags: list[str]


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Bare:
    """A tool written by hand that declares nothing optional."""

    name = "bare"
    description = "does nothing"
    parameters: Optional[dict[str, Any]] = None

    def execute(self, call: at.Call) -> at.Result:
        return at.text("bare")


class HandWritten(Bare):
    """A tool written by hand that declares every optional property."""

    name = "everything"
    strict = True
    sequential = False
    resource = "shell:session"
    annotations = at.Annotations(title="All", read_only=True, destructive=False)

    def __init__(self) -> None:
        self.closed = 0

    def confined(self, args: dict[str, Any]) -> tuple[bool, str]:
        return (True, "landlock+seccomp")

    def replay(self, args: dict[str, Any]) -> at.Replay:
        return at.Replay.SAFE

    def close(self) -> None:
        self.closed += 1


# A non-default sample for every property in at.PROPERTIES: adding a property to the contract
# without a sample here fails test_every_property_has_a_sample, and a sample wrap does not
# forward fails test_wrap_forwards_every_property.
SAMPLES: dict[str, Any] = {
    "strict": True,
    "sequential": True,
    "resource": "container:47",
    "annotations": at.Annotations(idempotent=True),
    "confined": lambda args: (True, "container:agent-sandbox"),
    "replay": lambda args: at.Replay.KEYED,
    "facts": lambda args: at.Facts([at.FactCall("", args, "does nothing")]),
    "output_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    "needs_approval": lambda args: True,
    "timeout": 30,
    "max_output": 4000,
    "defer_loading": True,
    "input_examples": [{}],
    "cache_control": {"type": "ephemeral"},
    "allowed_callers": ["direct"],
    "namespace": at.Namespace("crm", "Customer records"),
    "cacheable": True,
    "isolated": True,
    "task": "required",
}
# The readers that take the call's arguments besides the tool.
ARG_READERS = (at.confined_by, at.replay_of, at.facts_of, at.needs_approval_of)


def raw(fn: Any, name: str = "raw", **options: Any) -> at.Tool:
    return at.new_func(name, "a raw tool", None, fn, **options)


def sample_tool(prop: str, sample: Any) -> at.Tool:
    """A raw tool declaring one property of SAMPLES (an isolated one needs a function a
    worker can import, not a lambda)."""
    if prop == "isolated":
        from testdata import isolated_tools

        return raw(isolated_tools.raw_empty, **{prop: sample})
    return raw(lambda c: "", **{prop: sample})


def finals(events: list[at.Event]) -> list[at.Event]:
    return [e for e in events if e.final]


class Paint(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class XY:
    x: int
    y: int


@dataclasses.dataclass
class Rec:
    container: str
    record_ns = "shell:container"


def retire_pool_threads() -> None:
    """Let every idle pool thread retire now (they otherwise linger 2 s), and wait for it."""
    idle = at._workers.idle_seconds
    at._workers.idle_seconds = 0.01
    try:
        # wake each idle thread to see the new timeout: a barrier makes each take one task
        # (a thread that took one could otherwise take the next, leaving another asleep)
        count = len(at._workers.threads())
        barrier = threading.Barrier(count) if count else None

        def wake() -> None:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(5)  # type: ignore[union-attr]

        for _ in range(count):
            at._workers.submit(wake)
        for thread in threading.enumerate():
            if thread.name == "agenttool-worker":
                thread.join(10)
    finally:
        at._workers.idle_seconds = idle


@at.tool(name="read_file")
def read_file_tool(path: str, max_bytes: int = 0) -> str:
    """Read a file from disk.

    Args:
        path: Absolute path to read
        max_bytes: Stop after this many bytes
    """
    return f"{path}:{max_bytes}"


def _core_add(call: Any) -> Any:
    args = call.args if isinstance(call.args, dict) else json.loads(call.args or "{}")
    if "b" not in args:
        raise ValueError('missing required property "b"')
    return args["a"] + args["b"]


ADD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


def core_toolset() -> Any:
    import agenttool as core

    return core.ToolSet([core.new_func("add", "Add two integers.", ADD_SCHEMA, _core_add)])


def _repo() -> str:
    import agenttool

    return os.path.dirname(os.path.abspath(agenttool.__file__))


def called_with(fn: Any, args: Any, **options: Any) -> Any:
    """What a tool built from ``fn`` passes to it for ``args`` (a JSON text or a dict): the
    keyword arguments, through validation and decoding, as a model's call goes."""
    seen: list[dict[str, Any]] = []

    @functools.wraps(fn)
    def spy(**kwargs: Any) -> str:
        seen.append(kwargs)
        return "ok"

    import inspect

    spy.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    at.tool(spy, **options).execute(at.Call("1", args))
    return seen[0]


def refusal(fn: Any, args: Any, **options: Any) -> str:
    """The message a tool built from ``fn`` refuses ``args`` with ("" when it takes them)."""
    try:
        at.tool(fn, **options).execute(at.Call("1", args))
    except at.ValidationError as err:
        return str(err)
    return ""


def responses_call(call_id: str, name: str, args: Any) -> dict[str, Any]:
    text = args if isinstance(args, str) else json.dumps(args)
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": text}


def at_once(n: int, target: Callable[[], None]) -> None:
    """Run ``target`` on ``n`` threads started together, and wait for them all."""
    threads = [threading.Thread(target=target) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def isolated(test: unittest.TestCase, code: str, expected: str | None, timeout: float = 60) -> str:
    """Run ``code`` in a fresh interpreter (agenttool imported as ``at``) where a hang is
    possible: a hang fails as a timeout, the run must exit 0, and its output must be
    ``expected`` (None: any, for the caller to read in what this returns)."""
    # SIGINT as Python sets it up by default: a run started in the background inherits it
    # ignored, and the tests that send it must still see KeyboardInterrupt.
    prelude = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "sys.path.insert(0, sys.argv[1]); import agenttool as at\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", prelude + textwrap.dedent(code), ROOT],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        test.fail(f"hung: {exc.stdout!r} {exc.stderr!r}")
    if expected is None:
        test.assertEqual(done.returncode, 0, done.stderr)
    else:
        test.assertEqual((done.stdout, done.returncode), (expected, 0), done.stderr)
    return done.stdout


# ---------------------------------------------------------------------------------------------
# Meta: constraints and descriptions inside Annotated[...]
# ---------------------------------------------------------------------------------------------


class TestMetaRefusals(unittest.TestCase):
    """Meta refuses what a schema cannot honestly say, and says what to write instead."""

    def refused(self, tp: Any) -> str:
        def f(x: Any) -> None:
            pass

        f.__annotations__ = {"x": tp}
        try:
            at.schema_of(f)
        except TypeError as exc:
            return str(exc)
        return ""

    def test_python_only_patterns_are_refused_with_the_ecma_spelling(self) -> None:
        cases = {
            "(?i)yes": r"inline flags .*\[Aa\]",
            "(?P<year>[0-9]{4})": r"named groups .*plain group \(\.\.\.\)",
            "(?P=year)": "named groups",
            r"\Aabc": r"\\A is Python's; write \^",
            r"abc\Z": r"\\Z is Python's; write \$",
            "a{,3}": r"write \{0,n\}",
            "(?#note)a": "comments",
            "(?>a)": "atomic",
            "a(": "not a valid ECMA-262 pattern",
        }
        for pattern, expected in cases.items():
            with self.subTest(pattern=pattern):
                self.assertRegex(
                    self.refused(Annotated[str, at.Meta(pattern=pattern)]),
                    r'^parameter "x": Meta\(pattern=.*\): .*' + expected,
                )
        for pattern in (r"[(?i)]", r"\(\?i\)", r"\\A", r"^[a-z]+$", r"(?:a|b)", r"(?<y>[0-9])"):
            with self.subTest(pattern=pattern):
                self.assertEqual(self.refused(Annotated[str, at.Meta(pattern=pattern)]), "")

    def test_keywords_of_another_json_type_are_refused_with_the_right_one(self) -> None:
        cases = [
            (
                Annotated[list[int], at.Meta(max_length=3)],
                r"applies to strings.*array: write Meta\(max_items=3\)",
            ),
            (Annotated[Optional[list[int]], at.Meta(min_length=1)], r".*Meta\(min_items=1\)"),
            (
                Annotated[str, at.Meta(minimum=1)],
                r"applies to numbers.*string: write Meta\(min_length=1\)",
            ),
            (
                Annotated[str, at.Meta(max_items=3)],
                r"applies to arrays.*write Meta\(max_length=3\)",
            ),
            (
                Annotated[int, at.Meta(max_length=9)],
                r".*int is an integer: write Meta\(maximum=9\)",
            ),
            (
                Annotated[list[str], at.Meta(pattern="x")],
                r"applies to strings.*list\[Annotated\[str, Meta\(pattern",
            ),
            (
                Annotated[bool, at.Meta(minimum=0)],
                r"applies to numbers, and bool is a boolean: remove it$",
            ),
            (Annotated[Item, at.Meta(multiple_of=2)], r"applies to numbers, and Item is an object"),
            (Annotated[decimal.Decimal, at.Meta(minimum=0)], r".*check the bound in the function$"),
        ]
        for tp, expected in cases:
            with self.subTest(tp=tp):
                self.assertRegex(self.refused(tp), r'^parameter "x": Meta\(\w+=.*\) ' + expected)
        for tp in (
            Annotated[Optional[int], at.Meta(minimum=0)],
            Annotated[Any, at.Meta(minimum=0, max_length=3)],
            Annotated[Union[int, str], at.Meta(minimum=0, max_length=3)],
            Annotated[set[int], at.Meta(max_items=3)],
        ):
            with self.subTest(tp=tp):
                self.assertEqual(self.refused(tp), "")


class TestTypedToolsEnforceTheirSchema(unittest.TestCase):
    """Every constraint the generated schema states, a typed tool enforces."""

    def test_each_meta_constraint_refuses_a_value_outside_it(self) -> None:
        def f(
            n: Annotated[int, at.Meta(minimum=1, maximum=9)] = 5,
            x: Annotated[float, at.Meta(exclusive_minimum=0, exclusive_maximum=1)] = 0.5,
            m: Annotated[int, at.Meta(multiple_of=3)] = 3,
            s: Annotated[str, at.Meta(min_length=2, max_length=3, pattern="^[a-z]+$")] = "ab",
            xs: Annotated[list[int], at.Meta(min_items=1, max_items=2)] = (1,),  # type: ignore[assignment]
        ) -> str:
            return ""

        self.assertEqual(refusal(f, "{}"), "")
        self.assertEqual(refusal(f, '{"n": 1, "x": 0.1, "m": 6, "s": "abc", "xs": [1, 2]}'), "")
        for strict in (False, True):
            for args, msg in (
                ({"n": 0}, "n: "),
                ({"n": 10}, "n: "),
                ({"x": 0}, "x: "),
                ({"x": 1}, "x: "),
                ({"m": 4}, "m: "),
                ({"s": "a"}, "s: "),
                ({"s": "abcd"}, "s: "),
                ({"s": "AB"}, "s: "),
                ({"xs": []}, "xs: "),
                ({"xs": [1, 2, 3]}, "xs: "),
            ):
                if strict:
                    args = {"n": None, "x": None, "m": None, "s": None, "xs": None, **args}
                with self.subTest(args=args, strict=strict):
                    self.assertTrue(
                        refusal(f, args, strict=strict).startswith("invalid arguments: " + msg)
                    )


# ---------------------------------------------------------------------------------------------
# Schema generation and decoding
# ---------------------------------------------------------------------------------------------


make_typeddict: Any = TypedDict  # the functional form, with names computed at run time


def dumps(schema: Any) -> str:
    return json.dumps(schema, indent=2) + "\n"


# The corpus's non-strict optional + nullable fields are fields whose default is not None (a type
# that admits None would admit null, written in the schema); optional alone is any default.
NO_ITEM = Item("", [])
NO_LABELS: Mapping[str, str] = {}  # never changed: only a default


def read_file(path: Annotated[str, "Absolute path to read"], max_bytes: int = 0) -> str:
    """Read a file.

    Args:
        max_bytes (int): Stop after this
            many bytes
    """
    return ""


class _ReadFileBase(TypedDict):
    path: Annotated[str, "Absolute path to read"]


class ReadFileStrict(_ReadFileBase, total=False):
    """Optional keys by inheritance: keeps declaration order on every Python."""

    max_bytes: Annotated[int, "Stop after this many bytes"]


def everything(
    *,
    str: str,
    int: Annotated[int, "an integer"],
    uint: int,
    float: float,
    bool: bool,
    level: Literal["low", "medium", "high"],
    count: Literal[1, 2, 3] = 1,
    when: datetime.datetime,
    raw: Any = None,
    any: Any = None,
    bytes: bytes = b"",
    list: list[Item],
    matrix: Sequence[Sequence[float]] = (),
    nested: Item,
    pointer: Item = NO_ITEM,
    labels: Mapping[str, str] = NO_LABELS,
    duration: int = 0,
) -> None:
    """Every kind the seed's corpus covers."""


@dataclasses.dataclass
class Embedded:
    name: str
    Tags: list[str]
    extra: str = ""


def strict_args(
    query: Annotated[str, "Search terms"],
    limit: Annotated[Optional[int], "Maximum results"] = None,
    *,
    inner: Inner,
) -> None:
    pass


@dataclasses.dataclass
class Inner:
    deep: bool


def no_args() -> None:
    pass


def text_marshaler(key: pathlib.PurePosixPath) -> None:
    pass


@dataclasses.dataclass
class ReadFileArgs:
    path: str = dataclasses.field(metadata={"description": "Absolute path to read"})
    max_bytes: Annotated[int, at.Meta(description="Stop after this many bytes")] = 0


class Shadowed(TypedDict):
    Memo: str
    id: Annotated[str, "outer wins"]


def json_marshaler(value: Any, word: Literal[1, 2]) -> None:
    pass


class Level(enum.Enum):
    LOW = "low"
    HIGH = "high"


def strict_nullable(
    level: Optional[Level] = None,
    raw: Any = None,
    when: Optional[datetime.datetime] = None,
    *,
    items: list[Item],
) -> None:
    pass


class ByteArray(NamedTuple):
    slice: bytes
    fixed: list[int]


CORPUS_TARGETS: dict[str, Any] = {
    "read_file": read_file,
    "read_file_strict": ReadFileStrict,
    "everything": everything,
    "embedded": Embedded,
    "strict": strict_args,
    "no_args": no_args,
    "no_args_strict": no_args,
    "text_marshaler": text_marshaler,
    "pointer_to_struct": ReadFileArgs,
    "shadowed": Shadowed,
    "json_marshaler": json_marshaler,
    "strict_nullable": strict_nullable,
    "byte_array": ByteArray,
}


class TestCorpus(unittest.TestCase):
    """The seed's golden schemas, byte for byte."""

    def setUp(self) -> None:
        path = os.path.join(CORPUS, "manifest.json")
        if not os.path.exists(path):
            absent(f"corpus absent: {path}")
        with open(path) as f:
            self.fixtures = json.load(f)["fixtures"]

    def test_every_fixture_is_byte_identical(self) -> None:
        self.assertEqual(len(self.fixtures), 14)
        for fx in self.fixtures:
            with self.subTest(fixture=fx["name"]):
                if "supplied" in fx:
                    # A supplied schema is the tool layer's parameters= option, served verbatim;
                    # the lead tests it there. Here: the golden is the supplied schema.
                    with open(os.path.join(CORPUS, fx["name"] + ".json")) as f:
                        self.assertEqual(json.load(f), fx["supplied"])
                    continue
                target = CORPUS_TARGETS[fx["name"]]
                with open(os.path.join(CORPUS, fx["name"] + ".json")) as f:
                    golden = f.read()
                self.assertEqual(dumps(at.schema_of(target, strict=fx["strict"])), golden)

    @unittest.skipIf(sys.version_info < (3, 11), "typing.NotRequired needs Python 3.11")
    def test_read_file_strict_with_not_required(self) -> None:
        from typing import NotRequired  # type: ignore[attr-defined,unused-ignore]

        td = make_typeddict(
            "ReadFile",
            {
                "path": Annotated[str, "Absolute path to read"],
                "max_bytes": NotRequired[Annotated[int, "Stop after this many bytes"]],
            },
        )
        with open(os.path.join(CORPUS, "read_file_strict.json")) as f:
            self.assertEqual(dumps(at.schema_of(td, strict=True)), f.read())
        with open(os.path.join(CORPUS, "read_file.json")) as f:
            self.assertEqual(dumps(at.schema_of(td)), f.read())

    def test_map_under_strict_is_refused_naming_the_field(self) -> None:
        def f(labels: dict[str, str]) -> None:
            pass

        with self.assertRaisesRegex(TypeError, r'^parameter "labels": .*strict'):
            at.schema_of(f, strict=True)

    def test_unknown_type_is_refused_naming_the_parameter(self) -> None:
        def f(x: Opaque) -> None:
            pass

        with self.assertRaisesRegex(TypeError, r'^parameter "x": cannot express type .*Opaque'):
            at.schema_of(f)

    def test_array_without_items_is_refused_under_strict(self) -> None:
        def f(xs: list) -> None:  # type: ignore[type-arg]
            pass

        with self.assertRaisesRegex(TypeError, r'^parameter "xs": .*bare list.*list\[\.\.\.\]'):
            at.schema_of(f, strict=True)
        self.assertEqual(at.schema_of(f)["properties"]["xs"], {"type": "array", "items": {}})


class Mixed(enum.Enum):
    A = "a"
    ONE = 1


class Point(NamedTuple):
    x: int
    y: int = 0


@dataclasses.dataclass
class Node:
    """A tree node."""

    value: int
    children: list[Node] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Tree:
    root: Optional[Node] = None


@dataclasses.dataclass
class When:
    when: datetime.datetime


@dataclasses.dataclass
class Holder:
    inner: BadInner


@dataclasses.dataclass
class BadInner:
    when: dict[int, str]


class TestTypes(unittest.TestCase):
    """Each supported type's schema."""

    def prop(self, tp: Any, strict: bool = False) -> Any:
        return at.schema_of(tp, strict=strict)

    def test_scalars(self) -> None:
        self.assertEqual(self.prop(bool), {"type": "boolean"})
        self.assertEqual(self.prop(int), {"type": "integer"})
        self.assertEqual(self.prop(float), {"type": "number"})
        self.assertEqual(self.prop(str), {"type": "string"})
        self.assertEqual(self.prop(bytes), {"type": "string"})
        self.assertEqual(self.prop(type(None)), {"type": "null"})
        self.assertEqual(self.prop(Any), {})

    def test_formats_and_string_shaped_types(self) -> None:
        self.assertEqual(self.prop(datetime.datetime), {"type": "string", "format": "date-time"})
        self.assertEqual(self.prop(datetime.date), {"type": "string", "format": "date"})
        self.assertEqual(self.prop(datetime.time), {"type": "string", "format": "time"})
        self.assertEqual(self.prop(uuid.UUID), {"type": "string", "format": "uuid"})
        self.assertEqual(self.prop(pathlib.Path), {"type": "string"})
        dec = self.prop(decimal.Decimal)
        self.assertEqual(dec["type"], "string")
        self.assertRegex("-12.50", dec["pattern"])
        self.assertNotRegex("1e5x", dec["pattern"])

    def test_containers(self) -> None:
        self.assertEqual(self.prop(list[int]), {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(
            self.prop(tuple[int, ...]), {"type": "array", "items": {"type": "integer"}}
        )
        self.assertEqual(
            self.prop(set[str]), {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
        )
        self.assertEqual(
            self.prop(frozenset[int]),
            {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        )
        self.assertEqual(
            self.prop(tuple[int, str]),
            {
                "type": "array",
                "items": False,
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
        )
        self.assertEqual(
            self.prop(dict[str, float]),
            {"type": "object", "additionalProperties": {"type": "number"}},
        )

    def test_unions_literals_enums(self) -> None:
        self.assertEqual(self.prop(Optional[int]), {"type": ["integer", "null"]})
        self.assertEqual(self.prop(Union[int, str]), {"type": ["integer", "string"]})
        self.assertEqual(
            self.prop(Union[Point, int]),
            {"anyOf": [self.prop(Point), {"type": "integer"}]},
        )
        self.assertEqual(
            self.prop(Optional[Point]), {"anyOf": [self.prop(Point), {"type": "null"}]}
        )
        self.assertEqual(self.prop(Literal["a", "b"]), {"type": "string", "enum": ["a", "b"]})
        self.assertEqual(
            self.prop(Literal[1, "a", None]),
            {"type": ["integer", "string", "null"], "enum": [1, "a", None]},
        )
        self.assertEqual(self.prop(Color), {"type": "integer", "enum": [1, 2]})
        self.assertEqual(self.prop(Mixed), {"type": ["string", "integer"], "enum": ["a", 1]})
        self.assertEqual(
            self.prop(Optional[Level]),
            {"type": ["string", "null"], "enum": ["low", "high", None]},
        )

    def test_null_is_written_last_in_unions(self) -> None:
        self.assertEqual(self.prop(Union[None, int, str]), {"type": ["integer", "string", "null"]})
        self.assertEqual(
            self.prop(Union[None, Point, int]),
            {"anyOf": [self.prop(Point), {"type": "integer"}, {"type": "null"}]},
        )
        self.assertIsNone(at.decode(Union[None, int, str], None))

    def test_datetime_subclasses_keep_their_class(self) -> None:
        class Stamp(datetime.datetime):
            pass

        self.assertEqual(self.prop(Stamp), {"type": "string", "format": "date-time"})
        self.assertIs(type(at.decode(Stamp, "2024-01-02T03:04:05")), Stamp)

    @unittest.skipIf(sys.version_info < (3, 10), "X | Y needs Python 3.10")
    def test_pipe_union(self) -> None:
        self.assertEqual(self.prop(eval("int | None")), {"type": ["integer", "null"]})

    def test_newtype_subclasses_and_abstract_containers(self) -> None:
        import collections.abc as abc
        import typing

        user_id = typing.NewType("user_id", int)
        self.assertEqual(self.prop(user_id), {"type": "integer"})

        class Name(str):
            pass

        self.assertEqual(self.prop(Name), {"type": "string"})
        self.assertIs(type(at.decode(Name, "x")), Name)
        self.assertEqual(at.decode(bytearray, "aGk="), bytearray(b"hi"))
        self.assertEqual(at.decode(abc.Sequence[int], [1, 2]), [1, 2])
        self.assertEqual(self.prop(abc.Mapping[str, int]), self.prop(dict[str, int]))

    def test_values_that_are_not_json_are_refused(self) -> None:
        import typing

        class Odd(enum.Enum):
            A = (1, 2)

        with self.assertRaisesRegex(TypeError, r"member A has value \(1, 2\)"):
            self.prop(Odd)
        with self.assertRaisesRegex(TypeError, r"Literal value b'x'"):
            self.prop(Literal[b"x"])
        with self.assertRaisesRegex(TypeError, r"type variable"):
            self.prop(list[typing.TypeVar("T")])  # type: ignore[misc]

    def test_namedtuple_is_an_object_of_named_fields(self) -> None:
        self.assertEqual(
            self.prop(Point),
            {
                "type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "required": ["x"],
            },
        )

    def test_typeddict_totality(self) -> None:
        class Opt(TypedDict, total=False):
            a: int
            b: str

        s = self.prop(Opt)
        self.assertEqual(s["required"], [])
        self.assertEqual(self.prop(Opt, strict=True)["required"], ["a", "b"])
        self.assertEqual(self.prop(Opt, strict=True)["properties"]["a"], {"type": "integer"})

    @unittest.skipIf(sys.version_info < (3, 11), "Required/NotRequired are in typing from 3.11")
    def test_typeddict_required_and_not_required(self) -> None:
        from typing import NotRequired, Required  # type: ignore[attr-defined,unused-ignore]

        td = make_typeddict("TD", {"a": Required[int], "b": NotRequired[str]}, total=True)
        self.assertEqual(self.prop(td)["required"], ["a"])
        td2 = make_typeddict("TD2", {"a": Required[int], "b": str}, total=False)
        self.assertEqual(self.prop(td2)["required"], ["a"])

    def test_typing_extensions_markers_are_recognised_by_name(self) -> None:
        try:
            import typing_extensions as te
        except ImportError:
            absent("typing_extensions is not installed")
        make: Any = te.TypedDict
        td = make("TD", {"a": int, "b": te.NotRequired[str]})
        self.assertEqual(self.prop(td)["required"], ["a"])

    def test_recursive_type_goes_through_defs(self) -> None:
        s = self.prop(Tree)
        self.assertEqual(
            s["properties"]["root"], {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}
        )
        node = s["$defs"]["Node"]
        self.assertEqual(node["description"], "A tree node.")
        self.assertEqual(node["properties"]["children"]["items"], {"$ref": "#/$defs/Node"})
        self.assertEqual(list(s), ["type", "properties", "required", "$defs"])

    def test_recursive_root_is_inlined_and_refers_to_itself(self) -> None:
        s = self.prop(Node)
        self.assertNotIn("$defs", s)
        self.assertNotIn("description", s)  # the root's description is the tool's
        self.assertEqual(s["properties"]["children"]["items"], {"$ref": "#"})

    def test_recursive_under_strict_is_nullable_by_anyof(self) -> None:
        s = self.prop(Tree, strict=True)
        self.assertEqual(
            s["properties"]["root"],
            {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
        )
        self.assertIs(s["$defs"]["Node"]["additionalProperties"], False)

    def test_non_recursive_nested_types_are_inlined(self) -> None:
        def f(a: Item, b: Item) -> None:
            pass

        s = at.schema_of(f)
        self.assertNotIn("$defs", s)
        self.assertEqual(s["properties"]["a"], s["properties"]["b"])

    def test_a_none_default_makes_the_type_optional(self) -> None:
        def f(x: int = None) -> None:  # type: ignore[assignment]
            pass

        self.assertEqual(
            at.schema_of(f, strict=True)["properties"]["x"], {"type": ["integer", "null"]}
        )
        self.assertEqual(at.decode(f, {"x": None}, strict=True), {"x": None})

    def test_optional_without_default_is_required_and_nullable(self) -> None:
        def f(x: Optional[int], y: Optional[int] = None) -> None:
            pass

        s = at.schema_of(f)
        self.assertEqual(s["properties"]["x"], {"type": ["integer", "null"]})
        self.assertEqual(s["properties"]["y"], {"type": ["integer", "null"]})
        self.assertEqual(s["required"], ["x"])

    def test_unexpressible_types_name_their_path(self) -> None:
        def f(opts: Holder) -> None:
            pass

        with self.assertRaisesRegex(
            TypeError,
            r'^parameter "opts": field "inner.when": cannot express type dict\[int, str\]',
        ):
            at.schema_of(f)

        def g(cb: Callable[[int], str]) -> None:
            pass

        with self.assertRaisesRegex(TypeError, r'^parameter "cb": cannot express type'):
            at.schema_of(g)

        def h(xs: list[dict[str, Any]]) -> None:
            pass

        with self.assertRaisesRegex(TypeError, r'^parameter "xs": field "\[\]": .*strict'):
            at.schema_of(h, strict=True)

    def test_bad_signatures_are_refused(self) -> None:
        def star(*xs: int) -> None:
            pass

        def untyped(x) -> None:  # type: ignore[no-untyped-def]
            pass

        with self.assertRaisesRegex(TypeError, r'parameter "\*xs"'):
            at.schema_of(star)
        with self.assertRaisesRegex(TypeError, r'parameter "x": no type annotation'):
            at.schema_of(untyped)

    def test_pipe_in_a_string_annotation_on_39_names_the_parameter(self) -> None:
        def f(x):  # type: ignore[no-untyped-def]
            pass

        f.__annotations__ = {"x": "int | None"}
        if sys.version_info < (3, 10):
            with self.assertRaisesRegex(TypeError, r'^parameter "x": .*Python 3.10.*Optional'):
                at.schema_of(f)
        else:
            self.assertEqual(at.schema_of(f)["properties"]["x"], {"type": ["integer", "null"]})

    def test_a_bad_return_annotation_does_not_matter(self) -> None:
        def f(a: int) -> NoSuchType:  # type: ignore[name-defined]  # noqa: F821
            pass

        self.assertEqual(at.schema_of(f)["required"], ["a"])

        def g(a: int, b: NoSuchType) -> None:  # type: ignore[name-defined]  # noqa: F821
            pass

        with self.assertRaisesRegex(TypeError, r'^parameter "b": cannot evaluate'):
            at.schema_of(g)

    def test_wrapped_functions_and_callable_objects(self) -> None:
        def inner(a: int, b: Optional[str] = None) -> None:
            pass

        @functools.wraps(inner)
        def outer(*args: Any, **kwargs: Any) -> None:
            pass

        self.assertEqual(at.schema_of(outer), at.schema_of(inner))

        class Callable_:
            def __call__(self, x: list[int]) -> None:
                pass

        self.assertEqual(list(at.schema_of(Callable_())["properties"]), ["x"])

    def test_unresolvable_annotation_names_the_field(self) -> None:
        @dataclasses.dataclass
        class D:
            a: int
            b: NoSuchType  # type: ignore[name-defined]  # noqa: F821

        with self.assertRaisesRegex(TypeError, r'field "b": cannot evaluate'):
            at.schema_of(D)


class Options(TypedDict, total=False):
    label: Optional[str]


@dataclasses.dataclass
class Link:
    value: int
    next: Optional[Link] = None


class TestNullRule(unittest.TestCase):
    """A type that admits None admits null in every mode (DESIGN §3, revised)."""

    def test_optional_with_a_none_default_takes_null_outside_strict(self) -> None:
        def search(query: str, limit: Optional[int] = None) -> str:
            return ""

        self.assertEqual(at.schema_of(search)["properties"]["limit"], {"type": ["integer", "null"]})
        self.assertEqual(called_with(search, '{"query": "q", "limit": null}')["limit"], None)
        self.assertEqual(called_with(search, '{"query": "q", "limit": 3}')["limit"], 3)

        def page(size: int = None) -> str:  # type: ignore[assignment]
            return ""

        self.assertEqual(at.schema_of(page)["properties"]["size"], {"type": ["integer", "null"]})
        self.assertEqual(called_with(page, '{"size": null}'), {"size": None})

    def test_a_recursive_optional_can_end_with_null(self) -> None:
        def walk(head: Link) -> str:
            return ""

        args = '{"head": {"value": 1, "next": {"value": 2, "next": null}}}'
        self.assertEqual(called_with(walk, args)["head"], Link(1, Link(2, None)))
        self.assertEqual(
            at.schema_of(Link)["properties"]["next"],
            {"anyOf": [{"$ref": "#"}, {"type": "null"}]},
        )

    def test_an_optional_object_and_a_typeddict_key_take_null_too(self) -> None:
        def f(item: Optional[Item] = None, opts: Optional[Options] = None) -> str:
            return ""

        self.assertEqual(
            called_with(f, '{"item": null, "opts": {"label": null}}'),
            {"item": None, "opts": {"label": None}},
        )

    def test_a_default_that_is_not_none_keeps_null_out_outside_strict(self) -> None:
        def f(times: int = 1) -> str:
            return ""

        self.assertEqual(at.schema_of(f)["properties"]["times"], {"type": "integer"})
        self.assertEqual(
            refusal(f, '{"times": null}'), "invalid arguments: times: expected integer, got null"
        )
        self.assertEqual(called_with(f, '{"times": null}', strict=True), {})


class Perm(enum.Flag):
    READ = 1
    WRITE = 2
    READ_WRITE = 3  # a multi-bit alias: listed as a member on 3.9/3.10, not on 3.11+
    EXEC = 8


class Mode(enum.IntFlag):
    A = 1
    B = 2


@dataclasses.dataclass
class Scaled:
    value: int
    factor: dataclasses.InitVar[int]
    shown: int = 0

    def __post_init__(self, factor: int) -> None:
        self.value *= factor


try:
    import typing_extensions as te
except ImportError:  # a bare interpreter: CI installs nothing there
    te = None

if te is not None:  # the functional forms: evaluated here, on every version
    TeArgs = te.TypedDict(
        "TeArgs",
        {
            "level": te.Literal["low", "high"],
            "count": te.Required[int],
            "note": te.NotRequired[te.Annotated[str, "a note"]],
        },
    )
    TePoint = te.NamedTuple("TePoint", [("x", int), ("y", te.Annotated[int, "the y"])])


class _TwinBase(TypedDict):
    level: Literal["low", "high"]
    count: int


class TwinArgs(_TwinBase, total=False):
    note: Annotated[str, "a note"]


class TestStrict(unittest.TestCase):
    def test_every_object_closed_and_fully_required(self) -> None:
        def f(a: list[Item], p: Point, d: Embedded) -> None:
            pass

        s = at.schema_of(f, strict=True)
        self.assertIs(s["additionalProperties"], False)
        self.assertIs(s["properties"]["a"]["items"]["additionalProperties"], False)
        self.assertEqual(s["properties"]["p"]["required"], ["x", "y"])
        self.assertEqual(
            s["properties"]["d"]["properties"]["extra"],
            {"type": ["string", "null"], "description": 'Default: "".'},
        )

    def test_defaults_become_nullable_and_enum_gets_null_last(self) -> None:
        def f(n: int = 3, level: Level = Level.LOW, a: Any = 1) -> None:
            pass

        p = at.schema_of(f, strict=True)["properties"]
        self.assertEqual(p["n"], {"type": ["integer", "null"], "description": "Default: 3."})
        self.assertEqual(
            p["level"],
            {
                "type": ["string", "null"],
                "description": 'Default: "low".',
                "enum": ["low", "high", None],
            },
        )
        self.assertEqual(p["a"], {})

    def test_unsupported_keywords_move_into_the_description_and_are_still_enforced(self) -> None:
        def f(
            name: Annotated[str, at.Meta(description="Name", min_length=2, max_length=4)],
            tags: set[str],
        ) -> None:
            pass

        p = at.schema_of(f, strict=True)["properties"]
        self.assertEqual(
            p["name"],
            {"type": "string", "description": "Name. At least 2 characters. At most 4 characters."},
        )
        self.assertEqual(
            p["tags"],
            {"type": "array", "description": "Items must be unique.", "items": {"type": "string"}},
        )
        with self.assertRaisesRegex(
            at.ValidationError, r"^invalid arguments: name: expected at least 2"
        ):
            at.decode(f, {"name": "a", "tags": []}, strict=True)
        with self.assertRaisesRegex(
            at.ValidationError, r"^invalid arguments: tags: expected unique"
        ):
            at.decode(f, {"name": "ab", "tags": ["x", "x"]}, strict=True)

    def test_examples_and_other_formats_move_into_the_description(self) -> None:
        s = at.schema_of(Annotated[str, at.Meta(format="uri", examples=["a"])], strict=True)
        self.assertEqual(s, {"type": "string", "description": 'Format: uri. Examples: "a".'})
        kept = at.schema_of(Annotated[str, at.Meta(format="email", pattern="@")], strict=True)
        self.assertEqual(kept, {"type": "string", "format": "email", "pattern": "@"})

    def test_fixed_tuples_are_refused_under_strict(self) -> None:
        def f(pair: tuple[int, int]) -> None:
            pass

        with self.assertRaisesRegex(TypeError, r'^parameter "pair": .*prefixItems'):
            at.schema_of(f, strict=True)

    def test_limits(self) -> None:
        many = make_typeddict("Many", {f"k{i}": int for i in range(5001)})
        with self.assertRaisesRegex(TypeError, r"5,001 properties"):
            at.schema_of(many, strict=True)
        self.assertEqual(len(at.schema_of(many)["properties"]), 5001)
        with self.assertRaisesRegex(TypeError, r"1,001 enum values"):
            at.schema_of(Literal[tuple(range(1001))], strict=True)
        with self.assertRaisesRegex(TypeError, r"characters"):
            at.schema_of(Literal["x" * 120_001], strict=True)
        deep: Any = int
        for i in range(11):
            deep = make_typeddict(f"D{i}", {"d": deep})
        with self.assertRaisesRegex(TypeError, r"11 levels"):
            at.schema_of(deep, strict=True)
        at.schema_of(deep)  # fine outside strict


class TestStrictShapes(unittest.TestCase):
    """Strict schemas in the form strict providers accept, and their limits exactly."""

    def test_a_ref_with_a_description_becomes_a_one_branch_any_of(self) -> None:
        def walk(head: Annotated[Link, "The list's first link"]) -> str:
            return ""

        s = at.schema_of(walk, strict=True)
        self.assertEqual(
            s["properties"]["head"],
            {"description": "The list's first link", "anyOf": [{"$ref": "#/$defs/Link"}]},
        )
        self.assertEqual(
            at.schema_of(walk)["properties"]["head"],
            {"description": "The list's first link", "$ref": "#/$defs/Link"},
        )

        def each(node: Node) -> None:
            """Walk.

            Args:
                node: the tree's root
            """

        self.assertEqual(
            at.schema_of(each, strict=True)["properties"]["node"],
            {"description": "the tree's root", "anyOf": [{"$ref": "#/$defs/Node"}]},
        )

    def limit_error(self, build: Callable[[int], Any], n: int) -> str:
        try:
            at.schema_of(build(n), strict=True)
        except TypeError as exc:
            return str(exc)
        return ""

    def test_the_strict_limits_hold_at_the_limit_exactly(self) -> None:
        def nested(levels: int) -> Any:
            cls: Any = dataclasses.make_dataclass("L", [("x", int)])
            for _ in range(levels - 1):
                cls = dataclasses.make_dataclass("L", [("inner", cls)])
            return cls

        def wide(n: int) -> Any:  # a TypedDict: a dataclass of 5,000 fields takes a second
            return make_typeddict("W", {f"p{i}": int for i in range(n)})

        def enum_of(n: int) -> Any:
            return dataclasses.make_dataclass(
                "E", [("e", Literal[tuple(f"v{i}" for i in range(n))])]
            )

        def long_enum(chars: int) -> Any:
            values = [f"{i:03d}".ljust(chars // 251, "x") for i in range(251)]
            values[0] += "x" * (chars - sum(map(len, values)))
            return dataclasses.make_dataclass("S", [("e", Literal[tuple(values)])])

        for build, limit, what in (
            (nested, 10, "levels of object nesting"),
            (wide, 5000, "properties in total"),
            (enum_of, 1000, "enum values in total"),
            (long_enum, 15000, "an enum of 251 strings"),
        ):
            with self.subTest(what=what):
                self.assertEqual(self.limit_error(build, limit), "")
                self.assertIn(what, self.limit_error(build, limit + 1))

    def test_a_string_enum_of_at_most_250_values_may_be_longer(self) -> None:
        values = tuple(f"{i:03d}".ljust(100, "x") for i in range(250))  # 25,000 characters
        at.schema_of(dataclasses.make_dataclass("S", [("e", Literal[values])]), strict=True)

    def test_moved_keywords_are_still_enforced_by_the_decoder(self) -> None:
        def f(
            code: Annotated[str, at.Meta(min_length=2, max_length=4)],
            tags: set[str],
            name: Annotated[str, at.Meta(max_length=3, format="hostname")] = "abc",
        ) -> str:
            return ""

        s = at.schema_of(f, strict=True)
        for prop in s["properties"].values():
            self.assertFalse({"minLength", "maxLength", "uniqueItems"} & set(prop))
        self.assertEqual(
            s["properties"]["code"]["description"], "At least 2 characters. At most 4 characters."
        )
        for args, msg in (
            (
                {"code": "a", "tags": [], "name": None},
                "code: expected at least 2 characters, got 1",
            ),
            (
                {"code": "abcde", "tags": [], "name": None},
                "code: expected at most 4 characters, got 5",
            ),
            ({"code": "ab", "tags": ["x", "x"], "name": None}, "tags: expected unique items"),
            (
                {"code": "ab", "tags": [], "name": "abcd"},
                "name: expected at most 3 characters, got 4",
            ),
        ):
            with self.subTest(msg=msg), self.assertRaises(at.ValidationError) as caught:
                at.decode(f, args, strict=True)
            self.assertTrue(str(caught.exception).startswith("invalid arguments: " + msg))
            self.assertTrue(refusal(f, args, strict=True).startswith("invalid arguments: " + msg))


def deep_tree(levels: int) -> Any:
    """A class tree ``levels`` deep with two fields of the same class at each level."""
    cls: Any = dataclasses.make_dataclass("Leaf", [("v", int), ("w", str)])
    for i in range(levels):
        cls = dataclasses.make_dataclass(f"Level{i}", [("a", cls), ("b", cls), ("n", int)])
    return cls


@dataclasses.dataclass
class ChainA:
    value: int
    next: Optional[ChainA] = None


@dataclasses.dataclass
class ChainB:
    label: str
    next: Optional[ChainB] = None


ChainB.__name__ = "ChainA"  # two classes of one name, as from two modules


class TestSchemaSize(unittest.TestCase):
    """Schemas stay linear in the size of the types; small repeats stay inline."""

    def test_a_tree_of_repeated_classes_is_linear(self) -> None:
        s = at.schema_of(deep_tree(15))
        text = json.dumps(s)
        self.assertLess(len(text), 20_000)
        self.assertLess(len(json.dumps(at.schema_of(deep_tree(30)))), 2 * 20_000 + len(text))
        self.assertEqual(s["properties"]["a"], s["properties"]["b"])
        self.assertIn("$ref", s["properties"]["a"])
        at.validator(s)  # compiled in time linear in the schema, too
        at.validator(at.schema_of(deep_tree(15), strict=True))

    def test_the_shared_schema_means_what_the_inline_one_did(self) -> None:
        cls = deep_tree(4)
        leaf = {"v": 1, "w": "x"}
        value: Any = leaf
        for _ in range(4):
            value = {"a": value, "b": value, "n": 1}
        s = at.schema_of(cls)
        self.assertIn("$defs", s)
        check = at.validator(s)
        check.validate(value)
        broken = json.loads(json.dumps(value))
        broken["b"]["a"]["b"]["n"] = "one"
        with self.assertRaisesRegex(
            at.ValidationError, r"^invalid arguments: b\.a\.b\.n: expected integer"
        ):
            check.validate(broken)
        strict = at.schema_of(cls, strict=True)
        self.assertEqual(list(strict["$defs"]), list(s["$defs"]))
        at.validator(strict).validate(value)

    def test_small_repeats_stay_inline_and_places_keep_their_descriptions(self) -> None:
        def f(a: Item, b: Annotated[Item, "the second"]) -> None:
            pass

        s = at.schema_of(f)
        self.assertNotIn("$defs", s)
        self.assertEqual(s["properties"]["b"]["description"], "the second")
        big = deep_tree(2)  # Level1: 18 schema objects inline

        def g(a: Any, b: Any, c: Any = None) -> None:
            pass

        g.__annotations__ = {"a": big, "b": Annotated[big, "the second"], "c": Optional[big]}
        s = at.schema_of(g)
        ref = {"$ref": "#/$defs/Level1"}
        self.assertEqual(s["properties"]["a"], ref)
        self.assertEqual(s["properties"]["b"], {"description": "the second", **ref})
        self.assertEqual(s["properties"]["c"], {"anyOf": [ref, {"type": "null"}]})
        self.assertEqual(list(s["$defs"]), ["Level1"])
        self.assertEqual(s["$defs"]["Level1"]["properties"]["a"]["required"], ["a", "b", "n"])

    def test_two_classes_of_one_name_get_two_definitions(self) -> None:
        def f(a: ChainA, b: ChainB) -> None:
            pass

        s = at.schema_of(f)
        self.assertEqual(s["properties"]["a"], {"$ref": "#/$defs/ChainA"})
        self.assertEqual(s["properties"]["b"], {"$ref": "#/$defs/ChainA2"})
        self.assertEqual(s["$defs"]["ChainA2"]["properties"]["label"], {"type": "string"})
        self.assertEqual(s["$defs"]["ChainA"]["properties"]["value"], {"type": "integer"})


@dataclasses.dataclass
class Positive:
    n: int

    def __post_init__(self) -> None:
        if self.n <= 0:
            raise ValueError("n must be positive")


@dataclasses.dataclass
class Everything:
    b: bool
    i: int
    f: float
    s: str
    raw: bytes
    none: None
    anything: Any
    ints: list[int]
    pair: tuple[int, str]
    many: tuple[int, ...]
    uniq: set[int]
    frozen: frozenset[str]
    labels: dict[str, int]
    color: Color
    lit: Literal["a", "b"]
    when: datetime.datetime
    day: datetime.date
    clock: datetime.time
    ident: uuid.UUID
    money: decimal.Decimal
    path: pathlib.Path
    point: Point
    node: Node
    shadow: Shadowed
    maybe: Optional[int] = None
    tags: list[str] = dataclasses.field(default_factory=lambda: ["t"])


class TestDecode(unittest.TestCase):
    def test_round_trip_of_every_type(self) -> None:
        value = {
            "b": True,
            "i": 2.0,
            "f": 3,
            "s": "x",
            "raw": "aGk=",
            "none": None,
            "anything": {"k": [1]},
            "ints": [1, 2],
            "pair": [1, "a"],
            "many": [1, 2, 3],
            "uniq": [1, 2],
            "frozen": ["a"],
            "labels": {"a": 1},
            "color": 2,
            "lit": "b",
            "when": "2024-01-02T03:04:05.1Z",
            "day": "2024-01-02",
            "clock": "03:04:05Z",
            "ident": "12345678-1234-5678-1234-567812345678",
            "money": "12.50",
            "path": "/tmp/x",
            "point": {"x": 1},
            "node": {"value": 1, "children": [{"value": 2}]},
            "shadow": {"Memo": "m", "id": "i"},
        }
        e = at.decode(Everything, value)
        self.assertIsInstance(e, Everything)
        utc = datetime.timezone.utc
        expected = Everything(
            b=True,
            i=2,
            f=3.0,
            s="x",
            raw=b"hi",
            none=None,
            anything={"k": [1]},
            ints=[1, 2],
            pair=(1, "a"),
            many=(1, 2, 3),
            uniq={1, 2},
            frozen=frozenset({"a"}),
            labels={"a": 1},
            color=Color.GREEN,
            lit="b",
            when=datetime.datetime(2024, 1, 2, 3, 4, 5, 100000, tzinfo=utc),
            day=datetime.date(2024, 1, 2),
            clock=datetime.time(3, 4, 5, tzinfo=utc),
            ident=uuid.UUID("12345678-1234-5678-1234-567812345678"),
            money=decimal.Decimal("12.50"),
            path=pathlib.Path("/tmp/x"),
            point=Point(1, 0),
            node=Node(1, [Node(2, [])]),
            shadow={"Memo": "m", "id": "i"},
            maybe=None,
            tags=["t"],
        )
        self.assertEqual(e, expected)
        self.assertIs(type(e.i), int)
        self.assertIs(type(e.f), float)
        self.assertIsInstance(e.pair, tuple)
        self.assertIsInstance(e.frozen, frozenset)

    def test_z_suffix_and_offsets_on_every_version(self) -> None:
        utc = datetime.timezone.utc
        for text in ("2024-01-02T03:04:05Z", "2024-01-02t03:04:05z", "2024-01-02T03:04:05+00:00"):
            with self.subTest(text=text):
                self.assertEqual(
                    at.decode(datetime.datetime, text),
                    datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=utc),
                )
        with self.assertRaisesRegex(at.ValidationError, r"RFC 3339 date-time"):
            at.decode(datetime.datetime, "yesterday")

    def test_bad_base64_is_refused_at_its_path(self) -> None:
        def f(blobs: list[bytes]) -> None:
            pass

        self.assertEqual(at.decode(f, {"blobs": ["aGk=", "/+8="]}), {"blobs": [b"hi", b"\xff\xef"]})
        with self.assertRaises(at.ValidationError) as cm:
            at.decode(f, {"blobs": ["aGk=", "not base64!"]})
        self.assertEqual(
            str(cm.exception),
            "invalid arguments: blobs[1]: expected base64 (A-Z, a-z, 0-9, + and /, padded with ="
            ' to a multiple of 4 characters), got "not base64!"',
        )

    def test_functions_decode_to_kwargs_and_defaults_are_left_to_python(self) -> None:
        def f(a: int, when: datetime.date, b: str = "x") -> None:
            pass

        self.assertEqual(
            at.decode(f, {"a": 1, "when": "2024-01-02"}),
            {"a": 1, "when": datetime.date(2024, 1, 2)},
        )

    def test_strict_null_means_default_and_none_where_the_type_admits_it(self) -> None:
        def f(n: int = 3, m: Optional[int] = 5, *, e: Embedded) -> None:
            pass

        kwargs = at.decode(
            f, {"n": None, "m": None, "e": {"name": "a", "Tags": [], "extra": None}}, strict=True
        )
        self.assertEqual(kwargs, {"m": None, "e": Embedded("a", [], "")})
        with self.assertRaisesRegex(
            at.ValidationError, r"^invalid arguments: n: expected integer, got null"
        ):
            at.decode(f, {"n": None, "e": {"name": "a", "Tags": []}})

    def test_default_factory_fills_absent_fields(self) -> None:
        self.assertEqual(at.decode(Node, {"value": 1}), Node(1, []))
        self.assertEqual(at.decode(Node, {"value": 1, "children": None}, strict=True), Node(1, []))

    def test_unexpected_property_is_refused_with_its_path(self) -> None:
        def f(e: Embedded, items: list[Point]) -> None:
            pass

        cases = [
            (
                {"e": {"name": "a", "Tags": []}, "items": [], "colour": 1},
                'unexpected property "colour"',
            ),
            (
                {"e": {"name": "a", "Tags": [], "zz": 1, "bogus": 2}, "items": []},
                'e: unexpected property "bogus"',
            ),
            (
                {"e": {"name": "a", "Tags": []}, "items": [{"x": 1}, {"x": 1, "z": 0}]},
                'items[1]: unexpected property "z"',
            ),
        ]
        for value, msg in cases:
            with self.subTest(msg=msg), self.assertRaises(at.ValidationError) as cm:
                at.decode(f, value)
            self.assertEqual(str(cm.exception), "invalid arguments: " + msg)
        with self.assertRaisesRegex(
            at.ValidationError, r'^invalid arguments: unexpected property "x"'
        ):
            at.decode(Shadowed, {"Memo": "", "id": "", "x": 1})

    def test_kwargs_receive_unknown_names_and_open_targets_accept_anything(self) -> None:
        def f(a: int, **rest: int) -> None:
            pass

        self.assertEqual(at.decode(f, {"a": 1, "b": 2.0}), {"a": 1, "b": 2})
        self.assertEqual(at.schema_of(f)["additionalProperties"], {"type": "integer"})
        self.assertEqual(at.decode(dict[str, Any], {"x": [1]}), {"x": [1]})
        self.assertEqual(at.decode(Any, {"x": 1}), {"x": 1})

    def test_union_branch_selection(self) -> None:
        @dataclasses.dataclass
        class Cat:
            meow: str

        @dataclasses.dataclass
        class Dog:
            bark: str
            loud: bool = False

        u = Union[Cat, Dog, int, Literal["none"], str]
        self.assertEqual(at.decode(u, {"bark": "woof"}), Dog("woof"))
        self.assertEqual(at.decode(u, {"meow": "m"}), Cat("m"))
        self.assertEqual(at.decode(u, 3), 3)
        self.assertEqual(at.decode(u, "none"), "none")
        self.assertEqual(at.decode(u, "other"), "other")
        self.assertEqual(at.decode(Union[int, float], 2.5), 2.5)
        self.assertIs(type(at.decode(Union[float, int], 2)), int)  # the JSON number's kind
        self.assertEqual(at.decode(Union[bool, int], 1), 1)
        self.assertIs(at.decode(Union[int, bool], True), True)
        # a deeper mismatch falls through to the next fitting branch
        self.assertEqual(at.decode(Union[list[int], list[str]], ["a"]), ["a"])
        self.assertEqual(
            at.decode(Union[datetime.date, str], "soon"),
            "soon",
        )
        with self.assertRaisesRegex(at.ValidationError, r'expected Cat, Dog or integer, got "x"'):
            at.decode(Union[Cat, Dog, int], "x")

    def test_enum_and_literal_decode_to_members(self) -> None:
        self.assertIs(at.decode(Color, 1.0), Color.RED)
        self.assertIs(at.decode(Mixed, 1), Mixed.ONE)
        with self.assertRaisesRegex(at.ValidationError, r"expected one of \[1, 2\], got true"):
            at.decode(Color, True)
        with self.assertRaisesRegex(at.ValidationError, r'expected one of \["a", "b"\], got "c"'):
            at.decode(Literal["a", "b"], "c")

    def test_wrong_shapes_are_refused_with_paths(self) -> None:
        def f(xs: list[Item]) -> None:
            pass

        with self.assertRaises(at.ValidationError) as cm:
            at.decode(f, {"xs": [{"name": "a", "Tags": []}, {"name": "b", "Tags": ["x", 2]}]})
        self.assertEqual(
            str(cm.exception), "invalid arguments: xs[1].Tags[1]: expected string, got 2"
        )
        with self.assertRaisesRegex(
            at.ValidationError, r'^invalid arguments: xs\[0\]: missing required property "Tags"'
        ):
            at.decode(f, {"xs": [{"name": "a"}]})
        with self.assertRaisesRegex(at.ValidationError, r"expected a UUID"):
            at.decode(uuid.UUID, "nope")
        with self.assertRaisesRegex(at.ValidationError, r"expected a decimal number"):
            at.decode(decimal.Decimal, "1.2.3")

    def test_post_init_value_errors_become_validation_errors(self) -> None:
        def f(p: Positive) -> None:
            pass

        with self.assertRaisesRegex(
            at.ValidationError, r"^invalid arguments: p: n must be positive$"
        ):
            at.decode(f, {"p": {"n": 0}})


class TestDecodingEdges(unittest.TestCase):
    """What JSON can carry and Python would take wrongly is a ValidationError with a path."""

    def test_a_union_of_int_and_float_keeps_the_json_numbers_kind(self) -> None:
        def f(x: Union[int, float], y: Union[float, int], z: list[Union[int, float]]) -> str:
            return ""

        got = called_with(f, '{"x": 1.0, "y": 1, "z": [2.0, 2, 2.5]}')
        self.assertEqual([type(v) for v in (got["x"], got["y"])], [float, int])
        self.assertEqual([type(v) for v in got["z"]], [float, int, float])
        self.assertIs(type(at.decode(Optional[Union[int, float]], 3.0)), float)

    def test_an_integer_too_large_for_a_float_is_refused(self) -> None:
        def f(ratio: float, scale: list[float]) -> str:
            return ""

        huge = "9" * 400
        self.assertRegex(
            refusal(f, f'{{"ratio": 1, "scale": [1, {huge}]}}'),
            r"^invalid arguments: scale\[1\]: expected a number within a float's range.*400 "
            r"digits$",
        )

    def test_non_finite_numbers_are_refused_at_their_path(self) -> None:
        def f(ratio: float, count: int, price: decimal.Decimal) -> None:
            pass

        for name, args in (
            ("ratio", {"ratio": float("inf"), "count": 1, "price": "1"}),
            ("count", {"ratio": 1.0, "count": float("-inf"), "price": "1"}),
            ("price", {"ratio": 1.0, "count": 1, "price": float("nan")}),
        ):
            with self.subTest(name=name), self.assertRaises(at.ValidationError) as caught:
                at.decode(f, args)
            self.assertEqual(caught.exception.path, name)
            self.assertIn("finite number", caught.exception.msg)
        with self.assertRaisesRegex(at.ValidationError, "expected a decimal number"):
            at.decode(decimal.Decimal, "Infinity")

    def test_lone_surrogates_are_refused_in_strings_and_keys(self) -> None:
        def f(name: str, tags: dict[str, int], when: Optional[pathlib.PurePosixPath] = None) -> str:
            return ""

        self.assertEqual(
            refusal(f, '{"name": "ab\\ud800", "tags": {}}'),
            "invalid arguments: name: expected Unicode text, got a lone surrogate (\\ud800) at "
            "character 2",
        )
        self.assertEqual(
            refusal(f, '{"name": "a", "tags": {"\\udc00x": 1}}'),
            "invalid arguments: tags: expected keys of Unicode text, got a lone surrogate "
            "(\\udc00) at character 0 of a key",
        )
        self.assertIn("lone surrogate", refusal(f, '{"name": "a", "tags": {}, "when": "\\udfff"}'))
        for tp in (bytes, datetime.date, Literal["a", "b"]):
            with self.subTest(tp=tp), self.assertRaises(at.ValidationError) as caught:
                at.decode(tp, "\udfffx")
            self.assertEqual(
                caught.exception.msg,
                "expected Unicode text, got a lone surrogate (\\udfff) at character 0",
            )
        self.assertEqual(
            called_with(f, '{"name": "\\ud83d\\ude00", "tags": {}}')["name"], "\U0001f600"
        )

    def test_deep_recursive_data_is_a_validation_error_with_a_bounded_path(self) -> None:
        data: Any = None
        for i in range(5000):
            data = {"value": i, "next": data}
        with self.assertRaises(at.ValidationError) as caught:
            at.decode(Link, data)
        self.assertIn("nesting too deep", caught.exception.msg)
        self.assertRegex(caught.exception.path, r"^next(\.next){11}\.<\d+ more>(\.next){12}$")

        def f(items: list[Node]) -> str:
            return ""

        tree: Any = {"value": 0}
        for i in range(5000):
            tree = {"value": i, "children": [tree]}
        with self.assertRaisesRegex(at.ValidationError, "nesting too deep"):
            at.decode(f, {"items": [tree]})

    def test_a_decimal_from_a_json_number_keeps_the_digits_as_written(self) -> None:
        def f(price: decimal.Decimal, prices: list[decimal.Decimal]) -> str:
            return ""

        # A tool's schema asks for a string; decode() takes the number a host may hold.
        got = at.decode(f, json.loads('{"price": 0.1, "prices": [19.99, 1e-7, 3, 2.5e3]}'))
        self.assertEqual(str(got["price"]), "0.1")
        self.assertEqual([str(p) for p in got["prices"]], ["19.99", "1E-7", "3", "2500.0"])


@dataclasses.dataclass
class Cat:
    kind: Literal["cat"]
    lives: int


@dataclasses.dataclass
class Dog:
    kind: Literal["dog"]
    bark: str


class Species(enum.Enum):
    CAT = "cat"
    DOG = "dog"


@dataclasses.dataclass
class Kitten:
    species: Literal[Species.CAT]
    age: int


@dataclasses.dataclass
class Puppy:
    species: Literal[Species.DOG]
    age: int


@dataclasses.dataclass
class HasX:
    x: int


@dataclasses.dataclass
class HasXStr:
    x: str


class TestUnionMessages(unittest.TestCase):
    """A union of classes names them, and the key that decides between them."""

    def test_the_deciding_key_names_the_classes_and_picks_the_branch(self) -> None:
        u = Union[Cat, Dog]
        self.assertEqual(at.decode(u, {"kind": "dog", "bark": "woof"}), Dog("dog", "woof"))
        cases = {
            '{"kind": "bird"}': 'kind: expected one of ["cat", "dog"]'
            ' (it decides between Cat and Dog), got "bird"',
            '{"lives": 9}': 'missing required property "kind" (it decides between Cat and Dog)',
            '{"kind": "dog", "lives": 9}': 'unexpected property "lives"',
            '{"kind": "cat"}': 'missing required property "lives"',
        }
        for text, msg in cases.items():
            with self.subTest(text=text), self.assertRaises(at.ValidationError) as caught:
                at.decode(u, json.loads(text))
            self.assertEqual(str(caught.exception), "invalid arguments: " + msg)
        with self.assertRaisesRegex(
            at.ValidationError, r"^invalid arguments: species: expected one of \[\"cat\", "
        ):
            at.decode(Union[Kitten, Puppy], {"species": "cow", "age": 1})
        self.assertEqual(
            at.decode(Union[Kitten, Puppy], {"species": "dog", "age": 1}), Puppy(Species.DOG, 1)
        )

    def test_classes_without_a_deciding_key_are_named_with_what_the_first_needs(self) -> None:
        with self.assertRaises(at.ValidationError) as caught:
            at.decode(Union[HasX, Item], {"y": 1})
        self.assertEqual(
            str(caught.exception),
            "invalid arguments: expected HasX or Item, got object;"
            ' as HasX: unexpected property "y"',
        )
        with self.assertRaisesRegex(at.ValidationError, r"expected HasX or Item, got 3$"):
            at.decode(Union[HasX, Item], 3)

    def test_when_no_branch_decodes_the_first_fitting_branchs_error_is_reported(self) -> None:
        with self.assertRaises(at.ValidationError) as caught:
            at.decode(Union[HasX, HasXStr], {"x": [1]})
        self.assertEqual(str(caught.exception), "invalid arguments: x: expected integer, got array")
        with self.assertRaises(at.ValidationError) as caught:
            at.decode(Union[HasXStr, HasX], {"x": [1]})
        self.assertEqual(str(caught.exception), "invalid arguments: x: expected string, got array")


# ---------------------------------------------------------------------------------------------
# Type inspection: what an annotation says
# ---------------------------------------------------------------------------------------------


class TestVersionIndependentForms(unittest.TestCase):
    """A typing form, a date string and an enum's members mean the same on every version."""

    def test_an_empty_tuple_takes_only_an_empty_array(self) -> None:
        import typing

        for tp in (typing.Tuple[()], tuple[()]):  # noqa: UP006
            with self.subTest(tp=tp):
                self.assertEqual(at.schema_of(tp), {"type": "array", "maxItems": 0})
                self.assertEqual(at.decode(tp, []), ())
                with self.assertRaisesRegex(at.ValidationError, "expected an array of 0 items"):
                    at.decode(tp, [1])
        self.assertEqual(at.schema_of(typing.Tuple), {"type": "array", "items": {}})  # noqa: UP006

    def test_a_flag_is_a_bitmask_of_its_members_listed_the_same_everywhere(self) -> None:
        self.assertEqual(
            at.schema_of(Perm),
            {
                "type": "integer",
                "description": "A bitmask of the flags READ=1, WRITE=2, READ_WRITE=3, EXEC=8"
                " (bitwise OR; 0 for none).",
                "minimum": 0,
                "maximum": 11,
            },
        )
        self.assertEqual(at.decode(Perm, 0), Perm(0))
        self.assertEqual(at.decode(Perm, 11), Perm.READ | Perm.WRITE | Perm.EXEC)
        self.assertEqual(at.decode(Perm, 3), Perm.READ_WRITE)
        for bad in (4, 16, -1):
            with self.subTest(bad=bad), self.assertRaisesRegex(at.ValidationError, "bitmask"):
                at.decode(Perm, bad)
        with self.assertRaisesRegex(at.ValidationError, "expected integer, got true"):
            at.decode(Perm, True)
        self.assertIs(at.decode(Mode, 3), Mode.A | Mode.B)

        def grant(perm: Perm) -> str:
            return ""

        self.assertEqual(called_with(grant, '{"perm": 9}'), {"perm": Perm.READ | Perm.EXEC})
        self.assertIn("perm: expected a number <= 11, got 12", refusal(grant, '{"perm": 12}'))
        self.assertIn(
            "perm: expected a bitmask of the flags READ=1,", refusal(grant, '{"perm": 4}')
        )

    def test_dates_and_times_take_rfc_3339_and_nothing_else(self) -> None:
        utc = datetime.timezone.utc
        plus = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
        good = {
            datetime.datetime: [
                ("2024-01-02T03:04:05Z", datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=utc)),
                ("2024-01-02 03:04", datetime.datetime(2024, 1, 2, 3, 4)),
                (
                    "2024-01-02t03:04:05.1234567+05:30",
                    datetime.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=plus),
                ),
                ("2024-01-02", datetime.datetime(2024, 1, 2)),
            ],
            datetime.date: [("2024-02-29", datetime.date(2024, 2, 29))],
            datetime.time: [
                ("03:04", datetime.time(3, 4)),
                ("03:04:05.5z", datetime.time(3, 4, 5, 500000, tzinfo=utc)),
            ],
        }
        bad = {
            datetime.datetime: [
                "20240102T030405",
                "2024-W01-1T00:00",
                "2024-01-02T03:04:05+0530",
                "2024-01-02T24:00",
                "2024-002",
                "yesterday",
            ],
            datetime.date: ["20240102", "2024-W01", "2024-W01-1", "2023-02-29", "2024-01-02T00:00"],
            datetime.time: ["0304", "030405", "T03:04", "3:04", "03:04:05+05"],
        }
        for tp, cases in good.items():
            for text, value in cases:
                with self.subTest(text=text):
                    self.assertEqual(at.decode(tp, text), value)
        for tp, texts in bad.items():
            for text in texts:
                with (
                    self.subTest(text=text),
                    self.assertRaisesRegex(at.ValidationError, "expected an RFC 3339"),
                ):
                    at.decode(tp, text)

    def test_bytes_take_standard_padded_base64_only(self) -> None:
        def store(blob: bytes) -> str:
            return ""

        self.assertEqual(at.schema_of(store)["properties"]["blob"], {"type": "string"})
        for text, data in (("aGVsbG8=", b"hello"), ("", b""), ("+/8=", b"\xfb\xff")):
            with self.subTest(text=text):
                self.assertEqual(called_with(store, {"blob": text}), {"blob": data})
        for text in ("hello_world", "aGVsbG8", "aGk", "-_8=", "aGVs bG8=", "aGVsbG8=\n", "aGk==="):
            with self.subTest(text=text):
                self.assertRegex(
                    refusal(store, {"blob": text}), r"^invalid arguments: blob: expected base64"
                )

    def test_init_var_fields_are_arguments_passed_on(self) -> None:
        self.assertEqual(
            at.schema_of(Scaled),
            {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "factor": {"type": "integer"},
                    "shown": {"type": "integer"},
                },
                "required": ["value", "factor"],
            },
        )

        def f(s: Scaled) -> str:
            return ""

        self.assertEqual(called_with(f, '{"s": {"value": 2, "factor": 5}}'), {"s": Scaled(10, 1)})
        self.assertIn('missing required property "factor"', refusal(f, '{"s": {"value": 2}}'))

    def test_a_bare_init_var_is_refused_naming_the_field(self) -> None:
        @dataclasses.dataclass
        class Untyped:
            x: dataclasses.InitVar  # type: ignore[type-arg]

        with self.assertRaisesRegex(TypeError, r'field "x": an InitVar needs its type'):
            at.schema_of(Untyped)

    def test_literal_string_and_type_alias_are_their_values(self) -> None:
        import typing

        literal_string = getattr(typing, "LiteralString", None)  # 3.11+
        if literal_string is not None:
            self.assertEqual(at.schema_of(literal_string), {"type": "string"})
        alias_type = getattr(typing, "TypeAliasType", None)  # 3.12+: `type Size = ...`
        if alias_type is not None:
            size = alias_type("Size", Optional[Literal["s", "m"]])
            self.assertEqual(at.schema_of(size), at.schema_of(Optional[Literal["s", "m"]]))
            self.assertIsNone(at.decode(size, None))


@needs(
    te is not None or sys.prefix == sys.base_prefix,
    "typing_extensions is not installed (the venv has it through other packages)",
)
class TestTypingExtensions(unittest.TestCase):
    """typing_extensions forms work as their typing twins on every version, recognised without
    agenttool importing typing_extensions."""

    def setUp(self) -> None:
        if te is None:
            self.skipTest("a bare interpreter, with nothing installed")

    def test_forms_give_their_typing_twins_schema_and_decoding(self) -> None:
        Ours, Theirs = TeArgs, TwinArgs

        self.assertEqual(at.schema_of(Ours), at.schema_of(Theirs))
        self.assertEqual(at.schema_of(Ours, strict=True), at.schema_of(Theirs, strict=True))
        self.assertEqual(
            at.decode(Ours, {"level": "low", "count": 1}), {"level": "low", "count": 1}
        )
        with self.assertRaisesRegex(at.ValidationError, r'expected one of \["low", "high"\]'):
            at.decode(Ours, {"level": "mid", "count": 1})
        self.assertEqual(
            at.schema_of(Optional[te.Literal[1, 2]]),
            {"type": ["integer", "null"], "enum": [1, 2, None]},
        )
        self.assertEqual(at.schema_of(te.LiteralString), {"type": "string"})
        alias = te.TypeAliasType("Size", te.Literal["s", "m"])
        self.assertEqual(at.schema_of(alias), at.schema_of(Literal["s", "m"]))

        self.assertEqual(at.decode(TePoint, {"x": 1, "y": 2}), TePoint(1, 2))
        self.assertEqual(
            at.schema_of(TePoint)["properties"]["y"], {"type": "integer", "description": "the y"}
        )


# ---------------------------------------------------------------------------------------------
# Docstrings: the descriptions of a tool and of its parameters
# ---------------------------------------------------------------------------------------------


class TestDescriptions(unittest.TestCase):
    def test_google_numpy_sphinx_and_annotated_precedence(self) -> None:
        def google(a: int, b: Annotated[str, "from Annotated"], c: int = 1) -> None:
            """Summary line
            continues here.

            More prose.

            Args:
                a (int): The a.
                b: Loses to Annotated.
                c: The c,
                    on two lines.

            Returns:
                Nothing.
            """

        def numpy(a: int, c: int) -> None:
            """Do it.

            Parameters
            ----------
            a : int
                The a.
            c
                The c.

            Returns
            -------
            None
            """

        def sphinx(a: int, c: int) -> None:
            """Do it.

            :param a: The a.
            :param int c: The c,
                continued.
            :returns: nothing
            """

        g = at.schema_of(google)["properties"]
        self.assertEqual(g["a"]["description"], "The a.")
        self.assertEqual(g["b"]["description"], "from Annotated")
        self.assertEqual(g["c"]["description"], "The c, on two lines.")
        n = at.schema_of(numpy)["properties"]
        self.assertEqual((n["a"]["description"], n["c"]["description"]), ("The a.", "The c."))
        s = at.schema_of(sphinx)["properties"]
        self.assertEqual(
            (s["a"]["description"], s["c"]["description"]), ("The a.", "The c, continued.")
        )
        self.assertEqual(at._doc_description(google), "Summary line continues here.\n\nMore prose.")

    def test_docstring_opening_with_args_has_no_summary_but_keeps_params(self) -> None:
        def f(a: int) -> None:
            """Args:
            a: The a.
            """

        self.assertEqual(at._doc_description(f), "")
        self.assertEqual(at.schema_of(f)["properties"]["a"]["description"], "The a.")

    def test_unparseable_docstrings_are_never_an_error(self) -> None:
        for doc in ("Args:", "Parameters\n----------\n", ":param", "Args:\n  :::\n  (", "\x00"):

            def f(a: int) -> None:
                pass

            f.__doc__ = doc
            with self.subTest(doc=doc):
                self.assertEqual(at.schema_of(f)["properties"]["a"]["type"], "integer")
                at._doc_description(f)

    def test_meta_constraints_and_member_order(self) -> None:
        meta = at.Meta(
            description="n",
            minimum=0,
            maximum=10,
            exclusive_minimum=-1,
            exclusive_maximum=11,
            multiple_of=2,
            examples=[2, 4],
        )
        s = at.schema_of(Annotated[int, meta])
        self.assertEqual(
            list(s),
            [
                "type",
                "description",
                "minimum",
                "exclusiveMinimum",
                "maximum",
                "exclusiveMaximum",
                "multipleOf",
                "examples",
            ],
        )
        t = at.schema_of(
            Annotated[str, at.Meta(min_length=1, max_length=5, pattern="^a", format="email")]
        )
        self.assertEqual(
            t,
            {"type": "string", "format": "email", "minLength": 1, "maxLength": 5, "pattern": "^a"},
        )
        items = at.schema_of(Annotated[list[int], at.Meta(min_items=1, max_items=3)])
        self.assertEqual(list(items), ["type", "items", "minItems", "maxItems"])

    def test_a_bad_pattern_is_refused_at_registration(self) -> None:
        def f(a: Annotated[str, at.Meta(pattern="(")]) -> None:
            pass

        with self.assertRaisesRegex(TypeError, r'parameter "a": Meta\(pattern'):
            at.schema_of(f)

    def test_a_field_description_beats_its_class_summary(self) -> None:
        def f(tree: Node, other: Annotated[Node, "annotated"]) -> None:
            """Walk.

            Args:
                tree: The tree to walk.
                other: Loses to Annotated.
            """

        s = at.schema_of(f)
        self.assertEqual(
            s["properties"]["tree"], {"description": "The tree to walk.", "$ref": "#/$defs/Node"}
        )
        self.assertEqual(s["properties"]["other"]["description"], "annotated")
        self.assertEqual(s["$defs"]["Node"]["description"], "A tree node.")

    def test_class_docstring_attributes_describe_fields(self) -> None:
        @dataclasses.dataclass
        class Opts:
            """Options.

            Attributes:
                depth: How deep.
            """

            depth: int

        self.assertEqual(at.schema_of(Opts)["properties"]["depth"]["description"], "How deep.")


class TestToolDescriptions(unittest.TestCase):
    def test_every_paragraph_stays_but_parameters_returns_yields_and_raises(self) -> None:
        def google(path: str) -> str:
            """Read a file
            from disk.

            Symlinks are followed; the file must be
            text.

            Args:
                path: Where it is.
                    Absolute.

            Returns:
                The text.

            Raises:
                OSError: It cannot be read.

            Example:
                >>> google("/etc/hostname")
                'box'

            Note:
                Large files are cut at 1 MB.
            """
            return path

        self.assertEqual(
            at.tool(google).description,
            "Read a file from disk.\n\nSymlinks are followed; the file must be text.\n\n"
            "Example:\n    >>> google(\"/etc/hostname\")\n    'box'\n\n"
            "Note:\n    Large files are cut at 1 MB.",
        )

    def test_numpy_and_sphinx_sections_the_same_way(self) -> None:
        def numpy(n: int) -> Any:
            """Count up.

            Parameters
            ----------
            n : int
                How far.

            Yields
            ------
            int
                Each number.

            Notes
            -----
            - starts at 0
            - stops before n
            """

        def sphinx(n: int) -> int:
            """Count up.

            :param n: How far,
                at most 10.
            :type n: int
            :returns: the count
            :raises ValueError: n is negative

            Counting is cheap.
            """
            return n

        self.assertEqual(
            at.tool(numpy).description,
            "Count up.\n\nNotes\n-----\n- starts at 0\n- stops before n",
        )
        self.assertEqual(at.tool(sphinx).description, "Count up.\n\nCounting is cheap.")

    def test_one_paragraph_reads_as_before_and_sections_alone_give_nothing(self) -> None:
        def one(n: int) -> int:
            """Double a number,
            exactly.

            Returns:
                Twice n.
            """
            return n

        def only_args(n: int) -> int:
            """Args:
            n: The number.
            """
            return n

        self.assertEqual(at.tool(one).description, "Double a number, exactly.")
        self.assertEqual(at.tool(only_args).description, "")
        self.assertEqual(at.schema_of(only_args)["properties"]["n"]["description"], "The number.")

    def test_a_docstring_opening_with_a_kept_section_keeps_it(self) -> None:
        for doc, description in (
            ("Note:\n    Slow.\n", "Note:\nSlow."),
            ("Examples\n--------\n>>> f()\n", "Examples\n--------\n>>> f()"),
            ("Returns:\n    x\nNote:\n    kept", "Note:\n    kept"),
        ):

            def f() -> None:
                pass

            f.__doc__ = doc
            self.assertEqual(at.tool(f).description, description)


# ---------------------------------------------------------------------------------------------
# Functions: a signature as a tool's parameters
# ---------------------------------------------------------------------------------------------


class TestArgSpec(unittest.TestCase):
    def test_signature_form_takes_a_dataclass_as_a_property(self) -> None:
        def move(to: Inner) -> None:
            pass

        spec = at._arg_spec(move, strict=False)
        self.assertEqual(list(spec.schema["properties"]), ["to"])
        self.assertEqual(spec.decode({"to": {"deep": True}}), {"to": Inner(True)})

    def test_struct_form(self) -> None:
        def read(args: ReadFileArgs) -> None:
            pass

        spec = at._arg_spec(read, strict=True, struct=True)
        self.assertEqual(spec.schema["required"], ["path", "max_bytes"])
        self.assertEqual(
            spec.decode({"path": "/a", "max_bytes": None}), {"args": ReadFileArgs("/a", 0)}
        )
        with self.assertRaisesRegex(
            at.ValidationError, r'^invalid arguments: unexpected property "x"'
        ):
            spec.decode({"path": "/a", "max_bytes": 1, "x": 1})

        def two(a: ReadFileArgs, b: int) -> None:
            pass

        with self.assertRaisesRegex(TypeError, "exactly one parameter"):
            at._arg_spec(two, strict=False, struct=True)

        def scalar(a: int) -> None:
            pass

        with self.assertRaisesRegex(TypeError, r'parameter "a": struct=True needs'):
            at._arg_spec(scalar, strict=False, struct=True)

    def test_struct_form_with_a_recursive_root(self) -> None:
        def walk(node: Node) -> None:
            pass

        spec = at._arg_spec(walk, strict=False, struct=True)
        self.assertEqual(spec.schema["properties"]["children"]["items"], {"$ref": "#"})
        self.assertEqual(
            spec.decode({"value": 1, "children": [{"value": 2}]}), {"node": Node(1, [Node(2)])}
        )

    def test_partials_methods_and_async_functions(self) -> None:
        def f(a: int, b: str) -> None:
            pass

        self.assertEqual(list(at.schema_of(functools.partial(f, 1))["properties"]), ["b"])

        class K:
            def m(self, x: int) -> None:
                pass

            async def am(self, y: int) -> None:
                pass

        self.assertEqual(list(at.schema_of(K().m)["properties"]), ["x"])
        self.assertEqual(list(at.schema_of(K().am)["properties"]), ["y"])

    def test_no_args(self) -> None:
        self.assertEqual(at._arg_spec(no_args, strict=False).decode({}), {})
        with self.assertRaisesRegex(at.ValidationError, r'unexpected property "a"'):
            at._arg_spec(no_args, strict=False).decode({"a": 1})


# ---------------------------------------------------------------------------------------------
# JSON Schema validation
# ---------------------------------------------------------------------------------------------


DRAFT7 = "http://json-schema.org/draft-07/schema#"
DRAFT6 = "http://json-schema.org/draft-06/schema#"
DRAFT2019 = "https://json-schema.org/draft/2019-09/schema"


# More examples for a long local run: AGENTTOOL_EXAMPLES_SCALE=50 python -m unittest ...
SCALE = int(os.environ.get("AGENTTOOL_EXAMPLES_SCALE", "1"))

try:
    import jsonschema
except ImportError:  # pragma: no cover - CI has it
    jsonschema = None
try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - CI has it
    st = None


def error_of(schema: Any, value: Any) -> str:
    """``str()`` of the ValidationError ``value`` raises, or ``""`` when it is accepted."""
    try:
        at.validator(schema).validate(value)
    except at.ValidationError as err:
        return str(err)
    return ""


READ_FILE = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "max_bytes": {"type": "integer"}},
    "required": ["path"],
}


def error_of_json(schema: Any, text: str | bytes) -> str:
    try:
        at.validator(schema).validate_json(text)
    except at.ValidationError as err:
        return str(err)
    return ""


def schema_error_of(schema: Any) -> str:
    """``str()`` of the SchemaError compiling ``schema`` raises, or ``""`` when it compiles."""
    try:
        at.validator(schema)
    except at.SchemaError as err:
        return str(err)
    return ""


# The suite's folders, each with the $schema its files are run under (drafts 6 and 7 carry none).
DRAFT_FOLDERS = {"draft2020-12": None, "draft2019-09": None, "draft7": DRAFT7, "draft6": DRAFT6}


# Optional files run on top of the required ones (the others are skipped: see SKIP_FILES).
OPTIONAL = [
    "draft2020-12/optional/anchor.json",
    "draft2020-12/optional/bignum.json",
    "draft2020-12/optional/dependencies-compatibility.json",
    "draft2020-12/optional/ecmascript-regex.json",
    "draft2020-12/optional/float-overflow.json",
    "draft2020-12/optional/id.json",
    "draft2020-12/optional/no-schema.json",
    "draft2020-12/optional/non-bmp-regex.json",
    "draft2020-12/optional/refOfUnknownKeyword.json",
    "draft2020-12/optional/unknownKeyword.json",
    "draft7/optional/bignum.json",
    "draft7/optional/ecmascript-regex.json",
    "draft7/optional/float-overflow.json",
    "draft7/optional/id.json",
    "draft7/optional/non-bmp-regex.json",
    "draft7/optional/unknownKeyword.json",
    "draft2019-09/optional/anchor.json",
    "draft2019-09/optional/bignum.json",
    "draft2019-09/optional/dependencies-compatibility.json",
    "draft2019-09/optional/ecmascript-regex.json",
    "draft2019-09/optional/float-overflow.json",
    "draft2019-09/optional/id.json",
    "draft2019-09/optional/no-schema.json",
    "draft2019-09/optional/non-bmp-regex.json",
    "draft2019-09/optional/refOfUnknownKeyword.json",
    "draft2019-09/optional/unknownKeyword.json",
    "draft6/optional/bignum.json",
    "draft6/optional/ecmascript-regex.json",
    "draft6/optional/float-overflow.json",
    "draft6/optional/id.json",
    "draft6/optional/non-bmp-regex.json",
    "draft6/optional/unknownKeyword.json",
]
REMOTE = "a remote $ref needs the suite's HTTP server or a registry; refused at compile time"
SKIP_FILES = {
    "draft2020-12/refRemote.json": REMOTE,
    "draft7/refRemote.json": REMOTE,
    "draft2020-12/dynamicRef.json": "$dynamicRef is refused at compile time (not implemented)",
    "draft2020-12/unevaluatedItems.json": "unevaluatedItems is refused at compile time",
    "draft2020-12/unevaluatedProperties.json": "unevaluatedProperties is refused at compile time",
    "draft2020-12/vocabulary.json": "custom metaschemas ($schema on localhost) are refused",
    "draft2020-12/optional/cross-draft.json": REMOTE,
    "draft7/optional/cross-draft.json": REMOTE,
    "draft2020-12/optional/dynamicRef.json": "$dynamicRef is refused at compile time",
    "draft2020-12/optional/format-assertion.json": "custom metaschemas are refused",
    "draft2020-12/optional/format/*": "format is an annotation only",
    "draft7/optional/format/*": "format is an annotation only",
    "draft7/optional/content.json": "contentMediaType/contentEncoding are annotations only",
    "draft2019-09/refRemote.json": REMOTE,
    "draft6/refRemote.json": REMOTE,
    "draft2019-09/unevaluatedItems.json": "unevaluatedItems is refused at compile time",
    "draft2019-09/unevaluatedProperties.json": "unevaluatedProperties is refused at compile time",
    "draft2019-09/vocabulary.json": "custom metaschemas ($schema on localhost) are refused",
    "draft2019-09/optional/cross-draft.json": REMOTE,
    "draft2019-09/optional/format/*": "format is an annotation only",
    "draft6/optional/format/*": "format is an annotation only",
}
METASCHEMA = "refers to the draft's metaschema, a remote document; refused at compile time"
UNEVALUATED = "unevaluatedProperties is refused at compile time"
SKIP_CASES = {
    (
        "draft2020-12/not.json",
        "collect annotations inside a 'not', even if collection is disabled",
    ): UNEVALUATED,
    ("draft2020-12/ref.json", "ref creates new scope when adjacent to keywords"): UNEVALUATED,
    ("draft2020-12/defs.json", "validate definition against metaschema"): METASCHEMA,
    ("draft2020-12/ref.json", "remote ref, containing refs itself"): METASCHEMA,
    ("draft7/definitions.json", "validate definition against metaschema"): METASCHEMA,
    ("draft7/ref.json", "remote ref, containing refs itself"): METASCHEMA,
    (
        "draft2019-09/not.json",
        "collect annotations inside a 'not', even if collection is disabled",
    ): UNEVALUATED,
    ("draft2019-09/defs.json", "validate definition against metaschema"): METASCHEMA,
    ("draft2019-09/ref.json", "remote ref, containing refs itself"): METASCHEMA,
    ("draft2019-09/ref.json", "ref creates new scope when adjacent to keywords"): UNEVALUATED,
    (
        "draft2019-09/ref.json",
        "$ref with $recursiveAnchor",
    ): "unevaluatedItems is refused at compile time",
    ("draft6/definitions.json", "validate definition against metaschema"): METASCHEMA,
    ("draft6/ref.json", "remote ref, containing refs itself"): METASCHEMA,
}


@needs(os.path.isdir(SUITE), f"the test suite is absent ({SUITE})")
class TestSuite(unittest.TestCase):
    def test_every_supported_case_of_each_draft_passes(self) -> None:
        files = []
        for folder in DRAFT_FOLDERS:
            files += sorted(glob.glob(os.path.join(SUITE, folder, "*.json")))
        files += [os.path.join(SUITE, name) for name in OPTIONAL]
        passed, skipped, failures = 0, [], []
        for path in files:
            name = os.path.relpath(path, SUITE).replace(os.sep, "/")
            if name in SKIP_FILES:
                skipped.append(f"{name}: {SKIP_FILES[name]}")
                continue
            uri = DRAFT_FOLDERS[name.partition("/")[0]]
            with open(path, encoding="utf-8") as f:
                cases = json.load(f)
            for case in cases:
                schema = case["schema"]
                if uri is not None and isinstance(schema, dict) and "$schema" not in schema:
                    schema = dict(schema, **{"$schema": uri})
                reason = SKIP_CASES.get((name, case["description"]))
                try:
                    check = at.validator(schema)
                except at.SchemaError as err:
                    if reason is None:
                        failures.append(f"{name} | {case['description']}: refused: {err}")
                    else:
                        skipped.append(f"{name} | {case['description']}: {reason}")
                    continue
                if reason is not None:
                    failures.append(f"{name} | {case['description']}: listed as skipped, compiles")
                for test in case["tests"]:
                    try:
                        check.validate(test["data"])
                        valid = True
                    except at.ValidationError:
                        valid = False
                    if valid == test["valid"]:
                        passed += 1
                    else:
                        failures.append(
                            f"{name} | {case['description']} | {test['description']}:"
                            f" expected valid={test['valid']}"
                        )
        for pattern, reason in SKIP_FILES.items():
            if pattern.endswith("*"):
                skipped.append(f"{pattern}: {reason}")
            elif not os.path.exists(os.path.join(SUITE, pattern)):
                failures.append(f"{pattern}: listed as skipped, no such file")
        for name, description in SKIP_CASES:
            if not any(line.startswith(f"{name} | {description}:") for line in skipped):
                failures.append(f"{name} | {description}: listed as skipped, no such case")
        print(
            f"\nJSON-Schema-Test-Suite: {passed} tests passed, {len(failures)} failed,"
            f" {len(skipped)} files or cases skipped:",
            file=sys.stderr,
        )
        for line in skipped:
            print(f"  skip {line}", file=sys.stderr)
        self.assertEqual(failures, [])
        self.assertGreater(passed, 4000)  # four drafts


def corpus_schemas() -> list[Any]:
    names = sorted(glob.glob(os.path.join(CORPUS, "*.json")))
    out = []
    for name in names:
        if os.path.basename(name) == "manifest.json":
            continue
        with open(name, encoding="utf-8") as f:
            out.append(json.load(f))
    return out


if st is not None:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-5, 5)
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.sampled_from([0.5, 1.0, 2.0, -1.5, 1e300])
        | st.text(alphabet="abxy-_0 \u00e9", max_size=5)
    )
    json_values = st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(["a", "b", "c", "x-1", "name", "path"]), inner, max_size=4
            )
        ),
        max_leaves=12,
    )

    def instances(schema: Any, depth: int = 0) -> Any:
        """Values shaped after ``schema`` (often valid, often a little wrong), or any JSON."""
        if not isinstance(schema, dict) or depth > 4:
            return json_values
        options = [json_values]
        if "enum" in schema:
            options.append(st.sampled_from(schema["enum"]))
        if "const" in schema:
            options.append(st.just(schema["const"]))
        kinds = schema.get("type", [])
        kinds = [kinds] if isinstance(kinds, str) else kinds
        props = schema.get("properties", {})
        if "object" in kinds or props:
            optional = {k: instances(s, depth + 1) for k, s in props.items()}
            extra = schema.get("additionalProperties")
            optional["zz"] = instances(extra, depth + 1) if isinstance(extra, dict) else json_values
            options.append(st.fixed_dictionaries({}, optional=optional))
        if "array" in kinds or "items" in schema:
            options.append(st.lists(instances(schema.get("items"), depth + 1), max_size=4))
        for name, strategy in (
            ("string", st.text(alphabet="abcxyz0", max_size=6)),
            ("integer", st.integers(-10, 10)),
            ("number", st.floats(-10, 10) | st.integers(-10, 10)),
            ("boolean", st.booleans()),
            ("null", st.none()),
        ):
            if name in kinds:
                options.append(strategy)
        for kw in ("anyOf", "oneOf", "allOf"):
            for sub in schema.get(kw, []):
                options.append(instances(sub, depth + 1))
        return st.one_of(options)

    leaf_schemas = st.one_of(
        st.booleans(),
        st.fixed_dictionaries(
            {},
            optional={
                "type": st.sampled_from(
                    [
                        "string",
                        "integer",
                        "number",
                        "boolean",
                        "null",
                        "object",
                        "array",
                        ["integer", "null"],
                        ["string", "array"],
                    ]
                ),
                "enum": st.lists(scalars, min_size=1, max_size=3),
                "const": scalars,
                "minLength": st.integers(0, 3),
                "maxLength": st.integers(0, 3),
                "pattern": st.sampled_from(["^a", "b", "[0-9]", "^[a-c]*", "x+y"]),
                "minimum": st.integers(-3, 3) | st.sampled_from([0.5, -1.5]),
                "maximum": st.integers(-3, 3),
                "exclusiveMinimum": st.integers(-3, 3),
                "exclusiveMaximum": st.sampled_from([2, 2.5, 10**20]),
                "multipleOf": st.sampled_from([1, 2, 3, 0.5]),
                "minItems": st.integers(0, 2),
                "maxItems": st.integers(0, 3),
                "uniqueItems": st.booleans(),
                "minProperties": st.integers(0, 2),
                "maxProperties": st.integers(0, 3),
                "required": st.lists(st.sampled_from(["a", "b", "name"]), max_size=2, unique=True),
                "dependentRequired": st.just({"a": ["b"]}),
            },
        ),
    )

    def compound(inner: Any) -> Any:
        names = st.sampled_from(["a", "b", "c", "name", "path", "x-1"])
        return st.fixed_dictionaries(
            {},
            optional={
                "type": st.sampled_from(["object", "array", ["object", "null"]]),
                "properties": st.dictionaries(names, inner, max_size=3),
                "patternProperties": st.dictionaries(
                    st.sampled_from(["^x-", "a"]), inner, max_size=1
                ),
                "additionalProperties": inner,
                "propertyNames": st.just({"maxLength": 3}),
                "items": inner,
                "prefixItems": st.lists(inner, min_size=1, max_size=2),
                "contains": inner,
                "minContains": st.integers(0, 2),
                "maxContains": st.integers(0, 2),
                "allOf": st.lists(inner, min_size=1, max_size=2),
                "anyOf": st.lists(inner, min_size=1, max_size=2),
                "oneOf": st.lists(inner, min_size=1, max_size=2),
                "not": inner,
                "if": inner,
                "then": inner,
                "else": inner,
                "dependentSchemas": st.dictionaries(names, inner, max_size=1),
                "required": st.lists(names, max_size=2, unique=True),
            },
        )

    random_schemas = st.recursive(leaf_schemas, compound, max_leaves=6)


@needs(jsonschema is not None and st is not None, "jsonschema and hypothesis are not installed")
class TestSecondOpinion(unittest.TestCase):
    """agenttool and jsonschema (Draft202012Validator) accept and reject the same values."""

    def agree(self, schema: Any, value: Any) -> None:
        ours = error_of(schema, value) == ""
        theirs = jsonschema.Draft202012Validator(schema).is_valid(value)
        self.assertEqual(ours, theirs, f"schema={json.dumps(schema)} value={value!r}")

    @needs(os.path.isdir(CORPUS), "the schema corpus is absent")
    def test_corpus_schemas(self) -> None:
        for schema in corpus_schemas():
            self.check_instances(schema)

    def check_instances(self, schema: Any) -> None:
        @settings(max_examples=25 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
        @given(instances(schema))
        def run(value: Any) -> None:
            self.agree(schema, value)

        run()

    def test_generated_schemas(self) -> None:
        @settings(max_examples=150 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.data())
        def run(data: Any) -> None:
            schema = data.draw(random_schemas)
            for _ in range(3):
                self.agree(schema, data.draw(instances(schema)))

        run()


ARGS = {
    "type": "object",
    "properties": {
        "flag": {"type": "boolean"},
        "ratio": {"type": "number"},
        "nested": {
            "type": "object",
            "properties": {"deep": {"type": "boolean"}},
            "required": ["deep"],
        },
        "level": {"type": "string", "enum": ["low", "high"]},
        "word": {"type": "integer", "enum": [1, 2]},
        "count": {"type": "integer", "enum": [1, 2, 3]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "list": {
            "type": "array",
            "items": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
        "limit": {"type": ["integer", "null"]},
        "maybe": {"type": ["string", "null"], "enum": ["a"]},
        "strict_enum": {"type": "string", "enum": ["a", None]},
        "nothing": {"type": "null"},
        "anything": {},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}
STRICT = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "level": {"type": "string"},
        "limit": {"type": ["integer", "null"]},
    },
    "required": ["query", "level", "limit"],
    "additionalProperties": False,
}


class TestGoMessages(unittest.TestCase):
    """The message forms the Go seed's tests pin, word for word."""

    def check(self, schema: Any, value: Any, expected: str) -> None:
        self.assertEqual(error_of(schema, value), expected)

    def test_empty_arguments_miss_the_required_property(self) -> None:
        self.check(READ_FILE, {}, 'invalid arguments: missing required property "path"')

    def test_wrong_types_name_the_expected_type_and_the_value(self) -> None:
        self.check(READ_FILE, {"path": 1}, "invalid arguments: path: expected string, got 1")
        self.check(ARGS, {"flag": "yes"}, 'invalid arguments: flag: expected boolean, got "yes"')
        self.check(ARGS, {"ratio": "high"}, 'invalid arguments: ratio: expected number, got "high"')
        self.check(ARGS, {"nested": []}, "invalid arguments: nested: expected object, got array")
        self.check(ARGS, {"count": None}, "invalid arguments: count: expected integer, got null")
        self.check(ARGS, {"flag": {}}, "invalid arguments: flag: expected boolean, got object")
        self.check(ARGS, {"flag": 1.5}, "invalid arguments: flag: expected boolean, got 1.5")

    def test_enum_lists_the_values_as_compact_json(self) -> None:
        self.check(
            ARGS,
            {"level": "mid"},
            'invalid arguments: level: expected one of ["low", "high"], got "mid"',
        )
        self.check(ARGS, {"word": 3}, "invalid arguments: word: expected one of [1, 2], got 3")

    def test_enum_is_checked_before_type(self) -> None:
        self.check(ARGS, {"word": 1.5}, "invalid arguments: word: expected one of [1, 2], got 1.5")

    def test_two_point_zero_is_an_integer(self) -> None:
        self.check(ARGS, {"word": 2.0}, "")
        self.check(READ_FILE, {"path": "p", "max_bytes": 2.0}, "")

    def test_paths_are_dotted_with_indexes(self) -> None:
        self.check(ARGS, {"tags": ["a", 2]}, "invalid arguments: tags[1]: expected string, got 2")
        self.check(
            ARGS,
            {"nested": {"deep": "x"}},
            'invalid arguments: nested.deep: expected boolean, got "x"',
        )
        self.check(
            ARGS, {"list": [{"name": 1}]}, "invalid arguments: list[0].name: expected string, got 1"
        )

    def test_missing_required_is_reported_at_the_object(self) -> None:
        self.check(
            ARGS, {"nested": {}}, 'invalid arguments: nested: missing required property "deep"'
        )

    def test_extra_properties_are_ignored_unless_closed(self) -> None:
        self.check(READ_FILE, {"path": "p", "bogus": 1}, "")
        self.check(
            STRICT,
            {"query": "q", "level": "l", "limit": None, "bogus": 1},
            'invalid arguments: unexpected property "bogus"',
        )

    def test_required_in_list_order_then_properties_in_sorted_order(self) -> None:
        self.check(STRICT, {}, 'invalid arguments: missing required property "query"')
        self.check(STRICT, {"query": "q"}, 'invalid arguments: missing required property "level"')
        self.check(
            STRICT,
            {"query": 1, "level": 2, "limit": None},
            "invalid arguments: level: expected string, got 2",
        )
        # a property error sorting before an unexpected key wins, and the other way round
        self.check(
            STRICT,
            {"query": "q", "level": 2, "limit": None, "zzz": 1},
            "invalid arguments: level: expected string, got 2",
        )
        self.check(
            STRICT,
            {"query": 1, "level": "l", "limit": None, "bogus": 1},
            'invalid arguments: unexpected property "bogus"',
        )

    def test_strict_nullable_accepts_null(self) -> None:
        self.check(STRICT, {"query": "q", "level": "l", "limit": None}, "")
        self.check(ARGS, {"limit": None}, "")

    def test_a_type_union_names_every_type(self) -> None:
        self.check(
            ARGS, {"limit": "x"}, 'invalid arguments: limit: expected integer or null, got "x"'
        )

    def test_nullable_enum_without_null_rejects_null_by_enum(self) -> None:
        self.check(
            ARGS, {"maybe": None}, 'invalid arguments: maybe: expected one of ["a"], got null'
        )

    def test_enum_listing_null_does_not_make_the_type_nullable(self) -> None:
        self.check(
            ARGS, {"strict_enum": None}, "invalid arguments: strict_enum: expected string, got null"
        )

    def test_type_null_rejects_other_values(self) -> None:
        self.assertIn("expected null", error_of(ARGS, {"nothing": 0}))

    def test_untyped_schema_accepts_anything(self) -> None:
        for value in (None, 1, "x", [1, {}], {"a": [True]}):
            self.check(ARGS, {"anything": value}, "")
            self.check({}, value, "")
            self.check(True, value, "")

    def test_bad_json_is_named(self) -> None:
        err = error_of_json(READ_FILE, '{"path": ')
        self.assertTrue(err.startswith("invalid arguments: not valid JSON: "), err)

    def test_unknown_type_name_is_a_schema_error(self) -> None:
        with self.assertRaises(at.SchemaError) as caught:
            at.validator({"type": "object", "properties": {"a": {"type": "strng"}}})
        self.assertIn('"strng" is not a JSON Schema type', str(caught.exception))


class TestOwnMessages(unittest.TestCase):
    """Messages for the keywords the Go seed does not have, in the same style."""

    def check(self, schema: Any, value: Any, expected: str) -> None:
        self.assertEqual(error_of(schema, value), expected and "invalid arguments: " + expected)

    def test_counts(self) -> None:
        self.check({"minItems": 1}, [], "expected at least 1 item, got 0")
        self.check({"maxItems": 2}, [1, 2, 3], "expected at most 2 items, got 3")
        self.check({"maxLength": 10}, "x" * 12, "expected at most 10 characters, got 12")
        self.check({"minLength": 2}, "\U0001f600", "expected at least 2 characters, got 1")
        self.check({"minProperties": 1}, {}, "expected at least 1 property, got 0")
        self.check({"maxProperties": 1}, {"a": 1, "b": 2}, "expected at most 1 property, got 2")

    def test_numbers(self) -> None:
        self.check({"minimum": 0}, -1, "expected a number >= 0, got -1")
        self.check({"exclusiveMinimum": 0}, 0, "expected a number > 0, got 0")
        self.check({"maximum": 1.5}, 2, "expected a number <= 1.5, got 2")
        self.check({"exclusiveMaximum": 10}, 10.0, "expected a number < 10, got 10.0")
        self.check({"multipleOf": 5}, 7, "expected a multiple of 5, got 7")
        self.check({"multipleOf": 0.01}, 0.123, "expected a multiple of 0.01, got 0.123")

    def test_strings(self) -> None:
        self.check({"pattern": "^[a-z]+$"}, "A1", 'expected a string matching "^[a-z]+$", got "A1"')
        long = "y" * 100
        self.check(
            {"type": "integer"}, long, f'expected integer, got "{"y" * 57}..." (43 more characters)'
        )

    def test_unique_items_names_the_equal_pair(self) -> None:
        self.check(
            {"uniqueItems": True}, [1, "a", 1.0], "expected unique items; items 0 and 2 are equal"
        )
        self.check({"uniqueItems": True}, [1, True, {"a": 0}, {"a": False}], "")

    def test_const_and_not(self) -> None:
        self.check({"const": "x"}, "y", 'expected exactly "x", got "y"')
        self.check(
            {"not": {"type": "string"}},
            "s",
            'expected a value not matching {"type":"string"}, got "s"',
        )

    def test_any_of_reports_the_branch_of_the_value_type(self) -> None:
        schema = {
            "anyOf": [
                {"type": "string"},
                {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
            ]
        }
        self.check(schema, {}, 'missing required property "path"')
        self.check(schema, {"path": 1}, "path: expected string, got 1")
        self.check(
            schema,
            3,
            "expected a value matching one of the 2 allowed shapes"
            ' (string, or object with "path"), got 3',
        )
        nested = {"properties": {"target": schema}}
        self.assertEqual(
            error_of(nested, {"target": {"path": 1}}),
            "invalid arguments: target.path: expected string, got 1",
        )

    def test_any_of_bare_types_reads_like_a_type_union(self) -> None:
        nullable = {"anyOf": [{"type": "string", "description": "d"}, {"type": "null"}]}
        self.check(nullable, 1, "expected string or null, got 1")
        self.check(
            {"anyOf": [{"type": "integer"}, {"type": "string"}]}, 1.5, "expected integer, got 1.5"
        )

    def test_subschemas_are_checked_after_the_object_own_keywords(self) -> None:
        schema = {
            "properties": {"a": {"type": "string"}},
            "if": {"required": ["a"]},
            "then": {"required": ["b"]},
        }
        self.check(schema, {"a": 1}, "a: expected string, got 1")
        self.check(schema, {"a": "s"}, 'missing required property "b"')

    def test_one_of_with_several_matches(self) -> None:
        self.check(
            {"oneOf": [{"type": "integer"}, {"minimum": 0}]},
            1,
            "expected exactly one of the allowed shapes to match, but 2 did",
        )

    def test_object_keywords(self) -> None:
        self.check(
            {"dependentRequired": {"card": ["billing"]}},
            {"card": 1},
            'missing required property "billing" (required when "card" is present)',
        )
        self.check(
            {"propertyNames": {"maxLength": 3}},
            {"abcd": 1},
            'invalid property name "abcd": expected at most 3 characters, got 4',
        )
        self.check(
            {"patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False},
            {"x-a": "ok", "y": 1},
            'unexpected property "y"',
        )
        self.check({"properties": {"a": False}}, {"a": 1}, 'unexpected property "a"')

    def test_array_keywords(self) -> None:
        self.check(
            {"prefixItems": [{"type": "string"}], "items": False},
            ["a", 1],
            "expected at most 1 item, got 2",
        )
        self.check(
            {"contains": {"type": "string"}},
            [1, 2],
            'expected at least 1 item matching the "contains" schema {"type":"string"}, got 0',
        )
        self.check(
            {"contains": {"type": "string"}, "maxContains": 1},
            ["a", "b"],
            'expected at most 1 item matching the "contains" schema {"type":"string"}, got 2',
        )
        self.check(
            {"prefixItems": [True], "items": {"type": "string"}},
            [1, "a", 2],
            "[2]: expected string, got 2",
        )
        self.check(
            {"items": {"type": "integer"}}, [1, 1, "x", 1, "x"], '[2]: expected integer, got "x"'
        )

    def test_keys_that_are_not_identifiers_are_quoted(self) -> None:
        schema = {"properties": {"headers": {"additionalProperties": {"type": "string"}}}}
        self.assertEqual(
            error_of(schema, {"headers": {"content-type": 1}}),
            'invalid arguments: headers["content-type"]: expected string, got 1',
        )
        self.assertEqual(
            error_of({"properties": {"a b": {"type": "string"}}}, {"a b": 1}),
            'invalid arguments: ["a b"]: expected string, got 1',
        )

    def test_false_schema_refuses_everything(self) -> None:
        self.check(False, {}, "no value is allowed here")

    def test_errors_through_references_keep_their_path(self) -> None:
        tree = {
            "$ref": "#/$defs/node",
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {
                        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                        "value": {"type": "integer"},
                    },
                }
            },
        }
        self.assertEqual(
            error_of(tree, {"children": [{"children": [{}, {"value": "x"}]}]}),
            'invalid arguments: children[0].children[1].value: expected integer, got "x"',
        )

    def test_validation_error_is_a_value_error_with_path_and_msg(self) -> None:
        with self.assertRaises(ValueError) as caught:
            at.validator(ARGS).validate({"tags": [1]})
        err = caught.exception
        assert isinstance(err, at.ValidationError)
        self.assertEqual((err.path, err.msg), ("tags[0]", "expected string, got 1"))


class TestBoundedMessages(unittest.TestCase):
    """Whatever the model or the schema wrote, a message stays within about 2 KB."""

    def bounded(self, schema: Any, value: Any, *needles: str) -> None:
        message = error_of(schema, value)
        self.assertTrue(message, "accepted")
        self.assertLess(len(message), 2048, message[:300])
        message.encode("utf-8")
        for needle in needles:
            self.assertIn(needle, message)

    def test_what_the_model_wrote(self) -> None:
        huge = "k" * 10_000_000
        closed = {"type": "object", "properties": {"a": {}}, "additionalProperties": False}
        self.bounded(closed, {huge: 1}, "unexpected property", "more characters")
        self.bounded({"additionalProperties": {"type": "integer"}}, {huge: "x"}, "more characters")
        self.bounded({"items": {"type": "integer"}}, ["x" * 100_000], "more characters")
        self.bounded({"type": "string"}, 10**3000, "digits")
        self.bounded({"propertyNames": {"maxLength": 3}}, {huge: 1}, "more characters")
        deep = {"additionalProperties": {"additionalProperties": {"type": "integer"}}}
        self.bounded(deep, {huge: {huge + "2": "x"}}, "more characters")

    def test_what_the_schema_wrote(self) -> None:
        members = [f"value-{i}" for i in range(5000)]
        self.bounded({"enum": members}, "nope", "more)", '"value-0"')
        self.bounded({"const": {"a": "b" * 100_000}}, 1, "more characters")
        self.bounded({"required": ["r" * 100_000]}, {}, "more characters")
        self.bounded({"pattern": "^" + "a" * 20_000 + "$"}, "b", "more characters")
        many = {"anyOf": [{"type": "object", "required": [f"p{i}"]} for i in range(1000)]}
        self.bounded(many, 1, "1000 allowed shapes")
        self.bounded({"not": {"const": "n" * 100_000}}, "n" * 100_000)
        self.bounded({"anyOf": [{"type": "string"}] * 1000}, 1)
        self.bounded({"dependentRequired": {"d" * 100_000: ["e" * 100_000]}}, {"d" * 100_000: 1})

    def test_schema_errors_too(self) -> None:
        huge = "p" * 1_000_000
        for schema in (
            {"properties": {huge: {"minLength": -1}}},
            {"properties": {huge: 5}},
            {"$defs": {huge: {"$ref": "#/$defs/" + huge}}},
            {"const": {huge: (1,)}},
            {"$ref": "#/$defs/" + huge},
            {"enum": [huge], "type": huge},
        ):
            message = schema_error_of(schema)
            self.assertTrue(message, "compiled")
            self.assertLess(len(message), 2048, message[:300])


class TestLoneSurrogates(unittest.TestCase):
    def test_messages_quote_a_lone_surrogate_printably(self) -> None:
        schema = {"type": "object", "properties": {}, "additionalProperties": False}
        message = error_of(schema, {"\ud800": 1})
        message.encode("utf-8")  # no UnicodeEncodeError
        self.assertIn("\\ud800", message)

    def test_the_command_line_prints_its_error(self) -> None:
        folder = tempfile.mkdtemp(prefix="agenttool-surrogate-")
        self.addCleanup(shutil.rmtree, folder, True)
        with open(os.path.join(folder, "greeter.py"), "w", encoding="utf-8") as f:
            f.write("import agenttool\n\n@agenttool.tool\ndef greet(name: str) -> str:\n")
            f.write("    return 'hi ' + name\n")
        env = dict(os.environ, PYTHONPATH=ROOT, PYTHONIOENCODING="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "agenttool", "call", "greeter.py", "greet",
             '{"name": "a", "\\ud800": 1}'],
            cwd=folder, env=env, capture_output=True, text=True, timeout=60, errors="replace",
        )  # fmt: skip
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn("unexpected property", done.stdout)
        self.assertNotIn("Traceback", done.stderr)


# ----- the compiler: schema -> Python source -> functions ------------------------------------


class TestSchemaErrors(unittest.TestCase):
    def refused(self, schema: Any, *needles: str) -> None:
        with self.assertRaises(at.SchemaError) as caught:
            at.validator(schema)
        for needle in needles:
            self.assertIn(needle, str(caught.exception))

    def test_remote_and_unresolvable_refs(self) -> None:
        self.refused({"$ref": "https://example.com/other.json"}, '"$ref"', "outside this schema")
        self.refused({"$ref": "#/$defs/missing"}, '"$ref"', "does not resolve")
        self.refused({"$ref": "#nowhere"}, '"$ref"', "does not resolve")
        self.refused({"properties": {"a": {"$ref": 5}}}, '"$ref"', "#/properties/a")

    def test_unknown_schema_uri(self) -> None:
        self.refused({"$schema": "http://json-schema.org/draft-04/schema#"}, '"$schema"')
        self.refused({"$schema": 7}, '"$schema"')

    def test_keywords_not_implemented(self) -> None:
        self.refused({"unevaluatedProperties": False}, '"unevaluatedProperties"')
        self.refused({"items": {"unevaluatedItems": {}}}, '"unevaluatedItems"', "#/items")
        self.refused({"$dynamicRef": "#a"}, '"$dynamicRef"')
        self.assertEqual(error_of({"unevaluatedProperties": True}, {"a": 1}), "")

    def test_keyword_values_of_the_wrong_type(self) -> None:
        self.refused({"minLength": "3"}, '"minLength"', "non-negative integer")
        self.refused({"minItems": -1}, '"minItems"')
        self.refused({"maximum": "10"}, '"maximum"')
        self.refused({"exclusiveMinimum": True}, '"exclusiveMinimum"', "draft 4")
        self.refused({"multipleOf": 0}, '"multipleOf"')
        self.refused({"required": "a"}, '"required"')
        self.refused({"properties": []}, '"properties"')
        self.refused({"enum": "a"}, '"enum"')
        self.refused({"anyOf": []}, '"anyOf"')
        self.refused({"uniqueItems": 1}, '"uniqueItems"')
        self.refused({"type": []}, '"type"')
        self.refused({"not": 3}, "#/not")
        self.refused(3, "object or a boolean")

    def test_invalid_patterns(self) -> None:
        self.refused({"pattern": "(unclosed"}, '"pattern"', "not a valid regex")
        self.refused({"patternProperties": {"[": {}}}, '"patternProperties"')
        self.refused({"pattern": "\\p{Greek}"}, '"pattern"')

    def test_annotations_and_unknown_keywords_are_ignored(self) -> None:
        schema = {
            "title": "t",
            "description": "d",
            "default": 1,
            "examples": [1],
            "$comment": "c",
            "format": "date-time",
            "x-vendor": {"type": "string"},
            "deprecated": True,
        }
        self.assertEqual(error_of(schema, "not a date"), "")


# Malformed values for every keyword the validator checks (systematically: every keyword gets
# every bad value), compared with jsonschema's metaschema check in each draft.
KEYWORD_VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 1.5, 2.0, -2.0, "", "s", "string", [], ["a"], ["a", "a"],
    ["string", "string"], ["string", "null"], [1], [{}], [True], {}, {"a": "b"}, {"a": ["b"]},
    {"a": ["b", "b"]}, {"a": {}}, {"a": 5}, {"a": True}, "a b", "_x", "#frag", "x:y",
]  # fmt: skip
CHECKED_KEYWORDS = [
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "maxItems", "minItems", "uniqueItems",
    "maxContains", "minContains", "maxProperties", "minProperties", "required",
    "dependentRequired", "dependencies", "properties", "additionalProperties", "propertyNames",
    "dependentSchemas", "items", "prefixItems", "additionalItems", "contains", "allOf", "anyOf",
    "oneOf", "not", "if", "then", "else", "$defs", "definitions", "$anchor", "$recursiveAnchor",
    "$vocabulary", "pattern",
]  # fmt: skip


@needs(jsonschema is not None, "jsonschema is not installed")
class TestMalformedSchemas(unittest.TestCase):
    """A keyword value the draft's metaschema refuses is refused, naming keyword and place."""

    def test_the_issue_cases(self) -> None:
        for schema, kw in (
            ({"dependentRequired": {"a": "b"}}, "dependentRequired"),
            ({"minimum": None}, "minimum"),
            ({"if": 5}, "#/if"),
            ({"$defs": 5}, "$defs"),
            ({"$defs": {"unused": {"minLength": -1}}}, "#/$defs/unused"),
            ({"required": ["a", "a"]}, "required"),
            ({"type": ["string", "string"]}, "type"),
            ({"properties": {"a": {"maxItems": 1.5}}}, "#/properties/a"),
            ({"$ref": "#/x-vendor/y", "x-vendor": {"y": {"minLength": -1}}}, "#/x-vendor/y"),
            (
                {
                    "$schema": DRAFT7,
                    "$ref": "#/definitions/a",
                    "definitions": {"a": {}},
                    "minimum": "1",
                },
                "minimum",
            ),
        ):
            message = schema_error_of(schema)
            self.assertIn(kw, message, schema)

    def test_recursive_ref_is_not_ignored(self) -> None:
        self.assertIn("2019-09", schema_error_of({"$recursiveRef": "#"}))
        self.assertIn("2019-09", schema_error_of({"$schema": DRAFT7, "$recursiveRef": "#"}))

    def test_against_the_metaschemas(self) -> None:
        drafts = {
            "https://json-schema.org/draft/2020-12/schema": jsonschema.Draft202012Validator,
            DRAFT2019: jsonschema.Draft201909Validator,
            DRAFT7: jsonschema.Draft7Validator,
            DRAFT6: jsonschema.Draft6Validator,
        }
        compared = 0
        for uri, meta in drafts.items():
            for kw in CHECKED_KEYWORDS:
                for value in KEYWORD_VALUES:
                    if "2020" in uri and (kw == "additionalItems" or kw == "items" and value):
                        continue  # draft 7's spellings, honoured under 2020-12 too
                    if kw == "$recursiveAnchor" and value is True and "2019" in uri:
                        continue  # needs $id beside it to mean anything; covered elsewhere
                    schema = {"$schema": uri, kw: value}
                    theirs = meta(meta.META_SCHEMA).is_valid(schema)
                    ours = schema_error_of(schema)
                    self.assertEqual(ours == "", theirs, f"{schema}: {ours}")
                    if ours:
                        self.assertIn(kw, ours)
                    compared += 1
        self.assertGreater(compared, 4000)


class TestCyclesWithoutInput(unittest.TestCase):
    """A cycle of subschemas applied to the same value is refused when compiled."""

    def refused(self, schema: Any, *needles: str) -> None:
        message = schema_error_of(schema)
        self.assertIn("consumes no input", message)
        for needle in needles:
            self.assertIn(needle, message)

    def test_ref_cycles(self) -> None:
        self.refused({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, "#/$defs/a")
        self.refused({"$ref": "#"}, '"$ref" at #')
        two = {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}}
        self.refused(two, "#/$defs/a -> #/$defs/b")
        self.refused({"$defs": {"a": {"$ref": "#/$defs/a"}}})  # unreferenced, still refused

    def test_through_other_in_place_keywords(self) -> None:
        self.refused({"allOf": [{"$ref": "#"}]}, '"$ref"')
        self.refused({"anyOf": [{"type": "string"}, {"$ref": "#"}]})
        self.refused({"not": {"$ref": "#"}})
        self.refused({"if": {"$ref": "#"}})
        self.refused({"if": {"type": "string"}, "then": {"$ref": "#"}})
        self.refused({"dependentSchemas": {"a": {"$ref": "#"}}})
        self.refused({"properties": {"p": {"oneOf": [{"$ref": "#/properties/p"}]}}})
        anchored = {"$defs": {"x": {"$anchor": "x", "allOf": [{"$ref": "#x"}]}}}
        self.refused(anchored)
        by_id = {"$id": "https://e.com/r", "$defs": {"y": {"$id": "y", "$ref": "r"}}, "$ref": "y"}
        self.refused(by_id)
        draft7 = {"$schema": DRAFT7, "definitions": {"a": {"$ref": "#/definitions/a"}}}
        self.refused(draft7)
        self.refused(
            {
                "$ref": "#/x-vendor/a",
                "x-vendor": {
                    "a": {"$ref": "#/x-vendor/b"},
                    "b": {"properties": {"p": {"$ref": "#/x-vendor/b/properties/p"}}},
                },
            }
        )

    def test_recursion_through_values_still_compiles(self) -> None:
        tree = {"type": "object", "properties": {"kids": {"items": {"$ref": "#"}}}}
        self.assertEqual(error_of(tree, {"kids": [{"kids": []}]}), "")
        self.assertTrue(error_of(tree, {"kids": [{"kids": [5]}]}))
        for consuming in ("additionalProperties", "propertyNames", "contains", "items"):
            self.assertEqual(schema_error_of({consuming: {"$ref": "#"}}), "", consuming)
        # then/else without if are not applied: no cycle
        self.assertEqual(schema_error_of({"then": {"$ref": "#"}}), "")

    def test_a_long_chain_of_references_is_no_cycle(self) -> None:
        defs: dict[str, Any] = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(3000)}
        defs["d3000"] = {"type": "integer"}
        self.assertEqual(schema_error_of({"$defs": defs, "$ref": "#/$defs/d0"}), "")
        defs["d3000"] = {"$ref": "#/$defs/d0"}
        self.assertIn("consumes no input", schema_error_of({"$defs": defs}))


class TestDrafts(unittest.TestCase):
    def test_draft7_ignores_ref_siblings_and_2020_keywords(self) -> None:
        schema = {
            "$schema": DRAFT7,
            "definitions": {"s": {"type": "string"}},
            "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 1}},
        }
        self.assertEqual(error_of(schema, {"a": "long"}), "")
        self.assertEqual(error_of({"$schema": DRAFT7, "prefixItems": [False]}, [1]), "")
        self.assertEqual(error_of({"$schema": DRAFT7, "unevaluatedItems": False}, [1]), "")
        same = dict(schema, **{"$schema": "https://json-schema.org/draft/2020-12/schema"})
        self.assertTrue(error_of(same, {"a": "long"}))

    def test_no_schema_is_2020_12_accepting_draft7_spellings(self) -> None:
        schema = {"items": [{"type": "string"}], "additionalItems": False}
        self.assertEqual(error_of(schema, ["a"]), "")
        self.assertEqual(
            error_of(schema, ["a", 1]), "invalid arguments: expected at most 1 item, got 2"
        )
        deps = {"dependencies": {"a": ["b"], "c": {"required": ["d"]}}}
        self.assertTrue(error_of(deps, {"a": 1}))
        self.assertTrue(error_of(deps, {"c": 1}))
        self.assertEqual(error_of(deps, {"a": 1, "b": 2, "c": 3, "d": 4}), "")

    def test_ids_anchors_and_escaped_pointers(self) -> None:
        schema = {
            "$id": "https://example.com/root.json",
            "$defs": {
                "a~b/c%d": {"type": "integer"},
                "named": {"$anchor": "thing", "type": "string"},
                "other": {"$id": "other.json", "$defs": {"x": {"type": "null"}}},
            },
            "properties": {
                "p": {"$ref": "#/$defs/a~0b~1c%25d"},
                "q": {"$ref": "#thing"},
                "r": {"$ref": "other.json#/$defs/x"},
            },
        }
        self.assertEqual(error_of(schema, {"p": 1, "q": "s", "r": None}), "")
        self.assertTrue(error_of(schema, {"p": "1"}))
        self.assertTrue(error_of(schema, {"q": 1}))
        self.assertTrue(error_of(schema, {"r": 1}))

    def test_deeply_nested_schemas_compile(self) -> None:
        schema: Any = {"type": "integer"}
        for _ in range(60):
            schema = {"type": "array", "items": {"type": "object", "properties": {"a": schema}}}
        value: Any = 1
        for _ in range(60):
            value = [{"a": value}]
        check = at.validator(schema)
        check.validate(value)
        with self.assertRaises(at.ValidationError) as caught:
            check.validate(json.loads(json.dumps(value).replace("1", '"1"')))
        self.assertTrue(caught.exception.path.startswith("[0].a[0].a[0].a"))
        self.assertTrue(caught.exception.path.endswith("[0].a"))


class TestMoreDrafts(unittest.TestCase):
    def test_draft6_uris_with_and_without_the_hash(self) -> None:
        for uri in (DRAFT6, DRAFT6.rstrip("#"), "https://json-schema.org/draft-06/schema#"):
            schema = {"$schema": uri, "if": {"type": "string"}, "then": False}
            self.assertEqual(error_of(schema, "s"), "")  # if/then are unknown to draft 6
            self.assertTrue(error_of({"$schema": uri, "exclusiveMinimum": 1}, 1))

    def test_draft2019_09_recursive_ref(self) -> None:
        tree = {
            "$schema": DRAFT2019,
            "$id": "https://example.com/tree",
            "$recursiveAnchor": True,
            "type": "object",
            "properties": {"kids": {"type": "array", "items": {"$recursiveRef": "#"}}},
        }
        strict_tree = {
            "$schema": DRAFT2019,
            "$id": "https://example.com/strict",
            "$recursiveAnchor": True,
            "$ref": "tree",
            "unevaluatedProperties": True,
            "required": ["name"],
            "$defs": {"tree": tree},
        }
        self.assertEqual(error_of(tree, {"kids": [{"kids": []}]}), "")
        self.assertEqual(error_of(strict_tree, {"name": 1, "kids": [{"name": 2}]}), "")
        self.assertEqual(
            error_of(strict_tree, {"name": 1, "kids": [{"kids": []}]}),
            'invalid arguments: kids[0]: missing required property "name"',
        )
        self.assertEqual(error_of({"$schema": DRAFT2019, "prefixItems": [False]}, [1]), "")

    def test_ids_in_defs_are_found_in_drafts_6_and_7(self) -> None:
        for uri in (DRAFT6, DRAFT7):
            schema = {
                "$schema": uri,
                "$id": "https://example.com/root.json",
                "$defs": {"x": {"$id": "x.json", "type": "integer"}, "junk": 5},
                "properties": {"a": {"$ref": "x.json"}},
            }
            self.assertEqual(error_of(schema, {"a": 1}), "")
            self.assertTrue(error_of(schema, {"a": "1"}))

    def test_unknown_schema_uris_name_the_drafts(self) -> None:
        self.assertIn("2019-09", schema_error_of({"$schema": "http://json-schema.org/schema#"}))


# ----- keyword generators: one function per keyword or group acting together -----------------


class TestShortcutsAgree(unittest.TestCase):
    """The generated code's shortcuts (a bare-type anyOf branch tested inline, a closed
    object's keys counted, enum standing for type, unique scalars through a set) give the
    verdicts and messages the general path gives; each row was run on the code before them."""

    def test_verdicts_and_messages(self) -> None:
        class Same:
            def __repr__(self) -> str:
                return "Same()"

        ns = {"anyOf": [{"type": "string"}, {"type": "null"}]}
        closed = {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {}, "c": True, "d": False,
                           "e": {"type": "string"}},
            "required": ["a"],
            "additionalProperties": False,
        }  # fmt: skip
        wide = {"type": "object", "properties": {k: {} for k in "abcdefg"},
                "additionalProperties": False}  # fmt: skip
        draft7 = "http://json-schema.org/draft-07/schema#"
        cases: list[tuple[Any, Any, str]] = [
            (ns, "x", ""),
            (ns, None, ""),
            (ns, 5, "expected string or null, got 5"),
            (ns, [1], "expected string or null, got array"),
            (
                {"anyOf": [{"type": ["integer", "null"]}, {"type": "string", "minLength": 2}]},
                "a",
                "expected at least 2 characters, got 1",
            ),
            (
                {"anyOf": [{"type": ["integer", "null"]}, {"type": "string", "minLength": 2}]},
                2.0,
                "",
            ),
            (
                {"anyOf": [{"type": ["integer", "null"]}, {"type": "string", "minLength": 2}]},
                2.5,
                "expected integer or null, got 2.5",
            ),
            (
                {
                    "anyOf": [
                        {"type": "object", "required": ["k"]},
                        {"type": "null", "description": "none"},
                    ]
                },
                {},
                'missing required property "k"',
            ),
            (
                {
                    "anyOf": [
                        {"type": "object", "required": ["k"]},
                        {"type": "null", "description": "none"},
                    ]
                },
                None,
                "",
            ),
            ({"anyOf": [{"type": "integer"}, True]}, "anything", ""),
            ({"anyOf": [{"type": "integer"}, {}]}, [1], ""),
            (
                {
                    "$schema": draft7,
                    "definitions": {"s": {"type": "string"}},
                    "anyOf": [{"$ref": "#/definitions/s", "type": "integer"}, {"type": "null"}],
                },
                5,
                "expected a value matching one of the 2 allowed shapes (string, or null), got 5",
            ),
            (
                {
                    "$schema": draft7,
                    "definitions": {"s": {"type": "string"}},
                    "anyOf": [{"$ref": "#/definitions/s", "type": "integer"}, {"type": "null"}],
                },
                "s",
                "",
            ),
            ({"anyOf": [{"type": "integer", "unknownKeyword": 1}, {"type": "null"}]}, 3, ""),
            (
                {"oneOf": [{"type": "integer"}, {"type": "number"}]},
                3,
                "expected exactly one of the allowed shapes to match, but 2 did",
            ),
            ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, 3, ""),
            (closed, {"a": 1}, ""),
            (closed, {"a": 1, "b": [], "c": 0, "e": "x"}, ""),
            (closed, {"a": 1, "z": 0}, 'unexpected property "z"'),
            (closed, {"a": 1, "b": 2, "zz": 0, "aa": 1}, 'unexpected property "aa"'),
            (closed, {"a": 1, "d": 0}, 'unexpected property "d"'),
            (closed, {"a": "x", "Z": 0}, 'unexpected property "Z"'),
            (closed, {"a": "x", "zz": 0}, 'a: expected integer, got "x"'),
            (
                closed,
                {"a": 1, 7: 0},
                "property name 7 is not a string; JSON object keys are strings",
            ),
            (closed, {"b": 1}, 'missing required property "a"'),
            (closed, {"a": 1, "e": 5, "c": 1}, "e: expected string, got 5"),
            (wide, {"a": 1, "g": 2}, ""),
            (wide, {"a": 1, "h": 2}, 'unexpected property "h"'),
            (wide, {}, ""),
            ({"uniqueItems": True}, [1, 1.0], "expected unique items; items 0 and 1 are equal"),
            ({"uniqueItems": True}, [1, True], ""),
            ({"uniqueItems": True}, [0, False, None, ""], ""),
            (
                {"uniqueItems": True},
                ["a", "b", "a"],
                "expected unique items; items 0 and 2 are equal",
            ),
            ({"uniqueItems": True}, [None, None], "expected unique items; items 0 and 1 are equal"),
            ({"uniqueItems": True}, [(1,), (True,)], ""),
            ({"uniqueItems": True}, [(1,), [1]], "expected unique items; items 0 and 1 are equal"),
            (
                {"uniqueItems": True},
                [Same(), Same()],
                "expected unique items; items 0 and 1 are equal",
            ),
            (
                {"uniqueItems": True},
                [{"a": 1}, {"a": 1.0}],
                "expected unique items; items 0 and 1 are equal",
            ),
            ({"uniqueItems": True}, [1.5, 2, "2", True, False], ""),
            ({"type": "string", "enum": ["a", 1]}, 1, "expected string, got 1"),
            ({"type": "string", "enum": ["a", 1]}, "b", 'expected one of ["a", 1], got "b"'),
            ({"type": "string", "enum": ["a", "b"]}, None, "expected string, got null"),
            ({"type": "string", "enum": ["a", "b"]}, 3, 'expected one of ["a", "b"], got 3'),
            ({"type": "integer", "enum": [1, 2.0]}, 2.0, ""),
            ({"type": "integer", "enum": [1, 2.0]}, True, "expected one of [1, 2.0], got true"),
            ({"type": "integer", "enum": [1, 2.5]}, 2.5, "expected integer, got 2.5"),
            ({"type": "integer", "const": 3}, 3.0, ""),
            ({"type": "boolean", "const": False}, 0, "expected exactly false, got 0"),
            ({"type": ["string", "null"], "enum": ["a", None]}, None, ""),
            ({"type": "number", "enum": [1, 2]}, False, "expected one of [1, 2], got false"),
            ({"type": "integer", "enum": [1, 2, 3]}, 2.0, ""),
            ({"enum": [1, 2, 3]}, True, "expected one of [1, 2, 3], got true"),
            ({"enum": [1.5, "a"]}, 1.5, ""),
            ({"enum": [1.5, "a"]}, "a", ""),
            ({"enum": [1.5, "a"]}, "b", 'expected one of [1.5, "a"], got "b"'),
            ({"const": 3}, 3.0, ""),
            ({"const": 1}, True, "expected exactly 1, got true"),
            ({"const": 2.5}, 2.5, ""),
        ]
        for schema, value, expected in cases:
            got = error_of(schema, value).replace("invalid arguments: ", "")
            self.assertEqual(got, expected, (schema, value))

    def test_required_properties_read_once_from_a_dict_only(self) -> None:
        """Required properties with checks are read where they are required; a dict subclass
        that answers a missing key (Counter, defaultdict) is asked first, and left unchanged."""
        schema = {
            "type": "object",
            "required": ["a", "b", "c"],
            "properties": {"a": {"type": "integer"}, "b": {}, "c": {"type": "string"}},
        }
        for value, expected in [
            ({"a": 1, "c": "x"}, 'missing required property "b"'),
            ({"b": 1, "c": "x"}, 'missing required property "a"'),
            ({"a": 1, "b": 2}, 'missing required property "c"'),
            ({"a": "1", "b": 2, "c": "x"}, 'a: expected integer, got "1"'),
            ({"a": 1, "b": 2, "c": "x"}, ""),
            (collections.Counter({"b": 1, "c": 1}), 'missing required property "a"'),
            (collections.defaultdict(int, {"b": 1, "c": "x"}), 'missing required property "a"'),
            (collections.OrderedDict(a=1, b=2, c="x"), ""),
        ]:
            before = dict(value)
            got = error_of(schema, value).replace("invalid arguments: ", "")
            self.assertEqual(got, expected, value)
            self.assertEqual(dict(value), before, value)


class TestDecimalMultipleOf(unittest.TestCase):
    """multipleOf on decimals (prices): exact on the numbers as written, and fast."""

    def test_exact_on_the_numbers_as_written(self) -> None:
        from fractions import Fraction

        def written(x: Any) -> Fraction:
            return Fraction(x) if isinstance(x, int) else Fraction(repr(x))

        rnd = random.Random(13)
        for m in (0.01, 0.05, 0.25, 0.0001, 2.5e-5, 0.07, 12.5, 3.3e-8, 1e-300, 5e-324):
            values: list[Any] = [0.0, -0.0, 0, 1, 1e17, 1e300, 0.1 + 0.2, -19.99]
            edge = 2.0**50 * m  # where the float path hands over to fractions
            values += [edge * 0.999999, edge, edge * 1.000001, -edge, (2**40 + 0.5) * m]
            for _ in range(300):
                n = rnd.randint(-(10 ** rnd.randint(1, 16)), 10 ** rnd.randint(1, 16))
                values += [float(f"{n}e-{rnd.randint(0, 12)}"), n * m, n]
                values.append(10.0 ** rnd.randint(-8, 15) * (1 + 2**-52))
            for v in values:
                expected = (written(v) / written(m)).denominator == 1
                self.assertEqual(error_of({"multipleOf": m}, v) == "", expected, (m, v))

    def test_prices_take_the_path_without_fractions(self) -> None:
        code = (
            "schema = {'type': 'array', 'items': {'type': 'object', 'properties':"
            " {'price': {'type': 'number', 'multipleOf': 0.01}}}}\n"
            "items = [{'price': round(i * 0.37, 2)} for i in range(1000)] + [{'price': 7}]\n"
            "at.validator(schema).validate(items)\n"
            "try:\n    at.validator(schema).validate([{'price': 0.001}])\n"
            "except at.ValidationError as e:\n    print(e)\n"
            "print('fractions' in sys.modules)\n"
        )
        self.assertEqual(
            isolated(self, code, None).split("\n")[:2],
            ["invalid arguments: [0].price: expected a multiple of 0.01, got 0.001", "False"],
        )


# ---------------------------------------------------------------------------------------------
# ECMA-262 patterns: parsed once, run by Python's re where it cannot backtrack, else linearly
# ---------------------------------------------------------------------------------------------


ECMA_TABLE = os.path.join(ROOT, "testdata", "ecma_regex.json")
# Accepted by ECMA-262 (node) but refused here, with a SchemaError saying why.
UNTRANSLATED = {
    "a{99999999999}": "past the linear matcher's 12,000 NFA states (and not anchored for re)",
    "(?<=a+)b": "a variable-width lookbehind: Python's re has none",
    "\\p{Script=Greek}": "scripts are not in the Unicode tables agenttool.py carries",
    "\\p{sc=Latin}": "scripts are not in the Unicode tables agenttool.py carries",
    "\\p{scx=Greek}": "scripts are not in the Unicode tables agenttool.py carries",
    "\\p{Script_Extensions=Latin}": "scripts are not in the Unicode tables agenttool.py carries",
}
# Where the engine that wrote the table departs from ECMA-262 itself.
ENGINE_QUIRKS = {
    ("\\B", "x\U0001f600y"): "V8 tries \\B between the two UTF-16 halves of an astral character;"
    " ECMA-262 with the u flag steps by code point, so no position qualifies",
}


def ecma_table() -> dict[str, Any]:
    with open(ECMA_TABLE, encoding="utf-8") as f:
        table: dict[str, Any] = json.load(f)
    return table


def node_agrees(
    test: unittest.TestCase,
    pattern: str,
    search: Callable[[str], Any],
    strings: list[str],
    verdicts: str,
) -> None:
    for text, verdict in zip(strings, verdicts):
        if (pattern, text) in ENGINE_QUIRKS:
            continue
        test.assertEqual(search(text) is not None, verdict == "1", f"{pattern!r} on {text!r}")


def accepted_by(check: Any, value: Any) -> bool | None:
    """True when ``check`` accepts ``value``, else None: a search function's answer."""
    try:
        check.validate(value)
    except at.ValidationError:
        return None
    return True


class TestEcmaRegexTable(unittest.TestCase):
    """Patterns mean what node's ``new RegExp(p, "u")`` says, from a table it wrote once
    (``testdata/ecma_regex.js`` writes ``testdata/ecma_regex.json``)."""

    def test_every_pattern_is_accepted_refused_and_matched_as_node_says(self) -> None:
        table = ecma_table()
        strings, checked = table["strings"], 0
        for row in table["rows"]:
            pattern = row["pattern"]
            with self.subTest(pattern=pattern):
                if not row["valid"] or pattern in UNTRANSLATED:
                    with self.assertRaisesRegex(at.SchemaError, '"pattern".*not a valid regex'):
                        at.validator({"pattern": pattern})
                    continue
                search = functools.partial(accepted_by, at.validator({"pattern": pattern}))
                node_agrees(self, pattern, search, strings, row["matches"])
                checked += 1
        self.assertGreater(checked, 250)

    def test_the_linear_matcher_alone_agrees_with_node(self) -> None:
        """The same table through the lazy DFA, whichever engine the validator picks."""
        table = ecma_table()
        checked = 0
        for row in table["rows"]:
            pattern = row["pattern"]
            if not row["valid"] or pattern in UNTRANSLATED:
                continue
            parser = at._EcmaParser(pattern)
            tree = parser.parse()
            try:
                search = at._linear_search(tree)
            except at._Unsupported:  # backreferences and inner lookarounds need re
                continue
            with self.subTest(pattern=pattern):
                node_agrees(self, pattern, search, table["strings"], row["matches"])
                checked += 1
        self.assertGreater(checked, 200)

    def test_the_linear_matcher_agrees_with_node_when_its_dfa_explodes(self) -> None:
        """With room for two DFA states, every search leaves the DFA for the bitwise matcher
        (what a pattern like ^(a|b)*a(a|b){20}$ does on a long text)."""
        table = ecma_table()
        checked = 0
        full = at._LinearSearch._MAX_STATES
        at._LinearSearch._MAX_STATES = 2
        try:
            for row in table["rows"]:
                pattern = row["pattern"]
                if not row["valid"] or pattern in UNTRANSLATED:
                    continue
                try:
                    search = at._linear_search(at._EcmaParser(pattern).parse())
                except at._Unsupported:
                    continue
                with self.subTest(pattern=pattern):
                    node_agrees(self, pattern, search, table["strings"], row["matches"])
                    checked += 1
        finally:
            at._LinearSearch._MAX_STATES = full
        self.assertGreater(checked, 200)

    def test_every_pattern_is_refused_the_same_way_for_a_key(self) -> None:
        for row in ecma_table()["rows"]:
            if not row["valid"]:
                with self.subTest(pattern=row["pattern"]):
                    with self.assertRaisesRegex(at.SchemaError, '"patternProperties"'):
                        at.validator({"patternProperties": {row["pattern"]: {}}})


class TestEcmaDialect(unittest.TestCase):
    """The rules of the dialect, one by one, on every Python version."""

    def matches(self, pattern: str, text: str) -> bool:
        return error_of({"pattern": pattern}, text) == ""

    def refused(self, pattern: str) -> None:
        with self.assertRaisesRegex(at.SchemaError, '"pattern".*not a valid regex'):
            at.validator({"pattern": pattern})

    def test_dot_matches_no_line_terminator(self) -> None:
        for terminator in ("\n", "\r", "\u2028", "\u2029"):
            self.assertFalse(self.matches("^.$", terminator), repr(terminator))
            self.assertFalse(self.matches("a.b", f"a{terminator}b"), repr(terminator))
        for other in ("\u0085", "\x0b", "\U0001f600", "\ud83d"):
            self.assertTrue(self.matches("^.$", other), repr(other))

    def test_dollar_is_the_very_end_never_before_a_trailing_newline(self) -> None:
        self.assertFalse(self.matches("^abc$", "abc\n"))
        self.assertFalse(self.matches("c$", "abc\r\n"))
        self.assertTrue(self.matches("^abc$", "abc"))
        schema = {"type": "object", "patternProperties": {"^x$": {}}, "additionalProperties": False}
        self.assertIn('unexpected property "x\\n"', error_of(schema, {"x\n": 1}))
        names = {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}}
        self.assertNotEqual(error_of(names, {"key\n": 1}), "")
        self.assertEqual(error_of(names, {"key": 1}), "")

    def test_a_surrogate_pair_escape_is_one_astral_character(self) -> None:
        self.assertTrue(self.matches("^\\uD83D\\uDE00$", "\U0001f600"))
        self.assertTrue(self.matches("^[\\uD83D\\uDE00]$", "\U0001f600"))
        self.assertFalse(self.matches("^[\\uD83D\\uDE00]$", "\ud83d"))
        self.assertTrue(self.matches("^\\uD83D$", "\ud83d"))  # a lone one stays itself

    def test_code_point_escapes(self) -> None:
        self.assertTrue(self.matches("^\\u{61}$", "a"))
        self.assertTrue(self.matches("^\\u{1F600}+$", "\U0001f600\U0001f600"))
        self.refused("\\u{110000}")
        self.refused("\\u{}")

    def test_python_only_syntax_is_refused_on_every_version(self) -> None:
        for pattern in (
            "(?i)a",
            "(?s).",
            "a{,2}",
            "\\Z",
            "\\A",
            "\\a",
            "\\z",
            "(?P<n>a)",
            "a++",
            "a*+",
            "(?>a)",
            "\\-",
            "(?#c)",
        ):
            with self.subTest(pattern=pattern):
                self.refused(pattern)

    def test_ascii_classes_and_ecma_white_space(self) -> None:
        self.assertFalse(self.matches("^\\d$", "\u0661"))
        self.assertFalse(self.matches("^\\w$", "\u00e9"))
        self.assertTrue(self.matches("\\bfoo\\b", "\u00e9foo"))  # é is not a word character
        for space in ("\t", "\x0b", "\x0c", "\u00a0", "\ufeff", "\u3000", "\u2028"):
            self.assertTrue(self.matches("^\\s$", space), repr(space))
        for not_space in ("\x1c", "\x1f", "\u0085", "\u200b"):
            self.assertFalse(self.matches("^\\s$", not_space), repr(not_space))

    def test_valid_ecma_python_cannot_run_is_refused_saying_so(self) -> None:
        with self.assertRaisesRegex(at.SchemaError, "scripts are not supported"):
            at.validator({"pattern": "\\p{Script=Greek}"})
        with self.assertRaisesRegex(at.SchemaError, "re cannot run"):
            at.validator({"pattern": "(?<=a+)b"})

    def test_a_long_literal_is_no_longer_too_large(self) -> None:
        long = "x-api-" * 500  # 3,000 characters: past the DFA's 2,000 NFA states
        self.assertTrue(self.matches(long, "<" + long + ">"))
        self.assertFalse(self.matches(long + "$", long + "!"))
        self.assertTrue(self.matches("^" + long + "$", long))
        self.assertTrue(self.matches("[ab]" * 2500, "ab" * 1250))  # a class each: positions
        self.assertFalse(self.matches("[ab]" * 2500, "ab" * 1249 + "ac"))
        with self.assertRaisesRegex(at.SchemaError, "more than 12,000 NFA states"):
            at.validator({"pattern": "[ab]" * 12_001})

    def test_deep_nesting_is_a_schema_error_not_a_crash(self) -> None:
        with self.assertRaisesRegex(at.SchemaError, "nested more than 100 deep"):
            at.validator({"pattern": "(" * 5000 + "a" + ")" * 5000})
        with self.assertRaisesRegex(at.SchemaError, "nested more than 100 deep"):
            at.validator({"pattern": "(?:" * 101 + ")" * 101})
        self.assertEqual(error_of({"pattern": "^" + "(?:" * 100 + "a" + ")" * 100 + "$"}, "a"), "")

    def test_the_pattern_check_for_schema_generation(self) -> None:
        self.assertIsNone(at._ecma_pattern_error("^[a-z]+$"))
        self.assertIn("incomplete quantifier", at._ecma_pattern_error("a{,2}") or "")


HOSTILE_PATTERNS = [  # (pattern, head, unit, times, tail): refused
    ("^(a+)+$", "", "a", 30, "!"),
    ("^(\\w+\\s?)*$", "", "a", 30, "!"),
    ("^(a+)+$", "", "a", 300_000, "!"),
    ("^(\\w+\\s?)*$", "", "ab ", 100_000, "!"),
    ("^(a|aa)+$", "", "a", 300_000, "!"),
    ("^(a*)*b$", "", "a", 300_000, ""),
    ("(x+x+)+y", "", "x", 300_000, ""),
    ("a.*b.*c", "", "ab", 150_000, ""),
    ("[a-z]+$", "", "a", 300_000, "!"),
    ("\\d+x", "", "1", 300_000, ""),
    ("^[^@]+@[^@]+\\.[^@]+$", "a@", ".", 300_000, "@"),
    ("^(\\w+\\.)*\\w+$", "", "a.", 150_000, "!"),
    ("^([a-z]+\\s*)+$", "", "abc ", 75_000, "!"),
    ("^(.*a){3}$", "", "a", 300_000, "!"),
    ("^(?=.*[A-Z])(?=.*\\d).{8,}$", "", "a", 300_000, ""),
    ("(.*)*x", "", "y", 300_000, ""),
    ("^(?=(a+)+$)", "", "a", 30, "!"),  # the blow-up inside a lookahead
    ("^(?!(\\w+\\s?)*$)b", "", "a", 30, "!"),
    ("^(\\s*\\w+\\s*,?)*$", "", "a,", 150_000, "!"),
    ("a" * 2000, "", "a" * 1999 + "b", 500, ""),  # long literals: no 2,000-state limit
    ("ab" * 1000 + "$", "", "ab" * 999 + "aa", 500, ""),
]


class TestHostilePatterns(unittest.TestCase):
    """Every accepted pattern runs in time linear in the string: checked in a subprocess with a
    timeout (a backtracking matcher would need hours), never by timing a fast path."""

    def run_bounded(self, code: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", code, ROOT], capture_output=True, text=True, timeout=60
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout.split()

    def test_hostile_patterns_finish_on_long_strings(self) -> None:
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); import agenttool as at\n"
            f"for pattern, head, unit, times, tail in {HOSTILE_PATTERNS!r}:\n"
            "    check = at.validator({'pattern': pattern})\n"
            "    try:\n"
            "        check.validate(head + unit * times + tail)\n"
            "        print('accepted')\n"
            "    except at.ValidationError:\n"
            "        print('refused')\n"
        )
        self.assertEqual(self.run_bounded(code), ["refused"] * len(HOSTILE_PATTERNS))

    def test_a_matcher_shared_by_threads_answers_as_one_of_its_own(self) -> None:
        """The lazy DFA fills its tables while threads use it, and starts over when full."""
        patterns = ["^[\\s\\S]*a[\\s\\S]{12}$", "^(\\w+\\s?)*$", "\\bfoo\\b.*x$"]
        rnd = random.Random(7)
        texts = [
            "".join(rnd.choice("ab fox\n") for _ in range(rnd.randint(0, 40))) for _ in range(200)
        ]
        alone = {
            p: [at._linear_search(at._EcmaParser(p).parse())(t) for t in texts] for p in patterns
        }
        start, wrong = threading.Barrier(6), []

        def use(shared: dict[str, Any]) -> None:
            start.wait()
            for p in patterns:
                try:
                    answers = [shared[p](t) for t in texts]
                except Exception as err:  # a race showing as an error counts too
                    answers = [repr(err)]
                if answers != alone[p]:
                    wrong.append(p)

        with unittest.mock.patch.object(at._LinearSearch, "_MAX_STATES", 8):
            shared = {p: at._linear_search(at._EcmaParser(p).parse()) for p in patterns}
            threads = [threading.Thread(target=use, args=(shared,)) for _ in range(6)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        self.assertEqual(wrong, [])

    def test_property_names_are_checked_in_linear_time_too(self) -> None:
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); import agenttool as at\n"
            "key = 'a' * 200_000 + '!'\n"
            "closed = {'patternProperties': {'^(a*)*$': {}}, 'additionalProperties': False}\n"
            "for schema in ({'propertyNames': {'pattern': '^(a+)+$'}},\n"
            "               {'patternProperties': {'^(a|a)+$': False}}, closed):\n"
            "    try:\n"
            "        at.validator(schema).validate({key: 1, 'a' * 40 + '!': 2})\n"
            "        print('accepted')\n"
            "    except at.ValidationError:\n"
            "        print('refused')\n"
        )
        self.assertEqual(self.run_bounded(code), ["refused", "accepted", "refused"])


class TestPositionSets(unittest.TestCase):
    """Once its lazy DFA explodes, a search goes on over sets of pattern positions (a few
    shifts of one int a character): the verdicts must be the plain DFA's."""

    MANY_ENDS = "x(ab|cd|ef|gh|ij|kl|mn|op|qr|st){3}!"  # a follows ten ends: ten distances
    PATTERNS = [  # and the characters (or words) of the strings tried on it
        ("^(a|b)*a(a|b){6}$", "ab"),  # a and b merged: every move a shift by 0 or 1
        ("^[\\s\\S]*x[\\s\\S]{5}$", "xy "),
        ("(ab|ba)+x?(a|bc){3}", "abcx"),  # unanchored, loops moving back
        (MANY_ENDS, ["x", "ab", "cd", "ef", "gh", "ij", "kl", "mn", "op", "qr", "st", "!", "b"]),
        ("\\b(a|b)+\\B[ab ]{3}\\b", "ab _!"),  # word boundaries: moves per context
        ("(a|b)+\\b$", "ab _"),
        ("^(\\w+\\s?)*x$", "ax _!"),
        ("[!?]*![!?]{3}#|\\b", "!?#a"),  # an empty match where a word starts or ends
        ("a$|^b", "ab"),
    ]

    def exploding(self, pattern: str) -> Any:
        """The pattern's matcher with room for two DFA states: searches leave the DFA early."""
        search = at._linear_search(at._EcmaParser(pattern).parse())
        self.assertIsInstance(search, at._LinearSearch)
        search._MAX_STATES = 2
        return search

    def test_verdicts_match_the_plain_dfa_on_many_strings(self) -> None:
        rnd = random.Random(11)
        for pattern, alphabet in self.PATTERNS:
            plain = at._linear_search(at._EcmaParser(pattern).parse())
            exploding = self.exploding(pattern)
            verdicts = set()
            for _ in range(400):
                text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 30)))
                with self.subTest(pattern=pattern, text=text):
                    self.assertEqual(exploding(text), plain(text))
                verdicts.add(plain(text))
            self.assertIsNotNone(exploding.positions, pattern)  # the new path was taken
            self.assertEqual(verdicts, {True, None}, pattern)  # and both answers checked

    def test_positions_no_text_tells_apart_are_merged_into_shifts(self) -> None:
        search = self.exploding("^(a|b)*a(a|b){20}$")
        self.assertIsNone(search("ab" * 50))
        positions = search.positions
        self.assertEqual(len(positions.members), 22)  # (a|b)*, a, then one a position per (a|b)
        self.assertEqual(sorted(positions.moves[0]), [0, 1])
        for ch in "ab":
            self.assertIsNone(positions.steps(ch)[False][-1])  # no moves beyond the two shifts

    def test_a_pattern_of_many_distances_moves_by_table(self) -> None:
        exploding = self.exploding(self.MANY_ENDS)
        self.assertTrue(exploding("xqrabx" * 10 + "xabcdst!"))
        others = exploding.positions.steps("a")[False][-1]
        self.assertTrue(others.by_table)
        self.assertTrue(any(others.tables))  # it was used
        self.assertTrue(all(len(table) <= 256 for table in others.tables))

    def test_memory_is_bounded_however_many_characters_a_text_has(self) -> None:
        pattern = "^[\\s\\S]*x[\\s\\S]{5}$"
        plain = at._linear_search(at._EcmaParser(pattern).parse())
        exploding = self.exploding(pattern)
        many = 3 * at._PositionSearch._MAX_CHARS
        text = "".join(chr(0x4E00 + k) + "x" * (k % 3 == 0) for k in range(many)) + "x12345"
        self.assertEqual(exploding(text), plain(text))
        self.assertTrue(exploding(text))
        positions = exploding.positions
        self.assertEqual(len(positions.of_char), at._PositionSearch._MAX_CHARS)
        self.assertLessEqual(len(positions.by_class), len(exploding.bounds))


COUNTED_PATTERNS = {  # past the old 2,000 NFA states: the verdicts node gave on each string
    "^(\\w{1,50}\\s?){1,100}$": [  # 10,202 NFA states, 5,100 positions
        ("", False),
        ("a", True),
        (" ", False),
        ("ab cd", True),
        ("a  b", False),
        ("ab cd\n", True),
        ("a" * 50, True),
        ("a" * 51 + " b", True),
        ("a" * 5000, True),  # the longest without white space
        (("a" * 50 + " ") * 100, True),  # the longest: 5,100 characters
        ("ab " * 100, True),
        ("\u00e9", False),
    ],
    "^([a-z]{2,8}-){1,300}[a-z]+$": [  # 2,702 positions
        ("", False),
        ("ab-c", True),  # the shortest
        ("a-c", False),
        ("ab-", False),
        ("ab-cd", True),
        ("abcdefgh-x", True),
        ("abcdefghi-x", False),
        ("ab-" * 300 + "x", True),  # the most copies
        ("ab-" * 301 + "x", False),  # one more
        ("abcdefgh-" * 300 + "xyz", True),
        ("ab-" * 150 + "a-b", False),
        ("AB-c", False),
    ],
    "\\b([a-z]{2,8}-){100,300}\\d": [  # a word boundary: moves per context
        ("ab-" * 100 + "1", True),  # the fewest copies
        ("ab-" * 99 + "1", False),  # one fewer
        ("xab-" * 100 + "1", True),
        ("-" + "ab-" * 100 + "1", True),
        ("_ab-" + "ab-" * 100 + "1", True),
        ("zz " + "ab-" * 300 + "7", True),
        ("ab-" * 300 + "7", True),
        ("ab-" * 301 + "7", True),  # found from the second copy on
        ("", False),
        ("1", False),
    ],
    "(\\w{1,50}\\s?){1,100}x": [  # unanchored: every copy's exit enters x (one test)
        ("x", False),
        ("ax", True),
        ("xx", True),
        (" x", False),
        ("a  x", False),
        ("!" * 20 + "ab cd x", True),
        ("ab cd", False),
        ("ab cd\tx", True),
    ],
}
# Node backtracks for minutes on these; counted instead: a copy takes at most 51 characters.
COUNTED_BY_HAND = [
    ("^(\\w{1,50}\\s?){1,100}$", "a" * 5001, False),
    ("^(\\w{1,50}\\s?){1,100}$", ("a" * 50 + " ") * 100 + "a", False),
    ("(\\w{1,50}\\s?){1,100}x", "a" * 6000 + "x", True),  # "ax" at the end
]


MANY_ENDINGS = (  # eleven ends moving to eleven starts, a hundred times over: 84 distances
    "(a|bc|def|ghij|klmno|pqrstu|vwxyzAB|CDEFGHIJ|KLMNOPQRS|TUVWXYZ012|345678901ab){1,100}!"
)


class TestCountedRepeats(unittest.TestCase):
    """Patterns past the DFA's 2,000 NFA states run on position sets from their second
    character; those whose sets would cost too much to build or to step are refused, quickly."""

    def test_verdicts_are_nodes(self) -> None:
        cases = [
            (p, text, verdict) for p, rows in COUNTED_PATTERNS.items() for text, verdict in rows
        ]
        for pattern, text, verdict in cases + COUNTED_BY_HAND:
            check = at.validator({"pattern": pattern})
            with self.subTest(pattern=pattern, text=text[:20], length=len(text)):
                self.assertEqual(accepted_by(check, text) is True, verdict)

    def test_they_run_on_position_sets_not_the_dfa(self) -> None:
        for pattern in COUNTED_PATTERNS:
            search = at._ecma_search(pattern)
            self.assertIsInstance(search, at._LinearSearch)
            self.assertTrue(search.direct, pattern)
            self.assertGreater(len(search.nfa.kind), 2000, pattern)
            self.assertIsNotNone(search.positions)
        exits = at._ecma_search("^([a-z]{2,8}-){1,300}[a-z]+$").positions
        self.assertEqual([len(moves) for moves in exits.moves], [1])  # the next letter
        self.assertEqual([len(blocks.layers) for blocks in exits.blocks], [1])  # to "-" by carry
        self.assertEqual([len(gathers) for gathers in exits.gathers], [2])  # to [a-z]+ by test
        words = at._ecma_search("(\\w{1,50}\\s?){1,100}x").positions
        self.assertEqual(len(words.members), 5101)
        self.assertEqual([len(moves) for moves in words.moves], [1])  # w to the next w
        carries = [len(blocks.layers) for blocks in words.blocks]  # to s, to the next copy, to x
        self.assertLessEqual(carries, [4])  # a few additions, not a hundred distances

    def test_small_patterns_run_directly_on_position_sets_as_on_the_dfa(self) -> None:
        """With the DFA limit at 0 every pattern takes the large patterns' path: same verdicts."""
        patterns = [  # and the characters of the strings tried on each
            ("^(\\w{1,5}\\s?){1,4}$", "ab _!"),
            ("([a-c]{2,4}-){1,6}[a-c]+!", "abc-!"),
            ("\\b([ab]{1,3}-){2,5}\\d", "ab-1 _"),
            ("(x|yz?){2,7}$|^a{3,}", "xyza"),
            ("((ab?){1,3}c?){1,4}!", "abc!"),
            ("[!?]*![!?]{3}#|\\b", "!?#a"),
        ]
        rnd = random.Random(5)
        for pattern, alphabet in patterns:
            plain = at._linear_search(at._EcmaParser(pattern).parse())
            with unittest.mock.patch.object(at, "_DFA_LIMIT", 0):
                direct = at._linear_search(at._EcmaParser(pattern).parse())
            self.assertTrue(direct.direct)
            verdicts = set()
            for _ in range(400):
                text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 24)))
                with self.subTest(pattern=pattern, text=text):
                    self.assertEqual(direct(text), plain(text))
                verdicts.add(plain(text))
            self.assertEqual(verdicts, {True, None}, pattern)

    def test_patterns_past_the_bounds_are_refused_quickly_saying_why(self) -> None:
        code = (
            f"for p in ['(a{{1,1000}}){{1,1000}}', 'x(a?){{3000}}b', {MANY_ENDINGS!r}]:\n"
            "    try:\n"
            "        at.validator({'pattern': p})\n"
            "        print('accepted')\n"
            "    except at.SchemaError as err:\n"
            "        print(str(err).split(': ', 1)[1])\n"
        )
        out = isolated(self, code, None)
        lines = out.splitlines()
        self.assertEqual(len(lines), 3, out)
        self.assertIn("more than 12,000 NFA states, its counted repeats written out", lines[0])
        self.assertIn("more than 1,000,000 NFA state visits to build", lines[1])
        self.assertIn("84 distances, 1 gathers and 0 carries: more than 500,000", lines[2])


if st is not None:
    regex_atoms = st.sampled_from(
        ["a", "b", "[ab]", "[^a]", ".", "\\w", "\\W", "\\s", "\\d", "\\b", "\\B", "^", "$", "x"]
    )

    def regex_compound(inner: Any) -> Any:
        quantifiers = st.sampled_from(["*", "+", "?", "{2}", "{0,2}", "{1,3}", "{2,}", "*?", "+?"])
        return (
            st.lists(inner, min_size=2, max_size=3).map("".join)
            | st.lists(inner, min_size=2, max_size=3).map(lambda xs: "(?:" + "|".join(xs) + ")")
            | st.tuples(inner, quantifiers).map(lambda t: f"(?:{t[0]}){t[1]}")
            | st.tuples(st.sampled_from(["(?=", "(?!"]), inner).map(lambda t: f"^{t[0]}{t[1]})")
        )

    random_regexes = st.recursive(regex_atoms, regex_compound, max_leaves=8)
    regex_texts = st.text(alphabet="ab x\n1é", max_size=12)


@needs(st is not None, "hypothesis is not installed")
class TestLinearMatcherAgreesWithRe(unittest.TestCase):
    """The lazy DFA and Python's re (on the translation) find the same matches."""

    def test_random_patterns_and_strings(self) -> None:
        @settings(max_examples=300 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
        @given(random_regexes, st.lists(regex_texts, min_size=1, max_size=6))
        def run(pattern: str, texts: list[str]) -> None:
            tree = at._EcmaParser(pattern).parse()
            python = re.compile(at._re_source(tree)).search
            for form in (tree, at._trim(tree)):
                try:
                    linear = at._linear_search(form)
                except at._Unsupported:  # a lookaround away from the start
                    return
                for text in texts:
                    self.assertEqual(
                        linear(text) is not None, python(text) is not None, f"{pattern!r} {text!r}"
                    )

        run()


# ---------------------------------------------------------------------------------------------
# Validators: validator(), Validator and JSON text
# ---------------------------------------------------------------------------------------------


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


class TestJsonTruths(unittest.TestCase):
    def test_true_is_not_an_integer_nor_a_number(self) -> None:
        self.assertTrue(error_of({"type": "integer"}, True))
        self.assertTrue(error_of({"type": "number"}, False))
        self.assertEqual(error_of({"type": "boolean"}, True), "")
        self.assertTrue(error_of({"type": "boolean"}, 1))

    def test_one_point_zero_is_an_integer_and_big_integers_are_fine(self) -> None:
        self.assertEqual(error_of({"type": "integer"}, 1.0), "")
        self.assertTrue(error_of({"type": "integer"}, 1.5))
        self.assertEqual(error_of({"type": "integer", "minimum": 10**30}, 10**40), "")
        self.assertEqual(at.validator({"type": "integer"}).validate_json("1" * 400), int("1" * 400))

    def test_json_equality(self) -> None:
        self.assertEqual(error_of({"enum": [1]}, 1.0), "")
        self.assertTrue(error_of({"enum": [1]}, True))
        self.assertTrue(error_of({"const": False}, 0))
        self.assertTrue(error_of({"const": {"a": False}}, {"a": 0}))
        self.assertEqual(error_of({"const": {"a": [1]}}, {"a": [1.0]}), "")

    def test_deep_json_text_is_a_validation_error(self) -> None:
        text = "[" * 100_000 + "]" * 100_000
        for schema in ({}, {"type": "array"}):
            self.assertEqual(error_of_json(schema, text), "invalid arguments: nesting too deep")
        text = '{"a":' * 100_000 + "1" + "}" * 100_000
        self.assertEqual(error_of_json({}, text.encode()), "invalid arguments: nesting too deep")

    def test_deep_python_values_are_a_validation_error(self) -> None:
        value = nested(100_000)
        deep = "invalid arguments: nesting too deep"
        self.assertEqual(
            error_of(
                {"$ref": "#/$defs/a", "$defs": {"a": {"items": {"$ref": "#/$defs/a"}}}}, value
            ),
            deep,
        )
        self.assertEqual(error_of({"items": {"$ref": "#"}}, value), deep)
        self.assertEqual(error_of({"enum": [1]}, value), deep)
        self.assertEqual(error_of({"uniqueItems": True}, [value, 1]), deep)
        self.assertEqual(error_of({}, value), "")  # nothing to check: nothing walked

    def test_nan_and_infinity_are_not_json(self) -> None:
        for text in ("NaN", "[Infinity]", '{"a": -Infinity}'):
            self.assertEqual(
                error_of_json({}, text).split(":")[:2], ["invalid arguments", " not valid JSON"]
            )
        self.assertIn("NaN is not a JSON number", error_of_json({}, "NaN"))

    def test_invalid_json(self) -> None:
        for text in ("", "{", "[1,]", "{'a': 1}", "1 2", b"\xff\xfe\x00"):
            self.assertTrue(
                error_of_json({}, text).startswith("invalid arguments: not valid JSON: "), text
            )

    def test_validate_json_returns_the_parsed_value_from_str_or_bytes(self) -> None:
        check = at.validator(READ_FILE)
        self.assertEqual(check.validate_json('{"path": "p"}'), {"path": "p"})
        self.assertEqual(check.validate_json(b'{"path": "\xc3\xa9"}'), {"path": "\u00e9"})
        self.assertEqual(check.validate_json('{"path": "p"}'.encode("utf-16")), {"path": "p"})
        self.assertEqual(
            error_of_json(READ_FILE, b'{"path": 1}'),
            "invalid arguments: path: expected string, got 1",
        )

    def test_validator_keeps_the_schema_and_compiles_equal_schemas_once(self) -> None:
        schema = {"type": "string"}
        first, second = at.validator(schema), at.validator(dict(schema))
        self.assertIs(first.schema, schema)
        self.assertIs(first.validate, second.validate)


class TestHostileJsonText(unittest.TestCase):
    """validate_json and tool arguments: JSON as JSON means it, refused with a clear message."""

    def refused(self, text: str, *needles: str, schema: Any = None) -> str:
        with self.assertRaises(at.ValidationError) as caught:
            at.validator({} if schema is None else schema).validate_json(text)
        for needle in needles:
            self.assertIn(needle, str(caught.exception))
        return str(caught.exception)

    def test_overflowing_numbers_are_not_finite(self) -> None:
        self.refused("1e400", "not valid JSON", "1e400", schema={"type": "number"})
        self.refused("-1e400", "1e400", schema={"maximum": 0})
        self.refused('{"a": [1, 2.5E+999]}', "2.5E+999")
        self.refused("1" * 400 + ".0", "not a finite number")
        self.assertEqual(at.validator({}).validate_json("1e308"), 1e308)

    def test_an_integer_too_long_is_said_in_json_terms(self) -> None:
        if not hasattr(sys, "get_int_max_str_digits"):
            self.skipTest("this Python has no integer digit limit")
        message = self.refused("5" * 5000, "not valid JSON", "digits")
        self.assertNotIn("set_int_max_str_digits", message)
        message = self.refused('{"n": -' + "9" * 4400 + "}", "digits")
        self.assertNotIn("sys.", message)

    def test_duplicate_keys_are_refused_naming_the_key(self) -> None:
        self.refused('{"a": 1, "a": 2}', "not valid JSON", 'duplicate key "a"')
        self.refused('[{"x": {"b": 1, "c": 2, "b": 3}}]', 'duplicate key "b"')
        self.assertEqual(at.validator({}).validate_json('{"a": {"a": 1}}'), {"a": {"a": 1}})

    def test_duplicate_keys_in_tool_arguments(self) -> None:
        def greet(name: str) -> str:
            return "hi " + name

        with self.assertRaises(at.ValidationError) as caught:
            at.tool(greet).execute(at.Call("1", '{"name": "a", "name": "b"}'))
        self.assertIn('duplicate key "name"', str(caught.exception))


class TestNonJsonKeys(unittest.TestCase):
    def test_values_with_keys_that_are_not_strings_are_refused(self) -> None:
        closed = {"type": "object", "properties": {"a": {}}, "additionalProperties": False}
        for schema in (
            closed,
            {"properties": {"a": {"type": "string"}}, "additionalProperties": False},
            {"additionalProperties": {"type": "string"}},
            {"patternProperties": {"^a": {"type": "integer"}}},
            {"propertyNames": {"maxLength": 3}},
        ):
            for value in ({1: "x"}, {"b": "y", 2: 3}, {2: 3, "b": "y"}):
                message = error_of(schema, value)
                self.assertIn("is not a string", message, (schema, value))

    def test_schemas_that_are_not_json_are_refused(self) -> None:
        self.assertIn("not a string", schema_error_of({"properties": {1: {"type": "string"}}}))
        self.assertIn("not a string", schema_error_of({"type": "object", 3: {}}))
        self.assertIn("#/const", schema_error_of({"const": {(1, 2): 1}}))
        self.assertIn("not JSON", schema_error_of({"const": {1, 2}}))
        self.assertIn("not JSON", schema_error_of({"maximum": float("inf")}))
        deep: Any = {"items": (1,)}
        for _ in range(100_000):
            deep = {"items": deep}
        self.assertIn("nested too deeply", schema_error_of(deep))

    def test_one_answer_per_schema_whatever_compiled_before(self) -> None:
        self.assertIn("#/enum", schema_error_of({"enum": (1, 2)}))
        at.validator({"enum": [1, 2]})
        self.assertIn("#/enum", schema_error_of({"enum": (1, 2)}))
        at.validator({"properties": {"1": {"type": "string"}}})
        self.assertTrue(schema_error_of({"properties": {1: {"type": "string"}}}))
        at.validator({"required": ["a"]})
        self.assertTrue(schema_error_of({"required": ("a",)}))


class TestCompiledOnFirstUse(unittest.TestCase):
    """A validator's Python is compiled when it first runs; its source and its errors as a
    schema are there at once."""

    def test_the_source_is_there_before_and_the_verdicts_after(self) -> None:
        schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}}
        check = at.validator({**schema, "title": "first use"})
        self.assertIn("def validate(x):", check.source)
        self.assertIn("v1 < 3", check.source)
        with self.assertRaisesRegex(at.ValidationError, "invalid arguments: n: "):
            check.validate({"n": 1})  # the first call compiles, then answers
        self.assertIsNone(check.validate({"n": 4}))
        with self.assertRaisesRegex(at.SchemaError, '"minimum"'):
            at.validator({"minimum": "three"})  # refused when made, not on first use

    def test_threads_using_a_fresh_validator_at_once_all_get_its_verdicts(self) -> None:
        for round_ in range(20):
            check = at.validator(
                {"type": "array", "items": {"type": "string"}, "title": str(round_)}
            )
            start, verdicts = threading.Barrier(8), []

            def use(
                check: at.Validator = check,
                start: threading.Barrier = start,
                verdicts: list[bool] = verdicts,
            ) -> None:
                start.wait()
                for value in (["a"], [1], ["b", "c"]):
                    try:
                        check.validate(value)
                        verdicts.append(True)
                    except at.ValidationError:
                        verdicts.append(False)

            at_once(8, use)
            self.assertEqual(sorted(verdicts), [False] * 8 + [True] * 16)


# ---------------------------------------------------------------------------------------------
# Results and content parts
# ---------------------------------------------------------------------------------------------


class TestResults(unittest.TestCase):
    def test_return_values_become_what_the_model_sees(self) -> None:
        when = datetime.datetime(2024, 1, 2, 3, 4, 5)
        cases: list[tuple[Any, Any]] = [
            ("hi", "hi"),
            (None, ""),
            (at.text("as is"), "as is"),
            ({"doubled": 4}, '{"doubled":4}'),
            (XY(1, 2), '{"x":1,"y":2}'),
            (Paint.RED, '"red"'),
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
        self.assertEqual(
            at.error_result(crash).output, 'Error: tool "panics" crashed: SystemExit: oh no'
        )


class Pair(NamedTuple):
    left: float
    right: int


@dataclasses.dataclass
class Recorded:
    ratio: float
    pair: Pair
    record_ns = "test:ratio"


@dataclasses.dataclass
class FieldNamespace:
    value: int
    record_ns: str = "test:field"


class TestOutputEncoding(unittest.TestCase):
    """One encoder for outputs and records: a NamedTuple is an object, NaN and infinity null."""

    def test_non_finite_floats_are_null_in_outputs(self) -> None:
        value = {"v": float("nan"), "w": [1.5, float("inf"), -float("inf")], "n": (float("nan"),)}
        self.assertEqual(at.output(value).output, '{"v":null,"w":[1.5,null,null],"n":[null]}')
        self.assertEqual(at.output(float("inf")).output, "null")

        @dataclasses.dataclass
        class Stats:
            mean: float

        self.assertEqual(at.output([Stats(float("nan"))]).output, '[{"mean":null}]')

    def test_a_named_tuple_is_returned_as_the_object_it_is_taken_in_as(self) -> None:
        self.assertEqual(at.output(Pair(0.5, 2)).output, '{"left":0.5,"right":2}')
        self.assertEqual(
            at.output({"pairs": [Pair(1.0, 1)], "set": {Color.RED}}).output,
            '{"pairs":[{"left":1.0,"right":1}],"set":[1]}',
        )
        self.assertEqual(at.decode(Pair, json.loads(at.output(Pair(0.5, 2)).output)), Pair(0.5, 2))

        @at.tool
        def pair() -> Pair:
            return Pair(float("nan"), 1)

        self.assertEqual(pair.execute(at.Call("1")).output, '{"left":null,"right":1}')

    def test_a_record_ns_field_names_the_record_and_stays_out_of_its_data(self) -> None:
        self.assertEqual(at.record_of(FieldNamespace(1)), at.Record("test:field", '{"value":1}'))
        self.assertEqual(
            at.record_of(FieldNamespace(2, "other:kind")), at.Record("other:kind", '{"value":2}')
        )

    def test_an_empty_list_is_the_json_array_not_empty_parts(self) -> None:
        self.assertEqual(at.output([]).output, "[]")
        self.assertEqual(at.output(()).output, "[]")
        self.assertEqual(at.output([{"type": "text"}, 1]).output, '[{"type":"text"},1]')

    def test_records_use_the_same_encoder(self) -> None:
        record = at.record_of(Recorded(float("inf"), Pair(float("nan"), 3)))
        self.assertEqual(
            record, at.Record("test:ratio", '{"ratio":null,"pair":{"left":null,"right":3}}')
        )


# ---------------------------------------------------------------------------------------------
# Failures: the one message the model sees
# ---------------------------------------------------------------------------------------------


class TestErrorPolicy(unittest.TestCase):
    SECRET = "postgres://admin:hunter2@db/prod"

    def setUp(self) -> None:
        secret = self.SECRET

        @at.tool
        def connect() -> str:
            """Connect."""
            raise ConnectionError(f"cannot reach {secret}")

        @at.tool
        def explain(n: int) -> str:
            """Explain."""
            raise at.ToolError("n must be even; try 2")

        self.tools = at.ToolSet([connect, explain])

    def outputs(self, **options: Any) -> list[str]:
        calls = [
            responses_call("1", "connect", {}),
            responses_call("2", "explain", {"n": 1}),
            responses_call("3", "explain", {"n": "one"}),
            responses_call("4", "missing", {}),
        ]
        return [o["output"] for o in self.tools.run(calls, **options)]

    def test_the_default_shows_the_message_as_the_contract_says(self) -> None:
        self.assertIn(self.SECRET, self.outputs()[0])

    def test_redacted_hides_the_message_and_keeps_the_exception_for_the_host(self) -> None:
        for options in ({"errors": "redacted"}, {"executor": at.Executor(errors="redacted")}):
            out = self.outputs(**options)
            self.assertEqual(out[0], 'Error: tool "connect" failed')
            self.assertEqual(out[1], "Error: n must be even; try 2")
            self.assertTrue(out[2].startswith("Error: invalid arguments: n: expected integer"))
            self.assertTrue(out[3].startswith('Error: no tool named "missing"'))
            self.assertNotIn("hunter2", "".join(out))
        job = at.Job(self.tools.lookup("connect"), at.Call("1", "{}"))
        event = finals(list(at.Executor(errors="redacted").execute([job])))[0]
        self.assertIsInstance(event.error, at.ToolError)
        self.assertIsInstance(event.error.__cause__, ConnectionError)
        self.assertIn("hunter2", str(event.error.__cause__))

    def test_a_policy_function_writes_the_message_and_falls_back_when_it_fails(self) -> None:
        out = self.outputs(errors=lambda exc: f"{type(exc).__name__}, try later")
        self.assertEqual(out[0], "Error: ConnectionError, try later")
        self.assertEqual(out[1], "Error: n must be even; try 2")
        prefixed = self.outputs(errors=lambda exc: "Error: busy")
        self.assertEqual(prefixed[0], "Error: busy")

        def broken(exc: BaseException) -> str:
            raise RuntimeError(str(exc))

        for policy in (broken, lambda exc: None):
            self.assertEqual(self.outputs(errors=policy)[0], 'Error: tool "connect" failed')

    def test_a_crash_is_redacted_too(self) -> None:
        def crash(call: at.Call) -> str:
            raise SystemExit("secret exit code 7")

        job = at.Job(raw(crash, "crash"), at.Call("1", "{}"))
        event = finals(list(at.Executor(errors="redacted").execute([job])))[0]
        self.assertEqual(at.error_message(event.error), 'tool "crash" failed')

    def test_an_unknown_policy_is_refused_at_once(self) -> None:
        for bad in ("verbose", "", 3, True):
            with self.assertRaises(ValueError):
                at.Executor(errors=bad)
            with self.assertRaises(ValueError):
                self.tools.run([], errors=bad)


# ---------------------------------------------------------------------------------------------
# Calls and the call's context: progress, records, elicitation, cancellation
# ---------------------------------------------------------------------------------------------


class Empty:
    record_ns = ""


class Bad:
    record_ns = "a:b"


class TestCallContext(unittest.TestCase):
    def test_context_readers_are_no_ops_outside_a_call(self) -> None:
        self.assertIsNone(at.current_call())
        at.progress("ignored")
        at.write_record(Rec("c1"))
        self.assertFalse(at.cancelled())
        self.assertFalse(at.cancel_event().is_set())
        self.assertIs(at.elicit(at.Elicitation("sure?")).action, at.Action.CANCEL)

    def test_a_tool_reaches_its_call(self) -> None:
        seen: list[Optional[at.Call]] = []
        t = raw(lambda c: seen.append(at.current_call()) or "")
        call = at.Call("call_1", "{}")
        at.Executor().results([at.Job(t, call)])
        t.execute(call)
        self.assertEqual(seen, [call, call])

    def test_progress_outside_an_executor_goes_to_the_calls_on_update(self) -> None:
        updates: list[at.Result] = []
        t = raw(lambda c: at.progress("half", progress=1, total=2) or "done")
        t.execute(at.Call("1", "", on_update=updates.append))
        self.assertEqual(updates, [at.Result("half", at.ProgressInfo(1, 2, None))])

    def test_progress_arrives_as_non_final_events_in_order_and_chains_to_on_update(self) -> None:
        def two(c: at.Call) -> str:
            at.progress("1")
            at.progress(at.text("2"))
            return "done"

        chained: list[Any] = []
        call = at.Call("c", on_update=lambda r: chained.append(r.output))
        events = list(at.Executor().execute([at.Job(raw(two), call)]))
        self.assertEqual(
            [(e.final, e.result.output) for e in events if e.result],
            [(False, "1"), (False, "2"), (True, "done")],
        )
        self.assertEqual(chained, ["1", "2"])

    def test_progress_after_the_final_result_is_dropped(self) -> None:
        late: list[Any] = []

        def leaves_a_thread(c: at.Call) -> str:
            ctx = __import__("contextvars").copy_context()
            release = threading.Event()
            thread = threading.Thread(target=lambda: (release.wait(), ctx.run(at.progress, "late")))
            thread.start()
            late.append((thread, release))
            return "done"

        other_may_end = threading.Event()

        def still_running(c: at.Call) -> str:
            other_may_end.wait(10)
            return "other"

        jobs = [
            at.Job(raw(leaves_a_thread), at.Call("c")),
            at.Job(raw(still_running), at.Call("o")),
        ]
        events = []
        for e in at.Executor().execute(jobs):
            events.append(e)
            if e.index == 0 and e.final:
                # The executor is still reading events for job 1 while the late progress comes.
                thread, release = late[0]
                release.set()
                thread.join()
                other_may_end.set()
        self.assertEqual([(e.index, e.final) for e in events], [(0, True), (1, True)])

    def test_records(self) -> None:
        self.assertIsNone(at.record_of(None))
        self.assertIsNone(at.record_of(at.ProgressInfo(1)))
        self.assertIsNone(at.record_of({"plain": 1}))
        made_elsewhere = at.Record("remote:thing", '{"a":9007199254740993}')
        self.assertEqual(at.record_of(made_elsewhere), made_elsewhere)
        self.assertEqual(
            at.record_of(Rec("c1")), at.Record("shell:container", '{"container":"c1"}')
        )
        with self.assertRaisesRegex(ValueError, "agenttool: record Empty: empty namespace"):
            at.record_of(Empty())
        with self.assertRaisesRegex(ValueError, "agenttool: record Bad: cannot encode"):
            at.record_of(Bad())

    def test_write_record_reaches_the_recorder_while_the_tool_runs(self) -> None:
        seen: list[tuple[str, at.Record]] = []
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
        asked: list[str] = []

        def elicitor(q: at.Elicitation) -> at.Answer:
            asked.append(q.message)
            return at.Answer(at.Action.ACCEPT, {"ok": True})

        t = raw(lambda c: json.dumps(at.elicit(at.Elicitation("proceed?")).content))
        results, _ = at.Executor(elicitor=elicitor).results([at.Job(t, at.Call("1"))])
        self.assertEqual((asked, results[0].output), (["proceed?"], '{"ok": true}'))  # type: ignore[union-attr]
        results, _ = at.Executor().results([at.Job(t, at.Call("1"))])
        self.assertEqual(results[0].output, "null")  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------
# Tools and their properties
# ---------------------------------------------------------------------------------------------


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
        t = HandWritten()
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
        hand = HandWritten()
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
            args = (built, {}) if reader in ARG_READERS else (built,)
            hand_args = (hand, {}) if reader in ARG_READERS else (hand,)
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


@dataclasses.dataclass
class Move:
    to: XY
    speed: float = 1.0


class TestBuildingTools(unittest.TestCase):
    def test_the_decorated_function_is_still_the_plain_function(self) -> None:
        self.assertEqual(read_file_tool("/etc/hosts", 5), "/etc/hosts:5")
        self.assertEqual(read_file_tool.__name__, "read_file_tool")
        self.assertEqual(read_file_tool.name, "read_file")
        self.assertEqual(read_file_tool.description, "Read a file from disk.")

    def test_the_definition_follows_the_corpus(self) -> None:
        path = os.path.join(CORPUS, "read_file.json")
        if not os.path.exists(path):
            absent("../shared/conformance is not beside the repository")
        with open(path, encoding="utf-8") as f:
            self.assertEqual(read_file_tool.parameters, json.load(f))

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
        ran: list[Any] = []

        @at.tool
        def when(day: datetime.date, color: Paint, tags: set[str] = frozenset()) -> str:  # type: ignore[assignment]
            ran.append((day, color, tags))
            return "ok"

        self.assertEqual(
            when.execute(
                at.Call("1", '{"day": "2024-01-02", "color": "red", "tags": ["a"]}')
            ).output,
            "ok",
        )
        self.assertEqual(ran, [(datetime.date(2024, 1, 2), Paint.RED, {"a"})])
        for args, message in [
            ('{"day": "2024-01-02"}', 'invalid arguments: missing required property "color"'),
            ('{"day": 3, "color": "red"}', "invalid arguments: day: expected string, got 3"),
            (
                '{"day": "2024-01-02", "color": "blue"}',
                'invalid arguments: color: expected one of ["red"], got "blue"',
            ),
            (
                '{"day": "2024-01-02", "color": "red", "colour": 1}',
                'invalid arguments: unexpected property "colour"',
            ),
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
            read_file_tool.execute(at.Call("1", ""))
        self.assertEqual(
            str(caught.exception), 'invalid arguments: missing required property "path"'
        )

    def test_invalid_arguments_reach_the_model_as_an_error_and_never_the_function(self) -> None:
        results, errors = at.Executor().results(
            [at.Job(read_file_tool, at.Call("1", '{"path": 1}'))]
        )
        self.assertIsNone(results[0])
        self.assertEqual(
            at.error_result(errors[0]).output,
            "Error: invalid arguments: path: expected string, got 1",
        )  # type: ignore[arg-type]

    def test_a_single_dataclass_parameter_is_a_property_unless_struct_is_asked(self) -> None:
        def move(to: XY) -> str:
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

    def test_a_type_that_cannot_be_expressed_fails_at_registration_naming_the_parameter(
        self,
    ) -> None:
        def bad(opts: dict[int, str]) -> None: ...

        with self.assertRaisesRegex(TypeError, "opts"):
            at.tool(bad)

    def test_a_raw_tool_validates_only_when_asked(self) -> None:
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        loose = at.new_func("loose", "", schema, lambda call: "ran")
        self.assertEqual(loose.execute(at.Call("1", '{"n": "x"}')).output, "ran")
        checked = at.new_func("checked", "", schema, lambda call: "ran", validate=True)
        with self.assertRaisesRegex(at.ValidationError, 'n: expected integer, got "x"'):
            checked.execute(at.Call("1", '{"n": "x"}'))
        with self.assertRaisesRegex(at.SchemaError, "strng"):
            at.new_func("bad", "", {"type": "strng"}, lambda call: "", validate=True)

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
        async def fetch(url: str) -> dict[str, str]:
            await asyncio.sleep(0)
            return {"url": url}

        self.assertEqual(fetch.execute(at.Call("1", '{"url": "x"}')).output, '{"url":"x"}')


class TestBuiltToolDefaults(unittest.TestCase):
    def test_a_built_tool_without_confined_reads_unconfined(self) -> None:
        def f() -> str:
            return ""

        for t in (
            at.tool(f),
            at.new("g", "", f),
            at.new_func("h", "", None, lambda call: ""),
            at.new("c", "", f, closer=lambda: None),
        ):
            self.assertEqual(at.confined_by(t, {}), (False, ""), t.name)
            self.assertEqual(at.confined_by(t, {"x": 1}), (False, ""), t.name)
        confined = at.new("k", "", f, confined=lambda args: (True, "landlock"))
        self.assertEqual(at.confined_by(confined, {}), (True, "landlock"))


class TestMethodTools(unittest.TestCase):
    def test_tool_on_a_method_says_what_works_instead(self) -> None:
        with self.assertRaises(TypeError) as caught:

            class Files:
                @at.tool
                def read(self, path: str) -> str:
                    return path

        message = str(caught.exception)
        self.assertIn("agenttool.tool(instance.read)", message)
        self.assertIn("@staticmethod", message)
        self.assertNotIn("self: Any", message)

        with self.assertRaisesRegex(TypeError, r"agenttool.tool\(Files.make\)"):

            class Files:  # type: ignore[no-redef]
                @at.tool
                def make(cls, path: str) -> str:
                    return path

    def test_what_the_advice_says_works(self) -> None:
        class Files:
            def __init__(self, root: str) -> None:
                self.root = root
                self.read_tool = at.tool(self.read)

            def read(self, path: str) -> str:
                return self.root + path

            @staticmethod
            @at.tool
            def size(path: str) -> int:
                return len(path)

        files = Files("/srv/")
        self.assertEqual(list(files.read_tool.parameters["properties"]), ["path"])  # type: ignore[index]
        self.assertEqual(files.read_tool.execute(at.Call("1", {"path": "a"})).output, "/srv/a")
        self.assertEqual(Files.size.execute(at.Call("1", {"path": "abc"})).output, "3")


# What the model can reach: bound, injected and supplied parameters.
def _read_under(path: str, root: str = "/", mode: str = "text") -> str:
    """Read a file under a root."""
    return f"{root}|{path}|{mode}"


def _read_any(path: str, **more: Any) -> str:
    return f"{path}|{sorted(more.items())}"


class TestPartialParameters(unittest.TestCase):
    def test_a_keyword_bound_by_partial_is_not_in_the_schema_and_is_refused(self) -> None:
        t = at.tool(functools.partial(_read_under, root="/srv/safe"), name="read")
        for strict in (False, True):
            schema = at.schema_of(functools.partial(_read_under, root="/srv"), strict=strict)
            self.assertEqual(list(schema["properties"]), ["path", "mode"])
        self.assertEqual(list(t.parameters["properties"]), ["path", "mode"])  # type: ignore[index]
        self.assertEqual(t.execute(at.Call("1", {"path": "a"})).output, "/srv/safe|a|text")
        with self.assertRaises(at.ValidationError) as caught:
            t.execute(at.Call("1", {"path": "a", "root": "/"}))
        self.assertEqual(str(caught.exception), 'invalid arguments: unexpected property "root"')

    def test_a_bound_keyword_is_refused_even_where_kwargs_takes_unknown_names(self) -> None:
        t = at.tool(functools.partial(_read_any, root="/srv"), name="read")
        self.assertEqual(list(t.parameters["properties"]), ["path"])  # type: ignore[index]
        self.assertEqual(
            t.execute(at.Call("1", {"path": "a", "x": 1})).output, "a|[('root', '/srv'), ('x', 1)]"
        )
        with self.assertRaisesRegex(at.ValidationError, 'unexpected property "root"$'):
            t.execute(at.Call("1", {"path": "a", "root": "/"}))

    def test_a_partial_is_named_and_described_by_its_function(self) -> None:
        t = at.tool(functools.partial(_read_under, root="/srv/safe"))
        self.assertEqual((t.name, t.description), ("_read_under", "Read a file under a root."))
        self.assertEqual(t.execute(at.Call("1", {"path": "a"})).output, "/srv/safe|a|text")

    def test_partials_of_partials_and_positional_binding(self) -> None:
        inner = functools.partial(_read_under, "fixed.txt")
        t = at.tool(functools.partial(inner, mode="bytes"), name="read")
        self.assertEqual(list(t.parameters["properties"]), ["root"])  # type: ignore[index]
        self.assertEqual(t.execute(at.Call("1", {"root": "/r"})).output, "/r|fixed.txt|bytes")
        for sent in ({"mode": "text"}, {"path": "other"}):
            with self.assertRaisesRegex(at.ValidationError, "unexpected property"):
                t.execute(at.Call("1", sent))


class TestSuppliedSchemas(unittest.TestCase):
    SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}

    def test_a_name_the_schema_does_not_give_is_refused_validated_or_not(self) -> None:
        for validate in (False, True):
            t = at.new("read", "", _read_under, parameters=self.SCHEMA, validate=validate)
            self.assertEqual(t.execute(at.Call("1", {"path": "a"})).output, "/|a|text")
            for sent, name in (({"path": "a", "root": "/etc"}, "root"), ({"zz": 1, "a": 2}, "a")):
                with self.assertRaises(at.ValidationError) as caught:
                    t.execute(at.Call("1", sent))
                self.assertEqual(
                    str(caught.exception), f'invalid arguments: unexpected property "{name}"'
                )

    def test_kwargs_take_unknown_names_only_where_the_schema_leaves_them_open(self) -> None:
        opened = at.new("read", "", _read_any, parameters=self.SCHEMA)
        self.assertEqual(opened.execute(at.Call("1", {"path": "a", "x": 1})).output, "a|[('x', 1)]")
        closed = at.new(
            "read", "", _read_any, parameters={**self.SCHEMA, "additionalProperties": False}
        )
        with self.assertRaisesRegex(at.ValidationError, 'unexpected property "x"$'):
            closed.execute(at.Call("1", {"path": "a", "x": 1}))

    def test_a_schema_naming_what_the_function_cannot_take_fails_at_registration(self) -> None:
        def read(path: str) -> str:
            return path

        schema = {"type": "object", "properties": {"path": {}, "root": {}}}
        with self.assertRaisesRegex(TypeError, 'names "root", which the function does not take'):
            at.new("read", "", read, parameters=schema)

        def query(path: str, root: Annotated[str, at.Inject("root")]) -> str:
            return path

        with self.assertRaisesRegex(TypeError, 'names "root", a parameter the host fills'):
            at.new("read", "", query, parameters=schema)

    def test_a_supplied_schema_still_injects(self) -> None:
        def query(path: str, root: Annotated[str, at.Inject("root")], call: at.Call) -> str:
            return f"{root}{path} for {call.id}"

        t = at.new("q", "", query, parameters=self.SCHEMA)
        results, _ = at.Executor(inject={"root": "/srv/"}).results(
            [at.Job(t, at.Call("c1", {"path": "a"}))]
        )
        self.assertEqual(results[0].output, "/srv/a for c1")  # type: ignore[union-attr]
        _, errors = at.Executor(inject={"root": "/srv/"}).results(
            [at.Job(t, at.Call("c1", {"path": "a", "call": 1}))]
        )
        self.assertEqual(str(errors[0]), 'invalid arguments: unexpected property "call"')


@dataclasses.dataclass
class _Query:
    sql: str
    limit: int = 10


def _run_query(
    sql: Annotated[str, "The query"],
    db: Annotated[dict[str, Any], at.Inject("db")],
    call: at.Call,
    user: Annotated[str, at.Inject("user")] = "nobody",
) -> str:
    """Run a query.

    Args:
        sql: The SQL.
        db: The database (the host's).
    """
    return f"{db['name']}:{sql} as {user} for {call.id}"


class TestInjectedParameters(unittest.TestCase):
    def setUp(self) -> None:
        self.query = at.tool(_run_query)

    def run_one(self, t: Any, args: Any, **executor: Any) -> tuple[Any, Any]:
        results, errors = at.Executor(**executor).results([at.Job(t, at.Call("c1", args))])
        return results[0], errors[0]

    def test_injected_parameters_are_in_no_schema(self) -> None:
        self.assertEqual(list(self.query.parameters["properties"]), ["sql"])  # type: ignore[index]
        for strict in (False, True):
            schema = at.schema_of(_run_query, strict=strict)
            self.assertEqual(list(schema["properties"]), ["sql"])
            self.assertNotIn("db", json.dumps(schema))
        for fmt in at._FORMATS:
            self.assertNotIn('"db"', json.dumps(at.definition(self.query, fmt)))

    def test_the_call_and_the_hosts_values_reach_the_function(self) -> None:
        result, error = self.run_one(self.query, {"sql": "select"}, inject={"db": {"name": "main"}})
        self.assertIsNone(error)
        self.assertEqual(result.output, "main:select as nobody for c1")
        result, _ = self.run_one(
            self.query, {"sql": "s"}, inject={"db": {"name": "m"}, "user": "ana"}
        )
        self.assertEqual(result.output, "m:s as ana for c1")

    def test_toolset_run_gives_values_over_the_executors(self) -> None:
        tools = at.ToolSet([self.query])
        item = {"type": "function_call", "call_id": "c9", "name": "_run_query", "arguments": "{}"}
        item["arguments"] = '{"sql": "s"}'
        out = tools.run([item], inject={"db": {"name": "run"}})
        self.assertEqual(out[0]["output"], "run:s as nobody for c9")
        executor = at.Executor(inject={"db": {"name": "exec"}, "user": "ex"})
        out = tools.run([item], executor=executor, inject={"db": {"name": "run"}})
        self.assertEqual(out[0]["output"], "run:s as ex for c9")
        self.assertEqual(tools.run([item], executor=executor)[0]["output"], "exec:s as ex for c9")
        # arun gives its values the same way, to sync and async tools alike
        out = asyncio.run(tools.arun([item], executor=executor, inject={"db": {"name": "run"}}))
        self.assertEqual(out[0]["output"], "run:s as ex for c9")

        @at.tool
        async def whose(db: Annotated[Any, at.Inject("db")]) -> str:
            return str(db["name"])

        async_item = {**item, "name": "whose", "arguments": "{}"}
        out = asyncio.run(at.ToolSet([whose]).arun([async_item], inject={"db": {"name": "a"}}))
        self.assertEqual(out[0]["output"], "a")

    def test_a_missing_value_fails_with_a_message_for_the_host_not_the_model(self) -> None:
        ran: list[int] = []

        @at.tool
        def needs_db(db: Annotated[Any, at.Inject("db")]) -> str:
            ran.append(1)
            return "ran"

        result, error = self.run_one(needs_db, {}, inject={"other": 1})
        self.assertIsNone(result)
        self.assertEqual(ran, [])
        model_sees = at.error_result(error).output
        self.assertEqual(
            model_sees, 'Error: tool "needs_db" is not available: its host has not configured it'
        )
        self.assertNotIn("db", model_sees.replace("needs_db", ""))
        self.assertIsInstance(error.__cause__, LookupError)
        self.assertIn('Executor(inject={"db": ...})', str(error.__cause__))
        self.assertIn("ToolSet.run(..., inject=", str(error.__cause__))

    def test_a_model_sending_an_injected_name_is_refused_like_any_unknown_property(self) -> None:
        @at.tool
        def loose(path: str, db: Annotated[Any, at.Inject("db")], **more: Any) -> str:
            return f"{db} {more}"

        for t, args, name in (
            (self.query, {"sql": "s"}, "db"),
            (self.query, {"sql": "s"}, "call"),
            (self.query, {"sql": "s"}, "user"),
            (loose, {"path": "p"}, "db"),
        ):
            _, error = self.run_one(t, {**args, name: "x"}, inject={"db": {"name": "m"}})
            self.assertEqual(str(error), f'invalid arguments: unexpected property "{name}"')
        result, _ = self.run_one(loose, {"path": "p", "extra": 2}, inject={"db": 1})
        self.assertEqual(result.output, "1 {'extra': 2}")

    def test_injected_names_appear_in_no_error_message(self) -> None:
        for args in ({}, {"sql": 1}, {"sql": "s", "zz": 1}):
            _, error = self.run_one(self.query, args, inject={"db": {"name": "m"}})
            self.assertIsInstance(error, at.ValidationError)
            for hidden in ("db", "call", "user", "Inject"):
                self.assertNotIn(hidden, str(error))

    def test_outside_an_executor_the_call_is_still_injected(self) -> None:
        @at.tool
        async def who(call: Optional[at.Call] = None) -> str:
            return call.id if call else "none"

        self.assertEqual(who.parameters["properties"], {})  # type: ignore[index]
        self.assertEqual(who.execute(at.Call("direct")).output, "direct")

    def test_the_struct_form_takes_injected_parameters_too(self) -> None:
        def query(q: _Query, call: at.Call, db: Annotated[str, at.Inject("db")]) -> str:
            return f"{db}:{q.sql}:{q.limit}:{call.id}"

        t = at.new("query", "", query, struct=True)
        self.assertEqual(list(t.parameters["properties"]), ["sql", "limit"])  # type: ignore[index]
        result, _ = self.run_one(t, {"sql": "s"}, inject={"db": "D"})
        self.assertEqual(result.output, "D:s:10:c1")
        _, error = self.run_one(t, {"sql": "s", "db": "x"}, inject={"db": "D"})
        self.assertEqual(str(error), 'invalid arguments: unexpected property "db"')

    def test_inject_needs_a_key_and_a_parameter_passable_by_name(self) -> None:
        with self.assertRaises(TypeError):
            at.Inject("")

        def positional(db: Annotated[Any, at.Inject("db")], /) -> None: ...

        with self.assertRaisesRegex(TypeError, 'parameter "db": an injected parameter'):
            at.tool(positional)

        def opaque(conn: Annotated[Opaque, at.Inject("conn")]) -> str:
            return type(conn).__name__

        t = at.tool(opaque)  # a type no schema can express is fine: the host gives the value
        self.assertEqual(t.parameters["properties"], {})  # type: ignore[index]
        result, _ = self.run_one(t, {}, inject={"conn": Opaque()})
        self.assertEqual(result.output, "Opaque")
        self.assertIn("Inject", at.__all__)


# Structured results: output schemas from return hints.
@dataclasses.dataclass
class _Point:
    x: int
    label: str = "origin"
    tags: list[str] = dataclasses.field(default_factory=list)


class _Totals(TypedDict):
    count: int
    mean: Optional[float]


def _point(x: int) -> _Point:
    """A point."""
    return _Point(x, tags=["a"])


def _totals(n: int) -> _Totals:
    """Totals."""
    return {"count": n, "mean": None}


def _squares(n: int) -> list[int]:
    """Squares."""
    return [i * i for i in range(n)]


def _half(n: int) -> float:
    """Half."""
    return n / 2


def _maybe_point(x: int) -> Optional[_Point]:
    """A point, or none for 0."""
    return _Point(x) if x else None


async def _async_point(x: int) -> _Point:
    """A point, later."""
    return _Point(x)


def _words(n: int) -> str:
    """Text."""
    return "w" * n


def _made(n: int) -> at.Result:
    """A Result."""
    return at.text(str(n))


def _maybe_text(n: int) -> Optional[str]:
    """Text or nothing."""
    return None


def _unhinted(n: int):  # type: ignore[no-untyped-def]
    """No hint."""
    return {"n": n}


class TestOutputSchemas(unittest.TestCase):
    def test_json_shaped_returns_get_a_schema_their_structured_value_fits(self) -> None:
        for fn, n in (
            (_point, 3),
            (_totals, 2),
            (_squares, 4),
            (_half, 5),
            (_maybe_point, 0),
            (_maybe_point, 2),
            (_async_point, 7),
        ):
            t = at.tool(fn)
            schema = at.output_schema_of(t)
            self.assertIsNotNone(schema, fn.__name__)
            assert schema is not None
            import typing

            self.assertEqual(schema, at.schema_of(typing.get_type_hints(fn)["return"]))
            arg = "n" if "n" in (t.parameters or {})["properties"] else "x"
            result = t.execute(at.Call("1", {arg: n}))
            at.validator(schema).validate(result.structured)  # checked against the schema
            # beside what the model sees, which is that same JSON
            self.assertEqual(result.structured, json.loads(result.output or "null"), fn.__name__)
        self.assertEqual(
            at.tool(_point).execute(at.Call("1", {"x": 1})).structured,
            {"x": 1, "label": "origin", "tags": ["a"]},
        )

    def test_text_and_result_returns_have_none(self) -> None:
        for fn in (_words, _made, _maybe_text, _unhinted):
            t = at.tool(fn)
            self.assertIsNone(at.output_schema_of(t), fn.__name__)
            self.assertIsNone(t.execute(at.Call("1", {"n": 2})).structured, fn.__name__)
        self.assertIsNone(at.output_schema_of(raw(lambda c: "")))

    def test_the_option_turns_it_off_or_supplies_one(self) -> None:
        off = at.tool(output_schema=False)(_point)
        self.assertIsNone(at.output_schema_of(off))
        self.assertIsNone(off.execute(at.Call("1", {"x": 1})).structured)
        supplied = {"type": "object", "properties": {"x": {"type": "integer"}}}
        given = at.tool(output_schema=supplied)(_unhinted)
        self.assertEqual(at.output_schema_of(given), supplied)
        self.assertEqual(given.execute(at.Call("1", {"n": 4})).structured, {"n": 4})
        # a raw tool states one and sets Result.structured itself
        stated = raw(lambda c: at.Result("four", structured={"n": 4}), output_schema=supplied)
        self.assertEqual(at.output_schema_of(stated), supplied)
        self.assertEqual(stated.execute(at.Call("1")).structured, {"n": 4})
        with self.assertRaisesRegex(TypeError, "output_schema must be a bool or a dict"):
            at.tool(output_schema="yes")(_point)

    def test_a_hand_written_tool_reads_none_and_wrap_keeps_it(self) -> None:
        self.assertIsNone(at.output_schema_of(HandWritten()))
        t = at.tool(_point)
        w = at.wrap(t, t.execute)
        self.assertEqual(at.output_schema_of(w), at.output_schema_of(t))
        self.assertEqual(w.execute(at.Call("1", {"x": 2})).structured["x"], 2)

    def test_the_definition_does_not_change(self) -> None:
        self.assertEqual(
            at.definition_hash(at.tool(_point)),
            at.definition_hash(at.tool(output_schema=False)(_point)),
        )


@dataclasses.dataclass
class Filters:
    a: int


@dataclasses.dataclass
class TreeNode:
    name: str
    children: list[TreeNode] = dataclasses.field(default_factory=list)


class TestLenient(unittest.TestCase):
    def setUp(self) -> None:
        def search(
            filters: Filters,
            tags: list[str],
            note: str = "",
            extra: Optional[dict[str, int]] = None,
        ) -> dict[str, Any]:
            """Search."""
            return {"filters": {"a": filters.a}, "tags": tags, "note": note, "extra": extra}

        self.search = search
        self.good = {"filters": {"a": 1}, "tags": ["x"], "note": '{"a": 1}', "extra": {"k": 2}}

    def call(self, t: at.Tool, args: Any, **options: Any) -> at.Event:
        job = at.Job(t, at.Call("1", args if isinstance(args, str) else json.dumps(args)))
        return finals(list(at.Executor(**options).execute([job])))[0]

    def encoded(self) -> dict[str, Any]:
        return {
            "filters": json.dumps({"a": 1}),
            "tags": json.dumps(["x"]),
            "note": '{"a": 1}',
            "extra": json.dumps({"k": 2}),
        }

    def test_without_the_option_nothing_changes(self) -> None:
        for key in ("filters", "tags", "extra"):
            args = {**self.good, key: self.encoded()[key]}
            event = self.call(at.tool(self.search), args)
            self.assertIn(f"{key}: expected ", at.error_message(event.error))

    def test_strings_where_objects_and_arrays_belong_are_parsed(self) -> None:
        t = at.tool(lenient=True)(self.search)
        event = self.call(t, self.encoded())
        self.assertEqual(json.loads(event.result.output), self.good)
        self.assertEqual(json.loads(t.execute(at.Call("1", self.encoded())).output), self.good)

    def test_arguments_encoded_twice_are_parsed(self) -> None:
        t = at.tool(lenient=True)(self.search)
        event = self.call(t, json.dumps(json.dumps(self.encoded())))
        self.assertEqual(json.loads(event.result.output), self.good)

    def test_a_str_field_is_never_touched(self) -> None:
        @at.tool(lenient=True)
        def echo(note: str, anything: Any, data: Optional[list[int]] = None) -> str:
            """Echo."""
            return f"{note!r} {anything!r} {data!r}"

        event = self.call(echo, {"note": "[1, 2]", "anything": '{"a": 1}', "data": "[3]"})
        self.assertEqual(event.result.output, """'[1, 2]' '{"a": 1}' [3]""")

    def test_only_object_and_array_positions_are_parsed_inside_any_of(self) -> None:
        seen: list[Any] = []
        schema = {
            "type": "object",
            "properties": {
                "q": {
                    "anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "integer"}}]
                }
            },
        }
        t = at.new_func("q", "Q.", schema, lambda call: seen.append(call.args) or "ok")
        self.assertIsNone(self.call(t, {"q": "[1, 2]"}, lenient=True).error)
        self.assertIsNone(self.call(t, {"q": "5"}, lenient=True).error)  # "5" stays a string
        self.assertEqual(seen, [{"q": [1, 2]}, {"q": "5"}])

    def test_a_string_that_still_does_not_fit_keeps_the_model_error(self) -> None:
        t = at.tool(lenient=True)(self.search)
        args = {**self.encoded(), "filters": json.dumps({"a": "one"})}
        event = self.call(t, args)  # the repair is not used: the error is the model's own
        self.assertRegex(at.error_message(event.error), r': expected .*object.*, got "\{')
        not_json = {**self.good, "tags": "x, y"}
        self.assertIn("tags: expected array", at.error_message(self.call(t, not_json).error))

    def test_nested_and_referenced_positions_are_repaired(self) -> None:
        @at.tool(lenient=True)
        def tree(root: TreeNode) -> int:
            """Count nodes."""

            def count(n: TreeNode) -> int:
                return 1 + sum(count(c) for c in n.children)

            return count(root)

        inner = json.dumps([{"name": "b", "children": json.dumps([{"name": "c"}])}])
        event = self.call(tree, {"root": json.dumps({"name": "a", "children": inner})})
        self.assertEqual(event.result.output, "3")

    def test_the_executor_default_applies_to_tools_that_do_not_say(self) -> None:
        plain = at.tool(self.search)
        self.assertEqual(
            json.loads(self.call(plain, self.encoded(), lenient=True).result.output), self.good
        )
        refusing = at.tool(lenient=False)(self.search)
        self.assertIsNotNone(self.call(refusing, self.encoded(), lenient=True).error)

    def test_the_executor_repairs_a_hand_written_tool_with_a_schema(self) -> None:
        seen: list[Any] = []

        class Hand(Bare):
            parameters = {"type": "object", "properties": {"q": {"type": "object"}}}

            def execute(self, call: at.Call) -> at.Result:
                seen.append(call.args)
                return at.text("ok")

        self.call(Hand(), {"q": '{"x": 1}'}, lenient=True)
        self.assertEqual(seen, [{"q": {"x": 1}}])


# ---------------------------------------------------------------------------------------------
# async def tools: where their coroutines run
# ---------------------------------------------------------------------------------------------


class TestAsyncTools(unittest.TestCase):
    def test_async_tools_share_one_loop_across_calls(self) -> None:
        loops: list[Any] = []

        async def where(c: at.Call) -> str:
            await asyncio.sleep(0)
            loops.append(asyncio.get_running_loop())
            return f"{c.id} on loop"

        t = raw(where)
        results, _ = at.Executor().results([at.Job(t, at.Call(str(i))) for i in range(3)])
        at.Executor().results([at.Job(t, at.Call("again"))])
        self.assertEqual(len({id(loop) for loop in loops}), 1)
        self.assertEqual(results[0].output, "0 on loop")  # type: ignore[union-attr]

    def test_an_async_tool_asks_through_a_thread_without_holding_up_the_loop(self) -> None:
        asked = threading.Event()
        release = threading.Event()

        def elicitor(q: at.Elicitation) -> at.Answer:
            asked.set()
            # released only if the loop ran the other tool while this question was open
            freed = release.wait(10)
            return at.Answer(at.Action.ACCEPT if freed else at.Action.DECLINE)

        async def asks(c: at.Call) -> str:
            answer = await asyncio.to_thread(at.elicit, at.Elicitation("go?"))
            return str(answer.action.value)

        async def other(c: at.Call) -> str:
            await asyncio.to_thread(asked.wait, 10)
            release.set()  # on the shared loop, while the question is open
            return "other ran"

        results, errors = at.Executor(elicitor=elicitor).results(
            [at.Job(raw(asks), at.Call("a")), at.Job(raw(other), at.Call("b"))]
        )
        self.assertEqual(errors, [None, None])
        self.assertEqual([r.output for r in results], ["accept", "other ran"])  # type: ignore[union-attr]

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


class TestAsyncHosts(unittest.TestCase):
    def test_aexecute_runs_async_tools_on_the_callers_loop_and_sync_tools_on_threads(self) -> None:
        async def where() -> str:
            await asyncio.sleep(0)
            return "same loop" if asyncio.get_running_loop() is host_loop[0] else "other loop"

        def sync(c: at.Call) -> str:
            return (
                "main thread" if threading.current_thread() is threading.main_thread() else "worker"
            )

        host_loop: list[Any] = []

        async def host() -> list[Any]:
            host_loop.append(asyncio.get_running_loop())
            jobs = [at.Job(at.tool(where), at.Call("a")), at.Job(raw(sync), at.Call("s"))]
            return [e async for e in at.Executor().aexecute(jobs)]

        events = asyncio.run(host())
        outputs = sorted(e.result.output for e in events if e.final)  # type: ignore[union-attr]
        self.assertEqual(outputs, ["same loop", "worker"])

    def test_objects_bound_to_the_host_loop_work_in_a_wrapped_async_tool(self) -> None:
        async def host() -> list[dict[str, Any]]:
            queue: asyncio.Queue[str] = asyncio.Queue()
            queue.put_nowait("from the host's queue")

            async def take() -> str:
                return await queue.get()

            inner = at.tool(take)
            ts = at.ToolSet([at.wrap(inner, inner.execute)])
            return await ts.arun(
                [{"type": "function_call", "call_id": "1", "name": "take", "arguments": "{}"}]
            )

        items = asyncio.run(host())
        self.assertEqual(items[0]["output"], "from the host's queue")

    def test_cancelling_the_consuming_task_or_the_event_cancels_the_batch(self) -> None:
        started = threading.Event()
        stopped: list[str] = []

        async def forever(c: at.Call) -> str:
            started.set()
            try:
                await asyncio.sleep(3600)
            finally:
                stopped.append(c.id)
            return "never"

        t = raw(forever)

        async def consume(cancel: Any) -> list[Any]:
            return [e async for e in at.Executor().aexecute([at.Job(t, at.Call("1"))], cancel)]

        async def host() -> list[Any]:
            task = asyncio.ensure_future(consume(None))
            while not started.is_set():
                await asyncio.sleep(0.001)
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task
            await asyncio.sleep(0.01)
            outcomes = []
            for make in (asyncio.Event, threading.Event):
                started.clear()
                cancel = make()
                task = asyncio.ensure_future(consume(cancel))
                while not started.is_set():
                    await asyncio.sleep(0.001)
                cancel.set()
                outcomes.append(await task)
            return outcomes

        outcomes = asyncio.run(host())
        self.assertEqual(stopped, ["1", "1", "1"])
        for events in outcomes:
            self.assertIsInstance(events[-1].error, at.Cancelled)

    def test_the_sync_api_inside_the_host_s_loop_runs_sync_tools_and_refuses_async_ones(
        self,
    ) -> None:
        async def leaf() -> str:
            await asyncio.sleep(0)
            return "leaf"

        def plain() -> str:
            """Plain."""
            return "plain"

        async def host() -> list[str]:
            seen = [at.Executor().results([at.Job(at.tool(plain), at.Call("1"))])[0][0].output]  # type: ignore[list-item, union-attr]
            items = [{"type": "function_call", "call_id": "2", "name": "leaf", "arguments": "{}"}]
            for sync_api in (
                lambda: at.Executor().results([at.Job(at.tool(leaf), at.Call("1"))]),
                lambda: at.ToolSet([at.tool(leaf)]).run(items),
                lambda: at.tool(leaf).execute(at.Call("3")),
            ):
                with self.assertRaisesRegex(RuntimeError, r"await ToolSet\.arun"):
                    sync_api()
            out = await at.ToolSet([at.tool(leaf)]).arun(items)
            return [*seen, out[0]["output"]]

        self.assertEqual(asyncio.run(host()), ["plain", "leaf"])

    def test_an_async_tool_bound_to_the_blocked_host_loop_never_hangs_the_sync_api(
        self,
    ) -> None:
        # the tool needs the host's loop, which the synchronous API would block: each way in
        # (a batch, a tool set, a wrapped tool, the tool's own execute) refuses at once
        # instead of waiting forever, and the async API runs it
        code = """
        import asyncio

        async def main():
            host = asyncio.get_running_loop()

            async def ping():
                return "pong"

            async def waiter() -> str:
                return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(ping(), host))

            t = at.tool(waiter)
            wrapped = at.wrap(t, t.execute)
            item = {"type": "function_call", "call_id": "1", "name": "waiter", "arguments": "{}"}
            for sync_api in (
                lambda: at.Executor().results([at.Job(t, at.Call("1"))]),
                lambda: at.ToolSet([t]).run([item]),
                lambda: at.Executor().results([at.Job(wrapped, at.Call("1"))]),
                lambda: t.execute(at.Call("1")),
            ):
                try:
                    sync_api()
                except RuntimeError as exc:
                    print("refused" if "arun" in str(exc) else exc)
            out = [e async for e in at.Executor().aexecute([at.Job(wrapped, at.Call("2"))])]
            print(out[-1].result.output)

        asyncio.run(main())
        """
        isolated(self, code, "refused\n" * 4 + "pong\n", timeout=30)

    def test_a_tool_from_an_async_def_reads_as_a_coroutine_function(self) -> None:
        async def coro() -> str:
            return ""

        t = at.tool(coro)
        self.assertTrue(asyncio.iscoroutinefunction(t))
        if sys.version_info >= (3, 12):
            self.assertTrue(inspect.iscoroutinefunction(t))
        self.assertFalse(asyncio.iscoroutinefunction(raw(lambda c: "")))

    def test_a_soak_of_5000_jobs_through_aexecute_with_timeouts_and_crashes(self) -> None:
        others = {t for t in threading.enumerate() if t.name != "agenttool-worker"}
        rng = random.Random(9)
        kinds = ["ok", "fail", "exit", "interrupt", "slow", "sync", "progress"]
        plan = [rng.choice(kinds) for _ in range(5000)]

        async def flaky(i: int) -> str:
            kind = plan[i]
            await asyncio.sleep(0)
            if kind == "fail":
                raise RuntimeError(str(i))
            if kind == "exit":
                raise SystemExit(i)
            if kind == "interrupt":
                raise KeyboardInterrupt
            if kind == "slow":
                await asyncio.sleep(3600)
            if kind == "progress":
                at.progress("p")
            return str(i)

        def sync(c: at.Call) -> str:
            at.cancel_event().wait(0.001 * (int(c.id) % 3))
            return c.id

        tools = [at.tool(flaky, timeout=0.2), at.tool(flaky, name="r", resource="r1")]
        sync_tool = raw(sync, timeout=0.5)
        jobs = [
            at.Job(sync_tool, at.Call(str(i)))
            if plan[i] == "sync"
            else at.Job(tools[i % 2] if plan[i] != "slow" else tools[0], at.Call(str(i), {"i": i}))
            for i in range(5000)
        ]

        async def host() -> list[int]:
            seen = [0] * 5000
            async for event in at.Executor(max_parallel=200).aexecute(jobs):
                if event.final:
                    seen[event.index] += 1
                    ok = plan[event.index] in ("ok", "sync", "progress")
                    # An invariant, not a timing: a call that should succeed may still time
                    # out on a loaded machine (its clock runs from its turn), never fail else.
                    if ok and event.error is not None:
                        self.assertIsInstance(event.error, TimeoutError, plan[event.index])
                    else:
                        self.assertEqual(event.error is None, ok, plan[event.index])
            return seen

        seen = asyncio.run(host())
        self.assertEqual(seen, [1] * 5000)
        retire_pool_threads()
        self.assertEqual(at._workers.threads(), [])
        left = {t for t in threading.enumerate() if t.name != "agenttool-worker"} - others
        self.assertEqual([t.name for t in left if t.name != "agenttool-async"], [])


# ---------------------------------------------------------------------------------------------
# Wrapping
# ---------------------------------------------------------------------------------------------


class TestWrap(unittest.TestCase):
    def test_every_property_has_a_sample(self) -> None:
        self.assertEqual(set(SAMPLES), set(at.PROPERTIES))
        readers = {
            n for n in at.__all__ if n.startswith("is_") or n.endswith("_of") or n.endswith("_by")
        }
        readers -= {"record_of", "schema_of", "is_factual"}  # is_factual: facts' presence
        self.assertEqual(readers, {r.__name__ for r in at.PROPERTIES.values()})

    def test_wrap_forwards_every_property(self) -> None:
        for prop, sample in SAMPLES.items():
            inner = sample_tool(prop, sample)
            w = at.wrap(inner, lambda call: at.text("wrapped"))
            reader = at.PROPERTIES[prop]
            extra = ({},) if reader in ARG_READERS else ()
            self.assertEqual(reader(w, *extra), reader(inner, *extra), prop)
            self.assertNotEqual(
                reader(w, *extra), reader(raw(lambda c: ""), *extra), f"{prop} sample is a default"
            )

    def test_wrap_reports_name_description_parameters_and_definition(self) -> None:
        inner = HandWritten()
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
        inner = HandWritten()
        w = at.wrap(inner, inner.execute)
        at.ToolSet([w]).close()
        self.assertEqual(inner.closed, 1)

    def test_wrap_refuses_a_missing_tool(self) -> None:
        with self.assertRaises(TypeError):
            at.wrap(None, lambda c: at.text(""))  # type: ignore[arg-type]


class Flaky:
    """A hand-written tool failing its first ``failures`` calls, recording each call."""

    name = "flaky"
    description = "fails, then works"
    parameters: Optional[dict[str, Any]] = None

    def __init__(self, failures: int, replay: at.Replay, exc: type[Exception] = OSError) -> None:
        self.failures = failures
        self.replay_answer = replay
        self.exc = exc
        self.calls: list[at.Call] = []

    def replay(self, args: dict[str, Any]) -> at.Replay:
        return self.replay_answer

    def execute(self, call: at.Call) -> at.Result:
        self.calls.append(call)
        if len(self.calls) <= self.failures:
            raise self.exc(f"attempt {len(self.calls)} failed")
        return at.text(f"ok after {len(self.calls)}")


class TestRetrying(unittest.TestCase):
    def run_one(self, t: at.Tool, call: Optional[at.Call] = None, **options: Any) -> Any:
        job = at.Job(t, call or at.Call("c1", "{}"))
        return list(at.Executor(**options).execute([job]))

    def test_a_safe_call_is_retried_until_it_works(self) -> None:
        inner = Flaky(2, at.Replay.SAFE)
        events = self.run_one(at.retrying(inner, attempts=3, backoff=0))
        self.assertEqual(finals(events)[0].result, at.text("ok after 3"))
        self.assertEqual(len(inner.calls), 3)

    def test_the_last_failure_is_raised_after_the_last_attempt(self) -> None:
        inner = Flaky(5, at.Replay.SAFE)
        event = finals(self.run_one(at.retrying(inner, attempts=2, backoff=0)))[0]
        self.assertEqual(str(event.error), "attempt 2 failed")
        self.assertEqual(len(inner.calls), 2)

    def test_a_call_of_unknown_replay_is_never_retried(self) -> None:
        inner = Flaky(1, at.Replay.UNKNOWN)
        event = finals(self.run_one(at.retrying(inner, attempts=5, backoff=0)))[0]
        self.assertIsInstance(event.error, OSError)
        self.assertEqual(len(inner.calls), 1)

    def test_a_keyed_call_keeps_one_idempotency_key_minting_one_once(self) -> None:
        inner = Flaky(2, at.Replay.KEYED)
        self.run_one(at.retrying(inner, backoff=0))
        keys = {c.idempotency_key for c in inner.calls}
        self.assertEqual(len(inner.calls), 3)
        self.assertEqual(len(keys), 1)
        self.assertNotIn("", keys)
        given = Flaky(1, at.Replay.KEYED)
        self.run_one(at.retrying(given, backoff=0), at.Call("c1", "{}", idempotency_key="k-7"))
        self.assertEqual([c.idempotency_key for c in given.calls], ["k-7", "k-7"])

    def test_only_failures_listed_in_on_are_retried(self) -> None:
        inner = Flaky(1, at.Replay.SAFE, exc=KeyError)
        event = finals(self.run_one(at.retrying(inner, backoff=0, on=(OSError,))))[0]
        self.assertIsInstance(event.error, KeyError)
        self.assertEqual(len(inner.calls), 1)

    def test_invalid_arguments_are_never_retried(self) -> None:
        calls: list[int] = []

        @at.tool(replay=at.Replay.SAFE)
        def count(n: int) -> int:
            """Count."""
            calls.append(n)
            return n

        t = at.retrying(count, backoff=0)
        event = finals(self.run_one(t, at.Call("c1", '{"n": "x"}')))[0]
        self.assertIsInstance(event.error, at.ValidationError)
        event = finals(self.run_one(t, at.Call("c1", "[1]")))[0]
        self.assertIsInstance(event.error, at.ValidationError)
        self.assertEqual(calls, [])

    def test_backoff_doubles_or_follows_a_function(self) -> None:
        waits: list[int] = []
        inner = Flaky(3, at.Replay.SAFE)
        self.run_one(at.retrying(inner, attempts=4, backoff=lambda n: waits.append(n) or 0))
        self.assertEqual(waits, [1, 2, 3])
        records: list[at.Record] = []
        self.run_one(
            at.retrying(Flaky(2, at.Replay.SAFE), attempts=3, backoff=0.001),
            recorder=records.append,
        )
        delays = [json.loads(r.data)["delay"] for r in records]
        self.assertEqual(delays, [0.001, 0.002])

    def test_each_failed_attempt_reaches_the_host_as_progress_and_a_record(self) -> None:
        records: list[at.Record] = []
        events = self.run_one(
            at.retrying(Flaky(2, at.Replay.SAFE), backoff=0), recorder=records.append
        )
        updates = [e.result.output for e in events if not e.final]
        self.assertEqual(len(updates), 2)
        self.assertIn("attempt 1 of 3 failed (OSError)", updates[0])
        self.assertEqual([r.ns for r in records], ["agenttool:retry"] * 2)
        first = json.loads(records[0].data)
        self.assertEqual((first["attempt"], first["message"]), (1, "attempt 1 failed"))

    def test_cancelling_the_call_ends_the_wait(self) -> None:
        cancel = threading.Event()
        failed = threading.Event()

        class Failing(Flaky):
            def execute(self, call: at.Call) -> at.Result:
                self.calls.append(call)
                failed.set()
                raise OSError("down")

        inner = Failing(0, at.Replay.SAFE)
        t = at.retrying(inner, attempts=3, backoff=3600)  # an hour: only cancellation ends it
        threading.Thread(target=lambda: failed.wait() and cancel.set(), daemon=True).start()
        job = at.Job(t, at.Call("c1", "{}"))
        event = finals(list(at.Executor().execute([job], cancel=cancel)))[0]
        self.assertIsInstance(event.error, OSError)
        self.assertEqual(len(inner.calls), 1)

    def test_retrying_forwards_every_property(self) -> None:
        for prop, sample in SAMPLES.items():
            inner = sample_tool(prop, sample)
            reader = at.PROPERTIES[prop]
            extra = ({},) if reader in ARG_READERS else ()
            self.assertEqual(reader(at.retrying(inner), *extra), reader(inner, *extra), prop)
        inner = Flaky(0, at.Replay.SAFE)
        self.assertIs(at.unwrap(at.retrying(inner)), inner)

    def test_bad_options_are_refused(self) -> None:
        for options in ({"attempts": 0}, {"attempts": 1.5}, {"backoff": -1}, {"backoff": "x"}):
            with self.assertRaises(ValueError):
                at.retrying(Bare(), **options)


# ---------------------------------------------------------------------------------------------
# Definitions, their hash, and sets of tools
# ---------------------------------------------------------------------------------------------


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
                "strict": False,
            },
        )
        self.assertEqual(list(d), ["type", "name", "description", "parameters", "strict"])

    def test_strict_is_always_stated_and_hashed_only_when_true(self) -> None:
        self.assertIs(at.definition(raw(lambda c: "", strict=True))["strict"], True)
        self.assertIs(at.definition(raw(lambda c: ""))["strict"], False)
        self.assertIn(
            '"strict":true', at._jcs(at._canonical_definition(raw(lambda c: "", strict=True)))
        )
        self.assertNotIn("strict", at._jcs(at._canonical_definition(raw(lambda c: ""))))

    def test_definition_hashes_match_every_vector(self) -> None:
        path = os.path.join(CORPUS, "definition_hashes.jsonl")
        if not os.path.exists(path):
            absent("../shared/conformance is not beside the repository")
        with open(path, encoding="utf-8") as f:
            vectors = [json.loads(line) for line in f if line.strip()]
        self.assertGreaterEqual(len(vectors), 4)
        for v in vectors:
            with open(os.path.join(CORPUS, v["fixture"] + ".json"), encoding="utf-8") as f:
                params = json.load(f)
            t = at.new_func(v["name"], v["description"], params, lambda c: "", strict=v["strict"])
            self.assertEqual(at.definition_hash(t), v["hash"], v["fixture"])

    def test_definition_hashes_outside_ascii_match_an_independent_implementation(self) -> None:
        # Accented and CJK text, an emoji, keys beyond the BMP ordered by UTF-16 code units,
        # control characters and escapes, from an RFC 8785 implementation in JavaScript.
        path = os.path.join(CORPUS, "definition_hashes_unicode.jsonl")
        if not os.path.exists(path):
            absent(f"{path} is not beside the repository")
        with open(path, encoding="utf-8") as f:
            vectors = [json.loads(line) for line in f if line.strip()]
        self.assertGreaterEqual(len(vectors), 3)
        for v in vectors:
            t = at.new_func(
                v["name"], v["description"], v["parameters"], lambda c: "", strict=v["strict"]
            )
            self.assertEqual(at._jcs(at._canonical_definition(t)), v["canonical"], v["name"])
            self.assertEqual(at.definition_hash(t), v["hash"], v["name"])

    def test_canonical_numbers_follow_ecmascript(self) -> None:
        t = at.new_func(
            "n", "", {"type": "number", "enum": [1.0, 1e-7, 1e21, 0.00001, -0.5]}, print
        )
        digest = at.definition_hash(t)
        self.assertTrue(digest.startswith("sha256:"))
        self.assertIn('"enum":[1,1e-7,1e+21,0.00001,-0.5]', at._jcs(at.definition(t)))
        self.assertEqual(at._ecmascript_number(-2.5e-300), "-2.5e-300")
        self.assertEqual(at._ecmascript_number(123456789012345680000.0), "123456789012345680000")
        self.assertEqual(at._ecmascript_number(0.1 + 0.2), "0.30000000000000004")

    def test_json_s_own_writing_is_used_only_where_it_is_canonical(self) -> None:
        # _jcs hands a value of str/int/bool/None leaves and keys below U+D800 to json in C;
        # floats and keys whose code point order is not their UTF-16 order take the long way.
        self.assertEqual(
            at._jcs({"b": [1, "x\n\u0007", None, True, (2,)], "a": {"é": "ü"}, "": -3}),
            '{"":-3,"a":{"é":"ü"},"b":[1,"x\\n\\u0007",null,true,[2]]}',
        )
        self.assertEqual(at._jcs({"n": [1.0, 1e21]}), '{"n":[1,1e+21]}')
        self.assertEqual(at._jcs({"\ue000": 1, "\U0001f600": 2}), '{"\U0001f600":2,"\ue000":1}')
        # random values, the fast way against the long way, over every kind of leaf and key
        rng = random.Random(8785)
        keys = ["a", "B", "é", "ß", "\u4e2d", "\ue000", "\U0001f600", "", "a\u0000"]
        leaves = [0, -7, 2**70, True, False, None, "", "x\ty", "\u2028", "\U0001f600", 0.5, 1.0]

        def value(depth: int) -> Any:
            kind = rng.random()
            if depth > 3 or kind < 0.4:
                return rng.choice(leaves)
            if kind < 0.7:
                return [value(depth + 1) for _ in range(rng.randint(0, 3))]
            return {rng.choice(keys): value(depth + 1) for _ in range(rng.randint(0, 4))}

        for _ in range(2000):
            v = value(0)
            with unittest.mock.patch.object(at, "_jcs_plain", return_value=False):
                slow = at._jcs(v)
            self.assertEqual(at._jcs(v), slow, v)

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
        order: list[str] = []

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


class TestDefinitionCopies(unittest.TestCase):
    FORMATS = at._FORMATS

    def test_editing_a_definition_never_changes_the_tool(self) -> None:
        def schema_of(defn: dict[str, Any]) -> dict[str, Any]:
            for key in ("parameters", "input_schema", "parametersJsonSchema"):
                if key in defn:
                    return defn[key]  # type: ignore[no-any-return]
            return schema_of(defn["function"])

        t = at.tool(read_file_tool.fn, name="read_file")
        none = at.new_func("ping", "Ping.", None, lambda call: "pong")
        before = (json.dumps(t.parameters), at.definition_hash(t), at.definition_hash(none))
        for fmt in self.FORMATS:
            for tool in (t, none):
                schema = schema_of(at.definition(tool, fmt))
                schema["properties"]["injected"] = {"type": "string"}
                schema.setdefault("required", []).append("injected")
                schema["type"] = "array"
        self.assertEqual(
            (json.dumps(t.parameters), at.definition_hash(t), at.definition_hash(none)), before
        )
        self.assertEqual(at.NO_ARGS, {"type": "object", "properties": {}, "required": []})
        self.assertEqual(t.execute(at.Call("1", {"path": "/a"})).output, "/a:0")

    def test_every_format_checks_the_name_by_its_providers_rule(self) -> None:
        for bad in ("has space", "x" * 100, "dotted.name", "", "café"):
            t = at.new_func(bad or "placeholder", "", None, lambda call: "")
            t.name = bad
            for fmt in self.FORMATS:
                if fmt == "gemini" and bad == "dotted.name":
                    self.assertEqual(at.definition(t, fmt)["name"], bad)  # Gemini allows dots
                    continue
                with self.subTest(name=bad, format=fmt):
                    with self.assertRaisesRegex(ValueError, "name"):
                        at.definition(t, fmt)
        ok = at.new_func("read_file-2", "", None, lambda call: "")
        names = [json.dumps(at.definition(ok, fmt)).count('"read_file-2"') for fmt in self.FORMATS]
        self.assertEqual(names, [1, 1, 1, 1])


class TestToolSetMembers(unittest.TestCase):
    def tool(self, name: str) -> Any:
        return at.new_func(name, "", None, lambda call: name)

    def test_a_plain_function_is_refused_saying_how_to_make_it_a_tool(self) -> None:
        def read(path: str) -> str:
            return path

        a = self.tool("a")
        s = at.ToolSet([a])
        attempts: list[tuple[str, Callable[[], Any]]] = [
            ("ToolSet", lambda: at.ToolSet([read])),
            ("ToolSet.append", lambda: s.append(read)),
            ("ToolSet.extend", lambda: s.extend([read])),
            ("ToolSet.insert", lambda: s.insert(0, read)),
            ("ToolSet +=", lambda: s.__iadd__([read])),
            ("ToolSet[...] =", lambda: s.__setitem__(0, read)),
            ("ToolSet[...] =", lambda: s.__setitem__(slice(0, 0), [read])),
        ]
        for where, attempt in attempts:
            with self.subTest(where=where):
                with self.assertRaises(TypeError) as caught:
                    attempt()
                self.assertEqual(
                    str(caught.exception),
                    f"agenttool: {where}: read is a plain function, not a tool; make it one "
                    "with agenttool.tool(read), or @agenttool.tool where it is defined",
                )
        self.assertEqual(list(s), [a])
        with self.assertRaisesRegex(TypeError, "expected a tool .*got str"):
            at.ToolSet(["read"])  # type: ignore[list-item]

        class Echo:
            name, description, parameters = "echo", "", None

            def execute(self, call: at.Call) -> at.Result:
                return at.text("echo")

        with self.assertRaisesRegex(TypeError, r"Echo is a class; a tool is an instance"):
            at.ToolSet([Echo])  # type: ignore[list-item]
        self.assertEqual(len(at.ToolSet([Echo()])), 1)  # type: ignore[list-item]

    def test_duplicate_names_are_refused_by_every_way_of_adding(self) -> None:
        a, b, other_a = self.tool("a"), self.tool("b"), self.tool("a")
        s = at.ToolSet([a, b])
        attempts: list[tuple[str, Callable[[], Any]]] = [
            ("ToolSet", lambda: at.ToolSet([a, other_a])),
            ("ToolSet.append", lambda: s.append(other_a)),
            ("ToolSet.extend", lambda: s.extend([self.tool("c"), self.tool("c")])),
            ("ToolSet.insert", lambda: s.insert(1, other_a)),
            ("ToolSet +=", lambda: s.__iadd__([other_a])),
            ("ToolSet[...] =", lambda: s.__setitem__(1, other_a)),
            ("ToolSet[...] =", lambda: s.__setitem__(slice(2, 2), [other_a])),
            ("ToolSet *=", lambda: s.__imul__(2)),
        ]
        for where, attempt in attempts:
            with self.subTest(where=where):
                with self.assertRaisesRegex(
                    ValueError, rf'^agenttool: {re.escape(where)}: tool "(a|c)": duplicate name'
                ):
                    attempt()
        self.assertEqual(list(s), [a, b])
        s += [self.tool("c")]
        s[0] = other_a  # replacing the tool of that name is not a duplicate
        s[1:3] = [self.tool("x"), self.tool("y")]
        s.insert(0, self.tool("z"))
        self.assertEqual([t.name for t in s], ["z", "a", "x", "y"])
        self.assertIsInstance(s, at.ToolSet)
        with self.assertRaisesRegex(ValueError, r"tool\[1\]: empty name"):
            nameless = self.tool("n")
            nameless.name = ""
            at.ToolSet([self.tool("m"), nameless])


class TestToolSetComposition(unittest.TestCase):
    def setUp(self) -> None:
        self.read = raw(lambda c: "read", "read", sequential=True, needs_approval=True)
        self.write = raw(lambda c: "write", "write", resource="disk")
        self.tools = at.ToolSet([self.read, self.write])

    def test_filtered_by_names_or_predicate(self) -> None:
        self.assertEqual(self.tools.filtered(["write"]), [self.write])
        self.assertEqual(self.tools.filtered(lambda t: at.is_sequential(t)), [self.read])
        self.assertIsInstance(self.tools.filtered(["read"]), at.ToolSet)
        with self.assertRaisesRegex(ValueError, r'no tool named "nope".*"read", "write"'):
            self.tools.filtered(["read", "nope"])

    def test_prefixed_names_every_tool_and_forwards_every_property(self) -> None:
        pre = self.tools.prefixed("fs")
        self.assertEqual([t.name for t in pre], ["fs__read", "fs__write"])
        self.assertEqual([t.name for t in self.tools], ["read", "write"])  # unchanged
        self.assertTrue(at.is_sequential(pre[0]))
        self.assertTrue(at.needs_approval_of(pre[0], {}))
        self.assertEqual(at.resource_of(pre[1]), "disk")
        self.assertIs(at.unwrap(pre[0]), self.read)
        self.assertEqual(at.definition(pre[1])["name"], "fs__write")
        out = pre.run([responses_call("1", "fs__write", {})])
        self.assertEqual(out[0]["output"], "write")
        for prop, sample in SAMPLES.items():
            inner = sample_tool(prop, sample)
            w = at.ToolSet([inner]).prefixed("p")[0]
            reader = at.PROPERTIES[prop]
            extra = ({},) if reader in ARG_READERS else ()
            self.assertEqual(reader(w, *extra), reader(inner, *extra), prop)

    def test_a_prefix_that_breaks_the_name_rule_names_the_names(self) -> None:
        with self.assertRaisesRegex(ValueError, r'"my fs__read", "my fs__write" break'):
            self.tools.prefixed("my fs")
        long = at.ToolSet([raw(lambda c: "", "x" * 60)])
        with self.assertRaisesRegex(ValueError, "1 to 64 characters"):
            long.prefixed("abc")
        with self.assertRaises(ValueError):
            self.tools.prefixed("")

    def test_renamed_renames_what_it_names_and_refuses_unknown_names_and_clashes(self) -> None:
        ren = self.tools.renamed({"read": "cat"})
        self.assertEqual([t.name for t in ren], ["cat", "write"])
        self.assertIs(ren[1], self.write)
        with self.assertRaisesRegex(ValueError, r'no tool named "cat"'):
            self.tools.renamed({"cat": "dog"})
        with self.assertRaisesRegex(ValueError, r'"write" would name 2 tools \("read", "write"\)'):
            self.tools.renamed({"read": "write"})
        with self.assertRaisesRegex(ValueError, r'"a.b" breaks'):
            self.tools.renamed({"read": "a.b"})
        swapped = self.tools.renamed({"read": "write", "write": "read"})
        self.assertEqual([at.unwrap(t) for t in swapped], [self.read, self.write])

    def test_merge_and_plus_join_sets_and_refuse_a_name_in_two(self) -> None:
        other = at.ToolSet([raw(lambda c: "", "search")])
        merged = at.ToolSet.merge(self.tools, other)
        self.assertIsInstance(merged, at.ToolSet)
        self.assertEqual([t.name for t in merged], ["read", "write", "search"])
        plus = self.tools + other
        self.assertIsInstance(plus, at.ToolSet)
        self.assertEqual(plus, merged)
        self.assertEqual(len(self.tools), 2)
        with self.assertRaisesRegex(ValueError, r'"read" would name 2 tools'):
            self.tools + at.ToolSet([raw(lambda c: "", "read")])
        both = self.tools.prefixed("a") + self.tools.prefixed("b")
        self.assertEqual(len(both), 4)


class TestApprovals(unittest.TestCase):
    def setUp(self) -> None:
        self.ran: list[dict[str, Any]] = []

        @at.tool(needs_approval=lambda args: args["path"].startswith("/etc"))
        def delete(path: str) -> str:
            """Delete a file."""
            self.ran.append({"path": path})
            return f"deleted {path}"

        self.delete = delete

    def run_one(self, args: dict[str, Any], **options: Any) -> at.Event:
        job = at.Job(self.delete, at.Call("c1", json.dumps(args)))
        return finals(list(at.Executor(**options).execute([job])))[0]

    def test_needs_approval_reads_the_option_the_method_and_the_default(self) -> None:
        self.assertFalse(at.needs_approval_of(Bare(), {}))
        self.assertFalse(at.needs_approval_of(raw(lambda c: ""), {}))
        self.assertTrue(at.needs_approval_of(raw(lambda c: "", needs_approval=True), {}))
        self.assertTrue(at.needs_approval_of(self.delete, {"path": "/etc/passwd"}))
        self.assertFalse(at.needs_approval_of(self.delete, {"path": "/tmp/x"}))

        class Asks(Bare):
            def needs_approval(self, args: dict[str, Any]) -> bool:
                return bool(args.get("force"))

        self.assertTrue(at.needs_approval_of(Asks(), {"force": True}))
        self.assertFalse(at.needs_approval_of(Asks(), {}))

    def test_without_an_approver_a_call_that_needs_approval_is_denied_and_never_runs(self) -> None:
        event = self.run_one({"path": "/etc/passwd"})
        self.assertIsInstance(event.error, at.ToolError)
        self.assertIn("needs approval", str(event.error))
        self.assertEqual(self.ran, [])
        self.assertEqual(self.run_one({"path": "/tmp/x"}).result, at.text("deleted /tmp/x"))

    def test_the_approver_runs_denies_or_edits_the_call(self) -> None:
        seen: list[Any] = []

        def approver(answer: Any) -> Callable[[at.Job], Any]:
            def decide(job: at.Job) -> Any:
                seen.append(job.call.args)
                return answer

            return decide

        ok = self.run_one({"path": "/etc/a"}, approver=approver(True))
        self.assertEqual(ok.result, at.text("deleted /etc/a"))
        self.assertEqual(seen, [{"path": "/etc/a"}])  # the approver reads the arguments object
        no = self.run_one({"path": "/etc/b"}, approver=approver(False))
        self.assertIn("denied", at.error_message(no.error))
        said = self.run_one({"path": "/etc/c"}, approver=approver("not on a Friday"))
        self.assertEqual(at.error_result(said.error), at.text("Error: not on a Friday"))
        edited = self.run_one({"path": "/etc/d"}, approver=approver({"path": "/tmp/d"}))
        self.assertEqual(edited.result, at.text("deleted /tmp/d"))
        self.assertEqual(self.ran, [{"path": "/etc/a"}, {"path": "/tmp/d"}])

    def test_edited_arguments_are_validated_before_the_call_runs(self) -> None:
        bad = self.run_one({"path": "/etc/d"}, approver=lambda job: {"path": 5})
        self.assertIn("expected string", at.error_message(bad.error))
        self.assertEqual(self.ran, [])

    def test_an_approver_that_raises_or_answers_nonsense_denies(self) -> None:
        def broken(job: at.Job) -> bool:
            raise RuntimeError("approval service down")

        for approver in (broken, lambda job: None, lambda job: 1, lambda job: ""):
            event = self.run_one({"path": "/etc/x"}, approver=approver)
            self.assertIsInstance(event.error, at.ToolError)
        self.assertEqual(self.ran, [])

    def test_a_needs_approval_that_raises_asks_rather_than_runs(self) -> None:
        def doubtful(args: dict[str, Any]) -> bool:
            raise KeyError("path")

        t = raw(lambda c: "ran", needs_approval=doubtful)
        event = finals(list(at.Executor().execute([at.Job(t, at.Call("1", "{}"))])))[0]
        self.assertIsInstance(event.error, at.ToolError)

    def test_invalid_arguments_are_refused_before_anyone_is_asked(self) -> None:
        asked: list[at.Job] = []
        event = self.run_one({"path": 3}, approver=lambda job: asked.append(job) or True)
        self.assertIsInstance(event.error, at.ValidationError)
        self.assertEqual(asked, [])

    def test_run_pauses_calls_that_need_approval_and_resumes_with_answers(self) -> None:
        ts = at.ToolSet([self.delete])
        items = [
            responses_call("a", "delete", {"path": "/tmp/1"}),
            responses_call("b", "delete", {"path": "/etc/2"}),
            responses_call("c", "delete", {"path": "/etc/3"}),
        ]
        out = ts.run(items, approvals={})
        self.assertIsInstance(out, list)
        self.assertEqual([o["call_id"] for o in out], ["a"])
        self.assertEqual([p.call_id for p in out.pending], ["b", "c"])
        p = out.pending[0]
        self.assertEqual((p.name, p.arguments, p.item), ("delete", {"path": "/etc/2"}, items[1]))
        self.assertTrue(p.hash.startswith("sha256:"))
        self.assertEqual(self.ran, [{"path": "/tmp/1"}])

        answers = {out.pending[0].hash: True, out.pending[1].hash: "no, keep it"}
        again = ts.run([q.item for q in out.pending], approvals=answers)
        self.assertEqual(again.pending, [])
        self.assertEqual(
            [(o["call_id"], o["output"]) for o in again],
            [("b", "deleted /etc/2"), ("c", "Error: no, keep it")],
        )
        self.assertEqual(self.ran, [{"path": "/tmp/1"}, {"path": "/etc/2"}])

    def test_an_answer_for_other_arguments_leaves_the_call_waiting(self) -> None:
        ts = at.ToolSet([self.delete])
        first = ts.run([responses_call("a", "delete", {"path": "/etc/x"})], approvals={})
        changed = responses_call("a", "delete", {"path": "/etc/y"})
        out = ts.run([changed], approvals={first.pending[0].hash: True})
        self.assertEqual(list(out), [])
        self.assertEqual([p.arguments for p in out.pending], [{"path": "/etc/y"}])
        self.assertEqual(self.ran, [])

    def test_the_hash_ignores_key_order_and_whitespace(self) -> None:
        t = raw(lambda c: "ok", name="pair", needs_approval=True)
        ts = at.ToolSet([t])
        one = ts.run([responses_call("a", "pair", '{"x": 1, "y": [1, 2]}')], approvals={})
        two = ts.run([responses_call("a", "pair", '{"y":[1,2],"x":1}')], approvals={})
        self.assertEqual(one.pending[0].hash, two.pending[0].hash)
        three = ts.run([responses_call("a", "pair", '{"y":[2,1],"x":1}')], approvals={})
        self.assertNotEqual(one.pending[0].hash, three.pending[0].hash)
        other_id = ts.run([responses_call("b", "pair", '{"x": 1, "y": [1, 2]}')], approvals={})
        self.assertNotEqual(one.pending[0].hash, other_id.pending[0].hash)

    def test_approved_calls_in_run_do_not_ask_the_executor_approver_again(self) -> None:
        asked: list[at.Job] = []
        ts = at.ToolSet([self.delete])
        first = ts.run([responses_call("a", "delete", {"path": "/etc/x"})], approvals={})
        out = ts.run(
            [first.pending[0].item],
            approvals={first.pending[0].hash: True},
            executor=at.Executor(approver=lambda job: asked.append(job) or False),
        )
        self.assertEqual(out[0]["output"], "deleted /etc/x")
        self.assertEqual(asked, [])

    def test_run_without_approvals_uses_the_executor_approver(self) -> None:
        ts = at.ToolSet([self.delete])
        call = [responses_call("a", "delete", {"path": "/etc/x"})]
        self.assertIn("needs approval", ts.run(call)[0]["output"])
        out = ts.run(call, executor=at.Executor(approver=lambda job: True))
        self.assertEqual((out[0]["output"], out.pending), ("deleted /etc/x", []))

    def test_pending_items_of_other_formats_can_be_sent_again(self) -> None:
        ts = at.ToolSet([self.delete])
        block = {"type": "tool_use", "id": "t1", "name": "delete", "input": {"path": "/etc/z"}}
        out = ts.run([block], approvals={})
        self.assertEqual(list(out), [])
        again = ts.run([p.item for p in out.pending], approvals={out.pending[0].hash: True})
        self.assertEqual(again[0]["tool_use_id"], "t1")
        self.assertEqual(self.ran, [{"path": "/etc/z"}])


# ---------------------------------------------------------------------------------------------
# The executor
# ---------------------------------------------------------------------------------------------


class Tracker:
    """Counts tools running at once, and the order they started in."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.peak = 0
        self.started: list[str] = []

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
            t = tracker.tool(wait=lambda c, b=barrier: b.wait())
            jobs = [at.Job(t, at.Call(str(i))) for i in range(bound * 3)]
            _, errors = at.Executor(max_parallel=bound).results(jobs)
            self.assertEqual(errors, [None] * len(jobs))
            self.assertEqual(tracker.peak, bound)

    def test_the_default_bound_is_eight(self) -> None:
        self.assertEqual(at.Executor().max_parallel, 8)
        self.assertEqual(at.Executor(max_parallel=0).max_parallel, 8)
        tracker = Tracker()
        barrier = threading.Barrier(8, timeout=10)
        jobs = [
            at.Job(tracker.tool(wait=lambda c: barrier.wait()), at.Call(str(i))) for i in range(16)
        ]
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
        self.assertEqual(
            ex.chains([at.Job(t, at.Call("")) for t in (shell, plain, shell)]), [[0, 2], [1]]
        )
        self.assertEqual(
            ex.chains([at.Job(t, at.Call("")) for t in (shell, shell, other)]), [[0, 1], [2]]
        )
        self.assertEqual(
            at.Executor(sequential=True).chains(
                [at.Job(t, at.Call("")) for t in (shell, plain, shell)]
            ),
            [[0, 1, 2]],
        )
        self.assertEqual(ex.chains([at.Job(t, at.Call("")) for t in (seq, shell)]), [[0, 1]])
        self.assertEqual(
            ex.chains([at.Job(None, at.Call("")), at.Job(None, at.Call(""))]), [[0], [1]]
        )

    def test_the_next_call_of_a_chain_starts_after_the_consumer_took_the_final_event(self) -> None:
        tracker = Tracker()
        t = tracker.tool(resource="r")
        jobs = [at.Job(t, at.Call(str(i))) for i in range(4)]
        for event in at.Executor().execute(jobs):
            # While the consumer holds job i's final event, job i+1 has not started, however
            # long the consumer takes (the pause gives a wrong executor the time to start it).
            time.sleep(0.05)
            self.assertEqual(tracker.started, [str(i) for i in range(event.index + 1)])

    def test_the_consumer_can_cancel_between_calls_of_a_chain(self) -> None:
        tracker = Tracker()
        t = tracker.tool(resource="r")
        cancel = threading.Event()
        jobs = [at.Job(t, at.Call(str(i))) for i in range(3)]
        outcome = {}
        for event in at.Executor().execute(jobs, cancel=cancel):
            outcome[event.index] = event.error
            time.sleep(0.05)  # time for a wrong executor to start the next call before the cancel
            cancel.set()
        self.assertEqual(tracker.started, ["0"])
        self.assertIsNone(outcome[0])
        self.assertIsInstance(outcome[1], at.Cancelled)
        self.assertEqual(str(outcome[2]), 'call "2" was cancelled before it started')

    def test_on_start_runs_before_the_tool_and_may_refuse_it(self) -> None:
        tracker = Tracker()
        t = tracker.tool()
        seen: list[tuple[str, Optional[str], bool]] = []

        def on_start(job: at.Job) -> None:
            call = at.current_call()
            seen.append(
                (
                    job.call.id,
                    call.id if call else None,
                    threading.current_thread() is threading.main_thread(),
                )
            )
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
        saw_cancel: list[bool] = []

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
        saw_cancel: list[bool] = []

        def long(c: at.Call) -> str:
            if c.id == "fast":
                running.wait()
                return "fast"
            running.wait()
            saw_cancel.append(at.cancel_event().wait(10) and at.cancelled())
            returned.set()
            return "slow"

        jobs = [at.Job(raw(long), at.Call(i)) for i in ("fast", "slow1", "slow2")]
        gen = at.Executor().execute(jobs)
        first = next(gen)
        self.assertEqual(first.index, 0)
        gen.close()
        self.assertTrue(returned.is_set())
        self.assertEqual(saw_cancel, [True, True])
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
        self.assertEqual(
            [r.output if r else None for r in results], ["fine", None, "fine", None, None]
        )
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
            return c.id

        events = []
        for event in at.Executor().execute(
            [at.Job(raw(slow_first), at.Call(i)) for i in ("slow", "fast")]
        ):
            events.append(event)
            gate.set()  # the slow call ends only after the fast one was seen
        self.assertEqual([e.index for e in events], [1, 0])
        results, _ = at.Executor().results(
            [at.Job(raw(slow_first), at.Call(i)) for i in ("slow", "fast")]
        )
        self.assertEqual([r.output for r in results], ["slow", "fast"])  # type: ignore[union-attr]
        self.assertEqual(at.Executor().results([]), ([], []))

    def test_a_soak_of_5000_jobs_gives_one_final_event_each_and_leaks_no_thread(self) -> None:
        retire_pool_threads()  # those earlier tests left idle would count as this batch's
        others = sum(t.name != "agenttool-worker" for t in threading.enumerate())
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
        # The batch's threads go back to the shared pool and an idle pool thread retires: once
        # they have, no thread is left behind.  (How many pool threads a batch used is not a
        # rule: a thread between its task's end and its return to the pool may see a new one
        # started beside it; at most max_parallel tools ran at once, as the tests above hold.)
        retire_pool_threads()
        self.assertEqual(at._workers.threads(), [])
        self.assertEqual(threading.active_count(), others)


def run_when(count: Callable[[], int], target: int, then: Callable[[], None]) -> threading.Thread:
    """A thread that calls ``then`` once ``count()`` reached ``target`` and a moment passed
    in which a broken bound would have let one more call start."""

    def watch() -> None:
        deadline = time.monotonic() + 20
        while count() < target and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.05)
        then()

    thread = threading.Thread(target=watch)
    thread.start()
    return thread


class TestExecutorBounds(unittest.TestCase):
    def test_max_parallel_bounds_the_executor_across_concurrent_batches(self) -> None:
        for n_threads, bound in ((16, 8), (4, 3)):
            tracker = Tracker()
            gate = threading.Event()
            t = tracker.tool(wait=lambda c, gate=gate: gate.wait(20))
            ex = at.Executor(max_parallel=bound)
            outcomes: list[list[Optional[BaseException]]] = []

            def batch(ex: at.Executor = ex, t: at.Tool = t, out: list[Any] = outcomes) -> None:
                out.append(ex.results([at.Job(t, at.Call(str(i))) for i in range(2)])[1])

            watcher = run_when(lambda tracker=tracker: tracker.active, bound, gate.set)
            threads = [threading.Thread(target=batch) for _ in range(n_threads)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
            watcher.join(30)
            self.assertEqual(outcomes, [[None, None]] * n_threads)
            self.assertEqual(tracker.peak, bound)

    def test_two_batches_never_run_one_resource_or_a_sequential_tool_beside_anything(self) -> None:
        self.check_bounded_calls({"resource": "shell"})
        self.check_bounded_calls({"sequential": True})

    def check_bounded_calls(self, options: dict[str, Any]) -> None:
        tracker = Tracker()
        lock = threading.Lock()
        bounded_active = [0]
        seen: list[tuple[int, int]] = []  # (bounded calls, all calls) running, per look

        def bounded(c: at.Call, tracker: Tracker = tracker) -> None:
            with lock:
                bounded_active[0] += 1
            for _ in range(2):
                with lock:
                    seen.append((bounded_active[0], tracker.active))
                time.sleep(0.01)
            with lock:
                bounded_active[0] -= 1

        t = tracker.tool(wait=bounded, **options)
        plain = tracker.tool("plain", wait=lambda c: time.sleep(0.01))
        ex = at.Executor()
        batch = [at.Job(t, at.Call("r")), at.Job(t, at.Call("s")), at.Job(plain, at.Call("p"))]
        threads = [threading.Thread(target=ex.results, args=(batch,)) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        self.assertEqual(len(tracker.started), 18)
        self.assertEqual({bounded for bounded, _ in seen}, {1}, options)
        if options.get("sequential"):
            self.assertEqual({everything for _, everything in seen}, {1})

    def test_an_agent_as_a_tool_on_the_same_executor_does_not_deadlock(self) -> None:
        for ex in (at.Executor(max_parallel=1), at.Executor(), at.Executor(sequential=True)):
            leaf = raw(lambda c: "leaf " + c.id, name="leaf", resource="shared")

            def agent(c: at.Call, ex: at.Executor = ex, leaf: at.Tool = leaf) -> str:
                results, errors = ex.results([at.Job(leaf, at.Call(c.id + str(i))) for i in "ab"])
                return " ".join(r.output for r in results)  # type: ignore[union-attr, misc]

            outer = raw(agent, name="agent", resource="shared")
            results, errors = ex.results([at.Job(outer, at.Call("x")), at.Job(outer, at.Call("y"))])
            self.assertEqual(errors, [None, None])
            self.assertEqual(
                [r.output for r in results],  # type: ignore[union-attr]
                ["leaf xa leaf xb", "leaf ya leaf yb"],
            )

    def test_nested_batches_finish_at_the_thread_cap_and_batches_beyond_it_wait(self) -> None:
        code = """
        import threading
        at.set_max_threads(2)
        at._workers.idle_seconds = 120  # no thread retires idle: only the cap takes them back
        leaf = at.new_func("leaf", "", None, lambda c: c.id)

        def agent(c):
            jobs = [at.Job(leaf, at.Call(c.id + str(i))) for i in range(3)]
            results, _ = at.Executor().results(jobs)
            return ",".join(r.output for r in results)

        outer = at.new_func("agent", "", None, agent)
        out = []
        def host(n):
            jobs = [at.Job(outer, at.Call(f"{n}.{i}")) for i in range(4)]
            results, errors = at.Executor().results(jobs)
            out.append((errors == [None] * 4, results[3].output))
        threads = [threading.Thread(target=host, args=(n,)) for n in range(6)]
        for t in threads: t.start()
        for t in threads: t.join(60)
        # A thread past the cap leaves the pool just after its last task returns, which may be
        # after the batch that task belonged to has: wait for the pool to settle at the cap.
        import time
        deadline = time.monotonic() + 30
        while len(at._workers.threads()) > 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        print(sorted(out)[0], len(out), len(at._workers.threads()) <= 2)
        """
        isolated(self, code, "(True, '0.30,0.31,0.32') 6 True\n")

    def test_idle_threads_retire_and_the_cap_is_checked(self) -> None:
        with self.assertRaises(ValueError):
            at.set_max_threads(0)
        previous = at.set_max_threads(5)
        self.assertEqual(at.set_max_threads(previous), 5)
        self.assertEqual(previous, at.DEFAULT_MAX_THREADS)


class TestExecutorFairness(unittest.TestCase):
    """A long batch hands its places from call to call only while nobody else waits: a batch
    arriving at a busy executor is let in at the next call that returns, never starved."""

    def test_a_second_batch_gets_a_place_before_a_long_batch_ends(self) -> None:
        ex = at.Executor(max_parallel=2)
        b_waits = threading.Event()
        b_ran = threading.Event()
        holding = threading.Barrier(3, timeout=10)  # A's first two calls and the test
        order: list[str] = []

        def long_call(c: at.Call) -> str:
            if int(c.id) < 2:  # the two calls holding the places return once B waits for one
                holding.wait()
                b_waits.wait(10)
            elif not b_ran.wait(5):  # a later call of A runs only after B had its turn
                order.append("A starved B")
            order.append("A" + c.id)
            return c.id

        def b_call(c: at.Call) -> str:
            order.append("B")
            b_ran.set()
            return "b"

        a_jobs = [at.Job(raw(long_call), at.Call(str(i))) for i in range(20)]
        a_done = threading.Thread(target=ex.results, args=(a_jobs,))
        a_done.start()
        holding.wait()  # A holds both places
        b_results: list[Any] = []
        b = threading.Thread(
            target=lambda: b_results.append(ex.results([at.Job(raw(b_call), at.Call("b"))]))
        )
        b.start()
        for _ in range(1000):  # until B's call waits in the executor's line (internal view)
            if ex._bounds_now.line:
                break
            time.sleep(0.01)
        b_waits.set()
        a_done.join(30)
        b.join(30)
        self.assertNotIn("A starved B", order)
        self.assertLess(order.index("B"), 3, order)
        self.assertEqual(len(order), 21)


class TestTimeouts(unittest.TestCase):
    def test_a_call_past_its_timeout_completes_at_once_and_sees_cancelled(self) -> None:
        saw: list[bool] = []
        release = threading.Event()

        def slow(c: at.Call) -> str:
            saw.append(at.cancel_event().wait(20))
            release.wait(20)  # ignores cancellation a while longer: the job does not wait
            return "late"

        for t, ex in (
            (at.new_func("slow", "", None, slow, timeout=0.05), at.Executor()),
            (at.new_func("slow", "", None, slow), at.Executor(timeout=0.05)),
        ):
            saw.clear()
            release.clear()
            events = list(ex.execute([at.Job(t, at.Call("1"))]))
            self.assertEqual(len(events), 1)
            self.assertEqual(
                at.error_result(events[0].error).output,  # type: ignore[arg-type]
                'Error: tool "slow" timed out after 0.05 s',
            )
            self.assertIsInstance(events[0].error, TimeoutError)
            release.set()

    def test_the_message_writes_whole_seconds_plainly(self) -> None:
        t = at.new_func("x", "", None, lambda c: "", timeout=30)
        self.assertEqual(at.timeout_of(t), 30)
        self.assertIsNone(at.timeout_of(raw(lambda c: "")))
        with self.assertRaises(ValueError):
            at.new_func("x", "", None, lambda c: "", timeout=-1)
        with self.assertRaises(ValueError):
            at.Executor(timeout=0)

    def test_a_timed_out_async_tool_has_its_task_cancelled(self) -> None:
        cancelled_task = threading.Event()

        async def forever() -> str:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled_task.set()
                raise
            return "never"

        t = at.tool(forever, timeout=0.05)
        _, errors = at.Executor().results([at.Job(t, at.Call("1"))])
        self.assertEqual(str(errors[0]), 'tool "forever" timed out after 0.05 s')
        self.assertTrue(cancelled_task.wait(10))

        async def host() -> list[Any]:
            return [e async for e in at.Executor().aexecute([at.Job(t, at.Call("2"))])]

        cancelled_task.clear()
        events = asyncio.run(host())
        self.assertEqual(str(events[0].error), 'tool "forever" timed out after 0.05 s')
        self.assertTrue(cancelled_task.is_set())

    def test_a_timed_out_tool_keeps_its_resource_until_it_returns(self) -> None:
        release = threading.Event()
        order: list[str] = []

        def stuck(c: at.Call) -> str:
            order.append("start " + c.id)
            if c.id == "1":
                release.wait(20)
            order.append("end " + c.id)
            return c.id

        t = at.new_func("stuck", "", None, stuck, resource="db", timeout=0.05)
        jobs = [at.Job(t, at.Call("1")), at.Job(t, at.Call("2"))]
        events = []
        for event in at.Executor().execute(jobs):
            events.append(event)
            if event.index == 0:
                self.assertEqual(order, ["start 1"])  # 2 waits while 1 still runs
                release.set()
        self.assertIsInstance(events[0].error, TimeoutError)
        self.assertEqual(order, ["start 1", "end 1", "start 2", "end 2"])

    def test_cancel_ends_a_chain_waiting_behind_a_tool_that_never_returns(self) -> None:
        release = threading.Event()

        def stuck(c: at.Call) -> str:
            if c.id == "1":
                release.wait(30)  # ignores cancellation
            return c.id

        t = at.new_func("stuck", "", None, stuck, resource="db", timeout=0.05)
        jobs = [at.Job(t, at.Call(str(i))) for i in range(1, 4)]
        cancel = threading.Event()
        events = []
        try:
            for event in at.Executor().execute(jobs, cancel=cancel):
                events.append(event)
                cancel.set()  # after the timeout of call 1: calls 2 and 3 never start
        finally:
            release.set()
        self.assertEqual([e.index for e in events], [0, 1, 2])
        self.assertIsInstance(events[0].error, TimeoutError)
        self.assertEqual(str(events[2].error), 'call "3" was cancelled before it started')


class TestOutputLimits(unittest.TestCase):
    def test_long_output_is_cut_head_and_tail_and_kept_whole_on_the_result(self) -> None:
        t = at.new_func("long", "", None, lambda c: "a" * 50 + "b" * 50, max_output=10)
        results, _ = at.Executor().results([at.Job(t, at.Call("1"))])
        r = results[0]
        assert r is not None
        self.assertEqual(r.output, "aaaaa\n[... 90 characters cut ...]\nbbbbb")
        self.assertEqual(r.full_output, "a" * 50 + "b" * 50)
        short, _ = at.Executor(max_output=1000).results([at.Job(t, at.Call("2"))])
        self.assertEqual(short[0].output, r.output)  # the tool's own limit wins  # type: ignore[union-attr]
        plain = raw(lambda c: "x" * 20)
        cut, _ = at.Executor(max_output=4).results([at.Job(plain, at.Call("3"))])
        self.assertEqual(cut[0].output, "xx\n[... 16 characters cut ...]\nxx")  # type: ignore[union-attr]
        whole, _ = at.Executor(max_output=40).results([at.Job(plain, at.Call("4"))])
        self.assertIsNone(whole[0].full_output)  # type: ignore[union-attr]

    def test_text_parts_and_error_messages_are_cut_too(self) -> None:
        t = raw(lambda c: at.parts({"type": "text", "text": "y" * 30}), max_output=6)
        results, _ = at.Executor().results([at.Job(t, at.Call("1"))])
        self.assertEqual(
            results[0].output,  # type: ignore[union-attr]
            [{"type": "text", "text": "yyy\n[... 24 characters cut ...]\nyyy"}],
        )

        def fails(c: at.Call) -> str:
            raise ValueError("e" * 40)

        _, errors = at.Executor(max_output=8).results([at.Job(raw(fails), at.Call("2"))])
        self.assertEqual(
            at.error_result(errors[0]).output,  # type: ignore[arg-type]
            "Error: eeee\n[... 32 characters cut ...]\neeee",
        )
        self.assertEqual(str(errors[0]), "e" * 40)  # the host keeps the whole message

    def test_a_slow_consumer_gets_the_latest_progress_not_an_unbounded_queue(self) -> None:
        sent = threading.Event()
        go = threading.Event()

        def chatty(c: at.Call) -> str:
            for i in range(10_000):
                at.progress(str(i))
            sent.set()
            go.wait(20)  # every update was sent before the consumer reads a second event
            return "done"

        gen = at.Executor().execute([at.Job(raw(chatty), at.Call("1"))])
        events = [next(gen)]
        self.assertTrue(sent.wait(20))
        go.set()
        events.extend(gen)
        progress = [e.result.output for e in events if not e.final]  # type: ignore[union-attr]
        self.assertLessEqual(len(progress), 1 + 16)
        self.assertEqual(progress[-1], "9999")
        self.assertEqual(events[-1].result.output, "done")  # type: ignore[union-attr]


class TestFaultsNeverHang(unittest.TestCase):
    """Each fault once as it was found and once as a case of the same class."""

    def test_an_async_tool_raising_systemexit_completes_and_the_loop_survives(self) -> None:
        code = """
        import asyncio

        class Custom(BaseException):
            pass

        async def boom(kind: str) -> str:
            await asyncio.sleep(0)
            raise {"exit": SystemExit("argparse says no"), "interrupt": KeyboardInterrupt(),
                   "custom": Custom("mine")}[kind]

        async def fine() -> str:
            await asyncio.sleep(0)
            return "fine"

        t, ok = at.tool(boom), at.tool(fine)
        for kind in ("exit", "interrupt", "custom"):
            _, errors = at.Executor().results([at.Job(t, at.Call("1", {"kind": kind}))])
            print(errors[0])
            results, _ = at.Executor().results([at.Job(ok, at.Call("2"))])
            print(results[0].output)
        """
        isolated(
            self,
            code,
            'tool "boom" crashed: SystemExit: argparse says no\nfine\n'
            'tool "boom" crashed: KeyboardInterrupt\nfine\n'
            'tool "boom" crashed: Custom: mine\nfine\n',
        )

    @unittest.skipIf(not hasattr(os, "fork"), "needs os.fork")
    def test_batches_work_in_a_child_after_fork(self) -> None:
        code = """
        import os, threading

        async def hello() -> str:
            return "async"

        release = threading.Event()

        def held(c):
            release.wait(30)
            return "held"

        ex = at.Executor(max_parallel=1)
        sync = at.new_func("s", "", None, lambda c: "sync")
        jobs = [at.Job(at.tool(hello), at.Call("1")), at.Job(sync, at.Call("2"))]
        # flushed before the fork: a child inherits unwritten output and its own line would
        # otherwise come first (stdout to a pipe is buffered without PYTHONUNBUFFERED)
        print([r.output for r in at.Executor().results(jobs)[0]], flush=True)
        # a batch still running in the parent holds ex's one slot while the process forks
        gen = ex.execute([at.Job(at.new_func("held", "", None, held), at.Call("h"))])
        threading.Thread(target=lambda: list(gen)).start()
        while not at._workers.threads():
            pass
        import time; time.sleep(0.2)
        pid = os.fork()
        if pid == 0:
            out = [r.output for r in at.Executor().results(jobs)[0]]
            out += [r.output for r in ex.results(jobs[1:])[0]]
            os.write(1, (repr(out) + "\\n").encode())
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        release.set()
        print(status)
        """
        isolated(self, code, "['async', 'sync']\n['async', 'sync', 'sync']\n0\n")

    def test_whatever_escapes_a_job_completes_it_and_keeps_the_pool_alive(self) -> None:
        code = """
        class BadStr(Exception):
            def __str__(self):
                raise RuntimeError("no text")

        class NoName:
            description, parameters = "", None
            @property
            def name(self):
                raise KeyError("name")
            def execute(self, call):
                return at.text("never")

        def raises_bad(c):
            raise BadStr()

        def exits_bad(c):
            class Worse(SystemExit):
                def __str__(self):
                    raise ValueError("nope")
            raise Worse()

        def bad_start(job):
            raise BadStr()

        good = at.new_func("good", "", None, lambda c: "ok")
        cases = [
            ("plain function", at.Executor(), lambda c: at.text("x")),
            ("name raises", at.Executor(), NoName()),
            ("str raises", at.Executor(), at.new_func("bad", "", None, raises_bad)),
            ("str of crash raises", at.Executor(), at.new_func("worse", "", None, exits_bad)),
            ("on_start raises", at.Executor(on_start=bad_start), good),
        ]
        for label, ex, t in cases:
            events = list(ex.execute([at.Job(t, at.Call("1")), at.Job(good, at.Call("2"))]))
            finals = sorted((e.index, e.error is None) for e in events if e.final)
            errors = [e.error for e in events if e.error]
            texts = [at.error_result(e).output.startswith("Error: ") for e in errors]
            print(label, finals, texts)
        print(at.Executor().results([at.Job(good, at.Call("3"))])[0][0].output)
        """
        isolated(
            self,
            code,
            "plain function [(0, False), (1, True)] [True]\n"
            "name raises [(0, False), (1, True)] [True]\n"
            "str raises [(0, False), (1, True)] [True]\n"
            "str of crash raises [(0, False), (1, True)] [True]\n"
            "on_start raises [(0, False), (1, False)] [True, True]\n"
            "ok\n",
        )

    def test_a_batch_carries_on_when_no_thread_can_be_started(self) -> None:
        code = """
        import threading
        started = []
        real = threading.Thread.start

        def refuse(self):
            if self.name == "agenttool-worker" and len(started) >= LIMIT:
                raise RuntimeError("can't start new thread")
            if self.name == "agenttool-worker":
                started.append(self)
            real(self)

        threading.Thread.start = refuse
        ran = []
        t = at.new_func("t", "", None, lambda c: ran.append(c.id) or c.id)
        # No thread at all: each call fails saying so (the consumer never runs a call itself).
        LIMIT = 0
        results, errors = at.Executor().results([at.Job(t, at.Call(str(i))) for i in range(6)])
        print(results == [None] * 6, all("no thread could be started" in str(e) for e in errors))
        LIMIT = 1  # one thread: it runs them all
        jobs = [at.Job(t, at.Call(str(i))) for i in range(6)]
        results, errors = at.Executor().results(jobs)
        print([r.output for r in results], errors == [None] * 6)
        count = len(ran)
        import time; time.sleep(0.2)
        print(count == len(ran) == 6)
        """
        isolated(
            self,
            code,
            "True True\n['0', '1', '2', '3', '4', '5'] True\nTrue\n",
        )

    def test_an_async_tool_running_a_batch_of_async_tools_does_not_deadlock(self) -> None:
        code = """
        import asyncio

        async def leaf(n: int) -> int:
            await asyncio.sleep(0)
            return n + 1

        async def agent(depth: int) -> int:
            if depth == 0:
                return 0
            inner = at.tool(agent) if depth > 1 else at.tool(leaf)
            args = {"depth": depth - 1} if depth > 1 else {"n": 0}
            results, errors = at.Executor().results([at.Job(inner, at.Call("x", args))] * 2)
            assert errors == [None, None], errors
            return int(results[0].output) + 1

        def first(t, args):
            return at.Executor().results([at.Job(t, at.Call("a", args))])[0][0].output

        for depth in (1, 3):
            print(first(at.tool(agent), {"depth": depth}))
        print(first(at.tool(leaf), {"n": 41}))
        """
        isolated(self, code, "2\n4\n42\n")

    def test_an_exception_whose_str_raises_still_gives_a_message(self) -> None:
        class BadStr(Exception):
            def __str__(self) -> str:
                raise RuntimeError("no text")

        class BadBoth(BadStr):
            pass

        self.assertEqual(at.error_result(BadStr()).output, "Error: BadStr: <str() failed>")
        ts = at.ToolSet([raw(lambda c: (_ for _ in ()).throw(BadBoth()), name="bad")])
        ts.append(raw(lambda c: "fine", name="fine"))
        items = ts.run(
            [
                {"type": "function_call", "call_id": "1", "name": "bad", "arguments": "{}"},
                {"type": "function_call", "call_id": "2", "name": "fine", "arguments": "{}"},
            ]
        )
        self.assertEqual([i["output"] for i in items], ["Error: BadBoth: <str() failed>", "fine"])

    def test_cancelling_an_async_tool_before_it_starts_leaves_no_warning(self) -> None:
        code = """
        import asyncio, threading, warnings, gc
        warnings.simplefilter("always")
        started = threading.Event()

        async def never(n: int) -> str:
            return "ran"

        def block_loop(c):
            loop = at._event_loop()
            gate = threading.Event()
            loop.call_soon_threadsafe(lambda: gate.wait(5))  # the loop is busy a moment
            return "ok"

        cancel = threading.Event()
        cancel.set()
        jobs = [at.Job(at.tool(never), at.Call(str(i), {"n": i})) for i in range(4)]
        for i in range(20):
            gen = at.Executor().execute(jobs)
            ev = next(gen)
            gen.close()
        gc.collect()
        print("done")
        """
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; sys.path.insert(0, sys.argv[1]); import agenttool as at\n"
                + textwrap.dedent(code),
                ROOT,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(done.stdout, "done\n", done.stderr)
        self.assertNotIn("never awaited", done.stderr)

    def test_an_abandoned_event_generator_pins_no_worker_thread(self) -> None:
        code = """
        import threading
        at._workers.idle_seconds = 0.05
        t = at.new_func("t", "", None, lambda c: c.id)
        held = []
        for n in range(3):
            gen = at.Executor().execute([at.Job(t, at.Call(str(i))) for i in range(8)])
            next(gen)
            held.append(gen)  # referenced, never closed, never read again
        import time
        deadline = time.monotonic() + 20
        while at._workers.threads() and time.monotonic() < deadline:
            time.sleep(0.05)
        print(len(at._workers.threads()))
        """
        isolated(self, code, "0\n")

    def test_a_hand_written_async_execute_fails_its_job_without_a_warning(self) -> None:
        code = """
        import gc, warnings
        warnings.simplefilter("always")

        class AsyncExecute:
            name, description, parameters = "ae", "", None

            async def execute(self, call):
                return at.text("never")

        _, errors = at.Executor().results([at.Job(AsyncExecute(), at.Call("1"))])
        gc.collect()
        print(errors[0])
        """
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; sys.path.insert(0, sys.argv[1]); "
                "import agenttool as at\n" + textwrap.dedent(code),
                ROOT,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(done.stdout, 'tool "ae" returned coroutine, not a Result\n', done.stderr)
        self.assertNotIn("never awaited", done.stderr)

    @unittest.skipIf(os.name != "posix", "signals")
    def test_one_ctrl_c_ends_a_batch_whose_tool_ignores_cancellation(self) -> None:
        code = """
        import os, signal, threading
        stuck = threading.Event()

        def ignores(c):
            threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
            stuck.wait(60)
            return "late"

        t = at.new_func("i", "", None, ignores)
        try:
            for event in at.Executor().execute([at.Job(t, at.Call("1"))]):
                pass
        except KeyboardInterrupt:
            print("interrupted once")
        """
        isolated(self, code, "interrupted once\n", timeout=30)

    def test_a_ctrl_c_in_the_loop_s_body_does_not_wait_for_running_tools(self) -> None:
        # The Ctrl-C lands while the consumer handles an event, not while it waits
        # for one; the tool left running ignores its cancel and would hold the exit until its
        # 60 s timeout.  Through the with form, and through results (ToolSet.run's way in).
        code = """
        import os, signal, threading, time
        stuck = threading.Event()

        def ignores(c):
            stuck.wait(120)
            return "late"

        hang = at.new_func("hang", "", None, ignores, timeout=60)
        fast = at.new_func("fast", "", None, lambda c: "quick")
        jobs = [at.Job(hang, at.Call("h")), at.Job(fast, at.Call("f"))]
        try:
            with at.Executor().execute(jobs) as events:
                for event in events:
                    if event.final:
                        os.kill(os.getpid(), signal.SIGINT)
                        time.sleep(30)  # the Ctrl-C lands here, in the body
        except KeyboardInterrupt:
            print("interrupted in the body")

        def on_update(result):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)

        def talks(c):
            at.progress("working")
            stuck.wait(120)
            return "late"

        chatty = at.new_func("chatty", "", None, talks, timeout=60)
        try:
            at.Executor().results([at.Job(chatty, at.Call("c", on_update=on_update))])
        except KeyboardInterrupt:
            print("interrupted in results")
        """
        isolated(self, code, "interrupted in the body\ninterrupted in results\n", timeout=45)


# ---------------------------------------------------------------------------------------------
# Provider formats: definitions out, calls in, output items back
# ---------------------------------------------------------------------------------------------


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 8).decode("ascii")  # 16 bytes
PNG_URL = "data:image/png;base64," + PNG
PDF = base64.b64encode(b"%PDF-1.4 tiny").decode("ascii")  # 13 bytes

WEATHER: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "units": {"type": "string", "enum": ["c", "f"]},
        },
        "required": ["city"],
    },
}
STRICT_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "search",
    "description": "Search the notes.",
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": ["integer", "null"]},
            "tags": {
                "type": "array",
                "items": {"$ref": "#/$defs/tag"},
            },
        },
        "required": ["query", "limit", "tags"],
        "additionalProperties": False,
        "$defs": {"tag": {"type": "string", "pattern": "^[a-z]+$"}},
    },
    "strict": True,
}
NO_ARGS: dict[str, Any] = {"type": "function", "name": "now", "description": "", "parameters": None}
FORMATS = at._FORMATS  # every format the table has: a new one fails where it lacks a case


def text_part(s: str) -> dict[str, Any]:
    return {"type": "text", "text": s}


def image_part(url: str = PNG_URL) -> dict[str, Any]:
    return {"type": "input_image", "image_url": url, "detail": "auto"}


def pdf_part() -> dict[str, Any]:
    return {"type": "input_file", "filename": "report.pdf", "file_data": PDF}


def calls_for(fmt: str, n: int = 1) -> list[Any]:
    return [at._ProviderCall(f"id{i}", "add", "{}") for i in range(n)]


def run_calls(
    items: Any, tools: dict[str, Callable[[Any], Any]], format: str | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """What ToolSet.run does, with plain functions: read, run in order, answer."""
    fmt, calls = at._read_calls(items, format)
    outcomes: list[Any] = []
    for c in calls:
        try:
            args = json.loads(c.arguments or "{}") if isinstance(c.arguments, str) else c.arguments
            outcomes.append(tools[c.name](args))
        except Exception as exc:
            outcomes.append(exc)
    return fmt, at._output_items(fmt, calls, outcomes)


def add(args: dict[str, Any]) -> Any:
    return at.Result(str(args["a"] + args["b"]))


TOOLS: dict[str, Callable[[Any], Any]] = {"add": add}


# Round trips with dicts, as a provider sends them.
class TestRoundTrip(unittest.TestCase):
    def test_responses(self) -> None:
        items = [
            {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a":1,"b":2}'},
            {"type": "function_call", "call_id": "c2", "name": "add", "arguments": '{"a":1}'},
        ]
        fmt, out = run_calls(items, TOOLS)
        self.assertEqual(fmt, "responses")
        self.assertEqual(
            out,
            [
                {"type": "function_call_output", "call_id": "c1", "output": "3"},
                {"type": "function_call_output", "call_id": "c2", "output": "Error: KeyError: 'b'"},
            ],
        )

    def test_chat(self) -> None:
        message = {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":1,"b":2}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":5,"b":2}'},
                },
            ],
        }
        fmt, out = run_calls(message, TOOLS)
        self.assertEqual(fmt, "chat")
        self.assertEqual(
            out,
            [
                {"role": "tool", "tool_call_id": "c1", "content": "3"},
                {"role": "tool", "tool_call_id": "c2", "content": "7"},
            ],
        )

    def test_anthropic(self) -> None:
        message = {
            "type": "message",
            "role": "assistant",
            "stop_reason": "tool_use",
            "content": [
                {"type": "text", "text": "adding"},
                {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1, "b": 2}},
                {"type": "tool_use", "id": "t2", "name": "nope", "input": {}},
            ],
        }
        fmt, out = run_calls(message, TOOLS)
        self.assertEqual(fmt, "anthropic")
        self.assertEqual(
            out,
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "3"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": [{"type": "text", "text": "KeyError: 'nope'"}],
                    "is_error": True,
                },
            ],
        )

    def test_gemini(self) -> None:
        response = {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}},
                            {"functionCall": {"id": "x9", "name": "add", "args": {"a": 2, "b": 2}}},
                        ],
                    }
                }
            ]
        }
        fmt, out = run_calls(response, TOOLS)
        self.assertEqual(fmt, "gemini")
        self.assertEqual(
            out,
            [
                {"functionResponse": {"name": "add", "response": {"output": "3"}}},
                {"functionResponse": {"id": "x9", "name": "add", "response": {"output": "4"}}},
            ],
        )


# Through the contract: ToolSet.run with the executor.
class TestToolSetRun(unittest.TestCase):
    def test_every_format_through_run(self) -> None:
        ts = core_toolset()
        cases: list[tuple[Any, list[dict[str, Any]]]] = [
            (
                [
                    {
                        "type": "function_call",
                        "call_id": "c1",
                        "name": "add",
                        "arguments": '{"a": 1, "b": 2}',
                    },
                    {
                        "type": "function_call",
                        "call_id": "c2",
                        "name": "add",
                        "arguments": '{"a": 1}',
                    },
                ],
                [
                    {"type": "function_call_output", "call_id": "c1", "output": "3"},
                    {
                        "type": "function_call_output",
                        "call_id": "c2",
                        "output": 'Error: missing required property "b"',
                    },
                ],
            ),
            (
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "add", "arguments": '{"a":2,"b":2}'},
                        },
                    ],
                },
                [{"role": "tool", "tool_call_id": "c1", "content": "4"}],
            ),
            (
                {
                    "type": "message",
                    "role": "assistant",
                    "stop_reason": "tool_use",
                    "content": [
                        {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1}},
                    ],
                },
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": [{"type": "text", "text": 'missing required property "b"'}],
                    }
                ],
            ),
            (
                {
                    "candidates": [
                        {
                            "content": {
                                "role": "model",
                                "parts": [
                                    {"functionCall": {"name": "add", "args": {"a": 3, "b": 4}}},
                                ],
                            }
                        }
                    ]
                },
                [{"functionResponse": {"name": "add", "response": {"output": "7"}}}],
            ),
        ]
        for calls, expected in cases:
            self.assertEqual(ts.run(calls), expected)

    def test_definitions_through_the_contract(self) -> None:
        ts = core_toolset()
        self.assertEqual(
            ts.definitions("anthropic"),
            [{"name": "add", "description": "Add two integers.", "input_schema": ADD_SCHEMA}],
        )
        self.assertEqual(ts.definitions("gemini")[0]["parametersJsonSchema"], ADD_SCHEMA)
        with self.assertRaisesRegex(ValueError, "unknown format"):
            ts.definitions("bedrock")


# The real SDK types, built offline.
def _names(module: str, *names: str) -> Any:
    """Names from an SDK module (typed Any: the SDKs need not be installed to check types)."""
    mod = __import__(module, fromlist=["_"])
    return tuple(getattr(mod, n) for n in names)


def _import(name: str) -> Any:
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        return None


pydantic = _import("pydantic")
openai = _import("openai")
anthropic = _import("anthropic")
genai_types = _import("google.genai.types")


def _conform(test: unittest.TestCase, td: Any, value: dict[str, Any]) -> None:
    """``value`` validates as the TypedDict ``td`` and has no key ``td`` does not know."""
    pydantic.TypeAdapter(td).validate_python(value)
    known = set(td.__required_keys__) | set(td.__optional_keys__)
    test.assertLessEqual(set(value), known, f"keys unknown to {td.__name__}")


@needs(openai is not None and pydantic is not None, "the openai SDK is not installed")
class TestOpenAISDK(unittest.TestCase):
    def test_responses_objects(self) -> None:
        Response, ResponseFunctionToolCall = _names(
            "openai.types.responses", "Response", "ResponseFunctionToolCall"
        )

        call = ResponseFunctionToolCall(
            type="function_call",
            id="fc_1",
            call_id="call_1",
            name="add",
            arguments='{"a": 1, "b": 2}',
            status="completed",
        )
        response = Response.model_validate(
            {
                "id": "resp_1",
                "created_at": 0,
                "model": "gpt-5",
                "object": "response",
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "output": [
                    {"type": "reasoning", "id": "rs_1", "summary": []},
                    call.model_dump(),
                    {
                        "type": "function_call",
                        "call_id": "call_2",
                        "name": "add",
                        "arguments": '{"a": 5, "b": 5}',
                    },
                ],
            }
        )
        for items in ([call], response, response.output):
            fmt, out = run_calls(items, TOOLS)
            self.assertEqual(fmt, "responses")
            self.assertEqual(
                out[0], {"type": "function_call_output", "call_id": "call_1", "output": "3"}
            )
        self.assertEqual(run_calls(response, TOOLS)[1][1]["output"], "10")
        self.assertEqual([o["output"] for o in core_toolset().run(response)], ["3", "10"])

    def test_responses_output_items_are_valid_input(self) -> None:
        (FunctionCallOutput,) = _names(
            "openai.types.responses.response_input_param", "FunctionCallOutput"
        )

        calls = calls_for("responses", 3)
        outs: list[Any] = [
            at.Result("3"),
            at.Result([text_part("t"), image_part(), pdf_part()]),
            ValueError("no"),
        ]
        for item in at._output_items("responses", calls, outs):
            _conform(self, FunctionCallOutput, item)

    def test_responses_definitions(self) -> None:
        (FunctionToolParam,) = _names("openai.types.responses", "FunctionToolParam")

        _conform(self, FunctionToolParam, at._provider_definition(STRICT_TOOL, "responses"))
        # FunctionToolParam requires "strict" (nullable); the canonical form omits a false
        # strict, which OpenAI reads as "try strict" (see the report): adding it conforms.
        _conform(
            self,
            FunctionToolParam,
            {**at._provider_definition(WEATHER, "responses"), "strict": False},
        )

    def test_chat_objects(self) -> None:
        (ChatCompletion,) = _names("openai.types.chat", "ChatCompletion")

        completion = ChatCompletion.model_validate(
            {
                "id": "chatcmpl-1",
                "created": 0,
                "model": "gpt-5",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "add", "arguments": '{"a":1,"b":2}'},
                                },
                                {
                                    "id": "call_2",
                                    "type": "custom",
                                    "custom": {"name": "g", "input": "x"},
                                },
                            ],
                        },
                    }
                ],
            }
        )
        message = completion.choices[0].message
        for items in (completion, message, message.tool_calls, completion.choices[0]):
            fmt, out = run_calls(items, TOOLS)
            self.assertEqual(fmt, "chat")
            self.assertEqual(out, [{"role": "tool", "tool_call_id": "call_1", "content": "3"}])
            self.assertEqual(core_toolset().run(items), out)

    def test_chat_items_are_valid(self) -> None:
        ChatCompletionToolMessageParam, ChatCompletionToolParam = _names(
            "openai.types.chat", "ChatCompletionToolMessageParam", "ChatCompletionToolParam"
        )
        (FunctionDefinition,) = _names("openai.types.shared_params", "FunctionDefinition")

        for defn in (WEATHER, STRICT_TOOL, NO_ARGS):
            out = at._provider_definition(defn, "chat")
            _conform(self, ChatCompletionToolParam, out)
            _conform(self, FunctionDefinition, out["function"])
        outs: list[Any] = [at.Result("3"), at.Result([text_part("t"), image_part()]), KeyError("k")]
        for item in at._output_items("chat", calls_for("chat", 3), outs):
            _conform(self, ChatCompletionToolMessageParam, item)


@needs(anthropic is not None and pydantic is not None, "the anthropic SDK is not installed")
class TestAnthropicSDK(unittest.TestCase):
    def test_message_objects(self) -> None:
        Message, ToolUseBlock = _names("anthropic.types", "Message", "ToolUseBlock")

        message = Message.model_validate(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude",
                "content": [
                    {"type": "text", "text": "adding"},
                    {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
                ],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        )
        block = ToolUseBlock(type="tool_use", id="toolu_2", name="add", input={"a": 2, "b": 2})
        expect = {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [{"type": "text", "text": "3"}],
        }
        for items in (message, message.content):
            self.assertEqual(run_calls(items, TOOLS), ("anthropic", [expect]))
            self.assertEqual(core_toolset().run(items), [expect])
        self.assertEqual(run_calls([block], TOOLS)[1][0]["tool_use_id"], "toolu_2")

    def test_items_are_valid(self) -> None:
        MessageParam, ToolParam, ToolResultBlockParam = _names(
            "anthropic.types", "MessageParam", "ToolParam", "ToolResultBlockParam"
        )

        for defn in (WEATHER, STRICT_TOOL, NO_ARGS):
            _conform(self, ToolParam, at._provider_definition(defn, "anthropic"))
        rich = at.Result(
            [
                text_part("t"),
                image_part(),
                image_part("https://example.com/x.png"),
                pdf_part(),
                {"type": "input_file", "file_url": "https://example.com/a.pdf"},
                {
                    "type": "input_file",
                    "filename": "n.txt",
                    "file_data": base64.b64encode(b"hi").decode(),
                },
            ]
        )
        outs: list[Any] = [at.Result("3"), rich, at.Result(""), ValueError("no")]
        items = at._output_items("anthropic", calls_for("anthropic", 4), outs)
        for item in items:
            _conform(self, ToolResultBlockParam, item)
        pydantic.TypeAdapter(MessageParam).validate_python({"role": "user", "content": items})


@needs(genai_types is not None, "the google-genai SDK is not installed")
class TestGeminiSDK(unittest.TestCase):
    def test_response_objects(self) -> None:
        T = genai_types
        response = T.GenerateContentResponse(
            candidates=[
                T.Candidate(
                    content=T.Content(
                        role="model",
                        parts=[
                            T.Part(text="adding"),
                            T.Part(function_call=T.FunctionCall(name="add", args={"a": 1, "b": 2})),
                            T.Part(
                                function_call=T.FunctionCall(
                                    id="fc7", name="add", args={"a": 3, "b": 4}
                                )
                            ),
                        ],
                    )
                )
            ]
        )
        content = response.candidates[0].content
        expect = [
            {"functionResponse": {"name": "add", "response": {"output": "3"}}},
            {"functionResponse": {"id": "fc7", "name": "add", "response": {"output": "7"}}},
        ]
        for items in (response, content, content.parts, response.function_calls):
            self.assertEqual(run_calls(items, TOOLS), ("gemini", expect))
            self.assertEqual(core_toolset().run(items), expect)
        for item in expect:
            T.Part.model_validate(item)

    def test_items_are_valid(self) -> None:
        T = genai_types
        decls = [at._provider_definition(d, "gemini") for d in (WEATHER, STRICT_TOOL, NO_ARGS)]
        for decl in decls:
            T.FunctionDeclaration.model_validate(decl)
        T.Tool.model_validate({"functionDeclarations": decls})
        outs: list[Any] = [
            at.Result("3"),
            at.Result([text_part("t"), image_part(), pdf_part()]),
            ValueError("no"),
        ]
        items = at._output_items("gemini", calls_for("gemini", 3), outs)
        parsed = [T.Part.model_validate(item) for item in items]
        self.assertEqual(parsed[1].function_response.parts[0].inline_data.data[:4], b"\x89PNG")
        self.assertEqual(parsed[2].function_response.response, {"error": "no"})
        T.Content.model_validate({"role": "user", "parts": items})


# ----- definitions out -----------------------------------------------------------------------


class TestDefinitionsOut(unittest.TestCase):
    def test_responses_is_the_canonical_form_copied(self) -> None:
        for defn in (WEATHER, STRICT_TOOL, NO_ARGS):
            out = at._provider_definition(defn, "responses")
            self.assertEqual(out, defn)
        out = at._provider_definition(STRICT_TOOL, "responses")
        out["parameters"]["properties"]["query"]["type"] = "integer"
        self.assertEqual(STRICT_TOOL["parameters"]["properties"]["query"]["type"], "string")

    def test_chat_nests_under_function(self) -> None:
        self.assertEqual(
            at._provider_definition(WEATHER, "chat"),
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": WEATHER["parameters"],
                },
            },
        )
        strict = at._provider_definition(STRICT_TOOL, "chat")
        self.assertIs(strict["function"]["strict"], True)
        self.assertEqual(strict["function"]["parameters"], STRICT_TOOL["parameters"])
        self.assertNotIn("strict", at._provider_definition({**WEATHER, "strict": False}, "chat"))

    def test_anthropic_uses_input_schema_and_carries_strict(self) -> None:
        self.assertEqual(
            at._provider_definition(WEATHER, "anthropic"),
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "input_schema": WEATHER["parameters"],
            },
        )
        strict = at._provider_definition(STRICT_TOOL, "anthropic")
        self.assertIs(strict["strict"], True)
        self.assertEqual(strict["input_schema"], STRICT_TOOL["parameters"])

    def test_anthropic_root_must_be_an_object(self) -> None:
        untyped = {**WEATHER, "parameters": {"properties": {"x": {}}}}
        out = at._provider_definition(untyped, "anthropic")
        self.assertEqual(out["input_schema"], {"type": "object", "properties": {"x": {}}})
        with self.assertRaisesRegex(ValueError, 'tool "get_weather": anthropic needs an object'):
            at._provider_definition({**WEATHER, "parameters": {"type": "array"}}, "anthropic")

    def test_gemini_is_a_function_declaration_with_json_schema(self) -> None:
        self.assertEqual(
            at._provider_definition(STRICT_TOOL, "gemini"),
            {
                "name": "search",
                "description": "Search the notes.",
                "parametersJsonSchema": STRICT_TOOL["parameters"],
            },
        )

    def test_no_parameters_is_the_empty_object_schema(self) -> None:
        empty = {"type": "object", "properties": {}, "required": []}
        self.assertEqual(
            at._provider_definition(NO_ARGS, "chat"),
            {"type": "function", "function": {"name": "now", "parameters": empty}},
        )
        self.assertEqual(
            at._provider_definition(NO_ARGS, "anthropic"), {"name": "now", "input_schema": empty}
        )
        self.assertEqual(
            at._provider_definition(NO_ARGS, "gemini"),
            {"name": "now", "parametersJsonSchema": empty},
        )

    def test_outputs_do_not_share_the_schema(self) -> None:
        for fmt in FORMATS:
            dumped = json.dumps(at._provider_definition(STRICT_TOOL, fmt))
            self.assertIn('"pattern": "^[a-z]+$"', dumped)
        out = at._provider_definition(STRICT_TOOL, "gemini")
        out["parametersJsonSchema"]["required"].append("x")
        self.assertEqual(STRICT_TOOL["parameters"]["required"], ["query", "limit", "tags"])

    def test_names_checked_against_each_provider(self) -> None:
        for fmt in FORMATS:
            at._provider_definition({**WEATHER, "name": "a" * 64}, fmt)
            for bad in ("get weather", "a" * 65, "héllo", "a/b"):
                with self.assertRaises(ValueError) as cm:
                    at._provider_definition({**WEATHER, "name": bad}, fmt)
                msg = str(cm.exception)
                self.assertIn(f'tool "{bad}"', msg)
                self.assertIn(f"{fmt}'s rule", msg)
        # Gemini: a letter or underscore first; dots and colons allowed.
        with self.assertRaisesRegex(ValueError, r'tool "1st".*a letter or "_" first'):
            at._provider_definition({**WEATHER, "name": "1st"}, "gemini")
        at._provider_definition({**WEATHER, "name": "1st"}, "anthropic")
        self.assertEqual(
            at._provider_definition({**WEATHER, "name": "ns.tool:v2"}, "gemini")["name"],
            "ns.tool:v2",
        )
        with self.assertRaisesRegex(ValueError, r"letters, digits, \"_\" and \"-\", 1 to 64"):
            at._provider_definition({**WEATHER, "name": "ns.tool"}, "chat")

    def test_bad_definitions(self) -> None:
        with self.assertRaisesRegex(
            ValueError,
            'unknown format "openai": expected one of "responses", "chat", "anthropic", "gemini"',
        ):
            at._provider_definition(WEATHER, "openai")
        with self.assertRaisesRegex(ValueError, "missing the tool's name"):
            at._provider_definition({"type": "function"}, "chat")
        with self.assertRaisesRegex(ValueError, 'expected a definition of type "function"'):
            at._provider_definition({**WEATHER, "type": "web_search"}, "chat")
        with self.assertRaisesRegex(ValueError, "parameters must be a JSON Schema object"):
            at._provider_definition({**WEATHER, "parameters": True}, "gemini")


# ----- calls in ------------------------------------------------------------------------------


class TestReadCalls(unittest.TestCase):
    def check(self, items: Any, fmt: str, expected: list[tuple[str, str, Any]]) -> None:
        got_fmt, calls = at._read_calls(items, None)
        self.assertEqual(got_fmt, fmt)
        self.assertEqual([(c.call_id, c.name, c.arguments) for c in calls], expected)
        # The same with the format given.
        self.assertEqual(at._read_calls(items, fmt)[1], calls)

    def test_responses_items(self) -> None:
        output = [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_a",
                "name": "add",
                "arguments": '{"a": 1, "b": 2}',
                "status": "completed",
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "and"}],
            },
            {"type": "function_call", "call_id": "call_b", "name": "add", "arguments": "{oops"},
        ]
        expected = [("call_a", "add", '{"a": 1, "b": 2}'), ("call_b", "add", "{oops")]
        self.check(output, "responses", expected)
        self.check({"object": "response", "id": "resp_1", "output": output}, "responses", expected)
        self.check(output[1], "responses", expected[:1])
        fmt, calls = at._read_calls(iter(output), None)
        self.assertEqual([(c.call_id, c.name, c.arguments) for c in calls], expected)

    def test_chat_shapes(self) -> None:
        tool_calls = [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a":1,"b":2}'},
            },
            {"id": "call_2", "type": "custom", "custom": {"name": "grammar", "input": "x"}},
            {"id": "call_3", "type": "function", "function": {"name": "add", "arguments": ""}},
        ]
        message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
        completion = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
        }
        expected = [("call_1", "add", '{"a":1,"b":2}'), ("call_3", "add", "")]
        for items in (tool_calls, message, [message], completion, completion["choices"][0]):
            self.check(items, "chat", expected)
        self.check({"role": "assistant", "content": "done", "tool_calls": None}, "chat", [])

    def test_anthropic_shapes(self) -> None:
        content = [
            {"type": "thinking", "thinking": "...", "signature": "s"},
            {"type": "text", "text": "Let me add."},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
            {"type": "tool_use", "id": "toolu_2", "name": "add", "input": {}},
        ]
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": "tool_use",
        }
        expected = [("toolu_1", "add", {"a": 1, "b": 2}), ("toolu_2", "add", {})]
        for items in (message, content, content[2:]):
            self.check(items, "anthropic", expected)
        self.check({**message, "content": content[:2], "stop_reason": "end_turn"}, "anthropic", [])

    def test_gemini_shapes(self) -> None:
        parts = [
            {"text": "Adding."},
            {"functionCall": {"id": "fc-9", "name": "add", "args": {"a": 1, "b": 2}}},
            {"functionCall": {"name": "add", "args": {"a": 3, "b": 4}}, "thoughtSignature": "x"},
            {"function_call": {"name": "now"}},  # snake_case, as model_dump() writes it
        ]
        content = {"role": "model", "parts": parts}
        response = {"candidates": [{"content": content, "finishReason": "STOP"}]}
        expected = [
            ("fc-9", "add", {"a": 1, "b": 2}),
            ("call_1", "add", {"a": 3, "b": 4}),
            ("call_2", "now", {}),
        ]
        for items in (response, content, parts, [content]):
            self.check(items, "gemini", expected)
        bare = [{"name": "add", "args": {"a": 1, "b": 2}}]
        self.check(bare, "gemini", [("call_0", "add", {"a": 1, "b": 2})])

    def test_gemini_minted_ids_are_stable_unique_and_never_sent_back(self) -> None:
        parts = [
            {"functionCall": {"name": "add", "args": {"a": 1, "b": 1}}},
            {"functionCall": {"id": "call_0", "name": "add", "args": {"a": 2, "b": 2}}},
        ]
        fmt, calls = at._read_calls(parts, None)
        self.assertEqual([c.call_id for c in calls], ["call_0_1", "call_0"])
        self.assertEqual([c.minted for c in calls], [True, False])
        self.assertEqual(at._read_calls(parts, None)[1], calls)
        items = at._output_items(fmt, calls, [at.Result("2"), at.Result("4")])
        self.assertEqual(
            items,
            [
                {"functionResponse": {"name": "add", "response": {"output": "2"}}},
                {"functionResponse": {"id": "call_0", "name": "add", "response": {"output": "4"}}},
            ],
        )

    def test_no_calls(self) -> None:
        self.assertEqual(at._read_calls([], None), ("responses", []))
        self.assertEqual(at._read_calls([], "gemini"), ("gemini", []))
        self.assertEqual(at._read_calls({"candidates": []}, None), ("gemini", []))
        self.assertEqual(
            at._read_calls([{"type": "message", "role": "assistant", "content": []}], None),
            ("responses", []),
        )

    def test_mixed_formats_are_refused(self) -> None:
        items = [
            {"type": "function_call", "call_id": "c1", "name": "add", "arguments": "{}"},
            {"type": "tool_use", "id": "t1", "name": "add", "input": {}},
        ]
        with self.assertRaisesRegex(
            ValueError, r"items mix provider formats \(responses at item 0; anthropic at item 1\)"
        ):
            at._read_calls(items, None)

    def test_a_format_that_disagrees_is_refused(self) -> None:
        items = [{"type": "tool_use", "id": "t1", "name": "add", "input": {}}]
        with self.assertRaisesRegex(
            ValueError, 'format "chat" was given but item 0 is in the anthropic format'
        ):
            at._read_calls(items, "chat")
        with self.assertRaisesRegex(ValueError, 'unknown format "claude"'):
            at._read_calls(items, "claude")

    def test_shapes_nobody_uses_are_refused(self) -> None:
        with self.assertRaisesRegex(ValueError, r"item 1: expected a provider's item .*got str"):
            at._read_calls([{"type": "message"}, "add(1, 2)"], None)
        with self.assertRaisesRegex(
            ValueError, "item 0: not a function call of any provider.*got arguments, name"
        ):
            at._read_calls([{"name": "add", "arguments": "{}"}], None)
        with self.assertRaisesRegex(ValueError, "items: expected a provider's item"):
            at._read_calls(None, None)  # type: ignore[arg-type]

    def test_calls_without_ids_or_names_are_refused(self) -> None:
        cases: list[tuple[Any, str]] = [
            (
                [{"type": "function_call", "name": "add", "arguments": "{}"}],
                "item 0: function_call without call_id",
            ),
            ([{"type": "tool_use", "id": "t", "input": {}}], "item 0: tool_use block without name"),
            (
                {
                    "role": "assistant",
                    "tool_calls": [{"type": "function", "function": {"name": "x"}}],
                },
                r"items.tool_calls\[0\]: tool call without id",
            ),
            ([{"functionCall": {"args": {}}}], "item 0: functionCall without name"),
        ]
        for items, msg in cases:
            with self.assertRaisesRegex(ValueError, msg):
                at._read_calls(items, None)


# ----- output items back ---------------------------------------------------------------------


class TestOutputItems(unittest.TestCase):
    def test_text(self) -> None:
        out = at.Result("3")
        self.assertEqual(
            [at._output_items(fmt, calls_for(fmt), [out])[0] for fmt in FORMATS],
            [
                {"type": "function_call_output", "call_id": "id0", "output": "3"},
                {"role": "tool", "tool_call_id": "id0", "content": "3"},
                {
                    "type": "tool_result",
                    "tool_use_id": "id0",
                    "content": [{"type": "text", "text": "3"}],
                },
                {"functionResponse": {"id": "id0", "name": "add", "response": {"output": "3"}}},
            ],
        )

    def test_empty_output(self) -> None:
        out = at.Result("")
        self.assertEqual(
            [at._output_items(fmt, calls_for(fmt), [out])[0] for fmt in FORMATS],
            [
                {"type": "function_call_output", "call_id": "id0", "output": ""},
                {"role": "tool", "tool_call_id": "id0", "content": ""},
                {"type": "tool_result", "tool_use_id": "id0"},
                {"functionResponse": {"id": "id0", "name": "add", "response": {"output": ""}}},
            ],
        )

    def test_errors_read_error_once(self) -> None:
        for exc, msg in (
            (ValueError("city not found"), "city not found"),
            (KeyError("x"), "KeyError: 'x'"),
        ):
            items = [at._output_items(fmt, calls_for(fmt), [exc])[0] for fmt in FORMATS]
            self.assertEqual(at.error_message(exc), msg)
            self.assertEqual(
                items,
                [
                    {"type": "function_call_output", "call_id": "id0", "output": "Error: " + msg},
                    {"role": "tool", "tool_call_id": "id0", "content": "Error: " + msg},
                    {
                        "type": "tool_result",
                        "tool_use_id": "id0",
                        "content": [{"type": "text", "text": msg}],
                        "is_error": True,
                    },
                    {"functionResponse": {"id": "id0", "name": "add", "response": {"error": msg}}},
                ],
            )

    def test_parts_responses(self) -> None:
        out = at.Result(
            [text_part("see"), image_part(), pdf_part(), {"type": "input_text", "text": "x"}]
        )
        (item,) = at._output_items("responses", calls_for("responses"), [out])
        self.assertEqual(
            item["output"],
            [
                {"type": "input_text", "text": "see"},
                image_part(),
                pdf_part(),
                {"type": "input_text", "text": "x"},
            ],
        )

    def test_parts_chat_say_what_was_dropped(self) -> None:
        out = at.Result(
            [
                text_part("see"),
                image_part(),
                pdf_part(),
                image_part("https://example.com/cat.jpg"),
                {"type": "input_file", "filename": "notes.txt", "file_url": "https://e.com/n.txt"},
            ]
        )
        (item,) = at._output_items("chat", calls_for("chat"), [out])
        self.assertEqual(
            item["content"],
            "see\n[image omitted: image/png, 16 bytes]\n"
            "[file omitted: report.pdf, application/pdf, 13 bytes]\n"
            "[image omitted: https://example.com/cat.jpg]\n"
            "[file omitted: notes.txt, text/plain, https://e.com/n.txt]",
        )

    def test_parts_anthropic(self) -> None:
        notes = base64.b64encode("héllo".encode()).decode()
        out = at.Result(
            [
                text_part("see"),
                text_part(""),
                image_part(),
                image_part("https://example.com/cat.jpg"),
                image_part("data:image/bmp;base64,AAAA"),
                pdf_part(),
                {"type": "input_file", "file_url": "https://example.com/a.pdf"},
                {
                    "type": "input_file",
                    "filename": "n.txt",
                    "file_data": "data:text/plain;base64," + notes,
                },
                {"type": "input_file", "filename": "a.zip", "file_data": "AAAA"},
            ]
        )
        (item,) = at._output_items("anthropic", calls_for("anthropic"), [out])
        self.assertEqual(
            item["content"],
            [
                {"type": "text", "text": "see"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                },
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
                {"type": "text", "text": "[image omitted: image/bmp, 3 bytes]"},
                {
                    "type": "document",
                    "title": "report.pdf",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                },
                {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
                {
                    "type": "document",
                    "title": "n.txt",
                    "source": {"type": "text", "media_type": "text/plain", "data": "héllo"},
                },
                {"type": "text", "text": "[file omitted: a.zip, application/zip, 3 bytes]"},
            ],
        )
        self.assertNotIn("is_error", item)

    def test_parts_gemini(self) -> None:
        out = at.Result(
            [text_part("see"), image_part(), pdf_part(), image_part("https://example.com/cat.jpg")]
        )
        (item,) = at._output_items("gemini", calls_for("gemini"), [out])
        self.assertEqual(
            item,
            {
                "functionResponse": {
                    "id": "id0",
                    "name": "add",
                    "response": {"output": "see\n[image omitted: https://example.com/cat.jpg]"},
                    "parts": [
                        {"inlineData": {"mimeType": "image/png", "data": PNG}},
                        {
                            "inlineData": {
                                "mimeType": "application/pdf",
                                "data": PDF,
                                "displayName": "report.pdf",
                            }
                        },
                    ],
                }
            },
        )

    def test_bad_outcomes(self) -> None:
        with self.assertRaisesRegex(ValueError, "2 calls but 1 outcomes"):
            at._output_items("chat", calls_for("chat", 2), [at.Result("x")])
        with self.assertRaisesRegex(TypeError, 'outcome for call "id0": expected a Result'):
            at._output_items("chat", calls_for("chat"), ["x"])  # type: ignore[list-item]
        with self.assertRaisesRegex(ValueError, "unknown format"):
            at._output_items("mcp", [], [])

    def test_crash_outside_exception(self) -> None:
        exc = KeyboardInterrupt()
        (item,) = at._output_items("responses", calls_for("responses"), [exc])
        self.assertEqual(item["output"], at.error_result(exc).output)
        self.assertTrue(item["output"].startswith("Error: "))
        self.assertFalse(item["output"].startswith("Error: Error"))


# ---------------------------------------------------------------------------------------------
# The command line: python -m agenttool (or python agenttool.py) list | call | journal
# ---------------------------------------------------------------------------------------------


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


class _Workspace(unittest.TestCase):
    """A temporary folder holding target modules, cleaned up with whatever they imported."""

    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="agenttool-cli-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.target = self.write("toolbox_under_test.py", TARGET)
        modules, path, cwd = set(sys.modules), list(sys.path), os.getcwd()

        def restore() -> None:
            # Forget the targets this test imported; the standard library stays imported
            # (a C module imported twice gets new exception classes on 3.12+).
            for name in set(sys.modules) - modules:
                origin = getattr(sys.modules[name], "__file__", None) or ""
                if origin.startswith(self.dir):
                    del sys.modules[name]
            sys.path[:] = path
            os.chdir(cwd)

        self.addCleanup(restore)

    def write(self, name: str, source: str) -> str:
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        return path


class TestMain(_Workspace):
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
                "strict": False,
            },
        )

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


class TestCommandLine(_Workspace):
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


# What the command line loads, and what it prints where.
class _CommandLine(_Workspace):
    """Runs the command line in this process, or as a user does in a fresh interpreter."""

    def run_main(self, *argv: str, stdin: Any = "") -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        old_stdin = sys.stdin
        sys.stdin = io.StringIO(stdin) if isinstance(stdin, str) else stdin
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = at.main(list(argv))
        finally:
            sys.stdin = old_stdin
        return code, out.getvalue(), err.getvalue()

    def run_cli(self, *argv: str, cwd: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, PYTHONIOENCODING="utf-8")
        env["PYTHONPATH"] = _repo() + os.pathsep + env.get("PYTHONPATH", "")
        return subprocess.run(
            [sys.executable, "-m", "agenttool", *argv],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )


class TestCommandLineTargets(_CommandLine):
    def test_standard_module_names_in_the_targets_folder_replace_nothing(self) -> None:
        for name in ("queue", "asyncio", "uuid", "argparse"):
            self.write(f"{name}.py", f"raise ImportError('the folder\\'s own {name}.py')\n")
        target = self.write(
            "stdlib_names_target.py",
            "import agenttool, uuid as _uuid\n"
            "@agenttool.tool\n"
            "def add(a: int, b: int) -> int:\n"
            "    return a + b\n"
            "@agenttool.tool\n"
            "async def ident() -> str:\n"
            "    return str(_uuid.UUID(int=7))\n",
        )
        elsewhere = tempfile.mkdtemp(prefix="agenttool-cwd-")
        self.addCleanup(shutil.rmtree, elsewhere, True)
        for cwd, ref in ((elsewhere, target), (self.dir, "stdlib_names_target.py")):
            with self.subTest(cwd=cwd):
                done = self.run_cli("call", ref, "add", '{"a": 2, "b": 3}', cwd=cwd)
                self.assertEqual((done.returncode, done.stdout), (0, "5\n"), done.stderr)
                done = self.run_cli("call", ref, "ident", cwd=cwd)
                self.assertEqual(
                    (done.returncode, done.stdout),
                    (0, "00000000-0000-0000-0000-000000000007\n"),
                    done.stderr,
                )
                done = self.run_cli("list", ref, cwd=cwd)
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertEqual([d["name"] for d in json.loads(done.stdout)], ["add", "ident"])

    def test_a_sibling_module_still_imports_as_under_python_file(self) -> None:
        self.write("helpers_beside.py", "ANSWER = 42\n")
        target = self.write(
            "uses_sibling.py",
            "import agenttool, helpers_beside\n"
            "@agenttool.tool\n"
            "def answer() -> int:\n"
            "    return helpers_beside.ANSWER\n",
        )
        self.assertEqual(self.run_main("call", target, "answer")[:2], (0, "42\n"))

    def test_without_all_only_the_public_tools_the_module_defines(self) -> None:
        self.write(
            "shared_tools.py",
            "import agenttool\n@agenttool.tool\ndef imported_one() -> str:\n    return 'x'\n",
        )
        target = self.write(
            "own_tools.py",
            "import functools, agenttool\n"
            "from shared_tools import imported_one\n"
            "import shared_tools as _shared\n"
            "@agenttool.tool\n"
            "def public() -> str:\n"
            "    return 'p'\n"
            "@agenttool.tool\n"
            "def _private() -> str:\n"
            "    return 'q'\n"
            "def _read(path: str, root: str) -> str:\n"
            "    return root + path\n"
            "bound = agenttool.tool(functools.partial(_read, root='/srv'), name='bound')\n"
            "def _plain() -> str:\n"
            "    return 'w'\n"
            "wrapped = agenttool.wrap(agenttool.tool(_plain, name='wrapped'), lambda c: c)\n"
            "alias = imported_one\n"
            "class Echo:\n"
            "    name, description, parameters = 'echo', 'Echo.', None\n"
            "    def execute(self, call):\n"
            "        return agenttool.text('echo')\n"
            "echo = Echo()\n",
        )
        code, out, err = self.run_main("list", target)
        self.assertEqual(code, 0, err)
        names = ["public", "bound", "wrapped", "echo"]
        self.assertEqual([d["name"] for d in json.loads(out)], names)
        code, out, err = self.run_main("call", target, "imported_one")
        self.assertEqual(code, 2)
        self.assertIn('"public", "bound", "wrapped", "echo"', err)
        self.assertIn("a tool the module imports, or names with a leading _, is offered when", err)
        code, out, err = self.run_main("call", target + ":public", "imported_one")
        self.assertEqual(code, 2)
        self.assertNotIn("__all__", err)

    def test_all_lists_exactly_the_tools_offered(self) -> None:
        self.write(
            "more_tools.py",
            "import agenttool\n@agenttool.tool\ndef borrowed() -> str:\n    return 'b'\n",
        )
        target = self.write(
            "listed_tools.py",
            "import agenttool\n"
            "from more_tools import borrowed\n"
            "__all__ = ['second', 'borrowed', '_hidden', 'GROUP', 'helper']\n"
            "@agenttool.tool\n"
            "def first() -> str:\n"
            "    return '1'\n"
            "@agenttool.tool\n"
            "def second() -> str:\n"
            "    return '2'\n"
            "@agenttool.tool\n"
            "def _hidden() -> str:\n"
            "    return 'h'\n"
            "@agenttool.tool\n"
            "def grouped() -> str:\n"
            "    return 'g'\n"
            "GROUP = agenttool.ToolSet([grouped])\n"
            "def helper() -> None:\n"
            "    pass\n",
        )
        code, out, err = self.run_main("list", target)
        self.assertEqual(code, 0, err)
        self.assertEqual(
            [d["name"] for d in json.loads(out)], ["second", "borrowed", "_hidden", "grouped"]
        )
        missing = self.write("missing_all.py", "__all__ = ['nowhere']\n")
        code, out, err = self.run_main("list", missing)
        self.assertEqual((code, out), (2, ""))
        self.assertIn('__all__ lists "nowhere", which it does not define', err)

    def test_version_and_help_and_a_folder(self) -> None:
        code, out, _ = self.run_main("--version")
        self.assertEqual((code, out), (0, f"agenttool {at.__version__}\n"))
        for command, own in (("call", "--traceback"), ("list", "--format")):
            code, out, _ = self.run_main(command, "-h")
            self.assertEqual(code, 0)
            usage = out.split("\n\n")[0]
            self.assertTrue(usage.startswith(f"usage: python -m agenttool {command} "), usage)
            self.assertEqual(usage.count(own), 1, usage)
            self.assertEqual(usage.count("TARGET"), 1, usage)
        self.write("inside.py", "X = 1\n")
        for folder in (self.dir, self.dir + os.sep):
            code, out, err = self.run_main("list", folder)
            self.assertEqual((code, out), (2, ""))
            self.assertIn("is a folder; TARGET is a .py file or an importable module", err)
            self.assertIn("inside.py", err)
        os.chdir(os.path.dirname(self.dir))
        code, _, err = self.run_main("list", os.path.basename(self.dir))
        self.assertEqual(code, 2)
        self.assertIn("is a folder", err)


CLI_STREAMS_TARGET = textwrap.dedent(
    """
    import dataclasses
    import sys
    import agenttool


    @dataclasses.dataclass
    class Audit:
        record_ns = "test:audit"
        who: str


    @agenttool.tool
    def finish(reason: str) -> agenttool.Result:
        agenttool.write_record(Audit("me"))
        agenttool.progress("working")
        return agenttool.Result("final words", details={"n": 1}, terminate=True)


    @agenttool.tool
    def ask() -> str:
        answer = agenttool.elicit(agenttool.Elicitation("go ahead?"))
        return answer.action.value


    @agenttool.tool
    def wait() -> str:
        print("tool started", file=sys.stderr, flush=True)
        agenttool.cancel_event().wait(30)
        return "cancelled" if agenttool.cancelled() else "not cancelled"
    """
)


class _Terminal(io.StringIO):
    """Standard input as a terminal: the command line asks its questions there."""

    def isatty(self) -> bool:
        return True


class TestCommandLineStreams(_CommandLine):
    def test_records_and_terminate_never_reach_stdout(self) -> None:
        target = self.write("streams_target.py", CLI_STREAMS_TARGET)
        code, out, err = self.run_main("call", target, "finish", '{"reason": "done"}')
        self.assertEqual((code, out), (0, "final words\n"))
        self.assertEqual(
            err.splitlines(),
            [
                'record test:audit: {"who":"me"}',
                "progress: working",
                'details: {"n": 1}',
                "terminate: true",
            ],
        )

    def test_a_question_on_the_terminal_takes_yes_as_well_as_y(self) -> None:
        target = self.write("streams_target.py", CLI_STREAMS_TARGET)
        for typed, action in (
            ("y\n", "accept"),
            ("yes\n", "accept"),
            ("YES \n", "accept"),
            ("Y\n", "accept"),
            ("n\n", "decline"),
            ("yess\n", "decline"),
            ("\n", "decline"),
            ("", "cancel"),
        ):
            with self.subTest(typed=typed):
                code, out, err = self.run_main("call", target, "ask", stdin=_Terminal(typed))
                self.assertEqual((code, out), (0, action + "\n"))
                self.assertIn("the tool asks: go ahead?", err)

    @unittest.skipUnless(hasattr(signal, "SIGINT") and os.name == "posix", "POSIX signals")
    def test_ctrl_c_cancels_the_call_and_exits_130(self) -> None:
        target = self.write("streams_target.py", CLI_STREAMS_TARGET)
        env = dict(os.environ, PYTHONIOENCODING="utf-8")
        env["PYTHONPATH"] = _repo() + os.pathsep + env.get("PYTHONPATH", "")
        # python -m agenttool, with SIGINT handled even when this run inherited it ignored
        main = (
            "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "runpy.run_module('agenttool', run_name='__main__', alter_sys=True)"
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", main, "call", target, "wait"],
            cwd=self.dir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert proc.stderr is not None
            self.assertEqual(proc.stderr.readline(), "tool started\n")
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 130, err)
        self.assertEqual(out, "")
        self.assertIn("interrupted; the call was cancelled", err)


class TestCommandLineApproval(_Workspace):
    """``python -m agenttool call`` asks the person at the terminal before a call that needs
    approval runs; with no terminal to ask, the call is denied."""

    SOURCE = textwrap.dedent(
        """
        import agenttool

        @agenttool.tool(needs_approval=True)
        def wipe(disk: str) -> str:
            \"\"\"Wipe a disk.\"\"\"
            return f"wiped {disk}"
        """
    )

    def call(self, typed: Optional[str]) -> tuple[int, str, str]:
        target = self.write("wiper_under_test.py", self.SOURCE)
        out, err = io.StringIO(), io.StringIO()
        old_stdin = sys.stdin
        sys.stdin = _Terminal(typed) if typed is not None else io.StringIO("")
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = at.main(["call", target, "wipe", '{"disk": "sda"}'])
        finally:
            sys.stdin = old_stdin
        return code, out.getvalue(), err.getvalue()

    def test_a_yes_at_the_terminal_runs_the_call(self) -> None:
        code, out, err = self.call("yes\n")
        self.assertEqual((code, out), (0, "wiped sda\n"))
        self.assertIn('run "wipe" with {"disk": "sda"}?', err)

    def test_a_no_or_no_terminal_denies_it(self) -> None:
        code, out, _ = self.call("n\n")
        self.assertEqual(code, 1)
        self.assertIn('Error: call to "wipe" was denied', out)
        code, out, _ = self.call(None)
        self.assertEqual(code, 1)
        self.assertIn("needs approval", out)


# ---------------------------------------------------------------------------------------------
# Across the sections: the contract's rules, the module, the README, the examples, the suite
# ---------------------------------------------------------------------------------------------


# Rules of the contract that no other test held, each checked by breaking it by hand.
@dataclasses.dataclass
class RecordWithField:
    record_ns: str = "shell:run"
    exit_code: int = 0


class TestContractRules(unittest.TestCase):
    def test_chat_choices_are_alternatives_and_only_the_first_is_answered(self) -> None:
        def choice(i: int, a: int) -> dict[str, Any]:
            call = {"id": f"call_{i}", "type": "function"}
            call["function"] = {"name": "add", "arguments": json.dumps({"a": a, "b": 1})}
            message = {"role": "assistant", "tool_calls": [call]}
            return {"index": i, "finish_reason": "tool_calls", "message": message}

        completion = {"object": "chat.completion", "choices": [choice(0, 1), choice(1, 5)]}
        out = core_toolset().run(completion)
        self.assertEqual(out, [{"role": "tool", "tool_call_id": "call_0", "content": "2"}])

    def test_gemini_candidates_are_alternatives_and_only_the_first_is_answered(self) -> None:
        def candidate(a: int) -> dict[str, Any]:
            call = {"functionCall": {"id": f"fc{a}", "name": "add", "args": {"a": a, "b": 1}}}
            return {"content": {"role": "model", "parts": [call]}}

        out = core_toolset().run({"candidates": [candidate(1), candidate(5)]})
        expect = {"functionResponse": {"id": "fc1", "name": "add", "response": {"output": "2"}}}
        self.assertEqual(out, [expect])

    def test_an_empty_list_is_the_json_empty_array_not_empty_parts(self) -> None:
        self.assertEqual(at.output([]).output, "[]")
        t = at.tool(lambda: [], name="nothing")
        self.assertEqual(t.execute(at.Call("c", "{}")).output, "[]")

    def test_progress_with_only_a_message_keeps_its_details(self) -> None:
        def reports(c: at.Call) -> str:
            at.progress("working", message="halfway")
            return "done"

        events = list(at.Executor().execute([at.Job(raw(reports), at.Call("c"))]))
        details = [e.result.details for e in events if not e.final and e.result is not None]
        self.assertEqual(details, [at.ProgressInfo(None, None, "halfway")])

    def test_a_dataclass_whose_record_ns_is_a_field_keeps_it_out_of_the_data(self) -> None:
        record = at.record_of(RecordWithField(exit_code=3))
        self.assertEqual(record, at.Record("shell:run", '{"exit_code":3}'))

    def test_on_start_raising_keyboard_interrupt_completes_the_job_with_a_clear_error(
        self,
    ) -> None:
        ran: list[str] = []

        def on_start(job: at.Job) -> None:
            if job.call.id == "refused":
                raise KeyboardInterrupt

        def body(c: at.Call) -> str:
            ran.append(c.id)
            return c.id

        jobs = [at.Job(raw(body), at.Call("refused")), at.Job(raw(body), at.Call("fine"))]
        results, errors = at.Executor(on_start=on_start).results(jobs)
        self.assertEqual(ran, ["fine"])
        self.assertIsNone(results[0])
        self.assertIn("on_start", str(errors[0]))
        self.assertIn("KeyboardInterrupt", str(errors[0]))
        self.assertEqual((results[1].output if results[1] else None, errors[1]), ("fine", None))

    def test_readers_take_only_values_of_the_declared_kind(self) -> None:
        class Loose(Bare):
            strict = 1
            sequential = "yes"
            resource = 5
            annotations = {"read_only": True}

            def confined(self, args: dict[str, Any]) -> Any:
                return (1, 42)

        t = Loose()
        self.assertIs(at.is_strict(t), False)
        self.assertIs(at.is_sequential(t), False)
        self.assertEqual(at.resource_of(t), "")
        self.assertIsNone(at.annotations_of(t))
        self.assertEqual(at.confined_by(t, {}), (True, "42"))

    def test_write_record_without_a_recorder_is_a_no_op(self) -> None:
        def records(c: at.Call) -> str:
            at.write_record(Rec("c1"))
            return "wrote"

        results, errors = at.Executor().results([at.Job(raw(records), at.Call("c"))])
        self.assertEqual((results[0].output if results[0] else None, errors[0]), ("wrote", None))

    def test_a_hand_written_tool_returning_something_else_than_a_result_fails_clearly(
        self,
    ) -> None:
        class Sloppy(Bare):
            name = "sloppy"

            def execute(self, call: at.Call) -> Any:
                return "plain text"

        results, errors = at.Executor().results([at.Job(Sloppy(), at.Call("c"))])
        self.assertIsNone(results[0])
        self.assertEqual(str(errors[0]), 'tool "sloppy" returned str, not a Result')

    def test_returned_sets_and_paths_are_json_in_a_stable_form(self) -> None:
        self.assertEqual(at.output({3, 1, 2}).output, "[1,2,3]")
        self.assertEqual(at.output(frozenset({"b", "a"})).output, '["a","b"]')
        self.assertEqual(at.output(pathlib.PurePosixPath("/srv/a.txt")).output, '"/srv/a.txt"')

    def test_a_tool_without_a_description_is_defined_with_an_empty_one(self) -> None:
        class Undescribed(Bare):
            description = None  # type: ignore[assignment]

        for defn in (at.definition(Undescribed()), at._canonical_definition(Undescribed())):
            self.assertEqual(defn["description"], "")


# The module itself: standard library only, lazy imports.
class TestTheModule(unittest.TestCase):
    def test_agenttool_imports_only_the_standard_library(self) -> None:
        import ast
        import importlib.util
        import sysconfig

        with open(os.path.join(ROOT, "agenttool.py"), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        # What only a type checker reads (under "if typing.TYPE_CHECKING:") never runs: it
        # may name typing_extensions, and nothing else outside the standard library.
        checker_only = {
            id(n)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and ast.unparse(node.test) == "typing.TYPE_CHECKING"
            for n in node.body
        }
        names = set()
        for node in ast.walk(tree):
            if id(node) in checker_only:
                imported = [a.name for a in getattr(node, "names", [])]
                module = getattr(node, "module", None)
                self.assertTrue(
                    module == "typing_extensions" or set(imported) <= {"queue"}, imported
                )
                continue
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        stdlib = getattr(sys, "stdlib_module_names", None)
        paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")}
        for name in sorted(names):
            if stdlib is not None:
                self.assertIn(name, stdlib)
                continue
            spec = importlib.util.find_spec(name)  # 3.9: where the module lives
            self.assertIsNotNone(spec, name)
            origin = spec.origin or ""  # type: ignore[union-attr]
            self.assertTrue(
                origin in ("built-in", "frozen") or any(origin.startswith(p) for p in paths),
                f"{name} comes from {origin}",
            )

    def test_importing_agenttool_loads_nothing_it_can_import_later(self) -> None:
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); import agenttool; "
            "print(' '.join(sorted(sys.modules)))"
        )
        done = subprocess.run(
            [sys.executable, "-S", "-E", "-c", code, ROOT], capture_output=True, text=True
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        loaded = set(done.stdout.split())
        for later in ("asyncio", "concurrent.futures", "uuid", "decimal", "datetime", "queue"):
            self.assertNotIn(later, loaded)


# The README: its examples run as written and print what it says they print.
class TestReadme(unittest.TestCase):
    def test_the_python_examples_run_as_written(self) -> None:
        import contextlib
        import io
        import re

        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
        self.assertGreaterEqual(len(blocks), 3)
        for i, block in enumerate(blocks):
            if re.search(r"^from (openai|anthropic) import", block, re.M):
                continue  # a provider's SDK and its endpoint: test_agent_loops runs these
            if re.search(r"^import agenttool_adapters", block, re.M):
                continue  # the frameworks: test_adapters runs it
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(block, f"README.md python block {i}", "exec"), {"__name__": "readme"})
            printed = out.getvalue()
            promised = [m.strip() for m in re.findall(r"print\(.*\)\s+# (.*)", block)]
            promised += [line[2:] for line in block.splitlines() if line.startswith("# Error")]
            for line in promised:
                self.assertIn(line.split(":")[0] if line.startswith("[[") else line, printed, i)


def _examples() -> str:
    return os.path.join(_repo(), "examples")


class TestExamples(unittest.TestCase):
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


class TestTheSuiteItself(unittest.TestCase):
    """The suite's own safety nets hold: a hang fails as the named test, within its limit."""

    def test_a_hung_test_fails_by_name_within_the_time_limit(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "test_hangs.py"), "w", encoding="utf-8") as f:
                f.write(
                    "import threading, unittest\n"
                    "import test_agenttool  # installs the time limit\n"
                    "class Hangs(unittest.TestCase):\n"
                    "    def test_waits_forever(self):\n"
                    "        threading.Event().wait()\n"
                )
            env = {**os.environ, "AGENTTOOL_TEST_TIME_LIMIT": "0.3", "PYTHONPATH": ROOT}
            done = subprocess.run(
                [sys.executable, "-m", "unittest", "test_hangs"],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("TIMEOUT: test_hangs.Hangs.test_waits_forever ran over 0.3 s", done.stderr)
        self.assertIn("in test_waits_forever", done.stderr)  # the hung test's traceback

    def test_under_ci_what_ci_provides_fails_instead_of_skipping(self) -> None:
        code = (
            "import os, sys, unittest\n"
            "sys.path.insert(0, sys.argv[1])\n"
            "import test_agenttool as t\n"
            "class T(unittest.TestCase):\n"
            "    @t.needs(False, 'a peer is missing')\n"
            "    def test_x(self): pass\n"
            "    def test_y(self): t.absent('a corpus is missing')\n"
            "r = unittest.TextTestRunner(stream=open(os.devnull, 'w')).run(\n"
            "    unittest.defaultTestLoader.loadTestsFromTestCase(T))\n"
            "print(len(r.failures) + len(r.errors), len(r.skipped))\n"
        )
        for ci, expected in (("true", "2 0"), ("", "0 2")):
            done = subprocess.run(
                [sys.executable, "-c", code, ROOT],
                env={**os.environ, "CI": ci},
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual(done.stdout.strip(), expected, done.stderr)


if __name__ == "__main__":
    unittest.main()
