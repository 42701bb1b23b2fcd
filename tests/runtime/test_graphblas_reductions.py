"""Issue 32, items 1-2: per-graph reductions are segment sums (a graph's value never depends on
the graphs before it) and iso values read on a flipped mask are spread over its entries."""

from __future__ import annotations

from fractions import Fraction
from unittest import mock

import numpy as np
import pytest
import torch

import matlang
from matlang.runtime.graphblas import segment_sum


@pytest.mark.parametrize(
    "offsets",
    [[0, 0], [0, 3], [0, 0, 2, 2, 5], [0, 2, 2, 2], [0, 0, 0], [0, 1, 2, 3]],
)
def test_segment_sum_matches_each_segment_alone(offsets: list[int]) -> None:
    rng = np.random.default_rng(len(offsets))
    ptr = np.array(offsets, dtype=np.int64)
    for values in (
        rng.integers(-5, 5, ptr[-1]).astype(np.int64),
        rng.normal(size=ptr[-1]) * 10.0 ** rng.integers(-3, 18, ptr[-1]),
        np.array([Fraction(int(k), 3) for k in rng.integers(-5, 5, ptr[-1])], dtype=object),
    ):
        got = segment_sum(values, ptr)
        assert got.dtype == values.dtype and got.shape == (ptr.size - 1,)
        for k in range(ptr.size - 1):
            alone = values[ptr[k] : ptr[k + 1]]
            want = np.add.reduce(alone) if alone.size else 0
            assert got[k] == want  # the same rounding as the segment alone, bit for bit


def test_small_float_after_a_huge_one_keeps_its_digits() -> None:
    ptr = np.array([0, 40, 43], dtype=np.int64)
    v = np.concatenate([np.full(40, np.exp(39.0)), np.exp([1.0, 2.0, 1.0])])
    assert segment_sum(v, ptr)[1] == np.add.reduce(np.exp([1.0, 2.0, 1.0]))


# --------------------------------------------------------------------------- the reproducers


def test_exp_readout_after_k40() -> None:
    alone = float(matlang.evaluate("onesᵀ exp(A ones)", "path3", exact=False))
    assert alone == pytest.approx(2 * np.e + np.e**2, rel=1e-15)
    m = matlang.compile("onesᵀ exp(A ones)", dtype=torch.float64)
    got = m(["K40", "path3"])
    assert got[1].item() == pytest.approx(alone, rel=1e-14)
    # the per-graph cache holds the right value
    assert m(["path3"]).item() == pytest.approx(alone, rel=1e-14)
    sparse = matlang.evaluate("onesᵀ exp(A ones)", ["K40", "path3"], sparse=True)
    assert sparse[1] == pytest.approx(alone, rel=1e-14)


def test_float64_walk_counts_after_k60() -> None:
    m = matlang.compile("tr(A^12)", dtype=torch.float64)
    got = m(["K60", "path3", "cycle4"]).tolist()
    want = [matlang.evaluate("tr(A^12)", g) for g in ("K60", "path3", "cycle4")]
    assert got[1:] == [128.0, 8192.0] == [float(w) for w in want[1:]]
    assert got[0] == pytest.approx(float(want[0]), rel=1e-12)


def test_row_sums_after_a_huge_row() -> None:
    # (exp(A) ⊙ A) 𝟏 sums each row on the edges: K40's rows are e·39, path3's e, 2e, e
    got = matlang.evaluate("(exp(39 A) ⊙ A) ones", ["K40", "path3"], sparse=True)
    assert got[1].tolist() == pytest.approx([np.exp(39.0), 2 * np.exp(39.0), np.exp(39.0)])


@pytest.mark.parametrize(
    "sentence",
    [
        "(A ⊙ (I A)ᵀ) ones",
        "(A ⊙ (A I)ᵀ) ones",
        "(A ⊙ (diag(ones) A)ᵀ) ones",
        "(A ⊙ (I A + A)ᵀ) ones",
        "onesᵀ (A ⊙ (I A)ᵀ) ones",
        "tr((A + I A)^3)",
        "tr(A (A + I A))",
        "tr((I A)ᵀ A)",
        "onesᵀ ((I A)ᵀ ⊙ (A I)ᵀ) ones",
        "(A² ⊙ (I A)ᵀ) ones",
    ],
)
@pytest.mark.parametrize("graph", ["cycle4", "K5", "petersen"])
def test_identity_factor_under_transpose(sentence: str, graph: str) -> None:
    want = matlang.evaluate(sentence, graph)
    got = matlang.evaluate(sentence, graph, sparse=True)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    for dtype in (torch.float32, torch.float64):
        m = matlang.compile(sentence, dtype=dtype, cache=False)
        np.testing.assert_array_equal(
            m([graph]).detach().numpy().reshape(-1), np.asarray(want, dtype=np.float64).reshape(-1)
        )


