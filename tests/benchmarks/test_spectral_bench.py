"""benchmarks.perf.spectral: the cases measure what they say (tiny sizes; timings not checked)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.perf import spectral as bench
from matlang.runtime import preprocess as pp


def test_grid_edges_are_a_grid() -> None:
    g = bench.graph("grid", 12)  # 3 × 4
    a = g.adjacency()
    assert g.num_nodes == 12 and a.sum() == 2 * (2 * 4 + 3 * 3)
    assert (a == a.T).all() and set(a.sum(1).tolist()) == {2.0, 3.0, 4.0}


def test_supports_case_compares_with_the_dense_path() -> None:
    row = bench.supports_case("grid", 100, dense=True, repeats=1)
    assert row["n"] == 100 and row["E"] == 360 and row["mask_entries"] == 460
    assert 0 < row["max_error"] <= row["error_bound"] <= 1e-6
    assert row["probes"] <= row["n"] and row["order"] > 0


def test_lambda_case_agrees_with_pyg() -> None:
    pytest.importorskip("torch_geometric")
    row = bench.lambda_case("er10", 300, repeats=1)
    exact = pp.lambda_max(bench.graph("er10", 300), exact=True)
    assert row["ours"] == pytest.approx(exact, abs=1e-9)
    assert row["pyg"] == pytest.approx(exact, abs=1e-4)  # PyG works in float32


def test_slope_of_a_power_law() -> None:
    xs = [10.0, 100.0, 1000.0]
    assert bench.slope(xs, [x**1.5 for x in xs]) == pytest.approx(1.5)
    assert bench.slope([1.0], [1.0]) is None
    assert np.isfinite(bench.slope(xs, [1.0, 2.0, 3.0]))


def test_support_errors_are_measured_against_the_exact_path() -> None:
    from benchmarks.perf import spectral_errors
    from matlang.graphs import named

    graphs = [named(n) for n in ("petersen", "cospectral_G", "rook4x4", "path3")]
    row = spectral_errors.measure(graphs, spectral_errors.CONFIGS["default"])
    assert row["graphs"] == 4
    assert 0 < row["max_abs_error"] <= row["max_bound"] <= spectral_errors.TARGET


@pytest.mark.data
def test_support_errors_on_the_paper_sets(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from benchmarks.perf import spectral_errors
    from matlang.runtime.datasets import data_available

    if not data_available():
        pytest.skip("needs MATLANG_DATA")
    spectral_errors.main(["--limit", "1", "--out", str(tmp_path)])
    res = json.loads((tmp_path / "spectral-errors.limit1.json").read_text())
    assert {r["dataset"] for r in res["rows"]} == set(spectral_errors.graph_sets())
    assert res["summary"]["met"] and all(r["graphs"] >= 1 for r in res["rows"])
