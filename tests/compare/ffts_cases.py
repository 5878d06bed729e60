"""FFTS+ dump folders for the oracle tests: ops dumped as auto-mode threads or manual-mode
``_lxslice`` files, with the slicing attribute CANN writes, and the odd names around them.

Every case is a fused Relu ``f`` (fusion-on) standing for the Relu ``b`` (fusion-off) of the
graph input ``X`` (4x2 unless said), its parts scaled by 1.01 so that the merged tensor shows
in every metric, plus a Neg ``n`` dumped plainly on both sides. :func:`build` writes a case's
folders and graphs and returns (on_dump, off_dump, on_graph, off_graph).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from fusion_switch.readers.dump_write import TensorSpec, write_dump
from handmade_graphs import desc, graph_json, op

STAMP = 1700000000000000
X = np.arange(1, 9, dtype=np.float32).reshape(4, 2) - 4.5
FULL = np.maximum(X, 0)


def ts(k: int = 0) -> int:
    return STAMP + k


def attr(mode: int, n: int, cut, tslices=None) -> list[tuple[str, str]]:
    """The slicing attribute: its JSON as CANN writes it."""
    value = {"threadMode": mode, "slice_instance_num": n, "outputCutList": cut}
    if tslices is not None:
        value["output_tensor_slice"] = tslices
    return [("ffts", json.dumps(value))]


def rng(lo: int, hi: int) -> dict:
    return {"lower": lo, "higher": hi}


def rows_of(k: int, n: int = 2) -> list:
    """Thread ``k``'s ranges of a (2n, 2) output cut in pieces of two rows."""
    return [[rng(2 * k, 2 * k + 2), rng(0, 2)]]


def _graphs(on_name="f", shape=(4, 2), op_type="Relu", outputs=None, originals=None):
    nd = {"shape": shape, "layout": "ND"}
    outs = outputs or [nd]
    off = graph_json(
        "g",
        op("data", "Data", 0, outputs=[desc(**nd)]),
        op("b", op_type, 1, ("data:0",), outputs=[desc(**o) for o in outs]),
        op("out", "NetOutput", 2, tuple(f"b:{i}" for i in range(len(outs)))),
    )
    on = graph_json(
        "g",
        op("data", "Data", 0, outputs=[desc(**nd)]),
        op(on_name, op_type, 1, ("data:0",), originals=originals or ["b"],
           outputs=[desc("b", i, **o) for i, o in enumerate(outs)]),
        op("out", "NetOutput", 2, tuple(f"{on_name}:{i}" for i in range(len(outs)))),
    )  # fmt: skip
    return on, off


def _chain_graphs(chain: list[tuple[str, str | None, str]], l1: str | None = None):
    """(on, off) graphs of the input through each op of ``chain`` in turn: (fusion-off name,
    the fusion-on op standing for it or None when it is not fused, type); fused ops carry
    ``l1`` as their L1 group."""
    nd = {"shape": (4, 2), "layout": "ND"}

    def built(fused: bool) -> dict:
        ops, before = [op("data", "Data", 0, outputs=[desc(**nd)])], "data"
        for number, (original, on_name, op_type) in enumerate(chain, 1):
            if fused and on_name is not None:
                ops.append(op(on_name, op_type, number, (f"{before}:0",), originals=[original],
                              l1=l1, outputs=[desc(original, 0, **nd)]))  # fmt: skip
                before = on_name
            else:
                ops.append(op(original, op_type, number, (f"{before}:0",), outputs=[desc(**nd)]))
                before = original
        ops.append(op("out", "NetOutput", len(chain) + 1, (f"{before}:0",)))
        return graph_json("g", *ops)

    return built(True), built(False)


