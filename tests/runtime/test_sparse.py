"""runtime.sparse: every kernel against a dense torch reference, on every backend."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from matlang.errors import GraphError, MatlangError
from matlang.runtime import sparse
from matlang.runtime.last_built import LastBuilt

N = 9


def _backend_param(name: str) -> object:
    marks = []
    if name not in sparse.available_backends():
        marks.append(pytest.mark.skip(reason=f"{name} does not import here (CI installs it)"))
    return pytest.param(name, marks=marks, id=name)


BACKENDS = [_backend_param(b) for b in sparse.BACKENDS]
DTYPES = [pytest.param(torch.float64, id="f64"), pytest.param(torch.float32, id="f32")]


def random_matrix(
    gen: torch.Generator, nnz: int, dtype: torch.dtype, channels: int | None = None, n: int = N
) -> tuple[Tensor, Tensor]:
    """Random entries (repeats included, on purpose) and values."""
    ei = torch.randint(0, n, (2, nnz), generator=gen)
    shape = (nnz,) if channels is None else (nnz, channels)
    return ei, torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)


def dense(ei: Tensor, w: Tensor | None, n: int = N, m: int | None = None) -> Tensor:
    """The dense matrix (n×m, or n×m×C) that ``(ei, w)`` stands for; repeats add up."""
    if w is None:
        w = torch.ones(ei.shape[1], dtype=torch.float64)
    d = torch.zeros((n, n if m is None else m, *w.shape[1:]), dtype=w.dtype)
    return d.index_put_((ei[0], ei[1]), w, accumulate=True)


def tol(dtype: torch.dtype) -> dict[str, float]:
    return (
        {"rtol": 1e-10, "atol": 1e-10} if dtype == torch.float64 else {"rtol": 1e-4, "atol": 1e-4}
    )


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(1234)


# --------------------------------------------------------------------------- backends


def test_torch_backend_always_available() -> None:
    assert "torch" in sparse.available_backends()
    assert sparse.default_backend() in sparse.available_backends()


def test_use_backend_scopes_the_default() -> None:
    before = sparse.default_backend()
    with sparse.use_backend("torch") as chosen:
        assert chosen == "torch"
        assert sparse.default_backend() == "torch"
        assert sparse.resolve_backend(None) == "torch"
    assert sparse.default_backend() == before


def test_unknown_backend_is_a_project_error() -> None:
    with pytest.raises(MatlangError, match="unknown sparse backend"):
        sparse.propagate(torch.zeros(2, 0, dtype=torch.long), torch.ones(3), backend="scipy")
    with pytest.raises(MatlangError), sparse.use_backend("cusparse"):
        pass


@pytest.mark.skipif("torch_sparse" in sparse.available_backends(), reason="torch_sparse present")
def test_missing_torch_sparse_says_how_to_install() -> None:
    with pytest.raises(MatlangError, match="pip install"):
        sparse.resolve_backend("torch_sparse")


def test_bad_inputs_are_graph_errors() -> None:
    with pytest.raises(GraphError, match=r"shape \(2, E\)"):
        sparse.propagate(torch.zeros(3, 4, dtype=torch.long), torch.ones(3), backend="torch")
    with pytest.raises(GraphError, match="integers"):
        sparse.propagate(torch.zeros(2, 4), torch.ones(3), backend="torch")
    ei = torch.zeros(2, 4, dtype=torch.long)
    with pytest.raises(GraphError, match="edge_weight"):
        sparse.propagate(ei, torch.ones(3), torch.ones(5), backend="torch")


# --------------------------------------------------------------------------- propagate


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "h_shape, w_shape",
    [((N,), None), ((N,), ()), ((N, 3), None), ((N, 3), ()), ((N, 3), (3,)), ((N,), (4,))],
    ids=["vec", "vec-w", "mat", "mat-w", "mat-wC", "vec-wC"],
)
def test_propagate_matches_dense(
    backend: str,
    dtype: torch.dtype,
    h_shape: tuple[int, ...],
    w_shape: tuple[int, ...] | None,
    gen: torch.Generator,
) -> None:
    ei, w = random_matrix(gen, 30, dtype, channels=None if not w_shape else w_shape[0])
    weight = None if w_shape is None else w
    h = torch.randn(h_shape, generator=gen, dtype=torch.float64).to(dtype)
    out = sparse.propagate(ei, h, weight, backend=backend)
    d = dense(ei, None if weight is None else weight.double())
    if d.dim() == 3:  # one matrix per channel
        hh = h.double() if h.dim() == 2 else h.double()[:, None]
        ref = torch.einsum("ijc,jc->ic", d, hh.expand(N, d.shape[2]))
    else:
        ref = d @ h.double()
    assert out.dtype == dtype
    assert out.shape == ref.shape
    torch.testing.assert_close(out.double(), ref, **tol(dtype))


@pytest.mark.parametrize("backend", BACKENDS)
def test_propagate_rectangular_and_empty(backend: str, gen: torch.Generator) -> None:
    ei = torch.stack(
        [torch.randint(0, 4, (12,), generator=gen), torch.randint(0, N, (12,), generator=gen)]
    )
    h = torch.randn(N, 2, generator=gen, dtype=torch.float64)
    out = sparse.propagate(ei, h, num_nodes=4, backend=backend)
    torch.testing.assert_close(out, dense(ei, None, 4, N) @ h)
    empty = sparse.propagate(torch.zeros(2, 0, dtype=torch.long), h, backend=backend)
    assert torch.equal(empty, torch.zeros_like(h))
    # No channels at all: an (N, 0) signal gives an (rows, 0) result, not a crash.
    none = sparse.propagate(ei, h[:, :0], num_nodes=4, backend=backend)
    assert none.shape == (4, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_propagate_gradcheck(backend: str, gen: torch.Generator) -> None:
    ei, w = random_matrix(gen, 14, torch.float64, n=5)
    h = torch.randn(5, 2, generator=gen, dtype=torch.float64, requires_grad=True)
    w.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda w, h: sparse.propagate(ei, h, w, backend=backend), (w, h)
    )
    wc = torch.randn(14, 2, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda w, h: sparse.propagate(ei, h, w, backend=backend), (wc, h)
    )


# --------------------------------------------------------------------------- scatter


def _reference_reduce(src: Tensor, index: Tensor, size: int, kind: str) -> Tensor:
    out = torch.zeros((size, *src.shape[1:]), dtype=src.dtype)
    for g in range(size):
        rows = src[index == g]
        if rows.shape[0]:
            out[g] = {"sum": rows.sum(0), "max": rows.max(0).values, "mean": rows.mean(0)}[kind]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["sum", "max", "mean"])
def test_scatter_matches_reference(
    backend: str, dtype: torch.dtype, kind: str, gen: torch.Generator
) -> None:
    src = torch.randn(20, 3, generator=gen, dtype=torch.float64).to(dtype)
    index = torch.randint(0, 6, (20,), generator=gen)
    index[index == 4] = 5  # group 4 is empty: it must read 0
    fn = {"sum": sparse.scatter_sum, "max": sparse.scatter_max, "mean": sparse.scatter_mean}[kind]
    out = fn(src, index, 7, backend=backend)
    assert out.dtype == dtype and out.shape == (7, 3)
    torch.testing.assert_close(out, _reference_reduce(src, index, 7, kind), **tol(dtype))
    assert torch.equal(out[4], torch.zeros(3, dtype=dtype))
    vec = fn(src[:, 0], index, 7, backend=backend)
    torch.testing.assert_close(vec, _reference_reduce(src[:, 0], index, 7, kind), **tol(dtype))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["sum", "max", "mean"])
def test_scatter_gradcheck(backend: str, kind: str, gen: torch.Generator) -> None:
    src = torch.randn(10, 2, generator=gen, dtype=torch.float64, requires_grad=True)
    index = torch.randint(0, 4, (10,), generator=gen)
    fn = {"sum": sparse.scatter_sum, "max": sparse.scatter_max, "mean": sparse.scatter_mean}[kind]
    assert torch.autograd.gradcheck(lambda s: fn(s, index, 4, backend=backend), (src,))


# --------------------------------------------------------------------------- products


@pytest.mark.parametrize("backend", BACKENDS)
def test_coalesce(backend: str, gen: torch.Generator) -> None:
    ei, w = random_matrix(gen, 40, torch.float64)
    idx, val = sparse.coalesce(ei, w, N, backend=backend)
    key = idx[0] * N + idx[1]
    assert bool((key[1:] > key[:-1]).all()), "sorted row-major, no repeats"
    torch.testing.assert_close(dense(idx, val), dense(ei, w))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("channels", [None, 3], ids=["scalar", "channels"])
def test_spspmm_matches_dense(
    backend: str, dtype: torch.dtype, channels: int | None, gen: torch.Generator
) -> None:
    ia, wa = random_matrix(gen, 25, dtype)
    ib, wb = random_matrix(gen, 20, dtype, channels)
    idx, val = sparse.spspmm(ia, wa, ib, wb, N, backend=backend)
    key = idx[0] * N + idx[1]
    assert bool((key[1:] > key[:-1]).all()), "coalesced"
    assert val.dtype == dtype
    ref = torch.einsum("ik,kj...->ij...", dense(ia, wa.double()), dense(ib, wb.double()))
    torch.testing.assert_close(dense(idx, val.double()), ref, **tol(dtype))
    # the support is structural: exactly the pairs joined by a path i -> k -> j
    reach = (dense(ia, None) @ dense(ib, None)) > 0
    assert int(reach.sum()) == idx.shape[1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_spspmm_without_values_counts_paths(backend: str, gen: torch.Generator) -> None:
    ia, _ = random_matrix(gen, 25, torch.float64)
    idx, val = sparse.spspmm(ia, None, ia, None, N, backend=backend)
    a = dense(ia, None)
    assert val.dtype == torch.get_default_dtype()
    torch.testing.assert_close(dense(idx, val.double()), a @ a)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "ca, cb", [(None, None), (None, 2), (2, None), (2, 2)], ids=["s-s", "s-c", "c-s", "c-c"]
)
def test_sampled_product_matches_dense(
    backend: str, dtype: torch.dtype, ca: int | None, cb: int | None, gen: torch.Generator
) -> None:
    ia, wa = random_matrix(gen, 25, dtype, ca)
    ib, wb = random_matrix(gen, 20, dtype, cb)
    mask = torch.randint(0, N, (2, 30), generator=gen)
    mask = torch.cat([mask, mask[:, :3]], 1)  # entries listed twice get their value twice
    out = sparse.sampled_product(ia, wa, ib, wb, mask, N, backend=backend)
    da, db = dense(ia, wa.double()), dense(ib, wb.double())
    if da.dim() == 2 and db.dim() == 2:
        ref = (da @ db)[mask[0], mask[1]]
    else:
        da = da if da.dim() == 3 else da[..., None]
        db = db if db.dim() == 3 else db[..., None]
        ref = torch.einsum("ikc,kjc->ijc", da, db)[mask[0], mask[1]]
    assert out.dtype == dtype and out.shape == ref.shape
    torch.testing.assert_close(out.double(), ref, **tol(dtype))


#: The blocked sampled product's ways of reading its product at the mask (module constants).
MASK_READS = {
    "one-table": {},
    "chunked-table": {"MASK_SLOTS_MIN": 1, "MASK_TERMS_PER_CHUNK": 16},
    "binary-search": {"MASK_SLOTS_MIN": 0, "MASK_SLOTS_PER_ENTRY": 0},
}


@pytest.mark.parametrize("read", list(MASK_READS))
@pytest.mark.parametrize("block", [1 << 18, 40], ids=["one-block", "blocks"])
def test_sampled_product_reads_the_mask_every_way(
    read: str, block: int, gen: torch.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "torch_sparse" not in sparse.available_backends():
        pytest.skip("the blocked product runs on the torch_sparse backend (CI installs it)")
    n = 40
    monkeypatch.setattr(sparse, "SAMPLED_BLOCK_TERMS", block)
    monkeypatch.setattr(sparse, "SAMPLED_BLOCK_TERMS_PER_ENTRY", 0)
    for name, value in MASK_READS[read].items():
        monkeypatch.setattr(sparse, name, value)
    tables: list[sparse._MaskTable] = []
    real = sparse._MaskTable

    def spy(*args: object) -> sparse._MaskTable:
        tables.append(real(*args))  # type: ignore[arg-type]
        return tables[-1]

    monkeypatch.setattr(sparse, "_MaskTable", spy)
    ia, wa = random_matrix(gen, 160, torch.float64, 3, n=n)
    ib, wb = random_matrix(gen, 150, torch.float64, 3, n=n)
    mask = torch.randint(0, n, (2, 400), generator=gen)
    out = sparse.sampled_product(ia, wa, ib, wb, mask, n, backend="torch_sparse")
    ref = torch.einsum("ikc,kjc->ijc", dense(ia, wa, n), dense(ib, wb, n))[mask[0], mask[1]]
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    chunks = [t.chunks for t in tables]
    assert chunks == {"one-table": [1], "binary-search": []}.get(read, chunks)
    if read == "chunked-table":
        assert len(chunks) == 1 and chunks[0] > 5  # the table refilled chunk after chunk


@pytest.mark.parametrize("backend", BACKENDS)
def test_sampled_product_unreached_and_empty_mask(backend: str) -> None:
    ia = torch.tensor([[0], [1]])  # A = e_0 e_1ᵀ
    ib = torch.tensor([[1], [2]])  # B = e_1 e_2ᵀ, so A B = e_0 e_2ᵀ
    mask = torch.tensor([[0, 2, 1], [2, 0, 1]])
    out = sparse.sampled_product(
        ia, torch.tensor([2.0]), ib, torch.tensor([3.0]), mask, 3, backend=backend
    )
    assert out.tolist() == [6.0, 0.0, 0.0]
    empty = sparse.sampled_product(
        ia, None, ib, None, torch.zeros(2, 0, dtype=torch.long), 3, backend=backend
    )
    assert empty.shape == (0,)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cb", [None, 2], ids=["scalar", "channels"])
def test_sampled_product_gradcheck(backend: str, cb: int | None, gen: torch.Generator) -> None:
    ia, wa = random_matrix(gen, 12, torch.float64, n=5)
    ib, wb = random_matrix(gen, 10, torch.float64, cb, n=5)
    mask = torch.randint(0, 5, (2, 12), generator=gen)
    wa.requires_grad_(True)
    wb.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda a, b: sparse.sampled_product(ia, a, ib, b, mask, 5, backend=backend), (wa, wb)
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_products_have_second_derivatives(backend: str, gen: torch.Generator) -> None:
    ia, wa = random_matrix(gen, 12, torch.float64, n=5)
    ib, wb = random_matrix(gen, 10, torch.float64, 2, n=5)
    mask = torch.randint(0, 5, (2, 12), generator=gen)
    wa.requires_grad_(True)
    wb.requires_grad_(True)
    assert torch.autograd.gradgradcheck(
        lambda a, b: sparse.sampled_product(ia, a, ib, b, mask, 5, backend=backend), (wa, wb)
    )
    if backend == "torch":  # torch_sparse's spmm has no double backward
        h = torch.randn(5, 2, generator=gen, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradgradcheck(
            lambda w, h: sparse.propagate(ia, h, w, backend=backend), (wa, h)
        )


@pytest.mark.parametrize("backend", BACKENDS)
def test_spspmm_gradcheck(backend: str, gen: torch.Generator) -> None:
    ia, wa = random_matrix(gen, 12, torch.float64, n=5)
    ib, wb = random_matrix(gen, 10, torch.float64, n=5)
    wa.requires_grad_(True)
    wb.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda a, b: sparse.spspmm(ia, a, ib, b, 5, backend=backend)[1], (wa, wb)
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_diag_of_product(backend: str, dtype: torch.dtype, gen: torch.Generator) -> None:
    ia, wa = random_matrix(gen, 30, dtype)
    ib, wb = random_matrix(gen, 30, dtype)
    out = sparse.diag_of_product(ia, wa, ib, wb, N, backend=backend)
    ref = torch.diagonal(dense(ia, wa.double()) @ dense(ib, wb.double()))
    torch.testing.assert_close(out.double(), ref, **tol(dtype))
    # tr(A³) / 6 counts triangles: K4 has 4
    k4 = torch.ones(4, 4) - torch.eye(4)
    ei = k4.nonzero().T
    a2_idx, a2 = sparse.spspmm(ei, None, ei, None, 4, backend=backend)
    assert float(sparse.diag_of_product(a2_idx, a2, ei, None, 4, backend=backend).sum()) / 6 == 4
    wa.requires_grad_(dtype == torch.float64)
    if dtype == torch.float64:
        ia5, wa5 = random_matrix(gen, 12, torch.float64, n=5)
        ib5, wb5 = random_matrix(gen, 12, torch.float64, 2, n=5)
        wa5.requires_grad_(True)
        wb5.requires_grad_(True)
        assert torch.autograd.gradcheck(
            lambda a, b: sparse.diag_of_product(ia5, a, ib5, b, 5, backend=backend), (wa5, wb5)
        )


# --------------------------------------------------------------------------- agreement


@pytest.mark.skipif(
    "torch_sparse" not in sparse.available_backends(),
    reason="torch_sparse does not import here (CI installs it)",
)
def test_backends_agree_on_random_inputs(gen: torch.Generator) -> None:
    ia, wa = random_matrix(gen, 60, torch.float64, n=20)
    ib, wb = random_matrix(gen, 50, torch.float64, 3, n=20)
    mask = torch.randint(0, 20, (2, 80), generator=gen)
    h = torch.randn(20, 3, generator=gen, dtype=torch.float64)
    for fn in (
        lambda b: sparse.propagate(ia, h, wa, backend=b),
        lambda b: sparse.propagate(ib, h, wb, backend=b),
        lambda b: sparse.sampled_product(ia, wa, ib, wb, mask, 20, backend=b),
        lambda b: sparse.spspmm(ia, wa, ib, wb, 20, backend=b)[1],
        lambda b: sparse.diag_of_product(ia, wa, ib, wb, 20, backend=b),
        lambda b: sparse.scatter_max(h, ia[0, :20], 20, backend=b),
    ):
        torch.testing.assert_close(fn("torch_sparse"), fn("torch"), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- the last operator


def test_last_built_returns_the_value_for_the_same_unchanged_tensors() -> None:
    memo, calls = LastBuilt(), []

    def build(tag: str) -> object:
        calls.append(tag)
        return object()

    a, b = torch.arange(4), torch.ones(4)
    first = memo.get((a, b), 7, lambda: build("1"))
    assert memo.get((a, b), 7, lambda: build("2")) is first and calls == ["1"]
    assert memo.get((a.clone(), b), 7, lambda: build("3")) is not first  # another tensor
    kept = memo.get((a, b), 8, lambda: build("4"))  # other arguments
    assert kept is not first and memo.get((a, b), 8, lambda: build("5")) is kept
    b.add_(1.0)  # changed in place: its version moves
    assert memo.get((a, b), 8, lambda: build("6")) is not kept
    learned = torch.ones(4, requires_grad=True)
    memo.get((a, learned), 8, lambda: build("7"))
    memo.get((a, learned), 8, lambda: build("8"))  # never kept: it would hold an old graph
    assert calls == ["1", "3", "4", "6", "7", "8"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("model", ["gcn", "gin", "chebnet"])
def test_operators_kept_across_layers_and_steps_change_no_number(backend: str, model: str) -> None:
    """Two Adam steps on one batch (its operators kept from layer to layer and from step to
    step), then another batch of the same sizes: the losses and gradients of a run where
    nothing is kept."""
    from unittest import mock

    from matlang.graphs import named
    from matlang.runtime.models import build_model

    # the second batch has the first's sizes and edge count: only its tensors tell them apart
    graphs = [[named("petersen"), named("cycle5")], [named("cycle5"), named("petersen")]]

    def run() -> list[Tensor]:
        torch.manual_seed(0)
        net = build_model(model, 1, 1, {"hidden": 8, "layers": 3}, backend=backend).double()
        opt = torch.optim.Adam(net.parameters(), 1e-2)
        out = []
        for batch in (graphs[0], graphs[0], graphs[1]):
            opt.zero_grad()
            loss = net(batch).square().sum()
            loss.backward()
            out += [
                loss.detach(),
                *(p.grad.clone() for p in net.parameters() if p.grad is not None),
            ]
            opt.step()
        return out

    kept = run()
    with mock.patch.object(LastBuilt, "get", lambda self, t, e, build: build()):
        fresh = run()
    for a, b in zip(kept, fresh, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_models_own_their_last_built_operators() -> None:
    """The one-entry memos are the model's (shared by its layers, which read the same graph),
    not the process's: they hold the last batch's tensors only while the model lives."""
    import gc
    import weakref

    from matlang.graphs import named
    from matlang.runtime.models import build_model

    net = build_model("gcn", 1, 1, {"hidden": 8, "layers": 3}, backend="torch").double()
    assert len({id(c.norms) for c in net.convs}) == len({id(c.operators) for c in net.convs}) == 1
    net([named("petersen"), named("cycle5")])
    norms = net.convs[0].norms
    assert norms._last is not None  # the last support built, kept for the next layer
    memo = weakref.ref(norms)
    del net, norms
    gc.collect()
    assert memo() is None
