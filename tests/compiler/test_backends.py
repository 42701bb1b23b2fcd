"""The two sparse backends agree on values and gradients, and the mask kernels of the code
generator (composition, union, look-up, the all-pairs mask) agree with scipy / numpy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
import torch

from matlang.compiler.api import compile
from matlang.errors import MatlangError
from matlang.runtime import sparse
from matlang.runtime.batch import Batch
from matlang.runtime.generators import erdos_renyi
from matlang.runtime.masks import coalesce_edges, compose_masks, full_mask, lookup, union_masks
from tests.fixtures import GRAPHS

needs_torch_sparse = pytest.mark.skipif(
    "torch_sparse" not in sparse.available_backends(),
    reason="torch_sparse/torch_scatter not importable",
)

SENTENCES = [
    "𝟏ᵀ (A ⊙ A²)² 𝟏",
    "tr(A⁴) - tr(A³) / 6",
    "input h; (A ⊙ A²)ᵀ A h + tanh(A) h",
    "input h; hᵀ relu(A² - A) h",
    "tr((diag(A 𝟏) A ⊙ A²)²)",
    "input h; diag(h) A ⊙ A² ⊙ A³",
]


@needs_torch_sparse
@pytest.mark.parametrize("text", SENTENCES)
def test_backends_agree_on_values_and_gradients(text: str) -> None:
    b = Batch.from_graphs(GRAPHS)
    h0 = torch.linspace(-1, 1, b.num_nodes, dtype=torch.float64)
    results = []
    for backend in ("torch", "torch_sparse"):
        model = compile(text, dtype=torch.float64, backend=backend, weights="all")
        h = h0.clone().requires_grad_(True)
        out = model(b, inputs={"h": h})
        dense = out.to_dense() if out.is_sparse else out
        weight = torch.arange(1, dense.numel() + 1, dtype=torch.float64).reshape(dense.shape)
        (dense * weight).sum().backward()
        grads = {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
        results.append((dense.detach(), h.grad, grads))
    (v1, g1, p1), (v2, g2, p2) = results
    torch.testing.assert_close(v1, v2, rtol=1e-12, atol=1e-12)
    if "input h" in text:
        assert g1 is not None and g2 is not None
        torch.testing.assert_close(g1, g2, rtol=1e-12, atol=1e-12)
    assert p1.keys() == p2.keys() and p1
    for k in p1:
        torch.testing.assert_close(p1[k], p2[k], rtol=1e-10, atol=1e-10)


def test_backend_choice() -> None:
    model = compile("tr(A³)", backend="torch")
    assert model.backend == "torch"
    assert compile("tr(A³)").backend is None  # the best available, chosen per call
    with pytest.raises(MatlangError, match="unknown sparse backend"):
        compile("tr(A³)", backend="cusparse")


@pytest.mark.skipif(
    "torch_sparse" in sparse.available_backends(), reason="torch_sparse is installed here"
)
def test_missing_torch_sparse_is_a_clear_error() -> None:
    with pytest.raises(MatlangError, match="not available"):
        compile("tr(A³)", backend="torch_sparse")


# --------------------------------------------------------------------------- mask kernels


def _pattern(index: torch.Tensor, n: int) -> np.ndarray:
    out = np.zeros((n, n), dtype=bool)
    out[index[0].numpy(), index[1].numpy()] = True
    return out


def _index(a: np.ndarray) -> torch.Tensor:
    r, c = np.nonzero(a)
    return torch.tensor(np.stack([r, c]), dtype=torch.int64)


@pytest.mark.parametrize("seed", range(5))
def test_compose_and_union_masks(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 15
    a = rng.random((n, n)) < 0.15
    b = rng.random((n, n)) < 0.2
    ia, ib = _index(a), _index(b)
    c = compose_masks(ia, ib, n)
    want = (sps.csr_matrix(a.astype(int)) @ sps.csr_matrix(b.astype(int))).toarray() != 0
    assert np.array_equal(_pattern(c, n), want)
    assert c.shape[1] == want.sum()  # no repeats
    u = union_masks(ia, ib, n)
    assert np.array_equal(_pattern(u, n), a | b) and u.shape[1] == (a | b).sum()
    assert compose_masks(ia[:, :0], ib, n).shape == (2, 0)


def test_lookup_reads_values_at_other_entries() -> None:
    rng = np.random.default_rng(0)
    n = 12
    a = rng.random((n, n)) < 0.3
    vals = torch.tensor(rng.normal(size=int(a.sum())), requires_grad=True)
    dense = np.zeros((n, n))
    dense[a] = vals.detach().numpy()  # np.nonzero order is row-major, like _index
    dst = _index(rng.random((n, n)) < 0.4)
    got = lookup(_index(a), vals, dst, n)
    np.testing.assert_array_equal(got.detach().numpy(), dense[dst[0].numpy(), dst[1].numpy()])
    got.sum().backward()
    assert vals.grad is not None


def test_full_mask_is_all_pairs_of_each_graph() -> None:
    graphs = [erdos_renyi(n, 0.5, seed=n) for n in (3, 1, 4)]
    b = Batch.from_graphs(graphs)
    m = full_mask(b.batch, b.ptr)
    assert m.shape[1] == 9 + 1 + 16
    assert bool((b.batch[m[0]] == b.batch[m[1]]).all())
    assert len(set(map(tuple, m.t().tolist()))) == m.shape[1]


def test_coalesce_edges_adds_repeated_entries() -> None:
    ei = torch.tensor([[0, 1, 0, 2], [1, 0, 1, 0]])
    idx, w = coalesce_edges(ei, None, 3)
    assert idx.tolist() == [[0, 1, 2], [1, 0, 0]]
    assert w is not None and w.tolist() == [2.0, 1.0, 1.0]
    idx, w = coalesce_edges(ei[:, :2], None, 3)
    assert w is None and idx.tolist() == [[0, 1], [1, 0]]
