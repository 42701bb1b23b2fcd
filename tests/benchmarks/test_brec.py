"""BREC: the loader, the WL rows on a few pairs, a bank's witnesses re-checked by the exact
evaluator, the CLI's JSON, and a smoke run of the RPC protocol on two pairs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks.paper import brec
from matlang.cli import main
from matlang.errors import DataError, MatlangError
from matlang.evaluator import evaluate_graph
from matlang.parser import parse
from matlang.runtime import datasets

needs_brec = pytest.mark.skipif(
    not datasets.data_available("brec"), reason="BREC data not found (set MATLANG_DATA)"
)


@pytest.fixture(scope="module")
def data() -> datasets.BrecData:
    return datasets.load_brec()


def test_missing_brec_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MATLANG_DATA", str(tmp_path))
    with pytest.raises(DataError, match="missing dataset file .*brec_pairs.g6"):
        datasets.load_brec()


def test_bad_categories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "brec").mkdir()
    (tmp_path / "brec" / "brec_pairs.g6").write_text("IheA@GUAo\nIheA@GUAo\n")
    (tmp_path / "brec" / "categories.json").write_text(json.dumps({"Basic": [0, 2]}))
    monkeypatch.setenv("MATLANG_DATA", str(tmp_path))
    with pytest.raises(DataError, match=r"categories.json: 'Basic' must be \[start, end\)"):
        datasets.load_brec()


@needs_brec
def test_loader_counts(data: datasets.BrecData) -> None:
    """The README's numbers: 400 pairs, categories 60/140/100/100, equal sizes per pair."""
    assert len(data.graphs) == 800 and data.pairs.shape == (400, 2)
    cats = list(data.categories())
    assert [cats.count(c) for c in brec.CATEGORIES] == [60, 140, 100, 100]
    assert data.category(365) == "Regular" and data.category(259) == "Extension"
    sizes = np.array([g.num_nodes for g in data.graphs]).reshape(400, 2)
    assert (sizes[:, 0] == sizes[:, 1]).all() and sizes.max() == 198


@needs_brec
def test_wl_rows_on_a_few_pairs(data: datasets.BrecData) -> None:
    """1-WL separates none; 3-WL separates basic, simple-regular, extension and the first CFI
    pairs but not a strongly regular or a 4-vertex-condition pair (the README's 2-FWL run)."""
    pairs = [0, 60, 110, 160, 262, 365]
    one = brec.wl_rows(data, "1-wl", pairs)
    assert [o.separated for o in one.outcomes] == [False] * 6
    three = brec.wl_rows(data, "3-wl", pairs)
    assert [o.separated for o in three.outcomes] == [True, True, False, True, True, False]


@needs_brec
def test_bank_witnesses_recheck_exactly(data: datasets.BrecData) -> None:
    """On a sample of pairs, each witness the bank prints parses and takes different exact
    values (dense evaluator) on the pair's two graphs; the L1 bank separates none."""
    pairs = [0, 17, 61, 105, 163, 230]
    res = brec.bank_rows(data, "L3", 10, pairs)
    assert all(o.separated for o in res.outcomes)
    for o in res.outcomes:
        e = parse(o.detail["witness"])
        i, j = data.pairs[o.pair]
        assert evaluate_graph(e, data.graphs[i]) != evaluate_graph(e, data.graphs[j])
    l1 = brec.bank_rows(data, "L1", 12, pairs)
    assert not any(o.separated for o in l1.outcomes)


