"""``Mod`` is exact only if its argument never rounded: every path either computes the whole
argument exactly or refuses, naming the intermediate that rounded (its step, the graph, the
magnitude and the dtype's 2^bits)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import matlang
from matlang.compiler.exactness import describe, mod_feeders
from matlang.errors import EvaluationError
from matlang.exactness import formula_peak
from matlang.graphs import named
from matlang.nn import SentenceReadout
from matlang.transforms import SentenceFeatures

# on K30, 29¹¹ > 2⁵³ rounds in float64; the difference 29¹⁰ is below 2⁵³
SENTENCE = "let f(x) = Mod(x, 7); onesᵀ f(A^11 ones - 28 A^10 ones)"
WITH_H = "input h; let f(x) = Mod(x, 7); onesᵀ f(A^11 h - 28 A^10 h)"
EXACT = 30  # 29¹⁰ mod 7 = 1 on each of 30 nodes


def _edge_index(name: str) -> torch.Tensor:
    return torch.tensor(np.array(np.nonzero(named(name).adjacency)), dtype=torch.int64)


def test_the_evaluators_compute_it_exactly() -> None:
    assert matlang.evaluate(SENTENCE, "K30") == EXACT
    assert matlang.evaluate(SENTENCE, "K30", sparse=True) == EXACT
    assert matlang.evaluate(WITH_H, "K30", inputs={"h": np.ones(30, dtype=np.int64)}) == EXACT


@pytest.mark.parametrize("constants", ["auto", "graphblas", "torch", "none"])
def test_compiled_float64_refuses_naming_the_rounded_step(constants: str) -> None:
    module = matlang.compile(SENTENCE, dtype=torch.float64, constants=constants)
    with pytest.raises(EvaluationError) as err:
        module(["K30"])
    text = str(err.value)
    assert "f(A¹¹ 𝟏 - 28 A¹⁰ 𝟏)" in text  # the Mod
    assert "v13 = A¹¹ 𝟏" in text  # the intermediate that rounded
    assert "K30" in text and "1.22e+16" in text and "2^53" in text and "float64" in text


@pytest.mark.parametrize("constants", ["graphblas", "torch", "none"])
def test_compiled_float32_refuses(constants: str) -> None:
    module = matlang.compile(SENTENCE, dtype=torch.float32, constants=constants)
    with pytest.raises(EvaluationError, match=r"past 2\^24, where float32 rounds"):
        module(["K30"])


def test_input_h_refuses_in_compiled_modules_and_layers() -> None:
    h = {"h": np.ones(30)}
    with pytest.raises(EvaluationError, match=r"v13 = A¹¹ h, which reaches 1\.22e\+16"):
        matlang.compile(WITH_H, dtype=torch.float64)(["K30"], h)
    x = torch.ones(30, 1, dtype=torch.float64)
    with pytest.raises(EvaluationError, match=r"A¹¹ h.*past 2\^53"):
        SentenceReadout([WITH_H], 1)(x, _edge_index("K30"))


def test_sentence_conv_refuses_a_channel_sentence() -> None:
    from matlang.nn import SentenceConv

    x = torch.ones(30, 2, dtype=torch.float64)
    conv = SentenceConv(2, 4, ["A", WITH_H.replace("onesᵀ ", "")]).double()
    with pytest.raises(EvaluationError, match=r"v13 = A¹¹ h, which reaches 1\.22e\+16"):
        conv(x, _edge_index("K30"))
    small = SentenceConv(2, 4, ["A", "input h; let f(x) = Mod(x, 7); f(A^2 h - 3 A h)"]).double()
    assert small(x, _edge_index("K30")).shape == (30, 4)


def test_layers_refuse() -> None:
    with pytest.raises(EvaluationError, match=r"A¹¹ 𝟏.*past 2\^53"):
        SentenceFeatures([SENTENCE], dtype=torch.float64).values(named("K30"))
    with pytest.raises(EvaluationError, match=r"A¹¹ 𝟏.*past 2\^53"):
        SentenceFeatures([SENTENCE]).values(named("K30"))
    x = torch.ones(30, 1)
    with pytest.raises(EvaluationError, match=r"A¹¹ 𝟏.*past 2\^53"):
        SentenceReadout([SENTENCE])(x, _edge_index("K30"))


def test_dense_evaluator_in_floats_refuses() -> None:
    with pytest.raises(EvaluationError, match=r"A¹¹ 𝟏, which reaches 1\.22e\+16 on graph K30"):
        matlang.evaluate(SENTENCE, "K30", exact=False)
    with pytest.raises(EvaluationError, match=r"A¹¹ h.*K30.*2\^53"):
        matlang.evaluate(WITH_H, "K30", inputs={"h": np.ones(30)})


def test_partial_sums_of_signed_terms_are_bounded() -> None:
    """Every value is below 2⁵³ but a partial sum of ``A h`` is not: refused."""
    t = "input h; let f(x) = Mod(x, 7); onesᵀ f(A h)"
    h = np.array([2**52 + 1, 2**52, -(2**52), -(2**52)], dtype=np.int64)
    total = sum(int(v) for v in h)
    assert max(abs(total - int(v)) for v in h) < 2**53  # every value of A h is
    want = sum((total - int(v)) % 7 for v in h)
    assert matlang.evaluate(t, "K4", inputs={"h": h}) == want
    with pytest.raises(EvaluationError, match=r"A h.*past 2\^53"):
        matlang.compile(t, dtype=torch.float64)(["K4"], {"h": h.astype(np.float64)})
    with pytest.raises(EvaluationError, match=r"A h.*past 2\^53"):
        matlang.evaluate(t, "K4", inputs={"h": h.astype(np.float64)})


@pytest.mark.parametrize("constants", ["auto", "graphblas", "torch", "none"])
@pytest.mark.parametrize(
    "sentence",
    [
        "let f(x) = Mod(x, 7); onesᵀ f(A^3 ones - 2 A^2 ones)",  # small values
        "let f(x) = Mod(x*x - 3*x, 11); onesᵀ f(A^4 ones)",
        "let f(x) = Mod(x, 5); let g(x) = binom(x, 3); onesᵀ f(g(A^2 ones))",
    ],
)
def test_small_values_still_work(sentence: str, constants: str) -> None:
    graphs = ["K30", "petersen", "cycle5"]
    want = matlang.evaluate(sentence, graphs)
    got = matlang.compile(sentence, dtype=torch.float64, constants=constants)(graphs)
    assert got.tolist() == want
    assert matlang.evaluate(sentence, graphs, exact=False) == want


@pytest.mark.parametrize("constants", ["auto", "graphblas", "torch"])
def test_mod_of_exact_integer_constants_is_exact(constants: str) -> None:
    """A constant stage computes ``A¹¹ 𝟏`` in int64 and its remainder exactly."""
    t = "let f(x) = Mod(x, 7); onesᵀ f(A^11 ones)"
    want = matlang.evaluate(t, "K30")
    assert matlang.compile(t, dtype=torch.float64, constants=constants)(["K30"]).item() == want
    with pytest.raises(EvaluationError):  # in floats, refused
        matlang.compile(t, dtype=torch.float64, constants="none")(["K30"])


def test_sparse_evaluator_refuses_rounded_floats() -> None:
    """A weighted graph's float steps on the sparse path are checked too."""
    from matlang.graphs import as_graph

    w = named("K30").adjacency * 1.5
    g = as_graph(w, allow_weights=True)
    t = "let f(x) = Mod(x, 7); onesᵀ f(A^11 ones - 28 A^10 ones)"
    with pytest.raises(EvaluationError, match=r"past 2\^53"):
        matlang.evaluate(t, g, sparse=True)
    with pytest.raises(EvaluationError, match=r"past 2\^53"):
        matlang.evaluate(t, g)


