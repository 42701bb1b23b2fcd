"""Pictures of graphs and witness pairs: :func:`draw` (SVG or PNG, matplotlib + networkx).

One graph, or two side by side (a witness pair), nodes coloured by the values of a node
sentence (a column, evaluated exactly with :func:`matlang.evaluate`) and each graph's value of
a graph-level sentence in its title::

    svg = matlang.draw(matlang.classify("tr(A^3) / 6"))      # the witness pair, as SVG text
    matlang.draw(["rook4x4", "shrikhande"], "tr(A^4)", file="pair.png")

For a scalar sentence without ``nodes=``, the node colours are its **per-node share**
(:func:`node_share`): ``𝟏ᵀ v`` → v, ``uᵀ v`` → u ⊙ v, ``tr(M)`` → (M ⊙ I) 𝟏, through +, −
and constant factors — so the values on the nodes sum to the value in the title.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from matlang import ast
from matlang.errors import MatlangError

#: Formats :func:`draw` writes.
FORMATS = ("svg", "png")

#: Graphs above this many nodes are drawn without per-node value labels.
LABEL_LIMIT = 24


@dataclass(frozen=True)
class Panel:
    """One graph as drawn: its label, graph-level value (or None) and node values (or None)."""

    label: str
    graph: Any  # matlang.graphs.Graph
    value: Any = None
    node_values: Sequence[Any] | None = None


# --------------------------------------------------------------------------- per-node shares


def _constant(e: ast.Expr) -> bool:
    """No input (A or a node vector) inside: the same number on every graph."""
    return not any(isinstance(x, ast.Input) for x in e.walk())


def node_share(expr: ast.Expr) -> ast.Expr | None:
    """A column sentence whose entries sum to the scalar ``expr`` (its share per node), or the
    expression itself when it is a column; None when no share is known (``f(𝟏ᵀ A 𝟏)``)."""
    shape = expr.shape
    if shape == ast.COLUMN:
        return expr
    if not shape.is_scalar:
        return None
    if isinstance(expr, ast.Trace):  # tr(M) = 𝟏ᵀ (M ⊙ I) 𝟏
        return ast.Mul(ast.Hadamard(expr.operand, ast.Diag(ast.Ones())), ast.Ones())
    if isinstance(expr, (ast.Add, ast.Sub)):
        left, right = node_share(expr.left), node_share(expr.right)
        if left is None or right is None:
            return None
        return type(expr)(left, right)
    if isinstance(expr, ast.Neg):
        inner = node_share(expr.operand)
        return None if inner is None else ast.Neg(inner)
    if isinstance(expr, ast.Div) and _constant(expr.right):
        inner = node_share(expr.left)
        return None if inner is None else ast.Div(inner, expr.right)
    if isinstance(expr, ast.Mul):
        a, b = expr.left, expr.right
        if a.shape == ast.ROW and b.shape == ast.COLUMN:  # uᵀ v = 𝟏ᵀ (u ⊙ v)
            if isinstance(a, ast.Transpose) and isinstance(a.operand, ast.Ones):
                return b
            return ast.Hadamard(ast.Transpose(a), b)
        if _constant(a):
            inner = node_share(b)
            return None if inner is None else ast.Mul(a, inner)
        if _constant(b):
            inner = node_share(a)
            return None if inner is None else ast.Mul(inner, b)
    return None


# --------------------------------------------------------------------------- panels


def _as_graph(obj: Any) -> Any:
    from matlang.graphs import as_graph

    if isinstance(obj, str):
        return _graph_by_id(obj)
    return as_graph(obj)


def _graph_by_id(ident: str) -> Any:
    """A graph from a witness id: a built-in name, graph6, or one of the pattern certificate's
    constructions (``rook4x4 ∨ K1``, ``complement(shrikhande)``)."""
    from matlang.graphs import as_graph

    try:
        return as_graph(ident)
    except MatlangError:
        from matlang.patterns import _pairs_3wl

        for gi, g, hi, h, _source in _pairs_3wl(()):
            if ident == gi:
                return g
            if ident == hi:
                return h
        raise


def _scalar_value(v: Any) -> Any:
    """A graph-level value for a title: a vector reads as its sum, a matrix as 𝟏ᵀM𝟏."""
    import numpy as np

    if isinstance(v, np.ndarray):
        return v.sum()
    if hasattr(v, "toarray"):
        return v.toarray().sum()
    return v


def _node_values(expr: ast.Expr | None, graph: Any) -> list[Any] | None:
    if expr is None:
        return None
    import numpy as np

    from matlang.evaluator import evaluate

    try:
        v = evaluate(expr, graph)
    except MatlangError:
        return None
    return list(np.asarray(v).reshape(-1))


def panels(
    graphs: Any, sentence: Any = None, *, nodes: Any = None, labels: Sequence[str] | None = None
) -> tuple[list[Panel], str | None]:
    """The panels :func:`draw` draws and its title line, from what it was given."""
    from matlang.parser import as_expr

    title = None
    values: Sequence[Any] | None = None
    kind = type(graphs).__name__
    if kind == "Analysis":  # a classification: its witness pair and its sentence
        a = graphs
        if a.witness is None:
            raise MatlangError(
                f"no witness pair to draw for {a.sentence}: {a.wl} (draw it on graphs of your "
                "choice: matlang.draw(graphs, sentence))"
            )
        w = a.witness
        sentence = a.expr if sentence is None else sentence
        graphs, labels, values = list(w.graphs), list(w.pair), list(w.values)
        title = f"{a.sentence}\n{a.fragment}, {a.wl}; {w.level_name}-equivalent pair ({w.source})"
    elif kind == "PatternResult":
        p = graphs
        if p.witness is None:
            raise MatlangError(f"pattern {p.name}: no witness pair to draw ({p.wl})")
        w = p.witness
        labels = list(w["pair"])
        graphs = [_graph_by_id(x) for x in labels]
        values = list(w["values"])
        if sentence is None and p.expr is not None and not p.rooted:
            sentence = p.expr
        if nodes is None and sentence is None:
            nodes = _copies_through(p.graph)
        title = f"copies of {p.name}: {p.wl}\n{w['level']}-equivalent pair ({w['source']})"
    from matlang.graphs import is_one_graph

    if not isinstance(graphs, (list, tuple)) or is_one_graph(graphs):
        graphs = [graphs]
    gs = [_as_graph(g) for g in graphs]
    if not 1 <= len(gs) <= 4:
        raise MatlangError(f"draw takes one to four graphs, got {len(gs)}")
    expr = as_expr(sentence) if sentence is not None else None
    node_expr: Any = None
    per_graph = (
        isinstance(nodes, (list, tuple))
        and len(nodes) == len(gs)
        and all(not isinstance(v, str) and hasattr(v, "__len__") for v in nodes)
    )
    if callable(nodes) or per_graph:
        node_expr = None
    elif nodes is not None:
        node_expr = as_expr(nodes)
        if node_expr.shape != ast.COLUMN:
            raise MatlangError(
                f"nodes= needs a column sentence (one value per node), got a {node_expr.shape}"
            )
    elif expr is not None:
        node_expr = node_share(expr)
    out = []
    for i, g in enumerate(gs):
        label = labels[i] if labels is not None else g.label()
        if values is not None:
            value = values[i]
        elif expr is not None:
            from matlang.evaluator import evaluate

            value = _scalar_value(evaluate(expr, g))
        else:
            value = None
        nv: list[Any] | None
        if per_graph:
            nv = list(nodes[i])
        else:
            nv = nodes(g) if callable(nodes) else _node_values(node_expr, g)
        out.append(Panel(label, g, value, nv))
    if title is None and expr is not None:
        from matlang.printer import to_text

        title = to_text(expr)
    return out, title


def _copies_through(pattern: Any) -> Any:
    """For a small pattern: a function graph → copies of the pattern through each node (by
    subgraph monomorphisms, networkx), or None past a size where that is slow."""

    def count(g: Any) -> list[int] | None:
        import networkx as nx
        from networkx.algorithms import isomorphism

        if pattern.n > 5 or g.num_nodes > 40:
            return None
        big = nx.from_numpy_array(g.adjacency)
        small = nx.Graph(list(pattern.edges))
        small.add_nodes_from(range(pattern.n))
        matcher = isomorphism.GraphMatcher(big, small)
        per = [0] * g.num_nodes
        copies = set()  # a copy: the nodes and edges of an image (automorphisms collapse)
        for m in matcher.subgraph_monomorphisms_iter():
            copies.add(
                (frozenset(m), frozenset(frozenset(e) for e in _image_edges(m, pattern.edges)))
            )
        for nodes_, _edges in copies:
            for v in nodes_:
                per[v] += 1
        return per

    return count


def _image_edges(m: dict[int, int], edges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    back = {p: g for g, p in m.items()}
    return [(back[u], back[v]) for u, v in edges]


# --------------------------------------------------------------------------- drawing


def _layout(g: Any) -> dict[int, tuple[float, float]]:
    import networkx as nx

    nxg = nx.from_numpy_array(g.adjacency)
    if g.num_nodes <= 1:
        return {0: (0.0, 0.0)} if g.num_nodes else {}
    if nx.is_connected(nxg) and g.num_nodes <= 60:
        pos = nx.kamada_kawai_layout(nxg)
    else:
        pos = nx.spring_layout(nxg, seed=1)
    return {int(k): (float(v[0]), float(v[1])) for k, v in pos.items()}


def _fmt(v: Any) -> str:
    import numbers

    from matlang.evaluator import format_value

    if isinstance(v, numbers.Integral) and abs(int(v)) >= 10**9:  # 4000 digits fit no title
        digits = str(abs(int(v)))
        return f"{'-' if v < 0 else ''}{digits[0]}.{digits[1:4]}e{len(digits) - 1}"
    try:
        text = format_value(v)
    except Exception:  # noqa: BLE001 - a title is better than no picture
        text = str(v)
    return text if len(text) <= 40 else text[:39] + "…"


def render(panels_: Sequence[Panel], title: str | None = None, *, format: str = "svg") -> Any:
    """Draw panels side by side; SVG text (``format="svg"``) or PNG bytes."""
    if format not in FORMATS:
        raise MatlangError(f"draw writes {' or '.join(FORMATS)}, not {format!r}")
    import matplotlib

    matplotlib.use("Agg", force=False)
    import numpy as np
    from matplotlib import colors as mcolors
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure

    k = len(panels_)
    if format == "png" and title:  # matplotlib's DejaVu Sans has 𝟙 but not 𝟏
        title = title.replace("𝟏", "𝟙")
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "matlang"}):
        fig = Figure(figsize=(3.6 * k + 0.6, 4.0), layout="constrained")
        axes = fig.subplots(1, k, squeeze=False)[0]
        numeric = [
            float(x)
            for p in panels_
            if p.node_values is not None
            for x in p.node_values
            if _is_real(x)
        ]
        norm = None
        cmap = matplotlib.colormaps["viridis"]
        if numeric:
            lo, hi = min(numeric), max(numeric)
            norm = mcolors.Normalize(lo - 0.5 if lo == hi else lo, hi + 0.5 if lo == hi else hi)
        for i, (ax, p) in enumerate(zip(axes, panels_)):
            pos = _layout(p.graph)
            n = p.graph.num_nodes
            xy = np.array([pos[j] for j in range(n)]) if n else np.zeros((0, 2))
            rows, cols = np.nonzero(np.triu(np.asarray(p.graph.adjacency)))
            segments = [(xy[u], xy[v]) for u, v in zip(rows.tolist(), cols.tolist())]
            edges = LineCollection(segments, colors="#999999", linewidths=0.8, zorder=1)
            edges.set_gid(f"edges-{i}")
            ax.add_collection(edges)
            if p.node_values is not None and norm is not None:
                face: list[Any] = [
                    cmap(norm(float(x))) if _is_real(x) else (0.8, 0.8, 0.8, 1.0)
                    for x in p.node_values
                ]
            else:
                face = ["#8fb3d9"] * n
            sc = ax.scatter(
                xy[:, 0],
                xy[:, 1],
                s=180 if n <= LABEL_LIMIT else 60,
                c=face,
                edgecolors="#333333",
                linewidths=0.6,
                zorder=2,
            )
            sc.set_gid(f"nodes-{i}")
            if p.node_values is not None and n <= LABEL_LIMIT:
                for j in range(n):
                    rgb = face[j] if not isinstance(face[j], str) else (0.5, 0.7, 0.9, 1)
                    light = sum(rgb[:3]) / 3 > 0.5
                    ax.text(
                        xy[j, 0],
                        xy[j, 1],
                        _fmt(p.node_values[j]),
                        ha="center",
                        va="center",
                        fontsize=6,
                        color="black" if light else "white",
                        zorder=3,
                    )
            head = p.label if len(p.label) <= 28 else p.label[:27] + "…"
            sub = f"{n} nodes, {p.graph.num_edges} edges"
            if p.value is not None:
                head += f": {_fmt(p.value)}"
            ax.set_title(f"{head}\n{sub}", fontsize=9)
            ax.set_axis_off()
            ax.set_aspect("equal")
            ax.margins(0.08)
        if norm is not None:
            from matplotlib.cm import ScalarMappable

            bar = fig.colorbar(
                ScalarMappable(norm=norm, cmap=cmap), ax=list(axes), shrink=0.6, pad=0.02
            )
            bar.ax.tick_params(labelsize=7)
        if title:
            lines = [t if len(t) <= 110 else t[:109] + "…" for t in title.splitlines()]
            fig.suptitle("\n".join(lines), fontsize=9)
        buf = io.BytesIO()
        import warnings

        with warnings.catch_warnings():  # SVG text is the browser's to render (𝟏 included)
            warnings.filterwarnings("ignore", "Glyph .* missing", UserWarning)
            fig.savefig(
                buf,
                format=format,
                dpi=110 if format == "png" else 72,
                metadata={"Date": None} if format == "svg" else None,
            )
    data = buf.getvalue()
    return _compact(data.decode("utf-8")) if format == "svg" else data


def _compact(svg: str) -> str:
    """Smaller SVG for notebooks and pages: no metadata, coordinates to 0.1 pt, paths on one
    line (the rook4x4 / Shrikhande pair: 42 KB → 37 KB)."""
    import re

    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)
    short = re.compile(r"(\d+\.\d)\d+")  # in attributes only: text keeps its digits
    svg = re.sub(r'="([^"]*)"', lambda m: '="' + short.sub(r"\1", m.group(1)) + '"', svg)
    return re.sub(r" ?\n(?=[LMCQz])", " ", svg)


def _is_real(x: Any) -> bool:
    try:
        f = float(x)
    except (TypeError, ValueError, OverflowError):  # a huge exact value: drawn grey
        return False
    return f == f and abs(f) != float("inf")


def draw(
    graphs: Any,
    sentence: Any = None,
    *,
    nodes: Any = None,
    file: str | os.PathLike[str] | None = None,
    format: str | None = None,
    labels: Sequence[str] | None = None,
    title: str | None = None,
) -> Any:
    """A picture of one graph or of graphs side by side (up to four): SVG text or PNG bytes.

    ``graphs``: a graph (anything ``--graph`` takes: a built-in name, graph6, an edge list, a
    :class:`matlang.graphs.Graph`, networkx, PyG), a list of them, a classification
    (:func:`matlang.classify`: its witness pair, values and level) or a
    :class:`matlang.patterns.PatternResult` (its witness or certificate pair, nodes coloured by
    the copies of the pattern through them). ``sentence``: a sentence whose value on each graph
    goes in that graph's title. ``nodes``: a column sentence colouring the nodes by their
    values (default: the sentence's per-node share, :func:`node_share`). ``file``: also write
    the picture there (the format from its suffix, ``.svg`` or ``.png``). ``title``: the line
    above the graphs (default: the sentence, or the classification's level and source).
    """
    title_ = title
    if format is None:
        suffix = os.path.splitext(os.fspath(file))[1].lower().lstrip(".") if file else ""
        format = suffix or "svg"
    if format not in FORMATS:
        raise MatlangError(
            f"draw writes .svg or .png files, not {format!r}" + (f" ({file})" if file else "")
        )
    ps, title = panels(graphs, sentence, nodes=nodes, labels=labels)
    title = title_ if title_ is not None else title
    data = render(ps, title, format=format)
    if file is not None:
        from pathlib import Path

        if format == "svg":
            Path(file).write_text(data, encoding="utf-8")
        else:
            Path(file).write_bytes(data)
    return data


# --------------------------------------------------------------------------- the command line


def add_argument(parser: Any, what: str) -> None:
    """``--draw FILE`` on a command (classify, pattern, wl, bank); ``what`` says what it draws."""
    parser.add_argument(
        "--draw",
        metavar="FILE",
        help=f"also draw {what} into FILE (.svg or .png; nodes coloured by their values)",
    )


def write(args: Any, graphs: Any, sentence: Any = None, **kwargs: Any) -> None:
    """For ``--draw FILE``: draw and say so on stderr (stdout stays the command's output)."""
    import sys

    file = getattr(args, "draw", None)
    if not file:
        return
    draw(graphs, sentence, file=file, **kwargs)
    print(f"drew {file}", file=sys.stderr)


def wl_colors(graphs: Sequence[Any], test: str) -> list[list[int]]:
    """The stable colours of the 1-WL test (nodes) or of 2-FWL (the diagonal of the pair
    colours), refined jointly so that equal numbers are equal colours across the graphs."""
    import numpy as np

    from matlang.runtime.wl import refine_1wl, refine_2fwl

    if test == "1-wl":
        return [np.asarray(c).tolist() for c in refine_1wl(graphs)]
    return [np.diag(c).tolist() for c in refine_2fwl(graphs)]


def write_wl(args: Any, graphs: Sequence[Any], pair: tuple[int, int] | None, test: str) -> None:
    """``matlang wl --draw FILE``: the first pair the test cannot tell apart (``pair``),
    nodes coloured by their stable colours; a note on stderr when there is none."""
    import sys

    if not getattr(args, "draw", None):
        return
    if pair is None:
        print(f"--draw: {test} told every pair apart; nothing drawn", file=sys.stderr)
        return
    gs = [graphs[pair[0]], graphs[pair[1]]]
    write(
        args,
        gs,
        nodes=wl_colors(gs, test),
        title=f"{test}: the same stable colours (the test cannot tell these graphs apart)",
    )


def write_bank(args: Any, out: dict[str, Any]) -> None:
    """``matlang bank --draw FILE``: the first separated pair with its witness sentence."""
    import sys

    if not getattr(args, "draw", None):
        return
    row = next((r for r in out.get("per_pair", ()) if r.get("separated")), None)
    if row is None:
        print("--draw: no separated pair with a witness to draw; nothing drawn", file=sys.stderr)
        return
    write(args, list(row["graphs"]), row["witness"])


__all__ = [
    "FORMATS",
    "Panel",
    "add_argument",
    "draw",
    "node_share",
    "panels",
    "render",
    "wl_colors",
    "write",
    "write_bank",
    "write_wl",
]
