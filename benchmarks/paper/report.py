"""``matlang report``: the paper's Tables 1–3 with our measured numbers beside the paper's.

Reads every ``results/*.json`` written by ``matlang bench``, and writes ``report.md`` (one
Markdown table per paper table, cells ``ours / paper``, then what exactly was run for each
number) and one PNG plot per table (matplotlib, Agg backend); variant runs (the counting
ablation, Table 1 in float32) get sections and ``report-variants.json`` (``variants``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.paper.model_variants import COUNT_MODELS
from benchmarks.paper.paper_numbers import (
    PAPER_TABLE1,
    PAPER_TABLE2,
    PAPER_TABLE3,
    TABLE1_PAIRS,
    TABLE2_HEAD,
    TABLE2_TASKS,
    TABLE3_TASKS,
)
from benchmarks.paper.report_claims import (
    CRITERIA,
    activation_note,
    check_result,
    count_claims,
    not_reproduced,
    summary,
    table_checks,
)
from benchmarks.paper.report_files import Result, find, load_results, scan_results, sci
from benchmarks.paper.report_flags import (
    MARK_DEVIATES,
    MARK_DIRTY,
    MARK_LAST,
    MODEL_LABEL,
    TABLE2_DATASET_NOTE,
    check_summary,
    deviations,
    provenance_summary,
    run_note,
    seed_count_sentence,
)
from benchmarks.paper.report_marks import checking_commits, legend
from benchmarks.records import check_replaceable

#: report.md's first line: how a rewrite knows the file is its own.
REPORT_HEADING = "# Reproducing the paper's tables"

#: Row order of the paper's tables, then the compiled models (not in the paper).
MODEL_ORDER: tuple[str, ...] = (
    "mlp",
    "gcn",
    "gat",
    "gin",
    "chebnet",
    "ppgn",
    "gnnml1",
    "gnnml3",
    "compiled",
    "compiled-random",
)




def _models(results: Sequence[Result], benches: Sequence[str]) -> list[str]:
    present = {r.model for r in results if r.bench in benches}
    return [m for m in MODEL_ORDER if m in present or m in PAPER_TABLE1] + sorted(
        present - set(MODEL_ORDER)
    )


def _count(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v / 1000:.0f}K" if v >= 100_000 else f"{int(v)}"




def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.1f}%"


def _r2(v: float | None) -> str:
    return "–" if v is None or math.isnan(v) else f"{v:.4f}"


def _cell(ours: str, paper: str) -> str:
    return f"{ours} / {paper}"


def _marked(text: str, data: dict[str, Any] | None) -> str:
    return text + (deviations(data)[0] if data is not None else "")


# --------------------------------------------------------------------------- tables


def table1(results: Sequence[Result]) -> tuple[str, list[Result]]:
    """Markdown for Table 1 and the results it used."""
    used: list[Result] = []
    lines = [
        "| Model | graph8c | sr25 | EXP | EXP-classify |",
        "|---|---|---|---|---|",
    ]
    for m in _models(results, ("iso", "exp-classify")):
        paper = PAPER_TABLE1.get(m)
        cells = []
        for k, ds in enumerate(("graph8c", "sr25", "exp")):
            r = find(results, "iso", m, dataset=ds)
            ours = _marked(_count(r.data["undistinguished"]), r.data) if r else "–"
            if r:
                used.append(r)
            cells.append(_cell(ours, _count(paper[k]) if paper else "–"))
        r = find(results, "exp-classify", m)
        if r:
            used.append(r)
        ours = _marked(_pct(100 * r.data["median_accuracy"]), r.data) if r else "–"
        cells.append(_cell(ours, _pct(paper[3]) if paper else "–"))
        lines.append(f"| {MODEL_LABEL.get(m, m)} | " + " | ".join(cells) + " |")
    return "\n".join(lines), used


#: Table 2 rows read from variant files, after their model's row: (model, variant) → label.
#: GNNML3 at the authors' batch 10 and the paper's 200 epochs is the protocol the counting
#: ablation supports; its files are the ablation's ``abl-e200`` arm.
TABLE2_VARIANT_ROWS = {("gnnml3", "abl-e200"): "GNNML3, batch 10"}


def row_label(r: Result) -> str:
    """The table row of ``r``: :data:`TABLE2_VARIANT_ROWS`'s label for its (model, variant),
    else its model's label."""
    variant = r.data.get("config", {}).get("variant")
    label = TABLE2_VARIANT_ROWS.get((r.model, variant)) or MODEL_LABEL.get(r.model, r.model)
    if r.bench == "filter" and r.data.get("config", {}).get("arch") == "authors":
        return TABLE3_ARCH_LABEL.format(label)
    return label


