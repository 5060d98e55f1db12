"""The command line (DESIGN §6): ``python -m agenttool list|call TARGET ...``.

``TARGET`` is a path to a ``.py`` file or an importable module name, optionally ``:attr``
naming a tool, a list of tools or a ``ToolSet``; without ``:attr``, every tool at the
module's top level.  ``python agenttool.py ...`` works the same for a vendored copy.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any, TextIO

from agenttool import (
    Action,
    Answer,
    Call,
    Elicitation,
    Executor,
    Job,
    ProgressInfo,
    Record,
    Result,
    Tool,
    ToolSet,
    error_result,
)

# __all__ += ["main"]

_CLI_USAGE = """\
python -m agenttool list TARGET [--format responses|chat|anthropic|gemini]
       python -m agenttool call TARGET TOOL [ARGS_JSON | -] [--traceback]"""

_CLI_EPILOG = """\
TARGET is a .py file or an importable module, optionally with :attr naming a tool, a list of
tools or a ToolSet; without :attr, every tool at the module's top level.

exit status: 0 the call succeeded (or the list was printed); 1 the call failed, and stdout has
the "Error: ..." the model would see; 2 an unknown target or tool, or a usage error."""


class _CliTargetError(Exception):
    """A target or tool the command line cannot find: exit status 2, the message says what
    exists instead."""


def _cli_is_tool(obj: Any) -> bool:
    """Whether ``obj`` is a tool instance: a name, a description, parameters and ``execute``."""
    return (
        not isinstance(obj, type)
        and isinstance(getattr(obj, "name", None), str)
        and hasattr(obj, "description")
        and hasattr(obj, "parameters")
        and callable(getattr(obj, "execute", None))
    )


def _cli_is_tool_list(obj: Any) -> bool:
    return isinstance(obj, (list, tuple)) and all(_cli_is_tool(t) for t in obj)


def _cli_names(tools: list[Any]) -> str:
    return ", ".join(f'"{t.name}"' for t in tools) if tools else "none"


def _cli_python_files(folder: str) -> str:
    try:
        found = sorted(f for f in os.listdir(folder) if f.endswith(".py"))
    except OSError:
        found = []
    return ", ".join(found) if found else "none"


def _cli_import_target(ref: str) -> Any:
    """The module a target names: a ``.py`` file by path, or a module by import name."""
    import importlib
    import importlib.util

    if ref.endswith(".py") or os.sep in ref or (os.altsep is not None and os.altsep in ref):
        path = os.path.abspath(ref)
        if not os.path.isfile(path):
            folder = os.path.dirname(path)
            raise _CliTargetError(
                f"no file {ref}; the .py files in {folder or '.'} are: {_cli_python_files(folder)}"
            )
        stem = os.path.splitext(os.path.basename(path))[0]
        name = stem if stem.isidentifier() and stem not in sys.modules else f"_agenttool_{stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise _CliTargetError(f"cannot load {ref} as Python")
        module = importlib.util.module_from_spec(spec)
        folder = os.path.dirname(path)
        if folder not in sys.path:
            sys.path.insert(0, folder)  # its sibling modules import as under `python file.py`
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(name, None)
            raise _cli_cannot_load(ref, exc) from exc
        return module
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does, for `python agenttool.py` too
    try:
        return importlib.import_module(ref)
    except ModuleNotFoundError as exc:
        if exc.name and (ref == exc.name or ref.startswith(exc.name + ".")):
            raise _CliTargetError(
                f'no module named "{ref}"; the .py files here are: {_cli_python_files(".")}'
            ) from None
        raise _cli_cannot_load(ref, exc) from exc
    except Exception as exc:
        raise _cli_cannot_load(ref, exc) from exc


def _cli_cannot_load(ref: str, exc: Exception) -> _CliTargetError:
    """The target's own code failed: its traceback on stderr, then a one-line error."""
    import traceback

    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    return _CliTargetError(f"cannot load {ref}: {type(exc).__name__}: {exc}")


def _cli_load_target(target: str) -> list[Tool]:
    """The tools a ``TARGET`` names, in order (see the module docstring)."""
    ref, attr = target, ""
    head, sep, tail = target.rpartition(":")
    if sep and head and all(p.isidentifier() for p in tail.split(".")):
        ref, attr = head, tail
    module = _cli_import_target(ref)
    if not attr:
        tools: list[Tool] = []
        seen: set[int] = set()
        for value in vars(module).values():
            if _cli_is_tool(value) and id(value) not in seen:
                seen.add(id(value))
                tools.append(value)
        return tools
    obj: Any = module
    for i, step in enumerate(attr.split(".")):
        if not hasattr(obj, step):
            where = ref if i == 0 else f"{ref}:{'.'.join(attr.split('.')[:i])}"
            found = [k for k, v in vars(module).items() if _cli_is_tool(v) or _cli_is_tool_list(v)]
            listed = ", ".join(found) if found else "none"
            raise _CliTargetError(
                f'{where} has no attribute "{step}"; its tools and tool lists are: {listed}'
            )
        obj = getattr(obj, step)
    if _cli_is_tool(obj):
        return [obj]
    if _cli_is_tool_list(obj):
        return list(obj)
    raise _CliTargetError(
        f"{target} is a {type(obj).__name__}, not a tool, a list of tools or a ToolSet"
    )


def _cli_text_of(output: Any) -> str:
    """The output as the model sees it: text as is, parts as JSON."""
    if isinstance(output, str):
        return output
    return json.dumps(output, indent=2, ensure_ascii=False, default=str)


