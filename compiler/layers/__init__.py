"""Sentences inside models: a convolution (:class:`SentenceConv`), a graph readout
(:class:`SentenceReadout`) and a feature transform (:class:`SentenceFeatures`), in PyG's
conventions and without requiring PyG (front doors: ``matlang.nn``, ``matlang.transforms``)."""

from __future__ import annotations

from matlang.compiler.layers.conv import SentenceConv
from matlang.compiler.layers.readout import SentenceReadout
from matlang.compiler.layers.transforms import SentenceFeatures

__all__ = ["SentenceConv", "SentenceFeatures", "SentenceReadout"]
