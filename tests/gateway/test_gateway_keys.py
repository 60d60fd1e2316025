"""The key ring: which key signs when, what the JWKS lists, files at rest, sealed secrets."""

from __future__ import annotations

import base64
import json
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from goassay_provider_verify.jwks import JwksCache
from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge.errors import BadInput, Error
from adjudge.gateway import (
    FileKeyRing,
    GatewayKey,
    KeyRingError,
    MemoryKeyRing,
    ProviderCredential,
    SecretBox,
    SecretError,
    jwks,
    new_key,
    rotate,
    signing_key,
)
from adjudge.gateway.keys import MIN_SAFE_OVERLAP
from adjudge.store import Store

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def kids(document: dict[str, list[dict[str, str]]]) -> list[str]:
    return [k["kid"] for k in document["keys"]]


def test_an_empty_ring_cannot_sign() -> None:
    with pytest.raises(KeyRingError) as caught:
        signing_key(MemoryKeyRing().all_keys(), T0)
    assert caught.value.code == "KEYRING_EMPTY"


def test_rotation_publishes_first_then_switches_then_unlists() -> None:
    """A rotation at T lists the new key at once, signs with it from T + lead, and lists the
    old one until its retirement plus the overlap."""
    ring = MemoryKeyRing()
    first = rotate(ring, T0, lead=timedelta(0), kid="k1")
    assert signing_key(ring.all_keys(), T0).kid == first.kid
    second = rotate(ring, T0 + HOUR, kid="k2")  # default lead: 2 minutes
    lead = timedelta(minutes=2)
    assert kids(jwks(ring.all_keys(), T0 + HOUR)) == ["k1", "k2"]
    assert signing_key(ring.all_keys(), T0 + HOUR + lead - timedelta(seconds=1)).kid == "k1"
    assert signing_key(ring.all_keys(), T0 + HOUR + lead).kid == second.kid
    retired = T0 + HOUR + lead
    assert kids(jwks(ring.all_keys(), retired + HOUR - timedelta(seconds=1))) == ["k1", "k2"]
    assert kids(jwks(ring.all_keys(), retired + HOUR)) == ["k2"]
    assert kids(
        jwks(ring.all_keys(), retired + timedelta(minutes=6), overlap=MIN_SAFE_OVERLAP)
    ) == ["k2"]


def test_a_key_is_not_listed_before_it_is_created() -> None:
    ring = MemoryKeyRing([new_key(T0 + HOUR, kid="later")])
    assert kids(jwks(ring.all_keys(), T0)) == []
    with pytest.raises(KeyRingError):
        signing_key(ring.all_keys(), T0)


def test_an_emergency_rotation_switches_at_once() -> None:
    ring = MemoryKeyRing()
    rotate(ring, T0, lead=timedelta(0), kid="old")
    fresh = rotate(ring, T0 + HOUR, lead=timedelta(0), kid="new")
    assert signing_key(ring.all_keys(), T0 + HOUR) == fresh
    assert kids(jwks(ring.all_keys(), T0 + HOUR, overlap=timedelta(0))) == ["new"]


def test_retiring_never_moves_a_retirement_later() -> None:
    ring = MemoryKeyRing([new_key(T0, kid="k")])
    ring.retire("k", T0 + HOUR)
    ring.retire("k", T0 + 2 * HOUR)
    assert ring.all_keys()[0].retired_at == T0 + HOUR
    with pytest.raises(KeyRingError) as caught:
        ring.retire("nobody", T0)
    assert caught.value.code == "KEYRING_KID_UNKNOWN"
    with pytest.raises(KeyRingError) as caught:
        ring.add(new_key(T0, kid="k"))
    assert caught.value.code == "KEYRING_KID_TAKEN"


@settings(max_examples=100)
@given(
    steps=st.lists(
        st.tuples(st.integers(1, 10_000), st.integers(0, 600), st.integers(0, 7200)),
        min_size=1,
        max_size=6,
    ),
    probe=st.integers(0, 80_000),
)
def test_the_signing_key_is_always_listed(steps: list[tuple[int, int, int]], probe: int) -> None:
    """Property: under any rotations, whenever a key signs, the JWKS lists it (overlap >= 0)."""
    ring = MemoryKeyRing()
    at = T0
    for gap, lead, _ in steps:
        at += timedelta(seconds=gap)
        rotate(ring, at, lead=timedelta(seconds=lead))
    now = T0 + timedelta(seconds=probe)
    try:
        key = signing_key(ring.all_keys(), now)
    except KeyRingError:
        assert now < ring.all_keys()[0].created_at
        return
    assert key.kid in kids(jwks(ring.all_keys(), now, overlap=timedelta(steps[0][2])))


def test_the_jwks_is_what_the_verifier_reads() -> None:
    """The document's keys load in goassay-provider-verify's JWKS cache, by kid."""
    ring = MemoryKeyRing()
    key = rotate(ring, T0, lead=timedelta(0))
    document = jwks(ring.all_keys(), T0)
    (entry,) = document["keys"]
    assert set(entry) == {"kty", "crv", "x", "kid"}
    assert base64.urlsafe_b64decode(entry["x"] + "=") == key.public.raw
    assert "=" not in entry["x"]
    cache = JwksCache(static=json.loads(json.dumps(document)))
    assert cache.get_key(key.kid, 0) is not None


def test_a_kid_the_profile_could_not_carry_is_refused() -> None:
    for kid in ("", 'a"b', "a\\b", " a", "é", "x" * 129):
        with pytest.raises(KeyRingError):
            new_key(T0, kid=kid)
    with pytest.raises(KeyRingError):
        GatewayKey("k", new_key(T0).signing_key, datetime(2026, 1, 1))  # naive time


