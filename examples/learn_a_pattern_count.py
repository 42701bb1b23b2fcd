"""Learn a pattern's count with sentence layers: the count is a sentence, the layers hold it.

    python examples/learn_a_pattern_count.py                  # 6-cycles on 700 random graphs
    python examples/learn_a_pattern_count.py --pattern C5 --graphs 300

``matlang.pattern`` writes the exact subgraph count of a pattern as a MATLANG sentence (a sum
of homomorphism counts) and says which WL level counting it needs; its rooted form (patterns
through each node) names the masked matrices — ``A ⊙ A²``, ``A ⊙ A⁵``, … — that make good
supports. A ``SentenceGNN`` on those supports with no activation is a polynomial in them: its
sum readout is a set of graph-level sentences, so the count is a linear function of that
readout, and least squares on the training graphs finds it. The same model on the 1-WL
supports ``I, A`` cannot (6-cycles are beyond 1-WL): the script prints both.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

import matlang
from matlang import ast
from matlang.compiler.layers.model import SentenceGNN
from matlang.graphs import Graph
from matlang.parser import parse
from matlang.printer import to_text
from matlang.runtime.batch import Batch
from matlang.runtime.generators import erdos_renyi


def masked_supports(rooted_sentence: str, graphs: list) -> list[str]:
    """``I``, ``A`` and every matrix-valued ⊙ subexpression of the rooted sentence, each divided
    by its largest entry on ``graphs`` (rounded up): supports of one scale, so that no support
    drowns the others in the layers' random mixtures."""
    found: dict[str, None] = {}
    for node in parse(rooted_sentence).walk():
        if isinstance(node, ast.Hadamard) and node.shape.is_matrix:
            found.setdefault(to_text(node, definitions=False), None)
    out = ["I", "A"]
    for text in found:
        top = max(float(np.abs(np.asarray(matlang.evaluate(text, g))).max()) for g in graphs)
        out.append(f"({text}) / {max(1, int(np.ceil(top)))}")
    return out


def pooled(model: SentenceGNN, batch: Batch) -> torch.Tensor:
    """What the model's linear readout receives: every layer's sum over each graph."""
    got: list[torch.Tensor] = []
    hook = model.head.register_forward_hook(lambda m, i, o: got.append(i[0].detach()))
    with torch.no_grad():
        model(batch)
    hook.remove()
    return got[0]


def fit(
    supports: list[str], graphs: list, y: torch.Tensor, split: int, seed: int, hidden: int
) -> float:
    """Test MSE (counts divided by their std) of the least-squares readout on ``supports``."""
    torch.manual_seed(seed)
    model = SentenceGNN(
        2, 1, supports, hidden=hidden, layers=2, norm=None, activation=None, head="linear"
    ).double()
    # node features [1, degree / 10], every graph in one batch (a value never depends on the
    # batch: the layers have no batch norm)
    with_x = [
        Graph(g.adjacency, g.name, np.stack([np.ones(g.num_nodes), g.adjacency.sum(1) / 10], 1))
        for g in graphs
    ]
    z = pooled(model, Batch.from_graphs(with_x, dtype=torch.float64))
    # columns standardised on the training graphs: the features span orders of magnitude
    mean, std = z[:split].mean(0), z[:split].std(0).clamp_min(1e-300)
    z = torch.cat([(z - mean) / std, torch.ones(z.shape[0], 1, dtype=z.dtype)], 1)  # + bias
    w = torch.linalg.lstsq(z[:split], y[:split], driver="gelsd").solution
    return float(((z[split:] @ w - y[split:]) ** 2).mean())


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pattern", default="C6")
    p.add_argument("--graphs", type=int, default=700)
    p.add_argument("--nodes", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hidden", type=int, default=128, help="layer width (the readout sees 2×)")
    args = p.parse_args(argv)

    res = matlang.pattern(args.pattern, witness=False)
    if res.sentence is None:
        raise SystemExit(f"{args.pattern}: no MATLANG sentence counts it ({res.reason})")
    rooted = matlang.pattern(args.pattern, rooted=True, witness=False).sentence
    print(f"{args.pattern}: fragment {res.fragment}, {res.wl}")
    graphs = [
        erdos_renyi(args.nodes, 0.3, seed=args.seed * 100_000 + k) for k in range(args.graphs)
    ]
    counts = np.array([float(matlang.evaluate(res.sentence, g)) for g in graphs])
    y = torch.tensor(counts / counts.std(), dtype=torch.float64).reshape(-1, 1)
    split = (2 * args.graphs) // 3
    out = {}
    for name, supports in (
        ("pattern's supports", masked_supports(rooted, graphs)),
        ("I, A", ["I", "A"]),
    ):
        out[name] = fit(supports, graphs, y, split, args.seed, args.hidden)
        print(f"  {name:<20} ({len(supports)} supports): test MSE {out[name]:.2e}")
    return out


if __name__ == "__main__":
    main()
