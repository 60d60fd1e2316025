"""Who may conclude what: authorities and the trust policy (spec 002, *Who is allowed*).

Every check records the authority of whatever decided it. Only an authority on the trust
policy's allow-list can carry a set to PASS. The test is *membership*, never exclusion, so it
fails closed: an authority added to :class:`Authority` later is untrusted until someone lists it.

A policy can only *narrow* the kernel's allow-list (deterministic and human), never widen it:
listing ``semantic`` or ``imported`` is refused. The one extension is seed 000's agent review,
reconciled deliberately: a poster may trust *one named verifier key* for one task — never a
class — and a PASS that rests on it says so (:func:`trust_basis`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from adjudge.errors import CriteriaError

_KEY_FINGERPRINT = re.compile(r"[0-9a-f]{64}")


class Authority(StrEnum):
    """What decided a check."""

    DETERMINISTIC = "deterministic"  # a machine re-ran something and observed the outcome
    HUMAN = "human"  # a person looked
    SEMANTIC = "semantic"  # a model judged
    IMPORTED = "imported"  # the result came from somewhere else


#: "Only deterministic and human can carry a set to PASS." Also the most a policy may list.
DEFAULT_TRUSTED: frozenset[Authority] = frozenset({Authority.DETERMINISTIC, Authority.HUMAN})


#: The most verifier keys one task's policy names (a panel voting k of n).
MAX_PANEL = 9


def trust_basis(verifier_key: str) -> str:
    """How a PASS that rests on a named verifier key is described, wherever it is shown."""
    return f"PASS on the poster's trust in verifier key {verifier_key}"


@dataclass(frozen=True, slots=True)
class TrustPolicy:
    """An allow-list: the authorities, and the named verifier key, whose PASS counts.

    ``authorities`` is a subset of deterministic and human (anything else is refused,
    ``TRUST_POLICY_INVALID``). ``verifier_keys`` models seed 000's agent review: a poster names
    one verifier agent when posting, which adjudge records as that verifier's key fingerprint
    (64 lowercase hex) on the task's policy — or a panel of up to :data:`MAX_PANEL` (a quorum,
    :meth:`with_panel`). A PASS carrying a named key counts; nothing else a model says does.
    An empty policy trusts nothing.
    """

    authorities: frozenset[Authority] = DEFAULT_TRUSTED
    verifier_keys: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not isinstance(self.authorities, frozenset) or not isinstance(
            self.verifier_keys, frozenset
        ):
            raise CriteriaError(
                "A trust policy's authorities and verifier keys are frozensets.",
                code="TRUST_POLICY_INVALID",
            )
        for authority in self.authorities:
            if not isinstance(authority, Authority):
                raise CriteriaError(
                    f"{authority!r} is not an authority; use one of "
                    f"{', '.join(sorted(a.value for a in DEFAULT_TRUSTED))}.",
                    code="TRUST_POLICY_INVALID",
                )
            if authority not in DEFAULT_TRUSTED:
                raise CriteriaError(
                    f"A trust policy cannot list {authority.value}: only deterministic and "
                    "human can carry a set to PASS. Trust in a model extends to one named "
                    "verifier key for one task (with_verifier), never to an authority class.",
                    code="TRUST_POLICY_INVALID",
                )
        if len(self.verifier_keys) > MAX_PANEL:
            raise CriteriaError(
                f"A task names at most {MAX_PANEL} verifier agents; its policy holds at most "
                f"{MAX_PANEL} keys.",
                code="TRUST_POLICY_INVALID",
            )
        for key in self.verifier_keys:
            if not _KEY_FINGERPRINT.fullmatch(key):
                raise CriteriaError(
                    f"{key!r} is not a key fingerprint (64 lowercase hex characters).",
                    code="TRUST_POLICY_INVALID",
                )

    def trusts(self, authority: Authority, verifier_key: str | None = None) -> bool:
        """Whether a PASS decided by ``authority`` (signed by ``verifier_key``) may count.

        A membership test on the allow-list, so an authority nobody listed is untrusted.
        """
        if authority in self.authorities:
            return True
        return verifier_key is not None and verifier_key in self.verifier_keys

    def with_verifier(self, fingerprint: str) -> TrustPolicy:
        """This policy plus the one verifier agent a poster named (seed 000's agent review).

        Refused when a different verifier is already named: a task has one.
        """
        if self.verifier_keys and fingerprint not in self.verifier_keys:
            raise CriteriaError(
                "This policy already names a verifier agent; a task has exactly one.",
                code="TRUST_POLICY_INVALID",
            )
        return TrustPolicy(self.authorities, frozenset({fingerprint}))

    def with_panel(self, fingerprints: Iterable[str]) -> TrustPolicy:
        """This policy plus a panel of verifier keys a poster named together (agent review by
        a quorum, k of n): each key's PASS counts as one vote, and the market's proof admits a
        PASS only when k of them agree and no vote dissents. Refused on a policy that already
        names a verifier, or with more than :data:`MAX_PANEL` keys."""
        keys = frozenset(fingerprints)
        if self.verifier_keys and keys != self.verifier_keys:
            raise CriteriaError(
                "This policy already names its verifier agents.", code="TRUST_POLICY_INVALID"
            )
        return TrustPolicy(self.authorities, keys)

    def to_dict(self) -> dict[str, list[str]]:
        """The wire shape, sorted so that it signs to the same bytes every time."""
        return {
            "authorities": sorted(a.value for a in self.authorities),
            "verifierKeys": sorted(self.verifier_keys),
        }

    @classmethod
    def from_dict(cls, data: object) -> TrustPolicy:
        """Parse the wire shape; anything unusable is a ``TRUST_POLICY_INVALID`` refusal."""
        if not isinstance(data, dict):
            raise CriteriaError("A trust policy is an object.", code="TRUST_POLICY_INVALID")
        authorities = tuple(_strings(data.get("authorities"), "authorities"))
        keys = tuple(_strings(data.get("verifierKeys", []), "verifierKeys"))
        return _parsed_policy(authorities, keys)


@functools.lru_cache(maxsize=256)
def _parsed_policy(authorities: tuple[str, ...], keys: tuple[str, ...]) -> TrustPolicy:
    # Policies repeat across a log; a frozen policy is safe to share.
    try:
        parsed = frozenset(Authority(a) for a in authorities)
    except ValueError as exc:
        raise CriteriaError(str(exc), code="TRUST_POLICY_INVALID") from exc
    return TrustPolicy(parsed, frozenset(keys))


def _strings(value: object, name: str) -> Iterable[str]:
    # A loop, not all(...): every receipt a log replays parses its policy.
    if isinstance(value, list):
        for item in value:
            if not isinstance(item, str):
                break
        else:
            return value
    raise CriteriaError(f"{name} must be a list of strings.", code="TRUST_POLICY_INVALID")


DEFAULT_POLICY = TrustPolicy()
