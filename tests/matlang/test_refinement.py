"""Refinement sentences (L3+ running hashed 2-FWL): the numpy rounds against the exact evaluator
of the printed sentences, the value counts against 2-FWL's colours, and what they separate
against 3-WL (the paper's pairs, BREC pairs re-checked by the dense evaluator)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from matlang import bank, refinement
from matlang.cli import main
from matlang.errors import MatlangError
from matlang.evaluator import evaluate_graph
from matlang.functions import define, numeric
from matlang.graphs import from_adjacency, named, to_graph6
from matlang.parser import parse
from matlang.runtime import datasets
from matlang.runtime.wl import equivalent, refine_2fwl


@pytest.mark.parametrize("seed", range(3))
def test_rounds_are_the_printed_sentences(seed: int) -> None:
    """s_{t,k} computed by the numpy rounds equals the dense evaluator's exact value of
    witness_program(t, k) (a MATLANG program with Mod), on random graphs."""
    adjs = bank.random_graphs(2, 7, 0.4, seed)
    feats = refinement.readouts(list(adjs), 2, 3)
    for g, adj in enumerate(adjs):
        graph = from_adjacency(adj, name=f"g{g}")
        for t in range(3):
            for k in (1, 3):
                value = evaluate_graph(parse(refinement.witness_program(t, k)), graph)
                assert int(value) == feats[g, t * 3 + k - 1]


def test_constants_are_a_prefix() -> None:
    assert refinement.rounds(3) == refinement.rounds(5)[:3]
    # r_k for k > 100 (a formula's constant exponents stay ≤ 100) is still xᵏ mod p
    for k in (7, 250, 12345):
        fn = define("r", ["x"], f"Mod({refinement._power_text(k)}, {refinement.MODULUS})")
        xs = np.array([3, 12345, refinement.MODULUS - 1], dtype=object)
        got = numeric(fn.formula, fn.symbols, "exact")(xs)
        assert list(got) == [pow(int(v), k, refinement.MODULUS) for v in xs]


def _fwl_colours(a: np.ndarray, b: np.ndarray) -> int:
    cols = refine_2fwl([from_adjacency(a, name="a"), from_adjacency(b, name="b")])
    return len(np.unique(np.concatenate([c.reshape(-1) for c in cols])))


@pytest.mark.parametrize("seed", range(4))
def test_stable_values_are_the_2fwl_colours(seed: int) -> None:
    """On 3-WL-equivalent or not pairs, the rounds stop with as many distinct values as 2-FWL
    has stable colours: the hashing merged nothing."""
    dec, bic = named("decalin"), named("bicyclopentyl")
    rook, shri = named("rook4x4"), named("shrikhande")
    a, b = bank.random_graphs(2, 9, 0.35, seed)
    cases = [(rook.adjacency, shri.adjacency), (dec.adjacency, dec.adjacency), (a, a)]
    for x, y in cases:
        r = refinement.search_pair(x, y, 20)
        assert r.separation is None and r.stable
        assert r.colours[-1] == _fwl_colours(x, y)
    r = refinement.search_pair(dec.adjacency, bic.adjacency, 20)
    assert r.separation is not None  # 1-WL-equivalent, 3-WL separates them


def test_separates_what_3wl_separates_on_the_papers_pairs() -> None:
    c6 = from_adjacency(np.roll(np.eye(6, dtype=np.int64), 1, 1) + np.roll(np.eye(6), -1, 1))
    two_c3 = np.kron(np.eye(2, dtype=np.int64), 1 - np.eye(3, dtype=np.int64))
    for x, y in [
        (c6.adjacency, two_c3),
        (named("decalin").adjacency, named("bicyclopentyl").adjacency),
        (named("rook4x4").adjacency, named("shrikhande").adjacency),
    ]:
        r = refinement.search_pair(x, y, 20)
        three_wl = not equivalent(from_adjacency(x), from_adjacency(y), "3-wl")
        assert (r.separation is not None) == three_wl
    # graphs of different sizes: the power sums of X_0 tell (k ≤ 2)
    r = refinement.search_pair(np.zeros((3, 3), np.int64), np.zeros((2, 2), np.int64), 3)
    assert r.separation is not None and r.separation[0] == 0 and r.separation[1] <= 2


def test_bad_rounds() -> None:
    with pytest.raises(MatlangError, match="at least 0"):
        refinement.search_pair(np.zeros((2, 2), np.int64), np.zeros((2, 2), np.int64), -1)


needs_brec = pytest.mark.skipif(
    not datasets.data_available("brec"), reason="BREC data not found (set MATLANG_DATA)"
)

# One or two pairs of each BREC sub-category, small enough for the exact evaluator.
_BREC_SAMPLE = (0, 59, 60, 109, 110, 159, 160, 254, 265, 278, 297, 380)


@needs_brec
def test_brec_sample_agrees_with_3wl_and_witnesses_recheck() -> None:
    """On a sample of BREC pairs the sentences separate exactly the pairs 3-WL separates, and
    each witness, parsed and evaluated exactly by the dense evaluator, gives the two values
    the search reported (different)."""
    data = datasets.load_brec()
    for k in _BREC_SAMPLE:
        i, j = data.pairs[k]
        ga, gb = data.graphs[i], data.graphs[j]
        r = refinement.search_pair(ga.adjacency, gb.adjacency, 10)
        assert (r.separation is not None) == (not equivalent(ga, gb, "3-wl")), k
        if r.separation is None:
            continue
        program = parse(refinement.witness_program(*r.separation))
        values = (int(evaluate_graph(program, ga)), int(evaluate_graph(program, gb)))
        assert values == r.values and values[0] != values[1], k


def test_bank_cli_rounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dec, bic = named("decalin"), named("bicyclopentyl")
    rook, shri = named("rook4x4"), named("shrikhande")
    path = tmp_path / "pairs.g6"
    path.write_text("\n".join(to_graph6(g) for g in (dec, bic, rook, shri)) + "\n")
    args = ["bank", "--fragment", "L3", "--rounds", "6", "--pairs", str(path)]
    assert main([*args, "--json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pairs"] == 2 and out["separated"] == 1
    first = out["per_pair"][0]
    assert first["separated"] and not out["per_pair"][1]["separated"]
    # the witness, through `matlang eval`, gives the two values reported
    program = tmp_path / "witness.mat"
    program.write_text(first["witness"] + "\n")
    g6 = [arg for g in first["graphs"] for arg in ("--graph6", g)]
    assert main(["eval", "--sentences", str(program), *g6, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["values"] == first["values"]
    assert main(["bank", "--fragment", "L2", "--rounds", "3", "--pairs", str(path)]) == 1
    assert "for --fragment L3 only" in capsys.readouterr().err
