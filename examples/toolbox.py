"""A small toolbox to give a model: files in a sandbox folder, a calculator, a weather stub.

Every tool here is a plain typed function; ``@agenttool.tool`` turns it into a tool whose
schema comes from the type hints and whose arguments are checked before the function runs.

Try it from the repository root:

    python -m agenttool list examples/toolbox.py
    python -m agenttool call examples/toolbox.py calculate '{"expression": "2 * (3 + 4)"}'
    python -m agenttool call examples/toolbox.py write_file '{"path": "a.txt", "content": "hi"}'
    python -m agenttool call examples/toolbox.py get_weather '{"city": "Lisbon"}'

The sandbox folder is ``$AGENTTOOL_SANDBOX``, or ``agenttool-sandbox`` in the temp folder.
"""

import ast
import dataclasses
import hashlib
import math
import operator
import os
import tempfile
from typing import Annotated, Any, Callable, Literal

import agenttool
from agenttool import Annotations, Meta, Replay

SANDBOX = os.path.realpath(
    os.environ.get("AGENTTOOL_SANDBOX") or os.path.join(tempfile.gettempdir(), "agenttool-sandbox")
)

# One resource name for the file tools: calls naming it run in the model's order within a
# batch (write, then read what was written), while every other call runs alongside them.
FILES = "sandbox:files"


def _inside(path: str) -> str:
    """The real path of ``path`` in the sandbox; a path that leaves it is refused."""
    os.makedirs(SANDBOX, exist_ok=True)
    full = os.path.realpath(os.path.join(SANDBOX, path))
    if full != SANDBOX and not full.startswith(SANDBOX + os.sep):
        raise ValueError(
            f"path {path!r} is outside the sandbox; use a path relative to it, like 'notes.txt'"
        )
    return full


def _confined(args: dict[str, Any]) -> tuple[bool, str]:
    return True, f"folder {SANDBOX}"


@agenttool.tool(
    annotations=Annotations(title="List files", read_only=True, open_world=False),
    replay=Replay.SAFE,
    confined=_confined,
)
def list_files(folder: str = ".") -> list[str]:
    """List the files in a folder of the sandbox, folders marked with a trailing slash.

    Args:
        folder: A folder relative to the sandbox; "." is the sandbox itself.
    """
    base = _inside(folder)
    if not os.path.isdir(base):
        raise ValueError(f"no folder {folder!r} in the sandbox")
    return sorted(n + "/" if os.path.isdir(os.path.join(base, n)) else n for n in os.listdir(base))


@agenttool.tool(
    resource=FILES,
    annotations=Annotations(title="Read a file", read_only=True, open_world=False),
    replay=Replay.SAFE,
    confined=_confined,
)
def read_file(
    path: str, max_bytes: Annotated[int, Meta(minimum=1, maximum=1_000_000)] = 65536
) -> str:
    """Read a text file from the sandbox.

    Args:
        path: The file, relative to the sandbox.
        max_bytes: Read at most this many bytes.
    """
    full = _inside(path)
    if not os.path.isfile(full):
        raise FileNotFoundError(f"no file {path!r} in the sandbox; list_files shows what is there")
    with open(full, "rb") as f:
        data = f.read(max_bytes)
    return data.decode("utf-8", errors="replace")


@agenttool.tool(
    resource=FILES,
    annotations=Annotations(title="Write a file", destructive=True, open_world=False),
    replay=lambda args: Replay.UNKNOWN if args.get("append") else Replay.SAFE,
    confined=_confined,
)
def write_file(path: str, content: str, append: bool = False) -> str:
    """Write text to a file in the sandbox, replacing it unless append is true.

    Args:
        path: The file, relative to the sandbox; folders are made as needed.
        content: The text to write.
        append: Add to the end of the file instead of replacing it.
    """
    full = _inside(path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "a" if append else "w", encoding="utf-8") as f:
        f.write(content)
    size = os.path.getsize(full)
    return f"{'appended to' if append else 'wrote'} {path} ({size} bytes now)"


# The calculator: arithmetic parsed with ast and evaluated node by node, never eval().
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "log": math.log,
    "exp": math.exp,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 1000:
            raise ValueError(f"exponent {right} is too large (at most 1000)")
        return _BINARY[type(node.op)](left, right)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _FUNCTIONS[node.func.id](*(_evaluate(a) for a in node.args))
    names = ", ".join(sorted(_FUNCTIONS)) + ", " + ", ".join(_CONSTANTS)
    raise ValueError(
        f"cannot evaluate {ast.unparse(node)!r}: use numbers, + - * / // % **, parentheses "
        f"and {names}"
    )


@agenttool.tool(strict=True, annotations=Annotations(read_only=True, open_world=False))
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression exactly as written, like 2 * (3 + 4) or sqrt(2).

    Args:
        expression: Numbers, + - * / // % **, parentheses, sqrt, sin, cos, tan, log, exp,
            abs, round, min, max, pi, e and tau.
    """
    if len(expression) > 500:
        raise ValueError("expression too long (at most 500 characters)")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {exc.msg}") from None
    value = _evaluate(tree)
    if isinstance(value, float):
        return format(value, ".15g")
    return str(value)


@dataclasses.dataclass
class Weather:
    city: str
    temperature: float
    units: str
    sky: str
    wind_kmh: int


_SKIES = ["clear", "partly cloudy", "overcast", "light rain", "showers", "fog"]


@agenttool.tool(annotations=Annotations(read_only=True, open_world=True), replay=Replay.SAFE)
def get_weather(city: str, units: Literal["celsius", "fahrenheit"] = "celsius") -> Weather:
    """The current weather in a city (a stub: made-up but stable numbers, no network).

    Args:
        city: The city's name, like "Lisbon".
        units: Temperature units.
    """
    if not city.strip():
        raise ValueError("city is empty; give a city's name, like 'Lisbon'")
    agenttool.progress(f"looking up {city}", progress=0, total=1)
    # A real tool waits on a network; this one waits on the call's cancellation, so a
    # cancelled call returns at once.
    if agenttool.cancel_event().wait(0.2):
        raise agenttool.Cancelled(f"weather lookup for {city} was cancelled")
    digest = hashlib.sha256(city.strip().lower().encode()).digest()
    celsius = round(-5 + int.from_bytes(digest[:2], "big") % 350 / 10, 1)
    temperature = celsius if units == "celsius" else round(celsius * 9 / 5 + 32, 1)
    agenttool.progress(f"found {city}", progress=1, total=1)
    sky = "snow" if celsius <= 0 else _SKIES[digest[2] % len(_SKIES)]
    return Weather(city.strip(), temperature, units, sky, digest[3] % 40)


TOOLS = agenttool.ToolSet([list_files, read_file, write_file, calculate, get_weather])
