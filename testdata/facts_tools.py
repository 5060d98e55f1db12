"""Tools that claim facts, served over stdio by test_facts_mcp.py."""

import agenttool as at


@at.tool(facts=lambda args: at.Facts())
def itself() -> str:
    """Amounts to itself."""
    return "ran"


@at.tool(facts=lambda args: at.Facts([]))
def nothing() -> str:
    """Amounts to nothing it can state."""
    return "ran"
