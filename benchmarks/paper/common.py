"""What the protocols' ``matlang bench`` runs share: checking the arguments, the training
settings (as a :class:`~benchmarks.paper.train.TrainConfig` and as recorded) and the per-seed
rows of a result file."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence
from typing import Any

from benchmarks.paper.train import SeedRun, TrainConfig
from matlang.errors import MatlangError


def check_limit(limit: int | None) -> None:
    """``limit`` keeps the first ``limit`` graphs: ``None`` (all) or a positive count."""
    if limit is not None and limit < 1:
        raise MatlangError(f"--limit must be a positive number of graphs, got {limit}")


def start(args: argparse.Namespace, extra: Sequence[str] = ()) -> list[int]:
    """Check the model (one of the benches' models, or of ``extra``: the bench's own), the
    seeds and the limit, set torch's threads; the seeds to run."""
    import torch

    from benchmarks.paper.models import model_choices

    choices = [*model_choices(), *extra]
    if args.model not in choices:
        raise MatlangError(
            f"matlang bench {args.bench}: unknown model {args.model!r}; choose from "
            + ", ".join(choices)
        )
    if args.seeds < 1:
        raise MatlangError(f"--seeds must be at least 1, got {args.seeds}")
    check_limit(getattr(args, "limit", None))
    if args.threads:
        torch.set_num_threads(args.threads)
    return list(range(args.first_seed, args.first_seed + args.seeds))


def command_line(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    drop: Sequence[str] = (),
    **extra: Any,
) -> str:
    """The ``matlang bench`` command ``args`` came from, as a user would type it: the options
    of ``parser`` (the bench's own) that differ from their defaults, without those whose
    destinations are in ``drop``, then ``extra`` (``first_seed=3`` → ``--first-seed 3``;
    ``True``: a flag)."""
    words = ["matlang", "bench", args.bench]
    for action in parser._actions:
        if not action.option_strings or action.dest in drop or action.dest == "help":
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default:
            continue
        option = action.option_strings[-1]
        if isinstance(action, argparse._StoreTrueAction):
            words += [option] if value else []
        elif isinstance(value, list):
            for v in value:
                words += [option, str(v)]
        else:
            words += [option, str(value)]
    for dest, value in extra.items():
        option = "--" + dest.replace("_", "-")
        words += [option] if value is True else [option, str(value)]
    return " ".join(shlex.quote(w) for w in words)


def weight_decay(args: argparse.Namespace, default: float = 0.0) -> float:
    """``--weight-decay``, or ``default`` where it is not given."""
    given = getattr(args, "weight_decay", None)
    return default if given is None else float(given)


def train_config(args: argparse.Namespace) -> TrainConfig:
    """The training settings of the command line."""
    return TrainConfig(
        epochs=args.epochs,
        lr=args.lr,
        weight_decay=weight_decay(args),
        batch_size=args.batch_size,
        stop_below=args.stop_below,
        progress=not args.no_progress,
        lr_schedule=getattr(args, "lr_schedule", "constant"),
    )


def train_record(args: argparse.Namespace) -> dict[str, Any]:
    """The training settings as a result file records them."""
    return {
        "optimizer": "Adam",
        "epochs_max": args.epochs,
        "lr": args.lr,
        "weight_decay": weight_decay(args),
        "batch_size": args.batch_size,
        "stop_below": args.stop_below,
        "selection": "epoch of lowest validation loss",
        "dtype": "float32",
        # recorded only when not the paper's constant rate (files before it compare equal)
        **_schedule_record(getattr(args, "lr_schedule", "constant")),
    }


def _schedule_record(schedule: str) -> dict[str, Any]:
    if schedule == "constant":
        return {}
    from benchmarks.paper.train import PLATEAU_MIN_LR, PLATEAU_PATIENCE

    return {
        "lr_schedule": f"{schedule}: halved after {PLATEAU_PATIENCE} epochs without a better "
        f"validation loss, down to {PLATEAU_MIN_LR:g}"
    }


def runs_record(runs: Sequence[SeedRun], metric: str) -> list[dict[str, Any]]:
    """One row per seed, the score under ``metric`` (``test_mse``, ``test_accuracy``, …)."""
    return [
        {
            "seed": r.seed,
            metric: r.metric,
            "best_epoch": r.best_epoch,
            "epochs_run": r.epochs_run,
            "stopped_early": r.stopped_early,
            "seconds": round(r.seconds, 3),
            "final_train_loss": r.final_train_loss,
            # recorded only when stacked, so rows of earlier runs read the same
            **({"stacked_seeds": r.stacked} if r.stacked > 1 else {}),
            **({"readout": r.readout} if r.readout is not None else {}),
        }
        for r in runs
    ]


def sentence_variant(sentences: Sequence[str]) -> str:
    """A short stable tag for sentences given on the command line (part of a file name)."""
    import hashlib

    digest = hashlib.sha1("\n".join(sentences).encode("utf-8")).hexdigest()[:8]
    return f"sentence-{digest}"


def variant(
    limit: int | None = None, sentences: Sequence[str] = (), tags: Sequence[str] = ()
) -> str | None:
    """The file-name variant of a run that is not the protocol's full run: a limit on the
    graphs, sentences of its own, or other ``tags`` (a precision, an ablation's settings);
    ``None`` for the full run."""
    parts = (
        ([f"limit{limit}"] if limit else [])
        + ([sentence_variant(sentences)] if sentences else [])
        + list(tags)
    )
    return ".".join(parts) or None
