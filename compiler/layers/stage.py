"""The two run-time stages of a sentence layer.

* **Graph constants**: the supports ``C_s`` of the operator sentences, on their masks, through
  :func:`compiler.api.materialise`, and the values of input-free node or graph sentences
  (:func:`graph_values`). They depend on the graph only, are computed once per batch in float64
  and remembered in the batch memo of :mod:`runtime.batch` (shared with compiled modules), which
  lives on the batch's ``edge_index`` tensor (the entry dies with the tensor; an in-place change
  of it or of the batch vector, seen by their version counters, recomputes; a new batch vector
  tensor is a new batch). The supports
  never leave :func:`propagate_supports`, which computes ``Σ_s C_s Y_s`` (and its adjoint for
  the backward pass).
* **Channel-wise sentences** (:func:`apply_channels`): a node- or graph-level sentence of one
  free input ``h`` evaluated on every channel of ``x`` by the Plan interpreter, differentiable
  in ``x`` through it.

Under ``torch.compile`` every stage is a ``torch.library`` custom op (the channel-wise one with
a custom-op backward that reruns the interpreter with autograd on): the compiler sees one node
per op, never traces into the sparse kernels, and their output shapes follow their inputs'
(``N``, or a graph count the caller passes), so there is no graph break and a new batch shape
does not recompile under ``dynamic=True``. A stage is
named by a *key*, the JSON text of its sentences and options, from which it is rebuilt anywhere
(an unpickled layer, another process).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import torch
from torch import Tensor

from matlang.compiler.layers.support_cache import Csr, assemble, cached_supports, seen_graphs
from matlang.compiler.plan import OPS
from matlang.errors import GraphError, MatlangError
from matlang.runtime.batch import Batch, as_batch
from matlang.runtime.preprocess import PreprocessCache
from matlang.runtime.sparse import csr_matrix


def stage_key(kind: str, sentences: Sequence[str], **options: Any) -> str:
    """The key of a stage: what it computes, as canonical JSON."""
    return json.dumps({"kind": kind, "sentences": list(sentences), **options}, sort_keys=True)


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype a sentence runs in for features of ``dtype``: float32 and float64 as they are,
    half precision (float16, bfloat16) in float32, the result cast back by the caller."""
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32


def nonfinite_option(nonfinite: str) -> dict[str, str]:
    """A layer's ``nonfinite`` as stage-key options: none for the default ``"error"`` (a key
    stays what it was), ``{"nonfinite": "keep"}`` to let inf/nan through as compile does."""
    if nonfinite not in ("error", "keep"):
        raise MatlangError(f"nonfinite must be 'error' or 'keep', got {nonfinite!r}")
    return {} if nonfinite == "error" else {"nonfinite": nonfinite}


def make_batch(
    edge_index: Tensor,
    batch: Tensor | None,
    num_nodes: int,
    edge_weight: Tensor | None = None,
) -> Batch:
    """A validated :class:`~runtime.batch.Batch` from PyG's ``(edge_index, batch)`` pair."""
    if batch is not None and batch.numel() != num_nodes:
        raise GraphError(
            f"batch vector has {batch.numel()} entries but x has {num_nodes} rows", "batch"
        )
    data = SimpleNamespace(
        edge_index=edge_index, batch=batch, num_nodes=num_nodes, x=None, edge_weight=edge_weight
    )
    return as_batch(data, validate=True)


