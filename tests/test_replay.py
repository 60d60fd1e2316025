"""The replay bundle's format and the replay itself, offline: the same parts make the same bytes,
a bundle edited anywhere that matters never replays as the same, and a zip that is not a bundle
is refused with its reason."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tracemalloc
import zipfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from adjudge.app.wiring import AutoCheck
from adjudge.cli import app
from adjudge.errors import Error
from adjudge.kernel import Determination
from adjudge.market import Mode, Status, Task, proof
from adjudge.market.proof import round_of
from adjudge.market.tasks import digest_of
from adjudge.receipts import SignedReceipts, SigningKey, envelope
from adjudge.receipts.envelope import IN_TOTO_PAYLOAD_TYPE
from adjudge.receipts.issuer import Place
from adjudge.replay import FORMAT, build, engine, from_answer, read, replay
from adjudge.replay.bundle import MAX_FILES, Bundle, unread
from adjudge.replay.report import statement_differences
from support.bundles import edited

SIGNER = SigningKey.from_seed(bytes(range(32)))
CRITERIA = {"min_length": 40, "rubric": [{"criterion": "c", "keywords": ["escrow"], "weight": 2}]}
RESULT = "The escrow holds the reward until the auto check passes the result."
AT = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def determined(result: str = RESULT, criteria: dict[str, Any] = CRITERIA) -> Determination:
    """The market's determination of an auto check of ``result`` (as the lifecycle builds it)."""
    outcome = AutoCheck().check(result, criteria)
    task = Task(
        id="task_1",
        poster="pat",
        mode=Mode.AUTO,
        reward=100,
        posted_at=AT,
        deadline=AT,
        criteria=criteria,
        status=Status.SUBMITTED,
        agent="ann",
        attempts=1,
        result_digest=digest_of(result),
    )
    return proof.judged(task, result, proof.auto_check(outcome, digest_of(result)), at=AT)


def answer(result: str = RESULT, criteria: dict[str, Any] = CRITERIA) -> dict[str, Any]:
    """The service's bundle answer for an auto check of ``result``, signed as the service signs."""
    outcome = AutoCheck().check(result, criteria)
    receipt = SignedReceipts(SIGNER).sign(
        determined(result, criteria), None, about=round_of("task_1", 1)
    )
    return {
        "kind": "task",
        "subject": round_of("task_1", 1),
        "receipt": {"id": "rcpt_1", "digest": receipt["digest"], "envelope": receipt["envelope"]},
        "key": {"keyid": SIGNER.keyid, "publicKey": SIGNER.public_key.to_base64()},
        "engine": engine(),
        "result": result,
        "criteria": criteria,
        "verification_result": dict(outcome.detail),
    }


BUNDLE = from_answer(answer())


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {n: z.read(n) for n in z.namelist()}


