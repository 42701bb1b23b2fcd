"""Sparse kernels for message passing, on two interchangeable backends.

A sparse matrix is a pair ``(edge_index, value)``: ``edge_index`` is a ``(2, E)`` integer tensor
whose row ``edge_index[0]`` is the row ``i`` (the node that *receives*) and whose row
``edge_index[1]`` is the column ``j`` (the node that *sends*); ``value`` is ``(E,)`` or, for one
matrix per channel, ``(E, C)``; ``None`` means every stored entry is 1. Entries stored twice add
up. Every kernel here computes an exact identity of dense linear algebra:

=====================  ========================================================================
``propagate``          ``out[i] = Σ_{(i,j)} w_ij h[j]``                       (``W h``)
``scatter_sum/max/..`` ``out[g] = reduce_{e: index[e] = g} src[e]``            (readouts)
``coalesce``           sort row-major, add up entries stored twice
``spspmm``             ``A B`` on its structural support (every path ``i → k → j``)
``sampled_product``    ``(A B)[i, j]`` for each entry ``(i, j)`` of a given mask
``diag_of_product``    ``diag(A B)``, i.e. ``(A B)[i, i] = Σ_k A[i,k] B[k,i]``
=====================  ========================================================================

Backends: ``"torch_sparse"`` (``torch_sparse.SparseTensor`` and ``torch_scatter``; its sampled
product is torch's CSR product taken one block of rows at a time) when those are importable, and
``"torch"`` (``index_add_``, ``scatter_reduce`` and sorted-key joins), always. The two compute
every kernel differently, so each checks the other.
Every function takes ``backend=``; ``None`` means the innermost :func:`use_backend` choice, else
:func:`default_backend`. Gradients flow through values (and through ``h`` / ``src``) on both
backends, in float32 and float64. Second derivatives: everything on ``"torch"``, and the products
on ``"torch_sparse"``; its ``propagate`` (torch_sparse's CSR ``spmm``) has no double backward.
"""

from __future__ import annotations

import bisect
import contextlib
import contextvars
import functools
import warnings
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import torch
from torch import Tensor

from matlang.errors import GraphError, MatlangError
from matlang.runtime.last_built import LastBuilt

#: Every backend this module knows, in order of preference.
BACKENDS: tuple[str, ...] = ("torch_sparse", "torch")

_CHOSEN: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "matlang_sparse_backend", default=None
)


# --------------------------------------------------------------------------- backends


@functools.cache
def _torch_sparse_modules() -> tuple[ModuleType, ModuleType] | None:
    """``(torch_sparse, torch_scatter)`` when both import cleanly, else ``None``."""
    try:
        with warnings.catch_warnings():
            # torch_sparse scripts its kernels on import; newer torch deprecates torch.jit.script
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch\.jit")
            import torch_scatter
            import torch_sparse
    except (ImportError, OSError, RuntimeError):
        return None
    return torch_sparse, torch_scatter


@functools.cache
def available_backends() -> tuple[str, ...]:
    """The backends that can run here, in order of preference (``"torch"`` always)."""
    return tuple(b for b in BACKENDS if b == "torch" or _torch_sparse_modules() is not None)


def default_backend() -> str:
    """The backend used for ``backend=None``: the innermost :func:`use_backend`, else the first
    available one."""
    chosen = _CHOSEN.get()
    return chosen if chosen is not None else available_backends()[0]


def resolve_backend(backend: str | None = None) -> str:
    """``backend`` checked (or the default when ``None``)."""
    name = default_backend() if backend is None else backend
    if name not in BACKENDS:
        raise MatlangError(f"unknown sparse backend {name!r}; known: {', '.join(BACKENDS)}")
    if name not in available_backends():
        raise MatlangError(
            f"sparse backend {name!r} is not available here (torch_sparse/torch_scatter do not "
            "import); install the extra with `pip install matlang[sparse]` or use 'torch'"
        )
    return name


@contextlib.contextmanager
def use_backend(backend: str) -> Iterator[str]:
    """Within the block, ``backend=None`` means ``backend`` (checked on entry)."""
    token = _CHOSEN.set(resolve_backend(backend))
    try:
        yield _CHOSEN.get() or backend
    finally:
        _CHOSEN.reset(token)


def _ts() -> ModuleType:
    mods = _torch_sparse_modules()
    assert mods is not None  # resolve_backend has checked
    return mods[0]


