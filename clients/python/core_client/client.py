"""A client of core's HTTP sidecar (docs/serve.md), standard library only.

Spawn `core serve` and read its ready line, or connect to a running one; then turns, calls (JSON, or server-sent
events with progress, asks answered by a callback, and cancellation), checks, settlements, asks, events and managed
outputs. A call that loses its connection is posted again with the same ids: core joins the running call or replays
its record, so a call never runs twice. A `Session` (./session.py) keeps the turn current between model steps.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from http.client import HTTPException, HTTPResponse
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from . import sse
from .types import Check, Event, HostCall, HostCallResult, HostToolDefinition, PermissionRequest, Progress, RecordedCall, Reply, Settlement, Turn

DEFAULT_RETRIES = 3
RETRY_DELAY_S = 0.025

if TYPE_CHECKING:
    from .session import Session

OnAsk = Callable[[PermissionRequest], Optional[Reply]]
OnProgress = Callable[[Progress], None]
OnHostCall = Callable[[HostCall], Optional[HostCallResult]]


class CoreError(Exception):
    """A refusal from core (`{"error": {"kind", "message"}}`), or a call that ended without a settlement."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message


# What a lost connection looks like: no answer, or an answer cut short. Posting again is safe.
_TRANSPORT = (urllib.error.URLError, ConnectionError, HTTPException, TimeoutError, OSError)


@dataclass(frozen=True)
class OutputRead:
    """A managed output, or one byte range of it: the bytes served, the first and last byte, the whole size."""

    data: bytes
    start: int
    end: int
    size: int

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _not_found(error: CoreError) -> bool:
    """A 404 met by a request sent again: what the first sending did (an ask answered, a call cancelled, a tool removed)."""
    return error.status == 404


def _nameable(id_: str) -> bool:
    """Whether a URL path can name `id_`: "." and ".." are read as steps, however escaped (core takes neither as an id)."""
    return id_ not in (".", "..")


def fresh_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _error_of(error: urllib.error.HTTPError) -> CoreError:
    body = error.read().decode("utf-8", errors="replace")
    try:
        detail = json.loads(body)["error"]
        return CoreError(error.code, detail["kind"], detail["message"])
    except (ValueError, KeyError, TypeError):
        return CoreError(error.code, "unknown", body or str(error.reason))


class EventStream:
    """The Location's events as they happen; subscribed once constructed. Iterate it; `close()` ends it."""

    def __init__(self, response: HTTPResponse, max_line_bytes: int = sse.DEFAULT_MAX_LINE_BYTES) -> None:
        self._response = response
        self._closed = False
        self._max_line_bytes = max_line_bytes

    def __iter__(self) -> Iterator[Event]:
        try:
            for event, data in sse.read(self._response, self._max_line_bytes):
                yield {"event": event, "data": json.loads(data)}
        except (*_TRANSPORT, ValueError):
            if not self._closed:
                raise

    def close(self) -> None:
        self._closed = True
        try:
            # Shut the socket down, so a reader blocked in another thread wakes up.
            self._response.fp.raw._sock.shutdown(2)  # type: ignore[union-attr]
        except (AttributeError, OSError):
            pass
        self._response.close()


