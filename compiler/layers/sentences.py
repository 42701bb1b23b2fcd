"""Sentences as parts of a layer: what each one is, known before any graph is seen.

A layer takes MATLANG sentences and sorts them by the shape of their value:

==========  ===================================  =========================================
``matrix``  an operator ``C`` (``A``, ``A ⊙ A²``)  a support: ``C X W`` in a convolution
``node``    a vector, with no free input          a node feature computed from the graph
``node``    a vector of one free input ``h``      applied to each channel of ``x``
``graph``   a scalar                              a graph feature for readouts
==========  ===================================  =========================================

:func:`describe_sentences` lowers each sentence to its :class:`~compiler.plan.Plan` (so a
sentence whose support is full fails here, with the error :func:`compiler.api.compile` gives)
and records its fragment and WL level (:func:`matlang.analysis.classify`), the mask a support
lives on, its receptive field and the cost model's FLOPs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from matlang import ast
from matlang.analysis import classify
from matlang.compiler.cost import symbolic_flops
from matlang.compiler.lower import lower
from matlang.compiler.plan import EDGE, NODE, OPS, Plan
from matlang.errors import CompileError, MatlangError
from matlang.parser import as_program, parse_program


@dataclass(eq=False)
class SentenceInfo:
    """One sentence of a layer, analysed.

    Attributes:
        text: the sentence as given (or its canonical text when it came from a program with
            several sentences), parseable on its own.
        kind: ``"support"`` (matrix), ``"node"`` (vector without free input), ``"channel"``
            (vector of one free input, applied per channel) or ``"graph"`` (scalar;
            ``"graph-channel"`` with one free input).
        inputs: the free inputs it declares.
        fragment: ``"L1"``, ``"L2"`` or ``"L3"`` after normalisation.
        wl: the WL statement that goes with the fragment.
        mask: the support a matrix sentence is computed on (``""`` otherwise).
        receptive_field: hops a message travels in one application (``inf``: the whole graph).
        plan: the sentence lowered (once: the layer's stages are built from it, and a pickled
            layer keeps it).
        dense: whether full supports were allowed.
        expr: the sentence's expression (its ``let`` s inlined), read by the checks of its
            structure (a support's symmetry).
    """

    text: str
    kind: str
    inputs: tuple[str, ...]
    fragment: str
    wl: str
    mask: str
    receptive_field: float
    plan: Plan = field(repr=False)
    dense: bool = False
    expr: ast.Expr | None = field(default=None, repr=False)

    @cached_property
    def flops(self) -> str:
        """The cost model's FLOPs per graph (``n`` nodes, ``E`` directed edges), read from the
        plan on first use."""
        return str(symbolic_flops(self.plan))

    @property
    def hops(self) -> str:
        return "whole graph" if math.isinf(self.receptive_field) else f"{self.receptive_field:g}"

    def summary(self) -> str:
        """One line for ``repr``."""
        where = f", mask {self.mask}" if self.mask else ""
        return (
            f"[{self.kind}] {self.text}  ({self.fragment}, {self.wl}{where}, "
            f"receptive field {self.hops}, FLOPs ≈ {self.flops} per graph)"
        )


def split_sentences(sentences: str | ast.Expr | Sequence[str | ast.Expr]) -> list[str]:
    """Each sentence as a text of its own: a program with several sentences is split, each part
    keeping the ``let``/``input`` statements it needs (its canonical text)."""
    return [text for text, _ in _split(sentences)]


def _split(
    sentences: str | ast.Expr | Sequence[str | ast.Expr],
) -> list[tuple[str, ast.Program | None]]:
    """:func:`split_sentences` with each text's program where it was parsed already (the
    user's own text of one sentence: parsed once, here)."""
    items: list[str | ast.Expr] = (
        [sentences] if isinstance(sentences, (str, ast.Expr)) else list(sentences)
    )
    if not items:
        raise MatlangError("a layer needs at least one sentence")
    out: list[tuple[str, ast.Program | None]] = []
    for item in items:
        if isinstance(item, ast.Expr):
            out.append((str(item), None))
            continue
        if not isinstance(item, str):
            raise MatlangError(f"a sentence must be a string or an Expr, got {type(item).__name__}")
        program = parse_program(item)
        if len(program) == 1:
            out.append((item, program))  # the user's own text: errors point into it
        else:
            out.extend((str(s.expr), None) for s in program)
    return out


def _hops(plan: Plan) -> list[float]:
    """Receptive field of every register: hops of a mask; for a value, how far from its node
    (or from the row of its entry) the information it reads can come from (each op's
    :attr:`~compiler.plan.OpSpec.hops`)."""
    r: list[float] = []
    for s in plan.steps:
        r.append(OPS[s.op].hops([r[k] for k in s.args], s, plan, r))
    return r


def receptive_field(plan: Plan) -> float:
    """The largest receptive field of the plan's outputs (see :func:`_hops`); a matrix sentence
    reports the hops of its mask (a message along ``C`` travels that far)."""
    r = _hops(plan)
    out = 0.0
    for o in plan.outputs:
        step = plan.steps[o.register]
        if step.kind == EDGE:
            assert step.mask is not None
            out = max(out, r[step.mask])
        elif step.kind == NODE:
            out = max(out, r[o.register])
        else:
            out = math.inf
    return out


def describe_sentence(
    text: str, *, dense: bool = False, program: ast.Program | None = None
) -> SentenceInfo:
    """Analyse one sentence (see :class:`SentenceInfo`; ``program``: ``text`` parsed already);
    raises like ``compile`` does."""
    if program is None:
        program = as_program(text)
    plan = lower(program, dense=dense)
    if len(plan.outputs) != 1:  # pragma: no cover - split_sentences gives one sentence each
        raise CompileError(f"expected one sentence, got {len(plan.outputs)} in {text!r}")
    level = plan.level
    inputs = tuple(plan.inputs)
    if len(inputs) > 1:
        raise CompileError(
            f"{text!r} declares {len(inputs)} free inputs ({', '.join(inputs)}); a layer applies "
            "a sentence to one channel at a time, so it may read at most one"
        )
    if level == "matrix":
        if inputs:
            raise CompileError(f"the operator {text!r} may not read a free input")
        kind = "support"
    elif level == "node":
        kind = "channel" if inputs else "node"
    else:
        kind = "graph-channel" if inputs else "graph"
    expr = program[0].expr
    analysis = classify(expr, witness=False)
    mask = ""
    if level == "matrix":
        step = plan.steps[plan.outputs[0].register]
        info = plan.mask_info(step.mask) if step.mask is not None else None
        mask = info.support if info is not None else ""
    return SentenceInfo(
        text=text,
        kind=kind,
        inputs=inputs,
        fragment=analysis.fragment,
        wl=analysis.wl,
        mask=mask,
        receptive_field=receptive_field(plan),
        dense=dense,
        plan=plan,
        expr=expr,
    )


def describe_sentences(
    sentences: str | ast.Expr | Sequence[str | ast.Expr], *, dense: bool = False
) -> list[SentenceInfo]:
    """:func:`describe_sentence` of every sentence (see :func:`split_sentences`)."""
    return [describe_sentence(t, dense=dense, program=p) for t, p in _split(sentences)]


def by_kind(infos: Sequence[SentenceInfo], *kinds: str) -> list[SentenceInfo]:
    return [i for i in infos if i.kind in kinds]


def as_json(infos: Sequence[SentenceInfo]) -> list[dict[str, Any]]:
    return [
        {
            "sentence": i.text,
            "kind": i.kind,
            "fragment": i.fragment,
            "wl": i.wl,
            "mask": i.mask,
            "receptive_field": i.hops,
            "flops": i.flops,
        }
        for i in infos
    ]


__all__ = [
    "SentenceInfo",
    "as_json",
    "by_kind",
    "describe_sentence",
    "describe_sentences",
    "receptive_field",
    "split_sentences",
]
