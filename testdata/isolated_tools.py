"""Tool functions for test_isolation.py: module-level, so a spawned worker imports them."""

import os
import signal
import time


def spin() -> str:
    """Loops forever."""
    while True:
        pass


def nap() -> str:
    """Blocks in a C call for an hour."""
    time.sleep(3600)
    return "woke"


def pid() -> int:
    """The worker's pid."""
    return os.getpid()


def pid_later(seconds: float) -> int:
    """The worker's pid, after ``seconds``."""
    time.sleep(seconds)
    return os.getpid()


def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


def segfault() -> str:
    """Sends itself SIGSEGV."""
    os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(10)
    return "unreachable"


def exit3() -> str:
    """Exits with status 3."""
    os._exit(3)


def hog() -> int:
    """Allocates a gigabyte."""
    return len(bytearray(1 << 30))


def fails() -> str:
    """Raises."""
    raise ValueError("bad input")


def chatty(n: int) -> str:
    """Reports progress, writes a record, asks a person, and reads its call."""
    import agenttool as at

    for i in range(n):
        at.progress(f"step {i}", progress=i, total=n)
    at.write_record(at.Record("test:step", f'{{"n": {n}}}'))
    answer = at.elicit(at.Elicitation("go on?"))
    call = at.current_call()
    return f"{answer.action.value} {call.id if call else None} {at.cancelled()}"


def busy() -> str:
    """Reports its pid as progress, then loops forever."""
    import agenttool as at

    at.progress(str(os.getpid()))
    while True:
        pass


def raw_empty(call: object) -> str:
    """A raw tool's function that answers nothing (the property table's isolated sample)."""
    return ""
