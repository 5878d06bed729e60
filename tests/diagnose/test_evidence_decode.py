"""The replay's evidence decoded by the compiled kernel (``evidence._decoded_wide``) is the
array numpy's cast gave (``host_values`` then ``np.asarray(..., float64)``): the same bits
(NaN payloads included), shape, dtype and C order, for files held in memory and files read a
piece at a time, in every dtype and host layout it takes; everything else, and every damaged
file, is left to the numpy path, which reports it as before.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.compare.metrics import native
from fusion_switch.diagnose import evidence
from fusion_switch.diagnose.evidence import MissingEvidence, host_array
from fusion_switch.readers.dump import SMALL_FILE_BYTES, read_dump
from fusion_switch.readers.dump_write import TensorSpec, write_dump
from fusion_switch.readers.formats import FORMAT_CODES
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.skipif(native._kernel is None, reason="the kernel is not built here")

REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "dumps"
PIECE = 65536  # _stored.h: values decoded at a time


def through_numpy(dump, tensor, monkeypatch) -> np.ndarray:
    with monkeypatch.context() as patch:
        patch.setattr(evidence, "decode_wide", lambda *args: False)
        return host_array(dump, tensor)


def assert_same(decoded: np.ndarray, expected: np.ndarray) -> None:
    assert decoded.dtype == expected.dtype == np.float64
    assert decoded.shape == expected.shape
    assert decoded.flags.c_contiguous and expected.flags.c_contiguous
    assert decoded.flags.owndata and decoded.flags.writeable  # an array of its own
    assert decoded.tobytes() == expected.tobytes()  # bits: NaN payloads, -0.0


def every_half() -> np.ndarray:
    return np.arange(2**16, dtype=np.uint16).view(np.float16)  # signalling NaNs included


@pytest.mark.parametrize("dtype", ["<f4", "<f2", "i1", "u1"])
@pytest.mark.parametrize("n", [1, 7, PIECE - 1, PIECE + 3, 2 * PIECE + 77])
@pytest.mark.parametrize("layout", ["ND", "NCHW"])
def test_decoded_evidence_is_numpys_cast(tmp_path, monkeypatch, dtype, n, layout):
    rng = np.random.default_rng(n)
    values = (rng.standard_normal(n) * 300).astype(dtype)
    if dtype == "<f2":
        values[: min(n, 2**16)] = every_half()[: min(n, 2**16)]
    if dtype == "<f4":
        values[:4] = np.array([0x7F800001, 0xFFA00000, 0x7FC00001, 0x80000000], np.uint32).view(
            np.float32
        )[: min(n, 4)]
    shape = [n] if layout == "ND" else [1, n, 1, 1]
    spec = TensorSpec(values.reshape(shape), format=FORMAT_CODES[layout])
    prefix = TensorSpec(np.zeros(3, np.uint8))  # the tensor off any alignment
    dump = read_dump(write_dump(tmp_path / "op", "Op", [prefix], [spec]))
    tensor = dump.outputs[0]
    assert (dump._content is None) == (dump.file_size > SMALL_FILE_BYTES)
    decoded = evidence._decoded_wide(dump, tensor)
    assert decoded is not None, "the kernel turned down a tensor it decodes"
    assert_same(decoded, through_numpy(dump, tensor, monkeypatch))
    assert_same(host_array(dump, tensor), decoded)


def test_an_original_shape_reshapes_the_decoded_values(tmp_path, monkeypatch):
    values = np.arange(2 * 3 * 4 * 5, dtype=np.float16)
    spec = TensorSpec(values, format=FORMAT_CODES["ND"], original_shape=[2, 3, 4, 5])
    dump = read_dump(write_dump(tmp_path / "op", "Op", outputs=[spec]))
    decoded = evidence._decoded_wide(dump, dump.outputs[0])
    assert decoded is not None and decoded.shape == (2, 3, 4, 5)
    assert_same(decoded, through_numpy(dump, dump.outputs[0], monkeypatch))


@pytest.mark.parametrize(
    "spec",
    [
        TensorSpec(np.ones((1, 1, 2, 2, 16), np.float16), format=FORMAT_CODES["NC1HWC0"]),
        TensorSpec(np.ones((2, 2, 3, 3), np.float32), format=FORMAT_CODES["NHWC"]),
        TensorSpec(np.ones(10, np.float64)),
        TensorSpec(np.ones(10, np.int32)),
        TensorSpec(np.ones(10, np.float32), shape=[]),
        TensorSpec(np.ones(10, np.float32), shape=[0, 10]),
        TensorSpec(np.ones(10, np.float32), shape=[40]),  # needs 160 bytes, size gives 40
    ],
)
def test_what_the_kernel_does_not_decode_is_left_to_numpy(tmp_path, spec):
    dump = read_dump(write_dump(tmp_path / "op", "Op", outputs=[spec]))
    assert evidence._decoded_wide(dump, dump.outputs[0]) is None


def test_a_big_file_cut_short_after_its_header_is_reported_as_before(tmp_path, monkeypatch):
    values = np.ones(SMALL_FILE_BYTES, np.float16)  # 256 KiB: read a piece at a time
    path = write_dump(tmp_path / "op", "Op", outputs=[TensorSpec(values)])
    dump = read_dump(path)
    path.write_bytes(path.read_bytes()[:-100])
    assert evidence._decoded_wide(dump, dump.outputs[0]) is None
    with pytest.raises(MissingEvidence) as found:
        host_array(dump, dump.outputs[0])
    with pytest.raises(MissingEvidence) as numpys:
        through_numpy(dump, dump.outputs[0], monkeypatch)
    assert str(found.value) == str(numpys.value)


def test_the_real_dumps_take_the_numpy_path_and_give_what_they_gave(monkeypatch):
    # the shared samples' real dumps (exception dumps) hold DT_UNDEFINED bytes only: none is
    # the kernel's to decode, and host_array must answer for them exactly as before
    checked = 0
    for path in sorted(p for p in REAL.rglob("*") if p.is_file()):
        try:
            dump = read_dump(path)
        except Exception:
            continue
        for tensor in dump.tensors():
            assert evidence._decoded_wide(dump, tensor) is None
            try:
                found = host_array(dump, tensor)
            except MissingEvidence as missing:
                with pytest.raises(MissingEvidence, match=re.escape(str(missing))):
                    through_numpy(dump, tensor, monkeypatch)
            else:
                assert found.tobytes() == through_numpy(dump, tensor, monkeypatch).tobytes()
            checked += 1
    assert checked > 0, f"no real dump tensor under {REAL}"


@settings(max_examples=40, deadline=None)
@given(
    bits=st.lists(st.integers(0, 2**16 - 1), min_size=1, max_size=300),
    offset=st.integers(0, 3),
)
def test_any_float16_bits_at_any_offset(bits, offset):
    half = np.array(bits, np.uint16).view(np.float16)
    out = np.empty(half.size)
    native._kernel.decode(b"\x00" * offset + half.tobytes(), offset, "e", out)
    assert out.tobytes() == half.astype(np.float64).tobytes()
