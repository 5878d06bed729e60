"""The compiled kernel (``compare/_kernel.c``): loading it, proving it on first use, calling it.

One call gives every metric's value and cell for a pair (numpy's summation order and float32
arithmetic, ``'{:.6f}'`` cells, numpy's log). It is used only when it was built, is not switched
off (``FUSION_SWITCH_METRICS=numpy``) and, on first use, gave the numpy path's exact results on
awkward vectors, from float32 vectors and from file bytes (:func:`kernel_in_use`). Entry points:
:func:`kernel_cells` (two float32 vectors), :func:`cells_from_bytes` (two tensors still in their
dump files' bytes, decoded by the kernel; the measure stage's direct path) and
:func:`widen_half` (numpy's float16 cast).
"""

from __future__ import annotations

import math
import os

import numpy as np

from ...readers.dump import MAX_DIMS, DumpFile, DumpTensor
from .cells import (
    SCALAR_MESSAGE,
    MetricCells,
    MetricResult,
    cosine_zero_message,
    kl_inf_message,
)
from .fused import SCRATCH, fused_metrics
from .selection import ALGORITHMS, POSITION

try:
    from .. import _kernel  # built by pip install from compare/_kernel.c; optional
except ImportError:  # pragma: no cover - exercised on machines without a C compiler
    _kernel = None

BUFFER_SIZE = np.getbufsize()  # numpy casts float32 to float64 for a sum in chunks of this
# the kernel logs KL's ratios a segment of at most this many elements at a time
KL_SEGMENT = getattr(_kernel, "KL_SEGMENT", 0)
_KERNEL_STATE: list[bool] = []  # [] not yet checked, [True] agreed with numpy, [False] not


NUMPY_ONLY_VARIABLE = "FUSION_SWITCH_METRICS"
"""Set to ``numpy`` to compute every metric with numpy alone (to rule the kernel out)."""


def kernel_in_use() -> bool:
    """Whether metrics come from the compiled kernel: it was built, it is not switched off by
    ``FUSION_SWITCH_METRICS=numpy``, and on first use it gave the numpy path's exact cells on
    :func:`kernel_probe_vectors`, from float32 vectors and from file bytes (``metrics_raw``)."""
    if not _KERNEL_STATE:
        usable = _kernel is not None and not kernel_switched_off()
        _KERNEL_STATE.append(usable and _kernel_agrees_with_numpy())
    return _KERNEL_STATE[0]


def kernel_switched_off() -> bool:
    """``FUSION_SWITCH_METRICS=numpy`` is set in this process's environment. Read once: the
    replay asks for each tensor it decodes (~8,000 at 5,000 ops), and a look-up in os.environ
    was 3% of its time; the tests that switch the kernel off start a process to do it."""
    if not _SWITCHED_OFF:
        _SWITCHED_OFF.append(os.environ.get(NUMPY_ONLY_VARIABLE, "").lower() == "numpy")
    return _SWITCHED_OFF[0]


_SWITCHED_OFF: list[bool] = []


def kernel_probe_vectors() -> list[tuple[np.ndarray, np.ndarray]]:
    """Pairs on which summation order shows: every leaf and split size of numpy's pairwise sum,
    more than one float64 cast chunk and KL segment, magnitudes from 1e-30 to 1e30, zeros,
    infinities, NaN. Scrambled values, not numpy.random: importing it would add some 4 MB to
    every process."""
    pairs = []
    sizes = (1, 5, 8, 9, 16, 127, 128, 129, 300, 1000, BUFFER_SIZE + 37, KL_SEGMENT + 37)
    for n in sizes:
        for decades in (4, 30) if n < KL_SEGMENT else (4,):  # finite sums; overflowing ones
            x = _scrambled(n, decades, seed=n).astype(np.float32)
            y = (x * (1 + _scrambled(n, 0, seed=n + 1) * 1e-3)).astype(np.float32)
            pairs.append((x, y))
    x = _scrambled(200, 1, seed=7).astype(np.float32)
    y = x.copy()
    y[::7] = 0
    y[3] = np.inf
    pairs.append((x, y))
    y = x.copy()
    y[11] = np.nan
    pairs.append((x, y))
    pairs.append((np.zeros(40, np.float32), np.full(40, 3, np.float32)))
    return pairs


