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
does not recompile under ``dynamic=True``. A stage
is built by its layer from the Plans its sentences were lowered to (each sentence is lowered
once) and named by a *key*, a hash of its rendered Plans and options, under which the custom
ops find it; a pickled layer keeps its Plans and builds its stages again when loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from matlang.compiler.layers.support_cache import Csr, assemble, cached_supports, seen_graphs
from matlang.compiler.layers.supports import (
    Supports,
    edge_csr,
    make_csr,
    plain_csrs,
    plain_kind,
)
from matlang.compiler.plan import Plan, render
from matlang.errors import GraphError, MatlangError
from matlang.runtime.batch import Batch
from matlang.runtime.cache import GraphCache


def stage_key(kind: str, plans: Sequence[Plan], **options: Any) -> str:
    """The key of a stage: the sha1 of its kind, options and rendered plans (what it
    computes; two layers of the same sentences and options share a key)."""
    h = hashlib.sha1(json.dumps({"kind": kind, **options}, sort_keys=True).encode())
    for plan in plans:
        h.update(b"\0" + render(plan).encode())
    return f"{kind}-{h.hexdigest()}"


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
    return Batch.from_edge_index(
        edge_index, batch, num_nodes=num_nodes, edge_weight=edge_weight
    ).validate()


@dataclass(eq=False)
class Stage:
    """What a layer's sentences of one kind compute: their Plans (lowered once, by
    :func:`~compiler.layers.sentences.describe_sentences`), the modules compiled from them and
    the per-graph cache of their supports. Built by :func:`sentence_stage`, which files it
    under its :attr:`key` for the custom ops."""

    kind: str
    plans: tuple[Plan, ...]
    #: the sentences' texts (error messages, the symmetry check)
    texts: tuple[str, ...]
    level: str
    dense: bool = False
    nonfinite: str = "error"
    #: the sentences' expressions where known (else parsed from the texts when needed)
    exprs: tuple[Any, ...] = ()
    key: str = field(init=False)
    spec: dict[str, Any] = field(init=False)
    _modules: dict[Any, Any] = field(init=False, default_factory=dict)
    #: how often the graph constants were computed (not served from the memo)
    computed: int = 0
    _symmetric: bool | None = field(init=False, default=None)
    #: the stage's one cache: its supports per graph (:mod:`compiler.layers.support_cache`;
    #: its compiled sentences keep no cache of their own, so a new graph is filed once);
    #: ``None``: supports computed on every new batch, as a benchmark's baseline
    cache: GraphCache | None = field(init=False, default_factory=GraphCache)
    _plain_kinds: list[str | None] | None = field(init=False, default=None)
    _masks: tuple[tuple[bool, bool], ...] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        options = {"dense": self.dense, "level": self.level, **nonfinite_option(self.nonfinite)}
        self.key = stage_key(self.kind, self.plans, **options)
        self.spec = {"kind": self.kind, "sentences": list(self.texts), **options}
        self._cache_params = (("stage", self.key),)

    @classmethod
    def lowered(
        cls,
        kind: str,
        texts: Sequence[str],
        *,
        level: str,
        dense: bool = False,
        nonfinite: str = "error",
    ) -> Stage:
        """A new stage of sentence texts, lowered here (not filed: see :func:`sentence_stage`)."""
        from matlang.compiler.lower import lower
        from matlang.parser import as_program

        plans = tuple(lower(as_program(t), dense=dense) for t in texts)
        return cls(kind, plans, tuple(texts), level, dense=dense, nonfinite=nonfinite)

    @property
    def sentences(self) -> list[str]:
        return list(self.texts)

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
        b = Batch.from_edge_index(edge_index, batch, num_nodes=n)

        def counted() -> Any:
            self.computed += 1
            return compute()

        return b.cached(f"stage.{what}.{self.key}", counted)

    def module(self, k: int, dtype: torch.dtype) -> Any:
        """The compiled module of sentence ``k`` (built from its Plan once per dtype)."""
        key = (k, dtype)
        m = self._modules.get(key)
        if m is None:
            from matlang.compiler.api import check_params_fit
            from matlang.compiler.module import CompiledModule

            plan = self.plans[k]
            check_params_fit(plan, dtype)
            # batches are validated here, once per batch (see remembered)
            m = CompiledModule(
                plan,
                dtype=dtype,
                nonfinite=self.nonfinite,
                validate=False,
                # the stage files its supports per graph (support_cache); the module filing
                # each graph's constants as well would store every new graph twice
                cache=False,
            )
            for p in m.parameters():  # a sentence's literals stay what they are
                p.requires_grad_(False)
            self._modules[key] = m
        return m

    # -- graph constants ---------------------------------------------------------------------
    def supports(self, edge_index: Tensor, batch: Tensor | None, n: int) -> Supports:
        """Every support on one CSR matrix (see :class:`Supports`; ``x W`` laid out as
        ``(S·N, out)`` is one product)."""
        from matlang.compiler.api import materialise

        def compute() -> Supports:
            seen, keys, looked = self._seen(edge_index, batch, n)
            if seen is not None:
                return seen
            from matlang.runtime.masks import prepared_edges

            b = make_batch(edge_index, batch, n)
            edges, _ = b.cached("compiled.edges", lambda: prepared_edges(b))
            kinds = self.plain_kinds
            rest = [k for k, kind in enumerate(kinds) if kind is None]  # more than A or I
            built: list[tuple[Tensor, Tensor]] = []

            def structure() -> tuple[Tensor, Tensor]:
                """The coalesced edges as CSR, once a batch (:func:`edge_csr`): the structure
                of ``A`` and of every support on the edge mask (``A ⊙ A²``)."""
                if not built:
                    built.append(edge_csr(b, edges))
                return built[0]

            csrs = plain_csrs(kinds, structure, n, edges.device)

            def whole() -> list[Csr]:
                out = []
                for k, (on_edges, row_major) in zip(rest, self.masks):
                    # the sentence compiled once (per stage), materialised on every batch
                    m = self.module(k, torch.float64)
                    index, values = materialise(m, b)
                    values = values.double()
                    if on_edges:  # its entries are the coalesced edges, in their order
                        rowptr, cols = structure()
                        if int(cols.shape[0]) == int(index.shape[1]):
                            out.append((rowptr, cols, values))
                            continue
                    # a row-major mask needs no sort and no check
                    out.append(make_csr(index[0], index[1], values, n, row_major=row_major))
                return out

            on_host = b.edge_weight is None and b.edge_index.device.type == "cpu"
            if rest and self.cache is not None and on_host:
                computed = cached_supports(
                    b,
                    edges,
                    self.cache,
                    self._cache_params,
                    whole,
                    keys,
                    self.on_edges,
                    structure,
                    looked,
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
    ) -> tuple[Supports | None, list[Any] | None, list[Any] | None]:
        """The supports of a batch made of graphs seen before, assembled from the cache
        without validating the batch (a graph whose edges equal, byte for byte, those of a
        graph that passed validation is valid; :func:`support_cache.seen_graphs` checks what
        that needs), with the graphs' cache keys and the entries looked up under them;
        ``(None, keys, looked)`` when a graph is new (the keys and entries serve the computed
        path: the same edges), ``(None, None, None)`` when the batch is weighted, on a device,
        fails those checks, or the layer has nothing worth caching."""
        kinds = self.plain_kinds
        if self.cache is None or all(kinds):
            return None, None, None
        b = Batch.from_edge_index(edge_index, batch, num_nodes=n)
        hit = seen_graphs(b, self.cache, self._cache_params)
        if hit is None:
            return None, None, None
        keys, ptr, pieces, a, looked = hit
        if pieces is None or a is None:
            return None, keys, looked
        # the batch's edges row-major, without repeats (checked by seen_graphs)
        structure = (a.indptr, a.cols)
        computed = iter(assemble(pieces, ptr, structure))
        plain = plain_csrs(kinds, lambda: structure, n, a.cols.device)
        csrs = [next(computed) if c is None else c for c in plain]
        return self._supports(csrs, n), keys, looked

    def _supports(self, csrs: list[Csr], n: int) -> Supports:
        identity = [k == "I" for k in self.plain_kinds]
        return Supports(csrs, n, symmetric=self.symmetric_sentences, identity=identity)

    @property
    def plain_kinds(self) -> list[str | None]:
        """``"A"``, ``"I"`` or ``None`` (computed) for each sentence (see :func:`plain_kind`)."""
        hit = self._plain_kinds
        if hit is None:
            hit = [plain_kind(plan) for plan in self.plans]
            self._plain_kinds = hit
        return hit

    @property
    def masks(self) -> tuple[tuple[bool, bool], ...]:
        """For each computed support (not ``A`` or ``I``, in order), facts of its plan's mask:
        whether it is the edges (``A ⊙ A²``: the per-graph cache files its values only, and a
        batch assembled from the cache takes the batch's own edges as its structure), and
        whether its entries come row-major (its CSR needs no sort and no check)."""
        hit = self._masks
        if hit is None:
            modules = [
                self.module(k, torch.float64)
                for k, kind in enumerate(self.plain_kinds)
                if kind is None
            ]
            hit = tuple((m.output_on_edges()[0], m.output_row_major()[0]) for m in modules)
            self._masks = hit
        return hit

    @property
    def on_edges(self) -> tuple[bool, ...]:
        """For each computed support: whether its mask is the edges (see :attr:`masks`)."""
        return tuple(on for on, _ in self.masks)

    @property
    def symmetric_sentences(self) -> bool:
        """Whether every sentence is provably symmetric for a symmetric ``A`` (what a
        validated batch has): ``C_sᵀ = C_s`` on every batch, by structure."""
        hit = self._symmetric
        if hit is None:
            from matlang.algebra import is_symmetric
            from matlang.parser import as_program

            exprs = list(self.exprs) or [None] * len(self.texts)
            hit = all(
                is_symmetric(e)
                if e is not None
                else all(is_symmetric(sent.expr) for sent in as_program(t))
                for e, t in zip(exprs, self.texts)
            )
            self._symmetric = hit
        return hit

    def values(self, edge_index: Tensor, batch: Tensor | None, n: int) -> Tensor:
        """``(N, K)`` (node sentences) or ``(G, K)`` (graph sentences), float64."""

        def compute() -> Tensor:
            b = make_batch(edge_index, batch, n)
            cols = [self.module(k, torch.float64)(b).detach() for k in range(len(self.plans))]
            rows = n if self.level == "node" else b.num_graphs
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
        b = Batch.from_edge_index(edge_index, batch, num_nodes=n)
        return self.channels(b, x, n if self.level == "node" else b.num_graphs)

    def channels(self, b: Batch, x: Tensor, rows: int) -> Tensor:
        """Every sentence of this stage on ``x`` ``(N, d)`` over the batch ``b`` (weighted or
        not): ``(rows, K·d)``, each sentence's ``d`` channels in one pass; half precision runs
        in float32 (:func:`compute_dtype`) and comes back in ``x``'s dtype."""
        work = compute_dtype(x.dtype)
        xin = x.to(work)
        outs: list[Tensor] = []
        for k in range(len(self.plans)):
            m = self.module(k, work)
            # every channel in one pass: the interpreter takes (N, d) signals
            outs.append(m(b, inputs={m.plan.inputs[0]: xin}).reshape(rows, x.shape[1]))
        if not outs:
            return x.new_zeros(rows, 0)
        return torch.cat(outs, 1).to(x.dtype)


