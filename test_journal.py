"""The journal's storage layer: intents, outcomes, leases, housekeeping, bad files."""

import glob
import os
import tempfile
import threading
import unittest
from typing import Any, Callable

import agenttool
from test_agenttool import needs, slow

try:
    import psycopg
except ImportError:
    psycopg = None

# The newest PostgreSQL server binaries Debian installed (CI installs postgresql when missing).
PG_BIN = (
    sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    or ["/usr/lib/postgresql/15/bin"]
)[-1]


def open_at_once(open_journal: Callable[[], agenttool.Journal], n: int) -> list[str]:
    """Open ``n`` journals on threads released together; each holds and releases a run of its
    own.  The errors, if any."""
    barrier, errors = threading.Barrier(n), []

    def opener(i: int) -> None:
        barrier.wait()
        try:
            journal = open_journal()
            journal.hold(f"run-{i}", "me")
            journal.release(f"run-{i}", "me")
            journal.close()
        except agenttool.JournalError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=opener, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return errors


class LoggedConnection:
    """A DB-API connection that logs the statements its cursors run; with ``rowcount=False``
    its cursors say -1, as a driver that cannot count the rows a statement changed does."""

    def __init__(self, conn: Any, log: list[str], rowcount: bool = True) -> None:
        self.conn, self.log, self.rowcount = conn, log, rowcount

    def cursor(self) -> "LoggedCursor":
        return LoggedCursor(self.conn.cursor(), self)

    def __getattr__(self, name: str) -> Any:  # commit, rollback, close
        return getattr(self.conn, name)


class LoggedCursor:
    def __init__(self, cur: Any, conn: LoggedConnection) -> None:
        self.cur, self.conn = cur, conn

    def execute(self, text: str, params: Any = ()) -> Any:
        self.conn.log.append(text)
        return self.cur.execute(text, params)

    @property
    def rowcount(self) -> int:
        return int(self.cur.rowcount) if self.conn.rowcount else -1

    def __getattr__(self, name: str) -> Any:  # fetchall, description, close
        return getattr(self.cur, name)


def read_backs(log: list[str]) -> int:
    """How many times the logged statements read a call's intent back."""
    return sum(text.startswith("SELECT tool, definition_hash") for text in log)


