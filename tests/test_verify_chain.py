"""verify_chain's one-pass line check and its ranges: the same answers as verify(), line by line.

The fast path (adjudge.receipts.lines) may only ever prove a line good; every refusal, and the
line it names, must be what the line-by-line reference (``ReceiptLog.load``: verify() on each
line, then the links) says — in ranges too (verify_lines, link_ranges), and in ranges verified
by forked processes (``verify-chain --jobs``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge.cli import ranges
from adjudge.cli.ranges import verify_in_ranges
from adjudge.digests import sha256_digest
from adjudge.errors import BadInput, ReceiptError
from adjudge.kernel import Authority, Check, Pending, TrustPolicy, Verdict, determine, oracle
from adjudge.receipts import (
    ChainReport,
    ReceiptLog,
    SigningKey,
    link_ranges,
    verify,
    verify_chain,
    verify_lines,
)
from adjudge.receipts.canonical import is_sorted_compact
from adjudge.receipts.envelope import IN_TOTO_PAYLOAD_TYPE, sign
from adjudge.receipts.lines import Entry, Pin, check, check_block
from adjudge.receipts.statement import Replays, check_statement

NOW = datetime(2026, 1, 1, tzinfo=UTC)
KEY = SigningKey.from_seed(bytes(range(32)))
OTHER = SigningKey.from_seed(bytes(range(1, 33)))


def _determination(text: bytes, verdict: Verdict = Verdict.PASS, **kw: Any) -> Any:
    checks = [
        oracle.integrity(oracle.Record(text), sha256_digest(text)),
        Check("auto-check", verdict, Authority.DETERMINISTIC, (sha256_digest(text),)),
        *kw.pop("more", ()),
    ]
    return determine(sha256_digest(text), checks, now=NOW, **kw)


def _log(n: int) -> ReceiptLog:
    log = ReceiptLog()
    for i in range(n):
        log.append(_determination(b"r%d" % i), KEY)
    return log


def _varied() -> ReceiptLog:
    """A log with each optional field an issuer writes: about, supersession, a PENDING check,
    a PASS on a named verifier's key, a policy decision, a FAIL, non-ASCII text."""
    log = ReceiptLog()
    first = log.append(_determination(b"a", Verdict.FAIL), KEY, about="task:t-1/round:1")
    log.append(_determination(b"b"), KEY, supersedes=first.receipt_id, about="task:t-1/round:1")
    pending = Check(
        "manual-review",
        Verdict.PENDING,
        Authority.HUMAN,
        pending=Pending(NOW + timedelta(days=1), Verdict.UNKNOWN),
    )
    log.append(_determination(b"c", more=(pending,)), KEY)
    verifier = "1" * 64
    agent = Check("agent", Verdict.PASS, Authority.SEMANTIC, verifier_key=verifier)
    log.append(
        _determination(b"d", more=(agent,), policy=TrustPolicy().with_verifier(verifier)), KEY
    )
    decision = {"verdict": "SKIPPED", "payment": "settle", "strike": False, "amount": 1200}
    log.append(_determination(b"e", Verdict.FAIL, policy_decision=decision), KEY, about="call:c")
    text = "résumé".encode()
    log.append(_determination(text), KEY, about="task:検証")
    return log


def _reference(lines: list[bytes], key: Any = KEY.keyid) -> tuple[str, str] | int:
    """What the line-by-line reference says: the receipt count, or the refusal."""
    try:
        return len(ReceiptLog.load(lines, key))
    except (ReceiptError, BadInput) as exc:  # BadInput: the check could not run (a bad pin)
        return (exc.code, exc.message)


