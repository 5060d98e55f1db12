"""A hung tool stopped at its timeout: run ``python examples/hung_tool.py`` from the root.

``stuck`` never returns and never looks at ``cancelled()``.  Made with ``isolated=True`` it
runs in a worker process, so its timeout kills it: the call completes after 0.5 s, the worker
is gone, and the next call of the same resource runs at once.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the repository root, where agenttool.py lives

import agenttool as at  # noqa: E402


def stuck() -> str:
    """Waits for something that never comes."""
    time.sleep(3600)
    return "never"


def ping() -> str:
    """Answers at once."""
    return "pong"


def main() -> None:
    # The worker imports the functions by name: from this file as a module, not as __main__.
    import hung_tool

    hung = at.tool(hung_tool.stuck, isolated=True, timeout=0.5, resource="db")
    quick = at.tool(hung_tool.ping, isolated=True, resource="db")
    jobs = [at.Job(hung, at.Call("1", "{}")), at.Job(quick, at.Call("2", "{}"))]
    start = time.monotonic()
    for event in at.Executor().execute(jobs):
        if event.final:
            took = time.monotonic() - start
            what = event.error if event.error is not None else event.result.output
            print(f"call {jobs[event.index].call.id} after {took:.2f} s: {what}")


if __name__ == "__main__":
    main()
