"""The journal's cost per call against its floor: bare sqlite3 writing and committing the same
rows (an intent, then an outcome) at the same durability, synchronous=FULL and NORMAL side by
side; with a PostgreSQL DSN (``--pg "host=127.0.0.1 port=5432 user=postgres"``), the same
against bare psycopg on that server (fifteen passes of a third of the calls); each figure the
best of five passes.  Run:
python bench/journal.py [CALLS] [--pg DSN] [--results PATH]: its rows go into
bench/results.json (``--results none`` for none), and ``bench/run --readme`` puts them in the
README."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agenttool  # noqa: E402

import results  # noqa: E402


def journal_per_call(path: str, calls: int, synchronous: str) -> float:
    journal = agenttool.Journal(path, synchronous=synchronous)
    start = time.perf_counter_ns()
    for i in range(calls):
        journal.intent("run", f"c{i}", "tool", "sha256:def", {"i": i})
        journal.outcome("run", f"c{i}", {"output": f"result {i}"})
    elapsed = time.perf_counter_ns() - start
    journal.close()
    return elapsed / calls / 1e3


def write_floor_rows(conn: Any, begin: str | None, mark: str, run: str, calls: int) -> float:
    """The floor: ``calls`` intents and outcomes written with bare DB-API calls into the
    journal's own ``agenttool_calls`` table (so the rows, the table and its index are the
    same), each in a transaction of its own committed before the next; us per call.  Each row
    is the journal's, computed the least costly correct way: a fresh key, the time, and the
    SHA-256 of the arguments as ``json.dumps`` writes them sorted and compact (their RFC 8785
    form, for these arguments, which the journal hashes too).  ``begin``
    opens a transaction for writing (``BEGIN IMMEDIATE`` on SQLite; None where the driver
    opens one itself), ``mark`` is the driver's placeholder."""
    insert = (
        "INSERT INTO agenttool_calls (run, call_id, tool, definition_hash, args_hash, idem_key,"
        " status, outcome, started) VALUES (?, ?, ?, ?, ?, ?, 'intent', NULL, ?)"
    ).replace("?", mark)
    update = (
        "UPDATE agenttool_calls SET status = 'done', outcome = ? WHERE run = ? AND call_id = ?"
    ).replace("?", mark)
    start = time.perf_counter_ns()
    for i in range(calls):
        if begin:
            conn.execute(begin)
        canonical = json.dumps({"i": i}, sort_keys=True, separators=(",", ":"))
        args_hash = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
        conn.execute(
            insert,
            (run, f"c{i}", "tool", "sha256:def", args_hash, uuid.uuid4().hex, time.time()),
        )
        conn.commit()
        if begin:
            conn.execute(begin)
        conn.execute(update, (json.dumps({"output": f"result {i}"}), run, f"c{i}"))
        conn.commit()
    return (time.perf_counter_ns() - start) / calls / 1e3


def floor_per_call(path: str, calls: int, synchronous: str) -> float:
    """Bare sqlite3 at ``synchronous``, in WAL mode as the journal is, on a file whose tables
    the journal made (``commit()`` ends the transaction ``BEGIN IMMEDIATE`` opened)."""
    agenttool.Journal(path, synchronous=synchronous).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    try:
        return write_floor_rows(conn, "BEGIN IMMEDIATE", "?", "run", calls)
    finally:
        conn.close()


def executor_per_call(path: str | None, calls: int, synchronous: str) -> float:
    """One batch of ``calls`` no-op calls through the executor, with a journal or without."""

    @agenttool.tool(replay=agenttool.Replay.UNKNOWN)
    def noop(i: int) -> str:
        return "ok"

    journal = agenttool.Journal(path, synchronous=synchronous) if path else None
    ex = agenttool.Executor(journal=journal, max_parallel=1)
    jobs = [agenttool.Job(noop, agenttool.Call(f"c{i}", {"i": i})) for i in range(calls)]
    start = time.perf_counter_ns()
    for _ in ex.execute(jobs, run="bench" if journal else None):
        pass
    elapsed = time.perf_counter_ns() - start
    if journal is not None:
        journal.close()
    return elapsed / calls / 1e3


def postgres_journal_per_call(dsn: str, calls: int) -> float:
    """The journal through psycopg, per call in us."""
    import psycopg

    journal = agenttool.Journal(connect=lambda: psycopg.connect(dsn))
    run = f"bench-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter_ns()
    for i in range(calls):
        journal.intent(run, f"c{i}", "tool", "sha256:def", {"i": i})
        journal.outcome(run, f"c{i}", {"output": f"result {i}"})
    elapsed = time.perf_counter_ns() - start
    journal.forget(run)
    journal.close()
    return elapsed / calls / 1e3


