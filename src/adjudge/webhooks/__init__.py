"""Standard Webhooks delivery: the event catalogue, endpoint URLs, secrets, signing, sending.

A building block, like :mod:`adjudge.gateway`: it holds no state and reaches no store. The use
cases (:mod:`adjudge.app.webhooks`) write events into the outbox in the transaction of the state
change, and a delivery worker claims them and sends each through :class:`Sender`.

- :mod:`adjudge.webhooks.events` — the event types and their payloads (ids, kinds, amounts as
  strings, receipt ids; never a secret, a brief or a result);
- :mod:`adjudge.webhooks.urls` — which endpoint URLs are accepted;
- :mod:`adjudge.webhooks.schedule` — the retry schedule and the attempt limit;
- :mod:`adjudge.webhooks.signing` — ``whsec_`` secrets and the three Standard Webhooks headers,
  made with the ``standardwebhooks`` library;
- :mod:`adjudge.webhooks.sender` — one bounded HTTP attempt, classified.
"""

from adjudge.webhooks.events import EVENT_TYPES, event_types
from adjudge.webhooks.schedule import MAX_ATTEMPTS, SCHEDULE, next_attempt
from adjudge.webhooks.sender import Attempt, Sender, SenderLimits
from adjudge.webhooks.signing import body_bytes, new_secret, sign, signed_headers
from adjudge.webhooks.urls import endpoint_url

__all__ = [
    "EVENT_TYPES",
    "MAX_ATTEMPTS",
    "SCHEDULE",
    "Attempt",
    "Sender",
    "SenderLimits",
    "body_bytes",
    "endpoint_url",
    "event_types",
    "new_secret",
    "next_attempt",
    "sign",
    "signed_headers",
]