def test_nothing_is_checked_without_mod() -> None:
    module = matlang.compile("let f(x) = x*x; onesᵀ f(A^11 ones - 28 A^10 ones)")
    assert module._mod.steps == frozenset()
    plan = matlang.compile(SENTENCE).plan
    assert mod_feeders(plan) and mod_feeders(plan, trainable_functions=True) == frozenset()
    assert describe(plan, 13) == "v13 = A¹¹ 𝟏"


def test_formula_peak_counts_the_intermediates() -> None:
    import sympy as sp

    x = sp.Symbol("x")
    all_, inside = formula_peak(sp.Mod(x * (x - 1), 7) + x**3, (x,))(10.0)
    assert inside == 110.0  # x(x - 1): x² - x expanded, 10·11 as numeric computes it
    assert all_ >= 1000.0


# ------------------------------------------------------------------------- property


_GRAPHS = ["K30", "K20", "petersen", "cycle7", "star12", "K12"]


@st.composite
def _sentences(draw: st.DrawFn) -> str:
    """``Mod`` of an integer combination of ``A^k v`` (``v``: 𝟏 or a signed input ``h``)."""
    terms = draw(
        st.lists(
            st.tuples(st.integers(-40, 40).filter(bool), st.integers(0, 13)),
            min_size=1,
            max_size=3,
        )
    )
    m = draw(st.sampled_from([2, 3, 7, 11, 101]))
    v = draw(st.sampled_from(["ones", "h"]))
    body = " + ".join(f"({c}) A^{k} {v}" if c < 0 else f"{c} A^{k} {v}" for c, k in terms)
    head = "input h; " if v == "h" else ""
    return f"{head}let f(x) = Mod(x, {m}); onesᵀ f({body})"


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    sentence=_sentences(),
    graph=st.sampled_from(_GRAPHS),
    constants=st.sampled_from(["graphblas", "torch", "none"]),
    dtype=st.sampled_from([torch.float64, torch.float32]),
    seed=st.integers(0, 2**16),
)
def test_compiled_equals_the_evaluator_or_refuses(
    sentence: str, graph: str, constants: str, dtype: torch.dtype, seed: int
) -> None:
    n = named(graph).num_nodes
    h = np.random.default_rng(seed).integers(-50, 50, n)
    inputs = {"h": h} if sentence.startswith("input") else None
    want = matlang.evaluate(sentence, graph, inputs=inputs)
    module = matlang.compile(sentence, dtype=dtype, constants=constants)
    try:
        got = (module([graph], {"h": h.astype(np.float64)}) if inputs else module([graph])).item()
    except EvaluationError as e:
        assert "past 2^" in str(e)
    else:
        assert got == want, (sentence, graph, constants, dtype)
    try:
        fl = matlang.evaluate(
            sentence, graph, exact=False, inputs={"h": h.astype(np.float64)} if inputs else None
        )
    except EvaluationError as e:
        assert "past 2^" in str(e)
    else:
        assert fl == want, sentence
