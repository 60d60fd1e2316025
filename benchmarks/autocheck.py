"""Auto-check throughput on a deterministic corpus, and the cost of each stage.

Run: ``python benchmarks/autocheck.py [--n 10000] [--repeat 5]``. One core (no pool): the figure
is checks per second per core. The corpus is 10,000 realistic results of 200 B to 20 KB (reports,
JSON answers, short answers, refusals, incident notes with failure wording, disclosure sections,
some non-ASCII) under mixed rules, generated from a fixed seed so every run sees the same bytes.

Beside it, in turns, two bare-Python floors (:func:`floor_check`): the same records under the
same rules, checked the way code with no exactness to keep would check them — the reading floor
(NFKC once, lowercase once, words once, then ``in``, ``len``, ``re.search`` and ``json.loads``
per rule) and the plain floor (lowercase once and those calls, as a peer's assertions do). The
auto check's throughput is reported as a ratio of each, turn by turn in the same run.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
import unicodedata
from collections.abc import Callable
from typing import Any

from adjudge import auto_check
from adjudge.autocheck import chars, jsregex
from adjudge.autocheck.check import _fold_for_scan, score_rules
from adjudge.autocheck.criteria import parse
from adjudge.autocheck.disclosure import split_disclosure
from adjudge.autocheck.failure import scan
from adjudge.autocheck.items import Context, rules_for
from adjudge.autocheck.text import canonical, flatten, has_distinct_words

# Results are written in one language each: mostly English with typographic punctuation (curly
# quotes, dashes, the odd emoji), some French and German (accents to fold), some Chinese.
ENGLISH = [
    "Revenue grew in every region, led by the Nordics, while churn fell after onboarding changed.",
    "The migration moved 1,204 tables to the new cluster without downtime.",
    "Northvolt and ACC face price pressure from Chinese suppliers — and from each other.",
    "We recommend renewing certificates thirty days before they expire.",
    "The capital of France is Paris, and its population is about 2.1 million.",
    "Latency at the 99th percentile dropped from 480 ms to 120 ms after the cache fix.",
    "The team’s “quick win” was the index on orders.created_at.",
    "The summary table lists every risk with the line of the plan it comes from.",
    "Emoji in customer feedback 😀 were counted as positive sentiment.",
]
FRENCH_GERMAN = [
    "Les résultats du trimestre sont meilleurs que prévu, surtout à Lyon.",
    "Die Umsätze stiegen im dritten Quartal um 12 % gegenüber dem Vorjahr.",
    "La latence au 99e centile est passée de 480 ms à 120 ms après la correction du cache.",
    "Wir empfehlen, Zertifikate dreißig Tage vor Ablauf zu erneuern.",
]
CHINESE = [
    "数据显示第三季度收入增长了百分之十二。",
    "迁移在没有停机的情况下把一千二百零四张表移到了新集群。",
    "我们建议在证书到期前三十天续订。",
]
LANGUAGES = [(ENGLISH, 0.8), (FRENCH_GERMAN, 0.15), (CHINESE, 0.05)]
# The whole mix in every result: the worst case for folding, reported beside the realistic one.
SENTENCES = ENGLISH + FRENCH_GERMAN + CHINESE
# Incident wording: in about one result in ten.
FAILURE_WORDING = [
    "Status: failed for 3 of 200 nightly jobs, all retried successfully.",
    "Users were unable to connect for twelve minutes during the failover.",
]
REFUSALS = [
    "I'm sorry, but I can't browse the web, so I was unable to check today's prices.",
    "As an AI, I don't have access to your internal dashboards.",
]
DISCLOSURE = "\n\n## Not done / assumptions\n\n- I could not verify the 2025 capacity figure.\n"
CRITERIA: list[dict[str, Any]] = [
    {"min_length": 10, "pass_threshold": 60},
    {"min_length": 300, "contains_keywords": ["revenue", "churn"]},
    {"contains_keywords": ["Paris"], "forbidden_phrases": ["lorem ipsum", "as an ai"]},
    {"required_fields": ["summary", "risks", "owner"]},
    {"expected_schema": {"type": "object", "required": ["name", "price"]}},
    {"expected_answer": "Paris"},
    {"regex_pattern": "\\d{2,}", "min_length": 50},
    {
        "max_length": 4000,
        "min_length": 100,
        "rubric": [
            {
                "criterion": "depth",
                "keywords": ["latency", "cache", "percentile"],
                "min_mentions": 2,
            },
            {"criterion": "sources", "keywords": ["source", "report"]},
        ],
    },
]


def make_result(rng: random.Random, mixed: bool = False) -> str | dict[str, Any]:
    """One result of 200 B to 20 KB, in one language (or in all of them, with ``mixed``)."""
    sentences = SENTENCES if mixed else _pick_language(rng)
    kind = rng.random()
    if kind < 0.1:
        return {
            "name": "Acme Widget",
            "price": rng.choice(["", "9.99"]),
            "currency": "USD",
            "notes": " ".join(rng.choices(sentences, k=rng.randint(1, 6))),
        }
    if kind < 0.15:
        return rng.choice(
            ["The answer is Paris.", "Paris", "It is Paris, not Lyon."]
        ) * rng.randint(1, 3)
    target = int(200 * (100 ** rng.random()))  # log-uniform 200 B .. 20 KB
    parts: list[str] = []
    size = 0
    while size < target:
        if rng.random() < 0.15:
            parts.append(f"\n\n## {rng.choice(['Summary', 'Risks', 'Owner', 'Details'])}\n\n")
        sentence = rng.choice(sentences)
        parts.append(sentence + " ")
        size += len(sentence) + 1
    if rng.random() < 0.1:
        parts.insert(rng.randrange(len(parts) + 1), rng.choice(FAILURE_WORDING) + " ")
    if rng.random() < 0.05:
        parts.insert(0, rng.choice(REFUSALS) + " ")
    if rng.random() < 0.2:
        parts.append(DISCLOSURE)
    return "".join(parts)


def _pick_language(rng: random.Random) -> list[str]:
    roll = rng.random()
    for sentences, share in LANGUAGES:
        if roll < share:
            return sentences
        roll -= share
    return ENGLISH


def corpus(
    n: int, seed: int = 7, mixed: bool = False
) -> list[tuple[str | dict[str, Any], dict[str, Any]]]:
    """``n`` (result, criteria) pairs, the same for the same seed."""
    rng = random.Random(seed)
    return [(make_result(rng, mixed), rng.choice(CRITERIA)) for _ in range(n)]


_FLOOR_WORD = re.compile(r"\w+")


def floor_check(
    result: str | dict[str, Any], criteria: dict[str, Any], *, reading: bool = True
) -> bool:
    """The bare-Python floor of one check: each rule answered as plainly as Python allows.

    ``reading``: the text read once in each way the spec's check reads it — NFKC, lowercased,
    split into words (3 different ones at least, the expected answer among them) — then ``in``,
    ``len``, ``re.search`` and ``json.loads`` per rule. Without it, the plain floor: lowercased
    only, words split only for an expected answer, as a peer's assertions (contains,
    icontains, regex, is-json) read a text. Neither has JavaScript strings, a Unicode version
    of its own, a disclosure section, failure language, gates or reasons.
    """
    text = result if isinstance(result, str) else json.dumps(result)
    norm = unicodedata.normalize("NFKC", text) if reading else text
    low = norm.lower()
    ok = True
    words: list[str] | set[str] = []
    if reading:
        words = set(_FLOOR_WORD.findall(low))
        ok &= len(words) >= 3
    if (least := criteria.get("min_length")) is not None:
        ok &= len(norm) >= least
    if (most := criteria.get("max_length")) is not None:
        ok &= len(norm) <= most
    ok &= all(k.lower() in low for k in criteria.get("contains_keywords", ()))
    ok &= not any(p.lower() in low for p in criteria.get("forbidden_phrases", ()))
    fields = criteria.get("required_fields") or criteria.get("expected_schema", {}).get("required")
    if fields:
        try:
            value = json.loads(text)
        except ValueError:
            ok &= all(f.lower() in low for f in fields)
        else:
            ok &= isinstance(value, dict) and all(value.get(f) for f in fields)
    if (answer := criteria.get("expected_answer")) is not None:
        ok &= answer.lower() in (words if reading else _FLOOR_WORD.findall(low))
    if (pattern := criteria.get("regex_pattern")) is not None:
        ok &= re.search(pattern, text) is not None
    for item in criteria.get("rubric", ()):
        hits = sum(1 for k in item["keywords"] if k.lower() in low)
        ok &= hits >= item.get("min_mentions", 1)
    return ok


def _time(fn: Callable[[], object], repeat: int) -> list[float]:
    """CPU seconds of the calling process per run (steadier than wall time on a shared machine;
    the regex worker's own CPU is not in it, so its figure below is the caller's round trip)."""
    runs = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        runs.append(time.process_time() - start)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    cases = corpus(args.n)
    texts = [r if isinstance(r, str) else json.dumps(r) for r, _ in cases]
    total_bytes = sum(len(t.encode()) for t in texts)
    print(f"corpus: {len(cases)} results, {total_bytes / len(cases) / 1024:.1f} KiB average")

    for result, criteria in cases[:200]:
        auto_check(result, criteria)  # warm up (the regex worker, compiled patterns)
        floor_check(result, criteria)
    # In turns with the two floors, so all three see the same load on a shared machine.
    turns: dict[str, list[float]] = {"auto_check": [], "reading floor": [], "plain floor": []}
    wall = 0.0
    for _ in range(args.repeat):
        start = time.perf_counter()
        turns["auto_check"] += _time(lambda: [auto_check(r, c) for r, c in cases], 1)
        wall += time.perf_counter() - start
        turns["reading floor"] += _time(lambda: [floor_check(r, c) for r, c in cases], 1)
        turns["plain floor"] += _time(
            lambda: [floor_check(r, c, reading=False) for r, c in cases], 1
        )
    wall /= args.repeat
    runs = turns["auto_check"]
    median = statistics.median(runs)
    print(
        f"auto_check: median {len(cases) / median:,.0f} checks/s per core in CPU time "
        f"({median / len(cases) * 1e6:.0f} µs per check; runs: "
        f"{', '.join(f'{len(cases) / r:,.0f}' for r in runs)}); "
        f"wall clock {len(cases) / wall:,.0f} checks/s"
    )
    for name in ("reading floor", "plain floor"):
        floor_runs = turns[name]
        ratios = sorted(f / r for r, f in zip(runs, floor_runs, strict=True))
        print(
            f"{name}: median {len(cases) / statistics.median(floor_runs):,.0f} checks/s per "
            f"core; auto_check = {statistics.median(ratios):.2f}x its rate (median of the "
            f"turns; {ratios[0]:.2f}-{ratios[-1]:.2f}x)"
        )

    mixed = corpus(args.n, mixed=True)
    mixed_runs = _time(lambda: [auto_check(r, c) for r, c in mixed], args.repeat)
    per = statistics.median(mixed_runs) / len(mixed)
    print(
        f"worst case, every language in every result: {1 / per:,.0f} checks/s per core "
        f"({per * 1e6:.0f} µs per check)"
    )

    # Each stage of the pipeline on the corpus, in order, fed what the one before produced.
    crits = [parse(c) for _, c in cases]
    canon = [canonical(t) for t in texts]
    visible = [flatten(split_disclosure(c).deliverable) for c in canon]
    folded = [_fold_for_scan(v) for v in visible]
    langs = [scan(f) for f in folded]
    patterns = [(c.regex_pattern, t) for c, t in zip(crits, texts, strict=True) if c.regex_pattern]

    def items() -> None:
        for c, t, v, f, lang in zip(crits, texts, visible, folded, langs, strict=True):
            ctx = Context(t, v, None, lang.refusal or lang.neutral, f)
            score_rules(rules_for(c, ctx), c.threshold)

    stages: list[tuple[str, Callable[[], object]]] = [
        ("parse criteria", lambda: [parse(c) for _, c in cases]),
        ("canonical (NFKC, invisibles, spaces)", lambda: [canonical(t) for t in texts]),
        ("disclosure section", lambda: [split_disclosure(c) for c in canon]),
        ("flatten", lambda: [flatten(c) for c in canon]),
        ("fold for scan", lambda: [_fold_for_scan(v) for v in visible]),
        ("content floor (distinct words)", lambda: [has_distinct_words(v, 3) for v in visible]),
        ("failure-language scan", lambda: [scan(f) for f in folded]),
        ("scored items", items),
        ("regex_pattern", lambda: [jsregex.test(p, t) for p, t in patterns]),
    ]
    print(f"{'stage':40} {'µs per check':>14}")
    for name, fn in stages:
        per = statistics.median(_time(fn, 3)) / len(cases) * 1e6
        print(f"{name:40} {per:14.1f}")
    print(f"C extension: {'built' if chars.speedups is not None else 'not built (re twins)'}")


if __name__ == "__main__":
    main()