#: Stages by key, for the custom ops (which name a stage by its key): weak, each stage is
#: held by the layers built on it and dies with the last of them.
_STAGES: weakref.WeakValueDictionary[str, Stage] = weakref.WeakValueDictionary()


def sentence_stage(
    kind: str,
    sentences: Sequence[Any],
    *,
    level: str,
    dense: bool = False,
    nonfinite: str = "error",
) -> Stage:
    """The stage of ``sentences`` (:class:`~compiler.layers.sentences.SentenceInfo` s: it
    takes their Plans), filed under its key: a stage of the same key already filed (held by
    another live layer) is returned, its compiled modules and cache shared. The caller holds
    it; the registry does not keep it alive."""
    plans = tuple(s.plan for s in sentences)
    texts = tuple(s.text for s in sentences)
    exprs = tuple(s.expr for s in sentences)
    new = Stage(kind, plans, texts, level, dense=dense, nonfinite=nonfinite, exprs=exprs)
    st = _STAGES.get(new.key)
    if st is None:
        st = _STAGES[new.key] = new
    return st


def stages_of(module: Any) -> list[Stage]:
    """The stages held by ``module``'s sentence layers (each once): what a benchmark reaches
    to switch their caches off or empty them."""
    found: dict[int, Stage] = {}
    for m in module.modules():
        for v in vars(m).values():
            if isinstance(v, Stage):
                found.setdefault(id(v), v)
    return list(found.values())


