"""The same graph classifier written with PyG's convolutions and with ``SentenceConv``, trained
side by side on MUTAG (one of the paper's 10 folds); prints a table of epoch times and
accuracies.

    python examples/pyg_side_by_side.py                  # 20 epochs, fold 1, CPU and GPU
    python examples/pyg_side_by_side.py --devices cpu    # the CPU column only

The table has a column of epoch times per device: the CPU, and the GPU when CUDA is available
(otherwise the table says "no CUDA device here"); accuracies are those of the first device.

Every model is the same architecture — 3 convolutions of width 32 with ReLU, a sum of every
layer's output per graph (as GIN's readout), a two-layer MLP head — and every convolution is
called the PyG way, ``conv(h, edge_index)``. Only the convolution changes:

* ``GraphConv`` (PyG): ``x W_root + (A x) W_rel + b``;
* ``SentenceConv [I, A]``: the same function written as two sentences, the supports ``I`` and
  ``A`` (with the same weights it gives GraphConv's output: the tests check it);
* ``GINConv`` (PyG): ``MLP((1 + ε) x + A x)``;
* ``SentenceConv [I, A, A ⊙ A²]``: adds common neighbours on the edges, an L3 support (beyond
  1-WL), normalised per graph by its largest row sum (``normalize="max_row_sum"``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from matlang.compiler.layers.conv import SentenceConv
from matlang.runtime.datasets import load_tu
from matlang.runtime.pyg import graph_to_data


class Net(nn.Module):
    """``layers`` convolutions made by ``make(in, out)``, ReLU, a sum readout of every layer,
    an MLP head."""

    def __init__(
        self, make: Callable[[int, int], nn.Module], d: int, classes: int, hidden: int, layers: int
    ) -> None:
        super().__init__()
        widths = [d] + [hidden] * layers
        self.convs = nn.ModuleList(make(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.head = nn.Sequential(
            nn.Linear(hidden * layers, hidden), nn.ReLU(), nn.Linear(hidden, classes)
        )

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
        pooled = []
        for conv in self.convs:
            x = torch.relu(conv(x, edge_index))
            pooled.append(x.new_zeros(num_graphs, x.shape[1]).index_add_(0, batch, x))
        return self.head(torch.cat(pooled, 1))


def _gin(a: int, b: int) -> nn.Module:
    from torch_geometric.nn import GINConv

    return GINConv(nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(b, b)))


def _graph_conv(a: int, b: int) -> nn.Module:
    from torch_geometric.nn import GraphConv

    return GraphConv(a, b)


#: name → convolution factory
CONVS: dict[str, Callable[[int, int], nn.Module]] = {
    "GraphConv (PyG)": _graph_conv,
    "SentenceConv [I, A]": lambda a, b: SentenceConv(a, b, ["I", "A"]),
    "GINConv (PyG)": _gin,
    "SentenceConv [I, A, A ⊙ A²]": lambda a, b: SentenceConv(
        a, b, ["I", "A", "A ⊙ A²"], normalize="max_row_sum"
    ),
}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _accuracy(model: nn.Module, loader: Any, device: torch.device) -> float:
    model.eval()
    right = total = 0
    with torch.no_grad():
        for b in loader:
            b = b.to(device)
            pred = model(b.x, b.edge_index, b.batch, b.num_graphs).argmax(1)
            right += int((pred == b.y).sum())
            total += b.num_graphs
    return right / max(total, 1)


def _train(
    args: argparse.Namespace, device: torch.device, train: list[Any], test: list[Any], d: int,
    classes: int,
) -> list[dict[str, Any]]:
    """Every model of :data:`CONVS` trained on ``device``: one row each."""
    from torch_geometric.loader import DataLoader

    rows = []
    for name, make in CONVS.items():
        torch.manual_seed(args.seed)
        model = Net(make, d, classes, args.hidden, args.layers).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        gen = torch.Generator().manual_seed(args.seed)
        loader = DataLoader(train, batch_size=32, shuffle=True, generator=gen)
        times = []
        for _ in range(args.epochs):
            model.train()
            _sync(device)
            start = time.perf_counter()
            for b in loader:
                b = b.to(device)
                opt.zero_grad()
                out = model(b.x, b.edge_index, b.batch, b.num_graphs)
                loss = torch.nn.functional.cross_entropy(out, b.y)
                loss.backward()
                opt.step()
            _sync(device)
            times.append(time.perf_counter() - start)
        rows.append(
            {
                "model": name,
                "parameters": sum(q.numel() for q in model.parameters()),
                "epoch_s": sum(times) / len(times),
                "first_epoch_s": times[0],
                "train_acc": _accuracy(model, DataLoader(train, batch_size=64), device),
                "test_acc": _accuracy(model, DataLoader(test, batch_size=64), device),
            }
        )
    return rows


#: what the table says for a device that is not here
NO_CUDA = "no CUDA device here"


def table(results: dict[str, list[dict[str, Any]] | str]) -> str:
    """The side-by-side table: one row per model, an ``epoch s`` and a ``1st ep s`` column per
    device (``results``: device name → its rows, or a note such as :data:`NO_CUDA` for a
    device that did not run), then the first device's accuracies."""
    ran = {dev: rows for dev, rows in results.items() if not isinstance(rows, str)}
    first = next(iter(ran.values()), [])
    head = f"{'model':30s} {'params':>7s}"
    for dev in ran:
        head += f" {dev + ' epoch s':>14s} {dev + ' 1st ep s':>14s}"
    lines = [head + f" {'train':>6s} {'test':>6s}"]
    for i, r in enumerate(first):
        line = f"{r['model']:30s} {r['parameters']:7d}"
        for rows in ran.values():
            line += f" {rows[i]['epoch_s']:14.3f} {rows[i]['first_epoch_s']:14.3f}"
        lines.append(line + f" {r['train_acc']:6.3f} {r['test_acc']:6.3f}")
    lines += [f"{dev}: {note}" for dev, note in results.items() if isinstance(note, str)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Train every model on every device, print the table; returns the first device's rows."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--fold", type=int, default=1, help="1..10")
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--devices", default="cpu,cuda", help="comma-separated: cpu, cuda")
    p.add_argument("--max-graphs", type=int, default=None, help="a subset, for a quick run")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    tu = load_tu("mutag")
    data = [graph_to_data(g, int(y)) for g, y in zip(tu.graphs, tu.y)]
    train_idx, test_idx = (list(map(int, ix)) for ix in tu.folds[args.fold - 1])
    if args.max_graphs is not None:
        train_idx, test_idx = train_idx[: args.max_graphs], test_idx[: args.max_graphs]
    train = [data[i] for i in train_idx]
    test = [data[i] for i in test_idx]
    d, classes = int(data[0].x.shape[1]), int(max(tu.y)) + 1
    results: dict[str, list[dict[str, Any]] | str] = {}
    for dev in args.devices.split(","):
        if dev == "cuda" and not torch.cuda.is_available():
            results[dev] = NO_CUDA
        elif dev in ("cpu", "cuda"):
            results[dev] = _train(args, torch.device(dev), train, test, d, classes)
        else:
            raise SystemExit(f"--devices: unknown device {dev!r} (cpu or cuda)")
    print(
        f"MUTAG fold {args.fold}, {args.epochs} epochs, {len(train)} train / {len(test)} test "
        f"graphs, torch threads {torch.get_num_threads()}"
    )
    print(table(results))
    return next((r for r in results.values() if not isinstance(r, str)), [])


if __name__ == "__main__":
    main()