#: Table 3's rows from ``bench filter --arch authors`` files (``….authors-arch.json``).
TABLE3_ARCH_LABEL = "{} (authors' `filtering.py` architecture)"


def table2_variant_rows(folder: str | Path) -> list[Result]:
    """The result files of :data:`TABLE2_VARIANT_ROWS` in ``folder`` (:func:`row_label`
    names their rows), and Table 3's ``--arch authors`` files."""
    out = []
    for path in sorted(Path(folder).glob("count-*.json")):
        for model, variant in TABLE2_VARIANT_ROWS:
            if path.name.endswith(f"-{model}.{variant}.json"):
                data = json.loads(path.read_text(encoding="utf-8"))
                if data.get("model") == model and data.get("config", {}).get("variant") == variant:
                    out.append(Result(path, data))
    for path in sorted(Path(folder).glob("filter-*.authors-arch.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("bench") == "filter" and data.get("config", {}).get("arch") == "authors":
            out.append(Result(path, data))
    return out


def _row_cells(
    files: Sequence[Result],
    bench: str,
    model: str,
    tasks: Sequence[str],
    key: str,
    fmt: Any,
    paper: Sequence[float] | None,
    used: list[Result],
) -> list[str]:
    """A row's cells, ours (``key`` of the file of each task, marked) / the paper's; the files
    found join ``used``."""
    cells = []
    for k, task in enumerate(tasks):
        r = find(files, bench, model, task=task)
        if r:
            used.append(r)
        ours = _marked(fmt(r.data[key]), r.data) if r else "–"
        cells.append(_cell(ours, fmt(paper[k]) if paper else "–"))
    return cells


def table2(
    results: Sequence[Result], dataset: str, variant_rows: Sequence[Result] = ()
) -> tuple[str, list[Result]]:
    """Markdown for Table 2 on one counting dataset (``variant_rows``: files of
    :func:`table2_variant_rows`, a row after their model's)."""
    used: list[Result] = []
    lines = ["| Model | " + " | ".join(TABLE2_HEAD) + " |", "|---" * (len(TABLE2_HEAD) + 1) + "|"]
    rs = [r for r in results if r.bench == "count" and r.data.get("dataset") == dataset]
    extra = [r for r in variant_rows if r.data.get("dataset") == dataset]
    # the models that read pattern counts are no model of the paper: the learned row of the
    # beyond-the-paper section (learned_counts_section) shows them beside plain GIN
    for m in [m for m in _models(rs, ("count",)) if m not in COUNT_MODELS]:
        paper = PAPER_TABLE2.get(m)
        rows = [(MODEL_LABEL.get(m, m), [r for r in rs if r.model == m])]
        rows += [
            (label, [r for r in extra if row_label(r) == label])
            for (model, _), label in TABLE2_VARIANT_ROWS.items()
            if model == m and any(row_label(r) == label for r in extra)
        ]
        for label, files in rows:
            cells = _row_cells(
                files, "count", m, TABLE2_TASKS, "median_test_mse", sci, paper, used
            )
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines), used


def table3(
    results: Sequence[Result], variant_rows: Sequence[Result] = ()
) -> tuple[str, list[Result]]:
    """Markdown for Table 3 (the classification column from ``bench bandclass`` files, on
    generated data); a model's ``--arch authors`` files in ``variant_rows`` are a row after its
    own."""
    used: list[Result] = []
    lines = [
        "| Model | Low-pass | High-pass | Band-pass | Classify |",
        "|---|---|---|---|---|",
    ]
    arch = [r for r in variant_rows if r.bench == "filter"]
    for m in _models(results, ("filter", "bandclass")):
        paper = PAPER_TABLE3.get(m)
        rows = [(MODEL_LABEL.get(m, m), [r for r in results if r.model == m])]
        if any(r.model == m for r in arch):
            rows.append((TABLE3_ARCH_LABEL.format(rows[0][0]), [r for r in arch if r.model == m]))
        for k, (label, files) in enumerate(rows):
            cells = _row_cells(files, "filter", m, TABLE3_TASKS, "median_r2", _r2, paper, used)
            c = find(files, "bandclass", m) if k == 0 else None
            if c is not None:
                used.append(c)
            ours = _marked(_pct(100 * c.data["median_test_accuracy"]), c.data) if c else "–"
            cells.append(_cell(ours, _pct(paper[3]) if paper else "–"))
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines), used


