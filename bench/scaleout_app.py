"""What ``bench/scaleout.py`` serves under uvicorn's workers: one tool, ``echo(text)``, both ways.

- agenttool_mcp: ``AGENTTOOL_MCP_TARGET=bench/scaleout_app.py uvicorn --factory
  agenttool_mcp:asgi_app --workers 4`` serves ``echo`` (the module's ``__all__``);
- the SDK: ``uvicorn --factory scaleout_app:sdk_app --workers 4`` (``--app-dir bench``) serves
  the same function from the SDK's ``MCPServer``, stateless with JSON replies
  (``scaleout_app:sdk_sse_app``: with its default SSE replies).
"""

from __future__ import annotations

from typing import Any

import agenttool

__all__ = ["echo"]


@agenttool.tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


def sdk_app(json_response: bool = True) -> Any:
    """The SDK's own stateless streamable-HTTP app serving ``echo``: ``MCPServer`` with
    ``stateless_http=True`` and ``json_response=True`` (its fastest replies: no SSE stream per
    POST), ``structured_output=False`` (one text block, the answer agenttool_mcp gives), and
    ``log_level="WARNING"``: at its default INFO the SDK logs a line per stateless request,
    which agenttool_mcp's worker does not, so the SDK would pay for its logging here."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench-sdk", log_level="WARNING")

    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    server.tool(structured_output=False)(echo)
    return server.streamable_http_app(stateless_http=True, json_response=json_response)


def sdk_sse_app() -> Any:
    """``sdk_app`` with the SDK's default replies: an SSE stream per POST (what
    ``agenttool_mcp.asgi_app`` runs under its guard, which sends a reply that streamed nothing
    before it as plain JSON)."""
    return sdk_app(json_response=False)
