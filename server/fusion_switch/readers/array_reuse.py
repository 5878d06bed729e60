"""Large numpy arrays made while tensors are compared or replayed reuse the blocks of freed
ones (issue 16).

The memory read tensors live in: a comparing process reads large dump files into fresh buffers
(:meth:`.dump.DumpFile.array`), tensor after tensor; the replay makes float64 copies of whole
tensors and kernel temporaries of the same sizes, op after op.
glibc gives a block above its mmap threshold a fresh mapping whose pages the kernel must fault
in and zero, every time: on a real-sized case, clearing pages was ~14% of a run's CPU. Inside
:func:`reusing_arrays`, numpy allocates through the compiled handler in ``_array_reuse.c``,
which keeps freed large blocks for later arrays (one of about a block's size takes it as it is,
another size takes it remapped: shrunk, or grown by the missing pages only), only within the
memory the process already needed at its peak: reuse saves time and never adds to the peak a
memory budget counts (a reused block may be up to 1/16 larger than asked for). Values are not
touched.

Without the compiled module (no C compiler or numpy headers at install), arrays are allocated
as usual.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

try:
    from . import _array_reuse  # built by pip install from readers/_array_reuse.c; optional
except ImportError:  # pragma: no cover - depends on the install
    _array_reuse = None

MIN_BYTES = 4 << 20  # the replay's: glibc serves smaller blocks from its heap, reusing them
# The comparison's: glibc maps a block this large afresh every time (its mmap threshold stops
# growing there). Below it, glibc reuses the heap the graphs were read into; blocks of their own
# took a comparing process's peak 14 MB higher on the real-sized case for no time saved.
ALWAYS_MAPPED_BYTES = 32 << 20

# A block is open in this context (numpy's handler is per context too): an inner block changes
# nothing, and blocks closed out of order (generators) cannot leave the handler installed.
_open: contextvars.ContextVar[bool] = contextvars.ContextVar("fusion_switch_array_reuse")


def available() -> bool:
    """The compiled handler is installed (else :func:`reusing_arrays` changes nothing)."""
    return _array_reuse is not None


@contextlib.contextmanager
def reusing_arrays(min_bytes: int | None = None) -> Iterator[None]:
    """Arrays of ``min_bytes`` (None: :data:`MIN_BYTES`) or more made in this block (this
    thread's context) reuse freed blocks; also a decorator, a block per call. Inside another
    block of the same context, the outer one's threshold holds. Blocks are kept only while such
    a block is open in the process; the last one to close frees them. Arrays made inside may
    outlive the block: they are freed as usual."""
    if _array_reuse is None or _open.get(False):
        yield
        return
    previous = token = None
    try:
        token = _open.set(True)
        previous = _array_reuse.install(MIN_BYTES if min_bytes is None else min_bytes, _hugepages())
        yield
    finally:
        if previous is not None:
            _array_reuse.restore(previous)
        if token is not None:
            with contextlib.suppress(ValueError):  # closed from another context (a GC'd generator)
                _open.reset(token)


def _hugepages() -> bool:
    """numpy advises huge pages for its large arrays (its own switch, on by default on Linux)."""
    try:
        from numpy._core.multiarray import _get_madvise_hugepage
    except ImportError:  # numpy 1.x
        try:
            from numpy.core.multiarray import _get_madvise_hugepage
        except ImportError:
            return False
    return bool(_get_madvise_hugepage())


def stats() -> dict[str, int]:
    """Bytes in use, kept and the high-water mark of the large blocks, and how many were
    reused or newly allocated (all zero without the compiled module)."""
    if _array_reuse is None:
        return dict.fromkeys(
            ("live", "kept", "high_water", "reused", "allocated", "live_blocks", "kept_blocks"),
            0,
        )
    return _array_reuse.stats()