# --------------------------------------------------------------------------- report


def _notes(used: Sequence[Result]) -> str:
    if not used:
        return "_No result files for this table yet._"
    return "\n".join(f"- {row_label(r)}: {run_note(r.path.name, r.data)}" for r in used)


def folded(lines: Sequence[str], title: str) -> list[str]:
    """``lines`` folded under ``title`` (an HTML ``<details>`` block GitHub renders)."""
    return [f"<details><summary>{title}</summary>", "", *lines, "", "</details>", ""]


def _table_summary(used: Sequence[Result], criterion: str) -> list[str]:
    return summary(table_checks(used, row_label), CRITERIA[criterion])


def _table1_summary(used: Sequence[Result], records: Sequence[dict[str, Any]]) -> list[str]:
    """Table 1's summary, its second line saying what the missed models give with the
    authors' activations where such files exist."""
    lines = _table_summary(used, "table1")
    missed = [r.model for r in used if any(not c.ok for c in check_result(r)) and r.bench == "iso"]
    if lines and missed:
        lines[1] += activation_note(records, missed)
    return lines


def _table2_summary(
    used: Sequence[Result], results: Sequence[Result], variant_rows: Sequence[Result]
) -> list[str]:
    """Table 2's summary, its second line also counting the paper's sentences on counting
    that the files contradict."""
    lines = _table_summary(used, "table2")
    claims = count_claims(results, variant_rows, row_label)
    if lines and claims:
        lines[1] += (
            f" And {len(claims)} of the paper's sentences on this table are not reproduced "
            "([listed at the end](#claims-of-the-paper-not-reproduced-here))."
        )
    return lines


#: The protocol marks' legend lines (the other marks': :mod:`benchmarks.paper.report_marks`).
PROTOCOL_MARKS = (
    (
        MARK_DEVIATES,
        "the run differs from the paper's protocol (seeds, epochs, batch, model "
        "configuration, a subset of the data): the cell's note says how",
    ),
    (MARK_LAST, "its best epoch is the last one run (budget-bound, still improving)"),
    (MARK_DIRTY, "the file was written from a tree with uncommitted changes"),
)


