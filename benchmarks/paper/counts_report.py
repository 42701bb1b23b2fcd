"""The report's learned row of pattern counts (issue 53), in the beyond-the-paper part: GIN
with the exact counts of C3–C6 and K4 per node (``matlang.transforms.PatternCounts``) as input
features (``gin+counts``) and as GSN-style structural identifiers at every layer
(``gsn+counts``), beside plain GIN, on the counting set and the four TU sets.

Its files are variants, shortened protocols run for all three models alike (a CPU budget):
``bench count --variant`` :data:`COUNT_VARIANT` (≤ :data:`COUNT_EPOCHS` epochs, Table 2's
protocol otherwise) and ``bench tu --variant`` :data:`TU_VARIANT` (:data:`TU_EPOCHS` epochs per
fold, the paper's protocol otherwise).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from benchmarks.paper.counts_files import (
    COUNT_DATASET,
    COUNT_EPOCHS,
    COUNT_VARIANT,
    HEADING,
    LEARNED_LABEL,
    LEARNED_MODELS,
    TU_EPOCHS,
    TU_LABEL,
    TU_SETS,
    TU_VARIANT,
    learned_names,
)
from benchmarks.paper.model_variants import COUNT_PATTERNS
from benchmarks.paper.paper_numbers import TABLE2_HEAD, TABLE2_TASKS
from benchmarks.paper.report_files import Result, find, sci
from benchmarks.paper.report_flags import MARK_DIRTY, training_note
from benchmarks.records import is_dirty


def learned_files(folder: str | Path) -> list[Result]:
    """The row's result files present in ``folder`` (:func:`learned_names`)."""
    root = Path(folder)
    out = []
    for name in learned_names():
        path = root / name
        if path.is_file():
            out.append(Result(path, json.loads(path.read_text(encoding="utf-8"))))
    return out




def _mse(r: Result) -> str:
    return sci(float(r.data["median_test_mse"]))


def _acc(r: Result) -> str:
    d = r.data
    if d.get("mean_accuracy") is None:
        return "–"
    mean, std, last = d["mean_accuracy"], d["std_accuracy"], d["last_epoch_mean_accuracy"]
    return f"{mean:.1f} ± {std:.1f} ({last:.1f})"


def _mark(r: Result) -> str:
    return MARK_DIRTY if is_dirty(r.data) else ""


