"""A host's conversation with core: the turn its model steps settle through, kept current between steps.

The turn is materialized again once it is outdated: core said the tools changed, a call came back `stale`, or core
no longer knows the turn (404). Calls settle through the turn the model last saw, never a fresher one.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable, List, Optional

from .client import _TRANSPORT, Core, CoreError, EventStream, fresh_id
from .types import Check, Definition, Settlement, Turn


class Session:
    """A host's conversation with core: one session id, one agent, and the turn its model steps settle through.

    `turn()` / `definitions()` (call them before each model step) materialize again once the turn is outdated:
    core said the tools changed (unless `watch=False`), a call came back `stale`, or core no longer knows the turn
    (404). `call()` settles through the turn the model last saw; a call whose turn is gone is posted again, with
    the same ids, through a fresh turn only when that turn advertises the tool exactly as the model saw it.
    """

    def __init__(
        self,
        core: Core,
        session_id: Optional[str] = None,
        agent: Optional[str] = None,
        provider: Optional[str] = None,
        watch: bool = True,
        on_tools_changed: Optional[Callable[[], None]] = None,
    ) -> None:
        self.core = core
        self.id = session_id or fresh_id("ses")
        self._agent = agent
        self._provider = provider
        self._on_tools_changed = on_tools_changed
        self._current: Optional[Turn] = None
        self._outdated = True
        # The events stream ended: no change can be seen coming, so every step materializes afresh.
        self._blind = False
        self._events: Optional[EventStream] = None
        self._closed = False
        self._lock = threading.Lock()
        if watch:
            try:
                self._events = core.events()
            except (CoreError, *_TRANSPORT):
                self._blind = True
            else:
                threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        assert self._events is not None
        try:
            for event in self._events:
                if event["event"] == "tools.changed":
                    self._outdated = True
                    if self._on_tools_changed is not None:
                        self._on_tools_changed()
        except Exception:  # noqa: BLE001 - the stream is gone either way
            pass
        # Nothing says any more when tools change: from now on every step materializes afresh.
        if not self._closed:
            self._blind = True

    @property
    def outdated(self) -> bool:
        return self._outdated or self._blind or self._current is None

    def invalidate(self) -> None:
        self._outdated = True

    def turn(self) -> Turn:
        """The turn for the next model step, materialized again first when it is outdated."""
        with self._lock:
            if self.outdated:
                self._outdated = False
                try:
                    self._current = self.core.materialize(self._agent, self._provider)
                except BaseException:
                    self._outdated = True
                    raise
            assert self._current is not None
            return self._current

    def definitions(self) -> List[Definition]:
        return self.turn()["definitions"]

    def _seen(self) -> Turn:
        return self._current if self._current is not None else self.turn()

    def call(
        self,
        name: str,
        input: Any,
        tool_call_id: Optional[str] = None,
        assistant_message_id: Optional[str] = None,
        **options: Any,
    ) -> Settlement:
        """Settles one call of the model through the turn it last saw (options as for `Core.settle`)."""
        turn = self._seen()
        call = {
            "sessionID": self.id,
            "assistantMessageID": assistant_message_id or fresh_id("msg"),
            "toolCallID": tool_call_id or fresh_id("call"),
            "name": name,
            "input": input,
        }
        try:
            settlement = self.core.settle(turn["turnID"], call, **options)
        except CoreError as error:
            if error.status != 404:
                raise
            # The turn is gone and nothing was recorded for the call: a fresh turn may settle it if the tool is unchanged.
            if self._current is not None and self._current["turnID"] == turn["turnID"]:
                self.invalidate()
            fresh = self.turn()
            before = next((d for d in turn["definitions"] if d["name"] == name), None)
            now = next((d for d in fresh["definitions"] if d["name"] == name), None)
            if before is None or now is None or json.dumps(before, sort_keys=True) != json.dumps(now, sort_keys=True):
                raise CoreError(
                    404,
                    "not_found",
                    f'The turn the model saw is gone and "{name}" is no longer offered as it was; nothing ran. '
                    "Offer the model the current definitions and let it call again.",
                ) from None
            return self.core.settle(fresh["turnID"], call, **options)
        error = settlement.get("error")
        if error is not None and error["kind"] == "stale":
            self.invalidate()
        return settlement

    def check(self, name: str, input: Any) -> Check:
        """What core would decide about a call, running nothing."""
        return self.core.check(self._seen()["turnID"], name, input, self._agent)

    def close(self) -> None:
        """Stops following events."""
        self._closed = True
        if self._events is not None:
            self._events.close()
