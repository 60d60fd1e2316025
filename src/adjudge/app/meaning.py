"""The meaning check's named judges, asked on live calls before the call settles.

A policy names its judges by key (``meaning.judges``) and how many must cite a conflict
(``meaning.quorum``, k of n). The service knows each key as a :class:`CallJudge` (a model behind
an OpenAI-compatible endpoint: ``adjudge.workers.judges.ChatCompletionsCallJudge``, configured
with ``adjudge serve --judges KEY=MODEL@URL``). For a sampled call the gateway asks every named
judge at once, each bounded by :data:`JUDGE_TIMEOUT`, before the call settles; a judge that is
not configured, fails or runs out of time gives an unavailable judgment. What a judge says is
only ever evidence for the pure verifier (``verify_call(..., judgments=...)``): grounded to this
call and response digest, a conflict counts only with citations whose pointer and quote digest
resolve in the mapped output, and a model never votes PASS.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from adjudge.calls.meaning import MeaningAsk
from adjudge.calls.verify import Judgment

__all__ = ["JUDGE_TIMEOUT", "CallJudge", "MeaningAsk", "ask_judges"]

#: The longest a judge may take on one call before it counts as unavailable (seconds).
JUDGE_TIMEOUT = 20.0
#: The threads judges are asked on, a process's own: a judge that does not answer holds its
#: thread until it gives up (a thread cannot be stopped), so judges asked on the loop's default
#: executor (a handful of threads on a small machine) held the threads the service's other work
#: there needed, and a slow model stalled it. Past these, a judge waits its turn within its
#: time-out (then it is unavailable, as any judge out of time).
JUDGE_THREADS = 16
_JUDGES = ThreadPoolExecutor(JUDGE_THREADS, thread_name_prefix="adjudge-judge")


class CallJudge(Protocol):
    """Judges whether one call's answer fits its request and the tool's scope."""

    def judge_call(self, ask: MeaningAsk) -> Judgment:
        """The judgment (``available`` False when there is none to give); may raise."""
        ...


async def ask_judges(
    judges: Mapping[str, CallJudge],
    keys: Sequence[str],
    ask: MeaningAsk,
    *,
    timeout: float = JUDGE_TIMEOUT,
) -> list[Judgment]:
    """Ask each judge named by ``keys`` at once, on the judges' own threads (:data:`_JUDGES`);
    one judgment per key, the unavailable ones saying why (not configured, an error, a
    time-out)."""
    loop = asyncio.get_running_loop()

    async def one(key: str) -> Judgment:
        def unavailable(why: str) -> Judgment:
            return Judgment(ask.call_id, ask.response_digest, False, reason=why, judge=key)

        judge = judges.get(key)
        if judge is None:
            return unavailable(f"no judge {key!r} is configured on this service")
        try:
            found = await asyncio.wait_for(
                loop.run_in_executor(_JUDGES, judge.judge_call, ask), timeout
            )
        except TimeoutError:
            return unavailable(f"the judge did not answer within {timeout:g} s")
        except Exception as exc:  # any failure of a judge is its unavailability
            return unavailable(f"the judge failed: {type(exc).__name__}: {exc}"[:500])
        # The judge's own key is what the receipt names, whatever the judge wrote.
        return Judgment(
            found.call_id,
            found.response_digest,
            found.available,
            found.conflict,
            found.citations,
            found.reason,
            judge=key,
        )

    return list(await asyncio.gather(*(one(key) for key in keys)))
