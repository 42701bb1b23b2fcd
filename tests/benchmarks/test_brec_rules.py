"""BREC under both T² rules: relabellings built as PyG data (``bench brec --input pyg``), BREC's
plain statistic against its S_epsilon rule on a model whose outputs are bit-identical across
relabellings, and the report's section against the result files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from benchmarks.paper import brec, brec_pyg, report_brec
from benchmarks.paper.brec_rpc import t_squared_torch
from matlang.cli import main
from matlang.errors import MatlangError
from matlang.runtime import datasets

pytest.importorskip("torch_geometric")

needs_brec = pytest.mark.skipif(
    not datasets.data_available("brec"), reason="BREC data not found (set MATLANG_DATA)"
)
RESULTS = Path(__file__).resolve().parents[2] / "results"


class DegreeSum(torch.nn.Module):
    """16 outputs ``w · Σ_v deg(v)`` per graph: float32 sums of small integers, so every
    relabelling of a graph gives bit-identical outputs (S = 0 exactly)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.linspace(0.5, 2.0, 16))

    def forward(self, data: Any) -> torch.Tensor:
        deg = torch.zeros(data.num_nodes).index_add_(
            0, data.edge_index[0], torch.ones(data.edge_index.shape[1])
        )
        sums = torch.zeros(data.num_graphs).index_add_(0, data.batch, deg)
        return sums[:, None] * self.w[None, :]


def _cycle(n: int) -> np.ndarray:
    a = np.zeros((n, n), dtype=np.int64)
    for i in range(n):
        a[i, (i + 1) % n] = a[(i + 1) % n, i] = 1
    return a


def _path(n: int) -> np.ndarray:
    a = np.zeros((n, n), dtype=np.int64)
    for i in range(n - 1):
        a[i, i + 1] = a[i + 1, i] = 1
    return a


def _star(n: int) -> np.ndarray:
    a = np.zeros((n, n), dtype=np.int64)
    a[0, 1:] = a[1:, 0] = 1
    return a


def _run(a: np.ndarray, b: np.ndarray) -> tuple[dict[str, Any], DegreeSum]:
    made: list[DegreeSum] = []

    def fresh() -> DegreeSum:
        made.append(DegreeSum())
        return made[-1]

    r = brec_pyg.rpc_pair_pyg(fresh, a, b, 3, brec.RPCConfig(input="pyg", epochs=2))
    return r, made[0]


def test_bit_invariant_model_plain_rule_degenerates_s_epsilon_decides() -> None:
    """C6 (degree sum 12) against P6 (10): outputs bit-identical across relabellings, so S = 0.
    The plain rule gives T² = 0 (pinv of the zero matrix) and misses the pair; S_epsilon gives
    d̄ᵀ d̄ / ε with d̄ = 2 w, far above the threshold; the reliability check stays at 0."""
    r, model = _run(_cycle(6), _path(6))
    assert r["bit_identical"] is True
    assert r["t2"] == 0.0 and r["t2_reliability"] == 0.0
    assert r["distinguished_plain"] is False and r["separated_plain"] is False
    w = model.w.detach().double()  # after training (weight decay moves it a little)
    expected = float((2 * w).pow(2).sum()) / 1e-7
    assert r["t2_eps"] == pytest.approx(expected, rel=1e-5)
    assert expected > 1e8 > brec.RPCConfig().threshold
    assert r["t2_eps_reliability"] == 0.0
    assert r["distinguished"] is True and r["reliable"] is True and r["separated"] is True
    assert r["mean_difference"] == pytest.approx(float(2 * w.max()), rel=1e-6)
    # the runner's statistic (float64 numpy) degenerates the same way on these outputs
    x = np.tile(12 * w.numpy(), (32, 1))
    assert brec.t_squared(x, x - 2 * w.numpy()) == 0.0


def test_bit_invariant_model_equal_sums_separated_by_neither_rule() -> None:
    """P4 and the star K1,3 have the same degree sum (6): d̄ = 0, T² = 0 under both rules."""
    r, _ = _run(_path(4), _star(4))
    assert r["bit_identical"] is True and r["mean_difference"] == 0.0
    assert r["t2"] == 0.0 and r["t2_eps"] == 0.0
    assert not r["separated"] and not r["separated_plain"]


def test_s_epsilon_bounds_a_statistic_that_divides_by_noise() -> None:
    """One output, differences c + e with noise e of size 1e-8: the plain statistic is
    c² / var(e) (~4e8, far above the threshold), the S_epsilon one c² / (var(e) + ε)
    (~0.4, below it)."""
    rng = np.random.default_rng(0)
    c = 2e-4
    noise = rng.normal(scale=1e-8, size=32)
    x = torch.tensor((c + noise)[:, None], dtype=torch.float64)
    y = torch.zeros_like(x)
    d = c + noise
    plain = d.mean() ** 2 / d.var(ddof=1)
    eps = d.mean() ** 2 / (d.var(ddof=1) + 1e-7)
    assert t_squared_torch(x, y) == pytest.approx(plain, rel=1e-9)
    assert t_squared_torch(x, y, 1e-7) == pytest.approx(eps, rel=1e-9)
    assert (
        plain > 1e8
        and eps < brec.RPCConfig().threshold
        and eps == pytest.approx(c**2 / 1e-7, rel=1e-3)
    )


def test_rpc_config_input_checked() -> None:
    with pytest.raises(MatlangError, match="input must be supports or pyg"):
        brec.RPCConfig(input="dense")
    with pytest.raises(MatlangError, match="float32"):
        brec.RPCConfig(input="pyg", dtype="float64")
    assert brec.RPCConfig(input="pyg").row("gin") == "gin.pyg"
    assert brec.RPCConfig().row("gin") == "gin"


