"""The kernel reads a tensor still in its dump file a piece at a time (``compare/_stored.h``).

From a file descriptor, ``metrics_raw`` must give the cells it gives from the same bytes in
memory, and those must be ``metrics``' on the values numpy's cast and align's transposes give:
at sizes on both sides of its pieces, in every stored dtype, unaligned, through both device
layouts (rows of C0 values never split across pieces, C0 larger than a piece included). A file
that ends before its tensor, or a descriptor that cannot be read, is an error, never cells.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.compare.metrics import native

from tests.portable_build import build_extension

PIECE = 65536  # _stored.h's PIECE: floats decoded at a time
CHUNK = native.BUFFER_SIZE
SIZES = [1, PIECE - 1, PIECE, PIECE + 1, 2 * PIECE + 13]


def values(n: int, dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    with np.errstate(all="ignore"):
        x = (rng.standard_normal(n) * 40).astype(dtype)
        y = (x.astype(np.float32) + rng.standard_normal(n).astype(np.float32)).astype(dtype)
    return x, y


def stored_file(folder: Path, *parts: bytes) -> tuple[Path, list[int]]:
    """The parts one after the other in one file, after a byte that puts them off alignment;
    their offsets."""
    path = folder / "stored.bin"
    offsets, at = [], 1
    for part in parts:
        offsets.append(at)
        at += len(part)
    path.write_bytes(b"\x07" + b"".join(parts))
    return path, offsets


def from_memory_and_file(kernel, path: Path, offsets, chars, n, blocks=()) -> tuple[str, str]:
    data = path.read_bytes()
    scratch = np.empty(native.scratch_length(n), np.float32)
    rest = (n, scratch, n == 1, CHUNK, np.log, *blocks)
    with np.errstate(all="ignore"):
        memory = kernel.metrics_raw(data, offsets[0], chars[0], data, offsets[1], chars[1], *rest)
        fd = os.open(path, os.O_RDONLY)
        try:
            read = kernel.metrics_raw(fd, offsets[0], chars[0], fd, offsets[1], chars[1], *rest)
        finally:
            os.close(fd)
    return repr(memory), repr(read)


def measured(x: np.ndarray, y: np.ndarray) -> str:
    """metrics() on the float32 values (numpy's cast)."""
    x32, y32 = x.astype(np.float32).reshape(-1), y.astype(np.float32).reshape(-1)
    scratch = np.empty(native.scratch_length(x32.size), np.float32)
    with np.errstate(all="ignore"):
        return repr(native._kernel.metrics(x32, y32, scratch, x32.size == 1, CHUNK, np.log))


@pytest.mark.parametrize("dtype", ["<f4", "<f2", "i1", "u1"])
@pytest.mark.parametrize("n", SIZES)
def test_a_plain_tensor_read_from_its_file_gives_the_cells_of_its_bytes(tmp_path, dtype, n):
    x, y = values(n, dtype, seed=n)
    path, offsets = stored_file(tmp_path, x.tobytes(), y.tobytes())
    memory, read = from_memory_and_file(native._kernel, path, offsets, (x.dtype.char,) * 2, n)
    assert read == memory == measured(x, y)


def nc1hwc0(n, c1, h, w, c0, c, dtype, seed):
    device, _ = values(n * c1 * h * w * c0, dtype, seed)
    nchw = device.reshape(n, c1, h, w, c0).transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)
    kept = np.ascontiguousarray(nchw[:, :c])
    _, y = values(kept.size, dtype, seed + 1)
    return device, kept, y


@pytest.mark.parametrize("dtype", ["<f4", "<f2", "i1"])
@pytest.mark.parametrize(
    "blocks",
    [
        (2, 3, 33, 35, 16, 41),  # 110,880 stored: the second piece ends mid-tensor
        (1, 2, 40, 50, 32, 50),  # C0 = 32
        (3, 2, 29, 31, 24, 40),  # C0 = 24 does not divide a piece: pieces of whole rows
        (1, 1, 1, 1, PIECE + 5, PIECE + 1),  # one row longer than a piece
    ],
)
def test_nc1hwc0_blocks_read_from_the_file_give_the_cells_of_the_nchw_values(
    tmp_path, dtype, blocks
):
    device, kept, y = nc1hwc0(*blocks, dtype=dtype, seed=sum(blocks))
    path, offsets = stored_file(tmp_path, device.tobytes(), y.tobytes())
    chars = (device.dtype.char, y.dtype.char)
    memory, read = from_memory_and_file(native._kernel, path, offsets, chars, y.size, (blocks,))
    assert read == memory == measured(kept, y)


