"""Parsed documents kept once per process are bounded by their number and by their size: a
cache past either is emptied, so a provider's largest documents, parsed again and again, cannot
fill the memory; what is kept is what its parse gave."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from adjudge.calls.kept import Kept, json_values

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=20,
)


def _count(value: object) -> int:
    if isinstance(value, dict):
        return 1 + sum(_count(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_count(v) for v in value)
    return 1


@given(JSON)
def test_json_values_counts_each_value_once(document: object) -> None:
    """Each object, array and scalar once; with a stop, counting ends just past it."""
    assert json_values(document) == _count(document)
    assert json_values(document, stop=3) == min(_count(document), 4)


def test_a_cache_at_its_size_lets_go_of_the_least_recently_used() -> None:
    """Documents of 10 values each, a cache of 25 values: the third lets go of the one used
    least recently, and keeps the one just read; a kept document is not parsed again; a
    document heavier than the whole bound is kept alone; past the entries' bound alike."""
    parses: list[str] = []
    kept: Kept[str] = Kept(most=100, values=25)
    document = {"a": [1, 2, 3, 4, 5, 6, 7], "b": 0}  # 10 values

    def parse(name: str) -> str:
        parses.append(name)
        return name.upper()

    assert kept.get("x", document, lambda: parse("x")) == "X"
    assert kept.get("y", document, lambda: parse("y")) == "Y"
    assert kept.get("x", document, lambda: parse("x")) == "X" and parses == ["x", "y"]
    assert kept.get("z", document, lambda: parse("z")) == "Z"
    assert len(kept) == 2  # y, the least recently used, was let go
    assert kept.get("x", document, lambda: parse("x")) == "X"
    assert kept.get("y", document, lambda: parse("y")) == "Y"
    assert parses == ["x", "y", "z", "y"]
    heavy = {"list": list(range(40))}
    assert kept.get("h", heavy, lambda: parse("h")) == "H" and len(kept) == 1
    few: Kept[str] = Kept(most=2)
    for name in "abc":
        few.get(name, {}, lambda n=name: n)  # type: ignore[misc]
    assert len(few) == 2