class TestJournalStorage(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "agent.db")
        self.journal = agenttool.Journal(self.path)

    def tearDown(self) -> None:
        self.journal.close()
        self.dir.cleanup()

    def test_intent_is_read_back_with_the_same_key(self) -> None:
        first = self.journal.intent("turn-1", "c1", "pay", "sha256:d", {"amount": 3})
        self.assertEqual(first["status"], "intent")
        second = agenttool.Journal(self.path)
        self.addCleanup(second.close)
        again = second.intent("turn-1", "c1", "pay", "sha256:d", {"amount": 3})
        self.assertEqual(again["key"], first["key"])
        self.assertFalse(again["definition_changed"])

    def logged_journal(self, rowcount: bool) -> tuple[agenttool.Journal, list[str]]:
        """A journal on a new SQLite file through connect=, logging its statements."""
        import sqlite3

        log: list[str] = []
        path = os.path.join(self.dir.name, f"logged-{rowcount}.db")
        journal = agenttool.Journal(
            connect=lambda: LoggedConnection(sqlite3.connect(path), log, rowcount),
            paramstyle="qmark",
        )
        self.addCleanup(journal.close)
        return journal, log

    def test_a_new_intent_is_not_read_back_and_a_journaled_one_is(self) -> None:
        # The driver's rowcount says the insert wrote the row: the intent is what was written.
        # Without a rowcount (-1), or when the call was journaled before (0), it is read back.
        for rowcount in (True, False):
            journal, log = self.logged_journal(rowcount)
            del log[:]
            first = journal.intent("r", "c1", "pay", "sha256:d", {"amount": 3})
            self.assertEqual(read_backs(log), 0 if rowcount else 1, f"rowcount={rowcount}")
            self.assertEqual(
                first,
                {
                    "status": "intent",
                    "key": first["key"],
                    "outcome": None,
                    "definition_changed": False,
                },
            )
            self.assertRegex(first["key"], "^[0-9a-f]{32}$")
            self.assertEqual(journal.calls("r")[0]["key"], first["key"])  # the key stored
            del log[:]
            again = journal.intent("r", "c1", "pay", "sha256:e", {"amount": 3})
            self.assertEqual(read_backs(log), 1)
            self.assertEqual((again["key"], again["definition_changed"]), (first["key"], True))

    def test_outcome_is_returned_on_resume(self) -> None:
        self.journal.intent("r", "c1", "pay", "sha256:d", {})
        self.journal.outcome("r", "c1", {"output": "ok"})
        got = self.journal.intent("r", "c1", "pay", "sha256:d", {})
        self.assertEqual((got["status"], got["outcome"]), ("done", {"output": "ok"}))

    def test_changed_arguments_are_refused_and_changed_definition_is_flagged(self) -> None:
        self.journal.intent("r", "c1", "pay", "sha256:d", {"amount": 3})
        with self.assertRaisesRegex(agenttool.JournalError, "'c1'.*other"):
            self.journal.intent("r", "c1", "pay", "sha256:d", {"amount": 4})
        self.assertTrue(
            self.journal.intent("r", "c1", "pay", "sha256:e", {"amount": 3})["definition_changed"]
        )

    def test_lease_has_one_holder_until_it_expires(self) -> None:
        self.journal.hold("r", "a", lease=60)
        with self.assertRaisesRegex(agenttool.JournalError, "held by 'a'"):
            self.journal.hold("r", "b")
        self.journal.hold("r2", "a", lease=-1)
        self.journal.hold("r2", "b")
        self.journal.release("r", "a")
        self.journal.hold("r", "b")
        with self.assertRaises(TypeError):
            self.journal.hold(7, "a")  # type: ignore[arg-type]

    def test_runs_calls_forget_prune(self) -> None:
        self.journal.hold("r", "a")
        self.journal.intent("r", "c1", "t", "h", {})
        self.journal.mark_uncertain("r", "c1")
        self.assertEqual([c["status"] for c in self.journal.calls("r")], ["uncertain"])
        self.assertEqual([r["run"] for r in self.journal.runs()], ["r"])
        self.journal.forget("r")
        self.assertEqual((self.journal.runs(), self.journal.calls("r")), ([], []))
        self.journal.hold("old", "a")
        self.assertEqual(self.journal.prune(older_than=-1), 1)

    def test_any_dbapi_connection_through_connect(self) -> None:
        import sqlite3

        other = os.path.join(self.dir.name, "other.db")
        journal = agenttool.Journal(connect=lambda: sqlite3.connect(other))
        journal.intent("r", "c1", "t", "h", {"a": [1, 2]})
        journal.outcome("r", "c1", {"output": "ok"})
        self.assertEqual(journal.calls("r")[0]["outcome"], {"output": "ok"})
        journal.close()

    def test_a_newer_schema_is_refused(self) -> None:
        import sqlite3

        conn = sqlite3.connect(self.path)
        conn.execute("UPDATE agenttool_meta SET v = '99' WHERE k = 'schema'")
        conn.commit()
        conn.close()
        with self.assertRaisesRegex(agenttool.JournalError, "newer"):
            agenttool.Journal(self.path)

    def test_a_file_that_is_not_a_journal(self) -> None:
        bad = os.path.join(self.dir.name, "bad.db")
        with open(bad, "wb") as f:
            f.write(b"not a database at all" * 100)
        with self.assertRaisesRegex(agenttool.JournalError, "bad.db"):
            agenttool.Journal(bad)

    def test_a_new_file_being_written_is_waited_for_not_refused(self) -> None:
        """A journal opened on a new file while another connection writes to it (still in
        rollback mode, as when another agent is making the same file) waits for the writer
        instead of failing with "database is locked"."""
        import sqlite3

        path = os.path.join(self.dir.name, "new.db")
        other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
        other.execute("CREATE TABLE theirs (x)")
        done = threading.Timer(0.2, other.execute, ("COMMIT",))
        done.start()
        try:
            journal = agenttool.Journal(path)
            journal.hold("r", "me")
            self.assertEqual([r["run"] for r in journal.runs()], ["r"])
            journal.close()
        finally:
            done.join()
            other.close()

    def test_eight_threads_share_one_file(self) -> None:
        def work(n: int) -> None:
            for i in range(20):
                self.journal.intent("r", f"{n}-{i}", "t", "h", {"i": i})
                self.journal.outcome("r", f"{n}-{i}", {"output": str(i)})

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        calls = self.journal.calls("r")
        self.assertEqual(len(calls), 160)
        self.assertTrue(all(c["status"] == "done" for c in calls))


