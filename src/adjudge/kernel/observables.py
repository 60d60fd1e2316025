"""Decidable observables and their predicate expressions (spec 002, *What counts as evidence*).

"A claim only reaches PASS or FAIL through a decidable observable. At the current tier that
means one thing: ``evidence.content-digest``, where the expression is exactly
``(= <symbol> "sha256:<64 hex>")``. Anything else binds and answers UNKNOWN. Notably,
``evidence.present`` is explicitly declined — the absence of cited evidence is not falsehood."

An expression is first read as an s-expression. Text that is not one (unbalanced parentheses,
an unterminated string, trailing input) is *malformed* and refused with
``EXPRESSION_MALFORMED``. A well-formed expression that is not the decidable form binds and
answers UNKNOWN, with the reason.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from adjudge.errors import CriteriaError
from adjudge.kernel.verdicts import Verdict

CONTENT_DIGEST: Final = "evidence.content-digest"
PRESENT: Final = "evidence.present"

SHA256_DIGEST: Final = re.compile(r"sha256:[0-9a-f]{64}")
_SYMBOL: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_EXACT: Final = re.compile(r'\(= ([A-Za-z_][A-Za-z0-9_.\-]*) "(sha256:[0-9a-f]{64})"\)')
_TOKEN: Final = re.compile(r'\s*(?:(\()|(\))|"((?:[^"\\]|\\.)*)"|([^\s()"]+))')


@dataclass(frozen=True, slots=True)
class Atom:
    """A bare token such as ``=`` or ``result``."""

    text: str


@dataclass(frozen=True, slots=True)
class Str:
    """A double-quoted string literal."""

    text: str


def read(expression: str) -> Atom | Str | tuple[object, ...]:
    """Read one s-expression; refuse anything that is not exactly one (``EXPRESSION_MALFORMED``)."""
    if not isinstance(expression, str):
        raise _malformed(expression, "an expression is a string")
    stack: list[list[object]] = [[]]
    pos = 0
    while pos < len(expression):
        if expression[pos:].strip() == "":
            break
        match = _TOKEN.match(expression, pos)
        if match is None:
            raise _malformed(expression, f"unreadable input at character {pos}")
        pos = match.end()
        opened, closed, string, atom = match.groups()
        if opened:
            stack.append([])
        elif closed:
            if len(stack) == 1:
                raise _malformed(expression, "a ')' closes nothing")
            done = tuple(stack.pop())
            stack[-1].append(done)
        elif string is not None:
            stack[-1].append(Str(string))
        else:
            stack[-1].append(Atom(atom))
    if len(stack) != 1:
        raise _malformed(expression, "a '(' is never closed")
    top = stack[0]
    if len(top) != 1:
        raise _malformed(expression, "expected exactly one expression")
    value = top[0]
    assert isinstance(value, Atom | Str | tuple)
    return value


def _malformed(expression: object, why: str) -> CriteriaError:
    return CriteriaError(
        f"Malformed predicate expression {expression!r}: {why}. The decidable form is "
        f'(= <symbol> "sha256:<64 lowercase hex>").',
        code="EXPRESSION_MALFORMED",
    )


@dataclass(frozen=True, slots=True)
class DigestEquals:
    """The decidable predicate ``(= symbol "sha256:…")``."""

    symbol: str
    digest: str

    def render(self) -> str:
        """The canonical text of this predicate."""
        return f'(= {self.symbol} "{self.digest}")'


def parse_digest_equals(expression: str) -> DigestEquals | None:
    """The predicate if ``expression`` is exactly the decidable form, else ``None``.

    Malformed text raises ``EXPRESSION_MALFORMED``; well-formed text of another shape is None.
    """
    exact = _EXACT.fullmatch(expression) if isinstance(expression, str) else None
    if exact is not None:  # the canonical spelling, without building a tree
        return DigestEquals(exact.group(1), exact.group(2))
    value = read(expression)
    if (
        isinstance(value, tuple)
        and len(value) == 3
        and value[0] == Atom("=")
        and isinstance(value[1], Atom)
        and _SYMBOL.fullmatch(value[1].text)
        and isinstance(value[2], Str)
        and SHA256_DIGEST.fullmatch(value[2].text)
    ):
        return DigestEquals(value[1].text, value[2].text)
    return None


def content_digest(data: bytes) -> str:
    """The ``sha256:<64 lowercase hex>`` digest of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


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
    """Bind ``expression`` to ``observable``; malformed expressions raise, others always bind."""
    read(expression)  # (1) refuse malformed text whatever the observable
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
            f'{CONTENT_DIGEST} decides only (= <symbol> "sha256:<64 hex>")',
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
