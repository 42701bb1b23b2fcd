"""The project's exceptions.

Every error a user can provoke is a :class:`MatlangError`. Errors about a sentence carry a
:class:`Span` and render as ``line:col: message``, the source line, a caret under the offending
text, and a hint where one helps.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A region of source text: 0-based offsets, 1-based line and column (of the start)."""

    start: int
    end: int
    line: int
    col: int

    @staticmethod
    def of(text: str, start: int, end: int | None = None) -> Span:
        """The span of ``text[start:end]`` with its line and column computed."""
        end = start + 1 if end is None else end
        line = text.count("\n", 0, start) + 1
        col = start - (text.rfind("\n", 0, start) + 1) + 1
        return Span(start, max(end, start), line, col)

    def join(self, other: Span | None) -> Span:
        if other is None:
            return self
        first = self if self.start <= other.start else other
        return Span(first.start, max(self.end, other.end), first.line, first.col)


NO_SPAN = Span(0, 0, 1, 1)


class MatlangError(Exception):
    """Base class of every error raised by matlang on bad input."""


class SourceError(MatlangError):
    """An error located in a sentence's source text."""

    kind = "error"

    def __init__(
        self,
        message: str,
        span: Span | None = None,
        text: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.span = span
        self.text = text
        self.hint = hint
        super().__init__(self.render())

    def located(self, text: str) -> SourceError:
        """The same error with the source text attached (when it had none)."""
        if self.text is not None:
            return self
        return type(self)(self.message, self.span, text, self.hint)

    def render(self) -> str:
        head = f"{self.kind}: {self.message}"
        if self.span is None:
            return head + (f"\n  hint: {self.hint}" if self.hint else "")
        out = [f"{self.span.line}:{self.span.col}: {head}"]
        if self.text is not None:
            lines = self.text.split("\n")
            src = lines[self.span.line - 1] if self.span.line - 1 < len(lines) else ""
            width = max(1, min(self.span.end - self.span.start, len(src) - self.span.col + 1))
            at = self.span.col - 1
            out.append("  " + src)
            under = _columns(src[at : at + width]).replace("\t", "^").replace(" ", "^")
            out.append("  " + _columns(src[:at]) + (under or "^"))
        if self.hint:
            out.append(f"  hint: {self.hint}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.render()


def _columns(text: str) -> str:
    """Blanks as wide on screen as ``text``: its tabs kept (the terminal expands them alike), a
    wide character (CJK, full-width) two columns, a combining mark none."""
    import unicodedata

    out = []
    for ch in text:
        if ch == "\t":
            out.append("\t")
        elif unicodedata.combining(ch):
            continue
        else:
            out.append("  " if unicodedata.east_asian_width(ch) in "WF" else " ")
    return "".join(out)


class MatlangSyntaxError(SourceError):
    """The text is not a sentence of the grammar."""

    kind = "syntax error"


class ShapeError(SourceError):
    """Operands whose shapes do not fit the operation."""

    kind = "shape error"


class UnknownNameError(SourceError):
    """A name or function that is neither built in nor bound by ``let``."""

    kind = "name error"


class RedefinitionError(SourceError):
    """A name bound twice, or a built-in name used for a binding, input or function."""

    kind = "name error"


class ArityError(SourceError):
    """A function called with the wrong number of arguments."""

    kind = "arity error"


class PowerError(SourceError):
    """A power that is not a non-negative integer, or a power of a non-square expression."""

    kind = "power error"


class FunctionError(SourceError):
    """A user function whose formula sympy cannot read, or that uses unknown variables."""

    kind = "function error"


class EvaluationError(MatlangError):
    """A sentence that cannot be evaluated on a given graph (e.g. log of zero in exact mode)."""


class GraphError(MatlangError):
    """A graph that is not what the operation requires (asymmetric, self-loops, weights, ...)."""

    def __init__(self, message: str, graph: str | None = None) -> None:
        self.graph = graph
        super().__init__(f"graph {graph}: {message}" if graph else message)


class DataError(MatlangError):
    """A dataset that is missing or malformed."""


class CompileError(MatlangError):
    """A sentence that cannot be lowered as requested (e.g. its mask is full)."""
