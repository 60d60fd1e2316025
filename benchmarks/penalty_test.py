"""How long the penalty test takes in a call's commit, by the size of the provider's window.

Run: python benchmarks/penalty_test.py [--rounds 3]. A call of a provider with declared terms
runs the exact one-sided binomial test whenever its window's rate is above the declared one and
no proposal is open: every call of a busy provider a little worse than it declared. For each
window size and declared rate, the failures are put just past the rate (not enough to reject:
the test runs again on the next call), and the best of ``rounds`` times is printed for the
test as the service runs it (``binomial_tail_test``) beside the integer sum alone
(``_exact_tail_test``, which the code before ran on every such call), and their ratio.
"""

from __future__ import annotations

import argparse
from fractions import Fraction
from functools import partial

from jsonscan import best_ms

from adjudge.calls.quality import _exact_tail_test, binomial_tail_test

RATES = (Fraction(1, 20), Fraction(1, 100), Fraction("0.012345"))
ALPHA = Fraction(1, 20)  # a confidence of 0.95


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--largest", type=int, default=100_000, help="The largest window the integer sum runs."
    )
    args = parser.parse_args()
    print(f"{'window':>9} {'rate':>9} {'fails':>7} {'test ms':>9} {'integer sum ms':>15} ratio")
    for n in (1_000, 10_000, 100_000, 1_000_000):
        for p in RATES:
            k = int(n * p * Fraction(101, 100)) + 1  # 1% past the declared rate
            test = best_ms(partial(binomial_tail_test, n, k, p, ALPHA), args.rounds)
            if n <= args.largest:
                exact = best_ms(partial(_exact_tail_test, n, k, p, ALPHA), args.rounds)
                same = binomial_tail_test(n, k, p, ALPHA).rejected == (
                    _exact_tail_test(n, k, p, ALPHA).rejected
                )
                assert same, (n, k, p)
                shown = f"{exact:15.2f} {exact / test:5.0f}×"
            else:
                shown = f"{'(not run)':>15}"
            print(f"{n:>9,} {float(p):>9} {k:>7,} {test:9.3f} {shown}")


if __name__ == "__main__":
    main()
