"""Table 2's substructure counting: targets computed exactly by the dense evaluator from
MATLANG sentences, normalised to unit standard deviation; median test MSE over seeds.
``matlang bench count`` runs :func:`bench`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from benchmarks.paper.common import check_limit
from benchmarks.paper.models import counting_features, make_model
from benchmarks.paper.train import (
    GraphSet,
    SeedRun,
    TrainConfig,
    mean_loss,
    median_metric,
    run_seeds,
    squared_error,
)
from matlang.errors import DataError, MatlangError
from runtime.datasets import CountingData
from runtime.preprocess import PreprocessCache

#: Counting targets as sentences (the authors' ``GraphCountDataset`` formulas, paper App. B).
COUNT_SENTENCES: dict[str, str] = {
    # Σ_v C(deg v, 3): 3-stars centred at v (non-induced), Theorem 3
    "star": "let c3(x) = x*(x-1)*(x-2)/6; 𝟏ᵀ c3(A𝟏)",
    # tr(A³)/6: each triangle is 6 closed 3-walks, Theorem 4
    "triangle": "tr(A^3)/6",
    # Σ_v (A³)_vv/2 · (deg v − 2) = 𝟏ᵀ (A³ ⊙ I) A𝟏 / 2 − tr(A³), Theorem 5
    "tailed_triangle": "(𝟏ᵀ (A^3 ⊙ I) A 𝟏)/2 - tr(A^3)",
    # (tr(A⁴) + tr(A²) − 2·𝟏ᵀA²𝟏)/8: closed 4-walks minus the degenerate ones, Theorem 5
    "cycle4": "(tr(A^4) + tr(A^2) - 2 * 𝟏ᵀ A^2 𝟏)/8",
    # the paper's custom sentence e_c ∈ L1+
    "custom": "𝟏ᵀ A diag(exp(-A^2 𝟏)) A 𝟏",
}

#: The label array a dataset file may carry for each task (compared, never trusted).
COUNT_LABELS: dict[str, str] = {
    "star": "count_star",
    "triangle": "count_triangle",
    "tailed_triangle": "count_tailed_triangle",
    "cycle4": "count_cycle4",
    "custom": "count_custom",
}


@dataclass
class CountTargets:
    """Exact targets of one task, their normalisation, and how a file's labels compare."""

    task: str
    sentence: str
    values: np.ndarray  # exact values as float64, one per graph
    scale: float  # the targets are values / scale (unit standard deviation)
    file_label: str | None
    disagreements: int | None  # graphs whose file label differs from the exact value


def count_targets(
    data: CountingData, task: str, sentence: str | None = None, *, progress: bool = False
) -> CountTargets:
    """Targets of ``task`` evaluated exactly by the dense evaluator on every graph.

    A label array the data carries for that task is compared with the exact values (a
    difference above 1e-6 relative counts as a disagreement) and never used.
    """
    from matlang.evaluator import evaluate_graph
    from matlang.parser import parse_program

    if sentence is None:
        if task not in COUNT_SENTENCES:
            raise MatlangError(f"unknown task {task!r}; known: {', '.join(COUNT_SENTENCES)}")
        sentence = COUNT_SENTENCES[task]
    program = parse_program(sentence)
    if not program.sentences:
        raise MatlangError(f"no sentence in {sentence!r}")
    expr = program.sentences[-1].expr
    if not expr.shape.is_scalar:
        raise MatlangError(f"a counting target must be a scalar sentence, got {expr.shape}")
    values = np.array(
        [
            float(evaluate_graph(expr, g))
            for g in tqdm(data.graphs, desc=f"targets {task}", disable=not progress, leave=False)
        ]
    )
    if not np.isfinite(values).all():
        raise DataError(f"task {task!r}: the sentence is not finite on some graph")
    scale = float(np.std(values, ddof=1)) if values.size > 1 else 1.0
    if not scale > 0:
        raise DataError(f"task {task!r}: the targets are constant on this dataset")
    label = COUNT_LABELS.get(task)
    disagreements = None
    if label is not None and label in data.labels:
        stored = np.asarray(data.labels[label], dtype=np.float64)
        bad = ~np.isclose(stored, values, rtol=1e-6, atol=1e-9)
        disagreements = int(bad.sum())
    else:
        label = None
    return CountTargets(task, sentence, values, scale, label, disagreements)