def stage(key: str) -> Stage:
    """The stage filed under ``key`` (see :func:`sentence_stage`)."""
    st = _STAGES.get(key)
    if st is None:
        raise MatlangError(
            f"no sentence stage {key!r}: it is built by its layer, which must be alive"
        )
    return st


# --------------------------------------------------------------------------- custom ops


def _mm(m: Tensor, y: Tensor) -> Tensor:
    if y.shape[1] == 1:  # one channel: mv is ~3× sparse.mm on an (N, 1) matrix
        return torch.mv(m, y[:, 0]).unsqueeze(1)
    # addmm_ with beta=0 ignores the uninitialised output (torch.addmm's documented rule):
    # 10-20 % below sparse.mm, which first fills a zero matrix, at d ≥ 16
    return y.new_empty(m.shape[0], y.shape[1]).addmm_(m, y, beta=0)


def _propagate(y: Tensor, edge_index: Tensor, batch: Tensor | None, key: str) -> Tensor:
    """``Σ_s C_s y[:, s]``, one CSR product per support (``y`` laid out support-major)."""
    return _propagate_on(y, stage(key).supports(edge_index, batch, y.shape[0]))


def _propagate_on(y: Tensor, sup: Supports) -> Tensor:
    n, s, c = y.shape
    ys = y.transpose(0, 1).contiguous()  # (S, N, C): each support's operand contiguous
    out: Tensor | None = None
    for k, (ys_k, eye) in enumerate(zip(ys, sup.identity)):
        if eye:  # I y: the operand itself (a copy if it starts the sum: never an alias of y)
            out = ys_k.clone() if out is None else out.add_(ys_k)
            continue
        m = sup.matrix(k, y.dtype)
        out = _mm(m, ys_k) if out is None else out.addmm_(m, ys_k)
    return y.new_zeros(n, c) if out is None else out


