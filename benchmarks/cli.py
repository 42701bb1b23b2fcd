"""The ``matlang bench`` and ``matlang report`` commands, which this distribution adds to the
``matlang`` command line through the ``matlang.cli`` entry point group (``pyproject.toml``:
``bench = "benchmarks.cli:register"``, ``report = "benchmarks.cli:register_report"``); the
library itself never imports ``benchmarks``.

``matlang bench iso|count|exp-classify|filter|bandclass|tu|zinc|mnist75|brec|perf|merge``: the
arguments, then the protocol.

Each protocol lives in ``benchmarks/paper/<protocol>.py`` (its ``bench(args)`` runs it, builds
the result record and writes it through :class:`benchmarks.records.ResultFile`). Every bench
run prints a summary (``--json``: one JSON object) and writes
``<out>/<bench>-<dataset>[-<task>]-<model>[.<variant>].json`` with the configuration, the
seeds, the per-seed numbers, the wall time, the versions and the git commit; runs on part of
the data (``--limit``) or on sentences of their own (``--sentence``) get a variant name, an
existing file is never replaced without ``--force``, and seeds are saved as they finish.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import Any

from matlang.cli.common import output_options

ISO_DATASETS = ("graph8c", "sr25", "exp")
COUNT_DATASETS = ("randomgraph", "paperlike")
COUNT_TASKS = ("star", "triangle", "tailed_triangle", "cycle4", "custom", "pattern:NAME")


def _count_task(text: str) -> str:
    """A task of COUNT_TASKS, or pattern:NAME (a pattern as `matlang pattern` reads it)."""
    if text in COUNT_TASKS[:-1] or (text.startswith("pattern:") and len(text) > len("pattern:")):
        return text
    raise argparse.ArgumentTypeError(
        f"invalid choice: {text!r} (choose from {', '.join(COUNT_TASKS)}; e.g. pattern:C5)"
    )


def register(sub: Any) -> None:
    """Add ``bench`` (the paper's experiments and ``perf``)."""
    b = sub.add_parser(
        "bench",
        help="run the paper's experiments (Tables 1-4, the TU appendix, BREC)",
        description="Run one of the paper's experiments; results go to results/*.json.",
    )
    bsub = b.add_subparsers(dest="bench", metavar="BENCH")

    iso = bsub.add_parser("iso", help="Table 1: undistinguished pairs of random models")
    iso.add_argument("--dataset", choices=ISO_DATASETS, required=True)
    _common(iso, seeds=100)
    iso.add_argument("--tol", type=float, default=1e-3, help="L1 threshold (paper: 1e-3)")
    iso.add_argument(
        "--dtype",
        choices=("float64", "float32"),
        default="float64",
        help="precision of the models (default float64; float32 as the authors ran them, "
        "written to the .float32 variant with the same weights' float64 counts beside)",
    )
    iso.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="replace a field of the model's configuration, e.g. activation=tanh, "
        "output_activation=tanh (the authors' isomorphism scripts); the file gets a "
        "KEY-VALUE variant",
    )
    iso.add_argument("--limit", type=_positive, help="only the first N graphs (pairs, for EXP)")
    iso.set_defaults(func=_protocol("iso"))

    cnt = bsub.add_parser("count", help="Table 2: substructure counting, median test MSE")
    cnt.add_argument(
        "--task",
        type=_count_task,
        required=True,
        metavar="TASK",
        help=f"{', '.join(COUNT_TASKS)}: labels by the pattern's exact counting sentence "
        "(`matlang pattern NAME`), e.g. pattern:C5, pattern:diamond, pattern:K4 is refused",
    )
    cnt.add_argument("--dataset", choices=COUNT_DATASETS, default="randomgraph")
    _common(cnt, seeds=10, models=COUNT_MODELS)
    cnt.add_argument(
        "--protocol",
        choices=("paper", "authors"),
        default="paper",
        help="paper: 4 conv layers, at most 200 epochs, stop below train loss 1e-4; authors "
        "(their counting.py): 5 conv layers, 1000 epochs, no early stop; both batch 10, the "
        "sum of squared errors per batch, test MSE at the best validation MSE. --epochs, "
        "--batch-size and --stop-below replace the protocol's value",
    )
    _training(cnt, epochs=None, batch_size=None, stop_below=None)
    cnt.add_argument(
        "--loss",
        choices=("sum", "mean"),
        default="sum",
        help="each Adam step on the batch's sum of squared errors (default, the authors') or "
        "on its mean (an ablation: the file gets the .mean variant)",
    )
    cnt.add_argument(
        "--layers",
        type=_positive,
        help="conv layers of the reference model (default the protocol's; another count "
        "gets the .layersN variant)",
    )
    cnt.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="replace a field of the model's configuration, e.g. learn_supports=false, "
        "num_bands=5, receptive_field=2 (repeatable; the file gets a KEY-VALUE variant)",
    )
    cnt.add_argument(
        "--variant",
        metavar="TAG",
        help="a tag appended to the result file's name (say, for shortened epochs or another "
        "batch size in an ablation); recorded in the file",
    )
    cnt.add_argument("--sentence", help="replace the task's sentence (the target and `compiled`)")
    cnt.add_argument("--data-seed", type=int, default=0, help="seed of the paperlike generator")
    cnt.add_argument("--limit", type=_positive, help="only the first N graphs of each split")
    cnt.add_argument(
        "--stack-seeds",
        type=_positive,
        default=1,
        metavar="K",
        help="train K seeds at once as one stacked dense model (GNNML3, MLP, GCN, ChebNet, "
        "GAT on small graphs: the same runs to float rounding, several times the seeds per "
        "hour); the file is saved after every K seeds",
    )
    _nproc(cnt)
    _device(cnt, "one process, without --stack-seeds")
    cnt.set_defaults(func=_protocol("count"))

    cls = bsub.add_parser("exp-classify", help="Table 1: EXP SAT/UNSAT accuracy")
    _common(cls, seeds=1)
    _training(cls, epochs=200, batch_size=50)
    cls.add_argument("--sentence", action="append", default=[], help="sentences for `compiled`")
    cls.add_argument("--limit", type=_positive, help="only the first N graphs of each split")
    _nproc(cls)
    _device(cls, "one process")
    cls.set_defaults(func=_protocol("exp_classify"), dataset="exp")

    flt = bsub.add_parser("filter", help="Table 3: low/high/band-pass R² on the 2D grid")
    flt.add_argument("--task", choices=("low", "high", "band"), required=True)
    _common(flt, seeds=1)
    _training(flt, epochs=200, batch_size=1)
    _device(flt, "the model and the grid move there")
    flt.add_argument(
        "--arch",
        choices=("ours", "authors"),
        default="ours",
        help="ours (default: the ~30K-parameter configuration of every model) or authors: the "
        "architecture of the authors' filtering.py (GNNML3: 3 layers of 32 + 16 channels, "
        "tanh · tanh products, a linear output; PPGN: 3 blocks of 20 channels, column sums, "
        "a linear output; file tag authors-arch)",
    )
    flt.set_defaults(func=_protocol("filter"), dataset="twodgrid30")

    tu = bsub.add_parser("tu", help="appendix: TU datasets, 10-fold accuracy")
    from benchmarks.paper.tu_protocols import DATASETS, arch_help, protocol_help  # torch-free

    tu.add_argument(
        "--dataset",
        choices=DATASETS,
        required=True,
        help="enzymes-cont: ENZYMES with its 18 continuous node attributes beside the one-hot "
        "label (the paper's ENZYMES-cont column)",
    )
    _common(tu, seeds=1, models=TU_MODELS)

    tu.add_argument(
        "--protocol", choices=("paper", "authors"), default="paper", help=protocol_help()
    )
    tu.add_argument("--arch", choices=("ours", "authors"), default="ours", help=arch_help())
    _training(tu, epochs=None, batch_size=None)
    tu.add_argument(
        "--seed",
        type=int,
        help="one seed of the weights and the batches (= --first-seed K --seeds 1)",
    )
    tu.add_argument(
        "--variant",
        metavar="TAG",
        help="a tag appended to the result file's name (say, for shortened epochs); recorded "
        "in the file",
    )
    tu.add_argument(
        "--folds",
        metavar="A:B",
        help="only folds A..B (1..10; default all): a file of its own, or with --append added "
        "to the 10-fold file (which stays partial until every fold ran)",
    )
    _nproc(tu)
    _device(tu, "with --nproc P and cuda, process r on cuda:r (nccl)")
    # the parser itself, so that Ctrl-C can print the command that resumes the run
    tu.set_defaults(func=_protocol("tu"), command_parser=tu)

    # Table 4: the options from the torch-free table4_protocols; table4 (torch) only runs them
    from benchmarks.paper.table4_protocols import HELP as TABLE4_HELP
    from benchmarks.paper.table4_protocols import add_arguments as table4_arguments

    for dataset, line in TABLE4_HELP.items():
        t4 = bsub.add_parser(dataset, help=line, description=line + ".")
        table4_arguments(t4, dataset)
        t4.set_defaults(func=_protocol("table4"))

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
    brec.add_argument(
        "--rounds",
        type=int,
        metavar="R",
        help="bank-L3: the refinement sentences (up to R rounds of hashed 2-FWL in L3+) "
        "instead of all sentences up to --max-size",
    )
    brec.add_argument(
        "--pairs",
        metavar="A:B,...",
        help="only these pairs: A:B is A..B-1, K one pair, joined by commas (default all 400)",
    )
    brec.add_argument("--seed", type=int, default=0, help="RPC: seed of relabellings and weights")
    brec.add_argument("--epochs", type=int, default=20, help="RPC: epochs per pair (BREC: 20)")
    brec.add_argument(
        "--config",
        default="iso",
        metavar="NAME",
        help="RPC: the model's named configuration (default iso, the paper's; ppgn also has "
        "brec and brec-xavier, BREC's own PPGN with torch's or BREC's initialisation); a row "
        "other than iso is saved as MODEL.NAME",
    )
    brec.add_argument(
        "--batch-size",
        type=int,
        default=16,
        help="RPC: graphs per training batch, two per pair (BREC's script: 16; its PPGN: 32)",
    )
    brec.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        default="float32",
        help="RPC: floating point type of the model and the graphs (BREC's: float32); a "
        "float64 row is saved as MODEL[.NAME].float64",
    )
    brec.add_argument(
        "--input",
        choices=("supports", "pyg"),
        default="supports",
        help="RPC: how the relabellings reach the model: supports (the graph relabelled and "
        "ChebNet's/GNNML3's precomputed inputs carried to it) or pyg (each relabelling built "
        "as a PyG Data and batched by PyG's DataLoader, the path users and BREC's evaluator "
        "take; T² under BREC's plain and S_epsilon rules); a pyg row is saved as MODEL.pyg",
    )
    brec.add_argument(
        "--append",
        action="store_true",
        help="add these pairs to the row's result file already there (same settings, new pairs)",
    )
    output_options(brec)
    brec.set_defaults(func=_protocol("brec"))

    mrg = bsub.add_parser(
        "merge",
        help="add the runs of result files trained apart (--out, another worktree) to one",
        description="Add the runs (seeds; TU folds; BREC pairs) of each FROM result file to "
        "INTO, with --append's checks (same bench, model and settings; nothing twice): the "
        "summary is recomputed, every piece's provenance kept. INTO is rewritten in place (it "
        "only gains runs) unless --out names another file; FROM files are only read.",
    )
    mrg.add_argument("into", metavar="INTO", help="the result file that gains the runs")
    mrg.add_argument("sources", metavar="FROM", nargs="+", help="result files to add, in order")
    mrg.add_argument("--out", metavar="FILE", help="write the merged file here instead of INTO")
    mrg.add_argument("--force", action="store_true", help="replace an existing --out FILE")
    mrg.add_argument(
        "--replace",
        action="store_true",
        help="FROM's runs take the place of INTO's runs of the same seeds, folds or pairs (a "
        "clean re-run of a piece); INTO's pieces wholly replaced move to its 'replaced' list",
    )
    mrg.add_argument("--dry-run", action="store_true", help="check and summarise, write nothing")
    mrg.add_argument("--json", action="store_true", help="print the summary as JSON")
    mrg.set_defaults(func=_merge)

    b.set_defaults(func=lambda args: _missing(b))