def learned_table(files: Sequence[Result]) -> tuple[str, list[Result]]:
    """Markdown: one row per model of :data:`LEARNED_MODELS` with any file; the counting
    tasks' median test MSE, then the TU sets' accuracy; the files shown."""
    used: list[Result] = []
    head = [*TABLE2_HEAD, *(TU_LABEL[d] for d in TU_SETS)]
    lines = ["| Model | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
    for m in LEARNED_MODELS:
        if not any(r.model == m for r in files):
            continue
        cells = []
        for task in TABLE2_TASKS:
            r = find(files, "count", m, task=task)
            cells.append(_mse(r) + _mark(r) if r else "–")
            used += [r] if r else []
        for d in TU_SETS:
            r = find(files, "tu", m, dataset=d)
            cells.append(_acc(r) + _mark(r) if r else "–")
            used += [r] if r else []
        lines.append(f"| {LEARNED_LABEL[m]} | " + " | ".join(cells) + " |")
    return "\n".join(lines), used


def file_note(r: Result) -> str:
    """What ran for one file of the row: seeds, epochs, batch, wall time, a dirty tree."""
    d = r.data
    cfg = d.get("config", {})
    seeds = d.get("seeds", [])
    bits = [f"`{r.path.name}`", f"{len(seeds)} seed(s)"]
    runs = d.get("runs", [])
    if d.get("bench") == "count":
        bits.append(training_note(cfg, runs))
        last = [
            x
            for x in runs
            if not x.get("stopped_early") and int(x.get("best_epoch") or 0) >= int(x["epochs_run"])
        ]
        picked = sorted(int(x["best_epoch"]) for x in runs if x.get("best_epoch"))
        if picked:
            bits.append(
                f"best epochs {picked[0]}–{picked[-1]}"
                if len(picked) > 1
                else f"best epoch {picked[0]}"
            )
        if last:
            bits.append(f"the last one run in {len(last)} of {len(runs)} seed(s)")
    else:
        folds = sorted({x["fold"] for x in runs})
        epochs, best = int(cfg.get("epochs") or 0), d.get("best_epoch")
        bits.append(
            f"{len(folds)} fold(s) × {epochs} epochs, batch {cfg.get('batch_size')}, "
            f"lr {cfg.get('lr')}; best mean epoch {best}"
        )
        if best == 1:
            bits.append("**the accuracy after one epoch**, no trained result")
        elif best is not None and best >= epochs:
            bits.append("the last epoch: still improving")
    earlier = d.get("earlier", [])
    wall = (d.get("wall_seconds") or 0) + sum(e.get("wall_seconds") or 0 for e in earlier)
    bits.append(f"{wall:.0f} s" + (f" over {len(earlier) + 1} runs" if earlier else ""))
    if is_dirty(d):
        bits.append(f"**{MARK_DIRTY}** written from a tree with uncommitted changes")
    label = LEARNED_LABEL.get(r.model, r.model)
    where = d.get("task") if d.get("bench") == "count" else TU_LABEL.get(str(d.get("dataset")))
    return f"- {label}, {where}: " + "; ".join(bits)


def _parameters(used: Sequence[Result]) -> list[str]:
    """Per row, its models' parameter counts (they vary with the input width)."""
    out = []
    for m in LEARNED_MODELS:
        ps = sorted(
            {int(r.data.get("model_info", {}).get("parameters") or 0) for r in used if r.model == m}
        )
        if ps:
            shown = f"{ps[0]:,}" if len(ps) == 1 else f"{ps[0]:,}–{ps[-1]:,}"
            out.append(f"{LEARNED_LABEL[m]} {shown}")
    return out


def learned_counts_section(files: Sequence[Result]) -> list[str]:
    """The section: what the three rows are, the table, each file's note."""
    out = [HEADING, ""]
    md, used = learned_table(files)
    if not used:
        return [*out, "_No result files for this table yet._", ""]
    counts = [r for r in used if r.bench == "count"]
    tu = [r for r in used if r.bench == "tu"]
    seeds = sorted({len(r.data.get("seeds", [])) for r in used})
    pats = ", ".join(COUNT_PATTERNS)
    out += [
        f"Every node gets the exact number of copies of {pats} through it (`matlang.transforms."
        "PatternCounts(..., per='node')`, computed once for the whole dataset) beside the "
        "features its bench gives every model. **GIN + counts**: GIN reading them in its "
        "input only. **GSN-style**: the same counts as the structural identifiers of GSN "
        "(Bouritsas et al., 2022) — concatenated to every layer's input, so that each GIN "
        "layer computes MLP((A + (1 + ε) I) [h, s]) (`GINConfig.identifiers`); GSN's own "
        "message MLP over (h_v, h_u, s_v, s_u) is replaced by GIN's sum of [h_u, s_u]. The "
        "same GIN otherwise (4 layers, width 62, sum readout, head 32; trainable parameters: "
        + "; ".join(_parameters(used))
        + ").",
        "",
        f"Counting (`{COUNT_DATASET}`, median test MSE over seeds on the normalised targets, "
        "lower is better): Table 2's splits and protocol (stop below training loss 1e-4, "
        "batch 64 as Table 2's cells ran, test MSE at the best validation epoch) but "
        f"**shortened** to ≤ {COUNT_EPOCHS} epochs where Table 2 runs 200, for all three rows "
        "alike (the CPU budget of this run; Table 2's GIN row is the 200-epoch reference); "
        "node features `[1, degree / max degree]` plus the counts, each divided by its "
        "maximum over the dataset.",
        "",
        "TU sets (10-fold accuracy %, the authors' folds, higher is better): mean ± std over "
        "the folds at the epoch of highest mean accuracy (the paper's protocol; a fold's curve "
        "is the mean of its seeds' curves), the last epoch's mean in brackets; node features "
        "the one-hot labels plus log(1 + count). **Shortened**: "
        f"{TU_EPOCHS} epochs per fold where the paper's protocol (the TU table below) trains "
        "100, for all three rows alike (the CPU budget of this run); batch 32, lr 1e-3.",
        "",
        "Seeds per cell: "
        + ", ".join(str(s) for s in seeds)
        + f" ({len(counts)} counting and {len(tu)} TU files; each note says).",
        "",
        md,
        "",
        *(file_note(r) for r in used),
        "",
    ]
    return out


__all__ = [
    "HEADING",
    "LEARNED_LABEL",
    "LEARNED_MODELS",
    "COUNT_EPOCHS",
    "COUNT_VARIANT",
    "TU_EPOCHS",
    "TU_SETS",
    "TU_VARIANT",
    "file_note",
    "learned_counts_section",
    "learned_files",
    "learned_names",
    "learned_table",
]
