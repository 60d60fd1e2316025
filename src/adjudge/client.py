"""A typed client of the adjudge HTTP API: how a marketplace integrates from Python.

The CLI (``adjudge task …``, ``adjudge receipt export``) and the review worker use it too, so
what they do, a marketplace's own code can do the same way::

    from adjudge.client import Client, ApiError, Conflict

    with Client("http://127.0.0.1:8000", key="adj_…") as api:
        task = api.post_task(title="Summarise", reward=2_000_000, mode="auto",
                             criteria={"min_length": 40}, deadline_hours=24)
        try:
            api.finalize(task["id"])
        except Conflict as refusal:         # 409: not now, not in this state
            print(refusal.code, refusal.message)   # e.g. ILLEGAL_TRANSITION
        except ApiError as refusal:         # any other refusal, with its stable code
            print(refusal.status, refusal.code, refusal.request_id)

- **Answers** are the service's JSON, typed as :class:`typing.TypedDict` s (:class:`Task`,
  :class:`TaskPage`, :class:`Account`, :class:`Receipt`, …). Money is integer minor units, sent
  and received as decimal strings ("2000000" is 2 USDC).
- **Refusals** raise :class:`ApiError` with the service's stable ``code`` (the same codes the
  HTTP API documents), its ``message``, the HTTP ``status`` and the ``request_id`` the service
  logged it under. Each status has its subclass — :class:`BadRequest` (400),
  :class:`Unauthorized` (401), :class:`Forbidden` (403), :class:`NotFound` (404),
  :class:`Conflict` (409), :class:`PayloadTooLarge` (413), :class:`InvalidRequest` (422),
  :class:`TooManyRequests` (429, with ``retry_after``), :class:`ServerError` (5xx) — so a caller
  catches the family it can handle. Each is also of its code's kind in :mod:`adjudge.errors`
  (:class:`adjudge.errors.StateError` for an ``ILLEGAL_TRANSITION``, …), as
  :mod:`adjudge.error_codes` declares it (:func:`refusal_class`).
- **No usable answer** (connection refused, a time-out, a reply that is not the API's JSON)
  raises :class:`ServiceUnavailable` (an :class:`adjudge.errors.Unavailable`), whose message
  names the URL it tried.
- **Retries are safe.** Every state change sends an ``Idempotency-Key`` (a fresh one unless you
  pass yours) and, after a network failure or a ``503``, is retried with the same key: the
  service answers a retry with the stored answer, so a retry never pays twice. Pass your own key
  (``idempotency_key=``) to make a retry across process restarts safe as well.
"""

from __future__ import annotations

import functools
import secrets
import ssl
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, TypedDict, cast

import httpx

from adjudge import error_codes
from adjudge.errors import Error, Unavailable
from adjudge.market.seal import commit

#: Network failures and 503s retried (with the same Idempotency-Key) before giving up.
RETRIES = 3
#: How long a state change whose first request has not ended (``IDEMPOTENCY_IN_PROGRESS``: a
#: paid call still forwarded and judged, say) is sent again with its key, waiting as the
#: service says between: longer than the longest call (a provider's 15 s, judges' 20 s).
IN_PROGRESS_WAIT = 90.0

#: The task states and modes the API knows (``GET /tasks?status=``, ``?mode=``).
STATUSES = (
    "funded",
    "assigned",
    "submitted",
    "awaiting_verification",
    "failed",
    "disputed",
    "escalated",
    "completed",
    "cancelled",
)
MODES = ("auto", "agent", "manual")


# --- the answers ----------------------------------------------------------------------------


class VerifierKey(TypedDict):
    """A verifier key on record."""

    fingerprint: str
    public_key: str
    added_at: str
    revoked_at: str | None


class Account(TypedDict, total=False):
    """An account (``GET /accounts/me`` adds ``balance`` and, for a verifier, its keys)."""

    id: str
    roles: list[str]
    verifier_opt_in: bool
    verifier_key: str | None
    reputation: int
    disputes: int
    balance: str
    held: str
    verifier_keys: list[VerifierKey]


class NewAccount(TypedDict):
    """A created account and its API key, shown once."""

    account: Account
    api_key: str


class BreakdownItem(TypedDict):
    """One scored item of an auto check."""

    name: str
    score: float
    weight: float
    reason: str


class VerificationResult(TypedDict, total=False):
    """Spec 000's ``verificationResult`` (and, for a verifier, its signature)."""

    passed: bool
    score: int
    reasons: list[str]
    breakdown: list[BreakdownItem]
    errors: dict[str, Any]


class Verdict(TypedDict, total=False):
    """One verdict on a round (on a private task, others see only ``passed`` and ``score``)."""

    attempt: int
    kind: str
    passed: bool
    score: int | None
    reasons: list[str]
    authority: str
    judge: str
    at: str
    receipt_id: str | None
    verification_result: VerificationResult | None


class Submission(TypedDict):
    """A delivered result, with the digest recorded when it was submitted."""

    attempt: int
    digest: str
    submitted_at: str
    result: str


class Dispute(TypedDict):
    """A dispute as filed."""

    attempt: int
    by: str
    reason: str
    at: str


class Lapse(TypedDict):
    """A take that lapsed: the agent that held the task, when it took it, and when the task's
    take window ended with nothing submitted."""

    agent: str
    taken_at: str
    at: str


