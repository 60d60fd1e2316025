"""How long the JSON object scan takes on brace-heavy results that close nothing.

Run: python benchmarks/jsonscan.py [--rounds 3]. Prints, for each text, the best of ``rounds``
times of ``extract_json_object`` and of the whole auto check under ``required_fields`` and
``expected_schema`` (which read the one extraction), beside the code before: each of up to 50
starting braces walked the rest of the text on its own, and the check extracted three times.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from adjudge import auto_check
from adjudge.autocheck.jsonscan import extract_json_object

CRITERIA = {
    "required_fields": ["summary", "sources"],
    "expected_schema": {"type": "object", "required": ["summary"]},
}

# name → (text, the code before's extraction and check in ms, one idle machine, December 2026)
TEXTS: dict[str, tuple[str, float, float]] = {
    '"{" * 8192': ("{" * 8192, 168.1, 400.3),
    '"{" * 200000': ("{" * 200_000, 4_092.5, 10_800.3),
    "'{\"' * 100000": ('{"' * 100_000, 2_673.7, 6_932.9),
    "'{\"' + '{\\\\\"' * 60000": ('{"' + '{\\"' * 60_000, 1_262.6, 3_175.0),
}


def best_ms(fn: Callable[[], object], rounds: int) -> float:
    """The least disturbed of ``rounds`` runs, in milliseconds."""
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1e3)
    return min(samples)


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    auto_check("Summary: warm the tables. Sources: none.", CRITERIA)
    print(f"{'text':28} {'extract':>9} {'before':>9} {'check':>9} {'before':>9}  (ms)")
    for name, (text, old_extract, old_check) in TEXTS.items():
        extract = best_ms(lambda text=text: extract_json_object(text), rounds)
        check = best_ms(lambda text=text: auto_check(text, CRITERIA), rounds)
        print(f"{name:28} {extract:9.1f} {old_extract:9.1f} {check:9.1f} {old_check:9.1f}")


if __name__ == "__main__":
    main()
