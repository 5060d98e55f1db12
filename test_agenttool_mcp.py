"""Tests for agenttool_mcp: MCP both ways, against itself, the SDK and the npm peers.

The whole module skips where Python is older than 3.10 or the ``mcp`` SDK cannot be imported
(under CI=true, which provides the SDK, that is a failure).
The node peers (``@modelcontextprotocol/server-everything`` and the Inspector CLI) are found
in ``AGENTTOOL_NODE_PEERS=<dir>``, else in ``~/.cache/agenttool/node-peers``, where the tests
install the pinned versions themselves with ``.ci/node-peers.sh`` when they are missing; their
tests skip, saying why, only where ``node`` is absent or the install failed.  Under ``CI=true``
nothing skips but for the Python version: a missing SDK or peer fails there.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import unittest
from collections.abc import Callable
from typing import Any, cast

if sys.version_info < (3, 10):  # agenttool_mcp, imported next, refuses older Pythons
    raise unittest.SkipTest("agenttool_mcp needs Python 3.10 or later (as the mcp SDK does)")

import agenttool as at
import agenttool_mcp as am
from test_agenttool import absent, limit_test_time

limit_test_time()


def _why_skip() -> str:
    try:
        import mcp  # noqa: F401
    except ImportError:
        return "the mcp SDK is not installed (pip install 'mcp>=2.3,<3')"
    return ""


SKIP = _why_skip()
if not SKIP:
    import anyio
    import mcp.types as mt
    from pydantic import AnyHttpUrl, AnyUrl


class _Case(unittest.TestCase):
    """Every test here skips, saying why, where the SDK cannot run (under CI=true a missing
    SDK fails: CI provides it)."""

    @classmethod
    def setUpClass(cls) -> None:
        if SKIP:
            absent(SKIP)
        super().setUpClass()


HERE = os.path.dirname(os.path.abspath(__file__))
WAIT = 30.0  # an upper bound for things that happen at once; never a timing assertion

# The child processes import agenttool and agenttool_mcp from where this process does.
PYPATH = os.pathsep.join(
    dict.fromkeys(
        [
            os.path.dirname(os.path.abspath(at.__file__)),
            os.path.dirname(os.path.abspath(am.__file__)),
        ]
    )
)
CHILD_ENV = {"PYTHONPATH": PYPATH, "PYTHONUNBUFFERED": "1"}

FIXTURE = textwrap.dedent(
    '''
    """Tools for the agenttool_mcp tests, served over stdio and HTTP."""
    import json
    import os
    import sys
    import threading

    import agenttool as at


    def _upper(call):
        args = call.args if isinstance(call.args, dict) else json.loads(call.args or "{}")
        return at.text(args["text"].upper())


    upper = at.new_func(
        "upper",
        "Upper-case a text.",
        {"type": "object", "properties": {"text": {"type": "string", "description": "Words"}},
         "required": ["text"], "additionalProperties": False},
        _upper,
    )


    def _steps(call):
        for i in range(3):
            at.progress(f"step {i + 1}", progress=i + 1, total=3)
        return at.text("stepped")


    steps = at.new_func("steps", "Report progress three times.", None, _steps)


    def _hang(call):
        print("hang started", file=sys.stderr, flush=True)
        at.cancel_event().wait(120)
        print("hang cancelled" if at.cancelled() else "hang woke", file=sys.stderr, flush=True)
        return at.text("cancelled" if at.cancelled() else "woke")


    hang = at.new_func("hang", "Wait until cancelled.", None, _hang)


    def _die(call):
        sys.stderr.flush()
        os._exit(3)


    die = at.new_func("die", "Exit the server process mid-call.", None, _die)


    def _fail(call):
        raise ValueError("the disk is full")


    fail = at.new_func("fail", "Always fails.", None, _fail)


    def _tiny(call):
        return at.parts(at.image(b"\\x89PNG\\r\\n\\x1a\\n", "image/png"))


    tiny_image = at.new_func("tiny_image", "A tiny PNG.", None, _tiny)


    def _header(call):
        import agenttool_mcp

        ctx = agenttool_mcp.current_request_context()
        request = ctx.request if ctx is not None else None
        return at.text(request.headers.get("x-test", "") if request is not None else "no request")


    header = at.new_func("header", "The X-Test header of the HTTP request.", None, _header)
    '''
)


def _quiet(logger: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Silence a logger during one test (peers log the faults a test provokes on purpose)."""

    def wrap(test: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(test)
        def run(*args: Any) -> None:
            log = logging.getLogger(logger)
            level = log.level
            log.setLevel(logging.CRITICAL + 1)
            try:
                test(*args)
            finally:
                log.setLevel(level)

        return run

    return wrap


def _end_process(proc: subprocess.Popen[Any]) -> None:
    """Stop a server process: SIGTERM, then SIGKILL if it has not ended within ``WAIT``."""
    proc.terminate()
    try:
        proc.wait(WAIT)
    except subprocess.TimeoutExpired:  # pragma: no cover
        proc.kill()
        proc.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _text_tool(name: str, fn: Any, parameters: Any = None, **opts: Any) -> Any:
    """A raw tool whose function gets the decoded arguments."""

    def run(call: at.Call) -> at.Result:
        args = call.args if isinstance(call.args, dict) else json.loads(call.args or "{}")
        return at.output(fn(**args))

    return at.new_func(name, f"The {name} tool.", parameters, run, **opts)


@dataclasses.dataclass
class _Rec:
    """A recordable details value."""

    n: int
    record_ns = "test:rec"


@dataclasses.dataclass
class _Outcome:
    """One call's end as an executor reported it, with the progress it sent."""

    result: at.Result | None
    error: BaseException | None
    progress: list[at.Result]

    @property
    def output(self) -> Any:
        assert self.result is not None, f"the call failed: {self.error!r}"
        return self.result.output

    @property
    def details(self) -> Any:
        assert self.result is not None, f"the call failed: {self.error!r}"
        return self.result.details


def _run_one(tool: Any, args: Any, **executor: Any) -> _Outcome:
    """Run one call through an executor; its final outcome and progress."""
    events = list(at.Executor(**executor).execute([at.Job(tool, at.Call("c1", args))]))
    final = [e for e in events if e.final]
    assert len(final) == 1
    updates = [e.result for e in events if not e.final and e.result is not None]
    return _Outcome(final[0].result, final[0].error, updates)


def _text_of(result: mt.CallToolResult) -> str:
    """The first block's text of an SDK result."""
    block = result.content[0]
    assert isinstance(block, mt.TextContent), block
    return block.text


def _error_text(outcome: _Outcome) -> str:
    assert outcome.error is not None, f"expected an error, got {outcome.result}"
    return at.error_message(outcome.error)


class _Fixture(_Case):
    """Writes a tools file (``fixture``, as ``fixture_file``) into a folder of the class's own."""

    tmp: str
    target: str
    fixture = FIXTURE
    fixture_file = "fixture_tools.py"

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="agenttool-mcp-test-")
        cls.target = os.path.join(cls.tmp, cls.fixture_file)
        with open(cls.target, "w", encoding="utf-8") as fh:
            fh.write(cls.fixture)

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def serve_command(self) -> list[str]:
        return [sys.executable, "-m", "agenttool_mcp", "serve", self.target]

    def stdio(self, **kw: Any) -> am.Remote:
        stderr = open(os.devnull, "w")  # noqa: SIM115
        self.addCleanup(stderr.close)
        remote = am.connect(self.serve_command(), env=CHILD_ENV, stderr=stderr, **kw)
        self.addCleanup(remote.close)
        return remote

    http_stderr: Any = None

    def start_http(self, *argv: str, bind: str = "127.0.0.1:0") -> str:
        """Serve the fixture over streamable HTTP at ``bind`` (a port the system picks), with
        ``argv`` added to the command line; the URL it announces.

        The server's stderr stays readable as ``self.http_stderr`` (the fixture's ``hang``
        writes "hang started" and "hang cancelled" there)."""
        proc = subprocess.Popen(
            [*self.serve_command(), "--http", bind, *argv],
            env={**os.environ, **CHILD_ENV},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

        def stop() -> None:
            _end_process(proc)
            if proc.stderr is not None:
                proc.stderr.close()

        self.addCleanup(stop)
        assert proc.stderr is not None
        self.http_stderr = proc.stderr
        for line in proc.stderr:
            if line.startswith("agenttool_mcp: serving at "):
                return line.split()[-1]
        self.fail("the HTTP server never announced itself")


def _node_peers() -> tuple[str, str]:
    """(server-everything's dist/index.js, the Inspector CLI) or skip, saying why."""
    if shutil.which("node") is None:
        absent("node is not on PATH")
    root = os.environ.get("AGENTTOOL_NODE_PEERS") or os.path.join(
        os.path.expanduser("~"), ".cache", "agenttool", "node-peers"
    )
    mods = os.path.join(root, "node_modules")
    everything = os.path.join(
        mods, "@modelcontextprotocol", "server-everything", "dist", "index.js"
    )
    inspector = os.path.join(mods, ".bin", "mcp-inspector")
    if not all(os.path.exists(p) for p in (everything, inspector)):
        _install_node_peers(root)
    for path in (everything, inspector):
        if not os.path.exists(path):
            absent(f"{path} is missing: {_NODE_PEERS_INSTALL.get(root, '')}")
    return everything, inspector


_NODE_PEERS_INSTALL: dict[str, str] = {}


def _install_node_peers(root: str) -> None:
    """Install the pinned npm peers into ``root`` with .ci/node-peers.sh, once per run."""
    if root in _NODE_PEERS_INSTALL:
        return
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".ci", "node-peers.sh")
    try:
        done = subprocess.run(
            ["sh", script, root], capture_output=True, text=True, timeout=600, check=False
        )
        _NODE_PEERS_INSTALL[root] = f"npm install exited {done.returncode}: {done.stderr[-500:]}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        _NODE_PEERS_INSTALL[root] = f"npm install failed: {exc}"


# ---------------------------------------------------------------------------------------------
# Keys and limits both sides share, and the SDK check
# ---------------------------------------------------------------------------------------------


class TestImport(_Case):
    def test_import_does_not_load_the_sdk(self) -> None:
        code = "import sys, agenttool_mcp; print('mcp' in sys.modules, 'anyio' in sys.modules)"
        out = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, **CHILD_ENV},
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=True,
        )
        self.assertEqual(out.stdout.split(), ["False", "False"])


