"""How many keys and endpoints each account made, kept on its row as each is made (revision
0061): always what a recount of its rows gives, revoked and disabled ones included."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select, text

from adjudge.store import Store, api_keys, outbox, records
from adjudge.store.api_keys import KeyGrant
from support.migrations import downgrade

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)
_runs = itertools.count()

#: A step: whose, which kind of thing it makes, and whether it ends it right away.
_step = st.tuples(st.sampled_from(("ann", "bob")), st.sampled_from(("key", "hook")), st.booleans())


def _recount(store: Store, owner: str) -> tuple[int, int]:
    k, e = api_keys.api_keys.c, outbox.webhook_endpoints.c
    with store.read() as tx:
        keys = tx.conn.execute(select(func.count()).where(k.account_id == owner)).scalar_one()
        hooks = tx.conn.execute(select(func.count()).where(e.account_id == owner)).scalar_one()
        return int(keys), int(hooks)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(_step, max_size=12))
def test_the_counts_made_equal_a_recount(
    sqlite_store: Store, steps: list[tuple[str, str, bool]]
) -> None:
    """For any keys and endpoints made by two accounts, some revoked or disabled at once, each
    account's counts are a recount of its rows (the store is shared by the examples: each adds
    to the accounts' rows)."""
    store, run = sqlite_store, next(_runs)
    with store.write() as tx:
        for name in ("ann", "bob"):
            if records.account(tx, name) is None:
                records.create_account(tx, name, ["agent"], f"k-{name}", opt_in=False, at=T0)
    for n, (owner, kind, ended) in enumerate(steps):
        at = T0 + timedelta(seconds=n)
        with store.write() as tx:
            if kind == "key":
                grant = KeyGrant(f"key_{run}_{n}", owner, "k", None, None, at)
                api_keys.add(tx, grant, f"sha256:{run:032x}{n:032x}")
                if ended:
                    api_keys.revoke(tx, grant.id, at=at)
            else:
                made = outbox.add_endpoint(
                    tx,
                    endpoint_id=f"whep_{run}_{n}",
                    account_id=owner,
                    url="https://hooks.example/x",
                    sealed_secret="sealed",
                    event_types=None,
                    description="",
                    at=at,
                )
                if ended:
                    outbox.disable_endpoint(tx, made.id, at=at)
    for owner in ("ann", "bob"):
        with store.read() as tx:
            counted = (api_keys.made_count(tx, owner), outbox.made_count(tx, owner))
        assert counted == _recount(store, owner)


def test_migration_0061_counts_what_each_account_made(store: Store) -> None:
    """Upgrading fills each account's counts from its rows (an account that made none has 0);
    0061 also downgrades cleanly."""
    downgrade(store, "0060")
    at = T0.replace(tzinfo=None)
    with store.engine.begin() as conn:
        for name in ("ann", "bob"):
            conn.execute(
                text(
                    "INSERT INTO accounts (id, roles, key_hash, verifier_opt_in, reputation, "
                    "disputes, created_at) VALUES (:id, '[]', :h, false, 100, 0, :at)"
                ),
                {"id": name, "h": f"sha256:{name}", "at": at},
            )
        for n in range(3):
            conn.execute(
                text(
                    "INSERT INTO api_keys (id, account_id, key_hash, label, created_at) "
                    "VALUES (:id, 'ann', :h, 'k', :at)"
                ),
                {"id": f"key_{n}", "h": f"sha256:{n}", "at": at},
            )
        conn.execute(
            text(
                "INSERT INTO webhook_endpoints (id, account_id, url, secret, description, "
                "enabled, created_at) VALUES ('whep_1', 'ann', 'https://h.example/', 's', '', "
                "false, :at)"
            ),
            {"at": at},
        )
    store.migrate()
    with store.read() as tx:
        made = {n: (api_keys.made_count(tx, n), outbox.made_count(tx, n)) for n in ("ann", "bob")}
    assert made == {"ann": (3, 1), "bob": (0, 0)}
    downgrade(store, "0060")
    store.migrate()
