"""The benchmark runner on tiny sizes (its JSON structure, its ratios), and the pieces it trusts:
the hand-written implementations against the dense evaluator, the sparse Erdős–Rényi sampler,
the peak-memory probe and the log–log fit."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks.perf.cases import agree, summarize
from benchmarks.perf.handwritten import HANDWRITTEN, custom_l1, masked_l3, trace_a3
from benchmarks.perf.runner import TARGETS, Config, loglog_fit, run
from benchmarks.perf.timing import measure_peak, rss_bytes, time_interleaved
from benchmarks.perf.workloads import Workload, sparse_erdos_renyi
from matlang.evaluator import evaluate, to_float
from matlang.graphs import named
from matlang.runtime import sparse
from matlang.runtime.batch import Batch

GRAPHS = ["K4", "petersen", "cycle5", "decalin", "star4"]
#: The hand-written implementations and the torch_sparse backend need the sparse extra; on the
#: default install their cells are skipped with the reason, and their own tests skip.
HAVE_SPARSE = "torch_sparse" in sparse.available_backends()
needs_sparse = pytest.mark.skipif(
    not HAVE_SPARSE, reason="the hand-written implementations use torch-sparse and torch-scatter"
)
NO_SPARSE = "needs torch-sparse and torch-scatter (not installed: bash .ci/setup --sparse)"


def _positive_finite(x: object) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


# --------------------------------------------------------------------------- the runner


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("bench")
    cfg = Config.quick(
        out=out,
        isolate=False,
        progress=False,
        groups=("handwritten", "dense", "scaling", "backends", "models"),
        handwritten_workloads=(
            Workload(100, 4.0),
            Workload(8, 3.0, graphs=3, sampler="generators"),
        ),
        dense_sizes=(20, 40),
        dense_exact_max_n=20,
        dense_single_min_n=40,
        scaling_edges=(300, 1_200),
        backend_workloads=(Workload(100, 4.0),),
        model_sizes=(8,),
    )
    return out, run(cfg)


def test_runner_writes_every_file(quick_results: tuple[Path, dict]) -> None:
    out, data = quick_results
    loaded = json.loads((out / "perf.json").read_text(encoding="utf-8"))
    assert loaded == json.loads(json.dumps(data))  # what run returns is what it wrote
    assert set(loaded) == {"meta", "summary", "scaling", "cases"}
    md = (out / "perf.md").read_text(encoding="utf-8")
    for title in ("## Summary", "hand-written", "dense evaluator", "Scaling", "Backends", "PPGN"):
        assert title in md
    assert (out / "scaling.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_summary_ratios_are_positive_and_finite(quick_results: tuple[Path, dict]) -> None:
    s = quick_results[1]["summary"]
    # finite, not positive: --quick's sizes are tiny, and on a loaded machine the fitted
    # slope of a few milliseconds can come out slightly negative (-0.02 seen in a fresh run)
    assert isinstance(s["time_exponent"], float) and math.isfinite(s["time_exponent"])
    # memory: at 300 and 1,200 edges a call may raise the peak above the baseline by nothing
    # at all (seen in full-suite runs: peaks [0.0, 0.05] per sentence); the log-log fit takes
    # only points above zero and needs two, so the only acceptable None is that no sentence
    # had two such points
    peaks = [f["peak_mib"] for f in quick_results[1]["scaling"].values()]
    if s["memory_exponent"] is None:
        assert peaks and all(sum(p > 0 for p in ps) < 2 for ps in peaks), peaks
    else:
        assert isinstance(s["memory_exponent"], float) and math.isfinite(s["memory_exponent"])
    if not HAVE_SPARSE:  # no reference to compare with: no ratio, and the report says why
        assert s["compiled_over_handwritten"] is None and s["torch_over_torch_sparse"] is None
        md = (quick_results[0] / "perf.md").read_text(encoding="utf-8")
        assert "skipped: needs torch-sparse and torch-scatter" in md and "| error" not in md
        return
    assert _positive_finite(s["compiled_over_handwritten"])
    assert s["dense_over_compiled_n10000"] is None  # n = 10⁴ is not part of the quick run
    assert s["dense_over_compiled_largest"]["n"] == 40
    assert _positive_finite(s["dense_over_compiled_largest"]["ratio"])
    assert _positive_finite(s["dense_exact_over_compiled"])
    assert _positive_finite(s["torch_over_torch_sparse"]["min"])
    assert s["torch_over_torch_sparse"]["min"] <= s["torch_over_torch_sparse"]["max"]
    assert s["gnnml3_largest_n"] == 8 and s["ppgn_largest_n"] == 8
    assert s["targets"] == TARGETS
    assert set(s["met"]) == set(TARGETS) and s["met"]["dense_over_compiled_n10000"] is None
    assert s["agree"] is True


def test_every_case_has_times_memory_and_agreeing_values(quick_results: tuple[Path, dict]) -> None:
    cases = quick_results[1]["cases"]
    groups = {c["group"] for c in cases}
    assert groups == {"handwritten", "dense", "scaling", "backends", "models"}
    assert sum(c["group"] == "handwritten" for c in cases) == 2 * len(HANDWRITTEN)
    for case in cases:
        assert "error" not in case and "skipped" not in case, case["id"]
        assert case["workload"]["edges"] > 0
        for name, c in case["contestants"].items():
            assert "error" not in c, (case["id"], name, c.get("error"))
            if not HAVE_SPARSE and (name == "handwritten" or name == "torch_sparse"):
                assert c["skipped"] == NO_SPARSE and "min_s" not in c
                continue
            assert 0 < c["min_s"] <= c["median_s"], (case["id"], name)
            assert c["repeats"] == len(c["times_s"]) >= 1
            assert c["peak_mib"] >= 0 and c["baseline_mib"] > 0
            assert all(math.isfinite(x) for x in c["check"])
        for key, value in case.get("ratios", {}).items():
            assert value is None or _positive_finite(value), (case["id"], key)
        if "agree" in case and (HAVE_SPARSE or case["group"] in ("dense", "models")):
            assert case["agree"] is True, case["id"]
    singles = [c for c in cases if c["id"].startswith("dense/") and "n=40" in c["id"]]
    assert singles and all(c["contestants"]["dense-float64"]["repeats"] == 1 for c in singles)


def test_update_replaces_only_the_groups_run(
    quick_results: tuple[Path, dict], tmp_path: Path
) -> None:
    out, data = quick_results
    shutil.copy(out / "perf.json", tmp_path / "perf.json")
    cfg = Config.quick(
        out=tmp_path,
        isolate=False,
        progress=False,
        plot=False,
        update=True,
        groups=("backends",),
        backend_workloads=(Workload(60, 3.0),),
    )
    new = run(cfg)
    assert [c["group"] for c in new["cases"]] == [c["group"] for c in data["cases"]]
    old_backends = [c for c in data["cases"] if c["group"] == "backends"]
    new_backends = [c for c in new["cases"] if c["group"] == "backends"]
    assert {c["workload"]["n"] for c in old_backends} == {100}
    assert {c["workload"]["n"] for c in new_backends} == {60}  # this run's cases
    kept = [c for c in new["cases"] if c["group"] != "backends"]
    assert kept == [c for c in data["cases"] if c["group"] != "backends"]  # as they were
    assert new["meta"]["started"] == data["meta"]["started"]
    assert [u["groups"] for u in new["meta"]["updates"]] == [["backends"]]
    assert (
        new["summary"]["dense_over_compiled_n10000"]
        == data["summary"]["dense_over_compiled_n10000"]
    )
    on_disk = json.loads((tmp_path / "perf.json").read_text(encoding="utf-8"))
    assert on_disk["cases"] == new["cases"]
    assert "- updated (`--update`): group(s) backends re-run" in (tmp_path / "perf.md").read_text(
        encoding="utf-8"
    )


def test_scaling_fit_covers_both_sentences(quick_results: tuple[Path, dict]) -> None:
    fits = quick_results[1]["scaling"]
    assert set(fits) == {"(A ⊙ A²)² 𝟏", "tr(A³)"}
    for f in fits.values():
        assert len(f["edges"]) == 2 and f["edges"][0] < f["edges"][1]
        slope = math.log(f["min_s"][1] / f["min_s"][0]) / math.log(f["edges"][1] / f["edges"][0])
        assert f["time_exponent"] == pytest.approx(slope)  # two points: the fit is their slope
        assert f["time_exponent_base_range"] == pytest.approx(slope)  # both sizes ≤ 10⁶
        if HAVE_SPARSE:
            assert f["handwritten"]["edges"] == f["edges"]  # the reference ran at the same sizes
    summary = quick_results[1]["summary"]
    worst = max(f["time_exponent_base_range"] for f in fits.values())
    assert summary["time_exponent_base_range"] == pytest.approx(worst)
    if not HAVE_SPARSE:
        return
    hand = max(f["handwritten"]["time_exponent_base_range"] for f in fits.values())
    assert summary["handwritten_time_exponent_base_range"] == pytest.approx(hand)


def test_models_record_the_first_epoch_apart(quick_results: tuple[Path, dict]) -> None:
    models = [c for c in quick_results[1]["cases"] if c["group"] == "models"]
    assert {c["params"]["model"] for c in models} == {"gnnml3", "ppgn"}
    for case in models:
        c = case["contestants"][case["params"]["model"]]
        assert c["prepare_s"] > 0 and c["prepare_peak_mib"] >= 0 and c["parameters"] > 1000


# --------------------------------------------------------------------------- the pieces


@needs_sparse
@pytest.mark.parametrize("name", GRAPHS)
def test_handwritten_equals_the_dense_evaluator(name: str) -> None:
    g = named(name)
    b = Batch.from_graphs([g])
    for sentence, fn in HANDWRITTEN.items():
        expected = np.asarray(to_float(evaluate(sentence, g)), dtype=np.float64).reshape(-1)
        got = fn(b).to(torch.float64).numpy().reshape(-1)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-30, err_msg=sentence)


@needs_sparse
def test_handwritten_on_a_batch_is_per_graph() -> None:
    gs = [named("K4"), named("cycle5"), named("petersen")]
    b = Batch.from_graphs(gs)
    assert trace_a3(b).tolist() == [24.0, 0.0, 0.0]  # tr(A³) = 6 · triangles
    assert masked_l3(b)[:4].tolist() == [36.0] * 4  # K4: (A ⊙ A²) = 2A, (2A)² 𝟏 = 4 · 9
    l1 = custom_l1(b)
    assert l1.shape == (3,) and l1[0].item() == pytest.approx(36 * math.exp(-9))  # 4·3·3·e⁻⁹


def test_sparse_erdos_renyi_is_a_simple_sorted_graph_of_the_right_density() -> None:
    ei = sparse_erdos_renyi(4_000, 10.0, seed=3)
    n = 4_000
    key = ei[0] * n + ei[1]
    assert bool((key[1:] > key[:-1]).all())  # row-major, no repeats
    assert bool((ei[0] != ei[1]).all())
    assert torch.equal(torch.sort(ei[1] * n + ei[0]).values, key)  # symmetric
    assert ei.shape[1] / n == pytest.approx(10.0, abs=0.3)  # E / n = average degree
    assert torch.equal(ei, sparse_erdos_renyi(4_000, 10.0, seed=3))
    assert not torch.equal(ei, sparse_erdos_renyi(4_000, 10.0, seed=4))


def test_both_samplers_give_the_same_batch_layout() -> None:
    for sampler in ("sparse", "generators"):
        b, graphs = Workload(30, 4.0, graphs=3, sampler=sampler, seed=1).build()
        b.validate()
        assert b.num_graphs == 3 and b.num_nodes == 90
        assert (graphs is None) == (sampler == "sparse")


def test_measure_peak_sees_an_allocation() -> None:
    if rss_bytes() == 0:
        pytest.skip("no /proc here")
    size = 64 * 2**20

    def allocate() -> int:
        x = np.ones(size // 8)  # written, so resident
        return int(x[-1])

    peak = measure_peak(allocate)
    assert peak.result == 1
    assert size * 0.9 <= peak.peak_bytes <= size * 1.5
    assert measure_peak(lambda: None).peak_bytes < 8 * 2**20


def test_time_interleaved_counts_calls() -> None:
    calls = {"a": 0, "b": 0}

    def bump(k: str) -> None:
        calls[k] += 1

    t = time_interleaved({"a": lambda: bump("a"), "b": lambda: bump("b")}, warmup=2, repeats=3)
    assert calls == {"a": 5, "b": 5}
    assert len(t["a"].times) == len(t["b"].times) == 3
    assert t["a"].min <= t["a"].median


def test_loglog_fit_recovers_a_power_law() -> None:
    xs = [1e3, 1e4, 1e5, 1e6]
    assert loglog_fit(xs, [3 * x**1.5 for x in xs]) == pytest.approx(1.5)
    assert loglog_fit(xs, [0.0, 2.0, 0.0, 20.0]) == pytest.approx(0.5)  # zeros are left out
    assert loglog_fit([1.0], [1.0]) is None


def test_agree_and_summarize() -> None:
    t = torch.tensor([3.0, 4.0])
    assert summarize(t) == [7.0, 5.0]
    assert summarize([np.array([3, 4])]) == [7.0, 5.0]
    assert agree([1.0, 1.0], [1.0 + 1e-5, 1.0])
    assert not agree([1.0, 1.0], [1.1, 1.0])
    assert not agree([float("nan"), 1.0], [float("nan"), 1.0])


def test_sgnn_epoch_times_three_contestants_on_one_dataset() -> None:
    """``benchmarks.perf.sgnn_epoch`` on MUTAG, two epochs: every contestant timed, the two
    SentenceGNNs the same model, and each ratio the quotient of the times it reports."""
    from benchmarks.perf import sgnn_epoch

    r = sgnn_epoch.measure("mutag", epochs=2, batch_size=64)
    assert r["graphs"] == 188
    assert set(r["later_min_s"]) == {"sgnn", "sgnn.reused", "gin"}
    assert all(v > 0 for v in [*r["first_epoch_s"].values(), *r["later_min_s"].values()])
    assert r["params"]["sgnn"] == r["params"]["sgnn.reused"] != r["params"]["gin"]
    best = r["later_min_s"]
    assert r["ratio_gin"] == best["sgnn"] / best["gin"]
    assert r["new_over_reused"] == best["sgnn"] / best["sgnn.reused"]


def test_sgnn_epoch_floor_is_the_default_sentence_gnn_written_in_plain_torch() -> None:
    """``torch.floor`` (``--variants``) is the default SentenceGNN's arithmetic: given the
    SentenceGNN's weights, its output on a MUTAG batch (training mode: batch statistics) is the
    SentenceGNN's, and so are the gradients of the weights it shares."""
    from torch_geometric.loader import DataLoader

    from benchmarks.perf import sgnn_epoch
    from matlang.nn import SentenceGNN
    from matlang.runtime.datasets import load_tu
    from matlang.runtime.pyg import pyg_dataset

    ds = pyg_dataset(load_tu("mutag"))
    batch = next(iter(DataLoader(ds, batch_size=16)))
    torch.manual_seed(0)
    model = SentenceGNN(ds.num_features, 2, sgnn_epoch.SUPPORTS, hidden=32, layers=3)
    floor = sgnn_epoch._Floor(ds.num_features, 2)
    for mine, theirs in zip(floor.convs, model.convs):  # SentenceConv's parameter names
        mine.load_state_dict(theirs.state_dict())
    floor.head.load_state_dict(model.head.state_dict())
    want = model(batch)
    got = floor(batch, *sgnn_epoch._floor_supports(batch))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    want.square().sum().backward()
    got.square().sum().backward()
    for mine, conv in zip(floor.convs, model.convs):
        torch.testing.assert_close(mine.weight.grad, conv.weight.grad, rtol=1e-3, atol=1e-4)
        torch.testing.assert_close(
            mine.product_weight_a.grad, conv.product_weight_a.grad, rtol=1e-3, atol=1e-4
        )