class Core:
    """A connection to one core sidecar, acting on one Location."""

    def __init__(
        self,
        url: str,
        token: str,
        location: Optional[str] = None,
        retries: int = DEFAULT_RETRIES,
        process: Optional[subprocess.Popen] = None,
        max_line_bytes: int = sse.DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.location = location
        self.retries = retries
        self._process = process
        # The longest event-stream line or event read: a longer one fails the call (CoreError `line_too_long`).
        self.max_line_bytes = max_line_bytes

    @classmethod
    def connect(
        cls,
        url: str,
        token: str,
        location: Optional[str] = None,
        retries: int = DEFAULT_RETRIES,
        max_line_bytes: int = sse.DEFAULT_MAX_LINE_BYTES,
    ) -> "Core":
        """A client of a running `core serve` (the `url` and `token` of its ready line)."""
        return cls(url, token, location, retries, None, max_line_bytes)

    @classmethod
    def spawn(
        cls,
        command: Union[str, Sequence[str]] = "core",
        location: Optional[str] = None,
        allow_roots: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
        stderr: Any = None,
        retries: int = DEFAULT_RETRIES,
        max_line_bytes: int = sse.DEFAULT_MAX_LINE_BYTES,
    ) -> "Core":
        """Starts `core serve` on a free loopback port and connects once its ready line is printed."""
        argv = [command] if isinstance(command, str) else list(command)
        argv.append("serve")
        if location is not None:
            argv += ["--location", location]
        for root in allow_roots:
            argv += ["--allow-root", root]
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, env=None if env is None else dict(env)
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            code = process.wait()
            raise RuntimeError(f"core serve exited (code {code}) before it was ready")
        ready = json.loads(line)
        return cls(ready["url"], ready["token"], None, retries, process, max_line_bytes)

    def at(self, location: str) -> "Core":
        """The same sidecar, acting on another Location."""
        return Core(self.url, self.token, location, self.retries, self._process, self.max_line_bytes)

    def close(self) -> None:
        """Stops a sidecar this client spawned (SIGTERM: running calls are cancelled and recorded) and waits."""
        if self._process is None or self._process.poll() is not None:
            return
        self._process.terminate()
        self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()

    def __enter__(self) -> "Core":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def session(self, **options: Any) -> "Session":
        """A session: calls under one session id, through a turn kept current between model steps."""
        from .session import Session

        return Session(self, **options)

    # Requests

    def _open(
        self, method: str, path: str, body: Any = None, headers: Optional[Dict[str, str]] = None
    ) -> HTTPResponse:
        all_headers = {"authorization": f"Bearer {self.token}", "content-type": "application/json"}
        if self.location is not None:
            all_headers["x-core-location"] = self.location
        all_headers.update(headers or {})
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(f"{self.url}{path}", data=data, headers=all_headers, method=method)
        try:
            return urllib.request.urlopen(request)  # noqa: S310 - the URL is the sidecar's own
        except urllib.error.HTTPError as error:
            raise _error_of(error) from None

    def _send(
        self,
        method: str,
        path: str,
        read: Callable[[HTTPResponse], Any],
        body: Any = None,
        headers: Optional[Dict[str, str]] = None,
        done: Optional[Callable[[CoreError], bool]] = None,
    ) -> Any:
        """Sends a request, again while no whole answer comes back (up to the retries).

        A request that does something once (a reply, a cancel) sent again may meet the refusal its first sending
        earned (a 404: no such ask any more): where `done` says an error is that, it is the answer (None).
        """
        attempt = 0
        while True:
            try:
                response = self._open(method, path, body, headers)
                with response:
                    return read(response)
            except CoreError as error:
                if attempt > 0 and done is not None and done(error):
                    return None
                raise
            except sse.LineTooLong as error:
                # Not a lost connection: sending again would read the same stream.
                raise CoreError(502, "line_too_long", str(error)) from None
            except _TRANSPORT:
                if attempt >= self.retries:
                    raise
                time.sleep(RETRY_DELAY_S * 2**attempt)
                attempt += 1

    def _json(self, method: str, path: str, body: Any = None, done: Optional[Callable[[CoreError], bool]] = None) -> Any:
        return self._send(method, path, lambda response: json.loads(response.read()), body, None, done)

    def health(self) -> Dict[str, Any]:
        return self._json("GET", "/v1/health")

    def materialize(self, agent: Optional[str] = None, provider: Optional[str] = None) -> Turn:
        """The definitions to offer the model and the turn to settle its calls through."""
        body: Dict[str, str] = {}
        if agent is not None:
            body["agent"] = agent
        if provider is not None:
            body["provider"] = provider
        return self._json("POST", "/v1/turns", body)

    def settle(
        self,
        turn_id: str,
        call: Dict[str, Any],
        on_ask: Optional[OnAsk] = None,
        on_progress: Optional[OnProgress] = None,
        cancel: Optional[threading.Event] = None,
        stream: Optional[bool] = None,
        on_host_call: Optional[OnHostCall] = None,
    ) -> Settlement:
        """Settles one call (`sessionID`, `assistantMessageID`, `toolCallID`, `name`, `input`) through a turn.

        With `on_ask`, `on_progress` or `cancel` (or `stream=True`) the call's events are streamed: `on_ask` answers
        an ask as it comes (returning None leaves it pending), and setting `cancel` cancels the call on core, which
        then answers the `cancelled` settlement. `on_host_call` performs a call of a host tool this call made: what it
        returns is sent as the call's result (an exception's message as the failure the model reads; None leaves it
        for someone else). An unknown or expired turn raises a CoreError with status 404.
        """
        path = f"/v1/turns/{urllib.parse.quote(turn_id, safe='')}/calls"
        if stream is None:
            stream = on_ask is not None or on_progress is not None or cancel is not None or on_host_call is not None
        if not stream:
            return self._json("POST", path, call)
        answered: set = set()
        started = threading.Event()
        done = threading.Event()

        def watch_cancel() -> None:
            assert cancel is not None
            # Looks at `cancel` a few times a second until the call is done: the standard library cannot wait on
            # either of two events.
            while not done.wait(0.05):
                if cancel.is_set():
                    # The call runs on core once its stream has answered: a cancel sent before could miss it.
                    started.wait()
                    if not done.is_set():
                        self.cancel(call["sessionID"], call["toolCallID"])
                    return

        if cancel is not None:
            threading.Thread(target=watch_cancel, daemon=True).start()

        def read(response: HTTPResponse) -> Settlement:
            started.set()
            for event, raw in sse.read(response, self.max_line_bytes):
                data = json.loads(raw)
                if event == "progress" and on_progress is not None:
                    on_progress(data)
                elif event == "permission" and on_ask is not None and data["id"] not in answered:
                    answered.add(data["id"])
                    reply = on_ask(data)
                    if reply is not None:
                        try:
                            self.reply(data["id"], reply)
                        except CoreError as error:
                            # Answered elsewhere meanwhile: the call goes on either way.
                            if error.status != 404:
                                raise
                elif event == "host_call" and on_host_call is not None and data["id"] not in answered:
                    answered.add(data["id"])
                    try:
                        result = on_host_call(data)
                    except Exception as error:  # the host's own failure is what the model reads
                        result = {"error": {"message": str(error)}}
                    if result is not None:
                        try:
                            self.answer_host_call(data["id"], result)
                        except CoreError as error:
                            # Answered, cancelled or timed out meanwhile: the call settles either way.
                            if error.status not in (404, 409):
                                raise
                elif event == "settlement":
                    return data
                elif event == "error":
                    raise CoreError(500, data["error"]["kind"], data["error"]["message"])
            # The stream ended before its settlement: the connection was cut. Posting again joins the call.
            raise ConnectionError(f"the event stream of {call['toolCallID']} ended before its settlement")

        try:
            return self._send("POST", path, read, call, {"accept": "text/event-stream"})
        finally:
            done.set()
            started.set()

    def check(self, turn_id: str, name: str, input: Any, agent: Optional[str] = None) -> Check:
        """What core would decide about a call through a turn, running, asking and recording nothing."""
        body: Dict[str, Any] = {"name": name, "input": input}
        if agent is not None:
            body["agent"] = agent
        return self._json("POST", f"/v1/turns/{urllib.parse.quote(turn_id, safe='')}/check", body)

    def settlement(self, session_id: str, tool_call_id: str) -> Optional[Settlement]:
        """The recorded settlement of a call, or None when none is recorded (yet)."""
        # No call has such ids (core refuses them), and a path cannot name them: "/.." is read as a step up.
        if not _nameable(session_id) or not _nameable(tool_call_id):
            return None
        try:
            return self._json("GET", f"/v1/settlements/{urllib.parse.quote(session_id, safe='')}/{urllib.parse.quote(tool_call_id, safe='')}")
        except CoreError as error:
            if error.status == 404:
                return None
            raise

    def todos(self, session_id: str) -> Dict[str, Any]:
        """A session's todo list in this Location: {"sessionID", "todos": [{content, status, priority}]}."""
        if not _nameable(session_id):
            return {"sessionID": session_id, "todos": []}
        return self._json("GET", f"/v1/sessions/{urllib.parse.quote(session_id, safe='')}/todos")

    def calls(self, session_id: Optional[str] = None, since: Optional[str] = None, limit: Optional[int] = None) -> List[RecordedCall]:
        """The calls recorded in the Location, oldest first: of one session, received since a time (an ISO time or
        a duration back from now: 10m, 2h, 7d), at most the newest `limit` (default 100)."""
        query = {key: value for key, value in (("sessionID", session_id), ("since", since), ("limit", limit)) if value is not None}
        suffix = f"?{urllib.parse.urlencode(query)}" if query else ""
        return self._json("GET", f"/v1/settlements{suffix}")

    def cancel(self, session_id: str, tool_call_id: str) -> bool:
        """Interrupts a running call (it settles `cancelled`); False when no such call is running."""
        if not _nameable(session_id) or not _nameable(tool_call_id):
            return False
        try:
            self._json("POST", f"/v1/calls/{urllib.parse.quote(session_id, safe='')}/{urllib.parse.quote(tool_call_id, safe='')}/cancel", None, _not_found)
            return True
        except CoreError as error:
            if error.status == 404:
                return False
            raise

    def permissions(self) -> List[PermissionRequest]:
        """The Location's pending asks."""
        return self._json("GET", "/v1/permissions")

    def reply(self, ask_id: str, reply: Reply) -> None:
        """Answers an ask; a CoreError with status 404 when it is unknown or already answered (but for the answer of
        this reply itself lost and sent again: then the 404 is its own doing)."""
        body = {"reply": reply} if isinstance(reply, str) else dict(reply)
        self._json("POST", f"/v1/permissions/{urllib.parse.quote(ask_id, safe='')}/reply", body, _not_found)

    def register_host_tools(
        self, enable: Sequence[str] = (), tools: Sequence[HostToolDefinition] = ()
    ) -> List[HostToolDefinition]:
        """Registers tools this host performs itself: shipped ones by name ("question", "task") and its own definitions.

        Answers every host tool of the Location. A bad definition raises a CoreError with status 400, a name the
        Location's own tools hold one with status 409.
        """
        body: Dict[str, Any] = {}
        if enable:
            body["enable"] = list(enable)
        if tools:
            body["tools"] = list(tools)
        return self._json("POST", "/v1/host-tools", body)

    def host_tools(self) -> List[HostToolDefinition]:
        """The host tools of the Location."""
        return self._json("GET", "/v1/host-tools")

    def remove_host_tool(self, name: str) -> bool:
        """Removes a host tool; False when there was none of that name."""
        try:
            self._json("DELETE", f"/v1/host-tools/{urllib.parse.quote(name, safe='')}", None, _not_found)
            return True
        except CoreError as error:
            if error.status == 404:
                return False
            raise

    def host_calls(self) -> List[HostCall]:
        """The delegated calls waiting for this host's answer (after a reconnect, say)."""
        return self._json("GET", "/v1/host-calls")

    def answer_host_call(self, call_id: str, result: HostCallResult) -> None:
        """Answers a delegated call with {"output": ...} or {"error": {"message": ...}}.

        An output its schema refuses raises a CoreError with status 400 (the call goes on waiting); a call answered,
        cancelled or timed out one with status 409.
        """
        self._json("POST", f"/v1/host-calls/{urllib.parse.quote(call_id, safe='')}/result", result, lambda error: error.status == 409)

    def events(self) -> EventStream:
        """Subscribes to the Location's events: once this returns, everything that happens after is seen."""
        return EventStream(self._open("GET", "/v1/events", headers={"accept": "text/event-stream"}), self.max_line_bytes)

    def output(
        self,
        output_id: str,
        part: Optional[str] = None,
        start: Optional[int] = None,
        end: Optional[int] = None,
        suffix: Optional[int] = None,
    ) -> OutputRead:
        """A managed output's full text (or with part="structured" its JSON), or one byte range of it."""
        query = "" if part is None else f"?part={part}"
        headers: Dict[str, str] = {}
        if suffix is not None:
            headers["range"] = f"bytes=-{suffix}"
        elif start is not None or end is not None:
            headers["range"] = f"bytes={start or 0}-{'' if end is None else end}"

        def read(response: HTTPResponse) -> OutputRead:
            data = response.read()
            served = response.headers.get("content-range") or ""
            if response.status == 206 and served.startswith("bytes "):
                span, _, size = served[6:].partition("/")
                first, _, last = span.partition("-")
                return OutputRead(data, int(first), int(last), int(size))
            return OutputRead(data, 0, len(data) - 1, len(data))

        return self._send("GET", f"/v1/outputs/{urllib.parse.quote(output_id, safe='')}{query}", read, None, headers)