def _ts_product(a: Any, b: Any) -> Any:
    """``a @ b`` of two SparseTensors; torch_sparse routes it through ``torch.sparse.mm``, whose
    beta/invariant-check warnings say nothing to our users."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Sparse (CSR tensor support|invariant checks)")
        return a @ b


def _tsc() -> ModuleType:
    mods = _torch_sparse_modules()
    assert mods is not None
    return mods[1]


def row_pointers(rows: Tensor, num_rows: int) -> Tensor:
    """CSR row pointers ``(num_rows + 1,)``: where each row's entries start, once the entries
    are sorted by row (``rows`` itself may be in any order: only its counts matter)."""
    ptr = torch.zeros(num_rows + 1, dtype=torch.int64, device=rows.device)
    ptr[1:] = torch.cumsum(torch.bincount(rows, minlength=num_rows), 0)
    return ptr


def csr_matrix(rowptr: Tensor, col: Tensor, value: Tensor, size: tuple[int, int]) -> Tensor:
    """torch's CSR tensor of sorted compressed rows (not checked), without its beta-state
    warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Sparse (CSR tensor support|invariant checks)")
        return torch.sparse_csr_tensor(rowptr, col, value, size, check_invariants=False)


# --------------------------------------------------------------------------- checks


def _index(edge_index: Tensor, what: str = "edge_index") -> Tensor:
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise GraphError(f"{what} must have shape (2, E), got {tuple(edge_index.shape)}")
    if edge_index.dtype.is_floating_point or edge_index.dtype == torch.bool:
        raise GraphError(f"{what} must hold integers, got {edge_index.dtype}")
    return edge_index.to(torch.int64)


def _values(value: Tensor | None, num: int, dtype: torch.dtype, device: Any, what: str) -> Tensor:
    """``value`` checked against ``num`` entries, or ones when ``None``."""
    if value is None:
        return torch.ones(num, dtype=dtype, device=device)
    if value.dim() not in (1, 2) or value.shape[0] != num:
        raise GraphError(
            f"{what} must have shape ({num},) or ({num}, C) to match its edge_index, "
            f"got {tuple(value.shape)}"
        )
    return value


def _common_dtype(*values: Tensor | None) -> torch.dtype:
    dts = [v.dtype for v in values if v is not None]
    if not dts:
        return torch.get_default_dtype()
    out = dts[0]
    for d in dts[1:]:
        out = torch.promote_types(out, d)
    return out


def _col(v: Tensor) -> Tensor:
    """``(E,)`` → ``(E, 1)`` so that values with and without channels broadcast."""
    return v.unsqueeze(-1) if v.dim() == 1 else v


def _uncol(out: Tensor, *inputs: Tensor) -> Tensor:
    """Drop the channel axis again when no input had one."""
    return out.squeeze(-1) if all(v.dim() == 1 for v in inputs) else out


def _sum_to(grad: Tensor, like: Tensor) -> Tensor:
    """A gradient summed over the channel axis that broadcasting added to ``like``."""
    return grad.sum(-1) if grad.dim() > like.dim() else grad


# --------------------------------------------------------------------------- propagate


def propagate(
    edge_index: Tensor,
    h: Tensor,
    edge_weight: Tensor | None = None,
    num_nodes: int | None = None,
    backend: str | None = None,
    operators: LastBuilt | None = None,
) -> Tensor:
    r"""Sparse matrix times node signal: ``out[i] = Σ_{(i,j) ∈ edges} w_ij h[j]``.

    .. math::
        \mathbf{out} = W\,\mathbf{h}, \qquad W_{ij} = \sum_{e = (i, j)} w_e

    Args:
        edge_index: ``(2, E)``; ``edge_index[0]`` is the receiving row ``i``.
        h: ``(N,)`` or ``(N, C)`` signal on the columns.
        edge_weight: ``(E,)``, or ``(E, C)`` for one matrix per channel; ``None`` = ones.
            Cast to ``h``'s dtype.
        num_nodes: number of output rows (default ``h.shape[0]``).
        backend: ``"torch_sparse"``, ``"torch"`` or ``None`` (see :func:`default_backend`).
        operators: the caller's memo of the last torch_sparse operator built (see
            :func:`_operator`); ``None``: built on every call.

    Shapes:
        out: ``(num_nodes,)`` when ``h`` and ``edge_weight`` have no channel axis, else
        ``(num_nodes, C)``.
    """
    name = resolve_backend(backend)
    ei = _index(edge_index)
    if h.dim() not in (1, 2):
        raise GraphError(f"node signal must have shape (N,) or (N, C), got {tuple(h.shape)}")
    n_out = int(h.shape[0]) if num_nodes is None else int(num_nodes)
    num_e = int(ei.shape[1])
    w = None
    if edge_weight is not None:
        w = _values(edge_weight, num_e, h.dtype, h.device, "edge_weight").to(h.dtype)
        if w.dim() == 2 and h.dim() == 2 and w.shape[1] != h.shape[1] and h.shape[1] != 1:
            raise GraphError(
                f"per-channel edge_weight has {w.shape[1]} channels but h has {h.shape[1]}"
            )
    row, col = ei[0], ei[1]
    h2 = _col(h)
    # torch_sparse's kernels die (SIGFPE, the whole process) on an empty axis: no channels, no
    # rows (a batch of empty graphs) or no edges; the pure-torch path below handles all three.
    degenerate = h2.shape[1] == 0 or n_out == 0 or h2.shape[0] == 0 or num_e == 0
    if h2.shape[1] == 0:
        out = h2.new_zeros((n_out, 0))
    elif name == "torch_sparse" and not degenerate and (w is None or w.dim() == 1):
        out = _operator(ei, w, (n_out, int(h.shape[0])), operators).matmul(h2)
    else:
        msg = h2.index_select(0, col)
        if w is not None:
            msg = msg * _col(w)
        if name == "torch_sparse" and not degenerate:
            out = _tsc().scatter(msg, row, dim=0, dim_size=n_out, reduce="sum")
        else:
            out = msg.new_zeros((n_out, msg.shape[1])).index_add_(0, row, msg)
    if h.dim() == 1 and (w is None or w.dim() == 1):
        return out.squeeze(-1)
    return out


