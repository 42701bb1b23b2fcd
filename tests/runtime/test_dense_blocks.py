"""The dense-block masked product (``runtime.dense_blocks``): on batches of small graphs the
GraphBLAS kernels compute ``(A B)|S`` as dense products of the graphs' blocks; the result is
the exact integer the sparse product gives, entry for entry, on every mask orientation, value
kind and graph layout, and the sparse kernel answers wherever the dense one would not be
exact."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from matlang.compiler.api import compile
from matlang.runtime import dense_blocks
from matlang.runtime.batch import Batch
from matlang.runtime.dense_blocks import Blocks
from matlang.runtime.graphblas import Kernels, Mask
from tests.fixtures import GRAPHS


def _layout(sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    node_graph = np.repeat(np.arange(len(sizes)), sizes).astype(np.int64)
    return ptr, node_graph


def _random_mask(rng: np.random.Generator, ptr: np.ndarray, p: float) -> Mask:
    """A block-diagonal structure: each graph's pairs kept with probability ``p``."""
    n = int(ptr[-1])
    keep = np.zeros((n, n), dtype=bool)
    for lo, hi in zip(ptr[:-1], ptr[1:]):
        keep[lo:hi, lo:hi] = rng.random((hi - lo, hi - lo)) < p
    rows, cols = np.nonzero(keep)
    return Mask.from_sorted_coo(n, rows.astype(np.int64), cols.astype(np.int64))


def _dense(mask: Mask, values: np.ndarray) -> np.ndarray:
    out = np.zeros((mask.n, mask.n), dtype=object)
    vals = np.broadcast_to(values, (mask.nnz,))
    for r, c, v in zip(mask.rows, mask.cols, vals):
        out[r, c] = int(v)
    return out


def _sampled(k: Kernels, a, va, b, vb, s, *, dense: bool, mp: pytest.MonkeyPatch) -> np.ndarray:
    with mp.context() as m:
        if not dense:
            m.setattr(Blocks, "worth_it", lambda *args: False)
        else:
            m.setattr(Blocks, "worth_it", lambda *args: True)
        return k.sampled(a, va, b, vb, s)


