"""SentenceGNN against PyG's GIN, a training epoch each, as users train them: a TU dataset as a
PyG ``InMemoryDataset``, PyG's shuffling ``DataLoader``, Adam, cross-entropy, one thread.

Three contestants, interleaved epoch by epoch in one process:

* ``sgnn``: ``SentenceGNN(in, C, ["I", "A", "A ⊙ A²"], hidden=32, layers=3)`` (the defaults:
  BatchNorm, the product term) on a new PyG batch every step;
* ``sgnn.reused``: the same model on batches collated once and replayed every epoch (the
  batch memo serves the supports: the model without any per-batch work of its own); its
  loader still collates a batch per step, discarded, so that all three pay PyG's collation;
* ``gin``: 3 × ``GINConv(MLP(a → 32 → 32))``, the same readout (sum-pool of every layer,
  concatenated) and head (``Linear(96, 32)``, ReLU, ``Linear(32, C)``).

Epoch 1 (caches empty: every support computed, the sentences compiled) is timed per model in
turn, in a process that has already imported python-graphblas (its first use costs ~0.3 s of
imports, once per process, which would land in whichever model runs first); epochs 2..
interleaved; the ratios are of the minimum epoch. ``sgnn / sgnn.reused`` is what a new batch
still costs over a seen one::

    python -m benchmarks.perf.sgnn_epoch --dataset enzymes --epochs 6 [--json out.json]

``--variants`` adds SentenceGNNs that do less dense arithmetic than the default, to tell the
model's arithmetic from the per-call cost of the machinery (each on a new PyG batch per step,
as ``sgnn``): ``sgnn.no-product`` (``product=False``), ``sgnn.no-norm`` (``norm=None``) and
``sgnn.IA`` (``["I", "A"]``, ``product=False``, ``norm=None``: two ``d × 32`` dense products
a layer, as GIN's MLP, and one sparse product, as GIN's sum). ``dense_macs_per_node`` gives
each model's multiply-adds of its dense layer products per node (forward; the head's too).

``--variants`` also adds ``torch.floor``: the default SentenceGNN's arithmetic written in plain
torch, without matlang — per layer ``x W_I + (A x) W_A + (S x) W_S + b + (x W_a) ⊙ (x W_b)``
with ``S = A ⊙ A²`` (``torch.sparse.mm`` on CSR matrices made by scipy before the first epoch,
untimed), then batch norm and ReLU, the same readout and head — on the replayed batches of
``sgnn.reused``: what this arithmetic costs written the plain way, with no graph constant to
compute. ``sgnn.reused`` against it is the machinery's own cost on seen batches.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import torch  # noqa: E402
from torch import nn  # noqa: E402

SUPPORTS = ["I", "A", "A ⊙ A²"]


class _GIN(nn.Module):
    """PyG GIN with SentenceGNN's readout and head."""

    def __init__(self, in_dim: int, out_dim: int, hidden: int = 32, layers: int = 3) -> None:
        from torch_geometric.nn import GINConv

        super().__init__()
        dims = [in_dim] + [hidden] * layers
        self.convs = nn.ModuleList(
            GINConv(nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(b, b)))
            for a, b in zip(dims[:-1], dims[1:])
        )
        self.head = nn.Sequential(
            nn.Linear(hidden * layers, hidden), nn.ReLU(), nn.Linear(hidden, out_dim)
        )

    def forward(self, data: Any) -> torch.Tensor:
        from torch_geometric.nn import global_add_pool

        h, pooled = data.x, []
        for conv in self.convs:
            h = conv(h, data.edge_index).relu()
            pooled.append(global_add_pool(h, data.batch, size=data.num_graphs))
        return self.head(torch.cat(pooled, 1))  # type: ignore[no-any-return]


