"""The benchmark groups against the field's libraries (the speed targets of the graph
constants and of SentenceConv).

``constants``     graph constants ``A ⊙ A²`` on E, ``tr(A³)``, ``(A ⊙ A²)² 𝟏`` at n = 10³ … 10⁶
                  (degree 10): matlang vs hand-written python-graphblas and scipy
``channels``      ``input h; A h`` and an L3 node sentence on (N, d) features, forward + backward,
                  vs PyG's spmm and torch_sparse's matmul on a prebuilt adjacency
``fresh``         a new batch per call (validated, graph constants computed) vs one reused batch
``constscaling``  the graph-constant stage over E = 10⁴ … 10⁷ vs GraphBLAS alone: the fitted
                  time exponents
``layers``        ``SentenceConv`` {A} and {I, A} vs PyG's ``GCNConv`` / ``GINConv`` (prebuilt
                  ``adj_t``), forward + backward

The contestants are in :mod:`benchmarks.perf.peers`. Ratios are matlang / peer on min times
(< 1: matlang is faster).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.perf.peers import CHANNEL_SENTENCES, CONSTANT_SENTENCES, SHORT_PEER
from benchmarks.perf.timing import loglog_fit
from benchmarks.perf.workloads import Workload

PEER_GROUPS = ("constants", "channels", "fresh", "constscaling", "layers")

#: The speed targets against the field's libraries (keys of the summary).
PEER_TARGETS = {
    "constants_over_graphblas": "<= 1.2",
    "constants_over_scipy": "<= 0.5",
    "channels_over_pyg": "<= 1.2",
    "fresh_over_reused": "<= 1.3",
    "constants_exponent_gap": "<= 0.05",
    "layer_over_pyg": "<= 1.2",
}

#: How the summary table names them.
PEER_LABELS = {
    "constants_over_graphblas": "graph constants / hand-written GraphBLAS (worst case)",
    "constants_over_scipy": "graph constants / scipy (worst case)",
    "channels_over_pyg": "(N, d) propagation fwd+bwd / fastest PyG path (worst case)",
    "fresh_over_reused": "new batch (validated) / reused batch, fwd+bwd (worst case)",
    "constants_exponent_gap": "graph-constant time exponent, distance from GraphBLAS's (worst)",
    "layer_over_pyg": "SentenceConv / GCNConv or GINConv, fwd+bwd (worst case)",
}

CONSTANT_SIZES = (1_000, 10_000, 100_000, 1_000_000)
SCALING_EDGES = (10**4, 3 * 10**4, 10**5, 3 * 10**5, 10**6, 3 * 10**6, 10**7)
SCALING_SENTENCES = ("A ⊙ A²", "tr(A³)")
CHANNEL_WORKLOADS = (
    Workload(10_000, 10.0),
    Workload(100_000, 10.0),
    Workload(25, 10.0, graphs=64),
)
WIDTHS = (1, 16, 64)
LAYER_WORKLOADS = (Workload(25, 10.0, graphs=64), Workload(100_000, 10.0))
LAYER_WIDTHS = (16, 64)
PYG_PROPAGATION = ("pyg-spmm", "pyg-spmm-csr", "ts-matmul")


def _ok(res: dict[str, Any], name: str) -> dict[str, Any] | None:
    c = res.get("contestants", {}).get(name)
    return c if c and "error" not in c and c.get("min_s") else None


def _ratio(res: dict[str, Any], num: str, den: str | Sequence[str]) -> float | None:
    """``num / den`` on min times; with several ``den``, against the fastest of them."""
    dens = [den] if isinstance(den, str) else list(den)
    a = _ok(res, num)
    bs = [b["min_s"] for b in (_ok(res, d) for d in dens) if b is not None]
    if a is None or not bs:
        return None
    return float(a["min_s"] / min(bs))


def _agree(res: dict[str, Any], a: str, others: Sequence[str]) -> bool | None:
    from benchmarks.perf.cases import agree

    x = _ok(res, a)
    ys = [y for y in (_ok(res, o) for o in others) if y is not None]
    if x is None or not ys:
        return None
    return all(agree(x["check"], y["check"]) for y in ys)


def group_constants(r: Any) -> None:
    sizes = (200, 400) if _quick(r) else CONSTANT_SIZES
    for n in sizes:
        w = Workload(n, 10.0 if n >= 100 else 3.0)
        for s in CONSTANT_SENTENCES:
            peers = ["graphblas", "scipy"] + (["graphblas-lagraph"] if s == "tr(A³)" else [])
            res = r.case(
                "constants",
                f"constants/{SHORT_PEER[s]}/n={n}",
                w,
                [{"name": "matlang", "kind": "constants", "sentence": s}]
                + [{"name": p, "kind": p, "sentence": s} for p in peers],
                params={"sentence": s, "n": n},
                min_repeats=1 if n >= 10**6 else 2,
            )
            res["ratios"] = {
                "over_graphblas": _ratio(res, "matlang", "graphblas"),
                "over_scipy": _ratio(res, "matlang", "scipy"),
                "over_lagraph": _ratio(res, "matlang", "graphblas-lagraph"),
            }
            res["agree"] = _agree(res, "matlang", peers)


def group_channels(r: Any) -> None:
    quick = (Workload(200, 4.0), Workload(10, 3.0, graphs=4))
    workloads = quick if _quick(r) else CHANNEL_WORKLOADS
    for w in workloads:
        for s in CHANNEL_SENTENCES:
            for d in WIDTHS:
                common = {"sentence": s, "d": d, "backward": True}
                res = r.case(
                    "channels",
                    f"channels/{SHORT_PEER[s]}/d={d}/{w.label()}",
                    w,
                    [{"name": "matlang", "kind": "channels", **common}]
                    + [{"name": p, "kind": p, **common} for p in PYG_PROPAGATION],
                    params={"sentence": s, "d": d, "mode": "fwd+bwd"},
                )
                res["ratios"] = {
                    "over_pyg": _ratio(res, "matlang", PYG_PROPAGATION),
                    **{f"over_{p}": _ratio(res, "matlang", p) for p in PYG_PROPAGATION},
                }
                res["agree"] = _agree(res, "matlang", PYG_PROPAGATION)


def group_fresh(r: Any) -> None:
    workloads = (Workload(200, 4.0),) if _quick(r) else CHANNEL_WORKLOADS
    for w in workloads:
        for s in CHANNEL_SENTENCES:
            common = {"kind": "channels", "sentence": s, "d": 16, "backward": True}
            res = r.case(
                "fresh",
                f"fresh/{SHORT_PEER[s]}/d=16/{w.label()}",
                w,
                [
                    {"name": "reused", **common},
                    {"name": "fresh+validate", **common, "fresh": True, "validate": True},
                    {"name": "fresh", **common, "fresh": True, "validate": False},
                    # a dataset's next epoch: a new batch of known graphs, constants cached
                    {
                        "name": "fresh+validate+cache",
                        **common,
                        "fresh": True,
                        "validate": True,
                        "cache": True,
                    },
                ],
                params={"sentence": s, "d": 16, "mode": "fwd+bwd"},
            )
            res["ratios"] = {
                "fresh_over_reused": _ratio(res, "fresh+validate", "reused"),
                "validation": _ratio(res, "fresh+validate", "fresh"),
                "fresh_cached_over_reused": _ratio(res, "fresh+validate+cache", "reused"),
            }
            res["agree"] = _agree(
                res, "reused", ["fresh+validate", "fresh", "fresh+validate+cache"]
            )


def group_constscaling(r: Any) -> None:
    edges = (400, 1_600, 6_400) if _quick(r) else SCALING_EDGES
    for s in SCALING_SENTENCES:
        for e in edges:
            w = Workload(max(e // 10, 12), 10.0 if e >= 1_000 else 3.0)
            res = r.case(
                "constscaling",
                f"constscaling/{SHORT_PEER[s]}/E={e:.0e}",
                w,
                [
                    {"name": "matlang", "kind": "constants", "sentence": s},
                    {"name": "graphblas", "kind": "graphblas", "sentence": s},
                ],
                params={"sentence": s, "target_edges": e},
                min_repeats=1 if e >= 10**6 else 2,
            )
            res["ratios"] = {"over_graphblas": _ratio(res, "matlang", "graphblas")}
            res["agree"] = _agree(res, "matlang", ["graphblas"])


def group_layers(r: Any) -> None:
    workloads = (Workload(10, 3.0, graphs=4), Workload(200, 4.0)) if _quick(r) else LAYER_WORKLOADS
    for w in workloads:
        for d in LAYER_WIDTHS:
            res = r.case(
                "layers",
                f"layers/d={d}/{w.label()}",
                w,
                [
                    {"name": "SentenceConv {A}", "kind": "layer", "supports": ["A"], "d": d},
                    {"name": "GCNConv", "kind": "pyg-conv", "conv": "gcn", "d": d},
                    {
                        "name": "SentenceConv {I, A}",
                        "kind": "layer",
                        "supports": ["I", "A"],
                        "d": d,
                    },
                    {"name": "GINConv", "kind": "pyg-conv", "conv": "gin", "d": d},
                ],
                params={"d": d, "mode": "fwd+bwd"},
            )
            res["ratios"] = {
                "a_over_gcn": _ratio(res, "SentenceConv {A}", "GCNConv"),
                "ia_over_gin": _ratio(res, "SentenceConv {I, A}", "GINConv"),
            }


def _quick(r: Any) -> bool:
    return bool(r.config.budget_s <= 1.0)


PEER_GROUP_FUNCTIONS = {
    "constants": group_constants,
    "channels": group_channels,
    "fresh": group_fresh,
    "constscaling": group_constscaling,
    "layers": group_layers,
}


# --------------------------------------------------------------------------- summary


def _worst(
    results: Sequence[dict[str, Any]], group: str, keys: Sequence[str]
) -> tuple[float | None, str | None]:
    vals = [
        (r["ratios"][k], r["id"])
        for r in results
        if r["group"] == group
        for k in keys
        if r.get("ratios", {}).get(k) is not None
    ]
    return max(vals) if vals else (None, None)


def constant_exponents(results: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per sentence of the ``constscaling`` group: the fitted time exponents of matlang and of
    GraphBLAS over the edges run, and the points."""
    out: dict[str, dict[str, Any]] = {}
    for s in SCALING_SENTENCES:
        pts = []
        for res in results:
            if res["group"] != "constscaling" or res.get("params", {}).get("sentence") != s:
                continue
            a, b = _ok(res, "matlang"), _ok(res, "graphblas")
            if a is not None and b is not None:
                pts.append((res["workload"]["edges"], a["min_s"], b["min_s"]))
        if len(pts) < 2:
            continue
        pts.sort()
        e, ta, tb = (list(x) for x in zip(*pts))
        ea, eb = loglog_fit(e, ta), loglog_fit(e, tb)
        out[s] = {
            "edges": e,
            "matlang_s": ta,
            "graphblas_s": tb,
            "matlang_exponent": ea,
            "graphblas_exponent": eb,
            "gap": None if ea is None or eb is None else ea - eb,
        }
    return out


