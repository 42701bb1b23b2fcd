"""The graph-constant stage of a Plan: every step that depends only on the graph, on GraphBLAS.

A step is a graph constant when nothing it reads is a node input or a trainable parameter: the
masks, ``A`` and every product, Hadamard product, diagonal, degree, trace and fixed function of
those. :class:`ConstantStage` finds them in a :class:`~compiler.plan.Plan` and computes them once
per batch with :mod:`runtime.graphblas` (masked ``mxm`` that never forms the unmasked product,
int64 where the values are integers); :meth:`ConstantStage.evaluate` returns the registers the
learnable stage reads, as torch tensors (masks as ``(2, M)`` indices in the interpreter's order,
values without a copy where the dtype allows).

Its twin in torch, for batches on a GPU, is :mod:`compiler.torch_constants` (same steps, same
values, on the batch's device); a compiled module picks one by its ``constants`` option.

With ``exact=True`` (:func:`evaluate_exact`) parameters count as constants at their exact
values, so a sentence without node inputs is computed whole: integers and Fractions like the
dense evaluator, on graphs far too large for it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from matlang.compiler.plan import EDGE, GRAPH, MASK, NODE, Plan, Step
from matlang.errors import EvaluationError, MatlangError
from matlang.functions import (
    FLOAT_EXACT,
    exact_degree,
    mod_argument_bound,
    mod_refusal,
    numeric,
)
from matlang.graphs import is_one_graph
from matlang.runtime import kernels
from matlang.runtime.graphblas import Kernels, Mask, is_iso, maxabs

#: A matrix of Fractions comes back dense (object array) up to this many nodes.
DENSE_RATIONAL_LIMIT = 4096

#: float32 holds every integer up to this exactly.
FLOAT32_EXACT = 2**24


def constant_steps(
    plan: Plan, *, trainable_functions: bool = False, exact: bool = False
) -> list[bool]:
    """For each step, whether it depends only on the graph (``exact``: parameters too)."""
    const: list[bool] = []
    for st in plan.steps:
        if st.op == "input":
            const.append(False)
        elif st.op == "param":
            const.append(exact)
        elif st.op == "apply" and trainable_functions:
            const.append(False)
        else:
            const.append(all(const[a] for a in st.args))
    return const


def boundary(plan: Plan, const: list[bool]) -> list[int]:
    """The constant registers the learnable stage reads (its arguments, their masks, the masks
    of its own values) or returns."""
    need: set[int] = set()
    for k, st in enumerate(plan.steps):
        if const[k]:
            continue
        for a in st.args:
            if const[a]:
                need.add(a)
            m = plan.steps[a].mask
            if m is not None:
                need.add(m)
        if st.mask is not None:
            need.add(st.mask)
    for o in plan.outputs:
        if const[o.register]:
            need.add(o.register)
        m = plan.steps[o.register].mask
        if m is not None:
            need.add(m)
    return sorted(need)


@dataclass
class Graphs:
    """What the stage needs of a batch: sizes, offsets, coalesced edges, labels."""

    n: int
    ptr: np.ndarray  # (G + 1,) int64
    node_graph: np.ndarray  # (N,) int64
    rows: np.ndarray  # (E,) int64, sorted row-major without repeats
    cols: np.ndarray
    weight: np.ndarray | None  # (E,) or None for a 0/1 graph
    label: Callable[[int], str]
    symmetric: bool = False  # the edges and weights were checked symmetric (validation)
    indptr: np.ndarray | None = None  # (N + 1,) row pointers of the edges, where known

    @property
    def g(self) -> int:
        return int(self.ptr.size - 1)


class ConstantStage:
    """Computes a plan's graph constants (see the module docstring).

    Args:
        plan: the plan.
        trainable_functions: pointwise functions are MLPs (not constants).
        exact: parameters are constants at their exact value; integers never overflow silently
            (a bound past int64 raises) and divisions give Fractions.
        nonfinite: ``"error"`` raises on a non-finite function value or a division by 0.
    """

    def __init__(
        self,
        plan: Plan,
        *,
        trainable_functions: bool = False,
        exact: bool = False,
        nonfinite: str = "error",
    ) -> None:
        self.plan = plan
        self.exact = exact
        self.nonfinite = nonfinite
        self.const = constant_steps(plan, trainable_functions=trainable_functions, exact=exact)
        self.exports = boundary(plan, self.const)
        last = [-1] * len(plan.steps)
        for k, st in enumerate(plan.steps):
            if self.const[k]:
                for a in st.args:
                    last[a] = k
                    m = plan.steps[a].mask
                    if m is not None:
                        last[m] = k
        keep = set(self.exports)
        self._triangles = _triangle_readouts(plan, self.const, keep)
        for k, inner in self._triangles.items():  # the fused readout reads the edge mask
            last[inner[0]] = max(last[inner[0]], k)
        self._frees: list[list[int]] = [[] for _ in plan.steps]
        for r, k in enumerate(last):
            if k >= 0 and r not in keep:
                self._frees[k].append(r)
        self._functions: dict[tuple[int, bool], Callable[..., Any]] = {}
        self._exactly: dict[int, tuple[bool, Callable[[float], float] | None]] = {}

    @property
    def steps(self) -> frozenset[int]:
        return frozenset(k for k, c in enumerate(self.const) if c)

    def _function(self, fn: int, exact: bool) -> Callable[..., Any]:
        """Function ``fn`` on numpy arrays (``exact``: on Python numbers)."""
        hit = self._functions.get((fn, exact))
        if hit is None:
            f = self.plan.functions[fn]
            hit = numeric(f.formula, f.symbols, "exact" if exact else "numpy")
            self._functions[(fn, exact)] = hit
        return hit

    def _exactness(self, fn: int) -> tuple[bool, Callable[[float], float] | None]:
        """Whether ``fn``'s values are exactly computable (a polynomial, or with ``Mod``:
        :func:`~matlang.functions.exact_degree`), and with ``Mod`` the bound of its arguments
        (:func:`~matlang.functions.mod_argument_bound`); sympy once per function."""
        known = self._exactly.get(fn)
        if known is None:
            f = self.plan.functions[fn]
            known = (
                exact_degree(f.formula, f.symbols) is not None,
                mod_argument_bound(f.formula, f.symbols),
            )
            self._exactly[fn] = known
        return known

    # -- running ---------------------------------------------------------------------------
    def operator(
        self, graphs: Graphs, regs: Mapping[int, Any], mask: int, values: int, transpose: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """The CSR arrays of the matrix ``values`` on ``mask`` (transposed) and whether it is
        symmetric (both registers exported by :meth:`run`)."""
        kern: kernels.Kernels[np.ndarray, Mask] = Kernels(
            graphs.n, graphs.ptr, graphs.node_graph, exact=self.exact
        )
        m, v = regs[mask], regs[values]
        # A on the validated edges is symmetric: no transpose to compare with
        known = (
            graphs.symmetric
            and self.plan.steps[mask].op == "edges"
            and (is_iso(v) or v is graphs.weight)
        )
        return kern.csr(m, v, transpose, symmetric=True if known else None)

    def run(
        self, graphs: Graphs, *, per_graph: bool = False
    ) -> tuple[dict[int, Any], dict[int, Any]]:
        """Every exported register as a numpy value (masks as :class:`Mask`, values as arrays,
        0-d where the same on every entry), and the number of entries of every register
        computed (a mask's entries, a value's size); ``per_graph``: those numbers for each
        graph, ``(G,)`` arrays."""
        kern = Kernels(graphs.n, graphs.ptr, graphs.node_graph, exact=self.exact)
        regs: dict[int, Any] = {}
        sizes: dict[int, Any] = {}
        # tr(A³) of a 0/1 symmetric A by the triangle count: its three inner steps are skipped
        fused = self._triangles if graphs.weight is None and graphs.symmetric else {}
        skipped = {r for inner in fused.values() for r in inner[1:]}
        for k, st in enumerate(self.plan.steps):
            if not self.const[k]:
                continue
            if k in skipped:
                v = None
            elif k in fused:
                v = kern.triangle_trace(regs[fused[k][0]])
            else:
                v = self._step(kern, graphs, k, st, regs)
            regs[k] = v
            if not per_graph:
                sizes[k] = v.nnz if isinstance(v, Mask) else size_of(st, regs, graphs)
                if k in skipped:  # not computed: no entries
                    sizes[k] = 0
            elif isinstance(v, Mask):  # block-diagonal: graph g's rows are its nodes
                sizes[k] = np.diff(v.indptr[graphs.ptr])
            elif st.kind == EDGE:
                assert st.mask is not None
                sizes[k] = sizes[st.mask]
            else:
                sizes[k] = np.diff(graphs.ptr) if st.kind == NODE else np.ones(graphs.g, np.int64)
            for r in self._frees[k]:
                regs.pop(r, None)
        return {k: regs[k] for k in self.exports if k in regs}, sizes

    def _mask(self, regs: dict[int, Any], register: int) -> Any:
        """The mask register ``register`` is on (a GraphBLAS or a torch mask, by the stage)."""
        m = self.plan.steps[register].mask
        assert m is not None
        return regs[m]

    def _kernel_op(
        self, kern: kernels.Kernels[Any, Any], st: Step, a: list[Any], regs: dict[int, Any]
    ) -> Any:
        """The plan ops that are one call of the kernels' interface, shared by this stage
        (GraphBLAS :class:`Kernels`) and its torch twin (``TorchKernels``); ``NotImplemented``
        for the ops each stage computes itself."""
        op = st.op
        if op == "compose":
            return kern.compose(a[0], a[1])
        if op == "union":
            return kern.union(a[0], a[1])
        if op == "flip":
            return a[0].flip()
        if op == "eye":
            return kern.eye(a[0])
        if op == "lookup":
            return kern.lookup(self._mask(regs, st.args[0]), a[0], a[1])
        if op == "transpose":
            return a[0]  # the same numbers on the flipped mask
        if op == "propagate":
            return kern.propagate(a[0], a[1], a[2], bool(st.attr("transpose")))
        if op == "readout":
            return kern.readout(a[0])
        if op == "row_sum":
            return kern.row_sum(self._mask(regs, st.args[0]), a[0])
        if op == "diagonal":
            return kern.diagonal(self._mask(regs, st.args[0]), a[0])
        if op in ("add", "sub"):
            return kern.add(a[0], a[1], 1 if op == "add" else -1)
        if op == "mul":
            return kern.mul(a[0], a[1])
        if op == "div":
            return kern.div(a[0], a[1])
        return NotImplemented

    def _step(self, kern: Kernels, gr: Graphs, k: int, st: Step, regs: dict[int, Any]) -> Any:
        op, a = st.op, [regs[x] for x in st.args]
        shared = self._kernel_op(kern, st, a, regs)
        if shared is not NotImplemented:
            return shared
        n = gr.n
        if op == "edges":
            return Mask.from_sorted_coo(n, gr.rows, gr.cols, gr.indptr)
        if op == "identity":
            return Mask.identity(n)
        if op == "empty":
            return Mask.empty(n)
        if op == "full":
            return Mask.full(gr.ptr)
        if op == "ones":
            return np.array(1, dtype=np.int64)
        if op == "const":
            return _number(st.attr("value"), self.exact, gr.g)
        if op == "param":
            value = next(p.value for p in self.plan.params if p.name == st.attr("name"))
            return _number(value, True, gr.g)
        if op == "adjacency":
            return np.array(1, dtype=np.int64) if gr.weight is None else gr.weight
        if op == "gather_row":
            return a[0] if is_iso(a[0]) else a[0][a[1].rows]
        if op == "gather_col":
            return a[0] if is_iso(a[0]) else a[0][a[1].cols]
        if op == "broadcast_edge":
            return a[0][gr.node_graph[a[1].rows]]
        if op == "sampled":
            s = a[2]
            ma, mb = self._mask(regs, st.args[0]), self._mask(regs, st.args[1])
            if s.nnz == 0:
                return np.zeros(0, dtype=np.int64)
            return kern.sampled(ma, a[0], mb, a[1], s)
        if op == "broadcast":
            return a[0][gr.node_graph]
        if op in ("as_edge", "as_node"):
            return np.full(n, a[0]) if is_iso(a[0]) else a[0]
        if op == "neg":
            return np.negative(a[0])
        if op == "nonzero":
            zero = np.asarray(a[0] == 0)
            if self.nonfinite == "error" and bool(zero.any()):
                g = int(np.nonzero(np.broadcast_to(zero, (gr.g,)))[0][0])
                raise EvaluationError(
                    f"division by zero on graph {gr.label(g)}: the divisor {st.attr('what')} is 0"
                )
            return a[0]
        if op == "apply":
            return self._apply(gr, regs, k, st, a)
        raise MatlangError(f"no graph-constant kernel for plan op {op!r}")  # pragma: no cover

    def _apply(self, gr: Graphs, regs: dict[int, Any], k: int, st: Step, a: list[Any]) -> Any:
        size = _size(self.plan, regs, st, gr)
        args = [np.broadcast_to(x, (size,)) for x in a]
        computable, mod_bound = self._exactness(st.attr("fn"))
        # exact on integers and Fractions only: a float (a weight) read exactly is still a float
        exact = computable and self.exact and all(np.asarray(x).dtype.kind != "f" for x in a)
        if mod_bound is not None and not exact:
            # a remainder of a float past 2⁵³ is noise, not a rounding: integers go exact
            exact = self._mod_exactly(gr, regs, st, args, computable, mod_bound)
        fn = self._function(st.attr("fn"), exact)
        if exact:
            out = fn(*[np.asarray(x, dtype=object) for x in args])
        else:
            with np.errstate(all="ignore"):
                out = fn(*[np.asarray(x, dtype=np.float64) for x in args])
        out = np.asarray(out)
        if out.ndim == 0 or out.shape != (size,):
            out = np.broadcast_to(out, (size,)).copy()
        if exact:
            return _shrink_exact(out)
        out = out.astype(np.float64)
        if self.nonfinite == "error" and not np.isfinite(out).all():
            i = int(np.nonzero(~np.isfinite(out))[0][0])
            name = self.plan.functions[st.attr("fn")].name
            raise EvaluationError(
                f"{name}(...) in {st.note or 'the sentence'} is {out[i]} on graph "
                f"{gr.label(_graph_of(self.plan, regs, st, gr, i))} (compile with "
                "nonfinite='keep' to keep inf/nan)"
            )
        return out

    def _mod_exactly(
        self,
        gr: Graphs,
        regs: dict[int, Any],
        st: Step,
        args: list[Any],
        computable: bool,
        mod_bound: Callable[[float], float],
    ) -> bool:
        """Whether a function with ``Mod`` must run on Python numbers: where a remainder's
        argument may reach 2⁵³, integer values are computed exactly, and floats are refused."""
        if not args or args[0].size == 0:
            return False
        sizes = [np.abs(np.asarray(x, dtype=np.float64)) for x in args]
        top = max(float(x.max()) for x in sizes)
        if mod_bound(top) < FLOAT_EXACT:
            return False
        if computable and all(np.asarray(x).dtype.kind in "iub" for x in args):
            return True
        at = next(int(np.argmax(x)) for x in sizes if float(x.max()) == top)
        raise self._mod_error(st, top, gr.label(_graph_of(self.plan, regs, st, gr, at)))

    def _mod_error(
        self,
        st: Step,
        top: float,
        graph: str,
        way: str = "",
        dtype: str = "float64",
        bits: int = 53,
    ) -> EvaluationError:
        """:func:`~matlang.functions.mod_refusal` for ``st``'s function on ``graph``; ``way``:
        a way out besides the exact evaluator (both stages and the interpreter raise it)."""
        name = self.plan.functions[st.attr("fn")].name
        what = f"{name}(...) in {st.note or 'the sentence'}"
        advice = f"{way}evaluate the sentence exactly (matlang.evaluate)"
        return EvaluationError(mod_refusal(what, top, graph, advice, dtype, bits))

def _triangle_readouts(
    plan: Plan, const: list[bool], exported: set[int]
) -> dict[int, tuple[int, ...]]:
    """The readouts that are ``tr(A³)`` of the edges' adjacency, by their inner steps:
    ``readout(row_sum(mul(A, sampled(A, A, E))))`` with ``A = adjacency(E)`` on the edge mask
    ``E``, where the row sum, the product and the sampled ``A²`` are read by nothing else and
    not exported. ``{readout: (E, row_sum, mul, sampled)}``; the stage computes such a readout
    by :meth:`~runtime.graphblas.Kernels.triangle_trace` when ``A`` is 0/1 and symmetric."""
    users: list[list[int]] = [[] for _ in plan.steps]
    for k, st in enumerate(plan.steps):
        for a in {*st.args, *(() if st.mask is None else (st.mask,))}:
            users[a].append(k)

    def only(r: int, k: int) -> bool:
        return users[r] == [k] and r not in exported and const[r]

    steps = plan.steps
    out: dict[int, tuple[int, ...]] = {}
    for k, st in enumerate(steps):
        if st.op != "readout" or not const[k]:
            continue
        rs = st.args[0]
        if steps[rs].op != "row_sum" or not only(rs, k):
            continue
        mul = steps[rs].args[0]
        if steps[mul].op != "mul" or not only(mul, rs):
            continue
        x, y = steps[mul].args
        if steps[x].op == "sampled":
            x, y = y, x
        sx, sy = steps[x], steps[y]
        if sx.op != "adjacency" or sy.op != "sampled" or not only(y, mul):
            continue
        edges = sx.args[0]
        if (
            steps[edges].op != "edges"
            or sy.args != (x, x, edges)
            or sy.mask != edges
            or steps[mul].mask != edges
        ):
            continue
        out[k] = (edges, rs, mul, y)
    return out


def _size(plan: Plan, regs: dict[int, Any], st: Step, gr: Graphs) -> int:
    if st.kind == GRAPH:
        return gr.g
    if st.kind == NODE:
        return gr.n
    assert st.mask is not None
    return int(regs[st.mask].nnz)


def _graph_of(plan: Plan, regs: dict[int, Any], st: Step, gr: Graphs, i: int) -> int:
    if st.kind == GRAPH:
        return i
    if st.kind == NODE:
        return int(gr.node_graph[i])
    assert st.mask is not None
    return int(gr.node_graph[regs[st.mask].rows[i]])


def _number(value: Fraction, exact: bool, g: int) -> np.ndarray:
    """A scalar on every graph: int64 when whole, a Fraction (exact) or a float otherwise."""
    if value.denominator == 1 and abs(value) < 2**62:
        return np.full(g, int(value), dtype=np.int64)
    if exact:
        out = np.empty(g, dtype=object)
        out[:] = [value] * g
        return out
    return np.full(g, float(value))


def _shrink_exact(x: np.ndarray) -> np.ndarray:
    """Exact results as int64 where every entry is a whole number that fits, else objects."""
    flat = list(x.flat)
    if all(isinstance(v, (int, np.integer)) or (isinstance(v, Fraction) and v.denominator == 1)
           for v in flat):
        ints = [int(v) for v in flat]
        if not ints or max(abs(v) for v in ints) < 2**62:
            return np.array(ints, dtype=np.int64).reshape(x.shape)
    out = np.empty(x.shape, dtype=object)
    out.flat[:] = [int(v) if isinstance(v, Fraction) and v.denominator == 1 else v for v in flat]
    return out


# --------------------------------------------------------------------------- torch side


def graphs_of(
    batch: Any, edges: Any, weight: Any, *, fingerprint: tuple[Any, ...] | None = None
) -> Graphs:
    """The stage's view of a :class:`runtime.batch.Batch` whose prepared (coalesced) edges are
    ``edges`` (``(2, E)`` int64) and ``weight`` (float64 or ``None``); ``symmetric`` when the
    batch passed validation (:meth:`~runtime.batch.Batch.known_symmetric`; ``fingerprint``:
    the batch's, as the caller took it)."""
    ei = edges.detach().cpu().numpy()
    w = None
    if weight is not None:
        w = weight.detach().cpu().numpy()
        if np.array_equal(w, np.round(w)) and (w.size == 0 or np.abs(w).max() < 2**53):
            w = w.astype(np.int64)
    return Graphs(
        batch.num_nodes,
        batch.ptr.detach().cpu().numpy().astype(np.int64, copy=False),
        batch.batch.detach().cpu().numpy().astype(np.int64, copy=False),
        ei[0],
        ei[1],
        w,
        batch.graph_label,
        symmetric=_known_symmetric(batch, fingerprint),
        indptr=_row_pointers(batch, fingerprint, int(ei.shape[1])),
    )


def _row_pointers(batch: Any, fingerprint: tuple[Any, ...] | None, e: int) -> np.ndarray | None:
    """The row pointers validation counted for the batch's edges (int64), ``None`` when it did
    not (or they do not end at the ``e`` prepared edges)."""
    known = getattr(batch, "row_pointers", None)
    indptr = None if known is None else known(fingerprint=fingerprint)
    if indptr is None or int(indptr[-1]) != e:
        return None
    return indptr.astype(np.int64, copy=False)


def _known_symmetric(batch: Any, fingerprint: tuple[Any, ...] | None) -> bool:
    known = getattr(batch, "known_symmetric", None)
    if known is None:
        return False
    return bool(known() if fingerprint is None else known(fingerprint=fingerprint))


def to_torch(value: Any, size: int, dtype: Any) -> Any:
    """A stage value as a torch tensor of ``dtype`` (a mask as its ``(2, M)`` index)."""
    import torch

    if isinstance(value, Mask):
        return torch.from_numpy(np.stack([value.rows, value.cols]))
    if is_iso(value):
        v = value.item()
        _warn_float32(abs(v), dtype)
        return torch.full((size,), float(v), dtype=dtype)
    if value.dtype == object:
        value = value.astype(np.float64)
    elif value.dtype.kind in "iub" and dtype == torch.float32 and value.size:
        _warn_float32(maxabs(value), dtype)
    # numpy casts to float32/float64 itself (the same rounding as torch's): the first torch op
    # after GraphBLAS costs 20–40 µs, from_numpy a fraction of that
    if dtype == torch.float64 or dtype == torch.float32:
        want = np.float64 if dtype == torch.float64 else np.float32
        return torch.from_numpy(np.ascontiguousarray(value, dtype=want))
    return torch.from_numpy(np.ascontiguousarray(value)).to(dtype)


def _warn_float32(bound: float, dtype: Any) -> None:
    import torch

    if dtype == torch.float32 and math.isfinite(bound) and bound > FLOAT32_EXACT:
        warnings.warn(
            f"a graph constant of this sentence reaches {bound:.0f}, past 2**24: float32 rounds "
            "it; compile with dtype=torch.float64 (or call .double()) for exact counts",
            stacklevel=4,
        )


def evaluate_exact(plan: Plan, graphs: Graphs) -> list[Any]:
    """The plan's outputs computed whole on GraphBLAS, exactly (needs a plan without node
    inputs): graph level ``(G,)``, node level ``(N,)``, a matrix ``(Mask, values)``."""
    if plan.inputs:
        raise EvaluationError(
            "exact sparse evaluation needs a sentence without node inputs "
            f"(it declares {', '.join(plan.inputs)})"
        )
    stage = ConstantStage(plan, exact=True)
    regs, _ = stage.run(graphs)
    out: list[Any] = []
    for o in plan.outputs:
        v = regs[o.register]
        if o.level == "matrix":
            m = plan.steps[o.register].mask
            assert m is not None
            out.append((regs[m], v))
        else:
            size = gr_size(o.level, graphs)
            out.append(np.broadcast_to(v, (size,)) if is_iso(v) else v)
    return out


def gr_size(level: str, graphs: Graphs) -> int:
    return graphs.g if level == "graph" else graphs.n


def size_of(step: Step, regs: Mapping[int, Any], graphs: Graphs) -> int:
    """Entries of a register of kind ``step.kind``."""
    if step.kind == MASK:
        return 0
    if step.kind == EDGE:
        assert step.mask is not None
        return int(regs[step.mask].nnz)
    return graphs.g if step.kind == GRAPH else graphs.n


__all__ = [
    "ConstantStage",
    "FLOAT32_EXACT",
    "Graphs",
    "boundary",
    "constant_steps",
    "evaluate_exact",
    "evaluate_sparse",
    "graphs_of",
    "size_of",
    "to_torch",
]


# --------------------------------------------------------------------------- exact, sparse


def evaluate_sparse(expr: Any, graph: Any) -> Any:
    """The exact value of a sentence without node inputs on sparse graphs, on GraphBLAS: what
    :func:`matlang.evaluator.evaluate` gives, for graphs the dense evaluator cannot hold.

    ``graph``: a :class:`runtime.batch.Batch`, a PyG ``Data``/``Batch``, a scipy sparse
    adjacency, a Graph or a list of graphs. Scalars come back as ``int``/``Fraction`` (``float``
    after a non-polynomial function), vectors as 1-D numpy arrays, a matrix as a scipy CSR
    array (int64 or float64); one value per graph (a list) unless one graph was given.
    """
    import torch

    from matlang.compiler.lower import lower
    from matlang.parser import as_program
    from matlang.runtime.batch import as_batch
    from matlang.runtime.masks import prepared_edges

    program = as_program(expr)
    if len(program.sentences) != 1:
        raise EvaluationError(
            f"evaluate takes one sentence, got {len(program.sentences)} (evaluate them one by one)"
        )
    plan = lower(program)
    if hasattr(graph, "tocoo") and not hasattr(graph, "edge_index"):  # scipy sparse
        single = True
        batch = as_batch(_SparseGraph(graph))
    else:
        # the dense evaluator's rule (matlang.graphs): a PyG Batch of one graph is a list
        single = is_one_graph(graph)
        batch = as_batch(graph)
    edges, weight = prepared_edges(batch)
    with torch.no_grad():
        graphs = graphs_of(batch, edges, weight)
    (value,) = evaluate_exact(plan, graphs)
    out = _split(plan.outputs[0].level, value, graphs)
    return out[0] if single else out


class _SparseGraph:
    """A scipy sparse 0/1 adjacency seen as a PyG-like object (one graph); checked by the dense
    evaluator's rule (:func:`matlang.graphs.sparse_pattern`: a weighted matrix is refused)."""

    def __init__(self, matrix: Any) -> None:
        import torch

        from matlang.graphs import sparse_pattern

        n, rows, cols = sparse_pattern(matrix)
        self.num_nodes = n
        self.edge_index = torch.from_numpy(np.stack([rows, cols]))
        self.edge_weight = None
        self.x = None


def _python(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, Fraction) and v.denominator == 1:
        return int(v)
    return v


def _split(level: str, value: Any, graphs: Graphs) -> list[Any]:
    """One value per graph."""
    ptr = graphs.ptr
    if level == "graph":
        return [_python(v) for v in np.asarray(value).tolist()] if value.dtype != object else [
            _python(v) for v in value
        ]
    if level == "node":
        if value.dtype == object:
            value = _shrink_exact(value)
        return [np.asarray(value[a:b]) for a, b in zip(ptr[:-1], ptr[1:])]
    import scipy.sparse as sps

    mask, vals = value
    vals = np.broadcast_to(vals, (mask.nnz,))
    rows, cols = mask.rows, mask.cols
    out = []
    for a, b in zip(ptr[:-1], ptr[1:]):
        sel = (rows >= a) & (rows < b)
        if vals.dtype == object:  # Fractions: scipy holds no exact rationals
            if b - a > DENSE_RATIONAL_LIMIT:
                raise EvaluationError(
                    f"a matrix of Fractions on a graph of {b - a} nodes: scipy holds no exact "
                    "rationals; scale the sentence to integers (multiply by the denominator)"
                )
            dense = np.zeros((b - a, b - a), dtype=object)
            dense[rows[sel] - a, cols[sel] - a] = vals[sel]
            out.append(dense)
            continue
        out.append(
            sps.csr_array((vals[sel], (rows[sel] - a, cols[sel] - a)), shape=(b - a, b - a))
        )
    return out
