"""The verification gateway's use cases, split by what each part holds.

- :mod:`~adjudge.app.gateway.tools`: the catalog — a provider registers a callable tool (by
  hand, from an OpenAPI operation or an MCP definition) and the credential to call it with;
  callers list tools and read one (:class:`Tools`).
- :mod:`~adjudge.app.gateway.calls`: a paid call forwarded, verified, signed and settled; its
  recovery when a process stopped mid-call; held charges paid when their report window ends;
  the gateway's signing keys and their JWKS (:class:`Gateway`).
- :mod:`~adjudge.app.gateway.corroboration`: an empty answer corroborated by the tool its
  policy names, as a paid call of its own that the provider pays for.
- :mod:`~adjudge.app.gateway.keyring`: those keys kept in the database, sealed
  (:class:`DatabaseKeyRing`).
- :mod:`~adjudge.app.gateway.parsed`: stored tool and policy documents parsed once per process.
- :mod:`~adjudge.app.gateway.spending`: the most a call accepts, and an API key's limits.
- :mod:`~adjudge.app.gateway.views`: what a tool, a call, its money and its answer look like.

Which hosts a call may reach is decided by one address guard,
:mod:`adjudge.gateway.addresses`, which the webhooks use too.
"""

from adjudge.app.gateway.calls import Gateway, IdempotencyInProgress
from adjudge.app.gateway.keyring import DatabaseKeyRing
from adjudge.app.gateway.tools import META_TOOLS, Tools

__all__ = ["META_TOOLS", "DatabaseKeyRing", "Gateway", "IdempotencyInProgress", "Tools"]
