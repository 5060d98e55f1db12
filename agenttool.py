"""agenttool: the tool contract for Python agents, in one file.

A *tool* is something a model can call: a name, a description, a JSON Schema for its
arguments and a way to run one call.  This module turns typed Python functions into tools,
generates their schemas, validates what the model wrote before anything runs, converts what
the function returns into what the model sees, and runs batches of calls in parallel with
ordering rules a model can rely on.  Standard library only; CPython 3.9 to 3.13.

Copyright (c) 2026 the agenttool authors.  MIT licence (see LICENSE).
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import threading
from typing import Any

__version__ = "0.1.0"

# ---------------------------------------------------------------------------------------------
# Errors shared by every section
# ---------------------------------------------------------------------------------------------


class ValidationError(ValueError):
    """Arguments that do not match a tool's schema, worded for the model.

    ``str(err)`` is ``invalid arguments: <path>: <msg>``, the path dotted with ``[i]`` for
    items and left out at the root, so the model can fix the call in one retry.
    """

    def __init__(self, path: str, msg: str) -> None:
        self.path = path
        self.msg = msg
        super().__init__(f"invalid arguments: {path}: {msg}" if path else f"invalid arguments: {msg}")


class SchemaError(ValueError):
    """A JSON Schema the validator cannot honour, refused when it is compiled."""


# ---------------------------------------------------------------------------------------------
# Meta: constraints and descriptions inside Annotated[...]
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Meta:
    """Schema facts for one type, written inside ``Annotated[T, Meta(...)]``.

    Every field left ``None`` says nothing; the others become the JSON Schema keyword of the
    same meaning (``min_length`` is ``minLength``, and so on).
    """

    description: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    exclusive_maximum: float | None = None
    multiple_of: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    format: str | None = None
    examples: list[Any] | None = None
