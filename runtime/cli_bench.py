"""``matlang bench iso|count|exp-classify|filter`` and ``matlang report``.

Every bench run prints a summary (``--json``: one JSON object) and writes
``<out>/<bench>-<dataset>[-<task>]-<model>.json`` with the configuration, the seeds, the
per-seed numbers, the wall time, the versions and the git commit.
"""

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

import numpy as np

from matlang.errors import MatlangError

ISO_DATASETS = ("graph8c", "sr25", "exp")
COUNT_DATASETS = ("randomgraph", "paperlike")
COUNT_TASKS = ("star", "triangle", "tailed_triangle", "cycle4", "custom")


def register(sub: Any) -> None:
    """Add ``bench`` (with its four benchmarks) and ``report``."""
    b = sub.add_parser(
        "bench",
        help="run the paper's experiments (Tables 1-3)",
        description="Run one of the paper's experiments; results go to results/*.json.",
    )
    bsub = b.add_subparsers(dest="bench", metavar="BENCH")

    iso = bsub.add_parser("iso", help="Table 1: undistinguished pairs of random models")
    iso.add_argument("--dataset", choices=ISO_DATASETS, required=True)
    _common(iso, seeds=100)
    iso.add_argument("--tol", type=float, default=1e-3, help="L1 threshold (paper: 1e-3)")
    iso.add_argument("--limit", type=int, help="only the first N graphs (pairs, for EXP)")
    iso.set_defaults(func=run_iso)

    cnt = bsub.add_parser("count", help="Table 2: substructure counting, median test MSE")
    cnt.add_argument("--task", choices=COUNT_TASKS, required=True)
    cnt.add_argument("--dataset", choices=COUNT_DATASETS, default="randomgraph")
    _common(cnt, seeds=10)
    _training(cnt, epochs=200, batch_size=10)
    cnt.add_argument("--sentence", help="replace the task's sentence (the target and `compiled`)")
    cnt.add_argument("--data-seed", type=int, default=0, help="seed of the paperlike generator")
    cnt.add_argument("--limit", type=int, help="only the first N graphs of each split")
    cnt.set_defaults(func=run_count)

    cls = bsub.add_parser("exp-classify", help="Table 1: EXP SAT/UNSAT accuracy")
    _common(cls, seeds=1)
    _training(cls, epochs=200, batch_size=50)
    cls.add_argument("--sentence", action="append", default=[], help="sentences for `compiled`")
    cls.add_argument("--limit", type=int, help="only the first N graphs of each split")
    cls.set_defaults(func=run_classify, dataset="exp")

    flt = bsub.add_parser("filter", help="Table 3: low/high/band-pass R² on the 2D grid")
    flt.add_argument("--task", choices=("low", "high", "band"), required=True)
    _common(flt, seeds=1)
    _training(flt, epochs=200, batch_size=1)
    flt.set_defaults(func=run_filter, dataset="twodgrid30")

    from benchmarks.__main__ import add_arguments as perf_arguments

    perf = bsub.add_parser("perf", help="speed, memory and scaling of compiled modules")
    perf_arguments(perf)
    perf.set_defaults(func=run_perf)

    b.set_defaults(func=lambda args: _missing(b))

    rep = sub.add_parser(
        "report",
        help="assemble results/*.json into Markdown tables and plots",
        description="Write <out>/report.md and one PNG per paper table from the result files.",
    )
    rep.add_argument("--results", default="results", help="folder of result JSON files")
    rep.add_argument("--out", help="where to write report.md and the PNGs (default: --results)")
    rep.add_argument("--no-plots", action="store_true", help="Markdown only")
    rep.set_defaults(func=run_report)


def run_perf(args: argparse.Namespace) -> int:
    """``matlang bench perf``: the same run as ``python -m benchmarks`` (benchmarks/)."""
    from benchmarks.__main__ import main_from_args

    return main_from_args(args)


def _missing(p: argparse.ArgumentParser) -> int:
    p.print_help()
    return 2


def _common(p: argparse.ArgumentParser, *, seeds: int) -> None:
    from runtime.experiments import model_choices

    p.add_argument("--model", required=True, type=str.lower, choices=model_choices())
    p.add_argument("--seeds", type=int, default=seeds, help=f"number of seeds (default {seeds})")
    p.add_argument("--first-seed", type=int, default=0, help="seeds are first..first+seeds-1")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--out", default="results", help="folder for the result file")
    p.add_argument("--no-save", action="store_true", help="do not write a result file")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")


def _training(p: argparse.ArgumentParser, *, epochs: int, batch_size: int) -> None:
    p.add_argument(
        "--append",
        action="store_true",
        help="add these seeds to the result file already there (same settings, new seeds)",
    )
    p.add_argument("--epochs", type=int, default=epochs, help=f"at most (default {epochs})")
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--stop-below", type=float, default=1e-4, help="stop below this train loss")


def _train_config(args: argparse.Namespace) -> Any:
    from runtime.train import TrainConfig

    return TrainConfig(
        epochs=args.epochs,
        lr=args.lr,
        weight_decay=args.weight_decay,
        batch_size=args.batch_size,
        stop_below=args.stop_below,
        progress=not args.no_progress,
    )