@slow
@needs(psycopg is not None and os.path.exists(PG_BIN + "/initdb"), "needs psycopg and PostgreSQL")
class TestJournalPostgres(unittest.TestCase):
    """The same storage layer on a PostgreSQL server the test starts on 127.0.0.1."""

    @classmethod
    def setUpClass(cls) -> None:
        import shutil
        import socket
        import subprocess

        cls.dir = tempfile.mkdtemp(prefix="agenttool-pg-")
        shutil.chown(cls.dir, "postgres")
        data = os.path.join(cls.dir, "data")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            cls.port = sock.getsockname()[1]
        as_pg = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        subprocess.run(
            [*as_pg, PG_BIN + "/initdb", "-D", data, "-A", "trust", "-U", "postgres"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        cls.ctl = [*as_pg, PG_BIN + "/pg_ctl", "-D", data]
        subprocess.run(
            [
                *cls.ctl,
                "-w",
                "-t",
                "60",
                "-l",
                os.path.join(cls.dir, "log"),
                "start",
                "-o",
                f"-h 127.0.0.1 -p {cls.port} -k {cls.dir}",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )

    @classmethod
    def tearDownClass(cls) -> None:
        import shutil
        import subprocess

        subprocess.run([*cls.ctl, "-m", "fast", "stop"], capture_output=True, timeout=120)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def connect(self) -> object:
        return psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", dbname="postgres")

    def test_intent_outcome_and_lease_on_postgres(self) -> None:
        journal = agenttool.Journal(connect=self.connect)
        journal.hold("pg", "a")
        first = journal.intent("pg", "c1", "pay", "h", {"amount": 3})
        other = agenttool.Journal(connect=self.connect)
        with self.assertRaisesRegex(agenttool.JournalError, "held by 'a'"):
            other.hold("pg", "b")
        self.assertEqual(other.intent("pg", "c1", "pay", "h", {"amount": 3})["key"], first["key"])
        journal.outcome("pg", "c1", {"output": "ok"})
        self.assertEqual(other.calls("pg")[0]["status"], "done")
        with self.assertRaisesRegex(agenttool.JournalError, "other"):
            other.intent("pg", "c1", "pay", "h", {"amount": 4})
        other.forget("pg")
        self.assertEqual(journal.runs(), [])
        journal.close()
        other.close()

    def test_a_new_intent_on_postgres_is_one_statement(self) -> None:
        log: list[str] = []
        journal = agenttool.Journal(
            connect=lambda: LoggedConnection(self.connect(), log), paramstyle="format"
        )
        self.addCleanup(journal.close)
        del log[:]
        first = journal.intent("pg-one", "c1", "pay", "h", {"amount": 3})
        self.assertEqual((len(log), read_backs(log)), (1, 0))
        self.assertEqual(journal.calls("pg-one")[0]["key"], first["key"])
        del log[:]
        self.assertEqual(journal.intent("pg-one", "c1", "pay", "h", {"amount": 3}), first)
        self.assertEqual(read_backs(log), 1)
        journal.forget("pg-one")

    def test_agents_starting_at_once_on_a_new_database_all_open_it(self) -> None:
        """Six connections creating the journal's tables in one new database at once all
        get a journal (PostgreSQL's CREATE TABLE IF NOT EXISTS races on its catalog)."""
        admin = self.connect()
        admin.autocommit = True  # type: ignore[attr-defined]
        for round_ in range(3):
            name = f"fresh{round_}"
            admin.execute(f"CREATE DATABASE {name}")  # type: ignore[attr-defined]

            def connect(name: str = name) -> object:
                return psycopg.connect(
                    host="127.0.0.1", port=self.port, user="postgres", dbname=name
                )

            self.assertEqual(open_at_once(lambda: agenttool.Journal(connect=connect), 6), [])
        admin.close()  # type: ignore[attr-defined]


if __name__ == "__main__":
    unittest.main()


CHILD = """
import os, signal, sys
sys.path.insert(0, {here!r})
import agenttool
j = agenttool.Journal({path!r})
j.hold("r", "child")
got = j.intent("r", "c1", "pay", "h", {{"amount": 3}})
print(got["key"], flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


class TestJournalCrash(unittest.TestCase):
    def test_sigkill_after_the_intent_leaves_it_durable_with_its_key(self) -> None:
        import subprocess
        import sys

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "agent.db")
            here = os.path.dirname(os.path.abspath(__file__))
            code = CHILD.format(here=here, path=path)
            proc = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
            )
            self.assertEqual(proc.returncode, -9)
            key = proc.stdout.strip()
            journal = agenttool.Journal(path)
            with self.assertRaisesRegex(agenttool.JournalError, "held by 'child'"):
                journal.hold("r", "parent")
            got = journal.intent("r", "c1", "pay", "h", {"amount": 3})
            self.assertEqual((got["status"], got["key"]), ("intent", key))
            cli = subprocess.run(
                [sys.executable, os.path.join(here, "agenttool.py"), "journal", path],
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual(cli.returncode, 0, cli.stderr)
            self.assertIn("intent: c1 pay", cli.stdout)
            journal.close()

    def test_two_processes_share_one_file(self) -> None:
        import subprocess
        import sys

        worker = (
            "import sys; sys.path.insert(0, {here!r}); import agenttool\n"
            "j = agenttool.Journal({path!r})\n"
            "for i in range(30):\n"
            "    j.intent('r', '{name}-%d' % i, 't', 'h', {{'i': i}})\n"
            "    j.outcome('r', '{name}-%d' % i, {{'output': str(i)}})\n"
        )
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "agent.db")
            here = os.path.dirname(os.path.abspath(__file__))
            agenttool.Journal(path).close()
            procs = [
                subprocess.Popen(
                    [sys.executable, "-c", worker.format(here=here, path=path, name=n)]
                )
                for n in ("a", "b")
            ]
            for p in procs:
                self.assertEqual(p.wait(timeout=120), 0)
            journal = agenttool.Journal(path)
            calls = journal.calls("r")
            self.assertEqual(len(calls), 60)
            self.assertTrue(all(c["status"] == "done" for c in calls))
            journal.close()

    def test_cli_names_a_missing_file(self) -> None:
        import contextlib
        import io

        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(agenttool.main(["journal", "/nonexistent/x.db"]), 2)
        self.assertIn("no such file", err.getvalue())