def _operator(
    ei: Tensor, w: Tensor | None, sizes: tuple[int, int], memo: LastBuilt | None
) -> Any:
    """``SparseTensor(row=ei[0], col=ei[1], value=w)`` of ``sizes``, the last one built when
    it was built from these very tensors (the caller's ``memo``, a :class:`LastBuilt`): the
    entries sorted and, for the backward, the transpose built once per operator, not once per
    product."""

    def build() -> Any:
        return _ts().SparseTensor(row=ei[0], col=ei[1], value=w, sparse_sizes=sizes)

    return build() if memo is None else memo.get((ei, w), sizes, build)


# --------------------------------------------------------------------------- scatter


def _scatter_index(index: Tensor, src: Tensor) -> Tensor:
    if index.dim() != 1 or index.shape[0] != src.shape[0]:
        raise GraphError(
            f"scatter index must have shape ({src.shape[0]},), got {tuple(index.shape)}"
        )
    return index.to(torch.int64)


def scatter_sum(src: Tensor, index: Tensor, dim_size: int, backend: str | None = None) -> Tensor:
    """``out[g] = Σ_{e: index[e] = g} src[e]`` along dim 0 (empty groups give 0).

    Shapes:
        src: ``(E, *)``; index: ``(E,)``; out: ``(dim_size, *)``.
    """
    name = resolve_backend(backend)
    idx = _scatter_index(index, src)
    if name == "torch_sparse" and src.numel() and dim_size:  # empty axes: SIGFPE there
        return _tsc().scatter(src, idx, dim=0, dim_size=dim_size, reduce="sum")
    return src.new_zeros((dim_size, *src.shape[1:])).index_add_(0, idx, src)


def scatter_max(src: Tensor, index: Tensor, dim_size: int, backend: str | None = None) -> Tensor:
    """``out[g] = max_{e: index[e] = g} src[e]`` along dim 0 (empty groups give 0).

    Shapes:
        src: ``(E, *)``; index: ``(E,)``; out: ``(dim_size, *)``.
    """
    name = resolve_backend(backend)
    idx = _scatter_index(index, src)
    if name == "torch_sparse" and src.numel() and dim_size:  # empty axes: SIGFPE there
        return _tsc().scatter_max(src, idx, dim=0, dim_size=dim_size)[0]
    full = idx.view(-1, *([1] * (src.dim() - 1))).expand_as(src)
    out = src.new_zeros((dim_size, *src.shape[1:]))
    return out.scatter_reduce(0, full, src, reduce="amax", include_self=False)


def scatter_mean(src: Tensor, index: Tensor, dim_size: int, backend: str | None = None) -> Tensor:
    """``out[g] = mean_{e: index[e] = g} src[e]`` along dim 0 (empty groups give 0).

    Shapes:
        src: ``(E, *)``; index: ``(E,)``; out: ``(dim_size, *)``.
    """
    name = resolve_backend(backend)
    idx = _scatter_index(index, src)
    if name == "torch_sparse" and src.numel() and dim_size:  # empty axes: SIGFPE there
        return _tsc().scatter(src, idx, dim=0, dim_size=dim_size, reduce="mean")
    total = src.new_zeros((dim_size, *src.shape[1:])).index_add_(0, idx, src)
    count = torch.bincount(idx, minlength=dim_size).clamp(min=1).to(src.dtype)
    return total / count.view(-1, *([1] * (src.dim() - 1)))


# --------------------------------------------------------------------------- coalesce


