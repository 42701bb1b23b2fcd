"""The TU table of the report (the paper's appendix): ours / paper per model and dataset, the
folds each cell ran, GPU-trained folds; read from the ``bench tu`` result files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.paper.report_flags import deviations
from benchmarks.paper.tu import PAPER_TU, model_choices
from benchmarks.paper.tu_protocols import (
    AUTHORS,
    AUTHORS_ARCH_PROTOCOL,
    CONTINUOUS,
    CONTINUOUS_FEATURES,
    DATASETS,
    dataset_label,
)


def fold_ranges(folds: Sequence[int]) -> str:
    """``[1, 2, 3, 5]`` → ``"1–3, 5"``."""
    spans: list[list[int]] = []
    for k in sorted(folds):
        if spans and k == spans[-1][1] + 1:
            spans[-1][1] = k
        else:
            spans.append([k, k])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in spans)


def devices_note(rows: Sequence[dict[str, Any]]) -> list[str]:
    """A line naming the cells with folds trained on a GPU (a run's ``device``; runs written
    before ``--device`` existed trained on the CPU and record none), or nothing."""
    notes = []
    for r in rows:
        by_device: dict[str, list[int]] = {}
        for x in r.get("runs", []):
            if x.get("device", "cpu") != "cpu":
                by_device.setdefault(x["device"], []).append(x["fold"])
        for dev, folds in by_device.items():
            notes.append(
                f"{r['model']} on {dataset_label(r['dataset'])}, "
                f"folds {fold_ranges(sorted(set(folds)))} on {dev}"
            )
    if not notes:
        return []
    return [
        "",
        "Trained on a GPU (`--device cuda`): " + "; ".join(notes) + "; every other fold on the "
        "CPU. From one seed both devices train the same model up to float32 rounding (one epoch "
        "agrees within 1e-3, `test_cuda_trains_what_the_cpu_does`); over 100 epochs the rounding "
        "grows as it does between any two machines.",
    ]


def tu_section(
    rows: Sequence[dict[str, Any]], *, authors: bool = False, arch: bool = False
) -> list[str]:
    """The report's TU table: ours (best mean epoch; last epoch) / paper, per model
    (``authors``: the table of ``--protocol authors`` files; with ``arch``, of those also run
    with ``--arch authors``)."""
    title = "## TU datasets (appendix): 10-fold accuracy, ours / paper"
    if authors:
        title = "## TU datasets, the authors' per-dataset protocol (`--protocol authors`)"
    if arch:
        title = (
            "## TU datasets, the authors' protocol and architectures "
            "(`--protocol authors --arch authors`)"
        )
    out = [title, ""]
    if not rows:
        return [*out, "_No result files for this table yet._", ""]
    out += [
        "Ours: mean ± std over the folds at the epoch of highest mean accuracy (the paper's "
        "protocol, after GIN), then the last epoch's mean in brackets. `sentence`: SentenceConv "
        "layers (I, A, A ⊙ A², A ⊙ A³; batch norm); `gin+features`: GIN on node labels + "
        "log1p of triangles and closed 4-/5-walks per node (SentenceFeatures). A cell `–` "
        "has not run (no result file); the paper's number is after the slash.",
        "",
        "| model | " + " | ".join(dataset_label(d) for d in DATASETS) + " |",
        "|---|" + "---|" * len(DATASETS),
    ]
    models = [m for m in model_choices() if any(r["model"] == m for r in rows) or m in PAPER_TU]
    shown: list[dict[str, Any]] = []
    for m in models:
        cells = []
        for d in DATASETS:
            # the file with the most folds (a --folds A:B file of its own only if it is all)
            r = max(
                (r for r in rows if r["model"] == m and r["dataset"] == d),
                key=lambda r: (len({x["fold"] for x in r.get("runs", [])}), len(r.get("runs", []))),
                default=None,
            )
            ours = "–"
            if r is not None and r.get("mean_accuracy") is not None:
                shown.append(r)
                ours = (
                    f"{r['mean_accuracy']:.1f} ± {r['std_accuracy']:.1f} "
                    f"({r['last_epoch_mean_accuracy']:.1f})"
                ) + deviations(r)[0]
                ran = sorted({x["fold"] for x in r.get("runs", [])})
                if ran != list(range(1, 11)):
                    ours += f" [folds {fold_ranges(ran)} only]"
                elif r.get("partial"):
                    ours += " [some seeds miss folds]"
                if len(r.get("seeds", [])) > 1:
                    ours += f" [{len(r['seeds'])} seeds]"
            paper = PAPER_TU.get(m, {}).get(d)
            cells.append(f"{ours} / {'–' if paper is None else f'{paper[0]} ± {paper[1]}'}")
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    summary_at = out.index("| model | " + " | ".join(dataset_label(d) for d in DATASETS) + " |")
    out[summary_at:summary_at] = [*tu_summary(shown), ""] if shown else []
    never = [dataset_label(d) for d in DATASETS if not any(r["dataset"] == d for r in rows)]
    if never:
        out += ["", f"Not run: {', '.join(never)} (no result file for any model in this table)."]
    notes = devices_note(shown)
    scripts = "; ".join(
        f"{dataset_label(d)} {AUTHORS[d].epochs} epochs at batch {AUTHORS[d].batch_size}"
        for d in DATASETS
    )
    std = ", ".join(dataset_label(d) for d in DATASETS if AUTHORS[d].standardize)
    cont = "; ".join(
        f"{dataset_label(d)} adds its {CONTINUOUS_FEATURES[d]}" for d in DATASETS if d in CONTINUOUS
    )
    if authors:
        own = "; ".join(
            f"{m} on {dataset_label(d)} {p.epochs} epochs at batch {p.batch_size}"
            + (f", L2 {p.weight_decay:g}" if p.weight_decay else "")
            for (d, m), p in AUTHORS_ARCH_PROTOCOL.items()
        )
        whose = (
            "The models: ours with the fields of the authors' architecture for the dataset "
            "(`benchmarks/paper/tu_protocols.py`: AUTHORS_ARCH). Where the script that defines "
            f"an architecture trains otherwise, it trains as that script does: {own} "
            "(AUTHORS_ARCH_PROTOCOL)."
            if arch
            else "The models are ours (the authors' scripts also vary widths, batch norm and "
            "dropout per dataset; `--arch authors` builds theirs where our configurations can "
            "say it, in a table of its own)."
        )
        notes += [
            "",
            f"The authors' scripts' settings: {scripts}; node features: one-hot labels + "
            f"degree ({cont}), standardised per fold on {std}. {whose}",
            "",
        ]
        return [*out, "", *_fold(notes, rows)]
    epochs = sorted({r["config"].get("epochs") for r in rows if "config" in r})
    batches = sorted({r["config"].get("batch_size") for r in rows if "config" in r})
    notes += [
        "",
        f"Epochs per fold: {', '.join(str(e) for e in epochs)}; batch "
        f"{', '.join(str(b) for b in batches)}; node features: one-hot labels ({cont}, "
        "not standardised). The authors' "
        f"per-dataset scripts train {scripts}; they append each node's degree to its features "
        f"and standardise them on {std} (`--protocol authors`); with the epoch chosen on the "
        "test folds, 4× the epochs on ENZYMES also means 4× the epochs to choose from.",
        "",
    ]
    return [*out, "", *_fold(notes, rows)]


def tu_summary(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The two lines that open a TU table (:func:`benchmarks.paper.report_claims.summary`)."""
    from pathlib import Path

    from benchmarks.paper.report_claims import CRITERIA, summary, table_checks
    from benchmarks.paper.report_files import Result

    checks = table_checks([Result(Path(str(r.get("model"))), r) for r in rows])
    return summary(checks, CRITERIA["tu"])[:-1]


def _fold(notes: Sequence[str], rows: Sequence[dict[str, Any]]) -> list[str]:
    """The table's settings and its marked cells' notes, folded (``<details>``)."""
    from benchmarks.paper.report_flags import tu_flags

    body: list[str] = []
    for paragraph in (line for line in notes if line):
        body += [paragraph, ""]
    return [
        "<details><summary>Settings and the marked cells</summary>",
        "",
        *body,
        *tu_flags(rows),
        "</details>",
        "",
    ]


__all__ = ["devices_note", "fold_ranges", "tu_section"]