def zipped(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return out.getvalue()


def rehashed(files: dict[str, bytes]) -> bytes:
    """The files zipped with the manifest's sha256s updated to match them (a careful forger)."""
    manifest = json.loads(files["manifest.json"])
    for name in manifest["files"]:
        manifest["files"][name]["sha256"] = hashlib.sha256(files[name]).hexdigest()
    return zipped({**files, "manifest.json": json.dumps(manifest).encode()})


def test_the_same_parts_make_the_same_bytes() -> None:
    """A bundle is a function of its parts: no clock, no randomness in the zip."""
    assert from_answer(answer()) == BUNDLE
    assert list(members(BUNDLE)) == [
        "manifest.json",
        "receipt.json",
        "key.json",
        "result.txt",
        "criteria.json",
        "verification.json",
    ]
    manifest = json.loads(members(BUNDLE)["manifest.json"])
    assert manifest["format"] == FORMAT and manifest["kind"] == "task"
    for name, entry in manifest["files"].items():
        assert entry["sha256"] == hashlib.sha256(members(BUNDLE)[name]).hexdigest()
        assert entry["what"]


def test_an_untouched_bundle_replays_the_same() -> None:
    """The verdict, the reasons and the statement byte for byte; pinned or not."""
    found = replay(BUNDLE, SIGNER.keyid)
    assert found.outcome == "same" and found.exit_status == 0
    assert found.verdict == found.signed_verdict == "PASS"
    assert found.lines == ("score 100", "All verification criteria met")
    assert (
        found.statement_digest == json.loads(members(BUNDLE)["manifest.json"])["receipt"]["digest"]
    )
    assert replay(BUNDLE).outcome == "same"


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(["result.txt", "receipt.json", "key.json"]),
    where=st.integers(min_value=0),
    bit=st.integers(min_value=0, max_value=7),
)
def test_a_flipped_bit_never_replays_the_same(name: str, where: int, bit: int) -> None:
    """One bit of the result, the receipt or the key changed, the manifest updated to match:
    never the same (a difference, or a bundle no replay can use)."""
    files = members(BUNDLE)
    data = bytearray(files[name])
    data[where % len(data)] ^= 1 << bit
    files[name] = bytes(data)
    try:
        found = replay(rehashed(files), SIGNER.keyid)
    except Error as exc:
        assert exc.code == "BUNDLE_UNUSABLE"
    else:
        assert found.outcome == "different"


