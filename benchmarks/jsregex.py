"""How much a regex_pattern check costs: jsregex.test per call, and the worker's round trip.

Run: python benchmarks/jsregex.py. Prints one table; each figure is the best of several
rounds of many calls, in microseconds per call. The corpus is generated here, deterministically.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable

import regress

from adjudge.autocheck import _regexsource, _sandbox, jsregex

# Typical posters' patterns; "in-process" ones are bounded and skip the worker. "stopped" in
# the table means the match ran over the limit and was stopped (node takes ~400 ms on that one).
PATTERNS = [
    ("literal word", r"\bdone\b"),
    ("ISO date", r"^\d{4}-\d{2}-\d{2}$"),
    ("JSON field", r'"status":\s*"ok"'),
    ("alternation", r"\b(PASS|FAIL)\b"),
    ("two words", r"[A-Z][a-z]+ [A-Z][a-z]+"),
    ("anywhere", r"[\s\S]*answer: 42"),  # quadratic: over the limit on 20 KB in node too
]


def corpus(size: int, *, astral: bool) -> str:
    """Prose-like text of ``size`` characters (seeded); ``astral`` mixes in emoji."""
    rng = random.Random(size)
    words = ["the", "result", "was", "checked", "and", "found", "correct", "value", "é", "Ω"]
    if astral:
        words += ["😀", "𝒜"]
    out: list[str] = []
    while sum(map(len, out)) + len(out) < size:
        out.append(rng.choice(words))
    return " ".join(out)[:size]


def per_call(fn: Callable[[], object], calls: int, rounds: int = 5) -> float | None:
    """Microseconds per call of ``fn``: the best of ``rounds`` rounds of ``calls`` calls.

    A round in which a match was stopped at the time limit is dropped: on a busy machine a
    2 ms match can wait past 100 ms for a CPU. None when every round was stopped.
    """
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        try:
            for _ in range(calls):
                fn()
        except jsregex.PatternTimeout:
            continue
        samples.append((time.perf_counter() - started) / calls * 1e6)
    return min(samples) if samples else None  # the least disturbed round, as timeit advises


def cell(cost: float | None) -> str:
    """A table cell: microseconds, or "stopped" when the limit stopped every round."""
    return "  stopped" if cost is None else f"{cost:9.1f}"


def main() -> None:
    """Print the table."""
    started = time.perf_counter()
    jsregex.test("a+", "a")
    startup_ms = (time.perf_counter() - started) * 1e3

    rows: list[tuple[str, str, str]] = []
    texts = {
        "1 KB": corpus(1_000, astral=False),
        "20 KB": corpus(20_000, astral=False),
        "1 KB astral": corpus(1_000, astral=True),
        "20 KB astral": corpus(20_000, astral=True),
    }
    for name, pattern in PATTERNS:
        where = "in-process" if jsregex.compile(pattern).bounded else "worker"
        for label, text in texts.items():
            cost = per_call(lambda p=pattern, t=text: jsregex.test(p, t), 300)
            rows.append((f"test: {name} ({where})", label, cell(cost)))

    regex = regress.Regex("a+b")
    rows.append(
        (
            "regress in-process, no limit",
            "8 B",
            cell(per_call(lambda: regex.find("xxaab"), 20_000)),
        )
    )
    rows.append(
        (
            "worker round trip",
            "8 B",
            cell(per_call(lambda: _sandbox.find("a+b", b"xxaab", 0.1), 3_000)),
        )
    )
    big = corpus(20_000, astral=True)
    rows.append(
        (
            "text to UTF-16 alphabet",
            "20 KB astral",
            cell(per_call(lambda: _regexsource.engine_utf8(big, 20_000), 300)),
        )
    )
    started = time.perf_counter()
    with contextlib.suppress(jsregex.PatternTimeout):
        jsregex.test("(a|a)+$", "a" * 40 + "b")
    timeout_ms = (time.perf_counter() - started) * 1e3
    started = time.perf_counter()
    jsregex.test("a+", "a")
    restart_ms = (time.perf_counter() - started) * 1e3

    width = max(len(r[0]) for r in rows)
    print(f"{'what':<{width}}  {'text':<12}  {'us/call':>9}")
    for what, label, cost in rows:
        print(f"{what:<{width}}  {label:<12}  {cost}")
    print()
    print(f"worker start (first call):           {startup_ms:7.1f} ms")
    print(f"catastrophic pattern, until stopped: {timeout_ms:7.1f} ms (limit 100 ms)")
    print(f"next call, on a fresh worker:        {restart_ms:7.1f} ms")


if __name__ == "__main__":
    main()
