"""Hand edits of a replay bundle (a zip with its manifest), as a forger or a careless copy makes
them: the replay must name each difference."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable


def _rewritten(
    data: bytes, change: Callable[[dict[str, bytes], dict[str, dict[str, str]]], None]
) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        files = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(files["manifest.json"])
    change(files, manifest["files"])
    files["manifest.json"] = json.dumps(manifest).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n, b in files.items():
            z.writestr(n, b)
    return out.getvalue()


def without(data: bytes, name: str) -> bytes:
    """The bundle with one file taken out, its manifest entry too (a consistent edit)."""

    def change(files: dict[str, bytes], listed: dict[str, dict[str, str]]) -> None:
        del files[name], listed[name]

    return _rewritten(data, change)


def edited(data: bytes, name: str, edit: Callable[[bytes], bytes]) -> bytes:
    """The bundle with one file edited, its manifest's sha256 updated to match (a careful
    forger)."""

    def change(files: dict[str, bytes], listed: dict[str, dict[str, str]]) -> None:
        files[name] = edit(files[name])
        listed[name]["sha256"] = hashlib.sha256(files[name]).hexdigest()

    return _rewritten(data, change)
