"""Which files of a results folder the report reads, and why it skips the others.

The paper's tables hold each protocol's own run, the file named by
:func:`benchmarks.records.result_name`. Other JSON files in the folder are skipped, each with a
reason that ``matlang report`` prints: a run on part of the data (``--limit``), on its own
sentences (``--sentence``), another variant (``.TAG``), or no bench result at all.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.paper.report_flags import SUMMARY_FIELDS
from benchmarks.records import result_name
from matlang.errors import DataError


@dataclass(frozen=True)
class Result:
    """One result file."""

    path: Path
    data: dict[str, Any]

    @property
    def bench(self) -> str:
        return str(self.data.get("bench"))

    @property
    def model(self) -> str:
        return str(self.data.get("model"))


@dataclass(frozen=True)
class Skipped:
    """A JSON file of the folder that is no cell of the paper's tables, and why (``shown``:
    the report's section that shows it instead, if any)."""

    path: Path
    reason: str
    shown: str | None = None


def shown_in(name: str, data: dict[str, Any]) -> str | None:
    """The section of the report that shows a variant result file (``None``: none does): the
    counting ablation (its ``batch 10, 200 epochs`` arm is also Table 2's "GNNML3, batch 10"
    row), Table 1 in float32, Table 3's authors'-architecture rows, the TU tables under the
    authors' protocol and architectures, the pattern-counts row."""
    bench, cfg = data.get("bench"), data.get("config") or {}
    variant = str(cfg.get("variant") or "")
    if name in learned_names():
        return "the pattern-counts row (Pattern counts as features, beyond the paper)"
    if bench == "count" and data.get("model") == "gnnml3" and variant.startswith("abl"):
        row = " and Table 2's row GNNML3, batch 10" if variant == "abl-e200" else ""
        return "the GNNML3 counting ablation" + row
    if bench == "iso" and name.endswith(".float32.json"):
        return "Table 1 in float32 and float64"
    if bench == "filter" and name.endswith(".authors-arch.json") and cfg.get("arch") == "authors":
        return "Table 3's rows of the authors' architecture"
    if bench == "tu" and name.endswith(".authors.authors-arch.json"):
        return "the TU table of the authors' protocol and architectures"
    if bench == "tu" and name.endswith(".authors.json"):
        return "the TU table of the authors' protocol"
    return None


def scan_results(folder: str | Path) -> tuple[list[Result], list[Skipped]]:
    """Every result JSON in ``folder`` under its protocol's own name, and the JSON files
    skipped with their reasons."""
    root = Path(folder)
    if not root.is_dir():
        raise DataError(f"no results folder {root} (run `matlang bench ...` first)")
    out: list[Result] = []
    skipped: list[Skipped] = []
    for path in sorted(root.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise DataError(f"{path}: not a readable JSON result ({e})") from e
        if not (isinstance(data, dict) and "bench" in data and "model" in data):
            skipped.append(Skipped(path, "not a `matlang bench` result (no bench and model)"))
            continue
        name = result_name(
            str(data["bench"]), str(data.get("dataset")), data.get("task"), str(data["model"])
        )
        if path.name == name:
            out.append(Result(path, data))
        else:
            shown = shown_in(path.name, data)
            skipped.append(Skipped(path, _variant_reason(name, path.name, data), shown))
    return out, skipped


def find(results: Iterable[Result], bench: str, model: str, **where: Any) -> Result | None:
    """The first result of ``bench`` and ``model`` whose data has every ``where`` value."""
    ok = (r for r in results if r.bench == bench and r.model == model)
    return next((r for r in ok if all(r.data.get(k) == v for k, v in where.items())), None)


def sci(v: float | None) -> str:
    """A number as the report writes MSEs: ``1.23E-4`` (``–`` for none or NaN)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.2E}".replace("E-0", "E-").replace("E+0", "E+")


def load_results(folder: str | Path) -> list[Result]:
    """Every result JSON in ``folder`` under its protocol's own name (files that are not bench
    results, and variant runs such as ``--limit``, are skipped: :func:`scan_results`)."""
    return scan_results(folder)[0]


def learned_names() -> set[str]:
    """The file names of the pattern-counts row (:mod:`benchmarks.paper.counts_files`)."""
    from benchmarks.paper.counts_files import learned_names as names

    return set(names())


def _variant_reason(name: str, found: str, data: dict[str, Any]) -> str:
    """Why a bench result named ``found`` (its protocol's name: ``name``) is no table cell,
    with its headline numbers (so a demo's run still shows what it gave)."""
    stem = name.removesuffix(".json")
    tag = found.removesuffix(".json")[len(stem) + 1 :] if found.startswith(stem + ".") else ""
    if tag.startswith("limit"):
        why = f"a run on part of the data (--limit {tag.removeprefix('limit').split('.')[0]})"
    elif tag.startswith("sentence-"):
        why = "a run on sentences of its own (--sentence)"
    elif tag.startswith("seeds-"):
        why = "seeds kept beside their file (`matlang bench merge` adds them)"
    elif found in learned_names():
        why = "a cell of the pattern-counts row (its own section, beyond the paper)"
    elif tag:
        why = f"the variant .{tag}"
    else:
        why = f"its content names another file, {name}"
    numbers = [
        f"{key} {_number(data[key])}"
        for key in SUMMARY_FIELDS.get(str(data.get("bench")), ())
        if isinstance(data.get(key), (int, float))
    ]
    shown = f"; it holds {', '.join(numbers)}" if numbers else ""
    return f"{why}, not a cell of the paper's tables (those are {name}){shown}"


def _number(v: float) -> str:
    return str(v) if isinstance(v, int) else f"{v:.4g}"


def describe_scan(
    folder: str | Path, results: list[Result], skipped: list[Skipped], *, limit: int = 20
) -> list[str]:
    """What ``matlang report`` says it read and skipped: every skipped file with its reason,
    the files read (the first ``limit`` of them, then a count)."""
    lines = [f"read {len(results)} result file(s) from {folder}" + (":" if results else "")]
    lines += [f"  {r.path}" for r in results[:limit]]
    if len(results) > limit:
        lines.append(f"  ... and {len(results) - limit} more")
    variants = [s for s in skipped if s.shown]
    if variants:
        lines.append(f"read {len(variants)} variant file(s) for sections of their own:")
        lines += [f"  {s.path}: in {s.shown}" for s in variants]
    others = [s for s in skipped if not s.shown]
    if others:
        lines.append(f"skipped {len(others)} file(s):")
        lines += [f"  {s.path}: {s.reason}" for s in others]
    return lines
