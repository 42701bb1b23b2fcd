"""Table 2's substructure counting: targets computed exactly by the dense evaluator from
MATLANG sentences, normalised to unit standard deviation; median test MSE over seeds.
``matlang bench count`` runs :func:`bench`, under one of two :data:`PROTOCOLS`: ``paper``
(the settings the paper states, ours where it is silent) or ``authors`` (those of the authors'
``counting.py``, ``balcilar/gnn-matlang``).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from benchmarks.paper.common import check_limit
from benchmarks.paper.distributed import (
    Group,
    device_label,
    follow_torchrun,
    from_environment,
    launch,
    one_process_device,
)
from benchmarks.paper.models import (
    COUNT_MODELS,
    COUNT_PATTERNS,
    LEAST_SQUARES,
    LEAST_SQUARES_CONFIG,
    SENTENCE,
    counting_features,
    make_model,
    pattern_count_features,
)
from benchmarks.paper.stacked import run_seeds_stacked
from benchmarks.paper.train import (
    GraphSet,
    SeedRun,
    TrainConfig,
    fit_readout,
    mean_loss,
    median_metric,
    run_seeds,
    squared_error,
)
from benchmarks.records import task_file_name
from matlang.errors import DataError, MatlangError
from matlang.runtime.datasets import CountingData
from matlang.runtime.preprocess import PreprocessCache

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

#: ``--task pattern:NAME``: the count of a pattern (:func:`matlang.pattern`), beyond the paper.
PATTERN_PREFIX = "pattern:"


def pattern_name(task: str) -> str | None:
    """NAME of a ``pattern:NAME`` task, else None."""
    return task[len(PATTERN_PREFIX) :] if task.startswith(PATTERN_PREFIX) else None


def pattern_task(task: str) -> dict[str, Any]:
    """A ``pattern:NAME`` task's record (see :func:`_pattern_task`), computed once per task:
    the bench, the model check, the targets and the supports all ask for it."""
    return dict(_pattern_task(task))


@functools.lru_cache(maxsize=32)
def _pattern_task(task: str) -> dict[str, Any]:
    """A ``pattern:NAME`` task: the pattern's exact counting program (labels), its rooted
    program (the ``sentence`` model's supports), the theory's level, and the pattern's graph6.

    A pattern that no MATLANG sentence counts (fragment "none", e.g. K4: a quotient of
    treewidth 3) has ``sentence`` None and theory ``"no"``: its labels are the exact count by
    the spasm (:func:`matlang.spasm.sub_count`), and only models that need no sentence train
    on it."""
    from matlang.patterns import pattern

    name = pattern_name(task)
    assert name is not None
    if not name:
        raise MatlangError("--task pattern:NAME needs a pattern (C5, K4, house, 0-1 1-2 2-0 …)")
    res = pattern(name, witness=False)
    if res.sentence is None:
        return {
            "pattern": res.graph6,
            "sentence": None,
            "rooted_sentence": None,
            "fragment": res.fragment,
            "theory": "no",
            "reason": res.reason,
        }
    rooted = pattern(name, rooted=True, witness=False)
    theory = {"L1": "1-WL", "L2": "L2", "L3": "3-WL"}[res.fragment]
    return {
        "pattern": res.graph6,
        "sentence": res.sentence,
        "rooted_sentence": rooted.sentence,
        "fragment": res.fragment,
        "theory": theory,
        "reason": res.reason,
    }


def check_pattern_model(task: str, model: str, sentence: str | None = None) -> None:
    """A model that is built from the task's sentence (``compiled``, ``compiled-random``,
    ``sentence``) cannot train on a pattern that no sentence counts: an error saying why."""
    from benchmarks.paper.models import COMPILED

    if sentence is not None or pattern_name(task) is None:
        return
    if model.lower() not in (*COMPILED, *SENTENCE):
        return
    theory = pattern_task(task)
    if theory["sentence"] is None:
        raise MatlangError(
            f"--model {model} is built from the pattern's counting sentence, and no MATLANG "
            f"sentence counts {pattern_name(task)} ({theory['reason']}); train a reference "
            "model on it (its labels are the spasm's exact count)"
        )


def pattern_counts(task: str, graphs: Sequence[Any], *, progress: bool = False) -> np.ndarray:
    """Exact subgraph counts of a ``pattern:NAME`` task's pattern on ``graphs``, by the spasm's
    homomorphism counts (variable elimination on numpy, independent of the MATLANG evaluator):
    the labels of a pattern that no sentence counts."""
    from matlang.patterns import read_pattern
    from matlang.spasm import sub_count

    name = pattern_name(task)
    assert name is not None
    small, _ = read_pattern(name)
    out = []
    for g in tqdm(graphs, desc=f"targets {task}", disable=not progress, leave=False):
        c = sub_count(small, np.asarray(g.adjacency))
        if c.denominator != 1:  # a Möbius sum is an integer on every graph
            raise DataError(f"task {task!r}: non-integer count {c} on graph {g.label()}")
        out.append(float(c))
    return np.asarray(out, dtype=np.float64)


def pattern_supports(
    rooted_sentence: str, graphs: Sequence[Any], limit: int | None = 4
) -> list[str]:
    """Supports for SentenceGNN from a pattern's rooted sentence: I, A / 3 and its masked matrices
    (the matrix-valued ⊙ subexpressions, fewest nodes first, at most ``limit``; None: all), each
    divided by three times its largest entry over ``graphs``, rounded up (entries at most 1/3, as
    A / 3; products of supports over 4 layers diverge in the first epochs with larger entries)."""
    import math

    from matlang import ast
    from matlang.evaluator import evaluate_graph
    from matlang.parser import parse
    from matlang.printer import to_text

    expr = parse(rooted_sentence)
    masked: dict[str, ast.Expr] = {}
    for node in expr.walk():
        if isinstance(node, ast.Hadamard) and node.shape.is_matrix:
            masked.setdefault(to_text(node, definitions=False), node)
    chosen = sorted(masked.items(), key=lambda kv: (sum(1 for _ in kv[1].walk()), kv[0]))
    out = ["I", "A / 3"]  # as COUNT_SUPPORTS
    for text, node in chosen if limit is None else chosen[:limit]:
        top = max(
            (float(np.abs(np.asarray(evaluate_graph(node, g))).max()) for g in graphs), default=1.0
        )
        scale = max(1, math.ceil(3 * top))  # entries at most 1/3, as A / 3
        out.append(f"({text}) / {scale}" if scale > 1 else text)
    return out


#: The label array a dataset file may carry for each task (compared, never trusted).
COUNT_LABELS: dict[str, str] = {
    "star": "count_star",
    "triangle": "count_triangle",
    "tailed_triangle": "count_tailed_triangle",
    "cycle4": "count_cycle4",
    "custom": "count_custom",
}


#: How the training loss reduces a batch (both protocols; the authors' ``counting.py`` too).
LOSS = "sum of squared errors over each batch of graphs (one Adam step per batch)"
#: ``--loss mean`` (an ablation): the batch's mean instead of its sum.
LOSS_MEAN = "mean of squared errors over each batch of graphs (one Adam step per batch)"
LOSSES = {"sum": LOSS, "mean": LOSS_MEAN}


@dataclass(frozen=True)
class CountProtocol:
    """How Table 2 is trained; a result file records every field.

    Args:
        name: ``paper`` or ``authors``.
        description: the protocol in words (the result file's ``config.protocol``).
        conv_layers: graph layers of the reference models.
        epochs: at most this many epochs.
        batch_size: graphs per Adam step.
        stop_below: stop once an epoch's mean training loss is below this (0: never).
    """

    name: str
    description: str
    conv_layers: int
    epochs: int
    batch_size: int
    stop_below: float


PROTOCOLS: dict[str, CountProtocol] = {
    "paper": CountProtocol(
        "paper",
        "4 conv layers, sum readout, 2 fully connected layers, ~30K parameters; MSE on "
        "normalised targets; test MSE at the epoch of lowest validation MSE",
        conv_layers=4,
        epochs=200,
        batch_size=10,
        stop_below=1e-4,
    ),
    # counting.py: 5 conv layers, DataLoader(batch_size=10, shuffle=True), loss
    # torch.square(pre - y).sum() per batch, Adam lr 1e-3, `for epoch in range(1, 1001)` with
    # no early stop, the test loss kept at the best validation loss; GNNML3 learnedge=True
    "authors": CountProtocol(
        "authors",
        "the authors' counting.py: 5 conv layers, sum readout, 2 fully connected layers; "
        "MSE on normalised targets; up to 1000 epochs, no early stop; test MSE at the epoch "
        "of lowest validation MSE",
        conv_layers=5,
        epochs=1000,
        batch_size=10,
        stop_below=0.0,
    ),
}

#: What a result file written before these settings were recorded was run with.
IMPLIED_CONFIG = {"count_protocol": "paper", "conv_layers": 4, "loss": LOSS}


@dataclass
class CountTargets:
    """Exact targets of one task, their normalisation, and how a file's labels compare."""

    task: str
    sentence: str | None  # None: a pattern no sentence counts (labels by the spasm)
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

    if sentence is None and pattern_name(task) is not None:
        sentence = pattern_task(task)["sentence"]
        if sentence is None:  # no sentence counts it: the spasm's exact count
            values = pattern_counts(task, data.graphs, progress=progress)
            return _targets(task, None, values, data)
    if sentence is None:
        if task not in COUNT_SENTENCES:
            raise MatlangError(
                f"unknown task {task!r}; known: {', '.join(COUNT_SENTENCES)}, pattern:NAME"
            )
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
    return _targets(task, sentence, values, data)


def _targets(
    task: str, sentence: str | None, values: np.ndarray, data: CountingData
) -> CountTargets:
    """Check exact ``values`` (finite, not constant), normalise them, compare a file label."""
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
    conv_layers: int | None = None,
    group: Group | None = None,
    options: Mapping[str, Any] | None = None,
    stack_seeds: int = 1,
) -> CountResult:
    """Table 2's protocol: train on the train split, select on validation MSE, test MSE.

    ``limit`` keeps the first ``limit`` graphs of every split (smoke tests). ``compiled``
    compiles the task's sentence with its head at ``1/scale`` (exact at initialisation).
    ``on_seed`` gets the result of the seeds finished so far, after each one;
    ``conv_layers`` replaces the reference models' layer count (the ``count`` configuration's
    4); ``options`` replace other fields of the model's configuration (``learn_supports``,
    ``num_bands``, ``receptive_field`` … :func:`~runtime.models.replace_fields`);
    ``stack_seeds`` > 1 trains that many seeds at a time as one stacked model
    (:mod:`benchmarks.paper.stacked`: GNNML3, MLP, GCN, ChebNet, GAT), ``on_seed`` after
    every group.
    """
    check_limit(limit)
    check_pattern_model(task, model, sentence)
    targets = count_targets(data, task, sentence, progress=progress)
    graphs = counting_features(data.graphs)
    if model.lower() in COUNT_MODELS:  # the exact pattern counts per node, after those
        graphs = pattern_count_features(graphs, scale="max")
    in_dim = int(np.asarray(graphs[0].x).shape[1])
    y = torch.tensor(targets.values / targets.scale, dtype=torch.float32).reshape(-1, 1)
    full = GraphSet(graphs, y)
    splits = [np.asarray(s)[:limit] for s in (data.train_idx, data.val_idx, data.test_idx)]
    tr, va, te = (full.subset(s) for s in splits)
    cfg = replace(TrainConfig() if train is None else train, progress=progress)
    cache = PreprocessCache(max_entries=None)
    head = torch.tensor([[1.0 / targets.scale]])
    sizes = {"train": len(tr), "val": len(va), "test": len(te)}
    least_squares = model.lower() in LEAST_SQUARES
    if least_squares and cfg.epochs != 0:
        raise MatlangError(
            f"--model {model} takes no gradient steps (its readout is fitted by least squares): "
            f"give --epochs 0, not {cfg.epochs}"
        )
    if model.lower() in SENTENCE and pattern_name(task) is not None:
        # SentenceGNN's supports: the masked matrices of the pattern's rooted sentence (all
        # of them for the least-squares model, whose readout must span the count's terms)
        options = dict(options or {})
        if "sentences" not in options:
            rooted = pattern_task(task)["rooted_sentence"]
            train_graphs = [data.graphs[i] for i in splits[0]]
            options["sentences"] = tuple(
                pattern_supports(rooted, train_graphs, limit=None if least_squares else 4)
            )

    def result(runs: list[SeedRun], info: dict[str, Any]) -> CountResult:
        return CountResult(median_metric(runs), runs, targets, info, sizes)

    def build() -> nn.Module:
        return make_model(
            model,
            in_dim,
            1,
            protocol="count",
            sentences=[] if targets.sentence is None else [targets.sentence],
            head_weight=head,
            cache=cache,
            # a polynomial readout of large, cancelling terms: its sums in float64
            dtype=torch.float64 if least_squares else torch.float32,
            options={
                **(options or {}),
                **({} if conv_layers is None else {"layers": conv_layers}),
            }
            or None,
        )

    if stack_seeds > 1:
        if group is not None and group.world > 1:
            raise MatlangError("stacked seeds train in one process: drop --nproc")
        runs, info = run_seeds_stacked(
            seeds,
            build,
            tr,
            va,
            te,
            cfg,
            stack=stack_seeds,
            desc=f"{task} {model}",
            on_seed=None if on_seed is None else lambda r, i: on_seed(result(r, i)),
        )
        return result(runs, info)

    runs, info = run_seeds(
        seeds,
        build,
        tr,
        va,
        squared_error,
        lambda net: mean_loss(net, te, squared_error, cfg.eval_batch_size),
        cfg,
        desc=f"{task} {model}",
        on_seed=None if on_seed is None else lambda r, i: on_seed(result(r, i)),
        group=group,
        refit=(lambda net: fit_readout(net, tr, va, batch_size=cfg.eval_batch_size))
        if least_squares
        else None,
    )
    return result(runs, info)


