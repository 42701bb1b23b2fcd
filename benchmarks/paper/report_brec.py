"""The report's BREC section on the T² rules: every trained model's count as the runner's
relabellings give it beside the counts with relabellings built as PyG data, under BREC's plain
T² and its S_epsilon rule (``matlang bench brec --input pyg``, :mod:`benchmarks.paper.brec_pyg`).

Every number comes from a result file: ``brec-MODEL.json`` (the runner) and
``brec-MODEL.pyg.json`` (``counts``: S_epsilon, ``counts_plain``: plain; per pair
``bit_identical``, ``reliable``, ``reliable_plain``). A model without its ``.pyg`` file says so
in its cells, with the command that measures it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.paper.brec import CATEGORIES, CATEGORY_SIZES

#: The trained reference models of the BREC table, in the report's order.
MODELS: tuple[str, ...] = ("mlp", "gcn", "gat", "chebnet", "gin", "gnnml1", "gnnml3", "ppgn")

#: What the section's columns are, and which one compares with BREC's published numbers.
EXPLANATION = (
    "Each model trained once per pair (BREC's RPC, one seed); the same relabellings, weights "
    "and training in every column, counted per category (Basic · Regular · Extension · CFI = "
    "total; `a/b`: a of the b pairs run so far, `–`: none run). *runner*: the graph relabelled "
    "and ChebNet's λmax and GNNML3's supports, computed once per base graph, carried to each "
    "relabelling (the table above; equal to recomputing them up to rounding), with the "
    "statistic in float64 numpy. *PyG*: each relabelling built as a PyG `Data` and batched by "
    "PyG's `DataLoader`, the model computing its own inputs, as users and BREC's evaluator feed"
    " it; the statistic computed as BREC's `T2_calculation` does (torch, float32), a pair "
    "counted as BREC's script counts it (distinguished; reliability failures shown beside). "
    "*plain* is BREC's default `d̄ᵀ S⁺ d̄`, the rule its published table was computed with: "
    "**the PyG plain column is the one that compares with BREC's published numbers**. *S_ε* "
    "adds ε (the files' `s_epsilon`) to S's diagonal, the rule BREC's code provides for models "
    "whose outputs are bit-identical across relabellings (S = 0: the plain statistic is then 0 "
    "whatever the difference); where outputs differ by float noise, the plain statistic divides"
    " by that noise, and a pair that counts under plain but not under S_ε is separated only by "
    "differences below the floor that ε sets. The exact tests and sentence banks above need no "
    "statistic and are the same under both rules."
)


def _is_pyg(data: dict[str, Any]) -> bool:
    return (data.get("settings") or {}).get("input") == "pyg"


def is_rules_row(data: dict[str, Any]) -> bool:
    """Whether a BREC result file belongs to this section rather than the main table."""
    return _is_pyg(data)


def cell(counts: dict[str, int], run: dict[str, int]) -> str:
    """``B · R · E · C = T``; a category run on part of its pairs as ``a/b``, ``–`` when none
    ran."""
    parts = [
        str(counts[c])
        if run[c] == CATEGORY_SIZES[c]
        else f"{counts[c]}/{run[c]}"
        if run[c]
        else "–"
        for c in CATEGORIES
    ]
    total = str(counts["Total"]) if run["Total"] == 400 else f"{counts['Total']}/{run['Total']}"
    return " · ".join(parts) + f" = {total}"


def _failures(per_pair: Sequence[dict[str, Any]], key: str) -> int:
    return sum(1 for r in per_pair if r.get(key) is False)


def rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per model of :data:`MODELS` that has a runner file: its cells (strings) and
    the numbers behind them (``None`` where the PyG file is missing)."""
    runner = {str(r["model"]): r for r in records if not _is_pyg(r)}
    pyg = {str(r["model"]).removesuffix(".pyg"): r for r in records if _is_pyg(r)}
    out = []
    for m in MODELS:
        if m not in runner:
            continue
        r, p = runner[m], pyg.get(m)
        row: dict[str, Any] = {
            "model": m,
            "runner": cell(r["counts"], r["run_per_category"]),
            "runner_total": r["counts"]["Total"],
        }
        if p is None:
            todo = f"not yet measured: `matlang bench brec --model {m} --input pyg`"
            row |= {"plain": todo, "eps": "not yet measured"}
            row |= {"plain_total": None, "eps_total": None}
            row |= {"failures": "–", "bit_identical": "–"}
        else:
            pp, run = p["per_pair"], p["run_per_category"]
            row |= {
                "plain": cell(p["counts_plain"], run),
                "eps": cell(p["counts"], run),
                "plain_total": p["counts_plain"]["Total"],
                "eps_total": p["counts"]["Total"],
                "failures": f"{_failures(pp, 'reliable_plain')} / {_failures(pp, 'reliable')}",
                "bit_identical": f"{sum(1 for x in pp if x.get('bit_identical'))}/{len(pp)}",
            }
        out.append(row)
    return out


def _epsilon(records: Sequence[dict[str, Any]]) -> str:
    """The ε of the PyG files (one value: they are one protocol), or the runner's default."""
    from benchmarks.paper.brec import RPCConfig

    found = {float(r["settings"]["s_epsilon"]) for r in records if _is_pyg(r)}
    return ", ".join(f"{e:g}" for e in sorted(found or {RPCConfig().s_epsilon}))


def section(records: Sequence[dict[str, Any]]) -> list[str]:
    """The section's Markdown lines (empty when no trained model has a BREC file)."""
    table = rows(records)
    if not table:
        return []
    out = ["### BREC's T² rules: the runner's relabellings and PyG input", "", EXPLANATION, ""]
    out += [
        "| model | runner, plain | PyG, plain (compares with BREC's published) | PyG, S_ε "
        f"(ε = {_epsilon(records)}) | reliability failures, PyG plain / S_ε "
        "| pairs with bit-identical outputs |",
        "|---|---|---|---|---|---|",
    ]
    for r in table:
        out.append(
            f"| {r['model']} | {r['runner']} | {r['plain']} | {r['eps']} | {r['failures']} "
            f"| {r['bit_identical']} |"
        )
    out += [
        "",
        "*pairs with bit-identical outputs*: pairs where the 32 relabellings of the first graph "
        "gave bit-identical outputs (both in the pair's set and in the reliability check's), "
        "the case S_ε is for.",
        "",
    ]
    return out
