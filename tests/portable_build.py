"""A C extension compiled again from its source and loaded, for tests that hold the portable
build (no AVX2 copy: what aarch64 and older x86-64 run) to the bits of the one installed."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import shutil
import subprocess
import sysconfig
from pathlib import Path
from types import ModuleType

import pytest


def build_extension(
    source: Path, name: str, flags: list[str], folder: Path, compiler: str | None = None
) -> ModuleType:
    """``source`` built with ``flags`` into ``folder`` and imported as module ``name``, by
    ``compiler`` (a command name; the system's ``cc`` by default)."""
    if compiler is not None:
        found = shutil.which(compiler)
        if found is None:
            pytest.fail(f"no {compiler}: CI installs it (scripts/test.sh)")
        compiler = found
    else:
        compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.fail("no C compiler: CI installs gcc (scripts/test.sh)")
    target = folder / (name + sysconfig.get_config_var("EXT_SUFFIX"))
    built = subprocess.run(
        [
            compiler,
            *flags,
            *("-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}"),
            *(str(source), "-o", str(target)),
        ],
        capture_output=True,
        text=True,
    )
    if built.returncode != 0:
        errors = [line for line in built.stderr.splitlines() if "error" in line]
        pytest.fail(f"{compiler} could not build {source.name}:\n" + "\n".join(errors[:10]))
    loader = importlib.machinery.ExtensionFileLoader(name, str(target))
    spec = importlib.util.spec_from_file_location(name, target, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