def parse_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``--set``: the value as a bool (true/false), int, float or text."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise MatlangError(
            f"--set takes KEY=VALUE (a model option such as num_bands=5), got {text!r}"
        )
    raw = raw.strip()
    value: Any
    if raw.lower() in ("true", "false"):
        value = raw.lower() == "true"
    else:
        try:
            value = int(raw)
        except ValueError:
            try:
                value = float(raw)
            except ValueError:
                value = raw
    return key, value


def model_options(texts: Sequence[str] | None, model: str) -> dict[str, Any]:
    """The ``--set`` options of ``model``, checked against its configuration (an unknown
    option is an error naming the known ones; ``layers`` has its own ``--layers``)."""
    from benchmarks.paper.models import COMPILED

    options = dict(parse_option(t) for t in texts or ())
    if not options:
        return {}
    if "layers" in options:
        raise MatlangError("--set layers=N: use --layers N")
    if model in COMPILED:
        raise MatlangError(f"--set changes a reference model's configuration, not {model!r}")
    make_model(model, 2, 1, protocol="count", options=options)  # raises on a bad option
    return options


def variant_tags(
    protocol: CountProtocol,
    layers: int,
    reduction: str,
    options: Mapping[str, Any],
    tag: str | None,
    default_layers: int | None = None,
) -> list[str]:
    """File-name tags of a run whose protocol, model or loss is not the paper protocol's
    (``authors``, ``mean``, ``layers5``, ``num_bands-5`` …), then ``--variant``'s own tag
    (epochs, batch size…). The paper protocol's Table 2 files carry no tag, so a run under
    another protocol never lands in (or is refused by) the file of another. ``default_layers``:
    the model's own layer count when it is not the protocol's (``sentence-lstsq``)."""
    tags = [protocol.name] if protocol.name != "paper" else []
    tags += ["mean"] if reduction == "mean" else []
    own = protocol.conv_layers if default_layers is None else default_layers
    tags += [f"layers{layers}"] if layers != own else []
    tags += [f"{k}-{str(v).lower()}" for k, v in sorted(options.items())]
    if tag is not None:
        if not tag or not all(c.isalnum() or c in "-_" for c in tag):
            raise MatlangError(f"--variant takes letters, digits, - and _, got {tag!r}")
        tags.append(tag)
    return tags


