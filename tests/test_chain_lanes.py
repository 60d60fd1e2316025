"""A log on lanes: any interleaving of appends on several lanes, with checkpoints naming every
lane's head, verifies; a changed byte, a dropped or reordered receipt, a lane cut short under a
pinned checkpoint, a checkpoint naming a head that is not on the log, and another key are each
refused, with the same codes as on a log of one lane — on the fast path, by the reference, and in
ranges on several processes alike."""

from __future__ import annotations

import base64
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from adjudge.cli import app
from adjudge.cli.ranges import verify_in_ranges
from adjudge.digests import sha256_digest as content_digest
from adjudge.errors import BadInput, ReceiptError
from adjudge.kernel import Authority, Check, Determination, Verdict, determine, oracle
from adjudge.receipts import Head, ReceiptLog, SigningKey, issue, verify, verify_chain
from adjudge.receipts.canonical import encode_plain
from adjudge.receipts.chain import _entry_of
from adjudge.receipts.checkpoints import NamedHead, decision, heads_subject
from adjudge.receipts.envelope import IN_TOTO_PAYLOAD_TYPE, sign
from adjudge.receipts.lines import Pin, check

NOW = datetime(2026, 1, 1, tzinfo=UTC)
KEY = SigningKey.from_seed(bytes(range(32)))
OTHER = SigningKey.from_seed(bytes(range(1, 33)))


def _determination(text: bytes) -> Determination:
    checks = [
        oracle.integrity(oracle.Record(text), content_digest(text)),
        Check("auto-check", Verdict.PASS, Authority.DETERMINISTIC, (content_digest(text),)),
    ]
    return determine(content_digest(text), checks, now=NOW)


class Writer:
    """Several lanes written as the store writes them: each receipt after its lane's head, in
    the order the log is written; a checkpoint names every lane's head as it stands."""

    def __init__(self, lanes: int, key: SigningKey = KEY) -> None:
        self.heads: list[Head | None] = [None] * lanes
        self.lines: list[bytes] = []
        self.key = key
        self.n = 0

    def append(self, lane: int) -> bytes:
        """One receipt on ``lane``."""
        self.n += 1
        receipt = issue(_determination(b"r%d" % self.n), self.key, self.heads[lane], lane=lane)
        self.heads[lane] = receipt.head
        self.lines.append(receipt.to_bytes())
        return receipt.receipt_id.encode()

    def checkpoint(self, lane: int, heads: list[NamedHead] | None = None) -> str:
        """A checkpoint on ``lane`` naming every lane's head (or ``heads``)."""
        named = heads or [
            (n, h.receipt_id if h else None, h.sequence if h else None)
            for n, h in enumerate(self.heads)
        ]
        determination = determine(
            heads_subject(named), [], now=NOW, policy_decision=decision(named)
        )
        receipt = issue(
            determination, self.key, self.heads[lane], lane=lane, about="log:checkpoint"
        )
        self.heads[lane] = receipt.head
        self.lines.append(receipt.to_bytes())
        return receipt.receipt_id


def _refused(lines: list[bytes], head: str | None = None) -> str:
    """The code verify_chain refuses ``lines`` with — the same one pass and in two ranges."""
    with pytest.raises(ReceiptError) as one:
        verify_chain(lines, KEY.keyid, expected_head=head)
    with pytest.raises(ReceiptError) as ranged:
        verify_in_ranges(lines, KEY.keyid, expected_head=head, jobs=2)
    assert str(one.value) == str(ranged.value)
    return one.value.code


@settings(max_examples=25, deadline=None)
@given(
    lanes=st.integers(1, 4),
    steps=st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=30),
)
def test_any_interleaving_of_appends_on_lanes_verifies(
    lanes: int, steps: list[tuple[int, bool]]
) -> None:
    """Whatever lane each append takes and wherever checkpoints fall, the log verifies: every
    lane's head is its last receipt, and it ends at a checkpoint issued last."""
    w = Writer(lanes)
    for lane, checkpoint in steps:
        if checkpoint:
            w.checkpoint(lane % lanes)
        else:
            w.append(lane % lanes)
    pin = w.checkpoint(steps[-1][0] % lanes)
    report = verify_chain(w.lines, KEY.keyid, expected_head=pin)
    assert report.count == len(w.lines)
    assert report.checkpoints == sum(c for _, c in steps) + 1
    assert [(h.lane, h.receipt_id) for h in report.lanes] == [
        (n, h.receipt_id) for n, h in enumerate(w.heads) if h is not None
    ]
    assert verify_in_ranges(w.lines, KEY.keyid, expected_head=pin, jobs=2) == report
    # Any order that keeps each lane's own order (and every checkpoint after what it names,
    # which the whole log's checks need not: they are made once the log is read) verifies too.
    by_lane: dict[int, list[bytes]] = {}
    for line in w.lines:
        by_lane.setdefault(verify(line, KEY.keyid).lane, []).append(line)
    lane_major = [line for n in sorted(by_lane) for line in by_lane[n]]
    assert verify_chain(lane_major, KEY.keyid, expected_head=pin).count == len(w.lines)


