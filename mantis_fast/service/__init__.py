"""``mantis-fast serve``: upstream Mantis's ``POST /v1/cua`` on a pool of browser desktops.

``cua`` reads and checks a request (upstream's fields, our extensions), ``episodes`` runs one
on a desktop with a brain (the MiniWoB++ oracle or the configured model) through
``GymRunner``, ``server`` is the HTTP service and its desktop pool. See ``docs/service.md``.
"""

from mantis_fast._extras import require_extra

require_extra("agent", __name__)  # before the imports that need them
require_extra("gym", __name__)

from mantis_fast.service.cua import CUARequest, RequestRejected, parse_request  # noqa: E402
from mantis_fast.service.server import CUAServer, ServiceBusy, ServiceConfig, serve  # noqa: E402

__all__ = [
    "CUARequest",
    "CUAServer",
    "RequestRejected",
    "ServiceBusy",
    "ServiceConfig",
    "parse_request",
    "serve",
]