def test_positions_ab_times_both_paths_after_checking_them_equal() -> None:
    """``benchmarks.perf.positions_ab`` at n = 300: the kernel and the search it replaced give
    the same values (checked inside, or it raises), every contestant is timed, and each ratio
    is the quotient of the times it reports."""
    from benchmarks.perf import positions_ab

    rows = positions_ab.run(300, repeats=2)
    assert [r["sentence"] for r in rows] == list(positions_ab.SENTENCES)
    for r in rows:
        t = r["min_ms"]
        assert set(t) == {"new", "old", "gb"} and all(v > 0 for v in t.values())
        assert r["new_over_old"] == pytest.approx(t["new"] / t["old"])
        assert r["new_gb"] == pytest.approx(t["new"] / t["gb"])


def test_cold_constants_checks_both_settings_and_reports_their_ratios() -> None:
    """``benchmarks.perf.cold_constants`` at n = 300: matlang with and without validation
    agree with hand-written GraphBLAS (checked inside, or it raises), every contestant is
    timed, and each ratio is the quotient of the times it reports."""
    from benchmarks.perf import cold_constants

    rows = cold_constants.run(300, 2, list(cold_constants.SENTENCES))
    assert [r["sentence"] for r in rows] == list(cold_constants.SENTENCES)
    for r in rows:
        t = r["min_s"]
        assert {"matlang", "matlang.unvalidated", "gb"} <= set(t)
        assert all(v > 0 for v in t.values())
        assert r["ratio_gb"] == pytest.approx(t["matlang"] / t["gb"])
        assert r["ratio_unvalidated_gb"] == pytest.approx(t["matlang.unvalidated"] / t["gb"])
    tri = rows[0]
    assert tri["ratio_lagraph"] == pytest.approx(tri["min_s"]["matlang"] / tri["min_s"]["lagraph"])


