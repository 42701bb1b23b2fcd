"""The Plan IR: the checker accepts what the lowering builds and rejects broken plans (one rule
each), steps are immutable and shared (common subexpressions once), and the printer shows them."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import pytest
import sympy as sp

from matlang.compiler.lower import lower
from matlang.compiler.plan import (
    EDGE,
    GRAPH,
    MASK,
    NODE,
    OPS,
    FunctionSpec,
    Output,
    ParamSpec,
    Plan,
    PlanBuilder,
    PlanError,
    Step,
    check,
    render,
)
from matlang.parser import as_program


def _lowered(text: str, **kwargs: Any) -> Plan:
    """The plan of a program text (``lower`` takes a Program)."""
    return lower(as_program(text), **kwargs)


P = pytest.param


def _ops(plan: Plan) -> list[str]:
    return [s.op for s in plan.steps]


@pytest.mark.parametrize(
    "text",
    [
        "𝟏ᵀ (A ⊙ A²)² 𝟏",
        "tr(A⁴) - 2 tr(A²)",
        "(A ⊙ A²)ᵀ 𝟏 + diag(A 𝟏) A 𝟏",
        "input h; hᵀ relu(A - A²) h / (𝟏ᵀ A 𝟏 + 1)",
        "A ⊙ (A 𝟏 𝟏ᵀ)",
        "tr((diag(A 𝟏) A ⊙ A²)²)",
    ],
)
def test_checker_passes_lowered_plans_and_rejects_them_broken(text: str) -> None:
    """A lowered plan passes; the same plan broken in one place (a step reading a later
    register, an unknown op, a wrong arity, a wrong result kind, an output past the end, its
    literals' parameters undeclared) is rejected with the rule it breaks."""
    plan = _lowered(text)
    assert check(plan) is plan
    assert all(s.op in OPS for s in plan.steps)
    *body, last = plan.steps
    assert last.args  # a readout or an arithmetic step: it reads earlier registers
    other = GRAPH if last.kind != GRAPH else NODE

    def ending(step: Step) -> Plan:
        return dataclasses.replace(plan, steps=(*body, step))

    past_the_end = (Output("x", len(plan.steps), "graph"),)

    broken = [
        ("not an earlier register", dataclasses.replace(plan, steps=(last, *body))),
        ("unknown op", ending(dataclasses.replace(last, op="nop"))),
        ("takes .* argument", ending(dataclasses.replace(last, args=last.args * 3))),
        (f"result kind {other}, expected", ending(dataclasses.replace(last, kind=other))),
        ("missing register", dataclasses.replace(plan, outputs=past_the_end)),
    ]
    if plan.params:
        broken.append(("unknown parameter", dataclasses.replace(plan, params=())))
    for message, bad in broken:
        with pytest.raises(PlanError, match=message):
            check(bad)


def test_common_subexpressions_are_computed_once() -> None:
    # tr(A³) = Σ_i (A ⊙ A²ᵀ)_ij: the same sampled product A²|E as the ⊙
    plan = _lowered("tr(A³) + 𝟏ᵀ (A ⊙ A²) 𝟏 + 𝟏ᵀ (A ⊙ A²) 𝟏")
    assert _ops(plan).count("sampled") == 1
    assert _ops(plan).count("edges") == 1
    assert _ops(plan).count("adjacency") == 1
    plan = _lowered("𝟏ᵀ (A ⊙ A²)² 𝟏")
    assert _ops(plan).count("sampled") == 1
    assert _ops(plan).count("propagate") == 2


def test_step_lists_of_known_sentences() -> None:
    assert _ops(_lowered("𝟏ᵀ (A ⊙ A²)² 𝟏")) == [
        "ones", "edges", "adjacency", "sampled", "mul", "propagate", "propagate", "readout",
    ]  # fmt: skip
    # diag(A⁴)_i = Σ_j (A²)_ij (A²)_ji on the 2-hop mask
    assert _ops(_lowered("tr(A⁴)")) == [
        "edges", "compose", "adjacency", "sampled", "mul", "row_sum", "readout",
    ]  # fmt: skip
    # (v wᵀ) h = v (wᵀ h): a readout broadcast back, nothing n×n
    ops = _ops(_lowered("A 𝟏 𝟏ᵀ A 𝟏"))
    assert "readout" in ops and "broadcast" in ops and "full" not in ops


def test_layers() -> None:
    assert _lowered("A³ 𝟏").layers() == 3
    assert _lowered("𝟏ᵀ (A ⊙ A²)² 𝟏").layers() == 3
    assert _lowered("tr(A³)").layers() == 1
    assert _lowered("diag(𝟏) 𝟏").layers() == 0


def test_literals_are_parameters_at_their_exact_value() -> None:
    plan = _lowered("(tr(A⁴) + tr(A²) - 2 𝟏ᵀ A² 𝟏) / 8")
    assert [(p.name, p.value) for p in plan.params] == [("c0", 2), ("c1", 8)]
    assert "the literal 2 at 1:20" in plan.params[0].note
    plan = _lowered("(1/6) tr(A³)")
    assert [p.value for p in plan.params] == [1, 6]


def test_weights_all_adds_mixing_and_support_weights() -> None:
    plan = _lowered("𝟏ᵀ A 𝟏 + tr(A²)", weights="all")
    names = sorted(p.name for p in plan.params)
    assert names == ["a0", "w0", "w1"]
    assert all(p.value == 1 for p in plan.params)


def test_steps_and_plans_are_immutable() -> None:
    plan = _lowered("tr(A³)")
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.steps[0].op = "ones"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.outputs = ()  # type: ignore[misc]


def test_builder_hash_conses() -> None:
    b = PlanBuilder()
    e1 = b.emit("edges")
    e2 = b.emit("edges")
    a = b.emit("adjacency", e1, note="first")
    assert e1 == e2 and len(b.steps) == 2
    assert b.emit("adjacency", e1, note="a different note") == a
    assert b.steps[a].kind == EDGE and b.steps[a].mask == e1


def test_render_shows_steps_masks_parameters_and_outputs() -> None:
    text = render(_lowered("let f(x) = x*(x-1)/2; 𝟏ᵀ f(A ⊙ A²) 𝟏 / 2"))
    assert "parameters: c0 = 2 (the literal 2 at" in text
    assert "functions: f(x) = x*(x - 1)/2" in text
    assert "m1 = edges()" in text and "# mask E" in text
    assert "sampled(e2, e2, m1) on m1" in text
    assert "out[0] = g" in text and "graph: 𝟏ᵀ f(A ⊙ A²) 𝟏 / 2" in text


# --------------------------------------------------------------------------- the checker


def _plan(*steps: Step, outputs: tuple[Output, ...] = (), **kw: object) -> Plan:
    return Plan(tuple(steps), outputs, **kw)  # type: ignore[arg-type]


ONES = Step("ones", (), NODE)
EDGES = Step("edges", (), MASK)
IDENT = Step("identity", (), MASK)
F = FunctionSpec("f", sp.Symbol("x") ** 2, (sp.Symbol("x"),), 0.0)

BROKEN = [
    P(_plan(Step("frobnicate", (), NODE)), "unknown op", id="unknown-op"),
    P(_plan(Step("readout", (1,), GRAPH), ONES), "not an earlier register", id="forward-ref"),
    P(_plan(ONES, Step("readout", (0, 0), GRAPH)), "takes 1 argument", id="arity"),
    P(_plan(EDGES, Step("readout", (0,), GRAPH)), "is a mask, expected a node", id="kind"),
    P(_plan(ONES, Step("readout", (0,), NODE)), "result kind node", id="result-kind"),
    P(
        _plan(ONES, Step("param", (), GRAPH, attrs=(("name", "c0"),)),
              Step("add", (0, 1), NODE), params=(ParamSpec("c0", Fraction(1)),)),
        "mixes kinds",
        id="mixed-kinds",
    ),
    P(
        _plan(EDGES, IDENT, Step("eye", (0,), EDGE, 0), Step("eye", (1,), EDGE, 1),
              Step("add", (2, 3), EDGE, 0)),
        "different masks",
        id="different-masks",
    ),
    P(_plan(IDENT, Step("adjacency", (0,), EDGE, 0)), "A lives on the edges", id="adjacency"),
    P(_plan(EDGES, Step("eye", (0,), EDGE, None)), "without a valid mask", id="edge-no-mask"),
    P(_plan(ONES, Step("neg", (0,), NODE, 0)), "only edge values have a mask", id="node-mask"),
    P(
        _plan(EDGES, Step("compose", (0, 0), MASK), Step("adjacency", (0,), EDGE, 0),
              Step("propagate", (1, 2, 3), NODE), ONES),
        "not an earlier register",
        id="propagate-forward",
    ),
    P(
        _plan(EDGES, Step("compose", (0, 0), MASK), Step("adjacency", (0,), EDGE, 0), ONES,
              Step("propagate", (1, 2, 3), NODE)),
        "must live on the propagated mask",
        id="propagate-mask",
    ),
    P(
        _plan(EDGES, Step("compose", (0, 0), MASK), Step("adjacency", (0,), EDGE, 0),
              Step("transpose", (2, 1), EDGE, 1)),
        "transpose needs values on the flipped mask",
        id="transpose",
    ),
    P(_plan(Step("param", (), GRAPH, attrs=(("name", "c9"),))), "unknown parameter", id="param"),
    P(_plan(Step("input", (), NODE, attrs=(("name", "h"),))), "undeclared input", id="input"),
    P(
        _plan(ONES, ONES, Step("apply", (0, 1), NODE, attrs=(("fn", 0),)), functions=(F,)),
        "takes 1 argument",
        id="apply-arity",
    ),
    P(_plan(ONES, Step("apply", (0,), NODE, attrs=(("fn", 3),))), "unknown function", id="fn"),
    P(_plan(Step("const", (), GRAPH, attrs=(("value", 0.5),))), "exact value", id="const"),
    P(_plan(ONES, outputs=(Output("x", 0, "graph"),)), "must be a graph register", id="level"),
    P(_plan(ONES, outputs=(Output("x", 5, "node"),)), "missing register", id="out-missing"),
    P(
        _plan(ONES, Step("readout", (0,), GRAPH),
              outputs=(Output("a", 0, "node"), Output("b", 1, "graph"))),
        "different levels",
        id="mixed-levels",
    ),
    P(
        _plan(Step("param", (), GRAPH, attrs=(("name", "c0"),)),
              params=(ParamSpec("c0", Fraction(1)), ParamSpec("c0", Fraction(2)))),
        "share a name",
        id="duplicate-parameter",
    ),
]


@pytest.mark.parametrize("plan, message", BROKEN)
def test_checker_rejects_broken_plans(plan: Plan, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        check(plan)


def test_checker_accepts_a_hand_written_plan() -> None:
    plan = _plan(
        ONES,
        EDGES,
        Step("adjacency", (1,), EDGE, 1),
        Step("propagate", (1, 2, 0), NODE, attrs=(("transpose", False),)),
        Step("readout", (3,), GRAPH),
        outputs=(Output("edges", 4, "graph"),),
    )
    assert check(plan) is plan
    assert plan.layers() == 1
    assert plan.last_use() == [3, 3, 3, 4, 5]  # freed after the last step reading them
