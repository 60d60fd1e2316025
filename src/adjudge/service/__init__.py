"""The HTTP service: FastAPI routes over the use cases of :mod:`adjudge.app`."""

from adjudge.service.access import enable as enable_access_log
from adjudge.service.app import MAX_BODY_BYTES, create_app

__all__ = ["MAX_BODY_BYTES", "create_app", "enable_access_log"]