def test_another_engine_is_named_even_when_the_verdict_agrees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A replay by another adjudge or under another Unicode table says so: the verdict may
    agree, but it was not re-derived under the conditions that decided it."""
    other = {**engine(), "adjudge": "0.2.0", "unicode": "18.0.0"}
    monkeypatch.setattr("adjudge.replay.audit.engine", lambda: other)
    found = replay(BUNDLE, SIGNER.keyid)
    assert found.verdict == "PASS" and found.outcome == "different"
    assert {d.what: (d.recorded, d.replayed) for d in found.differences} == {
        "engine.adjudge": ("0.1.0", "0.2.0"),
        "engine.unicode": ("17.0.0", "18.0.0"),
    }


def test_a_receipt_that_binds_no_criteria_is_said_to() -> None:
    """A receipt signed before task receipts named their criteria replays with a note, not a
    false claim that the criteria are bound."""
    old = answer()
    unbound = replace(determined(), criteria_digest=None)
    receipt = SignedReceipts(SIGNER).sign(unbound, None, about=round_of("task_1", 1))
    old["receipt"] = {"id": "rcpt_1", "digest": receipt["digest"], "envelope": receipt["envelope"]}
    found = replay(from_answer(old), SIGNER.keyid)
    assert found.outcome == "same"
    assert any("binds no criteria" in note for note in found.notes)


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda f: {**f, "extra.txt": b"x"}, "extra.txt is not in the manifest"),
        (lambda f: {**f, "../evil": b"x"}, "'../evil' is not a bundle file's name"),
        (
            lambda f: {
                **f,
                "manifest.json": f["manifest.json"].replace(FORMAT.encode(), b"other/v9"),
            },
            "its format is 'other/v9'",
        ),
        (lambda f: {**f, "manifest.json": b"{"}, "manifest.json is not JSON"),
        (
            lambda f: {n: d for n, d in f.items() if n != "manifest.json"},
            "it has no manifest.json",
        ),
        (
            lambda f: {**f, **{f"{i}.txt": b"" for i in range(MAX_FILES + 1)}},
            f"more than {MAX_FILES} files",
        ),
        (lambda f: {**f, "receipt.json": b"{}"}, "receipt.json is not a DSSE envelope"),
        (lambda f: {**f, "criteria.json": b"[1]"}, "criteria.json is not a JSON object"),
    ],
)
def test_what_is_not_a_bundle_is_refused_with_its_reason(edit: Any, why: str) -> None:
    """BUNDLE_UNUSABLE (exit 2 in the CLI), naming what is wrong."""
    with pytest.raises(Error) as refused:
        replay(zipped(edit(members(BUNDLE))))
    assert refused.value.code == "BUNDLE_UNUSABLE" and why in refused.value.message


def test_build_refuses_a_file_no_bundle_holds() -> None:
    """The format names every file a bundle may hold; anything else is refused when building."""
    with pytest.raises(Error, match=r"cannot hold notes\.txt"):
        build(
            kind="task",
            subject="s",
            receipt_id="r",
            receipt_digest="d",
            engine=engine(),
            files={"notes.txt": b""},
        )
    assert read(BUNDLE).kind == "task"


def test_statement_differences_name_each_leaf() -> None:
    """Paths through objects and lists, a check named by its name, absent values as None."""
    recorded = {"predicate": {"verdict": "PASS", "checks": [{"name": "a", "verdict": "PASS"}]}}
    replayed = {
        "predicate": {"verdict": "FAIL", "checks": [{"name": "a", "verdict": "FAIL"}], "x": 1}
    }
    found = [(d.what, d.recorded, d.replayed) for d in statement_differences(recorded, replayed)]
    assert found == [
        ("predicate.verdict", "PASS", "FAIL"),
        ("predicate.checks[0] (a).verdict", "PASS", "FAIL"),
        ("predicate.x", None, "1"),
    ]
    assert list(statement_differences(recorded, json.loads(json.dumps(recorded)))) == []


def test_a_receipt_on_a_lane_past_the_first_replays_the_same() -> None:
    """A receipt the service signed on lane 1 (PostgreSQL's log has four) is rebuilt at its own
    place, lane included: the same, as on lane 0."""
    receipt = SignedReceipts(SIGNER).sign(determined(), Place(1, None), about=round_of("task_1", 1))
    laned = answer()
    laned["receipt"] = {
        "id": "rcpt_1",
        "digest": receipt["digest"],
        "envelope": receipt["envelope"],
    }
    found = replay(from_answer(laned), SIGNER.keyid)
    assert found.outcome == "same", [d.to_dict() for d in found.differences]


def test_a_receipt_holding_a_number_past_pythons_digits_is_no_bundle() -> None:
    """``BUNDLE_UNUSABLE`` with why, never a crash."""
    huge = edited(BUNDLE, "receipt.json", lambda _: b'{"payload":' + b"1" * 5000 + b"}")
    with pytest.raises(Error) as refused:
        replay(huge, SIGNER.keyid)
    assert refused.value.code == "BUNDLE_UNUSABLE"


def test_a_receipt_whose_checks_are_no_list_replays_different() -> None:
    """A bundle's receipt, re-signed with ``checks`` a number: a difference (its statement does
    not verify), never a crash in the re-run reading it (before: a TypeError out of
    ``replay``)."""
    stmt = json.loads(base64.b64decode(json.loads(members(BUNDLE)["receipt.json"])["payload"]))
    stmt["predicate"]["checks"] = 5
    payload = json.dumps(stmt, sort_keys=True, separators=(",", ":")).encode()
    line = envelope.sign(payload, IN_TOTO_PAYLOAD_TYPE, SIGNER).to_bytes() + b"\n"
    found = replay(edited(BUNDLE, "receipt.json", lambda _: line), SIGNER.keyid)
    assert found.outcome != "same"


def declaring(files: dict[str, bytes], name: str, data: bytes, method: int, size: int) -> bytes:
    """The files zipped with ``name`` holding ``data`` compressed with ``method``, its local
    header and central directory declaring ``size`` bytes (a zip bomb lies about its size)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for member, content in files.items():
            z.writestr(member, content)
        z.writestr(zipfile.ZipInfo(name), data, compress_type=method)
    zipped = bytearray(out.getvalue())
    encoded = name.encode()
    local = zipped.rfind(b"PK\x03\x04", 0, zipped.find(b"PK\x01\x02"))
    assert zipped[local + 30 : local + 30 + len(encoded)] == encoded
    zipped[local + 22 : local + 26] = size.to_bytes(4, "little")
    central = zipped.rfind(b"PK\x01\x02")
    assert zipped[central + 46 : central + 46 + len(encoded)] == encoded
    zipped[central + 24 : central + 28] = size.to_bytes(4, "little")
    return bytes(zipped)