def _scrambled(n: int, decades: int, seed: int) -> np.ndarray:
    """``n`` float64 values in (-1, 1) times 10**k, k spread over -decades..decades: the
    fractional part of a large multiple of sin, a classic hash, varies in every digit."""
    index = np.arange(n, dtype=np.float64) + seed
    mantissa = np.modf(np.sin(index * 12.9898) * 43758.5453)[0]
    exponent = (np.arange(n) * 7919 + seed) % (2 * decades + 1) - decades
    return mantissa * 10.0**exponent


def _kernel_agrees_with_numpy() -> bool:
    vectors = kernel_probe_vectors()  # made once: ~4 ms, on the way to the first comparison
    for x, y in vectors:
        try:
            native = kernel_metrics(list(ALGORITHMS), x, y, False, "L", "R")
        except Exception:
            return False
        numpy_path = fused_metrics(list(ALGORITHMS), x, y, False, "L", "R")
        # repr: NaN equals NaN, -0.0 differs from 0.0
        if any(repr(native[name]) != repr(numpy_path[name]) for name in ALGORITHMS):
            return False
    # the bytes are decoded the same way at any length: the longest pair adds nothing there
    return all(_raw_agrees(x, y) for x, y in vectors if x.size <= BUFFER_SIZE + 37)


