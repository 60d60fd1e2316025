"""Webhook use cases: endpoints, the delivery log, replays, and the delivery worker.

- Any account registers endpoints (at most :data:`WebhookSettings.max_endpoints` enabled at
  once, :data:`MAX_ENDPOINTS_MADE` ever), each with a fresh ``whsec_`` secret shown once, in
  the answer of its creation (and to the same caller again on a retry with the same
  Idempotency-Key: that answer is sealed under the key, :meth:`UnitOfWork.once`). The store
  keeps the secret sealed with the server key (:class:`adjudge.gateway.SecretBox`); no read
  returns it.
- Events are written by the state changes themselves (``outbox.emit`` in
  :mod:`adjudge.app.settlement` and :mod:`adjudge.app.calls`), in their transactions.
- :meth:`Webhooks.deliver_due` is one pass of the worker: lease the due deliveries, send them
  all at once outside any transaction (:class:`adjudge.webhooks.Sender`), record each attempt
  under its lease with the next one on the retry schedule. :class:`DeliveryWorker` runs passes
  on a thread (``adjudge serve`` starts one; ``adjudge webhooks deliver`` is one alone).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from adjudge.app.unit import Answer, Idempotency, UnitOfWork
from adjudge.errors import BadInput, NotFound, RateLimited, StateError
from adjudge.gateway.sealed import SecretBox, SecretError
from adjudge.settings import Settings
from adjudge.store import Account, Transaction, ids, outbox, quotas, records
from adjudge.webhooks import events, schedule
from adjudge.webhooks.sender import Attempt, Outgoing, Sender
from adjudge.webhooks.signing import body_bytes, new_secret
from adjudge.webhooks.urls import endpoint_url

log = logging.getLogger("adjudge.webhooks")

#: The states a delivery is listed by.
STATUSES = (outbox.PENDING, outbox.DELIVERED, outbox.FAILED)
#: The most disabled endpoints a page lists.
MAX_ENDPOINT_PAGE = 100
#: The most endpoints an account makes, deleted ones counted: a deleted endpoint stays on record
#: with its delivery log, so without a bound one account grew the table at will; a new endpoint
#: a day (how a secret is rotated) is 27 years.
MAX_ENDPOINTS_MADE = 10_000


@dataclass(frozen=True)
class WebhookSettings:
    """How webhooks behave in this deployment: the ``webhooks_*`` settings
    (:class:`adjudge.settings.Settings`, where each default is written) as the use cases read
    them, and the retry schedule.

    ``lease`` must outlast one pass's sends (a batch takes at most about the sender's total
    deadline, 10 s by default), so no other worker takes a delivery while it is being sent.
    """

    allow_private: bool  # endpoints on loopback/private addresses (local testing)
    max_endpoints: int
    lease: timedelta
    batch: int
    poll_seconds: float
    #: Test events one endpoint may be sent per ``test_window`` (each is a request to a URL the
    #: caller chose, retried on the schedule: unbounded, they would make the service a sender
    #: of traffic at someone else's host).
    test_events: int
    test_window: timedelta
    #: Replays one account may make per ``test_window``: each sends the event again to the
    #: endpoint's URL, so unbounded they were a way round the bound on test events.
    replays: int = 1000
    schedule: tuple[timedelta, ...] = schedule.SCHEDULE

    @classmethod
    def of(cls, settings: Settings) -> WebhookSettings:
        """The webhook settings of a deployment's ``settings``."""
        return cls(
            allow_private=settings.webhooks_allow_private,
            max_endpoints=settings.webhooks_max_endpoints,
            lease=settings.webhooks_lease,
            batch=settings.webhooks_batch,
            poll_seconds=settings.webhooks_poll_seconds,
            test_events=settings.webhooks_test_events,
            test_window=settings.webhooks_test_window,
            replays=settings.webhooks_replays,
        )

    @property
    def max_attempts(self) -> int:
        """Attempts a delivery gets before it is ``failed``."""
        return len(self.schedule) + 1


