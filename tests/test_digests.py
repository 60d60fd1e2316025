"""The one digest form, ``sha256:<64 lowercase hex>``, and its one helper."""

from __future__ import annotations

import hashlib
from pathlib import Path

import grimp
import pytest

import adjudge
from adjudge.digests import DIGEST, from_hex, is_digest, sha256_digest, to_hex

HEX = hashlib.sha256(b"abc").hexdigest()


def test_a_digest_is_the_prefix_and_the_hex_of_the_bytes() -> None:
    """Bytes are hashed as they are; text as its UTF-8 bytes."""
    assert sha256_digest(b"abc") == "sha256:" + HEX
    assert sha256_digest("é") == "sha256:" + hashlib.sha256("é".encode()).hexdigest()
    assert DIGEST.fullmatch(sha256_digest(b""))


@pytest.mark.parametrize(
    "value",
    [
        "sha256:" + HEX.upper(),
        "sha256:" + HEX[:-1],
        "sha256:" + HEX + "\n",
        "SHA256:" + HEX,
        HEX,
        b"sha256:" + HEX.encode(),
        None,
    ],
)
def test_only_the_written_form_is_a_digest(value: object) -> None:
    """Upper case, a short hex, a trailing newline, another prefix, bare hex, bytes: none is."""
    assert not is_digest(value)
    assert is_digest("sha256:" + HEX)


def test_in_totos_hex_and_the_written_form_round_trip() -> None:
    """A statement's ``{"sha256": hex}`` and the written digest convert both ways."""
    assert from_hex(HEX) == "sha256:" + HEX
    assert to_hex(from_hex(HEX)) == HEX


def test_the_digest_helper_is_the_floor() -> None:
    """``adjudge.digests`` imports nothing of adjudge, so the kernel can use it too."""
    graph = grimp.build_graph("adjudge", cache_dir=None)
    assert not {
        m for m in graph.find_modules_directly_imported_by("adjudge.digests") if "adjudge" in m
    }


def test_the_form_and_canonical_json_are_written_in_one_place() -> None:
    """No module writes the prefix onto a hash itself (``sha256_digest`` does), none but
    ``adjudge.digests`` spells the pattern, and none but ``adjudge.receipts.canonical`` writes
    sorted compact JSON."""
    root = Path(adjudge.__file__).parent
    found: dict[str, list[str]] = {"digest": [], "pattern": [], "canonical": []}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(root))
        if '"sha256:" +' in text or 'f"sha256:{' in text:
            found["digest"].append(name)
        if "sha256:[0-9a-f]{64}" in text:
            found["pattern"].append(name)
        if "sort_keys=True" in text and 'separators=(",", ":")' in text:
            found["canonical"].append(name)
    assert found == {
        "digest": [],
        "pattern": ["digests.py"],
        "canonical": ["receipts/canonical.py"],
    }