@dataclass
class CountResult:
    """Median test MSE over seeds and the per-seed runs."""

    median_test_mse: float
    runs: list[SeedRun]
    targets: CountTargets
    model: dict[str, Any]
    sizes: dict[str, int]


def count_test(
    data: CountingData,
    task: str,
    model: str,
    *,
    seeds: Sequence[int] = range(10),
    train: TrainConfig | None = None,
    sentence: str | None = None,
    limit: int | None = None,
    progress: bool = False,
    on_seed: Callable[[CountResult], None] | None = None,
) -> CountResult:
    """Table 2's protocol: train on the train split, select on validation MSE, test MSE.

    ``limit`` keeps the first ``limit`` graphs of every split (smoke tests). ``compiled``
    compiles the task's sentence with its head at ``1/scale`` (exact at initialisation).
    ``on_seed`` gets the result of the seeds finished so far, after each one.
    """
    check_limit(limit)
    targets = count_targets(data, task, sentence, progress=progress)
    graphs = counting_features(data.graphs)
    y = torch.tensor(targets.values / targets.scale, dtype=torch.float32).reshape(-1, 1)
    full = GraphSet(graphs, y)
    splits = [np.asarray(s)[:limit] for s in (data.train_idx, data.val_idx, data.test_idx)]
    tr, va, te = (full.subset(s) for s in splits)
    cfg = replace(TrainConfig() if train is None else train, progress=progress)
    cache = PreprocessCache(max_entries=None)
    head = torch.tensor([[1.0 / targets.scale]])
    sizes = {"train": len(tr), "val": len(va), "test": len(te)}

    def result(runs: list[SeedRun], info: dict[str, Any]) -> CountResult:
        return CountResult(median_metric(runs), runs, targets, info, sizes)

    runs, info = run_seeds(
        seeds,
        lambda: make_model(
            model,
            2,
            1,
            protocol="count",
            sentences=[targets.sentence],
            head_weight=head,
            cache=cache,
        ),
        tr,
        va,
        squared_error,
        lambda net: mean_loss(net, te, squared_error, cfg.eval_batch_size),
        cfg,
        desc=f"{task} {model}",
        on_seed=None if on_seed is None else lambda r, i: on_seed(result(r, i)),
    )
    return result(runs, info)


# --------------------------------------------------------------------------- matlang bench count


def bench(args: argparse.Namespace) -> int:
    """``matlang bench count``: train every seed, save each as it finishes, print the summary."""
    from benchmarks.paper.common import runs_record, start, train_config, train_record, variant
    from benchmarks.records import ResultFile, result_name
    from runtime import datasets
    from runtime.generators import paperlike_random

    seeds = start(args)
    config = {
        "protocol": "4 conv layers, sum readout, 2 fully connected layers, ~30K "
        "parameters; MSE on normalised targets; test MSE at the epoch of lowest "
        "validation MSE",
        "node_features": "[1, degree / max degree]",
        **train_record(args),
        "limit": args.limit,
    }
    sentences = [args.sentence] if args.sentence else []
    name = result_name("count", args.dataset, args.task, args.model, variant(args.limit, sentences))
    out = ResultFile(args, name, config, seeds)
    data = (
        datasets.load_randomgraph()
        if args.dataset == "randomgraph"
        else (paperlike_random(args.data_seed))
    )

    def record(res: CountResult) -> dict[str, Any]:
        t = res.targets
        return {
            "bench": "count",
            "dataset": args.dataset,
            "task": args.task,
            "model": args.model,
            "median_test_mse": res.median_test_mse,
            "per_seed": [r.metric for r in res.runs],
            "seeds": [r.seed for r in res.runs],
            "runs": runs_record(res.runs, "test_mse"),
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
            "config": config,
            "model_info": res.model,
        }

    def run(save: Callable[[dict[str, Any]], Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        res = count_test(
            data,
            args.task,
            args.model,
            seeds=seeds,
            train=train_config(args),
            sentence=args.sentence,
            limit=args.limit,
            progress=not args.no_progress,
            on_seed=lambda partial: save(record(partial)),
        )
        summary: dict[str, Any] = {
            "median_test_mse": res.median_test_mse,
            "per_seed": [r.metric for r in res.runs],
        }
        if res.targets.disagreements is not None:
            summary["file_label_disagreements"] = res.targets.disagreements
        return record(res), summary

    return out.run(run)


__all__ = [
    "COUNT_LABELS",
    "COUNT_SENTENCES",
    "CountResult",
    "CountTargets",
    "bench",
    "count_targets",
    "count_test",
]
