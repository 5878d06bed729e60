"""The kernel registry: :class:`KernelSpec`, :class:`KernelError` and the ``@kernel`` decorator.

A family module defines each kernel as a plain function ``fn(inputs, *, attr=default, ...)`` and
registers it under the GE op types it implements. The registered callable is a thin wrapper that
gives every kernel the same contract, so the replay never has to know a kernel's signature:

- inputs become float64 arrays (``None`` stays ``None``: an absent optional input);
- only the attributes the kernel declares are passed on; attributes whose decoded value is
  ``None`` (an empty ``AttrDef``) count as absent, so the GE default applies;
- ``format=`` (the op's host layout from its input desc) and ``filter_format=`` (the weight's,
  from the desc of the input a kernel registers as ``filter_input``) are passed when the
  kernel takes them;
- outputs come back as a list of float64 arrays;
- BLAS runs with one thread during the call (:mod:`.blas`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .blas import one_thread

Kernel = Callable[..., list[np.ndarray]]


class KernelError(ValueError):
    """An attribute value or input shape the kernel cannot handle; the message names it."""


@dataclass(frozen=True)
class KernelSpec:
    op_type: str
    fn: Kernel
    attrs: tuple[str, ...]
    layout_sensitive: bool
    filter_input: int | None = None  # the input holding the weights (its layout: filter_format)
    data_input: int = 0  # the input whose layout is ``format`` (not input_size, a constant)


REGISTRY: dict[str, KernelSpec] = {}
LAYOUT_KEYWORDS = frozenset(("format", "filter_format"))  # from the op's descs, not attributes


def _wrap(fn: Callable[..., Sequence[np.ndarray]], attrs: tuple[str, ...]) -> Kernel:
    params = inspect.signature(fn).parameters
    accepted = set(attrs) | (LAYOUT_KEYWORDS & set(params))
    missing = [a for a in attrs if a not in params]
    if missing:
        raise TypeError(f"{fn.__name__} declares attributes it does not take: {missing}")

    def call(inputs: Sequence[np.ndarray | None], **given: object) -> list[np.ndarray]:
        arrays = [None if a is None else np.asarray(a, dtype=np.float64) for a in inputs]
        kwargs = {k: v for k, v in given.items() if k in accepted and v is not None}
        with one_thread():
            return [np.asarray(out, dtype=np.float64) for out in fn(arrays, **kwargs)]

    call.__name__ = fn.__name__
    call.__doc__ = fn.__doc__
    call.__wrapped__ = fn  # type: ignore[attr-defined]
    return call


def kernel(
    *op_types: str,
    attrs: tuple[str, ...] = (),
    layout_sensitive: bool = False,
    filter_input: int | None = None,
    data_input: int = 0,
) -> Callable[[Callable[..., Sequence[np.ndarray]]], Callable[..., Sequence[np.ndarray]]]:
    """Register ``fn`` for each of ``op_types`` (GE type names)."""

    def register(fn: Callable[..., Sequence[np.ndarray]]) -> Callable[..., Sequence[np.ndarray]]:
        wrapped = _wrap(fn, tuple(attrs))
        for op_type in op_types:
            if op_type in REGISTRY:
                raise ValueError(f"kernel for {op_type} registered twice")
            REGISTRY[op_type] = KernelSpec(
                op_type, wrapped, tuple(attrs), layout_sensitive, filter_input, data_input
            )
        return fn

    return register
