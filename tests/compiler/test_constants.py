"""The graph-constant stage (GraphBLAS): exact values equal the dense evaluator exactly, the
compiled module's constants equal the all-torch interpreter, constants are computed once per
batch and never read stale, integers never overflow silently."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sps
import torch

import matlang
from matlang import parse_program
from matlang.compiler.api import compile, materialise
from matlang.compiler.constants import constant_steps
from matlang.compiler.exact import evaluate_sparse
from matlang.compiler.lower import lower
from matlang.errors import EvaluationError, GraphError
from matlang.evaluator import evaluate
from matlang.graphs import complete, named
from matlang.runtime import graphblas
from matlang.runtime.batch import Batch
from matlang.runtime.generators import erdos_renyi
from tests.fixtures import GRAPHS, VALID

#: integral sentences without inputs from the compile tests (and the paper's counts)
INTEGRAL = [
    "𝟏ᵀ A 𝟏",
    "tr(A²)",
    "tr(A³) / 6",
    "tr(A⁴)",
    "tr(A⁵)",
    "(tr(A⁴) + tr(A²) - 2 𝟏ᵀ A² 𝟏) / 8",
    "𝟏ᵀ (A ⊙ A²)² 𝟏",
    "𝟏ᵀ ((A ⊙ A²)² 𝟏 ⊙ (A ⊙ A²)² 𝟏)",
    "1/2 * ones' (A^3 .* diag(deg - 2 ones)) ones",
    "𝟏ᵀ binom(A 𝟏, 3)",
    "tr(A ⊙ A)",
    "tr(diag(A 𝟏) A²)",
    "tr(A (A ⊙ A²))",
    "tr((A ⊙ A²)²)",
    "tr((diag(A 𝟏) A ⊙ A²)²)",
    "A ⊙ A²",
    "(A + I) ⊙ A²",
    "A³ ⊙ I",
    "(A ⊙ A²)² 𝟏",
    "A² 𝟏 / 3",
    "Aᵀ ⊙ (A A)ᵀ",
    "tr(A⁴) / tr(A²)",
]


def _same(got: object, want: object) -> bool:
    if hasattr(got, "toarray"):
        got = got.toarray()  # type: ignore[union-attr]
    if isinstance(want, np.ndarray) or isinstance(got, np.ndarray):
        g, w = np.asarray(got, dtype=object), np.asarray(want, dtype=object)
        return (
            g.shape == w.shape
            and all(
                type(a) is type(b) or (int(a) == a and int(b) == b) and a == b
                for a, b in zip(g.flat, w.flat)
            )
            and bool((g == w).all())
        )
    return type(got) is type(want) and got == want


def _golden_without_inputs() -> list[str]:
    out = []
    for p in VALID:
        text = p.values[0]
        try:
            program = parse_program(text)
            lower(program)
        except Exception:  # full masks, several sentences: not for the sparse path
            continue
        if program.inputs or len(program.sentences) != 1:
            continue
        out.append(text)
    return out


@pytest.mark.parametrize("text", INTEGRAL)
def test_graphblas_exact_equals_the_dense_evaluator(text: str) -> None:
    graphs = [g for g in GRAPHS if not (text.startswith("tr(A⁴) / tr") and g.num_nodes < 3)]
    got = evaluate_sparse(text, graphs)
    want = evaluate(text, graphs)
    for g, a, b in zip(graphs, got, want):
        assert _same(a, b), (g.label(), a, b)


def test_graphblas_exact_on_the_golden_table() -> None:
    checked = 0
    for text in _golden_without_inputs():
        try:
            want = evaluate(text, GRAPHS)
        except EvaluationError:
            with pytest.raises(EvaluationError):
                evaluate_sparse(text, GRAPHS)
            continue
        got = evaluate_sparse(text, GRAPHS)
        for a, b in zip(got, want):
            if isinstance(b, float) or (isinstance(b, np.ndarray) and b.dtype == np.float64):
                np.testing.assert_allclose(np.asarray(_dense(a), float), b, rtol=1e-9, atol=1e-12)
            else:
                assert _same(a, b), (text, a, b)
        checked += 1
    assert checked >= 40


def _dense(v: object) -> object:
    return v.toarray() if hasattr(v, "toarray") else v  # type: ignore[union-attr]


def test_front_door_dispatches_large_sparse_graphs_to_graphblas() -> None:
    g = erdos_renyi(60, 0.1, seed=3)
    a = sps.csr_array(np.asarray(g.adjacency))
    assert matlang.evaluate("tr(A^3)/6", a, sparse=True) == matlang.evaluate("tr(A^3)/6", g)
    # a graph in sparse form past the dense limit goes to GraphBLAS without being asked
    n = matlang.DENSE_LIMIT + 10
    ring = sps.diags([np.ones(n - 1), np.ones(n - 1)], [1, -1], format="lil")
    ring[0, n - 1] = ring[n - 1, 0] = 1
    ring = ring.tocsr()
    assert matlang.evaluate("tr(A^2)", ring) == 2 * n
    assert matlang.evaluate("onesᵀ A² ones / 4", ring) == n
    # in a list too (it took the dense path: over a minute for two such rings), small beside
    from unittest import mock

    from matlang.evaluator import DenseEvaluator

    with mock.patch.object(DenseEvaluator, "__call__", side_effect=AssertionError("dense")):
        assert matlang.evaluate("tr(A^2)", [ring, a]) == [2 * n, int((a @ a).trace())]
    with pytest.raises(matlang.MatlangError, match="without inputs"):
        matlang.evaluate("input h; onesᵀ A h", ring, inputs={"h": np.ones(n)})


def test_exact_overflow_is_refused_not_wrapped() -> None:
    k = complete(60)
    with pytest.raises(EvaluationError, match="int64"):
        evaluate_sparse("tr(A^13)", [k])
    assert evaluate_sparse("tr(A^9)", [k]) == [evaluate("tr(A^9)", k)]


def test_compiled_constants_past_int64_fall_back_to_float64() -> None:
    k = complete(60)
    model = compile("tr(A^13)", dtype=torch.float64)
    want = float(evaluate("tr(A^13)", k))
    got = float(model([k])[0])
    assert got == pytest.approx(want, rel=1e-12)


def test_constant_steps_are_the_graph_only_ones() -> None:
    plan = lower(parse_program("input h; tr(A^3) / 6 + onesᵀ A h"))
    const = constant_steps(plan)
    for k, st in enumerate(plan.steps):
        if st.op in ("input", "param"):
            assert not const[k]
        if st.op in ("sampled", "edges", "adjacency"):
            assert const[k]
    outs = [plan.steps[o.register].op for o in plan.outputs]
    assert outs and not const[plan.outputs[0].register]


@pytest.mark.parametrize(
    "text", ["tr(A^3)/6", "A ⊙ A²", "(A + I) ⊙ A²", "𝟏ᵀ (A ⊙ A²)² 𝟏", "input h; (A ⊙ A²) h"]
)
def test_graphblas_constants_equal_the_torch_interpreter(text: str) -> None:
    b = Batch.from_graphs(GRAPHS)
    inputs = {"h": torch.arange(b.num_nodes, dtype=torch.float64)} if "input" in text else None
    fast = compile(text, dtype=torch.float64)
    slow = compile(text, dtype=torch.float64)
    slow.constants = "torch"
    x, y = fast(b, inputs), slow(b, inputs)
    if x.is_sparse:
        x, y = x.to_dense(), y.to_dense()
    assert torch.equal(x, y)
    assert fast.last_stats is not None and slow.last_stats is not None
    assert fast.last_stats.mask_entries == slow.last_stats.mask_entries
    assert fast.last_stats.peak_bytes == slow.last_stats.peak_bytes


def test_constants_are_computed_once_per_batch_and_never_stale(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from matlang.compiler.constants import ConstantStage

    runs = []
    original = ConstantStage.run

    def counting(self: ConstantStage, graphs: object, **kw: object) -> object:
        runs.append(1)
        return original(self, graphs, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(ConstantStage, "run", counting)
    g = named("petersen")
    b = Batch.from_graphs([g, complete(4)])
    model = compile("tr(A^3)/6", dtype=torch.float64)
    assert model(b).tolist() == [0, 4]
    assert model(b).tolist() == [0, 4]
    assert len(runs) == 1
    model.double()  # another dtype: its own constants
    model(b)
    assert len(runs) == 1  # the same float64
    other = compile("tr(A^3)", dtype=torch.float64)
    assert other(b).tolist() == [0, 24]
    assert len(runs) == 2  # another sentence: another entry
    # an in-place change of the edges invalidates what was remembered
    k4 = b.edge_index[:, b.edge_index[0] >= 10]
    b.edge_index[:, : k4.shape[1]].copy_(k4)
    assert len(runs) == 2


def test_materialise_goes_through_graphblas_and_equals_scipy() -> None:
    g = erdos_renyi(40, 0.2, seed=2)
    b = Batch.from_graphs([g, complete(5)])
    index, values = materialise("A ⊙ A²", b)
    k5 = sps.csr_array(np.ones((5, 5)) - np.eye(5))
    a = sps.block_diag([sps.csr_array(np.asarray(g.adjacency)), k5]).tocsr()
    want = (a @ a).multiply(a).tocsr()
    got = sps.csr_array((values.numpy(), (index[0].numpy(), index[1].numpy())), shape=a.shape)
    assert abs(got - want).max() == 0
    assert index.shape[1] == a.nnz  # on the mask E, zeros included


def test_threads_follow_torch_unless_set() -> None:
    import graphblas as gb

    torch_threads = torch.get_num_threads()
    graphblas.set_threads(None)
    graphblas._gb()
    assert gb.ss.config["nthreads"] == torch_threads
    graphblas.set_threads(3)
    try:
        graphblas._gb()
        assert gb.ss.config["nthreads"] == 3
    finally:
        graphblas.set_threads(None)
        graphblas._gb()
    with pytest.raises(ValueError):
        graphblas.set_threads(0)


def test_float32_warns_past_two_to_the_24() -> None:
    k = complete(400)
    model = compile("tr(A^3)/6")
    with pytest.warns(UserWarning, match="2\\*\\*24"):
        model([k])
    exact = 400 * 399 * 398 // 6
    assert float(model.double()([k])[0].detach()) == exact
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile("tr(A^3)/6")([complete(20)])


def test_bad_graphs_keep_their_errors() -> None:
    one_graph, ptr = torch.zeros(3, dtype=torch.int64), torch.tensor([0, 3])
    b = Batch(torch.tensor([[0, 1], [1, 2]]), one_graph, ptr)
    with pytest.raises(GraphError, match="reverse"):
        compile("tr(A^3)")(b)
    bad = Batch(torch.tensor([[0, 5], [5, 0]]), one_graph, ptr)
    with pytest.raises(GraphError, match="node 5"):
        compile("tr(A^3)")(bad)
    with pytest.raises(GraphError, match="node 5"):
        evaluate_sparse("tr(A^3)", bad)


def test_exact_rationals_and_fractions() -> None:
    got = evaluate_sparse("A² 𝟏 / 3", [complete(4)])[0]
    assert list(got) == [Fraction(9, 3)] * 4
    assert all(type(v) is int or v.denominator == 1 for v in got)
    got = evaluate_sparse("tr(A^3) / 7", [complete(4)])[0]
    assert got == Fraction(24, 7)


@pytest.mark.parametrize("seed", range(4))
def test_mask_symmetry_check_equals_scipy(seed: int) -> None:
    """Mask.is_symmetric (the operators' symmetry, by a counting-sort transpose) against scipy's
    own M == Mᵀ, on symmetric and asymmetric patterns and values."""
    rng = np.random.default_rng(seed)
    n = 30
    dense = rng.random((n, n)) < 0.2
    if seed % 2 == 0:
        dense = dense | dense.T
    m = sps.csr_matrix(dense.astype(np.int64))
    m.sort_indices()
    values = rng.integers(1, 4, m.nnz).astype(np.int64)
    if seed >= 2:  # symmetric values too, when the pattern is
        w = sps.csr_matrix((values, m.indices, m.indptr), shape=(n, n))
        values = np.asarray((w + w.T)[m.nonzero()]).reshape(-1).astype(np.int64)
    mask = graphblas.Mask(n, m.indptr, m.indices)
    want = sps.csr_matrix((values, m.indices, m.indptr), shape=(n, n))
    assert mask.is_symmetric(values) == ((want != want.T).nnz == 0)
    ones = np.ones(m.nnz, dtype=np.int64)
    assert mask.is_symmetric(ones) == ((m != m.T).nnz == 0)


@pytest.mark.parametrize(
    ("sentence", "symmetric"),
    [
        ("input h; A h", True),
        ("input h; (A ⊙ A²) h", True),
        ("input h; (A ⊙ (A 𝟏 𝟏ᵀ)) h", False),  # A_ij d_j: not symmetric unless regular
    ],
)
@pytest.mark.parametrize("validate", [True, False])
def test_operator_symmetry_with_and_without_validation(
    sentence: str, symmetric: bool, validate: bool
) -> None:
    """An operator is its own transpose exactly when its matrix is symmetric, whether the batch
    was validated (A known symmetric) or not (checked); the values equal the dense evaluator."""
    g = erdos_renyi(12, avg_degree=3.0, seed=1)
    b = Batch.from_graphs([g])
    model = compile(sentence, dtype=torch.float64, validate=validate)
    h = torch.arange(12, dtype=torch.float64)
    out = model(b, inputs={"h": h})
    ops = [v for v in b._memo.values() if isinstance(v[1], tuple) and len(v[1]) == 3]
    prebuilt = [op for _, (_, _, pre) in ops for op in pre.values()]
    assert len(prebuilt) == 1
    assert prebuilt[0].symmetric == symmetric
    want = evaluate(parse_program(sentence), [g], inputs={"h": h.numpy()})
    np.testing.assert_allclose(out.numpy(), np.asarray(want[0], dtype=float), atol=1e-9)


def test_mod_of_counts_past_2_53_is_exact_or_refused_never_noise() -> None:
    """``Mod`` of integer graph constants past 2⁵³ (float64's exact integers): the GraphBLAS
    stage and the sparse evaluator compute the remainder on the exact int64 values, as the dense
    evaluator does (``9**17 mod 7`` is 4; on the float64 nearest ``9**17``, 3); a float past
    2⁵³ (past int64, or the torch stage's float64) is refused with what and where, not 0."""
    graphs = [complete(10), named("petersen")]
    cases = {
        "let f(x) = Mod(x, 7); 𝟏ᵀ f(A^17 𝟏)": [10 * pow(9, 17, 7), 10 * pow(3, 17, 7)],
        "let f(x) = Mod(x*x, 1000); 𝟏ᵀ f(A^9 𝟏)": [10 * (9**18 % 1000), 10 * (3**18 % 1000)],
        "let f(x) = Mod(x, 7); 𝟏ᵀ f(A^3 𝟏)": [10 * (9**3 % 7), 10 * (3**3 % 7)],
    }
    for text, want in cases.items():
        program = parse_program(text)
        assert [int(v) for v in evaluate(program, graphs)] == want, text
        assert [int(v) for v in evaluate_sparse(program, graphs)] == want, text
        got = compile(text, dtype=torch.float64)(graphs)
        assert got.reshape(-1).tolist() == [float(v) for v in want], text
    # below 2⁵³ the torch stage's float64 remainder is exact; past it, computed on the int64
    # values (exact, as GraphBLAS)
    small = compile("let f(x) = Mod(x, 7); 𝟏ᵀ f(A^3 𝟏)", dtype=torch.float64, constants="torch")
    assert small(graphs).reshape(-1).tolist() == [10.0 * (9**3 % 7), 10.0 * (3**3 % 7)]
    big = compile("let f(x) = Mod(x, 7); 𝟏ᵀ f(A^17 𝟏)", dtype=torch.float64, constants="torch")
    assert big(graphs).reshape(-1).tolist() == [float(v) for v in cases[next(iter(cases))]]
    # past int64 the compiled values are floats: Mod of them is refused, naming the step that
    # rounded and the graph
    past = compile("let f(x) = Mod(x, 2); 𝟏ᵀ f(A^34 𝟏)", dtype=torch.float64)
    rounded = r"f\(A³⁴ 𝟏\): .* from v\d+ = A²⁰ 𝟏, .* complete10, past"
    with pytest.raises(EvaluationError, match=rounded):
        past(graphs)


def test_mod_past_the_dtypes_exact_integers_is_refused_by_every_path() -> None:
    """The interpreter (``constants="none"``, and the non-constant part of a sentence with an
    input) took ``Mod`` of floats past the integers the module's dtype holds: 36 for 24 on K12
    (float64, ``A^20 𝟏``), 72 for 24 in float32 (11⁸ > 2²⁴); the dense evaluator gave 0.0 for
    24 on float inputs. Each now refuses, naming the function, the value and the graph; below
    the limit every path gives the exact remainder (``11³ mod 7 = 1`` per node of K12)."""
    k12 = complete(12)
    x = torch.ones(12, 1)
    for text, dtype in [
        ("let f(x) = Mod(x, 7); 𝟏ᵀ f(A^20 𝟏)", torch.float64),
        ("let f(x) = Mod(x, 7); 𝟏ᵀ f(A^8 𝟏)", torch.float32),
        ("input h; let f(x) = Mod(x, 7); 𝟏ᵀ f(A^20 h)", torch.float64),
    ]:
        module = compile(text, dtype=dtype, constants="none")
        bits = 53 if dtype == torch.float64 else 24
        with pytest.raises(
            EvaluationError,
            match=rf"on graph complete12(: its Mod would take a float|,) past 2\^{bits}",
        ):
            module(k12, inputs={"h": x.to(dtype)} if "input" in text else None)
    # float32 constants computed exactly by the stage: the remainder is exact, not refused
    assert compile("let f(x) = Mod(x, 7); 𝟏ᵀ f(A^8 𝟏)")(k12).item() == 12 * pow(11, 8, 7)
    for constants in ("none", "auto"):
        small = compile("input h; let f(x) = Mod(x, 7); 𝟏ᵀ f(A^3 h)", constants=constants)
        assert small(k12, inputs={"h": x}).item() == 12.0
    text = "input h; let f(x) = Mod(x, 7); 𝟏ᵀ f(A^20 h)"
    assert matlang.evaluate(text, "K12", inputs={"h": np.ones(12, dtype=int)}) == 24
    for kwargs in (
        {"inputs": {"h": np.ones(12)}},
        {"inputs": {"h": np.ones(12, dtype=int)}, "exact": False},
    ):
        with pytest.raises(
            EvaluationError, match="on graph K12: its Mod would take a float past 2"
        ):
            matlang.evaluate(text, "K12", **kwargs)