def _raw_agrees(x: np.ndarray, y: np.ndarray) -> bool:
    """``metrics_raw`` on the bytes of x and y (unaligned) as float32, float16 and int8, and on
    x laid out in NC1HWC0 blocks and in FRACTAL_NZ tiles, gives ``metrics``' result on the
    values as numpy casts them."""
    n = x.size
    with np.errstate(all="ignore"):
        for dtype in ("<f4", "<f2", "i1"):
            left, right = x.astype(dtype), y.astype(dtype)
            data = b"?" + left.tobytes() + right.tobytes()
            rest = (np.empty(scratch_length(n), np.float32), n == 1, BUFFER_SIZE, np.log)
            raw = _kernel.metrics_raw(  # type: ignore[union-attr]
                data, 1, left.dtype.char, data, 1 + left.nbytes, right.dtype.char, n, *rest
            )
            cast = _kernel.metrics(left.astype(np.float32), right.astype(np.float32), *rest)  # type: ignore[union-attr]
            if repr(raw) != repr(cast):
                return False
        if n % 60 == 0:  # N, C, H, W = n/60, 3, 4, 5 in C0 = 16 blocks, 13 channels of padding
            blocks = np.zeros((n // 60, 1, 4, 5, 16), np.float32)
            blocks[:, 0, :, :, :3] = x.reshape(-1, 3, 4, 5).transpose(0, 2, 3, 1)
            shape = (n // 60, 1, 4, 5, 16, 3)
            raw = _kernel.metrics_raw(blocks, 0, "f", y, 0, "f", n, *rest, shape)  # type: ignore[union-attr]
            if repr(raw) != repr(_kernel.metrics(x, y, *rest)):  # type: ignore[union-attr]
                return False
        if n % 30 == 0:  # B, R, C = n/30, 5, 6 in FRACTAL_NZ tiles of 4 x 4: padded to 8 x 8
            tiles = np.zeros((n // 30, 2, 2, 4, 4), np.float32)
            nd = np.zeros((n // 30, 8, 8), np.float32)
            nd[:, :5, :6] = x.reshape(-1, 5, 6)
            tiles[:] = nd.reshape(-1, 2, 4, 2, 4).transpose(0, 3, 1, 2, 4)
            shape = (n // 30, 2, 2, 4, 4, 5, 6)
            raw = _kernel.metrics_raw(tiles, 0, "f", y, 0, "f", n, *rest, shape)  # type: ignore[union-attr]
            return repr(raw) == repr(_kernel.metrics(x, y, *rest))  # type: ignore[union-attr]
    return True


def scratch_length(n: int) -> int:
    """The float32 elements of the kernel's scratch for vectors of ``n``: KL's ratios and
    masses of one segment (see ``_kernel.c``)."""
    return 2 * min(n, KL_SEGMENT)


def kernel_cells(x, y, scalar: bool, lpath: str, rpath: str, scratch=None) -> tuple:
    """Every metric from one kernel call: values and cells in :data:`ALGORITHMS` order, the
    messages by metric name, and the StandardDeviation pair (see ``_kernel.c``)."""
    assert _kernel is not None
    if scratch is None:  # KL's ratios and masses, a segment at a time
        scratch = SCRATCH.one(scratch_length(x.size))
    with np.errstate(all="ignore"):
        values, texts, cosine_note, kl_inf, std = _kernel.metrics(
            x, y, scratch, scalar, BUFFER_SIZE, np.log
        )
    return values, texts, kernel_messages(cosine_note, kl_inf, lpath, rpath), std


def kernel_messages(cosine_note: int, kl_inf: bool, lpath: str, rpath: str) -> dict[str, str]:
    messages = {}
    if cosine_note:
        messages["CosineSimilarity"] = (
            SCALAR_MESSAGE
            if cosine_note == 1
            else cosine_zero_message(lpath if cosine_note == 2 else rpath)
        )
    if kl_inf:
        messages["KullbackLeiblerDivergence"] = kl_inf_message(rpath)
    return messages


def kernel_metrics(
    names: list[str], x: np.ndarray, y: np.ndarray, scalar: bool, lpath: str, rpath: str
) -> dict[str, MetricResult]:
    """:func:`.fused.fused_metrics`' results, from the compiled kernel (:func:`_kernel_cells`)."""
    values, texts, messages, std = kernel_cells(x, y, scalar, lpath, rpath)
    out = {}
    for name in names:
        at = POSITION[name]
        pair = std if name == "StandardDeviation" else None
        out[name] = MetricResult(name, values[at], texts[at], messages.get(name, ""), pair)
    return out


_ALL = list(ALGORITHMS)
_NO_MESSAGES: dict[str, str] = {}


def chosen(names: list[str], values, texts, messages: dict[str, str], std) -> MetricCells:
    """The kernel's ten values and cells (:data:`ALGORITHMS` order) narrowed to ``names``."""
    if names is _ALL or names == _ALL:  # the kernel returns exactly ten of each
        chosen_values = dict(zip(ALGORITHMS, values, strict=False))
        chosen_texts = dict(zip(ALGORITHMS, texts, strict=False))
    else:
        chosen_values = {name: values[POSITION[name]] for name in names}
        chosen_texts = {name: texts[POSITION[name]] for name in names}
    notes = [messages[name] for name in names if name in messages] if messages else []
    # the pair is kept whatever -alg chose: the verdict reads NaN or infinity in one run only
    # from it (thresholds.non_finite_on_one_side); the CSV writes the chosen cells only
    return MetricCells(chosen_values, chosen_texts, notes, std)


def cells_from_bytes(
    names: list[str],
    left: tuple,
    right: tuple,
    n: int,
    scalar: bool,
    blocks: tuple[int, ...] | None = None,
) -> MetricCells:
    """The selected metrics' cells of two flat tensors as their dump files store them, decoded
    by the kernel (``_kernel.metrics_raw``, held to ``metrics`` by the first-use probe):
    ``left`` and ``right`` are ``(bytes or file descriptor, offset, dtype char 'f' 'e' 'b' or
    'B', path)``, n elements each, or the left NC1HWC0 ``blocks`` ``(N, C1, H, W, C0, C)``
    converted to n NCHW elements (FRACTAL_NZ tiles likewise). Only when
    :func:`kernel_in_use`; ValueError (or TypeError, BufferError) for bytes it cannot read,
    OSError for a file it cannot read. numpy's error state is the caller's to set (the kernel
    calls np.log)."""
    scratch = SCRATCH.one(scratch_length(n))
    if blocks is None:
        values, texts, note, kl_inf, std = _kernel.metrics_raw(  # type: ignore[union-attr]
            left[0], left[1], left[2], right[0], right[1], right[2], n, scratch, scalar,
            BUFFER_SIZE, np.log,
        )  # fmt: skip
    else:
        values, texts, note, kl_inf, std = _kernel.metrics_raw(  # type: ignore[union-attr]
            left[0], left[1], left[2], right[0], right[1], right[2], n, scratch, scalar,
            BUFFER_SIZE, np.log, blocks,
        )  # fmt: skip
    messages = kernel_messages(note, kl_inf, left[3], right[3]) if note or kl_inf else _NO_MESSAGES
    return chosen(names, values, texts, messages, std)


STORED_KINDS = frozenset("febB")  # the stored dtypes the kernel decodes: float32/16, (u)int8
# data type code -> (dtype character, DataType cell, item size), None when not one of those;
# filled on first use (a DumpTensor's dtype property decodes the code on every call)
_STORED_DTYPES: dict[int, tuple[str, str, int] | None] = {}


def stored_dtype(tensor: DumpTensor) -> tuple[str, str, int] | None:
    """``(dtype character, DataType cell, item size)`` of a tensor the kernel decodes."""
    code = tensor.data_type
    try:
        return _STORED_DTYPES[code]
    except KeyError:
        pass
    info = tensor.dtype
    found = None
    if info.plain and info.little.char in STORED_KINDS:
        little = info.little
        found = (little.char, str(little), little.itemsize)
    _STORED_DTYPES[code] = found
    return found


def stored_tensor(dump: DumpFile, tensor: DumpTensor) -> tuple | None:
    """``(bytes, offset, dtype character, DataType cell, element count)`` of a tensor whose
    values :meth:`DumpFile.array` would read without a problem, in a dtype the kernel decodes
    (:func:`cells_from_bytes` and :func:`decode_wide` read it); else None. ``bytes`` is None for
    a file not held in memory (the offset is then the file's): :func:`stored_source` opens it."""
    shape = tensor.shape
    if dump.npy_dtype is not None or not shape or tensor.data_type == 0:
        return None
    kind = stored_dtype(tensor)
    if kind is None or len(shape) > MAX_DIMS or 0 in shape:
        return None
    count = math.prod(shape)
    needed = count * kind[2]
    if count <= 0 or needed > tensor.size:
        return None
    content = dump._content
    end = tensor.data_offset + needed
    if end > (dump.file_size if content is None else len(content)):
        return None
    return content, tensor.data_offset, kind[0], kind[1], count


def stored_source(dump: DumpFile, content: bytes | None, opened: list[int]) -> bytes | int:
    """What the kernel reads a tensor from: the bytes held with the header, or the file itself
    (opened here, its descriptor added to ``opened`` for the caller to close), which the kernel
    reads a piece at a time so that a real activation is never whole in memory twice."""
    if content is not None:
        return content
    fd = os.open(dump.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    opened.append(fd)
    return fd


def decode_wide(source: bytes | int, offset: int, char: str, out: np.ndarray) -> bool:
    """Fill the C-contiguous float64 vector ``out`` with the values stored at ``offset`` of
    ``source`` (bytes, or a file descriptor the kernel reads a piece at a time), numpy dtype
    character ``char`` ('f', 'e', 'b' or 'B'), each exact as numpy casts it; False, nothing
    done, without the compiled kernel. ValueError or OSError as :func:`cells_from_bytes`."""
    if _kernel is None or kernel_switched_off():
        return False
    _kernel.decode(source, offset, char, out)
    return True


def release_kernel_buffer() -> None:
    """Free the decoding buffer the kernel keeps between calls (sized to the largest tensor
    pair read from files: tens of MB on real activations), as the comparison ends."""
    if _kernel is not None:
        _kernel.release()


def widen_half(values: np.ndarray, buffer: np.ndarray) -> np.ndarray | None:
    """Contiguous float16 ``values`` widened into ``buffer`` by the kernel (the same bits as
    numpy's cast, several times faster), flattened; None when the kernel is not built."""
    if _kernel is None:
        return None
    out = buffer[: values.size]
    _kernel.widen_half(values.reshape(-1), out)
    return out
