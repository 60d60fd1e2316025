"""The HTTP service: FastAPI routes over the use cases of :mod:`adjudge.app`."""

from adjudge.service.access import enable as enable_access_log
from adjudge.service.app import MAX_BODY_BYTES, create_app
from adjudge.service.demo_provider import JUDGE_MOUNT as DEMO_JUDGE_MOUNT
from adjudge.service.demo_provider import MOUNT as DEMO_PROVIDER_MOUNT
from adjudge.service.demo_provider import judges_app, skycast_app
from adjudge.service.http11 import BoundedHttpTools

__all__ = [
    "DEMO_JUDGE_MOUNT",
    "DEMO_PROVIDER_MOUNT",
    "MAX_BODY_BYTES",
    "BoundedHttpTools",
    "create_app",
    "enable_access_log",
    "judges_app",
    "skycast_app",
]