def postgres_floor_per_call(dsn: str, calls: int) -> float:
    """Bare psycopg writing the same rows into the journal's own table (a durable one: a
    temporary table skips the write-ahead log, so its commits wait for no disk) in the same
    transactions, per call in us."""
    import psycopg

    agenttool.Journal(connect=lambda: psycopg.connect(dsn)).close()  # the tables exist
    run = f"floor-{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn) as conn:
        try:
            return write_floor_rows(conn, None, "%s", run, calls)
        finally:
            conn.execute("DELETE FROM agenttool_calls WHERE run = %s", (run,))
            conn.commit()


ROUNDS = 5  # every figure is the best of five passes, the contenders in turn: load only adds
# PostgreSQL's figures: three times the passes, each of a third of the calls.  A commit there
# waits for the server's fsync, which on a shared disk takes 0.2 ms or 6 ms by turns, in bursts
# longer than a pass: more, shorter passes give each side its quiet moments.
PG_ROUNDS = 3 * ROUNDS


def best_of(*measures: Callable[[int], float], rounds: int = ROUNDS) -> list[float]:
    """Each ``measure(pass)``'s least figure over ``rounds`` passes run round-robin."""
    bests = [float("inf")] * len(measures)
    for r in range(rounds):
        for i, measure in enumerate(measures):
            bests[i] = min(bests[i], measure(r))
    return bests


def main() -> None:
    args = sys.argv[1:]
    dsn = ""
    if "--pg" in args:
        at = args.index("--pg")
        dsn = args[at + 1]
        del args[at : at + 2]
    path = results.RESULTS
    if "--results" in args:
        at = args.index("--results")
        path = args[at + 1]
        del args[at : at + 2]
    calls = int(args[0]) if args else 500
    command = "python bench/journal.py" + (f" {args[0]}" if args else "")
    run = results.start_run(command + (" --pg DSN" if dsn else ""))
    rows = []
    cells: dict[str, tuple[float, float]] = {}
    if dsn:
        pg_calls = max(1, calls * ROUNDS // PG_ROUNDS)
        ours, floor = best_of(
            lambda r: postgres_journal_per_call(dsn, pg_calls),
            lambda r: postgres_floor_per_call(dsn, pg_calls),
            rounds=PG_ROUNDS,
        )
        print(
            f"PostgreSQL: journal {ours:.0f} us/call, bare psycopg {floor:.0f} us/call,"
            f" ratio {ours / floor:.2f}x"
        )
        cells["PostgreSQL"] = (ours, floor)
    with tempfile.TemporaryDirectory() as d:
        for synchronous in ("FULL", "NORMAL"):
            sync = synchronous
            ours, floor, bare, journaled = best_of(
                lambda r, s=sync: journal_per_call(os.path.join(d, f"j-{s}-{r}.db"), calls, s),
                lambda r, s=sync: floor_per_call(os.path.join(d, f"f-{s}-{r}.db"), calls, s),
                lambda r, s=sync: executor_per_call(None, calls, s),
                lambda r, s=sync: executor_per_call(os.path.join(d, f"e-{s}-{r}.db"), calls, s),
            )
            print(
                f"synchronous={synchronous}: journal {ours:.0f} us/call,"
                f" bare sqlite3 {floor:.0f} us/call, ratio {ours / floor:.2f}x"
            )
            cells[synchronous] = (ours, floor)
            print(
                f"  executor, one serial batch: no journal {bare:.0f} us/call, journaled"
                f" {journaled:.0f} us/call, against no journal + floor"
                f" {journaled / (bare + floor):.2f}x"
            )
            cells[f"executor {synchronous}"] = (journaled, bare + floor)
    for key, what, against in (
        ("FULL", "SQLite `FULL` (the default)", "bare `sqlite3` at `FULL`"),
        ("NORMAL", "SQLite `NORMAL`", "bare `sqlite3` at `NORMAL`"),
        ("PostgreSQL", "PostgreSQL on 127.0.0.1", "bare psycopg"),
    ):
        if key in cells:
            ours, floor = cells[key]
            rows.append(
                results.row(
                    "journal",
                    key,
                    f"the journal, an intent and an outcome committed per call, {what}",
                    f"{ours:.0f} µs",
                    f"{against} writing the same rows in the same transactions {floor:.0f} µs",
                    f"{ours / floor:.2f}x",
                    "<= 1.3x",
                    ours / floor <= 1.3,
                )
            )
    for synchronous in ("FULL", "NORMAL"):
        ours, floor = cells[f"executor {synchronous}"]
        rows.append(
            results.row(
                "journal",
                f"executor {synchronous}",
                f"a serial executor batch with a journal at `{synchronous}`, per call",
                f"{ours:.0f} µs",
                f"the same batch without one, plus the bare `sqlite3` floor, {floor:.0f} µs",
                f"{ours / floor:.2f}x",
                "<= 1.3x",
                ours / floor <= 1.3,
            )
        )
    if path != "none":
        results.finish_run(run)
        results.write(run, rows, path, sections=["journal"])
        print(f"figures written to {path}; `bench/run --readme` puts them in README.md")


if __name__ == "__main__":
    main()