@dataclass(eq=False)
class Stage:
    """What a key computes, with its compiled modules and its per-batch memo."""

    key: str
    spec: dict[str, Any] = field(init=False)
    _modules: dict[Any, Any] = field(init=False, default_factory=dict)
    #: how often the graph constants were computed (not served from the memo)
    computed: int = 0
    _symmetric: bool | None = field(init=False, default=None)
    #: the stage's one cache: its supports per graph (:mod:`compiler.layers.support_cache`;
    #: its compiled sentences keep no cache of their own, so a new graph is filed once);
    #: ``None``: supports computed on every new batch, as a benchmark's baseline
    cache: PreprocessCache | None = field(init=False, default_factory=PreprocessCache)
    _plain_kinds: list[str | None] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.spec = json.loads(self.key)
        self._cache_params = (("stage", hashlib.sha1(self.key.encode()).hexdigest()),)

    @property
    def sentences(self) -> list[str]:
        return list(self.spec["sentences"])

    def remembered(
        self, edge_index: Tensor, batch: Tensor | None, n: int, compute: Any, what: str = ""
    ) -> Any:
        """``compute()`` once per batch: remembered in the batch memo of
        :mod:`runtime.batch` (the one record of "this batch was seen", shared with compiled
        modules), which lives on ``edge_index`` and is told apart by the identities and
        versions of the layout tensors: no value is read back on a repeated call."""
        if batch is not None and batch.numel() != n:
            raise GraphError(
                f"batch vector has {batch.numel()} entries but x has {n} rows", "batch"
            )
        if edge_index.is_inference():  # no version counter: nothing can be remembered
            return compute()
        b = as_batch(
            SimpleNamespace(edge_index=edge_index, batch=batch, num_nodes=n, x=None),
            validate=False,
        )

        def counted() -> Any:
            self.computed += 1
            return compute()

        return b.cached(f"stage.{what}.{self.key}", counted)

    def module(self, text: str, dtype: torch.dtype) -> Any:
        """The compiled module of one sentence (built once per dtype)."""
        from matlang.compiler.api import compile as compile_sentence

        k = (text, dtype)
        if k not in self._modules:
            # batches are validated here, once per batch (see remembered)
            m = compile_sentence(
                text,
                dtype=dtype,
                dense=self.spec.get("dense", False),
                nonfinite=self.spec.get("nonfinite", "error"),
                validate=False,
                # the stage files its supports per graph (support_cache); the module filing
                # each graph's constants as well would store every new graph twice
                cache=False,
            )
            for p in m.parameters():  # a sentence's literals stay what they are
                p.requires_grad_(False)
            self._modules[k] = m
        return self._modules[k]

    # -- graph constants ---------------------------------------------------------------------
    def supports(self, edge_index: Tensor, batch: Tensor | None, n: int) -> _Supports:
        """Every support on one CSR matrix (see :class:`_Supports`; ``x W`` laid out as
        ``(S·N, out)`` is one product)."""
        from matlang.compiler.api import materialise

        def compute() -> _Supports:
            seen, keys = self._seen(edge_index, batch, n)
            if seen is not None:
                return seen
            b = make_batch(edge_index, batch, n)
            texts, kinds = self.sentences, self.plain_kinds
            rest = [k for k, kind in enumerate(kinds) if kind is None]  # more than A or I
            if len(rest) < len(kinds):
                from matlang.runtime.masks import prepared_edges

                edges, _ = b.cached("compiled.edges", lambda: prepared_edges(b))
            csrs: list[Csr | None] = [
                None if kind is None else _plain_csr(kind, edges, n) for kind in kinds
            ]

            def whole() -> list[Csr]:
                out = []
                for k in rest:
                    # the sentence compiled once (per stage), materialised on every batch
                    index, values = materialise(self.module(texts[k], torch.float64), b)
                    out.append(_csr(index[0], index[1], values.to(torch.float64), n))
                return out

            on_host = b.edge_weight is None and b.edge_index.device.type == "cpu"
            if rest and self.cache is not None and on_host:
                from matlang.runtime.masks import prepared_edges

                edges, _ = b.cached("compiled.edges", lambda: prepared_edges(b))
                computed = cached_supports(
                    b, edges, self.cache, self._cache_params, whole, keys=keys
                )
            else:
                computed = whole()
            for k, c in zip(rest, computed):
                csrs[k] = c
            done = [c for c in csrs if c is not None]
            return self._supports(done, n)

        return self.remembered(edge_index, batch, n, compute, "supports")  # type: ignore[no-any-return]

    def _seen(
        self, edge_index: Tensor, batch: Tensor | None, n: int
    ) -> tuple[_Supports | None, list[Any] | None]:
        """The supports of a batch made of graphs seen before, assembled from the cache
        without validating the batch (a graph whose edges equal, byte for byte, those of a
        graph that passed validation is valid; :func:`support_cache.seen_graphs` checks what
        that needs), with the graphs' cache keys; ``(None, keys)`` when a graph is new (the
        keys serve the computed path: the same edges), ``(None, None)`` when the batch is
        weighted, on a device, fails those checks, or the layer has nothing worth caching."""
        kinds = self.plain_kinds
        if self.cache is None or all(kinds):
            return None, None
        b = as_batch(
            SimpleNamespace(edge_index=edge_index, batch=batch, num_nodes=n, x=None),
            validate=False,
        )
        hit = seen_graphs(b, self.cache, self._cache_params)
        if hit is None:
            return None, None
        keys, ptr, pieces = hit
        if pieces is None:
            return None, keys
        computed = iter(assemble(pieces, ptr))
        # the batch's edges: sorted and coalesced (checked by seen_graphs)
        csrs = [next(computed) if k is None else _plain_csr(k, b.edge_index, n) for k in kinds]
        return self._supports(csrs, n), keys

    def _supports(self, csrs: list[Csr], n: int) -> _Supports:
        identity = [k == "I" for k in self.plain_kinds]
        return _Supports(csrs, n, symmetric=self.symmetric_sentences, identity=identity)

    @property
    def plain_kinds(self) -> list[str | None]:
        """``"A"``, ``"I"`` or ``None`` (computed) for each sentence (see :func:`_plain_kind`)."""
        hit = self._plain_kinds
        if hit is None:
            hit = [_plain_kind(self.module(t, torch.float64).plan) for t in self.sentences]
            self._plain_kinds = hit
        return hit

    @property
    def symmetric_sentences(self) -> bool:
        """Whether every sentence is provably symmetric for a symmetric ``A`` (what a
        validated batch has): ``C_sᵀ = C_s`` on every batch, by structure."""
        hit = self._symmetric
        if hit is None:
            from matlang.algebra import is_symmetric
            from matlang.parser import as_program

            hit = all(is_symmetric(sent.expr) for t in self.sentences for sent in as_program(t))
            self._symmetric = hit
        return hit

    def values(self, edge_index: Tensor, batch: Tensor | None, n: int) -> Tensor:
        """``(N, K)`` (node sentences) or ``(G, K)`` (graph sentences), float64."""

        def compute() -> Tensor:
            b = make_batch(edge_index, batch, n)
            cols = [self.module(t, torch.float64)(b).detach() for t in self.sentences]
            rows = n if self.spec["level"] == "node" else b.num_graphs
            if not cols:
                return torch.zeros(rows, 0, dtype=torch.float64)
            return torch.stack([c.reshape(rows) for c in cols], 1)

        return self.remembered(edge_index, batch, n, compute, "values")  # type: ignore[no-any-return]

    # -- channel-wise ------------------------------------------------------------------------
    def apply(self, x: Tensor, edge_index: Tensor, batch: Tensor | None) -> Tensor:
        """Every sentence on every channel: ``(rows, K·d)``, sentence-major (the columns of
        sentence ``k`` are ``k·d … k·d + d - 1``)."""
        n = x.shape[0]
        # validated once per batch; the memo keeps no tensor of the batch alive
        self.remembered(
            edge_index, batch, n, lambda: make_batch(edge_index, batch, n) and True, "valid"
        )
        b = as_batch(
            SimpleNamespace(edge_index=edge_index, batch=batch, num_nodes=n, x=None),
            validate=False,
        )
        return self.channels(b, x, n if self.spec["level"] == "node" else b.num_graphs)

    def channels(self, b: Batch, x: Tensor, rows: int) -> Tensor:
        """Every sentence of this stage on ``x`` ``(N, d)`` over the batch ``b`` (weighted or
        not): ``(rows, K·d)``, each sentence's ``d`` channels in one pass; half precision runs
        in float32 (:func:`compute_dtype`) and comes back in ``x``'s dtype."""
        work = compute_dtype(x.dtype)
        xin = x.to(work)
        outs: list[Tensor] = []
        for text in self.sentences:
            m = self.module(text, work)
            # every channel in one pass: the interpreter takes (N, d) signals
            outs.append(m(b, inputs={m.plan.inputs[0]: xin}).reshape(rows, x.shape[1]))
        if not outs:
            return x.new_zeros(rows, 0)
        return torch.cat(outs, 1).to(x.dtype)