def render(
    results: Sequence[Result],
    plots: dict[str, str] | None = None,
    variant_rows: Sequence[Result] = (),
    extra: Sequence[str] = (),
    provenance: Sequence[dict[str, Any]] | None = None,
    learned: Sequence[Result] = (),
) -> str:
    """The Markdown report (``plots``: table name → PNG file name to link; ``variant_rows``:
    Table 2's rows from variant files, :func:`table2_variant_rows`; ``extra``: the variant
    sections' lines, appended; ``provenance``: every result file of the folder, for the
    provenance paragraph, else ``results``'; ``learned``: the files of the pattern-counts row,
    :func:`benchmarks.paper.counts_report.learned_files`). The legend lists the marks the body
    shows."""
    from benchmarks.paper.counts_report import learned_counts_section

    plots = plots or {}
    head = [
        REPORT_HEADING,
        "",
        "Cells read **ours / paper** (Balcilar et al., ICML 2021). `–`: not run (ours) or not "
        "in the paper. Each table opens with what matches the paper and what does not; what "
        "ran for each number (seeds, epochs, batch size, wall time) is folded under it, and "
        "the result files hold the per-seed numbers. Where the paper's numbers and sentences "
        "are not reproduced is listed at the end "
        "([claims not reproduced](#claims-of-the-paper-not-reproduced-here)).",
        "",
    ]
    out = [
        *provenance_summary(
            list(provenance) if provenance is not None else [r.data for r in results]
        ),
        "## Table 1: undistinguished pairs and EXP classification",
        "",
    ]
    md, used = table1(results)
    every = list(provenance) if provenance is not None else [r.data for r in results]
    out += [
        *_table1_summary(used, every),
        "Random untrained models (3 layers, sum readout, linear map to 10 features), a pair is "
        "undistinguished when the L1 distance of its outputs stays below 1e-3 in every seed. "
        "Pairs: " + "; ".join(f"{ds} {n:,}" for ds, n in TABLE1_PAIRS.items()) + ".",
        "",
        md,
        "",
        *folded([_notes(used)], f"What ran for each cell ({len(used)} result files)"),
    ]
    if "table1" in plots:
        out += [f"![Table 1]({plots['table1']})", ""]
    datasets = sorted({str(r.data.get("dataset")) for r in results if r.bench == "count"})
    out += ["## Table 2: substructure counting (median test MSE)", ""]
    if not datasets:
        out += ["_No result files for this table yet._", ""]
    protocol_files = {id(r) for r in results}  # the variant rows are other Result objects
    for ds in datasets:
        md, used = table2(results, ds, variant_rows)
        paper_rows = [r.data for r in used if r.model in PAPER_TABLE2 and id(r) in protocol_files]
        out += [
            f"### dataset `{ds}`",
            "",
            *_table2_summary([r for r in used if id(r) in protocol_files], results, variant_rows),
            *TABLE2_DATASET_NOTE.get(ds, []),
            *([seed_count_sentence(paper_rows, "count"), ""] if paper_rows else []),
            md,
            "",
            *folded(
                [TABLE2_LABELS_NOTE, "", _notes(used)],
                f"What ran for each cell ({len(used)} result files)",
            ),
        ]
        if f"table2-{ds}" in plots:
            out += [f"![Table 2 on {ds}]({plots[f'table2-{ds}']})", ""]
    md, used = table3(results, variant_rows)
    out += [
        "## Table 3: spectral filtering on the 2D grid (test R²)",
        "",
        *_table_summary(used, "table3"),
        "The planar-graph frequency classification (last column, `matlang bench bandclass`) "
        "runs on graphs generated by the authors' published procedure with a draw of our own "
        "(benchmarks/paper/bandclass.py; their file is not published), so its cells compare "
        "two draws of one distribution. The paper's cells are medians of 10 runs and the "
        "authors' `filtering.py` trains 2,000 epochs (`freqclass.py`: 3,000); the cells' notes "
        "say what ours are.",
        "",
        md,
        "",
        *folded([_notes(used)], f"What ran for each cell ({len(used)} result files)"),
    ]
    if "table3" in plots:
        out += [f"![Table 3]({plots['table3']})", ""]
    out += _table4_section(results)
    out += _beyond_section(results)
    out += learned_counts_section(learned)
    out += _brec_section(results)
    out += _tu_section(results)
    out += not_reproduced(results, variant_rows, row_label)
    body = "\n".join(out)
    if extra:
        body = body.rstrip("\n") + "\n\n" + "\n".join(extra)
    return "\n".join([*head, *legend(body, PROTOCOL_MARKS)]) + "\n" + body


#: What the labels of Table 2 are, and what a "disagreement" in its notes is.
TABLE2_LABELS_NOTE = (
    "Labels: the exact count of each graph, computed here by its counting sentence (normalised "
    "to unit standard deviation). A *disagreement* is a graph where the count stored in the "
    "dataset's own file (named in the note) differs from the exact count by more than 1e-6 "
    "relative; the file's labels are never used for training or testing."
)


def _tu_section(results: Sequence[Result]) -> list[str]:
    """The appendix's TU table (:func:`benchmarks.paper.tu_report.tu_section`: its summary,
    the table, the marked cells' notes folded)."""
    from benchmarks.paper.tu_report import tu_section

    return tu_section([r.data for r in results if r.bench == "tu"])


def _table4_section(results: Sequence[Result]) -> list[str]:
    """Table 4 (ZINC-12K MAE, MNIST-75 accuracy): ours where run, the paper's always."""
    from benchmarks.paper.table4_protocols import PAPER_TABLE4

    out = [
        "## Table 4: ZINC-12K (test MAE) and MNIST-75 (test accuracy)",
        "",
        "Code path: `matlang bench zinc|mnist75 --model M` "
        "(benchmarks/paper/table4.py: PyG's `ZINC(subset=True)` and `MNISTSuperpixels`, the "
        "authors' splits, batch 64, 400 / 3,000 epochs). **Data not available here**: PyG "
        "downloads the data on a user's machine; this machine cannot reach it, so no cell "
        "has run (the code is tested on a synthetic stand-in in PyG's format).",
        "",
        "| Model | ZINC-12K MAE | MNIST-75 accuracy |",
        "|---|---|---|",
    ]
    used = []
    for m, ((zm, zs), (am, as_)) in PAPER_TABLE4.items():
        z = find(results, "zinc", m)
        a = find(results, "mnist75", m)
        used += [r for r in (z, a) if r]
        zo = _marked(f"{z.data['median_test_mae']:.4f}", z.data) if z else "–"
        ao = _marked(_pct(100 * a.data["median_test_accuracy"]), a.data) if a else "–"
        label = MODEL_LABEL.get(m, m)
        out.append(f"| {label} | {zo} / {zm:.4f} ± {zs:.3f} | {ao} / {am:.2f}% ± {as_:.2f} |")
    return [*out, "", _notes(used) if used else "_Data not available here: no cell run._", ""]