def node_features_text(model: str) -> str:
    """The node features a counting run's ``model`` reads, as its result file records them."""
    text = "[1, degree / max degree]"
    if model.lower() in COUNT_MODELS:
        text += (
            " + exact counts per node of "
            + ", ".join(COUNT_PATTERNS)
            + " (PatternCounts), each divided by its maximum over the dataset"
        )
    return text


def _in_group(group: Group, **kwargs: Any) -> Any:
    """:func:`count_test` in one process of a data-parallel run (no per-seed saving: callbacks
    do not cross processes)."""
    return count_test(group=group, **kwargs)


# --------------------------------------------------------------------------- matlang bench count


def bench(args: argparse.Namespace) -> int:
    """``matlang bench count``: train every seed, save each as it finishes, print the summary."""
    from benchmarks.paper.common import runs_record, start, train_config, train_record, variant
    from benchmarks.records import ResultFile, result_name
    from matlang.runtime import datasets
    from matlang.runtime.generators import paperlike_random

    protocol = PROTOCOLS[args.protocol]
    least_squares = args.model.lower() in LEAST_SQUARES
    if least_squares and args.epochs is None:
        args.epochs = 0  # no gradient steps: the readout is fitted by least squares
    for key in ("epochs", "batch_size", "stop_below"):  # the protocol's, unless given
        if getattr(args, key) is None:
            setattr(args, key, getattr(protocol, key))
    follow_torchrun(args)  # under torchrun: process 0 saves and prints
    stack = getattr(args, "stack_seeds", 1)
    if stack > 1 and (getattr(args, "nproc", 1) > 1 or from_environment() is not None):
        raise MatlangError("--stack-seeds trains in one process: drop --nproc (or torchrun)")
    check_pattern_model(args.task, args.model, args.sentence)  # before any data is loaded
    seeds = start(args, extra=list(COUNT_MODELS))
    # before any data is read or file written: a device that cannot train here is refused
    nproc = getattr(args, "nproc", 1)
    device = one_process_device(
        getattr(args, "device", "cpu"), "count", nproc, (stack > 1, "--stack-seeds")
    )
    ran_on = device_label(device)
    default_layers = LEAST_SQUARES_CONFIG["layers"] if least_squares else protocol.conv_layers
    layers = default_layers if args.layers is None else args.layers
    reduction = args.loss
    options = model_options(args.set, args.model)
    train = replace(train_config(args), reduction=reduction, device=device)
    config = {
        "protocol": protocol.description,
        "node_features": node_features_text(args.model),
        **train_record(args),
        "limit": args.limit,
        # recorded only when data-parallel, so earlier files still take --append
        **({"nproc": args.nproc} if getattr(args, "nproc", 1) > 1 else {}),
        "count_protocol": protocol.name,
        "conv_layers": layers,
        "loss": LOSSES[reduction],
        # recorded only when given, so earlier files still take --append
        **({"model_options": options} if options else {}),
        **({"variant": args.variant} if args.variant else {}),
    }
    sentences = [args.sentence] if args.sentence else []
    tags = variant_tags(protocol, layers, reduction, options, args.variant, default_layers)
    name = result_name(
        "count",
        args.dataset,
        task_file_name(args.task),
        args.model,
        variant(args.limit, sentences, tags),
    )
    theory = pattern_task(args.task) if pattern_name(args.task) is not None else None
    out = ResultFile(args, name, config, seeds, implied=IMPLIED_CONFIG)
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
            "runs": [
                # the validation curve shows what fewer epochs would have selected; each seed's
                # device (runs written before --device trained on the CPU, say none)
                {
                    **row,
                    "device": ran_on,
                    "val_mse_by_epoch": [float(f"{v:.4g}") for v in r.val_loss],
                }
                for row, r in zip(runs_record(res.runs, "test_mse"), res.runs, strict=True)
            ],
            "targets": {
                "sentence": t.sentence,
                "evaluator": (
                    "matlang.evaluator (exact)"
                    if t.sentence is not None
                    else "matlang.spasm.sub_count (exact: the spasm's homomorphism counts)"
                ),
                "scale": t.scale,
                "normalisation": "values / std (ddof=1) over all graphs",
                "mean": float(t.values.mean()),
                "file_label": t.file_label,
                "file_label_disagreements": t.disagreements,
            },
            **(
                {"pattern": {k: theory[k] for k in ("pattern", "fragment", "theory", "reason")}}
                if theory is not None
                else {}
            ),
            "data": {"source": data.source, "sizes": res.sizes, "data_seed": args.data_seed},
            "config": config,
            "model_info": res.model,
        }

    def run(save: Callable[[dict[str, Any]], Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        if nproc > 1 or from_environment() is not None:  # data-parallel (or torchrun)
            res = launch(
                functools.partial(
                    _in_group,
                    data=data,
                    task=args.task,
                    model=args.model,
                    seeds=seeds,
                    train=train,
                    sentence=args.sentence,
                    limit=args.limit,
                    progress=not args.no_progress,
                    conv_layers=layers,
                    options=options,
                ),
                nproc,
            )
        else:
            res = count_test(
                data,
                args.task,
                args.model,
                seeds=seeds,
                train=train,
                sentence=args.sentence,
                limit=args.limit,
                progress=not args.no_progress,
                on_seed=lambda partial: save(record(partial)),
                conv_layers=layers,
                options=options,
                stack_seeds=stack,
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
    "IMPLIED_CONFIG",
    "LOSS",
    "LOSSES",
    "LOSS_MEAN",
    "PATTERN_PREFIX",
    "PROTOCOLS",
    "CountProtocol",
    "CountResult",
    "CountTargets",
    "bench",
    "check_pattern_model",
    "count_targets",
    "count_test",
    "model_options",
    "node_features_text",
    "parse_option",
    "pattern_counts",
    "pattern_name",
    "pattern_supports",
    "pattern_task",
    "task_file_name",
    "variant_tags",
]
