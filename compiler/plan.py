"""The Plan: a small immutable layer IR between the AST and an ``nn.Module``.

A :class:`Plan` is a straight-line program of :class:`Step` s over four kinds of values, all
batched (one block-diagonal graph of ``G`` graphs, ``N`` nodes):

=========  ==============================================================================
``mask``   a set of entries ``(i, j)`` (an index ``(2, M)``, no repeats): the support a matrix
           is materialised on
``edge``   the values ``(M,)`` of a matrix on one mask (the step's ``mask`` register)
``node``   a node signal ``(N,)``: a column (or row) vector of every graph
``graph``  a graph scalar ``(G,)``
=========  ==============================================================================

Register ``k`` is the value of ``steps[k]``. Every op and its identity is in :data:`OPS`;
:func:`check` validates a plan against that table and :func:`render` prints it (``--explain``).
Plans are built through :class:`PlanBuilder`, which hash-conses steps, so a subexpression that
occurs twice is computed once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from fractions import Fraction
from typing import Any

import sympy as sp

from matlang.errors import CompileError

NODE, GRAPH, EDGE, MASK = "node", "graph", "edge", "mask"
KINDS = (NODE, GRAPH, EDGE, MASK)
_PREFIX = {NODE: "v", GRAPH: "g", EDGE: "e", MASK: "m"}


class Op(str, Enum):
    """The plan's ops. A ``str`` enum (not ``StrEnum``: Python 3.10 is supported): an op equals,
    hashes and prints as its name, so plans built or pickled with plain strings still match."""

    INPUT = "input"
    ONES = "ones"
    PARAM = "param"
    CONST = "const"
    EDGES = "edges"
    IDENTITY = "identity"
    EMPTY = "empty"
    FULL = "full"
    COMPOSE = "compose"
    UNION = "union"
    FLIP = "flip"
    ADJACENCY = "adjacency"
    EYE = "eye"
    LOOKUP = "lookup"
    TRANSPOSE = "transpose"
    GATHER_ROW = "gather_row"
    GATHER_COL = "gather_col"
    BROADCAST_EDGE = "broadcast_edge"
    SAMPLED = "sampled"
    BROADCAST = "broadcast"
    PROPAGATE = "propagate"
    READOUT = "readout"
    NONZERO = "nonzero"
    ROW_SUM = "row_sum"
    DIAGONAL = "diagonal"
    AS_EDGE = "as_edge"
    AS_NODE = "as_node"
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    NEG = "neg"
    APPLY = "apply"

    __hash__ = str.__hash__  # a dict keyed by ops answers plain strings too

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


#: ``hops(args, step, plan, hops)``: a register's receptive field from its arguments' (``args``)
#: and, where it needs them, every earlier register's (``hops``).
Hops = Callable[[list[float], "Step", "Plan", list[float]], float]


def _widest(args: list[float], step: Step, plan: Plan, hops: list[float]) -> float:
    return max(args, default=0.0)  # I, ∅, 𝟏, a constant: 0; S ∪ T and pointwise: the larger


def _one_hop(args: list[float], step: Step, plan: Plan, hops: list[float]) -> float:
    return 1.0


def _everywhere(args: list[float], step: Step, plan: Plan, hops: list[float]) -> float:
    return math.inf


def _first(args: list[float], step: Step, plan: Plan, hops: list[float]) -> float:
    return args[0]


def _summed(args: list[float], step: Step, plan: Plan, hops: list[float]) -> float:
    return args[0] + args[1]  # S∘T; v_j on entry (i, j) of S: v's hops past S's


def _propagate_hops(args: list[float], step: Step, plan: Plan, hops: list[float]) -> float:
    return max(args[1], args[0] + args[2])  # (mask, edge value, node value): M h


def _sampled_hops(args: list[float], step: Step, plan: Plan, hops: list[float]) -> float:
    first_mask = plan.steps[step.args[0]].mask
    assert first_mask is not None
    return max(args[0], hops[first_mask] + args[1])


def _transpose_hops(args: list[float], step: Step, plan: Plan, hops: list[float]) -> float:
    return args[0] + hops[step.args[1]]


@dataclass(frozen=True)
class OpSpec:
    """An op: the kinds of its arguments (``"x"``: any value kind, all ``"x"`` arguments alike;
    ``"*"``: any number more of them), the kind of its result (``"x"``: the same), what it
    computes, and what the passes need to know of it:

    * ``constant``: may be a graph constant (computed from the graph alone; only an input is
      not) — the constant stages' domain;
    * ``row_major``: a mask op whose entries come sorted row-major without repeats;
    * ``cheap``: costs about as much as fingerprinting the graph (a plan of these alone is not
      worth a per-graph cache);
    * ``identity``: a step of the plan of ``I`` (the diagonal mask, 𝟏, ``diag(𝟏)`` on it);
    * ``unit``: ``"always"`` — all ones on its mask when the batch has no edge weights;
      ``"args"`` — when every argument is;
    * ``hops``: its receptive field from its arguments' (:data:`Hops`).
    """

    args: tuple[str, ...]
    result: str
    doc: str
    constant: bool = True
    row_major: bool = False
    cheap: bool = False
    identity: bool = False
    unit: str = ""
    hops: Hops = _widest


OPS: dict[Op, OpSpec] = {
    # leaves
    Op.INPUT: OpSpec((), NODE, "a declared node input h (attr name)", constant=False),
    Op.ONES: OpSpec((), NODE, "𝟏", cheap=True, identity=True),
    Op.PARAM: OpSpec(
        (), GRAPH, "a trainable scalar (attr name), the same for every graph", cheap=True
    ),
    Op.CONST: OpSpec((), GRAPH, "a fixed scalar (attr value)", cheap=True),
    # masks
    Op.EDGES: OpSpec(
        (), MASK, "E: the edges of each graph", cheap=True, row_major=True, hops=_one_hop
    ),
    Op.IDENTITY: OpSpec(
        (), MASK, "I: the diagonal, entry k = (k, k)", cheap=True, row_major=True, identity=True
    ),
    Op.EMPTY: OpSpec((), MASK, "∅", cheap=True, row_major=True),
    Op.FULL: OpSpec(
        (), MASK, "J: all n² pairs of each graph (dense)", row_major=True, hops=_everywhere
    ),
    Op.COMPOSE: OpSpec(
        (MASK, MASK), MASK, "S∘T = {(i,j): ∃k (i,k)∈S, (k,j)∈T}", row_major=True, hops=_summed
    ),
    Op.UNION: OpSpec((MASK, MASK), MASK, "S ∪ T", row_major=True),
    Op.FLIP: OpSpec((MASK,), MASK, "Sᵀ, entry k = (j_k, i_k) (aligned with S)", cheap=True),
    # matrices on a mask
    Op.ADJACENCY: OpSpec(
        (MASK,), EDGE, "A on E (its edge weights, or 1)", cheap=True, unit="always", hops=_first
    ),
    Op.EYE: OpSpec((MASK,), EDGE, "I on S: [i = j]", cheap=True, hops=_first),
    Op.LOOKUP: OpSpec((EDGE, MASK), EDGE, "M on S, read from M on another mask (0 where absent)"),
    Op.TRANSPOSE: OpSpec(
        (EDGE, MASK),
        EDGE,
        "(Mᵀ)|S = M|Sᵀ: the same numbers, relabelled",
        cheap=True,
        unit="args",
        hops=_transpose_hops,
    ),
    Op.GATHER_ROW: OpSpec((NODE, MASK), EDGE, "(v 𝟏ᵀ)|S: v_i", cheap=True),
    Op.GATHER_COL: OpSpec((NODE, MASK), EDGE, "(𝟏 vᵀ)|S: v_j", cheap=True, hops=_summed),
    Op.BROADCAST_EDGE: OpSpec((GRAPH, MASK), EDGE, "(s 𝟏𝟏ᵀ)|S: the graph's scalar", cheap=True),
    Op.SAMPLED: OpSpec(
        (EDGE, EDGE, MASK), EDGE, "(M N)|S = Σ_k M_ik N_kj, a sampled product", hops=_sampled_hops
    ),
    # node and graph values
    Op.BROADCAST: OpSpec((GRAPH,), NODE, "s 𝟏: each node gets its graph's scalar", cheap=True),
    Op.PROPAGATE: OpSpec(
        (MASK, EDGE, NODE), NODE, "M h (Mᵀ h with attr transpose): messages", hops=_propagate_hops
    ),
    Op.READOUT: OpSpec((NODE,), GRAPH, "𝟏ᵀ h per graph", hops=_everywhere),
    Op.NONZERO: OpSpec((GRAPH,), GRAPH, "s, checked ≠ 0 on every graph (a divisor)"),
    Op.ROW_SUM: OpSpec((EDGE,), NODE, "M 𝟏 = Σ_j M_ij"),
    Op.DIAGONAL: OpSpec((EDGE,), NODE, "diag(M) as a vector: M_ii"),
    Op.AS_EDGE: OpSpec((NODE, MASK), EDGE, "diag(v) on I (no copy)", cheap=True, identity=True),
    Op.AS_NODE: OpSpec((EDGE,), NODE, "M on I as the vector of its diagonal (no copy)", cheap=True),
    # pointwise, on any kind (edge values on the same mask)
    Op.ADD: OpSpec(("x", "x"), "x", "x + y"),
    Op.SUB: OpSpec(("x", "x"), "x", "x - y"),
    Op.MUL: OpSpec(("x", "x"), "x", "x ⊙ y", unit="args"),
    Op.DIV: OpSpec(("x", "x"), "x", "x / y (y comes from a nonzero step)"),
    Op.NEG: OpSpec(("x",), "x", "-x", cheap=True),
    Op.APPLY: OpSpec(("x", "*"), "x", "f(x, …) entrywise (attr fn: index into plan.functions)"),
}


@dataclass(frozen=True)
class Step:
    """One op applied to earlier registers. ``mask`` is the mask register of an edge value."""

    op: Op  # (a plain str in plans built by hand or pickled before: equal, hashed alike)
    args: tuple[int, ...] = ()
    kind: str = NODE
    mask: int | None = None
    attrs: tuple[tuple[str, Any], ...] = ()
    note: str = field(default="", compare=False)

    def attr(self, key: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == key:
                return v
        return default


@dataclass(frozen=True)
class ParamSpec:
    """A trainable scalar: its name, exact initial value, and what it is in the sentence."""

    name: str
    value: Fraction
    note: str = ""


@dataclass(frozen=True)
class FunctionSpec:
    """A pointwise function with its literal arguments substituted."""

    name: str
    formula: sp.Expr
    symbols: tuple[sp.Symbol, ...]
    at_zero: float

    @property
    def arity(self) -> int:
        return len(self.symbols)

    def text(self) -> str:
        args = ", ".join(str(s) for s in self.symbols)
        return f"{self.name}({args}) = {sp.sstr(self.formula)}"


@dataclass(frozen=True)
class Output:
    """A sentence's value: register, level (``graph``, ``node`` or ``matrix``) and its text."""

    name: str
    register: int
    level: str
    text: str = ""


