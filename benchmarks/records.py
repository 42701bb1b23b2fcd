"""Result files of the experiments: provenance (git commit, versions), file names, writing and
merging seeds (``--append``). Shared by ``matlang bench`` and ``python -m benchmarks``."""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from matlang.errors import MatlangError
from matlang.evaluator import to_json

#: Files runs write (result files, benchmark outputs): a change there does not make a tree dirty.
OUTPUT_PATHS = (
    ":(top,exclude,glob)results/**",
    ":(top,exclude,glob)benchmarks/**/*.json",
    ":(top,exclude,glob)benchmarks/**/*.md",
    ":(top,exclude,glob)benchmarks/**/*.png",
)


def git_commit(root: Path | None = None) -> str | None:
    """The repository's HEAD commit, with ``+dirty`` when tracked files other than outputs
    (:data:`OUTPUT_PATHS`) have changes; ``None`` outside a repository."""
    root = root or Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ":(top)",
            ]
            + list(OUTPUT_PATHS),
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "") if head else None


def versions() -> dict[str, str]:
    import numpy
    import torch

    import matlang

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "matlang": matlang.__version__,
        "platform": platform.platform(),
        "cpus": str(os.cpu_count()),
        "torch_threads": str(torch.get_num_threads()),
    }


def result_name(bench: str, dataset: str, task: str | None, model: str) -> str:
    parts = [bench, dataset] + ([task] if task else []) + [model]
    return "-".join(parts) + ".json"


def finish(args: argparse.Namespace, record: dict[str, Any], summary: dict[str, Any]) -> int:
    """Add provenance, write the result file, print the summary."""
    record = {
        **record,
        "command": "matlang " + " ".join(sys.argv[1:]) if sys.argv else None,
        "wall_seconds": round(time.perf_counter() - args._start, 3),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "versions": versions(),
        "git_commit": git_commit(),
    }
    if not args.no_save:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        path = out / result_name(
            record["bench"], record["dataset"], record.get("task"), record["model"]
        )
        if getattr(args, "append", False):
            try:
                record = merge_seeds(path, record)
            except MatlangError as e:  # keep what was trained: beside the file, not in it
                a, b = record["seeds"][0], record["seeds"][-1]
                aside = path.with_name(f"{path.stem}.seeds-{a}-{b}.json")
                aside.write_text(json.dumps(to_json(record), indent=1, ensure_ascii=False) + "\n")
                raise MatlangError(f"{e}. This run's results are in {aside}") from None
            summary = {k: record[k] if k in record else v for k, v in summary.items()}
        text = json.dumps(to_json(record), indent=1, ensure_ascii=False)
        path.write_text(text + "\n", encoding="utf-8")
        summary = {**summary, "file": str(path)}
    summary = {**summary, "wall_seconds": record["wall_seconds"]}
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
    else:
        for k, v in summary.items():
            print(f"{k}: {v}")
    return 0


#: What a result file of a training bench must share with a run appended to it.
SAME_SETTINGS = ("bench", "dataset", "task", "model", "config", "targets", "data")


def merge_seeds(path: Path, record: dict[str, Any]) -> dict[str, Any]:
    """``record`` (one run of a training bench) with the seeds of the result file at ``path``
    added: runs sorted by seed, the median over all of them, and the earlier runs' provenance
    under ``"earlier"``. The file must exist, have the same settings and other seeds."""
    median_key = next(k for k in record if k.startswith("median_"))
    old = read_result(path)
    for key in SAME_SETTINGS:
        if old.get(key) != record.get(key):
            raise MatlangError(
                f"--append: {path} was run with another {key} "
                f"({json.dumps(old.get(key), ensure_ascii=False)[:200]}); run without --append "
                "to replace it, or with --out to keep both"
            )
    check_new_seeds(path, old, record["seeds"])
    runs = sorted(old["runs"] + record["runs"], key=lambda r: r["seed"])
    metric = next(k for k in record["runs"][0] if k.startswith("test_"))
    per_seed = [r[metric] for r in runs]
    provenance = ("seeds", "command", "wall_seconds", "finished", "versions", "git_commit")
    return {
        **record,
        median_key: statistics.median(per_seed),
        "per_seed": per_seed,
        "seeds": [r["seed"] for r in runs],
        "runs": runs,
        "earlier": [{k: old.get(k) for k in provenance}, *old.get("earlier", [])],
    }


def check_new_seeds(path: Path, old: dict[str, Any], seeds: list[int]) -> None:
    both = sorted(set(old.get("seeds", [])) & set(seeds))
    if both:
        raise MatlangError(f"--append: {path} already has seed(s) {both}; pick --first-seed")


def read_result(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise MatlangError(f"--append: there is no result file {path} to add seeds to")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise MatlangError(f"--append: cannot read {path}: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise MatlangError(f"--append: {path} is not a result file of a training bench")
    return data
