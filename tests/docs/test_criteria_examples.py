"""The criteria reference's examples are what the auto check does, and it covers every field."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from adjudge import auto_check
from adjudge.autocheck.criteria import FIELDS

REFERENCE = Path(__file__).parent.parent.parent / "docs" / "guide" / "criteria.md"
TEXT = REFERENCE.read_text(encoding="utf-8")
BLOCK = re.compile(r"^```jsonl\n(.*?)^```", re.S | re.M)
CASES: list[dict[str, Any]] = [
    json.loads(line) for block in BLOCK.findall(TEXT) for line in block.splitlines() if line
]


def test_every_field_has_its_section_and_examples() -> None:
    """Each criteria field the check knows has a section, and the page has dozens of cases."""
    for name in FIELDS:
        assert f"\n## `{name}`\n" in TEXT, name
    assert len(CASES) >= 40
    shown = {key for case in CASES for key in case["criteria"]}
    assert shown >= set(FIELDS)


@pytest.mark.parametrize("case", CASES, ids=[c["verdict"][:40] for c in CASES])
def test_each_example_verdict(case: dict[str, Any]) -> None:
    """`PASS score` or `FAIL score: reasons`, exactly as the auto check answers."""
    verdict = auto_check(case["result"], case["criteria"])
    said = ("PASS" if verdict.passed else "FAIL") + f" {verdict.score}"
    if not verdict.passed:
        said += ": " + "; ".join(verdict.reasons)
    assert said == case["verdict"]
