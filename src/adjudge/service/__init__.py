"""The HTTP service: FastAPI routes over the market, the store, an injected clock."""

from adjudge.service.app import create_app
from adjudge.service.clock import Clock, SystemClock
from adjudge.service.marketplace import Marketplace, Settings

__all__ = ["Clock", "Marketplace", "Settings", "SystemClock", "create_app"]