def _ranges(
    lines: list[bytes], key: Any = KEY.keyid, jobs: int = 1, expected_head: str | None = None
) -> ChainReport:
    """The log verified as ``jobs`` ranges, here, one after another."""
    size = max(1, -(-len(lines) // jobs))
    parts = (verify_lines(lines, key, s, s + size) for s in range(0, len(lines), size))
    return link_ranges(parts, expected_head=expected_head)


def _chain(
    lines: list[bytes], key: Any = KEY.keyid, jobs: int = 1, forked: bool = False
) -> tuple[str, str] | int:
    """The count verify_chain reports (in ``jobs`` ranges, in processes when ``forked``), or
    its refusal."""
    try:
        if forked:
            return verify_in_ranges(lines, key, jobs=jobs).count
        if jobs > 1:
            return _ranges(lines, key, jobs).count
        return verify_chain(lines, key).count
    except (ReceiptError, BadInput) as exc:
        return (exc.code, exc.message)


def test_every_ascii_character_sorts_and_escapes_as_rfc8785() -> None:
    """The canonical-form test relies on orjson writing ASCII exactly as RFC 8785 does."""
    for code in range(128):
        c = chr(code)
        value = {"k" + c: c, c + "k": [c, 0, -1, 2**53 - 1, True, None, {}]}
        assert is_sorted_compact(value, rfc8785.dumps(value))


ascii_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.text(st.characters(max_codepoint=127)),
    lambda children: (
        st.lists(children) | st.dictionaries(st.text(st.characters(max_codepoint=127)), children)
    ),
    max_leaves=25,
)


@settings(deadline=None)
@given(ascii_json, st.booleans())
def test_sorted_compact_is_rfc8785_on_ascii(value: Any, spaced: bool) -> None:
    """RFC 8785 bytes pass the test; any other encoding of the same value does not."""
    exact = rfc8785.dumps(value)
    assert is_sorted_compact(value, exact)
    other = json.dumps(value, indent=1 if spaced else None, sort_keys=not spaced).encode()
    assert is_sorted_compact(value, other) == (other == exact)


def test_the_fast_path_takes_what_an_issuer_writes() -> None:
    """Every kind of line an issuer writes is proven on the fast path, with the entry verify()
    gives — so the path that is fast is the path logs take — except non-ASCII statements."""
    log = _varied()
    pin = Pin(KEY.keyid)
    for receipt in log:
        entry = check(receipt.to_bytes(), pin)
        if not receipt.envelope.payload.isascii():
            assert entry is None
            continue
        assert entry == Entry(
            receipt.receipt_id,
            receipt.sequence,
            receipt.previous,
            receipt.supersedes,
            receipt.subject,
        )
    assert check(log.receipts[0].to_bytes(), Pin(KEY.public_key)) is not None
    assert check(log.receipts[0].to_bytes(), Pin(KEY.keyid.upper())) is not None
    report = verify_chain(log.lines(), KEY.keyid)
    assert report.count == len(log) and report.superseded == {log.receipts[0].receipt_id}


def test_a_line_under_another_key_or_an_unusable_pin_is_left_to_verify() -> None:
    """The fast path proves nothing about another key's line, or under a pin that is not one."""
    line = _log(1).lines()[0]
    assert check(line, Pin(OTHER.keyid)) is None
    assert check(line, Pin("nonsense")) is None
    assert _chain([line], "nonsense") == _reference([line], "nonsense")
    assert _chain([line], "nonsense")[0] == "KEY_INVALID"  # type: ignore[index]
    assert verify_chain([], "nonsense").count == 0  # as before: an empty log reads no key


def test_an_envelope_written_otherwise_verifies_as_verify_reads_it() -> None:
    """An envelope that is not the canonical line (spaces, another key order, an escaped
    slash in its base64, extra fields) is decided exactly as verify() decides it."""
    log = _log(2)
    line = log.lines()[1]
    data = json.loads(line)
    payload = data["payload"]
    variants = [
        json.dumps(data).encode(),  # spaces
        json.dumps(dict(reversed(list(data.items())))).encode(),  # another key order
        line.replace(b"/", b"\\/"),  # an escaped slash, wherever base64 has one
        line[:-1] + b',"extra":1}',  # a field DSSE does not have
        line.replace(payload.encode(), payload.encode() + b"\\u0041"),  # an escaped letter
    ]
    assert b"/" in line
    for variant in variants:
        lines = [log.lines()[0], variant]
        assert _chain(lines) == _chain(lines, jobs=2) == _reference(lines), variant
    assert _chain([log.lines()[0], variants[0]]) == 2


def _with_float(body: Any, path: tuple[Any, ...], value: Any) -> bytes:
    """``body`` with ``value`` at ``path`` (a new key when the path ends in one that is not
    there), as sorted compact JSON: a float written as canonically as a float can be."""
    edited = json.loads(json.dumps(body))
    parent = edited
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return orjson.dumps(edited, option=orjson.OPT_SORT_KEYS)


def _places(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path of ``value``, and a new key in every object."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        found.append((*prefix, "x"))
        for k, v in value.items():
            found += _places(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _places(v, (*prefix, i))
    return found


VARIED = _varied()
STATEMENTS = [json.loads(r.envelope.payload) for r in VARIED if r.envelope.payload.isascii()]


@pytest.mark.parametrize("number", [1.5, 1.0, -0.0, 1e16, 2**53, -(2**53)], ids=repr)
def test_a_number_verify_refuses_never_takes_the_fast_path(number: float | int) -> None:
    """A float, or an integer outside ±(2^53−1), anywhere in a signed statement — every path of
    each kind of statement, and a new key in each object — is refused, as verify() refuses it,
    and never proven on the fast path, though orjson parses it and writes it back unchanged."""
    pin = Pin(KEY.keyid)
    for body in STATEMENTS:
        for path in _places(body):
            payload = _with_float(body, path, number)
            line = sign(payload, IN_TOTO_PAYLOAD_TYPE, KEY).to_bytes()
            assert check(line, pin) is None, path
            with pytest.raises(ReceiptError) as err:
                verify(line, KEY.keyid)
            assert err.value.code == "RECEIPT_MALFORMED"


def _edited(body: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of ``body`` with the field at ``path`` replaced by ``new``, or deleted."""
    edited = json.loads(json.dumps(body))
    parent = edited
    for step in path[:-1]:
        parent = parent[step]
    if new == "<delete>":
        if isinstance(parent, dict):
            parent.pop(path[-1], None)
        else:
            del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return edited


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(STATEMENTS).flatmap(
        lambda body: st.tuples(st.just(body), st.sampled_from(_places(body)))
    ),
    ascii_json | st.floats(allow_nan=False) | st.just("<delete>"),
)
def test_the_fast_path_proves_only_what_verify_accepts(
    placed: tuple[Any, tuple[Any, ...]], new: Any
) -> None:
    """Any field of a statement replaced, added or deleted, then signed (as sorted compact
    JSON): the fast path proves the line only if verify() accepts it, with verify()'s entry."""
    edited = _edited(*placed, new)
    try:
        payload = orjson.dumps(edited, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return  # an integer orjson cannot write: nothing to sign
    line = sign(payload, IN_TOTO_PAYLOAD_TYPE, KEY).to_bytes()
    entry = check(line, Pin(KEY.keyid))
    if entry is None:
        return
    receipt = verify(line, KEY.keyid)
    assert entry == Entry(
        receipt.receipt_id, receipt.sequence, receipt.previous, receipt.supersedes, receipt.subject
    )


def test_a_changed_byte_anywhere_is_refused_as_the_reference_refuses_it() -> None:
    """Any byte of a log line changed: the log is refused with the code and message the
    line-by-line reference gives, one pass or two ranges (the change is in the second)."""
    lines = _log(3).lines()
    target = lines[2]
    for at in range(0, len(target), 3):
        for flip in (0x01, 0x20):
            changed = bytearray(target)
            changed[at] ^= flip
            edited = [*lines[:2], bytes(changed)]
            expected = _reference(edited)
            assert isinstance(expected, tuple), at  # refused
            assert expected[1].startswith("line 3: ")
            assert _chain(edited) == expected, at
            assert _chain(edited, jobs=2) == expected, at


def test_ranges_give_the_answer_of_one_pass() -> None:
    """Any number of ranges (more than lines too, blank lines between), here or in processes,
    verifies as one pass."""
    log = _varied()
    lines = [b"", *log.lines()[:3], b"  ", *log.lines()[3:], b""]
    one = verify_chain(lines, KEY.keyid)
    for jobs in (2, 3, 4, 7, 20):
        assert _ranges(lines, KEY.keyid, jobs) == one
    for jobs in (1, 2, 3):
        assert verify_in_ranges(lines, KEY.keyid, jobs=jobs) == one
    assert _ranges([], KEY.keyid, 4).count == verify_in_ranges([], KEY.keyid, jobs=4).count == 0
    head = log.receipts[-1].receipt_id
    assert verify_in_ranges(lines, KEY.keyid, expected_head=head, jobs=2).head == one.head


@pytest.mark.parametrize("jobs", [1, 2, 3, 5])
@pytest.mark.parametrize("fault", ["deleted", "reordered", "edited", "forked", "foreign"])
def test_a_fault_in_a_later_range_is_named_by_its_line(jobs: int, fault: str) -> None:
    """A fault anywhere, found in whichever range holds it, is named by its line and refused
    with the reference's code and message; the first fault wins when there are two."""
    log = _log(10)
    lines = log.lines()
    if fault == "deleted":
        del lines[7]
    elif fault == "reordered":
        lines[7], lines[8] = lines[8], lines[7]
    elif fault == "edited":
        lines[7] = lines[7].replace(b'"sig":"', b'"sig":"A', 1)[:-5] + b'"}]}'
    elif fault == "forked":
        fork = ReceiptLog.load(lines[:7], KEY.keyid)
        lines[7] = fork.append(_determination(b"other"), KEY).to_bytes()
    else:
        other = ReceiptLog.load(lines[:7], KEY.keyid)
        lines[7] = other.append(_determination(b"r7"), OTHER).to_bytes()
    expected = _reference(lines)
    named = 9 if fault == "forked" else 8  # a fork signs well: the receipt after it breaks
    assert isinstance(expected, tuple) and expected[1].startswith(f"line {named}: ")
    assert _chain(lines, jobs=jobs) == _chain(lines, jobs=jobs, forked=True) == expected
    lines[-1] = b"not a receipt"  # a second fault, later: the first is still the one named
    assert _chain(lines, jobs=jobs) == _chain(lines, jobs=jobs, forked=True) == expected


def test_a_truncated_log_is_refused_against_its_pinned_head_with_ranges() -> None:
    """Truncation shows against a pinned head, with ranges as in one pass."""
    log = _log(6)
    head = log.receipts[-1].receipt_id
    with pytest.raises(ReceiptError) as err:
        verify_in_ranges(log.lines()[:5], KEY.keyid, expected_head=head, jobs=2)
    assert err.value.code == "RECEIPT_CHAIN_BROKEN" and "truncated" in err.value.message


def test_a_range_whose_process_dies_is_verified_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child that dies before sending its range costs time, never the answer."""

    def die(*args: object) -> None:
        raise SystemExit(3)

    monkeypatch.setattr(ranges, "_send_range", die)
    log = _log(4)
    assert verify_in_ranges(log.lines(), KEY.keyid, jobs=2) == verify_chain(log.lines(), KEY.keyid)


def _warm_pin() -> Pin:
    """A pin whose log has derived every kind of statement already (:class:`Replays`)."""
    pin = Pin(KEY.keyid)
    answers = check_block(VARIED.lines(), pin)
    assert sum(entry is not None for entry in answers) == len(STATEMENTS)  # ASCII ones
    assert pin.replays.seen
    return pin


def _outcome(body: Any, replays: Replays | None) -> tuple[str, str]:
    try:
        check_statement(body, replays)
    except (ReceiptError, BadInput) as exc:
        return (exc.code, exc.message)
    return ("ok", "")


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(STATEMENTS).flatmap(
        lambda body: st.tuples(st.just(body), st.sampled_from(_places(body)))
    ),
    ascii_json | st.floats(allow_nan=False, allow_infinity=False) | st.just("<delete>"),
)
def test_a_remembered_derivation_answers_as_a_new_one(
    placed: tuple[Any, tuple[Any, ...]], new: Any
) -> None:
    """Any field of a statement replaced, added or deleted, as orjson reads it: check_statement
    answers with the log's derivations remembered exactly as it answers with none."""
    edited = _edited(*placed, new)
    try:
        edited = orjson.loads(orjson.dumps(edited))
    except orjson.JSONEncodeError:
        return
    replays = Replays()
    for statement in STATEMENTS:
        check_statement(statement, replays)
    assert _outcome(edited, replays) == _outcome(edited, None)


@pytest.mark.parametrize("field", ["subject", "decidedAt", "oracle", "verifierKey"])
def test_a_remembered_derivation_is_not_lent_to_a_look_alike(field: str) -> None:
    """A statement like one the log derived but for a value the fold reads in a way the key
    must not lose (another result under the same proof, a later time against a deadline, a
    ``1`` for ``true``, a number for a key): derived anew, and refused as verify() refuses it."""
    pin = _warm_pin()
    for statement in STATEMENTS:
        edited = json.loads(json.dumps(statement))
        p = edited["predicate"]
        if field == "subject":
            edited["subject"][0]["digest"]["sha256"] = "0" * 64
        elif field == "decidedAt":
            p["decidedAt"] = "2027-01-01T00:00:00Z"
        elif field == "oracle":
            for c in p["checks"]:
                if c.get("oracle") is True:
                    c["oracle"] = 1
        else:
            for c in p["checks"]:
                if "verifierKey" in c:
                    c["verifierKey"] = 1
        payload = orjson.dumps(edited, option=orjson.OPT_SORT_KEYS)
        line = sign(payload, IN_TOTO_PAYLOAD_TYPE, KEY).to_bytes()
        try:
            verify(line, KEY.keyid)
        except ReceiptError:
            assert check(line, pin) is None
            assert check_block([line], pin) == [None]
        else:
            assert check(line, pin) == check(line, Pin(KEY.keyid))


def test_a_block_answers_each_line_as_check_does() -> None:
    """Signatures verified after a block's reading: each line's answer is check()'s alone, a
    bad signature or a bad line among good ones included."""
    lines = VARIED.lines() + _log(3).lines()
    forged = bytearray(lines[1])
    forged[-8] ^= 0x01  # in the signature
    lines[1] = bytes(forged)
    lines[4] = b"not a receipt"
    lines[6] = lines[6].replace(KEY.keyid.encode(), OTHER.keyid.encode())
    expected = [check(line, Pin(KEY.keyid)) for line in lines]
    assert expected[1] is None and expected[4] is None and expected[6] is None
    assert sum(e is not None for e in expected) == len(STATEMENTS) - 2 + 3 - 1  # ASCII, kept
    assert check_block(lines, Pin(KEY.keyid)) == expected
    assert check_block(lines, _warm_pin()) == expected


#: A line of JSON holding a number past the digits Python converts.
HUGE_NUMBER = b'{"payload":' + b"1" * 5000 + b"}"


def test_a_line_with_a_number_past_pythons_digits_is_malformed() -> None:
    """Refused with the envelope's code, whether verified alone or in a log (never a crash)."""
    with pytest.raises(ReceiptError) as alone:
        verify(HUGE_NUMBER, KEY.keyid)
    assert alone.value.code == "RECEIPT_MALFORMED"
    with pytest.raises(ReceiptError) as logged:
        verify_chain([*_log(2).lines(), HUGE_NUMBER], KEY.keyid)
    assert logged.value.code == "RECEIPT_MALFORMED"


def test_an_envelope_with_a_key_twice_is_malformed() -> None:
    """A reader that keeps the first of two keys would see another payload, or another list of
    signatures, than the one verified: an envelope with a key twice is refused alone and in a
    log, on the fast path's reading too."""
    line = _log(1).lines()[0]
    payload = line.replace(
        b'{"payload":"', b'{"payload":"eyJmYWtlIjoxfQ==","payloadType":"text/plain","payload":"', 1
    )
    signatures = line.replace(
        b'"signatures":[',
        b'"signatures":[{"keyid":"x","sig":"AA=="},{"keyid":"y","sig":"AA=="}],"signatures":[',
        1,
    )
    for forged in (payload, signatures):
        assert forged != line
        with pytest.raises(ReceiptError) as alone:
            verify(forged, KEY.keyid)
        assert alone.value.code == "RECEIPT_MALFORMED"
        with pytest.raises(ReceiptError):
            verify_chain([forged], KEY.keyid)
    # The same envelope written with other spacing and key order still verifies: its signature
    # is over the payload, and the JSON around it is read once, whole.
    spaced = json.dumps(dict(reversed(list(json.loads(line).items()))), indent=1).encode()
    assert verify(spaced, KEY.keyid)
    assert verify_chain([spaced], KEY.keyid).count == 1