class TestSections(_Case):
    """The module docstring's map names agenttool_mcp.py's section banners, in file order."""

    def test_the_map_is_the_banners_in_file_order(self) -> None:
        with open(am.__file__, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        rule = "# " + "-" * 93
        banners = [
            lines[i + 1][2:]
            for i in range(len(lines) - 2)
            if lines[i] == rule and lines[i + 2] == rule
        ]
        entries = [line for line in (am.__doc__ or "").splitlines() if line.startswith("- ")]
        self.assertEqual(len(entries), len(banners), (entries, banners))
        for entry, title in zip(entries, banners):
            self.assertTrue(entry.startswith(f"- {title}"), (entry, title))


# ---------------------------------------------------------------------------------------------
# Content: agenttool parts <-> MCP content blocks
# ---------------------------------------------------------------------------------------------


class TestContent(_Case):
    def test_parts_to_content(self) -> None:
        blocks = am.content_of(
            [
                {"type": "text", "text": "a"},
                {"type": "input_text", "text": "b"},
                at.image(b"\x00\x01", "image/gif"),
                {"type": "input_image", "image_url": "https://x.test/i.png"},
                {"type": "input_file", "filename": "notes.bin", "file_data": "AAE="},
                {"type": "input_file", "file_url": "https://x.test/f.pdf"},
                {"type": "input_file", "filename": "only-a-name.txt"},
                {"type": "input_file", "filename": "bad", "file_data": "!!!"},
                {"type": "mystery", "x": 1},
            ]
        )
        kinds = [b.type for b in blocks]
        self.assertEqual(
            kinds,
            [
                "text",
                "text",
                "image",
                "resource_link",
                "resource",
                "resource_link",
                "text",
                "text",
                "text",
            ],
        )
        image, embedded, name, unknown = blocks[2], blocks[4], blocks[6], blocks[8]
        assert isinstance(image, mt.ImageContent) and isinstance(embedded, mt.EmbeddedResource)
        assert isinstance(name, mt.TextContent) and isinstance(unknown, mt.TextContent)
        self.assertEqual(image.mime_type, "image/gif")
        self.assertEqual(str(embedded.resource.uri), "file:///notes.bin")
        self.assertEqual(name.text, "only-a-name.txt")
        self.assertEqual(json.loads(unknown.text), {"type": "mystery", "x": 1})
        self.assertEqual([b.type for b in am.content_of("")], ["text"])

    def test_audio_goes_out_as_an_audio_block(self) -> None:
        """A file typed audio, or named so, is MCP audio; other files stay blobs."""
        wav = at.file(b"RIFF", filename="a.wav", mime="audio/wav")
        named = at.file(b"ID3", filename="song.mp3")
        other = at.file(b"%PDF", filename="a.pdf")
        blocks = am.content_of([wav, named, other])
        self.assertEqual([b.type for b in blocks], ["audio", "audio", "resource"])
        self.assertEqual((blocks[0].data, blocks[0].mime_type), ("UklGRg==", "audio/wav"))
        self.assertEqual(blocks[1].mime_type, "audio/mpeg")

    def test_audio_read_back_is_served_as_audio_again(self) -> None:
        """What result_of makes of an audio block, content_of writes as audio (a proxy keeps
        it audio)."""
        block = mt.AudioContent(type="audio", data="AAE=", mime_type="audio/mpeg")
        parts = am.result_of(mt.CallToolResult(content=[block])).output
        assert isinstance(parts, list)
        (again,) = am.content_of(parts)
        self.assertEqual((again.type, again.data, again.mime_type), ("audio", "AAE=", "audio/mpeg"))

    def test_content_to_parts(self) -> None:
        r = mt.CallToolResult(
            content=[
                mt.TextContent(type="text", text="summary"),
                mt.ImageContent(type="image", data="AAE=", mime_type=""),
                mt.AudioContent(type="audio", data="AAE=", mime_type="Audio/MPEG; codecs=x"),
                mt.EmbeddedResource(
                    type="resource",
                    resource=mt.BlobResourceContents(uri="file:///a.bin", blob="AAE="),
                ),
                mt.EmbeddedResource(
                    type="resource",
                    resource=mt.TextResourceContents(uri="file:///a.txt", text="inside"),
                ),
                mt.ResourceLink(type="resource_link", uri="https://x.test/r", name="r"),
            ],
            structured_content={"n": 1},
        )
        out = am.result_of(r).output
        assert isinstance(out, list)
        self.assertEqual(out[0], {"type": "text", "text": "summary"})
        self.assertEqual(out[1]["image_url"], "data:application/octet-stream;base64,AAE=")
        self.assertEqual(
            out[2], {"type": "input_file", "filename": "audio.mp3", "file_data": "AAE="}
        )
        self.assertEqual(out[3]["filename"], "file:///a.bin")
        self.assertEqual(out[4], {"type": "text", "text": "inside"})
        self.assertEqual(out[5], {"type": "text", "text": "resource: https://x.test/r"})
        self.assertEqual(len(out), 6)  # a text is there: the JSON is not appended
        text_only = mt.CallToolResult(
            content=[mt.TextContent(type="text", text="a"), mt.TextContent(type="text", text="b")],
            structured_content={"n": 1},
        )
        self.assertEqual(am.result_of(text_only).output, "a\nb")

    def test_record_read_from_meta(self) -> None:
        data = '{"z":1,"a":9007199254740993}'
        r = mt.CallToolResult(content=[], _meta={am.RECORD_META_KEY: {"ns": "o:k", "data": data}})
        details = am.result_of(r).details
        self.assertIsInstance(details, am.RemoteRecord)
        self.assertEqual((details.ns, details.data), ("o:k", data))
        self.assertEqual(at.record_of(details), at.Record("o:k", data))
        for bad in ({"ns": "", "data": "1"}, {"ns": "o:k", "data": "{"}, {"error": "x"}):
            r = mt.CallToolResult(content=[], _meta={am.RECORD_META_KEY: bad})
            self.assertIsInstance(am.result_of(r).details, mt.CallToolResult)


# ---------------------------------------------------------------------------------------------
# Serve: tools as MCP definitions
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Point:
    x: int
    label: str = "origin"


def _point(x: int) -> _Point:
    """A point."""
    return _Point(x)


def _squares(n: int) -> list[int]:
    """Squares."""
    return [i * i for i in range(n)]


def _maybe(x: int) -> _Point | None:
    """A point, or none for 0."""
    return _Point(x) if x else None


def _picture() -> dict[str, Any]:
    """An image part: its content is the value, so no JSON text is added beside it."""
    return at.image(b"\x89PNG\r\n\x1a\n", "image/png")


def _liar(x: int) -> _Point:
    """Says a point, returns text."""
    return cast(Any, "not a point")


class TestStructuredOverMCP(_Case):
    def setUp(self) -> None:
        functions = (_point, _squares, _maybe, _liar, _picture)
        self.tools = [at.new(fn.__name__[1:], "", fn) for fn in functions]
        self.tools.append(
            at.new_func(
                "plain",
                "Text only.",
                None,
                lambda c: "plain text",
                annotations=at.Annotations(title="Plain"),
            )
        )
        self.tools[-1].icons = [{"src": "https://x.test/i.png", "mimeType": "image/png"}]  # type: ignore[attr-defined]
        self.tools[0].title = "A point"  # type: ignore[attr-defined]
        self.server = am.build_server(self.tools, name="shapes")

    def local(self, name: str, args: dict[str, Any]) -> at.Result:
        tool = next(t for t in self.tools if t.name == name)
        return tool.execute(at.Call("1", args))

    def test_round_trip_through_our_client_keeps_the_value(self) -> None:
        with am.connect(server=self.server) as remote:
            for name, args in (
                ("point", {"x": 2}),
                ("squares", {"n": 4}),
                ("maybe", {"x": 0}),
                ("maybe", {"x": 5}),
                ("picture", {}),
            ):
                got, want = remote.call(name, args), self.local(name, args)
                self.assertEqual(got.structured, want.structured, name)
                self.assertEqual(got.output, want.output, name)  # the JSON text, once
            self.assertIsNone(remote.call("plain").structured)

    def test_remote_tools_report_the_output_schema_the_tool_has(self) -> None:
        with am.connect(server=self.server) as remote:
            tools = {t.name: t for t in remote.tools()}
        for local in self.tools:
            mine = at.output_schema_of(local)
            self.assertEqual(at.output_schema_of(tools[local.name]), mine, local.name)
        self.assertEqual(at.output_schema_of(tools["squares"])["type"], "array")  # unwrapped
        self.assertIsNone(at.output_schema_of(tools["plain"]))

    def test_served_definitions_and_what_the_sdk_client_sees(self) -> None:
        from mcp import Client

        async def main(mode: str) -> dict[str, Any]:
            async with Client(self.server, mode=mode) as client:
                listed = {t.name: t for t in (await client.list_tools()).tools}
                point = await client.call_tool("point", {"x": 3})  # the SDK validates it
                squares = await client.call_tool("squares", {"n": 3})
                liar = await client.call_tool("liar", {"x": 1})
                picture = await client.call_tool("picture", {})
                return {
                    "listed": listed,
                    "version": client.server_info and client.server_info.version,
                    "point": point,
                    "squares": squares,
                    "liar": liar,
                    "picture": picture,
                }

        for mode in ("legacy", "auto"):
            out = asyncio.run(main(mode))
            listed = out["listed"]
            self.assertEqual(out["version"], at.__version__)
            self.assertEqual(listed["point"].output_schema, at.output_schema_of(self.tools[0]))
            wrapped = listed["squares"].output_schema
            self.assertEqual(
                wrapped["properties"]["result"], {"type": "array", "items": {"type": "integer"}}
            )
            self.assertEqual(wrapped["required"], ["result"])
            self.assertIsNone(listed["plain"].output_schema)
            self.assertEqual(listed["plain"].title, "Plain")  # the annotations' title
            self.assertEqual(listed["point"].title, "A point")  # the tool's own
            self.assertEqual(listed["plain"].icons[0].src, "https://x.test/i.png")
            self.assertIsNone(listed["point"].icons)
            point = out["point"]
            self.assertEqual(point.structured_content, {"x": 3, "label": "origin"})
            self.assertEqual([b.text for b in point.content], ['{"x":3,"label":"origin"}'])
            self.assertEqual(out["squares"].structured_content, {"result": [0, 1, 4]})
            self.assertEqual(len(out["squares"].content), 1)
            # a value that does not fit its own schema is the tool's error, not a bad result
            self.assertTrue(out["liar"].is_error)
            self.assertIn("does not fit its output schema", _text_of(out["liar"]))
            # an image the tool returned is its content: no base64 JSON text beside it
            self.assertEqual([b.type for b in out["picture"].content], ["image"])
            self.assertEqual(out["picture"].structured_content["type"], "input_image")

    def test_structured_content_is_appended_only_when_no_text_carries_it(self) -> None:
        value = {"a": [1, 2]}

        def result(*texts: str, structured: Any = value, **kw: Any) -> at.Result:
            blocks = [mt.TextContent(type="text", text=t) for t in texts]
            return am.result_of(
                mt.CallToolResult(content=blocks, structured_content=structured, **kw)
            )

        carried = result('{"a": [1, 2]}')
        self.assertEqual((carried.output, carried.structured), ('{"a": [1, 2]}', value))
        other = result("two numbers")
        self.assertEqual(other.output, "two numbers")
        self.assertEqual(other.structured, value)
        self.assertEqual(result().output, '{"a":[1,2]}')
        # an image and its structured description: the JSON is added once, as a part
        img = mt.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png")
        parts = am.result_of(mt.CallToolResult(content=[img], structured_content=value)).output
        self.assertEqual([p["type"] for p in parts], ["input_image", "text"])
        # our server's wrapper comes off; anyone else's {"result": ...} stays as it was sent
        meta = {am._WRAPPED_META_KEY: True}
        self.assertEqual(result("[1]", structured={"result": [1]}, _meta=meta).structured, [1])
        self.assertEqual(result("[1]", structured={"result": [1]}).structured, {"result": [1]})
        self.assertEqual(result("[1]", structured={"result": [1]}, _meta=meta).output, "[1]")


# ---------------------------------------------------------------------------------------------
# Serve: the server and its calls
# ---------------------------------------------------------------------------------------------


class TestSDKClient(_Case):
    """The project's server under the SDK's own Client (both protocol eras)."""

    def setUp(self) -> None:
        def ask(call: at.Call) -> at.Result:
            a = at.elicit(
                at.Elicitation("Name?", {"type": "object", "properties": {"n": {"type": "string"}}})
            )
            b = at.elicit(
                at.Elicitation(
                    "Again?", {"type": "object", "properties": {"n": {"type": "string"}}}
                )
            )
            return at.text(f"{a.action.value}:{(a.content or {}).get('n')} {b.action.value}")

        def steps(call: at.Call) -> at.Result:
            at.progress("half", progress=1, total=2)
            return at.text("done")

        self.tools = [
            _text_tool(
                "echo",
                lambda text: text,
                {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                    "$comment": "kept",
                },
            ),
            at.new_func("ask", "Asks twice.", None, ask),
            at.new_func("steps", "Steps.", None, steps),
        ]
        self.server = am.build_server(self.tools, name="demo")

    def run_client(self, mode: str) -> dict[str, Any]:
        from mcp import Client

        async def elicit(ctx: Any, params: Any) -> mt.ElicitResult:
            return mt.ElicitResult(action="accept", content={"n": "Ada"})

        async def main() -> dict[str, Any]:
            out: dict[str, Any] = {}
            client_of = Client(self.server, mode=mode, elicitation_callback=cast(Any, elicit))
            async with client_of as client:
                out["version"] = client.protocol_version
                listed = await client.list_tools()
                out["schema"] = listed.tools[0].input_schema
                r = await client.call_tool("echo", {"text": "hi"})
                out["echo"] = (r.is_error, _text_of(r))
                r = await client.call_tool("echo", {"text": 5})
                out["bad"] = (r.is_error, _text_of(r))
                r = await client.call_tool("nope", {})
                out["unknown"] = (r.is_error, _text_of(r))
                r = await client.call_tool("ask", {})
                out["ask"] = _text_of(r)
                seen: list[Any] = []

                async def progress(p: float, total: float | None, msg: str | None) -> None:
                    seen.append((p, total, msg))

                await client.call_tool("steps", {}, progress_callback=cast(Any, progress))
                out["progress"] = seen
                caps = client.server_capabilities.tools
                out["list_changed"] = caps is not None and caps.list_changed
            return out

        return asyncio.run(main())

    def check(self, out: dict[str, Any]) -> None:
        self.assertEqual(out["schema"], self.tools[0].parameters)
        self.assertEqual(out["echo"], (False, "hi"))
        self.assertTrue(out["bad"][0])
        self.assertIn("invalid arguments", out["bad"][1])
        self.assertEqual(out["unknown"][0], True)
        self.assertIn('unknown tool "nope"', out["unknown"][1])
        self.assertEqual(out["ask"], "accept:Ada accept")
        self.assertEqual(out["progress"], [(1, 2, "half")])
        self.assertTrue(out["list_changed"])

    def test_legacy_era(self) -> None:
        out = self.run_client("legacy")
        self.assertNotEqual(out["version"], "2026-07-28")
        self.check(out)

    def test_modern_era(self) -> None:
        out = self.run_client("auto")
        self.assertEqual(out["version"], "2026-07-28")
        self.check(out)

    def test_modern_questions_limits_and_abandon(self) -> None:
        """On 2026-07-28 a question is an input request: more than max_requests are answered
        cancel, and a call nobody answers is abandoned (its tool sees cancellation)."""
        from mcp import Client

        stopped = threading.Event()

        def waits(call: at.Call) -> at.Result:
            answer = at.elicit(at.Elicitation("Anyone?"))
            if at.cancelled() or answer.action == at.Action.CANCEL:
                stopped.set()
            return at.text(answer.action.value)

        async def elicit(ctx: Any, params: Any) -> mt.ElicitResult:
            return mt.ElicitResult(action="accept", content={"n": "Ada"})

        limited = am.build_server(self.tools, max_requests=1)
        abandoning = am.build_server(
            [at.new_func("waits", "Waits.", None, waits)], abandon_after=0.05
        )

        from mcp.shared.exceptions import MCPError

        async def resume(client: Any, state: str | None) -> tuple[int, str]:
            """The JSON-RPC error answering answers sent under ``state``."""
            try:
                await client.session.call_tool(
                    "waits",
                    {},
                    input_responses={"elicit_1": mt.ElicitResult(action="accept", content={})},
                    request_state=state,
                    allow_input_required=True,
                )
            except MCPError as exc:
                return exc.error.code, exc.error.message
            raise AssertionError("answers for a call no longer waiting were taken")

        async def main() -> tuple[str, tuple[int, str], tuple[int, str]]:
            async with Client(limited, elicitation_callback=cast(Any, elicit)) as client:
                first = _text_of(await client.call_tool("ask", {}))
            async with Client(abandoning, elicitation_callback=cast(Any, elicit)) as client:
                pending = await client.session.call_tool("waits", {}, allow_input_required=True)
                assert isinstance(pending, mt.InputRequiredResult)
                await anyio.to_thread.run_sync(stopped.wait, WAIT)
                late = await resume(client, pending.request_state)
                forged = await resume(client, "never-issued")
                return first, late, forged

        first, late, forged = asyncio.run(main())
        self.assertEqual(first, "accept:Ada cancel")
        self.assertTrue(stopped.is_set())
        for code, message in (late, forged):  # expired and forged: the client's invalid params
            self.assertEqual(code, -32602)
            self.assertIn("no longer waiting", message)

    def test_modern_list_changed_on_listen(self) -> None:
        from mcp import Client

        async def main() -> list[str]:
            async with Client(self.server) as client:
                async with client.listen(tools_list_changed=True) as events:
                    am.set_tools(self.server, self.tools[:1])
                    with anyio.fail_after(WAIT):
                        async for _event in events:
                            listed = await client.list_tools()
                            return [t.name for t in listed.tools]
            return []

        self.assertEqual(asyncio.run(main()), ["echo"])


class TestServerFidelity(_Case):
    def setUp(self) -> None:
        self.tools = [at.new_func(f"t{i}", f"Tool {i}.", None, lambda c: "ok") for i in range(5)]
        self.server = am.build_server(self.tools, page_size=2)

    def test_unknown_tool_error_lists_the_tools(self) -> None:
        from mcp import Client

        async def main() -> mt.CallToolResult:
            async with Client(self.server, mode="legacy") as client:
                return await client.call_tool("nope", {})

        r = asyncio.run(main())
        self.assertTrue(r.is_error)
        self.assertEqual(_text_of(r), 'unknown tool "nope"; the tools are: t0, t1, t2, t3, t4')

    def test_a_cursor_the_server_never_issued_is_refused(self) -> None:
        from mcp import Client
        from mcp.shared.exceptions import MCPError

        async def main() -> tuple[list[str], dict[str, Any]]:
            names: list[str] = []
            refused: dict[str, Any] = {}
            async with Client(self.server, mode="legacy") as client:
                session = client.session
                cursor = None
                while True:
                    params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
                    page = await session.list_tools(params=params)
                    names += [t.name for t in page.tools]
                    cursor = page.next_cursor
                    if not cursor:
                        break
                for bad in ("6", "1", "-2", "02", "abc", "", "4x"):
                    try:
                        await session.list_tools(params=mt.PaginatedRequestParams(cursor=bad))
                        refused[bad] = None
                    except MCPError as exc:
                        refused[bad] = exc.error.code
            return names, refused

        names, refused = asyncio.run(main())
        self.assertEqual(names, ["t0", "t1", "t2", "t3", "t4"])
        self.assertEqual(refused, dict.fromkeys(refused, -32602))
        # a server that does not page issues no cursor at all
        self.server = am.build_server(self.tools)
        names, refused = asyncio.run(main())
        self.assertEqual(names, ["t0", "t1", "t2", "t3", "t4"])
        self.assertEqual(refused, dict.fromkeys(refused, -32602))


class TestServedApprovalAndLeniency(_Case):
    """A served tool that needs approval asks the MCP client through elicitation first; a
    lenient one repairs its arguments before the server validates them."""

    def setUp(self) -> None:
        self.ran: list[str] = []

        def delete(call: at.Call) -> at.Result:
            path = (
                json.loads(call.args)["path"] if isinstance(call.args, str) else call.args["path"]
            )
            self.ran.append(path)
            return at.text(f"deleted {path}")

        schema = {"type": "object", "properties": {"path": {"type": "string"}}}
        self.server = am.build_server(
            [
                at.new_func(
                    "delete",
                    "Deletes.",
                    schema,
                    delete,
                    needs_approval=lambda args: args["path"].startswith("/etc"),
                )
            ]
        )

    def call(
        self, path: str, action: str | None, mode: str = "auto"
    ) -> tuple[bool, str, list[str]]:
        from mcp import Client

        questions: list[str] = []

        async def elicit(ctx: Any, params: Any) -> mt.ElicitResult:
            questions.append(params.message)
            return mt.ElicitResult(action=action or "cancel")

        async def main() -> tuple[bool, str]:
            callback = cast(Any, elicit) if action is not None else None
            async with Client(self.server, mode=mode, elicitation_callback=callback) as client:
                r = await client.call_tool("delete", {"path": path})
                return bool(r.is_error), _text_of(r)

        is_error, text = asyncio.run(main())
        return is_error, text, questions

    def test_an_accepted_question_runs_the_call_in_both_eras(self) -> None:
        for mode in ("legacy", "auto"):
            is_error, text, questions = self.call("/etc/hosts", "accept", mode)
            self.assertEqual((is_error, text), (False, "deleted /etc/hosts"))
            self.assertEqual(len(questions), 1)
            self.assertIn('"delete"', questions[0])
            self.assertIn("/etc/hosts", questions[0])
        self.assertEqual(self.ran, ["/etc/hosts", "/etc/hosts"])

    def test_a_declined_or_unaskable_call_is_an_error_and_never_runs(self) -> None:
        is_error, text, _ = self.call("/etc/hosts", "decline")
        self.assertTrue(is_error)
        self.assertIn("not approved (decline)", text)
        is_error, text, questions = self.call("/etc/hosts", None)  # no elicitation capability
        self.assertTrue(is_error)
        self.assertIn("not approved (cancel)", text)
        self.assertEqual(questions, [])
        self.assertEqual(self.ran, [])

    def test_a_lenient_tool_stays_lenient_when_served(self) -> None:
        from mcp import Client

        @at.tool(lenient=True)
        def total(numbers: list[int]) -> int:
            """Add numbers."""
            return sum(numbers)

        strict = at.tool(name="strict_total")(total.fn)
        server = am.build_server([total, strict])

        async def main() -> list[tuple[bool, str]]:
            async with Client(server) as client:
                out = []
                for name in ("total", "strict_total"):
                    r = await client.call_tool(name, {"numbers": "[1, 2, 3]"})
                    out.append((bool(r.is_error), _text_of(r)))
                return out

        (ok, text), (refused, error) = asyncio.run(main())
        self.assertEqual((ok, text), (False, "6"))
        self.assertTrue(refused)
        self.assertIn("numbers: expected array", error)

    def test_a_call_that_needs_no_approval_asks_nobody(self) -> None:
        is_error, text, questions = self.call("/tmp/x", "decline")
        self.assertEqual((is_error, text, questions), (False, "deleted /tmp/x", []))


class TestServedOutputLimits(_Case):
    """max_output bounds what a served tool's caller sees: a cut structured result is not sent
    again whole as the spec's text block (the value stays in structuredContent)."""

    def test_a_cut_structured_result_is_not_sent_whole_as_text(self) -> None:
        def numbers(n: int) -> list[int]:
            """The numbers below n."""
            return list(range(n))

        tool = at.new("numbers", "", numbers, max_output=40)
        with am.connect(server=am.build_server([tool], name="limits")) as remote:
            got = remote.call("numbers", {"n": 500})
        self.assertIn("characters cut", got.output)
        self.assertLess(len(got.output), 200)
        self.assertEqual(got.structured, list(range(500)))


class TestServeTakesEveryServerOption(unittest.TestCase):
    def test_serve_takes_each_option_of_build_server(self) -> None:
        """An option added to build_server and not to serve (inject and the task limits
        were once missing) fails here; asgi_app passes its options on whole."""
        import inspect

        built = inspect.signature(am.build_server).parameters
        served = inspect.signature(am.serve).parameters
        for name, parameter in built.items():
            if parameter.kind is parameter.KEYWORD_ONLY:
                with self.subTest(name):
                    self.assertIn(name, served)
                    self.assertEqual(served[name].default, parameter.default)


class TestServedDetails(_Case):
    """What a served tool says beside its output reaches the client as the core said it."""

    def test_a_progress_message_of_its_own_is_the_message_sent(self) -> None:
        def reports(call: at.Call) -> at.Result:
            at.progress("the text", progress=1, total=4, message="a quarter done")
            at.progress("only text", progress=2, total=4)
            return at.text("done")

        tool = at.new_func("reports", "", None, reports)
        with am.connect(server=am.build_server([tool], name="details")) as remote:
            out = _run_one(remote.lookup("reports"), {})
        infos = [u.details for u in out.progress]
        self.assertEqual([(i.progress, i.total) for i in infos], [(1, 4), (2, 4)])
        self.assertEqual([i.message for i in infos], ["a quarter done", "only text"])

    def test_a_record_that_cannot_be_made_is_reported_in_meta(self) -> None:
        class Unnamed:
            record_ns = ""  # record_of refuses an empty namespace

        def records(call: at.Call) -> at.Result:
            return at.Result("done", Unnamed())

        tool = at.new_func("records", "", None, records)
        with am.connect(server=am.build_server([tool], name="details")) as remote:
            result = remote.call("records")
        self.assertEqual(result.output, "done")
        meta = result.details.meta[am.RECORD_META_KEY]
        self.assertIn("empty namespace", meta["error"])

    def test_a_pageable_tool_is_served_with_read_output_beside_it(self) -> None:
        """A served output cut from a pageable tool names a handle that the client reads
        back through the read_output the server lists beside the tools (the handle lives on
        that server); a set with no pageable tool gets no reader, and set_tools adds it."""
        import re

        def log(call: at.Call) -> at.Result:
            return at.text("".join(f"line {i:03d}|" for i in range(40)))

        pageable = at.new_func("log", "", None, log, max_output=60, pageable=True)
        plain = at.new_func("plain", "", None, log, max_output=60)
        server = am.build_server([pageable], name="details")
        with am.connect(server=server) as remote:
            self.assertEqual(sorted(t.name for t in remote.tools()), ["log", "read_output"])
            cut = remote.call("log").output
            handle = re.search(r'read_output\(handle="(out_[0-9a-f]+)", offset=(\d+)\)', cut)
            self.assertIsNotNone(handle, cut)
            assert handle is not None
            page = remote.call("read_output", {"handle": handle[1], "offset": 198}).output
            self.assertTrue(page.startswith("line 022|line 023|"), page)
            with self.assertRaisesRegex(am.MCPToolError, "it was never made, or it is gone"):
                remote.call("read_output", {"handle": "out_00", "offset": 0})
        server = am.build_server([plain], name="details")
        with am.connect(server=server) as remote:
            self.assertEqual([t.name for t in remote.tools()], ["plain"])
        am.set_tools(server, [plain, pageable])
        with am.connect(server=server) as remote:
            names = sorted(t.name for t in remote.tools())
        self.assertEqual(names, ["log", "plain", "read_output"])


# ---------------------------------------------------------------------------------------------
# Serve: stdio and HTTP
# ---------------------------------------------------------------------------------------------


class TestStdio(_Fixture):
    """Serving and connecting over stdio, with the command line, and faults."""

    def test_list_call_progress(self) -> None:
        remote = self.stdio(prefix="fx")
        names = [t.name for t in remote.tools()]
        self.assertIn("fx__upper", names)
        self.assertEqual(_run_one(remote.lookup("fx__upper"), '{"text": "abc"}').output, "ABC")
        event = _run_one(remote.lookup("fx__steps"), "")
        self.assertEqual([r.output for r in event.progress], ["step 1", "step 2", "step 3"])
        bad = _run_one(remote.lookup("fx__upper"), '{"text": 1, "x": 2}')
        self.assertIn("invalid arguments", _error_text(bad))
        self.assertEqual(_error_text(_run_one(remote.lookup("fx__fail"), "")), "the disk is full")
        image = _run_one(remote.lookup("fx__tiny_image"), "").output
        self.assertEqual(image[0]["type"], "input_image")
        self.assertTrue(image[0]["image_url"].startswith("data:image/png;base64,"))

    def test_server_exits_mid_call(self) -> None:
        remote = self.stdio()
        event = _run_one(remote.lookup("die"), "")
        self.assertIn('mcp: call "die": mcp: the connection was lost during', _error_text(event))
        self.assertFalse(remote.closed)
        # the next call starts the server again
        later = _run_one(remote.lookup("upper"), '{"text": "a"}')
        self.assertEqual(later.output, "A")
        self.assertEqual(self.stdio().call("upper", {"text": "b"}).output, "B")

    def test_client_disconnects_mid_call(self) -> None:
        """Closing the connection while a tool hangs ends the call and the server process."""
        remote = self.stdio(timeout=0.5)
        self.assertIn("no answer within", _error_text(_run_one(remote.lookup("hang"), "")))
        self.assertEqual(remote.call("upper", {"text": "still"}).output, "STILL")
        remote.close()  # the stdio transport ends the child (stdin closed, then signals)
        self.assertTrue(remote.closed)

    def test_malformed_lines_to_the_server(self) -> None:
        proc = subprocess.Popen(
            self.serve_command(),
            env={**os.environ, **CHILD_ENV},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
        proc.stdin.write("this is not json\n")
        proc.stdin.write('{"jsonrpc": "2.0", "id": 7, "method": 12}\n')
        proc.stdin.write(json.dumps(init) + "\n")
        proc.stdin.flush()
        answers = []
        while True:
            msg = json.loads(proc.stdout.readline())
            answers.append(msg)
            if msg.get("id") == 1:
                break
        self.assertEqual(answers[-1]["result"]["serverInfo"]["name"], "agenttool")
        proc.stdin.write(
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
        )
        proc.stdin.write(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "upper", "arguments": {"text": "ok"}},
                }
            )
            + "\n"
        )
        proc.stdin.flush()
        while True:
            msg = json.loads(proc.stdout.readline())
            if msg.get("id") == 2:
                break
        self.assertEqual(msg["result"]["content"][0]["text"], "OK")
        proc.stdin.close()
        self.assertEqual(proc.wait(WAIT), 0)
        proc.stdout.close()

    @_quiet("mcp")
    def test_malformed_lines_to_the_client(self) -> None:
        """A server that writes garbage between messages: the client keeps going."""
        proxy = os.path.join(self.tmp, "noisy.py")
        with open(proxy, "w", encoding="utf-8") as fh:
            fh.write(
                textwrap.dedent(
                    """
                import subprocess, sys, threading
                child = subprocess.Popen(
                    sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE
                )
                def pump():
                    for line in sys.stdin.buffer:
                        child.stdin.write(line); child.stdin.flush()
                    child.stdin.close()
                threading.Thread(target=pump, daemon=True).start()
                for line in child.stdout:
                    sys.stdout.buffer.write(b"garbage that is not JSON\\n" + line)
                    sys.stdout.buffer.flush()
                sys.exit(child.wait())
                """
                )
            )
        stderr = open(os.devnull, "w")  # noqa: SIM115
        self.addCleanup(stderr.close)
        with am.connect(
            [sys.executable, proxy, *self.serve_command()], env=CHILD_ENV, stderr=stderr
        ) as remote:
            self.assertEqual(remote.call("upper", {"text": "x"}).output, "X")

    def test_connect_failure_is_clear(self) -> None:
        stderr = open(os.devnull, "w")  # noqa: SIM115
        self.addCleanup(stderr.close)
        with self.assertRaisesRegex(am.RemoteError, "^mcp: connect: "):
            am.connect(
                [sys.executable, "-c", "import sys; sys.exit(1)"],
                stderr=stderr,
                connect_timeout=WAIT,
            )

    def test_cli_list_and_call(self) -> None:
        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "agenttool_mcp", *args, "--", *self.serve_command()],
                env={**os.environ, **CHILD_ENV},
                capture_output=True,
                text=True,
                timeout=WAIT,
            )

        out = cli("list", "--prefix", "fx")
        self.assertEqual(out.returncode, 0, out.stderr)
        defs = json.loads(out.stdout)
        self.assertIn("fx__upper", [d["name"] for d in defs])
        out = cli("call", "--tool", "upper", "--args", '{"text": "abc"}')
        self.assertEqual((out.returncode, out.stdout), (0, "ABC\n"), out.stderr)
        out = cli("call", "--tool", "fail")
        self.assertEqual((out.returncode, out.stdout), (1, "Error: the disk is full\n"))


