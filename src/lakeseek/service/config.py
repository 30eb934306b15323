"""What a service serves, as plain data: passed to worker processes through the environment."""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field

from lakeseek.exceptions import InvalidArgumentError

ENVIRONMENT = "LAKESEEK_SERVE_CONFIG"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


@dataclass(frozen=True)
class LakeConfig:
    location: str
    source_format: str | None = None
    storage_options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ServiceConfig:
    lakes: dict[str, LakeConfig]
    token: str | None = None  # requests must carry "Authorization: Bearer <token>" (not /healthz)
    max_keys: int = 1_000_000  # keys one locate may ask for
    max_rows: int = 1_000_000  # rows one read may return
    index_check_seconds: float = 0.0  # how long an index's version is trusted (0: checked per request)
    cache_mb: int | None = None  # decoded index entries kept per worker (default: $LAKESEEK_INDEX_CACHE_MB or 256)
    metrics_dir: str | None = None  # where workers publish their metrics for each other's scrapes

    def __post_init__(self) -> None:
        if not self.lakes:
            raise InvalidArgumentError("a service serves at least one lake (--lake NAME=LOCATION)")
        for name in self.lakes:
            if not _NAME.fullmatch(name):
                raise InvalidArgumentError(f"a lake's name is letters, digits, '_', '.' and '-', not {name!r}")
        if self.max_keys < 1 or self.max_rows < 1 or self.index_check_seconds < 0:
            raise InvalidArgumentError("max_keys and max_rows are positive, index_check_seconds at least 0")

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServiceConfig:
        raw = json.loads(text)
        raw["lakes"] = {name: LakeConfig(**lake) for name, lake in raw["lakes"].items()}
        return cls(**raw)

    @classmethod
    def from_environment(cls) -> ServiceConfig:
        text = os.environ.get(ENVIRONMENT)
        if not text:
            raise InvalidArgumentError(f"no service configuration in ${ENVIRONMENT}")
        return cls.from_json(text)