def _seeds(args: argparse.Namespace) -> list[int]:
    if args.seeds < 1:
        raise MatlangError(f"--seeds must be at least 1, got {args.seeds}")
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    if getattr(args, "append", False):
        _check_append(args, seeds)
    return seeds


def _check_append(args: argparse.Namespace, seeds: list[int]) -> None:
    """Before any training: the file ``--append`` adds to exists, lacks these seeds and was
    trained the same way (:func:`merge_seeds` checks every setting again at the end)."""
    if args.no_save:
        raise MatlangError("--append adds seeds to a result file: it cannot go with --no-save")
    path = Path(args.out) / result_name(
        args.bench, args.dataset, getattr(args, "task", None), args.model
    )
    old = _read_result(path)
    _check_new_seeds(path, old, seeds)
    given = {**_train_record(args), "limit": getattr(args, "limit", None)}
    config = old.get("config", {})
    for key, value in given.items():
        if key in config and config[key] != value:
            raise MatlangError(
                f"--append: {path} was run with {key} = {config[key]!r}, this run has {value!r}"
                " (another config); run without --append to replace it, or with --out to "
                "keep both"
            )


def _check_new_seeds(path: Path, old: dict[str, Any], seeds: list[int]) -> None:
    both = sorted(set(old.get("seeds", [])) & set(seeds))
    if both:
        raise MatlangError(f"--append: {path} already has seed(s) {both}; pick --first-seed")


