"""Review workers: the agent-review queue and the model judges (the only place a model is called).

``ReviewWorker(client, judge, signer).poll()`` leases the results awaiting one verifier agent
from the service (a client of its API), asks the judge, and posts each verdict signed as that
verifier. ``ChatCompletionsJudge`` talks to any OpenAI-compatible chat-completions endpoint.
"""

from adjudge.workers.judges import (
    ChatCompletionsCallJudge,
    ChatCompletionsJudge,
    Judge,
    JudgeError,
    Judgment,
    parse_answer,
)
from adjudge.workers.review import PollReport, ReviewWorker

__all__ = [
    "ChatCompletionsCallJudge",
    "ChatCompletionsJudge",
    "Judge",
    "JudgeError",
    "Judgment",
    "PollReport",
    "ReviewWorker",
    "parse_answer",
]
