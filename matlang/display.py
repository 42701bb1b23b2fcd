"""Notebook displays: small HTML (and SVG) for the results a user holds.

Jupyter calls ``_repr_html_`` / ``_repr_svg_`` on a cell's value; the classes delegate here:
a classification (:class:`matlang.analysis.Analysis`), a :class:`matlang.patterns.PatternResult`,
a compiled module (its ``--explain`` plan as a table) and a :class:`matlang.graphs.Graph`. Each
display stays under :data:`LIMIT` bytes: a drawing that would pass it is left out, with the line
that draws it instead.
"""

from __future__ import annotations

from html import escape
from typing import Any

#: The most bytes one display may take.
LIMIT = 50_000

#: Graphs above this many nodes are shown without a drawing.
DRAW_NODES = 100

_STYLE = (
    "<style>.matlang-r{font-family:sans-serif;font-size:13px;border-collapse:collapse}"
    ".matlang-r td,.matlang-r th{padding:2px 8px;text-align:left;vertical-align:top;"
    "border-bottom:1px solid #ddd}.matlang-r th{color:#555;font-weight:normal}"
    ".matlang-r code{font-size:12px}</style>"
)


def _row(key: str, value: str, *, raw: bool = False) -> str:
    return f"<tr><th>{escape(key)}</th><td>{value if raw else escape(value)}</td></tr>"


def _table(rows: list[str]) -> str:
    return f'{_STYLE}<table class="matlang-r">{"".join(rows)}</table>'


def _with_drawing(html: str, draw: Any, hint: str) -> str:
    """``html`` followed by the SVG ``draw()`` gives, when both fit in :data:`LIMIT` bytes;
    else ``html`` with ``hint`` (the call that draws it)."""
    try:
        svg = draw()
    except Exception:  # noqa: BLE001 - a display never fails for want of a picture
        svg = None
    if svg is not None:
        svg = svg[svg.index("<svg") :]
        if len((html + svg).encode()) + 64 <= LIMIT:
            return f"{html}<div>{svg}</div>"
    return html + f"<p><code>{escape(hint)}</code> draws it.</p>"


def analysis_html(a: Any) -> str:
    """A classification: fragment, WL level, reasons, rewrites and the witness pair drawn."""
    frag = a.fragment
    if a.syntactic_level != a.level:
        frag += f" (as written {a.syntactic_fragment}; lowered by the rewrites)"
    rows = [
        _row("sentence", f"<code>{escape(a.sentence)}</code>", raw=True),
        _row("fragment", frag),
        _row("WL", a.wl),
        _row("normalized", f"<code>{escape(a.normalized)}</code>", raw=True),
    ]
    why = "<br>".join(
        f"[{escape(r.stage)}] {escape(r.at)} <code>{escape(r.text)}</code> → {escape(r.why)}"
        for r in a.reasons[:12]
    )
    rows.append(_row("why", why or "only L1⁺ operations", raw=bool(why)))
    if a.rules:
        rows.append(
            _row(
                "rewrites",
                "<br>".join(f"{escape(n)}: {escape(i)}" for n, i in a.rules[:8]),
                raw=True,
            )
        )
    if a.witness is not None:
        rows.append(_row("witness", str(a.witness)))
    elif a.searched and a.level > 1:
        rows.append(_row("witness", "none found in the libraries (the level is an upper bound)"))
    rows.extend(_row("note", n) for n in a.notes[:4])
    html = _table(rows)
    if a.witness is None:
        return html
    from matlang.drawing import draw

    return _with_drawing(html, lambda: draw(a), "matlang.draw(result)")


def pattern_html(p: Any) -> str:
    """A pattern: its size, fragment, WL level, reason, witness and counting sentence."""
    g = p.graph
    rows = [
        _row(
            "pattern",
            f"{p.name} ({p.graph6}; {g.n} nodes, {len(g.edges)} edges, |Aut| = {p.automorphisms})",
        ),
        _row("fragment", p.fragment),
        _row("WL", p.wl),
        _row("why", p.reason),
    ]
    if p.witness is not None:
        w = p.witness
        rows.append(
            _row(
                "witness",
                f"{w['level']}-equivalent pair {w['pair'][0]} / {w['pair'][1]} ({w['source']}): "
                f"counts {w['values'][0]} ≠ {w['values'][1]}",
            )
        )
    rows.extend(_row("note", n) for n in p.notes[:4])
    if p.sentence is not None:
        text = p.sentence if len(p.sentence) <= 4000 else p.sentence[:4000] + " …"
        rows.append(_row("sentence", f"<pre>{escape(text)}</pre>", raw=True))
    html = _table(rows)
    if p.witness is None:
        return html
    from matlang.drawing import draw

    return _with_drawing(html, lambda: draw(p), "matlang.draw(result)")


