"""A compiled module's graph-constant stages: which runs, memo on the batch, registers.

:class:`ConstantStages` owns a :class:`~compiler.module.CompiledModule`'s two constant stages
and what their runs need (the per-graph cache, the memo's name, the propagate steps whose
operator is prebuilt). :meth:`ConstantStages.load` gives a batch's constants from the batch's
memo, or runs a stage (:meth:`ConstantStages.registers`): GraphBLAS on the host
(:mod:`compiler.constants`, per-graph cache included) or torch on the batch's device
(:mod:`compiler.torch_constants`). What comes back is what the interpreter reads: the exported
registers as tensors on the batch's device (masks as ``(2, M)`` indices), the ``(shape,
bytes)`` of every constant register for the run statistics, and the operators of the propagate
steps whose matrix is a constant (CSR, built once per batch, reused by forward and backward).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from matlang.compiler.constant_cache import CachedStage, run_stage
from matlang.compiler.constants import ConstantStage, graphs_of, to_torch
from matlang.compiler.plan import MASK, Op, Plan
from matlang.compiler.torch_constants import TorchConstantStage, to_module_tensor, torch_graphs_of
from matlang.runtime.masks import prepared_edges
from matlang.runtime.operators import Operator
from matlang.runtime.preprocess import PreprocessCache

Registers = tuple[dict[int, Tensor], list[Any], dict[Any, Operator]]


def _tensor(a: Any, device: Any) -> Tensor:
    """An int64 numpy array as a tensor: shared when writable (the stage's own arrays), copied
    when read-only (a view into GraphBLAS's memory)."""
    if a.flags.writeable:
        return torch.from_numpy(a).to(device)
    return torch.tensor(a, device=device)


def _stats(plan: Plan, sizes: dict[int, int], dtype: torch.dtype) -> list[Any]:
    item = dtype.itemsize
    stats: list[Any] = [None] * len(plan.steps)
    for k, size in sizes.items():
        mask = plan.steps[k].kind == MASK
        stats[k] = ((2, size), 16 * size) if mask else ((size,), item * size)
    return stats


class ConstantStages:
    """A compiled module's graph-constant stages (see the module docstring).

    Args:
        plan: the module's plan.
        trainable_functions, nonfinite: the module's options (the stages' too).
        cache: the per-graph cache of the GraphBLAS stage's constants, or ``None``.
        key: the name of what the constants depend on besides the graph (the plan and every
            option): the memo's and the cache's key.
    """

    def __init__(
        self,
        plan: Plan,
        *,
        trainable_functions: bool,
        nonfinite: str,
        cache: PreprocessCache | None,
        key: str,
    ) -> None:
        self.plan = plan
        self.cache = cache
        self.key = key
        self.graphblas = ConstantStage(
            plan, trainable_functions=trainable_functions, nonfinite=nonfinite
        )
        self.torch = TorchConstantStage(
            plan, trainable_functions=trainable_functions, nonfinite=nonfinite
        )
        self.const = self.graphblas.const
        # propagate steps whose matrix is a graph constant: an operator prebuilt per batch
        self.operators = {
            k: (st.args[0], st.args[1], bool(st.attr("transpose")))
            for k, st in enumerate(plan.steps)
            if st.op == Op.PROPAGATE and self.const[st.args[1]] and not self.const[k]
        }
        self.per_graph = CachedStage.worth(self.graphblas)
        self._names: dict[Any, str] = {}

    def load(
        self,
        ctx: Any,
        where: str,
        ran: Callable[[str], None],
        check: Callable[[Registers], Registers] | None = None,
    ) -> Registers:
        """The constants of ``ctx.batch`` by the stage ``where``, remembered on the batch
        (``ran(where)`` when the stage runs, not served from the memo; ``check``: what the
        registers go through once computed, before they are remembered)."""
        # the memo's name, spelled once per setting (a dtype's or device's name costs µs)
        parts = (self.key, where, ctx.dtype, ctx.device, ctx.backend)
        names = self._names
        key = names.get(parts) or names.setdefault(parts, ".".join(map(str, parts)))

        def run() -> Registers:
            ran(where)
            out = self.registers(ctx, where)
            return out if check is None else check(out)

        out: Registers = ctx.batch.cached(key, run, fingerprint=ctx.fingerprint)
        return out

    def registers(self, ctx: Any, where: str) -> Registers:
        """The graph constants on ``ctx.batch`` by the stage ``where`` (``"graphblas"`` or
        ``"torch"``), see the module docstring."""
        fp = ctx.fingerprint
        edges, weight = ctx.batch.cached(
            "compiled.edges", lambda: prepared_edges(ctx.batch, fingerprint=fp), fingerprint=fp
        )
        if where == "torch":
            return self._torch_registers(ctx, edges, weight)
        graphs = graphs_of(ctx.batch, edges, weight, fingerprint=fp)
        wanted = set(self.operators.values())
        if self.cache is not None and self.per_graph and graphs.g > 0:
            options = (self.key, str(ctx.dtype), str(ctx.device), ctx.backend)
            cached = CachedStage(self.graphblas, wanted, self.cache, (("module", options),))
            result = cached.run(graphs)
        else:
            result = run_stage(self.graphblas, graphs, wanted)
        operators: dict[Any, Operator] = {}
        for (mask, vals, transpose), csr in result.operators.items():
            rowptr, col, w, symmetric = csr
            operators[(mask, vals, transpose)] = Operator(
                _tensor(rowptr, ctx.device),
                _tensor(col, ctx.device),
                torch.tensor(w, device=ctx.device, dtype=ctx.dtype),
                ctx.n,
                symmetric=symmetric,
            )
        stats = _stats(self.plan, result.sizes, ctx.dtype)
        host = ctx.device == _HOST
        regs = {
            # the edge mask is the batch's own edges: no (2, E) stack of numpy rows and columns
            k: edges
            if self.plan.steps[k].op == Op.EDGES
            else _on(to_torch(v, stats[k][0][-1], ctx.dtype), ctx.device, host)
            for k, v in result.values.items()
        }
        return regs, stats, operators

    def _torch_registers(self, ctx: Any, edges: Tensor, weight: Tensor | None) -> Registers:
        """:meth:`registers` by the torch stage, on the batch's device: nothing goes
        through the host."""
        with torch.no_grad():
            graphs = torch_graphs_of(ctx.batch, edges, weight)
            stage = self.torch
            values, sizes = stage.run(graphs)
            operators: dict[Any, Operator] = {}
            for key in set(self.operators.values()):
                rowptr, col, w, symmetric = stage.operator(graphs, values, *key)
                operators[key] = Operator(rowptr, col, w.to(ctx.dtype), ctx.n, symmetric=symmetric)
            stats = _stats(self.plan, sizes, ctx.dtype)
            regs = {
                k: edges
                if self.plan.steps[k].op == Op.EDGES
                else to_module_tensor(v, stats[k][0][-1], ctx.dtype, ctx.device)
                for k, v in values.items()
            }
        return regs, stats, operators


_HOST = torch.device("cpu")


def _on(t: Tensor, device: Any, host: bool) -> Tensor:
    """``t`` (on the host) on ``device``: as it is for the host, without a call into torch."""
    return t if host else t.to(device)


__all__ = ["ConstantStages"]
