"""``adjudge receipt bundle`` against a real server on loopback, then ``adjudge replay`` offline:
the same verdict byte for byte, or the exact difference with a stable exit status."""

from __future__ import annotations

import base64
import hashlib
import io
import itertools
import json
import stat
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from adjudge.cli import app
from adjudge.receipts import SignedReceipts, SigningKey
from adjudge.replay import engine
from adjudge.store import Store
from support.harness import Harness, make_harness
from support.live import serving
from support.weather import weather_world

CRITERIA = {
    "min_length": 40,
    "rubric": [{"criterion": "names the escrow", "keywords": ["escrow"], "weight": 2}],
}
GOOD = "The escrow holds the reward until the auto check passes the result."
SHORT = "Too short."
runner = CliRunner()


@contextmanager
def served(store: Store) -> Iterator[tuple[Harness, SignedReceipts, str]]:
    """A service with the real auto check and signed receipts, on loopback."""
    issuer = SignedReceipts(SigningKey.generate())
    h = make_harness(store, real_checker=True, issuer=issuer)
    with serving(h.app) as url:
        yield h, issuer, url


def bundle(url: str, key: str, out: Path, *args: str) -> tuple[int, str, str]:
    """``adjudge receipt bundle … --out OUT`` as the holder of API key ``key``."""
    r = runner.invoke(
        app, ["receipt", "bundle", "--url", url, "--key", key, "--out", str(out), *args]
    )
    return r.exit_code, r.stdout, r.stderr


def replay(path: Path, *args: str) -> tuple[int, str]:
    """``adjudge replay PATH …`` (no service, no network)."""
    r = runner.invoke(app, ["replay", str(path), *args])
    return r.exit_code, r.stdout + r.stderr


