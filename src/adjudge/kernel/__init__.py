"""The verification kernel (spec 002): verdicts, trust, evidence, observables and rails. Pure.

Nothing here reads a file, the network or the clock: time is passed in.

What the product runs, and what is library only. Every task and call verdict is a
:func:`determine` over kernel checks (:mod:`.verdicts`, :mod:`.authority`, the integrity proof
of :mod:`.oracle`, the content-digest expression of :mod:`.observables`); a named verifier's
review is grounded by :func:`.semantic.ground_review`; the market runs the actor rails
(:func:`.rails.no_self_verification`, :func:`.rails.verifier_not_author`,
:func:`.rails.no_contract_self_acceptance`). The rest is spec 002 as a library, complete and
tested by its vectors, for callers that have what it needs, and not called by the service
because the service has nothing to give it:

- :func:`.rails.separate_boundary`: adjudge never sees where an agent or a verifier's worker
  runs, so it cannot name execution boundaries (an unnamed one would refuse every verdict);
- :func:`.rails.change_manifest` and :func:`.rails.before_after`: no task or call carries a
  change manifest or a before/after state; a submission is judged as the text the service
  stored, and a call as the bytes the gateway read;
- :mod:`.evidence`'s axes and :func:`.evidence.admit`: every piece of evidence the service
  judges is its own stored copy, named by the digest it recomputed, so there is no producer's
  label to assess (the rails use :func:`.evidence.identity`);
- :func:`.semantic.route`: the routing table for unnamed model judgments; a call's meaning
  check routes through :mod:`adjudge.calls` instead, and a task's only model judgment is the
  named verifier's, grounded above;
- :mod:`.obligations`: the one obligation the service declares is the integrity proof, which
  the oracle mints only from a digest it recomputed (falsifiable by construction); posted
  criteria are checked for falsifiability by :mod:`adjudge.autocheck.falsifiable`.

``docs/kernel.md`` says where each rail runs and what adjudge cannot see.
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