@needs_brec
def test_pyg_rows_same_relabellings_as_the_runner() -> None:
    """On a basic pair, two epochs: the PyG path trains the same model on the same
    relabellings (same loss to rounding) and its plain statistic is the runner's to rounding;
    its flags follow BREC's rules from its numbers."""
    data = datasets.load_brec()
    i, j = data.pairs[0]
    a, b = data.graphs[i].adjacency, data.graphs[j].adjacency
    cfg = brec.RPCConfig(epochs=2)
    ours = brec.rpc_pair("gin", a, b, 0, cfg)
    pyg = brec_pyg.rpc_pair_pyg("gin", a, b, 0, brec.RPCConfig(epochs=2, input="pyg"))
    assert pyg["loss"] == pytest.approx(ours["loss"], rel=1e-5)
    assert pyg["t2"] == pytest.approx(ours["t2"], rel=1e-2)
    for suffix, name in (("_plain", "t2"), ("", "t2_eps")):
        t, t_rel = pyg[name], pyg[f"{name}_reliability"]
        assert pyg[f"reliable{suffix}"] == (t_rel < cfg.threshold)
        close = np.isclose(t, t_rel, rtol=1e-5, atol=cfg.atol)
        assert pyg[f"distinguished{suffix}"] == (t > cfg.threshold and not close)


@needs_brec
def test_bench_brec_pyg_cli_append_and_report(tmp_path: Path) -> None:
    """``bench brec --input pyg`` writes ``brec-gin.pyg.json`` with both rules' counts, whose
    ``--append`` merges both; the report's section shows them beside the runner's file."""
    base = ["bench", "brec", "--model", "gin", "--input", "pyg", "--epochs", "1"]
    opts = ["--json", "--no-progress", "--threads", "1", "--out", str(tmp_path)]
    assert main([*base, "--pairs", "0", *opts]) == 0
    assert main([*base, "--pairs", "160", "--append", *opts]) == 0
    rec = json.loads((tmp_path / "brec-gin.pyg.json").read_text())
    assert rec["model"] == "gin.pyg" and [p["pair"] for p in rec["per_pair"]] == [0, 160]
    assert rec["settings"]["input"] == "pyg" and rec["settings"]["s_epsilon"] == 1e-7
    assert rec["settings"]["protocol"] == brec_pyg.PROTOCOL
    for key, flag in (("counts", "separated"), ("counts_plain", "separated_plain")):
        want = {c: 0 for c in brec.CATEGORIES}
        for p in rec["per_pair"]:
            want[p["category"]] += int(p[flag])
        assert {c: rec[key][c] for c in brec.CATEGORIES} == want
        assert rec[key]["Total"] == sum(want.values())
    runner = json.loads((RESULTS / "brec-gin.json").read_text())
    rows = report_brec.rows([runner, rec])
    assert [r["model"] for r in rows] == ["gin"]
    c, cp = rec["counts"], rec["counts_plain"]
    assert rows[0]["eps"] == f"{c['Basic']}/1 · – · {c['Extension']}/1 · – = {c['Total']}/2"
    assert rows[0]["plain"] == f"{cp['Basic']}/1 · – · {cp['Extension']}/1 · – = {cp['Total']}/2"


def _cell(per_pair: list[dict[str, Any]], flag: str) -> str:
    """A cell recounted from per-pair verdicts: ``a`` for a whole category, ``a/b`` for b
    of its pairs, ``–`` for none."""
    sizes = {"Basic": 60, "Regular": 140, "Extension": 100, "CFI": 100}
    parts = []
    for c in brec.CATEGORIES:
        mine = [p for p in per_pair if p["category"] == c]
        got = sum(int(bool(p[flag])) for p in mine)
        parts.append(
            "–" if not mine else str(got) if len(mine) == sizes[c] else f"{got}/{len(mine)}"
        )
    total = sum(int(bool(p[flag])) for p in per_pair)
    return " · ".join(parts) + (
        f" = {total}" if len(per_pair) == 400 else f" = {total}/{len(per_pair)}"
    )


def test_report_brec_columns_equal_the_files() -> None:
    """Every model's row of the report's rules section (rendered from ``results/``) shows the
    counts of its files, recounted here from their per-pair verdicts; a model without its
    PyG file says it is not yet measured."""
    from benchmarks.paper.report import _brec_section
    from benchmarks.paper.report_files import load_results

    results = load_results(RESULTS)
    md = "\n".join(_brec_section(results))
    main_table, _, rules = md.partition("### BREC's T² rules")
    assert ".pyg" not in main_table  # the main table keeps the runner's rows only
    files = {r.path.name: r.data for r in results if r.bench == "brec"}
    checked = 0
    for m in report_brec.MODELS:
        runner = files.get(f"brec-{m}.json")
        if runner is None:
            continue
        line = next(ln for ln in rules.splitlines() if ln.startswith(f"| {m} | "))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[1] == _cell(runner["per_pair"], "separated")
        pyg = files.get(f"brec-{m}.pyg.json")
        if pyg is None:
            assert cells[2] == f"not yet measured: `matlang bench brec --model {m} --input pyg`"
            assert cells[3] == "not yet measured"
            continue
        assert cells[2] == _cell(pyg["per_pair"], "separated_plain")
        assert cells[3] == _cell(pyg["per_pair"], "separated")
        bit = sum(1 for p in pyg["per_pair"] if p["bit_identical"])
        assert cells[5] == f"{bit}/{len(pyg['per_pair'])}"
        checked += 1
    assert checked >= 1 or not any(n.endswith(".pyg.json") for n in files)