#: Column order of the counting-beyond-the-paper table (other patterns follow, sorted).
BEYOND_PATTERNS: tuple[str, ...] = ("P4", "diamond", "C5", "C6", "C7", "K4")

#: What each level of the theory column means for a model row.
BEYOND_THEORY = {
    "1-WL": "1-WL (L1): every model here can count it",
    "L2": "L2 (trace): beyond 1-WL, within 3-WL",
    "3-WL": "3-WL (L3): needs ⊙; 1-WL models cannot",
    "no": "no: beyond 3-WL (a spasm quotient of treewidth ≥ 3); no model here can",
}


def beyond_table(results: Sequence[Result]) -> tuple[str, list[Result]]:
    """Markdown for counting patterns beyond the paper (``bench count --task pattern:NAME``):
    median test MSE per model and pattern, under a row with the theory's level per pattern."""
    rs = [
        r
        for r in results
        if r.bench == "count" and str(r.data.get("task", "")).startswith("pattern:")
    ]
    used: list[Result] = []
    if not rs:
        return "", used
    names = {str(r.data["task"])[len("pattern:") :] for r in rs}
    cols = [p for p in BEYOND_PATTERNS if p in names] + sorted(names - set(BEYOND_PATTERNS))
    theory: dict[str, str] = {}
    datasets: dict[str, set[str]] = {}
    for r in rs:
        name = str(r.data["task"])[len("pattern:") :]
        theory.setdefault(name, str(r.data.get("pattern", {}).get("theory", "–")))
        datasets.setdefault(name, set()).add(str(r.data.get("dataset")))
    lines = [
        "| Model | " + " | ".join(f"`{c}`" for c in cols) + " |",
        "|---" * (len(cols) + 1) + "|",
        "| *countable by* | " + " | ".join(f"*{theory[c]}*" for c in cols) + " |",
    ]
    own = ("sentence", "sentence-lstsq")
    models = [m for m in (*MODEL_ORDER, *own) if any(r.model == m for r in rs)]
    models += sorted({r.model for r in rs} - set(models))
    for m in models:
        cells = []
        for c in cols:
            hit = find(rs, "count", m, task=f"pattern:{c}")
            if hit:
                used.append(hit)
                cells.append(_marked(sci(hit.data["median_test_mse"]), hit.data))
            elif theory.get(c) == "no" and m in ("compiled", "compiled-random", *own):
                cells.append("n/a (no sentence)")
            else:
                cells.append("–")
        lines.append(f"| {MODEL_LABEL.get(m, m)} | " + " | ".join(cells) + " |")
    return "\n".join(lines), used


def _beyond_section(results: Sequence[Result]) -> list[str]:
    """The counting-beyond-the-paper table with its legend and the runs' notes."""
    md, used = beyond_table(results)
    out = ["## Counting beyond the paper: patterns → sentences (median test MSE)", ""]
    if not md:
        return [*out, "_No result files for this table yet._", ""]
    sets = sorted({str(r.data.get("dataset")) for r in used})
    out += [
        "Labels: the pattern's exact subgraph count (`matlang pattern NAME`: its counting "
        "sentence on the dense evaluator; for a pattern no sentence counts, the spasm's exact "
        "count), normalised to unit standard deviation, on "
        + ", ".join(f"`{d}`" for d in sets)
        + " (Table 2's graphs and splits). There is no paper protocol for these tasks: the "
        "cells' notes say the epochs, batch and seeds that ran. The row *countable by* is the "
        "theory (the spasm's treewidth, Dell, Grohe and Rattan 2018): "
        + "; ".join(f"**{k}** {v}" for k, v in BEYOND_THEORY.items())
        + ". `compiled` is exact at initialisation (the sentence compiled); `compiled-random` "
        "learns the same sentence's weights from a random start; `sentence` is SentenceGNN "
        "whose supports are the pattern's rooted sentence's masked matrices (Adam); "
        "`sentence-lstsq` is SentenceGNN on all of them with no activation (two polynomial "
        "layers at their seeded initial weights, width 128) and a linear readout fitted by "
        "least squares on the training graphs (ridge chosen on validation; no gradient step).",
        "",
        md,
        "",
        *folded([_notes(used)], f"What ran for each cell ({len(used)} result files)"),
    ]
    return out