class TestHTTP(_Fixture):
    """Serving and connecting over streamable HTTP, and faults."""

    @_quiet("mcp")
    def test_http_round_trip_and_disconnect(self) -> None:
        url = self.start_http()
        self.assertTrue(url.startswith("http://127.0.0.1:") and url.endswith("/mcp"))
        with am.connect(url=url, prefix="h", headers={"X-Test": "1"}) as remote:
            self.assertIn("h__upper", [t.name for t in remote.tools()])
            self.assertEqual(remote.call("h__upper", {"text": "web"}).output, "WEB")
            self.assertEqual(remote.call("h__header").output, "1")
            event = _run_one(remote.lookup("h__steps"), "")
            self.assertEqual(len(event.progress), 3)
        # a client that hangs up mid-call leaves the server serving others
        first = am.connect(url=url)
        box: list[_Outcome] = []
        t = threading.Thread(target=lambda: box.append(_run_one(first.lookup("hang"), "")))
        t.start()
        self.assertEqual(self.read_until("hang "), "hang started")
        first.close()
        self.assertEqual(self.read_until("hang "), "hang cancelled")
        t.join(WAIT)
        self.assertFalse(t.is_alive())
        self.assertIn("mcp: connection closed", _error_text(box[0]))
        with am.connect(url=url) as second:
            self.assertEqual(second.call("upper", {"text": "again"}).output, "AGAIN")

    def test_sdk_client_over_http(self) -> None:
        from mcp import Client

        url = self.start_http()

        async def main() -> tuple[list[str], str, bool]:
            async with Client(url) as client:
                listed = await client.list_tools()
                ok = await client.call_tool("upper", {"text": "sdk"})
                bad = await client.call_tool("upper", {})
                return [t.name for t in listed.tools], _text_of(ok), bool(bad.is_error)

        names, text, bad_is_error = asyncio.run(main())
        self.assertIn("upper", names)
        self.assertEqual(text, "SDK")
        self.assertTrue(bad_is_error)

    def read_until(self, prefix: str) -> str:
        for line in self.http_stderr:
            if line.startswith(prefix):
                return str(line.strip())
        return ""

    def test_unreachable_url(self) -> None:
        with self.assertRaisesRegex(am.RemoteError, "^mcp: connect: "):
            am.connect(url=f"http://127.0.0.1:{_free_port()}/mcp", connect_timeout=WAIT)


