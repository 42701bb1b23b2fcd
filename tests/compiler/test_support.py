"""Support inference: the structural bound of each matrix, the mask chosen to compute it on,
the lattice identities, function facts, and the sizes they predict (checked against scipy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sps

from matlang import ast, parse
from matlang.compiler import support as S
from matlang.compiler.support import (
    EMPTY,
    Compose,
    E,
    Full,
    FullMaskError,
    I,
    Join,
    Meet,
    choose_mask,
    function_facts,
    infer_support,
    mask_for,
    order,
)
from matlang.runtime.generators import erdos_renyi

P = pytest.param

# (sentence, support bound, chosen mask, order of the mask)
TABLE = [
    P("A", "E", "E", 1, id="adjacency"),
    P("Aᵀ", "E", "E", 1, id="transpose-of-A"),
    P("diag(A 𝟏)", "I", "I", 0, id="diag"),
    P("A⁰", "I", "I", 0, id="power-zero"),
    P("A²", "E∘E", "E∘E", 2, id="two-hop"),
    P("A³", "E∘E∘E", "E∘E∘E", 3, id="three-hop"),
    P("A ⊙ A²", "E ∩ E∘E", "E", 1, id="hadamard-keeps-the-cheaper-side"),
    P("A ⊙ A² ⊙ A³", "E ∩ E∘E ∩ E∘E∘E", "E", 1, id="hadamard-of-three"),
    P("(A ⊙ A²)²", "(E ∩ E∘E)∘(E ∩ E∘E)", "E∘E", 2, id="power-of-masked"),
    P("A + I", "E ∪ I", "E ∪ I", 1, id="sum-is-union"),
    P("A - A", "E", "E", 1, id="difference-of-equal"),
    P("A ⊙ I", "∅", "∅", -1, id="no-self-loops"),
    P("2 A / 3", "E", "E", 1, id="scalar-multiples"),
    P("-A²", "E∘E", "E∘E", 2, id="negation"),
    P("relu(A - A²)", "E ∪ E∘E", "E ∪ E∘E", 2, id="f-vanishing-at-zero"),
    P("max(A, A²)", "E ∪ E∘E", "E ∪ E∘E", 2, id="two-argument-union"),
    P("let g(x, y) = x*y; g(A, A²)", "E ∩ E∘E", "E", 1, id="two-argument-zero-forcing"),
    P("pow(A, 2)", "E", "E", 1, id="literal-argument"),
    P("(𝟏 𝟏ᵀ) ⊙ A", "E", "E", 1, id="outer-product-under-hadamard"),
    P("cos(A) ⊙ A²", "E∘E", "E∘E", 2, id="full-under-hadamard"),
    P("(diag(A 𝟏) A ⊙ A²) A", "(E ∩ E∘E)∘E", "E∘E", 2, id="product-of-masked"),
    P("A (A ⊙ A²)", "E∘(E ∩ E∘E)", "E∘E", 2, id="product-on-the-left"),
    P("(A (A ⊙ A²))ᵀ", "(E ∩ E∘E)∘E", "E∘E", 2, id="transpose-reverses-composition"),
]


@pytest.mark.parametrize("text, bound, mask, k", TABLE)
def test_support_table(text: str, bound: str, mask: str, k: int) -> None:
    s = infer_support(parse(text))
    assert str(s) == bound
    m = choose_mask(s)
    assert m.is_mask and str(m) == mask
    assert order(m) == k


FULL = [
    P("exp(A)", "exp(0) = 1 ≠ 0, so exp(A) is nonzero everywhere", id="exp"),
    P("cos(A²)", "cos(0) = 1 ≠ 0", id="cos"),
    P("let g(x, y) = x*y + 1; g(A, A²)", "g(0, 0) = 1 ≠ 0", id="two-arguments"),
    P("𝟏 𝟏ᵀ", "is a column times a row", id="outer-product"),
    P("A 𝟏 𝟏ᵀ A", "is a column times a row", id="outer-product-in-a-product"),
    P("log(A + 𝟏 𝟏ᵀ)", "log(0) = -∞ ≠ 0", id="log-limit"),
    P("A + cos(A)", "cos(0) = 1", id="union-with-full"),
]


@pytest.mark.parametrize("text, reason", FULL)
def test_full_supports_say_why(text: str, reason: str) -> None:
    s = infer_support(parse(text))
    assert isinstance(s, Full) and s.is_full
    assert reason in s.reason
    with pytest.raises(ValueError):
        choose_mask(s)
    assert choose_mask(s, allow_full=True) == Full()
    assert order(s) == math.inf


def test_mask_for_raises_a_located_compile_error() -> None:
    text = "𝟏ᵀ exp(A) 𝟏"
    e = parse(text)
    m = e.left.right  # exp(A)
    with pytest.raises(FullMaskError) as info:
        mask_for(m, why="is multiplied with a vector")
    err = info.value.located(text)
    shown = str(err)
    assert shown.startswith("1:4: compile error: exp(A) is multiplied with a vector")
    assert "exp(0) = 1 ≠ 0" in shown
    assert "\n  " + text + "\n     ^^^^^^" in shown
    assert "dense=True" in shown


# lattice identities, each as (built, expected)
S2 = Compose(E, E)
IDENTITIES = [
    P(S.compose(I, S2), S2, id="I∘S = S"),
    P(S.compose(S2, I), S2, id="S∘I = S"),
    P(S.compose(EMPTY, E), EMPTY, id="∅∘S = ∅"),
    P(S.compose(Full(), E), Full(), id="J∘S ⊆ J"),
    P(S.meet(E, E), E, id="S∩S = S"),
    P(S.meet(E, Full()), E, id="S∩J = S"),
    P(S.meet(E, I), EMPTY, id="E∩I = ∅"),
    P(S.meet(S2, E), S.meet(E, S2), id="∩ commutes"),
    P(S.join(E, EMPTY), E, id="S∪∅ = S"),
    P(S.join(E, Full()), Full(), id="S∪J = J"),
    P(S.join(I, E), S.join(E, I), id="∪ commutes"),
    P(S.flip(E), E, id="Eᵀ = E"),
    P(S.flip(S.compose(E, S.meet(E, S2))), S.compose(S.meet(E, S2), E), id="(S∘T)ᵀ = Tᵀ∘Sᵀ"),
    P(S.flip(S.flip(S.compose(E, S.meet(E, S2)))), S.compose(E, S.meet(E, S2)), id="Sᵀᵀ = S"),
]


@pytest.mark.parametrize("built, expected", IDENTITIES)
def test_lattice_identities(built: S.Support, expected: S.Support) -> None:
    assert built == expected
    assert hash(built) == hash(expected)


def test_meet_and_join_are_not_collapsed_when_unknown() -> None:
    assert isinstance(S.meet(E, S2), Meet)
    assert isinstance(S.join(E, S2), Join)
    assert not S.meet(E, S2).is_mask
    assert S.join(E, S2).is_mask


FACTS = [
    P("relu(A)", 0.0, (0,), id="relu"),
    P("exp(A)", 1.0, (), id="exp"),
    P("sigmoid(A)", 0.5, (), id="sigmoid"),
    P("log(A + 𝟏 𝟏ᵀ)", -math.inf, (), id="log"),
    P("inv(A + 𝟏 𝟏ᵀ)", math.inf, (), id="inv"),
    P("let g(x, y) = x*y; g(A, A)", 0.0, (0, 1), id="product"),
    P("let g(x, y) = x*(y + 1); g(A, A)", 0.0, (0,), id="forced-by-first"),
    P("max(A, A)", 0.0, (), id="max"),
    P("binom(A, 2)", 0.0, (0,), id="binom-literal"),
    P("pow(A, 0)", 1.0, (), id="power-zero-literal"),
]


@pytest.mark.parametrize("text, at_zero, forcing", FACTS)
def test_function_facts(text: str, at_zero: float, forcing: tuple[int, ...]) -> None:
    e = parse(text)
    assert isinstance(e, ast.Apply)
    facts = function_facts(e)
    assert facts.at_zero == at_zero
    assert facts.zero_forcing == forcing
    assert facts.vanishes_at_zero == (at_zero == 0.0)
    assert facts.finite_at_zero == math.isfinite(at_zero)


def _structural(s: S.Support, a: sps.csr_matrix) -> sps.csr_matrix:
    """The exact set a support denotes on one graph (scipy, structural)."""
    n = a.shape[0]
    if isinstance(s, S.Edges):
        return a
    if isinstance(s, S.Identity):
        return sps.identity(n, dtype=np.int64, format="csr")
    if isinstance(s, S.Empty):
        return sps.csr_matrix((n, n), dtype=np.int64)
    if isinstance(s, Compose):
        return ((_structural(s.left, a) @ _structural(s.right, a)) != 0).astype(np.int64)
    if isinstance(s, Join):
        return ((_structural(s.left, a) + _structural(s.right, a)) != 0).astype(np.int64)
    if isinstance(s, Meet):
        return _structural(s.left, a).multiply(_structural(s.right, a)).tocsr()
    raise TypeError(s)


@pytest.mark.parametrize(
    "text", ["A ⊙ A²", "(A ⊙ A²)²", "A³ ⊙ diag(𝟏) + A", "relu(A - A²) ⊙ A³", "A (A ⊙ A²)"]
)
def test_bounds_contain_the_true_support(text: str) -> None:
    """The value is zero off the bound, and the bound is inside its mask, on random graphs."""
    from matlang.evaluator import evaluate

    e = parse(text)
    s = infer_support(e)
    m = choose_mask(s)
    for seed in range(4):
        g = erdos_renyi(9, 0.4, seed=seed)
        a = sps.csr_matrix(np.asarray(g.adjacency))
        value = np.asarray(evaluate(e, g), dtype=np.float64)
        bound = _structural(s, a).toarray() != 0
        mask = _structural(m, a).toarray() != 0
        assert not value[~bound].any()
        assert not (bound & ~mask).any()


def test_size_estimates() -> None:
    assert S.sizes(E, 100, 400) == 400
    assert S.sizes(I, 100, 400) == 100
    assert S.sizes(Compose(E, E), 100, 400) == 1600  # |E|²/n
    assert S.sizes(Compose(Compose(E, E), Compose(E, E)), 10, 90) == 100  # capped at n²
    assert S.sizes(Full(), 7, 3) == 49
    assert S.sizes(S.meet(E, S2), 100, 400) == 400