def secret_context(endpoint_id: str) -> str:
    """What an endpoint's sealed secret is bound to: it opens for that endpoint only."""
    return f"webhook-secret:{endpoint_id}"


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def endpoint_view(e: outbox.StoredEndpoint) -> dict[str, Any]:
    """An endpoint as its owner sees it: never its secret."""
    return {
        "id": e.id,
        "url": e.url,
        "event_types": None if e.event_types is None else list(e.event_types),
        "description": e.description,
        "enabled": e.enabled,
        "created_at": _iso(e.created_at),
        "disabled_at": _iso(e.disabled_at),
    }


def delivery_view(d: outbox.StoredDelivery, max_attempts: int) -> dict[str, Any]:
    """A delivery's log line: status, attempts, the last answer or error, the next attempt."""
    return {
        "id": d.id,
        "message_id": d.message_id,
        "endpoint_id": d.endpoint_id,
        "type": d.type,
        "status": d.status,
        "attempts": d.attempts,
        "max_attempts": max_attempts,
        "next_attempt_at": _iso(d.next_attempt_at) if d.status == outbox.PENDING else None,
        "last_attempt_at": _iso(d.last_attempt_at),
        "last_status": d.last_status,
        "last_error": d.last_error,
        "delivered_at": _iso(d.delivered_at),
        "replays": d.replays,
        "created_at": _iso(d.created_at),
    }


#: An attempt as it is recorded: the delivery claimed, delivered or not, the status, why not.
Recorded = tuple[outbox.Claimed, bool, int | None, str | None]


