"""A compiled module's graph constants as the interpreter's registers, from either stage.

:func:`constant_registers` runs a :class:`~compiler.module.CompiledModule`'s constant stage on
a batch — GraphBLAS on the host (:mod:`compiler.constants`, per-graph cache included) or torch
on the batch's device (:mod:`compiler.torch_constants`) — and gives back what the interpreter
reads: the exported registers as tensors on the batch's device (masks as ``(2, M)`` indices),
the ``(shape, bytes)`` of every constant register for the run statistics, and the operators of
the propagate steps whose matrix is a constant (CSR, built once per batch, reused by forward
and backward).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from matlang.compiler.constant_cache import CachedStage, run_stage
from matlang.compiler.constants import graphs_of, to_torch
from matlang.compiler.plan import MASK
from matlang.compiler.torch_constants import to_module_tensor, torch_graphs_of
from matlang.runtime.masks import prepared_edges
from matlang.runtime.operators import Operator

Registers = tuple[dict[int, Tensor], list[Any], dict[Any, Operator]]


def _tensor(a: Any, device: Any) -> Tensor:
    """An int64 numpy array as a tensor: shared when writable (the stage's own arrays), copied
    when read-only (a view into GraphBLAS's memory)."""
    if a.flags.writeable:
        return torch.from_numpy(a).to(device)
    return torch.tensor(a, device=device)


def _stats(module: Any, sizes: dict[int, int], dtype: torch.dtype) -> list[Any]:
    item = dtype.itemsize
    stats: list[Any] = [None] * len(module.plan.steps)
    for k, size in sizes.items():
        mask = module.plan.steps[k].kind == MASK
        stats[k] = ((2, size), 16 * size) if mask else ((size,), item * size)
    return stats


def constant_registers(module: Any, ctx: Any, where: str) -> Registers:
    """``module``'s graph constants on ``ctx.batch`` by the stage ``where`` (``"graphblas"``
    or ``"torch"``), see the module docstring."""
    fp = ctx.fingerprint
    edges, weight = ctx.batch.cached(
        "compiled.edges", lambda: prepared_edges(ctx.batch, fingerprint=fp), fingerprint=fp
    )
    if where == "torch":
        return _torch_registers(module, ctx, edges, weight)
    graphs = graphs_of(ctx.batch, edges, weight, fingerprint=fp)
    wanted = set(module._operators.values())
    if module.cache is not None and module._per_graph and graphs.g > 0:
        options = (module._constants_key, str(ctx.dtype), str(ctx.device), ctx.backend)
        cached = CachedStage(module._stage, wanted, module.cache, (("module", options),))
        result = cached.run(graphs)
    else:
        result = run_stage(module._stage, graphs, wanted)
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
    stats = _stats(module, result.sizes, ctx.dtype)
    host = ctx.device == _HOST
    regs = {
        # the edge mask is the batch's own edges: no (2, E) stack of numpy rows and columns
        k: edges
        if module.plan.steps[k].op == "edges"
        else _on(to_torch(v, stats[k][0][-1], ctx.dtype), ctx.device, host)
        for k, v in result.values.items()
    }
    return regs, stats, operators


_HOST = torch.device("cpu")


def _on(t: Tensor, device: Any, host: bool) -> Tensor:
    """``t`` (on the host) on ``device``: as it is for the host, without a call into torch."""
    return t if host else t.to(device)


def _torch_registers(module: Any, ctx: Any, edges: Tensor, weight: Tensor | None) -> Registers:
    """:func:`constant_registers` by the torch stage, on the batch's device: nothing goes
    through the host."""
    with torch.no_grad():
        graphs = torch_graphs_of(ctx.batch, edges, weight)
        stage = module._torch_stage
        values, sizes = stage.run(graphs)
        operators: dict[Any, Operator] = {}
        for key in set(module._operators.values()):
            rowptr, col, w, symmetric = stage.operator(graphs, values, *key)
            operators[key] = Operator(rowptr, col, w.to(ctx.dtype), ctx.n, symmetric=symmetric)
        stats = _stats(module, sizes, ctx.dtype)
        regs = {
            k: edges
            if module.plan.steps[k].op == "edges"
            else to_module_tensor(v, stats[k][0][-1], ctx.dtype, ctx.device)
            for k, v in values.items()
        }
    return regs, stats, operators


__all__ = ["constant_registers"]