def test_a_member_is_never_decompressed_past_the_size_it_declares() -> None:
    """A zip bomb: a member declaring 10 bytes that deflates to 128 MiB is refused, and reading
    it never holds more than a piece of it (before: ``ZipFile.read`` decompressed all of it in
    one call, so a few kilobytes of bzip2 took every byte of memory and crashed the replay
    with a MemoryError)."""
    bomb = declaring(
        members(BUNDLE), "bomb.txt", bytes(128 * 1024 * 1024), zipfile.ZIP_DEFLATED, 10
    )
    tracemalloc.start()
    try:
        with pytest.raises(Error) as refused:
            replay(bomb, SIGNER.keyid)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused.value.code == "BUNDLE_UNUSABLE" and "bomb.txt" in refused.value.message
    assert peak < 16 * 1024 * 1024


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_a_member_compressed_other_than_deflate_is_refused(method: int) -> None:
    """bzip2 and LZMA, whose decompressors ``zipfile`` cannot bound, are no bundle's: refused
    by name before a byte is decompressed (a bundle is written deflated)."""
    files = members(BUNDLE)
    bundle = declaring(
        {n: d for n, d in files.items() if n != "result.txt"},
        "result.txt",
        files["result.txt"],
        method,
        len(files["result.txt"]),
    )
    with pytest.raises(Error) as refused:
        replay(bundle, SIGNER.keyid)
    assert refused.value.code == "BUNDLE_UNUSABLE"
    assert "'result.txt' is compressed with method" in refused.value.message


def _with_subject(tmp_path: Path, subject: str) -> Path:
    """The bundle written to a file with its (unsigned) manifest naming ``subject``."""
    files = members(BUNDLE)
    manifest = json.loads(files["manifest.json"])
    manifest["subject"] = subject
    files["manifest.json"] = json.dumps(manifest).encode()
    path = tmp_path / "bundle.zip"
    path.write_bytes(zipped(files))
    return path


def test_the_replay_command_shows_what_the_manifest_says_as_text(tmp_path: Path) -> None:
    """The manifest is signed by nothing: a subject holding an escape sequence that would
    rewrite ``DIFFERENT`` as ``SAME``, and a lone surrogate, are printed as escapes (before:
    written raw to the terminal, and the surrogate crashed the command with a
    UnicodeEncodeError)."""
    path = _with_subject(tmp_path, "task:1\x1b[1A\r\x1b[2KSAME: nothing differs\ud800")
    result = CliRunner().invoke(app, ["replay", str(path), "--key", SIGNER.keyid], color=True)
    assert result.exit_code == 1, result.output
    assert "DIFFERENT" in result.output
    assert not any(c in result.output for c in "\x1b\r")
    assert "task:1\\x1b[1A\\x0d\\x1b[2KSAME: nothing differs\\ud800" in result.output


@pytest.mark.parametrize(
    ("name", "lie"),
    [
        ("criteria.json", b'{"min_length": 1000, '),
        ("key.json", b'{"keyid": "' + b"0" * 64 + b'", '),
        ("verification.json", b'{"passed": false, '),
    ],
)
def test_a_bundle_file_with_a_key_twice_is_no_bundle(name: str, lie: bytes) -> None:
    """A key written twice, the first value a lie: json reads the last, which the replay binds
    and finds the same, while a reader that keeps the first (a viewer, another parser) shows an
    auditor the lie. Refused, BUNDLE_UNUSABLE (before: SAME)."""
    forged = edited(BUNDLE, name, lambda held: lie + held.lstrip()[1:])
    with pytest.raises(Error) as refused:
        replay(forged, SIGNER.keyid)
    assert refused.value.code == "BUNDLE_UNUSABLE" and "appears twice" in refused.value.message


