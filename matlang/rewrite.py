"""The rewrite engine: a table of named rules applied bottom-up to a fixed point.

The table is data (:data:`matlang.rules.RULES`, one table per family, each rule with its
identity) and is handed to :func:`normalize`; this module never imports it. :func:`normalize`
rewrites children first, tries the rules at a node in table order until none applies, and
records which rules fired. Rules whose candidate is not simpler by itself (distributing a sum)
ask :meth:`RewriteContext.if_better` to keep it only when it lowers the fragment or shrinks the
expression.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from matlang.ast import Expr
from matlang.errors import Span
from matlang.fragments import fragment
from matlang.linear import linear_form

#: What a rule may assume about A (``Rule.assumes``).
SYMMETRIC, BINARY, LOOPLESS = "symmetric", "0/1", "no self-loops"


class RewriteError(RuntimeError):
    """The rules did not reach a fixed point: a bug of the rule table, never a user error."""


@dataclass(frozen=True)
class Rule:
    """A named rewrite: ``fn(node, ctx)`` returns the rewritten node or None; ``identity`` is
    the identity it implements and ``assumes`` what it needs of A (symmetric, 0/1, loopless)."""

    name: str
    identity: str
    fn: Callable[[Expr, RewriteContext], Expr | None]
    assumes: tuple[str, ...] = ()


_MAX_STEPS = 200  # rule applications at one node before the table is declared cyclic


def _stamp(e: Expr, span: Span | None) -> Expr:
    """Give nodes a rule created (span None) the span of the node they replace."""
    if span is None or e.span is not None:
        return e
    out = e.map_children(lambda c: _stamp(c, span))
    return replace(out, span=span)


@dataclass
class RewriteContext:
    """One run of the engine: the rule table, the rules that fired, and memos shared with the
    nested runs of :meth:`if_better`."""

    rules: Sequence[Rule] = ()
    fired: list[str] = field(default_factory=list)
    memo: dict[tuple[Expr, Span | None], Expr] = field(default_factory=dict)
    linear_memo: dict[Expr, Expr | None] = field(default_factory=dict)
    depth: int = 0

    def norm(self, e: Expr) -> Expr:
        key = (e, e.span)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        out = self._at(e.map_children(self.norm))
        self.memo[key] = out
        self.memo[(out, out.span)] = out
        return out

    def _at(self, e: Expr) -> Expr:
        for _ in range(_MAX_STEPS):
            for rule in self.rules:
                out = rule.fn(e, self)
                if out is not None and out != e:
                    self.fired.append(rule.name)
                    e = _stamp(out, e.span).map_children(self.norm)
                    break
            else:
                return e
        from matlang.printer import to_text

        raise RewriteError(f"the rewrite rules cycle on {to_text(e)}")

    def linear(self, e: Expr) -> Expr | None:
        if e not in self.linear_memo:
            self.linear_memo[e] = linear_form(e)
        return self.linear_memo[e]

    def if_better(self, e: Expr, candidate: Expr) -> Expr | None:
        """``candidate`` normalised, when that lowers the level of ``e`` or shrinks it."""
        if self.depth > 8:
            return None
        sub = RewriteContext(
            self.rules, memo=self.memo, linear_memo=self.linear_memo, depth=self.depth + 1
        )
        out = sub.norm(_stamp(candidate, e.span))
        le, lo = fragment(e), fragment(out)
        if lo < le or (lo == le and out.size < e.size):
            self.fired.extend(sub.fired)
            return out
        return None


def apply_rule(rule: Rule, e: Expr, rules: Sequence[Rule]) -> Expr | None:
    """One application of ``rule`` at the root of ``e`` (None when it does not apply);
    ``rules`` is the table a rule's candidate is normalised with (:meth:`if_better`)."""
    out = rule.fn(e, RewriteContext(rules))
    return None if out is None or out == e else _stamp(out, e.span)


@dataclass(frozen=True)
class Normalization:
    """A normal form and the rules that produced it, as (name, identity) in first-use order."""

    expr: Expr
    rules: tuple[tuple[str, str], ...]


def normalize(e: Expr, rules: Sequence[Rule]) -> Normalization:
    """Rewrite ``e`` with the table ``rules`` to a fixed point (the rules' own assumptions hold:
    :data:`matlang.rules.RULES` assumes simple undirected graphs)."""
    try:
        return _normalize(e, rules)
    except RecursionError:
        from matlang.errors import MatlangError

        raise MatlangError(
            "the sentence's rewritten form nests deeper than the rewriting can follow (Python's "
            "recursion limit): write it with fewer nested products"
        ) from None


def _normalize(e: Expr, rules: Sequence[Rule]) -> Normalization:
    ctx = RewriteContext(rules)
    out = ctx.norm(e)
    for _ in range(4):  # the engine reaches a fixed point in one pass; this only checks it
        again = RewriteContext(rules)
        nxt = again.norm(out)
        if nxt == out:
            break
        ctx.fired.extend(again.fired)
        out = nxt
    else:
        from matlang.printer import to_text

        raise RewriteError(f"normalisation of {to_text(e)} did not settle")
    identities = {r.name: r.identity for r in rules}
    seen: dict[str, None] = dict.fromkeys(ctx.fired)
    return Normalization(out, tuple((n, identities[n]) for n in seen))


__all__ = [
    "BINARY",
    "LOOPLESS",
    "SYMMETRIC",
    "Normalization",
    "RewriteContext",
    "RewriteError",
    "Rule",
    "apply_rule",
    "normalize",
]
