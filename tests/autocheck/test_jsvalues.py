"""JavaScript's string, number and JSON behaviour, checked against node itself."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import requires_node, run_node

from adjudge.autocheck import jsvalues

pytestmark = [pytest.mark.node, requires_node]

unicode_text = st.text(
    alphabet=st.characters(codec="utf-8") | st.sampled_from(["😀", "\u2028", "\ufeff", "\x1c"]),
    max_size=30,
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | unicode_text,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            unicode_text | st.sampled_from(["0", "1", "10", "01", "-1"]), inner, max_size=5
        )
    ),
    max_leaves=15,
)

SETTINGS = settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(st.lists(json_values, min_size=300, max_size=300))
def test_stringify_matches_node(values: list[Any]) -> None:
    """JSON.stringify: key order, number layout, escapes, unicode."""
    # Python's json writes what node reads; node then writes it back its own way.
    cases = [json.dumps(v) for v in values]
    expected = run_node("const RESULTS = CASES.map(s => JSON.stringify(JSON.parse(s)));", cases)
    assert [jsvalues.stringify(json.loads(c)) for c in cases] == expected


@SETTINGS
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=500, max_size=500))
def test_number_formatting_and_rounding_match_node(numbers: list[float]) -> None:
    """Number#toString, Math.round and toFixed(0) agree with node on arbitrary doubles."""
    numbers += [
        0.5,
        1.5,
        2.5,
        -0.5,
        -2.5,
        0.49999999999999994,
        12.5,
        66.66666666666667,
        1e21,
        1e-7,
        123456789012345680000.0,
        5e-324,
        2**53 + 2.0,
    ]
    expected = run_node(
        "const RESULTS = CASES.map(x => [String(x), Math.round(x), "
        "Math.abs(x) < 1e21 ? x.toFixed(0) : null]);",
        numbers,
    )
    got = [
        [
            jsvalues.number_to_string(x),
            jsvalues.js_round(x),
            jsvalues.to_fixed0(x) if abs(x) < 1e21 else None,
        ]
        for x in numbers
    ]
    # node prints -0 from Math.round(-0.4) as 0 in JSON; compare numerically there.
    assert [[a, float(b), c] for a, b, c in got] == [[a, float(b), c] for a, b, c in expected]


@SETTINGS
@given(st.lists(unicode_text, min_size=300, max_size=300))
def test_length_trim_and_slice_match_node(texts: list[str]) -> None:
    """String length in UTF-16 units, trim's white space, slice by code units."""
    expected = run_node(
        "const RESULTS = CASES.map(s => [s.length, s.trim(), s.slice(0, 3), s.slice(-2)]);", texts
    )
    got = [
        [
            jsvalues.utf16_len(s),
            jsvalues.trim(s),
            jsvalues.slice16(s, 0, 3),
            jsvalues.slice16(s, -2),
        ]
        for s in texts
    ]
    # JSON carries lone surrogates from a cut pair as escapes; compare after a round trip.
    assert json.loads(json.dumps(got)) == expected


def test_parse_refuses_what_javascript_refuses() -> None:
    """NaN and Infinity are not JSON to JavaScript, though Python's json reads them."""
    for text in ("NaN", "[Infinity]", '{"a": -Infinity}'):
        with pytest.raises(ValueError):
            jsvalues.parse(text)
    assert jsvalues.parse(' {"a": [1, 2.5, "x"]} ') == {"a": [1, 2.5, "x"]}