@pytest.mark.parametrize("sealed", [False, True])
def test_a_file_ring_keeps_its_keys_across_processes(tmp_path: Path, sealed: bool) -> None:
    """Written atomically with mode 0600; read back equal; sealed keys need the server key."""
    box = SecretBox([SecretBox.generate_key()]) if sealed else None
    ring = FileKeyRing(tmp_path, box=box)
    first = rotate(ring, T0, lead=timedelta(0))
    rotate(ring, T0 + HOUR)
    again = FileKeyRing(tmp_path, box=box)
    assert again.all_keys() == ring.all_keys()
    assert again.all_keys()[0].public == first.public
    assert again.all_keys()[0].retired_at == T0 + HOUR + timedelta(minutes=2)
    assert stat.S_IMODE(os.stat(ring.path).st_mode) == 0o600
    text = ring.path.read_text()
    assert ("PRIVATE KEY" in text) is not sealed
    assert [p.name for p in tmp_path.iterdir()] == ["gateway-keys.json"]  # no temp file left
    if sealed:
        with pytest.raises(KeyRingError):
            FileKeyRing(tmp_path).all_keys()


def test_a_damaged_file_ring_is_one_refusal(tmp_path: Path) -> None:
    (tmp_path / FileKeyRing.FILE).write_text("{not json")
    with pytest.raises(KeyRingError) as caught:
        FileKeyRing(tmp_path).all_keys()
    assert caught.value.code == "KEYRING_UNREADABLE"


def test_a_secret_opens_only_with_its_key_and_context() -> None:
    key = SecretBox.generate_key()
    box = SecretBox([key])
    sealed = box.seal("s3cret", context="provider-credential:a:x-api-key")
    assert "s3cret" not in sealed and sealed.startswith("v1.")
    assert box.open_text(sealed, context="provider-credential:a:x-api-key") == "s3cret"
    with pytest.raises(SecretError):
        box.open(sealed, context="provider-credential:b:x-api-key")  # another provider's row
    with pytest.raises(SecretError):
        SecretBox([SecretBox.generate_key()]).open(
            sealed, context="provider-credential:a:x-api-key"
        )
    flipped = sealed[:-2] + ("A" if sealed[-2] != "A" else "B") + sealed[-1]
    with pytest.raises(SecretError):
        box.open(flipped, context="provider-credential:a:x-api-key")
    assert SecretBox.key_from_text(SecretBox.key_to_text(key)) == key
    assert SecretBox.key_to_text(key) not in repr(box)


def test_the_server_key_can_be_rotated() -> None:
    """Seal with the newest key; a value sealed under the old one still opens."""
    old, new = SecretBox.generate_key(), SecretBox.generate_key()
    sealed_old = SecretBox([old]).seal("a", context="c")
    both = SecretBox([new, old])
    assert both.open_text(sealed_old, context="c") == "a"
    assert both.seal("b", context="c").split(".")[1] == SecretBox.key_id(new)


def test_a_provider_credential_round_trips_sealed() -> None:
    box = SecretBox([SecretBox.generate_key()])
    credential = ProviderCredential("X-Api-Key", "k-123")
    sealed = credential.seal(box, provider="weather")
    opened = ProviderCredential.open(box, sealed, provider="weather", header="x-api-key")
    assert (opened.header.lower(), opened.secret) == ("x-api-key", "k-123")  # names: any case
    with pytest.raises(SecretError):
        ProviderCredential.open(box, sealed, provider="other", header="X-Api-Key")


@pytest.mark.parametrize(
    ("header", "secret"),
    [
        ("Signature", "x"),
        ("Host", "x"),
        ("X Key", "x"),
        ("X-Key", "a\nb"),
        ("X-Key", " x"),
        ("X-Key", "é"),
    ],
)
def test_a_credential_the_gateway_could_not_send_is_refused(header: str, secret: str) -> None:
    with pytest.raises(Error) as caught:
        ProviderCredential(header, secret)
    assert caught.value.code == "CREDENTIAL_INVALID"


def test_a_bad_server_key_is_refused() -> None:
    """A key that is not one is bad input (``SECRET_KEY_INVALID``), not a secret that fails to
    open (``SecretError``)."""
    for keys in ([], [b"short"]):
        with pytest.raises(BadInput) as err:
            SecretBox(keys)
        assert err.value.code == "SECRET_KEY_INVALID"
    with pytest.raises(BadInput):
        SecretBox.key_from_text("not base64 !")


def test_a_database_ring_unseals_each_key_once_a_process(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ring read again (every few seconds) unseals only keys it has not yet opened: after
    three rotations, the first read opens each of the four keys once, the next ones none
    (before, every read unsealed and parsed every key ever made, retired ones too)."""
    from datetime import UTC, datetime, timedelta  # noqa: PLC0415

    from adjudge.app.gateway.keyring import ensure_key  # noqa: PLC0415
    from adjudge.gateway import rotate  # noqa: PLC0415
    from support.harness import make_harness  # noqa: PLC0415

    ring = make_harness(sqlite_store).app.gateway.keys
    now = datetime(2026, 3, 1, tzinfo=UTC)
    ensure_key(ring, now)
    for day in range(1, 4):
        rotate(ring, now + timedelta(days=day))
    opened: list[str] = []
    real = ring.box

    class Counted:
        def open(self, sealed: str, *, context: str) -> bytes:
            opened.append(sealed)
            return real.open(sealed, context=context)

    monkeypatch.setattr(ring, "box", Counted())
    kids = []
    for _ in range(3):
        ring.forget()
        kids.append([key.kid for key in ring.all_keys()])
    assert len(kids[0]) == 4 and kids[0] == kids[1] == kids[2]
    assert len(opened) <= 4 and len(set(opened)) == len(opened)