class _FloorLayer(nn.Module):
    """One layer of :class:`_Floor`, its parameters named as SentenceConv's (``weight``
    ``(3, d, out)``: ``I``, ``A``, ``A ⊙ A²``; the product term's two factors; the bias)."""

    def __init__(self, d: int, out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(3, d, out))
        for w in self.weight.data:
            nn.init.xavier_uniform_(w)
        self.product_weight_a = nn.Parameter(nn.init.xavier_uniform_(torch.empty(d, out)))
        self.product_weight_b = nn.Parameter(nn.init.xavier_uniform_(torch.empty(d, out)))
        self.bias = nn.Parameter(torch.zeros(out))

    def forward(self, h: torch.Tensor, a: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        w = self.weight
        out = h @ w[0] + torch.sparse.mm(a, h) @ w[1] + torch.sparse.mm(s, h) @ w[2] + self.bias
        return out + (h @ self.product_weight_a) * (h @ self.product_weight_b)


class _Floor(nn.Module):
    """The default SentenceGNN's arithmetic in plain torch (see the module doc): the supports
    ``A`` and ``A ⊙ A²`` of each batch given as torch CSR matrices."""

    def __init__(self, in_dim: int, out_dim: int, hidden: int = 32, layers: int = 3) -> None:
        super().__init__()
        dims = [in_dim] + [hidden] * layers
        self.convs = nn.ModuleList(_FloorLayer(a, b) for a, b in zip(dims, dims[1:]))
        self.norms = nn.ModuleList(nn.BatchNorm1d(hidden) for _ in range(layers))
        self.head = nn.Sequential(  # SentenceGNN's head (its dropout 0 by default)
            nn.Linear(hidden * layers, hidden),
            nn.ReLU(),
            nn.Dropout(0.0),
            nn.Linear(hidden, out_dim),
        )

    def forward(self, data: Any, a: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        h, pooled = data.x, []
        for conv, norm in zip(self.convs, self.norms):
            h = torch.relu(norm(conv(h, a, s)))
            pooled.append(h.new_zeros(data.num_graphs, h.shape[1]).index_add_(0, data.batch, h))
        return self.head(torch.cat(pooled, 1))  # type: ignore[no-any-return]


def _floor_supports(data: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """``A`` and ``A ⊙ A²`` of a PyG batch as float32 torch CSR matrices (scipy)."""
    import numpy as np
    import scipy.sparse as sp

    from matlang.runtime.sparse import csr_matrix

    n = int(data.num_nodes)
    r, c = data.edge_index.numpy()
    adj = sp.csr_matrix((np.ones(r.size, dtype=np.float32), (r, c)), shape=(n, n))
    adj.sum_duplicates()
    common = (adj @ adj).multiply(adj).tocsr()

    def csr(m: Any) -> torch.Tensor:
        m.sort_indices()
        return csr_matrix(  # (scipy's canonical CSR: no check, no beta-state warning)
            torch.from_numpy(m.indptr.astype(np.int64)),
            torch.from_numpy(m.indices.astype(np.int64)),
            torch.from_numpy(m.data.astype(np.float32)),
            (n, n),
        )

    return csr(adj), csr(common)


def _epoch(model: nn.Module, batches: Callable[[], Any]) -> Callable[[], float]:
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def run() -> float:
        model.train()
        t = time.perf_counter()
        for b in batches():
            opt.zero_grad()
            args = b if isinstance(b, tuple) else (b,)  # (the floor's: the batch, A, A ⊙ A²)
            nn.functional.cross_entropy(model(*args), args[0].y).backward()
            opt.step()
        return time.perf_counter() - t

    return run


#: the extra contestants of ``--variants``: SentenceGNN's keyword arguments
VARIANTS: dict[str, dict[str, Any]] = {
    "sgnn.no-product": {"product": False},
    "sgnn.no-norm": {"norm": None},
    "sgnn.IA": {"sentences": ["I", "A"], "product": False, "norm": None},
}


def dense_macs_per_node(model: nn.Module) -> int:
    """Multiply-adds per node of a model's dense node-level products in a forward pass: every
    ``nn.Linear`` and every SentenceConv weight (one ``d × out`` product per support and per
    product-term factor) outside the head (which runs per graph), from the parameters'
    shapes."""
    head = getattr(model, "head", None)
    skip = {id(m) for m in head.modules()} if isinstance(head, nn.Module) else set()
    total = 0
    for m in model.modules():
        if id(m) in skip:
            continue
        if isinstance(m, nn.Linear):
            total += m.in_features * m.out_features
        for name in ("weight", "product_weight_a", "product_weight_b"):
            w = m._parameters.get(name) if not isinstance(m, nn.Linear) else None
            if w is not None and w.dim() >= 2:
                total += w.numel()
    return total


def measure(
    dataset: str, epochs: int, batch_size: int = 32, seed: int = 0, variants: bool = False
) -> dict[str, Any]:
    """Epoch times of the three contestants, and with ``variants`` of :data:`VARIANTS` (see
    the module doc)."""
    from matlang.compiler.layers.model import SentenceGNN
    from matlang.compiler.layers.stage import stages_of
    from matlang.runtime.datasets import load_tu
    from matlang.runtime.graphblas import _gb
    from matlang.runtime.pyg import pyg_dataset

    _gb()  # python-graphblas's one-time imports, outside every timed epoch
    from torch_geometric.loader import DataLoader

    ds = pyg_dataset(load_tu(dataset))
    classes = int(ds._data.y.max()) + 1
    models: dict[str, nn.Module] = {}
    extra = VARIANTS if variants else {}
    for name in ("sgnn", "sgnn.reused", "gin", *extra):
        torch.manual_seed(seed)
        kw = dict(extra.get(name, {}))
        sentences = kw.pop("sentences", SUPPORTS)
        models[name] = (
            _GIN(ds.num_features, classes)
            if name == "gin"
            else SentenceGNN(ds.num_features, classes, sentences, hidden=32, layers=3, **kw)
        )
    loaders = {
        k: DataLoader(
            ds, batch_size=batch_size, shuffle=True, generator=torch.Generator().manual_seed(seed)
        )
        for k in models
    }
    fixed = list(loaders["sgnn.reused"])  # collated once, replayed: every batch seen
    runs = {
        "sgnn": _epoch(models["sgnn"], lambda: loaders["sgnn"]),
        # collate as the others do (the batch is dropped), then replay the seen batch
        "sgnn.reused": _epoch(
            models["sgnn.reused"], lambda: (fixed[i] for i, _ in enumerate(loaders["sgnn.reused"]))
        ),
        "gin": _epoch(models["gin"], lambda: loaders["gin"]),
    }
    for name in extra:
        runs[name] = _epoch(models[name], lambda name=name: loaders[name])  # type: ignore[misc]
    if variants:
        torch.manual_seed(seed)
        models["torch.floor"] = _Floor(ds.num_features, classes)
        floor = [(b, *_floor_supports(b)) for b in fixed]  # made before any epoch, untimed
        loaders["torch.floor"] = DataLoader(
            ds, batch_size=batch_size, shuffle=True, generator=torch.Generator().manual_seed(seed)
        )
        runs["torch.floor"] = _epoch(
            models["torch.floor"],
            lambda: (floor[i] for i, _ in enumerate(loaders["torch.floor"])),
        )
    first: dict[str, float] = {}
    for k, run in runs.items():
        for st in stages_of(models[k]):  # each model's first epoch starts without any
            if st.cache is not None:  # cached support (the two SentenceGNNs share stages)
                st.cache.clear()
        first[k] = run()
    later: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(epochs - 1):
        for k, run in runs.items():
            later[k].append(run())
    best = {k: min(v) for k, v in later.items()}
    params = {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()}
    macs = {k: dense_macs_per_node(m) for k, m in models.items()}
    return {
        "dataset": dataset,
        "graphs": len(ds),
        "batch_size": batch_size,
        "epochs": epochs,
        "threads": torch.get_num_threads(),
        "params": params,
        "dense_macs_per_node": macs,
        "ratio_gin_each": {k: v / best["gin"] for k, v in best.items()},
        "first_epoch_s": first,
        "later_min_s": best,
        "later_s": later,
        "ratio_gin": best["sgnn"] / best["gin"],
        "ratio_gin_first": first["sgnn"] / first["gin"],
        "ratio_reused_gin": best["sgnn.reused"] / best["gin"],
        "new_over_reused": best["sgnn"] / best["sgnn.reused"],
        "load": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="enzymes")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--json", default=None, help="also write the result as JSON here")
    p.add_argument("--variants", action="store_true", help="add the lighter SentenceGNNs")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    r = measure(args.dataset, max(2, args.epochs), args.batch_size, variants=args.variants)
    ms = {k: f"{v * 1e3:.0f} ms" for k, v in r["later_min_s"].items()}
    print(
        f"{r['dataset']} ({r['graphs']} graphs, batch {r['batch_size']}), epochs 2-{r['epochs']}"
        f" min: SentenceGNN {ms['sgnn']} (seen batches replayed {ms['sgnn.reused']}), GIN "
        f"{ms['gin']}: {r['ratio_gin']:.2f}x GIN (epoch 1 {r['ratio_gin_first']:.2f}x; replayed "
        f"{r['ratio_reused_gin']:.2f}x; new / replayed {r['new_over_reused']:.2f}), "
        f"load {r['load']:.1f}"
    )
    if args.variants:
        f = r["later_min_s"]["torch.floor"]
        print(
            f"  torch.floor (the default's arithmetic in plain torch, batches replayed): "
            f"{f * 1e3:.0f} ms, {r['ratio_gin_each']['torch.floor']:.2f}x GIN; SentenceGNN on "
            f"the same replayed batches {r['later_min_s']['sgnn.reused'] / f:.2f}x it"
        )
    for k in VARIANTS if args.variants else ():
        print(
            f"  {k}: {r['later_min_s'][k] * 1e3:.0f} ms, {r['ratio_gin_each'][k]:.2f}x GIN "
            f"({r['dense_macs_per_node'][k]} dense multiply-adds a node, GIN "
            f"{r['dense_macs_per_node']['gin']}, the default {r['dense_macs_per_node']['sgnn']})"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(r, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