def test_a_manifest_with_a_key_twice_is_no_bundle() -> None:
    """The manifest too: two subjects, the first another task's."""
    files = members(BUNDLE)
    files["manifest.json"] = b'{"subject": "task:other/round:1", ' + files["manifest.json"][1:]
    with pytest.raises(Error) as refused:
        replay(zipped(files), SIGNER.keyid)
    assert refused.value.code == "BUNDLE_UNUSABLE" and "appears twice" in refused.value.message


def _local_records(files: dict[str, bytes]) -> bytes:
    """The local records of a zip of ``files``, without its directory: what a reader walking
    the zip from its first byte reads as its files."""
    data = zipped(files)
    return data[: data.find(b"PK\x01\x02")]


@pytest.mark.parametrize(
    ("layout", "why"),
    [
        (lambda b: _local_records({"result.txt": b"Forged."}) + b, "does not start where"),
        (lambda b: b + b"trailing bytes", "does not end with its end record"),
        (lambda b: b[:-2] + b"\x01\x00!", "does not end with its end record"),
    ],
    ids=["before", "after", "comment"],
)
def test_a_zip_holding_bytes_that_are_none_of_its_files_is_no_bundle(layout: Any, why: str) -> None:
    """zipfile reads the directory at the end and skips the rest; a streaming unzipper reads
    the local records from the first byte. A forged result.txt put before the bundle's files
    (or bytes after its end) is refused, BUNDLE_UNUSABLE (before: SAME on the directory's
    result, while a streaming reader showed the forged one)."""
    with pytest.raises(Error) as refused:
        replay(layout(BUNDLE), SIGNER.keyid)
    assert refused.value.code == "BUNDLE_UNUSABLE" and why in refused.value.message


def test_a_zip_written_as_a_stream_is_a_bundle() -> None:
    """Sizes written after each file's data (a zip written to a pipe) fill the bytes too."""

    class Pipe(io.RawIOBase):
        def __init__(self) -> None:
            self.written = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, data: Any) -> int:
            self.written += data
            return len(data)

    pipe = Pipe()
    with zipfile.ZipFile(pipe, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members(BUNDLE).items():
            with z.open(name, "w") as member:
                member.write(data)
    assert replay(bytes(pipe.written), SIGNER.keyid).outcome == "same"


def test_an_unusable_bundle_is_refused_with_its_names_shown_as_text(tmp_path: Path) -> None:
    """A refusal names what the bundle holds (here a file the manifest does not list, named
    with an escape sequence): printed as escapes, never raw to the terminal (before: raw)."""
    path = tmp_path / "bundle.zip"
    path.write_bytes(zipped({**members(BUNDLE), "x\x1b[1A\x1b[2KSAME.txt": b""}))
    result = CliRunner().invoke(app, ["replay", str(path), "--key", SIGNER.keyid], color=True)
    assert result.exit_code == 2
    assert "\x1b" not in result.output and "x\\x1b[1A\\x1b[2KSAME.txt" in result.output


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("request.json", b'{"call_id": "c", "arguments": {"q": "never asked"}}\n'),
        ("brief.txt", b"A brief no vote quotes.\n"),
        ("salt.json", b'"a salt the criteria, hiding no answer, are not digested with"\n'),
    ],
)
def test_a_file_the_replay_does_not_read_is_a_difference(name: str, data: bytes) -> None:
    """A file the replay of its kind never reads is bound by nothing, yet an auditor reads it
    as part of the verdict: listed in the manifest (a careful forger), it is a difference
    (before: SAME, the file unread)."""
    files = members(BUNDLE)
    found = replay(rehashed_with(files, name, data), SIGNER.keyid)
    assert found.outcome == "different"
    assert [d.what for d in found.differences] == [name]


def test_a_reported_response_beside_the_providers_bytes_is_unread() -> None:
    """A forwarded call is judged on response.bin; a response.json beside it is unread."""
    held = {"receipt.json": b"", "key.json": b"", "response.bin": b"", "response.json": b""}
    assert unread(Bundle({"kind": "call"}, held)) == ["response.json"]
    assert unread(Bundle({"kind": "call"}, {**held, "response.bin": b""})) == ["response.json"]
    del held["response.bin"]
    assert unread(Bundle({"kind": "call"}, held)) == []