def _write(root: Path, on, off, on_files, off_files) -> tuple[Path, Path, Path, Path]:
    """files: (file name, header op name, inputs, outputs, attrs); the plain ``n`` added."""
    for model in (on, off):
        ops = model["graph"][0]["op"]
        dims = tuple(ops[0]["output_desc"][0]["shape"]["dim"])
        ops.insert(len(ops) - 1, op("n", "Neg", 50, ("data:0",), outputs=[desc(shape=dims)]))
    ones = np.ones(tuple(on["graph"][0]["op"][0]["output_desc"][0]["shape"]["dim"]), np.float32)
    plain = (f"Neg.n.90.1.{ts(90)}", "n", [TensorSpec(ones)], [TensorSpec(-ones)], ())
    paths = []
    for side, model, files in (("on", on, [*on_files, plain]), ("off", off, [*off_files, plain])):
        folder = root / side
        folder.mkdir(parents=True)
        for name, header_name, inputs, outputs, attrs in files:
            write_dump(folder / name, header_name, inputs, outputs, attrs=attrs)
        graph = root / f"{side}.json"
        graph.write_text(json.dumps(model))
        paths += [folder, graph]
    return paths[0], paths[2], paths[1], paths[3]


def _off(data=FULL, x=X):
    return [(f"Relu.b.1.1.{ts()}", "b", [TensorSpec(x)], [TensorSpec(data)], ())]


def _manual(k: int, cut=((2, 1),), n=2, prefix="", tail=".4.{c}.0.0"):
    name = f"{prefix}f_lxslice{k}"
    rest = tail.format(c=10 + k)
    part = slice(2 * k, 2 * k + 2)
    return (f"Relu.{name}.{3 + k}.1.{ts(k)}{rest}", name, [TensorSpec(X[part])],
            [TensorSpec(FULL[part] * 1.01)], attr(0, n, [list(c) for c in cut]))  # fmt: skip


def _auto(cut=((2, 1),), header_full=False, stream=True, device=True, stamps=(0, 1), n=2,
          outputs=None, name="f", scale=1.01, with_attr=True):  # fmt: skip
    files = []
    for k in range(2):
        fields = ["Relu", name, "3", *(["1"] if stream else []), str(ts(stamps[k])), "4", "7"]
        fields += [str(k), *(["0"] if device else [])]
        part = FULL[2 * k : 2 * k + 2] * scale
        outs = outputs(k) if outputs else [TensorSpec(part, shape=(4, 2) if header_full else None)]
        slicing = attr(1, n, [list(c) for c in cut], [rows_of(0), rows_of(1)]) if with_attr else ()
        files.append((".".join(fields), name, [TensorSpec(X[2 * k : 2 * k + 2])], outs, slicing))
    return files


def manual_two_slices(root):
    return _write(root, *_graphs(), [_manual(0), _manual(1)], _off())


def manual_two_slices_graph_has_slice_ops(root):
    on, off = _graphs()
    ops = on["graph"][0]["op"]
    f0, f1 = (json.loads(json.dumps(ops[1])) for _ in range(2))
    f0["name"], f1["name"], f1["id"] = "f_lxslice0", "f_lxslice1", 2
    ops[1:2] = [f0, f1]
    ops[-1].update(id=3, input=["f_lxslice0:0", "f_lxslice1:0"])
    return _write(root, on, off, [_manual(0), _manual(1)], _off())


def manual_slices_5field_names(root):  # no task type field: msaccucmp's normal mode
    return _write(root, *_graphs(), [_manual(k, tail="") for k in range(2)], _off())


def manual_one_slice_only(root):
    return _write(root, *_graphs(), [_manual(0)], _off())


def manual_ten_slices(root):  # lxslice10 and 11 sort by their last digit
    x12 = np.arange(24, dtype=np.float32).reshape(12, 2) - 10
    f12 = np.maximum(x12, 0)
    files = [
        (f"Relu.f_lxslice{k}.{3 + k}.1.{ts(k)}.4.{10 + k}.0.0", f"f_lxslice{k}",
         [TensorSpec(x12[k : k + 1])], [TensorSpec(f12[k : k + 1] * (1 + 0.01 * k))],
         attr(0, 12, [[12, 1]]))
        for k in range(12)
    ]  # fmt: skip
    return _write(root, *_graphs(shape=(12, 2)), files, _off(f12, x12))


def manual_sgt_prefix_graph_plain(root):  # the prefix stays: graph op f finds no dump
    files = [_manual(k, prefix="partition0_sgt_graph_0_") for k in range(2)]
    return _write(root, *_graphs(), files, _off())


