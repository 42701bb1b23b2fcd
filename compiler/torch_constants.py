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
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import torch
from torch import Tensor

from matlang.compiler.interpret import SHARED, Kernel, PlanStage, Run, graph_of, scalar, size_of
from matlang.compiler.plan import Op, Step
from matlang.errors import EvaluationError
from matlang.functions import numeric
from matlang.runtime.kernels import GraphView, Kernels
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

#: The torch stage's view of a batch (tensors on its device): :class:`~runtime.kernels.GraphView`.
TorchGraphs = GraphView[Tensor]


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


def _torch_number(value: Fraction, gr: TorchGraphs) -> Tensor:
    """A scalar on every graph (:func:`~compiler.interpret.scalar`): int64 when whole, float64
    otherwise."""
    x = scalar(value, False)
    assert not isinstance(x, Fraction)
    dtype = torch.int64 if isinstance(x, int) else torch.float64
    return torch.full((gr.g,), x, dtype=dtype, device=gr.device)


def _param(run: Run, k: int, st: Step, a: list[Any]) -> Tensor:
    value = next(p.value for p in run.stage.plan.params if p.name == st.attr("name"))
    return _torch_number(value, run.graphs)


def _nonzero(run: Run, k: int, st: Step, a: list[Any]) -> Tensor:
    gr: TorchGraphs = run.graphs
    zero = a[0] == 0
    if run.stage.nonfinite == "error" and bool(zero.any()):
        g = int(torch.nonzero(zero.expand(gr.g) if is_iso(a[0]) else zero)[0, 0])
        raise EvaluationError(
            f"division by zero on graph {gr.label(g)}: the divisor {st.attr('what')} is 0"
        )
    return a[0]  # type: ignore[no-any-return]


def _diagonal_values(run: Run, k: int, st: Step, a: list[Any]) -> Tensor:
    return a[0].expand(run.graphs.n).to(run.graphs.device) if is_iso(a[0]) else a[0]


def _apply(run: Run, k: int, st: Step, a: list[Any]) -> Tensor:
    stage = run.stage
    assert isinstance(stage, TorchConstantStage)
    return stage._torch_apply(run.graphs, run.regs, st, a)


#: The torch stage's kernels (tensors on the batch's device, :class:`TorchMask`).
TORCH: dict[Op, Kernel] = {
    **SHARED,
    Op.EDGES: lambda run, k, st, a: TorchMask.from_sorted_coo(
        run.graphs.n, run.graphs.rows, run.graphs.cols
    ),
    Op.IDENTITY: lambda run, k, st, a: TorchMask.identity(run.graphs.n, run.graphs.device),
    Op.EMPTY: lambda run, k, st, a: TorchMask.empty(run.graphs.n, run.graphs.device),
    Op.FULL: lambda run, k, st, a: TorchMask.full(run.graphs.ptr, run.graphs.node_graph),
    Op.ONES: lambda run, k, st, a: iso(1),
    Op.CONST: lambda run, k, st, a: _torch_number(st.attr("value"), run.graphs),
    Op.PARAM: _param,
    Op.ADJACENCY: lambda run, k, st, a: iso(1) if run.graphs.weight is None else run.graphs.weight,
    Op.GATHER_ROW: lambda run, k, st, a: a[0] if is_iso(a[0]) else a[0].index_select(0, a[1].rows),
    Op.GATHER_COL: lambda run, k, st, a: a[0] if is_iso(a[0]) else a[0].index_select(0, a[1].cols),
    Op.BROADCAST_EDGE: lambda run, k, st, a: a[0].index_select(
        0, run.graphs.node_graph.index_select(0, a[1].rows)
    ),
    Op.SAMPLED: lambda run, k, st, a: run.kern.sampled(
        run.mask_of(st.args[0]), a[0], run.mask_of(st.args[1]), a[1], a[2]
    ),
    Op.BROADCAST: lambda run, k, st, a: a[0].index_select(0, run.graphs.node_graph),
    Op.AS_EDGE: _diagonal_values,
    Op.AS_NODE: _diagonal_values,
    Op.NEG: lambda run, k, st, a: torch.neg(a[0]),
    Op.NONZERO: _nonzero,
    Op.APPLY: _apply,
}


class TorchConstantStage(PlanStage):
    """A plan's graph constants in torch (see the module docstring): the loop of
    :class:`~compiler.interpret.PlanStage` with the table :data:`TORCH`; ``exact=True`` is
    refused (exact rationals are GraphBLAS's)."""

    table = TORCH
    name = "torch constant stage"

    def __init__(self, plan: Any, **options: Any) -> None:
        if options.get("exact"):
            raise refuse_exact("the torch constant stage")
        super().__init__(plan, **options)
        self._torch_functions: dict[int, Callable[..., Any]] = {}

    def kernels(self, graphs: TorchGraphs) -> Kernels[Tensor, TorchMask]:
        return TorchKernels(graphs.n, graphs.ptr, graphs.node_graph)

    def _torch_apply(self, gr: TorchGraphs, regs: dict[int, Any], st: Step, a: list[Any]) -> Any:
        fn_index = st.attr("fn")
        fn = self._torch_functions.get(fn_index)
        if fn is None:
            f = self.plan.functions[fn_index]
            fn = self._torch_functions[fn_index] = numeric(f.formula, f.symbols, "torch")
        size = size_of(st, regs, gr)
        exact = _exact_mod(self, fn_index, a, size)
        if exact is not None:  # integers past 2⁵³ under a Mod: the remainder on the host
            return exact.to(gr.device)
        args = [as_float(x.to(gr.device)).expand(size) for x in a]
        # floats past 2⁵³ refused (integers went exact above, as on GraphBLAS)
        self.check_mod(st, args, lambda at: gr.label(graph_of(regs, st, gr, at)))
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
                    f"{gr.label(graph_of(regs, st, gr, i))} (compile with nonfinite='keep' "
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


def _exact_mod(stage: Any, fn: int, a: list[Tensor], size: int) -> Tensor | None:
    """A function with ``Mod`` of int64 (exact) arguments that may pass 2⁵³, computed on
    Python integers as the GraphBLAS stage does (``None`` where floats would do)."""
    computable, bound = stage._exactness(fn)
    if bound is None or not computable or not a or any(x.is_floating_point() for x in a):
        return None
    if bound(max(float(maxabs(x)) for x in a)) < 2.0**53:
        return None
    import numpy as np

    from matlang.compiler.constants import shrink_exact

    host = [np.broadcast_to(x.cpu().numpy(), (size,)).astype(object) for x in a]
    f = stage.plan.functions[fn]
    out = np.asarray(numeric(f.formula, f.symbols, "exact")(*host), dtype=object)
    out = shrink_exact(np.broadcast_to(out, (size,)).copy())
    return torch.from_numpy(out if out.dtype != object else out.astype(np.float64))


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