@pytest.mark.parametrize("dtype", ["<f4", "<f2"])
@pytest.mark.parametrize(
    "tiles",
    [
        (2, 5, 40, 16, 16, 630, 70),  # 102,400 stored, rows and columns cut
        (1, 9, 30, 16, 16, 480, 144),  # no cut, three pieces
    ],
)
def test_fractal_nz_tiles_read_from_the_file_give_the_cells_of_the_nd_values(
    tmp_path, dtype, tiles
):
    batch, c1, n1, n0, c0, rows, cols = tiles
    device, _ = values(batch * c1 * n1 * n0 * c0, dtype, seed=rows)
    nd = device.reshape(batch, c1, n1, n0, c0).transpose(0, 2, 3, 1, 4)
    kept = np.ascontiguousarray(nd.reshape(batch, n1 * n0, c1 * c0)[:, :rows, :cols])
    _, y = values(kept.size, dtype, seed=cols)
    path, offsets = stored_file(tmp_path, device.tobytes(), y.tobytes())
    chars = (device.dtype.char, y.dtype.char)
    memory, read = from_memory_and_file(native._kernel, path, offsets, chars, y.size, (tiles,))
    assert read == memory == measured(kept, y)


def test_a_file_that_ends_before_its_tensor_or_cannot_be_read_is_an_error(tmp_path):
    n = 3 * PIECE
    x, y = values(n, "<f4", seed=5)
    path, offsets = stored_file(tmp_path, x.tobytes(), y.tobytes()[:-4])  # one value short
    scratch = np.empty(native.scratch_length(n), np.float32)
    rest = (n, scratch, False, CHUNK, np.log)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(ValueError, match="ends before the tensor"):
            native._kernel.metrics_raw(fd, offsets[0], "f", fd, offsets[1], "f", *rest)
    finally:
        os.close(fd)
    with pytest.raises(OSError):  # a closed descriptor: EBADF
        native._kernel.metrics_raw(fd, offsets[0], "f", fd, offsets[1], "f", *rest)
    with pytest.raises(ValueError, match="not a file descriptor"):
        native._kernel.metrics_raw(-3, 0, "f", x, 0, "f", *rest)


def test_threads_reading_files_at_once_each_get_their_own_cells(tmp_path):
    # the GIL is let go while the files are read; the kept decoding buffer is lent to one call
    # at a time and the others decode into their own
    cases = []
    for k in range(4):
        folder = tmp_path / str(k)
        folder.mkdir()
        x, y = values(PIECE * (k + 1) + k, "<f2", seed=k)
        cases.append((stored_file(folder, x.tobytes(), y.tobytes()), x.size, measured(x, y)))
    found: dict[int, list[str]] = {k: [] for k in range(len(cases))}

    def run(k: int) -> None:
        (path, offsets), n, _ = cases[k]
        for _ in range(6):
            found[k].append(from_memory_and_file(native._kernel, path, offsets, "ee", n)[1])

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(cases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for k, (_, _, expected) in enumerate(cases):
        assert found[k] == [expected] * 6


@pytest.fixture(scope="module")
def portable_kernel(tmp_path_factory):
    return build_extension(
        Path(native.__file__).parents[1] / "_kernel.c",
        "_kernel",
        ["-O3", "-ffp-contract=off", "-fno-trapping-math", "-DKERNEL_NO_CLONES"],
        tmp_path_factory.mktemp("portable_files"),
    )


def test_the_portable_build_reads_files_the_same(tmp_path, portable_kernel):
    blocks = (2, 3, 33, 35, 16, 41)
    device, _, y = nc1hwc0(*blocks, dtype="<f2", seed=11)
    path, offsets = stored_file(tmp_path, device.tobytes(), y.tobytes())
    built = from_memory_and_file(native._kernel, path, offsets, "ee", y.size, (blocks,))
    portable = from_memory_and_file(portable_kernel, path, offsets, "ee", y.size, (blocks,))
    assert portable == built


def test_the_decoding_buffer_is_let_go_when_the_comparison_ends(tmp_path):
    # kept between calls, it holds the largest pair read so far (two float32 vectors): through a
    # real-sized run's replay after the comparison it was 51 MB of a 300 MiB budget's peak
    from fusion_switch.compare.workers import release_work_buffers

    n = 2 * PIECE + 13
    x, y = values(n, "<f2", seed=9)
    path, offsets = stored_file(tmp_path, x.tobytes(), y.tobytes())
    from_memory_and_file(native._kernel, path, offsets, "ee", n)
    assert native._kernel.held() >= 2 * n * 4
    release_work_buffers()  # what run_compare calls as its comparison ends
    assert native._kernel.held() == 0
    from_memory_and_file(native._kernel, path, offsets, "ee", n)  # a new one when needed
    assert native._kernel.held() >= 2 * n * 4
