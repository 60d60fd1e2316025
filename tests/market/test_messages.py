"""Refusals read as sentences: the state in words, with the article its sound takes."""

from __future__ import annotations

from adjudge.calls.quality import ProposalStatus, _a
from adjudge.market import Status
from adjudge.market.lifecycle import a_task


def test_every_state_is_named_in_words_with_its_article() -> None:
    """No snake_case, and "An" before a vowel sound, "A" otherwise, for every state."""
    for status in Status:
        phrase = a_task(status)
        assert "_" not in phrase and phrase.endswith(("task", "verification")), phrase
        first = phrase.split()[1]
        assert phrase.startswith("An " if first[0] in "aeiou" else "A "), phrase
    assert a_task(Status.ASSIGNED) == "An assigned task"
    assert a_task(Status.AWAITING_VERIFICATION) == "A task awaiting verification"


def test_proposal_states_take_their_article() -> None:
    """ "An enforceable proposal", "A pending proposal"."""
    assert _a(ProposalStatus.ENFORCEABLE) == "An enforceable"
    assert _a(ProposalStatus.PENDING) == "A pending"
