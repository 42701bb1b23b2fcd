"""Plan → ``torch.nn.Module``: a compiled sentence running on batches of sparse graphs.

:class:`CompiledModule` interprets a checked :class:`~compiler.plan.Plan` step by step over a
batch (``runtime.batch.Batch``, a list of graphs, or a PyG ``Data``/``Batch`` as it is). Every
value is batched: masks are block-diagonal index sets with global node ids, so one step serves
every graph at once. A register is freed after its last use, so the memory held is what the plan
keeps alive, linear in the masks it builds.

Message passing, readouts and sampled products go through :mod:`runtime.sparse` (backends
``"torch_sparse"`` and ``"torch"``); index operations on masks (composition, union, look-up,
the all-pairs mask) through :mod:`runtime.masks`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MethodType
from typing import Any

import torch
from torch import Tensor, nn

from matlang.compiler.binding import Context as _Context
from matlang.compiler.binding import bind
from matlang.compiler.constants import no_underflow
from matlang.compiler.plan import EDGE, GRAPH, MASK, NODE, OPS, Op, Plan, Step, check, render
from matlang.compiler.stages import ConstantStages
from matlang.errors import EvaluationError, GraphError, MatlangError
from matlang.functions import numeric
from matlang.runtime import sparse
from matlang.runtime.layer_inputs import pyg_call
from matlang.runtime.masks import (
    compose_masks,
    full_mask,
    lookup,
    union_masks,
)
from matlang.runtime.preprocess import PreprocessCache

#: The values of the ``constants`` option (see :class:`CompiledModule`).
CONSTANT_STAGES = ("auto", "graphblas", "torch", "none")

def _unit_registers(plan: Plan) -> frozenset[int]:
    """Registers equal to all-ones on their mask when the batch has no edge weights: ``A``
    (adjacency), ``Aᵀ`` (transpose of one) and ``1 ⊙ 1``."""
    unit: set[int] = set()
    for k, st in enumerate(plan.steps):
        if st.kind != EDGE:
            continue
        how = OPS[st.op].unit
        if how == "always" or (how == "args" and unit.issuperset(st.args)):
            unit.add(k)
    return frozenset(unit)


# --------------------------------------------------------------------------- functions


class PointwiseMLP(nn.Module):
    """A small MLP applied entrywise, standing in for a pointwise ``f`` (``trainable_functions``).

    ``g(x) = mlp(x) − mlp(0) + f(0)`` keeps ``g(0) = f(0)``, so the masks inferred for ``f`` (which
    rely on ``f(0) = 0``) stay exact for ``g``.
    """

    def __init__(self, arity: int, at_zero: float, hidden: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.arity = max(arity, 1)
        self.net = nn.Sequential(
            nn.Linear(self.arity, hidden, dtype=dtype),
            nn.Tanh(),
            nn.Linear(hidden, 1, dtype=dtype),
        )
        self.at_zero = at_zero if math.isfinite(at_zero) else None

    def forward(self, *args: Tensor) -> Tensor:
        if not args:
            raise MatlangError("a trainable function needs at least one argument")
        x = torch.stack(args, -1)
        out = self.net(x).squeeze(-1)
        if self.at_zero is not None:
            zero = self.net(x.new_zeros((1, self.arity))).squeeze()
            out = out - zero + self.at_zero
        return out


# --------------------------------------------------------------------------- runtime


def _channel(x: Tensor) -> Tensor:
    """``(K,)`` → ``(K, 1)``: a value without channels, ready to broadcast over them."""
    return x.unsqueeze(-1) if x.dim() == 1 else x


def _aligned(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """Two values, the one without a channel axis given one when the other has it."""
    if x.dim() == y.dim():
        return x, y
    return _channel(x), _channel(y)


@dataclass
class RunStats:
    """What one forward pass built: entries of each mask and of each edge value, and the
    largest number of bytes the plan's live registers held at once."""

    mask_entries: dict[int, int]
    edge_entries: dict[int, int]
    peak_bytes: int
    num_nodes: int
    num_edges: int


