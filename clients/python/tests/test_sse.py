"""The event-stream reader's bound: an endless line or event fails the read (and a call, once, as a CoreError of
kind `line_too_long`) after reading little past the bound, instead of buffering without end. No binary needed.
"""

from __future__ import annotations

import io
import sys
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core_client import Core, CoreError  # noqa: E402
from core_client import sse  # noqa: E402


class Endless(io.RawIOBase):
    """A body that repeats `chunk` forever, counting the bytes read from it."""

    def __init__(self, chunk: bytes) -> None:
        self.chunk = chunk
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        size = min(len(buffer), len(self.chunk))
        buffer[:size] = self.chunk[:size]
        self.read_bytes += size
        return size


class SseBoundTest(unittest.TestCase):
    def test_an_endless_line_fails_at_the_default_bound_having_read_little_past_it(self) -> None:
        raw = Endless(b"x" * 65536)
        started = time.monotonic()
        with self.assertRaises(sse.LineTooLong) as caught:
            list(sse.read(io.BufferedReader(raw, 65536)))
        self.assertEqual(caught.exception.limit, sse.DEFAULT_MAX_LINE_BYTES)
        self.assertLess(raw.read_bytes, sse.DEFAULT_MAX_LINE_BYTES + 2 * 65536 + 2)
        self.assertLess(time.monotonic() - started, 30)

    def test_a_line_of_exactly_the_bound_is_read_and_one_byte_more_fails(self) -> None:
        line = b"data: " + b"y" * 10
        self.assertEqual(list(sse.read(io.BytesIO(line + b"\n\n"), len(line))), [("message", "y" * 10)])
        self.assertEqual(list(sse.read(io.BytesIO(line + b"\r\n\r\n"), len(line))), [("message", "y" * 10)])
        with self.assertRaises(sse.LineTooLong):
            list(sse.read(io.BytesIO(line + b"z\n\n"), len(line)))
        with self.assertRaises(sse.LineTooLong):
            list(sse.read(io.BytesIO(line + b"z"), len(line)))

    def test_an_endless_event_of_short_data_lines_is_bounded_too(self) -> None:
        with self.assertRaises(sse.LineTooLong):
            list(sse.read(io.BufferedReader(Endless(b"data: 0123456789\n" * 1000)), 1 << 20))

    def test_a_call_whose_stream_sends_an_endless_line_fails_once_as_a_core_error(self) -> None:
        posts = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                posts.append(self.path)
                self.rfile.read(int(self.headers.get("content-length", "0")))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                try:
                    self.wfile.write(b": connected\n\nevent: progress\ndata: ")
                    for _ in range(64):
                        self.wfile.write(b"x" * 65536)
                except OSError:
                    pass

            def log_message(self, *args) -> None:  # type: ignore[no-untyped-def]
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            core = Core.connect(f"http://127.0.0.1:{server.server_address[1]}", "t", max_line_bytes=1 << 20)
            call = {"sessionID": "s", "assistantMessageID": "m", "toolCallID": "c", "name": "echo", "input": {}}
            with self.assertRaises(CoreError) as caught:
                core.settle("turn", call, stream=True)
            self.assertEqual(caught.exception.kind, "line_too_long")
            self.assertEqual(len(posts), 1)
        finally:
            server.shutdown()
            server.server_close()


if __name__ == "__main__":
    unittest.main()
