"""A demo marketplace: a few accounts, money, and tasks in each mode at different stages."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from adjudge.app import App
from adjudge.errors import Error
from adjudge.receipts import SigningKey

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
    #: Each demo verifier's private key (PEM), made here as the verifier would make its own.
    verifier_keys: dict[str, str] = field(default_factory=dict)


def seed(app: App) -> Seeded:
    """Create the demo accounts and tasks; ``ACCOUNT_EXISTS`` if the database is not empty.

    The demo plays each verifier: it makes the verifier's key pair and registers the public
    half, as a verifier does; the service itself never holds a private key.
    """
    keys: dict[str, str] = {}
    verifier_keys: dict[str, str] = {}
    for account_id, roles, opt_in in ACCOUNTS:
        public = None
        if "verifier" in roles:
            pair = SigningKey.generate()
            verifier_keys[account_id] = pair.to_pem().decode("ascii")
            public = pair.public_key.to_base64()
        made = app.accounts.create(
            None, account_id, roles, opt_in=opt_in, verifier_public_key=public
        ).value
        keys[account_id] = made["api_key"]
    admin = app.accounts.authenticate(keys["admin"])
    app.accounts.deposit(admin, "pat", DEPOSIT)
    pat = app.accounts.authenticate(keys["pat"])
    ann = app.accounts.authenticate(keys["ann"])
    deadline = app.clock.now() + timedelta(days=7)
    tasks: list[tuple[str, str, str, str]] = []
    skipped: list[str] = []

    def post(mode: str, title: str, reward: int, **extra: Any) -> str:
        answer = app.tasks.post(
            pat,
            title=title,
            brief=extra.pop("brief", f"{title}. Reply in plain text."),
            reward=reward,
            deadline=deadline,
            mode=mode,
            criteria=extra.pop("criteria", {}),
            verifier=extra.pop("verifier", None),
            private=extra.pop("private", False),
        )
        return str(answer.value["id"])

    def deliver(task_id: str, result: str) -> None:
        app.tasks.accept(ann, task_id)
        app.tasks.submit(ann, task_id, result)

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