def _read_result(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise MatlangError(f"--append: there is no result file {path} to add seeds to")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise MatlangError(f"--append: cannot read {path}: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise MatlangError(f"--append: {path} is not a result file of a training bench")
    return data


def _setup(args: argparse.Namespace) -> None:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)


# --------------------------------------------------------------------------- provenance


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
                aside.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
                raise MatlangError(f"{e}. This run's results are in {aside}") from None
            summary = {k: record[k] if k in record else v for k, v in summary.items()}
        path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
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
    old = _read_result(path)
    for key in SAME_SETTINGS:
        if old.get(key) != record.get(key):
            raise MatlangError(
                f"--append: {path} was run with another {key} "
                f"({json.dumps(old.get(key), ensure_ascii=False)[:200]}); run without --append "
                "to replace it, or with --out to keep both"
            )
    _check_new_seeds(path, old, record["seeds"])
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


def _runs(runs: list[Any], metric: str) -> list[dict[str, Any]]:
    return [
        {
            "seed": r.seed,
            metric: r.metric,
            "best_epoch": r.best_epoch,
            "epochs_run": r.epochs_run,
            "stopped_early": r.stopped_early,
            "seconds": round(r.seconds, 3),
            "final_train_loss": r.final_train_loss,
        }
        for r in runs
    ]


def _train_record(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "optimizer": "Adam",
        "epochs_max": args.epochs,
        "lr": args.lr,
        "weight_decay": args.weight_decay,
        "batch_size": args.batch_size,
        "stop_below": args.stop_below,
        "selection": "epoch of lowest validation loss",
        "dtype": "float32",
    }


# --------------------------------------------------------------------------- iso


def run_iso(args: argparse.Namespace) -> int:
    from runtime import datasets
    from runtime.experiments import ISO_SENTENCES, iso_test

    _setup(args)
    args._start = time.perf_counter()
    pairs = None
    if args.dataset == "graph8c":
        graphs = datasets.load_graph8c()
    elif args.dataset == "sr25":
        graphs = datasets.load_sr25()
    else:
        exp = datasets.load_exp()
        graphs, pairs = exp.graphs, exp.pairs
        if args.limit:
            pairs = pairs[: args.limit]
    if args.limit and pairs is None:
        graphs = graphs[: args.limit]
    seeds = _seeds(args)
    res = iso_test(
        graphs,
        args.model,
        seeds=len(seeds),
        first_seed=seeds[0],
        pairs=pairs,
        tol=args.tol,
        progress=not args.no_progress,
        dataset=args.dataset,
    )
    und = res.undistinguished
    examples = [[graphs[i].label(), graphs[j].label()] for i, j in und[:20].tolist()]
    record = {
        "bench": "iso",
        "dataset": args.dataset,
        "model": args.model,
        "graphs": len(graphs),
        "pairs": res.pairs,
        "undistinguished": int(len(und)),
        "seeds": seeds,
        "per_seed": {"undistinguished_after_seed": res.remaining},
        "config": {
            "protocol": "3 layers, sum readout, linear map to 10 features, random weights "
            "(no training); a pair is undistinguished when the L1 distance of its outputs "
            "is below tol in every seed",
            "tol": args.tol,
            "node_features": "[x, degree] (x = 1 for graph8c and sr25, EXP's literal flag)",
            "pairs": "all pairs" if pairs is None else "(2k, 2k+1)",
            "sentences": list(ISO_SENTENCES) if args.model.startswith("compiled") else None,
            "limit": args.limit,
            "dtype": "float64 (float32 rounding of large outputs exceeds tol)",
        },
        "model_info": res.model,
        "undistinguished_examples": examples,
    }
    summary = {"pairs": res.pairs, "undistinguished": int(len(und)), "seeds": len(seeds)}
    return finish(args, record, summary)


# --------------------------------------------------------------------------- count


def run_count(args: argparse.Namespace) -> int:
    from runtime import datasets
    from runtime.experiments import count_test
    from runtime.generators import paperlike_random

    _setup(args)
    args._start = time.perf_counter()
    if args.dataset == "randomgraph":
        data = datasets.load_randomgraph()
    else:
        data = paperlike_random(args.data_seed)
    seeds = _seeds(args)
    res = count_test(
        data,
        args.task,
        args.model,
        seeds=seeds,
        train=_train_config(args),
        sentence=args.sentence,
        limit=args.limit,
        progress=not args.no_progress,
    )
    t = res.targets
    per_seed = [r.metric for r in res.runs]
    record = {
        "bench": "count",
        "dataset": args.dataset,
        "task": args.task,
        "model": args.model,
        "median_test_mse": res.median_test_mse,
        "per_seed": per_seed,
        "seeds": seeds,
        "runs": _runs(res.runs, "test_mse"),
        "targets": {
            "sentence": t.sentence,
            "evaluator": "compiler.dense (exact)",
            "scale": t.scale,
            "normalisation": "values / std (ddof=1) over all graphs",
            "mean": float(np.mean(t.values)),
            "file_label": t.file_label,
            "file_label_disagreements": t.disagreements,
        },
        "data": {"source": data.source, "sizes": res.sizes, "data_seed": args.data_seed},
        "config": {
            "protocol": "4 conv layers, sum readout, 2 fully connected layers, ~30K "
            "parameters; MSE on normalised targets; test MSE at the epoch of lowest "
            "validation MSE",
            "node_features": "[1, degree / max degree]",
            **_train_record(args),
            "limit": args.limit,
        },
        "model_info": res.model,
    }
    summary = {"median_test_mse": res.median_test_mse, "per_seed": per_seed}
    if t.disagreements is not None:
        summary["file_label_disagreements"] = t.disagreements
    return finish(args, record, summary)


# --------------------------------------------------------------------------- exp-classify


def run_classify(args: argparse.Namespace) -> int:
    from runtime import datasets
    from runtime.experiments import exp_classify

    _setup(args)
    args._start = time.perf_counter()
    exp = datasets.load_exp()
    seeds = _seeds(args)
    res = exp_classify(
        exp.graphs,
        exp.y,
        (exp.train_idx, exp.val_idx, exp.test_idx),
        args.model,
        seeds=seeds,
        train=_train_config(args),
        sentences=args.sentence,
        limit=args.limit,
        progress=not args.no_progress,
    )
    per_seed = [r.metric for r in res.runs]
    record = {
        "bench": "exp-classify",
        "dataset": "exp",
        "model": args.model,
        "median_accuracy": res.median_accuracy,
        "per_seed": per_seed,
        "seeds": seeds,
        "runs": _runs(res.runs, "test_accuracy"),
        "data": {"sizes": res.sizes},
        "config": {
            "protocol": "binary cross-entropy on one logit; test accuracy at the epoch of "
            "lowest validation loss (split val 0:200, test 200:400, train 400:1200)",
            "node_features": "[x, degree]",
            **_train_record(args),
            "limit": args.limit,
        },
        "model_info": res.model,
    }
    return finish(args, record, {"median_accuracy": res.median_accuracy, "per_seed": per_seed})


# --------------------------------------------------------------------------- filter


def run_filter(args: argparse.Namespace) -> int:
    from runtime import datasets
    from runtime.experiments import filter_test

    _setup(args)
    args._start = time.perf_counter()
    grid = datasets.load_twodgrid30()
    seeds = _seeds(args)
    res = filter_test(
        grid,
        args.task,
        args.model,
        seeds=seeds,
        train=_train_config(args),
        progress=not args.no_progress,
    )
    per_seed = [r.metric for r in res.runs]
    record = {
        "bench": "filter",
        "dataset": "twodgrid30",
        "task": args.task,
        "model": args.model,
        "median_r2": res.median_r2,
        "per_seed": per_seed,
        "seeds": seeds,
        "runs": _runs(res.runs, "test_r2"),
        "config": {
            "protocol": "node regression; instance 0 trains, 2 validates, 1 tests; loss and "
            "R² on the 676 interior nodes (mask); test R² at the epoch of lowest "
            "validation loss",
            "node_features": "the input signal",
            **_train_record(args),
        },
        "model_info": res.model,
    }
    return finish(args, record, {"median_r2": res.median_r2, "per_seed": per_seed})


# --------------------------------------------------------------------------- report


def run_report(args: argparse.Namespace) -> int:
    from runtime.report import write_report

    written = write_report(args.results, args.out, plots=not args.no_plots)
    for path in written:
        print(path)
    return 0