class TaskSummary(TypedDict):
    """What a listing shows of a task: ``take_window_hours`` is the poster's take window (None:
    a take lasts until the deadline) and ``take_lapses_at`` when the current take lapses unless
    the agent submits (None: no take that can lapse)."""

    id: str
    title: str
    mode: str
    status: str
    reward: str
    poster: str
    agent: str | None
    verifier: str | None
    private: bool
    posted_at: str
    deadline: str
    attempts: int
    max_attempts: int
    ending: str | None
    take_window_hours: int | None
    take_lapses_at: str | None
    sealed: bool


class Seal(TypedDict):
    """A sealed task's seal: the commitment made at posting, the fields it seals, whether and
    when it is revealed, why it broke, and the reveal once the caller may read it."""

    commitment: str
    fields: list[str]
    revealed: bool
    reveal_due_at: str | None
    broken: str | None
    reveal: dict[str, Any] | None


class PanelVerifier(TypedDict):
    """One verifier of a task's panel: its account, its key, and its vote on the latest
    submission (``PASS``, ``FAIL``, ``UNKNOWN`` — it decided nothing — or None)."""

    verifier: str
    key: str | None
    vote: str | None


class Panel(TypedDict):
    """A task's panel of verifiers: how many must agree (k) and each verifier (n)."""

    quorum: int
    verifiers: list[PanelVerifier]


class Task(TaskSummary, total=False):
    """A task as the caller may see it: its parties see submissions, disputes, the ledger and
    the receipt ids; others see the brief and verdicts (on a private task, less)."""

    accepted_at: str | None
    failed_at: str | None
    escalated_at: str | None
    disputed_by: str | None
    routed: bool
    closed_at: str | None
    brief: str | None
    criteria: dict[str, Any] | None
    verdicts: list[Verdict]
    verification_result: Verdict | None
    result_digest: str | None
    submissions: list[Submission]
    disputes: list[Dispute]
    ledger: list[dict[str, Any]]
    receipts: list[str]
    released: list[str]
    lapses: list[Lapse]
    seal: Seal | None
    panel: Panel


class TaskPage(TypedDict):
    """One page of tasks, newest first; ``next_cursor`` fetches the next (None at the end)."""

    tasks: list[TaskSummary]
    next_cursor: str | None


class DryRun(TypedDict):
    """A draft checked against the task's public rules."""

    dry_run: bool
    passed: bool
    score: int
    reasons: list[str]
    detail: dict[str, Any]
    rules_not_run: list[str]
    note: str


class Receipt(TypedDict, total=False):
    """A receipt on the log. ``lane`` and ``sequence`` are the signed statement's own (the
    first receipt of a lane is 0); ``position`` its place in the order the log was written (the
    export's ``after``); ``digest`` is the receipt id a verifier recomputes (``sha256:`` of the
    statement); ``receipt`` holds the signed ``envelope``. ``GET /receipts/{id}`` adds the decoded
    ``statement`` and ``as_of`` (the verdict in force now)."""

    id: str
    lane: int
    sequence: int
    position: int
    task_id: str | None
    digest: str
    previous: str | None
    at: str
    receipt: dict[str, Any]
    statement: dict[str, Any] | None
    as_of: dict[str, Any] | None


class ReceiptPage(TypedDict):
    """One page of the log in the order it was written; ``next_after`` continues it (None at
    the end)."""

    receipts: list[Receipt]
    next_after: int | None


class LaneHead(TypedDict):
    """One lane of the receipt log: how many receipts, its last one's sequence and id."""

    lane: int
    count: int
    sequence: int | None
    digest: str | None


class LogHead(TypedDict):
    """The receipt log: how many receipts; when one lane holds them all, the last one's
    sequence and id; each lane's head; the signing key."""

    count: int
    sequence: int | None
    digest: str | None
    lanes: list[LaneHead]
    key: str | None


# --- the refusals ---------------------------------------------------------------------------


