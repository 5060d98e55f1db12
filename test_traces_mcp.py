"""Traces across MCP: our client writes the caller's span in a call's ``params._meta``
(``traceparent``, ``tracestate``, W3C Trace Context) and our server picks it up, so a served
call's ``execute_tool`` span is the child of the caller's span; in memory and over HTTP, on
both protocol eras, with the real ``opentelemetry-sdk`` exporting in this (the server's)
process.

Skips, saying why, where Python is older than 3.10 or the ``mcp`` SDK or ``opentelemetry-sdk``
cannot be imported (under CI=true, which provides both, that is a failure).
"""

from __future__ import annotations

import asyncio
import json
import sys
import unittest
from typing import Any

if sys.version_info < (3, 10):  # agenttool_mcp, imported next, refuses older Pythons
    raise unittest.SkipTest("agenttool_mcp needs Python 3.10 or later (as the mcp SDK does)")

import agenttool as at
import agenttool_mcp as am
import test_agenttool_mcp as base  # a module, so its test classes do not run twice here
from test_agenttool import absent, limit_test_time
from test_agenttool_mcp import WAIT

limit_test_time()

try:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
except ImportError:  # pragma: no cover - CI has it
    TracerProvider = None

ERAS = ("2026-07-28", "legacy")
PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _seen(call: at.Call) -> at.Result:
    """The trace context the served call's request carried in its _meta."""
    ctx = am.current_request_context()
    meta = dict((ctx.meta if ctx is not None else None) or {})
    return at.text(json.dumps({k: meta[k] for k in ("traceparent", "tracestate") if k in meta}))


