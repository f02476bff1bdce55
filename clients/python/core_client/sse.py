"""Server-sent events off a streamed HTTP response, as the WHATWG event-stream format defines them.

`event:` and `data:` fields (several `data:` lines join with a newline), a blank line ends an event, lines starting
with `:` are comments. core sends JSON in `data`. A line, or an event, longer than the bound fails the read instead
of buffering without end.
"""

from __future__ import annotations

from typing import BinaryIO, Iterator, Tuple

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line (and event) read by default, in bytes: 64 MiB."""


class LineTooLong(ValueError):
    """A line or an event longer than the bound: the stream is not one core would send, and is not read further."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"An event stream line or event exceeded {limit} bytes; the stream was abandoned. core never sends one "
            "this long: check what answers at this URL, or raise max_line_bytes."
        )
        self.limit = limit


def read(body: BinaryIO, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[Tuple[str, str]]:
    """Yields `(event, data)` for each event of `body` until it ends; raises LineTooLong past `max_line_bytes`."""
    event = ""
    data: list = []
    size = 0
    while True:
        # One byte more than the bound, and the line end: a longer line comes back cut, without its end.
        raw = body.readline(max_line_bytes + 2)
        if not raw:
            return
        line_bytes = len(raw.rstrip(b"\r\n"))
        if line_bytes > max_line_bytes or (not raw.endswith(b"\n") and len(raw) > max_line_bytes):
            raise LineTooLong(max_line_bytes)
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                yield (event or "message", "\n".join(data))
            event, data, size = "", [], 0
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            event = value
        elif field == "data":
            # Data lines without a blank line between them are one event: bounded together.
            size += len(value.encode("utf-8")) + 1
            if size > max_line_bytes:
                raise LineTooLong(max_line_bytes)
            data.append(value)