#: Stages by key: a pure function of the key (compiled sentences and their batch memos).
_STAGES: dict[str, Stage] = {}


def stage(key: str) -> Stage:
    """The stage of ``key`` (built on first use)."""
    st = _STAGES.get(key)
    if st is None:
        st = _STAGES[key] = Stage(key)
    return st


# --------------------------------------------------------------------------- custom ops


class _Supports:
    """The supports ``C_1 … C_S`` of a batch as one ``(N, N)`` CSR matrix each, and their
    transposes, built once per batch and dtype: the forward ``Σ_s C_s Y_s`` and the backward
    ``C_sᵀ G`` are one CSR product per support (torch's ``sparse.mm``).

    Nothing is sorted or interleaved: each support comes as CSR arrays (``materialise`` gives
    its entries row-major, so its row pointers are a bincount; the per-graph cache gives them
    assembled). Where every support is symmetric (by structure, on a validated batch) its
    transpose is itself: no transposition at all. (Stacking them into one ``(N, S·N)`` matrix
    needed a scatter of every entry per batch, ~2 ms at 128 × ER(25), for one product instead
    of S.)"""

    def __init__(
        self,
        csrs: Sequence[Csr],
        n: int,
        *,
        symmetric: bool = False,
        identity: Sequence[bool] | None = None,
    ) -> None:
        # csrs: (rowptr, cols, values) of C_1 … C_S, each on its own ids (0 ≤ cols < N)
        self.n, self.s = n, len(csrs)
        #: which supports are I (their products are the operand itself: no sparse product)
        self.identity = list(identity) if identity is not None else [False] * self.s
        self.rowptrs = [c[0] for c in csrs]
        self.cols = [c[1] for c in csrs]
        self.vals = [c[2] for c in csrs]
        # C_sᵀ = C_s: by structure (every sentence symmetric on a validated batch), or for one
        # support by looking (the flipped entries are the same set with the same values)
        self.symmetric = symmetric or (
            self.s == 1 and _is_symmetric(self.rows(0), self.cols[0], self.vals[0], n)
        )
        self._csr: dict[torch.dtype, list[Tensor]] = {}
        self._csr_t: dict[torch.dtype, list[Tensor]] = {}

    def rows(self, k: int) -> Tensor:
        """Support ``k``'s row ids, entry by entry."""
        ptr = self.rowptrs[k]
        counts = ptr[1:] - ptr[:-1]
        return torch.repeat_interleave(torch.arange(self.n, device=ptr.device), counts)

    def entries(self) -> tuple[Tensor, Tensor, Tensor]:
        """Every entry as ``(rows, support, values)``, support by support."""
        rows = [self.rows(k) for k in range(self.s)]
        which = torch.cat([torch.full_like(r, k) for k, r in enumerate(rows)])
        return torch.cat(rows), which, torch.cat(self.vals)

    def csr(self, dtype: torch.dtype) -> list[Tensor]:
        ms = self._csr.get(dtype)
        if ms is None:
            ms = [
                csr_matrix(ptr, c, v.to(dtype), (self.n, self.n))
                for ptr, c, v in zip(self.rowptrs, self.cols, self.vals)
            ]
            self._csr[dtype] = ms
        return ms

    def csr_t(self, dtype: torch.dtype) -> list[Tensor]:
        if self.symmetric:
            return self.csr(dtype)
        ms = self._csr_t.get(dtype)
        if ms is None:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r"Sparse (CSR tensor support|invariant)")
                ms = [m.t().to_sparse_csr() for m in self.csr(dtype)]
            self._csr_t[dtype] = ms
        return ms