class TestInspector(_Fixture):
    """The project's server under the npm Inspector CLI, over stdio and HTTP."""

    def inspect(self, *args: str) -> subprocess.CompletedProcess[str]:
        _, inspector = _node_peers()
        home = tempfile.mkdtemp(prefix="inspector-home-")
        self.addCleanup(shutil.rmtree, home, True)
        env = {**os.environ, **CHILD_ENV, "HOME": home}
        return subprocess.run(
            [inspector, "--cli", *args], env=env, capture_output=True, text=True, timeout=120
        )

    def check(self, server: list[str]) -> None:
        listed = self.inspect(*server, "--method", "tools/list")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        tools = {t["name"]: t for t in json.loads(listed.stdout)["tools"]}
        self.assertEqual(tools["upper"]["inputSchema"]["additionalProperties"], False)
        self.assertEqual(
            tools["upper"]["inputSchema"]["properties"]["text"]["description"], "Words"
        )
        called = self.inspect(
            *server, "--method", "tools/call", "--tool-name", "upper", "--tool-arg", "text=abc"
        )
        self.assertEqual(called.returncode, 0, called.stderr)
        self.assertEqual(json.loads(called.stdout)["content"][0]["text"], "ABC")
        invalid = self.inspect(*server, "--method", "tools/call", "--tool-name", "upper")
        self.assertEqual(invalid.returncode, 5, invalid.stdout + invalid.stderr)
        body = json.loads(invalid.stdout)
        self.assertTrue(body["isError"])
        self.assertIn("invalid arguments", body["content"][0]["text"])
        self.assertIn("text", body["content"][0]["text"])

    def test_inspector_over_stdio(self) -> None:
        self.check(self.serve_command())

    def test_inspector_over_http(self) -> None:
        _node_peers()
        self.check([self.start_http(), "--transport", "http"])


BIG_FIXTURE = textwrap.dedent(
    """
    import dataclasses
    import os

    import agenttool as at


    @at.tool
    def big(n: int) -> str:
        \"\"\"n bytes of text.\"\"\"
        return "x" * n


    @at.tool
    def big_after_progress(n: int) -> str:
        \"\"\"n bytes of text after one progress report.\"\"\"
        at.progress("half")
        return "y" * n


    @at.tool
    def worker(n: int) -> dict:
        \"\"\"Which process served call n.\"\"\"
        return {"n": n, "pid": os.getpid()}


    @dataclasses.dataclass
    class Many:
        items: list[str]


    @at.tool
    def many(n: int) -> Many:
        \"\"\"n items, structured.\"\"\"
        return Many([str(i) for i in range(n)])


    @at.tool
    def ask() -> str:
        \"\"\"Asks the user a name, answers with it.\"\"\"
        schema = {"type": "object", "properties": {"n": {"type": "string"}}}
        answer = at.elicit(at.Elicitation("Your name?", schema))
        return f"{answer.action.value}:{(answer.content or {}).get('n')}"
    """
)


class _BigServer(_Fixture):
    fixture = BIG_FIXTURE
    fixture_file = "big_tools.py"


TEN_MB = 10 * 1024 * 1024


class TestLargeResultsOverHTTP(_BigServer):
    def test_ten_megabytes_with_our_client(self) -> None:
        url = self.start_http()
        with am.connect(url=url, connect_timeout=WAIT) as remote:
            self.assertEqual(remote.call("big", {"n": TEN_MB}).output, "x" * TEN_MB)
            many = remote.call("many", {"n": 200_000})  # structured, 1.5 MB: once, not twice
            self.assertEqual(len(many.structured["items"]), 200_000)
            self.assertEqual(json.loads(many.output), many.structured)
            self.assertEqual(remote.call("big", {"n": 3}).output, "xxx")
            self.assertFalse(remote.closed)

    def test_ten_megabytes_with_the_sdk_client_in_both_eras(self) -> None:
        from mcp import Client

        url = self.start_http()

        async def main(mode: str) -> tuple[str, int, str]:
            async with Client(url, mode=mode) as client:
                r = await client.call_tool("big_after_progress", {"n": TEN_MB})
                after = await client.call_tool("big", {"n": 2})
                return client.protocol_version, len(_text_of(r)), _text_of(after)

        legacy = asyncio.run(main("legacy"))
        modern = asyncio.run(main("auto"))
        self.assertNotEqual(legacy[0], "2026-07-28")
        self.assertEqual(modern[0], "2026-07-28")
        self.assertEqual(legacy[1:], (TEN_MB, "xx"))
        self.assertEqual(modern[1:], (TEN_MB, "xx"))

    def test_a_large_result_on_an_open_stream_is_a_clear_error(self) -> None:
        """Progress opens the SSE stream; a reply over 1 MiB then cannot be one event, so the
        call fails saying why and the connection goes on."""
        url = self.start_http()
        with am.connect(url=url, connect_timeout=WAIT) as remote:
            out = _run_one(remote.lookup("big_after_progress"), {"n": 2 * 1024 * 1024})
            self.assertEqual(len(out.progress), 1)
            self.assertIn("too large for one event of the SSE stream", _error_text(out))
            self.assertEqual(remote.call("big", {"n": 3}).output, "xxx")
            self.assertFalse(remote.closed)

    def test_a_question_still_reaches_the_client_in_both_eras(self) -> None:
        """A question opens the reply's stream (legacy) or becomes an input request (2026)."""
        from mcp import Client

        url = self.start_http()

        async def elicit(ctx: Any, params: Any) -> mt.ElicitResult:
            return mt.ElicitResult(action="accept", content={"n": "Ada"})

        async def main(mode: str) -> str:
            async with Client(url, mode=mode, elicitation_callback=cast(Any, elicit)) as client:
                return _text_of(await client.call_tool("ask", {}))

        self.assertEqual(asyncio.run(main("legacy")), "accept:Ada")
        self.assertEqual(asyncio.run(main("auto")), "accept:Ada")

    def test_sse_events_are_read_with_every_line_ending(self) -> None:
        for eol in (b"\r\n", b"\n", b"\r"):
            one = b"event: message" + eol + b"data: {}" + eol + eol
            ping = b": ping" + eol + eol
            self.assertEqual(am._event_end(ping + one), (len(ping) - 2 * len(eol), 2 * len(eol)))
            self.assertEqual(am._event_data(one), b"{}")
            self.assertIsNone(am._event_data(ping))
            self.assertEqual(am._event_end(one[:-1])[0], -1)  # not complete yet
        self.assertEqual(am._event_data(b"data: a\ndata: b\n\n"), b"a\nb")

    @unittest.skipUnless(socket.has_ipv6, "this system has no IPv6")
    def test_an_ipv6_bind(self) -> None:
        try:
            with socket.socket(socket.AF_INET6) as probe:
                probe.bind(("::1", 0))
        except OSError:
            self.skipTest("::1 cannot be bound here")
        url = self.start_http(bind="[::1]:0")
        self.assertTrue(url.startswith("http://[::1]:"), url)
        with am.connect(url=url, connect_timeout=WAIT) as remote:
            self.assertEqual(remote.call("big", {"n": 2}).output, "xx")


def serve_app_in_thread(case: unittest.TestCase, app: Any) -> int:
    """Serve the ASGI ``app`` with uvicorn on a thread, on a free 127.0.0.1 port, until the
    test ends; its port once it is up."""
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    case.addCleanup(thread.join, WAIT)
    case.addCleanup(setattr, server, "should_exit", True)
    for _ in range(int(WAIT * 100)):
        if server.started:
            break
        threading.Event().wait(0.01)
    return int(server.servers[0].sockets[0].getsockname()[1])


def _initialize(url: str, origin: str | None) -> int:
    """The HTTP status of an initialize POST to ``url`` sent with ``origin`` (or none)."""
    import urllib.error
    import urllib.request

    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if origin is not None:
        headers["Origin"] = origin
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=WAIT) as answer:
            answer.read()
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        exc.read()
        return int(exc.code)


class TestOrigin(_BigServer):
    def test_a_loopback_bind(self) -> None:
        url = self.start_http(
            "--allow-origin", "https://app.example", "--allow-origin", "https://b.test:*"
        )
        self.assertEqual(_initialize(url, None), 200)  # not a browser
        self.assertEqual(_initialize(url, "http://localhost:5173"), 200)  # loopback, as before
        self.assertEqual(_initialize(url, "https://app.example"), 200)
        self.assertEqual(_initialize(url, "https://b.test:8443"), 200)
        self.assertEqual(_initialize(url, "https://evil.example"), 403)
        self.assertEqual(_initialize(url, "https://app.example.evil.test"), 403)
        self.assertEqual(_initialize(url, "null"), 403)

    def test_an_asgi_app_whose_bind_nobody_knows(self) -> None:
        """asgi_app cannot know its bind: only the origins it is told are allowed."""
        app = am.asgi_app(
            [at.new_func("t", "T.", None, lambda c: "ok")], allow_origins=["https://a.test"]
        )
        port = serve_app_in_thread(self, app)
        url = f"http://127.0.0.1:{port}/mcp"
        self.assertEqual(_initialize(url, None), 200)
        self.assertEqual(_initialize(url, "https://a.test"), 200)
        self.assertEqual(_initialize(url, "http://localhost:5173"), 403)
        self.assertEqual(_initialize(url, "https://evil.example"), 403)

    def test_a_port_wildcard_allows_any_port_of_that_host_and_no_other_host(self) -> None:
        """``https://host:*`` is that host on any port, never a host whose name starts the same."""
        allowed = ["https://host:*"]
        for origin in ("https://host:443", "https://host:8443"):
            self.assertTrue(am._origin_allowed(origin, allowed), origin)
        for origin in (
            "https://hostile.example",
            "https://hostile.example:8443",
            "https://host.evil.test:8443",
            "http://host:8443",
        ):
            self.assertFalse(am._origin_allowed(origin, allowed), origin)


