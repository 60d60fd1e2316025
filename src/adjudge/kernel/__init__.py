"""The verification kernel (spec 002): verdicts, trust, evidence, observables and rails. Pure.

Nothing here reads a file, the network or the clock: time is passed in.
"""

# The oracle takes the kernel's one MISMATCH seal while this package loads, before any caller's
# code can run, since importing any kernel module loads this package first.
from adjudge.kernel import oracle
from adjudge.kernel.authority import DEFAULT_POLICY, Authority, TrustPolicy
from adjudge.kernel.determination import Determination, determine
from adjudge.kernel.oracle import Record
from adjudge.kernel.verdicts import PRECEDENCE, Check, Pending, Verdict, fold, resolve

__all__ = [
    "DEFAULT_POLICY",
    "PRECEDENCE",
    "Authority",
    "Check",
    "Determination",
    "Pending",
    "Record",
    "TrustPolicy",
    "Verdict",
    "determine",
    "fold",
    "oracle",
    "resolve",
]