def _csr(rows: Tensor, cols: Tensor, vals: Tensor, n: int, *, row_major: bool = False) -> Csr:
    """A support's CSR arrays from its entries (row-major from ``materialise``; sorted here if
    not, unless the caller knows): the row pointers are a bincount."""
    if not row_major:
        rows, cols, vals = _row_major(rows, cols, vals, n)
    rowptr = torch.zeros(n + 1, dtype=torch.int64, device=rows.device)
    torch.cumsum(torch.bincount(rows, minlength=n), 0, out=rowptr[1:])
    return rowptr, cols, vals


#: The ops of the plan of ``I`` (a support: on the diagonal mask), each once.
IDENTITY_OPS = sorted(op for op, spec in OPS.items() if spec.identity)


def _plain_kind(plan: Any) -> str | None:
    """``"A"`` or ``"I"`` for the plans of ``A`` and ``I`` (read off the batch, see
    :func:`_plain_support`), ``None`` for any other."""
    ops = [st.op for st in plan.steps]
    if len(plan.outputs) != 1 or plan.outputs[0].register != len(ops) - 1:
        return None
    return "A" if ops == ["edges", "adjacency"] else "I" if sorted(ops) == IDENTITY_OPS else None


def _plain_csr(kind: str, edges: Tensor, n: int) -> Csr:
    """``A`` (on the batch's coalesced ``edges``) or ``I`` as CSR arrays, values 1: row-major
    already, what :func:`_plain_support` reads off the batch."""
    if kind == "A":
        ones = torch.ones(edges.shape[1], dtype=torch.float64, device=edges.device)
        return _csr(edges[0], edges[1], ones, n, row_major=True)
    i = torch.arange(n, device=edges.device)
    return _csr(i, i, torch.ones(n, dtype=torch.float64, device=edges.device), n, row_major=True)