class Webhooks:
    """The webhook use cases over one store, sealing secrets with ``box``."""

    def __init__(self, unit: UnitOfWork, box: SecretBox, settings: WebhookSettings) -> None:
        self.unit = unit
        self.box = box
        self.settings = settings
        self._walked = ""  # the last account a claim gave a turn: the next claim's starts after

    # --- endpoints ------------------------------------------------------------------------

    def create_endpoint(
        self,
        account: Account,
        url: str,
        *,
        event_types: Sequence[str] | None = None,
        description: str = "",
        key: str | None = None,
    ) -> Answer[dict[str, Any]]:
        """Register an endpoint; the answer carries its ``secret``, shown this once."""
        checked = endpoint_url(url, allow_private=self.settings.allow_private)
        types = events.event_types(event_types)
        if len(description) > 200 or "\x00" in description:
            raise BadInput("A description is at most 200 characters.", code="INVALID_REQUEST")
        inputs = {"url": url, "event_types": types, "description": description}
        idem = Idempotency.of(key, "webhooks.create_endpoint", inputs)

        def run(tx: Transaction) -> dict[str, Any]:
            records.lock_account(tx, account.id)  # two processes at once: one passes the cap
            if outbox.enabled_count(tx, account.id) >= self.settings.max_endpoints:
                raise StateError(
                    f"An account has at most {self.settings.max_endpoints} enabled endpoints; "
                    "delete one first.",
                    code="WEBHOOK_ENDPOINT_LIMIT",
                )
            if outbox.made_count(tx, account.id) >= MAX_ENDPOINTS_MADE:
                raise StateError(
                    f"An account makes at most {MAX_ENDPOINTS_MADE} endpoints, deleted ones too "
                    "(they stay on record with their delivery logs); keep using an enabled "
                    "one, or ask an admin for another account.",
                    code="WEBHOOK_ENDPOINT_LIMIT",
                )
            endpoint_id = "whep_" + ids.ordered_hex(24)
            secret = new_secret()
            stored = outbox.add_endpoint(
                tx,
                endpoint_id=endpoint_id,
                account_id=account.id,
                url=checked,
                sealed_secret=self.box.seal(secret, context=secret_context(endpoint_id)),
                event_types=types,
                description=description,
                at=self.unit.now(),
            )
            return {**endpoint_view(stored), "secret": secret}

        return self.unit.once(account.id, idem, run, seal=True)

    def endpoints(
        self,
        account: Account,
        *,
        disabled: bool = False,
        cursor: str | None = None,
        limit: int = 50,
    ) -> dict[str, Any]:
        """The caller's enabled endpoints, oldest first (at most
        :attr:`WebhookSettings.max_endpoints`: one answer); with ``disabled``, a page of the ones
        it deleted, newest first. Never their secrets. Neither reads the endpoints of the other
        kind, however many the account made and deleted."""
        if not 1 <= limit <= MAX_ENDPOINT_PAGE:
            raise BadInput(
                f"A page of disabled endpoints holds 1 to {MAX_ENDPOINT_PAGE}.",
                code="INVALID_REQUEST",
            )
        if not disabled:
            found = self.unit.read(lambda tx: outbox.endpoints(tx, account.id))
            return {"endpoints": [endpoint_view(e) for e in found], "next_cursor": None}
        page = self.unit.read(
            lambda tx: outbox.disabled_endpoints(tx, account.id, cursor=cursor, limit=limit)
        )
        shown = [endpoint_view(e) for e in page.items]
        return {"endpoints": shown, "next_cursor": page.next_cursor}

    def endpoint(self, account: Account, endpoint_id: str) -> dict[str, Any]:
        """One of the caller's endpoints (``WEBHOOK_ENDPOINT_NOT_FOUND`` for anyone else's)."""
        return endpoint_view(self.unit.read(lambda tx: _own_endpoint(tx, account, endpoint_id)))

    def disable_endpoint(
        self, account: Account, endpoint_id: str, *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """Disable one of the caller's endpoints for good; its pending deliveries end
        ``failed``. Disabling a disabled endpoint changes nothing."""
        idem = Idempotency.of(key, "webhooks.disable_endpoint", {"endpoint": endpoint_id})

        def run(tx: Transaction) -> dict[str, Any]:
            _own_endpoint(tx, account, endpoint_id)
            outbox.disable_endpoint(tx, endpoint_id, at=self.unit.now())
            return endpoint_view(_own_endpoint(tx, account, endpoint_id))

        return self.unit.once(account.id, idem, run)

    def test_endpoint(
        self, account: Account, endpoint_id: str, *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """Queue a ``webhook.test`` event for one of the caller's enabled endpoints; answers
        its delivery.

        At most :attr:`WebhookSettings.test_events` per endpoint per window, and as many times
        :attr:`WebhookSettings.max_endpoints` per account (fixed windows, counted in the quotas
        table by every process on the database): past either,
        ``RATE_LIMITED`` with the seconds until the next window. A refusal is not counted (its
        transaction rolls back), nor is a replay of a stored answer.
        """
        idem = Idempotency.of(key, "webhooks.test_endpoint", {"endpoint": endpoint_id})

        def run(tx: Transaction) -> dict[str, Any]:
            found = _own_endpoint(tx, account, endpoint_id)
            if not found.enabled:
                raise StateError(
                    f"The endpoint {endpoint_id} is disabled.", code="WEBHOOK_ENDPOINT_DISABLED"
                )
            now = self.unit.now()
            self._count_test(tx, account, endpoint_id, now)
            data = {"endpoint_id": endpoint_id, "account": account.id}
            msg = outbox.emit_to(
                tx, found, "webhook.test", events.payload("webhook.test", data, now), now
            )
            made = outbox.delivery_of(tx, msg, endpoint_id)
            assert made is not None
            return delivery_view(made, self.settings.max_attempts)

        return self.unit.once(account.id, idem, run)

    def _window(self, now: datetime) -> tuple[datetime, int]:
        """The start of the fixed window ``now`` is in (test events and replays are counted
        in it), and the whole seconds until the next one."""
        window = self.settings.test_window
        span = window.total_seconds()
        start = datetime.fromtimestamp(now.timestamp() // span * span, tz=now.tzinfo)
        return start, max(1, int((start + window - now).total_seconds()) + 1)

    def _count_test(
        self, tx: Transaction, account: Account, endpoint_id: str, now: datetime
    ) -> None:
        """Count one test event against the endpoint's window and its account's (as many as
        all its endpoints may take: an endpoint deleted and made again starts a count of its
        own, its account does not); past either limit, refuse."""
        limit, window = self.settings.test_events, self.settings.test_window
        start, wait = self._window(now)
        if quotas.use(tx, f"webhook-test:{endpoint_id}", start) > limit:
            raise RateLimited(
                f"An endpoint takes {limit} test events {_per(window)}; try again in {wait} s "
                "(or replay a delivery from its log).",
                retry_after=wait,
            )
        most = limit * self.settings.max_endpoints
        if quotas.use(tx, f"webhook-test-account:{account.id}", start) > most:
            raise RateLimited(
                f"An account's endpoints take {most} test events {_per(window)} in all; try "
                f"again in {wait} s (or replay a delivery from its log).",
                retry_after=wait,
            )

    # --- the delivery log -----------------------------------------------------------------

    def deliveries(
        self,
        account: Account,
        *,
        endpoint_id: str | None = None,
        status: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """The caller's deliveries, newest first, a page at a time."""
        if status is not None and status not in STATUSES:
            raise BadInput(
                f"No delivery status {status!r}; use one of {', '.join(STATUSES)}.",
                code="INVALID_REQUEST",
            )

        def run(tx: Transaction) -> dict[str, Any]:
            if endpoint_id is not None:
                _own_endpoint(tx, account, endpoint_id)
            page = outbox.deliveries(
                tx, account.id, endpoint_id=endpoint_id, status=status, limit=limit, cursor=cursor
            )
            return {
                "deliveries": [delivery_view(d, self.settings.max_attempts) for d in page.items],
                "next_cursor": page.next_cursor,
            }

        return self.unit.read(run)

    def delivery(self, account: Account, delivery_id: str) -> dict[str, Any]:
        """One of the caller's deliveries with the event it carries (``payload``) and each
        attempt made (``attempt_history``: when, the receiver's status, what went wrong)."""

        def run(tx: Transaction) -> dict[str, Any]:
            found = _own_delivery(tx, account, delivery_id)
            view = delivery_view(found, self.settings.max_attempts)
            view["payload"] = outbox.message(tx, found.message_id)
            view["attempt_history"] = outbox.attempts(tx, found.id)
            return view

        return self.unit.read(run)

    def replay(
        self, account: Account, delivery_id: str, *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """Send one of the caller's deliveries again, now, with a fresh count of attempts: the
        same event under the same ``webhook-id`` (a receiver that has it already drops it).

        Refused while a worker is sending it (``WEBHOOK_DELIVERY_IN_FLIGHT``), for a
        disabled endpoint (``WEBHOOK_ENDPOINT_DISABLED``), and past the account's
        :attr:`WebhookSettings.replays` in a window (``RATE_LIMITED``, counted as test events
        are: a refusal is not counted, nor is a replay of a stored answer).
        """
        idem = Idempotency.of(key, "webhooks.replay", {"delivery": delivery_id})

        def run(tx: Transaction) -> dict[str, Any]:
            found = _own_delivery(tx, account, delivery_id)
            target = outbox.endpoint(tx, found.endpoint_id)
            if target is None or not target.enabled:
                raise StateError(
                    f"The endpoint {found.endpoint_id} is disabled; nothing is sent to it.",
                    code="WEBHOOK_ENDPOINT_DISABLED",
                )
            now = self.unit.now()
            start, wait = self._window(now)
            if (
                quotas.use(tx, f"webhook-replay-account:{account.id}", start)
                > self.settings.replays
            ):
                raise RateLimited(
                    f"An account makes at most {self.settings.replays} replays "
                    f"{_per(self.settings.test_window)}; try again in {wait} s.",
                    retry_after=wait,
                )
            if not outbox.replay(tx, delivery_id, now=now):
                raise StateError(
                    "This delivery is being attempted right now; replay it once the attempt "
                    "is recorded.",
                    code="WEBHOOK_DELIVERY_IN_FLIGHT",
                )
            again = outbox.delivery(tx, delivery_id)
            assert again is not None
            return delivery_view(again, self.settings.max_attempts)

        return self.unit.once(account.id, idem, run)

    # --- delivering -------------------------------------------------------------------------

    def deliver_due(self, sender: Sender, *, limit: int | None = None) -> int:
        """One pass: lease the due deliveries, send them at once, record each attempt when
        all have ended. Returns how many were attempted (0: nothing was due). (The worker
        does not wait for a pass's slowest: :class:`DeliveryWorker`.)"""
        taken = self.claim(limit or self.settings.batch)
        refused = [(c, False, None, o) for c, o in taken if isinstance(o, str)]
        outgoing = [(c, o) for c, o in taken if not isinstance(o, str)]
        sent = sender.send_many([o for _, o in outgoing])
        attempts = zip(outgoing, sent, strict=True)
        self.record(refused + [(c, a.ok, a.status, a.error) for (c, _), a in attempts])
        return len(taken)

    def claim(
        self, limit: int, *, busy: Mapping[str, int] | None = None
    ) -> list[tuple[outbox.Claimed, Outgoing | str]]:
        """Lease up to ``limit`` due deliveries (the accounts in turn, from where the last
        claim's walk ended), each with what to send, or why it cannot be sent (its
        endpoint's secret does not open). A read first: an idle poll takes no write lock.
        ``busy``: each account's attempts in flight; none gets more than a fair share of the
        batch (:func:`most_in_flight`) with them."""
        st = self.settings
        now = self.unit.now()
        if not self.unit.read(lambda tx: outbox.has_due(tx, now=now)):
            return []  # the common case when idle
        most = most_in_flight(st.batch)
        batch = self.unit.write(
            lambda tx: outbox.claim(
                tx,
                now=now,
                lease=st.lease,
                limit=limit,
                after=self._walked,
                busy=busy,
                most=most,
            )
        )
        self._walked = batch.walked_to
        taken: list[tuple[outbox.Claimed, Outgoing | str]] = []
        for c in batch.claimed:
            try:
                secret = self.box.open_text(c.sealed_secret, context=secret_context(c.endpoint_id))
            except SecretError as exc:
                taken.append((c, f"{exc.code}: {exc.message}"))
                continue
            taken.append((c, Outgoing(c.url, secret, c.message_id, body_bytes(c.payload))))
        return taken

    def record(
        self, results: Sequence[tuple[outbox.Claimed, bool, int | None, str | None]]
    ) -> None:
        """Record attempts that ended (delivered or not, the status, why not) under their
        leases, scheduling the next attempt of each that failed."""
        if not results:
            return
        st = self.settings
        done = self.unit.now()

        def run(tx: Transaction) -> None:
            for c, ok, status, error in results:
                next_at = None if ok else schedule.next_attempt(c.attempts + 1, done, st.schedule)
                if not outbox.finish(
                    tx, c, now=done, ok=ok, status=status, error=error, next_at=next_at
                ):
                    log.warning("delivery %s: lease lost before its attempt was recorded", c)

        self.unit.write(run)

    def counts(self) -> dict[str, int]:
        """How many deliveries are pending, delivered and failed."""
        return self.unit.read(outbox.counts)


def most_in_flight(batch: int) -> int:
    """The most attempts one account has in flight in a worker of ``batch``: a fair share of
    it (:data:`adjudge.store.outbox.FAIR_SHARE`), so one account's receivers that hold every
    attempt to its deadline leave the rest of the places to everyone else's deliveries."""
    return max(1, batch // outbox.FAIR_SHARE)


class DeliveryWorker:
    """Delivers on a daemon thread until :meth:`stop`, keeping up to a batch of attempts in
    flight: as attempts end it records them and claims more, so a receiver that takes its
    whole deadline holds its own place, not a pass of every other account's deliveries.

    With room in flight it claims at once; with none, or nothing due, it waits up to
    ``poll_seconds`` for an attempt to end. A failed claim or record (logged: a database that
    is briefly away) is tried again after ``poll_seconds``; a delivery whose attempt was not
    recorded is sent again once its lease runs out (at least once).
    """

    #: How long the worker lets attempts that end together gather before it records them.
    GATHER_SECONDS = 0.02

    def __init__(self, webhooks: Webhooks, sender: Sender) -> None:
        self.webhooks = webhooks
        self.sender = sender
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> DeliveryWorker:
        """Start the thread."""
        self._thread = threading.Thread(target=self.run, name="adjudge-webhooks", daemon=True)
        self._thread.start()
        return self

    def run(self) -> None:
        """Deliver until stopped (on the calling thread); on a stop, claim no more and record
        the attempts in flight as they end."""
        st = self.webhooks.settings
        flying: dict[Future[Attempt], outbox.Claimed] = {}
        given_up_at: float | None = None  # once stopped: when attempts in flight count as lost
        while not (self._stop.is_set() and not flying):
            if not self._stop.is_set() and len(flying) < st.batch:
                busy = Counter(c.account_id for c in flying.values())
                flying |= self._claimed(st.batch - len(flying), busy)
            elif given_up_at is None and self._stop.is_set():
                given_up_at = time.monotonic() + self.sender.attempt_bound()
            if not flying:
                self._stop.wait(st.poll_seconds)
                continue
            ended, _ = wait(flying, timeout=st.poll_seconds, return_when=FIRST_COMPLETED)
            if given_up_at is not None and time.monotonic() > given_up_at:
                ended = set(flying)  # the sender's loop is gone: recorded as failed below
            if not ended:
                continue
            more, _ = wait(set(flying) - ended, timeout=self.GATHER_SECONDS)
            results = []
            for future in ended | more:
                attempt = _ended(future)
                results.append((flying.pop(future), attempt.ok, attempt.status, attempt.error))
            self._record(results)

    def _claimed(self, room: int, busy: Mapping[str, int]) -> dict[Future[Attempt], outbox.Claimed]:
        """Claim up to ``room`` (``busy``: each account's attempts in flight) and send each at
        once; record at once those that cannot be."""
        try:
            taken = self.webhooks.claim(room, busy=busy)
        except Exception:  # a failed claim is tried again; the worker never dies of one
            log.exception("a webhook claim failed")
            self._stop.wait(self.webhooks.settings.poll_seconds)
            return {}
        refused: list[Recorded] = [(c, False, None, o) for c, o in taken if isinstance(o, str)]
        flying: dict[Future[Attempt], outbox.Claimed] = {}
        for c, o in taken:
            if isinstance(o, str):
                continue
            try:
                flying[self.sender.submit(o)] = c
            except Exception as exc:  # the sender's own failure: the attempt failed
                refused.append((c, False, None, f"the sender failed: {exc!r}"))
        self._record(refused)
        return flying

    def _record(self, results: list[Recorded]) -> None:
        try:
            self.webhooks.record(results)
        except Exception:  # not recorded: sent again once the leases run out
            log.exception("webhook attempts could not be recorded")
            self._stop.wait(self.webhooks.settings.poll_seconds)

    def stop_soon(self) -> None:
        """Ask :meth:`run` to claim no more and return once its attempts in flight ended
        (safe from a signal handler)."""
        self._stop.set()

    def stop(self) -> None:
        """Stop as :meth:`stop_soon` says, wait for it, and close the sender."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.sender.close()


def _ended(future: Future[Attempt]) -> Attempt:
    """An attempt's outcome; one that never ended (cancelled, its sender gone) failed."""
    if not future.done():
        future.cancel()
        return Attempt(False, None, "the worker stopped before the attempt ended", "system", 0.0)
    try:
        return future.result()
    except BaseException as exc:  # cancelled, or the sender's own failure
        return Attempt(False, None, f"the attempt did not end: {exc!r}", "system", 0.0)


def _per(window: timedelta) -> str:
    """A window in words: "an hour", "every 10 minutes"."""
    seconds = int(window.total_seconds())
    for size, unit in ((86_400, "day"), (3_600, "hour"), (60, "minute")):
        if seconds % size == 0:
            n = seconds // size
            return f"a{'n' if unit == 'hour' else ''} {unit}" if n == 1 else f"every {n} {unit}s"
    return f"every {seconds} seconds"


def _own_endpoint(tx: Transaction, account: Account, endpoint_id: str) -> outbox.StoredEndpoint:
    found = outbox.endpoint(tx, endpoint_id)
    if found is None or found.account_id != account.id:
        raise NotFound(f"You have no endpoint {endpoint_id}.", code="WEBHOOK_ENDPOINT_NOT_FOUND")
    return found


def _own_delivery(tx: Transaction, account: Account, delivery_id: str) -> outbox.StoredDelivery:
    found = outbox.delivery(tx, delivery_id)
    if found is None or found.account_id != account.id:
        raise NotFound(f"You have no delivery {delivery_id}.", code="WEBHOOK_DELIVERY_NOT_FOUND")
    return found
