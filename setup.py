"""The build: setup.cfg holds the metadata; this adds the types for installed copies.

A one-file module cannot carry a ``py.typed`` marker (PEP 561 marks packages), so the wheel
also installs each module as the stub-only package ``<module>-stubs/__init__.pyi``: the module
itself, so the types a checker reads never drift from the code, and ``agenttool.py`` stays one
file to copy (a vendored copy is checked as the source it is).
"""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

STUBBED = ("agenttool", "agenttool_mcp", "agenttool_adapters")


class BuildWithStubs(build_py):
    """build_py, then each module copied into its stub package in the build tree."""

    def run(self) -> None:
        super().run()
        for module in STUBBED:
            folder = os.path.join(self.build_lib, f"{module}-stubs")
            os.makedirs(folder, exist_ok=True)
            shutil.copyfile(f"{module}.py", os.path.join(folder, "__init__.pyi"))


setup(cmdclass={"build_py": BuildWithStubs})
