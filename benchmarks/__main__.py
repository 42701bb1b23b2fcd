"""``python -m benchmarks``: run the benchmarks, write perf.json, perf.md, scaling.png.

The same options serve ``matlang bench perf`` (:func:`add_arguments`, :func:`main_from_args`).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matlang.errors import MatlangError

GROUP_NAMES = (
    "handwritten", "dense", "scaling", "backends", "models", "iso",
    "constants", "channels", "fresh", "constscaling", "layers",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The benchmark options (shared with ``matlang bench perf``)."""
    p.add_argument(
        "--groups",
        default=",".join(GROUP_NAMES),
        help=f"comma-separated groups to run (default: all of {', '.join(GROUP_NAMES)})",
    )
    p.add_argument("--quick", action="store_true", help="tiny sizes: checks the machinery only")
    p.add_argument(
        "--out", help="folder for perf.json/.md and scaling.png (default: results/perf/)"
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch/BLAS threads per case (default 1: the machine is shared; 0: torch's choice)",
    )
    p.add_argument("--repeats", type=int, help="timed calls per contestant (default 7)")
    p.add_argument("--warmup", type=int, help="warm-up calls, the memory pass included (default 2)")
    p.add_argument(
        "--max-edges", type=float, help="largest E of the scaling runs (default 1e7, if it fits)"
    )
    p.add_argument(
        "--scaling-mem-gib",
        type=float,
        help="skip a scaling size whose predicted peak exceeds this (default 6)",
    )
    p.add_argument(
        "--model-cap-gib",
        type=float,
        help="address-space cap of each GNNML3/PPGN training process (default 6)",
    )
    p.add_argument("--iso-seeds", type=int, help="seeds of the graph8c run (default 100)")
    p.add_argument(
        "--iso-models", help="comma-separated models for the graph8c run (default: compiled)"
    )
    p.add_argument(
        "--no-isolate", action="store_true", help="run every case in this process (no subprocess)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-plot", action="store_true", help="do not draw scaling.png")
    p.add_argument(
        "--update",
        action="store_true",
        help="replace only the --groups run in an existing perf.json, keep the other cases",
    )
    p.add_argument(
        "--rewrite",
        action="store_true",
        help="run nothing: recompute the summary of --out's perf.json, rewrite it and .md",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def config_from_args(args: argparse.Namespace) -> Any:
    from benchmarks.perf.runner import GROUPS, Config

    groups = tuple(g.strip() for g in args.groups.split(",") if g.strip())
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        close = difflib.get_close_matches(unknown[0], GROUPS, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise MatlangError(
            f"--groups: unknown group(s) {', '.join(unknown)}{hint} (known: {', '.join(GROUPS)})"
        )
    changes: dict[str, Any] = {
        "groups": groups,
        "threads": args.threads or None,
        "isolate": not args.no_isolate,
        "progress": not args.no_progress and sys.stderr.isatty(),  # no bars in a log
        "plot": not args.no_plot,
        "update": args.update,
    }
    if args.out:
        changes["out"] = Path(args.out)
    if args.repeats:
        changes["repeats"] = args.repeats
    if args.warmup:
        changes["warmup"] = args.warmup
    if args.scaling_mem_gib:
        changes["scaling_mem_gib"] = args.scaling_mem_gib
    if args.model_cap_gib:
        changes["model_mem_cap_gib"] = args.model_cap_gib
    if args.iso_seeds:
        changes["iso_seeds"] = args.iso_seeds
    if args.iso_models:
        changes["iso_models"] = tuple(m.strip() for m in args.iso_models.split(",") if m.strip())
    cfg = Config.quick(**changes) if args.quick else dataclasses.replace(Config(), **changes)
    if args.max_edges:
        cfg = dataclasses.replace(
            cfg, scaling_edges=tuple(e for e in cfg.scaling_edges if e <= args.max_edges)
        )
    return cfg


def main_from_args(args: argparse.Namespace) -> int:
    """Run what ``args`` asks and print the summary; the exit code."""
    from benchmarks.perf.runner import rewrite, run

    cfg = config_from_args(args)
    data = rewrite(cfg.out, cfg) if args.rewrite else run(cfg)
    summary = data["summary"]
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
    else:
        print("\n".join(summary_lines(summary, cfg.groups)))
        print("wrote " + ", ".join(str(Path(cfg.out) / f) for f in written(data, cfg)))
    return 0


#: The headline measures of a run, and the group that measures each.
HEADLINE = {
    "compiled_over_handwritten": "handwritten",
    "dense_over_compiled_n10000": "dense",
    "time_exponent": "scaling",
    "memory_exponent": "scaling",
}


def summary_lines(summary: dict[str, Any], groups: Sequence[str]) -> list[str]:
    """The headline measures this run has, with their targets; a measure whose group did not
    run says so instead of printing ``None``."""
    lines = []
    for key, group in HEADLINE.items():
        value = summary.get(key)
        if value is None:
            ran = "its group ran but measured nothing" if group in groups else "not run"
            lines.append(f"{key}: not measured (group {group}: {ran})")
            continue
        met = summary.get("met", {}).get(key)
        flag = "" if met is None else ("  (target met)" if met else "  (target missed)")
        lines.append(f"{key}: {value}{flag}")
    if summary.get("time_exponent_base_range") is not None:
        lines.append(f"time_exponent over E <= 1e6: {summary['time_exponent_base_range']}")
    return lines


def written(data: dict[str, Any], cfg: Any) -> list[str]:
    """The files a run wrote: perf.json and perf.md always, scaling.png only when it
    was drawn (a run with scaling cases, without --no-plot)."""
    from benchmarks.perf.runner import PERF_JSON, PERF_MD

    return [PERF_JSON, PERF_MD] + (
        ["scaling.png"] if cfg.plot and data.get("scaling") else []
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Speed, memory and scaling of compiled modules.",
    )
    add_arguments(p)
    try:
        return main_from_args(p.parse_args(argv))
    except MatlangError as e:
        print(f"python -m benchmarks: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
