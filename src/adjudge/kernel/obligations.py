"""Falsifiability by witness (spec 002: "An obligation that cannot fail is refused").

An obligation is a predicate over observed digests. It is admitted only when a *witness* — an
assignment of digests to its symbols — makes it fail: a witness that fails proves the
obligation was falsifiable. Vacuous predicates (no decidable leaf at all, so they are constant),
unreachable fail branches (no failing witness exists) and undecidable predicate kinds are all
refused. "A false refusal costs an argument; a false admission signs a verdict that means
nothing."

The predicates compare symbols to constant digests, so a symbol's value matters only through
which constant it equals, if any. Trying each constant plus one fresh digest per symbol is
therefore exhaustive: :func:`find_witness` is a decision procedure, not a heuristic, within
:data:`MAX_ASSIGNMENTS`; past that bound the obligation is refused rather than guessed at.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from adjudge.digests import is_digest, sha256_digest
from adjudge.kernel.observables import Binding, BindingStatus, DigestEquals

MAX_ASSIGNMENTS: Final = 4096


@dataclass(frozen=True, slots=True)
class Const:
    """A constant: a predicate that does not look at anything."""

    value: bool


@dataclass(frozen=True, slots=True)
class Not:
    """Negation."""

    part: Predicate


@dataclass(frozen=True, slots=True)
class AllOf:
    """Conjunction; empty is constant true (and so, alone, vacuous)."""

    parts: tuple[Predicate, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    """Disjunction; empty is constant false."""

    parts: tuple[Predicate, ...]


@dataclass(frozen=True, slots=True)
class Undecidable:
    """A bound observable that is not decidable at this tier."""

    observable: str
    expression: str


Predicate = DigestEquals | Const | Not | AllOf | AnyOf | Undecidable


def from_binding(binding: Binding) -> Predicate:
    """The predicate of a bound observable: decidable digest equality, or undecidable."""
    if binding.status is BindingStatus.DECIDABLE and binding.predicate is not None:
        return binding.predicate
    return Undecidable(binding.observable, binding.expression)


class ObligationCode(StrEnum):
    """Why an obligation was refused."""

    UNDECIDABLE_PREDICATE = "undecidable-predicate"
    VACUOUS_PREDICATE = "vacuous-predicate"
    UNFALSIFIABLE = "unfalsifiable"
    WITNESS_DOES_NOT_FAIL = "witness-does-not-fail"
    WITNESS_INCOMPLETE = "witness-incomplete"
    WITNESS_INVALID = "witness-invalid"
    SEARCH_BOUND_EXCEEDED = "search-bound-exceeded"


@dataclass(frozen=True, slots=True)
class Obligation:
    """A named predicate the work must satisfy."""

    name: str
    predicate: Predicate


@dataclass(frozen=True, slots=True)
class Admitted:
    """An admitted obligation and the witness that proves it can fail."""

    obligation: Obligation
    witness: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Refused:
    """A refused obligation: the stable code and why."""

    code: ObligationCode
    reason: str


def _leaves(p: Predicate) -> Iterator[Predicate]:
    if isinstance(p, Not):
        yield from _leaves(p.part)
    elif isinstance(p, AllOf | AnyOf):
        for part in p.parts:
            yield from _leaves(part)
    else:
        yield p


def holds(p: Predicate, witness: Mapping[str, str]) -> bool:
    """Evaluate a decidable predicate under a complete witness."""
    if isinstance(p, DigestEquals):
        return witness[p.symbol] == p.digest
    if isinstance(p, Const):
        return p.value
    if isinstance(p, Not):
        return not holds(p.part, witness)
    if isinstance(p, AllOf):
        return all(holds(part, witness) for part in p.parts)
    if isinstance(p, AnyOf):
        return any(holds(part, witness) for part in p.parts)
    raise TypeError(f"{p!r} is not decidable")


def _fresh(taken: set[str]) -> str:
    """A digest different from every constant the predicate mentions."""
    n = 0
    while True:
        candidate = sha256_digest(b"adjudge-witness-%d" % n)
        if candidate not in taken:
            return candidate
        n += 1


def find_witness(p: Predicate) -> Mapping[str, str] | Refused | None:
    """A witness that makes ``p`` fail, None when none exists, or a refusal past the bound."""
    constants: dict[str, set[str]] = {}
    for leaf in _leaves(p):
        if isinstance(leaf, DigestEquals):
            constants.setdefault(leaf.symbol, set()).add(leaf.digest)
    symbols = sorted(constants)
    domains = [[*sorted(constants[s]), _fresh(constants[s])] for s in symbols]
    size = 1
    for domain in domains:
        size *= len(domain)
    if size > MAX_ASSIGNMENTS:
        return Refused(
            ObligationCode.SEARCH_BOUND_EXCEEDED,
            f"deciding falsifiability needs {size} assignments, over the bound {MAX_ASSIGNMENTS}",
        )
    for values in itertools.product(*domains):
        witness = dict(zip(symbols, values, strict=True))
        if not holds(p, witness):
            return witness
    return None


def admit(obligation: Obligation, witness: Mapping[str, str] | None = None) -> Admitted | Refused:
    """Admit ``obligation`` if it can fail: with the given ``witness``, or one found.

    The steps: (1) an undecidable leaf refuses; (2) no decidable leaf at all is vacuous;
    (3) a given witness must give every symbol a value its observable can take (a content
    digest observes ``sha256:<64 lowercase hex>``, so anything else could never be observed
    and proves nothing) and make the predicate fail; (4) otherwise a failing witness is
    searched for, and none means the fail branch is unreachable.
    """
    p = obligation.predicate
    leaves = list(_leaves(p))
    for leaf in leaves:  # (1)
        if isinstance(leaf, Undecidable):
            return Refused(
                ObligationCode.UNDECIDABLE_PREDICATE,
                f"{leaf.observable} {leaf.expression} is not decidable at this tier",
            )
    if not any(isinstance(leaf, DigestEquals) for leaf in leaves):  # (2)
        return Refused(ObligationCode.VACUOUS_PREDICATE, "the predicate observes nothing")
    if witness is not None:  # (3)
        symbols = {leaf.symbol for leaf in leaves if isinstance(leaf, DigestEquals)}
        missing = symbols - set(witness)
        if missing:
            return Refused(
                ObligationCode.WITNESS_INCOMPLETE,
                f"the witness does not assign {', '.join(sorted(missing))}",
            )
        unobservable = sorted(s for s in symbols if not is_digest(witness[s]))
        if unobservable:
            return Refused(
                ObligationCode.WITNESS_INVALID,
                f"the witness gives {', '.join(unobservable)} a value no content digest can "
                "take (a digest is sha256:<64 lowercase hex>)",
            )
        if holds(p, witness):
            return Refused(
                ObligationCode.WITNESS_DOES_NOT_FAIL, "the witness satisfies the obligation"
            )
        return Admitted(obligation, dict(witness))
    found = find_witness(p)  # (4)
    if isinstance(found, Refused):
        return found
    if found is None:
        return Refused(
            ObligationCode.UNFALSIFIABLE, "no witness makes it fail: the fail branch is unreachable"
        )
    return Admitted(obligation, found)