def _propagate_t(g: Tensor, edge_index: Tensor, batch: Tensor | None, key: str, s: int) -> Tensor:
    """The adjoint: ``(C_s)ᵀ g`` for every ``s``, as ``(N, S, C)``."""
    return _propagate_t_on(g, stage(key).supports(edge_index, batch, g.shape[0]))


def _propagate_t_on(g: Tensor, sup: Supports) -> Tensor:
    n, c = g.shape
    g = g.contiguous()
    out = g.new_empty(n, sup.s, c)  # written support by support (no stack of S temporaries)
    for k, eye in enumerate(sup.identity):
        out[:, k] = g if eye else _mm(sup.matrix_t(k, g.dtype), g)
    return out


class _Propagate(torch.autograd.Function):
    """Eager :func:`propagate_supports`: a plain autograd function holding its batch's
    supports (the custom op's dispatch costs ~0.2 ms a call, a lookup of the supports another
    in the backward); under ``torch.compile`` the custom op is used."""

    @staticmethod
    def forward(ctx: Any, y: Tensor, sup: Supports) -> Tensor:  # type: ignore[override]
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


class _Mix(torch.autograd.Function):
    """``Σ_s (σ_s ⊙ C_s x) W_s`` as one autograd node (see :func:`support_mix`).

    The backward takes the output's gradient ``g`` once: one contiguous copy where autograd
    hands an expanded one (a ``.sum()`` loss gives a stride-0 ``g``, which every dense product
    would otherwise copy again), ``∂W_s = F_sᵀ g`` straight into one ``(S, d, out)`` tensor,
    and ``∂x = Σ_s C_sᵀ (σ_s ⊙ g W_sᵀ)`` accumulated in one buffer (no sum of ``S`` gradients
    by the engine). Each part only where it is needed (a first layer's ``x`` takes none)."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, x: Tensor, w: Tensor, sup: Supports, scale: Tensor | None
    ) -> Tensor:
        x = x.contiguous()
        feats: list[Tensor] = []
        out: Tensor | None = None
        for k, eye in enumerate(sup.identity):
            f = x if eye else _mm(sup.matrix(k, x.dtype), x)
            if scale is not None:
                f = f * scale[:, k : k + 1]
            feats.append(f)
            out = f @ w[k] if out is None else out.addmm_(f, w[k])
        assert out is not None
        ctx.sup, ctx.scale = sup, scale
        ctx.save_for_backward(w, *feats)
        return out

    @staticmethod
    def backward(  # type: ignore[override]
        ctx: Any, g: Tensor
    ) -> tuple[Tensor | None, Tensor | None, None, None]:
        w, *feats = ctx.saved_tensors
        sup, scale = ctx.sup, ctx.scale
        g = g.contiguous()
        grad_w = None
        if ctx.needs_input_grad[1]:
            grad_w = w.new_empty(w.shape)
            for k, f in enumerate(feats):
                torch.mm(f.t(), g, out=grad_w[k])
        grad_x: Tensor | None = None
        if ctx.needs_input_grad[0]:
            order = sorted(range(len(feats)), key=lambda k: not sup.identity[k])  # I first
            for k in order:
                h = g @ w[k].t()
                if scale is not None:
                    h = h.mul_(scale[:, k : k + 1])
                if sup.identity[k]:
                    grad_x = h if grad_x is None else grad_x.add_(h)
                else:
                    m = sup.matrix_t(k, g.dtype)
                    grad_x = _mm(m, h) if grad_x is None else grad_x.addmm_(m, h)
        return grad_x, grad_w, None, None


def support_mix(
    x: Tensor,
    w: Tensor,
    edge_index: Tensor,
    batch: Tensor | None,
    key: str,
    scale: Tensor | None = None,
) -> Tensor:
    """``Σ_s (σ_s ⊙ C_s x) W_s`` ``(N, out)`` for the supports of a stage, ``w`` ``(S, d,
    out)``, ``σ`` an optional ``(N, S)`` row scale (no gradient); differentiable in ``x`` and
    ``w``. Eager only (a layer under ``torch.compile`` takes :func:`propagate`): for a layer
    with ``d ≤ out``, its sparse products on the ``d`` input channels, none for ``I`` (``I x``
    is ``x``), none in the backward where ``x`` needs no gradient (a first layer), and the
    dense products accumulated in one output."""
    sup = stage(key).supports(edge_index, batch, x.shape[0])
    return _Mix.apply(x, w, sup, scale)  # type: ignore[no-any-return]


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
    spec = stage(key).spec
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
    spec = stage(key).spec
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
    "support_mix",
    "make_batch",
    "sentence_stage",
    "stage",
    "stage_key",
    "stages_of",
]
