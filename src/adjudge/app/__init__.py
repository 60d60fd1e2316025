"""adjudge's use cases: the one object the HTTP service, the CLI and the workers hold.

``App(store, clock=…, checker=…, issuer=…)`` groups the use cases by what they act on:
``accounts``, ``tasks``, ``criteria`` (advice before posting), ``calls``, ``tools`` (the
gateway's catalog), ``gateway`` (paid calls), ``receipts``, ``bundles``, ``reviews`` and
``webhooks``. Each state change is one unit of work (:mod:`adjudge.app.unit`: the transaction,
the clock, the lost-race retry, the Idempotency-Key); each money movement happens in
:mod:`adjudge.app.settlement`, and only from a determination signed into a receipt in the same
transaction. Nothing here knows HTTP: answers are plain JSON data, refusals are
:class:`adjudge.Error` with stable codes.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry

from adjudge.app import metrics
from adjudge.app.accounts import Accounts, need_role
from adjudge.app.at_once import AtOnce
from adjudge.app.bundles import Bundles
from adjudge.app.calls import Calls
from adjudge.app.clock import Clock, SystemClock
from adjudge.app.criteria import CriteriaAdvice
from adjudge.app.dashboards import Dashboards
from adjudge.app.gateway import Gateway, Tools
from adjudge.app.isolation import Isolation
from adjudge.app.keys import Keys
from adjudge.app.maintenance import MaintenanceWorker
from adjudge.app.meaning import CallJudge
from adjudge.app.receipts import Receipts
from adjudge.app.reviews import Reviews
from adjudge.app.tasks import Tasks
from adjudge.app.unit import Answer, Idempotency, UnitOfWork
from adjudge.app.webhooks import DeliveryWorker, Webhooks, WebhookSettings
from adjudge.app.wiring import default_checker, default_issuer
from adjudge.gateway import Forwarder, SecretBox
from adjudge.market import Checker
from adjudge.receipts import Issuer
from adjudge.settings import Settings
from adjudge.store import Account, Store, open_store

__all__ = [
    "Account",
    "Answer",
    "App",
    "Clock",
    "CriteriaAdvice",
    "DeliveryWorker",
    "Idempotency",
    "MaintenanceWorker",
    "Settings",
    "SystemClock",
    "WebhookSettings",
]


class App:
    """The use cases over one store, with an injected clock, checker and receipt issuer."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Clock | None = None,
        checker: Checker | None = None,
        issuer: Issuer | None = None,
        settings: Settings | None = None,
        secrets: SecretBox | None = None,
        forwarder: Forwarder | None = None,
        judges: Mapping[str, CallJudge] | None = None,
    ) -> None:
        """``settings`` are the deployment's (:class:`adjudge.settings.Settings`; none: every
        default). ``secrets`` seals secrets at rest (the gateway's signing keys, providers'
        credentials, webhook endpoint secrets): pass the deployment's server key (``adjudge
        serve --server-key``); without one a fresh key lives as long as this object, so secrets
        sealed now cannot be opened by another process or after a restart."""
        self.store = store
        self.settings = settings or Settings()
        self.unit = UnitOfWork(
            store, clock or SystemClock(), keys_per_hour=self.settings.idempotency_keys_per_hour
        )
        self.checker = checker or default_checker()
        self.issuer = issuer or default_issuer()
        self.accounts = Accounts(self.unit)
        self.keys = Keys(self.unit, self.accounts)
        at_once = AtOnce()  # an account's dry runs and lints count together
        self.tasks = Tasks(self.unit, self.checker, self.issuer, self.settings, at_once)
        self.criteria = CriteriaAdvice(self.unit, at_once)
        isolation = Isolation(
            workers=self.settings.judge_workers,
            seconds=self.settings.judge_seconds,
            memory_bytes=self.settings.judge_memory_mb << 20,
        )
        registering = AtOnce()  # an account's tool and contract registrations count together
        self.calls = Calls(self.unit, self.issuer, isolation=isolation, registering=registering)
        self.secrets = secrets or SecretBox([SecretBox.generate_key()])
        self.tools = Tools(
            self.unit,
            box=self.secrets,
            price_notice=self.settings.price_notice,
            registering=registering,
        )
        self.gateway = Gateway(
            self.unit,
            self.issuer,
            box=self.secrets,
            forwarder=forwarder,
            private_providers=self.settings.allow_private_providers,
            judges=judges,
            isolation=isolation,
        )
        self.receipts = Receipts(self.unit, self.issuer.fingerprint, self.issuer)
        self.dashboards = Dashboards(self.unit, self.calls)
        self.bundles = Bundles(self.unit, self.issuer.public_key)
        self.reviews = Reviews(self.unit)
        self.webhooks = Webhooks(self.unit, self.secrets, WebhookSettings.of(self.settings))
        self._metrics = metrics.registry(store, self.unit.now)

    def metrics(self, who: Account) -> CollectorRegistry:
        """What ``GET /metrics`` exposes (an admin's: it names money and providers)."""
        need_role(who, "admin")
        return self._metrics

    @classmethod
    def open(
        cls,
        url: str,
        *,
        clock: Clock | None = None,
        checker: Checker | None = None,
        issuer: Issuer | None = None,
        settings: Settings | None = None,
        secrets: SecretBox | None = None,
        judges: Mapping[str, CallJudge] | None = None,
    ) -> App:
        """Open the database at ``url``, bring its schema up to date, and return the use cases
        over it (``STORAGE_ERROR`` when it cannot be opened)."""
        store = open_store(url)
        return cls(
            store,
            clock=clock,
            checker=checker,
            issuer=issuer,
            settings=settings,
            secrets=secrets,
            judges=judges,
        )

    def close(self) -> None:
        """Stop the gateway's forwarder, the group commit's thread, and close the database's
        connections."""
        self.gateway.close()
        self.unit.close()
        self.store.dispose()

    @property
    def clock(self) -> Clock:
        """The clock every use case reads."""
        return self.unit.clock

    @property
    def dialect(self) -> str:
        """The database kind: ``sqlite`` or ``postgresql``."""
        return self.store.dialect

    def health(self) -> dict[str, object]:
        """Liveness, the database kind and the chain head."""
        head = self.receipts.head()
        return {
            "ok": True,
            "database": self.dialect,
            "receipts": head["count"],
            "head": head["digest"],
        }
