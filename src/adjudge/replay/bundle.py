"""The replay bundle's format: a zip of a receipt and every input its verdict depended on.

A bundle is a zip whose first member is ``manifest.json``::

    {"format": "adjudge.replay-bundle/v1",
     "kind": "task" | "call",
     "subject": "task:<id>/round:<n>" | "call:<id>",   (the receipt's ``about``)
     "receipt": {"id": "rcpt_…", "digest": "sha256:…"}, (the service's id; the signed id)
     "engine": {"adjudge": "0.1.0", "unicode": "17.0.0", "normalization": "17.0.0"},
     "depends_on": {"result": "sha256:…", "criteria": "sha256:…", …},
     "files": {"receipt.json": {"sha256": "<hex>", "what": "…"}, …}}

``engine`` is the engine of the service that made the bundle (the receipt signs only the adjudge
version that decided); ``depends_on`` names, by digest, each input the verdict was derived from
(:func:`depends_on`, recomputed by every replay). The members are written in a fixed order with
fixed times and modes, so the same parts always make the same bytes.

Reading refuses (``BUNDLE_UNUSABLE``) anything that is not such a zip: no manifest, another
format, a file the manifest does not list or one it lists that is missing, a name with a path in
it, more than :data:`MAX_FILES` files or :data:`MAX_BYTES` bytes (as declared, and no member
decompressed past its declared size), a member compressed other than by deflate or not at all,
JSON (the manifest, or a file read) with a key twice in one object, a zip whose files do not
fill its bytes end to end (:func:`_require_layout`).
A file whose bytes do not match the manifest's sha256 is *read*, and reported by the replay as a
difference: what changed is the finding.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import lzma
import struct
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from adjudge.calls.verify import digest_of
from adjudge.digests import sha256_digest
from adjudge.errors import BadInput, Error
from adjudge.json_text import unique_keys
from adjudge.receipts.canonical import canonical_bytes

FORMAT: Final = "adjudge.replay-bundle/v1"
MANIFEST: Final = "manifest.json"
KINDS: Final = ("task", "call")
#: The most files and bytes (uncompressed, in all) a bundle is read with.
MAX_FILES: Final = 32
MAX_BYTES: Final = 64 * 1024 * 1024

#: Every file a bundle may hold and what it is, in the order they are written; the manifest
#: repeats the sentence for each file it lists.
FILES: Final[dict[str, str]] = {
    "receipt.json": "the signed receipt: its DSSE envelope as the service stored it",
    "key.json": (
        "the service's receipt signing key {keyid, publicKey}: compare the keyid with the key "
        "the service publishes (GET /api/v1/receipts/head) through a channel you trust"
    ),
    "result.txt": "the result as stored: the bytes the receipt's subject digest covers",
    "criteria.json": (
        "the task's criteria as posted; the receipt's criteriaDigest is the sha256 of their "
        "RFC 8785 JSON (of {criteria, salt} when they hold an expected_answer)"
    ),
    "salt.json": (
        "the secret salt of criteria holding an expected_answer, drawn at posting: the "
        "receipt's criteriaDigest is the sha256 of the RFC 8785 JSON of {criteria, salt} (a "
        "sealed task's salt is its reveal's)"
    ),
    "reveal.json": (
        "a sealed task's reveal {criteria, salt}: the sha256 of its RFC 8785 JSON is the "
        "commitment the receipt's (= sealed-criteria …) check names, and its criteria are in "
        "criteria.json"
    ),
    "verification.json": "the service's stored verificationResult (unsigned; compared too)",
    "brief.txt": "a panel task's brief as posted: the votes' quotes are checked against it",
    "votes.json": (
        "a panel of verifiers' decision: {task_id, attempt, quorum, panel: [{verifier, key}], "
        "votes: [{verifier, key, passed, signed: {payload, signature, public_key, digest}}]}; "
        "each vote's signature is re-verified and its quotes re-grounded"
    ),
    "call.json": (
        "how the call was verified: {source, at[, caller][, payment][, policy_registered_by]} "
        "(at: the verification time; caller: the account a forwarded call's money settles for "
        "or returns to; payment: none when the receipt, a judgment superseding the call's, "
        "moved no money because the call's charge had gone back before it; "
        "policy_registered_by: the account that registered an enforcing policy in the "
        "provider's stead, which then acted as shadow)"
    ),
    "request.json": "the call's request: call id, provider, tool, arguments, price",
    "response.json": "the response as its caller reported it: {status, body[, digest]}",
    "response.bin": (
        "the bytes the provider answered the forwarded call with: the bytes the receipt's "
        "subject digest covers"
    ),
    "contract.json": (
        "the tool's contract the call was verified under (bound by the receipt's "
        "policyDecision.contractDigest)"
    ),
    "policy.json": (
        "the decision policy that judged the call (bound by the receipt's criteriaDigest)"
    ),
    "judgment.json": "the meaning judgment the verification read",
    "judgments.json": "the named judges' meaning judgments the verification read (k of n)",
    "corroboration.json": "the corroboration of an empty answer the verification read",
    "record.json": "the service's stored call record (unsigned; compared too)",
}
#: The files a bundle of each kind cannot be replayed without.
REQUIRED: Final[dict[str, tuple[str, ...]]] = {
    "task": ("receipt.json", "key.json", "result.txt", "criteria.json"),
    "call": ("receipt.json", "key.json", "call.json", "request.json", "contract.json"),
}
#: The files a replay of each kind reads; any other the bundle holds is bound by nothing.
READ: Final[dict[str, frozenset[str]]] = {
    "task": frozenset(
        {
            "receipt.json",
            "key.json",
            "result.txt",
            "criteria.json",
            "salt.json",
            "reveal.json",
            "verification.json",
            "brief.txt",
            "votes.json",
        }
    ),
    "call": frozenset(
        {
            "receipt.json",
            "key.json",
            "call.json",
            "request.json",
            "response.bin",
            "response.json",
            "contract.json",
            "policy.json",
            "judgment.json",
            "judgments.json",
            "corroboration.json",
            "record.json",
        }
    ),
}


def unread(bundle: Bundle) -> list[str]:
    """The files of ``bundle`` its replay never reads, so that nothing binds them: another
    kind's, ``brief.txt`` without the votes that quote it, and ``response.json`` beside
    ``response.bin`` (a forwarded call is judged on the bytes its provider answered, and the
    service's bundle of one holds no reported response), and ``salt.json`` where the criteria
    are not digested with it (they hide no answer, or a reveal brings its own salt)."""
    read = set(READ[bundle.kind])
    if "votes.json" not in bundle.files:
        read.discard("brief.txt")
    if "salt.json" in bundle.files and not _salted(bundle):
        read.discard("salt.json")
    if "response.bin" in bundle.files:
        read.discard("response.json")
    return sorted(set(bundle.files) - read)


def _salted(bundle: Bundle) -> bool:
    """Whether the replay digests the criteria with ``salt.json``: criteria hiding an answer,
    and no reveal (whose own salt a sealed task's criteria are digested with). Criteria that are
    not JSON count as salted here: the replay refuses them, saying why."""
    if "reveal.json" in bundle.files:
        return False
    try:
        criteria = bundle.json("criteria.json")
    except Error:
        return True
    return not isinstance(criteria, dict) or "expected_answer" in criteria


# Fixed member metadata: the same parts make the same bytes on any machine, at any time.
_EPOCH = (1980, 1, 1, 0, 0, 0)
_MODE = 0o100644 << 16


@dataclass(frozen=True)
class Bundle:
    """A bundle as read: its manifest and its files' bytes (by name, the manifest excluded)."""

    manifest: Mapping[str, Any]
    files: Mapping[str, bytes]

    @property
    def kind(self) -> str:
        """``task`` or ``call``."""
        return str(self.manifest["kind"])

    def json(self, name: str) -> Any:
        """The JSON value of file ``name`` (``BUNDLE_UNUSABLE`` when it is not JSON)."""
        try:
            return _loads(self.files[name])
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise unusable(f"{name} is not JSON ({exc})") from exc

    def optional(self, name: str) -> Any:
        """The JSON value of file ``name``, or None when the bundle has no such file."""
        return self.json(name) if name in self.files else None


def unusable(why: str) -> Error:
    """The refusal of a bundle no replay can run on."""
    return BadInput(f"Not a usable replay bundle: {why}.", code="BUNDLE_UNUSABLE")


def json_file(value: Any) -> bytes:
    """A JSON file of a bundle: indented for a person to read, keys in their given order, floats
    as Python writes them (so reading it back gives the very values the service held)."""
    return (json.dumps(value, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def depends_on(kind: str, files: Mapping[str, bytes]) -> dict[str, str | None]:
    """What the verdict depended on, by digest: the inputs of its re-derivation.

    A task's result (sha256 of its bytes) and criteria (the RFC 8785 digest of
    ``criteria.json``); a call's response (the sha256 of the bytes held, else the reported
    digest or the body's digest), contract, policy, judgment and corroboration (null when there
    is none), and its verification time. Unreadable files count as absent here; the replay says why.
    """

    def parsed(name: str) -> Any:
        try:
            return _loads(files[name]) if name in files else None
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None

    def document(name: str) -> str | None:
        value = parsed(name)
        return None if value is None else _digest_or_none(value)

    if kind == "task":
        result = files.get("result.txt")
        found = {
            "result": None if result is None else sha256_digest(result),
            "criteria": document("criteria.json"),
        }
        if "reveal.json" in files:
            found["reveal"] = document("reveal.json")
        if "votes.json" in files:
            brief = files.get("brief.txt")
            found["brief"] = None if brief is None else sha256_digest(brief)
            found["votes"] = document("votes.json")
        return found
    call = parsed("call.json")
    return {
        "response": response_digest(files),
        "contract": document("contract.json"),
        "policy": document("policy.json"),
        "judgment": document("judgment.json"),
        "judgments": document("judgments.json"),
        "corroboration": document("corroboration.json"),
        "at": call.get("at") if isinstance(call, dict) else None,
    }


def response_digest(files: Mapping[str, bytes]) -> str | None:
    """The digest the call's verification judged: of the bytes held, else as reported."""
    if "response.bin" in files:
        return sha256_digest(files["response.bin"])
    try:
        response = _loads(files["response.json"])
    except (KeyError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(response, dict) or "body" not in response:
        return None
    declared = response.get("digest")
    return declared if isinstance(declared, str) and declared else _digest_or_none(response["body"])


def build(
    *,
    kind: str,
    subject: str,
    receipt_id: str,
    receipt_digest: str,
    engine: Mapping[str, str],
    files: Mapping[str, bytes],
) -> bytes:
    """The zip bytes of a bundle of ``files`` (names from :data:`FILES`), with its manifest."""
    unknown = sorted(set(files) - set(FILES))
    if kind not in KINDS or unknown:
        raise unusable(f"a {kind} bundle cannot hold {', '.join(unknown) or 'this'}")
    names = [name for name in FILES if name in files]
    manifest = {
        "format": FORMAT,
        "kind": kind,
        "subject": subject,
        "receipt": {"id": receipt_id, "digest": receipt_digest},
        "engine": dict(engine),
        "depends_on": depends_on(kind, files),
        "files": {name: {"sha256": _hex(files[name]), "what": FILES[name]} for name in names},
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in (MANIFEST, *names):
            member = zipfile.ZipInfo(name, date_time=_EPOCH)
            member.external_attr = _MODE
            member.compress_type = zipfile.ZIP_DEFLATED
            data = json_file(manifest) if name == MANIFEST else files[name]
            archive.writestr(member, data)
    return out.getvalue()


def from_answer(answer: Mapping[str, Any]) -> bytes:
    """The bundle of the service's answer to ``GET /tasks/{id}/bundle`` or
    ``GET /calls/{id}/bundle`` (``BUNDLE_UNUSABLE`` for an answer that is not one)."""
    try:
        kind = answer["kind"]
        receipt = answer["receipt"]
        files: dict[str, bytes] = {
            "receipt.json": canonical_bytes(receipt["envelope"]) + b"\n",
            "key.json": json_file(dict(answer["key"])),
        }
        if kind == "task":
            files["result.txt"] = str(answer["result"]).encode("utf-8")
            files["criteria.json"] = json_file(answer["criteria"])
            if answer.get("criteria_salt") is not None:
                files["salt.json"] = json_file(answer["criteria_salt"])
            if answer.get("reveal") is not None:
                files["reveal.json"] = json_file(answer["reveal"])
            if answer.get("verification_result") is not None:
                files["verification.json"] = json_file(answer["verification_result"])
            if answer.get("votes") is not None:
                files["brief.txt"] = str(answer["brief"]).encode("utf-8")
                files["votes.json"] = json_file(answer["votes"])
        elif kind == "call":
            how = {"source": answer["source"], "at": answer["at"]}
            for name in ("caller", "payment", "policy_registered_by"):
                if answer.get(name) is not None:
                    how[name] = answer[name]
            files["call.json"] = json_file(how)
            files["request.json"] = json_file(answer["request"])
            if answer.get("response_bytes") is not None:
                files["response.bin"] = base64.b64decode(answer["response_bytes"], validate=True)
            if answer.get("response") is not None:
                files["response.json"] = json_file(answer["response"])
            files["contract.json"] = json_file(answer["contract"])
            for name in ("policy", "judgment", "judgments", "corroboration", "record"):
                if answer.get(name) is not None:
                    files[f"{name}.json"] = json_file(answer[name])
        return build(
            kind=kind,
            subject=str(answer["subject"]),
            receipt_id=str(receipt["id"]),
            receipt_digest=str(receipt["digest"]),
            engine=dict(answer["engine"]),
            files=files,
        )
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise unusable(f"the service's answer is not a bundle ({exc!r})") from exc


def read(data: bytes) -> Bundle:
    """Read and check a bundle's shape (see the module's docstring for what is refused)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, NotImplementedError) as exc:  # a version past 6.3
        raise unusable("it is not a zip file") from exc
    with archive:
        members = archive.infolist()
        names = [m.filename for m in members]
        if len(members) > MAX_FILES + 1 or sum(m.file_size for m in members) > MAX_BYTES:
            raise unusable(f"it holds more than {MAX_FILES} files or {MAX_BYTES} bytes")
        if len(set(names)) != len(names):
            raise unusable("it holds two files of one name")
        if MANIFEST not in names:
            raise unusable(f"it has no {MANIFEST}")
        for name in names:
            if "/" in name or "\\" in name or name.startswith("."):
                raise unusable(f"{name!r} is not a bundle file's name")
        _require_layout(data, members)
        for member in members:
            if member.compress_type not in _METHODS:
                raise unusable(
                    f"{member.filename!r} is compressed with method {member.compress_type}; a "
                    "bundle's files are stored or deflated"
                )
        try:
            contents = {m.filename: _member(archive, m) for m in members}
        except (  # a damaged stream is its compressor's error (zlib's, lzma's), a cut one EOF
            zipfile.BadZipFile,
            zipfile.LargeZipFile,
            NotImplementedError,
            OSError,
            RuntimeError,
            ValueError,
            EOFError,
            zlib.error,
            lzma.LZMAError,
            struct.error,
        ) as exc:
            raise unusable(f"a file cannot be read ({exc})") from exc
    manifest = _manifest(contents.pop(MANIFEST))
    listed = set(manifest["files"])
    if set(contents) != listed:
        extra, missing = sorted(set(contents) - listed), sorted(listed - set(contents))
        what = (
            f"{', '.join(extra)} {'is' if len(extra) == 1 else 'are'} not in the manifest"
            if extra
            else f"the manifest lists {', '.join(missing)}, which the zip does not hold"
        )
        raise unusable(what)
    absent = [n for n in REQUIRED[manifest["kind"]] if n not in contents]
    if absent:
        raise unusable(f"a {manifest['kind']} bundle needs {', '.join(absent)}")
    return Bundle(manifest, contents)


def _require_layout(data: bytes, members: list[zipfile.ZipInfo]) -> None:
    """Refuse a zip whose files do not fill its bytes end to end: each local record right after
    the one before it (the first at the first byte), the central directory right after the
    last, then one end record with no comment, and nothing else.

    ``zipfile`` reads the central directory at the end and skips whatever else the bytes hold;
    a reader that walks the local records from the start (a streaming unzipper) reads those
    instead, with the compression and sizes each local record states, which must therefore be
    the directory's. Bytes before the first file could hold another ``result.txt`` such a
    reader shows, while the replay judges the one the directory names and says SAME.
    """
    at = 0
    for member in sorted(members, key=lambda m: m.header_offset):
        if member.header_offset != at or data[at : at + 4] != _LOCAL or len(data) < at + 30:
            raise unusable(
                f"{member.filename!r} does not start where the file before it ends: the zip "
                "holds bytes that are none of its files"
            )
        (method,) = struct.unpack_from("<H", data, at + 8)
        sizes = struct.unpack_from("<III", data, at + 14)
        if method != member.compress_type or (
            not member.flag_bits & _DESCRIPTOR
            and sizes != (member.CRC, member.compress_size, member.file_size)
        ):
            raise unusable(
                f"the local record of {member.filename!r} and the zip's directory disagree on "
                "its compression, checksum or sizes"
            )
        name_length, extra_length = struct.unpack_from("<HH", data, at + 26)
        at += 30 + name_length + extra_length + member.compress_size
        if member.flag_bits & _DESCRIPTOR:  # sizes written after the data: 12 bytes, signed or not
            at += 16 if data[at : at + 4] == _DESCRIPTOR_SIGNATURE else 12
    end = len(data) - 22
    if end < at or data[end : end + 4] != _END or data[end + 20 : end + 22] != b"\0\0":
        raise unusable("the zip does not end with its end record (bytes follow it, or a comment)")
    size, offset = struct.unpack_from("<II", data, end + 12)
    if offset != at or offset + size != end:
        raise unusable("the zip's directory is not right after its files and right before its end")


_LOCAL: Final = b"PK\x03\x04"
_END: Final = b"PK\x05\x06"
_DESCRIPTOR: Final = 0x08
_DESCRIPTOR_SIGNATURE: Final = b"PK\x07\x08"


def _member(archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> bytes:
    """The bytes of ``member``, read a piece at a time and never past the size it declares.

    The declared sizes are what the limit on a bundle counts, so a member may not outgrow its
    own: a few kilobytes of zip can decompress to gigabytes, which read whole (as
    ``ZipFile.read`` does, one call to the decompressor) take all the memory there is before
    any check can run. Only stored and deflated members are read (:data:`_METHODS`), whose
    decompressor is bounded by each read's size; bzip2 and LZMA have no such bound in
    ``zipfile``.
    """
    pieces: list[bytes] = []
    left = member.file_size
    with archive.open(member) as stream:
        while piece := stream.read(min(_PIECE, left + 1)):
            left -= len(piece)
            if left < 0:
                raise unusable(f"{member.filename!r} holds more bytes than it declares")
            pieces.append(piece)
    return b"".join(pieces)


#: The compression methods a bundle's members may use: what :func:`build` writes (deflate),
#: and none at all.
_METHODS: Final = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
#: The most bytes decompressed at once while reading a member.
_PIECE: Final = 1024 * 1024


def changed_files(bundle: Bundle) -> list[tuple[str, str, str]]:
    """Each file whose sha256 is not the manifest's: ``(name, listed, actual)``."""
    changed = []
    for name, data in bundle.files.items():
        listed = str(bundle.manifest["files"][name]["sha256"])
        actual = _hex(data)
        if listed != actual:
            changed.append((name, listed, actual))
    return changed


def _manifest(data: bytes) -> dict[str, Any]:
    try:
        manifest = _loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise unusable(f"{MANIFEST} is not JSON ({exc})") from exc
    if not isinstance(manifest, dict):
        raise unusable(f"{MANIFEST} is not a JSON object")
    if manifest.get("format") != FORMAT:
        raise unusable(f"its format is {manifest.get('format')!r}; this replay reads {FORMAT}")
    if manifest.get("kind") not in KINDS:
        raise unusable(f"its kind is {manifest.get('kind')!r}, not task or call")
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(v, dict) and isinstance(v.get("sha256"), str) for v in files.values()
    ):
        raise unusable(f"{MANIFEST} lists no files with their sha256")
    unknown = sorted(set(files) - set(FILES))
    if unknown:
        raise unusable(f"{', '.join(unknown)} is not a file a bundle holds")
    for name in ("receipt", "engine", "depends_on"):
        if not isinstance(manifest.get(name), dict):
            raise unusable(f"{MANIFEST} has no {name} object")
    if not isinstance(manifest.get("subject"), str):
        raise unusable(f"{MANIFEST} names no subject")
    return manifest


def _loads(data: bytes) -> Any:
    """The JSON value of a bundle's file; an object with a key twice is refused (``ValueError``).

    json keeps the last of two values of one key, and the replay binds and judges that one; a
    reader that keeps the first (a viewer, another language's parser) would show an auditor
    another expected answer, threshold or subject than the one the replay found the same.
    """
    return json.loads(data.decode("utf-8"), object_pairs_hook=unique_keys)


def _hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _digest_or_none(value: Any) -> str | None:
    try:
        return digest_of(value)
    except (TypeError, ValueError):
        return None
