"""Every backend covers exactly the ops of its domain: a missing kernel fails here, not in a run.

The domains come from the op facts (:class:`~compiler.plan.OpSpec`): the constant stages take
the ops that may be graph constants, the autograd interpreter every op.
"""

from __future__ import annotations

import pickle

from matlang.compiler.constants import GRAPHBLAS, TRIANGLES, ConstantStage
from matlang.compiler.interpret import SHARED
from matlang.compiler.lower import lower
from matlang.compiler.module import AUTOGRAD, CompiledModule
from matlang.compiler.plan import OPS, Op, Plan, Step, check, render
from matlang.compiler.torch_constants import TORCH, TorchConstantStage
from matlang.parser import as_program

#: The op names OPS had before ops were an enum (at e86168e).
NAMES = {
    "input", "ones", "param", "const", "edges", "identity", "empty", "full", "compose",
    "union", "flip", "adjacency", "eye", "lookup", "transpose", "gather_row", "gather_col",
    "broadcast_edge", "sampled", "broadcast", "propagate", "readout", "nonzero", "row_sum",
    "diagonal", "as_edge", "as_node", "add", "sub", "mul", "div", "neg", "apply",
}  # fmt: skip

CONSTANT_DOMAIN = {op for op in Op if OPS[op].constant}


def test_the_op_enum_is_the_op_table() -> None:
    assert {op.value for op in Op} == NAMES
    assert set(OPS) == set(Op)
    assert CONSTANT_DOMAIN == set(Op) - {Op.INPUT}


def test_graphblas_table_covers_the_graph_constant_ops() -> None:
    assert set(GRAPHBLAS) == CONSTANT_DOMAIN
    assert ConstantStage.table is GRAPHBLAS
    assert ConstantStage.fusions == (TRIANGLES,)


def test_torch_table_covers_the_graph_constant_ops() -> None:
    assert set(TORCH) == CONSTANT_DOMAIN
    assert TorchConstantStage.table is TORCH
    assert not issubclass(TorchConstantStage, ConstantStage)  # a table, not a twin subclass


def test_the_shared_kernels_are_in_every_constant_table() -> None:
    for table in (GRAPHBLAS, TORCH):
        assert all(table[op] is kernel for op, kernel in SHARED.items())


def test_autograd_interpreter_covers_every_op() -> None:
    assert set(AUTOGRAD) == set(Op)
    assert all(AUTOGRAD[op] is getattr(CompiledModule, f"_op_{op}") for op in Op)


def test_op_facts_are_the_tables_they_replaced() -> None:
    """The facts moved from module.py, constant_cache.py and layers/stage.py unchanged."""
    row_major = {"edges", "identity", "full", "empty", "compose", "union"}
    cheap = {
        "edges", "identity", "empty", "flip", "ones", "const", "param", "adjacency", "eye",
        "transpose", "gather_row", "gather_col", "broadcast", "broadcast_edge", "as_edge",
        "as_node", "neg",
    }  # fmt: skip
    assert {op for op in Op if OPS[op].row_major} == row_major
    assert {op for op in Op if OPS[op].cheap} == cheap
    assert {op for op in Op if OPS[op].identity} == {"identity", "ones", "as_edge"}
    assert {op: OPS[op].unit for op in Op if OPS[op].unit} == {
        "adjacency": "always",
        "transpose": "args",
        "mul": "args",
    }


def test_ops_compare_hash_and_print_as_their_names() -> None:
    assert Op.ADJACENCY == "adjacency" and hash(Op.ADJACENCY) == hash("adjacency")
    assert OPS["adjacency"] is OPS[Op.ADJACENCY] and GRAPHBLAS["mul"] is GRAPHBLAS[Op.MUL]
    assert f"{Op.READOUT}" == str(Op.READOUT) == "readout"
    plan = lower(as_program("onesᵀ (A ⊙ A²) ones"))
    assert all(isinstance(st.op, Op) for st in plan.steps)
    # a plan of plain strings (built by hand, or pickled before the enum) is the same plan
    steps = [Step(str(s.op.value), s.args, s.kind, s.mask, s.attrs, s.note) for s in plan.steps]
    plain = Plan(
        tuple(steps),
        plan.outputs,
        plan.params,
        plan.functions,
        plan.inputs,
        plan.masks,
    )
    assert check(plain) == plan and render(plain) == render(plan)
    assert pickle.loads(pickle.dumps(plan)) == plan


def test_the_cost_model_sizes_every_mask_op_and_prices_every_op() -> None:
    """The cost model is tables too: a mask op without its exact and estimated size, or an op
    without its FLOPs and temporaries (free ones say so), fails here."""
    from matlang.compiler.cost import ESTIMATED_MASKS, EXACT_MASKS, STEP_COSTS

    masks = {op for op in Op if OPS[op].result == "mask"}
    assert masks == {"edges", "identity", "empty", "full", "compose", "union", "flip"}
    assert set(EXACT_MASKS) == set(ESTIMATED_MASKS) == masks
    assert set(STEP_COSTS) == set(Op)


def test_both_constant_stages_read_one_graph_view_type() -> None:
    """``Graphs`` and ``TorchGraphs`` are one generic view of a batch, in numpy or tensors."""
    import numpy as np
    import torch

    from matlang.compiler.constants import Graphs, graphs_of
    from matlang.compiler.torch_constants import TorchGraphs, torch_graphs_of
    from matlang.graphs import named
    from matlang.runtime.batch import Batch
    from matlang.runtime.kernels import GraphView
    from matlang.runtime.masks import prepared_edges

    b = Batch.from_graphs([named("K4"), named("cycle5")]).validate()
    edges, weight = prepared_edges(b)
    host, dev = graphs_of(b, edges, weight), torch_graphs_of(b, edges, weight)
    assert type(host) is type(dev) is GraphView
    assert Graphs.__origin__ is TorchGraphs.__origin__ is GraphView
    assert host.g == dev.g == 2 and host.n == dev.n == 9
    assert isinstance(host.ptr, np.ndarray) and isinstance(dev.ptr, torch.Tensor)
    assert np.array_equal(host.rows, dev.rows.numpy()) and str(host.device) == str(dev.device)
