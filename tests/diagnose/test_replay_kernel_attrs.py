"""The reference kernels get each op's own attributes, worked out once per op (issue 16: an op
is run for the noise floor, its sub-graph and every localisation variant)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
from fusion_switch.diagnose.kernels import lookup
from fusion_switch.diagnose.replay_kernels import Kernels, _accepted, kernel_attrs, kernel_kwargs
from fusion_switch.readers.graph import load_graph
from fusion_switch.synth.generator import generate_case


class _Op:
    """An op whose attributes count how often they are read."""

    def __init__(self, name: str, scale: float) -> None:
        self.name, self.type = name, "Scale"
        self.input_descs, self.output_descs = [], []
        self._attrs = {"scale": scale, "unused": 1}
        self.reads = 0

    @property
    def attrs(self) -> dict:
        self.reads += 1
        return self._attrs


def _scale(inputs, scale):  # takes only ``scale``: ``unused`` must not reach it
    return [inputs[0] * scale]


def _kernels() -> Kernels:
    return Kernels(lambda op_type: SimpleNamespace(fn=_scale) if op_type == "Scale" else None)


def test_an_op_run_again_reads_its_attributes_once():
    kernels, op = _kernels(), _Op("a", 2.0)
    for _ in range(3):
        (out,) = kernels.run(op, [np.ones(3)])
        assert out.tolist() == [2.0, 2.0, 2.0]
    assert op.reads == 1


def test_each_op_and_variant_gets_its_own_attributes():
    kernels = _kernels()
    ops = [_Op(f"op{i}", float(i)) for i in range(50)]
    for _ in range(2):
        for i, op in enumerate(ops):
            assert kernels.run(op, [np.ones(2)])[0].tolist() == [float(i)] * 2
    # variants made and dropped one after the other (a localisation): never another's values
    for i in range(50):
        assert kernels.run(_Op("variant", 10.0 + i), [np.ones(1)])[0].tolist() == [10.0 + i]


# --- only the attributes a kernel takes are converted (issue 16), with the same values -------

REAL_GRAPHS = sorted((Path(__file__).resolve().parents[1] / "data" / "real" / "graphs").iterdir())


def _graph_files(tmp_path_factory) -> list[Path]:
    case = generate_case(
        tmp_path_factory.mktemp("kw") / "case",
        n_ops=120,
        faults=["wrong_epsilon"],
        graph_text=False,
    )
    return [*REAL_GRAPHS, Path(case.on_graph), Path(case.off_graph)]


def _readable(path: Path):
    try:
        return load_graph(path)
    except Exception:  # a sample that is not a GE graph (its own tests cover it)
        return None


def test_kernel_kwargs_equal_every_attribute_converted_then_filtered(tmp_path_factory):
    checked = lazily = 0
    for path in _graph_files(tmp_path_factory):
        fresh, converted = _readable(path), _readable(path)
        if fresh is None:
            continue
        for op, twin in zip(fresh.ops, converted.ops, strict=True):
            spec = lookup(op.type)
            if spec is None:
                continue
            was_lazy = getattr(op, "_attrs", True) is None
            got = kernel_kwargs(spec.fn, op)
            assert got == _accepted(spec.fn, kernel_attrs(twin)), (path.name, op.name)
            checked += 1
            if was_lazy:
                lazily += 1
                # only what the kernel takes was converted: the op's whole map still is not
                assert op._attrs is None, (path.name, op.name)
    assert checked > 100 and lazily > 50, (checked, lazily)


def test_kernel_kwargs_of_an_op_given_converted_attributes_keeps_them():
    op = _Op("a", 3.0)
    assert kernel_kwargs(_scale, op) == {"scale": 3.0}
    assert kernel_kwargs(lambda inputs, **kw: None, op) == {"scale": 3.0, "unused": 1}


# --- the filter's layout reaches the kernel (a review, fortieth round) -----------------------


def _conv_op(filter_layout: str, filter_origin: str = "") -> SimpleNamespace:
    def desc(layout: str, origin: str = "") -> SimpleNamespace:
        return SimpleNamespace(layout=layout, origin_format=origin)

    return SimpleNamespace(
        name="conv",
        type="Conv2D",
        attrs={"strides": [1, 1, 1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1, 1, 1]},
        input_descs=[desc("NC1HWC0", "NCHW"), desc(filter_layout, filter_origin)],
        output_descs=[],
    )


def test_an_hwcn_filter_of_an_nchw_conv_is_read_as_hwcn():
    """A TensorFlow model run in NCHW keeps its filters HWCN (TensorFlow's only filter layout);
    the kernel took OIHW for every NCHW input, so such a conv failed its shape check (or, with
    shapes that happened to fit, was replayed with its weights' axes mixed up)."""
    rng = np.random.default_rng(0)
    x, oihw = rng.standard_normal((1, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))
    hwcn = np.transpose(oihw, (2, 3, 1, 0))
    op = _conv_op("FRACTAL_Z", "HWCN")
    assert kernel_attrs(op)["filter_format"] == "HWCN"
    (out,) = Kernels().run(op, [x, hwcn])
    (expected,) = Kernels().run(_conv_op("NCHW"), [x, oihw])
    assert out.shape == (1, 4, 6, 6)
    np.testing.assert_array_equal(out, expected)


def test_a_filter_in_a_device_layout_alone_leaves_the_kernel_s_default():
    assert "filter_format" not in kernel_attrs(_conv_op("FRACTAL_Z"))
    assert kernel_attrs(_conv_op("FRACTAL_Z", "NCHW"))["filter_format"] == "NCHW"
    plain = SimpleNamespace(**{**vars(_conv_op("HWCN")), "type": "Relu"})
    assert "filter_format" not in kernel_attrs(plain)  # only kernels that read weights


def test_an_absent_optional_input_before_a_given_one_is_refused():
    """A review (forty-first round): GE keeps an absent optional input's place ("" in the
    op's inputs); the replay's input list dropped it, so every later input moved one place:
    a BNInferenceD's bias was read as its scale, a Conv2D's offset_w added as its bias. A
    trailing absent input moves nothing and is replayed."""
    import pytest
    from fusion_switch.diagnose.replay_kernels import Unverifiable
    from replay_support import one_graph

    def desc(shape):
        return {"dtype": "DT_FLOAT", "layout": "NCHW", "shape": {"dim": list(shape)}}

    conv = {
        "type": "Conv2D",
        "attr": [
            {"key": "strides", "value": {"list": {"i": [1, 1, 1, 1]}}},
            {"key": "pads", "value": {"list": {"i": [0, 0, 0, 0]}}},
            {"key": "data_format", "value": {"s": "NCHW"}},
        ],
        "output_desc": [desc((1, 4, 3, 3))],
    }
    graph = one_graph(
        [
            {**conv, "name": "gap", "input": ["x:0", "w:0", "", "offset_w:0"]},
            {**conv, "name": "trailing", "input": ["x:0", "w:0", "b:0", ""]},
        ]
    )
    ops = {op.name: op for op in graph.ops}
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((1, 4, 3, 3)), rng.standard_normal((4, 4, 1, 1)), np.ones(4)
    (y,) = Kernels().run(ops["trailing"], [x, w, b])
    assert y.shape == (1, 4, 3, 3)
    with pytest.raises(Unverifiable, match="input 2"):
        Kernels().run(ops["gap"], [x, w, b])


def test_a_transposed_convolution_s_layout_is_its_data_input_s():
    """A review (forty-first round): ``format`` came from input 0, which for the non-D forms
    is ``input_size``, a constant whose NHWC label then overrode the data's NCHW."""
    from replay_support import one_graph

    def desc(shape, fmt):
        return {"dtype": "DT_FLOAT", "layout": fmt, "shape": {"dim": list(shape)}}

    expected = {
        # type: (inputs, the data input's place)
        "Conv2DBackpropInput": (["size:0", "w:0", "dy:0"], 2),
        "Conv2DTranspose": (["size:0", "x:0", "w:0"], 1),
        "Conv2DBackpropInputD": (["w:0", "dy:0"], 1),
        "Conv2DTransposeD": (["x:0", "w:0"], 0),
    }
    for op_type, (inputs, data) in expected.items():
        descs = [desc((4,), "NHWC") for _ in inputs]
        descs[data] = desc((1, 4, 3, 3), "NCHW")
        (op,) = one_graph(
            [{"name": "t", "type": op_type, "input": inputs, "input_desc": descs}]
        ).ops
        assert kernel_attrs(op)["format"] == "NCHW", op_type


def test_an_nhwc_tensor_read_as_nchw_evidence_is_refused_not_relabelled():
    """A review (forty-first round): the evidence of a tensor dumped in a device layout
    (NC1HWC0, NHWC) is read in NCHW order, while a TensorFlow graph's origin format (NHWC)
    told the kernel the other order: where its dimensions allowed the read, the kernel
    computed on transposed data without a word. A layout-sensitive kernel refuses it; one
    that is not (an elementwise op) is replayed as before."""
    import pytest
    from fusion_switch.diagnose.replay_kernels import Unverifiable
    from replay_support import one_graph

    def desc(shape, layout, origin):
        attr = [{"key": "origin_format", "value": {"s": origin}}]
        return {
            "dtype": "DT_FLOAT16",
            "layout": layout,
            "shape": {"dim": list(shape)},
            "attr": attr,
        }

    def op(op_type, layout, origin):
        (found,) = one_graph(
            [
                {
                    "name": "op",
                    "type": op_type,
                    "input": ["x:0", "b:0"],
                    "input_desc": [desc((1, 16, 16, 16), layout, origin), desc((16,), "ND", "ND")],
                    "attr": [{"key": "data_format", "value": {"s": origin}}],
                }
            ]
        ).ops
        return found

    x, b = np.zeros((1, 16, 16, 16)), np.arange(16.0)
    for layout in ("NC1HWC0", "NHWC"):
        with pytest.raises(Unverifiable, match="NHWC"):
            Kernels().run(op("BiasAdd", layout, "NHWC"), [x, b])
    assert Kernels().run(op("BiasAdd", "NC1HWC0", "NCHW"), [x, b])[0][0, :, 0, 0].tolist() == [
        *range(16)
    ]
    assert Kernels().run(op("BiasAdd", "ND", "NHWC"), [x, b])[0][0, 0, 0].tolist() == [
        *range(16)
    ]  # held as it was: in the origin layout
    assert Kernels().run(op("Add", "NC1HWC0", "NHWC"), [x, x])[0].shape == x.shape  # not sensitive


def test_an_op_handed_to_the_waiting_process_is_refused_alike():
    """What the parent measures is handed over as OpRead: it keeps what the refusals read (an
    absent input's place, the layout of each input), else the two processes would differ."""
    import pickle

    import pytest
    from fusion_switch.diagnose.replay_handed import OpRead
    from fusion_switch.diagnose.replay_kernels import Unverifiable
    from replay_support import one_graph

    def desc(shape, layout, origin):
        attr = [{"key": "origin_format", "value": {"s": origin}}]
        return {"dtype": "DT_FLOAT", "layout": layout, "shape": {"dim": list(shape)}, "attr": attr}

    ops = one_graph(
        [
            {"name": "gap", "type": "Add", "input": ["x:0", "", "y:0"]},
            {
                "name": "nhwc",
                "type": "Conv2DBackpropInput",
                "input": ["size:0", "w:0", "dy:0"],
                "input_desc": [
                    desc((4,), "ND", "ND"),
                    desc((1, 1, 1, 1), "NCHW", "NCHW"),
                    desc((1, 4, 4, 1), "NC1HWC0", "NHWC"),
                ],
            },
        ]
    ).ops
    for op in ops:
        handed = pickle.loads(pickle.dumps(OpRead(op, run=True)))
        for which in (op, handed):
            with pytest.raises(Unverifiable, match=r"absent|NHWC"):
                Kernels().run(which, [np.ones(4), np.ones((1, 1, 1, 1)), np.ones((1, 4, 4, 1))])
