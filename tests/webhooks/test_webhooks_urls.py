"""The endpoint URL rules, from the vectors in tests/vectors/webhook_urls.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adjudge.errors import Error
from adjudge.webhooks import endpoint_url

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "webhook_urls.json").read_text("utf-8")
)["cases"]


@pytest.mark.parametrize("case", VECTORS, ids=[c["description"] for c in VECTORS])
def test_endpoint_url_vectors(case: dict[str, Any]) -> None:
    """Each vector is accepted as normalized, or refused with its code."""
    url = case["url"].replace("LONG", "a" * 2000)
    allow = bool(case.get("allow_private"))
    if case.get("code"):
        with pytest.raises(Error) as refused:
            endpoint_url(url, allow_private=allow)
        assert refused.value.code == case["code"]
    else:
        assert endpoint_url(url, allow_private=allow) == case["allowed"]


@given(st.text(max_size=300))
def test_any_text_is_a_url_or_a_coded_refusal(text: str) -> None:
    """No input crashes the check: it is accepted as an http(s) URL or refused with a code."""
    try:
        url = endpoint_url(text, allow_private=True)
    except Error as exc:
        assert exc.code.startswith("WEBHOOK_URL_")
    else:
        assert url.startswith(("http://", "https://")) and "@" not in url.split("/")[2]