def test_a_receipt_on_lane_0_is_signed_as_before_lanes() -> None:
    """Lane 0 is written by omission: a receipt on it carries no ``lane``; one on another lane
    carries it, and the fast path reads each exactly as verify() does."""
    w = Writer(3)
    w.append(0)
    w.append(2)
    w.checkpoint(1)
    zero, two, checkpoint = (verify(line, KEY.keyid) for line in w.lines)
    assert "lane" not in zero.predicate and zero.lane == 0
    assert two.predicate["lane"] == 2 == two.lane and two.sequence == 0
    pin = Pin(KEY.keyid)
    for line in w.lines:
        assert check(line, pin) == _entry_of(verify(line, KEY.keyid))
    assert check(w.lines[2], pin).heads == (
        (0, zero.receipt_id, 0),
        (1, None, None),
        (2, two.receipt_id, 0),
    )
    assert checkpoint.verdict is Verdict.NOT_RUN


def _three_lanes() -> tuple[Writer, str]:
    w = Writer(3)
    for lane in (0, 1, 2, 1, 0, 2, 2, 1):
        w.append(lane)
    return w, w.checkpoint(0)


def test_a_changed_byte_a_dropped_or_reordered_receipt_is_refused_on_any_lane() -> None:
    """Each tampering of a lane above 0 is refused as on a one-lane log."""
    w, pin = _three_lanes()
    lines = w.lines
    assert verify_chain(lines, KEY.keyid, expected_head=pin).count == 9
    second_on_1 = 3  # lanes: 0 1 2 [1] 0 2 2 1
    changed = bytearray(lines[second_on_1])
    changed[40] ^= 1
    assert _refused([*lines[:3], bytes(changed), *lines[4:]]) in {
        "RECEIPT_SIGNATURE_INVALID",
        "RECEIPT_MALFORMED",
    }
    assert _refused(lines[:3] + lines[4:]) == "RECEIPT_CHAIN_BROKEN"  # dropped
    swapped = [*lines[:1], lines[3], *lines[2:3], lines[1], *lines[4:]]  # lane 1's two swapped
    assert _refused(swapped) == "RECEIPT_CHAIN_BROKEN"


def test_a_lane_cut_short_shows_against_a_pinned_checkpoint() -> None:
    """Without a pin, a lane's cut tail leaves no trace; against the checkpoint it does — and a
    log going on past the pinned checkpoint, or pinned by a receipt that is no checkpoint, is
    not the log the pin names."""
    w, pin = _three_lanes()
    cut = w.lines[:7] + w.lines[8:]  # lane 1's last receipt gone
    assert _refused(cut, pin) == "RECEIPT_CHAIN_BROKEN"
    before_pin = [line for line in w.lines[:-1] if line != w.lines[7]]
    assert verify_chain(before_pin, KEY.keyid).count == 7  # unpinned: nothing shows
    w.append(2)
    assert _refused(w.lines, pin) == "RECEIPT_CHAIN_BROKEN"  # goes on past the pin
    last = verify(w.lines[-1], KEY.keyid).receipt_id
    assert _refused(w.lines, last) == "RECEIPT_CHAIN_BROKEN"  # several lanes: a checkpoint pins


