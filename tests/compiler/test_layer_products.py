"""SentenceConv's eager dense/sparse product paths against the formulation they replaced.

Eagerly a layer with ``in ≤ out`` computes ``Σ_s (C_s x) W_s`` (sparse products on the input
channels, ``addmm_`` into one output, no product for ``I``), a layer with ``in > out``
``Σ_s C_s (x W_s)`` through a plain autograd function; the custom ops that ``torch.compile``
sees compute ``Σ_s C_s (x W_s)`` as before (the code of ``b036d91``). Outputs and the gradients
of every parameter and of ``x`` must agree to float64 rounding, for every kind of term."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from matlang.compiler.layers import conv as conv_module
from matlang.graphs import named
from matlang.nn import SentenceConv, SentenceGNN
from matlang.runtime.batch import Batch

GRAPHS = ["K4", "cycle5", "petersen", "decalin", "star3"]


def _batch() -> Batch:
    return Batch.from_graphs([named(g) for g in GRAPHS], dtype=torch.float64)


def _reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """The path ``torch.compile`` takes (custom ops, ``x W_s`` first), run eagerly."""
    monkeypatch.setattr(conv_module.torch.compiler, "is_compiling", lambda: True)


def _run(
    layer: torch.nn.Module, x: torch.Tensor, b: Batch, grad_x: bool
) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor | None]:
    layer.zero_grad()
    xi = x.detach().clone().requires_grad_(grad_x)
    out = layer(xi, b.edge_index, b.batch)
    weight = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)
    (out * weight).sum().backward()
    grads = {n: p.grad.clone() for n, p in layer.named_parameters() if p.grad is not None}
    return out.detach(), grads, None if xi.grad is None else xi.grad.clone()


CASES: list[tuple[list[str], dict[str, Any]]] = [
    (["I", "A", "A ⊙ A²"], {"product": True}),
    (["A", "A ⊙ A²", "L"], {}),  # no I
    (["I"], {"product": True}),  # only I: no sparse product at all
    (["A ⊙ A²", "I", "A³ ⊙ I"], {"normalize": "max_row_sum"}),
    (["I", "A", "input h; relu(A h) ⊙ (A² h)", "(A³ ⊙ I) 𝟏 / 2"], {"product": True}),
    (["A", "(A + I) ⊙ A²"], {"activation": "relu", "bias": False}),
]


@pytest.mark.parametrize("sentences,options", CASES)
@pytest.mark.parametrize("d_in,d_out", [(3, 8), (6, 6), (9, 4)])
@pytest.mark.parametrize("grad_x", [True, False])
def test_eager_paths_equal_the_custom_op_path(
    monkeypatch: pytest.MonkeyPatch,
    sentences: list[str],
    options: dict[str, Any],
    d_in: int,
    d_out: int,
    grad_x: bool,
) -> None:
    b = _batch()
    torch.manual_seed(0)
    layer = SentenceConv(d_in, d_out, sentences, **options).double()
    with torch.no_grad():
        if layer.bias is not None:
            layer.bias.normal_()
    x = torch.randn(b.num_nodes, d_in, dtype=torch.float64)
    got = _run(layer, x, b, grad_x)
    with monkeypatch.context() as m:
        _reference(m)
        want = _run(layer, x, b, grad_x)
    torch.testing.assert_close(got[0], want[0], rtol=1e-12, atol=1e-12)
    assert got[1].keys() == want[1].keys() == {n for n, _ in layer.named_parameters()}
    for name in want[1]:
        torch.testing.assert_close(got[1][name], want[1][name], rtol=1e-12, atol=1e-12)
    if grad_x:
        assert got[2] is not None and want[2] is not None
        torch.testing.assert_close(got[2], want[2], rtol=1e-12, atol=1e-12)


def test_float32_model_step_equals_the_custom_op_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """SentenceGNN's defaults (BatchNorm, the product term) in float32: a training step's loss
    and gradients as before to float32 rounding."""
    b = _batch()
    torch.manual_seed(1)
    model = SentenceGNN(3, 4, ["I", "A", "A ⊙ A²"], hidden=16, layers=3)
    x = torch.randn(b.num_nodes, 3)
    y = torch.tensor([0, 1, 2, 3, 1])

    def step() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        model.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x, b.edge_index, b.batch), y)
        loss.backward()
        return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}

    got = step()
    with monkeypatch.context() as m:
        _reference(m)
        want = step()
    torch.testing.assert_close(got[0], want[0], rtol=1e-6, atol=1e-6)
    for name, g in want[1].items():
        torch.testing.assert_close(got[1][name], g, rtol=1e-5, atol=1e-6)


def test_a_first_layer_runs_no_sparse_product_in_its_backward(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``x`` without gradient: the supports are applied once, in the forward, on ``d``
    channels; the backward needs ``(C_s x)ᵀ g`` only (dense)."""
    from matlang.compiler.layers import stage as stage_module

    b = _batch()
    layer = SentenceConv(2, 8, ["I", "A", "A ⊙ A²"]).double()
    calls: list[int] = []
    real = stage_module._mm

    def counting(m: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        calls.append(y.shape[1])
        return real(m, y)

    monkeypatch.setattr(stage_module, "_mm", counting)
    out = layer(torch.randn(b.num_nodes, 2, dtype=torch.float64), b.edge_index, b.batch)
    assert calls == [2, 2]  # A x and (A ⊙ A²) x, on the 2 input channels
    out.sum().backward()
    assert calls == [2, 2]
    assert layer.weight is not None and layer.weight.grad is not None