def _brec_section(results: Sequence[Result]) -> list[str]:
    """BREC (beyond the paper): WL rows, sentence banks and RPC-trained models per category."""
    from benchmarks.paper.brec import table
    from benchmarks.paper.report_brec import is_rules_row, section

    every = [r.data for r in results if r.bench == "brec"]
    rows = [d for d in every if not is_rules_row(d)]  # PyG-input rows: the section below
    out = ["## BREC (beyond the paper): pairs separated per category", ""]
    if not rows:
        return [*out, "_No result files for this table yet._", ""]
    out += [
        "`1-wl`/`3-wl`: the tests; `bank-Lk-kK`: some sentence of the fragment with at most K "
        "AST nodes separates the pair (exact, certified lower bound, no training); "
        "`bank-L3-rR`: the refinement sentences of L3+ (up to R rounds of hashed 2-FWL written "
        "in the language, `matlang.refinement`; exact, certified, one witness per pair); other "
        "rows: the model trained per pair under BREC's RPC protocol. A cell `a/b` ran b pairs "
        "only; the pairs are listed under the table (`--pairs` syntax, A:B = A..B-1).",
        "",
        table(rows),
        "",
        *section(every),
    ]
    return out


def write_report(
    results_dir: str | Path = "results",
    out_dir: str | Path | None = None,
    *,
    plots: bool = True,
    force: bool = False,
) -> list[Path]:
    """Write ``report.md`` (and the PNGs) from ``results_dir``'s results; the paths. A file of
    those names that this did not write is replaced only with ``force``."""
    results = load_results(results_dir)
    for r in results:  # a number missing: the file named, not a KeyError deep in the tables
        check_summary(r.path, r.data)
    out = Path(out_dir) if out_dir is not None else Path(results_dir)
    for name in ["report.md", "report-variants.json", "table1.png", "table3.png"]:
        check_replaceable(out / name, REPORT_HEADING, force=force)
    for path in out.glob("table2-*.png"):
        check_replaceable(path, REPORT_HEADING, force=force)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    links: dict[str, str] = {}
    from benchmarks.paper import report_plots as rp

    with checking_commits(results_dir):
        if plots:
            jobs: list[tuple[str, Any]] = [("table1", rp.figure_table1(results, MODEL_ORDER))]
            for ds in sorted({str(r.data.get("dataset")) for r in results if r.bench == "count"}):
                jobs.append((f"table2-{ds}", rp.figure_table2(results, ds, MODEL_ORDER)))
            jobs.append(("table3", rp.figure_table3(results, MODEL_ORDER)))
            for name, fig in jobs:
                path = out / f"{name}.png"
                if rp.save(fig, path):
                    links[name] = path.name
                    written.append(path)
        # variant runs (the counting ablation, Table 1 in float32): their own sections and JSON
        from benchmarks.paper.counts_report import learned_files
        from benchmarks.paper.variants import load_files, variants_report

        tables, extra = variants_report(results_dir)
        every = [d for _, d in load_files(results_dir)]
        text = render(
            results,
            links,
            table2_variant_rows(results_dir),
            extra,
            every,
            learned_files(results_dir),
        )
    if extra:
        path = out / "report-variants.json"
        path.write_text(json.dumps(tables, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(path)
    report = out / "report.md"
    report.write_text(text, encoding="utf-8")
    written.insert(0, report)
    return written


__all__ = [
    "PAPER_TABLE1",
    "PAPER_TABLE2",
    "PAPER_TABLE3",
    "Result",
    "scan_results",
    "beyond_table",
    "load_results",
    "render",
    "table2_variant_rows",
    "table1",
    "table2",
    "table3",
    "write_report",
]