def _plain_support(module: Any, b: Batch) -> tuple[Tensor, Tensor] | None:
    """``A`` or ``I`` of an unweighted batch read off the batch (its coalesced edges, or the
    diagonal) with values 1: what :func:`~compiler.api.materialise` gives for these plans
    (checked by a test), without a pass of the interpreter (~0.3 ms a batch each). ``None``
    for any other plan."""
    kind = _plain_kind(module.plan)
    if b.edge_weight is not None or kind is None:
        return None
    if kind == "A":
        from matlang.runtime.masks import prepared_edges

        edges, _ = b.cached("compiled.edges", lambda: prepared_edges(b))
        return edges, torch.ones(edges.shape[1], dtype=torch.float64, device=edges.device)
    i = torch.arange(b.num_nodes, device=b.edge_index.device)
    return torch.stack([i, i]), torch.ones(b.num_nodes, dtype=torch.float64, device=i.device)


def _row_major(rows: Tensor, cols: Tensor, vals: Tensor, n: int) -> tuple[Tensor, Tensor, Tensor]:
    """A support's entries sorted row-major (``materialise`` gives them so; sorted here if
    not)."""
    key = rows * n + cols
    if key.numel() > 1 and not bool((key[1:] > key[:-1]).all()):
        order = torch.argsort(key)
        return rows[order], cols[order], vals[order]
    return rows, cols, vals


def _is_symmetric(rows: Tensor, cols: Tensor, vals: Tensor, n: int) -> bool:
    key, order = torch.sort(rows * n + cols)
    flipped, forder = torch.sort(cols * n + rows)
    return bool(torch.equal(key, flipped)) and bool(torch.equal(vals[order], vals[forder]))


def _mm(m: Tensor, y: Tensor) -> Tensor:
    if y.shape[1] == 1:  # one channel: mv is ~3× sparse.mm on an (N, 1) matrix
        return torch.mv(m, y[:, 0]).unsqueeze(1)
    # addmm_ with beta=0 ignores the uninitialised output (torch.addmm's documented rule):
    # 10-20 % below sparse.mm, which first fills a zero matrix, at d ≥ 16
    return y.new_empty(m.shape[0], y.shape[1]).addmm_(m, y, beta=0)


def _propagate(y: Tensor, edge_index: Tensor, batch: Tensor | None, key: str) -> Tensor:
    """``Σ_s C_s y[:, s]``, one CSR product per support (``y`` laid out support-major)."""
    return _propagate_on(y, stage(key).supports(edge_index, batch, y.shape[0]))


