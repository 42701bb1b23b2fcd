"""Golden table: the syntactic fragment, the fragment after the rewrites, and the level of the
witness the built-in libraries give, for sentences from the paper and around it.

Every row also runs the witness search, which raises SoundnessError if a sentence separates a
pair its own fragment cannot separate: the table doubles as a check of the analyzer's claims.
"""

from __future__ import annotations

import pytest

import matlang
from matlang.analysis import Analysis, classify
from matlang.fragments import FRAGMENTS, forced_level, fragment, reasons

# (sentence, syntactic fragment, fragment after normalisation, witness level or None);
# the comment is the normal form.
GOLDEN: list[tuple[str, str, str, str | None]] = [
    ("𝟏ᵀ A 𝟏", "L1", "L1", None),  # 𝟏ᵀ A 𝟏
    ("𝟏ᵀ 𝟏", "L1", "L1", None),  # 𝟏ᵀ 𝟏
    ("A 𝟏", "L1", "L1", None),  # A 𝟏
    ("diag(A 𝟏)", "L1", "L1", None),  # diag(A 𝟏)
    ("𝟏ᵀ A² 𝟏", "L1", "L1", None),  # 𝟏ᵀ A² 𝟏
    ("𝟏ᵀ A diag(A𝟏) A 𝟏", "L1", "L1", None),  # 𝟏ᵀ A diag(A 𝟏) A 𝟏
    ("(A𝟏) ⊙ (A𝟏)", "L1", "L1", None),  # diag(A 𝟏) A 𝟏
    ("𝟏ᵀ (A𝟏 ⊙ A²𝟏)", "L1", "L1", None),  # 𝟏ᵀ A³ 𝟏
    ("𝟏ᵀA ⊙ 𝟏ᵀ", "L1", "L1", None),  # 𝟏ᵀ A
    ("2 * (3 * A)", "L1", "L1", None),  # 6 A
    ("(Aᵀ)ᵀ", "L1", "L1", None),  # A
    ("𝟏ᵀ L 𝟏", "L1", "L1", None),  # 0
    ("𝟏ᵀ (L ⊙ L) 𝟏", "L3", "L1", None),  # 𝟏ᵀ A 𝟏 + 𝟏ᵀ A² 𝟏
    (
        "let f(x) = x*(x-1)*(x-2)/6; 𝟏ᵀ f(A 𝟏)",
        "L1",
        "L1",
        None,
    ),  # let f(x) = x*(x-1)*(x-2)/6; 𝟏ᵀ f(A 𝟏)
    ("𝟏ᵀ binom(A𝟏, 3)", "L1", "L1", None),  # 𝟏ᵀ binom(A 𝟏, 3)
    ("𝟏ᵀ A diag(exp(-A²𝟏)) A 𝟏", "L1", "L1", None),  # 𝟏ᵀ A diag(exp(-A² 𝟏)) A 𝟏
    (
        "let f(x) = x^(-1/2); 𝟏ᵀ (I - diag(f(A𝟏)) A diag(f(A𝟏))) 𝟏",
        "L1",
        "L1",
        None,
    ),  # let f(x) = x^(-1/2); 𝟏ᵀ 𝟏 - f(𝟏ᵀ A) A f(A 𝟏)
    (
        "let f(x) = x^(-1/2); 𝟏ᵀ (I - diag(f(A𝟏 + 𝟏)) (A + I) diag(f(A𝟏 + 𝟏))) 𝟏",
        "L1",
        "L1",
        None,
    ),  # let f(x) = x^(-1/2); 𝟏ᵀ 𝟏 - f(𝟏ᵀ + 𝟏ᵀ A) (A + diag(𝟏)) f(A 𝟏 + 𝟏)
    ("𝟏ᵀ (A + 0.5 I) 𝟏", "L1", "L1", None),  # 𝟏ᵀ (A + diag(𝟏) / 2) 𝟏
    ("let f(x) = 1/x; 𝟏ᵀ diag(f(A𝟏)) A 𝟏", "L1", "L1", None),  # let f(x) = 1/x; f(𝟏ᵀ A) A 𝟏
    ("tr(A^3) / 6", "L2", "L2", "1-WL"),  # tr(A³) / 6
    ("tr(A⁵)", "L2", "L2", "1-WL"),  # tr(A⁵)
    ("tr(A⁴)", "L2", "L2", "1-WL"),  # tr(A⁴)
    (
        "1/8*(tr(A^4) + tr(A^2) - 2*𝟏ᵀA²𝟏)",
        "L2",
        "L2",
        "1-WL",
    ),  # 𝟏ᵀ A 𝟏 / 8 + tr(A⁴) / 8 - 𝟏ᵀ A² 𝟏 / 4
    ("tr(A³) + 𝟏ᵀ A 𝟏", "L2", "L2", "1-WL"),  # 𝟏ᵀ A 𝟏 + tr(A³)
    ("exp(tr(A^3))", "L2", "L2", "1-WL"),  # exp(tr(A³))
    ("tr(A^3 diag(A𝟏))", "L2", "L2", "1-WL"),  # tr(A³ diag(A 𝟏))
    ("tr(L³)", "L2", "L2", "1-WL"),  # tr((diag(A 𝟏) - A)³)
    ("tr(A) * 𝟏ᵀ A 𝟏", "L2", "L1", None),  # 0
    ("tr(A²)", "L2", "L1", None),  # 𝟏ᵀ A 𝟏
    ("tr(diag(A𝟏))", "L2", "L1", None),  # 𝟏ᵀ A 𝟏
    ("tr(L²)", "L2", "L1", None),  # 𝟏ᵀ A 𝟏 + 𝟏ᵀ A² 𝟏
    ("tr(A diag(A𝟏) A)", "L2", "L1", None),  # 𝟏ᵀ A² 𝟏
    ("tr(A 𝟏 𝟏ᵀ A)", "L2", "L1", None),  # 𝟏ᵀ A² 𝟏
    ("tr(A^3) - tr(A^3)", "L2", "L1", None),  # 0
    ("tr(diag(A𝟏) A diag(A𝟏) A)", "L2", "L1", None),  # 𝟏ᵀ A³ 𝟏
    ("let f(x) = x*x; 𝟏ᵀ f((A ⊙ A²)² 𝟏)", "L3", "L3", "L2"),  # let f(x) = x*x; 𝟏ᵀ f((A ⊙ A²)² 𝟏)
    ("𝟏ᵀ (A ⊙ A²)² 𝟏", "L3", "L3", "1-WL"),  # 𝟏ᵀ (A ⊙ A²)² 𝟏
    ("A ⊙ A²", "L3", "L3", "1-WL"),  # A ⊙ A²
    ("let g(x, y) = x*y; 𝟏ᵀ g(A, A²) 𝟏", "L3", "L2", "1-WL"),  # tr(A³): g(A, A²) = A ⊙ A²
    ("𝟏ᵀ (A³ ⊙ I) diag(A𝟏) 𝟏", "L3", "L2", "1-WL"),  # tr(A³ diag(A 𝟏))
    ("tr((A ⊙ A²)²)", "L3", "L3", "L2"),  # tr((A ⊙ A²)²)
    ("relu(A² - A)", "L3", "L3", "L2"),  # relu(A² - A)
    ("𝟏ᵀ exp(A²) 𝟏", "L3", "L3", "L2"),  # 𝟏ᵀ exp(A²) 𝟏
    ("1/2 * 𝟏ᵀ(A³ ⊙ diag(A𝟏 - 2𝟏))𝟏", "L3", "L2", "1-WL"),  # tr(A³ diag(A 𝟏 - 2 𝟏)) / 2
    ("𝟏ᵀ (A ⊙ A²) 𝟏", "L3", "L2", "1-WL"),  # tr(A³)
    ("𝟏ᵀ (A² ⊙ A²) 𝟏", "L3", "L2", "1-WL"),  # tr(A⁴)
    ("𝟏ᵀ (A ⊙ A) 𝟏", "L3", "L1", None),  # 𝟏ᵀ A 𝟏
    ("A ⊙ I", "L3", "L1", None),  # 0 (𝟏 𝟏ᵀ)
    ("A² ⊙ I", "L3", "L1", None),  # diag(A 𝟏)
    ("𝟏ᵀ (A ⊙ (𝟏𝟏ᵀ - I)) 𝟏", "L3", "L1", None),  # 𝟏ᵀ A 𝟏
    ("A𝟏𝟏ᵀ ⊙ A", "L3", "L1", None),  # diag(A 𝟏) A
    ("𝟏ᵀ relu(A) 𝟏", "L3", "L1", None),  # 𝟏ᵀ A 𝟏
    ("binom(A, 2)", "L3", "L1", None),  # 0 (𝟏 𝟏ᵀ)
    ("exp(diag(A𝟏))", "L3", "L1", None),  # diag(exp(A 𝟏)) + 𝟏 𝟏ᵀ - diag(𝟏)
    ("let f(x) = 2*x + 1; 𝟏ᵀ f(A²) 𝟏", "L1", "L1", None),  # 𝟏ᵀ (2 A² + 𝟏 𝟏ᵀ) 𝟏
    ("let g(x, y) = x - 2*y; 𝟏ᵀ g(A, A²) 𝟏", "L1", "L1", None),  # 𝟏ᵀ (A - 2 A²) 𝟏
    ("(A - A) ⊙ A²", "L3", "L1", None),  # 0 (𝟏 𝟏ᵀ)
    ("-A ⊙ 2A", "L3", "L1", None),  # -2 A
    ("A ⊙ (A + I)", "L3", "L1", None),  # A
    ("𝟏ᵀ (A ⊙ A²)² 𝟏 - 𝟏ᵀ (A² ⊙ A)² 𝟏", "L3", "L1", None),  # 0
    ("tr(A ⊙ A²)", "L3", "L1", None),  # 0
    ("𝟏ᵀ(A𝟏𝟏ᵀA ⊙ A²)𝟏", "L3", "L1", None),  # 𝟏ᵀ A⁴ 𝟏
    ("(A³ ⊙ I) 𝟏", "L3", "L3", "1-WL"),  # (A³ ⊙ diag(𝟏)) 𝟏
    ("(A ⊙ A²) 𝟏", "L3", "L3", "1-WL"),  # (A ⊙ A²) 𝟏
    ("input h; 𝟏ᵀ diag(h) A h", "L1", "L1", None),  # input h; hᵀ A h
    ("input h; tr(diag(h) A³)", "L2", "L2", None),  # input h; tr(diag(h) A³)
    ("let g(x) = 1/x; diag(g(A𝟏)) A", "L1", "L1", None),  # let g(x) = 1/x; diag(g(A 𝟏)) A
    ("𝟏ᵀ((2/3) L - I)𝟏", "L1", "L1", None),  # -𝟏ᵀ 𝟏
    ("tr(L) - 𝟏ᵀ A 𝟏", "L2", "L1", None),  # 0
    ("𝟏ᵀ (A ⊙ A²) 𝟏 / 6 - tr(A^3) / 6", "L3", "L1", None),  # 0
    # equivalent spellings, one level
    ("𝟏ᵀ square(A²) 𝟏", "L3", "L2", "1-WL"),  # tr(A⁴)
    ("𝟏ᵀ (A² ⊙ A²) 𝟏", "L3", "L2", "1-WL"),  # tr(A⁴)
    ("𝟏ᵀ exp(A) 𝟏", "L3", "L1", None),  # 𝟏ᵀ ((exp(1) - 1) A + 𝟏 𝟏ᵀ) 𝟏
    ("𝟏ᵀ sigmoid(A) 𝟏", "L3", "L1", None),  # 𝟏ᵀ ((sigmoid(1) - 0.5) A + 𝟏 𝟏ᵀ / 2) 𝟏
    ("tr((A/2)^2)", "L2", "L1", None),  # 𝟏ᵀ A 𝟏 / 4
]


