"""What makes a PPGN separate BREC's CFI pairs: depth, normalisation, precision.

    python -m benchmarks.paper.brec_ppgn        # writes results/brec-ppgn-ablation.json, .md

BREC's published PPGN row (233 of 400) needs at least 23 CFI pairs; the paper's appendix PPGN
(``--config iso``) separates one of the first 45. This runs RPC (:func:`benchmarks.paper.brec.
rpc_pair`, the settings of ``bench brec``) on CFI pairs with PPGN configurations between the two
— BREC's own (``--config brec``) with one ingredient changed at a time — and, for every pair,
the round at which 2-FWL first separates it (the refinement bank, :mod:`matlang.refinement`,
exact). A PPGN block can do at most one 2-FWL round, so a model of L blocks cannot separate a
pair that needs round L + 1 (Maron et al. 2019).

Each variant is a set of fields replaced in a named configuration (``VARIANTS``); the pairs
default to the 3-WL-separable CFI pairs of at most 48 nodes (10 pairs, rounds 3 and 4).
The variants without ``output_norm`` train all 20 epochs; with it, RPC stops after the first.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from benchmarks.paper.brec import RPCConfig, parse_pairs, refinement_rows, rpc_rows
from benchmarks.records import provenance, write_json

#: name: (named configuration, fields replaced, dtype)
VARIANTS: dict[str, tuple[str, dict[str, Any], str]] = {
    "brec": ("brec", {}, "float64"),
    "brec float32": ("brec", {}, "float32"),
    "brec 4 blocks": ("brec", {"layers": 4}, "float64"),
    "brec 3 blocks": ("brec", {"layers": 3}, "float64"),
    "brec no block norm": ("brec", {"norm": False}, "float64"),
    "brec no output norm": ("brec", {"output_norm": False}, "float64"),
    "brec sum readout": ("brec", {"readout": ("sum",)}, "float64"),
    "brec xavier": ("brec", {"init": "xavier"}, "float64"),
    "brec xavier float32": ("brec", {"init": "xavier"}, "float32"),
    "appendix": ("iso", {}, "float64"),
    "appendix 5 blocks norms": (
        "iso",
        {"layers": 5, "norm": True, "output_norm": True},
        "float64",
    ),
}

#: The 3-WL-separable CFI pairs of at most 48 nodes (18-48 nodes; 2-FWL rounds 3 and 4).
DEFAULT_PAIRS = "265,278,272,291,317,297,271,281,294,277"


def run(pairs: list[int], variants: list[str], progress: bool = True) -> dict[str, Any]:
    from benchmarks.paper.configs import register
    from matlang.runtime import datasets
    from matlang.runtime.models import resolve_config

    register()  # brec, brec-xavier
    data = datasets.load_brec()
    rounds = {
        o.pair: (o.detail.get("round") if o.separated else None)
        for o in refinement_rows(data, 10, pairs).outcomes
    }
    sizes = {k: int(data.graphs[data.pairs[k][0]].num_nodes) for k in pairs}
    rows: list[dict[str, Any]] = []
    bar = tqdm(total=len(variants) * len(pairs), desc="brec ppgn", disable=not progress)

    def step(items: Any) -> Any:
        for item in items:
            yield item
            bar.update()

    for name in variants:
        base, fields, dtype = VARIANTS[name]
        config = dataclasses.replace(resolve_config("ppgn", base), **fields)
        cfg = RPCConfig(batch_size=32, config=config, dtype=dtype)
        for o in rpc_rows(data, "ppgn", pairs, seed=0, cfg=cfg, progress=step).outcomes:
            d = o.detail
            rows.append(
                {
                    "variant": name,
                    "pair": o.pair,
                    "nodes": sizes[o.pair],
                    "fwl_round": rounds[o.pair],
                    "separated": o.separated,
                    "t2": d["t2"],
                    "t2_reliability": d["t2_reliability"],
                    "epochs": d["epochs"],
                    "seconds": d["seconds"],
                }
            )
    bar.close()
    return {
        "pairs": pairs,
        "fwl_rounds": {str(k): rounds[k] for k in pairs},
        "variants": {
            v: {"config": VARIANTS[v][0], "fields": VARIANTS[v][1], "dtype": VARIANTS[v][2]}
            for v in variants
        },
        "seed": 0,  # as `bench brec`: pair k is trained with seed 100003·seed + k
        "rows": rows,
    }


def markdown(result: dict[str, Any]) -> str:
    pairs = result["pairs"]
    rows = result["rows"]
    head = "| variant | " + " | ".join(str(k) for k in pairs) + " | separated |"
    rnd = result["fwl_rounds"]
    lines = [
        "# PPGN on BREC's CFI pairs: which ingredient separates them",
        "",
        "RPC with `bench brec`'s settings (batch 32, seed = pair); ✓ separated (T² > 72.34, "
        "reliable), · not. Columns: pair (nodes, 2-FWL round that separates it).",
        "",
        head,
        "|---" * (len(pairs) + 2) + "|",
        "| (nodes, round) | "
        + " | ".join(
            f"{next(r['nodes'] for r in rows if r['pair'] == k)}, {rnd[str(k)]}" for k in pairs
        )
        + " | |",
    ]
    for v in result["variants"]:
        mine = {r["pair"]: r for r in rows if r["variant"] == v}
        cells = ["✓" if mine[k]["separated"] else "·" for k in pairs]
        lines.append(f"| {v} | " + " | ".join(cells) + f" | {cells.count('✓')}/{len(pairs)} |")
    seconds = sum(r["seconds"] for r in rows)
    lines += ["", f"{len(rows)} RPC runs, {seconds:.0f} s (one thread)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.paper.brec_ppgn", description=__doc__)
    p.add_argument("--pairs", default=DEFAULT_PAIRS, help="BREC pairs (as bench brec --pairs)")
    p.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help="comma-separated names from VARIANTS (default all)",
    )
    p.add_argument("--out", default="results", help="folder for brec-ppgn-ablation.json/.md")
    p.add_argument("--force", action="store_true", help="replace result files that exist")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    import torch

    from matlang.errors import MatlangError

    torch.set_num_threads(args.threads)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise MatlangError(f"unknown variant(s) {unknown}; known: {', '.join(VARIANTS)}")
    pairs = parse_pairs(args.pairs) or []
    out = Path(args.out)
    path = out / "brec-ppgn-ablation.json"
    if path.exists() and not args.force:
        raise MatlangError(f"{path} exists; run with --force to replace it or --out elsewhere")
    start = time.perf_counter()
    result = run(pairs, variants, progress=not args.no_progress)
    out.mkdir(parents=True, exist_ok=True)
    write_json(path, provenance(result, start))
    (out / "brec-ppgn-ablation.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
