"""The GNNML1 target (Theorem 6 made constructive) against the exact dense evaluator."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import matlang
from matlang import ast
from matlang.compiler.targets.gnnml1 import GNNML1Target, gnnml1_target
from matlang.compiler.targets.program import evaluate_output, input_features
from matlang.errors import CompileError, EvaluationError, MatlangError
from matlang.evaluator import evaluate, to_float
from matlang.graphs import Graph, from_adjacency, named
from matlang.runtime import sparse
from matlang.runtime.batch import Batch
from matlang.runtime.generators import erdos_renyi, one_wl_equivalent_pairs
from matlang.runtime.models.gnnml1 import GNNML1Conv
from matlang.runtime.wl import equivalent
from tests.fixtures import RandomSentence

PAPER = ["decalin", "bicyclopentyl", "cospectral_G", "cospectral_H", "rook4x4", "shrikhande"]

#: L1 sentences without pointwise functions (after macro expansion), graph- and node-level.
L1_SENTENCES = [
    "ones' A ones",
    "ones' A^2 ones",
    "ones' A^3 ones",
    "ones' deg",
    "deg' deg",
    "ones' (deg .* deg .* deg)",
    "ones' diag(deg) A diag(deg) ones",
    "ones' A diag(A ones) A ones",
    "A diag(A ones) A ones",
    "A' ones",
    "(A')^2 ones - A^2 ones",
    "ones' (A^2)' ones",
    "2 * ones' A ones - 3 * ones' ones",
    "(ones' A ones + ones' A^2 ones) / 2",
    "ones' L ones",
    "ones' L^2 ones",
    "L deg",
    "ones' I ones",
    "I A ones",
    "diag(deg) diag(deg) ones",
    "(A ones .* A^2 ones) - 2 ones",
    "ones' diag(A^2 ones) ones",
    "deg' A deg",
    "(ones' A)(A ones)",
    "ones' (A + I)^3 ones",
    "ones' (A - diag(deg))^2 ones",
    "-(A ones)",
    "ones' A ones / 2",
    "A ones * (1/3)",
    "A^0 ones",
    "diag(deg)^2 ones",
    "ones' diag(diag(deg) A ones) A ones",
    "deg .* (A deg) .* (A^2 deg)",
    "(ones' A)' .* (A^2 ones)' '",
    "ones' (A diag(deg) + diag(deg) A)' deg",
    # products and quotients of graph scalars: exact in the readout head
    "(ones' A ones)^2",
    "(ones' A ones) * A ones",
    "ones' A^2 ones / (ones' ones)",
    "ones ones' A ones",
    "ones' (deg deg') ones",
    "(ones' deg) * (deg' deg) - ones' A^3 ones",
]

#: L1 sentences with declared input vectors.
INPUT_SENTENCES = [
    "input h; ones' diag(h) A h",
    "input h; A h .* h + 2 h",
    "input h, g; ones' (h .* g) + g' A^2 h",
    "input h, g; A (h .* A g) - diag(g) h",
]

#: Polynomial pointwise functions expand into ⊙, so GNNML1 realises them too.
POLYNOMIAL_SENTENCES = [
    "ones' binom(A ones, 3)",
    "let f(x) = x*x - x; ones' f(A ones)",
    "let f(x, y) = x*y + 1; f(A ones, A^2 ones)",
    "square(ones' A ones) - ones' ones",
]


# --------------------------------------------------------------------------- graphs


def _with_isolated(g: Graph, extra: int, name: str, x: np.ndarray | None = None) -> Graph:
    n = g.num_nodes + extra
    a = np.zeros((n, n), dtype=np.int64)
    a[: g.num_nodes, : g.num_nodes] = g.adjacency
    return from_adjacency(a, name=name, x=x)


def random_graphs(seed: int, count: int, features: bool = False) -> list[Graph]:
    """Erdős–Rényi graphs of 1 to 10 nodes, most with isolated nodes appended."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        n = int(rng.integers(1, 9))
        g = erdos_renyi(n, float(rng.uniform(0.2, 0.7)), seed=rng)
        extra = int(rng.integers(0, 3))
        x = rng.integers(-2, 4, size=(n + extra, 2)) if features else None
        out.append(_with_isolated(g, extra, f"er{seed}_{k}", x))
    return out


