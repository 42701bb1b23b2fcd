"""Layers inside PyG's explainers and tracers.

**Edge masks.** ``torch_geometric.explain`` (``Explainer`` with ``GNNExplainer``,
``PGExplainer``, …, ``edge_mask_type="object"``) calls ``set_masks(model, mask, edge_index)``,
which sets ``explain = True``, ``_edge_mask``, ``_loop_mask`` and ``_apply_sigmoid`` on every
submodule that is a ``MessagePassing``; PyG's own convs then multiply each edge's message by
``sigmoid(mask)``. :class:`~compiler.layers.conv.SentenceConv` is a ``MessagePassing`` when PyG
is installed (:data:`MessagePassingBase`) and reads the same attributes (:func:`explain_weight`):
the mask is a per-edge weight on ``A``, the rule of ``edge_weight=``. That is the message
scaling PyG's explainers assume only where the layer's value is affine in ``A``
(:func:`a_degree` ≤ 1: ``A``, ``L``, ``A + I``, ``input h; A h``); elsewhere (``A ⊙ A²``, where
an entry is a product of three edges' weights) an explainer's mask is refused by
:func:`nonlinear_reason`'s message rather than giving an explanation that means nothing.

A is symmetric here (undirected graphs): an explainer's mask on the two directions of an edge is
averaged into that edge's one weight (:func:`undirected_mask`); a symmetric mask is used as is.

**Tracing.** ``torch.fx.symbolic_trace`` cannot record a layer whose graph constants are computed
by MATLANG sentences at run time (:func:`refuse_tracing`).
"""

from __future__ import annotations

import importlib.util
from functools import cache
from typing import Any

import torch
from torch import Tensor, nn

from matlang import ast
from matlang.errors import GraphError, MatlangError
from matlang.parser import as_program


def _message_passing_base() -> type[nn.Module]:
    """PyG's ``MessagePassing`` when PyG is installed (so ``set_masks`` and ``to_hetero`` find the
    layer), else ``nn.Module``."""
    if importlib.util.find_spec("torch_geometric") is None:
        return nn.Module
    from torch_geometric.nn import MessagePassing

    return MessagePassing  # type: ignore[no-any-return]


#: The base class of :class:`~compiler.layers.conv.SentenceConv`.
MessagePassingBase: type[nn.Module] = _message_passing_base()


def a_degree(e: ast.Expr) -> int | None:
    """The degree of ``e``'s entries as polynomials in the entries of ``A`` (a bound: ``A - A``
    counts 1), or ``None`` where they are not polynomials (division by a value of ``A``, a
    function that is not a polynomial of an argument that reads ``A``)."""
    if isinstance(e, ast.Input):
        return 1 if e.name == "A" else 0
    if isinstance(e, (ast.Ones, ast.Number)):
        return 0
    if isinstance(e, (ast.Mul, ast.Hadamard)):
        a, b = a_degree(e.left), a_degree(e.right)
        return None if a is None or b is None else a + b
    if isinstance(e, (ast.Add, ast.Sub)):
        a, b = a_degree(e.left), a_degree(e.right)
        return None if a is None or b is None else max(a, b)
    if isinstance(e, (ast.Neg, ast.Transpose, ast.Diag, ast.Trace)):
        return a_degree(e.operand)
    if isinstance(e, ast.Div):
        a, b = a_degree(e.left), a_degree(e.right)
        return None if a is None or b != 0 else a
    if isinstance(e, ast.Power):
        a = a_degree(e.base)
        return None if a is None else a * e.exponent
    if isinstance(e, ast.Apply):
        return _apply_degree(e)
    raise MatlangError(f"a_degree: unknown expression {type(e).__name__}")  # pragma: no cover


def _apply_degree(e: ast.Apply) -> int | None:
    args = e.variable_args
    degrees = [a_degree(a) for a in args]
    if any(d is None for d in degrees):
        return None
    if not any(degrees):
        return 0
    import sympy as sp

    formula = sp.expand(e.function.specialize(e.constants))
    symbols = [s for i, s in enumerate(e.function.symbols) if i not in e.constants]
    if not formula.is_polynomial(*symbols):
        return None
    monomials = sp.Poly(formula, *symbols).monoms()
    return max(sum(k * d for k, d in zip(m, degrees)) for m in monomials)  # type: ignore[misc]


