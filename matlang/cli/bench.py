"""``matlang bench iso|count|exp-classify|filter|perf``.

Every bench run prints a summary (``--json``: one JSON object) and writes
``<out>/<bench>-<dataset>[-<task>]-<model>.json`` with the configuration, the seeds, the
per-seed numbers, the wall time, the versions and the git commit.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from matlang.errors import MatlangError

ISO_DATASETS = ("graph8c", "sr25", "exp")
COUNT_DATASETS = ("randomgraph", "paperlike")
COUNT_TASKS = ("star", "triangle", "tailed_triangle", "cycle4", "custom")


def register(sub: Any) -> None:
    """Add ``bench`` (the paper's experiments and ``perf``)."""
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

    brec = bsub.add_parser("brec", help="BREC: 400 non-isomorphic pairs, RPC protocol")
    brec.add_argument(
        "--model",
        required=True,
        type=str.lower,
        metavar="MODEL",
        help="1-wl, 3-wl, bank-L1|bank-L2|bank-L3, or a reference model trained under RPC",
    )
    brec.add_argument("--max-size", type=int, default=10, help="banks: sentence size bound")
    brec.add_argument("--pairs", metavar="A:B", help="only pairs A..B-1 (default all 400)")
    brec.add_argument("--seed", type=int, default=0, help="RPC: seed of relabellings and weights")
    brec.add_argument("--epochs", type=int, default=20, help="RPC: epochs per pair (BREC: 20)")
    brec.add_argument("--json", action="store_true", help="print the summary as JSON")
    brec.add_argument("--out", default="results", help="folder for the result file")
    brec.add_argument("--no-save", action="store_true", help="do not write a result file")
    brec.add_argument("--no-progress", action="store_true", help="no progress bars")
    brec.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    brec.set_defaults(func=run_brec)

    b.set_defaults(func=lambda args: _missing(b))


def run_brec(args: argparse.Namespace) -> int:
    """``matlang bench brec``: one row of the BREC table (see benchmarks/paper/brec.py)."""
    import sys

    from tqdm import tqdm

    from benchmarks.paper import brec
    from benchmarks.records import finish
    from runtime import datasets

    args._start = time.perf_counter()
    data = datasets.load_brec()
    pairs = None
    if args.pairs:
        try:
            a, b = (int(v) for v in args.pairs.split(":"))
        except ValueError:
            raise MatlangError(f"--pairs must be A:B (pairs A..B-1), got {args.pairs!r}") from None
        pairs = list(range(a, b))

    def progress(items: Any) -> Any:
        disable = True if args.no_progress else None
        return tqdm(items, desc=f"brec {args.model}", disable=disable, leave=False, file=sys.stderr)

    model = args.model
    if model in ("1-wl", "3-wl"):
        res = brec.wl_rows(data, model, pairs, progress=progress)
    elif model.startswith("bank-"):
        res = brec.bank_rows(data, model[5:], args.max_size, pairs, progress=progress)
    else:
        _setup_model(args, model)
        cfg = brec.RPCConfig(epochs=args.epochs)
        res = brec.rpc_rows(data, model, pairs, seed=args.seed, cfg=cfg, progress=progress)
    body = res.to_json()
    trained = not (model.startswith("bank-") or model in ("1-wl", "3-wl"))
    # A bank's file names its size bound: rows of several bounds sit side by side.
    name = f"{res.model}-k{args.max_size}" if model.startswith("bank-") else res.model
    body["model"] = name
    record = {"bench": "brec", "dataset": "brec", **body}
    summary = {"model": name, "pairs": body["pairs"], "separated": body["separated"]}
    summary |= body["counts"]
    if trained:
        summary["reliability_failures"] = brec.reliability_failures(res)
    return finish(args, record, summary)


def _setup_model(args: argparse.Namespace, model: str) -> None:
    import torch

    from runtime.models import model_names

    if model not in model_names():
        raise MatlangError(
            f"matlang bench brec: unknown model {model!r}; choose from 1-wl, 3-wl, bank-L1, "
            "bank-L2, bank-L3, " + ", ".join(model_names())
        )
    if args.threads:
        torch.set_num_threads(args.threads)


def run_perf(args: argparse.Namespace) -> int:
    """``matlang bench perf``: the same run as ``python -m benchmarks`` (benchmarks/)."""
    from benchmarks.__main__ import main_from_args

    return main_from_args(args)


def _missing(p: argparse.ArgumentParser) -> int:
    p.print_help()
    return 2


def _common(p: argparse.ArgumentParser, *, seeds: int) -> None:
    # The choices are checked in _setup: listing them here would import torch and every model
    # to build the parser, which made every `matlang` command start in ~2 s.
    p.add_argument(
        "--model",
        required=True,
        type=str.lower,
        metavar="MODEL",
        help="a reference model (`matlang models`: mlp, gcn, gat, gin, chebnet, ppgn, gnnml1, "
        "gnnml3) or a compiled one (compiled, compiled-random)",
    )
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
    from benchmarks.paper.train import TrainConfig

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
    from benchmarks.records import check_new_seeds, read_result, result_name

    path = Path(args.out) / result_name(
        args.bench, args.dataset, getattr(args, "task", None), args.model
    )
    old = read_result(path)
    check_new_seeds(path, old, seeds)
    given = {**_train_record(args), "limit": getattr(args, "limit", None)}
    config = old.get("config", {})
    for key, value in given.items():
        if key in config and config[key] != value:
            raise MatlangError(
                f"--append: {path} was run with {key} = {config[key]!r}, this run has {value!r}"
                " (another config); run without --append to replace it, or with --out to "
                "keep both"
            )


def _setup(args: argparse.Namespace) -> None:
    import torch

    from benchmarks.paper.experiments import model_choices

    choices = model_choices()
    if args.model not in choices:
        raise MatlangError(
            f"matlang bench {args.bench}: unknown model {args.model!r}; choose from "
            + ", ".join(choices)
        )

    if args.threads:
        torch.set_num_threads(args.threads)


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
    from benchmarks.paper.experiments import ISO_SENTENCES, iso_test
    from benchmarks.records import finish
    from runtime import datasets

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
    from benchmarks.paper.experiments import count_test
    from benchmarks.records import finish
    from runtime import datasets
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
            "evaluator": "matlang.evaluator (exact)",
            "scale": t.scale,
            "normalisation": "values / std (ddof=1) over all graphs",
            "mean": float(t.values.mean()),
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
    from benchmarks.paper.experiments import exp_classify
    from benchmarks.records import finish
    from runtime import datasets

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
    from benchmarks.paper.experiments import filter_test
    from benchmarks.records import finish
    from runtime import datasets

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