@pytest.mark.parametrize(("text", "syntactic", "normalized", "witness"), GOLDEN)
def test_golden_fragments(text: str, syntactic: str, normalized: str, witness: str | None) -> None:
    a = classify(text)
    assert (a.syntactic_fragment, a.fragment) == (syntactic, normalized)
    got = a.witness.level_name if a.witness is not None else None
    assert got == witness
    if a.witness is not None and a.expr.shape.is_scalar:  # exact values of the sentence
        g, h = a.witness.graphs
        assert a.witness.values == (matlang.evaluate(a.expr, g), matlang.evaluate(a.expr, h))
        assert a.witness.values[0] != a.witness.values[1]


def test_golden_table_is_large_and_covers_every_move() -> None:
    assert len(GOLDEN) >= 50
    moves = {(s, n) for _, s, n, _ in GOLDEN}
    assert moves >= {
        ("L1", "L1"),
        ("L2", "L2"),
        ("L2", "L1"),
        ("L3", "L3"),
        ("L3", "L2"),
        ("L3", "L1"),
    }


@pytest.mark.parametrize(
    ("text", "normal_form"),
    [
        ("tr(A²)", "𝟏ᵀ A 𝟏"),
        ("𝟏ᵀ (A ⊙ A²) 𝟏", "tr(A³)"),
        ("1/2 * 𝟏ᵀ(A³ ⊙ diag(A𝟏 - 2𝟏))𝟏", "tr(A³ diag(A 𝟏 - 2 𝟏)) / 2"),
        ("1/8*(tr(A^4) + tr(A^2) - 2*𝟏ᵀA²𝟏)", "𝟏ᵀ A 𝟏 / 8 + tr(A⁴) / 8 - 𝟏ᵀ A² 𝟏 / 4"),
        ("tr(L²)", "𝟏ᵀ A 𝟏 + 𝟏ᵀ A² 𝟏"),
        ("𝟏ᵀ L 𝟏", "0"),
        ("(A𝟏) ⊙ (A𝟏)", "diag(A 𝟏) A 𝟏"),
        ("A ⊙ A", "A"),
        ("A² ⊙ I", "diag(A 𝟏)"),
        ("exp(diag(A𝟏))", "diag(exp(A 𝟏)) + 𝟏 𝟏ᵀ - diag(𝟏)"),
        ("𝟏ᵀ relu(A) 𝟏", "𝟏ᵀ A 𝟏"),
        ("let f(x) = x*x; 𝟏ᵀ f((A ⊙ A²)² 𝟏)", "let f(x) = x*x; 𝟏ᵀ f((A ⊙ A²)² 𝟏)"),
        ("𝟏ᵀ square(A²) 𝟏", "tr(A⁴)"),
        ("𝟏ᵀ exp(A) 𝟏", "𝟏ᵀ ((exp(1) - 1) A + 𝟏 𝟏ᵀ) 𝟏"),
        ("tr((A/2)^2)", "𝟏ᵀ A 𝟏 / 4"),
        ("square(A²)", "A² ⊙ A²"),
    ],
)
def test_normal_forms(text: str, normal_form: str) -> None:
    assert classify(text, witness=False).normalized == normal_form


