"""Input binding of a compiled module: a call's data and inputs as one pass's :class:`Context`.

:func:`bind` reads the batch (any form :func:`~runtime.batch.as_batch` takes), its prepared
edges and the node values of every declared input (:func:`node_inputs`: by name, or from the
batch's ``x``), checked by name and shape before torch sees them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from matlang.errors import EvaluationError, GraphError
from matlang.runtime import sparse
from matlang.runtime.batch import Batch, as_batch
from matlang.runtime.layer_inputs import channels_of
from matlang.runtime.masks import prepared_edges


@dataclass
class Context:
    """One forward pass's view of its batch: sizes, edges, inputs, dtype, device, backend,
    and the registers and operators built in it."""

    batch: Batch
    n: int  # nodes in the batch
    g: int  # graphs in the batch
    node_graph: Tensor
    ptr: Tensor
    edges: Tensor
    edge_weight: Tensor | None
    inputs: Mapping[str, Tensor]
    dtype: torch.dtype
    device: torch.device
    backend: str  # resolved once per pass (None on the module means the current default)
    regs: dict[int, Tensor] = field(default_factory=dict)
    # registers that hold only ones on this batch (A of an unweighted batch, its transpose):
    # kernels take them as value-less operators, and M ⊙ 1 = M needs no product.
    ones: frozenset[int] = frozenset()
    # operators built in this forward pass: torch_sparse's by (mask, values, transposed), torch's
    # CSR by (mask, values, False, "csr"), row pointers by ("rowptr", mask, transposed): a plan
    # that propagates several times with one support builds its CSR structure once.
    operators: dict[Any, Any] = field(default_factory=dict)
    # feature channels of the inputs (None: one value per node, no channel axis)
    channels: int | None = None
    # operators of propagate steps with a constant matrix, by (mask, values, transpose)
    prebuilt: dict[Any, Any] = field(default_factory=dict)
    # the batch's fingerprint taken at the start of the pass (Batch.cached)
    fingerprint: Any = None


def node_values(
    v: Any, n: int, what: str, device: Any, dtype: torch.dtype, finite: bool = True
) -> Tensor:
    """``v`` as ``(N,)`` or ``(N, d)`` node values of ``dtype``, or a :class:`GraphError`
    naming what is wrong (rows, dimensions, non-finite entries unless ``finite`` is false:
    ``nonfinite="keep"`` lets them through, so a call reads nothing back from the device)."""
    t = torch.as_tensor(v, device=device)
    if t.dim() == 2 and t.shape[1] == 1:
        t = t[:, 0]
    if t.dim() not in (1, 2) or t.shape[0] != n:
        raise GraphError(
            f"{what} must have shape ({n},) or ({n}, d) — one row per node of the batch — "
            f"got {tuple(t.shape)}",
            "inputs",
        )
    if t.is_complex() or t.dtype == torch.bool:
        raise GraphError(f"{what} must be real numbers, got {t.dtype}", "inputs")
    t = t.to(dtype)
    # a finite sum means every entry is finite (one read, no mask); else the exact look
    if (
        finite
        and t.numel()
        and not (t.is_floating_point() and math.isfinite(float(t.detach().sum())))
        and not bool(torch.isfinite(t.detach()).all())
    ):
        bad = torch.nonzero(~torch.isfinite(t.detach()))[0].tolist()
        raise GraphError(f"{what} has a non-finite value at {tuple(bad)}", "inputs")
    return t


def node_inputs(
    declared: tuple[str, ...],
    batch: Batch,
    inputs: Mapping[str, Any] | None,
    dtype: torch.dtype,
    finite: bool,
) -> dict[str, Tensor]:
    """Every declared input as ``(N,)`` or ``(N, d)`` (d channels), checked by name and
    shape before torch sees it: from ``inputs`` by name, else from the batch's ``x`` (all
    of its columns as channels of the one input, or column i for input i of several)."""
    n = batch.num_nodes
    unknown = [k for k in (inputs or {}) if k not in declared]
    if unknown:
        raise GraphError(
            f"unknown input {unknown[0]!r}: the sentence declares "
            + (", ".join(repr(d) for d in declared) or "no inputs"),
            "inputs",
        )
    out: dict[str, Tensor] = {}
    for name, v in (inputs or {}).items():
        out[name] = node_values(v, n, f"input '{name}'", batch.edge_index.device, dtype, finite)
    missing = [d for d in declared if d not in out]
    if not missing:
        return out
    x = batch.x
    if x is None:
        raise EvaluationError(
            f"no value for input '{missing[0]}': pass inputs={{'{missing[0]}': ...}} or give "
            "the batch node features x"
        )
    xs = node_values(x, n, "the node features x", batch.edge_index.device, dtype, finite)
    if len(declared) == 1:
        out[declared[0]] = xs  # every column a channel of the one input
        return out
    cols = 1 if xs.dim() == 1 else xs.shape[1]
    if cols != len(declared):
        raise GraphError(
            f"the node features x have {cols} column(s) but the sentence declares "
            f"{len(declared)} inputs ({', '.join(declared)}): column i feeds input i; pass "
            "inputs={name: (N,) or (N, d)} to give each input its own channels",
            "inputs",
        )
    for i, name in enumerate(declared):
        if name not in out:
            out[name] = xs if xs.dim() == 1 else xs[:, i]
    return out


def bind(
    data: Any,
    inputs: Mapping[str, Any] | None,
    declared: tuple[str, ...],
    *,
    validate: bool,
    dtype: torch.dtype,
    backend: str | None,
    unit: frozenset[int],
    finite: bool,
) -> Context:
    """A pass's :class:`Context`: ``data`` as a batch (validated when ``validate``), its
    prepared edges (remembered on the batch), the ``declared`` inputs bound
    (:func:`node_inputs`), ``unit``: the registers all ones when the batch has no weights."""
    batch = as_batch(data, validate=validate)
    n, g = batch.num_nodes, batch.num_graphs
    device = batch.edge_index.device
    fp = batch.fingerprint()  # one look per pass: nothing below changes the tensors
    edges, weight = batch.cached(
        "compiled.edges", lambda: prepared_edges(batch, fingerprint=fp), fingerprint=fp
    )
    given = node_inputs(declared, batch, inputs, dtype, finite) if declared else {}
    channels = channels_of(given)  # one count for all inputs (or 1: broadcast)
    return Context(
        batch,
        n,
        g,
        batch.batch.to(torch.int64),
        batch.ptr.to(torch.int64),
        edges,
        None if weight is None else weight.to(dtype),
        given,
        dtype,
        device,
        sparse.resolve_backend(backend),
        ones=unit if weight is None else frozenset(),
        channels=channels,
        fingerprint=fp,
    )


__all__ = ["Context", "bind", "node_inputs", "node_values"]