def _merge(args: argparse.Namespace) -> int:
    """``matlang bench merge`` (benchmarks/merge.py: no torch needed)."""
    from benchmarks.merge import bench

    return bench(args)


def _protocol(module: str) -> Callable[[argparse.Namespace], int]:
    """``benchmarks.paper.<module>.bench``, imported when the command runs (torch and the
    models load only then)."""

    def run(args: argparse.Namespace) -> int:
        bench: Callable[[argparse.Namespace], int] = importlib.import_module(
            f"benchmarks.paper.{module}"
        ).bench
        if not sys.stderr.isatty():  # progress bars only on a terminal, never into a log
            args.no_progress = True
        from benchmarks.records import AlreadyDone, NoNetwork

        try:
            return bench(args)
        except AlreadyDone as done:  # the same run is there: nothing to do, no error
            print(f"matlang bench {args.bench}: {done}", file=sys.stderr)
            return 0
        except NoNetwork as offline:  # data to download, no internet: said, exit 2
            print(offline, file=sys.stderr)
            return 2
        except KeyboardInterrupt:  # before the seeds started (loading data, targets)
            print(f"matlang bench {args.bench}: interrupted, nothing written", file=sys.stderr)
            return 130

    return run


def _nproc(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--nproc",
        type=_positive,
        default=1,
        help="data-parallel processes (torch.distributed: gloo on CPU, nccl on GPUs); under "
        "torchrun, the processes torchrun started",
    )