def test_reasons_name_operation_span_and_level() -> None:
    a = classify("𝟏ᵀ A 𝟏 + tr(A^3) + 𝟏ᵀ (A ⊙ A²) 𝟏", witness=False)
    syn = [(r.operation, r.at, FRAGMENTS[r.level]) for r in a.reasons if r.stage == "syntactic"]
    assert syn == [("tr", "1:10", "L2"), ("⊙", "1:24", "L3")]
    norm = [(r.operation, FRAGMENTS[r.level]) for r in a.reasons if r.stage == "normalized"]
    assert norm == [("tr", "L2")]  # 1ᵀ(A ⊙ A²)1 = tr(A³) joins the other trace
    assert a.normalized == "𝟏ᵀ A 𝟏 + 2 tr(A³)"
    assert (a.syntactic_fragment, a.fragment) == ("L3", "L2")


def test_reasons_on_several_lines() -> None:
    # f is not a polynomial: a polynomial f(A, A²) is a sum of ⊙ products, normalised away
    a = classify("let f(x, y) = exp(x*y)\ntr(A^3) + 𝟏ᵀ f(A, A²) 𝟏", witness=False)
    got = [(r.stage, r.operation, r.at, FRAGMENTS[r.level]) for r in a.reasons]
    assert got == [
        ("syntactic", "tr", "2:1", "L2"),
        ("syntactic", "f(…)", "2:14", "L3"),
        ("normalized", "tr", "2:1", "L2"),
        ("normalized", "f(…)", "2:14", "L3"),
    ]
    assert "several matrices" in a.reasons[1].why
    one = classify("𝟏ᵀ exp(A²) 𝟏", witness=False).reasons[0]
    assert one.why == (
        "a non-affine pointwise function of a matrix counts as ⊙ (exp(M) can express M ⊙ M)"
    )