def paper_graphs(features: bool = False) -> list[Graph]:
    rng = np.random.default_rng(1)
    out = []
    for name in PAPER:
        g = named(name)
        x = rng.integers(-2, 4, size=(g.num_nodes, 2)) if features else None
        out.append(from_adjacency(g.adjacency, name=name, x=x))
    return out


GRAPHS = paper_graphs() + random_graphs(0, 10)
FEATURE_GRAPHS = paper_graphs(features=True) + random_graphs(1, 8, features=True)
BACKENDS = sparse.available_backends()


def dense_values(e: ast.Expr, graphs: list[Graph]) -> np.ndarray:
    """The dense evaluator's values, concatenated (one per graph, or one per node)."""
    vals = evaluate(e, graphs)
    return np.concatenate([np.asarray(to_float(v), dtype=np.float64).reshape(-1) for v in vals])


def assert_matches(got: torch.Tensor, want: np.ndarray) -> None:
    assert got.dtype == torch.float64
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------- equality with dense


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("text", L1_SENTENCES + POLYNOMIAL_SENTENCES)
def test_target_equals_dense(text: str, backend: str) -> None:
    e = matlang.parse(text)
    target = gnnml1_target(e, backend=backend)
    batch = Batch.from_graphs(GRAPHS)
    assert_matches(target(batch), dense_values(e, GRAPHS))
    # the same sentence, graphs in another order (mixed sizes, isolated nodes everywhere)
    shuffled = GRAPHS[::-1]
    assert_matches(target(shuffled), dense_values(e, shuffled))


@pytest.mark.parametrize("text", INPUT_SENTENCES)
def test_target_with_input_vectors_equals_dense(text: str) -> None:
    e = matlang.parse(text)
    target = gnnml1_target(e)
    assert_matches(target(Batch.from_graphs(FEATURE_GRAPHS)), dense_values(e, FEATURE_GRAPHS))
    # inputs given by name instead of feature columns
    batch = Batch.from_graphs(GRAPHS)
    h = torch.arange(batch.num_nodes, dtype=torch.float64) % 5 - 2
    g = torch.arange(batch.num_nodes, dtype=torch.float64) % 3
    names = ast.inputs_of(e)
    given = {"h": h, "g": g}
    values = []
    for k, graph in enumerate(GRAPHS):
        lo, hi = int(batch.ptr[k]), int(batch.ptr[k + 1])
        local = {n: given[n][lo:hi].numpy() for n in names}
        values.append(np.asarray(to_float(evaluate(e, graph, inputs=local))).reshape(-1))
    assert_matches(target(batch, **{n: given[n] for n in names}), np.concatenate(values))


def test_weighted_graphs_equal_dense() -> None:
    rng = np.random.default_rng(3)
    graphs = []
    for k, g in enumerate([named("decalin"), *random_graphs(10, 3)]):
        w = np.triu(rng.uniform(0.5, 2.0, g.adjacency.shape), 1)
        w = (w + w.T) * g.adjacency
        graphs.append(from_adjacency(w, name=f"w{k}", allow_weights=True))
    for text in ["ones' A^2 ones", "A diag(A ones) A ones", "deg' L deg"]:
        e = matlang.parse(text)
        assert_matches(gnnml1_target(e)(graphs), dense_values(e, graphs))


def interpret(program: Any, batch: Batch) -> torch.Tensor:
    """A lowered program run node by node in id order, without layers: the reference the
    schedule (which node is a channel of which layer) is checked against."""
    h0 = input_features(program, batch, {}, torch.float64)
    values = {x: h0[:, j] for j, x in enumerate([program.ones, *program.input_nodes()])}

    def lin(key: Any) -> torch.Tensor:
        out = torch.zeros(batch.num_nodes, dtype=torch.float64)
        for k, c in key.items() if isinstance(key, dict) else key:
            out = out + float(c) * values[k]
        return out

    for i, v in enumerate(program.vectors):
        if i in values:
            continue
        assert v.op in ("prop", "had"), v.op  # GNNML1 nodes
        if v.op == "prop":
            values[i] = sparse.propagate(
                batch.edge_index, lin(v.args[0]), batch.edge_weight, batch.num_nodes
            )
        else:
            values[i] = lin(v.args[0]) * lin(v.args[1])
    return evaluate_output(
        program,
        batch,
        lambda x: sparse.scatter_sum(values[x], batch.batch, batch.num_graphs),
        lin,
        h0,
    )