def rehashed_with(files: dict[str, bytes], name: str, data: bytes) -> bytes:
    """The files with ``name`` added and listed in the manifest with its sha256."""
    manifest = json.loads(files["manifest.json"])
    manifest["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "what": "added"}
    return zipped({**files, "manifest.json": json.dumps(manifest).encode(), name: data})


@pytest.mark.parametrize(("offset", "value"), [(8, b"\x00\x00"), (18, b"\x01\x00\x00\x00")])
def test_a_local_record_the_directory_contradicts_is_no_bundle(offset: int, value: bytes) -> None:
    """The manifest's local record saying stored, or another compressed size, than the
    directory: a streaming reader would read other bytes as the file (before: read as the
    directory says, SAME)."""
    data = bytearray(BUNDLE)
    data[offset : offset + len(value)] = value
    with pytest.raises(Error) as refused:
        replay(bytes(data), SIGNER.keyid)
    assert refused.value.code == "BUNDLE_UNUSABLE" and "disagree" in refused.value.message


def test_the_replay_commands_json_holds_a_lone_surrogate_as_its_escape(tmp_path: Path) -> None:
    """--json: a manifest's lone surrogate is written as its JSON escape, and the report reads
    back (before: a UnicodeEncodeError, exit 1, which reads as DIFFERENT)."""
    path = _with_subject(tmp_path, "task:1\ud800")
    result = CliRunner().invoke(app, ["replay", str(path), "--key", SIGNER.keyid, "--json"])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    report = json.loads(result.stdout)
    assert report["subject"] == "task:1\ud800" and report["outcome"] == "different"


def test_a_zip_of_a_version_zipfile_cannot_read_is_no_bundle() -> None:
    """A file whose directory entry needs version 11.2 to extract: BUNDLE_UNUSABLE (before:
    zipfile's NotImplementedError, a traceback)."""
    data = bytearray(BUNDLE)
    central = data.find(b"PK\x01\x02")
    data[central + 6 : central + 8] = (112).to_bytes(2, "little")
    with pytest.raises(Error) as refused:
        replay(bytes(data), SIGNER.keyid)
    assert refused.value.code == "BUNDLE_UNUSABLE" and "not a zip file" in refused.value.message


def test_the_receipt_is_named_by_its_signed_statement_not_the_manifest(tmp_path: Path) -> None:
    """The header names the receipt by the sha256 of the statement its key signed; the
    service's ``rcpt_`` id, which only the manifest holds and nothing signs, is shown apart and
    said to be unsigned (before: the header showed the manifest's id as the receipt's, so a
    bundle could name any receipt and still replay the same)."""
    files = members(BUNDLE)
    manifest = json.loads(files["manifest.json"])
    digest = manifest["receipt"]["digest"]
    manifest["receipt"]["id"] = "rcpt_forged"
    files["manifest.json"] = json.dumps(manifest).encode()
    path = tmp_path / "bundle.zip"
    path.write_bytes(zipped(files))
    result = CliRunner().invoke(app, ["replay", str(path), "--key", SIGNER.keyid])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"replay of {manifest['subject']} (receipt {digest})"
    labelled = [line for line in lines if "rcpt_forged" in line]
    assert labelled == ["label:    rcpt_forged (the service's id, as the manifest says: unsigned)"]
    found = replay(path.read_bytes(), SIGNER.keyid)
    assert found.outcome == "same"
    assert (found.receipt_id, found.receipt_label) == (digest, "rcpt_forged")
    result = CliRunner().invoke(app, ["replay", str(path), "--key", SIGNER.keyid, "--json"])
    report = json.loads(result.stdout)
    assert (report["receipt"], report["receipt_label"]) == (digest, "rcpt_forged")
