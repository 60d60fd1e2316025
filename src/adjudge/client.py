"""A typed client of the adjudge HTTP API: how a marketplace, the CLI and a worker talk to it.

::

    from adjudge.client import Client, ApiError

    api = Client("http://127.0.0.1:8000", key="adj_…")
    task = api.post_task(title="Summarise", reward=2_000_000, mode="auto",
                         criteria={"min_length": 40}, deadline_hours=24)
    try:
        api.finalize(task["id"])
    except ApiError as refusal:
        print(refusal.code, refusal.message)   # e.g. NOT_TASK_AGENT

Every state change sends an ``Idempotency-Key`` (a fresh one unless you pass yours) and, after a
network failure or a ``503``, retries with the same key, so a retry never pays twice. A refusal
raises :class:`ApiError` with the service's stable ``code``; a service that cannot be reached or
answers something that is not the API's JSON raises :class:`ServiceUnavailable`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

import httpx

from adjudge.errors import Error

#: Network failures and 503s retried (with the same Idempotency-Key) before giving up.
RETRIES = 3


class ApiError(Error):
    """The service refused: its ``code``, its ``message``, the HTTP ``status``."""

    def __init__(
        self, code: str, message: str, *, status: int, retry_after: int | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.status = status
        self.retry_after = retry_after


class ServiceUnavailable(Error):
    """No usable answer: connection refused, a time-out, or a reply that is not the API's."""

    code = "SERVICE_UNAVAILABLE"


