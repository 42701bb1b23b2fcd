"""The kernel interface the graph-constant stages run on, declared once.

:mod:`runtime.graphblas` (``Mask``, ``Kernels``: numpy arrays, GraphBLAS on the host) and
:mod:`runtime.torch_kernels` (``TorchMask``, ``TorchKernels``: tensors on the batch's device)
implement the same methods; :class:`Mask` and :class:`Kernels` name that method set, generic in
the array type ``A`` (and the mask type ``M``), so that the stages are typed against the
interface and mypy proves both implementations satisfy it.

Leaf constructors (``from_sorted_coo``, ``identity``, ``empty``, ``full``) are static methods
whose arguments differ by backend (a device, the node labels), so they stay out of the
protocol: each backend's op table calls its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
import torch

A = TypeVar("A")
#: the array type of a batch's view: numpy on the host (GraphBLAS), tensors on a device (torch)
Array = TypeVar("Array", np.ndarray, torch.Tensor)
M = TypeVar("M", bound="Mask[Any]")
M_self = TypeVar("M_self")


class Mask(Protocol[A]):
    """A set of entries ``(i, j)`` of an ``n × n`` block-diagonal matrix, in an order its
    values follow."""

    n: int

    @property
    def nnz(self) -> int: ...

    @property
    def rows(self) -> A:
        """Row of each entry, as the mask is read."""
        ...

    @property
    def cols(self) -> A: ...

    @property
    def keys(self) -> A:
        """``row * n + col`` of each entry."""
        ...

    @property
    def row_counts(self) -> A: ...

    @property
    def max_row(self) -> int: ...

    def flip(self: M_self) -> M_self:
        """``Sᵀ`` aligned entry by entry with ``S``."""
        ...

    def is_symmetric(self, values: A) -> bool: ...


class Kernels(Protocol[A, M]):
    """The plan ops that are one kernel call, on masks ``M`` and values ``A`` (0-d: the same on
    every entry)."""

    def compose(self, a: M, b: M) -> M: ...

    def union(self, a: M, b: M) -> M: ...

    def sampled(self, a: M, va: A, b: M, vb: A, s: M) -> A: ...

    def lookup(self, src: M, values: A, dst: M) -> A: ...

    def csr(
        self, s: M, values: A, transpose: bool, *, symmetric: bool | None = None
    ) -> tuple[A, A, A, bool]: ...

    def eye(self, s: M) -> A: ...

    def propagate(self, s: M, values: A, h: A, transpose: bool) -> A: ...

    def row_sum(self, s: M, values: A) -> A: ...

    def diagonal(self, s: M, values: A) -> A: ...

    def readout(self, v: A) -> A: ...

    def mul(self, x: A, y: A) -> A: ...

    def add(self, x: A, y: A, sign: int = 1) -> A: ...

    def div(self, x: A, y: A) -> A: ...


__all__ = ["Kernels", "Mask"]


@dataclass
class GraphView(Generic[Array]):
    """What a constant stage needs of a batch, in its backend's arrays: sizes, offsets, the
    coalesced edges, labels. ``Graphs`` (numpy, :mod:`compiler.constants`) and ``TorchGraphs``
    (tensors on the batch's device, :mod:`compiler.torch_constants`) are this one type."""

    n: int
    ptr: Array  # (G + 1,) int64
    node_graph: Array  # (N,) int64
    rows: Array  # (E,) int64, sorted row-major without repeats
    cols: Array
    weight: Array | None  # (E,) or None for a 0/1 graph
    label: Callable[[int], str]
    symmetric: bool = False  # the edges and weights were checked symmetric (validation)
    indptr: Array | None = None  # (N + 1,) row pointers of the edges, where known

    @property
    def g(self) -> int:
        return int(self.ptr.shape[0]) - 1

    @property
    def device(self) -> Any:
        """The arrays' device (``"cpu"`` for numpy)."""
        return self.ptr.device

