"""A fixed sparse matrix applied to node signals with autograd: the operator of a propagate
step whose matrix is a graph constant, built once per batch and reused by forward and backward."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from matlang.runtime.sparse import csr_matrix


class Operator:
    r"""A fixed sparse matrix ``W`` (CSR, built once per batch) applied to node signals with
    autograd: forward ``W X``, backward ``Wᵀ G`` — ``W`` itself when symmetric, else its
    transpose built once on the first backward and kept.

    .. math::
        \mathbf{out} = W X, \qquad \frac{\partial L}{\partial X} = W^\top G

    Args:
        rowptr, col, value: sorted CSR arrays (``value`` of the dtype to compute in).
        n: rows and columns.
        symmetric: ``W = Wᵀ`` (checked by the caller).

    The products are torch's CSR ``sparse.mm``/``mv`` whatever the interpreter's backend: with
    the transpose built at most once, they beat torch_sparse's ``spmm`` (3× at 16–64 channels
    on ER n = 10⁵, torch 2.13 CPU; ``benchmarks/README.md``), whose backward gathers its values
    and rows through the transpose permutation on every call.

    Shapes:
        X: ``(n,)`` or ``(n, d)``; out: the same.
    """

    def __init__(
        self,
        rowptr: Tensor,
        col: Tensor,
        value: Tensor,
        n: int,
        *,
        symmetric: bool,
    ) -> None:
        self.rowptr, self.col, self.value, self.n = rowptr, col, value, n
        self.symmetric = symmetric
        self._csr: Tensor | None = None
        self._t: Operator | None = self if symmetric else None

    @property
    def csr(self) -> Tensor:
        if self._csr is None:
            self._csr = csr_matrix(self.rowptr, self.col, self.value, (self.n, self.n))
        return self._csr

    def t(self) -> Operator:
        """``Wᵀ`` (``W`` when symmetric), built once."""
        if self._t is None:
            t = self.csr.t().to_sparse_csr() if self.n else self.csr
            self._t = Operator(
                t.crow_indices(), t.col_indices(), t.values(), self.n,
                symmetric=False,
            )
            self._t._t = self
        return self._t

    def matmul(self, x: Tensor) -> Tensor:
        """``W x`` with the gradient ``Wᵀ g`` in ``x``."""
        out = _Apply.apply(x, self)
        assert isinstance(out, Tensor)
        return out

    def raw(self, x: Tensor) -> Tensor:
        """``W x`` without autograd (the CSR products do not warn, only building a CSR tensor
        does, which :func:`~runtime.sparse.csr_matrix` silences: no per-call warning filter)."""
        if x.dim() == 1:
            return torch.mv(self.csr, x)
        if x.shape[1] == 1:  # one channel: mv is 3× sparse.mm on a (N, 1) matrix
            return torch.mv(self.csr, x[:, 0]).unsqueeze(1)
        return torch.sparse.mm(self.csr, x)


class _Apply(torch.autograd.Function):
    """``W x`` for a fixed :class:`Operator`: the backward is one product with ``Wᵀ``."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, op: Operator) -> Tensor:  # type: ignore[override]
        ctx.op = op
        return op.raw(x)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None]:  # type: ignore[override]
        if not ctx.needs_input_grad[0]:
            return None, None
        t = ctx.op.t()
        out = _Apply.apply(grad.contiguous(), t) if torch.is_grad_enabled() else t.raw(grad)
        return out, None


__all__ = ["Operator"]