class Client:
    """The API at ``url`` (the service's base URL) as the account whose API key is ``key``."""

    def __init__(
        self,
        url: str,
        key: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(
            base_url=self.url + "/api/v1",
            headers=headers,
            timeout=timeout,
            transport=transport,
            follow_redirects=False,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- the one request path -------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        change: bool | None = None,
    ) -> Any:
        """Call ``/api/v1`` + ``path``; the JSON answer, or :class:`ApiError`.

        A state change (any method but GET, unless ``change`` says otherwise) carries an
        Idempotency-Key and is retried on network failures and 503s with the same key.
        """
        changes = method != "GET" if change is None else change
        headers = {}
        if changes:
            headers["Idempotency-Key"] = idempotency_key or uuid.uuid4().hex
        query = {k: v for k, v in (params or {}).items() if v is not None}
        last: Exception | None = None
        for attempt in range(RETRIES):
            try:
                response = self._http.request(
                    method, path, json=body, params=query, headers=headers
                )
            except httpx.TransportError as exc:
                last = exc
            else:
                if response.status_code != 503 or attempt == RETRIES - 1:
                    return _answer(response)
                last = None
            if attempt < RETRIES - 1:
                time.sleep(0.2 * 2**attempt)
        raise ServiceUnavailable(f"Cannot reach the service at {self.url}: {last}")

    # --- accounts -------------------------------------------------------------------------

    def me(self) -> dict[str, Any]:
        """The caller's account and balance."""
        return dict(self.request("GET", "/accounts/me"))

    def create_account(
        self,
        account_id: str,
        roles: list[str],
        *,
        verifier_opt_in: bool = False,
        verifier_public_key: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Create an account (admins); the answer carries its API key, shown once."""
        body = {
            "id": account_id,
            "roles": roles,
            "verifier_opt_in": verifier_opt_in,
            "verifier_public_key": verifier_public_key,
        }
        return dict(self.request("POST", "/accounts", body, idempotency_key=idempotency_key))

    def deposit(
        self, account_id: str, amount: int, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Credit money from outside (admins)."""
        return dict(
            self.request(
                "POST",
                f"/accounts/{account_id}/deposits",
                {"amount": str(amount)},
                idempotency_key=idempotency_key,
            )
        )

    def add_verifier_key(self, public_key: str) -> dict[str, Any]:
        """Register a verifier public key (it becomes the active one)."""
        return dict(self.request("POST", "/accounts/me/verifier-keys", {"public_key": public_key}))

    # --- tasks ----------------------------------------------------------------------------

    def tasks(
        self,
        *,
        status: str | None = None,
        mode: str | None = None,
        mine: bool = False,
        limit: int = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """One page of tasks (``next_cursor`` names the next)."""
        params = {"status": status, "mode": mode, "mine": mine or None, "limit": limit}
        return dict(self.request("GET", "/tasks", params={**params, "cursor": cursor}))

    def task(self, task_id: str) -> dict[str, Any]:
        """One task as the caller may see it."""
        return dict(self.request("GET", f"/tasks/{task_id}"))

    def post_task(self, **fields: Any) -> dict[str, Any]:
        """Post and fund a task (the fields of ``POST /tasks``; ``reward`` in minor units)."""
        key = fields.pop("idempotency_key", None)
        if "reward" in fields:
            fields["reward"] = str(fields["reward"])
        return dict(self.request("POST", "/tasks", fields, idempotency_key=key))

    def act(
        self,
        task_id: str,
        action: str,
        body: Any = None,
        *,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """A lifecycle step (``accept``, ``submissions``, ``finalize``, ``review``, ``verdict``,
        ``disputes``, ``reclaim``, ``collect``, ``cancel``, ``ruling``, ``release``); returns
        the task."""
        return dict(
            self.request(
                "POST", f"/tasks/{task_id}/{action}", body, idempotency_key=idempotency_key
            )
        )

    def submit(self, task_id: str, result: str) -> dict[str, Any]:
        """Deliver a result."""
        return self.act(task_id, "submissions", {"result": result})

    def finalize(self, task_id: str) -> dict[str, Any]:
        """Run the auto check on the latest submission."""
        return self.act(task_id, "finalize")

    def verdict(
        self,
        task_id: str,
        *,
        passed: bool,
        reasons: list[str],
        signature: str,
        public_key: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """A verifier's signed verdict."""
        body = {
            "passed": passed,
            "reasons": reasons,
            "signature": signature,
            "public_key": public_key,
        }
        return self.act(task_id, "verdict", body, idempotency_key=idempotency_key)

    def dry_run(self, task_id: str, result: str) -> dict[str, Any]:
        """Check a draft against the task's public rules (no attempt used)."""
        return dict(
            self.request("POST", f"/tasks/{task_id}/dry-run", {"result": result}, change=False)
        )

    # --- the review queue -----------------------------------------------------------------

    def claim_reviews(self, *, limit: int = 10, lease_seconds: int = 300) -> list[dict[str, Any]]:
        """Lease the submissions waiting for the calling verifier."""
        body = {"limit": limit, "lease_seconds": lease_seconds}
        return list(self.request("POST", "/reviews/claim", body, change=False)["jobs"])

    def review_failed(self, task_id: str, attempt: int, error: str) -> dict[str, Any]:
        """Report a failed judgment of a leased submission."""
        return dict(
            self.request(
                "POST", f"/reviews/{task_id}/{attempt}/failed", {"error": error}, change=False
            )
        )

    # --- receipts -------------------------------------------------------------------------

    def receipt(self, receipt_id: str) -> dict[str, Any]:
        """One receipt with its chain position."""
        return dict(self.request("GET", f"/receipts/{receipt_id}"))

    def envelope(self, receipt_id: str) -> dict[str, Any]:
        """A receipt's signed DSSE envelope."""
        return dict(self.request("GET", f"/receipts/{receipt_id}/envelope"))

    def receipts_head(self) -> dict[str, Any]:
        """The receipt log's length, head digest and signing key."""
        return dict(self.request("GET", "/receipts/head"))

    def export_receipts(self, *, after: int = 0, limit: int = 100) -> dict[str, Any]:
        """One page of the receipt log in chain order (admins)."""
        return dict(self.request("GET", "/receipts", params={"after": after, "limit": limit}))

    # --- webhooks ---------------------------------------------------------------------------

    def create_webhook(
        self,
        url: str,
        *,
        event_types: list[str] | None = None,
        description: str = "",
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Register an endpoint for the caller's events; the answer's ``secret`` is shown once."""
        body = {"url": url, "event_types": event_types, "description": description}
        return dict(
            self.request("POST", "/webhooks/endpoints", body, idempotency_key=idempotency_key)
        )

    def webhooks(self) -> list[dict[str, Any]]:
        """The caller's endpoints (never their secrets)."""
        return list(self.request("GET", "/webhooks/endpoints")["endpoints"])

    def delete_webhook(self, endpoint_id: str) -> dict[str, Any]:
        """Disable an endpoint for good."""
        return dict(self.request("DELETE", f"/webhooks/endpoints/{endpoint_id}"))

    def test_webhook(self, endpoint_id: str) -> dict[str, Any]:
        """Queue a ``webhook.test`` event for an endpoint; returns its delivery."""
        return dict(self.request("POST", f"/webhooks/endpoints/{endpoint_id}/test"))

    def deliveries(
        self,
        *,
        endpoint: str | None = None,
        status: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """One page of the caller's delivery log, newest first (``next_cursor`` continues)."""
        params = {"endpoint": endpoint, "status": status, "limit": limit, "cursor": cursor}
        return dict(self.request("GET", "/webhooks/deliveries", params=params))

    def delivery(self, delivery_id: str) -> dict[str, Any]:
        """One delivery with the event it carries."""
        return dict(self.request("GET", f"/webhooks/deliveries/{delivery_id}"))

    def replay(self, delivery_id: str, *, idempotency_key: str | None = None) -> dict[str, Any]:
        """Send a delivery again now (the same event and webhook-id, signed anew)."""
        return dict(
            self.request(
                "POST",
                f"/webhooks/deliveries/{delivery_id}/replay",
                idempotency_key=idempotency_key,
            )
        )


def _answer(response: httpx.Response) -> Any:
    try:
        payload = response.json()
    except ValueError:
        raise ServiceUnavailable(
            f"The service answered {response.status_code} with no JSON: {response.text[:200]!r}"
        ) from None
    if response.status_code < 400:
        return payload
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        raise ServiceUnavailable(f"The service answered {response.status_code}: {payload!r:.200}")
    retry = response.headers.get("Retry-After")
    raise ApiError(
        str(error.get("code", response.status_code)),
        str(error.get("message", "")),
        status=response.status_code,
        retry_after=int(retry) if retry and retry.isdigit() else None,
    )
