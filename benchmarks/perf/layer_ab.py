"""SentenceConv / SentenceGNN of an earlier commit against this tree's, in one process, beside
PyG's GIN: on a shared machine whose load moves between runs, the ratio of two versions
measured call by call (or epoch by epoch) in one process is what stays put.

The earlier commit's ``compiler/layers/conv.py`` and ``stage.py`` are read with ``git show``
into a temporary folder and imported as modules of their own (their ``torch.library`` ops
renamed ``matlang_old::``; everything else they import is this tree's). Contestants are
interleaved in shuffled rounds, one thread; the report gives min and median times, ratios to
GIN of both, and the median over rounds of new / old::

    python -m benchmarks.perf.layer_ab layer --base b036d91 --rounds 60 [--json out.json]
    python -m benchmarks.perf.layer_ab epoch --base b036d91 --rounds 5 [--json out.json]

``layer``: ``SentenceConv(16, 16, ["I", "A", "A ⊙ A²"])`` forward + backward on a new
``edge_index`` every call (128 × ER(25, 10), as :mod:`benchmarks.perf.fresh_layer`) against
``GINConv(Linear(16, 16))``; ``epoch``: a training epoch on ENZYMES as
:mod:`benchmarks.perf.sgnn_epoch` (its ``sgnn`` and ``gin`` contestants).
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import torch  # noqa: E402
from torch import nn  # noqa: E402

SUPPORTS = ["I", "A", "A ⊙ A²"]


def _old_conv(base: str, folder: Path) -> Any:
    """The ``conv`` module of commit ``base``, importable beside this tree's."""
    root = Path(__file__).resolve().parents[2]
    for name in ("stage", "conv"):
        text = subprocess.run(
            ["git", "show", f"{base}:compiler/layers/{name}.py"],
            cwd=root,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        text = text.replace('"matlang::', '"matlang_old::').replace(
            "from matlang.compiler.layers.stage import", "from _ab_old_stage import"
        )
        (folder / f"_ab_old_{name}.py").write_text(text, encoding="utf-8")
    sys.path.insert(0, str(folder))
    return importlib.import_module("_ab_old_conv")


def _layer(old: Any, rounds: int) -> dict[str, list[float]]:
    from torch_geometric.nn import GINConv

    from benchmarks.perf.fresh_layer import _batch
    from matlang.nn import SentenceConv

    ei, batch = _batch(128, 25)
    x = torch.randn(batch.numel(), 16)
    layers: dict[str, nn.Module] = {
        "new": SentenceConv(16, 16, SUPPORTS),
        "old": old.SentenceConv(16, 16, SUPPORTS),
        "gin": GINConv(nn.Linear(16, 16), train_eps=True),
    }
    times: dict[str, list[float]] = {k: [] for k in layers}
    for r in range(rounds + 3):
        order = list(layers)
        random.shuffle(order)
        for k in order:
            e = ei.clone()  # a new batch: nothing remembered
            xi = x.detach().requires_grad_(True)
            t = time.perf_counter()
            out = layers[k](xi, e) if k == "gin" else layers[k](xi, e, batch)
            out.sum().backward()
            if r >= 3:
                times[k].append(time.perf_counter() - t)
    return times


def _epoch(old: Any, rounds: int) -> dict[str, list[float]]:
    from torch_geometric.loader import DataLoader

    from benchmarks.perf.sgnn_epoch import _GIN
    from matlang.compiler.layers import model as model_module
    from matlang.runtime.datasets import load_tu
    from matlang.runtime.graphblas import _gb
    from matlang.runtime.pyg import pyg_dataset

    _gb()
    ds = pyg_dataset(load_tu("enzymes"))
    classes = int(ds._data.y.max()) + 1
    models: dict[str, nn.Module] = {}
    torch.manual_seed(0)
    models["new"] = model_module.SentenceGNN(ds.num_features, classes, SUPPORTS)
    # the same model around the old layer
    with mock.patch.object(model_module, "SentenceConv", old.SentenceConv):
        torch.manual_seed(0)
        models["old"] = model_module.SentenceGNN(ds.num_features, classes, SUPPORTS)
    torch.manual_seed(0)
    models["gin"] = _GIN(ds.num_features, classes)
    opts = {k: torch.optim.Adam(m.parameters(), lr=1e-3) for k, m in models.items()}
    loaders = {
        k: DataLoader(ds, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(0))
        for k in models
    }

    def epoch(k: str) -> float:
        m, opt = models[k], opts[k]
        t = time.perf_counter()
        for b in loaders[k]:
            opt.zero_grad()
            nn.functional.cross_entropy(m(b), b.y).backward()
            opt.step()
        return time.perf_counter() - t

    for k in models:  # epoch 1: supports computed and filed
        epoch(k)
    times: dict[str, list[float]] = {k: [] for k in models}
    for _ in range(rounds):
        order = list(models)
        random.shuffle(order)
        for k in order:
            times[k].append(epoch(k))
    return times


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=("layer", "epoch"))
    p.add_argument("--base", default="b036d91", help="the earlier commit")
    p.add_argument("--rounds", type=int, default=None, help="60 (layer) or 5 (epoch)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    rounds = args.rounds or (60 if args.what == "layer" else 5)
    with tempfile.TemporaryDirectory() as folder:
        old = _old_conv(args.base, Path(folder))
        times = (_layer if args.what == "layer" else _epoch)(old, rounds)
    mins = {k: min(v) for k, v in times.items()}
    meds = {k: statistics.median(v) for k, v in times.items()}
    r = {
        "what": args.what,
        "base": args.base,
        "rounds": rounds,
        "threads": torch.get_num_threads(),
        "min_s": mins,
        "median_s": meds,
        "ratio_gin_min": {k: mins[k] / mins["gin"] for k in ("new", "old")},
        "ratio_gin_median": {k: meds[k] / meds["gin"] for k in ("new", "old")},
        "new_over_old_median": statistics.median(a / b for a, b in zip(times["new"], times["old"])),
        "load": os.getloadavg()[0],
        "times_s": times,
    }
    print(
        f"{args.what}, {rounds} rounds: new {meds['new'] * 1e3:.2f} ms, {args.base} "
        f"{meds['old'] * 1e3:.2f} ms, GIN {meds['gin'] * 1e3:.2f} ms (medians): new / old "
        f"{r['new_over_old_median']:.2f}; / GIN new {r['ratio_gin_median']['new']:.2f}× "
        f"(min {r['ratio_gin_min']['new']:.2f}×), {args.base} "
        f"{r['ratio_gin_median']['old']:.2f}× (min {r['ratio_gin_min']['old']:.2f}×), "
        f"load {r['load']:.1f}"
    )
    if args.json:
        from benchmarks.records import write_json

        write_json(Path(args.json), r)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