def peer_summary(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The summary entries of the peer groups (worst cases; see :data:`PEER_TARGETS`)."""
    s: dict[str, Any] = {}
    for key, group, ratios in (
        ("constants_over_graphblas", "constants", ["over_graphblas"]),
        ("constants_over_scipy", "constants", ["over_scipy"]),
        ("constants_over_lagraph", "constants", ["over_lagraph"]),
        ("channels_over_pyg", "channels", ["over_pyg"]),
        ("fresh_over_reused", "fresh", ["fresh_over_reused"]),
        ("validation_overhead_fresh", "fresh", ["validation"]),
        ("layer_over_pyg", "layers", ["a_over_gcn", "ia_over_gin"]),
    ):
        s[key], s[key + "_case"] = _worst(results, group, ratios)
    fits = constant_exponents(results)
    # "within 0.05 of GraphBLAS's exponent": the largest distance, either side
    gaps = [(abs(f["gap"]), sent) for sent, f in fits.items() if f["gap"] is not None]
    s["constants_exponent_gap"], s["constants_exponent_gap_case"] = (
        max(gaps) if gaps else (None, None)
    )
    s["constants_exponents"] = {
        sent: {
            "matlang": f["matlang_exponent"],
            "graphblas": f["graphblas_exponent"],
            "gap": f["gap"],
        }
        for sent, f in fits.items()
    }
    return s


__all__ = [
    "PEER_GROUPS",
    "PEER_LABELS",
    "PEER_GROUP_FUNCTIONS",
    "PEER_TARGETS",
    "constant_exponents",
    "peer_summary",
]