def start_asgi_app(
    case: unittest.TestCase, target: str, *, workers: int = 1, env: dict[str, str] | None = None
) -> str:
    """Serve ``asgi_app`` for the tools file ``target`` under ``uvicorn --factory`` (with
    ``workers`` worker processes and ``env`` added to the environment), on a free 127.0.0.1
    port, until the test ends; its URL once the port takes connections."""
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "agenttool_mcp:asgi_app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--log-level",
            "warning",
        ],
        env={**os.environ, **CHILD_ENV, "AGENTTOOL_MCP_TARGET": target, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    case.addCleanup(_end_process, proc)
    for _ in range(int(WAIT * 10)):
        if proc.poll() is not None:
            break
        try:
            socket.create_connection(("127.0.0.1", port), timeout=WAIT).close()
            return f"http://127.0.0.1:{port}/mcp"
        except OSError:
            threading.Event().wait(0.1)
    raise AssertionError(f"uvicorn never listened on port {port} (exit code {proc.poll()})")


class TestParamHeaders(_Case):
    """A 2026-07-28 call's ``Mcp-Param-*`` headers are checked against the tool's schema from
    a lookup (the SDK otherwise ran the whole tools/list handler once per call), with the same
    verdicts as before."""

    SCHEMA = {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"],
    }

    def tool(self) -> at.Tool:
        return at.new_func("where", "Where.", self.SCHEMA, lambda c: f"at {c.args['region']}")

    def test_the_server_looks_a_schema_up_by_name(self) -> None:
        server = am.build_server([self.tool()])
        self.assertIsNotNone(server.get_tool_input_schema)
        self.assertEqual(server.get_tool_input_schema("where"), self.SCHEMA)
        self.assertIsNone(server.get_tool_input_schema("nowhere"))
        am.set_tools(server, [at.new_func("later", "Later.", None, lambda c: "ok")])
        self.assertIsNone(server.get_tool_input_schema("where"))  # what tools/list now says
        self.assertEqual(server.get_tool_input_schema("later")["type"], "object")

    def test_a_header_that_disagrees_with_its_argument_is_refused_over_http(self) -> None:
        import urllib.error
        import urllib.request

        port = serve_app_in_thread(self, am.asgi_app([self.tool()]))
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }

        def call(region_header: str | None) -> tuple[int, dict[str, Any]]:
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "where", "arguments": {"region": "eu"}, "_meta": meta},
            }
            headers = {
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tools/call",
                "Mcp-Name": "where",
            }
            if region_header is not None:
                headers["Mcp-Param-Region"] = region_header
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/mcp", json.dumps(body).encode(), headers, method="POST"
            )
            try:
                with urllib.request.urlopen(request, timeout=WAIT) as answer:
                    return int(answer.status), json.loads(answer.read())
            except urllib.error.HTTPError as exc:
                return int(exc.code), json.loads(exc.read())

        status, reply = call("eu")
        self.assertEqual(status, 200, reply)
        self.assertEqual(reply["result"]["content"][0]["text"], "at eu")
        for wrong in ("us", None):  # another value, or the header left out
            status, reply = call(wrong)
            self.assertEqual(status, 400, reply)
            self.assertIn("error", reply)


class TestASGIWorkers(_BigServer):
    def test_two_workers_serve_one_clients_calls_and_lose_nothing(self) -> None:
        url = start_asgi_app(self, self.target, workers=2)
        remote = None
        for _ in range(int(WAIT * 10)):
            try:
                # each request on a connection of its own, for the kernel to hand to either
                # worker (kept-alive connections would stay with the worker that took them)
                remote = am.connect(url=url, connect_timeout=WAIT, headers={"Connection": "close"})
                break
            except am.RemoteError:
                threading.Event().wait(0.1)
        assert remote is not None, "the workers never answered"
        self.addCleanup(remote.close)
        worker = remote.lookup("worker")
        # one client, its calls in parallel batches
        served: dict[int, int] = {}
        pids: set[int] = set()
        for batch in range(50):
            jobs = [
                at.Job(worker, at.Call(f"c{batch}_{i}", {"n": batch * 8 + i})) for i in range(8)
            ]
            for event in at.Executor(max_parallel=8).execute(jobs):
                if event.final:
                    assert event.result is not None, event.error
                    answer = json.loads(str(event.result.output))
                    served[answer["n"]] = answer["pid"]
                    pids.add(answer["pid"])
            if len(pids) == 2 and batch >= 4:
                break
        self.assertEqual(sorted(served), list(range(len(served))))  # every call answered once
        self.assertEqual(len(pids), 2, "one worker served every call")


# ---------------------------------------------------------------------------------------------
# Consume: a server's tools as agenttool tools
# ---------------------------------------------------------------------------------------------


def _mcpserver(*names: str, **annotations: Any) -> Any:
    """An SDK ``MCPServer`` with one tool per name, each answering its own name."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("sdk-names")
    for name in names:

        def answer(name: str = name) -> str:
            return name

        server.add_tool(answer, name=name, description=f"Answers {name}.", structured_output=False)
    for name, ann in annotations.items():
        server.add_tool(
            lambda: "ok",
            name=name,
            annotations=mt.ToolAnnotations(**ann),
            structured_output=False,
        )
    return server


class TestRemoteNames(_Case):
    """MCP allows names providers refuse: each gets a deterministic local name (or the host's
    own, ``rename``), two tools never share one, and calls reach the remote name."""

    long = "very.long." + "x" * 110  # 120 characters, MCP's limit is 128

    @_quiet("mcp")
    def test_local_names_keep_the_remote_names(self) -> None:
        server = _mcpserver("files.read", "ok-name_1", self.long, "a b/c")
        with am.connect(server=server) as remote:
            names = [t.name for t in remote.tools()]
            self.assertEqual(names[:2], ["files_read", "ok-name_1"])
            self.assertEqual(names[3], "a_b_c")
            cut = names[2]
            self.assertEqual(len(cut), 64)
            self.assertTrue(cut.startswith("very_long_xxx"), cut)
            self.assertRegex(cut, r"^[a-zA-Z0-9_-]{1,64}$")
            for name in names:
                self.assertEqual(remote.call(name).output, remote.lookup(name).remote_name)
            self.assertEqual(remote.call("files_read").output, "files.read")
            self.assertEqual(_run_one(remote.lookup(cut), "").output, self.long)
        with am.connect(server=server, prefix="fs.v1") as remote:
            self.assertEqual(remote.tools()[0].name, "fs_v1__files_read")
        # the same long name gets the same local name every time; another one another
        other = _mcpserver(self.long[:-1] + "y")
        with am.connect(server=server) as a, am.connect(server=other) as b:
            self.assertNotEqual(a.tools()[2].name, b.tools()[0].name)
            self.assertEqual(a.tools()[2].name[:-8], b.tools()[0].name[:-8])

    def test_a_cut_name_is_as_long_as_the_core_rule_allows(self) -> None:
        """The length a local name is cut to is the one the core's tool name rule allows."""
        self.assertTrue(am._is_provider_name("a" * am._NAME_MAX))
        self.assertFalse(am._is_provider_name("a" * (am._NAME_MAX + 1)))
        self.assertEqual(len(am._local_name("a" * (am._NAME_MAX + 1))), am._NAME_MAX)

    def test_rename_and_collisions(self) -> None:
        server = _mcpserver("a.b", "a_b")
        with self.assertLogs("agenttool_mcp", logging.WARNING) as caught:
            with am.connect(server=server) as remote:
                self.assertEqual(remote.tools(), [])
        message = "\n".join(caught.output)
        self.assertIn('"a.b" and "a_b"', message)
        self.assertIn('"a_b"', message)
        self.assertIn("rename", message)
        with am.connect(server=server, rename={"a.b": "dotted"}) as remote:
            self.assertEqual([t.name for t in remote.tools()], ["dotted", "a_b"])
            self.assertEqual(remote.call("dotted").output, "a.b")
            self.assertEqual(remote.call("a_b").output, "a_b")
        # a rename onto another tool's name is the same warning
        with self.assertLogs("agenttool_mcp", logging.WARNING) as caught:
            with am.connect(server=server, rename={"a_b": "a_b", "a.b": "a_b"}) as remote:
                self.assertEqual(remote.tools(), [])
        self.assertIn('"a.b" and "a_b" would all be named', caught.output[0])
        with self.assertRaisesRegex(ValueError, 'rename: "a.b" to "no.dots"'):
            am.connect(server=server, rename={"a.b": "no.dots"})

    def test_read_only_is_never_destructive(self) -> None:
        server = _mcpserver(
            ro={"read_only_hint": True},
            ro_claims_destructive={"read_only_hint": True, "destructive_hint": True},
            writer={"read_only_hint": False},
            silent={"title": "Silent"},
            gentle={"destructive_hint": False},
        )
        with am.connect(server=server) as remote:
            got = {
                t.name: (a.read_only, a.destructive)
                for t in remote.tools()
                if (a := at.annotations_of(t)) is not None
            }
        self.assertEqual(
            got,
            {
                "ro": (True, False),
                "ro_claims_destructive": (True, False),
                "writer": (False, True),
                "silent": (None, True),
                "gentle": (None, False),
            },
        )


class TestRemoteOptions(_Case):
    """The host's per-tool options find a tool by its remote or its local name."""

    def test_options_by_remote_or_local_name(self) -> None:
        server = _mcpserver("files.read", "files.write", "net.get")
        with am.connect(
            server=server,
            rename={"net.get": "fetch"},
            sequential=["files.write"],
            resources={"files_read": "disk"},
            confined={"fetch": lambda args: (True, "the network")},
        ) as remote:
            read, write, fetch = (remote.lookup(n) for n in ("files_read", "files_write", "fetch"))
            self.assertEqual(at.resource_of(read), "disk")
            self.assertTrue(at.is_sequential(write))
            self.assertFalse(at.is_sequential(read))
            self.assertEqual(at.confined_by(fetch, {}), (True, "the network"))
            self.assertEqual(at.confined_by(read, {}), (False, ""))


# ---------------------------------------------------------------------------------------------
# Consume: the connection
# ---------------------------------------------------------------------------------------------