def _culprit(e: ast.Expr) -> ast.Expr:
    """The smallest subexpression of ``e`` that is not affine in ``A``."""
    for c in e.children():
        d = a_degree(c)
        if d is None or d > 1:
            return _culprit(c)
    return e


@cache
def nonlinear_reason(text: str) -> str | None:
    """Why a sentence's value is not affine in ``A`` (naming the subexpression), or ``None``."""
    expr = as_program(text).sentences[-1].expr
    d = a_degree(expr)
    if d is not None and d <= 1:
        return None
    part = _culprit(expr)
    pd = a_degree(part)
    why = (
        f"{str(part)!r} has degree {pd} in A (an entry is a product of {pd} edges' weights)"
        if pd is not None
        else f"{str(part)!r} is not a polynomial in A"
    )
    whole = "" if d is None else f"it has degree {d} in A; "
    return f"{text!r} is not linear in A ({whole}{why})"


def undirected_mask(edge_index: Tensor, mask: Tensor, n: int) -> Tensor:
    """Each edge's weight: the mean of the mask on its two directions (A is symmetric)."""
    e = edge_index.shape[1]
    if e == 0:
        return mask
    ei = edge_index.to(torch.int64)
    key = ei[0] * n + ei[1]
    rkey = ei[1] * n + ei[0]
    order = torch.argsort(key)
    pos = torch.searchsorted(key[order], rkey).clamp(max=e - 1)
    rev = order[pos]
    missing = (key[rev] != rkey).nonzero()
    if missing.numel():
        k = int(missing[0])
        raise GraphError(
            f"edge ({int(ei[0, k])}, {int(ei[1, k])}) has no reverse edge: an explainer's mask "
            "is a weight on the undirected A, store both directions of each edge",
            "edge_index",
        )
    return (mask + mask[rev]) / 2


def explain_weight(module: nn.Module, edge_index: Tensor, num_nodes: int) -> Tensor | None:
    """The per-edge weight an explainer's ``set_masks`` put on ``module`` (``sigmoid`` applied
    when ``_apply_sigmoid``; averaged over each edge's two directions), or ``None``."""
    if getattr(module, "explain", None) is not True:
        return None
    mask = getattr(module, "_edge_mask", None)
    name = type(module).__name__
    if mask is None:
        raise MatlangError(
            f"{name}: explain is True but no edge mask was set (call "
            "torch_geometric.explain.algorithm.utils.set_masks, as PyG's explainers do)"
        )
    if getattr(module, "_apply_sigmoid", True):
        mask = mask.sigmoid()
    if mask.shape != (edge_index.shape[1],):
        raise GraphError(
            f"{name}: the explainer's edge mask has shape {tuple(mask.shape)}, but the "
            f"edge_index passed to the layer has {edge_index.shape[1]} edges (one mask entry "
            "per edge of the edge_index the explainer was given)",
            "edge_index",
        )
    return undirected_mask(edge_index, mask, num_nodes)


def refuse_tracing(name: str, *args: Any) -> None:
    """A clear error when ``torch.fx.symbolic_trace`` traces into the layer (its arguments are
    ``Proxy`` objects) instead of the error of the first ``int(proxy)`` deep inside."""
    from torch.fx import Proxy

    if any(isinstance(a, Proxy) for a in args):
        raise MatlangError(
            f"{name} cannot be traced by torch.fx.symbolic_trace: its supports are computed by "
            "MATLANG sentences from the graph at run time (shapes and control flow depend on "
            "edge_index), which FX cannot record. Use torch.compile(model) instead (it runs "
            f"the graph-constant stage as opaque ops); torch_geometric.nn.to_hetero keeps {name} "
            "as a leaf when PyG is installed"
        )


__all__ = [
    "MessagePassingBase",
    "a_degree",
    "explain_weight",
    "nonlinear_reason",
    "refuse_tracing",
    "undirected_mask",
]