@pytest.mark.parametrize("seed", range(6))
def test_dense_blocks_equal_the_sparse_product_and_an_independent_one(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Graphs of mixed sizes (an empty one among them), masks read as stored or transposed,
    0/1 operands (the pattern product) and integer ones of both signs: the dense blocks give
    what GraphBLAS gives and what a Python-integer product of the whole matrices gives."""
    rng = np.random.default_rng(seed)
    sizes = [int(x) for x in rng.integers(0, 9, size=7)] + [0, 5]
    ptr, node_graph = _layout(sizes)
    n = int(ptr[-1])
    k = Kernels(n, ptr, node_graph, exact=True)
    a, b, s = (_random_mask(rng, ptr, p) for p in (0.4, 0.5, 0.6))
    if seed % 2:
        a, s = a.flip(), s.flip()
    if seed % 3 == 0:
        va = vb = np.array(1, dtype=np.int64)  # iso 1: the pattern product
    else:
        va = rng.integers(-5, 6, size=a.nnz).astype(np.int64)
        vb = rng.integers(-5, 6, size=b.nnz).astype(np.int64)
    want = (_dense(a, va) @ _dense(b, vb))[s.rows, s.cols].astype(np.int64)
    assert Blocks(ptr, node_graph).product(a, va, b, vb, s) is not None  # the dense path ran
    got_dense = _sampled(k, a, va, b, vb, s, dense=True, mp=monkeypatch)
    got_sparse = _sampled(k, a, va, b, vb, s, dense=False, mp=monkeypatch)
    assert got_dense.dtype == got_sparse.dtype == np.int64
    np.testing.assert_array_equal(got_dense, want)
    np.testing.assert_array_equal(got_sparse, want)


def test_one_operand_read_twice_and_scratch_reused_across_sizes_and_threads() -> None:
    """``A A`` on ``A`` scatters its operand once; the scratch the blocks reuse from one product
    to the next (a larger batch, then a smaller one, then from other threads at once) never
    carries a value over: every product equals the Python-integer one."""
    import concurrent.futures

    def case(seed: int, sizes: list[int], iso: bool) -> tuple[Blocks, Mask, np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        ptr, node_graph = _layout(sizes)
        a = _random_mask(rng, ptr, 0.5)
        va = np.array(1, dtype=np.int64) if iso else rng.integers(-4, 5, size=a.nnz)
        want = (_dense(a, va) @ _dense(a, va))[a.rows, a.cols].astype(np.int64)
        return Blocks(ptr, node_graph), a, va.astype(np.int64), want

    cases = [
        case(s, sizes, iso)
        for s, sizes, iso in [
            (0, [9, 8, 9, 7], True),
            (1, [3, 2], False),
            (2, [6, 9, 1], True),
            (3, [5, 4], False),
        ]
    ]
    for blocks, a, va, want in cases:  # large, then smaller: the scratch is longer than needed
        np.testing.assert_array_equal(blocks.product(a, va, a, va, a), want)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda c: c[0].product(c[1], c[2], c[1], c[2], c[1]), cases * 8))
    for g, (_, _, _, want) in zip(got, cases * 8):
        np.testing.assert_array_equal(g, want)


def test_past_float_exact_integers_the_sparse_kernel_answers() -> None:
    """Operands whose products could pass 2⁵³ are not put in float64 blocks: the dense path
    declines and the int64 kernel gives the exact value (which a float64 sum would round)."""
    ptr, node_graph = _layout([3])
    n = 3
    full = Mask.from_sorted_coo(
        n, np.repeat(np.arange(3), 3).astype(np.int64), np.tile(np.arange(3), 3).astype(np.int64)
    )
    big = np.full(9, 2**26 + 1, dtype=np.int64)
    assert Blocks(ptr, node_graph).product(full, big, full, big, full) is None
    got = Kernels(n, ptr, node_graph, exact=True).sampled(full, big, full, big, full)
    assert got.dtype == np.int64
    assert int(got[0]) == 3 * (2**26 + 1) ** 2  # exact: 2⁵³ + …, odd


def test_an_entry_outside_its_graph_is_never_read_as_a_block_cell() -> None:
    """A structure with an entry joining two graphs has no block cell: the dense path
    declines (the sparse kernel, which needs no blocks, answers)."""
    ptr, node_graph = _layout([2, 2])
    cross = Mask.from_sorted_coo(4, np.array([0, 1], dtype=np.int64), np.array([1, 2]))
    assert Blocks(ptr, node_graph).mask_cells(cross) is None
    one = np.array(1, dtype=np.int64)
    assert Blocks(ptr, node_graph).product(cross, one, cross, one, cross) is None


def test_float_operands_keep_the_sparse_kernel() -> None:
    ptr, node_graph = _layout([3, 2])
    m = _random_mask(np.random.default_rng(1), ptr, 0.9)
    v = np.linspace(0.1, 1.0, m.nnz)
    assert Blocks(ptr, node_graph).product(m, v, m, v, m) is None


def test_the_choice_follows_the_cost() -> None:
    """Many small graphs: dense blocks; one large sparse graph: the sparse product; a layout
    past the memory bound: never dense."""
    small = Blocks(*_layout([25] * 128))
    assert small.worth_it(32_000, 32_000, 3200)
    large = Blocks(*_layout([5000]))
    assert not large.worth_it(50_000, 50_000, 5000)
    wide = Blocks(*_layout([2100] * 1))
    assert wide.g * wide.m**2 > dense_blocks.MAX_CELLS
    assert not wide.worth_it(10**9, 10**9, 2100)


@pytest.mark.parametrize("text", ["A ⊙ A²", "(A ⊙ A²)² 𝟏", "tr(A⁴) - tr(A³) / 6", "A² ⊙ A³"])
def test_compiled_sentences_are_the_same_with_and_without_blocks(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compiled sentence on a batch of the fixture graphs: the same values, exactly, with
    the dense blocks taken wherever possible and with them switched off."""
    b = Batch.from_graphs(GRAPHS)
    mod = compile(text, dtype=torch.float64)
    calls: list[int] = []
    real = Blocks.product

    def counted(self, *args):
        out = real(self, *args)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(Blocks, "worth_it", lambda *args: True)
    monkeypatch.setattr(Blocks, "product", counted)
    with_blocks = mod(Batch.from_graphs(GRAPHS))
    assert any(calls)
    monkeypatch.setattr(Blocks, "worth_it", lambda *args: False)
    without = compile(text, dtype=torch.float64)(b)
    assert torch.equal(_plain(with_blocks), _plain(without))


def _plain(x: torch.Tensor) -> torch.Tensor:
    return x.to_dense() if x.layout != torch.strided else x