class TestInMemory(_Case):
    """The project's client against its own server, in memory."""

    def setUp(self) -> None:
        self.seen_cancel = threading.Event()
        self.started = threading.Event()

        def hang(call: at.Call) -> at.Result:
            self.started.set()
            at.cancel_event().wait(WAIT)
            if at.cancelled():
                self.seen_cancel.set()
            return at.text("stopped")

        def steps(call: at.Call) -> at.Result:
            at.progress("a quarter", progress=10, total=40)
            at.progress("all", progress=40, total=40)
            return at.text("done")

        def who(call: at.Call) -> at.Result:
            session = am.current_session()
            assert session is not None and session.client_params is not None
            return at.text(session.client_params.client_info.name)

        def ask(call: at.Call) -> at.Result:
            answer = at.elicit(
                at.Elicitation(
                    "Your name?", {"type": "object", "properties": {"n": {"type": "string"}}}
                )
            )
            return at.text(f"{answer.action.value}:{json.dumps(answer.content)}")

        def visit(call: at.Call) -> at.Result:
            answer = at.elicit(at.Elicitation("Log in here", url="https://login.test/x"))
            return at.text(answer.action.value)

        def record(call: at.Call) -> at.Result:
            return at.Result(output="kept", details=_Rec(7))

        def grow(call: at.Call) -> at.Result:
            am.set_tools(self.server, self.tools + [at.new_func("extra", "New.", None, who)])
            return at.text("grown")

        self.tools = [
            _text_tool(
                "add",
                lambda a, b: {"sum": a + b},
                {
                    "type": "object",
                    "properties": {
                        "a": {"type": "integer", "description": "First addend"},
                        "b": {"type": "integer"},
                    },
                    "required": ["a", "b"],
                    "additionalProperties": False,
                },
                annotations=at.Annotations(read_only=True, title="Add"),
            ),
            at.new_func("hang", "Hang.", None, hang),
            at.new_func("steps", "Steps.", None, steps, sequential=True),
            at.new_func("who", "Who calls.", None, who, resource="shell:1"),
            at.new_func("ask", "Asks.", None, ask),
            at.new_func("record", "Records.", None, record),
            at.new_func("visit", "Sends the user to a URL.", None, visit),
            at.new_func("grow", "Adds a tool.", None, grow),
            _text_tool("boom", lambda: {"a": 1}["missing"]),
        ]
        self.server = am.build_server(
            self.tools, name="demo", version="1.2", page_size=3, instructions="Be nice."
        )

    def connect(self, **kw: Any) -> am.Remote:
        remote = am.connect(server=self.server, **kw)
        self.addCleanup(remote.close)
        return remote

    def test_listing(self) -> None:
        remote = self.connect(prefix="d", sequential=["who"], resources={"d__add": "calc"})
        self.assertEqual(remote.server_info and remote.server_info.name, "demo")
        self.assertEqual(remote.instructions, "Be nice.")
        tools = {t.name: t for t in remote.tools()}
        self.assertEqual(list(tools), [f"d__{t.name}" for t in self.tools])  # all pages
        self.assertEqual(tools["d__add"].parameters, self.tools[0].parameters)
        self.assertEqual(tools["d__hang"].parameters, at.NO_ARGS)
        ann = at.annotations_of(tools["d__add"])
        self.assertEqual(
            ann,
            at.Annotations(
                title="Add", read_only=True, destructive=False, idempotent=None, open_world=True
            ),
        )  # a read-only tool is not destructive, whatever the (absent) destructive hint
        self.assertIsNone(at.annotations_of(tools["d__hang"]))
        self.assertTrue(at.is_sequential(tools["d__steps"]))  # the server's _meta
        self.assertTrue(at.is_sequential(tools["d__who"]))  # the host's option
        self.assertEqual(at.resource_of(tools["d__add"]), "calc")

    def test_calls(self) -> None:
        remote = self.connect()
        tools = at.ToolSet(remote.tools())
        ok = _run_one(tools.lookup("add"), '{"a": 2, "b": 3}')
        self.assertEqual(json.loads(ok.output), {"sum": 5})
        bad = _run_one(tools.lookup("add"), '{"a": 1}')
        self.assertIn("invalid arguments", _error_text(bad))
        self.assertIn("b", _error_text(bad))
        self.assertIn("KeyError", _error_text(_run_one(tools.lookup("boom"), "")))
        self.assertEqual(_run_one(tools.lookup("who"), "").output, "agenttool")
        with self.assertRaisesRegex(am.RemoteError, 'no tool "nope"'):
            remote.call("nope")

    def test_progress_keeps_numbers(self) -> None:
        remote = self.connect()
        event = _run_one(remote.lookup("steps"), "")
        infos = [r.details for r in event.progress]
        self.assertEqual(
            [(i.progress, i.total, i.message) for i in infos],
            [(10, 40, "a quarter"), (40, 40, "all")],
        )
        updates: list[at.Result] = []
        tool = remote.lookup("steps")
        assert tool is not None
        tool.execute(at.Call("x", "", on_update=updates.append))
        self.assertEqual([u.output for u in updates], ["a quarter", "all"])

    def test_record_crosses(self) -> None:
        remote = self.connect()
        event = _run_one(remote.lookup("record"), "")
        details = event.details
        self.assertIsInstance(details, am.RemoteRecord)
        self.assertEqual(details.ns, "test:rec")
        record = at.record_of(_Rec(7))
        assert record is not None
        self.assertEqual(details.data, record.data)
        self.assertEqual(json.loads(details.data), {"n": 7})

    def test_elicitation_routed_to_the_elicitor(self) -> None:
        remote = self.connect(elicitation=True)
        questions: list[at.Elicitation] = []

        def elicitor(q: at.Elicitation) -> at.Answer:
            questions.append(q)
            return at.Answer(at.Action.ACCEPT, {"n": "Ada"})

        event = _run_one(remote.lookup("ask"), "", elicitor=elicitor)
        self.assertEqual(event.output, 'accept:{"n": "Ada"}')
        self.assertEqual(questions[0].message, "Your name?")
        # without an elicitor the host answers cancel; without the option nobody is asked
        self.assertEqual(_run_one(remote.lookup("ask"), "").output, "cancel:null")
        plain = self.connect()
        event = _run_one(plain.lookup("ask"), "", elicitor=elicitor)
        self.assertEqual(event.output, "cancel:null")
        self.assertEqual(len(questions), 1)
        wrong = _run_one(
            remote.lookup("ask"), "", elicitor=lambda q: at.Answer(at.Action.ACCEPT, {"n": 5})
        )
        self.assertIn("the answer does not fit the question", _error_text(wrong))
        visited = _run_one(remote.lookup("visit"), "", elicitor=elicitor)
        self.assertEqual(visited.output, "accept")
        self.assertEqual(
            (questions[1].message, questions[1].url), ("Log in here", "https://login.test/x")
        )

    def test_an_accepted_form_gets_the_defaults_it_left_out(self) -> None:
        """SEP-1034: the client fills an accepted form's omitted fields from the schema's
        defaults, and never touches a field the answer gives."""
        schema = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John"},
                "age": {"type": "integer", "default": 30},
                "given": {"type": "string", "default": "x"},
                "free": {"type": "string"},
            },
        }
        filled = am._with_defaults(schema, {"given": "y"})
        self.assertEqual(filled, {"given": "y", "name": "John", "age": 30})
        self.assertEqual(am._with_defaults(schema, None), {"name": "John", "age": 30, "given": "x"})
        self.assertIsNone(am._with_defaults(None, None))
        self.assertEqual(am._with_defaults({"type": "object"}, {}), {})

    def test_list_change_in_a_call_refreshes(self) -> None:
        remote = self.connect(notification_grace=WAIT)
        self.assertNotIn("extra", [t.name for t in remote.tools()])
        _run_one(remote.lookup("grow"), "")
        self.assertIn("extra", [t.name for t in remote.tools()])
        am.set_tools(self.server, self.tools)
        remote.refresh()
        self.assertNotIn("extra", [t.name for t in remote.tools()])

    def test_cancel_reaches_the_server(self) -> None:
        remote = self.connect()
        cancel = threading.Event()
        events = at.Executor().execute(
            [at.Job(remote.lookup("hang"), at.Call("h", ""))], cancel=cancel
        )
        box: list[at.Event] = []
        t = threading.Thread(target=lambda: box.extend(events))
        t.start()
        self.assertTrue(self.started.wait(WAIT))
        cancel.set()
        t.join(WAIT)
        self.assertFalse(t.is_alive())
        self.assertIsNotNone(box[-1].error)
        self.assertTrue(self.seen_cancel.wait(WAIT), "the server-side tool never saw cancellation")
        # the connection still works
        self.assertEqual(json.loads(str(remote.call("add", {"a": 1, "b": 1}).output)), {"sum": 2})

    def test_close_mid_call(self) -> None:
        remote = self.connect()
        box: list[_Outcome] = []
        t = threading.Thread(target=lambda: box.append(_run_one(remote.lookup("hang"), "")))
        t.start()
        self.assertTrue(self.started.wait(WAIT))
        remote.close()
        t.join(WAIT)
        self.assertFalse(t.is_alive())
        self.assertIn("mcp: connection closed", _error_text(box[0]))
        later = _run_one(remote.lookup("add"), '{"a": 1, "b": 2}')
        self.assertEqual(_error_text(later), 'mcp: call "add": mcp: connection closed')
        self.assertTrue(self.seen_cancel.wait(WAIT))

    def test_timeout(self) -> None:
        remote = self.connect(timeout=0.5)
        event = _run_one(remote.lookup("hang"), "")
        self.assertIn('mcp: call "hang": no answer within 0.5s', _error_text(event))
        self.assertTrue(self.seen_cancel.wait(WAIT))
        self.assertEqual(json.loads(str(remote.call("add", {"a": 1, "b": 1}).output)), {"sum": 2})

    def test_async_api(self) -> None:
        async def main() -> list[Any]:
            async with am.aconnect(server=self.server, prefix="p", elicitation=True) as remote:
                seen: list[Any] = []
                r = await remote.call(
                    "p__steps", on_progress=lambda p, t, m: seen.append((p, t, m))
                )
                try:
                    await remote.call("p__boom")
                except am.MCPToolError as exc:
                    err = str(exc)
                asked = await remote.call(
                    "p__ask", elicitor=lambda q: at.Answer(at.Action.ACCEPT, {"n": q.message})
                )
                return [r.output, seen, err, len(remote.tools()), asked.output]

        out = asyncio.run(main())
        self.assertEqual(out[0], "done")
        self.assertEqual(out[1], [(10, 40, "a quarter"), (40, 40, "all")])
        self.assertIn("KeyError", out[2])
        self.assertEqual(out[3], len(self.tools))
        self.assertEqual(out[4], 'accept:{"n": "Your name?"}')

    def test_bad_definitions_refused(self) -> None:
        with self.assertRaisesRegex(ValueError, "two tools"):
            am.build_server([self.tools[0], self.tools[0]])
        with self.assertRaisesRegex(ValueError, 'tool "odd": schema'):
            am.build_server([at.new_func("odd", "x", {"type": 12}, lambda c: "")])


class TestInMemoryLegacyEra(TestInMemory):
    """TestInMemory again on the legacy handshake (``era="auto"`` picks 2026-07-28 there), so
    questions, cancellation and list changes stay tested on server-to-client requests too."""

    def connect(self, **kw: Any) -> am.Remote:
        remote = super().connect(era="legacy", **kw)
        self.assertEqual(remote.protocol_version, "2025-11-25")
        return remote


class TestMCPServer(_Case):
    """The project's client against a server built with the SDK's MCPServer."""

    @_quiet("mcp")
    def test_client_against_mcpserver(self) -> None:
        from mcp.server.mcpserver import MCPServer
        from mcp.types import ToolAnnotations

        server = MCPServer("sdk-server", instructions="From the SDK.")

        @server.tool(annotations=ToolAnnotations(read_only_hint=True))
        def add(a: int, b: int = 2) -> int:
            """Add two numbers."""
            return a + b

        @server.tool()
        def explode() -> str:
            """Always fails."""
            raise RuntimeError("nope")

        with am.connect(server=server, prefix="sdk") as remote:
            self.assertEqual(remote.instructions, "From the SDK.")
            tools = {t.name: t for t in remote.tools()}
            self.assertEqual(set(tools), {"sdk__add", "sdk__explode"})
            self.assertEqual((tools["sdk__add"].parameters or {})["required"], ["a"])
            ann = at.annotations_of(tools["sdk__add"])
            self.assertTrue(ann is not None and ann.read_only)
            event = _run_one(tools["sdk__add"], '{"a": 40}')
            self.assertIn("42", event.output)
            self.assertIn(
                "Error executing tool explode", _error_text(_run_one(tools["sdk__explode"], ""))
            )
            self.assertTrue(_error_text(_run_one(tools["sdk__add"], '{"a": "x"}')))


class TestEverything(_Case):
    """The project's client against the npm reference server (server-everything)."""

    def test_server_everything(self) -> None:
        everything, _ = _node_peers()
        stderr = open(os.devnull, "w")  # noqa: SIM115
        self.addCleanup(stderr.close)
        with am.connect(["node", everything, "stdio"], prefix="every", stderr=stderr) as remote:
            self.assertEqual(remote.protocol_version, "2025-11-25")  # era="auto" fell back
            tools = at.ToolSet(remote.tools())
            self.assertIsNotNone(tools.lookup("every__echo"))
            echo = _run_one(tools.lookup("every__echo"), '{"message": "hi"}')
            self.assertIn("hi", echo.output)
            image = _run_one(tools.lookup("every__get-tiny-image"), "").output
            self.assertIn("image/png", json.dumps(image))
            structured = _run_one(
                tools.lookup("every__get-structured-content"), '{"location": "New York"}'
            )
            self.assertIn("temperature", structured.output)
            long = _run_one(
                tools.lookup("every__trigger-long-running-operation"), '{"duration": 1, "steps": 3}'
            )
            self.assertIsNone(long.error)
            self.assertEqual(len(long.progress), 3)
            self.assertEqual(long.progress[-1].details.total, 3)
            bad = _run_one(tools.lookup("every__get-sum"), '{"a": "x"}')
            self.assertTrue(_error_text(bad))
            echo_tool = tools.lookup("every__echo")
            assert echo_tool is not None
            self.assertIsNotNone(at.annotations_of(echo_tool))


class TestEverythingLongCall(_Case):
    """A long call of the npm reference server outlives ``timeout`` while it reports progress."""

    def test_progress_resets_the_idle_timeout(self) -> None:
        everything, _ = _node_peers()
        stderr = open(os.devnull, "w")  # noqa: SIM115
        self.addCleanup(stderr.close)
        with am.connect(["node", everything, "stdio"], stderr=stderr, timeout=2) as remote:
            long = _run_one(
                remote.lookup("trigger-long-running-operation"), '{"duration": 3, "steps": 6}'
            )
            self.assertIsNone(long.error)
            self.assertEqual(len(long.progress), 6)


class TestRemoteEras(_Case):
    """The client speaks 2026-07-28 where the server offers it and the legacy handshake
    otherwise (``era=`` forces one); list changes reach ``await_refresh`` in both eras."""

    def ours(self) -> Any:
        server: Any = None

        def grow(call: at.Call) -> at.Result:
            am.set_tools(server, [*tools, at.new_func("extra", "New.", None, grow)])
            return at.text("grown")

        def steps(call: at.Call) -> at.Result:
            at.progress("half", progress=1, total=2)
            return at.text("done")

        tools = [
            at.new_func("grow", "Adds a tool.", None, grow),
            at.new_func("steps", "S.", None, steps, annotations=at.Annotations(read_only=True)),
        ]
        server = am.build_server(tools, name="ours")
        return server

    def theirs(self) -> Any:
        from mcp.server.mcpserver import Context, MCPServer
        from mcp.types.version import MODERN_PROTOCOL_VERSIONS

        server = MCPServer("theirs")

        async def grow(ctx: Context) -> str:
            """Adds a tool."""
            server.add_tool(lambda: "new", name="extra", structured_output=False)
            if ctx.request_context.protocol_version in MODERN_PROTOCOL_VERSIONS:
                await ctx.notify_tools_changed()
            else:
                await ctx.request_context.session.send_tool_list_changed()
            return "grown"

        async def steps(ctx: Context) -> str:
            """Steps."""
            await ctx.report_progress(1, 2, "half")
            return "done"

        for fn in (grow, steps):  # this module's string annotations cannot see Context
            fn.__annotations__ = {"ctx": Context, "return": str}
        server.add_tool(grow, structured_output=False)
        read_only = mt.ToolAnnotations(read_only_hint=True)  # no wait for a list change
        server.add_tool(steps, structured_output=False, annotations=read_only)
        return server

    def check(self, server: Any, era: str, expected: str) -> None:
        with am.connect(server=server, era=era, notification_grace=WAIT) as remote:
            self.assertEqual(remote.protocol_version == "2026-07-28", expected == "modern", era)
            event = _run_one(remote.lookup("steps"), "")
            self.assertEqual((event.output, [p.output for p in event.progress]), ("done", ["half"]))
            self.assertNotIn("extra", [t.name for t in remote.tools()])
            self.assertEqual(remote.call("grow").output, "grown")
            remote.await_refresh(WAIT)
            self.assertIn("extra", [t.name for t in remote.tools()], (era, server))

    @_quiet("mcp")
    def test_our_server_in_both_eras(self) -> None:
        for era, expected in (("auto", "modern"), ("legacy", "legacy"), ("2026-07-28", "modern")):
            self.check(self.ours(), era, expected)

    @_quiet("mcp")
    def test_sdk_mcpserver_in_both_eras(self) -> None:
        for era, expected in (("auto", "modern"), ("legacy", "legacy")):
            self.check(self.theirs(), era, expected)


class TestRemoteTimeouts(_Case):
    """``timeout`` is an idle limit each progress notification starts again; ``max_timeout``
    bounds the whole call whatever its progress."""

    def setUp(self) -> None:
        self.cancelled = threading.Event()

        def slow_steps(call: at.Call) -> at.Result:
            for i in range(8):  # 3.2 s in all, 0.4 s between progress notifications
                at.progress(f"step {i}", progress=i, total=8)
                if at.cancel_event().wait(0.4):
                    break
            return at.text("all steps")

        def ticker(call: at.Call) -> at.Result:
            while not at.cancel_event().wait(0.1):
                at.progress("tick")
            self.cancelled.set()
            return at.text("stopped")

        self.server = am.build_server(
            [
                at.new_func("slow_steps", "Slow.", None, slow_steps),
                at.new_func("ticker", "Ticks.", None, ticker),
                at.new_func("quick", "Quick.", None, lambda call: at.text("quick")),
            ]
        )

    def test_progress_keeps_a_call_alive_past_its_timeout(self) -> None:
        with am.connect(server=self.server, timeout=2.5, era="legacy") as remote:
            event = _run_one(remote.lookup("slow_steps"), "")
            self.assertEqual(event.output, "all steps")
            self.assertEqual(len(event.progress), 8)
        with am.connect(server=self.server, timeout=2.5, era="auto") as remote:
            self.assertEqual(remote.call("slow_steps").output, "all steps")

    def test_max_timeout_ends_a_call_that_keeps_reporting(self) -> None:
        with am.connect(server=self.server, timeout=WAIT, max_timeout=1) as remote:
            with self.assertRaises(am.RemoteError) as caught:
                remote.call("ticker")
            self.assertEqual(
                str(caught.exception), 'mcp: call "ticker": not done within 1s (max_timeout)'
            )
            self.assertTrue(self.cancelled.wait(WAIT), "the server's tool never saw the cancel")
            self.assertFalse(remote.closed)
            self.assertEqual(remote.call("quick").output, "quick")

    def test_bad_limits_refused(self) -> None:
        for kw in ({"timeout": 0}, {"max_timeout": -1}, {"era": "2024-11-05"}):
            with self.assertRaises(ValueError):
                am.connect(server=self.server, **cast(Any, kw))