def test_a_checkpoint_naming_a_head_not_on_the_log_is_refused() -> None:
    """A checkpoint naming a receipt its lane does not hold there (a fork, another log), a lane
    longer than the log's, or another head of its own lane than the receipt before it."""
    w, _ = _three_lanes()
    receipts = [verify(line, KEY.keyid) for line in w.lines[:-1]]  # all but the checkpoint
    lane_0, lane_1, lane_2 = ([r for r in receipts if r.lane == n] for n in range(3))
    tops = [r.head for r in (lane_0[-1], lane_1[-1], lane_2[-1])]
    heads = [(0, lane_0[-1].receipt_id, 1), (1, lane_1[-1].receipt_id, 2)]
    for wrong in (
        (2, lane_2[0].receipt_id, 2),  # another receipt of the lane at that sequence
        (2, lane_2[-1].receipt_id, 3),  # beyond the lane's end: cut short
    ):
        bad = Writer(3)
        bad.lines, bad.heads = list(w.lines[:-1]), list(tops)
        bad.checkpoint(0, [*heads, wrong])
        assert _refused(bad.lines) == "RECEIPT_CHAIN_BROKEN"
    own = Writer(3)
    own.lines, own.heads = list(w.lines[:-1]), list(tops)
    own.checkpoint(0, [(0, lane_0[0].receipt_id, 0), heads[1], (2, lane_2[-1].receipt_id, 2)])
    assert _refused(own.lines) == "RECEIPT_CHAIN_BROKEN"


def test_another_key_and_a_named_lane_0_are_refused() -> None:
    """A lane signed by another key is refused as any receipt is; a statement naming lane 0
    (which is written by omission: one statement, one form) is not an adjudge receipt."""
    w, _ = _three_lanes()
    stranger = Writer(3, OTHER)
    stranger.append(1)
    assert _refused([*w.lines, *stranger.lines]) == "RECEIPT_KEY_MISMATCH"
    receipt = verify(w.lines[0], KEY.keyid)
    body = {**_statement(w.lines[0])}
    body["predicate"] = {**body["predicate"], "lane": 0}
    envelope = sign(encode_plain(body), IN_TOTO_PAYLOAD_TYPE, KEY)
    with pytest.raises(ReceiptError) as refused:
        verify(envelope.to_bytes(), KEY.keyid)
    assert refused.value.code == "RECEIPT_MALFORMED" and receipt.lane == 0
    assert check(envelope.to_bytes(), Pin(KEY.keyid)) is None


def test_a_receipt_follows_only_its_own_lanes_head() -> None:
    """issue() refuses to chain a receipt on one lane after the head of another."""
    first = issue(_determination(b"x"), KEY, None, lane=1)
    with pytest.raises(BadInput) as refused:
        issue(_determination(b"y"), KEY, first.head, lane=2)
    assert refused.value.code == "RECEIPT_UNSIGNABLE"


def test_a_one_lane_log_reads_as_before() -> None:
    """ReceiptLog (one lane) and its pinned head work exactly as they did; its report names
    one lane and no checkpoint."""
    log = ReceiptLog()
    for i in range(3):
        log.append(_determination(b"o%d" % i), KEY)
    assert log.head is not None
    report = verify_chain(log.lines(), KEY.keyid, expected_head=log.head.receipt_id)
    assert report.head == log.head and report.lanes == (log.head,) and report.checkpoints == 0
    shuffled = log.lines()
    random.Random(1).shuffle(shuffled)
    if shuffled != log.lines():
        assert _refused(shuffled) == "RECEIPT_CHAIN_BROKEN"


def _statement(line: bytes) -> dict[str, object]:
    import json  # noqa: PLC0415

    payload = json.loads(line)["payload"]
    value = json.loads(base64.b64decode(payload))
    assert isinstance(value, dict)
    return value


def test_verify_chain_names_each_lane_and_what_the_pin_proves(tmp_path: Path) -> None:
    """`adjudge receipt verify-chain` on a log of several lanes lists each lane's head and the
    checkpoints, and says every lane ends where the pinned checkpoint ends it; a lane cut short
    under the pin exits 1."""
    w, pin = _three_lanes()
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"\n".join(w.lines) + b"\n")
    done = CliRunner().invoke(
        app, ["receipt", "verify-chain", str(log), "--key", KEY.keyid, "--head", pin]
    )
    assert done.exit_code == 0, done.output
    assert "lanes: 3, checkpoints: 1" in done.stdout and "  lane 2: " in done.stdout
    assert f"checkpoint: {pin} (sequence 2)" in done.stdout
    assert "every lane ends where the checkpoint you pinned ends it" in done.stdout
    log.write_bytes(b"\n".join(w.lines[:7] + w.lines[8:]) + b"\n")
    cut = CliRunner().invoke(
        app, ["receipt", "verify-chain", str(log), "--key", KEY.keyid, "--head", pin]
    )
    assert cut.exit_code == 1 and "RECEIPT_CHAIN_BROKEN" in cut.stdout
