"""A tool for the tracing tests: module-level, so a spawned worker imports it, and imports
OpenTelemetry at the top, as instrumented code does (the worker carries the call's span to
tools whose process has ``opentelemetry.trace`` loaded)."""

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

# The worker's own provider: its spans are exported here, in the worker, not in the caller.
_exporter = InMemorySpanExporter()
_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(_exporter))
_tracer = _provider.get_tracer("worker")


def parent_seen() -> dict:
    """Record a span of its own in its worker and say what its exported copy's parent is."""
    _exporter.clear()
    with _tracer.start_as_current_span("inside the worker"):
        pass
    (span,) = _exporter.get_finished_spans()
    parent = span.parent
    return {
        "trace_id": f"{span.context.trace_id:032x}",
        "parent": f"{parent.span_id:016x}" if parent is not None else "",
        "remote": bool(parent is not None and parent.is_remote),
        "tracestate": span.context.trace_state.to_header(),
    }
