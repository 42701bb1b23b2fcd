"""Syntax errors a person understands: lark's parser states turned into messages.

lark reports the token it did not expect and the terminals it would have accepted; this module
names them in the language's words ("an operand", "an operator", "')'"), points at the
offending text, and adds a hint for the usual slips (``A ** 3``, a ``let`` in mid-sentence, an
unclosed parenthesis, ``[ ]`` for grouping). The golden messages are in
``tests/matlang/test_errors_golden.py``.
"""

from __future__ import annotations

import re

from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from matlang.errors import MatlangSyntaxError, Span

# Human names of the grammar's terminals, for syntax errors.
_TERMINALS = {
    "NAME": "a name",
    "CALL": "a function call",
    "NUMBER": "a number",
    "ONES": "𝟏",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "MATMUL": "'*'",
    "HADAMARD": "'⊙'",
    "DIV": "'/'",
    "CARET": "'^'",
    "TRANSPOSE": "a transpose",
    "SUPERSCRIPT": "a power",
    "EQUAL": "'='",
    "COLON": "':'",
    "_SEP": "the end of the sentence",
    "$END": "the end of the input",
    "FORMULA": "a formula",
}
_OPERAND = {"NAME", "CALL", "NUMBER", "ONES", "LPAR"}


def _describe_expected(expected: set[str]) -> str:
    if expected and expected <= {"NAME", "CALL"}:  # after `let`, `input`, or in `f(x, y)`
        return "a name"
    if expected and expected <= {"$END", "_SEP"}:
        return "the end of the sentence"
    parts = []
    if expected & _OPERAND:
        parts.append("an operand")
    if expected & {"PLUS", "MATMUL", "HADAMARD", "DIV"}:
        parts.append("an operator")
    # ':' is only ever possible after a bare name (``name: expr``); listing it misleads.
    for term in ("RPAR", "COMMA", "EQUAL"):
        if term in expected:
            parts.append(_TERMINALS[term])
    if not parts:
        parts = sorted({_TERMINALS.get(e, e) for e in expected})
    return " or ".join(parts) if len(parts) < 3 else ", ".join(parts[:-1]) + " or " + parts[-1]


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+(\.[0-9]*)?|\.\*|\S")


def _unexpected_text(
    text: str, pos: int, prev: str | None, expected: set[str]
) -> MatlangSyntaxError:
    """An error for text that no terminal of the current state accepts."""
    m = _WORD.match(text, pos)
    word = m.group(0) if m else text[pos : pos + 1]
    sp = Span.of(text, pos, pos + max(1, len(word)))
    hint = None
    if word == "*" and prev == "MATMUL":
        hint = "a power is written A^3 or A³, not A ** 3"
    elif word == "=":
        hint = "bind a name with `let name = expression`"
    elif word in ("[", "]", "{", "}"):
        hint = "group with parentheses ( ); MATLANG has no indexing"
    elif word == ",":
        hint = "commas separate the arguments of a function call"
    elif word == "let":
        hint = "a `let` starts its own statement: put it on its own line or after ';'"
    elif word == ":":
        hint = "a named sentence is `name: expression`"
    return MatlangSyntaxError(
        f"unexpected {word!r}, expected {_describe_expected(expected)}", sp, text, hint
    )


def _paren_depth(prefix: str) -> int:
    return prefix.count("(") - prefix.count(")")


def syntax_error(e: UnexpectedInput, text: str) -> MatlangSyntaxError:
    """The error a person reads for lark's ``e`` on ``text``: what was found, what was expected
    (in the language's words), where, and a hint for the usual slips."""
    pos = getattr(e, "pos_in_stream", None)
    if isinstance(e, UnexpectedCharacters):
        at = e.pos_in_stream or 0
        ch = text[at]
        sp = Span.of(text, at, at + 1)
        hint = None
        if ch in "[]{}":
            hint = "group with parentheses ( )"
        elif ch == "=":
            hint = "bind a name with `let name = expression`"
        elif ch == ",":
            hint = "commas separate the arguments of a function call"
        elif ch == "^":
            hint = "a power is written A^3 or A³; a transpose A^T, A' or Aᵀ"
        return MatlangSyntaxError(f"unexpected character {ch!r}", sp, text, hint)
    if isinstance(e, UnexpectedToken):
        tok = e.token
        expected = set(e.expected)
        history = getattr(e, "token_history", None) or []
        # lark puts None in the history when the error is at the first token
        prev = history[-1].type if history and history[-1] is not None else None
        if tok.type == "FORMULA":  # the catch-all formula terminal swallowed the real token
            return _unexpected_text(text, tok.start_pos or 0, prev, expected)
        if prev == "CARET" or (
            tok.type in ("$END", "_SEP")
            and text[: tok.start_pos if tok.type == "_SEP" else len(text)].rstrip().endswith("^")
        ):
            at = tok.start_pos if tok.type != "$END" else len(text)
            at = min(at or 0, max(len(text) - 1, 0))
            return MatlangSyntaxError(
                f"unexpected {'end of input' if tok.type == '$END' else repr(str(tok))} after "
                "'^', expected an exponent",
                Span.of(text, at, at + 1),
                text,
                "a power is a non-negative integer (A^3, A³); a transpose is A^T, A' or Aᵀ",
            )
        at_end = tok.type == "$END"
        if at_end or tok.type == "_SEP":
            start = len(text.rstrip()) if at_end else (tok.start_pos or 0)
            start = max(0, min(start, len(text)))
            sp = Span.of(text, max(0, start - 1), start) if start else Span.of(text, 0, 1)
            what = "end of input" if at_end else "end of sentence"
            hint = None
            if "RPAR" in expected:
                hint = "a '(' is not closed"
            elif text[:start].rstrip().endswith(":"):
                hint = "a named sentence is `name: expression`"
            elif "NUMBER" in expected and "NAME" in expected and "CARET" not in expected:
                hint = "an operator needs an operand on its right"
            return MatlangSyntaxError(
                f"unexpected {what}, expected {_describe_expected(expected)}", sp, text, hint
            )
        sp = Span.of(text, tok.start_pos or 0, tok.end_pos or (tok.start_pos or 0) + len(tok))
        hint = None
        depth = _paren_depth(text[: tok.start_pos or 0])
        if tok.type == "RPAR":
            hint = (
                "this ')' has no matching '('"
                if depth <= 0
                else ("an operand is missing before ')'")
            )
        elif tok.type == "MATMUL" and prev == "MATMUL":
            hint = "a power is written A^3 or A³, not A ** 3"
        elif tok.type == "COLON":
            hint = "name a sentence at the start of its line: `triangles: tr(A^3)/6`"
        elif tok.type == "CARET":
            hint = "a power needs a literal integer exponent"
        return MatlangSyntaxError(
            f"unexpected {str(tok)!r}, expected {_describe_expected(expected)}", sp, text, hint
        )
    if isinstance(e, UnexpectedEOF):  # pragma: no cover - LALR reports $END as a token
        return MatlangSyntaxError("unexpected end of input", Span.of(text, len(text)), text)
    return MatlangSyntaxError(str(e), Span.of(text, pos or 0), text)  # pragma: no cover


__all__ = ["syntax_error"]
