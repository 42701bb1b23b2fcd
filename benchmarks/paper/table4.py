"""Table 4 of the paper: ZINC-12K (test MAE) and MNIST-75 (test accuracy), through PyG's
``ZINC(subset=True)`` and ``MNISTSuperpixels`` loaders.

The protocols are the authors' scripts' (``Zinc12k.py``, ``mnist75.py`` of
balcilar/gnn-matlang, read to learn their settings; :data:`PROTOCOLS`):

- **zinc**: PyG's 10,000 / 1,000 / 1,000 split of ZINC-12K, node features the one-hot atom
  type, batch 64, Adam lr 1e-3, at most 400 epochs, the sum of absolute errors per batch;
  test MAE at the epoch of lowest validation MAE.
- **mnist75**: MNISTSuperpixels' first 55,000 training graphs to train, the last 5,000 to
  validate, its 10,000 test graphs; node features the superpixel intensity and the node degree,
  each divided by its maximum over the training graphs; batch 64, Adam lr 1e-3, at most 3,000
  epochs, cross-entropy summed per batch; test accuracy at the epoch of best validation loss
  (the authors select on validation accuracy).

Edges become a dense symmetric 0/1 adjacency (ZINC's bond types are not read, as in the
authors' models; MNIST's k-NN edges are symmetrised). The datasets download on first use
(``--root``, default ``data/pyg``); PyG (``pip install torch_geometric``) is needed only for
the real data. Anything with ``x``, ``edge_index`` and ``y`` per graph goes through the same
code (:func:`to_graphs`): the tests use a small synthetic stand-in in that format.

Run it as ``matlang bench zinc --model gnnml3`` (or ``python -m benchmarks.paper.table4 zinc
--model gnnml3``; ``--help``). The settings and options live in the torch-free
:mod:`benchmarks.paper.table4_protocols`.

Table 3's last column trains here too (``matlang bench bandclass``): the authors'
``freqclass.py`` on graphs :mod:`benchmarks.paper.bandclass` generates (their file is not
published), the node signal the one feature, batch 64, Adam lr 1e-3, at most 3,000 epochs,
test accuracy at the epoch of lowest validation loss; two logits and cross-entropy where the
authors have one logit and binary cross-entropy (the same model family and loss).
"""

from __future__ import annotations

import argparse
import socket
import sys
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from benchmarks.paper.table4_protocols import (
    HELP,
    MNIST_CLASSES,
    PAPER_TABLE4,
    PROTOCOLS,
    ZINC_ATOM_TYPES,
    Table4Protocol,
    add_arguments,
)
from benchmarks.paper.train import GraphSet, SeedRun, TrainConfig, median_metric, run_seeds
from benchmarks.records import NoNetwork
from matlang.errors import DataError, MatlangError
from matlang.graphs import Graph
from matlang.runtime.preprocess import PreprocessCache

# --------------------------------------------------------------------------- data


def offline_message(dataset: str, url: str, folder: Path) -> str:
    name = "ZINC" if dataset == "zinc" else "MNIST-75 (MNISTSuperpixels)"
    host = urllib.parse.urlsplit(url).hostname
    return (
        f"matlang bench {dataset}: PyG downloads {name} from the internet ({host}); this "
        f"machine has none. On a machine that has, the same command downloads it into "
        f"{folder}/raw (--root sets where); copy that folder here and run it again"
    )


def check_reachable(dataset: str, url: str, raw: Path, timeout: float = 5.0) -> None:
    """Before PyG starts a download (it prints "Downloading ..." and fails deep in urlopen):
    when ``raw`` holds no file yet and ``url``'s host cannot be reached, :class:`NoNetwork`."""
    if raw.is_dir() and any(raw.iterdir()):
        return  # downloaded already: PyG reads it
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname or "", port), timeout=timeout).close()
    except OSError:
        raise NoNetwork(offline_message(dataset, url, raw.parent)) from None


