"""redos: the posting-time screens for patterns whose matching time explodes.

Every polynomial refusal is checked against the real engine: its own slow text, run in the
match worker, must be stopped at the 100 ms limit. The texts are 2,000 characters long, where a
cubic run takes seconds and a merely quadratic one a few milliseconds, so a refusal that
overstated a pattern's power would answer instead of timing out.
"""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from adjudge.app.wiring import AutoCheck
from adjudge.autocheck import admissibility, auto_check, jsregex, redos

#: Refused as polynomial, with the power the screen gives and the run it names.
POLYNOMIAL = [
    # The three from the report: each ran to the limit and held a worker 100 ms a check.
    (r".*.*.*.*.*.*=.*", 7, ".*.*.*.*.*.*"),
    (r"\d*\d*\d*\d*\d*\d*\d*x", 8, r"\d*\d*\d*\d*\d*\d*\d*"),
    (r"a*a*a*a*a*a*a*a*a*b", 10, "a*a*a*a*a*a*a*a*a*"),
    (r"a*a*b", 3, "a*a*"),
    (r"\w+\s*\w+!", 3, r"\w+\s*\w+"),
    (r".*\d+ms", 3, r".*\d+"),
    (r"^\d*\d*\d*$", 3, r"\d*\d*\d*"),
    (r"x\d*\d*\d*y", 3, r"\d*\d*\d*"),
    (r"(a*)(a*)(a*)b", 4, "(a*)(a*)(a*)"),
    (r"(?:a*a*a*b|c)", 4, "a*a*a*"),
    (r"[\w.]+\.[\w.]+$", 3, r"[\w.]+\.[\w.]+"),
    (r"\d+.\d+%", 3, r"\d+.\d+"),
    (r"^.*\S+.*$", 3, r".*\S+.*"),
    (r"(?:1)?\d*\d*\d*x", 4, r"\d*\d*\d*"),
    (r"a{0,200}a*b", 3, "a{0,200}a*"),
    # Not the run inside the optional part, whose text (ab, then a's) the path skipping it
    # matches: the one around it, with the search.
    (r"a*(a(b+a*)a*)?a*b+", 3, "a*(a(b+a*)a*)?a*"),
]

#: Passed: ordinary patterns, quadratic ones, and runs nothing after can fail.
PASSING = [
    r"^\d+-\d+$",
    r"\d+-\d+",
    r".*foo.*",
    r".*foo",
    r"\w+@\w+\.\w+",
    r"^[\w.+-]+@[\w-]+\.[\w.-]+$",
    r"^a*a*b",  # anchored: quadratic
    r".*.*",  # the first split tried succeeds
    r"\w+\s*\w+",
    r"\d*\d*\d*",
    r"\d+ms",
    r"^(\d+)\s*(\d+)x",
    r"^\s*\S+\s*$",
    r"[A-Z][a-z]+ [A-Z][a-z]+",
    r'"status":\s*"ok"',
    r"\b(PASS|FAIL)\b",
    r"^INV-\d{4}-\d{2}$",
    r"https?://\S+",
    r"\d{1,3}\d{1,3}\d{1,3}x",  # bounded repeats: a fixed number of splits
    r"(?:a|a*a*a*b)",  # the first alternative succeeds wherever the run could start
    r"\b\d*\d*\d*x",  # after a \b: not claimed
    r"[\s\S]*[\s\S]*[\s\S]*$",  # nothing can stop the first repeat short of the end
    "",
    "(",  # does not parse: the compile check refuses it
]


@pytest.mark.parametrize(("pattern", "degree", "run"), POLYNOMIAL)
def test_polynomial_runs_are_refused_naming_the_run(pattern: str, degree: int, run: str) -> None:
    """Each refused pattern gets its power and the part of the pattern that makes it."""
    found = redos.slow_run(pattern)
    assert found is not None
    assert (found.degree, found.run) == (degree, run)
    assert f"`{run}`" in found.reason and f"n^{degree}" in found.reason


@pytest.mark.parametrize("pattern", PASSING)
def test_ordinary_and_quadratic_patterns_pass(pattern: str) -> None:
    """Patterns at most quadratic, and runs nothing after them can fail, are not refused."""
    assert redos.slow_run(pattern) is None


@pytest.mark.parametrize(("pattern", "degree", "run"), POLYNOMIAL)
def test_every_refused_pattern_is_stopped_on_its_text(pattern: str, degree: int, run: str) -> None:
    """The real worker, given the refusal's own 2,000-character text, hits the 100 ms limit."""
    found = redos.slow_run(pattern)
    assert found is not None
    text = found.text(2_000)
    assert len(text) == 2_000
    assert jsregex.is_safe(pattern)  # the reference's scan lets every one of them through
    with pytest.raises(jsregex.PatternTimeout):
        jsregex.test(pattern, text)


