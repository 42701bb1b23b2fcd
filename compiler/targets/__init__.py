"""The paper's own architectures as compilation targets: GNNML1 (Eq. 3, for L1 sentences;
Theorem 6 made constructive) and GNNML3 (Eq. 8, masked supports as edge features)."""

from __future__ import annotations

from matlang.compiler.targets.gnnml1 import gnnml1_target
from matlang.compiler.targets.gnnml3 import gnnml3_target

__all__ = ["gnnml1_target", "gnnml3_target"]