def pyg_splits(dataset: str, root: str | Path) -> dict[str, Sequence[Any]]:
    """``{"train", "val", "test"}``: the PyG graphs of ``dataset`` (downloaded to ``root`` on
    first use), split as the authors' scripts split them."""
    try:
        from torch_geometric.datasets import ZINC, MNISTSuperpixels
    except ImportError:
        raise DataError(
            f"matlang bench {dataset}: the data comes through PyG's loaders; install "
            "torch_geometric (pip install torch_geometric), which downloads it on first use"
        ) from None
    root = Path(root)
    folder = root / ("ZINC" if dataset == "zinc" else "MNIST")
    url = ZINC.url if dataset == "zinc" else MNISTSuperpixels.url
    check_reachable(dataset, url, folder / "raw")
    try:
        if dataset == "zinc":
            return {
                s: ZINC(str(root / "ZINC"), subset=True, split=s) for s in ("train", "val", "test")
            }
        if dataset == "mnist75":
            train = MNISTSuperpixels(str(root / "MNIST"), train=True)
            return {
                "train": train[:55000],
                "val": train[55000:60000],
                "test": MNISTSuperpixels(str(root / "MNIST"), train=False),
            }
    except (OSError, RuntimeError) as e:  # no network, a broken download
        import urllib.error

        if isinstance(e, urllib.error.URLError):  # the network went while downloading
            raise NoNetwork(offline_message(dataset, url, folder)) from None
        raise DataError(f"matlang bench {dataset}: cannot load the data under {root}: {e}") from e
    raise MatlangError(f"unknown Table 4 dataset {dataset!r}; known: {', '.join(PROTOCOLS)}")


def dataset_splits(
    dataset: str, args: argparse.Namespace
) -> tuple[Mapping[str, Sequence[Any]], str]:
    """The splits of ``dataset`` as the command line names them, and where they came from:
    Table 3's ``bandclass`` generated (:mod:`benchmarks.paper.bandclass`, ``--graphs``,
    ``--data-seed``), the others through PyG's loaders (``--root``)."""
    if dataset == "bandclass":
        from benchmarks.paper import bandclass

        splits = bandclass.bandclass_splits(args.graphs, args.data_seed, cache=bandclass.CACHE)
        return splits, "generated (benchmarks.paper.bandclass)"
    return pyg_splits(dataset, args.root), "PyG"


def _array(v: Any) -> np.ndarray:
    return v.detach().cpu().numpy() if isinstance(v, Tensor) else np.asarray(v)


def adjacency(edge_index: Any, num_nodes: int, where: str) -> np.ndarray:
    """The symmetric 0/1 adjacency of a PyG ``edge_index`` (self-loops dropped)."""
    ei = _array(edge_index).astype(np.int64, copy=False)
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise DataError(f"{where}: edge_index must have shape (2, E), got {ei.shape}")
    if ei.size and (ei.min() < 0 or ei.max() >= num_nodes):
        raise DataError(f"{where}: edge_index names a node outside 0..{num_nodes - 1}")
    a = np.zeros((num_nodes, num_nodes))
    a[ei[0], ei[1]] = 1.0
    a = np.maximum(a, a.T)
    np.fill_diagonal(a, 0.0)
    return a