def _device(p: argparse.ArgumentParser, how: str) -> None:
    """``--device``: where the models train (checked before any data is read)."""
    p.add_argument(
        "--device",
        default="cpu",
        help=f"train on cpu (default), cuda or cuda:K; {how}. Each run records its device in "
        "the result file; a device this machine lacks is refused before training",
    )


def _positive(text: str) -> int:
    """A positive whole number (``--limit 0`` used to mean no limit: now an error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive number of graphs, got {value}")
    return value


def run_perf(args: argparse.Namespace) -> int:
    """``matlang bench perf``: the same run as ``python -m benchmarks`` (benchmarks/)."""
    from benchmarks.__main__ import main_from_args

    return main_from_args(args)


def _missing(p: argparse.ArgumentParser) -> int:
    p.print_help()
    return 2


#: ``--model`` of the training benches (iso, count, exp-classify, filter).
MODELS = (
    "a reference model (`matlang models`: mlp, gcn, gat, gin, chebnet, ppgn, gnnml1, gnnml3), "
    "a variant of one ({variants}) or a compiled one (compiled, compiled-random)"
)
#: ``--model`` of ``bench count``: also the sentence models (benchmarks.paper.models.SENTENCE).
COUNT_MODELS = (
    "a reference model (`matlang models`: mlp, gcn, gat, gin, chebnet, ppgn, gnnml1, gnnml3), "
    "a variant of one ({variants}), a compiled one (compiled, compiled-random), sentence "
    "(SentenceGNN on I, A, A ⊙ A², A ⊙ A³), sentence-lstsq (its features, a least-squares "
    "readout: --epochs 0) or one that reads exact pattern counts ({counts})"
)
#: ``--model`` of ``bench tu``: no compiled model (a TU label is no sentence), two built from
#: sentences (benchmarks.paper.tu.SENTENCE_MODELS).
TU_MODELS = (
    "a reference model (`matlang models`: mlp, gcn, gat, gin, chebnet, ppgn, gnnml1, gnnml3), "
    "a variant of one ({variants}), sentence (SentenceConv layers on I, A, A ⊙ A², A ⊙ A³), "
    "gin+features (GIN on the node labels and sentence features) or one that reads exact "
    "pattern counts, through log1p ({counts})"
)


def _common(p: argparse.ArgumentParser, *, seeds: int, models: str = MODELS) -> None:
    # The choices are checked when the protocol starts (benchmarks.paper.common.start):
    # listing them here would import torch and every model to build the parser, which made
    # every `matlang` command start in ~2 s. The variants' names come from a torch-free module.
    from benchmarks.paper.model_variants import count_models_help, variants_help

    text = models.format(variants=variants_help(), counts=count_models_help())
    p.add_argument("--model", required=True, type=str.lower, metavar="MODEL", help=text)
    p.add_argument("--seeds", type=int, default=seeds, help=f"number of seeds (default {seeds})")
    p.add_argument("--first-seed", type=int, default=0, help="seeds are first..first+seeds-1")
    output_options(p)


def _training(
    p: argparse.ArgumentParser,
    *,
    epochs: int | None,
    batch_size: int | None,
    stop_below: float | None = 1e-4,
) -> None:
    """Training options; ``None`` defaults come from the protocol (``bench count``)."""
    by_protocol = "the protocol's"
    p.add_argument(
        "--append",
        action="store_true",
        help="add these seeds to the result file already there (same settings, new seeds; "
        "also continues an interrupted, partial file)",
    )
    p.add_argument(
        "--epochs", type=int, default=epochs, help=f"at most (default {epochs or by_protocol})"
    )
    p.add_argument(
        "--batch-size", type=int, default=batch_size, help=f"default {batch_size or by_protocol}"
    )
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument(
        "--lr-schedule",
        choices=("constant", "plateau"),
        default="constant",
        help="constant (the paper's, default) or plateau: halved after 10 epochs without a "
        "better validation loss, down to 1e-5",
    )
    p.add_argument(
        "--weight-decay",
        type=float,
        default=None,
        help="Adam's L2 weight decay (default 0; bench tu: the protocol's, 0 but for the "
        "authors' ENZYMES-cont GNNML3, 1e-4)",
    )
    p.add_argument(
        "--stop-below",
        type=float,
        default=stop_below,
        help="stop below this train loss (default "
        + (by_protocol if stop_below is None else str(stop_below))
        + ")",
    )


def register_report(sub: Any) -> None:
    """Add ``report``: assemble result files into Markdown tables and plots."""
    rep = sub.add_parser(
        "report",
        help="assemble results/*.json into Markdown tables and plots",
        description="Write <out>/report.md and one PNG per paper table from the result files.",
    )
    rep.add_argument("--results", default="results", help="folder of result JSON files")
    rep.add_argument("--out", help="where to write report.md and the PNGs (default: --results)")
    rep.add_argument("--no-plots", action="store_true", help="Markdown only")
    rep.add_argument(
        "--force", action="store_true", help="replace files of those names it did not write"
    )
    rep.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    from benchmarks.paper.report import write_report
    from benchmarks.paper.report_files import describe_scan, scan_results

    results, skipped = scan_results(args.results)  # what it reads and skips, said first
    for line in describe_scan(args.results, results, skipped):
        print(line, file=sys.stderr)
    written = write_report(args.results, args.out, plots=not args.no_plots, force=args.force)
    for path in written:
        print(path)
    from benchmarks.paper.quoted import render_readmes

    for path in render_readmes(args.results, args.out):  # results/README.md's rendered tables
        print(path)
    return 0
