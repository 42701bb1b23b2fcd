"""The READMEs' numbers come from files: every number of ``results/README.md`` and
``benchmarks/README.md`` is in a rendered section equal to a fresh rendering, or equals a value
of a file its paragraph cites (``benchmarks.paper.quoted``). A planted wrong number fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks.paper import quoted
from benchmarks.paper.readme_tables import RENDERERS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("readme", quoted.READMES)
def test_every_quoted_number_has_a_source(readme: str) -> None:
    findings = quoted.check(ROOT / readme)
    assert not findings, "numbers without a source:\n" + "\n".join(map(str, findings[:40]))


@pytest.mark.parametrize("readme", quoted.READMES)
def test_rendered_sections_equal_the_result_files(readme: str) -> None:
    assert quoted.stale_sections(ROOT / readme, ROOT / "results") == []


def test_results_readme_renders_its_tables() -> None:
    names = [n for n, _, _ in quoted.sections((ROOT / "results/README.md").read_text("utf-8"))]
    assert {"tu-table", "tu-authors-table", "brec-table", "classify-table"} <= set(names)
    assert set(names) <= set(RENDERERS)


@pytest.mark.parametrize(
    ("readme", "right", "wrong"),
    [
        # the fidelity review's stale numbers, planted back where the files disagree with them
        ("results/README.md", "`results/tu-mutag-gnnml3.authors.json`: 89.4 ± 7.6",
         "`results/tu-mutag-gnnml3.authors.json`: 86.7 ± 7.6"),
        ("results/README.md", "`results/tu-ptc-gnnml3.authors.json`:\n  62.9 ± 5.1",
         "`results/tu-ptc-gnnml3.authors.json`:\n  57.9 ± 5.1"),
        ("results/README.md", "(2.78e-4 and 3.68e-4", "(1.59e-3 and 1.85e-3"),
        ("results/README.md", "band-pass R² is 0.517", "band-pass R² is 0.571"),
        # a timing, a GPU ratio and a call count of the performance section
        ("benchmarks/README.md", "9.8× faster on PTC", "9.1× faster on PTC"),
        ("benchmarks/README.md", "| 0.85×, 0.67×, 0.51× |", "| 0.85×, 0.76×, 0.51× |"),
        ("benchmarks/README.md", "p95 3.069 s", "p95 3.96 s"),
        ("benchmarks/README.md", "| `repr` | 985 → 71 → 71 |", "| `repr` | 985 → 71 → 17 |"),
    ],
)
def test_a_planted_wrong_number_fails(tmp_path: Path, readme: str, right: str, wrong: str) -> None:
    path = ROOT / readme
    text = path.read_text("utf-8")
    assert right in text, f"the README no longer says {right!r}"
    assert quoted.check(path, ROOT, text) == []
    findings = quoted.check(path, ROOT, text.replace(right, wrong, 1))
    planted = {q.text for q in quoted.numbers_in(quoted._prose(wrong))}
    planted -= {q.text for q in quoted.numbers_in(quoted._prose(right))}
    assert planted and {f.number for f in findings} == planted


def test_a_number_without_a_cited_file_fails() -> None:
    path = ROOT / "results/README.md"
    text = path.read_text("utf-8") + "\nThe new model reaches 97.3 % on MUTAG.\n"
    findings = quoted.check(path, ROOT, text)
    assert [(f.number, f.why) for f in findings] == [("97.3", "the block cites no file")]


def test_a_changed_result_file_makes_its_section_stale(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(ROOT / "results", results, ignore=shutil.ignore_patterns("*.png", "fuzz"))
    gin = results / "brec-gin.json"
    gin.write_text(gin.read_text("utf-8").replace('"Total": 0', '"Total": 7', 1), "utf-8")
    assert quoted.stale_sections(ROOT / "results/README.md", results) == ["brec-table"]


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("GIN 1,370 pairs (0.5 %), 1.31e-3 ± 2.0", ["1,370", "0.5", "1.31e-3", "2.0"]),
        ("Table 2, Eq. 7, Remarks 1–4, 3-WL, L3, A², seed 0, pairs 252, 253 and 254", []),
        ("`--seeds 10` and [x](results/a1.json) at 10⁵ nodes, 29.9K parameters",
         ["10⁵", "29.9K"]),
        ("Wang & Zhang 2023 measured −0.002 in 30–60 s", ["−0.002"[1:], "30", "60"]),
    ],
)
def test_numbers_a_reader_sees(text: str, numbers: list[str]) -> None:
    assert [q.text for q in quoted.numbers_in(quoted._prose(text))] == numbers


def test_precision_and_units() -> None:
    (q,) = quoted.numbers_in("0.818")
    assert q.matches(0.8177) and not q.matches(0.8186)
    (q,) = quoted.numbers_in("1.31e-3")
    assert q.matches(0.0013098) and not q.matches(0.00132)
    (q,) = quoted.numbers_in("57 min")
    assert q.matches(3392.14) and not q.matches(3300.0)
    (q,) = quoted.numbers_in("83.8 %")
    assert q.matches(0.8375) and q.matches(83.8) and not q.matches(0.845)
    (q,) = quoted.numbers_in("10⁵")
    assert q.matches(100000) and not q.matches(100001)
    (q,) = quoted.numbers_in("−0.002")
    assert q.matches(-0.0021) and not q.matches(0.002)


def test_report_renders_the_readmes_only_for_this_repositorys_results(tmp_path: Path) -> None:
    """``matlang report`` re-renders the READMEs' tables from ``results/`` (nothing to change
    when they are current) and never from another folder, which would write the tables of a
    demo into this repository's README."""
    assert quoted.render_readmes(tmp_path) == []
    assert quoted.render_readmes(ROOT / "results", tmp_path) == []
