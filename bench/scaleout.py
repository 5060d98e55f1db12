"""agenttool_mcp scaled out against the SDK's own server, side by side in one run:
``python bench/scaleout.py [--workers 4] [--clients 16] [--seconds 2] [--passes 8] [--quick]
[--conformance] [--results PATH]``.

- throughput: ``agenttool_mcp.asgi_app`` (``uvicorn --factory agenttool_mcp:asgi_app --workers
  4``, serving ``echo(text)`` from ``bench/scaleout_app.py``) against the SDK's ``MCPServer``
  serving the same function, stateless with JSON replies (``scaleout_app:sdk_app``), under the
  same uvicorn command and worker count, each on its own 127.0.0.1 port; shown beside it, the
  same ``MCPServer`` with its default SSE replies (``scaleout_app:sdk_sse_app``).  One load
  generator for all: ``--clients`` concurrent keep-alive HTTP/1.1 connections from this process
  (asyncio, standard library), each making the era's handshake as the SDK's client does
  (legacy: ``initialize`` then ``notifications/initialized``; 2026-07-28: ``server/discover``)
  and then ``tools/call`` of ``echo`` back to back, with the headers the SDK client sends, for
  ``--seconds``; every reply is parsed and checked (200, its id, the echoed text, ``isError``
  false).  Calls per second are the replies checked within the window over its length.
  Passes run round-robin (each era, every server, a different one first each pass) and the
  best pass of each is reported; the load generator's own CPU share is printed beside it (it
  shares the cores).
- ``--conformance``: the wall time of ``python -m unittest test_conformance_mcp`` (the official
  suite, both revisions, both servers), when its npm peers are installed
  (``AGENTTOOL_NODE_PEERS``, else ``~/.cache/agenttool/node-peers``: ``.ci/node-peers.sh``);
  without them the row is skipped, saying so.

Its rows go into bench/results.json (sections ``scaleout`` and ``conformance``; ``--results
PATH`` for another file, ``--results none`` for none); ``bench/run --readme`` puts them in the
README.  Every process started here binds 127.0.0.1, runs in its own session and is ended
with its children.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import results  # noqa: E402

HOST = "127.0.0.1"
ERAS = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
TEXT = "hi"


# ----------------------------------------------------------------------------------------------
# The servers: uvicorn with N workers, in their own session
# ----------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def uvicorn(factory: str, workers: int, env: dict[str, str], log: str) -> Iterator[int]:
    """``uvicorn --factory FACTORY --workers N`` on a free loopback port; yields the port once a
    worker answers, and ends the supervisor and its workers on exit."""
    port = free_port()
    cmd = [sys.executable, "-m", "uvicorn", "--factory", factory, "--workers", str(workers)]
    cmd += ["--host", HOST, "--port", str(port), "--log-level", "warning", "--no-access-log"]
    cmd += ["--app-dir", HERE]
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            cmd,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                with open(log, encoding="utf-8", errors="replace") as f:
                    raise RuntimeError(f"{factory} exited {proc.returncode}: {f.read()[-2000:]}")
            try:
                asyncio.run(_probe(port))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{factory}: no answer on port {port} within 60 s") from None
                time.sleep(0.1)
        yield port
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)  # uvicorn's supervisor ends its workers
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


async def _probe(port: int) -> None:
    conn = await Conn.open(port)
    try:
        await conn.handshake("legacy")
        await conn.call(1)
    finally:
        conn.close()


# ----------------------------------------------------------------------------------------------
# The load generator: raw HTTP/1.1 keep-alive connections, standard library only
# ----------------------------------------------------------------------------------------------


class Conn:
    """One client's connection: the era's handshake, then ``tools/call`` requests."""

    def __init__(self, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.host = f"{HOST}:{port}".encode()
        self.reader = reader
        self.writer = writer
        self.headers = b""  # the era's per-request headers, set by the handshake
        self.era = "legacy"

    @classmethod
    async def open(cls, port: int) -> Conn:
        reader, writer = await asyncio.open_connection(HOST, port)
        writer.transport.get_extra_info("socket").setsockopt(
            socket.IPPROTO_TCP, socket.TCP_NODELAY, 1
        )
        return cls(port, reader, writer)

    def close(self) -> None:
        self.writer.close()

    async def post(self, message: dict[str, Any], headers: bytes) -> tuple[int, Any]:
        """One POST to /mcp; the status and the JSON-RPC message of the reply (None if none)."""
        body = json.dumps(message, separators=(",", ":")).encode()
        self.writer.write(
            b"POST /mcp HTTP/1.1\r\nHost: %s\r\nAccept: application/json, text/event-stream\r\n"
            b"Content-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s"
            % (self.host, headers, len(body), body)
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        fields = {}
        for ln in lines[1:]:
            if b":" in ln:
                k, v = ln.split(b":", 1)
                fields[k.strip().lower()] = v.strip()
        if b"content-length" in fields:
            data = await self.reader.readexactly(int(fields[b"content-length"]))
        elif fields.get(b"transfer-encoding", b"").lower() == b"chunked":
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                parts.append(await self.reader.readexactly(size + 2))
                if size == 0:
                    break
            data = b"".join(p[:-2] for p in parts)
        else:
            raise RuntimeError(f"a reply with neither length nor chunks: {head!r}")
        if not data.strip():
            return status, None
        if fields.get(b"content-type", b"").startswith(b"text/event-stream"):
            events = [ln[5:].strip() for ln in data.splitlines() if ln.startswith(b"data:")]
            data = next(e for e in reversed(events) if e)
        return status, json.loads(data)

    async def handshake(self, era: str) -> None:
        """What the SDK's client sends before its first call, in ``era``."""
        self.era = era
        if era == "legacy":
            status, reply = await self.post(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": ERAS[era],
                        "capabilities": {},
                        "clientInfo": {"name": "bench", "version": "0"},
                    },
                },
                b"",
            )
            if status != 200 or "result" not in reply:
                raise RuntimeError(f"initialize: {status} {reply}")
            self.headers = b"MCP-Protocol-Version: %s\r\n" % ERAS[era].encode()
            status, _ = await self.post(
                {"jsonrpc": "2.0", "method": "notifications/initialized"}, self.headers
            )
            if status != 202:
                raise RuntimeError(f"notifications/initialized: {status}")
        else:
            headers = b"MCP-Protocol-Version: %s\r\n" % ERAS[era].encode()
            status, reply = await self.post(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "server/discover",
                    "params": {"_meta": META},
                },
                headers + b"Mcp-Method: server/discover\r\n",
            )
            if status != 200 or "result" not in reply:
                raise RuntimeError(f"server/discover: {status} {reply}")
            self.headers = headers + b"Mcp-Method: tools/call\r\nMcp-Name: echo\r\n"

    async def call(self, i: int) -> None:
        """One ``tools/call`` of echo, its reply checked."""
        params: dict[str, Any] = {"name": "echo", "arguments": {"text": TEXT}}
        if self.era != "legacy":
            params["_meta"] = META
        status, reply = await self.post(
            {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}, self.headers
        )
        result = reply.get("result") if status == 200 and isinstance(reply, dict) else None
        if (
            not result
            or result.get("isError")
            or reply.get("id") != i
            or result["content"][0].get("text") != TEXT
        ):
            raise RuntimeError(f"tools/call: {status} {reply}")


