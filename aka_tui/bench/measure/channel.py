"""The worker's message channel: JSON lines over a pipe, each authenticated with HMAC-SHA256 and numbered.

The parent makes a fresh key per worker and hands it, with the pipe's fd number, over the worker's stdin (never
argv or the environment); the worker keeps it only in the closure of its sender. A line that does not parse,
carries a wrong MAC or breaks the numbering means someone else wrote into the pipe: `ChannelTampered`, and the
parent gives every unfinished shape the `tampered` verdict. The candidate runs in the worker's process, so a
candidate that reads the harness's memory can still find the key: authentication raises the bar, the static scan
flags the ways to read it (`suspicious`) and the parent's own output check (`parent_check`) is the backstop.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
import secrets
import selectors
import time
from typing import Any, Callable

MAX_LINE_BYTES = 64 << 20  # a longer line is not ours


class ChannelTampered(Exception):
    """A message on the worker's channel failed authentication."""


def new_key() -> bytes:
    return secrets.token_bytes(32)


def _mac(key: bytes, number: int, body: str) -> str:
    return hmac.new(key, f"{number}:{body}".encode(), hashlib.sha256).hexdigest()


def sender(fd: int, key: bytes) -> Callable[[dict[str, Any]], None]:
    """The worker's `emit`: one authenticated, numbered line per message."""
    numbers = itertools.count()

    def send(message: dict[str, Any]) -> None:
        body = json.dumps(message, separators=(",", ":"))
        number = next(numbers)
        data = (json.dumps({"n": number, "mac": _mac(key, number, body), "body": body}) + "\n").encode()
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    return send


class Reader:
    """The parent's end: `next_message` returns the next authenticated message, or None on timeout / EOF."""

    def __init__(self, fd: int, key: bytes) -> None:
        self.fd, self._key = fd, key
        os.set_blocking(fd, False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(fd, selectors.EVENT_READ)
        self.buffer = b""
        self.eof = False
        self.expected = 0

    def next_message(self, timeout_s: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout_s
        while True:
            if b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                return self._open(line)
            if len(self.buffer) > MAX_LINE_BYTES:
                raise ChannelTampered(f"a line of more than {MAX_LINE_BYTES >> 20} MiB on the worker's channel")
            if self.eof:
                if self.buffer.strip():
                    raise ChannelTampered("the worker's channel ended inside a message")
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if self.selector.select(remaining):
                chunk = os.read(self.fd, 1 << 16)
                if chunk:
                    self.buffer += chunk
                else:
                    self.eof = True

    def _open(self, line: bytes) -> dict[str, Any]:
        try:
            frame = json.loads(line)
            number, mac, body = int(frame["n"]), str(frame["mac"]), str(frame["body"])
        except (ValueError, KeyError, TypeError):
            raise ChannelTampered("a line on the worker's channel that is not one of its messages") from None
        if not hmac.compare_digest(mac, _mac(self._key, number, body)):
            raise ChannelTampered("a message on the worker's channel failed authentication")
        if number != self.expected:
            raise ChannelTampered(f"message {number} on the worker's channel where {self.expected} was due")
        self.expected += 1
        message = json.loads(body)
        if not isinstance(message, dict):
            raise ChannelTampered("an authenticated message that is not an object")
        return message

    def close(self) -> None:
        self.selector.close()
        os.close(self.fd)