def test_sgnn_epoch_variants_and_their_dense_multiply_adds() -> None:
    """``--variants``: the lighter SentenceGNNs timed beside the default, and the dense
    multiply-adds per node counted from the shapes: GIN's MLPs (7·32 + 32·32, then 2·32·32
    twice on MUTAG's 7 features), the default's three supports and two product factors."""
    from benchmarks.perf import sgnn_epoch

    r = sgnn_epoch.measure("mutag", epochs=2, batch_size=64, variants=True)
    contestants = {"sgnn", "sgnn.reused", "gin", "torch.floor", *sgnn_epoch.VARIANTS}
    assert set(r["later_min_s"]) == contestants
    macs = r["dense_macs_per_node"]
    assert macs["torch.floor"] == macs["sgnn"] and r["params"]["torch.floor"] == r["params"]["sgnn"]
    assert macs["gin"] == (7 * 32 + 32 * 32) + 2 * (2 * 32 * 32)
    assert macs["sgnn"] == 5 * 7 * 32 + 2 * 5 * 32 * 32  # 3 supports + 2 product factors
    assert macs["sgnn.no-product"] == 3 * 7 * 32 + 2 * 3 * 32 * 32
    assert macs["sgnn.IA"] == 2 * 7 * 32 + 2 * 2 * 32 * 32
    best = r["later_min_s"]
    assert all(r["ratio_gin_each"][k] == best[k] / best["gin"] for k in best)