def to_graphs(
    items: Sequence[Any], dataset: str, *, scale: np.ndarray | None = None
) -> tuple[list[Graph], Tensor, np.ndarray]:
    """Graphs, targets and the feature scale of PyG-format items (``x``, ``edge_index``,
    ``y`` each): ZINC's ``x`` (atom indices) one-hot, ``y`` the regression target; MNIST's
    ``[intensity, degree]`` divided by ``scale`` (default: the columns' maxima over ``items``,
    the training set's, passed on to the other splits), ``y`` the class."""
    graphs: list[Graph] = []
    ys: list[float] = []
    for k, item in enumerate(items):
        where = f"{dataset} graph {k}"
        x = _array(item.x)
        n = int(x.shape[0])
        a = adjacency(item.edge_index, n, where)
        if dataset == "zinc":
            atoms = x.reshape(n, -1)[:, 0].astype(np.int64)
            if atoms.size and (atoms.min() < 0 or atoms.max() >= ZINC_ATOM_TYPES):
                raise DataError(f"{where}: atom types must be in 0..{ZINC_ATOM_TYPES - 1}")
            feats = np.eye(ZINC_ATOM_TYPES)[atoms]
        elif dataset == "bandclass":  # the signal alone
            feats = x.reshape(n, -1)[:, :1].astype(np.float64)
        else:
            feats = np.concatenate(
                [x.reshape(n, -1)[:, :1].astype(np.float64), a.sum(1)[:, None]], 1
            )
        graphs.append(Graph(a, f"{dataset}-{k}", feats))
        ys.append(float(_array(item.y).reshape(-1)[0]))
    if dataset == "mnist75":
        if scale is None:
            stacked = np.concatenate([np.asarray(g.x) for g in graphs], 0)
            scale = np.where(stacked.max(0) > 0, stacked.max(0), 1.0)
        graphs = [Graph(g.adjacency, g.name, np.asarray(g.x) / scale) for g in graphs]
    y = torch.tensor(ys, dtype=torch.float32).reshape(-1, 1)
    if PROTOCOLS[dataset].metric == "accuracy":
        y = y.long()
    return graphs, y, np.ones(1) if scale is None else np.asarray(scale)


# --------------------------------------------------------------------------- training


def abs_error(pred: Tensor, y: Tensor) -> Tensor:
    """The sum of absolute errors (the authors' ``l1_loss(reduction='sum')``)."""
    return (pred - y).abs().sum()


def cross_entropy(pred: Tensor, y: Tensor) -> Tensor:
    """Cross-entropy of the logits, summed (the authors' ``nll_loss`` of ``log_softmax``)."""
    return torch.nn.functional.cross_entropy(pred, y.reshape(-1).long(), reduction="sum")


@dataclass
class Table4Result:
    """The test metric per seed (selected on validation) and its median."""

    median: float
    runs: list[SeedRun]
    model: dict[str, Any]
    sizes: dict[str, int]


def table4(
    splits: Mapping[str, Sequence[Any]],
    dataset: str,
    model: str,
    *,
    seeds: Sequence[int] = range(1),
    train: TrainConfig | None = None,
    limit: int | None = None,
    on_seed: Callable[[Table4Result], None] | None = None,
) -> Table4Result:
    """Train ``model`` on ``splits`` (PyG-format items, :func:`pyg_splits`) under
    ``dataset``'s protocol; ``limit`` keeps the first graphs of each split."""
    from benchmarks.paper.models import make_model

    proto = PROTOCOLS[dataset]
    for s in ("train", "val", "test"):
        if not len(splits.get(s, ())):
            raise DataError(f"matlang bench {dataset}: the {s} split is empty")
    cut = {s: list(splits[s])[:limit] for s in ("train", "val", "test")}
    tr_g, tr_y, scale = to_graphs(cut["train"], dataset)
    sets = {"train": GraphSet(tr_g, tr_y)}
    for s in ("val", "test"):
        g, y, _ = to_graphs(cut[s], dataset, scale=scale if dataset == "mnist75" else None)
        sets[s] = GraphSet(g, y)
    cfg = train or TrainConfig(epochs=proto.epochs, batch_size=proto.batch_size, lr=proto.lr)
    cfg = replace(cfg, stop_below=0.0) if cfg.stop_below else cfg
    in_dim = int(np.asarray(tr_g[0].x).shape[1])
    cache = PreprocessCache(max_entries=None)
    loss = abs_error if proto.metric == "mae" else cross_entropy
    sizes = {s: len(v) for s, v in sets.items()}

    def score(net: torch.nn.Module) -> float:
        from benchmarks.paper.train import predict

        test = sets["test"]
        out = predict(net, test, cfg.eval_batch_size)
        if proto.metric == "mae":
            return float((out - test.y).abs().mean())
        return float((out.argmax(1) == test.y.reshape(-1)).float().mean())

    def result(runs: list[SeedRun], info: dict[str, Any]) -> Table4Result:
        return Table4Result(median_metric(runs), runs, info, sizes)

    runs, info = run_seeds(
        seeds,
        lambda: make_model(model, in_dim, proto.out_dim, protocol=dataset, cache=cache),
        sets["train"],
        sets["val"],
        loss,
        score,
        cfg,
        desc=f"{dataset} {model}",
        on_seed=None if on_seed is None else lambda r, i: on_seed(result(r, i)),
    )
    return result(runs, info)