def _propagate_on(y: Tensor, sup: _Supports) -> Tensor:
    n, s, c = y.shape
    ys = y.transpose(0, 1).contiguous()  # (S, N, C): each support's operand contiguous
    out: Tensor | None = None
    for m, ys_k, eye in zip(sup.csr(y.dtype), ys, sup.identity):
        if eye:  # I y: the operand itself (a copy if it starts the sum: never an alias of y)
            out = ys_k.clone() if out is None else out.add_(ys_k)
            continue
        out = _mm(m, ys_k) if out is None else out.addmm_(m, ys_k)
    return y.new_zeros(n, c) if out is None else out


def _propagate_t(g: Tensor, edge_index: Tensor, batch: Tensor | None, key: str, s: int) -> Tensor:
    """The adjoint: ``(C_s)ᵀ g`` for every ``s``, as ``(N, S, C)``."""
    return _propagate_t_on(g, stage(key).supports(edge_index, batch, g.shape[0]))


def _propagate_t_on(g: Tensor, sup: _Supports) -> Tensor:
    n, c = g.shape
    g = g.contiguous()
    out = g.new_empty(n, sup.s, c)  # written support by support (no stack of S temporaries)
    for k, (m, eye) in enumerate(zip(sup.csr_t(g.dtype), sup.identity)):
        out[:, k] = g if eye else _mm(m, g)
    return out


class _Propagate(torch.autograd.Function):
    """Eager :func:`propagate_supports`: a plain autograd function holding its batch's
    supports (the custom op's dispatch costs ~0.2 ms a call, a lookup of the supports another
    in the backward); under ``torch.compile`` the custom op is used."""

    @staticmethod
    def forward(ctx: Any, y: Tensor, sup: _Supports) -> Tensor:  # type: ignore[override]
        ctx.sup = sup
        return _propagate_on(y, sup)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        return _propagate_t_on(grad, ctx.sup), None


def propagate(y: Tensor, edge_index: Tensor, batch: Tensor | None, key: str) -> Tensor:
    """``Σ_s C_s y[:, s, :]`` (see :func:`propagate_supports`): eagerly an autograd function,
    under ``torch.compile`` the custom op."""
    if torch.compiler.is_compiling():
        return propagate_supports(y, edge_index, batch, key)
    return _Propagate.apply(y, stage(key).supports(edge_index, batch, y.shape[0]))  # type: ignore[no-any-return]


def _products_on(x: Tensor, sup: _Supports) -> tuple[Tensor, ...]:
    """``C_s x`` for every support but ``I``, in order."""
    x = x.contiguous()
    return tuple(_mm(m, x) for m, eye in zip(sup.csr(x.dtype), sup.identity) if not eye)


def _products_t_on(grads: Sequence[Tensor | None], sup: _Supports) -> Tensor | None:
    """The adjoint of :func:`_products_on`: ``Σ_s C_sᵀ g_s`` over the ``g_s`` given."""
    given = [g for g in grads if g is not None]
    if not given:
        return None
    ms = [m for m, eye in zip(sup.csr_t(given[0].dtype), sup.identity) if not eye]
    out: Tensor | None = None
    for m, g in zip(ms, grads):
        if g is None:
            continue
        g = g.contiguous()
        out = _mm(m, g) if out is None else out.addmm_(m, g)
    return out