def coalesce(
    edge_index: Tensor, value: Tensor, num_nodes: int, backend: str | None = None
) -> tuple[Tensor, Tensor]:
    """Sort entries row-major and add up entries stored twice.

    Shapes:
        edge_index: ``(2, E)``; value: ``(E,)`` or ``(E, C)``; returns ``(2, E')`` and
        ``(E',)`` / ``(E', C)`` with ``E' ≤ E``.
    """
    name = resolve_backend(backend)
    ei = _index(edge_index)
    v = _values(value, int(ei.shape[1]), value.dtype, value.device, "value")
    if name == "torch_sparse" and v.numel() and num_nodes:
        idx, val = _ts().coalesce(ei, v, num_nodes, num_nodes, op="add")
        return idx, val
    return _coalesce_torch(ei, v, num_nodes)


def is_coalesced(key: Tensor) -> bool:
    """True when row-major keys ``i·n + j`` are strictly increasing: sorted, no repeats (an O(E)
    check that spares a sort-based unique on edges that arrive coalesced)."""
    return key.numel() < 2 or bool((key[1:] > key[:-1]).all())


def _coalesce_torch(ei: Tensor, v: Tensor, n: int) -> tuple[Tensor, Tensor]:
    key = ei[0] * n + ei[1]
    if is_coalesced(key):
        # Already sorted without repeats (torch_sparse's products, Graph.edge_index, PyG):
        # an O(E) check instead of a sort-based unique.
        return ei, v
    uniq, inverse = torch.unique(key, sorted=True, return_inverse=True)
    out = v.new_zeros((uniq.numel(), *v.shape[1:])).index_add_(0, inverse, v)
    return torch.stack([uniq // max(n, 1), uniq % max(n, 1)]), out


# --------------------------------------------------------------------------- products


def _paths(ia: Tensor, ib: Tensor, n: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Every product term of ``A B``: for each A entry ``e = (i, k)`` and each B entry
    ``f = (k, j)``, the pair ``(e, f)``. Returns ``(rows i, cols j, e, f)``; a sorted-key join
    with memory O(|A| + |B| + #terms)."""
    order_b = torch.argsort(ib[0], stable=True)
    ptr_b = row_pointers(ib[0], n)
    k = ia[1]
    start = ptr_b[k]
    count = ptr_b[k + 1] - start
    e = torch.repeat_interleave(torch.arange(ia.shape[1], device=ia.device), count)
    first = torch.cumsum(count, 0) - count  # where each A entry's run of terms begins
    f = order_b[start[e] + torch.arange(e.numel(), device=ia.device) - first[e]]
    return ia[0][e], ib[1][f], e, f


def _sampled_torch(ia: Tensor, wa: Tensor, ib: Tensor, wb: Tensor, mask: Tensor, n: int) -> Tensor:
    rows, cols, e, f = _paths(ia, ib, n)
    mkey = mask[0] * n + mask[1]
    uniq, inverse = torch.unique(mkey, sorted=True, return_inverse=True)
    key = rows * n + cols
    if uniq.numel():
        pos = torch.searchsorted(uniq, key).clamp(max=uniq.numel() - 1)
        hit = uniq[pos] == key
        e, f, pos = e[hit], f[hit], pos[hit]
    else:
        e, f, pos = e[:0], f[:0], key[:0]
    terms = _col(wa).index_select(0, e) * _col(wb).index_select(0, f)
    acc = terms.new_zeros((uniq.numel(), terms.shape[1])).index_add_(0, pos, terms)
    return _uncol(acc.index_select(0, inverse), wa, wb)


#: Product terms (paths i → k → j) per row block of a blocked sampled product: a block's
#: partial product and the mask rows it is read at stay in cache, so the time per term does not
#: grow with the graph (one product of the whole graph would sort/scan arrays far beyond cache).
SAMPLED_BLOCK_TERMS = 1 << 18

#: ... but at least this many per entry of ``B``: each of torch's CSR products costs time in
#: proportion to nnz(B) whatever the block's size (at n = 10⁶, E = 10⁷: ~25 ms per block), so a
#: fixed block size makes the whole product O(E · terms / block), quadratic in E. Blocks of at
#: least nnz(B) terms keep their count at about the average degree.
SAMPLED_BLOCK_TERMS_PER_ENTRY = 1

#: The sampled product reads its product at the mask through a direct-address table
#: (:class:`_MaskTable`, one gather per product entry) of at most this many slots per product
#: term, mask entry and node (int32 slots: 16 bytes per term, about what the product itself
#: holds per term) ...
MASK_SLOTS_PER_ENTRY = 4

#: ... or, whatever the counts, up to this many (4 MiB): one graph of n ≈ 1,000 has rows whose
#: windows span the graph (n² slots), and filling 10⁶ slots costs less than a binary search of
#: every product entry in the mask. Beyond both bounds the mask is binary-searched.
MASK_SLOTS_MIN = 1 << 20

#: Rows whose windows need more slots than that are read a chunk of rows at a time, the table
#: refilled per chunk (~50 µs of calls): at least this many product terms per chunk keeps that
#: to a few percent of the product's time, with a table as small as it allows (cache).
MASK_TERMS_PER_CHUNK = 1 << 14


def _mask_windows(
    ia: Tensor, ib: Tensor, ptr_b: Tensor, urow: Tensor, ucol: Tensor, n: int
) -> tuple[Tensor, Tensor]:
    """Each row's window of columns in a direct-address table from the entries of ``A B`` to
    the mask's: ``(lo, width)``, row ``i`` covering columns ``[lo_i, lo_i + width_i)``.

    The window holds row ``i``'s mask entries and its product entries: a product entry
    ``(i, j)`` has ``j`` in row ``k`` of B for some entry ``(i, k)`` of A, so between the first
    and the last column of that row (B is sorted row-major). In a batch of small graphs a window
    is at most one graph wide. ``A``, ``B`` sorted row-major and non-empty.
    """
    device = ia.device
    # B's first and last column in each row; for an empty row, a neighbour's: that only widens
    # a window (no product entry comes from an empty row)
    first = ib[1].index_select(0, ptr_b[:-1].clamp(max=ib.shape[1] - 1))
    last = ib[1].index_select(0, (ptr_b[1:] - 1).clamp(min=0))
    lo = torch.full((n,), n, dtype=torch.int64, device=device)
    lo.scatter_reduce_(0, ia[0], first.index_select(0, ia[1]), "amin")
    lo.scatter_reduce_(0, urow, ucol, "amin")
    hi = torch.full((n,), -1, dtype=torch.int64, device=device)
    hi.scatter_reduce_(0, ia[0], last.index_select(0, ia[1]), "amax")
    hi.scatter_reduce_(0, urow, ucol, "amax")
    return lo, (hi - lo + 1).clamp_(min=0)  # width 0 for a row with neither


class _MaskTable:
    """Product entries ``(i, j)`` → mask entries by direct address, a chunk of rows at a time.

    Rows are cut into chunks whose windows (:func:`_mask_windows`) take about ``per_chunk``
    slots; one table, the size of the largest chunk, is reused: while it holds a chunk, product
    entry ``(i, j)`` is at slot ``shift[i] + j``, which holds its mask entry's position, or
    ``M`` (one past the mask) where the mask has no such entry. A batch of small graphs is one
    chunk. The mask sorted row-major, without repeats (``ptr_m`` its row pointers).
    """

    def __init__(
        self, lo: Tensor, width: Tensor, ptr_m: Tensor, urow: Tensor, ucol: Tensor, per_chunk: int
    ) -> None:
        n, m, device = width.numel(), urow.numel(), width.device
        ends = torch.cumsum(width, 0)
        chunk = torch.div(ends - 1, max(per_chunk, 1), rounding_mode="floor").clamp_(min=0)
        cuts = torch.nonzero(chunk[1:] != chunk[:-1]).flatten() + 1
        self.bounds: list[int] = [0, *cuts.tolist(), n]
        starts = torch.cat([ends.new_zeros(1), ends])  # slots before row i
        bounds = torch.tensor(self.bounds, device=device)
        base = starts.index_select(0, bounds)  # slots before each chunk
        rows = bounds.diff()
        # slot of (i, j): where row i's window starts in its chunk, plus j − lo_i
        self.shift = starts[:-1] - torch.repeat_interleave(base[:-1], rows, output_size=n) - lo
        kind = torch.int32 if m < 2**31 - 1 else torch.int64  # half the memory, same gathers
        self.table = torch.full((int(base.diff().max()),), m, dtype=kind, device=device)
        self.positions = torch.arange(m, dtype=kind, device=device)
        self.m, self.ptr_m, self.urow, self.ucol = m, ptr_m, urow, ucol
        self.loaded = -1  # the chunk the table holds

    @property
    def chunks(self) -> int:
        return len(self.bounds) - 1

    def load(self, c: int) -> tuple[int, int]:
        """Fill the table with chunk ``c`` (emptying the one it held); its rows ``[c0, c1)``."""
        if c != self.loaded:
            if self.loaded >= 0:
                self._write(self.loaded, None)
            self._write(c, self.positions)
            self.loaded = c
        return self.bounds[c], self.bounds[c + 1]

    def _write(self, c: int, positions: Tensor | None) -> None:
        m0, m1 = int(self.ptr_m[self.bounds[c]]), int(self.ptr_m[self.bounds[c + 1]])
        at = self.shift.index_select(0, self.urow[m0:m1]) + self.ucol[m0:m1]
        if positions is None:
            self.table.index_fill_(0, at, self.m)
        else:
            self.table.index_copy_(0, at, positions[m0:m1])


def _sampled_blocked_raw(
    ia: Tensor, wa: Tensor, ib: Tensor, wb: Tensor, mask: Tensor, n: int
) -> Tensor:
    """Forward only (no autograd): ``(A B)|_mask`` by torch's CSR product, one block of rows of
    ``A`` at a time (:data:`SAMPLED_BLOCK_TERMS`; one product when it fits one block), each
    block's product read at the mask's entries (:class:`_MaskTable`, else a binary search).
    Entries stored twice in ``A`` or ``B`` add up (CSR products sum them before the product); a
    mask entry listed twice gets its value twice."""
    wa2, wb2 = _col(wa), _col(wb)
    channels = max(wa2.shape[1], wb2.shape[1])
    dtype = torch.promote_types(wa.dtype, wb.dtype)
    device = mask.device
    given_a = ia
    # torch's CSR product needs sorted rows without repeats (with repeats it can crash)
    ia, wa2 = _coalesce_torch(ia, wa2.to(dtype), n)
    same_ab = given_a is ib and ia is given_a  # A's entries, already coalesced, are B's: A A
    ib, wb2 = (ia, wb2.to(dtype)) if same_ab else _coalesce_torch(ib, wb2.to(dtype), n)
    mkey = mask[0] * n + mask[1]
    if is_coalesced(mkey):  # masks the compiler builds are (edges, compositions, unions)
        uniq, inverse, urow, ucol = mkey, None, mask[0], mask[1]
    else:
        uniq, inverse = torch.unique(mkey, sorted=True, return_inverse=True)
        urow, ucol = uniq // max(n, 1), uniq % max(n, 1)
    m = uniq.numel()
    # row m collects the product entries the mask has no entry for (dropped at the end)
    out = torch.zeros((m + 1, channels), dtype=dtype, device=device)
    if m == 0 or ia.shape[1] == 0 or ib.shape[1] == 0:
        return _uncol(out[:m] if inverse is None else out.index_select(0, inverse), wa, wb)
    ptr_a = row_pointers(ia[0], n)
    ptr_b = ptr_a if same_ab else row_pointers(ib[0], n)
    # terms of row i: Σ over A's entries (i, k) of the entries of B's row k
    count_b = ptr_b[1:] - ptr_b[:-1]
    terms = torch.zeros(n, dtype=torch.int64, device=device).index_add_(
        0, ia[0], count_b.index_select(0, ia[1])
    )
    total = torch.cumsum(terms, 0)
    num_terms = int(total[-1])
    budget = max(SAMPLED_BLOCK_TERMS, SAMPLED_BLOCK_TERMS_PER_ENTRY * ib.shape[1])
    bounds = [0, n]
    if num_terms > budget:
        marks = torch.arange(budget, num_terms, budget, device=device)
        bounds = [0, *torch.searchsorted(total, marks, right=True).tolist(), n]
    lo, width = _mask_windows(ia, ib, ptr_b, urow, ucol, n)
    ptr_m = row_pointers(urow, n)
    chunks = max(1, num_terms // MASK_TERMS_PER_CHUNK)
    per_chunk = max(MASK_SLOTS_MIN, -(-int(width.sum()) // chunks))
    table = None
    if per_chunk <= max(MASK_SLOTS_MIN, MASK_SLOTS_PER_ENTRY * (num_terms + m + n)):
        table = _MaskTable(lo, width, ptr_m, urow, ucol, per_chunk)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Sparse (CSR tensor support|invariant checks)")
        for c in range(channels):
            va = wa2[:, c if wa2.shape[1] > 1 else 0].contiguous()
            vb = wb2[:, c if wb2.shape[1] > 1 else 0].contiguous()
            b = torch.sparse_csr_tensor(ptr_b, ib[1].contiguous(), vb, (n, n))
            for r0, r1 in zip(bounds[:-1], bounds[1:]):
                if len(bounds) == 2:  # one block: A as it is
                    a = torch.sparse_csr_tensor(ptr_a, ia[1].contiguous(), va, (n, n))
                else:
                    a0, a1 = int(ptr_a[r0]), int(ptr_a[r1])
                    if r1 <= r0 or a1 == a0:
                        continue
                    a = torch.sparse_csr_tensor(
                        ptr_a[r0 : r1 + 1] - a0, ia[1, a0:a1].contiguous(), va[a0:a1], (r1 - r0, n)
                    )
                prod = torch.sparse.mm(a, b)
                cptr, pcol, pval = prod.crow_indices(), prod.col_indices(), prod.values()
                counts = cptr[1:] - cptr[:-1]
                if table is not None:  # the table's chunks that cover rows [r0, r1)
                    k = bisect.bisect_right(table.bounds, r0) - 1
                    while k < table.chunks and table.bounds[k] < r1:
                        c0, c1 = table.load(k)
                        s0, s1 = max(c0, r0), min(c1, r1)
                        p0, p1 = int(cptr[s0 - r0]), int(cptr[s1 - r0])
                        if p1 > p0:
                            at = torch.repeat_interleave(
                                table.shift[s0:s1], counts[s0 - r0 : s1 - r0], output_size=p1 - p0
                            )
                            hit = table.table.index_select(0, at + pcol[p0:p1])
                            out[:, c].index_add_(0, hit, pval[p0:p1])
                        k += 1
                    continue
                m0, m1 = int(ptr_m[r0]), int(ptr_m[r1])
                if m1 == m0:
                    continue
                crow = torch.repeat_interleave(
                    torch.arange(r1 - r0, device=device), counts, output_size=pcol.numel()
                )
                ckey = crow * n + pcol  # columns within a row unsorted: no matter
                mk = (urow[m0:m1] - r0) * n + ucol[m0:m1]
                pos = torch.searchsorted(mk, ckey).clamp(max=m1 - m0 - 1)
                hit = mk[pos] == ckey
                out[m0:m1, c].index_add_(0, pos[hit], pval[hit])
    out = out[:m]
    return _uncol(out if inverse is None else out.index_select(0, inverse), wa, wb)


class _SampledProduct(torch.autograd.Function):
    """``(A B)|_mask`` computed by a forward-only kernel, with exact sparse gradients:
    ``∂/∂A[i,k] = (G Bᵀ)[i,k]`` on A's entries and ``∂/∂B[k,j] = (Aᵀ G)[k,j]`` on B's."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        wa: Tensor,
        wb: Tensor,
        ia: Tensor,
        ib: Tensor,
        mask: Tensor,
        n: int,
        raw: Callable[..., Tensor],
    ) -> Tensor:
        ctx.save_for_backward(wa, wb, ia, ib, mask)
        ctx.n = n
        with torch.no_grad():
            return raw(ia, wa, ib, wb, mask, n)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        wa, wb, ia, ib, mask = ctx.saved_tensors
        n = ctx.n
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = sampled_product(mask, grad, ib.flip(0), wb, ia, n, backend="torch_sparse")
            ga = _sum_to(ga, wa)
        if ctx.needs_input_grad[1]:
            gb = sampled_product(ia.flip(0), wa, mask, grad, ib, n, backend="torch_sparse")
            gb = _sum_to(gb, wb)
        return ga, gb, None, None, None, None, None


def sampled_product(
    edge_index_a: Tensor,
    w_a: Tensor | None,
    edge_index_b: Tensor,
    w_b: Tensor | None,
    mask_index: Tensor,
    num_nodes: int,
    backend: str | None = None,
) -> Tensor:
    r"""The product ``A B`` read only at the entries of a mask (a sampled product).

    .. math::
        \mathbf{out}_m = (A B)_{i_m j_m} = \sum_k A_{i_m k} B_{k j_m},
        \qquad (i_m, j_m) = \text{mask\_index}[:, m]

    Exact; memory O(|A| + |B| + |mask| + number of product terms). An entry of the mask that no
    path ``i → k → j`` reaches gets 0; a mask entry listed twice gets its value twice.

    Args:
        edge_index_a, w_a: the n×n matrix ``A`` (``w_a``: ``(E_a,)``, ``(E_a, C)`` or ``None``).
        edge_index_b, w_b: the n×n matrix ``B``.
        mask_index: ``(2, M)`` entries to compute.
        num_nodes: ``n``.
        backend: see :func:`default_backend`.

    Shapes:
        out: ``(M,)``, or ``(M, C)`` when ``w_a`` or ``w_b`` has channels.
    """
    name = resolve_backend(backend)
    ia, ib = _index(edge_index_a, "edge_index_a"), _index(edge_index_b, "edge_index_b")
    mask = _index(mask_index, "mask_index")
    dtype = _common_dtype(w_a, w_b)
    device = ia.device
    wa = _values(w_a, int(ia.shape[1]), dtype, device, "w_a").to(dtype)
    wb = _values(w_b, int(ib.shape[1]), dtype, device, "w_b").to(dtype)
    if wa.dim() == 2 and wb.dim() == 2 and wa.shape[1] != wb.shape[1]:
        raise GraphError(f"w_a has {wa.shape[1]} channels but w_b has {wb.shape[1]}")
    if name == "torch":
        return _sampled_torch(ia, wa, ib, wb, mask, int(num_nodes))
    out = _SampledProduct.apply(wa, wb, ia, ib, mask, int(num_nodes), _sampled_blocked_raw)
    assert isinstance(out, Tensor)
    return out


def spspmm(
    edge_index_a: Tensor,
    w_a: Tensor | None,
    edge_index_b: Tensor,
    w_b: Tensor | None,
    num_nodes: int,
    backend: str | None = None,
) -> tuple[Tensor, Tensor]:
    r"""Sparse times sparse: ``C = A B`` on its structural support, coalesced.

    .. math::
        C_{ij} = \sum_k A_{ik} B_{kj}, \qquad (i, j) \in \{(i, j) : \exists k,\
        (i, k) \in A,\ (k, j) \in B\}

    Entries whose terms cancel to 0 are kept (the support is structural).

    Args:
        edge_index_a, w_a: the n×n matrix ``A`` (``w_a``: ``(E_a,)``, ``(E_a, C)`` or ``None``).
        edge_index_b, w_b: the n×n matrix ``B``.
        num_nodes: ``n``.
        backend: see :func:`default_backend`.

    Shapes:
        returns ``index (2, E_C)`` sorted row-major without repeats, and ``value (E_C,)`` or
        ``(E_C, C)``.
    """
    name = resolve_backend(backend)
    ia, ib = _index(edge_index_a, "edge_index_a"), _index(edge_index_b, "edge_index_b")
    n = int(num_nodes)
    dtype = _common_dtype(w_a, w_b)
    wa = _values(w_a, int(ia.shape[1]), dtype, ia.device, "w_a").to(dtype)
    wb = _values(w_b, int(ib.shape[1]), dtype, ia.device, "w_b").to(dtype)
    if wa.dim() == 2 and wb.dim() == 2 and wa.shape[1] != wb.shape[1]:
        raise GraphError(f"w_a has {wa.shape[1]} channels but w_b has {wb.shape[1]}")
    if name == "torch":
        rows, cols, e, f = _paths(ia, ib, n)
        terms = _col(wa).index_select(0, e) * _col(wb).index_select(0, f)
        index, value = _coalesce_torch(torch.stack([rows, cols]), terms, n)
        return index, _uncol(value, wa, wb)
    # torch_sparse: the support from its kernel, the values through the differentiable sampler
    ts = _ts()
    with torch.no_grad():
        a = ts.SparseTensor(row=ia[0], col=ia[1], sparse_sizes=(n, n))
        b = ts.SparseTensor(row=ib[0], col=ib[1], sparse_sizes=(n, n))
        row, col, _ = _ts_product(a, b).coo()
        index = torch.unique(row * n + col, sorted=True)
        index = torch.stack([index // max(n, 1), index % max(n, 1)])
    value = sampled_product(ia, wa, ib, wb, index, n, backend=name)
    return index, value


def diag_of_product(
    edge_index_a: Tensor,
    w_a: Tensor | None,
    edge_index_b: Tensor,
    w_b: Tensor | None,
    num_nodes: int,
    backend: str | None = None,
) -> Tensor:
    r"""The diagonal of ``A B`` without forming the product.

    .. math::
        \mathbf{out}_i = (A B)_{ii} = \sum_k A_{ik} B_{ki}

    (so ``tr(A B) = Σ_i out_i``). On ``"torch"`` a join of A's entries with Bᵀ's entries, memory
    O(|A| + |B|); on ``"torch_sparse"`` the sampled product on the diagonal.

    Shapes:
        out: ``(num_nodes,)``, or ``(num_nodes, C)`` when ``w_a`` or ``w_b`` has channels.
    """
    name = resolve_backend(backend)
    ia, ib = _index(edge_index_a, "edge_index_a"), _index(edge_index_b, "edge_index_b")
    n = int(num_nodes)
    dtype = _common_dtype(w_a, w_b)
    wa = _values(w_a, int(ia.shape[1]), dtype, ia.device, "w_a").to(dtype)
    wb = _values(w_b, int(ib.shape[1]), dtype, ia.device, "w_b").to(dtype)
    if wa.dim() == 2 and wb.dim() == 2 and wa.shape[1] != wb.shape[1]:
        raise GraphError(f"w_a has {wa.shape[1]} channels but w_b has {wb.shape[1]}")
    if name == "torch_sparse":
        diag = torch.arange(n, device=ia.device).repeat(2, 1)
        return sampled_product(ia, wa, ib, wb, diag, n, backend=name)
    # Σ_k A[i,k] Bᵀ[i,k]: coalesce both, then match equal keys
    ka, va = _coalesce_torch(ia, wa, n)
    kb, vb = _coalesce_torch(ib.flip(0), wb, n)
    key_a, key_b = ka[0] * n + ka[1], kb[0] * n + kb[1]
    pos = torch.searchsorted(key_b, key_a).clamp(max=max(key_b.numel() - 1, 0))
    hit = key_b[pos] == key_a if key_b.numel() else torch.zeros_like(key_a, dtype=torch.bool)
    terms = _col(va)[hit] * _col(vb).index_select(0, pos[hit])
    out = terms.new_zeros((n, terms.shape[1])).index_add_(0, ka[0][hit], terms)
    return _uncol(out, wa, wb)


__all__ = [
    "BACKENDS",
    "available_backends",
    "coalesce",
    "default_backend",
    "diag_of_product",
    "propagate",
    "resolve_backend",
    "sampled_product",
    "scatter_max",
    "scatter_mean",
    "scatter_sum",
    "spspmm",
    "use_backend",
]
