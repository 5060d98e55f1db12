"""The install works as the README says: the sdist carries what its commands need, 3.9 and 3.13."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import unittest

from test_agenttool import absent, limit_test_time, slow

HERE = pathlib.Path(__file__).resolve().parent
PYENV = pathlib.Path("/root/.pyenv/versions")
INTERPRETERS = {"3.9": "3.9.18", "3.13": "3.13.0"}
# build 1.6.1 needs 3.10; on 3.9 pip picks the newest build that still supports it.
BUILD = {"3.9": "build", "3.13": "build==1.6.1"}
TIMEOUT = 600


def run(command: list[str], cwd: pathlib.Path) -> str:
    """Run ``command`` in ``cwd`` under a timeout; fail the test with its output if it fails."""
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    if done.returncode != 0:
        raise AssertionError(f"{command} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def interpreter(version: str) -> pathlib.Path:
    """The bare interpreter for ``version``, or skip (fail under CI) when it is missing."""
    path = PYENV / INTERPRETERS[version] / "bin" / "python"
    if not path.exists():
        absent(f"Python {version} at {path}")
    return path


@slow
class TestSdistInstall(unittest.TestCase):
    """Build the sdist, unpack it, and run the README's clone and wheel commands from it."""

    work: tempfile.TemporaryDirectory[str]
    source: pathlib.Path

    @classmethod
    def setUpClass(cls) -> None:
        if importlib.util.find_spec("build") is None:
            absent("build (pip install build==1.6.1)")
        cls.work = tempfile.TemporaryDirectory()
        root = pathlib.Path(cls.work.name)
        run([sys.executable, "-m", "build", "--sdist", "-o", str(root / "dist"), str(HERE)], HERE)
        (sdist,) = (root / "dist").glob("agenttool_contract-*.tar.gz")
        with tarfile.open(sdist) as archive:
            archive.extractall(root / "src", filter="data")
        (cls.source,) = (root / "src").iterdir()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.work.cleanup()

    def test_the_sdist_carries_tests_testdata_examples_and_bench(self) -> None:
        for name in ("test_agenttool.py", "testdata", "examples/demo.py", "bench/bench.py"):
            self.assertTrue((self.source / name).exists(), name)

    def venv(self, version: str) -> pathlib.Path:
        """A fresh venv of ``version`` with ``build`` in it; its python."""
        place = pathlib.Path(tempfile.mkdtemp(dir=self.work.name))
        run([str(interpreter(version)), "-m", "venv", str(place)], self.source)
        python = place / "bin" / "python"
        run([str(python), "-m", "pip", "install", "-q", BUILD[version]], self.source)
        return python

    def check_installed(self, python: pathlib.Path, version: str) -> None:
        out = run(
            [str(python), "-c", "import agenttool; print(agenttool.__version__)"],
            pathlib.Path(HERE.root),
        )
        self.assertTrue(out.strip())
        probe = "import agenttool_mcp"
        done = subprocess.run(
            [str(python), "-c", probe], capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
        if version == "3.9":
            self.assertIn("needs Python 3.10", done.stderr)

    def test_readme_commands_from_the_unpacked_sdist(self) -> None:
        for version in INTERPRETERS:
            with self.subTest(version=version, command="pip install .[mcp]"):
                python = self.venv(version)
                extra = "[mcp]" if version == "3.9" else ""
                run([str(python), "-m", "pip", "install", "-q", f".{extra}"], self.source)
                self.check_installed(python, version)
            with self.subTest(version=version, command="python -m build --wheel"):
                python = self.venv(version)
                out = pathlib.Path(tempfile.mkdtemp(dir=self.work.name))
                run([str(python), "-m", "build", "--wheel", "-o", str(out), "."], self.source)
                (wheel,) = out.glob("agenttool_contract-*.whl")
                run([str(python), "-m", "pip", "install", "-q", str(wheel)], self.source)
                self.check_installed(python, version)


if __name__ == "__main__":
    limit_test_time()
    unittest.main()