class _Products(torch.autograd.Function):
    """:func:`support_products` as an autograd function: the batch's supports held on the
    context (no second look-up in the backward)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, sup: _Supports) -> tuple[Tensor, ...]:  # type: ignore[override]
        ctx.sup = sup
        ctx.set_materialize_grads(False)  # a product whose output is unused costs nothing
        return _products_on(x, sup)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> tuple[Tensor | None, None]:  # type: ignore[override]
        return _products_t_on(grads, ctx.sup), None


def support_products(
    x: Tensor, edge_index: Tensor, batch: Tensor | None, key: str
) -> tuple[list[bool], tuple[Tensor, ...]]:
    """``C_s x`` ``(N, d)`` for every support of a stage but ``I`` (``I x`` is ``x``), with
    which supports are ``I``; differentiable in ``x`` (the adjoint ``Σ_s C_sᵀ g_s``). Eager
    only (a layer under ``torch.compile`` takes :func:`propagate`): a layer with ``d ≤ out``
    computes ``Σ_s C_s x W_s`` as ``Σ_s (C_s x) W_s``, its sparse products on ``d`` channels
    and none in the backward where ``x`` needs no gradient (a first layer)."""
    sup = stage(key).supports(edge_index, batch, x.shape[0])
    if all(sup.identity):
        return sup.identity, ()
    return sup.identity, _Products.apply(x, sup)  # type: ignore[no-any-return]


@torch.library.custom_op("matlang::propagate_supports", mutates_args=())
def propagate_supports(y: Tensor, edge_index: Tensor, batch: Tensor | None, key: str) -> Tensor:
    """``Σ_s C_s y[:, s, :]`` for the supports of a stage: ``y`` ``(N, S, C)`` → ``(N, C)``.
    The supports never leave the op (their number of entries would be a data-dependent size
    for ``torch.compile``)."""
    return _propagate(y, edge_index, batch, key)


@propagate_supports.register_fake
def _(y: Tensor, edge_index: Tensor, batch: Tensor | None, key: str) -> Tensor:
    return y.new_empty(y.shape[0], y.shape[2])


@torch.library.custom_op("matlang::propagate_supports_t", mutates_args=())
def propagate_supports_t(
    g: Tensor, edge_index: Tensor, batch: Tensor | None, key: str, supports: int
) -> Tensor:
    """The adjoint of :func:`propagate_supports`: ``g`` ``(N, C)`` → ``(N, S, C)``."""
    return _propagate_t(g, edge_index, batch, key, supports)


@propagate_supports_t.register_fake
def _(g: Tensor, edge_index: Tensor, batch: Tensor | None, key: str, supports: int) -> Tensor:
    return g.new_empty(g.shape[0], supports, g.shape[1])


def _setup_propagate(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    y, edge_index, batch, key = inputs
    ctx.save_for_backward(edge_index, batch)
    ctx.key, ctx.supports = key, y.shape[1]


def _backward_propagate(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None, None, None]:
    edge_index, batch = ctx.saved_tensors
    return propagate_supports_t(grad, edge_index, batch, ctx.key, ctx.supports), None, None, None


torch.library.register_autograd(
    "matlang::propagate_supports", _backward_propagate, setup_context=_setup_propagate
)


def _rows(num_nodes: int, num_graphs: int, spec: dict[str, Any]) -> Any:
    """The fake output's row count: ``N``, the given graph count, or a size known only at run
    time (a graph break where the caller gives no ``num_graphs``)."""
    if spec["level"] == "node":
        return num_nodes
    return num_graphs if num_graphs >= 0 else torch.library.get_ctx().new_dynamic_size()


def _check_rows(value: Tensor, num_graphs: int, spec: dict[str, Any]) -> Tensor:
    if spec["level"] == "graph" and num_graphs >= 0 and value.shape[0] != num_graphs:
        raise GraphError(
            f"num_graphs={num_graphs}, but the batch vector holds {value.shape[0]} graphs",
            "num_graphs",
        )
    return value


@torch.library.custom_op("matlang::graph_values", mutates_args=())
def graph_values(
    edge_index: Tensor, batch: Tensor | None, num_nodes: int, key: str, num_graphs: int = -1
) -> Tensor:
    """Values of input-free node or graph sentences (see :meth:`Stage.values`); a graph-level
    stage has ``num_graphs`` rows (``-1``: however many the batch vector holds)."""
    st = stage(key)
    return _check_rows(st.values(edge_index, batch, num_nodes).clone(), num_graphs, st.spec)


@graph_values.register_fake
def _(
    edge_index: Tensor, batch: Tensor | None, num_nodes: int, key: str, num_graphs: int = -1
) -> Tensor:
    spec = json.loads(key)
    rows = _rows(num_nodes, num_graphs, spec)
    return edge_index.new_empty(rows, len(spec["sentences"]), dtype=torch.float64)


def apply_channels(
    x: Tensor, edge_index: Tensor, batch: Tensor | None, key: str, num_graphs: int | None = None
) -> Tensor:
    """Channel-wise sentences (see :meth:`Stage.apply`): ``x`` ``(N, d)`` → ``(N, K·d)`` (node
    sentences) or ``(G, K·d)`` (graph sentences), differentiable in ``x``. Eagerly, autograd
    records the Plan interpreter's steps; under ``torch.compile`` it is one opaque op
    (:func:`channels_op`, whose backward is :func:`channels_vjp`): no graph break when the
    output's rows are known (``N``, or the given ``num_graphs``), and no recompile per batch
    shape."""
    g = -1 if num_graphs is None else num_graphs
    if torch.compiler.is_compiling():
        return channels_op(x, edge_index, batch, key, g)
    return _apply_checked(x, edge_index, batch, key, g)


def _apply_checked(
    x: Tensor, edge_index: Tensor, batch: Tensor | None, key: str, num_graphs: int
) -> Tensor:
    """:meth:`Stage.apply` with the row check of a given graph count (the stage's own parse
    of its key: nothing is parsed per call)."""
    st = stage(key)
    return _check_rows(st.apply(x, edge_index, batch), num_graphs, st.spec)


@torch.library.custom_op("matlang::apply_channels", mutates_args=())
def channels_op(
    x: Tensor, edge_index: Tensor, batch: Tensor | None, key: str, num_graphs: int = -1
) -> Tensor:
    """:func:`apply_channels` as a custom op (the interpreter's kernels are never traced)."""
    return _apply_checked(x, edge_index, batch, key, num_graphs)


@channels_op.register_fake
def _(
    x: Tensor, edge_index: Tensor, batch: Tensor | None, key: str, num_graphs: int = -1
) -> Tensor:
    spec = json.loads(key)
    width = len(spec["sentences"]) * x.shape[1]
    return x.new_empty(_rows(x.shape[0], num_graphs, spec), width)


@torch.library.custom_op("matlang::apply_channels_vjp", mutates_args=())
def channels_vjp(
    grad: Tensor, x: Tensor, edge_index: Tensor, batch: Tensor | None, key: str
) -> Tensor:
    """``∂⟨grad, apply_channels(x)⟩ / ∂x``: the interpreter run again with autograd on."""
    with _autograd_recording():
        t = x.detach().requires_grad_(True)
        y = stage(key).apply(t, edge_index, batch)
        (g,) = torch.autograd.grad(y, t, grad, allow_unused=True)
    return torch.zeros_like(x) if g is None else g


@contextlib.contextmanager
def _autograd_recording() -> Iterator[None]:
    """Autograd records again inside. A custom op's body runs with the autograd dispatch keys
    excluded (it is below autograd), so ``torch.enable_grad`` alone records nothing; and
    ``torch.func.vjp`` would, but the interpreter's ``autograd.Function`` s are not
    functorch-ready. Private torch API (``_ForceDispatchKeyGuard``), checked by the tests."""
    keys = torch._C.DispatchKey
    excluded = torch._C._dispatch_tls_local_exclude_set()
    for k in ("AutogradFunctionality", "AutogradOther", "AutogradNestedTensor", "ADInplaceOrView"):
        excluded = excluded.remove(getattr(keys, k))
    include = torch._C._dispatch_tls_local_include_set()
    with torch._C._ForceDispatchKeyGuard(include, excluded), torch.enable_grad():
        yield


@channels_vjp.register_fake
def _(grad: Tensor, x: Tensor, edge_index: Tensor, batch: Tensor | None, key: str) -> Tensor:
    return torch.empty_like(x)


def _setup_channels(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    x, edge_index, batch, key, _ = inputs
    ctx.save_for_backward(x, edge_index, batch)
    ctx.key = key


def _backward_channels(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None, None, None, None]:
    x, edge_index, batch = ctx.saved_tensors
    return channels_vjp(grad, x, edge_index, batch, ctx.key), None, None, None, None


torch.library.register_autograd(
    "matlang::apply_channels", _backward_channels, setup_context=_setup_channels
)


__all__ = [
    "Stage",
    "apply_channels",
    "channels_op",
    "channels_vjp",
    "propagate",
    "propagate_supports",
    "graph_values",
    "support_products",
    "make_batch",
    "stage",
    "stage_key",
]