def _cli_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _cli_progress_line(result: Result) -> str:
    info = result.details if isinstance(result.details, ProgressInfo) else None
    bits: list[str] = []
    if info is not None and info.progress is not None:
        total = f"/{_cli_number(info.total)}" if info.total is not None else ""
        bits.append(_cli_number(info.progress) + total)
    if info is not None and info.message:
        bits.append(info.message)
    said = _cli_text_of(result.output)
    if said and (info is None or said != info.message):
        bits.append(said)
    return "progress: " + " ".join(bits)


def _cli_write(stream: TextIO, text: str) -> None:
    stream.write(text if text.endswith("\n") or not text else text + "\n")
    stream.flush()


def _cli_ask(question: Elicitation) -> Answer:
    """Ask the person at the terminal: a URL to visit, a yes/no, or a JSON answer to a form."""
    err = sys.stderr
    err.write(f"\nthe tool asks: {question.message}\n")
    if question.url:
        err.write(f"open {question.url}\n")
    if question.schema:
        err.write(f"answer as JSON matching {json.dumps(question.schema)}\n")
        err.write("(an empty line declines): ")
    else:
        err.write("accept? [y/N] ")
    err.flush()
    line = sys.stdin.readline()
    if not line:
        return Answer(Action.CANCEL)
    line = line.strip()
    if not question.schema:
        return Answer(Action.ACCEPT if line.lower() in ("y", "yes") else Action.DECLINE)
    if not line:
        return Answer(Action.DECLINE)
    try:
        content = json.loads(line)
    except ValueError:
        err.write("not JSON: declined\n")
        return Answer(Action.DECLINE)
    if not isinstance(content, dict):
        err.write("not a JSON object: declined\n")
        return Answer(Action.DECLINE)
    return Answer(Action.ACCEPT, content)


def _cli_print_record(record: Record) -> None:
    _cli_write(sys.stderr, f"record {record.ns}: {record.data}")


def _cli_list(target: str, format: str) -> int:
    tools = ToolSet(_cli_load_target(target))
    tools.validate()
    if not tools:
        _cli_write(
            sys.stderr,
            f"agenttool: no tools in {target} (a tool has a name, a description, parameters "
            "and execute; @agenttool.tool makes one from a function)",
        )
    _cli_write(sys.stdout, json.dumps(tools.definitions(format), indent=2, ensure_ascii=False))
    return 0


def _cli_call(target: str, name: str, args: str, show_traceback: bool) -> int:
    tools = ToolSet(_cli_load_target(target))
    chosen = tools.lookup(name)
    if chosen is None:
        raise _CliTargetError(
            f'no tool named "{name}" in {target}; the tools are: {_cli_names(tools)}'
        )
    interactive = args != "-" and sys.stdin is not None and sys.stdin.isatty()
    if args == "-":
        args = sys.stdin.read()
    executor = Executor(recorder=_cli_print_record, elicitor=_cli_ask if interactive else None)
    cancel = threading.Event()
    final = None
    events = executor.execute([Job(chosen, Call("cli", args))], cancel=cancel)
    try:
        for event in events:
            if not event.final:
                if event.result is not None:
                    _cli_write(sys.stderr, _cli_progress_line(event.result))
                continue
            final = event
    except KeyboardInterrupt:
        cancel.set()
        close = getattr(events, "close", None)  # a generator: closing waits for the tool
        if close is not None:
            close()
        _cli_write(sys.stderr, "agenttool: interrupted; the call was cancelled")
        return 130
    if final is None:
        return 1
    if final.error is not None:
        if show_traceback:
            import traceback

            err = final.error
            traceback.print_exception(type(err), err, err.__traceback__, file=sys.stderr)
        _cli_write(sys.stdout, str(error_result(final.error).output))
        return 1
    result = final.result if final.result is not None else Result("")
    _cli_write(sys.stdout, _cli_text_of(result.output))
    if result.details is not None:
        _cli_write(sys.stderr, "details: " + json.dumps(result.details, default=repr))
    if result.terminate:
        _cli_write(sys.stderr, "terminate: true")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (``sys.argv[1:]`` by default); the exit status."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m agenttool",
        usage=_CLI_USAGE,
        description="List and call the tools of a Python module, as a model would.",
        epilog=_CLI_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="{list,call}")
    listing = commands.add_parser("list", help="print the tools' definitions as a JSON array")
    listing.add_argument("target", metavar="TARGET")
    listing.add_argument(
        "--format",
        default="responses",
        help="responses (default), chat, anthropic or gemini",
    )
    calling = commands.add_parser("call", help="run one call and print what the model sees")
    calling.add_argument("target", metavar="TARGET")
    calling.add_argument("tool", metavar="TOOL")
    calling.add_argument(
        "args", metavar="ARGS_JSON", nargs="?", default="", help="a JSON object; - reads stdin"
    )
    calling.add_argument(
        "--traceback", action="store_true", help="print a failed call's traceback on stderr"
    )
    try:
        ns = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors and --help
        return exc.code if isinstance(exc.code, int) else 2
    if ns.command is None:
        parser.print_usage(sys.stderr)
        return 2
    try:
        if ns.command == "list":
            return _cli_list(ns.target, ns.format)
        return _cli_call(ns.target, ns.tool, ns.args, ns.traceback)
    except (_CliTargetError, ValueError) as exc:  # ValueError: duplicate names, a bad format
        _cli_write(sys.stderr, f"agenttool: {exc}")
        return 2


# This block belongs at the very end of agenttool.py.  Run as a script or with -m, the file is
# the module `__main__`; registering it as `agenttool` too means a target's `import agenttool`
# gets this very module (the same classes) instead of loading the file a second time.
if __name__ == "__main__":
    sys.modules.setdefault("agenttool", sys.modules[__name__])
    sys.exit(main())
