"""Replay bundles: a verdict's receipt with every input it depended on, re-run offline.

A bundle (:mod:`adjudge.replay.bundle`) holds the signed receipt, the service's receipt key, the
stored result and criteria of an auto check, or the request, response bytes, contract, policy
and judgments of a paid call, and the engine's versions. :func:`replay` re-runs the verdict from
them with no service and no network, and reports the same verdict byte for byte or each
difference and its cause::

    from adjudge.replay import replay
    report = replay(bundle_bytes, pin="<the service's published key fingerprint>")
    report.outcome            # "same" or "different" (BUNDLE_UNUSABLE is raised, not reported)
    report.differences        # what differs, the two values, and why

Pure: nothing here reads a file, the network or the clock.
"""

from adjudge.replay.audit import replay
from adjudge.replay.bundle import FORMAT, Bundle, build, from_answer, read
from adjudge.replay.engine import engine
from adjudge.replay.report import Difference, Report

__all__ = [
    "FORMAT",
    "Bundle",
    "Difference",
    "Report",
    "build",
    "engine",
    "from_answer",
    "read",
    "replay",
]