class TestRemoteMisuse(_Case):
    """The client API's edges: a host's mistake gets a clear error, a closed remote says so,
    and a coroutine progress callback is awaited."""

    def setUp(self) -> None:
        self.server = am.build_server([at.new_func("x", "X.", None, lambda c: at.text("x"))])

    def test_bad_targets_refused(self) -> None:
        for kw in ({}, {"command": []}, {"url": "http://127.0.0.1:1/mcp", "server": self.server}):
            with self.assertRaisesRegex(ValueError, "exactly one of"):
                am.connect(**cast(Any, kw))
        with self.assertRaisesRegex(ValueError, "non-empty list"):
            am.connect(cast(Any, "python server.py"))

    def test_async_misuse(self) -> None:
        async def main() -> tuple[str, str]:
            async with am.aconnect(server=self.server) as remote:
                with self.assertRaises(RuntimeError) as twice:
                    await remote.open()
                with self.assertRaises(RuntimeError) as on_loop:
                    remote.tools()[0].execute(at.Call("c", {}))
                return str(twice.exception), str(on_loop.exception)

        twice, on_loop = asyncio.run(main())
        self.assertEqual(twice, "this remote is already open")
        self.assertIn("execute() was called on the connection's own event loop", on_loop)

    def test_async_progress_callback_is_awaited(self) -> None:
        def steps(call: at.Call) -> at.Result:
            at.progress("one", progress=1, total=2)
            at.progress("two", progress=2, total=2)
            return at.text("done")

        server = am.build_server([at.new_func("steps", "Steps.", None, steps)])

        async def main() -> list[Any]:
            seen: list[Any] = []

            async def on_progress(p: float, total: float | None, message: str | None) -> None:
                await asyncio.sleep(0)
                seen.append((p, total, message))

            async with am.aconnect(server=server) as remote:
                result = await remote.call("steps", on_progress=on_progress)
            return [result.output, seen]

        self.assertEqual(asyncio.run(main()), ["done", [(1, 2, "one"), (2, 2, "two")]])

    def test_closed_remote_says_so(self) -> None:
        remote = am.connect(server=self.server)
        tool = remote.lookup("x")
        remote.close()
        self.assertTrue(remote.closed)
        self.assertIsNone(remote.protocol_version)
        for name in ("x", "nope"):
            with self.assertRaisesRegex(am.RemoteError, "mcp: connection closed$"):
                remote.call(name)
        self.assertEqual(_error_text(_run_one(tool, "")), 'mcp: call "x": mcp: connection closed')


FAULTY = textwrap.dedent(
    r'''
    """A raw stdio MCP server (no SDK) with one fault per tool; legacy era only."""
    import json
    import sys

    out = sys.stdout.buffer
    state = {"list_error": False, "endless_pages": False, "silent_list": False}


    def send(obj, bad=b""):
        out.write(json.dumps(obj).encode().replace(b"@BAD@", bad) + b"\n")
        out.flush()


    def error(mid, code, message):
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": message}})


    def text(mid, value, bad=b""):
        result = {"content": [{"type": "text", "text": value}]}
        send({"jsonrpc": "2.0", "id": mid, "result": result}, bad)


    NAMES = (
        "echo", "closed", "timeout", "bad_byte", "bad_line", "cut_sequence", "break_list",
        "endless_pages", "silent_list",
    )
    TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in NAMES]
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        mid, method = msg.get("id"), msg.get("method")
        if mid is None:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "faulty", "version": "0"},
            }
            send({"jsonrpc": "2.0", "id": mid, "result": result})
        elif method == "tools/list" and state["list_error"]:
            error(mid, -32000, "the tool registry went away")
        elif method == "tools/list" and state["silent_list"]:
            pass  # never answered
        elif method == "tools/list" and state["endless_pages"]:
            result = {"tools": TOOLS, "nextCursor": "again"}
            send({"jsonrpc": "2.0", "id": mid, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            name = msg["params"]["name"]
            if name == "closed":
                error(mid, -32000, "the database went away")
            elif name == "timeout":
                error(mid, -32001, "upstream took too long")
            elif name == "bad_byte":
                text(mid, "caf@BAD@", b"\xff")
            elif name == "bad_line":
                out.write(b"\xfe\xff not even text\n")
                text(mid, "after the noise")
            elif name == "cut_sequence":
                text(mid, "caf@BAD@", b"\xc3")
            elif name == "silent_list":
                state["silent_list"] = True
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                text(mid, "silent")
            elif name == "endless_pages":
                state["endless_pages"] = True
                text(mid, "endless")
            elif name == "break_list":
                state["list_error"] = True
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                text(mid, "broken")
            else:
                text(mid, "ok")
        else:
            error(mid, -32601, "Method not found")
    '''
)


class TestRemoteFaults(_Fixture):
    """Faults on the server's side end in a clear error, never a dead connection or a hang."""

    def faulty(self) -> list[str]:
        path = os.path.join(self.tmp, "faulty.py")
        if not os.path.exists(path):
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(FAULTY)
        return [sys.executable, path]

    def run_child(self, code: str) -> str:
        """Run ``code`` in a child process bounded by WAIT: a hang fails, never blocks."""
        try:
            out = subprocess.run(
                [sys.executable, "-X", "dev", "-c", textwrap.dedent(code), *self.faulty()],
                env={**os.environ, **CHILD_ENV},
                capture_output=True,
                text=True,
                timeout=WAIT,
            )
        except subprocess.TimeoutExpired:
            self.fail("the client hung")
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout + out.stderr

    @_quiet("mcp")
    def test_server_errors_keep_their_message_and_the_connection(self) -> None:
        for timeout in (None, WAIT):
            with am.connect(self.faulty(), timeout=timeout) as remote:
                with self.assertRaises(am.RemoteError) as caught:
                    remote.call("closed")
                self.assertEqual(
                    str(caught.exception), 'mcp: call "closed": the database went away'
                )
                self.assertFalse(remote.closed)
                with self.assertRaises(am.RemoteError) as caught:
                    remote.call("timeout")
                self.assertEqual(
                    str(caught.exception), 'mcp: call "timeout": upstream took too long'
                )
                self.assertFalse(remote.closed)
                self.assertEqual(remote.call("echo").output, "ok")

    @_quiet("mcp")
    def test_server_error_on_a_refresh_keeps_the_connection(self) -> None:
        errors: list[BaseException] = []
        with am.connect(self.faulty(), on_refresh_error=errors.append) as remote:
            self.assertEqual(remote.call("break_list").output, "broken")
            with self.assertRaisesRegex(am.RemoteError, "the tool registry went away"):
                remote.await_refresh(WAIT)
            self.assertFalse(remote.closed)
            self.assertEqual(remote.call("echo").output, "ok")
        self.assertEqual(len(errors), 1)

    def test_forced_era_the_server_lacks_says_so(self) -> None:
        with self.assertRaisesRegex(am.RemoteError, 'era="2026-07-28" was forced') as caught:
            am.connect(self.faulty(), era="2026-07-28", connect_timeout=WAIT)
        self.assertTrue(str(caught.exception).startswith("mcp: connect: "))
        with am.connect(self.faulty(), era="auto") as remote:  # the legacy fallback
            self.assertEqual(remote.protocol_version, "2025-11-25")

    def test_unanswered_listing_ends_within_the_timeout(self) -> None:
        errors: list[BaseException] = []
        with am.connect(self.faulty(), timeout=0.5, on_refresh_error=errors.append) as remote:
            self.assertEqual(remote.call("silent_list").output, "silent")
            with self.assertRaisesRegex(am.RemoteError, "^mcp: list tools: no answer within 0.5s"):
                remote.refresh()
            self.assertFalse(remote.closed)
            self.assertEqual(remote.call("echo").output, "ok")
        self.assertIn("no answer within 0.5s", str(errors[0]))

    def test_endless_pages_end_in_an_error(self) -> None:
        with am.connect(self.faulty()) as remote:
            self.assertEqual(remote.call("endless_pages").output, "endless")
            with self.assertRaisesRegex(am.RemoteError, "the server repeated cursor 'again'"):
                remote.refresh()
            self.assertFalse(remote.closed)
            self.assertIn("echo", [t.name for t in remote.tools()])  # the old snapshot stays
            self.assertEqual(remote.call("echo").output, "ok")

    def test_invalid_utf8_on_stdout_is_tolerated(self) -> None:
        out = self.run_child(
            """
            import logging, sys
            import agenttool_mcp as am
            logging.disable(logging.CRITICAL)
            with am.connect(sys.argv[1:]) as remote:
                for name in ("bad_byte", "bad_line", "cut_sequence", "echo"):
                    print(name, ascii(remote.call(name).output), remote.closed)
            """
        )
        self.assertIn("bad_byte 'caf\\ufffd' False", out)
        self.assertIn("bad_line 'after the noise' False", out)
        self.assertIn("cut_sequence 'caf\\ufffd' False", out)
        self.assertIn("echo 'ok' False", out)

    def test_connect_timeout_leaves_nothing_unretrieved(self) -> None:
        out = self.run_child(
            """
            import gc, sys
            import agenttool_mcp as am
            silent = [sys.executable, "-c", "import time; time.sleep(60)"]
            failing = [sys.executable, "-c", "import sys; sys.exit(1)"]
            for command in (silent, silent, failing):
                try:
                    am.connect(command, connect_timeout=0.2 if command is silent else 30)
                except am.RemoteError as exc:
                    print(exc)
                gc.collect()
            """
        )
        self.assertIn("mcp: connect: no answer within 0.2s", out)
        self.assertIn("mcp: connect: Connection closed", out)
        self.assertNotIn("never retrieved", out)

    def test_connect_timeout_defaults_to_30s(self) -> None:
        import inspect

        for fn in (am.connect, am.aconnect):
            self.assertEqual(inspect.signature(fn).parameters["connect_timeout"].default, 30.0)


THEIRS_HTTP = textwrap.dedent(
    """
    import sys

    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("theirs")


    @server.tool(structured_output=False)
    async def grow(ctx: Context) -> str:
        \"\"\"Adds a tool.\"\"\"
        server.add_tool(lambda: "new", name="extra", structured_output=False)
        await ctx.notify_tools_changed()
        return "grown"


    server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    """
)