def test_the_verdict_keeps_the_reference_scan() -> None:
    """The auto check's own refusals pass the report's patterns; only posting refuses them."""
    for pattern, _, _ in POLYNOMIAL[:3]:
        criteria = {"regex_pattern": pattern, "min_length": 1}
        assert list(admissibility(criteria, "auto")) == []
        [refusal] = AutoCheck().admissibility(criteria, "auto")
        assert refusal.code == "REGEX_PATTERN_UNUSABLE"
        assert "polynomial time" in refusal.message and pattern in refusal.message


def test_the_hint_offers_an_anchor_only_where_the_search_counts() -> None:
    """An unanchored run is told to anchor; an anchored one is not."""
    [loose] = AutoCheck().admissibility({"regex_pattern": "a*a*a*b"}, "auto")
    [tight] = AutoCheck().admissibility({"regex_pattern": "^a*a*a*b"}, "auto")
    assert "anchor it with ^" in loose.message
    assert "anchor" not in tight.message


def test_an_exponential_pattern_gets_the_exponential_reason() -> None:
    """The exponential screen answers first, with the same code."""
    [refusal] = AutoCheck().admissibility({"regex_pattern": "(a|aa)+$"}, "auto")
    assert refusal.code == "REGEX_PATTERN_UNUSABLE" and "exponential" in refusal.message


# A small grammar of patterns: characters and classes that overlap or not, quantifiers, groups,
# alternatives, optional parts, assertions.
_ATOMS = ["a", "b", r"\d", r"\w", r"\s", r"\S", ".", "[ab]", "[^a]", "=", "-", "1", " "]
_QUANTIFIERS = ["", "*", "+", "?", "{2}", "{1,3}", "*?", "+?", "{2,}"]


def _pieces(depth: int) -> st.SearchStrategy[str]:
    # Mostly unbounded repeats, so that runs of them are common.
    repeat = st.builds(lambda a, q: a + q, st.sampled_from(_ATOMS), st.sampled_from("*+*+"))
    atom = st.builds(lambda a, q: a + q, st.sampled_from(_ATOMS), st.sampled_from(_QUANTIFIERS))
    choices = [repeat, repeat, atom, st.sampled_from([r"\b", "(?=a)", "$", "^"])]
    if depth < 2:
        inner = _sequences(depth + 1)
        choices.append(st.builds(lambda s, q: f"({s}){q}", inner, st.sampled_from(["", "?"])))
        choices.append(
            st.builds(lambda a, b, q: f"(?:{a}|{b}){q}", inner, inner, st.sampled_from(["", "?"]))
        )
    return st.one_of(choices)


def _sequences(depth: int) -> st.SearchStrategy[str]:
    return st.lists(st.deferred(lambda: _pieces(depth)), min_size=2, max_size=6).map("".join)


_PATTERNS = st.builds(
    lambda a, s, z: a + s + z,
    st.sampled_from(["", "^"]),
    _sequences(0),
    st.sampled_from(["", "", "$", "x", "!"]),
)


@settings(max_examples=150, deadline=None)
@given(_PATTERNS)
@example(r"a*(a(b+a*)a*)?a*b+")
@example(r"(?:1)?\d*\d*\d*x")
def test_a_generated_pattern_is_refused_only_when_its_text_is_slow(pattern: str) -> None:
    """Soundness against the engine: whatever the screen refuses times out on its own text."""
    if not jsregex.is_safe(pattern) or redos.ambiguous_repeat(pattern) is not None:
        return
    try:
        jsregex.compile(pattern)
    except jsregex.InvalidPattern:
        return
    found = redos.slow_run(pattern)
    if found is None:
        return
    with pytest.raises(jsregex.PatternTimeout):
        jsregex.test(pattern, found.text(2_000))


# --- counts: what the screens build, and repeats the reference's scan reads as text ----------


@pytest.mark.parametrize(
    "pattern",
    [
        "a{2147483647}",
        "x{9999999999}",
        "(ab){2147483647}c*c*c*d",
        "(a{20000}){20000}b*b*b*c",
        "a{30000}b*b*b*c",
    ],
)
def test_a_count_never_sizes_what_the_screens_build(pattern: str) -> None:
    """The screens' texts are at most what the matcher reads (20,000 characters): a run past a
    longer count is never reached, so it is not claimed, and nothing longer is built."""
    tracemalloc.start()
    try:
        found = redos.slow_run(pattern)
        redos.ambiguous_repeat(pattern)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found is None
    assert peak < 4 * 2**20, f"the screens of {pattern} allocated {peak / 2**20:.0f} MiB"