@dataclass(frozen=True)
class MaskInfo:
    """What a mask register is, in the support algebra (for printing and the cost model)."""

    register: int
    support: str
    order: float


@dataclass(frozen=True)
class Plan:
    """A checked straight-line program (see the module docstring)."""

    steps: tuple[Step, ...]
    outputs: tuple[Output, ...]
    params: tuple[ParamSpec, ...] = ()
    functions: tuple[FunctionSpec, ...] = ()
    inputs: tuple[str, ...] = ()
    masks: tuple[MaskInfo, ...] = ()

    @property
    def level(self) -> str:
        """``graph``, ``node`` or ``matrix`` (every output has the same level)."""
        return self.outputs[0].level if self.outputs else GRAPH

    def name(self, register: int) -> str:
        return f"{_PREFIX[self.steps[register].kind]}{register}"

    def mask_info(self, register: int) -> MaskInfo | None:
        for m in self.masks:
            if m.register == register:
                return m
        return None

    def last_use(self) -> list[int]:
        """For each register, the index of the last step (or ``len(steps)`` for outputs)
        that reads it: the interpreter frees it after that."""
        last = list(range(len(self.steps)))
        for k, s in enumerate(self.steps):
            for a in s.args:
                last[a] = max(last[a], k)
                m = self.steps[a].mask  # kernels read the index of an edge value's mask
                if m is not None:
                    last[m] = max(last[m], k)
            if s.mask is not None:
                last[s.mask] = max(last[s.mask], k)
        for o in self.outputs:
            last[o.register] = len(self.steps)
            m = self.steps[o.register].mask
            if m is not None:
                last[m] = len(self.steps)
        return last

    def layers(self) -> int:
        """Message-passing depth: the longest chain of propagate/sampled steps."""
        depth: list[int] = []
        for s in self.steps:
            d = max((depth[a] for a in s.args), default=0)
            if s.op in ("propagate", "sampled"):
                d += 1
            depth.append(d)
        return max((depth[o.register] for o in self.outputs), default=0)


