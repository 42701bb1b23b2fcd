"""The report's plots (matplotlib, Agg backend): Table 1's undistinguished pairs, Table 2's
median MSE per dataset, Table 3's R², ours beside the paper's.

Every legend sits outside its axes. Table 2's log axis starts at the best trained model: a row
whose every cell is exact (a compiled sentence at initialisation: MSE at float rounding, below
:data:`EXACT_MSE`) is not drawn to scale but named under the axes with a marker on its lower
edge. Table 3's axis reaches down to the lowest R² (ours or the paper's), negative ones too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.paper.paper_numbers import (
    PAPER_TABLE1,
    PAPER_TABLE2,
    PAPER_TABLE3,
    TABLE1_PAIRS,
    TABLE2_HEAD,
    TABLE2_TASKS,
    TABLE3_TASKS,
)
from benchmarks.paper.report_files import Result, find
from benchmarks.paper.report_flags import MODEL_LABEL

#: A median MSE below this is exact up to float rounding (a sentence compiled exactly).
EXACT_MSE = 1e-10


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt




def _outside(ax: Any, ncol: int = 1) -> None:
    """The legend of ``ax``'s artists to the right of the axes, outside them."""
    ax.legend(
        loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, ncol=ncol, fontsize=8
    )


def figure_table1(results: Sequence[Result], order: Sequence[str]) -> Any | None:
    """Table 1's figure (``None``: no iso file)."""
    models = [m for m in order if any(find(results, "iso", m, dataset=d) for d in TABLE1_PAIRS)]
    if not models:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for ax, (k, ds) in zip(axes, enumerate(("graph8c", "sr25", "exp")), strict=True):
        xs = range(len(models))
        ours = [find(results, "iso", m, dataset=ds) for m in models]
        ov = [r.data["undistinguished"] + 1 if r else math.nan for r in ours]
        pv = [PAPER_TABLE1[m][k] + 1 if m in PAPER_TABLE1 else math.nan for m in models]
        ax.bar([x - 0.2 for x in xs], ov, 0.4, label="ours")
        ax.bar([x + 0.2 for x in xs], pv, 0.4, label="paper")
        ax.set_yscale("log")
        ax.set_ylim(bottom=0.8)
        ax.set_xticks(list(xs), [MODEL_LABEL.get(m, m) for m in models], rotation=45, ha="right")
        ax.set_title(f"{ds} ({TABLE1_PAIRS[ds]:,} pairs)")
        ax.set_ylabel("undistinguished pairs + 1")
    _outside(axes[-1])
    fig.suptitle("Table 1: pairs no seed distinguishes (lower is better)")
    fig.tight_layout()
    return fig


def exact_rows(results: Sequence[Result], dataset: str, models: Sequence[str]) -> list[str]:
    """The models of Table 2 on ``dataset`` whose every cell is exact (median MSE below
    :data:`EXACT_MSE`)."""
    out = []
    for m in models:
        vs = [
            r.data["median_test_mse"]
            for r in results
            if r.bench == "count"
            and r.model == m
            and r.data.get("dataset") == dataset
            and r.data.get("task") in TABLE2_TASKS
        ]
        if vs and all(v < EXACT_MSE for v in vs):
            out.append(m)
    return out


def figure_table2(results: Sequence[Result], dataset: str, order: Sequence[str]) -> Any | None:
    """Table 2's figure on ``dataset`` (``None``: no counting file on it)."""
    rs = [r for r in results if r.bench == "count" and r.data.get("dataset") == dataset]
    models = [m for m in order if any(r.model == m for r in rs)]
    if not models:
        return None
    exact = exact_rows(rs, dataset, models)
    trained = [m for m in models if m not in exact]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(12, 4.5))
    width = 0.8 / max(1, len(trained))
    drawn = []
    for i, m in enumerate(trained):
        xs = [t + (i - (len(trained) - 1) / 2) * width for t in range(len(TABLE2_TASKS))]
        ours = [find(rs, "count", m, task=t) for t in TABLE2_TASKS]
        ys = [r.data["median_test_mse"] if r else math.nan for r in ours]
        drawn += [y for y in ys if not math.isnan(y)]
        ax.bar(xs, ys, width, label=MODEL_LABEL.get(m, m))
    paper = [v for m in models if m in PAPER_TABLE2 for v in PAPER_TABLE2[m]]
    for i, m in enumerate(trained):
        if m in PAPER_TABLE2:
            xs = [t + (i - (len(trained) - 1) / 2) * width for t in range(len(TABLE2_TASKS))]
            ax.scatter(
                xs,
                PAPER_TABLE2[m],
                marker="_",
                s=200,
                color="black",
                zorder=3,
                label="paper" if i == 0 else None,
            )
    ax.set_yscale("log")
    low = min([*drawn, *paper]) if drawn or paper else 1e-6
    ax.set_ylim(bottom=low / 1.5)
    for m in exact:
        ax.scatter(
            range(len(TABLE2_TASKS)),
            [low / 1.5] * len(TABLE2_TASKS),
            marker="v",
            s=60,
            clip_on=False,
            zorder=4,
            label=f"{MODEL_LABEL.get(m, m)}: exact at initialisation "
            f"(< {EXACT_MSE:g}, not to scale)",
        )
    ax.set_xticks(range(len(TABLE2_TASKS)), list(TABLE2_HEAD))
    ax.set_ylabel("median test MSE (normalised targets)")
    ax.set_title(f"Table 2 on {dataset}: bars ours, black ticks the paper's (lower is better)")
    _outside(ax)
    fig.tight_layout()
    return fig


def figure_table3(results: Sequence[Result], order: Sequence[str]) -> Any | None:
    """Table 3's figure (``None``: no filter file)."""
    models = [m for m in order if any(find(results, "filter", m, task=t) for t in TABLE3_TASKS)]
    if not models:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for ax, (k, task) in zip(axes, enumerate(TABLE3_TASKS), strict=True):
        xs = range(len(models))
        ours = [find(results, "filter", m, task=task) for m in models]
        ov = [r.data["median_r2"] if r else math.nan for r in ours]
        pv = [PAPER_TABLE3[m][k] if m in PAPER_TABLE3 else math.nan for m in models]
        ax.bar([x - 0.2 for x in xs], ov, 0.4, label="ours")
        ax.bar([x + 0.2 for x in xs], pv, 0.4, label="paper")
        ax.axhline(0.0, color="grey", linewidth=0.8)
        low = min([0.0, *(v for v in [*ov, *pv] if not math.isnan(v))])
        ax.set_ylim(low - 0.05, 1.05)
        ax.set_xticks(list(xs), [MODEL_LABEL.get(m, m) for m in models], rotation=45, ha="right")
        ax.set_title(f"{task}-pass R²")
    _outside(axes[-1])
    fig.suptitle("Table 3: 2D-grid filtering, test R² on the interior (higher is better)")
    fig.tight_layout()
    return fig


def save(fig: Any | None, path: Path) -> bool:
    """Write ``fig`` to ``path`` (legends outside the axes included); ``False``: no figure."""
    if fig is None:
        return False
    plt = _pyplot()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


__all__ = ["EXACT_MSE", "exact_rows", "figure_table1", "figure_table2", "figure_table3", "save"]
