"""The benchmarks' optimiser: fused Adam is the same update as torch's per-tensor Adam."""

from __future__ import annotations

import copy

import pytest
import torch

from benchmarks.paper.models import make_model
from benchmarks.paper.train import adam


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_adam_takes_the_per_tensor_steps(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    model = make_model("gnnml3", 2, 1, protocol="count").to(dtype)
    twin = copy.deepcopy(model)
    initial = [p.detach().clone() for p in model.parameters()]
    fast = adam(model.parameters(), lr=1e-2, weight_decay=1e-4)
    slow = torch.optim.Adam(twin.parameters(), lr=1e-2, weight_decay=1e-4, foreach=False)
    assert fast.defaults["fused"] is True
    gen = torch.Generator().manual_seed(1)
    for _ in range(5):
        for p, q in zip(model.parameters(), twin.parameters(), strict=True):
            p.grad = torch.randn(p.shape, generator=gen, dtype=dtype)
            q.grad = p.grad.clone()
        fast.step()
        slow.step()
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    for (name, p), q, p0 in zip(model.named_parameters(), twin.parameters(), initial, strict=True):
        torch.testing.assert_close(p, q, rtol=tol, atol=tol, msg=name)
        assert not torch.equal(p.detach(), p0), name  # every parameter took its steps


def test_adam_refuses_an_empty_parameter_list() -> None:
    with pytest.raises(ValueError, match="empty parameter list"):
        adam([], lr=1e-3)
