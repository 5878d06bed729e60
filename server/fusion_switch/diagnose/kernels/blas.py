"""Run kernels with a single BLAS thread.

On this project's shared 2-core machine, OpenBLAS's own threads made small products hundreds
of times slower: a 16x144 @ 144x256 float64 product (one 3x3 convolution of the generator's
16-channel blocks) took 62 ms with the default threads and 0.07 ms with one; a ResNet-50 3x3
layer (64x576 @ 576x3136) 121 ms against 24 ms. The replay computes thousands of such products
one after the other, so every kernel call runs with one BLAS thread and the previous count is
restored afterwards (the replay holds it around all it measures: see ``one_thread``).

The OpenBLAS that numpy loaded is found in ``/proc/self/maps`` and driven through its
``*_set_num_threads``/``*_get_num_threads`` entry points (numpy's wheels export them with a
``scipy_`` prefix and ``64_`` suffix, system builds without). Anywhere else (another BLAS, no
``/proc``) this is a no-op and kernels still compute the same values.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

import numpy as np  # noqa: F401  (numpy's BLAS must be loaded before it is looked up)

_NAMES = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)


@functools.cache
def _controls() -> tuple[Callable[[int], None], Callable[[], int]] | None:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower()})
    except OSError:
        return None
    for path in paths:
        if not path.startswith("/"):
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for set_name, get_name in _NAMES:
            setter, getter = getattr(lib, set_name, None), getattr(lib, get_name, None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                return setter, getter
    return None


_DEPTH = [0]  # one_thread blocks entered and not left in this process (the count is its own)


class one_thread:
    """BLAS limited to one thread inside the block (no-op when OpenBLAS is not found). A class,
    not a generator: it is entered for every kernel call (~1 µs less each).

    Inside another such block it does nothing: the outer one holds the count at one. The
    replay holds one around all it measures (its scoring and noise floor included), so that
    its ~4,000 kernel calls do not each ask OpenBLAS for the count (a ctypes call: 2% of the
    replay's time). The depth is the process's, as the count is: kernels run in one thread
    at a time here (a second thread's block would leave the count to the first's)."""

    __slots__ = ("_before",)

    def __enter__(self) -> None:
        self._before = None
        if _DEPTH[0] == 0:  # counted only once entered: __exit__ does not run if this raises
            controls = _controls()
            if controls is not None:
                before = controls[1]()
                if before != 1:
                    controls[0](1)
                    self._before = before
        _DEPTH[0] += 1

    def __exit__(self, *exc: object) -> None:
        _DEPTH[0] -= 1
        if self._before is not None:
            _controls()[0](self._before)  # type: ignore[index]
