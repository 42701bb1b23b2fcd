"""Golden table of invalid inputs: the exact rendered error (``line:col: kind: message``, the
source line, a caret under the offending text, and a hint where one helps)."""

# ruff: noqa: E501  (expected messages are compared whole; some hint lines are long)

from __future__ import annotations

import sys

import pytest

from matlang import parse, parse_program
from matlang.errors import (
    ArityError,
    FunctionError,
    MatlangError,
    MatlangSyntaxError,
    PowerError,
    RedefinitionError,
    ShapeError,
    SourceError,
    UnknownNameError,
)


def E(text: str, cls: type[SourceError], message: str, id: str) -> object:  # noqa: A002
    return pytest.param(text, cls, message, id=id)


ERRORS = [
    # syntax
    E(
        "A +",
        MatlangSyntaxError,
        (
            "1:3: syntax error: unexpected end of input, expected an operand\n"
            "  A +\n"
            "    ^\n"
            "  hint: an operator needs an operand on its right"
        ),
        id="syntax-0",
    ),
    E(
        "(A",
        MatlangSyntaxError,
        (
            "1:2: syntax error: unexpected end of input, expected ')'\n"
            "  (A\n"
            "   ^\n"
            "  hint: a '(' is not closed"
        ),
        id="syntax-1",
    ),
    E(
        "A)",
        MatlangSyntaxError,
        (
            "1:2: syntax error: unexpected ')', expected an operand or an operator\n"
            "  A)\n"
            "   ^\n"
            "  hint: this ')' has no matching '('"
        ),
        id="syntax-2",
    ),
    E(
        "tr(A",
        MatlangSyntaxError,
        (
            "1:4: syntax error: unexpected end of input, expected ')' or ','\n"
            "  tr(A\n"
            "     ^\n"
            "  hint: a '(' is not closed"
        ),
        id="syntax-3",
    ),
    E(
        "A ** 3",
        MatlangSyntaxError,
        (
            "1:4: syntax error: unexpected '*', expected an operand\n"
            "  A ** 3\n"
            "     ^\n"
            "  hint: a power is written A^3 or A³, not A ** 3"
        ),
        id="syntax-4",
    ),
    E(
        "A^",
        MatlangSyntaxError,
        (
            "1:2: syntax error: unexpected end of input after '^', expected an exponent\n"
            "  A^\n"
            "   ^\n"
            "  hint: a power is a non-negative integer (A^3, A³); a transpose is A^T, A' or Aᵀ"
        ),
        id="syntax-5",
    ),
    E(
        "A^T^",
        MatlangSyntaxError,
        (
            "1:4: syntax error: unexpected end of input after '^', expected an exponent\n"
            "  A^T^\n"
            "     ^\n"
            "  hint: a power is a non-negative integer (A^3, A³); a transpose is A^T, A' or Aᵀ"
        ),
        id="syntax-6",
    ),
    E(
        "A = B",
        MatlangSyntaxError,
        (
            "1:3: syntax error: unexpected '=', expected an operand or an operator\n"
            "  A = B\n"
            "    ^\n"
            "  hint: bind a name with `let name = expression`"
        ),
        id="syntax-7",
    ),
    E(
        "[A]",
        MatlangSyntaxError,
        (
            "1:1: syntax error: unexpected '[', expected an operand\n"
            "  [A]\n"
            "  ^\n"
            "  hint: group with parentheses ( ); MATLANG has no indexing"
        ),
        id="syntax-8",
    ),
    E(
        "A, A",
        MatlangSyntaxError,
        (
            "1:2: syntax error: unexpected ',', expected an operand or an operator\n"
            "  A, A\n"
            "   ^\n"
            "  hint: commas separate the arguments of a function call"
        ),
        id="syntax-9",
    ),
    E(
        ": A",
        MatlangSyntaxError,
        (
            "1:1: syntax error: unexpected ':', expected an operand\n"
            "  : A\n"
            "  ^\n"
            "  hint: a named sentence is `name: expression`"
        ),
        id="syntax-10",
    ),
    E(
        "t: ",
        MatlangSyntaxError,
        (
            "1:2: syntax error: unexpected end of input, expected an operand\n"
            "  t: \n"
            "   ^\n"
            "  hint: a named sentence is `name: expression`"
        ),
        id="syntax-11",
    ),
    E(
        "let 2 = A",
        MatlangSyntaxError,
        ("1:5: syntax error: unexpected '2', expected a name\n  let 2 = A\n      ^"),
        id="syntax-12",
    ),
    E(
        "let f() = 1; f(A)",
        MatlangSyntaxError,
        ("1:7: syntax error: unexpected ')', expected a name\n  let f() = 1; f(A)\n        ^"),
        id="syntax-13",
    ),
    E(
        "input",
        MatlangSyntaxError,
        ("1:5: syntax error: unexpected end of input, expected a name\n  input\n      ^"),
        id="syntax-14",
    ),
    E(
        "A $",
        MatlangSyntaxError,
        ("1:3: syntax error: unexpected '$', expected an operand or an operator\n  A $\n    ^"),
        id="syntax-15",
    ),
    E(
        "A ⊙",
        MatlangSyntaxError,
        (
            "1:3: syntax error: unexpected end of input, expected an operand\n"
            "  A ⊙\n"
            "    ^\n"
            "  hint: an operator needs an operand on its right"
        ),
        id="syntax-16",
    ),
    E(
        "A A A)",
        MatlangSyntaxError,
        (
            "1:6: syntax error: unexpected ')', expected the end of the sentence\n"
            "  A A A)\n"
            "       ^\n"
            "  hint: this ')' has no matching '('"
        ),
        id="syntax-17",
    ),
    E(
        "A + * A",
        MatlangSyntaxError,
        ("1:5: syntax error: unexpected '*', expected an operand\n  A + * A\n      ^"),
        id="syntax-18",
    ),
    E(
        "A @@ A",
        MatlangSyntaxError,
        ("1:4: syntax error: unexpected '@', expected an operand\n  A @@ A\n     ^"),
        id="syntax-19",
    ),
    E(
        "",
        MatlangSyntaxError,
        ("1:1: syntax error: expected exactly one sentence, found none\n  \n  ^"),
        id="syntax-20",
    ),
    E(
        "# just a comment",
        MatlangSyntaxError,
        (
            "1:1: syntax error: expected exactly one sentence, found none\n"
            "  # just a comment\n"
            "  ^^^^^^^^^^^^^^^^"
        ),
        id="syntax-21",
    ),
    E(
        "A; A",
        MatlangSyntaxError,
        (
            "1:4: syntax error: expected exactly one sentence, found 2\n"
            "  A; A\n"
            "     ^\n"
            "  hint: use parse_program for several sentences"
        ),
        id="syntax-22",
    ),
    E(
        "1/6 tr(A^3)",
        MatlangSyntaxError,
        (
            "1:1: syntax error: ambiguous division: a product by juxtaposition follows '/'\n"
            "  1/6 tr(A^3)\n"
            "  ^^^^^^^^^^^\n"
            "  hint: write (1 / 6) tr(A^3) or 1 / (6 tr(A^3))"
        ),
        id="syntax-23",
    ),
    E(
        "1/2 A",
        MatlangSyntaxError,
        (
            "1:1: syntax error: ambiguous division: a product by juxtaposition follows '/'\n"
            "  1/2 A\n"
            "  ^^^^^\n"
            "  hint: write (1 / 2) A or 1 / (2 A)"
        ),
        id="syntax-24",
    ),
    E(
        "tr(A) / 6 2",
        MatlangSyntaxError,
        (
            "1:1: syntax error: ambiguous division: a product by juxtaposition follows '/'\n"
            "  tr(A) / 6 2\n"
            "  ^^^^^^^^^^^\n"
            "  hint: write (tr(A) / 6) 2 or tr(A) / (6 2)"
        ),
        id="syntax-25",
    ),
    # shape
    E(
        "1ᵀ A 1",
        ShapeError,
        (
            "1:1: shape error: transpose of the number 1\n"
            "  1ᵀ A 1\n"
            "  ^^\n"
            "  hint: the digit 1 is the number one; for the ones vector write `ones` or 𝟏 (onesᵀ A ones)"
        ),
        id="shape-0",
    ),
    E(
        "2' A",
        ShapeError,
        (
            "1:1: shape error: transpose of the number 2\n"
            "  2' A\n"
            "  ^^\n"
            "  hint: a number is its own transpose; remove the transpose"
        ),
        id="shape-1",
    ),
    E(
        "ones + 1",
        ShapeError,
        (
            "1:1: shape error: sum of a column n×1 and a scalar 1×1\n"
            "  ones + 1\n"
            "  ^^^^^^^^\n"
            "  hint: the digit 1 is the number one; did you mean the ones vector `ones` (𝟏)?"
        ),
        id="shape-2",
    ),
    E(
        "A + 1",
        ShapeError,
        (
            "1:1: shape error: sum of a matrix n×n and a scalar 1×1\n"
            "  A + 1\n"
            "  ^^^^^\n"
            "  hint: the digit 1 is the number one; did you mean the ones vector `ones` (𝟏)?"
        ),
        id="shape-3",
    ),
    E(
        "1 + A",
        ShapeError,
        (
            "1:1: shape error: sum of a scalar 1×1 and a matrix n×n\n"
            "  1 + A\n"
            "  ^^^^^\n"
            "  hint: the digit 1 is the number one; did you mean the ones vector `ones` (𝟏)?"
        ),
        id="shape-4",
    ),
    E(
        "A ⊙ ones",
        ShapeError,
        (
            "1:1: shape error: entrywise product ⊙ of a matrix n×n and a column n×1\n"
            "  A ⊙ ones\n"
            "  ^^^^^^^^"
        ),
        id="shape-5",
    ),
    E(
        "A + ones",
        ShapeError,
        ("1:1: shape error: sum of a matrix n×n and a column n×1\n  A + ones\n  ^^^^^^^^"),
        id="shape-6",
    ),
    E(
        "ones ones",
        ShapeError,
        (
            "1:1: shape error: product of a column n×1 and a column n×1\n"
            "  ones ones\n"
            "  ^^^^^^^^^\n"
            "  hint: to multiply vectors entrywise use ⊙ (or .*); for an inner product write vᵀ w"
        ),
        id="shape-7",
    ),
    E(
        "ones A",
        ShapeError,
        (
            "1:1: shape error: product of a column n×1 and a matrix n×n\n"
            "  ones A\n"
            "  ^^^^^^\n"
            "  hint: to multiply a matrix from the left, transpose the column: vᵀ M"
        ),
        id="shape-8",
    ),
    E(
        "A ones'",
        ShapeError,
        (
            "1:1: shape error: product of a matrix n×n and a row 1×n\n"
            "  A ones'\n"
            "  ^^^^^^^\n"
            "  hint: a matrix multiplies a column: M v, not M vᵀ"
        ),
        id="shape-9",
    ),
    E(
        "A ones + A",
        ShapeError,
        ("1:1: shape error: sum of a column n×1 and a matrix n×n\n  A ones + A\n  ^^^^^^^^^^"),
        id="shape-10",
    ),
    E(
        "diag(A)",
        ShapeError,
        (
            "1:1: shape error: diag(v) needs a vector, got a matrix n×n\n"
            "  diag(A)\n"
            "  ^^^^^^^\n"
            "  hint: for the diagonal of a matrix M as a vector write (M ⊙ I) ones"
        ),
        id="shape-11",
    ),
    E(
        "diag(1)",
        ShapeError,
        (
            "1:1: shape error: diag(v) needs a vector, got a scalar 1×1\n"
            "  diag(1)\n"
            "  ^^^^^^^\n"
            "  hint: diag of a scalar is the scalar itself; did you mean diag(ones)?"
        ),
        id="shape-12",
    ),
    E(
        "tr(ones)",
        ShapeError,
        (
            "1:1: shape error: tr(M) needs a square expression, got a column n×1\n"
            "  tr(ones)\n"
            "  ^^^^^^^^\n"
            "  hint: the sum of a vector's entries is onesᵀ v"
        ),
        id="shape-13",
    ),
    E(
        "ones' ⊙ ones",
        ShapeError,
        (
            "1:1: shape error: entrywise product ⊙ of a row 1×n and a column n×1\n"
            "  ones' ⊙ ones\n"
            "  ^^^^^^^^^^^^"
        ),
        id="shape-14",
    ),
    E(
        "A / A",
        ShapeError,
        (
            "1:1: shape error: division by a matrix n×n: only division by a scalar is defined\n"
            "  A / A\n"
            "  ^^^^^\n"
            "  hint: divide entrywise with a function, e.g. let div(x, y) = x/y"
        ),
        id="shape-15",
    ),
    E(
        "A / ones",
        ShapeError,
        (
            "1:1: shape error: division by a column n×1: only division by a scalar is defined\n"
            "  A / ones\n"
            "  ^^^^^^^^\n"
            "  hint: divide entrywise with a function, e.g. let div(x, y) = x/y"
        ),
        id="shape-16",
    ),
    E(
        "tr(A) + ones",
        ShapeError,
        (
            "1:1: shape error: sum of a scalar 1×1 and a column n×1\n"
            "  tr(A) + ones\n"
            "  ^^^^^^^^^^^^\n"
            "  hint: scalars do not broadcast; for a constant vector write (tr(A)) ones"
        ),
        id="shape-17",
    ),
    E(
        "input h; h h",
        ShapeError,
        (
            "1:10: shape error: product of a column n×1 and a column n×1\n"
            "  input h; h h\n"
            "           ^^^\n"
            "  hint: to multiply vectors entrywise use ⊙ (or .*); for an inner product write vᵀ w"
        ),
        id="shape-18",
    ),
    E(
        "max(A, ones)",
        ShapeError,
        (
            "1:1: shape error: arguments of max have different shapes (matrix n×n, column n×1)\n"
            "  max(A, ones)\n"
            "  ^^^^^^^^^^^^"
        ),
        id="shape-19",
    ),
    # name
    E(
        "B",
        UnknownNameError,
        (
            "1:1: name error: unknown name 'B'\n"
            "  B\n"
            "  ^\n"
            "  hint: the input matrix is A; declare node vectors with `input h`"
        ),
        id="name-0",
    ),
    E(
        "Ax",
        UnknownNameError,
        ("1:1: name error: unknown name 'Ax'\n  Ax\n  ^^\n  hint: did you mean 'A'?"),
        id="name-1",
    ),
    E(
        "x",
        UnknownNameError,
        (
            "1:1: name error: unknown name 'x'\n"
            "  x\n"
            "  ^\n"
            "  hint: names are A, ones, I, deg, L, `let` bindings and `input` vectors"
        ),
        id="name-2",
    ),
    E(
        "one",
        UnknownNameError,
        (
            "1:1: name error: unknown name 'one'\n"
            "  one\n"
            "  ^^^\n"
            "  hint: the ones vector is `ones` (or 𝟏)"
        ),
        id="name-3",
    ),
    E(
        "h",
        UnknownNameError,
        (
            "1:1: name error: unknown name 'h'\n"
            "  h\n"
            "  ^\n"
            "  hint: names are A, ones, I, deg, L, `let` bindings and `input` vectors"
        ),
        id="name-4",
    ),
    E(
        "foo(A)",
        UnknownNameError,
        (
            "1:1: name error: unknown function 'foo'\n"
            "  foo(A)\n"
            "  ^^^^^^\n"
            "  hint: define it first: let foo(x) = ...;"
        ),
        id="name-5",
    ),
    E(
        "tre(A)",
        UnknownNameError,
        ("1:1: name error: unknown function 'tre'\n  tre(A)\n  ^^^^^^\n  hint: did you mean 'tr'?"),
        id="name-6",
    ),
    E(
        "tr",
        UnknownNameError,
        ("1:1: name error: 'tr' is a function and needs its arguments: tr(...)\n  tr\n  ^^"),
        id="name-7",
    ),
    E(
        "tr (A)",
        UnknownNameError,
        (
            "1:1: name error: 'tr' is a function and needs its arguments: tr(...)\n"
            "  tr (A)\n"
            "  ^^\n"
            "  hint: write tr( with no space before '('"
        ),
        id="name-8",
    ),
    E(
        "exp + A",
        UnknownNameError,
        (
            "1:1: name error: 'exp' is a function and needs its arguments: exp(...)\n"
            "  exp + A\n"
            "  ^^^"
        ),
        id="name-9",
    ),
    E(
        "exp(tr)",
        UnknownNameError,
        (
            "1:5: name error: 'tr' is a function and needs its arguments: tr(...)\n"
            "  exp(tr)\n"
            "      ^^"
        ),
        id="name-10",
    ),
    E(
        "let f(x) = x; f",
        UnknownNameError,
        (
            "1:15: name error: 'f' is a function and needs its arguments: f(...)\n"
            "  let f(x) = x; f\n"
            "                ^"
        ),
        id="name-11",
    ),
    # arity
    E(
        "exp(A, A)",
        ArityError,
        ("1:1: arity error: exp takes 1 argument, got 2\n  exp(A, A)\n  ^^^^^^^^^"),
        id="arity-0",
    ),
    E(
        "binom(deg)",
        ArityError,
        ("1:1: arity error: binom takes 2 arguments, got 1\n  binom(deg)\n  ^^^^^^^^^^"),
        id="arity-1",
    ),
    E(
        "tr(A, A)",
        ArityError,
        ("1:1: arity error: tr takes 1 argument, got 2\n  tr(A, A)\n  ^^^^^^^^"),
        id="arity-2",
    ),
    E(
        "diag()",
        ArityError,
        ("1:1: arity error: diag takes 1 argument, got 0\n  diag()\n  ^^^^^^"),
        id="arity-3",
    ),
    E(
        "let f(x) = x; f(A, A)",
        ArityError,
        (
            "1:15: arity error: f takes 1 argument, got 2\n"
            "  let f(x) = x; f(A, A)\n"
            "                ^^^^^^^"
        ),
        id="arity-4",
    ),
    E(
        "A(A, A)",
        ArityError,
        (
            "1:1: arity error: 'A' is not a function and cannot take 2 arguments\n"
            "  A(A, A)\n"
            "  ^^^^^^^"
        ),
        id="arity-5",
    ),
    # power
    E(
        "A^-1",
        PowerError,
        (
            "1:3: power error: a power must be a non-negative integer, got -1\n"
            "  A^-1\n"
            "    ^^\n"
            "  hint: MATLANG has no inverses; for entrywise powers use a function, e.g. let f(x) = x^(-1/2)"
        ),
        id="power-0",
    ),
    E(
        "A^1.5",
        PowerError,
        ("1:3: power error: a power must be a non-negative integer, got 1.5\n  A^1.5\n    ^^^"),
        id="power-1",
    ),
    E(
        "A ^ 2.5",
        PowerError,
        ("1:5: power error: a power must be a non-negative integer, got 2.5\n  A ^ 2.5\n      ^^^"),
        id="power-2",
    ),
    E(
        "A^(2+1)",
        PowerError,
        ("1:3: power error: a power must be a literal non-negative integer\n  A^(2+1)\n    ^^^^^"),
        id="power-3",
    ),
    E(
        "A^T2",
        PowerError,
        ("1:3: power error: a power must be a literal integer, got the name 'T2'\n  A^T2\n    ^^"),
        id="power-4",
    ),
    E(
        "A^x",
        PowerError,
        ("1:3: power error: a power must be a literal integer, got the name 'x'\n  A^x\n    ^"),
        id="power-5",
    ),
    E(
        "sqrt(A)^-2",
        PowerError,
        (
            "1:9: power error: a power must be a non-negative integer, got -2\n"
            "  sqrt(A)^-2\n"
            "          ^^\n"
            "  hint: MATLANG has no inverses; for entrywise powers use a function, e.g. let f(x) = x^(-1/2)"
        ),
        id="power-6",
    ),
    E(
        "ones^2",
        PowerError,
        (
            "1:1: power error: power of a column n×1: only square expressions have powers\n"
            "  ones^2\n"
            "  ^^^^^^\n"
            "  hint: for the entrywise square of a vector use v ⊙ v or square(v)"
        ),
        id="power-7",
    ),
    E(
        "ones'^3",
        PowerError,
        (
            "1:1: power error: power of a row 1×n: only square expressions have powers\n"
            "  ones'^3\n"
            "  ^^^^^^^\n"
            "  hint: for the entrywise square of a vector use v ⊙ v or square(v)"
        ),
        id="power-8",
    ),
    E(
        "diag(ones) ones^2",
        PowerError,
        (
            "1:12: power error: power of a column n×1: only square expressions have powers\n"
            "  diag(ones) ones^2\n"
            "             ^^^^^^\n"
            "  hint: for the entrywise square of a vector use v ⊙ v or square(v)"
        ),
        id="power-9",
    ),
    # function
    E(
        "let f(x) = y; f(A)",
        FunctionError,
        (
            "1:12: function error: cannot read the formula of 'f': it uses 'y', which is not among its parameters (x)\n"
            "  let f(x) = y; f(A)\n"
            "             ^\n"
            "  hint: declare it as a parameter: let f(x, y) = ..."
        ),
        id="function-0",
    ),
    E(
        "let f(x) = x +; f(A)",
        FunctionError,
        (
            "1:12: function error: cannot read the formula of 'f': it is not an arithmetic formula\n"
            "  let f(x) = x +; f(A)\n"
            "             ^^^\n"
            "  hint: a formula may use its parameters, numbers, + - * / ^, E, pi and the built-in functions (exp, log, sqrt, binom, relu, ...)"
        ),
        id="function-1",
    ),
    E(
        "let f(x) = factorial(x); f(A)",
        FunctionError,
        (
            "1:12: function error: cannot read the formula of 'f': it calls factorial, which is not a function matlang knows\n"
            "  let f(x) = factorial(x); f(A)\n"
            "             ^^^^^^^^^^^^\n"
            "  hint: a formula may use its parameters, numbers, + - * / ^, E, pi and the built-in functions (exp, log, sqrt, binom, relu, ...)"
        ),
        id="function-2",
    ),
    E(
        "let f(x,y,x) = x",
        FunctionError,
        (
            "1:11: function error: function 'f' repeats the parameter 'x'\n"
            "  let f(x,y,x) = x\n"
            "            ^"
        ),
        id="function-3",
    ),
    E(
        "let f(x) = 1/0 + x; f(A)",
        FunctionError,
        (
            "1:12: function error: the formula of 'f' cannot be used: it is undefined (a division by zero, an infinite or a complex constant)\n"
            "  let f(x) = 1/0 + x; f(A)\n"
            "             ^^^^^^^"
        ),
        id="function-4",
    ),
    E(
        "let f(x) = __import__('os').getcwd(); f(A)",
        FunctionError,
        (
            "1:12: function error: cannot read the formula of 'f': it calls __import__('os').getcwd, which is not a function matlang knows\n"
            "  let f(x) = __import__('os').getcwd(); f(A)\n"
            "             ^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            "  hint: a formula may use its parameters, numbers, + - * / ^, E, pi and the built-in functions (exp, log, sqrt, binom, relu, ...)"
        ),
        id="function-5",
    ),
    E(
        "let f(x) = x.real; f(A)",
        FunctionError,
        (
            "1:12: function error: cannot read the formula of 'f': 'x.real' is not arithmetic\n"
            "  let f(x) = x.real; f(A)\n"
            "             ^^^^^^\n"
            "  hint: a formula may use its parameters, numbers, + - * / ^, E, pi and the built-in functions (exp, log, sqrt, binom, relu, ...)"
        ),
        id="function-6",
    ),
    E(
        "let f(x) = 2^10000; f(A)",
        FunctionError,
        (
            "1:12: function error: cannot read the formula of 'f': a constant exponent must be at most 100\n"
            "  let f(x) = 2^10000; f(A)\n"
            "             ^^^^^^^\n"
            "  hint: a formula may use its parameters, numbers, + - * / ^, E, pi and the built-in functions (exp, log, sqrt, binom, relu, ...)"
        ),
        id="function-7",
    ),
    E(
        "let f(x) = exp; f(A)",
        FunctionError,
        (
            "1:12: function error: cannot read the formula of 'f': 'exp' is a function; call it with parentheses\n"
            "  let f(x) = exp; f(A)\n"
            "             ^^^\n"
            "  hint: a formula may use its parameters, numbers, + - * / ^, E, pi and the built-in functions (exp, log, sqrt, binom, relu, ...)"
        ),
        id="function-8",
    ),
    E(
        "binom(deg, deg)",
        FunctionError,
        (
            "1:1: function error: binom(...) cannot be computed: binom(x, k) needs k to be a literal integer k >= 0, as in binom(deg, 3)\n"
            "  binom(deg, deg)\n"
            "  ^^^^^^^^^^^^^^^"
        ),
        id="function-9",
    ),
    E(
        "binom(deg, 2.5)",
        FunctionError,
        (
            "1:1: function error: binom(...) cannot be computed: binom(x, k) needs k to be a literal integer k >= 0, as in binom(deg, 3)\n"
            "  binom(deg, 2.5)\n"
            "  ^^^^^^^^^^^^^^^"
        ),
        id="function-10",
    ),
    E(
        "let f(x) = x\nlet g(y) = f(y)\ng(A)",
        FunctionError,
        (
            "2:12: function error: cannot read the formula of 'g': it calls the user function f\n"
            "  let g(y) = f(y)\n"
            "             ^^^^\n"
            "  hint: a formula may call built-in functions only; write the formula out in full"
        ),
        id="function-11",
    ),
    # redefinition
    E(
        "let A = 2",
        RedefinitionError,
        ("1:5: name error: 'A' is built in and cannot be rebound\n  let A = 2\n      ^"),
        id="redefinition-0",
    ),
    E(
        "let tr(x) = x",
        RedefinitionError,
        (
            "1:5: name error: 'tr' is a built-in operator and cannot be redefined\n"
            "  let tr(x) = x\n"
            "      ^^\n"
            "  hint: choose another name, e.g. let my_tr(...) = ..."
        ),
        id="redefinition-1",
    ),
    E(
        "let exp(x) = x",
        RedefinitionError,
        (
            "1:5: name error: 'exp' is a built-in function and cannot be redefined\n"
            "  let exp(x) = x\n"
            "      ^^^\n"
            "  hint: choose another name, e.g. let my_exp(...) = ..."
        ),
        id="redefinition-2",
    ),
    E(
        "let B = A; let B = A; B",
        RedefinitionError,
        ("1:16: name error: 'B' is already defined\n  let B = A; let B = A; B\n                 ^"),
        id="redefinition-3",
    ),
    E(
        "let f(x)=x; let f(x)=x; f(A)",
        RedefinitionError,
        (
            "1:17: name error: function 'f' is defined twice\n"
            "  let f(x)=x; let f(x)=x; f(A)\n"
            "                  ^"
        ),
        id="redefinition-4",
    ),
    E(
        "input A",
        RedefinitionError,
        ("1:7: name error: 'A' is built in and cannot be rebound\n  input A\n        ^"),
        id="redefinition-5",
    ),
    E(
        "input h, h",
        RedefinitionError,
        ("1:10: name error: 'h' is already defined\n  input h, h\n           ^"),
        id="redefinition-6",
    ),
    E(
        "input exp",
        RedefinitionError,
        ("1:7: name error: 'exp' is built in and cannot be rebound\n  input exp\n        ^^^"),
        id="redefinition-7",
    ),
    E(
        "t: A; t: A",
        RedefinitionError,
        ("1:7: name error: 't' is already defined\n  t: A; t: A\n        ^"),
        id="redefinition-8",
    ),
    E(
        "let f(x)=x; let f = A",
        RedefinitionError,
        (
            "1:17: name error: 'f' is already defined as a function\n"
            "  let f(x)=x; let f = A\n"
            "                  ^"
        ),
        id="redefinition-9",
    ),
    # multiline
    E(
        "tr(A)\nA +\ntr(A)",
        MatlangSyntaxError,
        (
            "2:3: syntax error: unexpected end of sentence, expected an operand\n"
            "  A +\n"
            "    ^\n"
            "  hint: an operator needs an operand on its right"
        ),
        id="multiline-0",
    ),
    E(
        "tr(A)\nfoo(A)",
        UnknownNameError,
        (
            "2:1: name error: unknown function 'foo'\n"
            "  foo(A)\n"
            "  ^^^^^^\n"
            "  hint: define it first: let foo(x) = ...;"
        ),
        id="multiline-1",
    ),
    E(
        "let B = A\n\ntr(B +)",
        MatlangSyntaxError,
        (
            "3:7: syntax error: unexpected ')', expected an operand\n"
            "  tr(B +)\n"
            "        ^\n"
            "  hint: an operand is missing before ')'"
        ),
        id="multiline-2",
    ),
    E(
        "tr(A);\n  diag(A)",
        ShapeError,
        (
            "2:3: shape error: diag(v) needs a vector, got a matrix n×n\n"
            "    diag(A)\n"
            "    ^^^^^^^\n"
            "  hint: for the diagonal of a matrix M as a vector write (M ⊙ I) ones"
        ),
        id="multiline-3",
    ),
    E(
        "triangles: tr(A^3)/6\nstars: ones' binom(A ones, 3)\nbad: A + ones",
        ShapeError,
        (
            "3:6: shape error: sum of a matrix n×n and a column n×1\n"
            "  bad: A + ones\n"
            "       ^^^^^^^^"
        ),
        id="multiline-4",
    ),
    E(
        "tr(A)\n\n  (A + ones)",
        ShapeError,
        ("3:4: shape error: sum of a matrix n×n and a column n×1\n    (A + ones)\n     ^^^^^^^^"),
        id="multiline-5",
    ),
]


