"""Variant runs in the report: the GNNML3 counting ablation, Table 1 in float32, and the TU
table under the authors' per-dataset protocol.

``matlang report`` reads the protocols' own result files for the paper's tables
(:func:`benchmarks.paper.report.load_results`); the runs here are *variants* (their file names
carry tags, see :func:`benchmarks.records.result_name`):

- **counting ablation**: ``bench count`` files whose ``config.variant`` starts with
  ``abl``, one factor changed from the paper protocol at a time (batch size, loss reduction,
  layers, the model options of ``--set``) and the epochs shortened alike. Each row is one
  variant; each cell the median test MSE over its seeds, and the best validation MSE reached
  within the first epochs (read from every seed's ``val_mse_by_epoch``).
- **Table 1 in float32**: ``bench iso --dtype float32`` files, beside the float64 file of the
  same model and the same weights rerun in float64.
- **TU, the authors' protocol**: ``bench tu --protocol authors`` files (``….authors.json``),
  a table of their own beside the paper's numbers.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.paper.report_files import sci
from benchmarks.paper.report_marks import provenance_marks

#: The paper protocol's settings a variant is described against (``bench count``).
PAPER = {"batch_size": 10, "conv_layers": 4, "loss": "sum"}
#: Tasks in the ablation table (others appear after these when present).
ABLATION_TASKS = ("triangle", "cycle4", "tailed_triangle", "star", "custom")
TASK_LABEL = {
    "triangle": "triangle",
    "cycle4": "4-cycles",
    "tailed_triangle": "tailed-tri",
    "star": "3-stars",
    "custom": "custom",
}
#: The paper's GNNML3 median test MSE (Table 2).
PAPER_GNNML3 = {
    "star": 1.0e-4,
    "custom": 7.24e-4,
    "triangle": 4.44e-4,
    "tailed_triangle": 3.18e-4,
    "cycle4": 6.62e-4,
}
#: Paper Table 1, graph8c column.
PAPER_GRAPH8C = {"mlp": 293_000, "gcn": 4775, "gat": 1828, "gin": 386, "chebnet": 44}


def load_files(folder: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """Every bench result in ``folder`` (protocol files and variants), as ``(name, data)``."""
    out = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # load_results reports unreadable files
        if isinstance(data, dict) and "bench" in data and "model" in data:
            out.append((path.name, data))
    return out


def _variant_of(name: str, data: dict[str, Any]) -> str:
    """The part of a file name after ``<bench>-<dataset>-<task>-<model>``."""
    stem = name.removesuffix(".json")
    base = "-".join(
        str(p) for p in (data["bench"], data.get("dataset"), data.get("task"), data["model"]) if p
    )
    return stem[len(base) :].lstrip(".") if stem.startswith(base) else stem


def _factors(config: dict[str, Any]) -> dict[str, Any]:
    """What a counting run changed from the paper protocol, read from its config."""
    opts = dict(config.get("model_options") or {})
    loss = "mean" if str(config.get("loss", "sum")).startswith("mean") else "sum"
    return {
        "batch_size": config.get("batch_size"),
        "loss": loss,
        "conv_layers": config.get("conv_layers", PAPER["conv_layers"]),
        "learn_supports": opts.pop("learn_supports", True),
        "num_bands": opts.pop("num_bands", 10),
        "receptive_field": opts.pop("receptive_field", 1),
        "other_options": opts,
        "epochs_max": config.get("epochs_max"),
    }


def _label(f: dict[str, Any]) -> str:
    bits = []
    if f["batch_size"] != PAPER["batch_size"]:
        bits.append(f"batch {f['batch_size']}")
    if f["loss"] != PAPER["loss"]:
        bits.append(f"{f['loss']} loss")
    if f["conv_layers"] != PAPER["conv_layers"]:
        bits.append(f"{f['conv_layers']} layers")
    if not f["learn_supports"]:
        bits.append("fixed supports (no Eq. 7)")
    if f["num_bands"] != 10:
        bits.append(f"{f['num_bands']} bands")
    if f["receptive_field"] != 1:
        bits.append(f"receptive field {f['receptive_field']}")
    bits += [f"{k} = {v}" for k, v in sorted(f["other_options"].items())]
    return ", ".join(bits) or "paper protocol"


def _best_val_within(runs: Sequence[dict[str, Any]], epochs: int) -> float | None:
    """Median over seeds of the lowest validation MSE in the first ``epochs`` epochs."""
    vals = [min(r["val_mse_by_epoch"][:epochs]) for r in runs if r.get("val_mse_by_epoch")]
    return statistics.median(vals) if vals else None


def count_ablation(files: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The ablation rows (JSON-ready): one per variant, cells per task, and the gnnml3 runs of
    Table 2 itself as reference rows."""
    rows: dict[str, dict[str, Any]] = {}
    for name, d in files:
        cfg = d.get("config", {})
        if d.get("bench") != "count" or d.get("model") != "gnnml3":
            continue
        variant = _variant_of(name, d)
        ablation = str(cfg.get("variant") or "").startswith("abl")
        if not ablation and variant:  # another variant (a limit, a sentence): not ours
            continue
        key = variant or "table2"
        f = _factors(cfg)
        row = rows.setdefault(
            key,
            {
                "variant": key,
                "ablation": ablation,
                "label": _label(f) if ablation else "Table 2's own run",
                "factors": f,
                "dataset": d.get("dataset"),
                "tasks": {},
            },
        )
        runs = d.get("runs", [])
        epochs = int(f["epochs_max"] or 0)
        train = int(d.get("data", {}).get("sizes", {}).get("train") or 0)
        if train and f["batch_size"]:
            # Adam steps in the whole budget: what batch 10 buys over batch 64
            row["max_steps"] = epochs * -(-train // int(f["batch_size"]))
        # seconds per epoch of the seeds trained alone: a stacked seed's row holds its share
        # of a K-seed run, another cost model (results/perf/stacked.md)
        alone = [r for r in runs if not r.get("stacked_seeds")]
        seconds = sum(r.get("seconds", 0.0) for r in alone)
        ran = sum(r.get("epochs_run", 0) for r in alone)
        row["tasks"][d.get("task")] = {
            "file": name,
            "marks": provenance_marks(d),
            "median_test_mse": d.get("median_test_mse"),
            "per_seed": d.get("per_seed"),
            "seeds": d.get("seeds"),
            "partial": bool(d.get("partial")),
            "stacked": len(runs) - len(alone),
            "best_epochs": [r.get("best_epoch") for r in runs],
            "seconds_per_epoch": seconds / ran if ran else None,
            "best_val_mse_within": {
                str(e): _best_val_within(runs, e)
                for e in sorted({max(1, epochs // 3), max(1, 2 * epochs // 3), epochs})
                if epochs
            },
        }
    order = sorted(rows.values(), key=lambda r: (r["ablation"], r["variant"] != "abl-e30"))
    return {
        "what": "GNNML3 on counting, one factor at a time from the paper protocol (batch 10, "
        "sum loss, 4 layers, learned supports on 10 adjacency bands, receptive field 1); "
        "the one-factor runs share a shortened epoch budget (the epochs column), and the "
        "paper protocol also runs at its full budget",
        "paper_gnnml3": PAPER_GNNML3,
        "rows": order,
    }




def ablation_markdown(table: dict[str, Any]) -> list[str]:
    """The ablation as Markdown lines (empty without ablation runs)."""
    rows = table["rows"]
    if not any(r["ablation"] for r in rows):
        return []
    present = {t for r in rows if r["ablation"] for t in r["tasks"]}
    tasks = [t for t in ABLATION_TASKS if t in present]
    out = [
        "## GNNML3 counting ablation",
        "",
        table["what"] + ". A cell: median test MSE (seeds: the per-seed values). "
        "Rows marked *Table 2* are the main table's own runs, for reference; s/epoch is "
        "over the seeds trained alone (not `--stack-seeds`).",
        "",
        "| Variant | epochs | Adam steps | "
        + " | ".join(TASK_LABEL.get(t, t) for t in tasks)
        + " | s/epoch |",
        "|---" * (len(tasks) + 4) + "|",
        "| paper (Balcilar et al.; the authors' `counting.py`: ≤ 1000) | ≤ 200 | | "
        + " | ".join(sci(PAPER_GNNML3.get(t)) for t in tasks)
        + " | |",
    ]
    for r in rows:
        cells = []
        speeds = []
        for t in tasks:
            c = r["tasks"].get(t)
            if c is None:
                cells.append("–")
                continue
            per = ", ".join(sci(v) for v in c["per_seed"] or [])
            part = " partial" if c["partial"] else ""
            part += f", {c['stacked']} stacked" if c.get("stacked") else ""
            mse = sci(c["median_test_mse"]) + c.get("marks", "")
            cells.append(f"{mse} ({len(c['seeds'] or [])}{part}: {per})")
            if c["seconds_per_epoch"]:
                speeds.append(c["seconds_per_epoch"])
        speed = f"{statistics.median(speeds):.1f}" if speeds else "–"
        steps = r.get("max_steps", "–")
        out.append(
            f"| {_row_label(r)} | {r['factors']['epochs_max']} | {steps} | "
            + " | ".join(cells)
            + f" | {speed} |"
        )
    out += [
        "",
        "Best validation MSE reached within the first epochs (median over seeds): what a "
        "shorter budget would have selected.",
        "",
        "| Variant | " + " | ".join(TASK_LABEL.get(t, t) for t in tasks) + " |",
        "|---" * (len(tasks) + 1) + "|",
    ]
    for r in rows:
        if not r["ablation"]:  # Table 2's files predate the recorded curves
            continue
        cells = []
        for t in tasks:
            c = r["tasks"].get(t)
            within = (c or {}).get("best_val_mse_within") or {}
            cells.append(
                " → ".join(f"{sci(v)} @{e}" for e, v in within.items()) if within else "–"
            )
        out.append(f"| {_row_label(r)} | " + " | ".join(cells) + " |")
    return [*out, ""]


def _row_label(r: dict[str, Any]) -> str:
    if r["ablation"]:
        return str(r["label"])
    return f"*Table 2*: batch {r['factors']['batch_size']}"


def iso_precision(files: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per ``bench iso --dtype float32`` file, with the float64 file of that model."""
    by_name = dict(files)
    rows = []
    for name, d in files:
        if d.get("bench") != "iso" or not name.endswith(".float32.json"):
            continue
        ref = d.get("same_weights_in_float64") or {}
        options = d.get("config", {}).get("model_options") or {}
        # the protocol's float64 file ran the protocol's model: beside the same model only
        f64 = None if options else by_name.get(f"iso-{d.get('dataset')}-{d['model']}.json")
        rows.append(
            {
                "file": name,
                "dataset": d.get("dataset"),
                "model": d["model"],
                "options": options,
                "seeds": len(d.get("seeds", [])),
                "float32": d.get("undistinguished"),
                "marks": provenance_marks(d),
                "float64_file": None if f64 is None else f64.get("undistinguished"),
                "float64_same_weights": ref.get("undistinguished"),
                "only_float32": ref.get("only_this_dtype"),
                "only_float64": ref.get("only_reference"),
                "max_rounding_l1": ref.get("max_rounding_l1"),
                "median_rounding_l1": ref.get("median_rounding_l1"),
                "max_output": ref.get("max_output"),
                "tol": d.get("config", {}).get("tol"),
                "paper": PAPER_GRAPH8C.get(d["model"]) if d.get("dataset") == "graph8c" else None,
            }
        )
    return rows


def iso_markdown(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Table 1's float32 rows as Markdown lines (empty without float32 runs)."""
    if not rows:
        return []
    out = [
        "## Table 1 in float32 and float64",
        "",
        "Undistinguished pairs (L1 distance of the outputs below tol in every seed) with the "
        "models in float32 (the authors' precision), with the same weights in float64, and the "
        "protocol's own float64 file (same seeds; make_model draws weights in float32 and casts "
        "them, so the same weights too). *Rounding*: the largest L1 "
        "distance between one graph's float32 and float64 outputs over the seeds (median "
        "seed, worst seed), against tol; *largest output*: the largest |output| in float64.",
        "",
        "| Model | dataset | float32 | float64, same weights | float64 file | paper "
        "| only float32 / only float64 | rounding (median, max) | largest output |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        f64 = "–" if r["float64_file"] is None else r["float64_file"]
        paper = "–" if r["paper"] is None else r["paper"]
        opts = ", ".join(f"{k} = {v}" for k, v in sorted(r["options"].items()))
        label = r["model"].upper() + (f" ({opts})" if opts else "")
        out.append(
            f"| {label} | {r['dataset']} | {r['float32']}{r.get('marks', '')} | "
            f"{r['float64_same_weights']} | {f64} | {paper} | "
            f"{r['only_float32']} / {r['only_float64']} | "
            f"{sci(r['median_rounding_l1'])}, {sci(r['max_rounding_l1'])} (tol {r['tol']}) | "
            f"{sci(r['max_output'])} |"
        )
    return [*out, ""]


def variants_report(folder: str | Path) -> tuple[dict[str, Any], list[str]]:
    """The JSON of both tables and their Markdown lines, from the files in ``folder``."""
    files = load_files(folder)
    ablation = count_ablation(files)
    iso = iso_precision(files)
    md = ablation_markdown(ablation) + iso_markdown(iso)
    tables: dict[str, Any] = {"count_ablation": ablation, "iso_precision": iso}
    keys = ("dataset", "model", "mean_accuracy", "std_accuracy", "best_epoch", "folds")
    # --protocol authors with our models, then with the authors' architectures (--arch authors)
    for variant, table, arch in (
        ("authors", "tu_authors", False),
        ("authors.authors-arch", "tu_authors_arch", True),
    ):
        rows = [d for n, d in files if d["bench"] == "tu" and _variant_of(n, d) == variant]
        if rows:
            from benchmarks.paper.tu_report import tu_section

            md += tu_section(rows, authors=True, arch=arch)
            tables[table] = [{k: d.get(k) for k in keys} for d in rows]
    return tables, md


__all__ = [
    "ablation_markdown",
    "count_ablation",
    "iso_markdown",
    "iso_precision",
    "load_files",
    "variants_report",
]
