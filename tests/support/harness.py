"""A running service over a fresh store with a fake clock, checker and issuer, and its accounts."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient

from adjudge.app import Account, App, Settings
from adjudge.gateway.sealed import SecretBox
from adjudge.kernel.oracle import Record
from adjudge.kernel.semantic import Quote
from adjudge.market.signed_verdicts import sign_verdict, verdict_payload
from adjudge.receipts import Issuer, SigningKey
from adjudge.service import create_app
from adjudge.store import Store
from support.fakes import FakeChecker, FakeClock, FakeIssuer

#: The accounts every harness starts with: id -> (roles, opted in as a verifier).
ACCOUNTS: dict[str, tuple[tuple[str, ...], bool]] = {
    "root": (("admin",), False),
    "pat": (("poster",), False),
    "ann": (("agent", "verifier"), False),
    "bob": (("agent",), False),
    "vera": (("verifier", "agent"), True),
    "vic": (("verifier",), False),
}
FUNDS = 100_000_000


@dataclass
class Harness:
    """The app, its clock, and each account's API key."""

    app: App
    client: TestClient
    clock: FakeClock
    keys: dict[str, str] = field(default_factory=dict)
    #: Each verifier's private key, as its account was given it.
    signers: dict[str, SigningKey] = field(default_factory=dict)

    def call(
        self, who: str | None, method: str, path: str, body: Any = None, **headers: str
    ) -> Any:
        """Call ``/api/v1`` + ``path`` as ``who``; returns the httpx response."""
        h = {k.replace("_", "-"): v for k, v in headers.items()}
        if who is not None:
            h["Authorization"] = f"Bearer {self.keys[who]}"
        return self.client.request(method, "/api/v1" + path, json=body, headers=h)

    def ok(self, who: str, method: str, path: str, body: Any = None, **headers: str) -> Any:
        """Like :meth:`call`, asserting a 2xx and returning the JSON body."""
        r = self.call(who, method, path, body, **headers)
        assert r.status_code < 300, r.text
        return r.json()

    def refused(self, who: str | None, method: str, path: str, body: Any = None) -> tuple[int, str]:
        """Call, assert the error shape (with the request id the response header names), and
        return (status, code)."""
        r = self.call(who, method, path, body)
        assert r.status_code >= 400, r.text
        payload = r.json()
        assert set(payload) == {"error"}
        assert set(payload["error"]) == {"code", "message", "request_id"}
        assert payload["error"]["request_id"] == r.headers["x-request-id"]
        return r.status_code, payload["error"]["code"]

    def signed(
        self,
        who: str,
        tid: str,
        passed: bool,
        reasons: list[str] | None = None,
        quotes: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """A verdict body for the task's latest submission, signed with ``who``'s key and
        grounded by a quote from the brief and one from the result (unless ``quotes`` says)."""
        task = self.ok(who, "GET", f"/tasks/{tid}")
        brief = task["brief"] or ""
        result = task["submissions"][-1]["result"]
        if quotes is None:
            quotes = [
                Quote.of("brief", brief, 0, min(len(brief), 20)).to_dict(),
                Quote.of("result", result, 0, min(len(result), 20)).to_dict(),
            ]
        payload = verdict_payload(
            task_id=tid,
            attempt=task["attempts"],
            result_digest=task["result_digest"],
            brief_digest=Record(brief.encode("utf-8"), "brief").digest,
            passed=passed,
            reasons=reasons or [],
            quotes=quotes,
            verifier_key=self.signers[who].keyid,
        )
        return {
            "passed": passed,
            "reasons": reasons or [],
            "quotes": quotes,
            **sign_verdict(self.signers[who], payload),
        }

    def verdict(self, who: str, tid: str, passed: bool, reasons: list[str] | None = None) -> Any:
        """Post ``who``'s signed verdict on the task's latest submission; returns the task."""
        return self.ok(who, "POST", f"/tasks/{tid}/verdict", self.signed(who, tid, passed, reasons))

    def post(self, mode: str = "manual", **fields: Any) -> str:
        """Post a task as pat (a 2 USDC reward, one day, min_length 10 for auto)."""
        body: dict[str, Any] = {
            "title": f"A {mode} task",
            "brief": "Write a summary.",
            "reward": "2000000",
            "deadline_hours": 24,
            "mode": mode,
        }
        if mode == "auto":
            body["criteria"] = {"min_length": 10}
        if mode == "agent":
            body["verifier"] = "vera"
        body.update(fields)
        return str(self.ok("pat", "POST", "/tasks", body)["id"])

    def ledger(self) -> dict[str, Any]:
        """The admin's ledger view, recounted; asserts both sums are zero and every balance
        is the sum of its lines."""
        view = self.ok("root", "GET", "/ledger?recount=true")
        assert view["sum_of_balances"] == "0" and view["sum_of_entries"] == "0"
        assert view["unmatched"] == [], view["unmatched"]
        return dict(view["balances"])

    def balance(self, account: str) -> int:
        """A ledger account's balance (0 if absent)."""
        return int(self.ledger().get(account, "0"))

    def advance(self, **kwargs: float) -> None:
        """Move the clock."""
        self.clock.advance(**kwargs)

    def account(self, name: str) -> Account:
        """The account ``name`` as the use cases see it."""
        return self.app.accounts.authenticate(self.keys[name])

    def later(self, days: float) -> None:
        """Move the clock by days."""
        self.clock.advance(days=days)

    @property
    def day(self) -> timedelta:
        """One day."""
        return timedelta(days=1)


def make_harness(
    store: Store,
    *,
    real_checker: bool = False,
    issuer: Issuer | None = None,
    secrets: SecretBox | None = None,
    settings: Settings | None = None,
) -> Harness:
    """A harness over ``store`` (already migrated) with every account funded.

    The checker is a fake unless ``real_checker`` asks for the auto check itself.
    """
    clock = FakeClock()
    checker = None if real_checker else FakeChecker()
    app = App(
        store,
        clock=clock,
        checker=checker,
        issuer=issuer or FakeIssuer(),
        secrets=secrets,
        settings=settings,
    )
    harness = Harness(app, TestClient(create_app(app)), clock)
    for name, (roles, opt_in) in ACCOUNTS.items():
        public = None
        if "verifier" in roles:  # a verifier makes its own key pair and registers the public key
            harness.signers[name] = SigningKey.generate()
            public = harness.signers[name].public_key.to_base64()
        made = app.accounts.create(None, name, roles, opt_in=opt_in, verifier_public_key=public)
        harness.keys[name] = made.value["api_key"]
    root = app.accounts.authenticate(harness.keys["root"])
    for name in ACCOUNTS:
        app.accounts.deposit(root, name, FUNDS)
    return harness
