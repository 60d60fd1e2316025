"""The sender's bounds, against the loopback receiver: redirects are not followed, a long
answer is not read past the cap, private addresses are refused unless allowed (and a name is
resolved once per connection, which goes to the address that was checked), and every attempt
carries the three Standard Webhooks headers."""

from __future__ import annotations

import time

import pytest

from adjudge.gateway import AddressGuard
from adjudge.webhooks import Sender, body_bytes, new_secret
from adjudge.webhooks.sender import Outgoing
from support.addresses import PUBLIC, Dialer, StubResolver
from support.receiver import Receiver

BODY = body_bytes({"type": "webhook.test", "timestamp": "2026-01-01T00:00:00+00:00", "data": {}})


def _item(receiver: Receiver, secret: str, path: str = "pat") -> Outgoing:
    receiver.secrets["/" + path] = secret
    return Outgoing(receiver.url(path), secret, "msg_1", BODY)


def test_an_attempt_carries_the_standard_headers(receiver: Receiver, sender: Sender) -> None:
    """webhook-id, a webhook-timestamp of now in whole seconds, a v1 signature, JSON."""
    secret = new_secret()
    assert secret.startswith("whsec_") and len(secret) == 6 + 44
    got = sender.send(_item(receiver, secret))
    assert got.ok and got.status == 204 and got.error is None
    [r] = receiver.received
    assert r.verified and r.body == BODY
    assert r.headers["webhook-id"] == "msg_1"
    assert abs(int(r.headers["webhook-timestamp"]) - time.time()) < 5
    assert r.headers["webhook-signature"].startswith("v1,")
    assert r.headers["content-type"] == "application/json"
    assert r.headers["user-agent"].startswith("adjudge-webhooks/")


def test_a_redirect_is_not_followed(receiver: Receiver, sender: Sender) -> None:
    """A 302 is a failed attempt; nothing is sent where it points."""
    receiver.mode = "redirect"
    got = sender.send(_item(receiver, new_secret()))
    assert not got.ok and got.kind == "redirect" and got.status == 302
    assert "not followed" in (got.error or "")
    assert [r.path for r in receiver.received] == ["/pat"]


def test_a_long_answer_is_cut_at_the_cap(receiver: Receiver, sender: Sender) -> None:
    """A 2xx whose body passes the 64 KiB cap still counts as delivered; the rest is not read."""
    receiver.mode = "huge"
    got = sender.send(_item(receiver, new_secret()))
    assert got.ok and got.status == 200


def test_private_addresses_are_refused_unless_allowed(receiver: Receiver) -> None:
    """A sender that may not reach private addresses sends nothing to loopback."""
    with Sender() as strict:
        got = strict.send(_item(receiver, new_secret()))
    assert not got.ok and got.kind == "blocked" and "not a public address" in (got.error or "")
    assert receiver.received == []


def test_a_rebinding_name_is_sent_to_the_address_that_was_checked(receiver: Receiver) -> None:
    """A name answering a public address and then 127.0.0.1: each attempt resolves it once;
    the first is delivered by way of the public address it vetted, the second is blocked and
    nothing is dialed for it."""
    resolver = StubResolver({"hooks.example": [[PUBLIC], ["127.0.0.1"]]})
    dialer = Dialer(serves={PUBLIC})
    secret = new_secret()
    receiver.secrets["/pat"] = secret
    item = Outgoing(f"http://hooks.example:{receiver.port}/pat", secret, "msg_1", BODY)
    with Sender(guard=AddressGuard(resolver, dial=dialer)) as strict:
        first = strict.send(item)
        second = strict.send(item)
    assert first.ok and first.status == 204, first
    assert not second.ok and second.kind == "blocked", second
    assert second.error == "the receiver's endpoint is not a public address"
    assert resolver.lookups == ["hooks.example"] * 2 and dialer.dialed == [PUBLIC]
    [r] = receiver.received
    assert r.verified and r.headers["host"] == f"hooks.example:{receiver.port}"


@pytest.mark.parametrize(
    "answer", [["127.0.0.1"], [PUBLIC, "10.0.0.1"], ["::ffff:7f00:1"], ["2002:a9fe:a9fe::"]]
)
def test_a_name_with_any_internal_address_is_blocked(receiver: Receiver, answer: list[str]) -> None:
    """Any non-public address among the name's answers blocks the attempt; nothing is dialed."""
    dialer = Dialer(serves={PUBLIC})
    guard = AddressGuard(StubResolver({"hooks.example": [answer]}), dial=dialer)
    item = Outgoing(f"http://hooks.example:{receiver.port}/pat", new_secret(), "msg_1", BODY)
    with Sender(guard=guard) as strict:
        got = strict.send(item)
    assert not got.ok and got.kind == "blocked" and "not a public address" in (got.error or "")
    assert dialer.dialed == [] and receiver.received == []


def test_a_name_that_does_not_resolve_is_a_connect_failure(receiver: Receiver) -> None:
    """No answer for the name: a connect failure (retried on the schedule), nothing sent."""
    item = Outgoing("http://nowhere.example/pat", new_secret(), "msg_1", BODY)
    with Sender(guard=AddressGuard(StubResolver({}))) as strict:
        got = strict.send(item)
    assert not got.ok and got.kind == "connect"
    assert (got.error or "").startswith("could not resolve the receiver's host")


def test_a_refused_connection_and_a_batch(receiver: Receiver, sender: Sender) -> None:
    """A batch is sent at once and answered in order; a closed port is a connect failure."""
    secret = new_secret()
    good = _item(receiver, secret)
    port = receiver.port
    receiver.down()
    refused = Outgoing(f"http://127.0.0.1:{port}/pat", secret, "msg_2", BODY)
    [first] = sender.send_many([refused])
    assert not first.ok and first.kind == "connect" and first.status is None
    receiver.up()
    got = sender.send_many([good, good, good])
    assert [a.ok for a in got] == [True, True, True] and len(receiver.received) == 3