def test_pointwise_function_of_a_matrix_counts_as_hadamard() -> None:
    """square(M) = M ⊙ M: 1ᵀ square(A²) 1 separates the 1-WL-equivalent pair 8-cycle / two
    4-cycles, so one-argument f of a matrix cannot stay in L1⁺."""
    e = matlang.parse("𝟏ᵀ square(A²) 𝟏")
    assert fragment(e) == 3
    assert matlang.evaluate(e, "cycle8") == 48
    from matlang.graphs import named
    from matlang.witness import disjoint_union

    assert matlang.evaluate(e, disjoint_union(named("cycle4"), named("cycle4"))) == 64
    # affine functions of matrices are sums and scalar products
    assert fragment(matlang.parse("let f(x) = 3*x - 1; 𝟏ᵀ f(A²) 𝟏")) == 1


def test_hadamard_of_vectors_and_functions_of_vectors_are_l1() -> None:
    for text in ["(A𝟏) ⊙ (A²𝟏)", "let g(x, y) = x*y + 1; g(A𝟏, A²𝟏)", "𝟏ᵀA ⊙ 𝟏ᵀA²", "exp(A𝟏)"]:
        e = matlang.parse(text)
        assert fragment(e) == 1 and reasons(e) == []
    assert forced_level(matlang.parse("A ⊙ A²")) == (
        3,
        "⊙",
        "an entrywise product of matrices is in L3 only",
    )