def report(path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    """``adjudge replay PATH --json …``: the exit status and the report."""
    r = runner.invoke(app, ["replay", str(path), "--json", *args])
    return r.exit_code, json.loads(r.stdout)


def _indented(line: str) -> bool:
    return line.startswith("  ")


def auto_task(h: Harness, *results: str) -> str:
    """An auto task with ``CRITERIA``, ann submitting and finalizing each result in turn."""
    tid = h.post("auto", criteria=CRITERIA)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    for result in results:
        h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": result})
        h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    return tid


def rewritten(
    source: Path, target: Path, name: str, edit: Callable[[bytes], bytes], *, rehash: bool = True
) -> Path:
    """A copy of the bundle ``source`` with file ``name`` edited by hand — the manifest's sha256
    updated to match (``rehash``), as a careful forger would, or left as it was."""
    with zipfile.ZipFile(source) as z:
        files = {n: z.read(n) for n in z.namelist()}
    files[name] = edit(files[name])
    if rehash and name != "manifest.json":
        manifest = json.loads(files["manifest.json"])
        manifest["files"][name]["sha256"] = hashlib.sha256(files[name]).hexdigest()
        files["manifest.json"] = json.dumps(manifest).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n, data in files.items():
            z.writestr(n, data)
    target.write_bytes(out.getvalue())
    return target


def test_an_auto_pass_and_fail_replay_the_same_byte_for_byte(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """Round 1 fails, round 2 passes: each round's bundle replays offline to its verdict, its
    reasons printed exactly as the service gave them, and SAME, exit 0; each bundle is written
    for its owner's eyes only (0600)."""
    with served(sqlite_store) as (h, issuer, url):
        tid = auto_task(h, SHORT, GOOD)
        task = h.ok("ann", "GET", f"/tasks/{tid}")
        code, out, _ = bundle(
            url, h.keys["ann"], tmp_path / "fail.zip", "--task", tid, "--attempt", "1"
        )
        assert code == 0 and f"signed by key {issuer.fingerprint}" in out
        assert f"adjudge replay {tmp_path / 'fail.zip'} --key {issuer.fingerprint}" in out
        assert bundle(url, h.keys["pat"], tmp_path / "pass.zip", "--task", tid)[0] == 0
    # Only its owner reads a bundle: it holds what the API shows only to the parties.
    assert stat.S_IMODE((tmp_path / "fail.zip").stat().st_mode) == 0o600
    for name, verdict in (("fail", task["verdicts"][0]), ("pass", task["verdicts"][1])):
        code, text = replay(tmp_path / f"{name}.zip", "--key", issuer.fingerprint)
        assert code == 0, text
        signed = "PASS" if verdict["passed"] else "FAIL"
        lines = text.splitlines()
        at = lines.index(f"verdict:  {signed} (signed {signed})")
        shown = [line[2:] for line in itertools.takewhile(_indented, lines[at + 1 :])]
        assert shown == [f"score {verdict['score']}", *verdict["reasons"]]
        assert "SAME: the re-derived statement is byte for byte the signed one" in text
        assert f"key:      {issuer.fingerprint}" in text
    code, found = report(tmp_path / "pass.zip")
    assert code == 0 and found["outcome"] == "same" and found["differences"] == []
    assert found["reasons"] == ["All verification criteria met"]
    assert found["engine"] == {"recorded": engine(), "replay": engine()}
    assert any("policyDecision" in note for note in found["notes"])  # the money: carried over
    with zipfile.ZipFile(tmp_path / "pass.zip") as z:
        manifest = json.loads(z.read("manifest.json"))
        receipt = json.loads(z.read("receipt.json"))
        assert z.read("result.txt") == GOOD.encode()
    assert manifest["format"] == "adjudge.replay-bundle/v1"
    assert manifest["subject"] == f"task:{tid}/round:2"
    assert manifest["depends_on"]["result"] == task["result_digest"]
    statement = json.loads(base64.b64decode(receipt["payload"]))
    assert manifest["depends_on"]["criteria"] == statement["predicate"]["criteriaDigest"]
    assert statement["predicate"]["criteriaDigest"] is not None  # the receipt binds them


def test_a_paid_call_replays_the_same(sqlite_store: Store, tmp_path: Path) -> None:
    """A call forwarded through the gateway to a provider on loopback: its bundle holds the bytes
    the provider answered, the tool's contract and policy; replayed, the same, exit 0."""
    with weather_world(sqlite_store) as world:
        answer = world.call({"city": "berlin", "days": 3}).json()
        assert answer["status"] == "settled"
        call_id = answer["intentId"]
        out = tmp_path / "call.zip"
        code, printed, err = bundle(world.service, world.h.keys["ann"], out, "--call", call_id)
        assert code == 0, err
        assert f"call:{call_id}" in printed
        code, err = bundle(
            world.service, world.h.keys["bob"], tmp_path / "x.zip", "--call", call_id
        )[::2]
        assert code == 1 and err.startswith("NOT_A_PARTY:")
        assert not (tmp_path / "x.zip").exists()
        world.script.answer = "bad"  # refunded, its output withheld from its caller
        refunded = world.call({"city": "berlin", "days": 3}).json()
        assert refunded["status"] == "refunded"
        path = f"/calls/{refunded['intentId']}/bundle"
        assert world.h.refused("ann", "GET", path) == (403, "BUNDLE_WITHHELD")
        failed = tmp_path / "refunded.zip"  # the provider audits the FAIL that struck it
        assert (
            bundle(world.service, world.h.keys["skycast"], failed, "--call", refunded["intentId"])[
                0
            ]
            == 0
        )
    code, struck = report(failed, "--key", world.signer.keyid)
    assert code == 0 and struck["verdict"] == "FAIL", struck["differences"]
    assert struck["lines"][-1] == "call verdict FAIL, payment refund, strike true"
    code, found = report(out, "--key", world.signer.keyid)
    assert code == 0, found["differences"]
    assert found["kind"] == "call" and found["verdict"] == "PASS"
    assert found["call_verdict"] == "PASS" and found["payment"] == "settle"
    assert found["lines"][-1] == "call verdict PASS, payment settle, strike false"
    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        body = z.read("response.bin")
    assert {"response.bin", "contract.json", "policy.json", "request.json"} <= names
    assert json.loads(body)["daily"][0]["date"] == "2026-01-10"
    edited = rewritten(out, tmp_path / "e.zip", "response.bin", lambda b: b.replace(b"5.0", b"9.5"))
    code, found = report(edited, "--key", world.signer.keyid)
    differences = {d["what"]: d for d in found["differences"]}
    assert code == 1 and "a changed byte in the response" in differences["response.bin"]["why"]
    changed = differences["subject[0] (result).digest.sha256"]  # another response was judged
    assert changed["recorded"] == hashlib.sha256(body).hexdigest()
    assert changed["replayed"] == hashlib.sha256(body.replace(b"5.0", b"9.5")).hexdigest()
    assert differences["record.json.response_digest"]["why"].startswith("the service's stored")


def test_hand_edited_bundles_give_the_exact_difference(sqlite_store: Store, tmp_path: Path) -> None:
    """A result byte, the criteria, the manifest's engine, the signature, a Unicode table, the
    pinned key: each edit is named with both values and its cause, exit 1; a zip that is not a
    bundle exits 2."""
    with served(sqlite_store) as (h, issuer, url):
        tid = auto_task(h, GOOD)
        digest = h.ok("pat", "GET", f"/tasks/{tid}")["result_digest"]
        good = tmp_path / "good.zip"
        assert bundle(url, h.keys["pat"], good, "--task", tid)[0] == 0
    pin = ("--key", issuer.fingerprint)

    def differences(path: Path) -> dict[str, dict[str, Any]]:
        code, found = report(path, *pin)
        assert code == 1 and found["outcome"] == "different"
        return {d["what"]: d for d in found["differences"]}

    # (1) One byte of the result, the manifest updated to match: the receipt still catches it.
    edited = rewritten(
        good, tmp_path / "r.zip", "result.txt", lambda b: b.replace(b"reward", b"rewards")
    )
    found = differences(edited)
    changed = "sha256:" + hashlib.sha256(GOOD.replace("reward", "rewards").encode()).hexdigest()
    assert found["result.txt"]["recorded"] == digest
    assert found["result.txt"]["replayed"] == changed
    assert "a changed byte in the result" in found["result.txt"]["why"]
    assert found["predicate.verdict"]["recorded"] == "PASS"
    assert found["predicate.verdict"]["replayed"] == "MISMATCH"
    # (1b) The same edit with the manifest left alone: the file's own sha256 says so first.
    found = differences(
        rewritten(good, tmp_path / "r2.zip", "result.txt", lambda b: b + b"!", rehash=False)
    )
    assert "changed after the bundle was made" in found["manifest files.result.txt.sha256"]["why"]
    assert "a changed byte in the result" in found["result.txt"]["why"]
    # (2) The criteria: not the ones the receipt binds; the check re-run on them fails.
    found = differences(
        rewritten(good, tmp_path / "c.zip", "criteria.json", lambda b: b.replace(b"40", b"400"))
    )
    assert "the criteria are not the ones the receipt binds" in found["criteria.json"]["why"]
    assert found["predicate.checks[1] (auto-check).verdict"]["replayed"] == "FAIL"
    # (3) The manifest's engine version: the receipt signs another.
    found = differences(
        rewritten(
            good,
            tmp_path / "e.zip",
            "manifest.json",
            lambda b: b.replace(b'"adjudge": "0.1.0"', b'"adjudge": "9.9.9"'),
        )
    )
    assert set(found) == {"manifest engine.adjudge"}
    assert found["manifest engine.adjudge"]["recorded"] == "0.1.0"
    assert found["manifest engine.adjudge"]["replayed"] == "9.9.9"
    # (4) Another Unicode table recorded than this replay runs.
    found = differences(
        rewritten(
            good,
            tmp_path / "u.zip",
            "manifest.json",
            lambda b: b.replace(b'"unicode": "17.0.0"', b'"unicode": "16.0.0"'),
        )
    )
    assert set(found) == {"engine.unicode"}
    assert "another Unicode table" in found["engine.unicode"]["why"]

    # (5) A signature that does not verify.
    def forge(data: bytes) -> bytes:
        envelope = json.loads(data)
        sig = bytearray(base64.b64decode(envelope["signatures"][0]["sig"]))
        sig[0] ^= 1
        envelope["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
        return json.dumps(envelope).encode()

    found = differences(rewritten(good, tmp_path / "s.zip", "receipt.json", forge))
    assert set(found) == {"receipt.json"}
    assert found["receipt.json"]["why"].startswith("RECEIPT_SIGNATURE_INVALID:")
    # (5b) A manifest naming another receipt than the one it holds.
    found = differences(
        rewritten(
            good,
            tmp_path / "d.zip",
            "manifest.json",
            lambda b: b.replace(b'"sha256:', b'"sha256:0', 1),
        )
    )
    assert "manifest receipt.digest" in found
    assert "is not the one the manifest names" in found["manifest receipt.digest"]["why"]
    # (6) A key other than the one pinned.
    code, found_report = report(good, "--key", SigningKey.generate().keyid)
    assert code == 1 and [d["what"] for d in found_report["differences"]] == ["key"]
    # (7) Not a bundle at all, or one missing a file: unusable, exit 2.
    (tmp_path / "junk.zip").write_bytes(b"PK not really")
    code, text = replay(tmp_path / "junk.zip")
    assert code == 2 and text.startswith(
        "BUNDLE_UNUSABLE: Not a usable replay bundle: it is not a zip"
    )
    with zipfile.ZipFile(good) as z, zipfile.ZipFile(tmp_path / "m.zip", "w") as short:
        for name in z.namelist():
            if name != "criteria.json":
                short.writestr(name, z.read(name))
    code, text = replay(tmp_path / "m.zip")
    assert code == 2 and "criteria.json, which the zip does not hold" in text
    # A file whose compressed bytes are damaged (zlib's or lzma's error, not the zip's):
    # unusable, exit 2 (it was a traceback and exit 1, DIFFERENT's code).
    for method in (zipfile.ZIP_DEFLATED, zipfile.ZIP_LZMA):
        with zipfile.ZipFile(good) as z, zipfile.ZipFile(tmp_path / "d.zip", "w") as damaged:
            for name in z.namelist():
                damaged.writestr(name, z.read(name), compress_type=method)
        data = bytearray((tmp_path / "d.zip").read_bytes())
        start = data.find(b"criteria.json") + len("criteria.json")
        data[start : start + 8] = bytes(8)  # the start of its compressed stream
        (tmp_path / "d.zip").write_bytes(bytes(data))
        code, text = replay(tmp_path / "d.zip")
        assert code == 2 and text.startswith("BUNDLE_UNUSABLE: "), (method, code, text)
    # The text report names each difference too, and says DIFFERENT.
    code, text = replay(tmp_path / "s.zip", *pin)
    assert code == 1 and "DIFFERENT: 1 difference" in text and "RECEIPT_SIGNATURE_INVALID" in text


def test_bundles_are_for_parties_only(sqlite_store: Store, tmp_path: Path) -> None:
    """Another agent is refused (NOT_A_PARTY), so is an agent when the criteria hold an expected
    answer it may not see (BUNDLE_WITHHELD); a task no auto check judged has none."""
    with served(sqlite_store) as (h, _, url):
        tid = auto_task(h, GOOD)
        out = tmp_path / "b.zip"
        code, _, err = bundle(url, h.keys["bob"], out, "--task", tid)
        assert code == 1 and err.startswith("NOT_A_PARTY:") and not out.exists()
        assert h.refused("bob", "GET", f"/tasks/{tid}/bundle") == (403, "NOT_A_PARTY")
        assert h.ok("root", "GET", f"/tasks/{tid}/bundle")["result"] == GOOD  # an admin may
        hidden = h.post("auto", criteria={**CRITERIA, "expected_answer": "escrow"})
        h.ok("ann", "POST", f"/tasks/{hidden}/accept")
        h.ok("ann", "POST", f"/tasks/{hidden}/submissions", {"result": GOOD})
        h.ok("ann", "POST", f"/tasks/{hidden}/finalize")
        assert h.refused("ann", "GET", f"/tasks/{hidden}/bundle") == (403, "BUNDLE_WITHHELD")
        assert h.ok("pat", "GET", f"/tasks/{hidden}/bundle")["criteria"]["expected_answer"]
        manual = h.post("manual")
        assert h.refused("pat", "GET", f"/tasks/{manual}/bundle") == (409, "BUNDLE_NOT_AVAILABLE")
        assert bundle(url, h.keys["pat"], out, "--task", tid)[0] == 0
        code, _, err = bundle(url, h.keys["pat"], out, "--task", tid)
        assert code == 2 and err.startswith("FILE_EXISTS:")


@pytest.mark.parametrize(
    "flag", [[], ["--task", "t", "--call", "c"], ["--call", "c", "--attempt", "1"]]
)
def test_bundle_needs_one_subject(flag: list[str], tmp_path: Path) -> None:
    """Neither --task nor --call, both, or --attempt without --task: exit 2 before any request."""
    code, _, err = bundle("http://127.0.0.1:9", "k", tmp_path / "b.zip", *flag)
    assert code == 2 and err
