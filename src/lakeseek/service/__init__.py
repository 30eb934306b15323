"""``lakeseek serve``: an HTTP service over the indexes of configured lakes.

Lakes are named at start (:class:`ServiceConfig`); a request names a lake, never a path.
Each worker process keeps its handles, their caches and the decoded index entries warm,
checks on every request whether an index committed a new version (then opens it again),
and, through the handles, whether the lake changed (files new since indexing are read, as
by every query). Routes are in :mod:`.app`, the lakes in :mod:`.lakes`, the metrics in
:mod:`.metrics`.
"""

from lakeseek.service.app import create_app
from lakeseek.service.config import LakeConfig, ServiceConfig

__all__ = ["LakeConfig", "ServiceConfig", "create_app"]