def test_table_is_large_enough() -> None:
    assert len(ERRORS) >= 40
    kinds = {p.values[1] for p in ERRORS}  # type: ignore[attr-defined]
    assert kinds == {
        MatlangSyntaxError,
        ShapeError,
        UnknownNameError,
        ArityError,
        PowerError,
        FunctionError,
        RedefinitionError,
    }


@pytest.mark.parametrize(("text", "cls", "message"), ERRORS)
def test_error_message(text: str, cls: type[SourceError], message: str) -> None:
    with pytest.raises(MatlangError) as info:
        parse(text)
    err = info.value
    assert type(err) is cls
    assert str(err) == message
    # the location in the first line of the message is the error's span
    assert isinstance(err, SourceError) and err.span is not None
    assert message.startswith(f"{err.span.line}:{err.span.col}: {err.kind}: {err.message}")
    assert err.text == text
    assert (err.hint is not None) == ("\n  hint: " in message)


@pytest.mark.parametrize(("text", "cls", "message"), ERRORS)
def test_program_reports_the_same_error(text: str, cls: type[SourceError], message: str) -> None:
    """parse_program reports the same error as parse (except for the sentence count)."""
    if "exactly one sentence" in message:
        parse_program(text)  # a text with zero or two sentences is a fine program
        return
    with pytest.raises(cls) as info:
        parse_program(text)
    assert str(info.value) == message