def test_a_run_after_a_count_within_the_text_is_still_refused() -> None:
    """A lead of 100 characters leaves the run room in the text, and its text is slow."""
    found = redos.slow_run("a{100}b*b*b*c")
    assert found is not None and found.degree == 3 and len(found.lead) == 100
    assert len(found.text()) == redos.LONGEST_TEXT == jsregex.INPUT_CAP


def test_the_auto_check_fails_a_count_past_the_text_on_every_result() -> None:
    """The verdict is the reference's: no result the matcher reads can hold the count."""
    for pattern, result in (("a{2147483647}", "a" * 1_000), ("x{9999999999}", "x" * 5)):
        r = auto_check(result, {"regex_pattern": pattern, "min_length": 1})
        [item] = [i for i in r.breakdown if i.name == "regex_pattern"]
        assert item.score == 0 and not r.passed


@pytest.mark.parametrize(
    "pattern",
    [
        "(-+){1,9999999999}!",
        "[\\n0x]|([a-z -]+){1,9999999999}!",
        "(a{1,99999999999})+",
        "((a|aa){2}){1,9999999999}",
        "(x(x+)){1,100000000000}y",
    ],
)
def test_a_nested_repeat_the_reference_scan_misses_is_refused(pattern: str) -> None:
    """The reference's scan reads a {n,m} of more than 12 characters as text, so it lets these
    nested repeats through (the verdict keeps that); the posting screen reads the count."""
    assert jsregex.is_safe(pattern)
    why = redos.ambiguous_repeat(pattern)
    assert why is not None and "nested quantifier" in why
    [refusal] = AutoCheck().admissibility({"regex_pattern": pattern}, "auto")
    assert refusal.code == "REGEX_PATTERN_UNUSABLE" and "exponential" in refusal.message


@pytest.mark.parametrize(
    "pattern", ["(ab?){1,99999999999}", "(ab{0,1}){1,99999999999}", "(a?b)+", "(a?b)*c"]
)
def test_a_repeat_of_an_optional_part_passes(pattern: str) -> None:
    """A ``?`` is no quantifier to the reference's scan, nor to the screen: an optional part
    chooses once, and the part around it forces where each repetition ends."""
    assert jsregex.is_safe(pattern)
    assert redos.ambiguous_repeat(pattern) is None


def test_the_refused_nested_repeat_is_slow_in_the_engine() -> None:
    """What the screen claims: forty ``-`` and no ``!`` run the match to the 100 ms limit."""
    with pytest.raises(jsregex.PatternTimeout):
        jsregex.test("(-+){1,9999999999}!", "-" * 40)


@pytest.mark.parametrize(
    "pattern",
    ["^(ab+){1,99999999999}$", "^(a{2,9999999999999}b)+c", "(?:x(y+)){1,100000000000}"],
)
def test_a_nested_repeat_that_cannot_begin_its_next_round_passes(pattern: str) -> None:
    """The reference's scan lets these through, and they are linear: the inner repeat is
    followed by a character it cannot match, or cannot match what begins the next round, so
    no run splits between the two. Each adversarial text matches at once, and posting takes
    them."""
    assert jsregex.is_safe(pattern)
    for text in ("ab" * 10_000, "a" + "b" * 19_999, "aab" * 6_666, "x" + "y" * 19_999 + "!"):
        jsregex.test(pattern, text)  # raises PatternTimeout past the 100 ms limit
    assert AutoCheck().admissibility({"regex_pattern": pattern, "min_length": 1}, "auto") == []


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (r"(?:x{30000}|b)c*c*c*d", "b" + "c" * 19_999),
        (r"(?:a{30000}|a)b*b*b*c", "a" + "b" * 19_999),
        (r"^(?:z{25000}|q)\s*\s*\s*$", "q" + " " * 19_998 + "!"),
    ],
)
def test_a_slow_run_behind_a_first_branch_past_the_text_is_refused(pattern: str, text: str) -> None:
    """A first alternative longer than any text the matcher reads fails at once, and the next
    one leads to the run: the run is reached, and slow (it was taken for unreachable when the
    witness past the cap was only the first branch's)."""
    assert jsregex.is_safe(pattern)
    with pytest.raises(jsregex.PatternTimeout):
        jsregex.test(pattern, text)
    refusals = AutoCheck().admissibility({"regex_pattern": pattern, "min_length": 1}, "auto")
    assert [e.code for e in refusals] == ["REGEX_PATTERN_UNUSABLE"]