def test_t_squared_is_hotellings_statistic() -> None:
    """d̄ᵀ S⁻¹ d̄ for full-rank differences (S the unbiased covariance), and 0 for no shift."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 3)), rng.normal(size=(32, 3))
    d = x - y
    mean = d.mean(0)
    cov = (d - mean).T @ (d - mean) / 31
    assert brec.t_squared(x, y) == pytest.approx(float(mean @ np.linalg.solve(cov, mean)))
    assert brec.t_squared(x, x) == 0.0


def _pairs_file(tmp_path: Path) -> Path:
    from matlang.graphs import PAPER_GRAPH6

    path = tmp_path / "pairs.g6"
    path.write_text("\n".join(PAPER_GRAPH6.values()) + "\n")
    return path


def test_bank_cli_json_and_witnesses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``matlang bank --json`` on a pairs file: the keys, and witnesses ``matlang eval`` checks."""
    path = _pairs_file(tmp_path)
    assert (
        main(
            [
                "bank",
                "--fragment",
                "L3",
                "--max-size",
                "10",
                "--pairs",
                str(path),
                "--json",
                "--no-progress",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert {"pairs", "separated", "sentences", "per_pair", "seconds"} <= set(out)
    assert out["pairs"] == 3 and out["sentences"] > 0
    for row in out["per_pair"]:
        if not row["separated"]:
            continue
        values = []
        for g6 in row["graphs"]:
            assert main(["eval", row["witness"], "--graph6", g6, "--json"]) == 0
            values.append(json.loads(capsys.readouterr().out)["values"][0])
        assert values[0] != values[1], row


def test_bank_cli_rejects_an_odd_pairs_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "odd.g6"
    path.write_text("IheA@GUAo\n")
    assert main(["bank", "--fragment", "L1", "--max-size", "5", "--pairs", str(path)]) == 1
    assert "even number" in capsys.readouterr().err


@needs_brec
def test_bench_brec_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "bench",
                "brec",
                "--model",
                "3-wl",
                "--pairs",
                "0:3",
                "--no-save",
                "--json",
                "--no-progress",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["pairs"] == 3 and out["separated"] == 3 and out["Basic"] == 3 and out["Total"] == 3


@needs_brec
def test_rpc_smoke_two_pairs(data: datasets.BrecData) -> None:
    """RPC runs end to end: two pairs, a fresh model each, finite T² for pair and reliability."""
    cfg = brec.RPCConfig(epochs=2)
    res = brec.rpc_rows(data, "gin", [0, 1], cfg=cfg)
    assert len(res.outcomes) == 2
    for o in res.outcomes:
        assert np.isfinite(o.detail["t2"]) and np.isfinite(o.detail["t2_reliability"])
        assert o.detail["epochs"] <= 2
        assert o.separated == (o.detail["distinguished"] and o.detail["reliable"])


@needs_brec
@pytest.mark.parametrize("pair", [0, 300])  # 10 nodes (dense mask), 72 nodes (sparse pattern)
def test_relabelled_supports_equal_recomputed(data: datasets.BrecData, pair: int) -> None:
    """GNNML3's supports of a graph carried to a relabelling are those computed on the
    relabelled graph (same entries in the same order, values to rounding); ChebNet's λmax the
    same number."""
    from matlang.graphs import Graph
    from matlang.runtime.preprocess import SupportConfig, gnnml3_supports, lambda_max

    a = data.graphs[data.pairs[pair][0]].adjacency.astype(np.int64)
    cfg = SupportConfig()
    base = gnnml3_supports(Graph(a), cfg)
    for p in brec.relabellings(a.shape[0], 3, np.random.default_rng(pair)):
        moved = brec.relabel_supports(base, p)
        fresh = gnnml3_supports(Graph(brec.relabel(a, p)), cfg)
        assert torch.equal(moved.edge_index, fresh.edge_index)
        np.testing.assert_allclose(moved.edge_attr.numpy(), fresh.edge_attr.numpy(), atol=1e-12)
        assert lambda_max(Graph(brec.relabel(a, p))) == pytest.approx(lambda_max(Graph(a)))


@needs_brec
@pytest.mark.parametrize("model", ["chebnet", "gnnml3"])
def test_rpc_shared_preprocessing_same_numbers(data: datasets.BrecData, model: str) -> None:
    """RPC with the per-graph preprocessing shared across relabellings gives the numbers of
    recomputing it on each (two epochs on a basic pair)."""
    from matlang.runtime.models import build_model

    cfg = brec.RPCConfig(epochs=2)
    for pair in (0,):
        i, j = data.pairs[pair]
        a, b = data.graphs[i].adjacency, data.graphs[j].adjacency
        inputs = brec.SharedInputs(build_model(model, 1, 16, config="iso"), (a, b))
        n = a.shape[0]
        given = inputs.batch_inputs([(0, np.arange(n)), (1, np.arange(n)[::-1])])
        assert set(given) == {"lambda_max" if model == "chebnet" else "supports"}
        shared = brec.rpc_pair(model, a, b, pair, cfg)
        fresh = brec.rpc_pair(model, a, b, pair, cfg, share_preprocessing=False)
        assert shared["t2"] == pytest.approx(fresh["t2"], rel=1e-6)
        assert shared["t2_reliability"] == pytest.approx(fresh["t2_reliability"], rel=1e-6)
        assert shared["loss"] == pytest.approx(fresh["loss"], rel=1e-6)


def test_permuted_copies_are_the_relabellings() -> None:
    """``permuted_copies`` draws the permutations ``relabellings`` draws, in the same order
    (the seeds of earlier result files keep their relabellings)."""
    a = np.triu(np.random.default_rng(1).integers(0, 2, (7, 7)), 1)
    a = a + a.T
    copies = brec.permuted_copies(a, 4, np.random.default_rng(5))
    perms = brec.relabellings(7, 4, np.random.default_rng(5))
    for c, p in zip(copies, perms, strict=True):
        assert (c == a[np.ix_(p, p)]).all()


def test_parse_pairs() -> None:
    assert brec.parse_pairs(None) is None
    assert brec.parse_pairs("0:3,60:62,300") == [0, 1, 2, 60, 61, 300]
    with pytest.raises(MatlangError, match="A:B"):
        brec.parse_pairs("0-3")
    with pytest.raises(MatlangError, match="twice"):
        brec.parse_pairs("0:3,2")


@needs_brec
def test_bench_brec_append_adds_pairs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def wl(pairs: str, *extra: str) -> int:
        base = ["bench", "brec", "--model", "3-wl", "--json", "--no-progress"]
        return main([*base, "--pairs", pairs, "--out", str(tmp_path), *extra])

    assert wl("0:2") == 0
    path = tmp_path / "brec-3-wl.json"
    assert wl("110,265", "--append") == 0
    merged = json.loads(path.read_text())
    assert [r["pair"] for r in merged["per_pair"]] == [0, 1, 110, 265]
    assert merged["pairs"] == 4 and merged["pairs_run"] == [110, 265]
    assert merged["earlier"][0]["pairs_run"] == [0, 1]
    # 3-WL separates the basic pairs and CFI pair 265, not the strongly regular pair 110
    assert merged["counts"]["Basic"] == 2 and merged["counts"]["Regular"] == 0
    assert merged["counts"]["CFI"] == 1 and merged["run_per_category"]["Total"] == 4
    capsys.readouterr()
    assert wl("1:3", "--append") == 1
    assert "already has pair(s) [1]" in capsys.readouterr().err
    assert json.loads(path.read_text())["pairs"] == 4
    # a file under the old name (brec-brec-<row>.json) still takes --append
    path.rename(tmp_path / "brec-brec-3-wl.json")
    assert wl("2", "--append") == 0
    assert [r["pair"] for r in json.loads(path.read_text())["per_pair"]] == [0, 1, 2, 110, 265]
    assert (tmp_path / "brec-brec-3-wl.json").is_file()  # never overwritten


def test_merge_pairs_refuses_other_settings(tmp_path: Path) -> None:
    old = {
        "bench": "brec",
        "dataset": "brec",
        "model": "gin",
        "settings": {"epochs": 20},
        "per_pair": [],
    }
    new = {**old, "settings": {"epochs": 2}, "per_pair": [], "seconds": 1.0}
    with pytest.raises(MatlangError, match="another settings"):
        brec.merge_pairs(tmp_path / "f.json", old, new)


def test_pair_ranges_round_trip() -> None:
    pairs = [0, 1, 2, 5, 60, 61, 300]
    assert brec.pair_ranges(pairs) == "0:3,5,60:62,300"
    assert brec.parse_pairs(brec.pair_ranges(pairs)) == pairs


def test_banks_as_iso_models_match_the_wl_tests() -> None:
    """A bank as a model in Table 1's test: the pairs it leaves undistinguished are those of
    its WL test on the paper's pairs (L1 = 1-WL at size 10 here, refinement sentences = 3-WL)."""
    from benchmarks.paper.iso import bank_iso
    from matlang.graphs import from_adjacency, named
    from matlang.runtime.wl import classes, count_equivalent_pairs

    c6 = np.roll(np.eye(6, dtype=np.int64), 1, 1) + np.roll(np.eye(6, dtype=np.int64), -1, 1)
    two_c3 = np.kron(np.eye(2, dtype=np.int64), 1 - np.eye(3, dtype=np.int64))
    graphs = [named(n) for n in ("decalin", "bicyclopentyl", "rook4x4", "shrikhande")]
    graphs += [from_adjacency(c6, name="C6"), from_adjacency(two_c3, name="2C3")]
    for model, test in (("bank-L1-k10", "1-wl"), ("bank-L3-r6", "3-wl")):
        total, und = bank_iso(graphs, model)
        assert total == 15
        want = sorted(
            (a, b) for grp in classes(graphs, test) for x, a in enumerate(grp) for b in grp[x + 1 :]
        )
        assert [tuple(p) for p in und.tolist()] == want
        assert len(want) == count_equivalent_pairs(classes(graphs, test))
    # EXP-style explicit pairs
    total, und = bank_iso(graphs, "bank-L3-r6", np.array([[0, 1], [2, 3]]))
    assert total == 2 and und.tolist() == [[2, 3]]


def test_bench_iso_bank_model_cli(capsys: pytest.CaptureFixture[str]) -> None:
    if not datasets.data_available("sr25"):
        pytest.skip("sr25 data not found")
    base = ["bench", "iso", "--dataset", "sr25", "--no-save", "--json", "--no-progress"]
    assert main([*base, "--model", "bank-L3-r4", "--seeds", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["undistinguished"] == 105
    assert main([*base, "--model", "bank-L3-r4", "--seeds", "3"]) == 1
    assert "no weights" in capsys.readouterr().err


@needs_brec
def test_bench_brec_saves_each_pair_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trained row is saved pair by pair: Ctrl-C on the third pair leaves the first two in
    the file and prints the --append that runs the rest; that run gives the file a run of all
    three pairs gives (the verdicts and T² of every pair)."""
    base = ["bench", "brec", "--model", "mlp", "--epochs", "2", "--json", "--no-progress"]
    real, calls = brec.rpc_pair, []

    def interrupted_at_third(*a: object, **k: object) -> dict:  # type: ignore[type-arg]
        calls.append(a)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(brec, "rpc_pair", interrupted_at_third)
    assert main([*base, "--pairs", "0:2,60", "--out", str(tmp_path / "a")]) == 130
    err = capsys.readouterr().err
    path = tmp_path / "a" / "brec-mlp.json"
    assert f"2 pair(s) of this run saved in {path}; go on with --append --pairs 60" in err
    assert [r["pair"] for r in json.loads(path.read_text())["per_pair"]] == [0, 1]
    monkeypatch.setattr(brec, "rpc_pair", real)
    assert main([*base, "--pairs", "60", "--append", "--out", str(tmp_path / "a")]) == 0
    assert main([*base, "--pairs", "0:2,60", "--out", str(tmp_path / "one")]) == 0
    resumed = json.loads(path.read_text())
    one = json.loads((tmp_path / "one" / "brec-mlp.json").read_text())
    drop = ("seconds",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in resumed["per_pair"]] == [
        {k: v for k, v in r.items() if k not in drop} for r in one["per_pair"]
    ]
    assert resumed["counts"] == one["counts"] and resumed["pairs"] == 3


def _brec_ppgn_row(tmp_path: Path, capsys: pytest.CaptureFixture[str], pairs: str,
                   wide_pair: str) -> None:
    """``--config brec --batch-size 32``: BREC's own PPGN is a row of its own (``ppgn.brec``)
    with its settings. It separates the 3-WL-separable ``pairs`` with T² far above the
    threshold and reliability T² below it; another batch size cannot be appended to the row,
    and a bad configuration or an odd batch size is refused up front. ``--dtype float64`` is a
    row of its own (``ppgn.brec.float64``), here on ``wide_pair``."""
    base = ["bench", "brec", "--model", "ppgn", "--json", "--no-progress", "--out", str(tmp_path)]
    brec_cfg = [*base, "--config", "brec", "--batch-size", "32"]
    assert main([*brec_cfg, "--pairs", pairs]) == 0
    capsys.readouterr()
    rec = json.loads((tmp_path / "brec-ppgn.brec.json").read_text())
    assert rec["model"] == "ppgn.brec" and rec["counts"]["Total"] == len(pairs.split(","))
    assert rec["settings"]["config"] == "brec" and rec["settings"]["batch_size"] == 32
    for row in rec["per_pair"]:
        assert row["t2"] > 1000 * 72.34 and row["t2_reliability"] < 72.34, row
    assert main([*base, "--config", "brec", "--pairs", "1", "--append"]) == 1
    assert "another settings" in capsys.readouterr().err
    assert main([*base, "--config", "huge", "--pairs", "1"]) == 1
    assert (
        "has no configuration 'huge'; known: default, iso, count, brec, brec-xavier"
        in capsys.readouterr().err
    )
    assert main([*base, "--batch-size", "15", "--pairs", "1"]) == 1
    assert "--batch-size holds whole pairs" in capsys.readouterr().err
    assert "dtype" not in rec["settings"]  # float32, as in every file written before --dtype
    assert main([*brec_cfg, "--dtype", "float64", "--pairs", wide_pair]) == 0
    capsys.readouterr()
    wide = json.loads((tmp_path / "brec-ppgn.brec.float64.json").read_text())
    assert wide["model"] == "ppgn.brec.float64" and wide["settings"]["dtype"] == "float64"
    (row,) = wide["per_pair"]
    assert row["separated"] and row["t2"] > 1e6 and row["t2_reliability"] < 72.34, row
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "brec-ppgn.brec.float64.json",
        "brec-ppgn.brec.json",
    ]


@needs_brec
def test_bench_brec_ppgn_in_brecs_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The row's machinery on Basic pairs (small graphs: seconds, in the default run)."""
    _brec_ppgn_row(tmp_path, capsys, pairs="0", wide_pair="0")


@pytest.mark.slow
@needs_brec
def test_bench_brec_ppgn_separates_cfi_pairs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same on CFI pairs (the default run's slowest test, so in the slow tier): CFI pair
    265 in float32 and pair 317 in float64, where float32's difference drowns in rounding
    (T² ≈ 1 in our run of the whole row)."""
    _brec_ppgn_row(tmp_path, capsys, pairs="0,265", wide_pair="317")


@needs_brec
def test_brec_ppgn_ablation_script(tmp_path: Path) -> None:
    """``python -m benchmarks.paper.brec_ppgn``: RPC per variant and pair beside the 2-FWL
    round of the pair (pair 265: 18 nodes, round 3, separated by BREC's PPGN with 5 or 3
    blocks); its files are never overwritten without --force; unknown variants are refused."""
    from benchmarks.paper import brec_ppgn

    argv = ["--pairs", "265", "--variants", "brec,brec 3 blocks", "--out", str(tmp_path)]
    assert brec_ppgn.main([*argv, "--no-progress"]) == 0
    rec = json.loads((tmp_path / "brec-ppgn-ablation.json").read_text())
    assert rec["fwl_rounds"] == {"265": 3} and rec["variants"]["brec 3 blocks"]["fields"] == {
        "layers": 3
    }
    assert [(r["variant"], r["nodes"], r["separated"]) for r in rec["rows"]] == [
        ("brec", 18, True),
        ("brec 3 blocks", 18, True),
    ]
    assert all(r["t2"] > 1e6 for r in rec["rows"])
    assert "| brec 3 blocks | ✓ | 1/1 |" in (tmp_path / "brec-ppgn-ablation.md").read_text()
    with pytest.raises(MatlangError, match="exists; run with --force"):
        brec_ppgn.main(argv)
    with pytest.raises(MatlangError, match="unknown variant"):
        brec_ppgn.main([*argv, "--force", "--variants", "brec,deeper"])
