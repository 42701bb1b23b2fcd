"""The report's learned row of pattern counts (issue 53): GIN, GIN + counts and GSN-style on
the counting set and the four TU sets. Every cell of ``results/report.md``'s section is its
result file's number, and the section is what ``matlang report`` renders from ``results/``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchmarks.paper.counts_report import (
    COUNT_VARIANT,
    HEADING,
    LEARNED_LABEL,
    LEARNED_MODELS,
    TU_SETS,
    TU_VARIANT,
    learned_counts_section,
    learned_files,
)
from benchmarks.paper.paper_numbers import TABLE2_TASKS
from benchmarks.paper.report import load_results, render, table2_variant_rows

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"


def _sci(v: float) -> str:
    return f"{v:.2E}".replace("E-0", "E-").replace("E+0", "E+")


def _rows(text: str) -> dict[str, list[str]]:
    """The section's table rows of ``text``: label → cells (markers stripped)."""
    section = text[text.index(HEADING) :]
    section = section[: section.index("\n## ", 1)] if "\n## " in section[1:] else section
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]
    return {
        r.split(" | ")[0][2:]: [c.strip().rstrip("‡ |") for c in r.split(" | ")[1:]] for r in rows
    }


def _expected(files_by_name: dict[str, dict], model: str) -> list[str]:
    cells = []
    for task in TABLE2_TASKS:
        d = files_by_name.get(f"count-randomgraph-{task}-{model}.{COUNT_VARIANT}.json")
        cells.append("–" if d is None else _sci(d["median_test_mse"]))
    for ds in TU_SETS:
        d = files_by_name.get(f"tu-{ds}-{model}.{TU_VARIANT}.json")
        cells.append(
            "–"
            if d is None
            else f"{d['mean_accuracy']:.1f} ± {d['std_accuracy']:.1f} "
            f"({d['last_epoch_mean_accuracy']:.1f})"
        )
    return cells


def test_report_learned_row_is_the_result_files() -> None:
    files = learned_files(RESULTS)
    by_name = {r.path.name: r.data for r in files}
    report = (RESULTS / "report.md").read_text(encoding="utf-8")
    rows = _rows(report)
    shown = [m for m in LEARNED_MODELS if any(r.model == m for r in files)]
    assert list(rows) == [LEARNED_LABEL[m] for m in shown]
    for m in shown:
        assert rows[LEARNED_LABEL[m]] == _expected(by_name, m), m
    for r in files:  # every file is named in a note, with its seed count
        assert f"`{r.path.name}`; {len(r.data['seeds'])} seed(s)" in report
        assert len(r.data["seeds"]) >= 3 and not str(r.data.get("git_commit")).endswith("dirty")
    # the section in results/report.md is what `matlang report` renders from results/ today
    text = render(load_results(RESULTS), {}, table2_variant_rows(RESULTS), learned=files)
    start = text.index(HEADING)
    end = text.index("\n## ", start)
    assert report[report.index(HEADING) :].startswith(text[start:end])


def test_learned_section_shows_what_is_there(tmp_path: Path) -> None:
    assert learned_counts_section([])[-2] == "_No result files for this table yet._"
    files = learned_files(RESULTS)
    if not files:
        return
    # one plain GIN file only: that row, every other cell "–"
    one = next(r for r in files if r.model == "gin" and r.bench == "tu")
    shutil.copy(one.path, tmp_path / one.path.name)
    (tmp_path / "not-a-result.json").write_text(json.dumps({"x": 1}))
    got = learned_files(tmp_path)
    assert [r.path.name for r in got] == [one.path.name]
    rows = _rows("\n".join(learned_counts_section(got)))
    assert list(rows) == ["GIN"]
    assert rows["GIN"] == _expected({one.path.name: one.data}, "gin")
    assert sum(c != "–" for c in rows["GIN"]) == 1


def test_report_lists_the_rows_files_as_shown_not_skipped() -> None:
    """``matlang report`` says where each file of the row is shown (its own section), never
    that it skipped it."""
    from benchmarks.paper.counts_files import learned_names
    from benchmarks.paper.report_files import describe_scan, scan_results

    results, skipped = scan_results(RESULTS)
    lines = describe_scan(RESULTS, results, skipped)
    names = set(learned_names())
    shown = {s.path.name for s in skipped if s.shown and "pattern-counts row" in s.shown}
    assert names and names <= shown
    tail = lines[lines.index(next(x for x in lines if x.startswith("skipped"))) :] if any(
        x.startswith("skipped") for x in lines
    ) else []
    assert not any(name in line for name in names for line in tail)