def manual_sgt_prefix_graph_prefixed(root):
    files = [_manual(k, prefix="partition0_sgt_graph_0_") for k in range(2)]
    return _write(root, *_graphs(on_name="partition0_sgt_graph_0_f"), files, _off())


def sgt_prefix_mid_lxslice_plain_file(root):  # dump key partition0_sgt_graph_0_a_b, op a_b
    files = [(f"Relu.partition0_sgt_graph_0_a_lxslice1_b.3.1.{ts()}", "x", [TensorSpec(X)],
              [TensorSpec(FULL * 1.01)], ())]  # fmt: skip
    return _write(root, *_graphs(on_name="a_lxslice1_b"), files, _off())


def auto_two_threads(root):
    return _write(root, *_graphs(), _auto(), _off())


def auto_two_threads_later_thread_older(root):  # ordered by thread, not by stamp
    return _write(root, *_graphs(), _auto(stamps=(1, 0)), _off())


def auto_no_device_field(root):  # fourth field from the end is the stamp: msaccucmp stops
    return _write(root, *_graphs(), _auto(device=False), _off())


def auto_no_stream_field(root):
    return _write(root, *_graphs(), _auto(stream=False), _off())


def auto_cut_axis_none(root):  # no cut axis: the last file by its fifth field, unmerged
    return _write(root, *_graphs(), _auto(cut=((1, 1),)), _off())


def auto_cut_none_no_stream_thread1_older(root):
    def whole(k):
        return [TensorSpec(FULL * (1.01 + 0.05 * k))]

    files = _auto(cut=((1, 1),), stream=False, stamps=(1, 0), outputs=whole)
    return _write(root, *_graphs(), files, _off())


def auto_thread_num_mismatch(root):  # slice_instance_num 3, two files: merged anyway
    return _write(root, *_graphs(), _auto(n=3), _off())


def auto_both_sides(root):
    return _write(root, *_graphs(), _auto(), _auto(name="b", scale=1.0))


def auto_header_full_shape(root):  # each header says (4, 2) and holds four elements
    return _write(root, *_graphs(), _auto(header_full=True), _off())


def auto_no_attr(root):  # msaccucmp stops (AttributeError): a header-only CSV
    return _write(root, *_graphs(), _auto(with_attr=False), _off())


def auto_no_attr_fusion_off(root):  # the same on the fusion-off side
    return _write(root, *_graphs(), _auto(), _auto(name="b", scale=1.0, with_attr=False))


def auto_single_thread_file(root):
    files = [(f"Relu.f.3.1.{ts()}.4.7.0.0", "f", [TensorSpec(X)], [TensorSpec(FULL * 1.01)],
              attr(1, 1, [[1, 1]], [[[rng(0, 4), rng(0, 2)]]]))]  # fmt: skip
    return _write(root, *_graphs(), files, _off())


def auto_axis1_cut(root):
    ranges = [[[rng(0, 4), rng(k, k + 1)]] for k in range(2)]
    files = [
        (f"Relu.f.3.1.{ts(k)}.4.7.{k}.0", "f", [TensorSpec(X[:, k : k + 1])],
         [TensorSpec(np.ascontiguousarray(FULL[:, k : k + 1]) * 1.01)],
         attr(1, 2, [[1, 2]], ranges))
        for k in range(2)
    ]  # fmt: skip
    return _write(root, *_graphs(), files, _off())


def auto_addresses(root):  # the merged tensor's Address cell is the first thread's
    files = [
        (f"Relu.f.3.1.{ts(k)}.4.7.{k}.0", "f",
         [TensorSpec(X[2 * k : 2 * k + 2], address=0x100 + k)],
         [TensorSpec(FULL[2 * k : 2 * k + 2] * 1.01, address=0x2000 + 16 * k)],
         attr(1, 2, [[2, 1]], [rows_of(0), rows_of(1)]))
        for k in range(2)
    ]  # fmt: skip
    return _write(root, *_graphs(), files, _off())