def plan_html(plan: Any, *, dtype_bytes: int = 4) -> str:
    """A compiled plan (what ``matlang compile --explain`` prints) as a table: one row per step
    with its register, operation and what it computes, then the outputs and the cost model."""
    from matlang.compiler.cost import describe
    from matlang.compiler.plan import _format_step

    rows = ["<tr><th>register</th><th>step</th><th>computes</th></tr>"]
    steps = plan.steps
    shown = range(min(len(steps), 200))
    for k in shown:
        text = _format_step(plan, k)
        name, _, op = text.partition(" = ")
        note = steps[k].note or ""
        info = plan.mask_info(k)
        if info is not None:
            note = f"mask {info.support}" + (f" ({note})" if note and note != info.support else "")
        rows.append(
            f"<tr><td><code>{escape(name)}</code></td><td><code>{escape(op)}</code></td>"
            f"<td>{escape(note)}</td></tr>"
        )
    if len(steps) > len(shown):
        rows.append(f"<tr><td colspan=3>… and {len(steps) - len(shown)} more steps</td></tr>")
    for i, o in enumerate(plan.outputs):
        rows.append(
            f"<tr><td><code>out[{i}]</code></td><td><code>{escape(plan.name(o.register))}"
            f"</code></td><td>{escape(o.level)}: {escape(o.text)}</td></tr>"
        )
    head = []
    if plan.inputs:
        head.append(f"<p>inputs: {escape(', '.join(plan.inputs))}</p>")
    cost = describe(plan, dtype_bytes=dtype_bytes)
    html = "".join(head) + _table(rows) + f'<pre style="font-size:12px">{escape(cost)}</pre>'
    return html if len(html.encode()) <= LIMIT else html[: LIMIT - 200] + "…</table>"


def module_html(module: Any) -> str:
    """A compiled module: its level, dtype and plan table."""
    import torch

    nbytes = 8 if getattr(module, "dtype", None) == torch.float64 else 4
    head = (
        f"<p><b>CompiledModule</b>: {len(module.plan.outputs)} output(s), level "
        f"{escape(module.plan.level)}, {escape(str(getattr(module, 'dtype', '')))}</p>"
    )
    return head + plan_html(module.plan, dtype_bytes=nbytes)


def graph_svg(g: Any) -> str | None:
    """A graph drawn (None above :data:`DRAW_NODES` nodes: Jupyter then shows the text)."""
    if g.num_nodes > DRAW_NODES or g.num_nodes == 0:
        return None
    from matlang.drawing import draw

    svg = draw(g)
    return svg if len(svg.encode()) <= LIMIT else None


def graph_html(g: Any) -> str:
    """A graph: name, size, degrees, graph6 (small graphs) and its drawing."""
    import numpy as np

    deg = np.asarray(g.adjacency).sum(axis=1) if g.num_nodes else np.zeros(0)
    rows = [
        _row("graph", g.name or "(unnamed)"),
        _row("size", f"{g.num_nodes} nodes, {g.num_edges} edges"),
    ]
    if g.num_nodes:
        rows.append(_row("degrees", f"{deg.min():g} to {deg.max():g} (mean {deg.mean():.3g})"))
    if g.num_nodes <= 64:
        from matlang.errors import MatlangError
        from matlang.graphs import to_graph6

        try:
            rows.append(_row("graph6", f"<code>{escape(to_graph6(g))}</code>", raw=True))
        except MatlangError:
            pass
    html = _table(rows)
    if g.num_nodes == 0 or g.num_nodes > DRAW_NODES:
        return html
    from matlang.drawing import draw

    return _with_drawing(html, lambda: draw(g), "matlang.draw(graph)")


__all__ = [
    "LIMIT",
    "analysis_html",
    "graph_html",
    "graph_svg",
    "module_html",
    "pattern_html",
    "plan_html",
]