class TestSessionRestart(_Fixture):
    """A server restarted behind the same address forgot the session: the client starts a new
    one and sends the request again, once (the spec's MUST on HTTP 404)."""

    def serve_script(self, name: str, text: str) -> tuple[int, list[str], Callable[[], None]]:
        """Write a server script (it takes its port as its argument) and serve it over HTTP on
        a free port: the port, the command, and a stop."""
        script = os.path.join(self.tmp, name)
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(text)
        port = _free_port()
        command = [sys.executable, script, str(port)]
        return port, command, self.serve_at(port, command)

    def serve_at(self, port: int, command: list[str] | None = None) -> Callable[[], None]:
        """Serve over HTTP on ``port`` (the fixture, or ``command`` given the port); a stop."""
        proc = subprocess.Popen(
            command or [*self.serve_command(), "--http", f"127.0.0.1:{port}"],
            env={**os.environ, **CHILD_ENV},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        drain = threading.Thread(target=proc.stderr.read, daemon=True)  # a full pipe blocks it
        drain.start()
        announced = False
        for _ in range(int(WAIT / 0.05)):  # until the port takes connections
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    announced = True
                    break
            if proc.poll() is not None:
                break
            threading.Event().wait(0.05)

        def stop() -> None:  # a crash: the session dies with the process
            if proc.poll() is None:
                proc.kill()
                proc.wait(WAIT)
            drain.join(WAIT)
            assert proc.stderr is not None
            proc.stderr.close()

        self.addCleanup(stop)
        self.assertTrue(announced, "the HTTP server never announced itself")
        return stop

    @_quiet("mcp")
    @_quiet("httpx2")
    def test_restarted_server_gets_a_new_session(self) -> None:
        for era in ("legacy", "auto"):
            port = _free_port()
            stop = self.serve_at(port)
            with am.connect(url=f"http://127.0.0.1:{port}/mcp", era=era) as remote:
                self.assertEqual(remote.call("upper", {"text": "a"}).output, "A")
                stop()
                stop = self.serve_at(port)
                self.assertEqual(remote.call("upper", {"text": "b"}).output, "B", era)
                self.assertEqual(_run_one(remote.lookup("upper"), '{"text": "c"}').output, "C")
                stop()
                stop = self.serve_at(port)
                remote.refresh()  # a listing renews the session too
                self.assertIn("upper", [t.name for t in remote.tools()])
                self.assertFalse(remote.closed)

    @_quiet("mcp")
    @_quiet("httpx2")
    def test_restarted_server_that_stays_silent_closes_the_remote(self) -> None:
        """A new session that never opens ends the connection after ``connect_timeout``."""
        import http.server

        release = threading.Event()
        self.addCleanup(release.set)

        class ForgetfulThenSilent(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                if self.headers.get("mcp-session-id"):
                    self.send_response(404)
                    self.send_header("content-length", "0")
                    self.end_headers()
                else:
                    release.wait(WAIT)  # the new session's handshake: no answer

            def do_DELETE(self) -> None:
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        port = _free_port()
        stop = self.serve_at(port)
        with am.connect(
            url=f"http://127.0.0.1:{port}/mcp", era="legacy", connect_timeout=1
        ) as remote:
            stop()
            silent = http.server.ThreadingHTTPServer(("127.0.0.1", port), ForgetfulThenSilent)
            silent.daemon_threads = True
            threading.Thread(target=silent.serve_forever, daemon=True).start()
            self.addCleanup(silent.server_close)
            self.addCleanup(silent.shutdown)
            with self.assertRaises(am.RemoteError) as caught:
                remote.call("upper", {"text": "x"})
            self.assertEqual(
                str(caught.exception),
                'mcp: call "upper": mcp: connection lost: no new session within 1s',
            )
            self.assertTrue(remote.closed)

    @_quiet("mcp")
    @_quiet("httpx2")
    def test_list_changes_followed_across_a_restart(self) -> None:
        """On 2026-07-28 the listen stream lost with the server is opened again."""
        port, command, stop = self.serve_script("theirs_http.py", THEIRS_HTTP)
        url = f"http://127.0.0.1:{port}/mcp"
        with am.connect(url=url, notification_grace=WAIT) as remote:
            self.assertEqual(remote.protocol_version, "2026-07-28")
            stop()
            stop = self.serve_at(port, command)
            self.assertEqual(remote.call("grow").output, "grown")
            for _ in range(int(WAIT / 0.05)):
                remote.await_refresh(WAIT)
                if "extra" in [t.name for t in remote.tools()]:
                    break
                threading.Event().wait(0.05)
            self.assertIn("extra", [t.name for t in remote.tools()])


BIG_SSE_HTTP = textwrap.dedent(
    """
    import sys

    from mcp.server.mcpserver import MCPServer

    server = MCPServer("big-sse")


    @server.tool(structured_output=False)
    def big(n: int) -> str:
        \"\"\"n times x.\"\"\"
        return "x" * n


    server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    """
)


class TestLargeEventsFromOtherServers(_Fixture):
    """The SDK's own server sends a legacy-era reply as one SSE event; our client takes events
    far beyond the SDK client's 1 MiB, so a large result crosses HTTP as it does stdio."""

    serve_at = TestSessionRestart.serve_at
    serve_script = TestSessionRestart.serve_script

    @_quiet("mcp")
    @_quiet("httpx2")
    def test_a_result_over_one_mebibyte_from_the_sdk_server_in_the_legacy_era(self) -> None:
        port, _, stop = self.serve_script("big_sse.py", BIG_SSE_HTTP)
        self.addCleanup(stop)
        url = f"http://127.0.0.1:{port}/mcp"
        with am.connect(url=url, era="legacy", connect_timeout=WAIT) as remote:
            self.assertNotEqual(remote.protocol_version, "2026-07-28")
            self.assertEqual(len(remote.call("big", {"n": 3 * 1024 * 1024}).output), 3 << 20)
            self.assertEqual(remote.call("big", {"n": 2}).output, "xx")
            self.assertFalse(remote.closed)


# ---------------------------------------------------------------------------------------------
# OAuth token stores (the SDK's TokenStorage protocol)
# ---------------------------------------------------------------------------------------------


class TestTokenStore(_Case):
    """The OAuth token stores, alone and under the SDK's OAuth client."""

    def exercise(self, store: Any) -> None:
        from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

        async def main() -> None:
            self.assertIsNone(await store.get_tokens())
            await store.set_tokens(OAuthToken(access_token="a1", refresh_token="r1", expires_in=60))
            # a refresh answer that rotates the refresh token replaces it ...
            await store.set_tokens(OAuthToken(access_token="a2", refresh_token="r2"))
            got = await store.get_tokens()
            assert got is not None
            self.assertEqual((got.access_token, got.refresh_token), ("a2", "r2"))
            # ... one that leaves it out keeps the stored one
            await store.set_tokens(OAuthToken(access_token="a3"))
            got = await store.get_tokens()
            assert got is not None
            self.assertEqual((got.access_token, got.refresh_token), ("a3", "r2"))
            info = OAuthClientInformationFull(
                client_id="cid", redirect_uris=[AnyUrl("http://127.0.0.1:1/cb")]
            )
            await store.set_client_info(info)
            stored = await store.get_client_info()
            self.assertEqual(stored and stored.client_id, "cid")

        asyncio.run(main())

    def test_memory_store(self) -> None:
        self.exercise(am.MemoryTokenStore())

    def test_file_store_is_owner_only_and_survives(self) -> None:
        folder = tempfile.mkdtemp(prefix="tokens-")
        self.addCleanup(shutil.rmtree, folder, True)
        path = os.path.join(folder, "sub", "tokens.json")
        self.exercise(am.FileTokenStore(path))
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        again = asyncio.run(am.FileTokenStore(path).get_tokens())
        self.assertEqual(again and again.refresh_token, "r2")

    def test_oauth_end_to_end_keeps_rotated_refresh_tokens(self) -> None:
        """A server behind the SDK's OAuth (an in-process authorization server that rotates
        refresh tokens): the client logs in once through the SDK's provider, refreshes when
        its access token has expired, and the file store holds the newest refresh token,
        owner-only."""
        import secrets
        import time
        import urllib.parse

        import httpx2
        import uvicorn
        from mcp.client.auth import OAuthClientProvider
        from mcp.server.auth.provider import (
            AccessToken,
            AuthorizationCode,
            AuthorizationParams,
            ProviderTokenVerifier,
            RefreshToken,
        )
        from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
        from mcp.shared.auth import (
            AuthorizationCodeResult,
            OAuthClientInformationFull,
            OAuthClientMetadata,
            OAuthToken,
        )

        class Provider:
            """An authorization server that approves at once and rotates every token."""

            def __init__(self) -> None:
                self.clients: dict[str, OAuthClientInformationFull] = {}
                self.codes: dict[str, AuthorizationCode] = {}
                self.refresh: dict[str, RefreshToken] = {}
                self.access: dict[str, AccessToken] = {}
                self.issued_refresh: list[str] = []

            async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
                return self.clients.get(client_id)

            async def register_client(self, client_info: OAuthClientInformationFull) -> None:
                assert client_info.client_id is not None
                self.clients[client_info.client_id] = client_info

            async def authorize(
                self, client: OAuthClientInformationFull, params: AuthorizationParams
            ) -> str:
                code = secrets.token_urlsafe(24)
                self.codes[code] = AuthorizationCode(
                    code=code,
                    scopes=params.scopes or [],
                    expires_at=time.time() + 300,
                    client_id=client.client_id or "",
                    code_challenge=params.code_challenge,
                    redirect_uri=params.redirect_uri,
                    redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
                    resource=params.resource,
                )
                query = urllib.parse.urlencode({"code": code, "state": params.state or ""})
                return f"{params.redirect_uri}?{query}"

            async def load_authorization_code(
                self, client: OAuthClientInformationFull, authorization_code: str
            ) -> AuthorizationCode | None:
                return self.codes.get(authorization_code)

            def issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
                access, refresh = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
                self.access[access] = AccessToken(
                    token=access, client_id=client_id, scopes=scopes, resource=resource
                )
                self.refresh[refresh] = RefreshToken(
                    token=refresh, client_id=client_id, scopes=scopes, resource=resource
                )
                self.issued_refresh.append(refresh)
                return OAuthToken(access_token=access, refresh_token=refresh, expires_in=3600)

            async def exchange_authorization_code(
                self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
            ) -> OAuthToken:
                del self.codes[authorization_code.code]
                return self.issue(
                    authorization_code.client_id,
                    authorization_code.scopes,
                    authorization_code.resource,
                )

            async def load_refresh_token(
                self, client: OAuthClientInformationFull, refresh_token: str
            ) -> RefreshToken | None:
                return self.refresh.get(refresh_token)

            async def exchange_refresh_token(
                self,
                client: OAuthClientInformationFull,
                refresh_token: RefreshToken,
                scopes: list[str],
            ) -> OAuthToken:
                del self.refresh[refresh_token.token]  # rotation: the old one is spent
                return self.issue(
                    refresh_token.client_id, refresh_token.scopes, refresh_token.resource
                )

            async def load_access_token(self, token: str) -> AccessToken | None:
                return self.access.get(token)

            async def revoke_token(self, token: Any) -> None:  # pragma: no cover
                pass

        provider = Provider()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        server = am.build_server([_text_tool("ping", lambda: "pong")], name="guarded")
        app = server.streamable_http_app(
            host="127.0.0.1",
            auth=AuthSettings(
                issuer_url=AnyHttpUrl(base),
                resource_server_url=AnyHttpUrl(f"{base}/mcp"),
                client_registration_options=ClientRegistrationOptions(enabled=True),
                validate_token_resource=True,
            ),
            auth_server_provider=cast(Any, provider),
            token_verifier=ProviderTokenVerifier(cast(Any, provider)),
        )
        started = threading.Event()

        class Server(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets)
                started.set()

        web = Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        thread = threading.Thread(target=web.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()

        def stop() -> None:
            web.should_exit = True
            thread.join(WAIT)
            sock.close()

        self.addCleanup(stop)
        self.assertTrue(started.wait(WAIT))

        folder = tempfile.mkdtemp(prefix="oauth-")
        self.addCleanup(shutil.rmtree, folder, True)
        path = os.path.join(folder, "tokens.json")
        redirected: list[str] = []

        async def redirect(url: str) -> None:
            async with httpx2.AsyncClient() as http:
                answer = await http.get(url)  # the authorization server approves at once
            redirected.append(answer.headers["location"])

        async def callback() -> AuthorizationCodeResult:
            query = urllib.parse.parse_qs(urllib.parse.urlparse(redirected[-1]).query)
            return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])

        auth = OAuthClientProvider(
            server_url=f"{base}/mcp",
            client_metadata=OAuthClientMetadata(
                client_name="agenttool test", redirect_uris=[AnyUrl("http://127.0.0.1:1/cb")]
            ),
            storage=am.FileTokenStore(path),
            redirect_handler=redirect,
            callback_handler=callback,
        )
        with am.connect(url=f"{base}/mcp", auth=auth) as remote:
            for _ in range(3):
                self.assertEqual(remote.call("ping").output, "pong")
                # the access token has expired: the next request refreshes it first
                auth.context.token_expiry_time = time.time() - 1
        self.assertEqual(len(redirected), 1)  # one login, then refreshes only
        self.assertGreater(len(provider.issued_refresh), 2)
        stored = asyncio.run(am.FileTokenStore(path).get_tokens())
        assert stored is not None
        self.assertEqual(stored.refresh_token, provider.issued_refresh[-1])
        self.assertIn(stored.refresh_token, provider.refresh)  # the one still valid
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)

    def test_oauth_provider_takes_the_store(self) -> None:
        from mcp.client.auth import OAuthClientProvider
        from mcp.shared.auth import OAuthClientMetadata

        async def redirect(url: str) -> None:  # pragma: no cover - never reached here
            raise AssertionError(url)

        async def callback() -> Any:  # pragma: no cover
            raise AssertionError("no callback")

        provider = OAuthClientProvider(
            server_url="http://127.0.0.1:1/mcp",
            client_metadata=OAuthClientMetadata(redirect_uris=[AnyUrl("http://127.0.0.1:1/cb")]),
            storage=am.MemoryTokenStore(),
            redirect_handler=redirect,
            callback_handler=callback,
        )
        self.assertIsNotNone(provider)


_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    import agenttool_mcp as am
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    path, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = am.FileTokenStore(path)

    async def main():
        for i in range(n):
            if who == "tokens":
                await store.set_tokens(OAuthToken(access_token=f"a{i}"))
                got = await store.get_tokens()
                seen = got and got.access_token
                want = f"a{i}"
            else:
                info = OAuthClientInformationFull(
                    client_id=f"c{i}", redirect_uris=["http://127.0.0.1:1/cb"]
                )
                await store.set_client_info(info)
                got = await store.get_client_info()
                seen = got and got.client_id
                want = f"c{i}"
            if seen != want:
                sys.exit(f"lost: wrote {want}, then read {seen}")

    asyncio.run(main())
    """
)


_COUNTER = textwrap.dedent(
    """
    import sys
    import agenttool_mcp as am

    path, n = sys.argv[1], int(sys.argv[2])
    for _ in range(n):
        with am._file_lock(path + ".lock", flock=False):
            with open(path) as fh:
                count = int(fh.read() or 0)
            with open(path, "w") as fh:
                fh.write(str(count + 1))
    """
)


class TestFileTokenStoreAcrossProcesses(_Case):
    def setUp(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="tokens-")
        self.addCleanup(shutil.rmtree, self.folder, True)
        self.path = os.path.join(self.folder, "tokens.json")

    def run_both(self, script: str, *argvs: list[str]) -> None:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", script, *argv],
                env={**os.environ, **CHILD_ENV},
                stderr=subprocess.PIPE,
                text=True,
            )
            for argv in argvs
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=WAIT * 4)
            self.assertEqual(proc.returncode, 0, err)

    def test_two_writing_processes_lose_nothing(self) -> None:
        n = "250"
        self.run_both(_WRITER, [self.path, "tokens", n], [self.path, "client", n])
        store = am.FileTokenStore(self.path)
        tokens, info = asyncio.run(store.get_tokens()), asyncio.run(store.get_client_info())
        self.assertEqual(
            (tokens and tokens.access_token, info and info.client_id), ("a249", "c249")
        )

    def test_the_lock_where_flock_is_absent(self) -> None:
        with open(self.path, "w") as fh:
            fh.write("0")
        self.run_both(_COUNTER, [self.path, "200"], [self.path, "200"])
        with open(self.path) as fh:
            self.assertEqual(fh.read(), "400")
        self.assertFalse(os.path.exists(self.path + ".lock"))

    def test_a_corrupted_file_reads_empty_and_the_next_write_repairs_it(self) -> None:
        from mcp.shared.auth import OAuthToken

        store = am.FileTokenStore(self.path)
        for garbage in ('{"tokens": {"access_tok', "[1, 2]", '{"tokens": 5}', ""):
            with open(self.path, "w") as fh:
                fh.write(garbage)
            with self.assertWarnsRegex(RuntimeWarning, "read as empty"):
                self.assertIsNone(asyncio.run(store.get_tokens()))
            with self.assertWarnsRegex(RuntimeWarning, "the next write replaces it"):
                asyncio.run(store.set_tokens(OAuthToken(access_token="fresh")))
            with open(self.path) as fh:
                self.assertEqual(json.load(fh)["tokens"]["access_token"], "fresh")


if __name__ == "__main__":
    unittest.main()