class ApiError(Error):
    """The service refused: its ``code``, its ``message``, the HTTP ``status`` and the
    ``request_id`` the service logged the request under (None if it sent none)."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int,
        retry_after: int | None = None,
        request_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> None:
        super().__init__(message, code=code)
        self.status = status
        self.retry_after = retry_after
        self.request_id = request_id
        #: The key a state change was sent with (None for a read): sent again with it, the
        #: request is answered as it was, never done twice.
        self.idempotency_key = idempotency_key


class BadRequest(ApiError):
    """400: the request cannot be done as sent (bad criteria, a bad amount, …)."""


class Unauthorized(ApiError):
    """401: no API key, or one the service does not know."""


class Forbidden(ApiError):
    """403: this account may not do this (not the task's agent, not an admin, …)."""


class NotFound(ApiError):
    """404: no such task, receipt, account or route."""


class Conflict(ApiError):
    """409: not now, not in this state (an illegal transition, a deadline, a reused key)."""


class PayloadTooLarge(ApiError):
    """413: the body is over the service's size limit."""


class InvalidRequest(ApiError):
    """422: the body or query does not fit the operation's schema."""


class TooManyRequests(ApiError):
    """429: a bounded action is used up for now; ``retry_after`` says in how many seconds."""


class ServerError(ApiError):
    """5xx: the service failed (nothing was written)."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: InvalidRequest,
    429: TooManyRequests,
}


class ServiceUnavailable(Unavailable):
    """No usable answer: connection refused, a time-out, or a reply that is not the API's. For
    a state change, ``idempotency_key`` is the key it was sent with: it may have been done, and
    sent again with that key it is answered as it was, never done twice."""

    code = "SERVICE_UNAVAILABLE"

    def __init__(self, message: str, *, idempotency_key: str | None = None) -> None:
        super().__init__(message, code=self.code)
        self.idempotency_key = idempotency_key


def seal_criteria(
    criteria: Mapping[str, Any], salt: str | None = None
) -> tuple[str, dict[str, Any]]:
    """A commitment to ``criteria`` (the fields to seal, ``{"expected_answer": ...}``) and the
    reveal to keep until verification, under ``salt`` (by default 32 random bytes, base64url:
    without a salt no one could guess, a short answer would be found from its commitment).
    Post with ``seal=commitment``; reveal with :meth:`Client.reveal`."""
    salt = salt or secrets.token_urlsafe(32)
    return commit(criteria, salt), {"criteria": dict(criteria), "salt": salt}


def refusal_class(status: int, code: str) -> type[ApiError]:
    """The class a refusal is raised as: its status's (:class:`Conflict` for a 409, …) and, for
    a code :mod:`adjudge.error_codes` declares, its kind's too, so ``except StateError`` catches
    a remote ``ILLEGAL_TRANSITION`` as it catches a local one. A code this client does not know
    (a newer service's) gets its status's class alone."""
    by_status = _BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    kind = error_codes.kind(code)
    return by_status if kind is None else _of_kind(by_status, kind)


#: One class per status and kind, made on first use.
_OF_KIND: dict[tuple[type[ApiError], type[Error]], type[ApiError]] = {}


def _of_kind(by_status: type[ApiError], kind: type[Error]) -> type[ApiError]:
    made = _OF_KIND.get((by_status, kind))
    if made is None:
        made = cast(
            "type[ApiError]", type(by_status.__name__, (by_status, kind), {"__module__": __name__})
        )
        made.__qualname__ = by_status.__qualname__
        _OF_KIND[by_status, kind] = made
    return made


# --- the client -----------------------------------------------------------------------------


@functools.cache
def _tls() -> ssl.SSLContext:
    """The TLS context httpx would make for a client (the CA roots it would read), made once a
    process and shared: reading them costs tens of milliseconds, and a client speaks for one
    key, so a program acting for many accounts makes a client for each."""
    return httpx.create_ssl_context()


class Client:
    """The API at ``url`` (the service's base URL, without ``/api/v1``) as the account whose
    API key is ``key``. Close it (or use it as a context manager) to free its connections."""

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
            verify=_tls(),
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
        Idempotency-Key and is retried on network failures and 503s with the same key; a read
        is retried the same way. ``params`` whose value is None are left out.
        """
        changes = method != "GET" if change is None else change
        headers = {}
        key = None
        if changes:
            key = headers["Idempotency-Key"] = idempotency_key or uuid.uuid4().hex
        query = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        last: Exception | None = None
        attempt, waiting_until = 0, time.monotonic() + IN_PROGRESS_WAIT
        while True:
            try:
                response = self._http.request(
                    method, path, json=body, params=query, headers=headers
                )
            except httpx.TransportError as exc:
                last = exc
            else:
                running = key is not None and _in_progress(response)
                if running and time.monotonic() < waiting_until:
                    # The first request with this key is still being done: asking again with
                    # the same key is answered as it ends, where a new key would do it twice.
                    time.sleep(_pause(response))
                    continue
                if running or response.status_code != 503 or attempt == RETRIES - 1:
                    return _answer(response, key)
                last = None
            attempt += 1
            if attempt == RETRIES:
                break
            time.sleep(0.2 * 2 ** (attempt - 1))
        raise ServiceUnavailable(
            f"Cannot reach the service at {self.url}: {last}"
            + (_resend(key) if key is not None else ""),
            idempotency_key=key,
        )

    # --- accounts -------------------------------------------------------------------------

    def me(self) -> Account:
        """The caller's account, its balance and, for a verifier, its keys."""
        return cast(Account, self.request("GET", "/accounts/me"))

    def create_account(
        self,
        account_id: str,
        roles: list[str],
        *,
        verifier_opt_in: bool = False,
        verifier_public_key: str | None = None,
        idempotency_key: str | None = None,
    ) -> NewAccount:
        """Create an account (admins); the answer carries its API key, shown once."""
        body = {
            "id": account_id,
            "roles": roles,
            "verifier_opt_in": verifier_opt_in,
            "verifier_public_key": verifier_public_key,
        }
        return cast(
            NewAccount, self.request("POST", "/accounts", body, idempotency_key=idempotency_key)
        )

    def deposit(
        self, account_id: str, amount: int, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Credit ``amount`` minor units from outside to an account's wallet (admins)."""
        return dict(
            self.request(
                "POST",
                f"/accounts/{account_id}/deposits",
                {"amount": str(amount)},
                idempotency_key=idempotency_key,
            )
        )

    def set_opt_in(self, opt_in: bool) -> Account:
        """A verifier turns "take verification jobs" on or off."""
        return cast(Account, self.request("PATCH", "/accounts/me", {"verifier_opt_in": opt_in}))

    def add_verifier_key(self, public_key: str) -> dict[str, Any]:
        """Register a verifier public key (standard base64 of the raw 32 bytes); it becomes
        the active key (rotation)."""
        return dict(self.request("POST", "/accounts/me/verifier-keys", {"public_key": public_key}))

    def revoke_verifier_key(self, fingerprint: str) -> dict[str, Any]:
        """Revoke one of the caller's verifier keys: nothing signed with it counts from now."""
        return dict(self.request("POST", f"/accounts/me/verifier-keys/{fingerprint}/revoke"))

    def create_api_key(
        self,
        label: str,
        *,
        max_per_call_minor: int | None = None,
        max_per_day_minor: int | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Make an extra API key with optional spending limits (with the account's own key);
        the answer's ``api_key`` is shown this once."""
        body = {
            "label": label,
            "max_per_call_minor": max_per_call_minor,
            "max_per_day_minor": max_per_day_minor,
        }
        return dict(
            self.request("POST", "/accounts/me/api-keys", body, idempotency_key=idempotency_key)
        )

    def api_keys(self) -> list[dict[str, Any]]:
        """The account's live extra keys, their limits and what each spent today."""
        return list(self.request("GET", "/accounts/me/api-keys")["keys"])

    def revoked_api_keys(self, *, limit: int = 50, cursor: str | None = None) -> dict[str, Any]:
        """One page of the account's revoked keys, newest revoked first (``next_cursor``)."""
        params = {"revoked": "true", "limit": limit, "cursor": cursor}
        return dict(self.request("GET", "/accounts/me/api-keys", params=params))

    def limit_api_key(
        self,
        key_id: str,
        *,
        max_per_call_minor: int | None,
        max_per_day_minor: int | None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Replace an extra key's limits (None: no limit)."""
        body = {"max_per_call_minor": max_per_call_minor, "max_per_day_minor": max_per_day_minor}
        return dict(
            self.request(
                "PATCH", f"/accounts/me/api-keys/{key_id}", body, idempotency_key=idempotency_key
            )
        )

    def revoke_api_key(self, key_id: str, *, idempotency_key: str | None = None) -> dict[str, Any]:
        """End an extra key."""
        return dict(
            self.request(
                "POST", f"/accounts/me/api-keys/{key_id}/revoke", idempotency_key=idempotency_key
            )
        )

    def agent(self, account_id: str) -> dict[str, Any]:
        """An agent's public record: reputation (0-100) and dispute count."""
        return dict(self.request("GET", f"/agents/{account_id}"))

    def verifiers(self) -> list[Account]:
        """Every verifier that takes verification jobs (the ones agent mode may name), by id,
        fetched a page at a time."""
        return list(self.iter_verifiers())

    def verifiers_page(self, *, limit: int = 50, cursor: str | None = None) -> dict[str, Any]:
        """One page of the verifiers by id (``next_cursor`` continues)."""
        return dict(self.request("GET", "/verifiers", params={"limit": limit, "cursor": cursor}))

    def iter_verifiers(self, *, page_size: int = 100) -> Iterator[Account]:
        """Every verifier that takes verification jobs, page after page."""
        cursor: str | None = None
        while True:
            page = self.verifiers_page(limit=page_size, cursor=cursor)
            yield from cast(list[Account], page["verifiers"])
            cursor = page["next_cursor"]
            if cursor is None:
                return

    # --- tasks ----------------------------------------------------------------------------

    def tasks(
        self,
        *,
        status: str | None = None,
        mode: str | None = None,
        mine: bool = False,
        limit: int = 50,
        cursor: str | None = None,
    ) -> TaskPage:
        """One page of tasks, newest first (``next_cursor`` names the next page; a page
        filtered by a mode, or a status within your own, may be short, or empty, and not the
        last: read on until it is None, as :meth:`iter_tasks` does).

        An unknown ``status`` or ``mode`` is refused (:class:`InvalidRequest`), never an empty
        page."""
        params = {"status": status, "mode": mode, "mine": mine or None, "limit": limit}
        return cast(TaskPage, self.request("GET", "/tasks", params={**params, "cursor": cursor}))

    def iter_tasks(
        self,
        *,
        status: str | None = None,
        mode: str | None = None,
        mine: bool = False,
        page_size: int = 100,
    ) -> Iterator[TaskSummary]:
        """Every task matching the filters, newest first, fetched a page at a time."""
        cursor: str | None = None
        while True:
            page = self.tasks(status=status, mode=mode, mine=mine, limit=page_size, cursor=cursor)
            yield from page["tasks"]
            cursor = page["next_cursor"]
            if not cursor:
                return

    def task(self, task_id: str) -> Task:
        """One task as the caller may see it."""
        return cast(Task, self.request("GET", f"/tasks/{task_id}"))

    def post_task(
        self,
        *,
        title: str,
        reward: int | str,
        mode: Literal["auto", "agent", "manual"] | str = "manual",
        brief: str = "",
        criteria: Mapping[str, Any] | None = None,
        deadline_hours: float | None = None,
        deadline: str | None = None,
        verifier: str | None = None,
        private: bool = False,
        lenient_criteria: bool = False,
        take_window_hours: int | None = None,
        seal: str | None = None,
        verifiers: Sequence[str] = (),
        quorum: int | None = None,
        idempotency_key: str | None = None,
    ) -> Task:
        """Post a task and fund its escrow from the caller's wallet.

        ``verifiers`` (agent mode) names a panel instead of one ``verifier``: 2 to 9 verifiers,
        each voting with its own signed verdict, of which ``quorum`` must agree (k of n; a
        majority by default); the task's ``panel`` shows each one's vote.

        ``reward`` is in minor units (2_000_000 is 2 USDC). Give ``deadline_hours`` (1 to 2160)
        or an ISO 8601 ``deadline``. Criteria with a field the auto check does not know are
        refused (``CRITERIA_UNKNOWN_FIELD``) unless ``lenient_criteria``. ``take_window_hours``
        (whole hours, shorter than the time to the deadline) lets an agent hold the task that
        long without submitting; then its take lapses and the task is open again. ``seal``
        (auto tasks) is a commitment to sealed criteria (:func:`seal_criteria` makes one and
        the reveal to keep); :meth:`reveal` opens it when a submission is to be judged."""
        body: dict[str, Any] = {
            "title": title,
            "brief": brief,
            "reward": str(reward),
            "mode": mode,
            "criteria": dict(criteria or {}),
            "private": private,
        }
        if deadline_hours is not None:
            body["deadline_hours"] = deadline_hours
        if deadline is not None:
            body["deadline"] = deadline
        if verifier is not None:
            body["verifier"] = verifier
        if lenient_criteria:
            body["lenient_criteria"] = True
        if take_window_hours is not None:
            body["take_window_hours"] = take_window_hours
        if seal is not None:
            body["seal"] = seal
        if verifiers:
            body["verifiers"] = list(verifiers)
        if quorum is not None:
            body["quorum"] = quorum
        return cast(Task, self.request("POST", "/tasks", body, idempotency_key=idempotency_key))

    def act(
        self,
        task_id: str,
        action: str,
        body: Any = None,
        *,
        idempotency_key: str | None = None,
    ) -> Task:
        """A lifecycle step (``accept``, ``submissions``, ``finalize``, ``review``, ``verdict``,
        ``disputes``, ``reclaim``, ``collect``, ``cancel``, ``ruling``, ``release``); returns
        the task."""
        return cast(
            Task,
            self.request(
                "POST", f"/tasks/{task_id}/{action}", body, idempotency_key=idempotency_key
            ),
        )

    def accept(self, task_id: str, *, idempotency_key: str | None = None) -> Task:
        """Take a funded task (agents)."""
        return self.act(task_id, "accept", idempotency_key=idempotency_key)

    def release(self, task_id: str, *, idempotency_key: str | None = None) -> Task:
        """Take back a task whose agent delivered nothing within 24 hours (posters)."""
        return self.act(task_id, "release", idempotency_key=idempotency_key)

    def submit(self, task_id: str, result: str, *, idempotency_key: str | None = None) -> Task:
        """Deliver a result (one of 3 submissions, before the deadline)."""
        return self.act(task_id, "submissions", {"result": result}, idempotency_key=idempotency_key)

    def finalize(self, task_id: str, *, idempotency_key: str | None = None) -> Task:
        """Run the auto check on the latest submission (auto mode, the agent)."""
        return self.act(task_id, "finalize", idempotency_key=idempotency_key)

    def reveal(
        self, task_id: str, reveal: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> Task:
        """Reveal a sealed task's criteria (the poster): ``reveal`` is the document the seal
        was made from, ``{"criteria": {...}, "salt": "..."}``. A reveal that does not match
        raises ``SEAL_MISMATCH``, and the task is escalated."""
        body = {"criteria": dict(reveal["criteria"]), "salt": reveal["salt"]}
        return self.act(task_id, "reveal", body, idempotency_key=idempotency_key)

    def review(
        self,
        task_id: str,
        *,
        passed: bool,
        reasons: list[str] | None = None,
        attempt: int | None = None,
        result_digest: str | None = None,
        idempotency_key: str | None = None,
    ) -> Task:
        """Approve or reject a submitted result (manual mode, the poster; up to 20 reasons).
        ``attempt`` and ``result_digest`` name the submission read (from the task as fetched):
        if the agent has submitted again since, the service refuses (``SUBMISSION_CHANGED``)
        instead of judging work nobody read."""
        body: dict[str, Any] = {"passed": passed, "reasons": reasons or []}
        if attempt is not None:
            body["attempt"] = attempt
        if result_digest is not None:
            body["result_digest"] = result_digest
        return self.act(task_id, "review", body, idempotency_key=idempotency_key)

    def verdict(
        self,
        task_id: str,
        *,
        passed: bool,
        reasons: list[str],
        signature: str,
        public_key: str | None = None,
        quotes: list[dict[str, Any]] | None = None,
        idempotency_key: str | None = None,
    ) -> Task:
        """A verifier's signed verdict with the quotes that ground it (agent mode; see
        ``adjudge.market.signed_verdicts`` for the payload to sign)."""
        body = {
            "passed": passed,
            "reasons": reasons,
            "quotes": quotes or [],
            "signature": signature,
            "public_key": public_key,
        }
        return self.act(task_id, "verdict", body, idempotency_key=idempotency_key)

    def dispute(
        self, task_id: str, reason: str = "", *, idempotency_key: str | None = None
    ) -> Task:
        """Ask an admin to rule (the poster or the agent), with the reason kept on the task."""
        return self.act(task_id, "disputes", {"reason": reason}, idempotency_key=idempotency_key)

    def reclaim(self, task_id: str, *, idempotency_key: str | None = None) -> Task:
        """After the deadline: a refund, or an escalation of delivered work (posters)."""
        return self.act(task_id, "reclaim", idempotency_key=idempotency_key)

    def collect(self, task_id: str, *, idempotency_key: str | None = None) -> Task:
        """Collect an escalated reward 14 days after escalation (agents)."""
        return self.act(task_id, "collect", idempotency_key=idempotency_key)

    def cancel(self, task_id: str, *, idempotency_key: str | None = None) -> Task:
        """Withdraw a task nobody holds; the full reward comes back (posters)."""
        return self.act(task_id, "cancel", idempotency_key=idempotency_key)

    def rule(
        self,
        task_id: str,
        *,
        pay_agent: bool,
        note: str = "",
        idempotency_key: str | None = None,
    ) -> Task:
        """Rule on a disputed or escalated task (admins)."""
        body = {"pay_agent": pay_agent, "note": note}
        return self.act(task_id, "ruling", body, idempotency_key=idempotency_key)

    def dry_run(self, task_id: str, result: str) -> DryRun:
        """Check a draft against the task's public rules (no attempt used; 20 an hour)."""
        return cast(
            DryRun,
            self.request("POST", f"/tasks/{task_id}/dry-run", {"result": result}, change=False),
        )

    def lint_criteria(self, criteria: dict[str, Any], *, brief: str = "") -> dict[str, Any]:
        """Advice on criteria before posting: ``findings`` (stable codes) and the gaming
        ``margin`` (the shortest cheap result the auto check passes, or None). Stores nothing."""
        body = {"criteria": criteria, "brief": brief}
        return dict(self.request("POST", "/criteria/lint", body, change=False))

    # --- the review queue -----------------------------------------------------------------

    def claim_reviews(
        self, *, limit: int = 10, lease_seconds: int = 300, idempotency_key: str | None = None
    ) -> list[dict[str, Any]]:
        """Lease the submissions waiting for the calling verifier: each job with what judging
        it needs, its ``lease_token`` (which a failure report names) and ``leased_until``. Sent
        with an Idempotency-Key and sent again with it when an answer is lost: the resend is
        answered with the same leases still in force and leases nothing more: a lease that ran
        out (or a report ended) before the resend is no job of its answer, which may then hold
        none; claim anew with a new key (None: the client makes one) for what waits."""
        body = {"limit": limit, "lease_seconds": lease_seconds}
        answer = self.request("POST", "/reviews/claim", body, idempotency_key=idempotency_key)
        return list(answer["jobs"])

    def review_failed(
        self,
        task_id: str,
        attempt: int,
        error: str,
        *,
        lease_token: str,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Report a failed judgment of a leased submission, naming the lease (the job's
        ``lease_token``): refused (``LEASE_NOT_HELD``) once another claim took the submission.
        With an Idempotency-Key, so a report sent again after its answer was lost counts once."""
        body = {"error": error, "lease_token": lease_token}
        path = f"/reviews/{task_id}/{attempt}/failed"
        return dict(self.request("POST", path, body, idempotency_key=idempotency_key))

    # --- receipts -------------------------------------------------------------------------

    def receipt(self, receipt_id: str) -> Receipt:
        """One receipt with its chain position, its decoded statement and its verdict now."""
        return cast(Receipt, self.request("GET", f"/receipts/{receipt_id}"))

    def envelope(self, receipt_id: str) -> dict[str, Any]:
        """A receipt's signed DSSE envelope: save it and check it with
        ``adjudge receipt verify FILE --key FINGERPRINT``."""
        return dict(self.request("GET", f"/receipts/{receipt_id}/envelope"))

    def task_receipts(self, task_id: str) -> list[Receipt]:
        """A task's receipts in chain order."""
        return cast(list[Receipt], self.request("GET", f"/tasks/{task_id}/receipts")["receipts"])

    def task_bundle(self, task_id: str, *, attempt: int | None = None) -> dict[str, Any]:
        """The parts of a task's replay bundle (its parties' and admins'): zip them with
        :func:`adjudge.replay.from_answer` and re-run them offline with
        :func:`adjudge.replay.replay`."""
        return dict(self.request("GET", f"/tasks/{task_id}/bundle", params={"attempt": attempt}))

    def call_bundle(self, call_id: str) -> dict[str, Any]:
        """The parts of a paid call's replay bundle (its caller's, its provider's, admins')."""
        return dict(self.request("GET", f"/calls/{call_id}/bundle"))

    def receipts_head(self) -> LogHead:
        """The receipt log's length, its last receipt's sequence and id, and the signing key."""
        return cast(LogHead, self.request("GET", "/receipts/head"))

    def checkpoint_receipts(self) -> dict[str, Any]:
        """Issue a checkpoint of the receipt log now (admins): the receipt, and the ``heads``
        of every lane it names."""
        return dict(self.request("POST", "/receipts/checkpoint"))

    def export_receipts(
        self, *, after: int | None = None, limit: int = 100, through: str | None = None
    ) -> ReceiptPage:
        """One page of the receipt log in the order it was written (admins): the receipts whose
        position is above ``after`` (from the first when None), cut at checkpoint ``through``
        when given."""
        params: dict[str, Any] = {"after": after, "limit": limit}
        if through is not None:
            params["through"] = through
        return cast(ReceiptPage, self.request("GET", "/receipts", params=params))

    def iter_receipts(
        self, *, after: int | None = None, page_size: int = 500, through: str | None = None
    ) -> Iterator[Receipt]:
        """The whole receipt log from ``after`` on (cut at checkpoint ``through`` when given),
        in the order it was written, a page at a time (admins)."""
        while True:
            page = self.export_receipts(after=after, limit=page_size, through=through)
            yield from page["receipts"]
            after = page["next_after"]
            if after is None:
                return

    def ledger(
        self, *, recount: bool = False, limit: int | None = None, cursor: str | None = None
    ) -> dict[str, Any]:
        """A page of balances by account name (``next_cursor`` fetches the next) and all
        deposits (admins); ``recount`` adds the audit, which reads every balance row and every
        ledger line (``sum_of_balances``, ``sum_of_entries``, ``unmatched``)."""
        params = {"recount": recount or None, "limit": limit, "cursor": cursor}
        return dict(self.request("GET", "/ledger", params=params))

    def balances(self, *, page_size: int = 500) -> dict[str, str]:
        """Every balance, by account name, a page at a time (admins)."""
        found: dict[str, str] = {}
        cursor = None
        while True:
            page = self.ledger(limit=page_size, cursor=cursor)
            found |= page["balances"]
            cursor = page["next_cursor"]
            if cursor is None:
                return found

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
        """The caller's enabled endpoints (never their secrets)."""
        return list(self.request("GET", "/webhooks/endpoints")["endpoints"])

    def disabled_webhooks(self, *, limit: int = 50, cursor: str | None = None) -> dict[str, Any]:
        """One page of the caller's deleted endpoints, newest first (``next_cursor``)."""
        params = {"disabled": "true", "limit": limit, "cursor": cursor}
        return dict(self.request("GET", "/webhooks/endpoints", params=params))

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
        """One page of the caller's delivery log, newest first (``next_cursor`` continues; a
        page of an endpoint's deliveries of one status may be short, or empty, and not the
        last: read on until it is None)."""
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

    # --- tools and paid calls through the gateway -------------------------------------------

    def tools(
        self, *, query: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> dict[str, Any]:
        """One page of callable tools by name (``next_cursor`` continues); ``query`` searches
        names and descriptions."""
        params = {"query": query, "limit": limit, "cursor": cursor}
        return dict(self.request("GET", "/tools", params=params))

    def iter_tools(self, *, query: str | None = None, page_size: int = 100) -> Iterator[Any]:
        """Every callable tool, page after page."""
        cursor: str | None = None
        while True:
            page = self.tools(query=query, limit=page_size, cursor=cursor)
            yield from page["tools"]
            cursor = page["next_cursor"]
            if cursor is None:
                return

    def tool(self, name: str) -> dict[str, Any]:
        """One callable tool: its MCP definition, provider, price and policy."""
        return dict(self.request("GET", f"/tools/{name}"))

    def register_tool(
        self, document: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """A provider registers a callable tool document (endpoint, input schema, contract,
        price, policy; see the gateway docs)."""
        return dict(
            self.request(
                "POST", "/tools/callable", {"tool": document}, idempotency_key=idempotency_key
            )
        )

    def import_openapi(
        self,
        document: Mapping[str, Any],
        *,
        price: Mapping[str, Any],
        operation: str | None = None,
        method: str | None = None,
        path: str | None = None,
        base_url: str | None = None,
        name: str | None = None,
        policy: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """A provider makes a tool of one operation of an OpenAPI 3.0/3.1 document (named by
        ``operation`` id, or by ``method`` and ``path``)."""
        body = {
            "openapi": document,
            "price": price,
            "operation": operation,
            "method": method,
            "path": path,
            "base_url": base_url,
            "name": name,
            "policy": policy,
        }
        return dict(
            self.request("POST", "/tools/import/openapi", body, idempotency_key=idempotency_key)
        )

    def import_mcp(
        self,
        definition: Mapping[str, Any],
        *,
        base_url: str,
        price: Mapping[str, Any],
        method: str = "POST",
        path: str = "",
        policy: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """A provider makes a tool of an MCP tool definition and the HTTP endpoint serving it."""
        body = {
            "definition": definition,
            "base_url": base_url,
            "price": price,
            "method": method,
            "path": path,
            "policy": policy,
        }
        return dict(
            self.request("POST", "/tools/import/mcp", body, idempotency_key=idempotency_key)
        )

    def add_policy(
        self, tool: str, policy: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Register a decision policy version for a tool (admins)."""
        return dict(
            self.request(
                "POST",
                f"/tools/{tool}/policies",
                {"policy": policy},
                idempotency_key=idempotency_key,
            )
        )

    def call_tool(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        max_price_minor: int | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Call a tool through the gateway: forwarded signed, verified, settled or refunded by
        its verdict. A retry with the same key replays the answer (the provider is not called
        again, nothing is charged twice). ``max_price_minor``: the most the call may cost
        (``PAYMENT_PRICE_ABOVE_MAXIMUM`` above it, with nothing charged)."""
        body: dict[str, Any] = {"tool": tool, "arguments": dict(arguments)}
        if max_price_minor is not None:
            body["max_price_minor"] = max_price_minor
        return dict(self.request("POST", "/gateway/calls", body, idempotency_key=idempotency_key))

    def calls(
        self,
        *,
        tool: str | None = None,
        provider: str | None = None,
        verdict: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """One page of forwarded calls, newest first (an admin's all, anyone else's own); a
        filtered page may be short, or empty, and not the last: read on until ``next_cursor``
        is None."""
        params = {
            "tool": tool,
            "provider": provider,
            "verdict": verdict,
            "limit": limit,
            "cursor": cursor,
        }
        return dict(self.request("GET", "/gateway/calls", params=params))

    def call(self, call_id: str) -> dict[str, Any]:
        """A forwarded call with its answer, every check row, its report window and report."""
        return dict(self.request("GET", f"/gateway/calls/{call_id}"))

    def meaning_judgments(self) -> dict[str, Any]:
        """The paid calls waiting for a meaning judgment signed by one of my verifier keys."""
        return dict(self.request("GET", "/meaning/judgments"))

    def run_judgments(self) -> dict[str, Any]:
        """Judge the calls waiting for their meaning judges now, one bounded pass (admins)."""
        return dict(self.request("POST", "/meaning/judgments/run"))

    def judge_meaning(
        self, call_id: str, judgment: dict[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Give my verifier key's signed meaning judgment of a call judged after its answer
        (with an Idempotency-Key, so a judgment sent again after its answer was lost is
        answered as it was, not refused as a second one)."""
        return dict(
            self.request(
                "POST",
                f"/meaning/judgments/{call_id}",
                judgment,
                idempotency_key=idempotency_key,
            )
        )

    def report_call(
        self, call_id: str, reason: str, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """The caller reports a bad result despite the checks (opens a review; moves nothing)."""
        return dict(
            self.request(
                "POST",
                f"/calls/{call_id}/report",
                {"reason": reason},
                idempotency_key=idempotency_key,
            )
        )

    def rule_report(
        self,
        call_id: str,
        *,
        upheld: bool,
        reasons: list[str],
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """An admin rules once on a call's report; upheld refunds the caller, never strikes."""
        return dict(
            self.request(
                "POST",
                f"/calls/{call_id}/report/ruling",
                {"upheld": upheld, "reasons": reasons},
                idempotency_key=idempotency_key,
            )
        )

    def call_reports(
        self, *, status: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> dict[str, Any]:
        """The admins' review queue of call reports, oldest first (``next_cursor``)."""
        params = {"status": status, "limit": limit, "cursor": cursor}
        return dict(self.request("GET", "/call-reports", params=params))

    def provider_quality(self, provider: str, *, window_days: int | None = None) -> dict[str, Any]:
        """A provider's quality window over the calls the gateway observed."""
        params = {"window_days": window_days}
        return dict(self.request("GET", f"/providers/{provider}/quality", params=params))


def _param(value: Any) -> Any:
    # httpx writes True as "true" already; kept explicit so the query reads as the API's.
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _in_progress(response: httpx.Response) -> bool:
    """Whether the answer says the first request with its key has not ended yet."""
    if response.status_code != 429:
        return False
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return False
    return isinstance(error, dict) and error.get("code") == "IDEMPOTENCY_IN_PROGRESS"


def _pause(response: httpx.Response) -> float:
    """How long to wait before asking again: the answer's Retry-After, at most 2 s."""
    retry = response.headers.get("Retry-After", "")
    return min(2.0, max(0.2, float(retry))) if retry.isdigit() else 0.5


def _resend(key: str) -> str:
    return (
        f". It may have been done: send it again with Idempotency-Key {key} to be answered as "
        "it was; it is never done twice"
    )


def _answer(response: httpx.Response, key: str | None = None) -> Any:
    request_id = response.headers.get("X-Request-Id")
    try:
        payload = response.json()
    except ValueError:
        raise ServiceUnavailable(
            f"The service answered {response.status_code} with no JSON: "
            f"{response.text[:200]!r}" + ("" if key is None else _resend(key)),
            idempotency_key=key,
        ) from None
    if response.status_code < 400:
        return payload
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        raise ServiceUnavailable(
            f"The service answered {response.status_code}: {payload!r:.200}"
            + ("" if key is None else _resend(key)),
            idempotency_key=key,
        )
    retry = response.headers.get("Retry-After")
    status = response.status_code
    code = str(error.get("code", status))
    raise refusal_class(status, code)(
        code,
        str(error.get("message", "")),
        status=status,
        retry_after=int(retry) if retry and retry.isdigit() else None,
        request_id=str(error.get("request_id") or request_id or "") or None,
        idempotency_key=key,
    )