def test_located_keeps_the_text() -> None:
    err = ShapeError("sum of a matrix n×n and a column n×1", None)
    assert str(err) == "shape error: sum of a matrix n×n and a column n×1"
    with pytest.raises(ShapeError) as info:
        parse("tr(A)\nA + ones")
    assert info.value.located("other text") is info.value


def test_formula_text_is_never_executed() -> None:
    """sympy's parse_expr evaluates Python; a formula is checked before sympy sees it."""
    module = sys.modules[__name__]
    attack = f"let f(x) = setattr(__import__('sys').modules['{__name__}'], 'PWNED', 1) + x; f(A)"
    with pytest.raises(FunctionError, match="not a function matlang knows"):
        parse(attack)
    assert not hasattr(module, "PWNED")
    for text in [
        "let f(x) = (lambda: 1)() + x; f(A)",
        "let f(x) = x.__class__; f(A)",
        "let f(x) = [c for c in ()]; f(A)",
        "let f(x) = 'x'; f(A)",
        "let f(x) = x if x else 1; f(A)",
        "let f(x) = exp(x, base=2); f(A)",
    ]:
        with pytest.raises(FunctionError):
            parse(text)


@pytest.mark.parametrize(
    ("text", "caret"),
    [
        ("\t\ttr(A ⊙ 𝟏)", "  \t\t   ^^^^^"),  # tabs kept: the terminal expands both lines alike
        ("let f(x) = 全全 + y; 1", "  " + " " * 11 + "^" * 8),  # a CJK character is two columns
        ("tr(A ⊙ 𝟏)", "     ^^^^^"),
    ],
)
def test_the_caret_sits_under_the_span_on_screen(text: str, caret: str) -> None:
    """The caret line was padded with one space a code point: under tabs and wide characters
    it landed columns to the left of what it names."""
    with pytest.raises(MatlangError) as info:
        parse(text)
    lines = str(info.value).split("\n")
    assert lines[1] == "  " + text and lines[2] == caret