def test_program_interpreter_equals_dense_and_the_layers() -> None:
    batch = Batch.from_graphs(GRAPHS)
    for text in L1_SENTENCES[:12]:
        e = matlang.parse(text)
        by_nodes = interpret(GNNML1Target.lower(e), batch)
        assert_matches(by_nodes, dense_values(e, GRAPHS))
        assert_matches(gnnml1_target(e)(batch), by_nodes.numpy())


# --------------------------------------------------------------------------- the layers


def test_layers_are_the_reference_gnnml1_layers_with_identity_activation() -> None:
    target = gnnml1_target("ones' A^3 ones")
    assert target.num_layers == 3
    assert all(isinstance(conv, GNNML1Conv) for conv in target.layers)
    assert all(conv.activation == "identity" and conv.bias is None for conv in target.layers)
    for conv in target.layers:  # A(A(A𝟏)): one propagation per layer, nothing else
        w1, w2, w3, w4 = conv.weights
        assert torch.equal(w2, torch.ones(1, 1, dtype=torch.float64))
        assert not w1.any() and not w3.any() and not w4.any()


def test_weights_of_a_degree_product() -> None:
    # 𝟏ᵀ(A𝟏 ⊙ A²𝟏): layer 1 A𝟏; layer 2 keeps A𝟏 (W1) and adds A(A𝟏) (W2); layer 3 multiplies
    target = gnnml1_target("ones' (deg .* A deg)")
    assert target.num_layers == 3
    (w1a, w2a, _, _), (w1b, w2b, w3b, w4b), (w1c, w2c, w3c, w4c) = target.weights
    assert w2a.tolist() == [[1.0]]
    assert w1b.tolist() == [[1.0, 0.0]] and w2b.tolist() == [[0.0, 1.0]]
    assert not w3b.any() and not w4b.any()
    assert sorted([w3c[:, 0].tolist(), w4c[:, 0].tolist()]) == [[0.0, 1.0], [1.0, 0.0]]
    assert not w1c.any() and not w2c.any()
    assert target.head_is_linear


def test_layer_count_is_the_depth_of_the_sentence() -> None:
    assert gnnml1_target("ones' ones").num_layers == 1
    assert gnnml1_target("A^4 ones").num_layers == 4
    # diag(u)v = u ⊙ v costs one layer: A𝟏 (1), A²𝟏 (2), A𝟏 ⊙ A²𝟏 (3)
    assert gnnml1_target("diag(A ones) A^2 ones").num_layers == 3


def test_readout_head_linear_or_not() -> None:
    assert gnnml1_target("2 * ones' A ones - 3 * ones' ones + 1").head_is_linear
    assert gnnml1_target("A diag(deg) ones / 4").head_is_linear
    assert not gnnml1_target("(ones' A ones)^2").head_is_linear
    assert not gnnml1_target("(ones' A ones) * A ones").head_is_linear
    with pytest.raises(
        CompileError, match=r"`\(𝟏ᵀ A 𝟏\)²` at 1:1: a product of graph-level scalars"
    ):
        gnnml1_target("(ones' A ones)^2", nonlinear_head=False)
    with pytest.raises(CompileError, match="scaled by a graph-level scalar"):
        gnnml1_target("ones ones' A ones", nonlinear_head=False)
    with pytest.raises(CompileError, match="quotient"):
        gnnml1_target("ones' A ones / (ones' ones)", nonlinear_head=False)


def test_sentences_outside_l1_are_refused_by_name() -> None:
    with pytest.raises(
        CompileError, match=r"(?s)`tr\(A³\)` at 1:1: tr is not in L1.*gnnml3_target"
    ):
        gnnml1_target("tr(A^3)")
    with pytest.raises(CompileError, match=r"⊙ of matrices"):
        gnnml1_target("ones' (A .* A^2) ones")
    with pytest.raises(CompileError, match="exp is not a polynomial"):
        gnnml1_target("ones' exp(A ones)")
    with pytest.raises(CompileError, match="matrix-valued"):
        gnnml1_target("A^2")
    with pytest.raises(CompileError, match="division by zero"):
        gnnml1_target("ones' A ones / (2 - 2)")


