"""A provider's answer nested past the bound, through the live gateway: judged as its text
(the same verdict a replay re-derives in another process, on another stack), and the call's
record read by every party afterwards (before: a contract-fitting answer nested 960 deep failed
at the gateway and passed on replay, and one nested 300 deep settled PASS and made the call's
every read a 500)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.responses import Response

from adjudge.json_text import JSON_DEPTH
from adjudge.replay import from_answer
from adjudge.store import Store
from support import http, weather
from support.weather import PROVIDER, weather_world


def _nesting(depth: int) -> Callable[..., Response]:
    """The weather provider's answer with its first day's date an array ``depth`` deep."""

    def answer(body: Any, status_code: int = 200) -> Response:
        deep = "[" * depth + "]" * depth
        text = json.dumps(body).replace('"date": "2026-01-10"', f'"date": {deep}', 1)
        assert deep in text
        return Response(text.encode(), status_code=status_code, media_type="application/json")

    return answer


@pytest.mark.parametrize("depth", [JSON_DEPTH, 300, 960])
def test_a_deep_answer_is_judged_as_text_read_by_all_and_replays_the_same(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, depth: int
) -> None:
    """The answer nests ``depth`` + 3 deep (the forecast, its days, a day): judged as its text
    it fails the contract, the caller pays nothing; the caller, the provider and the admin read
    the call; a replay in another process re-derives the same verdict."""
    monkeypatch.setattr(weather, "JSONResponse", _nesting(depth))
    with weather_world(sqlite_store) as w:
        got = w.call({"city": "berlin"})
        assert got.status_code == 200, got.text
        call = got.json()
        assert call["verdict"] == "FAIL" and call["payment"] == "refund", call
        for who in ("ann", PROVIDER, "root"):
            for path in (f"/calls/{call['intentId']}", f"/gateway/calls/{call['intentId']}"):
                read = http.get(
                    f"{w.service}/api/v1{path}",
                    headers={"Authorization": f"Bearer {w.h.keys[who]}"},
                )
                assert read.status_code == 200, (who, path, read.text)
        bundle = w.h.ok(PROVIDER, "GET", f"/calls/{call['intentId']}/bundle")
        zipped = tmp_path / "bundle.zip"
        zipped.write_bytes(from_answer(bundle))
        replay = [sys.executable, "-m", "adjudge.cli", "replay", str(zipped), "--json"]
        done = subprocess.run(
            [*replay, "--key", w.signer.keyid],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert json.loads(done.stdout)["outcome"] == "same", done.stdout + done.stderr
