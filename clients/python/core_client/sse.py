"""Server-sent events off a streamed HTTP response, as the WHATWG event-stream format defines them.

`event:` and `data:` fields (several `data:` lines join with a newline), a blank line ends an event, lines starting
with `:` are comments. core sends JSON in `data`.
"""

from __future__ import annotations

from typing import BinaryIO, Iterator, Tuple


def read(body: BinaryIO) -> Iterator[Tuple[str, str]]:
    """Yields `(event, data)` for each event of `body` until it ends."""
    event = ""
    data: list = []
    while True:
        raw = body.readline()
        if not raw:
            return
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                yield (event or "message", "\n".join(data))
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
