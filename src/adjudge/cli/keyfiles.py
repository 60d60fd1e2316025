"""The private key files the commands read and make: their owner's alone, as ssh insists.

A private key file — the receipt signing key, the server key, a verifier's key, a ``--sign``
key — is refused (``KEY_FILE_UNPROTECTED``) when its mode lets anyone but its owner at it, the
way ssh refuses an ``UNPROTECTED PRIVATE KEY FILE``: a key others can read is a key others may
hold, and a key others can write is a key others may replace. A file owned by another account
(root, a secrets manager) may be shared with a group, never with everyone. Checked where file
modes mean this (POSIX).

A directory named as a key file, an unreadable file and a malformed key are each one refusal
with a sentence (exit 2 in the commands), never a traceback. Files made here are created 0600
from their first byte and never overwrite an existing file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from adjudge.errors import BadInput, Error
from adjudge.input_files import read_input

if TYPE_CHECKING:
    from adjudge.gateway.sealed import SecretBox
    from adjudge.receipts import SigningKey

#: Key ids (:meth:`SecretBox.key_id`) of server keys that were published and must never seal
#: anything again: the one that was once tracked in adjudge's repository.
BURNT_SERVER_KEYS = frozenset({"ce05f1c84b1ee49a"})


#: The most bytes a key file is read to (a regular file only: ``input_files.read_input``).
KEY_FILE_BYTES = 64 * 1024


def read_private(path: Path, what: str) -> bytes:
    """The bytes of the private key file at ``path`` (``what`` names it in refusals).

    Refused: a directory (``KEY_FILE_IS_DIRECTORY``), a file that cannot be read
    (``FILE_UNREADABLE``), one open to others (``KEY_FILE_UNPROTECTED``, saying the ``chmod``
    that fixes it).
    """
    try:
        info = path.stat()
    except OSError as exc:
        raise BadInput(
            f"Cannot read the {what} {path}: {exc.strerror}.", code="FILE_UNREADABLE"
        ) from None
    if stat.S_ISDIR(info.st_mode):
        raise BadInput(
            f"The {what} {path} is a directory: name the key file itself.",
            code="KEY_FILE_IS_DIRECTORY",
        )
    _protected(path, info, what)
    try:
        return read_input(path, KEY_FILE_BYTES)
    except OSError as exc:
        raise BadInput(
            f"Cannot read the {what} {path}: {exc.strerror}.", code="FILE_UNREADABLE"
        ) from None


def _protected(path: Path, info: os.stat_result, what: str) -> None:
    if os.name != "posix":
        return
    mine = info.st_uid == os.geteuid()
    # Ours: no one else at all (ssh's rule). Another account's: a group it shares it with may
    # read it, but never every account on the machine.
    exposed = info.st_mode & (0o077 if mine else 0o007)
    if exposed:
        mode = stat.S_IMODE(info.st_mode)
        who = "its group or other accounts" if mine else "every account on this machine"
        raise BadInput(
            f"The {what} {path} is open to {who} (mode {mode:04o}): a private key must be its "
            f"owner's alone. Run `chmod 600 {path}` and try again.",
            code="KEY_FILE_UNPROTECTED",
        )


def write_private(path: Path, data: bytes, what: str) -> None:
    """Create ``path`` holding ``data``, mode 0600 from its first byte; never overwrite.

    Refused (``KEY_WRITE_FAILED``) when the file exists (another process made it meanwhile) or
    cannot be written; a half-written file is removed.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise BadInput(
            f"Cannot make the {what} {path}: {exc.strerror}.", code="KEY_WRITE_FAILED"
        ) from None
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), 0o600)  # whatever the umask
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise BadInput(
            f"Cannot write the {what} {path}: {exc.strerror}.", code="KEY_WRITE_FAILED"
        ) from None


def read_server_keys(path: Path) -> SecretBox:
    """The server keys in ``path`` (one base64url key a line: the first seals, every one opens).

    Each line is checked before anything uses the file: one that is not a key
    (``SECRET_KEY_INVALID``, naming the line), no key at all, or a burnt key on the first line
    (``SERVER_KEY_BURNT``) is refused. A burnt key on a later line is allowed, so what it sealed
    still opens while it is sealed anew (docs/guide/operating.md, *A burnt server key*).
    """
    from adjudge.gateway.sealed import SecretBox  # noqa: PLC0415 - keep `adjudge --help` fast

    data = read_private(path, "server key file")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise BadInput(
            f"The server key file {path} is not text: each line is a base64url key.",
            code="SECRET_KEY_INVALID",
        ) from None
    keys = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            keys.append(SecretBox.key_from_text(line))
        except Error:
            raise BadInput(
                f"Line {number} of the server key file {path} is not a server key (base64url of "
                "32 bytes).",
                code="SECRET_KEY_INVALID",
            ) from None
    if not keys:
        raise BadInput(
            f"The server key file {path} holds no key; restore it from your backup.",
            code="SECRET_KEY_INVALID",
        )
    if SecretBox.key_id(keys[0]) in BURNT_SERVER_KEYS:
        raise BadInput(
            f"The first key in {path} was published in adjudge's repository: anything it seals "
            "can be opened by anyone holding a copy of the database. Put a new key on the first "
            "line and seal your secrets anew (docs/guide/operating.md, A burnt server key).",
            code="SERVER_KEY_BURNT",
        )
    return SecretBox(keys)


def burnt_keys_in(box: SecretBox) -> list[str]:
    """The ids of burnt keys ``box`` still opens with (kept only while re-sealing)."""
    return sorted(kid for kid in box.key_ids() if kid in BURNT_SERVER_KEYS)


def new_server_key_text() -> bytes:
    """A new server key file's content: one fresh key on one line."""
    from adjudge.gateway.sealed import SecretBox  # noqa: PLC0415

    return (SecretBox.key_to_text(SecretBox.generate_key()) + "\n").encode("ascii")


def read_signing_key(path: Path, what: str) -> SigningKey:
    """The Ed25519 private key in the PEM file at ``path``: :func:`read_private`'s refusals,
    or ``KEY_INVALID`` naming the file when it holds no such key."""
    from adjudge.receipts import SigningKey  # noqa: PLC0415

    data = read_private(path, what)
    try:
        return SigningKey.from_pem(data)
    except BadInput as exc:
        raise BadInput(f"The {what} {path}: {exc.message}", code=exc.code) from None


def present(path: Path) -> bool:
    """Whether something is at ``path`` (a dangling link too, so it is reported, not
    replaced)."""
    return path.exists() or path.is_symlink()
