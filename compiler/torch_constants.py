"""The graph-constant stage in torch, on the batch's device (:mod:`runtime.torch_kernels`).

:class:`TorchConstantStage` runs the same steps as :class:`~compiler.constants.ConstantStage`
(which runs them on GraphBLAS, on the host) with torch kernels on the device the batch lives
on: a batch on a GPU gets ``A ⊙ A²``, ``diag(A³)``, degrees and traces without a copy to the
host and back. Integral sentences are exact (int64, or float64 below ``2⁵³`` for the CSR
products, with the same overflow bounds as GraphBLAS); functions and divisions are float64, as
on GraphBLAS with ``exact=False``. Exact rationals (``evaluate_sparse``) stay on GraphBLAS.

Which stage a module uses is its ``constants`` option (``"auto"``: torch for a batch on a GPU,
GraphBLAS on the CPU).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from matlang.compiler.constants import ConstantStage
from matlang.compiler.plan import EDGE, GRAPH, MASK, NODE, Step
from matlang.errors import EvaluationError, MatlangError
from matlang.functions import numeric
from matlang.runtime.kernels import Kernels
from matlang.runtime.torch_kernels import (
    TorchKernels,
    TorchMask,
    as_float,
    integral,
    is_iso,
    iso,
    maxabs,
    refuse_exact,
)


@dataclass
class TorchGraphs:
    """What the torch stage needs of a batch: sizes, offsets, coalesced edges (tensors on the
    batch's device), labels."""

    n: int
    ptr: Tensor  # (G + 1,) int64
    node_graph: Tensor  # (N,) int64
    rows: Tensor  # (E,) int64, sorted row-major without repeats
    cols: Tensor
    weight: Tensor | None  # (E,) int64 or float64, None for a 0/1 graph
    label: Callable[[int], str]
    symmetric: bool = False

    @property
    def g(self) -> int:
        return int(self.ptr.numel() - 1)

    @property
    def device(self) -> torch.device:
        return self.ptr.device


def torch_graphs_of(batch: Any, edges: Tensor, weight: Tensor | None) -> TorchGraphs:
    """The torch stage's view of a :class:`runtime.batch.Batch` with prepared edges: nothing
    leaves the device but one look at whether the weights are integers."""
    w = None
    if weight is not None:
        w = weight.detach().to(torch.float64)
        if w.numel() == 0 or (
            bool(torch.equal(w, torch.round(w))) and float(w.abs().max()) < 2**53
        ):
            w = w.to(torch.int64)
    return TorchGraphs(
        batch.num_nodes,
        batch.ptr.to(torch.int64),
        batch.batch.to(torch.int64),
        edges[0],
        edges[1],
        w,
        batch.graph_label,
        symmetric=bool(getattr(batch, "known_symmetric", lambda: False)()),
    )


class TorchConstantStage(ConstantStage):
    """A plan's graph constants in torch (see the module docstring); ``exact=True`` is refused
    (exact rationals are GraphBLAS's)."""

    def __init__(self, plan: Any, **options: Any) -> None:
        if options.get("exact"):
            raise refuse_exact("the torch constant stage")
        super().__init__(plan, **options)
        self._torch_functions: dict[int, Callable[..., Any]] = {}

    def operator(  # type: ignore[override]
        self, graphs: TorchGraphs, regs: Mapping[int, Any], mask: int, values: int,
        transpose: bool,
    ) -> tuple[Tensor, Tensor, Tensor, bool]:
        """The CSR tensors of the matrix ``values`` on ``mask`` (transposed) and whether it is
        symmetric."""
        kern: Kernels[Tensor, TorchMask] = TorchKernels(graphs.n, graphs.ptr, graphs.node_graph)
        m, v = regs[mask], regs[values]
        known = (
            graphs.symmetric
            and self.plan.steps[mask].op == "edges"
            and (is_iso(v) or v is graphs.weight)
        )
        return kern.csr(m, v, transpose, symmetric=True if known else None)

    def run(  # type: ignore[override]
        self, graphs: TorchGraphs, *, per_graph: bool = False
    ) -> tuple[dict[int, Any], dict[int, Any]]:
        """Every exported register (masks as :class:`~runtime.torch_kernels.TorchMask`, values
        as tensors, 0-d where the same on every entry) and the entries of every register."""
        if per_graph:
            raise MatlangError("the torch constant stage keeps no per-graph counts")
        kern = TorchKernels(graphs.n, graphs.ptr, graphs.node_graph)
        regs: dict[int, Any] = {}
        sizes: dict[int, Any] = {}
        for k, st in enumerate(self.plan.steps):
            if not self.const[k]:
                continue
            regs[k] = v = self._torch_step(kern, graphs, k, st, regs)
            if isinstance(v, TorchMask):
                sizes[k] = v.nnz
            elif st.kind == MASK:  # pragma: no cover - mask steps give masks
                sizes[k] = 0
            else:
                sizes[k] = _size(regs, st, graphs)
            for r in self._frees[k]:
                regs.pop(r, None)
        return {k: regs[k] for k in self.exports if k in regs}, sizes

    def _torch_step(
        self, kern: TorchKernels, gr: TorchGraphs, k: int, st: Step, regs: dict[int, Any]
    ) -> Any:
        op, a = st.op, [regs[x] for x in st.args]
        shared = self._kernel_op(kern, st, a, regs)
        if shared is not NotImplemented:
            return shared
        n, dev = gr.n, gr.device
        if op == "edges":
            return TorchMask.from_sorted_coo(n, gr.rows, gr.cols)
        if op == "identity":
            return TorchMask.identity(n, dev)
        if op == "empty":
            return TorchMask.empty(n, dev)
        if op == "full":
            return TorchMask.full(gr.ptr, gr.node_graph)
        if op == "ones":
            return iso(1)
        if op == "const":
            return _number(st.attr("value"), gr)
        if op == "param":
            value = next(p.value for p in self.plan.params if p.name == st.attr("name"))
            return _number(value, gr)
        if op == "adjacency":
            return iso(1) if gr.weight is None else gr.weight
        if op == "gather_row":
            return a[0] if is_iso(a[0]) else a[0].index_select(0, a[1].rows)
        if op == "gather_col":
            return a[0] if is_iso(a[0]) else a[0].index_select(0, a[1].cols)
        if op == "broadcast_edge":
            return a[0].index_select(0, gr.node_graph.index_select(0, a[1].rows))
        if op == "sampled":
            ma, mb = self._mask(regs, st.args[0]), self._mask(regs, st.args[1])
            return kern.sampled(ma, a[0], mb, a[1], a[2])
        if op == "broadcast":
            return a[0].index_select(0, gr.node_graph)
        if op in ("as_edge", "as_node"):
            return a[0].expand(n).to(dev) if is_iso(a[0]) else a[0]
        if op == "neg":
            return torch.neg(a[0])
        if op == "nonzero":
            zero = a[0] == 0
            if self.nonfinite == "error" and bool(zero.any()):
                g = int(torch.nonzero(zero.expand(gr.g) if is_iso(a[0]) else zero)[0, 0])
                raise EvaluationError(
                    f"division by zero on graph {gr.label(g)}: the divisor {st.attr('what')} is 0"
                )
            return a[0]
        if op == "apply":
            return self._torch_apply(gr, regs, st, a)
        raise MatlangError(f"no graph-constant kernel for plan op {op!r}")  # pragma: no cover

    def _torch_apply(self, gr: TorchGraphs, regs: dict[int, Any], st: Step, a: list[Any]) -> Any:
        fn_index = st.attr("fn")
        fn = self._torch_functions.get(fn_index)
        if fn is None:
            f = self.plan.functions[fn_index]
            fn = self._torch_functions[fn_index] = numeric(f.formula, f.symbols, "torch")
        size = _size(regs, st, gr)
        args = [as_float(x.to(gr.device)).expand(size) for x in a]
        # float64 here: past 2⁵³ refused (the GraphBLAS stage computes integers exactly)
        way = "compile with constants='graphblas' (exact on integers) or "
        self.check_mod(st, args, lambda at: gr.label(_graph_of(regs, st, gr, at)), way)
        out = fn(*args)
        if not isinstance(out, Tensor):
            out = torch.full((size,), float(out), dtype=torch.float64, device=gr.device)
        out = as_float(out).expand(size).contiguous()
        if self.nonfinite == "error" and size:
            bad = ~torch.isfinite(out)
            if bool(bad.any()):
                i = int(torch.nonzero(bad)[0, 0])
                name = self.plan.functions[fn_index].name
                raise EvaluationError(
                    f"{name}(...) in {st.note or 'the sentence'} is {float(out[i])} on graph "
                    f"{gr.label(_graph_of(regs, st, gr, i))} (compile with nonfinite='keep' "
                    "to keep inf/nan)"
                )
        return out

    def check_mod(
        self, st: Step, args: list[Tensor], graph: Any, way: str = "", dtype: Any = None
    ) -> None:
        """Raise where the function of ``st`` has a ``Mod`` whose argument may pass the
        integers ``dtype`` (default: the arguments' own) holds exactly (2⁵³ in float64, 2²⁴ in
        float32), computed on ``args`` (``(n,)`` or ``(n, d)``): a remainder there is noise.
        ``graph(row)``: the label of the graph of an argument's row. One read of the largest
        argument, only for functions with ``Mod``."""
        bound = self._exactness(st.attr("fn"))[1]
        if bound is None or not args or args[0].numel() == 0:
            return
        dtype = args[0].dtype if dtype is None else dtype
        if not dtype.is_floating_point:
            return
        tops = [x.detach().abs().max() for x in args]
        top = float(torch.stack(tops).max())
        bits = round(-math.log2(torch.finfo(dtype).eps)) + 1  # 53 for float64, 24 for float32
        if bound(top) < 2.0**bits:
            return
        x = next(x for x, t in zip(args, tops, strict=True) if float(t) == top)
        at = int(x.detach().abs().argmax()) // (x.shape[1] if x.dim() == 2 else 1)
        raise self._mod_error(st, top, graph(at), way, str(dtype).removeprefix("torch."), bits)


def _size(regs: dict[int, Any], st: Step, gr: TorchGraphs) -> int:
    if st.kind == GRAPH:
        return gr.g
    if st.kind == NODE:
        return gr.n
    assert st.kind == EDGE and st.mask is not None
    return int(regs[st.mask].nnz)


def _graph_of(regs: dict[int, Any], st: Step, gr: TorchGraphs, i: int) -> int:
    if st.kind == GRAPH:
        return i
    if st.kind == NODE:
        return int(gr.node_graph[i])
    assert st.mask is not None
    return int(gr.node_graph[regs[st.mask].rows[i]])


def _number(value: Any, gr: TorchGraphs) -> Tensor:
    """A scalar on every graph: int64 when whole, float64 otherwise."""
    if value.denominator == 1 and abs(value) < 2**62:
        return torch.full((gr.g,), int(value), dtype=torch.int64, device=gr.device)
    return torch.full((gr.g,), float(value), dtype=torch.float64, device=gr.device)


def to_module_tensor(value: Any, size: int, dtype: torch.dtype, device: Any) -> Tensor:
    """A torch stage value as the interpreter's register: a mask as its ``(2, M)`` index, a
    value as ``dtype`` (an iso value spelled out), warning where float32 rounds a count."""
    from matlang.compiler.constants import _warn_float32

    if isinstance(value, TorchMask):
        return torch.stack([value.rows, value.cols])
    if is_iso(value):
        _warn_float32(abs(value.item()), dtype)
        return torch.full((size,), float(value.item()), dtype=dtype, device=device)
    if integral(value) and dtype == torch.float32 and value.numel():
        _warn_float32(maxabs(value), dtype)
    return value.to(device=device, dtype=dtype)


__all__ = ["TorchConstantStage", "TorchGraphs", "to_module_tensor", "torch_graphs_of"]