def test_division_by_a_zero_readout_is_an_evaluation_error() -> None:
    graphs = [named("K4"), from_adjacency(np.zeros((3, 3), dtype=np.int64), name="empty3")]
    e = matlang.parse("ones' A^2 ones / (ones' A ones)")
    with pytest.raises(EvaluationError):
        evaluate(e, graphs)
    with pytest.raises(EvaluationError, match="empty3"):
        gnnml1_target(e)(graphs)
    assert gnnml1_target(e)(graphs[:1]).item() == pytest.approx(36 / 12)


def test_missing_input_is_a_clear_error() -> None:
    with pytest.raises(EvaluationError, match="no value for input 'h'"):
        gnnml1_target("input h; ones' h")(GRAPHS[:2])


# --------------------------------------------------------------------------- expressive power


def _one_wl_pairs() -> list[tuple[Graph, Graph]]:
    pairs = [
        (named(a), named(b))
        for a, b in [
            ("decalin", "bicyclopentyl"),
            ("cospectral_G", "cospectral_H"),
            ("rook4x4", "shrikhande"),
        ]
    ]
    pairs += one_wl_equivalent_pairs(3, 10, 3, seed=7)
    return pairs


def test_gnnml1_targets_never_separate_one_wl_equivalent_graphs() -> None:
    pairs = _one_wl_pairs()
    assert all(equivalent(g, h, "1-wl") for g, h in pairs)
    batch = [g for pair in pairs for g in pair]
    for text in L1_SENTENCES + POLYNOMIAL_SENTENCES:
        e = matlang.parse(text)
        out = gnnml1_target(e)(batch).detach()
        if e.shape.is_scalar:
            np.testing.assert_allclose(out[0::2].numpy(), out[1::2].numpy(), rtol=1e-9)
        else:  # same multiset of node values
            b = Batch.from_graphs(batch)
            per_graph = [out[int(b.ptr[k]) : int(b.ptr[k + 1])] for k in range(len(batch))]
            for g_vals, h_vals in zip(per_graph[0::2], per_graph[1::2]):
                np.testing.assert_allclose(
                    np.sort(g_vals.numpy()), np.sort(h_vals.numpy()), rtol=1e-9, atol=1e-9
                )
    # ... although they are not isomorphic: tr(A⁵) is 0 vs 20 on decalin/bicyclopentyl (paper)
    assert evaluate("tr(A^5)", [named("decalin"), named("bicyclopentyl")]) == [0, 20]


# --------------------------------------------------------------------------- the golden table


def _golden_sentences() -> list[str]:
    """Every sentence of the front end's golden table (tests/fixtures.py ``VALID``)."""
    from tests.fixtures import VALID

    return sorted({p.values[0] for p in VALID})


def _is_l1_without_functions(e: ast.Expr) -> bool:
    """L1 with +, −, scalars and / after macro expansion: no tr, no f, ⊙ of vectors only."""
    for node in e.walk():
        if isinstance(node, (ast.Trace, ast.Apply)):
            return False
        if isinstance(node, ast.Hadamard) and node.shape.is_matrix:
            return False
    return not e.shape.is_matrix


def test_golden_table_l1_sentences_equal_dense() -> None:
    checked = 0
    graphs = paper_graphs(features=True)[:3] + random_graphs(2, 4, features=True)
    for text in _golden_sentences():
        try:
            e = matlang.parse(text)
        except MatlangError:
            continue  # the table's invalid sentences
        if not _is_l1_without_functions(e):
            continue
        try:
            want = dense_values(e, graphs)
        except MatlangError:
            continue  # e.g. a division by zero on some graph: nothing to compare
        assert_matches(gnnml1_target(e)(graphs), want)
        checked += 1
    assert checked >= 10  # the table has about 20 such sentences


# --------------------------------------------------------------------------- random sentences


@settings(max_examples=100, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_l1_sentences_equal_dense(seed: int) -> None:
    e = matlang.parse(RandomSentence(seed).sentence())
    graphs = GRAPHS[::3]
    try:
        want = dense_values(e, graphs)
    except EvaluationError:
        assume(False)  # e.g. a division by a zero readout: nothing to compare
    assume(np.abs(want).max() < 1e12)
    assert_matches(gnnml1_target(e)(graphs), want)