# --------------------------------------------------------------------------- the command


def bench(args: argparse.Namespace, splits: Mapping[str, Sequence[Any]] | None = None) -> int:
    """``matlang bench zinc|mnist75`` (``splits``: PyG-format graphs instead of the download,
    for tests): train every seed, save each as it finishes."""
    from benchmarks.paper.common import runs_record, start, train_config, train_record, variant
    from benchmarks.records import ResultFile, result_name

    dataset = args.bench
    proto = PROTOCOLS[dataset]
    seeds = start(args)
    config = {
        "protocol": f"the authors' {proto.paper_script}: "
        + {
            "zinc": "PyG ZINC(subset=True) 10,000/1,000/1,000, one-hot atom types, L1 loss "
            "summed per batch; test MAE at the epoch of lowest validation loss",
            "mnist75": "MNISTSuperpixels train[:55000] / train[55000:] / test, [intensity, "
            "degree] divided by the training maxima, cross-entropy summed per batch; test "
            "accuracy at the epoch of lowest validation loss",
            "bandclass": "planar graphs generated by the authors' procedure "
            "(benchmarks.paper.bandclass), split 3:1:1 in order, the node signal as the feature, "
            "two-class cross-entropy summed per batch (the authors: one logit, binary "
            "cross-entropy); test accuracy at the epoch of lowest validation loss",
        }[dataset],
        **train_record(args),
        "selection": "epoch of lowest validation loss",
        "limit": args.limit,
    }
    tags: list[str] = []
    if dataset == "bandclass":
        from benchmarks.paper.bandclass import GRAPHS

        config["data"] = {"graphs": args.graphs, "data_seed": args.data_seed}
        # another draw or size is not the protocol's dataset: a file of its own
        tags += [f"graphs{args.graphs}"] if args.graphs != GRAPHS else []
        tags += [f"draw{args.data_seed}"] if args.data_seed else []
    name = result_name(dataset, dataset, None, args.model, variant(args.limit, tags=tags))
    out = ResultFile(args, name, config, seeds)
    data, source = (splits, "given") if splits is not None else dataset_splits(dataset, args)
    metric = "test_mae" if proto.metric == "mae" else "test_accuracy"

    def record(res: Table4Result) -> dict[str, Any]:
        return {
            "bench": dataset,
            "dataset": dataset,
            "model": args.model,
            f"median_{metric}": res.median,
            "per_seed": [r.metric for r in res.runs],
            "seeds": [r.seed for r in res.runs],
            "runs": runs_record(res.runs, metric),
            "data": {"sizes": res.sizes, "source": source},
            "config": config,
            "model_info": res.model,
        }

    def run(save: Callable[[dict[str, Any]], Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        res = table4(
            data,
            dataset,
            args.model,
            seeds=seeds,
            train=train_config(args),
            limit=args.limit,
            on_seed=lambda partial: save(record(partial)),
        )
        return record(res), {f"median_{metric}": res.median, "per_seed": record(res)["per_seed"]}

    return out.run(run)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.paper.table4", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="bench", required=True)
    for dataset in PROTOCOLS:
        add_arguments(sub.add_parser(dataset, help=HELP[dataset]), dataset)
    args = parser.parse_args(argv)
    try:
        return bench(args)
    except MatlangError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


__all__ = [
    "MNIST_CLASSES",
    "PAPER_TABLE4",
    "PROTOCOLS",
    "ZINC_ATOM_TYPES",
    "Table4Protocol",
    "Table4Result",
    "add_arguments",
    "bench",
    "main",
    "pyg_splits",
    "table4",
    "to_graphs",
]

if __name__ == "__main__":
    sys.exit(main())