def test_maxabs_is_exact_at_the_extremes() -> None:
    """``maxabs`` reads the extremes (no |x| temporary): exact for int64's most negative value,
    for mixed signs, bools, floats with inf, and 0 for an empty array."""
    from matlang.runtime.graphblas import maxabs

    assert maxabs(np.array([-(2**63), 5], dtype=np.int64)) == 2**63
    assert maxabs(np.array([3, -7, 2], dtype=np.int64)) == 7
    assert maxabs(np.array([True, False])) == 1
    assert maxabs(np.array([-1.5, 0.25])) == 1.5
    assert maxabs(np.array([1.0, -np.inf])) == np.inf
    assert maxabs(np.zeros(0, dtype=np.int64)) == 0


@pytest.mark.parametrize("seed", range(4))
def test_entry_positions_and_matvec_against_dense(seed: int) -> None:
    """``Mask.positions`` (a binary search inside each row) equals the search in the sorted
    keys, and the scipy-kernel ``M h`` / ``Mᵀ h`` on a mask's own arrays equals the dense
    product, integers exactly, transposed masks included."""
    from matlang.runtime import graphblas
    from matlang.runtime.graphblas import Kernels, Mask

    rng = np.random.default_rng(seed)
    n = 40
    dense = (rng.random((n, n)) < 0.15) * rng.integers(-5, 6, (n, n))
    dense[rng.integers(0, n)] = 0  # an empty row
    rows, cols = np.nonzero(np.ones((n, n)) * (rng.random((n, n)) < 0.2) + (dense != 0))
    mask = Mask.from_sorted_coo(n, rows, cols)
    pick = np.sort(rng.choice(mask.nnz, size=mask.nnz // 3, replace=False))
    got = mask.positions(mask.base_rows[pick], mask.indices[pick])
    assert np.array_equal(got, pick)
    assert np.array_equal(got, np.searchsorted(mask.keys, mask.keys[pick]))
    assert mask.positions(np.zeros(0, np.int64), np.zeros(0, np.int64)).size == 0
    # the same places by the vectorised search, where scipy's kernel is not there
    with mock.patch.object(graphblas, "_sample_offsets", lambda *a: None):
        assert np.array_equal(mask.positions(mask.base_rows[pick], mask.indices[pick]), pick)
        assert mask.positions(np.zeros(0, np.int64), np.zeros(0, np.int64)).size == 0
    vals = dense[rows, cols].astype(np.int64)
    h = rng.integers(-3, 4, n).astype(np.int64)
    kern = Kernels(n, np.array([0, n]), np.zeros(n, dtype=np.int64), exact=True)
    m = np.zeros((n, n), dtype=np.int64)
    m[rows, cols] = vals
    for transpose, ref in ((False, m @ h), (True, m.T @ h)):
        out = kern.propagate(mask, vals, h, transpose)
        assert out.dtype == np.int64 and np.array_equal(out, ref)
        flipped = kern.propagate(mask.flip(), vals, h, not transpose)  # Sᵀ read back
        assert np.array_equal(flipped, ref)
    hf = rng.random(n)
    assert np.allclose(kern.propagate(mask, vals.astype(np.float64), hf, False), m @ hf)
    one = np.array(1, dtype=np.int64)
    assert kern.mul(one, vals) is vals and kern.mul(vals, one) is vals  # 1 ⊙ M: no copy
    assert np.array_equal(kern.mul(np.array(2), vals), 2 * vals)


def test_entry_positions_in_long_rows_and_outside_the_structure() -> None:
    """Rows long enough for scipy's kernel to search instead of scan (a dense row of 3,000
    entries among short ones) give the same places as the sorted keys; an entry the structure
    does not hold is an internal error, never a place read as -1 (the last entry)."""
    from matlang.errors import EvaluationError
    from matlang.runtime.graphblas import Mask

    rng = np.random.default_rng(7)
    n = 3000
    rows = np.concatenate([np.zeros(n, np.int64), rng.integers(1, n, 4000)])
    cols = np.concatenate([np.arange(n), rng.integers(0, n, 4000)])
    keys = np.unique(rows * n + cols)
    mask = Mask.from_sorted_coo(n, keys // n, keys % n)
    pick = np.sort(rng.choice(mask.nnz, size=2000, replace=False))
    got = mask.positions(mask.base_rows[pick], mask.indices[pick])
    assert np.array_equal(got, pick)
    absent = np.setdiff1d(np.arange(n * n), keys)[:1]
    with pytest.raises(EvaluationError, match="outside its mask"):
        mask.positions(absent // n, absent % n)


def _ring_lattice(n: int, k: int, drop: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A symmetric ring lattice (each node joined to its ``k`` next ones), a share ``drop`` of
    its edges removed: many triangles, so ``A ⊙ A²`` holds most of its entries."""
    rng = np.random.default_rng(seed)
    src = np.repeat(np.arange(n), k)
    dst = (src + np.tile(np.arange(1, k + 1), n)) % n
    keep = rng.random(src.size) >= drop
    keys = np.unique(np.concatenate([src[keep] * n + dst[keep], dst[keep] * n + src[keep]]))
    return keys // n, keys % n


@pytest.mark.parametrize(
    ("n", "drop", "transposed"),
    [
        (60, 0.0, False),  # every entry there: the values exported as they are
        (60, 0.4, False),  # most there, a small mask: each one's place found in its row
        (60, 0.9, True),  # few there, read transposed
        (30000, 0.05, False),  # > 2¹⁷ entries, all but a few there: GraphBLAS fills the rest
        (30000, 0.3, True),  # > 2¹⁷ entries, most there, transposed
        (100000, 0.8, False),  # > 2¹⁷ entries, fewer than half there: places found
    ],
)
def test_align_puts_each_value_at_its_entry_on_every_path(
    n: int, drop: float, transposed: bool
) -> None:
    """``Mask.align`` (a GraphBLAS result on a mask's structure as one value per entry, 0
    where the result has none) equals the result read entry by entry from scipy, on each of
    its paths: every entry there, few or few in all (each one's place found in its row), and
    more than half of over 2¹⁷ (the mask filled in GraphBLAS)."""
    import graphblas as gb
    import scipy.sparse as sp

    from matlang.runtime.graphblas import Mask

    rows, cols = _ring_lattice(n, 5, drop, seed=n)
    mask = Mask.from_sorted_coo(n, rows, cols)
    read = mask.flip() if transposed else mask
    a = gb.Matrix.from_coo(rows, cols, 1, nrows=n, ncols=n, dtype=gb.dtypes.INT64)
    c = gb.Matrix(gb.dtypes.INT64, n, n)
    c(a.S) << a.mxm(a, gb.semiring.plus_pair[gb.dtypes.INT64])  # common neighbours
    got = read.align(c, np.dtype(np.int64))
    adj = sp.csr_matrix((np.ones(rows.size, dtype=np.int64), (rows, cols)), shape=(n, n))
    common = (adj @ adj).tocsr()
    # entry k of a transposed read is entry k of the structure, flipped
    r, q = (cols, rows) if transposed else (rows, cols)
    want = np.asarray(common[r, q]).ravel()
    assert got.dtype == np.int64 and np.array_equal(got, want)
    if n > 1000:  # the cases meant: over 2¹⁷ entries, and the share there as described
        there = int((want != 0).sum())
        assert mask.nnz > 1 << 17 and (there * 2 < mask.nnz) == (drop > 0.5)


def test_functions_of_float_weights_on_the_sparse_path_are_floats_not_truncated() -> None:
    """The GraphBLAS exact stage ran ``f`` on float weights as Python numbers and then cut the
    values to integer numerators: ``𝟏ᵀ square(A) 𝟏`` with weights 0.5 gave 0 (and 4 for 1.5,
    exact 4.5). Float arguments now take the float path, as the dense evaluator does; the
    values below are numpy's, on the dense weighted matrix."""
    from torch_geometric.data import Data

    ei = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    d = Data(edge_index=ei, edge_weight=torch.tensor([1.5, 1.5, 1.0, 1.0]), num_nodes=3)
    w = np.zeros((3, 3))
    w[0, 1] = w[1, 0] = 1.5
    w[1, 2] = w[2, 1] = 1.0
    deg = w.sum(1)
    cases = {
        "𝟏ᵀ square(A) 𝟏": (w**2).sum(),  # 6.5
        "let f(x) = x/3; 𝟏ᵀ f(A) 𝟏": (w / 3).sum(),
        "let f(x) = x*x; 𝟏ᵀ diag(f(A 𝟏)) A 𝟏": (deg**2 * deg).sum(),  # 20
        "let f(x) = x*x; 𝟏ᵀ (f(A) ⊙ A) 𝟏": (w**3).sum(),  # 8.75
    }
    for s, want in cases.items():
        assert matlang.evaluate(s, d, sparse=True) == pytest.approx(want, rel=1e-12), s
        assert matlang.evaluate(s, d) == pytest.approx(want, rel=1e-12), s


def test_common_denominator_never_truncates_a_float() -> None:
    from matlang.runtime.graphblas import _common_denominator

    num, den = _common_denominator(np.array([Fraction(1, 2), 3], dtype=object))
    assert num.dtype == np.int64 and num.tolist() == [1, 6] and den == 2
    num, den = _common_denominator(np.array([Fraction(1, 2), 0.25, 2], dtype=object))
    assert num.dtype == np.float64 and num.tolist() == [0.5, 0.25, 2.0] and den == 1
