"""The wire shapes of core's HTTP sidecar (docs/serve.md) as typed dictionaries: what the client hands a host."""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Union

if sys.version_info >= (3, 11):
    from typing import Literal, NotRequired, TypedDict
else:  # pragma: no cover - Python 3.9 and 3.10
    from typing import Literal, TypedDict

    NotRequired = Optional

Status = Literal["success", "error", "declined", "cancelled"]
ReplyKind = Literal["once", "always", "reject"]


class Part(TypedDict, total=False):
    """A model-facing part: `{"type": "text", "text"}` or `{"type": "file", "mime", "uri" (a data: URI), "name"?}`."""

    type: str
    text: str
    mime: str
    uri: str
    name: str


class SettlementError(TypedDict):
    """`kind`: failure, unknown, invalid_input, invalid_output, stale, denied, interrupted or conflict (the call id
    was recorded for another agent or tool; nothing ran)."""

    kind: str
    message: str


class OutputRef(TypedDict):
    id: str
    bytes: int


class Settlement(TypedDict):
    """The outcome of one call (DESIGN §5)."""

    tool: str
    callID: str
    status: Status
    content: List[Part]
    structured: Any
    error: NotRequired[SettlementError]
    outputs: List[OutputRef]
    # Through a turn prepared for a provider: the settlement as that provider's tool-result block.
    result: NotRequired[Any]


class RecordedCall(TypedDict):
    """A recorded call as `GET /v1/settlements` (and `core log --json`) lists it. `status`: a settlement's, or
    running, interrupted (begun by a core that stopped), failed (core failed operationally). `input`: when over
    8 KiB of JSON, the first 8 KiB of that JSON as a string (`inputTruncated`). Times are ISO 8601."""

    sessionID: str
    toolCallID: str
    tool: str
    status: str
    error: NotRequired[SettlementError]
    reason: NotRequired[str]
    agent: Optional[str]
    location: str
    messageID: Optional[str]
    input: Any
    inputTruncated: bool
    inputBytes: Optional[int]
    startedAt: Optional[str]
    settledAt: Optional[str]
    durationMs: Optional[int]
    outputs: List[OutputRef]


class Annotations(TypedDict, total=False):
    """What a tool declares of itself, for a host deciding which calls may run without asking."""

    readOnly: bool
    destructive: bool
    idempotent: bool
    openWorld: bool


class Definition(TypedDict):
    name: str
    description: str
    inputSchema: Dict[str, Any]
    outputSchema: Dict[str, Any]
    annotations: NotRequired[Annotations]


class Turn(TypedDict):
    turnID: str
    definitions: List[Definition]
    # With a provider mapping: its name, and one tool per definition in that provider's shape.
    provider: NotRequired[str]
    tools: NotRequired[List[Any]]
    # Present once the Location (or the application's tools) reported a load problem since the serve started.
    warnings: NotRequired[bool]


class PermissionRequest(TypedDict):
    id: str
    sessionID: str
    toolCallID: str
    action: str
    resources: List[str]
    save: List[str]
    protected: NotRequired[str]


class Progress(TypedDict):
    message: str
    metadata: NotRequired[Dict[str, Any]]


class Check(TypedDict):
    """What core would decide about a call: `decision` is `allow`, `deny` or `ask`; `checks` says why."""

    tool: str
    agent: str
    decision: Literal["allow", "deny", "ask"]
    checks: List[Dict[str, Any]]
    # The plugins whose hooks the call meets, in installation order: [{"plugin", "hooks": [...]}]; absent when none.
    hooks: NotRequired[List[Dict[str, Any]]]


class HostToolDefinition(TypedDict):
    """A tool the host performs itself (`POST /v1/host-tools`)."""

    name: str
    description: str
    # JSON Schema of the input; its root is an object.
    inputSchema: Dict[str, Any]
    # JSON Schema the host's output is checked against.
    outputSchema: NotRequired[Dict[str, Any]]
    # How long a call waits for the host's answer, in ms (default 10 minutes).
    timeoutMs: NotRequired[int]
    annotations: NotRequired[Annotations]


class HostCall(TypedDict):
    """A call of a host tool waiting for the host's answer (the `host_call` event)."""

    id: str
    sessionID: str
    toolCallID: str
    name: str
    input: Any
    # When the call stops waiting (ms since the epoch).
    deadline: float


class Event(TypedDict):
    """An event of `GET /v1/events`: `call.started`, `call.progress`, `call.settled`, `call.failed`,
    `permission.asked`, `permission.replied`, `host_call`, `tools.changed`, `todo.updated` or `diagnostic`, with its data."""

    event: str
    data: Dict[str, Any]


# The host's answer to a delegated call: {"output": ...}, or {"error": {"message": ...}} for the model to read.
HostCallResult = Dict[str, Any]

# How to answer an ask: "once", "always", "reject", or {"reply": "reject", "message": ...} to fail the call with it,
# or {"reply": "reject", "unattended": True, "why": ...} to tell the model nobody could be asked.
Reply = Union[ReplyKind, Dict[str, Any]]
