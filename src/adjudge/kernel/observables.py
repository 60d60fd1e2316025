"""Decidable observables and their predicate expressions (spec 002, *What counts as evidence*).

"A claim only reaches PASS or FAIL through a decidable observable. At the current tier that
means one thing: ``evidence.content-digest``, where the expression is exactly
``(= <symbol> "sha256:<64 hex>")``. Anything else binds and answers UNKNOWN. Notably,
``evidence.present`` is explicitly declined — the absence of cited evidence is not falsehood."

The match is exact, character for character: one space after ``=``, one before the string, no
blanks inside the parentheses or around them, lowercase hex. There is no reader, so there is no
"malformed" expression either: an extra space, a tab, a newline, unbalanced parentheses or
plain noise all bind and answer UNKNOWN with the reason, exactly like another operator does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from adjudge.digests import DIGEST
from adjudge.errors import CriteriaError
from adjudge.kernel.verdicts import Verdict

CONTENT_DIGEST: Final = "evidence.content-digest"
PRESENT: Final = "evidence.present"

#: The one decidable form, matched with ``fullmatch``: it anchors both ends and, unlike ``$``,
#: does not let a trailing newline through.
_EXACT: Final = re.compile(r'\(= ([A-Za-z_][A-Za-z0-9_.\-]*) "(' + DIGEST.pattern + r')"\)')


@dataclass(frozen=True, slots=True)
class DigestEquals:
    """The decidable predicate ``(= symbol "sha256:…")``."""

    symbol: str
    digest: str

    def render(self) -> str:
        """The canonical text of this predicate."""
        return f'(= {self.symbol} "{self.digest}")'


def parse_digest_equals(expression: object) -> DigestEquals | None:
    """The predicate if ``expression`` is exactly the decidable form, else ``None``.

    Never raises: any other text, or a value that is not a string at all, is None.
    """
    exact = _EXACT.fullmatch(expression) if type(expression) is str else None
    if exact is None:
        return None
    return DigestEquals(exact.group(1), exact.group(2))


def is_exact(expression: object) -> bool:
    """Whether ``expression`` is exactly the decidable form (``parse_digest_equals`` is not None),
    without building the predicate: the test a replayed receipt runs on every check."""
    return type(expression) is str and _EXACT.fullmatch(expression) is not None


class BindingStatus(StrEnum):
    """How an observable bound."""

    DECIDABLE = "decidable"  # evidence.content-digest with the exact form: PASS or FAIL
    UNDECIDABLE = "undecidable"  # bound, but answers UNKNOWN at this tier
    DECLINED = "declined"  # evidence.present: explicitly declined, answers UNKNOWN


@dataclass(frozen=True, slots=True)
class Binding:
    """An observable bound to its expression."""

    observable: str
    expression: str
    status: BindingStatus
    predicate: DigestEquals | None
    reason: str


def bind(observable: str, expression: str) -> Binding:
    """Bind ``expression`` to ``observable``. Always binds; only the exact form is decidable.

    Refuses (``EXPRESSION_INVALID``) only a caller's type error: an observable or expression
    that is not a string. Text of any shape binds.
    """
    if type(observable) is not str or type(expression) is not str:
        raise CriteriaError(
            "An observable and its expression are strings.", code="EXPRESSION_INVALID"
        )
    if observable == PRESENT:
        return Binding(
            observable,
            expression,
            BindingStatus.DECLINED,
            None,
            "evidence.present is declined: the absence of cited evidence is not falsehood",
        )
    if observable != CONTENT_DIGEST:
        return Binding(
            observable,
            expression,
            BindingStatus.UNDECIDABLE,
            None,
            f"{observable} is not decidable at this tier; only {CONTENT_DIGEST} is",
        )
    predicate = parse_digest_equals(expression)
    if predicate is None:
        return Binding(
            observable,
            expression,
            BindingStatus.UNDECIDABLE,
            None,
            f'{CONTENT_DIGEST} decides only exactly (= <symbol> "sha256:<64 lowercase hex>"), '
            "one space apart, nothing around it",
        )
    return Binding(observable, expression, BindingStatus.DECIDABLE, predicate, "decidable")


@dataclass(frozen=True, slots=True)
class Observation:
    """The answer of an evaluated binding: a verdict and why."""

    verdict: Verdict
    reason: str


def evaluate(binding: Binding, facts: Mapping[str, str]) -> Observation:
    """Evaluate a binding against observed digests (``symbol -> "sha256:…"``).

    PASS when the observed digest equals the expression's, FAIL when it differs, UNKNOWN when
    the binding is not decidable or the symbol was not observed (missing is not false). An
    evaluator's FAIL is never a MISMATCH: only the oracle seam mints that.
    """
    predicate = binding.predicate
    if binding.status is not BindingStatus.DECIDABLE or predicate is None:
        return Observation(Verdict.UNKNOWN, binding.reason)
    observed = facts.get(predicate.symbol)
    if observed is None:
        return Observation(Verdict.UNKNOWN, f"{predicate.symbol} was not observed")
    if observed == predicate.digest:
        return Observation(Verdict.PASS, f"{predicate.symbol} has digest {predicate.digest}")
    return Observation(
        Verdict.FAIL, f"{predicate.symbol} has digest {observed}, not {predicate.digest}"
    )
