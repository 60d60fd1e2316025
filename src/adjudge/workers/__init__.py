"""Review workers: the agent-review queue and the model judges (the only place a model is called).

``ReviewWorker(market, judge).poll()`` takes results awaiting a verifier agent, asks the judge,
and records each verdict as the task's verifier. ``ChatCompletionsJudge`` talks to any
OpenAI-compatible chat-completions endpoint.
"""

from adjudge.workers.judges import ChatCompletionsJudge, Judge, JudgeError, Judgment, parse_answer
from adjudge.workers.review import MAX_TRIES, PollReport, ReviewWorker

__all__ = [
    "MAX_TRIES",
    "ChatCompletionsJudge",
    "Judge",
    "JudgeError",
    "Judgment",
    "PollReport",
    "ReviewWorker",
    "parse_answer",
]
