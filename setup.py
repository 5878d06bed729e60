"""The optional C extensions; everything else about the package is in pyproject.toml.

They only make things faster, never different: without a C compiler the install still succeeds
and the same results come from Python and numpy. ``FUSION_SWITCH_PURE_PYTHON=1`` builds without
them, for a wheel that installs on any platform (scripts/build_wheelhouse.sh).
"""

import os

from setuptools import Extension, setup


def _numpy_include() -> list[str]:
    """numpy's C headers (a build requirement, pyproject.toml) for the one extension that
    talks to numpy's C API; without them that extension is left out, as without a compiler."""
    try:
        import numpy
    except ImportError:
        return []
    return [numpy.get_include()]


# -ffp-contract=off: a fused multiply-add rounds differently from numpy's multiply, then add.
# -fno-trapping-math: lets the compiler vectorise conditional selects; no value changes.
EXTENSIONS = [
    Extension(
        "fusion_switch.compare._kernel",
        sources=["server/fusion_switch/compare/_kernel.c"],
        depends=["server/fusion_switch/_buffers.h", "server/fusion_switch/compare/_stored.h"],
        extra_compile_args=["-O3", "-ffp-contract=off", "-fno-trapping-math"],
        optional=True,
    ),
    Extension(
        "fusion_switch.compare._csv_rows",
        sources=["server/fusion_switch/compare/_csv_rows.c"],
        extra_compile_args=["-O2"],
        optional=True,
    ),
    Extension(
        "fusion_switch.diagnose._rounding",
        sources=["server/fusion_switch/diagnose/_rounding.c"],
        depends=["server/fusion_switch/_buffers.h"],
        extra_compile_args=[
            "-O3",
            "-ffp-contract=off",
            "-fno-trapping-math",
            "-fno-strict-aliasing",
        ],
        optional=True,
    ),
    Extension(
        "fusion_switch.readers._array_reuse",
        sources=["server/fusion_switch/readers/_array_reuse.c"],
        include_dirs=_numpy_include(),
        extra_compile_args=["-O2"],
        optional=True,
    ),
    Extension(
        "fusion_switch.readers._wire",
        sources=["server/fusion_switch/readers/_wire.c"],
        depends=["server/fusion_switch/readers/_varint.h"],
        extra_compile_args=["-O2"],
        optional=True,
    ),
    Extension(
        "fusion_switch.readers._attr_check",
        sources=["server/fusion_switch/readers/_attr_check.c"],
        extra_compile_args=["-O2"],
        optional=True,
    ),
    Extension(
        "fusion_switch.readers._files",
        sources=["server/fusion_switch/readers/_files.c"],
        extra_compile_args=["-O2"],
        optional=True,
    ),
    Extension(
        "fusion_switch.readers._header",
        sources=["server/fusion_switch/readers/_header.c"],
        depends=["server/fusion_switch/readers/_varint.h"],
        extra_compile_args=["-O2"],
        optional=True,
    ),
]

setup(ext_modules=[] if os.environ.get("FUSION_SWITCH_PURE_PYTHON") else EXTENSIONS)
