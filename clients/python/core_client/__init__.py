"""core_client: a client of core's HTTP sidecar for agent hosts, standard library only (Python 3.9+)."""

from .client import DEFAULT_RETRIES, Core, CoreError, EventStream, OutputRead, fresh_id
from .session import Session
from .types import (
    Check,
    Definition,
    Event,
    HostCall,
    HostCallResult,
    HostToolDefinition,
    Part,
    PermissionRequest,
    Progress,
    RecordedCall,
    Reply,
    Settlement,
    Turn,
)

__all__ = [
    "DEFAULT_RETRIES",
    "Check",
    "Core",
    "CoreError",
    "Definition",
    "Event",
    "EventStream",
    "HostCall",
    "HostCallResult",
    "HostToolDefinition",
    "OutputRead",
    "Part",
    "PermissionRequest",
    "Progress",
    "RecordedCall",
    "Reply",
    "Session",
    "Settlement",
    "Turn",
    "fresh_id",
]
