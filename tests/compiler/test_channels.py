"""Feature channels through the whole Plan: node inputs of shape (N, d) give (N, d) / (G, d)
outputs whose channel k equals the dense evaluator with h = x[:, k] (float64, 1e-9, both
backends); gradients in x equal those of the all-torch interpreter; modules follow .double()
and pickle."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from matlang import parse_program
from matlang.compiler.api import compile
from matlang.evaluator import evaluate_graph
from matlang.runtime.batch import Batch
from matlang.runtime.operators import Operator
from tests.fixtures import GRAPHS, VALID, backends

D = 3

OWN = [
    "input h; A h",
    "input h; A h + 2 h",
    "input h; (A ⊙ A²) h ⊙ h",
    "input h, w; h ⊙ A w - diag(w) A h",
    "input h; hᵀ (A ⊙ A²) h",
    "input h; (h hᵀ ⊙ A) 𝟏",
    "input h; tr(A^3)/6 + onesᵀ A h",
    "input h; relu(A h) ⊙ h",
    "input h; (A ⊙ (h onesᵀ)) ones",
    "input h; (A ⊙ A²)ᵀ h",
    "input h; exp(-(A² h) / 4)",
    "input h; diag(h) A² 𝟏",
    "input h; 𝟏ᵀ (A ⊙ A² + A) h / 3",
    "input h; hᵀ A h / (𝟏ᵀ A 𝟏 + 1)",
    "input h; A (A ⊙ A²) A h",
    "input h; ((A + I) ⊙ A²) h",
]


def _with_inputs() -> list[str]:
    out = [p.values[0] for p in VALID if parse_program(p.values[0]).inputs]
    return out + OWN


def _reference(text: str, graphs: list, feats: dict[str, np.ndarray]) -> np.ndarray:
    """Channel by channel, the dense evaluator's values laid out like the module's output."""
    program = parse_program(text)
    e = program.sentences[0].expr
    offsets = np.cumsum([0] + [g.num_nodes for g in graphs])
    channels = []
    for k in range(D):
        vals = []
        for i, g in enumerate(graphs):
            local = {n: v[offsets[i] : offsets[i + 1], k] for n, v in feats.items()}
            vals.append(evaluate_graph(e, g, inputs=local, input_order=program.inputs))
        if e.shape.is_scalar:
            channels.append(np.array([float(v) for v in vals]))
        else:
            channels.append(np.concatenate([np.asarray(v, float).reshape(-1) for v in vals]))
    return np.stack(channels, -1)


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("text", _with_inputs())
def test_each_channel_equals_the_dense_evaluator(text: str, backend: str) -> None:
    program = parse_program(text)
    n = sum(g.num_nodes for g in GRAPHS)
    rng = np.random.default_rng(7)
    feats = {name: rng.integers(-3, 4, (n, D)).astype(np.float64) for name in program.inputs}
    model = compile(text, dtype=torch.float64, backend=backend)
    got = model(Batch.from_graphs(GRAPHS), inputs={k: torch.tensor(v) for k, v in feats.items()})
    want = _reference(text, GRAPHS, feats)
    assert got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-9, atol=1e-9 * scale)


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize(
    "text", ["input h; A h", "input h; (A ⊙ A²)ᵀ h + A h", "input h; 𝟏ᵀ relu(A (A ⊙ A²) h)"]
)
def test_gradients_in_x_equal_the_torch_interpreter(text: str, backend: str) -> None:
    b = Batch.from_graphs(GRAPHS)
    x = torch.randn(b.num_nodes, 4, dtype=torch.float64)
    fast = compile(text, dtype=torch.float64, backend=backend)
    slow = compile(text, dtype=torch.float64, backend=backend)
    slow.constants = "none"
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    w = torch.randn_like(fast(b, {"h": x}))
    (fast(b, {"h": x1}) * w).sum().backward()
    (slow(b, {"h": x2}) * w).sum().backward()
    assert x1.grad is not None and x2.grad is not None
    torch.testing.assert_close(x1.grad, x2.grad, rtol=1e-12, atol=1e-12)
    # a second backward on the same batch reuses the operator (and its transpose)
    x3 = x.clone().requires_grad_()
    (fast(b, {"h": x3}) * w).sum().backward()
    torch.testing.assert_close(x3.grad, x1.grad)


@pytest.mark.parametrize("symmetric", [True, False])
def test_operator_backward_is_the_transpose(symmetric: bool) -> None:
    rng = np.random.default_rng(0)
    a = (rng.random((9, 9)) < 0.3) * rng.integers(1, 5, (9, 9))
    if symmetric:
        a = a + a.T
    dense = torch.tensor(a, dtype=torch.float64)
    csr = dense.to_sparse_csr()
    op = Operator(
        csr.crow_indices(), csr.col_indices(), csr.values(), 9, symmetric=symmetric
    )
    x = torch.randn(9, 5, dtype=torch.float64, requires_grad=True)
    g = torch.randn(9, 5, dtype=torch.float64)
    (op.matmul(x) * g).sum().backward()
    assert x.grad is not None
    torch.testing.assert_close(x.grad, dense.T @ g)
    assert (op.t() is op) == symmetric


def test_dtype_follows_double_and_repr_says_so() -> None:
    from matlang.graphs import complete

    model = compile("tr(A^3)/6")
    assert model.dtype == torch.float32
    model.double()
    assert model.dtype == torch.float64 and "float64" in repr(model)
    out = model([complete(400)])
    assert out.dtype == torch.float64 and float(out[0].detach()) == 400 * 399 * 398 // 6
    model.to(torch.float32)
    assert model([complete(4)]).dtype == torch.float32
    with pytest.raises(Exception, match="float32 or float64"):
        model.half()


@pytest.mark.parametrize("text", ["onesᵀ exp(A ones)", "let f(x) = x*(x-1)/2; onesᵀ f(A ones)"])
def test_modules_pickle(text: str) -> None:
    model = compile(text, dtype=torch.float64)
    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    assert torch.equal(loaded(GRAPHS), model(GRAPHS))


def test_inputs_of_different_widths_and_bad_dtypes_are_refused_before_anything_changes() -> None:
    """Three refusals that came too late (a stranger's QA pass): inputs of 2 and 3 channels
    crashed inside torch's ``x * y``; a refused ``.half()`` had already turned the module to
    float16 (8.3359 for 25/3 afterwards); ``dtype=torch.int64`` raised ``torch.finfo``'s
    TypeError."""
    from matlang.errors import GraphError, MatlangError

    m = compile("input h; input g; A h + g ⊙ h", dtype=torch.float64)
    with pytest.raises(GraphError, match=r"inputs 'h' \(2 channels\) and 'g' \(3 channels\)"):
        m(["K4"], {"h": torch.ones(4, 2), "g": torch.ones(4, 3)})
    for g in (torch.ones(4, 1), torch.ones(4)):  # broadcast: 3·1 + 1·1 per channel on K4
        got = m(["K4"], {"h": torch.ones(4, 2), "g": g})
        torch.testing.assert_close(got, torch.full((4, 2), 4.0, dtype=torch.float64))
    third = compile("tr(A^3)/3 + 1/3", dtype=torch.float64)
    for convert in (lambda t: t.half(), lambda t: t.to(torch.bfloat16)):
        with pytest.raises(MatlangError, match="computes in float32 or float64, not torch"):
            convert(third)
        assert third.dtype == torch.float64
        assert all(p.dtype == torch.float64 for p in third.parameters())
        assert third(["K4"]).item() == pytest.approx(25 / 3, rel=1e-15)
    with pytest.raises(MatlangError, match="dtype must be float32 or float64, got torch.int64"):
        compile("tr(A^3)", dtype=torch.int64)
