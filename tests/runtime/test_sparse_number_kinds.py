"""The exact sparse evaluator keeps number kinds apart: a product with a float operand is a
float (a rational operand read at its value), exact operands stay exact — never a float product
turned back into a Fraction by truncation."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

import matlang
from matlang.errors import EvaluationError
from matlang.graphs import as_graph

SIGMOID_1 = 1 / (1 + math.exp(-1))


def _ring(n: int) -> object:
    from torch_geometric.data import Data

    i = np.arange(n)
    ei = np.stack([np.r_[i, (i + 1) % n], np.r_[(i + 1) % n, i]])
    return Data(edge_index=torch.from_numpy(ei), num_nodes=n)


def test_rational_matrix_times_float_vector_is_a_float() -> None:
    got = matlang.evaluate("(A ⊙ (A/2)) sigmoid(ones)", "K3", sparse=True)
    assert [float(v) for v in got] == pytest.approx([SIGMOID_1] * 3, rel=1e-15)
    assert all(isinstance(v, float) for v in got.tolist())
    assert list(got) == list(matlang.evaluate("(A ⊙ (A/2)) sigmoid(ones)", "K3"))


def test_weighted_graph_times_rational_vector() -> None:
    g = as_graph(np.array([[0, 0.5], [0.5, 0]]), allow_weights=True)
    got = matlang.evaluate("A (ones/2)", g, sparse=True)
    assert [float(v) for v in got] == [0.25, 0.25]


def test_float_matrix_times_rational_vector() -> None:
    got = matlang.evaluate("(tanh(A)) (ones/2)", "K3", sparse=True)
    assert [float(v) for v in got] == pytest.approx([math.tanh(1)] * 3, rel=1e-15)


def test_exact_operands_stay_exact() -> None:
    assert list(matlang.evaluate("A^2 (ones/3)", "K3", sparse=True)) == [Fraction(4, 3)] * 3
    got = matlang.evaluate("(A/3) (A/2)", "K3", sparse=True)
    assert got[0, 0] == Fraction(1, 3) and got[0, 1] == Fraction(1, 6)


def test_division_with_a_float_is_a_float() -> None:
    got = matlang.evaluate("ones'(sigmoid(A ones) / 3)", "K3", sparse=True)
    want = 3 * (1 / (1 + math.exp(-2))) / 3
    assert isinstance(got, float) and got == pytest.approx(want, rel=1e-15)


def test_large_ring_takes_the_sparse_path_with_floats() -> None:
    """Past 4096 nodes the default path is GraphBLAS: 2500 (truncated halves) before."""
    got = matlang.evaluate("tr(diag((A ⊙ (A/2)) sigmoid(ones)))", _ring(5000))
    assert got == pytest.approx(5000 * SIGMOID_1, rel=1e-12)


def test_exact_value_past_float64_meeting_a_function_is_refused() -> None:
    with pytest.raises(EvaluationError, match="309 digits does not fit in float64"):
        matlang.evaluate("let f(x) = x + 1e308; tr(abs(f(A) A))", "K4", sparse=True)


# float64 underflow of a nonzero value is refused as overflow is ---------------------------------

TINY = "tr(A^2) * 1e-300 * 1e-300 * 1e300 * 1e300"


@pytest.mark.parametrize("constants", ["graphblas", "torch", "none"])
def test_underflow_to_zero_is_refused_like_overflow(constants: str) -> None:
    assert matlang.evaluate(TINY, "K4") == 12  # the exact value
    module = matlang.compile(TINY, dtype=torch.float64, constants=constants)
    with pytest.raises(EvaluationError, match="underflows to 0 on graph K4"):
        module(["K4"])
    ok = matlang.compile("tr(A^2) * 1e-300 * 1e300", dtype=torch.float64, constants=constants)
    assert float(ok(["K4"])[0]) == pytest.approx(12, rel=1e-12)


def test_underflow_is_kept_with_nonfinite_keep() -> None:
    module = matlang.compile(TINY, dtype=torch.float64, nonfinite="keep")
    assert float(module(["K4"])[0]) == 0.0


def test_a_true_zero_product_is_not_an_underflow() -> None:
    module = matlang.compile("tr(A) * 1e-300", dtype=torch.float64)
    assert float(module(["K4"])[0]) == 0.0


def test_a_matrix_holding_floats_comes_back_as_floats() -> None:
    text = "max(A, 0.5) ⊙ -min(A, 1e3) / .25"
    got = matlang.evaluate(text, "P3", sparse=True).toarray()
    want = matlang.evaluate(text, "P3")
    assert got.dtype == np.float64 and np.array_equal(got, want.astype(np.float64))
