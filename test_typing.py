"""Types a checker sees: user code checked with mypy --strict and pyright --strict,
against the vendored file and against the installed wheel (its stub packages)."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

from test_agenttool import absent, slow

HERE = pathlib.Path(__file__).resolve().parent
USER = HERE / "testdata" / "typed_user.py"
TIMEOUT = 600


def run(command: list[str], cwd: pathlib.Path) -> str:
    """Run ``command``; fail the test with its output when it fails."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    if done.returncode != 0:
        raise AssertionError(f"{command} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def mypy(cwd: pathlib.Path, *extra: str) -> list[str]:
    if importlib.util.find_spec("mypy") is None:
        absent("mypy (pip install -r .ci/requirements.txt)")
    return [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--python-version",
        "3.12",
        "--no-incremental",
        *extra,
        "typed_user.py",
    ]


def pyright() -> str:
    """The pyright that .ci/node-peers.sh installs beside the MCP tests' node peers."""
    root = os.environ.get("AGENTTOOL_NODE_PEERS") or os.path.join(
        os.path.expanduser("~"), ".cache", "agenttool", "node-peers"
    )
    path = os.path.join(root, "node_modules", ".bin", "pyright")
    if not os.path.exists(path) or shutil.which("node") is None:
        absent(f"pyright at {path} (bash .ci/node-peers.sh {root})")
    return path


@slow
@unittest.skipIf(sys.version_info < (3, 12), "the user file is checked as 3.12 code")
class TestVendoredCopy(unittest.TestCase):
    """agenttool.py copied beside the user's code, as a user vendors it."""

    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.cwd = pathlib.Path(self.dir.name)
        shutil.copy(HERE / "agenttool.py", self.cwd)
        shutil.copy(USER, self.cwd)

    def tearDown(self) -> None:
        self.dir.cleanup()

    def test_mypy_strict(self) -> None:
        run(mypy(self.cwd), self.cwd)

    def test_pyright_strict(self) -> None:
        run([pyright(), "--pythonpath", sys.executable, "typed_user.py"], self.cwd)


@slow
@unittest.skipIf(sys.version_info < (3, 12), "the user file is checked as 3.12 code")
class TestInstalledWheel(unittest.TestCase):
    """The wheel built from this tree and installed in a fresh venv, the user's code elsewhere."""

    dir: tempfile.TemporaryDirectory[str]
    python: pathlib.Path
    cwd: pathlib.Path

    @classmethod
    def setUpClass(cls) -> None:
        if importlib.util.find_spec("build") is None:
            absent("build (pip install -r .ci/requirements.txt)")
        cls.dir = tempfile.TemporaryDirectory()
        root = pathlib.Path(cls.dir.name)
        run(
            [
                sys.executable,
                "-m",
                "build",
                "--wheel",
                "--no-isolation",
                "-o",
                str(root / "dist"),
                str(HERE),
            ],
            HERE,
        )
        (wheel,) = (root / "dist").glob("agenttool_contract-*.whl")
        run([sys.executable, "-m", "venv", str(root / "venv")], root)
        cls.python = root / "venv" / "bin" / "python"
        run(
            [str(cls.python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
            root,
        )
        cls.cwd = root / "user"
        cls.cwd.mkdir()
        shutil.copy(USER, cls.cwd)
        shutil.rmtree(HERE / "build", ignore_errors=True)  # what the wheel build left behind

    @classmethod
    def tearDownClass(cls) -> None:
        cls.dir.cleanup()

    def test_the_wheel_carries_the_stub_packages(self) -> None:
        site = run(
            [str(self.python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            self.cwd,
        ).strip()
        for module in ("agenttool", "agenttool_mcp"):
            stub = pathlib.Path(site) / f"{module}-stubs" / "__init__.pyi"
            self.assertEqual(stub.read_bytes(), (HERE / f"{module}.py").read_bytes(), module)

    def test_mypy_strict(self) -> None:
        run(mypy(self.cwd, "--python-executable", str(self.python)), self.cwd)

    def test_pyright_strict(self) -> None:
        run([pyright(), "--pythonpath", str(self.python), "typed_user.py"], self.cwd)


if __name__ == "__main__":
    unittest.main()