def auto_unordered_task_ids_manual_listing(root):
    x6 = np.arange(12, dtype=np.float32).reshape(6, 2) - 5
    f6 = np.maximum(x6, 0)
    ranges = [rows_of(k) for k in range(3)]
    files = [
        (f"Relu.f.3.1.{ts(5 - k)}.4.7.{k}.0", "f", [TensorSpec(x6[2 * k : 2 * k + 2])],
         [TensorSpec(f6[2 * k : 2 * k + 2] * (1 + 0.01 * k))], attr(1, 3, [[3, 1]], ranges))
        for k in (2, 0, 1)
    ]  # fmt: skip
    return _write(root, *_graphs(shape=(6, 2)), files, _off(f6, x6))


def auto_two_outputs_one_uncut(root):  # output 1 is not cut: thread 0's
    nd = {"shape": (4, 2), "layout": "ND"}
    on, off = _graphs(op_type="Split2", outputs=[nd, {"shape": (2,), "layout": "ND"}])
    second = np.array([5.0, 6.0], np.float32)
    ranges = [[*rows_of(k), [rng(0, 2)]] for k in range(2)]
    files = [
        (f"Split2.f.3.1.{ts(k)}.4.7.{k}.0", "f", [TensorSpec(X[2 * k : 2 * k + 2])],
         [TensorSpec(FULL[2 * k : 2 * k + 2] * 1.01), TensorSpec(second * (1 + k))],
         attr(1, 2, [[2, 1], [1]], ranges))
        for k in range(2)
    ]  # fmt: skip
    off_files = [(f"Split2.b.1.1.{ts()}", "b", [TensorSpec(X)],
                  [TensorSpec(FULL), TensorSpec(second)], ())]  # fmt: skip
    return _write(root, on, off, files, off_files)


def auto_chain_input_rows(root):  # h reads the merged f: its input row is not replaced
    on, off = _chain_graphs([("b", "f", "Relu"), ("c", "h", "Abs")])
    slicing = attr(1, 2, [[2, 1]], [rows_of(0), rows_of(1)])
    h_files = [
        (f"Abs.h.5.1.{ts(5 + k)}.4.8.{k}.0", "h", [TensorSpec(FULL[2 * k : 2 * k + 2] * 0.98)],
         [TensorSpec(FULL[2 * k : 2 * k + 2] * 0.9999)], slicing)
        for k in range(2)
    ]  # fmt: skip
    off_files = [
        (f"Relu.b.1.1.{ts()}", "b", [TensorSpec(X)], [TensorSpec(FULL)], ()),
        (f"Abs.c.2.1.{ts(1)}", "c", [TensorSpec(FULL)], [TensorSpec(FULL)], ()),
    ]
    return _write(root, on, off, _auto() + h_files, off_files)


def auto_input_uncut_differs_per_thread(root):  # the inputs compared are the first thread's
    on, off = _chain_graphs([("p", None, "Abs"), ("b", "f", "Relu")])
    a = np.abs(X)
    slicing = attr(1, 2, [[2, 1]], [rows_of(0), rows_of(1)])
    files = [
        (f"Relu.f.3.1.{ts(k)}.4.7.{k}.0", "f", [TensorSpec(a * (1 + 0.1 * k))],
         [TensorSpec(a[2 * k : 2 * k + 2] * 1.01)], slicing)
        for k in range(2)
    ]  # fmt: skip
    p = (f"Abs.p.2.1.{ts(50)}", "p", [TensorSpec(X)], [TensorSpec(a)], ())
    off_files = [p, (f"Relu.b.3.1.{ts(51)}", "b", [TensorSpec(a)], [TensorSpec(a)], ())]
    return _write(root, on, off, [*files, p], off_files)


def auto_mixed_with_normal_file(root):  # a plain file of the op too: the listing decides
    plain = (f"Relu.f.9.1.{ts(9)}", "f", [TensorSpec(X)], [TensorSpec(FULL * 1.2)], ())
    return _write(root, *_graphs(), [*_auto(), plain], _off())


