"""``matlang models``: the reference models, their named configurations and parameter counts."""

from __future__ import annotations

import argparse
import json
from typing import Any

from matlang.errors import MatlangError


def register(sub: Any) -> None:
    """Add the ``models`` subcommand to ``sub`` (an argparse subparsers object)."""
    p = sub.add_parser(
        "models",
        help="list the reference models and their parameter counts",
        description="List the reference models (MLP, GCN, GAT, GIN, ChebNet, PPGN, GNNML1, "
        "GNNML3), their named configurations (about 30K parameters each, as in the paper) and "
        "their trainable parameter counts for the given input and output widths.",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--in-dim", type=int, default=1, help="node feature width (default 1)")
    p.add_argument("--out-dim", type=int, default=1, help="output width (default 1)")
    p.add_argument(
        "--config",
        default=None,
        help="only this named configuration (default; with the experiments installed also "
        "iso, count, spectral, brec, brec-xavier)",
    )
    p.add_argument("--task", choices=("graph", "node"), default="graph")
    p.set_defaults(func=run)


def rows(
    in_dim: int = 1, out_dim: int = 1, config: str | None = None, task: str = "graph"
) -> list[dict[str, Any]]:
    """One row per (model, named configuration)."""
    from matlang.runtime.models import MODELS, build_model, load_named_configs

    load_named_configs()  # those of installed plugins (the experiments: iso, count, ...)
    if in_dim < 1 or out_dim < 1:
        raise MatlangError(f"--in-dim and --out-dim must be positive, got {in_dim}, {out_dim}")
    out = []
    for name, spec in MODELS.items():
        for cfg_name in spec.configs:
            if config is not None and cfg_name != config:
                continue
            model = build_model(name, in_dim, out_dim, cfg_name, task=task)  # type: ignore[arg-type]
            cfg = model.config
            out.append(
                {
                    "model": name,
                    "config": cfg_name,
                    "layers": cfg.layers,
                    "width": _width(cfg),
                    "parameters": model.num_parameters(),
                    "summary": spec.summary,
                }
            )
    if not out:
        known = sorted({c for s in MODELS.values() for c in s.configs})
        raise MatlangError(f"no configuration named {config!r}; known: {', '.join(known)}")
    return out


def _width(cfg: Any) -> str:
    """A layer's output width: ``hidden``, or ``hidden+product`` for GNNML3."""
    prod = getattr(cfg, "product_channels", None)
    return f"{cfg.hidden}+{prod}" if prod is not None else str(cfg.hidden)


def run(args: argparse.Namespace) -> int:
    table = rows(args.in_dim, args.out_dim, args.config, args.task)
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    head = ("model", "config", "layers", "width", "parameters", "summary")
    cells = [[str(r[h]) for h in head] for r in table]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    numeric = {2, 3, 4}

    def line(values: list[str]) -> str:
        parts = [
            v.rjust(w) if i in numeric else v.ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    print(f"in_dim={args.in_dim}, out_dim={args.out_dim}, task={args.task}")
    print(line(list(head)))
    print(line(["-" * w for w in widths]))
    for c in cells:
        print(line(c))
    return 0
