"""A demo marketplace: a few accounts, money, and tasks in each mode at different stages."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from adjudge.errors import Error
from adjudge.service.marketplace import Marketplace
from adjudge.store import StoredTask, Transaction

#: Demo accounts: id, roles, opted in as a verifier.
ACCOUNTS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("admin", ("admin",), False),
    ("pat", ("poster",), False),
    ("ann", ("agent",), False),
    ("bob", ("agent",), False),
    ("vera", ("verifier",), True),
)
#: 100 USDC for the poster, in minor units.
DEPOSIT = 100_000_000


@dataclass(frozen=True)
class Seeded:
    """What the demo created: API keys by account, task ids with a note, and what was skipped."""

    keys: dict[str, str]
    tasks: list[tuple[str, str, str, str]]  # id, mode, status, note
    skipped: list[str]
    #: Each demo verifier's private key (PEM), which signs its verdicts.
    verifier_keys: dict[str, str] = field(default_factory=dict)


def _id(_: Transaction, stored: StoredTask, __: Any) -> str:
    return stored.task.id


def seed(market: Marketplace) -> Seeded:
    """Create the demo accounts and tasks; ``ACCOUNT_EXISTS`` if the database is not empty."""
    keys: dict[str, str] = {}
    verifier_keys: dict[str, str] = {}
    for account_id, roles, opt_in in ACCOUNTS:
        _, keys[account_id], private = market.create_account_with_keys(
            account_id, roles, opt_in=opt_in
        )
        if private is not None:
            verifier_keys[account_id] = private
    market.deposit("pat", DEPOSIT)
    pat = market.authenticate(keys["pat"])
    ann = market.authenticate(keys["ann"])
    deadline = market.clock.now() + timedelta(days=7)
    tasks: list[tuple[str, str, str, str]] = []
    skipped: list[str] = []

    def post(mode: str, title: str, reward: int, **extra: Any) -> str:
        response = market.post_task(
            pat,
            title=title,
            brief=extra.pop("brief", f"{title}. Reply in plain text."),
            reward=reward,
            deadline=deadline,
            mode=mode,
            criteria=extra.pop("criteria", {}),
            verifier=extra.pop("verifier", None),
            private=extra.pop("private", False),
            idem=None,
            render=_id,
        )
        return str(response.body)

    def deliver(task_id: str, result: str) -> None:
        market.accept(ann, task_id, idem=None, render=_id)
        market.submit(ann, task_id, result=result, idem=None, render=_id)

    manual_open = post("manual", "Review a refactor plan and list every risk", 2_000_000)
    tasks.append((manual_open, "manual", "funded", "take it as bob, submit, review as pat"))
    manual_done = post("manual", "Summarise the incident report", 3_000_000)
    deliver(manual_done, "Summary: the cache expired early; three services retried at once.")
    tasks.append((manual_done, "manual", "submitted", "pat approves or rejects it"))
    agent_open = post("agent", "Translate the release notes", 1_500_000, verifier="vera")
    tasks.append((agent_open, "agent", "funded", "vera judges once an agent delivers"))
    agent_done = post("agent", "Write a changelog entry", 1_000_000, verifier="vera")
    deliver(agent_done, "Added: receipts for every verdict. Fixed: refunds carry no fee.")
    tasks.append((agent_done, "agent", "awaiting_verification", "vera posts a verdict"))
    criteria = {"min_length": 40, "pass_threshold": 60}
    try:
        auto_open = post("auto", "Explain escrow in two sentences", 500_000, criteria=criteria)
        tasks.append((auto_open, "auto", "funded", "take it, submit, finalize to run the check"))
        auto_done = post("auto", "Describe a hash chain", 500_000, criteria=criteria)
        deliver(
            auto_done,
            "A hash chain links each record to the digest of the one before it, so editing any "
            "record breaks every link after it.",
        )
        tasks.append((auto_done, "auto", "submitted", "ann finalizes to run the auto check"))
    except Error as exc:
        skipped.append(f"auto tasks: {exc.message}")
    return Seeded(keys, tasks, skipped, verifier_keys)