class CompiledModule(nn.Module):
    """A MATLANG sentence (or several) compiled to masked message passing.

    Args:
        plan: a :class:`~compiler.plan.Plan` (checked again here).
        dtype: ``torch.float32`` (default) or ``torch.float64``.
        backend: ``"torch_sparse"``, ``"torch"`` or ``None`` (the best available).
        trainable_functions: replace each pointwise function by a :class:`PointwiseMLP`.
        nonfinite: ``"error"`` (like the dense evaluator, a function value or division that is
            not finite raises :class:`~matlang.errors.EvaluationError`, a non-finite input a
            :class:`~matlang.errors.GraphError`) or ``"keep"`` (inf/nan pass through
            unchecked: on a GPU, a call on a batch seen before then reads nothing back).
        validate: check every batch (symmetric edges, no self-loops, indices in range).
        constants: where the steps that depend only on the graph (the graph constants) run,
            once per batch, remembered on the batch: ``"auto"`` (default) by the batch's
            device, in torch on a GPU and on GraphBLAS on the CPU; ``"graphblas"``
            (:mod:`compiler.constants`, on the host); ``"torch"`` (:mod:`compiler.torch_constants`,
            on the batch's device); ``"none"``: no constant stage, every step runs in the
            interpreter on every call.
        cache: where graph constants are kept per graph across batches (a shuffled loader's
            new batches of known graphs assemble them, :mod:`compiler.constant_cache`):
            ``True`` (default) a cache of the module's own, a
            :class:`~runtime.preprocess.PreprocessCache` to share one, ``False`` none. Used
            when the constants do more than read the edges.

    Shapes:
        graph-level sentences: ``(G,)`` for one sentence, ``(G, S)`` for ``S`` sentences;
        node-level: ``(N,)`` / ``(N, S)``; a matrix sentence: a sparse ``(N, N)`` COO tensor
        (block-diagonal) holding the matrix on its mask.
    """

    def __init__(
        self,
        plan: Plan,
        *,
        dtype: torch.dtype = torch.float32,
        backend: str | None = None,
        trainable_functions: bool = False,
        nonfinite: str = "error",
        validate: bool = True,
        hidden: int = 16,
        constants: str = "auto",
        cache: PreprocessCache | bool = True,
    ) -> None:
        super().__init__()
        check(plan)
        if dtype not in (torch.float32, torch.float64):
            raise MatlangError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
        if nonfinite not in ("error", "keep"):
            raise MatlangError(f"nonfinite must be 'error' or 'keep', got {nonfinite!r}")
        if constants not in CONSTANT_STAGES:
            raise MatlangError(
                f"constants must be one of {', '.join(map(repr, CONSTANT_STAGES))}, "
                f"got {constants!r}"
            )
        if not isinstance(cache, (bool, PreprocessCache)):
            raise MatlangError(
                f"cache must be True, False or a PreprocessCache, got {type(cache).__name__}"
            )
        # (an empty cache is falsy: compare with the booleans)
        self.cache: PreprocessCache | None = (
            PreprocessCache() if cache is True else None if cache is False else cache
        )
        self.plan = plan
        # the dtype follows .to()/.double()/.float(): a (non-persistent) buffer carries it
        self.register_buffer("_dtype_probe", torch.empty(0, dtype=dtype), persistent=False)
        self.constants = constants
        self.backend = None if backend is None else sparse.resolve_backend(backend)
        self.nonfinite = nonfinite
        self.validate = validate
        self.trainable_functions = trainable_functions
        self.params = nn.ParameterDict(
            {p.name: nn.Parameter(torch.tensor(float(p.value), dtype=dtype)) for p in plan.params}
        )
        self.mlps = nn.ModuleList(
            [PointwiseMLP(f.arity, f.at_zero, hidden, dtype) for f in plan.functions]
            if trainable_functions
            else []
        )
        last = plan.last_use()
        self._frees: list[list[int]] = [[] for _ in plan.steps]
        for reg, k in enumerate(last):
            if k < len(plan.steps):
                self._frees[k].append(reg)
        self.__dict__["_last_run"] = None  # see last_stats
        #: how often each constant stage ran (not served from a batch memo), by its name
        self.stage_runs: dict[str, int] = {}
        self._unit_if_unweighted = _unit_registers(plan)
        # masks whose entries come sorted row-major (the order CSR wants): no sort check
        self._row_major = frozenset(
            k for k, st in enumerate(plan.steps) if st.kind == MASK and OPS[st.op].row_major
        )
        self._ones_registers = frozenset(k for k, st in enumerate(plan.steps) if st.op == "ones")
        self._mask_steps = frozenset(k for k, st in enumerate(plan.steps) if st.kind == MASK)
        self._edge_steps = frozenset(k for k, st in enumerate(plan.steps) if st.kind == EDGE)
        # what the constants depend on besides the graph: the plan and every option
        options = repr((render(plan), trainable_functions, nonfinite))
        self._constants_key = "constants." + hashlib.sha1(options.encode()).hexdigest()
        self._build_program()

    def _build_program(self) -> None:
        """What is rebuilt from the plan (after unpickling too): the pointwise functions, the
        interpreter's program — (register, kernel, step, argument registers, registers freed
        after it) — and the graph-constant stage."""
        plan = self.plan
        self._functions: list[Callable[..., Any]] = [
            numeric(f.formula, f.symbols, "torch") for f in plan.functions
        ]
        self._step_ops = [MethodType(AUTOGRAD[st.op], self) for st in plan.steps]
        self._program = [
            (k, op, st, st.args, self._frees[k])
            for k, (st, op) in enumerate(zip(plan.steps, self._step_ops))
        ]
        self._stages = ConstantStages(
            plan,
            trainable_functions=self.trainable_functions,
            nonfinite=self.nonfinite,
            cache=self.cache,
            key=self._constants_key,
        )
        self._torch_stage = self._stages.torch  # (its check_mod guards the interpreter's Mod)
        self._mod = self._stages.graphblas.mod_exactness  # the steps on the way to a Mod
        self._learnable = [p for p in self._program if not self._stages.const[p[0]]]

    # -- public -------------------------------------------------------------------------------
    @property
    def dtype(self) -> torch.dtype:
        """The dtype the module computes in (``.double()`` / ``.to(torch.float64)`` change it)."""
        probe: torch.Tensor = self._buffers["_dtype_probe"]  # type: ignore[assignment]
        return probe.dtype

    def _apply(self, fn: Any, recurse: bool = True) -> CompiledModule:  # type: ignore[override]
        new = fn(self._buffers["_dtype_probe"]).dtype  # refused before anything is converted
        if new not in (torch.float32, torch.float64):
            raise MatlangError(f"a compiled module computes in float32 or float64, not {new}")
        return super()._apply(fn, recurse)  # type: ignore[no-any-return]

    # pickling: the lowered pointwise functions are closures; rebuilt from the plan on load
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for key in (
            "_functions", "_step_ops", "_program", "_learnable", "_stages", "_torch_stage",
            "_mod", "_last_run",
        ):  # fmt: skip
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__["_last_run"] = None
        self._build_program()

    def _repr_html_(self) -> str:  # notebooks: the --explain plan as a table
        from matlang.display import module_html

        return module_html(self)

    @property
    def level(self) -> str:
        return self.plan.level

    @property
    def num_outputs(self) -> int:
        return len(self.plan.outputs)

    def exact_parameters(self) -> dict[str, float]:
        """The parameters' exact values (the solution the module starts at)."""
        return {p.name: float(p.value) for p in self.plan.params}

    def extra_repr(self) -> str:
        names = ", ".join(o.text for o in self.plan.outputs)
        head = f"{names}; level={self.level}, layers={self.plan.layers()}, dtype={self.dtype}"
        # which literal each parameter started from (c0, c1, … say nothing by themselves)
        notes = [f"\n{p.name} = {p.value}: {p.note}" for p in self.plan.params]
        return head + "".join(notes)

    def forward(
        self, data: Any, inputs: Any = None, batch: Any = None, edge_weight: Any = None
    ) -> Tensor:
        """``(data[, inputs])``, or PyG's ``(x, edge_index[, batch][, edge_weight])``: ``x``
        feeds the inputs as a batch's ``x`` does (:func:`~runtime.layer_inputs.pyg_call`)."""
        if isinstance(data, Tensor) and inputs is not None and not isinstance(inputs, Mapping):
            data, inputs = pyg_call(data, inputs, batch, edge_weight), None
        elif batch is not None or edge_weight is not None:
            raise GraphError("batch and edge_weight go with (x, edge_index, ...)", "batch")
        outs, ctx = self._run(data, inputs)
        if self.plan.level == "matrix":
            o = self.plan.outputs[0]
            mask = self.plan.steps[o.register].mask
            assert mask is not None
            return torch.sparse_coo_tensor(
                ctx.regs[mask], outs[0], (ctx.n, ctx.n, *outs[0].shape[1:]), check_invariants=False
            ).coalesce()
        if ctx.channels is not None:  # (X, d) for one sentence, (X, S, d) for S sentences
            outs = [o if o.dim() == 2 else o.unsqueeze(-1).expand(-1, ctx.channels) for o in outs]
            return outs[0] if len(outs) == 1 else torch.stack(outs, 1)
        if len(outs) == 1:
            return outs[0]
        return torch.stack(outs, -1)

    def edge_values(
        self, data: Any, inputs: Mapping[str, Any] | None = None
    ) -> list[tuple[Tensor, Tensor]]:
        """For a matrix sentence: ``[(index (2, M), values (M,))]`` on its mask, global ids."""
        outs, ctx = self._run(data, inputs)
        result = []
        for o, v in zip(self.plan.outputs, outs):
            mask = self.plan.steps[o.register].mask
            if mask is None:
                raise MatlangError(f"output {o.name} is not a matrix")
            result.append((ctx.regs[mask], v))
        return result

    def output_row_major(self) -> list[bool]:
        """For each output of a matrix sentence: whether :meth:`edge_values` gives its entries
        sorted row-major without repeats (its mask is made by a row-major op, see
        :data:`~compiler.plan.OPS`), so that a CSR needs no sort and no check."""
        return [self.plan.steps[o.register].mask in self._row_major for o in self.plan.outputs]

    def output_on_edges(self) -> list[bool]:
        """For each output of a matrix sentence: whether its mask is the batch's edges
        (``A ⊙ A²``, ``A ⊙ (A 𝟏 𝟏ᵀ)``): one entry per edge, in the edges' row-major order."""
        steps = self.plan.steps
        masks = [steps[o.register].mask for o in self.plan.outputs]
        return [m is not None and steps[m].op == Op.EDGES for m in masks]

    # -- interpreter --------------------------------------------------------------------------
    def _context(self, data: Any, inputs: Mapping[str, Any] | None) -> _Context:
        return bind(
            data,
            inputs,
            self.plan.inputs,
            validate=self.validate,
            dtype=self.dtype,
            backend=self.backend,
            unit=self._unit_if_unweighted,
            finite=self.nonfinite == "error",
        )

    def constant_stage_for(self, device: torch.device | str) -> str:
        """Which constant stage a batch on ``device`` gets: ``"torch"`` or ``"graphblas"``
        (the ``constants`` option; ``"auto"``: torch off the CPU)."""
        if self.constants == "auto":  # (a torch.device as it is: constructing one costs µs)
            dev = device if isinstance(device, torch.device) else torch.device(device)
            return "graphblas" if dev.type == "cpu" else "torch"
        return self.constants

    def _count_stage(self, where: str) -> None:
        runs = self.__dict__.setdefault("stage_runs", {})
        runs[where] = runs.get(where, 0) + 1

    def _run(self, data: Any, inputs: Mapping[str, Any] | None) -> tuple[list[Tensor], _Context]:
        ctx = self._context(data, inputs)
        regs = ctx.regs
        program = self._program
        stats: list[Any] = [None] * len(self.plan.steps)  # (shape, bytes) for the statistics
        given = ctx.batch.edge_weight
        if self.constants != "none" and not (given is not None and given.requires_grad):
            where = self.constant_stage_for(ctx.device)
            constants, stats, ctx.prebuilt = self._stages.load(
                ctx, where, self._count_stage, lambda r: self._mod.handed(self, ctx, r)
            )
            stats = list(stats)
            regs.update(constants)
            program = self._learnable
        for k, op, step, args, frees in program:
            vals = [regs[a] for a in args]
            regs[k] = out = op(ctx, step, vals)
            if k in self._mod.steps:  # on the way to a Mod: no rounding
                self._mod.interpreted(self, ctx, k, out, vals)
            stats[k] = (out.shape, out.nbytes)
            for a in frees:
                regs.pop(a, None)
        self.__dict__["_last_run"] = (stats, ctx.n, int(ctx.edges.shape[1]))
        outs = [regs[o.register] for o in self.plan.outputs]
        if self.nonfinite == "error":
            for o, v in zip(self.plan.outputs, outs):
                self._finite(ctx, self.plan.steps[o.register], v, f"the value of {o.text}")
        return outs, ctx

    @property
    def last_stats(self) -> RunStats | None:
        """What the last forward pass built (:class:`RunStats`); ``None`` before the first."""
        run = self.__dict__.get("_last_run")
        if run is None:
            return None
        stats, n, e = run
        live = peak = 0
        for k, (_, size) in enumerate(stats):
            live += size
            peak = max(peak, live)
            live -= sum(stats[a][1] for a in self._frees[k])
        mask_entries = {k: int(stats[k][0][-1]) for k in sorted(self._mask_steps)}
        edge_entries = {k: math.prod(stats[k][0]) for k in sorted(self._edge_steps)}
        return RunStats(mask_entries, edge_entries, peak, n, e)

    def _graph_of(self, ctx: _Context, step: Step, index: int) -> str:
        if step.kind == GRAPH:
            g = index
        elif step.kind == NODE:
            g = int(ctx.node_graph[index])
        else:
            assert step.mask is not None
            g = int(ctx.node_graph[ctx.regs[step.mask][0, index]])
        return ctx.batch.graph_label(g)

    def _finite(self, ctx: _Context, step: Step, v: Tensor, what: str | Callable[[], str]) -> None:
        """Raise :class:`EvaluationError` naming ``what`` (or ``what()``) where ``v`` is not
        finite."""
        # A finite sum means every entry is finite (inf and nan propagate through a sum); one
        # reduction instead of a mask. A non-finite sum (overflow too) takes the exact look.
        if v.is_floating_point() and math.isfinite(v.detach().sum().item()):
            return
        what = what if isinstance(what, str) else what()
        bad = ~torch.isfinite(v)
        if bool(bad.any()):
            at = torch.nonzero(bad)[0]
            i = int(at[0])
            raise EvaluationError(
                f"{what} is {float(v.detach()[tuple(at)])} on graph {self._graph_of(ctx, step, i)} "
                "(nonfinite='keep' keeps inf/nan: matlang.compile, SentenceConv and "
                "SentenceReadout take it)"
            )

    def _mask(self, ctx: _Context, step: Step) -> Tensor:
        assert step.mask is not None
        return ctx.regs[step.mask]

    def _edge_mask(self, ctx: _Context, register: int) -> Tensor:
        m = self.plan.steps[register].mask
        assert m is not None
        return ctx.regs[m]

    # leaves
    def _op_input(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return ctx.inputs[step.attr("name")]  # resolved and checked by _inputs

    def _op_ones(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return torch.ones(ctx.n, dtype=ctx.dtype, device=ctx.device)

    def _op_param(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return self.params[step.attr("name")].expand(ctx.g)

    def _op_const(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return torch.full((ctx.g,), float(step.attr("value")), dtype=ctx.dtype, device=ctx.device)

    # masks
    def _op_edges(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return ctx.edges

    def _op_identity(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return torch.arange(ctx.n, device=ctx.device).repeat(2, 1)

    def _op_empty(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return torch.zeros((2, 0), dtype=torch.int64, device=ctx.device)

    def _op_full(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return full_mask(ctx.node_graph, ctx.ptr)

    def _op_compose(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return compose_masks(args[0], args[1], ctx.n)

    def _op_union(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return union_masks(args[0], args[1], ctx.n)

    def _op_flip(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return args[0].flip(0)

    # matrices on masks
    def _op_adjacency(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        if ctx.edge_weight is not None:
            return ctx.edge_weight
        # 0/1 adjacency: ones on E as a stride-0 view (no memory); kernels that see the
        # register in ctx.ones skip it altogether.
        return torch.ones((), dtype=ctx.dtype, device=ctx.device).expand(args[0].shape[1])

    def _op_eye(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return (args[0][0] == args[0][1]).to(ctx.dtype)

    def _op_lookup(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return lookup(self._edge_mask(ctx, step.args[0]), args[0], args[1], ctx.n)

    def _op_transpose(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return args[0]  # M on Sᵀ, entry k = M_{j_k i_k} = (Mᵀ)_{i_k j_k}

    def _op_gather_row(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return args[0].index_select(0, args[1][0])

    def _op_gather_col(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return args[0].index_select(0, args[1][1])

    def _op_broadcast_edge(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return args[0].index_select(0, ctx.node_graph.index_select(0, args[1][0]))

    def _op_sampled(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        a, b, s = args
        ia = self._edge_mask(ctx, step.args[0])
        ib = self._edge_mask(ctx, step.args[1])
        if s.shape[1] == 0:
            return a.new_zeros((0,))
        if ia.shape[1] == 0 or ib.shape[1] == 0:
            return a.new_zeros((s.shape[1],))
        return sparse.sampled_product(ia, a, ib, b, s, ctx.n, backend=ctx.backend)

    # node and graph values
    def _op_broadcast(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return args[0].index_select(0, ctx.node_graph)

    def _operator(
        self, ctx: _Context, step: Step, index: Tensor, vals: Tensor, unit: bool, dtype: torch.dtype
    ) -> Any:
        """The torch_sparse ``SparseTensor`` of a propagate step's matrix (on ``index``, its mask
        or the mask's transpose), built once per pass."""
        transposed = bool(step.attr("transpose"))
        key = (step.args[0], step.args[1], transposed)
        op = ctx.operators.get(key)
        if op is None:
            from torch_sparse import SparseTensor

            # A row-major mask needs no sort check; a transposed one is checked in O(E) and
            # sorted only if needed. Every mask is in range: the edges were checked once
            # (prepared_edges) and the mask kernels keep ids in range.
            op = SparseTensor(
                row=index[0],
                col=index[1],
                value=None if unit else vals.to(dtype),
                sparse_sizes=(ctx.n, ctx.n),
                is_sorted=not transposed and step.args[0] in self._row_major,
                trust_data=True,
            )
            ctx.operators[key] = op
        return op

    @staticmethod
    def _row_pointers(ctx: _Context, mask: int, transposed: bool, index: Tensor) -> Tensor:
        """CSR row pointers of ``index`` (mask register ``mask``, maybe transposed), built once
        per pass."""
        key = ("rowptr", mask, transposed)
        rowptr = ctx.operators.get(key)
        if rowptr is None:
            rowptr = ctx.operators[key] = sparse.row_pointers(index[0], ctx.n)
        return rowptr

    def _op_propagate(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        mask, vals, h = args
        transposed = bool(step.attr("transpose"))
        op = ctx.prebuilt.get((step.args[0], step.args[1], transposed))
        if op is not None:  # a constant matrix: one product over every channel
            return op.matmul(h if h.dtype == op.value.dtype else h.to(op.value.dtype))
        index = mask.flip(0) if transposed else mask
        if index.shape[1] == 0:
            return h.new_zeros((ctx.n, *h.shape[1:]))
        unit = step.args[1] in ctx.ones  # A of a 0/1 graph: a value-less operator
        if unit and step.args[2] in self._ones_registers:
            # A 𝟏 of a 0/1 matrix (no repeated entries): its row counts
            rowptr = self._row_pointers(ctx, step.args[0], transposed, index)
            return (rowptr[1:] - rowptr[:-1]).to(h.dtype)
        if ctx.backend != "torch_sparse" or vals.dim() != 1:
            weight = None if unit else vals
            return sparse.propagate(index, h, weight, num_nodes=ctx.n, backend=ctx.backend)
        if (
            not transposed
            and step.args[0] in self._row_major
            and h.dim() == 1
            and (unit or not vals.requires_grad)
        ):
            # a sorted mask and one signal: torch's CSR matrix-vector product (exact gradient
            # in h), cheaper than torch_sparse's spmm, which takes h as a one-column matrix
            rowptr = self._row_pointers(ctx, step.args[0], False, index)
            key = (step.args[0], step.args[1], False, "csr")
            csr = ctx.operators.get(key)
            if csr is None:
                value = torch.ones((), dtype=h.dtype, device=h.device) if unit else vals
                value = value.to(h.dtype).expand(index.shape[1]).contiguous()
                csr = sparse.csr_matrix(rowptr, index[1], value, (ctx.n, ctx.n))
                ctx.operators[key] = csr
            return torch.mv(csr, h)
        op = self._operator(ctx, step, index, vals, unit, h.dtype)
        out = op.matmul(h if h.dim() == 2 else h.unsqueeze(-1))
        return out if h.dim() == 2 else out.squeeze(-1)

    def _op_readout(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        if args[0].numel() == 0:
            return args[0].new_zeros((ctx.g, *args[0].shape[1:]))
        return sparse.scatter_sum(args[0], ctx.node_graph, ctx.g, backend=ctx.backend)

    def _op_row_sum(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        mask = self._edge_mask(ctx, step.args[0])
        if mask.shape[1] == 0:
            return args[0].new_zeros((ctx.n, *args[0].shape[1:]))
        return sparse.scatter_sum(args[0], mask[0], ctx.n, backend=ctx.backend)

    def _op_diagonal(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        mask = self._edge_mask(ctx, step.args[0])
        on = mask[0] == mask[1]
        out = args[0].new_zeros((ctx.n, *args[0].shape[1:]))
        return out.index_add(0, mask[0][on], args[0][on])

    def _op_as_edge(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return args[0]  # entry k of the identity mask is (k, k)

    def _op_as_node(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return args[0]

    # pointwise: a value without channels broadcasts over the channels of the other
    def _op_add(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        x, y = _aligned(args[0], args[1])
        return x + y

    def _op_sub(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        x, y = _aligned(args[0], args[1])
        return x - y

    def _op_mul(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        a, b = step.args
        if a in ctx.ones and args[0].shape == args[1].shape:
            return args[1]  # 1 ⊙ M = M (e.g. A ⊙ A² of a 0/1 graph on E)
        if b in ctx.ones and args[0].shape == args[1].shape:
            return args[0]
        x, y = _aligned(args[0], args[1])
        return no_underflow(self, step, x, y, x * y, lambda i: self._graph_of(ctx, step, i))

    def _op_neg(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        return -args[0]

    def _op_div(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        x, y = _aligned(args[0], args[1])
        return no_underflow(self, step, x, y, x / y, lambda i: self._graph_of(ctx, step, i))

    def _op_nonzero(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        if self.nonfinite == "error" and not bool(args[0].detach().all()):  # nan is non-zero
            g = int(torch.nonzero(args[0] == 0)[0, 0])
            label, what = ctx.batch.graph_label(g), step.attr("what")
            raise EvaluationError(f"division by zero on graph {label}: the divisor {what} is 0")
        return args[0]

    def _op_apply(self, ctx: _Context, step: Step, args: list[Tensor]) -> Tensor:
        fn = step.attr("fn")
        if len(args) > 1 and len({a.dim() for a in args}) > 1:
            args = list(torch.broadcast_tensors(*[_channel(a) for a in args]))
        if self.trainable_functions:
            out = self.mlps[fn](*args)
        else:  # a Mod past the integers the dtype holds is noise: refused (float32: 2²⁴)
            self._torch_stage.check_mod(step, args, lambda i: self._graph_of(ctx, step, i))
            out = self._functions[fn](*args)
            if not isinstance(out, Tensor):
                out = torch.full((ctx.g,), float(out), dtype=ctx.dtype, device=ctx.device)
        out = out.to(ctx.dtype)
        if self.nonfinite == "error":
            name = self.plan.functions[fn].name
            self._finite(ctx, step, out, lambda: f"{name}(...) in {step.note or 'the sentence'}")
        return out


#: The autograd interpreter's kernels by op: ``kernel(module, ctx, step, args)``, its ``_op_*``
#: methods (an op without one fails at import, not in a run).
AUTOGRAD: dict[Op, Callable[[CompiledModule, _Context, Step, list[Tensor]], Tensor]] = {
    op: getattr(CompiledModule, f"_op_{op}") for op in Op
}


__all__ = [
    "AUTOGRAD",
    "CompiledModule",
    "PointwiseMLP",
    "RunStats",
]
