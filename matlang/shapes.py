"""Shapes over the symbolic graph size n: scalar 1×1, column n×1, row 1×n, matrix n×n."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Dim = Literal["1", "n"]


@dataclass(frozen=True)
class Shape:
    rows: Dim
    cols: Dim

    @property
    def is_scalar(self) -> bool:
        return self.rows == "1" and self.cols == "1"

    @property
    def is_square(self) -> bool:
        return self.rows == self.cols

    @property
    def is_vector(self) -> bool:
        return self.rows != self.cols

    @property
    def is_matrix(self) -> bool:
        return self.rows == "n" and self.cols == "n"

    @property
    def kind(self) -> str:
        return {
            ("1", "1"): "scalar",
            ("n", "1"): "column",
            ("1", "n"): "row",
            ("n", "n"): "matrix",
        }[(self.rows, self.cols)]

    def transpose(self) -> Shape:
        return Shape(self.cols, self.rows)

    def __str__(self) -> str:
        return f"{self.kind} {self.rows}×{self.cols}"


SCALAR = Shape("1", "1")
COLUMN = Shape("n", "1")
ROW = Shape("1", "n")
MATRIX = Shape("n", "n")