async def load(port: int, era: str, clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` connections calling echo back to back for ``seconds`` after every one has
    made its handshake; the calls checked within the window, the failures, the latencies and
    this process's CPU time over the window."""
    conns = await asyncio.gather(*(Conn.open(port) for _ in range(clients)))
    try:
        await asyncio.gather(*(c.handshake(era) for c in conns))
        latencies: list[float] = []
        failures: list[str] = []
        cpu0 = time.process_time()
        start = time.perf_counter()
        end = start + seconds

        async def run(conn: Conn) -> None:
            i = 1
            while True:
                t0 = time.perf_counter()
                if t0 >= end:
                    return
                try:
                    await conn.call(i)
                except Exception as exc:  # counted, then the connection is given up
                    failures.append(f"{type(exc).__name__}: {exc}"[:300])
                    return
                t1 = time.perf_counter()
                if t1 <= end:
                    latencies.append(t1 - t0)
                i += 1

        await asyncio.gather(*(run(c) for c in conns))
        cpu = time.process_time() - cpu0
    finally:
        for c in conns:
            c.close()
    latencies.sort()
    return {
        "calls": len(latencies),
        "rate": len(latencies) / seconds,
        "failures": failures,
        "p50": latencies[len(latencies) // 2] if latencies else 0.0,
        "p99": latencies[int(len(latencies) * 0.99)] if latencies else 0.0,
        "client_cpu": cpu / seconds,
    }


# ----------------------------------------------------------------------------------------------
# The conformance run's time
# ----------------------------------------------------------------------------------------------


def conformance_time() -> dict[str, Any]:
    """The wall time of ``python -m unittest test_conformance_mcp``, or why it was skipped."""
    peers = os.environ.get("AGENTTOOL_NODE_PEERS") or os.path.expanduser(
        "~/.cache/agenttool/node-peers"
    )
    if not os.path.exists(os.path.join(peers, ".agenttool-node-peers")):
        return {"skipped": f"the npm peers are not installed in {peers} (.ci/node-peers.sh)"}
    env = {**os.environ, "AGENTTOOL_NODE_PEERS": peers}
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "unittest", "test_conformance_mcp"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        start_new_session=True,
    )
    wall = time.perf_counter() - start
    tail = proc.stderr.strip().splitlines()[-3:]
    return {"wall": wall, "ok": proc.returncode == 0, "summary": " ".join(tail)}


# ----------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/scaleout.py", description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--passes", type=int, default=8)
    p.add_argument("--eras", default="legacy,2026-07-28")
    p.add_argument("--quick", action="store_true", help="2 passes of 1 s: a smoke test")
    p.add_argument("--conformance", action="store_true", help="time the conformance run too")
    p.add_argument("--results", default=results.RESULTS, help="'none' writes nothing")
    args = p.parse_args(argv)
    if args.quick:
        args.passes, args.seconds = 2, 1.0
    eras = [e for e in args.eras.split(",") if e]
    command = "python bench/scaleout.py" + (" --conformance" if args.conformance else "")
    run = results.start_run(command, peers=["mcp", "uvicorn"], quick=args.quick)
    print(f"load average at the start: {run['load_start']} ({os.cpu_count()} cores)")
    rows = []
    env = {"PYTHONPATH": os.pathsep.join([ROOT, HERE, os.environ.get("PYTHONPATH", "")])}
    ours_env = {**env, "AGENTTOOL_MCP_TARGET": os.path.join(HERE, "scaleout_app.py")}
    servers = {
        "agenttool_mcp": ("agenttool_mcp:asgi_app", ours_env),
        "SDK": ("scaleout_app:sdk_app", env),
        "SDK, SSE": ("scaleout_app:sdk_sse_app", env),
    }
    logs = tempfile.mkdtemp(prefix="agenttool-scaleout-")
    best: dict[tuple[str, str], dict[str, Any]] = {}
    with contextlib.ExitStack() as stack:
        ports = {
            name: stack.enter_context(
                uvicorn(factory, args.workers, e, os.path.join(logs, f"{name}.log"))
            )
            for name, (factory, e) in servers.items()
        }
        print(
            f"{args.workers} uvicorn workers each; {args.clients} clients, {args.seconds:g} s a"
            f" pass, {args.passes} passes round-robin"
        )
        for era in eras:  # warm-up, untimed: every worker imports what it needs lazily
            for name in servers:
                asyncio.run(load(ports[name], era, args.clients, min(1.0, args.seconds)))
        for n in range(args.passes):
            names = list(servers)
            order = names[n % len(names) :] + names[: n % len(names)]  # each first in turn
            for era in eras:
                for name in order:
                    got = asyncio.run(load(ports[name], era, args.clients, args.seconds))
                    print(
                        f"  pass {n + 1} {era:10} {name:13} {got['rate']:7.0f} calls/s"
                        f"  p50 {got['p50'] * 1e3:5.1f} ms  p99 {got['p99'] * 1e3:5.1f} ms"
                        f"  load generator {got['client_cpu'] * 100:3.0f}% of a core"
                        + (
                            f"  {len(got['failures'])} FAILED: {got['failures'][0]}"
                            if got["failures"]
                            else ""
                        )
                    )
                    key = (era, name)
                    ok = not got["failures"]
                    if ok and (key not in best or got["rate"] > best[key]["rate"]):
                        best[key] = got
                    elif not ok:
                        best.setdefault(key, got)
    load_after = results.load()
    for era in eras:
        ours, sdk, sse = (best[(era, n)] for n in servers)
        failed = [
            f"{name}: {len(g['failures'])} failed ({g['failures'][0]})"
            for name, g in zip(servers, (ours, sdk, sse), strict=True)
            if g["failures"]
        ]
        ratio = ours["rate"] / sdk["rate"] if sdk["rate"] else 0.0
        met = ratio >= 1.0 and not failed
        print(
            f"{era}: agenttool_mcp {ours['rate']:.0f} calls/s, SDK {sdk['rate']:.0f}: {ratio:.2f}x"
            f" (SDK with SSE replies {sse['rate']:.0f}: {ours['rate'] / sse['rate']:.2f}x)"
        )
        rows.append(
            results.row(
                "scaleout",
                f"{args.workers} workers {era}",
                f"MCP server throughput, {args.workers} uvicorn workers, {era} era"
                " (`python bench/scaleout.py`)",
                f"{ours['rate']:.0f} calls/s",
                f"the SDK's stateless `MCPServer` with JSON replies {sdk['rate']:.0f} calls/s"
                f" (with its default SSE replies {sse['rate']:.0f} calls/s,"
                f" {ours['rate'] / sse['rate']:.2f}x)",
                f"{ratio:.2f}x",
                ">= 1.0x",
                met,
                f"{args.clients} clients, best of {args.passes} {args.seconds:g} s passes;"
                f" load generator {max(ours['client_cpu'], sdk['client_cpu']) * 100:.0f}% of a"
                " core at most; load average "
                + " / ".join(f"{x:.2f}" for x in load_after)
                + " when the passes ended"
                + ("; " + "; ".join(failed) if failed else ""),
            )
        )
    sections = ["scaleout"]
    if args.conformance:
        print("timing python -m unittest test_conformance_mcp ...")
        got = conformance_time()
        if "skipped" in got:
            print(f"conformance: skipped: {got['skipped']}")  # the row last measured stays
        else:
            print(f"conformance: {got['wall']:.0f} s, {'passed' if got['ok'] else 'FAILED'}")
            sections.append("conformance")
            rows.append(
                results.row(
                    "conformance",
                    "run time",
                    "the official MCP conformance suite's run, both revisions, both servers"
                    " (`python -m unittest test_conformance_mcp`)",
                    f"{got['wall']:.0f} s",
                    note=("passed" if got["ok"] else "failed: " + got["summary"]),
                )
            )
    for name in servers:
        with open(os.path.join(logs, f"{name}.log"), encoding="utf-8", errors="replace") as f:
            text = f.read().strip()
        if text:
            print(f"{name}'s uvicorn said:\n{text[-1500:]}")
    shutil.rmtree(logs, ignore_errors=True)
    print(f"load average at the end of the throughput passes: {load_after}")
    if args.results != "none":
        results.finish_run(run)
        results.write(run, rows, args.results, sections=sections)
        print(f"figures written to {args.results}; `bench/run --readme` puts them in README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