def _tracer() -> tuple[Any, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test"), exporter


def _traceparent(context: Any) -> str:
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


class _Case(base._Case):
    """A traced server of the one tool ``seen`` (exported to ``served_spans``) and a client
    tracer of its own (``caller_spans``)."""

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        if TracerProvider is None:
            absent("opentelemetry-sdk is not installed (pip install opentelemetry-sdk)")

    def setUp(self) -> None:
        self.server_tracer, self.served_spans = _tracer()
        self.caller_tracer, self.caller_spans = _tracer()
        self.tools = [at.new_func("seen", "The request's trace context.", None, _seen)]
        self.server = am.build_server(self.tools, tracer=self.server_tracer)

    def served(self) -> Any:
        (span,) = [s for s in self.served_spans.get_finished_spans() if s.name.startswith("exe")]
        self.served_spans.clear()
        return span

    def sdk_call(self, server: Any, meta: dict[str, Any], mode: str = "auto") -> Any:
        """Call ``seen`` through the SDK's own client, with ``meta`` as the request's _meta."""
        from mcp import Client

        async def main() -> Any:
            async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
                return await client.call_tool("seen", {}, meta=meta)  # type: ignore[arg-type]

        return asyncio.run(main())


class TestTraceContextInMemory(_Case):
    def test_a_served_call_is_the_child_of_the_callers_span(self) -> None:
        for era in ERAS:
            with self.subTest(era), am.connect(server=self.server, era=era) as remote:
                with self.caller_tracer.start_as_current_span("caller") as caller:
                    out = remote.call("seen")
                mine = caller.get_span_context()
                self.assertEqual(json.loads(out.output), {"traceparent": _traceparent(mine)})
                served = self.served()
                self.assertEqual(served.context.trace_id, mine.trace_id)
                self.assertEqual(served.parent.span_id, mine.span_id)
                self.assertTrue(served.parent.is_remote)

    def test_the_async_client_sends_it_too_under_a_time_limit(self) -> None:
        async def main() -> tuple[Any, Any]:
            async with am.aconnect(server=self.server, era="2026-07-28", timeout=WAIT) as remote:
                with self.caller_tracer.start_as_current_span("caller") as caller:
                    return await remote.call("seen"), caller.get_span_context()

        out, mine = asyncio.run(main())
        self.assertEqual(json.loads(out.output), {"traceparent": _traceparent(mine)})
        self.assertEqual(self.served().parent.span_id, mine.span_id)

    def test_the_tracestate_crosses_with_it(self) -> None:
        state = trace.TraceState([("vendor", "x")])
        above = trace.SpanContext(0xAB, 0xCD, True, trace.TraceFlags(1), state)
        with am.connect(server=self.server, era="2026-07-28") as remote:
            with trace.use_span(trace.NonRecordingSpan(above)):
                out = remote.call("seen")
        self.assertEqual(
            json.loads(out.output), {"traceparent": _traceparent(above), "tracestate": "vendor=x"}
        )
        served = self.served()
        self.assertEqual((served.parent.trace_id, served.parent.span_id), (0xAB, 0xCD))
        self.assertEqual(served.context.trace_state.to_header(), "vendor=x")

    def test_the_server_reads_the_meta_itself(self) -> None:
        """Without the SDK's own server span (its middleware removed), the parent is still the
        one in _meta: our server reads it, whatever propagator the process configures."""
        self.server.middleware.clear()
        for mode in ("auto", "legacy"):
            with self.subTest(mode):
                result = self.sdk_call(
                    self.server, {"traceparent": PARENT, "tracestate": "vendor=x"}, mode
                )
                self.assertFalse(result.is_error)
                served = self.served()
                self.assertEqual(served.context.trace_id, 0x4BF92F3577B34DA6A3CE929D0E0E4736)
                self.assertEqual(served.parent.span_id, 0x00F067AA0BA902B7)
                self.assertEqual(served.context.trace_state.to_header(), "vendor=x")

    def test_an_invalid_traceparent_is_ignored_not_an_error(self) -> None:
        bare = am.build_server(self.tools, tracer=self.server_tracer)
        bare.middleware.clear()
        for server in (self.server, bare):
            for value in ("garbage", PARENT.upper(), PARENT.replace("00-", "ff-", 1), 7):
                with self.subTest(value=value, middleware=bool(server.middleware)):
                    result = self.sdk_call(server, {"traceparent": value, "tracestate": "a=1"})
                    self.assertFalse(result.is_error)
                    self.assertIsNone(self.served().parent)

    def test_nothing_is_sent_without_a_span_nor_recorded_without_a_tracer(self) -> None:
        untraced = am.build_server(self.tools)
        for era in ERAS:
            with self.subTest(era):
                with am.connect(server=self.server, era=era) as remote:
                    self.assertEqual(json.loads(remote.call("seen").output), {})
                self.assertIsNone(self.served().parent)  # a root: no caller's span
                with am.connect(server=untraced, era=era) as remote:
                    with self.caller_tracer.start_as_current_span("caller"):
                        remote.call("seen")
                self.assertEqual(self.served_spans.get_finished_spans(), ())


class TestTraceContextOverHTTP(_Case):
    def test_the_client_call_s_span_parents_the_served_one(self) -> None:
        """The client's own execute_tool span (ToolSet.run with a tracer) is the parent of the
        server's, across a real HTTP connection on both eras."""
        port = base.serve_app_in_thread(self, am.asgi_app(self.tools, tracer=self.server_tracer))
        for era in ERAS:
            with self.subTest(era):
                self.caller_spans.clear()
                with am.connect(url=f"http://127.0.0.1:{port}/mcp", era=era) as remote:
                    tools = at.ToolSet(remote.tools())
                    call = {"type": "function_call", "call_id": "c1", "name": "seen"}
                    out = tools.run([{**call, "arguments": "{}"}], tracer=self.caller_tracer)
                (caller,) = self.caller_spans.get_finished_spans()
                self.assertEqual(caller.name, "execute_tool seen")
                self.assertEqual(
                    json.loads(out[0]["output"])["traceparent"], _traceparent(caller.context)
                )
                served = self.served()
                self.assertEqual(served.context.trace_id, caller.context.trace_id)
                self.assertEqual(served.parent.span_id, caller.context.span_id)


if __name__ == "__main__":
    unittest.main()
