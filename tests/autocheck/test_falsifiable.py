"""Falsifiability by witness: a gate no result can fail checks nothing and is refused."""

from __future__ import annotations

from typing import Any

import pytest

from adjudge.autocheck.falsifiable import unfalsifiable


@pytest.mark.parametrize(
    ("criteria", "refused"),
    [
        ({"contains_keywords": [" "]}, ["contains_keywords"]),
        ({"regex_pattern": ".*"}, ["regex_pattern"]),
        ({"regex_pattern": "a*"}, ["regex_pattern"]),
        ({"regex_pattern": "(?:)"}, ["regex_pattern"]),
        ({"regex_pattern": "x|"}, ["regex_pattern"]),
        ({"contains_keywords": ["escrow"]}, []),
        ({"contains_keywords": ["e"]}, []),
        ({"regex_pattern": "^ID-\\d+"}, []),
        ({"regex_pattern": "\\w"}, []),
        ({"forbidden_phrases": ["lorem ipsum"]}, []),
        ({"required_fields": ["name"]}, []),
        ({"expected_schema": {"required": ["a"]}}, []),
        ({"expected_answer": "42"}, []),
        ({"min_length": 200}, []),
    ],
)
def test_a_gate_is_admitted_only_when_a_witness_fails_it(
    criteria: dict[str, Any], refused: list[str]
) -> None:
    """Each gate is run alone on witnesses meant to fail it; one that fails proves it can."""
    assert [field for field, _ in unfalsifiable(criteria)] == refused