class PlanError(CompileError):
    """A plan that breaks a rule of :data:`OPS` (a bug in whatever built it)."""


# --------------------------------------------------------------------------- builder


class PlanBuilder:
    """Appends steps, returning registers; an identical step is emitted once (hash-consing)."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self._index: dict[Step, int] = {}

    def kind(self, register: int) -> str:
        return self.steps[register].kind

    def mask_of(self, register: int) -> int | None:
        return self.steps[register].mask

    def emit(
        self,
        op: Op | str,
        *args: int,
        mask: int | None = None,
        note: str = "",
        **attrs: Any,
    ) -> int:
        op = Op(op)
        spec = OPS[op]
        if spec.result == "x":
            kind = self.steps[args[0]].kind
            mask = self.steps[args[0]].mask
        else:
            kind = spec.result
            if kind == EDGE and mask is None:
                mask = args[-1]  # every op making edge values takes its target mask last
        step = Step(op, tuple(args), kind, mask, tuple(sorted(attrs.items())), note)
        hit = self._index.get(step)
        if hit is not None:
            return hit
        self.steps.append(step)
        k = len(self.steps) - 1
        self._index[step] = k
        return k

    def build(
        self,
        outputs: tuple[Output, ...],
        params: tuple[ParamSpec, ...],
        functions: tuple[FunctionSpec, ...],
        inputs: tuple[str, ...],
        masks: tuple[MaskInfo, ...],
    ) -> Plan:
        plan = Plan(tuple(self.steps), outputs, params, functions, inputs, masks)
        check(plan)
        return plan


# --------------------------------------------------------------------------- checker


def check(plan: Plan) -> Plan:
    """Validate ``plan`` against :data:`OPS`; raises :class:`PlanError` naming the step."""
    steps = plan.steps
    params = {p.name for p in plan.params}
    if len(params) != len(plan.params):
        raise PlanError("two parameters share a name")

    def fail(k: int, msg: str) -> PlanError:
        return PlanError(f"plan step {k} ({steps[k].op}): {msg}")

    for k, s in enumerate(steps):
        spec = OPS.get(s.op)
        if spec is None:
            raise fail(k, "unknown op")
        for a in s.args:
            if not 0 <= a < k:
                raise fail(k, f"argument {a} is not an earlier register")
        fixed = [t for t in spec.args if t != "*"]
        variadic = "*" in spec.args
        if len(s.args) < len(fixed) or (not variadic and len(s.args) != len(fixed)):
            raise fail(k, f"takes {len(fixed)} argument(s), got {len(s.args)}")
        kinds = [steps[a].kind for a in s.args]
        for a, t in zip(s.args, fixed):
            if t in KINDS and steps[a].kind != t:
                raise fail(k, f"argument {plan.name(a)} is a {steps[a].kind}, expected a {t}")
        same = [steps[a] for a, t in zip(s.args, fixed) if t == "x"]
        if variadic:
            same += [steps[a] for a in s.args[len(fixed) :]]
        if same:
            if any(x.kind == MASK for x in same):
                raise fail(k, "a mask is not a value")
            if len({x.kind for x in same}) != 1:
                raise fail(k, f"mixes kinds {sorted(set(kinds))}")
            if len({x.mask for x in same}) != 1:
                raise fail(k, "edge values on different masks")
        expected = spec.result if spec.result != "x" else (same[0].kind if same else None)
        if s.kind != expected:
            raise fail(k, f"result kind {s.kind}, expected {expected}")
        if s.kind == EDGE:
            if s.mask is None or not 0 <= s.mask < k or steps[s.mask].kind != MASK:
                raise fail(k, "edge value without a valid mask register")
        elif s.mask is not None:
            raise fail(k, "only edge values have a mask")
        _check_op(plan, k, s, params, fail)
    for o in plan.outputs:
        if not 0 <= o.register < len(steps):
            raise PlanError(f"output {o.name} refers to a missing register {o.register}")
        want = {"graph": GRAPH, "node": NODE, "matrix": EDGE}.get(o.level)
        if want is None or steps[o.register].kind != want:
            raise PlanError(f"output {o.name}: a {o.level} output must be a {want} register")
    if len({o.level for o in plan.outputs}) > 1:
        raise PlanError("outputs of different levels")
    return plan


def _check_op(plan: Plan, k: int, s: Step, params: set[str], fail: Any) -> None:
    steps = plan.steps
    if s.op == "param" and s.attr("name") not in params:
        raise fail(k, f"unknown parameter {s.attr('name')!r}")
    if s.op == "input" and s.attr("name") not in plan.inputs:
        raise fail(k, f"undeclared input {s.attr('name')!r}")
    if s.op == "adjacency" and steps[s.args[0]].op != "edges":
        raise fail(k, "A lives on the edges mask")
    if s.op in ("adjacency", "eye", "lookup", "transpose", "gather_row", "gather_col"):
        target = s.args[0] if s.op in ("adjacency", "eye") else s.args[1]
        if s.mask != target:
            raise fail(k, "result must live on the target mask")
    if s.op == "broadcast_edge" and s.mask != s.args[1]:
        raise fail(k, "result must live on the target mask")
    if s.op == "sampled" and s.mask != s.args[2]:
        raise fail(k, "result must live on the target mask")
    if s.op == "propagate" and steps[s.args[1]].mask != s.args[0]:
        raise fail(k, "edge values must live on the propagated mask")
    if s.op == "transpose":
        src, dst = steps[s.args[0]].mask, s.args[1]
        assert src is not None
        flipped = (steps[dst].op == "flip" and steps[dst].args[0] == src) or (
            steps[src].op == "flip" and steps[src].args[0] == dst
        )
        # I and ∅ are their own transposes: values on them are read in place
        if not flipped and not (src == dst and steps[dst].op in ("identity", "empty")):
            raise fail(k, "transpose needs values on the flipped mask")
    if s.op == "as_edge" and steps[s.args[1]].op != "identity":
        raise fail(k, "as_edge targets the identity mask")
    if s.op == "as_node" and steps[s.args[0]].mask is not None:
        m = steps[s.args[0]].mask
        assert m is not None
        if steps[m].op != "identity":
            raise fail(k, "as_node reads values on the identity mask")
    if s.op == "apply":
        fn = s.attr("fn")
        if not isinstance(fn, int) or not 0 <= fn < len(plan.functions):
            raise fail(k, f"unknown function {fn!r}")
        if plan.functions[fn].arity != len(s.args):
            raise fail(k, f"{plan.functions[fn].name} takes {plan.functions[fn].arity} argument(s)")
    if s.op == "const" and not isinstance(s.attr("value"), Fraction):
        raise fail(k, "const needs an exact value")


# --------------------------------------------------------------------------- printer


def _format_step(plan: Plan, k: int) -> str:
    s = plan.steps[k]
    args = [plan.name(a) for a in s.args]
    extra = []
    for key, v in s.attrs:
        if key == "fn":
            extra.append(plan.functions[v].name)
        elif key == "transpose":
            if v:
                extra.append("transposed")
        else:
            extra.append(f"{key}={v}")
    inner = ", ".join([*args, *extra])
    where = ""
    if s.kind == EDGE and s.mask is not None:
        where = f" on {plan.name(s.mask)}"
    return f"{plan.name(k)} = {s.op}({inner}){where}"


def render(plan: Plan) -> str:
    """The plan as text: one line per step, with what it computes (kept on the plan, which is
    immutable: a layer's stage key and its compiled modules' constant keys read it)."""
    hit: str | None = plan.__dict__.get("_rendered")
    if hit is None:
        hit = _render(plan)
        object.__setattr__(plan, "_rendered", hit)
    return hit


def _render(plan: Plan) -> str:
    lines = []
    width = max((len(_format_step(plan, k)) for k in range(len(plan.steps))), default=0)
    for k, s in enumerate(plan.steps):
        text = _format_step(plan, k)
        note = s.note
        info = plan.mask_info(k)
        if info is not None:
            note = f"mask {info.support}" + (f"  ({note})" if note and note != info.support else "")
        lines.append(f"  {text.ljust(width)}  # {note}" if note else f"  {text}")
    head = []
    if plan.inputs:
        head.append("inputs: " + ", ".join(plan.inputs))
    if plan.params:
        head.append(
            "parameters: " + ", ".join(f"{p.name} = {p.value} ({p.note})" for p in plan.params)
        )
    if plan.functions:
        head.append("functions: " + "; ".join(f.text() for f in plan.functions))
    outs = [
        f"  out[{i}] = {plan.name(o.register)}  # {o.level}: {o.text}"
        for i, o in enumerate(plan.outputs)
    ]
    return "\n".join([*head, "steps:", *lines, "outputs:", *outs])


__all__ = [
    "NODE",
    "GRAPH",
    "EDGE",
    "MASK",
    "OPS",
    "Op",
    "OpSpec",
    "Step",
    "ParamSpec",
    "FunctionSpec",
    "Output",
    "MaskInfo",
    "Plan",
    "PlanBuilder",
    "PlanError",
    "check",
    "render",
]
