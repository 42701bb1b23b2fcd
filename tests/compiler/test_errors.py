"""Errors a user can cause: full masks (located, with the reason), functions undefined at 0,
sentences of different levels, bad batches (asymmetric, self-loops, out-of-range, crossing
graphs), division by zero, missing inputs, and bad options. Never a deep traceback, never a
silently wrong number."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from matlang.compiler.api import compile
from matlang.compiler.lower import LoweringError
from matlang.compiler.support import FullMaskError
from matlang.errors import CompileError, EvaluationError, GraphError, MatlangError, SourceError
from matlang.evaluator import evaluate
from matlang.graphs import from_adjacency, named
from matlang.runtime.batch import Batch

P = pytest.param

FULL = [
    P("exp(A) 𝟏", "1:1", "^^^^^^", "exp(A) is multiplied with a vector", "exp(0) = 1 ≠ 0",
      id="exp-times-vector"),
    P("𝟏ᵀ cos(A²) A 𝟏", "1:4", "^^^^^^^", "cos(A²) is multiplied with a vector", "cos(0) = 1",
      id="cos-in-a-product"),
    P("𝟏 𝟏ᵀ", "1:1", "^^^^", "𝟏 𝟏ᵀ is the value of the sentence", "a column times a row",
      id="outer-product-value"),
    P("let g(x, y) = x*y + 1\ng(A, A²) 𝟏", "2:1", "^^^^^^^^", "g(A, A²) is multiplied",
      "g(0, 0) = 1 ≠ 0", id="second-line"),
    P("tr(sigmoid(A) cos(A))", "1:4", "^" * 17, "sigmoid(A) cos(A) must be materialised",
      "sigmoid(0) = 0.5", id="trace-of-product"),
]


@pytest.mark.parametrize("text, where, caret, what, why", FULL)
def test_full_masks_name_the_subexpression_and_why(
    text: str, where: str, caret: str, what: str, why: str
) -> None:
    with pytest.raises(FullMaskError) as info:
        compile(text)
    err = info.value
    assert isinstance(err, CompileError) and isinstance(err, SourceError)
    shown = str(err)
    line, col = (int(x) for x in where.split(":"))
    assert shown.startswith(f"{where}: compile error: {what}")
    assert why in shown
    src = text.split("\n")[line - 1]
    assert f"\n  {src}\n  {' ' * (col - 1)}{caret}\n" in shown
    assert "dense=True" in shown
    compile(text, dense=True)  # knowingly dense: fine


def test_a_full_factor_under_a_trace_needs_only_its_sparse_partner() -> None:
    # diag(f(A) A²)_i = Σ_k f(A)_ik (A²)_ki: f(A) is needed on the 2-hop mask only
    model = compile("tr(sigmoid(A) A²)", dtype=torch.float64)
    assert "full" not in [s.op for s in model.plan.steps]
    assert model(["petersen"]).item() == pytest.approx(evaluate("tr(sigmoid(A) A²)", "petersen"))


def test_outer_products_applied_to_vectors_are_not_full() -> None:
    model = compile("𝟏ᵀ (𝟏 𝟏ᵀ)² A 𝟏 + tr(A 𝟏 𝟏ᵀ)", dtype=torch.float64)
    assert "full" not in [s.op for s in model.plan.steps]
    g = named("petersen")
    assert model([g]).item() == evaluate("𝟏ᵀ (𝟏 𝟏ᵀ)² A 𝟏 + tr(A 𝟏 𝟏ᵀ)", g)


def test_functions_undefined_at_zero_on_a_sparse_matrix() -> None:
    # log(A) is -∞ off the edges, so the dense meaning is not finite: refuse, do not mask it
    with pytest.raises(LoweringError, match=r"log\(A\) is not finite wherever its argument is 0"):
        compile("𝟏ᵀ (log(A) ⊙ A) 𝟏")
    with pytest.raises(EvaluationError):
        evaluate("𝟏ᵀ (log(A) ⊙ A) 𝟏", "K4")
    # on a full support it is the dense meaning: log(A + 𝟏𝟏ᵀ) ⊙ A = log(2) A
    model = compile("𝟏ᵀ (log(A + 𝟏 𝟏ᵀ) ⊙ A) 𝟏", dtype=torch.float64)
    assert model(["K4"]).item() == pytest.approx(12 * np.log(2), rel=1e-12)


def test_sentences_of_different_levels() -> None:
    with pytest.raises(CompileError, match="different levels"):
        compile("tr(A); A 𝟏")
    with pytest.raises(CompileError, match="different levels"):
        compile(["A ⊙ A²", "A²"])  # matrices are compiled one at a time
    with pytest.raises(CompileError, match="no sentence"):
        compile("let f(x) = x")


# --------------------------------------------------------------------------- batches


def _batch(edge_index: list[list[int]], sizes: list[int]) -> Batch:
    ptr = torch.tensor([0, *np.cumsum(sizes)], dtype=torch.int64)
    batch = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    return Batch(torch.tensor(edge_index, dtype=torch.int64).reshape(2, -1), batch, ptr)


BAD_BATCHES = [
    P([[0, 1], [1, 2]], [3], "has no reverse edge", id="asymmetric"),
    P([[0, 1, 1], [1, 0, 1]], [3], "self-loop at node 1", id="self-loop"),
    P([[0, 5], [5, 0]], [3], "refers to node 5 but the batch has 3 nodes", id="out-of-range"),
    P([[0, 3], [3, 0]], [3, 2], "joins graph #0 to graph #1", id="crossing-graphs"),
    P([[0, 1, 0, 1], [1, 0, 1, 0]], [2], "stored twice", id="repeated-edge"),
]


@pytest.mark.parametrize("edges, sizes, message", BAD_BATCHES)
def test_bad_batches_are_graph_errors(edges: list[list[int]], sizes: list[int], message: str)\
        -> None:
    model = compile("𝟏ᵀ (A ⊙ A²)² 𝟏")
    b = _batch(edges, sizes)
    with pytest.raises(GraphError, match=message):
        model(b)
    data = SimpleNamespace(edge_index=b.edge_index, batch=b.batch, num_nodes=b.num_nodes)
    with pytest.raises(GraphError, match=message):
        model(data)


def test_validation_can_be_skipped_knowingly() -> None:
    ok = _batch([[0, 1], [1, 0]], [2])
    assert compile("𝟏ᵀ A 𝟏", validate=False)(ok).item() == 2


# --------------------------------------------------------------------------- evaluation


def test_division_by_zero_names_the_graph() -> None:
    empty = from_adjacency(np.zeros((3, 3), dtype=np.int64), name="empty3")
    model = compile("A 𝟏 / (𝟏ᵀ A 𝟏)")
    with pytest.raises(EvaluationError, match=r"on graph empty3: the divisor 𝟏ᵀ A 𝟏 is 0"):
        model([named("K4"), empty])
    with pytest.raises(EvaluationError):
        evaluate("A 𝟏 / (𝟏ᵀ A 𝟏)", empty)
    # a graph without edges still reports it when the quotient lives on the edges
    with pytest.raises(EvaluationError, match="empty3"):
        compile("(A / (𝟏ᵀ A 𝟏)) 𝟏")([empty])


def test_nonfinite_values_are_errors_unless_kept() -> None:
    text = "𝟏ᵀ sqrt(A 𝟏 - 3 𝟏)"
    with pytest.raises(EvaluationError, match="not finite|nan"):
        evaluate(text, "cycle5")
    with pytest.raises(EvaluationError, match="sqrt"):
        compile(text)(["cycle5"])
    assert torch.isnan(compile(text, nonfinite="keep")(["cycle5"])).all()


def test_inputs_must_be_given_with_one_value_per_node() -> None:
    model = compile("input h; A h")
    with pytest.raises(EvaluationError, match="no value for input 'h'"):
        model(["K4"])
    with pytest.raises(GraphError, match=r"shape \(4,\) or \(4, d\) .* one row per node"):
        model(["K4"], inputs={"h": torch.ones(3)})
    assert model(["K4"], inputs={"h": torch.ones(4, 1)}).tolist() == [3.0] * 4


def test_inputs_are_checked_by_name_and_shape() -> None:
    """Issue 18 item 6: x with 6 rows on a 3-node graph, 5 rows, a typo in a name, a non-finite
    value: a GraphError before torch sees them; an 8-column x is 8 channels of the one input."""
    from matlang.graphs import complete
    from matlang.runtime.batch import Batch

    model = compile("input h; A h", dtype=torch.float64)
    k3 = Batch.from_graphs([complete(3)])
    for rows in (6, 5):
        bad = Batch(k3.edge_index, k3.batch, k3.ptr, torch.ones(rows, 1))
        with pytest.raises(GraphError, match=rf"\(3,\) or \(3, d\).*got \({rows},\)"):
            model(bad)
    with pytest.raises(GraphError, match="unknown input 'hh'.*declares 'h'"):
        model(k3, inputs={"hh": torch.ones(3)})
    with pytest.raises(GraphError, match="non-finite"):
        model(k3, inputs={"h": torch.tensor([1.0, float("nan"), 0.0])})
    x = torch.arange(24, dtype=torch.float64).reshape(3, 8)
    out = model(Batch(k3.edge_index, k3.batch, k3.ptr, x))
    assert out.shape == (3, 8)
    for k in range(8):
        assert out[:, k].tolist() == model(k3, inputs={"h": x[:, k]}).tolist()
    two = compile("input h; input g; A h + g")
    with pytest.raises(GraphError, match="8 column.*2 inputs"):
        two(Batch(k3.edge_index, k3.batch, k3.ptr, x))


BAD_OPTIONS = [
    P({"backend": "nope"}, MatlangError, "unknown sparse backend", id="backend"),
    P({"dtype": "float16"}, MatlangError, "dtype must be", id="dtype"),
    P({"weights": "some"}, CompileError, "weights must be", id="weights"),
    P({"nonfinite": "ignore"}, MatlangError, "nonfinite must be", id="nonfinite"),
]


@pytest.mark.parametrize("options, kind, message", BAD_OPTIONS)
def test_bad_options(options: dict[str, str], kind: type[Exception], message: str) -> None:
    with pytest.raises(kind, match=message):
        compile("tr(A³)", **options)  # type: ignore[arg-type]
