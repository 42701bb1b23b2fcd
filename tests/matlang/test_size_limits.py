"""Inputs past what the analyser and the pattern counter can do stop at once with a project
error naming the limit (never a RecursionError, a numpy MemoryError or minutes of work), and
the faster spasm pieces (orbit–stabiliser automorphism counts, the treewidth ≤ 2 reduction,
the partition count) agree with the plain definitions."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

import matlang
from matlang.cli import main
from matlang.errors import MatlangError
from matlang.patterns import read_pattern
from matlang.spasm import (
    SmallGraph,
    automorphisms,
    independent_partitions,
    partition_count,
    rooted_spasm,
    treewidth,
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_classify_refuses_a_power_of_a_diag_past_its_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(MatlangError, match="MAX_DIAG_POWER = 100"):
        matlang.classify("tr(diag(A ones)^112)", witness=False)
    code, out, err = run(capsys, "classify", "tr(diag(A ones)^112)")
    assert code == 1 and "MAX_DIAG_POWER" in err and "Traceback" not in err


def test_classify_at_the_diag_power_limit_answers() -> None:
    a = matlang.classify("tr(diag(A ones)^100)", witness=False)
    assert a.level == 1


def test_pattern_k10_answers_without_allocating(capsys: pytest.CaptureFixture[str]) -> None:
    # CPU seconds (process_time): the machine is shared, wall time measures the others
    start = time.process_time()
    code, out, err = run(capsys, "pattern", "K10")
    assert code == 0, err
    assert time.process_time() - start < 30
    assert "|Aut| = 3628800" in out and "beyond 3-WL" in out
    assert "MAX_HOM_STEPS" in out  # the certificate's counts are said to be out of reach


@pytest.mark.parametrize("name", ["P10", "C10", "star9"])
def test_rooted_patterns_past_the_work_limit_are_refused_at_once(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    if name == "C10":  # one class of roots: 17722 quotients, within the limit (slow test below)
        return
    start = time.process_time()
    code, out, err = run(capsys, "pattern", name, "--rooted")
    assert code == 1 and "MAX_QUOTIENTS = 25000" in err and "Traceback" not in err
    assert time.process_time() - start < 10


@pytest.mark.slow
@pytest.mark.parametrize(
    "args", [["P10"], ["C10"], ["star9"], ["C10", "--rooted"], ["P9", "--rooted"]]
)
def test_patterns_at_ten_nodes_answer_within_30_seconds(
    capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    start = time.process_time()
    code, out, err = run(capsys, "pattern", *args, "--no-witness")
    assert code == 0, err
    assert time.process_time() - start < 30


def _graphs(seed: int, count: int, top: int = 7) -> list[SmallGraph]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        n = int(rng.integers(1, top + 1))
        p = float(rng.random())
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
        out.append(SmallGraph.of(n, pairs))
    return out


def _brute_automorphisms(g: SmallGraph) -> int:
    edges = g.edges
    return sum(
        1
        for perm in itertools.permutations(range(g.n))
        if {tuple(sorted((perm[u], perm[v]))) for u, v in edges} == edges
    )


def test_automorphism_counts_match_the_permutations() -> None:
    for g in _graphs(1, 120):
        assert automorphisms(g) == _brute_automorphisms(g), sorted(g.edges)
    assert automorphisms(read_pattern("K10")[0]) == 3628800


def test_partition_count_matches_the_enumeration() -> None:
    for g in _graphs(2, 80, top=8):
        assert partition_count(g) == sum(1 for _ in independent_partitions(g))
    assert partition_count(read_pattern("P10")[0]) == 21147


def test_treewidth_shortcut_matches_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    import matlang.spasm as spasm

    graphs = _graphs(3, 150, top=8)
    fast = [treewidth(g) for g in graphs]
    monkeypatch.setattr(spasm, "_at_most_two", lambda g: False)
    assert fast == [treewidth(g) for g in graphs]


def test_rooted_spasm_by_orbits_counts_copies_through_each_node() -> None:
    """Per node counts of P4 and the triangle with a tail on a small graph, against brute
    force: the orbit shortcut multiplies one root's spasm by its orbit's size."""
    from matlang.spasm import rooted_hom_count
    from tests.matlang.test_spasm import random_graph

    a = random_graph(7, 0.5, 4)
    for name in ("P4", "tailed_triangle", "star3"):
        p, _ = read_pattern(name)
        got = [0] * 7
        for q in rooted_spasm(p):
            assert q.root is not None
            counts = rooted_hom_count(q.graph, a, q.root)
            got = [x + q.coefficient * c for x, c in zip(got, counts)]
        # brute force: injective maps of P into G, by the node each one sends any node to
        n = a.shape[0]
        want = [0] * n
        for image in itertools.permutations(range(n), p.n):
            if all(a[image[u], image[v]] for u, v in p.edges):
                for r in range(p.n):
                    want[image[r]] += 1
        aut = automorphisms(p)
        assert got == [w / aut for w in want], name