def test_wl_statements() -> None:
    assert classify("𝟏ᵀ A 𝟏").wl == "at most 1-WL"
    assert classify("tr(A^3)").wl == "beyond 1-WL (witness), at most L2 (strictly weaker than 3-WL)"
    assert classify("tr(A^3)", witness=False).wl == "at most L2 (strictly weaker than 3-WL)"
    custom = "let f(x) = x*x; 𝟏ᵀ f((A ⊙ A²)² 𝟏)"
    assert classify(custom).wl == "beyond 1-WL and L2 (witness), at most 3-WL"
    assert classify("(A ⊙ A²) 𝟏").wl == "beyond 1-WL (witness), at most 3-WL"


def test_sentences_with_inputs_skip_the_witness_search() -> None:
    a = classify("input h; tr(diag(h) A^3)")
    assert a.witness is None and not a.searched
    assert any("node inputs" in n for n in a.notes)


def test_analysis_of_an_expr_and_of_text_agree() -> None:
    e = matlang.parse("tr(A^5)")
    a, b = classify(e), classify("tr(A^5)")
    assert isinstance(a, Analysis)
    assert a.to_json() == b.to_json()
    assert matlang.classify(e).to_json() == a.to_json()


def test_user_errors_are_located() -> None:
    with pytest.raises(matlang.MatlangError, match="1:4"):
        classify("tr(A ⊙ 𝟏)")
