"""``perf.md``: the tables of the peer groups (:mod:`benchmarks.perf.peer_groups`)."""

from __future__ import annotations

from typing import Any

from benchmarks.perf.peer_groups import constant_exponents
from benchmarks.perf.peers import SHORT_PEER
from benchmarks.perf.report import _m, _t, _table, fmt_ratio


def _of(data: dict[str, Any], group: str) -> list[dict[str, Any]]:
    return [r for r in data["cases"] if r["group"] == group]


def _section(title: str, text: str, headers: list[str], rows: list[list[str]]) -> list[str]:
    """A titled table with its explanation, or nothing when the group has no rows."""
    if not rows:
        return []
    return [title, "", text, "", *_table(headers, rows)]


def peer_markdown(data: dict[str, Any]) -> list[str]:
    """The peer groups' tables (empty where a group was not run)."""
    out: list[str] = []

    def ag(r: dict[str, Any]) -> str:
        a = r.get("agree")
        return "—" if a is None else ("yes" if a else "**NO**")

    rows = [
        [
            SHORT_PEER[r["params"]["sentence"]],
            r["workload"]["label"] + f", E={r['workload']['edges']:,}",
            _t(r, "matlang"),
            _t(r, "graphblas"),
            _t(r, "scipy"),
            fmt_ratio(r["ratios"]["over_graphblas"]),
            fmt_ratio(r["ratios"]["over_scipy"]),
            (
                f"{_t(r, 'graphblas-lagraph')} ({fmt_ratio(r['ratios']['over_lagraph'])})"
                if r["ratios"].get("over_lagraph") is not None
                else "—"
            ),
            f"{_m(r, 'matlang')} / {_m(r, 'graphblas')} / {_m(r, 'scipy')}",
            ag(r),
        ]
        for r in _of(data, "constants")
        if "ratios" in r
    ]
    out += _section(
        "## Graph constants vs GraphBLAS and scipy (`constants`)",
        (
            "matlang = the compiled module on a new batch (its graph-constant stage runs every "
            "call; validation off); graphblas = hand-written python-graphblas, masked "
            "`C(A.S) << A.mxm(A, plus_pair)`; scipy = `(A @ A).multiply(A)` on a CSR built from "
            "the sorted edges; LAGraph = triangles by `C(L.S) << L.mxm(L.T, plus_pair)` on the "
            "lower triangle (tr(A³) = 6 · triangles). Each starts from `edge_index`. Ratios: "
            "matlang / peer, min times."
        ),
        [
            "sentence",
            "graph",
            "matlang min / med",
            "graphblas",
            "scipy",
            "/ graphblas",
            "/ scipy",
            "LAGraph tri-count (ratio)",
            "peak MiB m / gb / scipy",
            "agree",
        ],
        rows,
    )
    rows = [
        [
            SHORT_PEER[r["params"]["sentence"]],
            str(r["params"]["d"]),
            r["workload"]["label"],
            _t(r, "matlang"),
            _t(r, "pyg-spmm"),
            _t(r, "pyg-spmm-csr"),
            _t(r, "ts-matmul"),
            fmt_ratio(r["ratios"]["over_pyg"]),
            ag(r),
        ]
        for r in _of(data, "channels")
        if "ratios" in r
    ]
    out += _section(
        "## Feature channels, forward + backward, vs PyG (`channels`)",
        (
            "(N, d) float32 features, `out.sum().backward()`. matlang: the compiled sentence "
            "on one reused, validated batch. PyG on prebuilt adjacencies: "
            "`torch_geometric.utils.spmm` on a `SparseTensor` and on a torch CSR tensor, "
            "`torch_sparse.matmul`; the L3 sentence's `A ⊙ A²` is a prebuilt weighted "
            "adjacency. Ratio: matlang / the fastest PyG path."
        ),
        [
            "sentence",
            "d",
            "graphs",
            "matlang",
            "PyG spmm (SparseTensor)",
            "PyG spmm (CSR)",
            "torch_sparse matmul",
            "ratio",
            "agree",
        ],
        rows,
    )
    rows = [
        [
            SHORT_PEER[r["params"]["sentence"]],
            r["workload"]["label"],
            _t(r, "reused"),
            _t(r, "fresh+validate"),
            _t(r, "fresh"),
            fmt_ratio(r["ratios"]["fresh_over_reused"]),
            fmt_ratio(r["ratios"]["validation"]),
        ]
        for r in _of(data, "fresh")
        if "ratios" in r
    ]
    out += _section(
        "## A new batch vs a reused one (`fresh`)",
        (
            "d = 16, forward + backward. reused: one validated batch (graph constants and "
            "operators remembered); fresh: a new batch every call (its memo emptied), with and "
            "without validation."
        ),
        [
            "sentence",
            "graphs",
            "reused",
            "fresh, validate=True",
            "fresh, validate=False",
            "fresh+validate / reused",
            "validation (fresh+v / fresh)",
        ],
        rows,
    )
    fits = constant_exponents(data["cases"])
    if fits:
        out += ["## Scaling of the graph-constant stage vs GraphBLAS (`constscaling`)", ""]
        rows = []
        for s, f in fits.items():
            pts = ", ".join(
                f"{e:.0e}: {a * 1e3:.3g}/{b * 1e3:.3g} ms"
                for e, a, b in zip(f["edges"], f["matlang_s"], f["graphblas_s"])
            )
            rows.append(
                [
                    SHORT_PEER[s],
                    f"{f['matlang_exponent']:.3f}",
                    f"{f['graphblas_exponent']:.3f}",
                    f"{f['gap']:+.3f}",
                    pts,
                ]
            )
        out += _table(
            ["sentence", "matlang exponent", "GraphBLAS exponent", "gap", "E: matlang/graphblas"],
            rows,
        )
    rows = [
        [
            r["workload"]["label"],
            str(r["params"]["d"]),
            _t(r, "SentenceConv {A}"),
            _t(r, "GCNConv"),
            fmt_ratio(r["ratios"]["a_over_gcn"]),
            _t(r, "SentenceConv {I, A}"),
            _t(r, "GINConv"),
            fmt_ratio(r["ratios"]["ia_over_gin"]),
        ]
        for r in _of(data, "layers")
        if "ratios" in r
    ]
    out += _section(
        "## SentenceConv vs PyG convolutions (`layers`)",
        (
            "Width d → d, forward + backward (gradients into the weights and x). PyG on a "
            "prebuilt `adj_t` (`GCNConv(cached=True)`, `GINConv(Linear)`); SentenceConv on "
            "`(x, edge_index, batch)` with its supports remembered on the batch."
        ),
        ["graphs", "d", "{A}", "GCNConv", "{A} / GCN", "{I, A}", "GINConv", "{I, A} / GIN"],
        rows,
    )
    return out


__all__ = ["peer_markdown"]
