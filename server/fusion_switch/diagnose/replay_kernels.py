"""How the replay runs a reference kernel (:mod:`.kernels`) for one original op of a graph: the
kernel looked up once per type, the op's attributes converted to the keyword arguments that
kernel takes, view ops (Reshape and the like) given their output desc's shape, the dtype each
output is rounded to. A missing or failing kernel makes the op :class:`Unverifiable`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

_INTERNAL_ATTRS = {"pass_name", "pass_name_ub", "fusion_scope", "group_op_name"}


class Unverifiable(Exception):
    def __init__(self, reason: str, missing: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.missing = missing  # a dump that was needed could not be read


def kernel_registry() -> tuple[Callable[[str], Any] | None, type[Exception]]:
    """(lookup by op type, the kernels' error type), or (None, Exception) without them."""
    try:
        from .kernels import KernelError, lookup
    except ImportError:
        return None, Exception
    return lookup, KernelError


def kernel_attrs(op: Any) -> dict[str, Any]:
    """The op's attributes as a kernel reads them, plus ``format`` (its input's layout)."""
    attrs = {k: v for k, v in (op.attrs or {}).items() if _for_kernels(k) and v is not None}
    return _with_format(op, attrs)


def _for_kernels(name: str) -> bool:
    """An attribute a kernel may get: not an internal (``_``-prefixed or fusion) one."""
    return not name.startswith("_") and name not in _INTERNAL_ATTRS


def _with_format(op: Any, attrs: dict[str, Any]) -> dict[str, Any]:
    """``attrs`` with ``format`` (the layout of the input its kernel reads the data from: the
    first, or the one after ``input_size`` of a transposed convolution) unless it has one, and
    with ``filter_format`` (the host layout of the input its kernel reads the weights from)
    unless it has one: a TensorFlow NCHW model keeps HWCN filters, where the kernel would
    otherwise take OIHW for an NCHW input."""
    descs = op.input_descs
    spec = _spec(op.type)
    data = getattr(spec, "data_input", 0)
    if data < len(descs) and "format" not in attrs:
        fmt = descs[data].origin_format or descs[data].layout
        if fmt:
            attrs["format"] = fmt
    position = getattr(spec, "filter_input", None)
    if position is not None and position < len(descs) and "filter_format" not in attrs:
        desc = descs[position]
        fmt = desc.origin_format or desc.layout
        if fmt in _FILTER_LAYOUTS:  # a device layout (FRACTAL_Z) says nothing of the host's
            attrs["filter_format"] = fmt
    return attrs


_FILTER_LAYOUTS = frozenset({"NCHW", "NHWC", "HWCN"})


def _spec(op_type: str) -> Any:
    """The kernel registered for ``op_type`` (None: none), for the inputs it reads its data
    (``data_input``) and weights (``filter_input``) from."""
    lookup, _ = kernel_registry()
    return lookup(op_type) if lookup is not None else None


_ACCEPTED: dict[Any, frozenset[str] | None] = {}


def _accepted_names(fn: Callable) -> frozenset[str] | None:
    """The keyword names ``fn`` takes (None when it takes ``**kwargs``: any)."""
    if fn not in _ACCEPTED:
        try:
            params = inspect.signature(fn).parameters.values()
            var = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
            _ACCEPTED[fn] = None if var else frozenset(p.name for p in params)
        except (TypeError, ValueError):
            _ACCEPTED[fn] = None
    return _ACCEPTED[fn]


def _accepted(fn: Callable, attrs: dict[str, Any]) -> dict[str, Any]:
    """The attributes ``fn`` takes (all of them when it takes ``**kwargs``)."""
    names = _accepted_names(fn)
    return attrs if names is None else {k: v for k, v in attrs.items() if k in names}


def kernel_kwargs(fn: Callable, op: Any) -> dict[str, Any]:
    """``_accepted(fn, kernel_attrs(op))``, converting only the attributes ``fn`` takes when
    ``op`` is a graph's op (issue 16: a member has ~10 attributes, its kernel reads 2-4, and
    converting them all was a tenth of measuring a sub-graph)."""
    names = _accepted_names(fn)
    raw = getattr(op, "raw_attrs", None)
    if names is None or type(raw) is not dict or getattr(op, "_attrs", True) is not None:
        return _accepted(fn, kernel_attrs(op))  # any kwargs, or converted already: no saving
    attrs = {}
    for name in names:
        if name in raw and _for_kernels(name):
            value = op.attr(name)
            if value is not None:
                attrs[name] = value
    return _with_format(op, attrs) if "format" in names else attrs


class Kernels:
    """Looks kernels up once per type; raises Unverifiable when one is missing or fails."""

    def __init__(self, lookup: Callable[[str], Any] | None = None) -> None:
        found, self.error_type = kernel_registry()
        self.lookup = lookup or found
        self._specs: dict[str, Any] = {}
        # the attributes each op's kernel takes, by op (kept alive: the id stays its own); an op
        # is run for the noise floor, its sub-graph and any localisation variant
        self._attrs: dict[int, tuple[Any, dict[str, Any]]] = {}

    @property
    def available(self) -> bool:
        return self.lookup is not None

    def run(self, op: Any, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
        if op.type in RESHAPE_TYPES and inputs and inputs[0] is not None:
            return [_reshaped(op, inputs[0])]
        if self.lookup is None:
            raise Unverifiable("no kernel registry installed")
        if op.type not in self._specs:
            self._specs[op.type] = self.lookup(op.type)
        spec = self._specs[op.type]
        if spec is None:
            raise Unverifiable(f"no kernel for type {op.type}")
        known = self._attrs.get(id(op))
        if known is None or known[0] is not op:
            attrs = kernel_kwargs(spec.fn, op)
            known = self._attrs[id(op)] = (op, attrs, _gap(op), _layout_refused(spec, op, attrs))
        attrs = known[1]
        if known[2] is not None:
            raise Unverifiable(
                f"kernel {op.type} ({op.name}): input {known[2]} is absent and a later one is "
                "given: the inputs are not replayed in their places"
            )
        if known[3]:
            raise Unverifiable(f"kernel {op.type} ({op.name}): {known[3]}")
        try:
            with np.errstate(all="ignore"):
                outs = spec.fn(inputs, **attrs)
        except self.error_type as error:
            raise Unverifiable(f"kernel {op.type} ({op.name}): {error}") from None
        except (TypeError, ValueError, IndexError, KeyError) as error:
            raise Unverifiable(f"kernel {op.type} ({op.name}) failed: {error}") from None
        return [np.asarray(o, dtype=np.float64) for o in outs]


# what the evidence store reads a device layout's tensor as (readers.layout.HOST_FORMAT)
_READ_AS = {"NC1HWC0": "NCHW", "NHWC": "NCHW", "HWCN": "NCHW", "FRACTAL_Z": "NCHW"}


def _layout_refused(spec: Any, op: Any, attrs: dict) -> str:
    """Why a layout-sensitive kernel told ``format`` NHWC (a TensorFlow graph's origin format)
    cannot take its input's evidence, which the store reads in NCHW order from the device
    layout the desc names (a review: where the dimensions allowed it, the kernel computed on
    transposed data without a word). Empty when it can."""
    told = attrs.get("format")
    if not getattr(spec, "layout_sensitive", False) or not isinstance(told, str):
        return ""
    data = getattr(spec, "data_input", 0)
    descs = op.input_descs or []
    device = descs[data].layout if data < len(descs) else None
    read_as = _READ_AS.get(str(device).upper())
    if told.upper() != "NHWC" or read_as is None:
        return ""
    return (
        f"its input is dumped as {device}, which is read in {read_as} order, and its format is "
        "NHWC: a model laid out as NHWC is not replayed"
    )


def _gap(op: Any) -> int | None:
    """The place of an absent optional input ("" in GE's inputs) that a given one follows:
    the replay's inputs skip it, so the later ones would move one place (a review: a
    BNInferenceD's bias read as its scale). None when there is none."""
    inputs = [ref for ref in getattr(op, "inputs", ()) if not ref.endswith(":-1")]
    absent = [i for i, ref in enumerate(inputs) if not ref]
    return absent[0] if absent and any(inputs[absent[0] + 1 :]) else None


RESHAPE_TYPES = frozenset({"Reshape", "Squeeze", "Unsqueeze", "ExpandDims", "Flatten", "FlattenV2"})


def _reshaped(op: Any, value: np.ndarray) -> np.ndarray:
    """A view op's output: its input with the output desc's (original) shape."""
    desc = op.output_descs[0] if op.output_descs else None
    shape = (desc.origin_shape or desc.shape) if desc is not None else None
    if not shape or int(np.prod(shape)) != value.size:
        raise Unverifiable(f"{op.type} {op.name}: output shape unknown or does not fit")
    return np.asarray(value, dtype=np.float64).reshape(tuple(shape))


def out_dtype(op: Any, index: int) -> str:
    descs = op.output_descs
    if index < len(descs):
        return descs[index].dtype or descs[index].origin_data_type or "DT_FLOAT"
    return "DT_FLOAT"


def out_formats(op: Any, index: int) -> list[str]:
    """What output ``index``'s host (framework) layout may be, most telling first: its
    original format (``_datadump_origin_format`` before ``origin_format``, as msaccucmp reads
    them; a device format may leak in there), then its layout."""
    if index >= len(op.output_descs):
        return []
    desc = op.output_descs[index]
    return [desc.origin_format, getattr(desc, "layout", "")]