def l1_group_ffts_op_without_stream(root):  # its stamp field is the task type: 0 there
    on, off = _chain_graphs([("a", "f", "Relu"), ("c", "h", "Abs")], l1="7")
    threads = _auto(stream=False, stamps=(5, 6))
    h = (f"Abs.h.5.1.{ts(1)}", "h", [TensorSpec(FULL)], [TensorSpec(FULL * 0.99)], ())
    off_files = [
        (f"Relu.a.1.1.{ts()}", "a", [TensorSpec(X)], [TensorSpec(FULL)], ()),
        (f"Abs.c.2.1.{ts(1)}", "c", [TensorSpec(FULL)], [TensorSpec(FULL)], ()),
    ]
    return _write(root, on, off, [*threads, h], off_files)


def six_field_name_stream7(root):  # task.stream.stamp.device, stream 7: msaccucmp stops
    files = [(f"Relu.f.7.1.{ts()}.0", "f", [TensorSpec(X)], [TensorSpec(FULL * 1.01)], ())]
    return _write(root, *_graphs(), files, _off())


def manual_parts_do_not_fit(root):  # headers say (4, 2), each holds four elements
    files = [_manual(k) for k in range(2)]
    files = [(*f[:3], [TensorSpec(f[3][0].data, shape=(4, 2))], f[4]) for f in files]
    return _write(root, *_graphs(), files, _off())


def manual_parts_do_not_fit_fusion_off(root):  # the same on the fusion-off side
    off = []
    for k in range(2):
        name, header, inputs, outputs, slicing = _manual(k)
        outputs = [TensorSpec(FULL[2 * k : 2 * k + 2], shape=(4, 2))]
        off.append((name.replace("f_lx", "b_lx"), header.replace("f_", "b_"), inputs, outputs,
                    slicing))  # fmt: skip
    return _write(root, *_graphs(), _auto(), off)


def auto_cut_list_shorter_than_outputs(root):  # output 1 has no entry: left out, no row
    nd = {"shape": (4, 2), "layout": "ND"}
    on, off = _graphs(op_type="Split2", outputs=[nd, {"shape": (2,), "layout": "ND"}])
    second = np.array([5.0, 6.0], np.float32)
    ranges = [[*rows_of(k), [rng(0, 2)]] for k in range(2)]
    files = [
        (f"Split2.f.3.1.{ts(k)}.4.7.{k}.0", "f", [TensorSpec(X[2 * k : 2 * k + 2])],
         [TensorSpec(FULL[2 * k : 2 * k + 2] * 1.01), TensorSpec(second)],
         attr(1, 2, [[2, 1]], ranges))
        for k in range(2)
    ]  # fmt: skip
    off_files = [(f"Split2.b.1.1.{ts()}", "b", [TensorSpec(X)],
                  [TensorSpec(FULL), TensorSpec(second)], ())]  # fmt: skip
    return _write(root, on, off, files, off_files)


def _bf16(values: np.ndarray) -> TensorSpec:
    stored = (np.ascontiguousarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return TensorSpec(stored.tobytes(), data_type=27, shape=values.shape)


def auto_float16_and_bfloat16(root):  # two outputs of two types, both cut on axis 0
    nd = {"shape": (4, 2), "layout": "ND"}
    on, off = _graphs(op_type="Split2", outputs=[nd, nd])
    ranges = [[*rows_of(k), *rows_of(k)] for k in range(2)]
    files = [
        (f"Split2.f.3.1.{ts(k)}.4.7.{k}.0", "f", [TensorSpec(X[2 * k : 2 * k + 2])],
         [TensorSpec((FULL[2 * k : 2 * k + 2] * 1.01).astype(np.float16)),
          _bf16(FULL[2 * k : 2 * k + 2] * 1.03)],
         attr(1, 2, [[2, 1], [2, 1]], ranges))
        for k in range(2)
    ]  # fmt: skip
    off_files = [(f"Split2.b.1.1.{ts()}", "b", [TensorSpec(X)],
                  [TensorSpec(FULL.astype(np.float16)), _bf16(FULL)], ())]  # fmt: skip
    return _write(root, on, off, files, off_files)


CASES = {
    name: value
    for name, value in dict(globals()).items()
    if callable(value) and name.startswith(("manual_", "auto_", "sgt_", "six_", "l1_"))
}
