"""``matlang.compile``: sentences → a trainable ``torch.nn.Module`` on batches of sparse graphs.

>>> import matlang, torch
>>> model = matlang.compile("tr(A³) / 6", dtype=torch.float64)
>>> model(["K4", "cycle5"])
tensor([4., 0.], dtype=torch.float64, grad_fn=...)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from matlang import ast
from matlang.compiler.lower import lower
from matlang.compiler.plan import Plan, render
from matlang.errors import CompileError, MatlangError
from matlang.parser import as_program

if TYPE_CHECKING:  # torch is imported when a module is built, not with `import matlang`
    import torch
    from torch import Tensor

    from matlang.compiler.module import CompiledModule


def _dtype(dtype: Any) -> torch.dtype:
    import torch

    if isinstance(dtype, torch.dtype) and dtype in (torch.float32, torch.float64):
        return dtype
    table = {"float32": torch.float32, "float64": torch.float64, "double": torch.float64}
    if dtype in table:
        return table[dtype]
    raise MatlangError(f"dtype must be float32 or float64, got {dtype!r}")


def compile(  # noqa: A001 - the public name the design asks for
    source: str | ast.Expr | ast.Program | list[str | ast.Expr],
    *,
    dtype: Any = "float32",
    backend: str | None = None,
    dense: bool = False,
    trainable_functions: bool = False,
    weights: str = "literals",
    nonfinite: str = "error",
    validate: bool = True,
    cache: Any = True,
    constants: str = "auto",
) -> CompiledModule:
    """Compile sentences into one module with one output channel per sentence.

    Args:
        source: a program text (``"tr(A³)/6; c4: ..."``), an Expr, a Program, or a list.
        dtype: ``torch.float32`` (default) or ``torch.float64`` (or their names).
        backend: ``"torch_sparse"``, ``"torch"``, or ``None`` for the best available.
        dense: allow matrices with a full support to be materialised on all n² entries of each
            graph instead of raising :class:`~compiler.support.FullMaskError`.
        trainable_functions: replace each pointwise function by a small MLP.
        weights: ``"literals"``: every number literal of the sentences is an ``nn.Parameter``
            at its exact value (a ``let`` function's formula, its literals included, is fixed:
            ``trainable_functions`` learns functions); ``"all"``: also a mixing coefficient per
            summand and a weight on ``A``.
        nonfinite: ``"error"`` raises like the dense evaluator on inf/nan and division by 0.
        validate: validate each batch (symmetric, no self-loops, indices in range).
        cache: keep graph constants per graph across batches (``True``: the module's own
            cache; a :class:`~runtime.preprocess.PreprocessCache` to share; ``False``: none).
        constants: where the graph constants (``A ⊙ A²``, degrees, traces, ...) are computed,
            once per batch: ``"auto"`` (default) where the batch lives (torch on a GPU,
            GraphBLAS on the CPU), ``"torch"`` (on the batch's device), ``"graphblas"`` (on
            the host), or ``"none"`` (no constant stage: every step on every call).

    Returns:
        a :class:`~compiler.module.CompiledModule`; call it on a ``runtime.batch.Batch``, a list
        of graphs, or a PyG ``Data``/``Batch``.
    """
    from matlang.compiler.module import CompiledModule
    from matlang.runtime import sparse

    if backend is not None:
        sparse.resolve_backend(backend)
    plan = lower(as_program(source), dense=dense, weights=weights)
    check_params_fit(plan, _dtype(dtype))
    return CompiledModule(
        plan,
        dtype=_dtype(dtype),
        backend=backend,
        trainable_functions=trainable_functions,
        nonfinite=nonfinite,
        validate=validate,
        cache=cache,
        constants=constants,
    )


def check_params_fit(plan: Plan, dtype: torch.dtype) -> None:
    """A literal beyond the module's float range would start as inf: refused by name."""
    from fractions import Fraction

    import torch

    top = Fraction(torch.finfo(dtype).max)
    for p in plan.params:
        if abs(p.value) > top:
            at = p.note.rsplit(" at ", 1)[1] if " at " in p.note else "?"
            raise CompileError(
                f"{p.name} = {float(p.value):.3g} (at {at}) is beyond the largest {dtype} "
                f"({float(top):.3g}): compile with dtype=torch.float64, or scale the sentence"
            )


def explain(
    source: Any, *, dense: bool = False, weights: str = "literals", dtype_bytes: int = 4
) -> str:
    """The plan of ``source`` (sentences, or a :class:`Plan` already lowered) and its cost model
    for numbers of ``dtype_bytes`` bytes, as text (what ``matlang compile --explain`` prints)."""
    from matlang.compiler.cost import describe

    plan = (
        source
        if isinstance(source, Plan)
        else lower(as_program(source), dense=dense, weights=weights)
    )
    return render(plan) + "\n" + describe(plan, dtype_bytes=dtype_bytes)


def materialise(
    matrix: str | ast.Expr | CompiledModule,
    data: Any,
    *,
    inputs: Mapping[str, Any] | None = None,
    dtype: Any = "float64",
    backend: str | None = None,
    dense: bool = False,
) -> tuple[Tensor, Tensor]:
    """A matrix sentence computed on its inferred mask only: ``(index (2, M), values (M,))``
    over the batch's global node ids (block-diagonal, sorted row-major). The GNNML3 target
    materialises its supports this way (one sparse evaluator: the Plan interpreter).

    ``matrix`` may be a module already compiled from a matrix sentence (a target that
    materialises the same supports on every batch compiles them once); ``inputs`` binds declared
    input vectors by name (else the batch's feature columns are read)."""
    from matlang.compiler.module import CompiledModule

    if isinstance(matrix, CompiledModule):
        model = matrix
    else:
        model = compile(matrix, dtype=dtype, backend=backend, dense=dense)
    if model.level != "matrix":
        raise MatlangError("materialise needs a matrix sentence (n×n)")
    return model.edge_values(data, inputs)[0]


__all__ = ["compile", "explain", "materialise", "Plan"]
