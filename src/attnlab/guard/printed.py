r"""What a student's function prints: counted, and only the first lines kept (:class:`Printed`),
so that a print in a function called 10,000 times costs nothing and is shown once.

:meth:`Printed.capturing` takes everything the function writes: ``print`` and ``sys.stdout``
/ ``sys.stderr``, the process's own streams (``sys.__stdout__``, ``os.write(1, ...)``, a C
library's output: file descriptors 1 and 2 point into a file of the session's for the call)
and the logging handlers' streams."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import tempfile
from collections.abc import Iterator

__all__ = ["PRINT_LINES", "PRINT_KEEP", "Printed"]

PRINT_LINES = 5  # lines of a student's printed output shown
PRINT_KEEP = 2000  # characters of it kept
_READ_BYTES = 64_000  # bytes of the process's own output read back after a call


def _flush_real_streams() -> None:
    for stream in (sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):  # a closed or odd stream: nothing to flush
            stream.flush()


def _stream_handlers() -> list[logging.StreamHandler]:
    loggers = [logging.root, *logging.Logger.manager.loggerDict.values()]
    return [
        h
        for logger in loggers
        for h in getattr(logger, "handlers", ())
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]


class Printed(io.TextIOBase):
    """A stream that counts what is written to it and keeps only the first characters."""

    def __init__(self, keep: int = PRINT_KEEP):
        super().__init__()
        self.keep, self.head, self.chars, self.breaks = keep, "", 0, 0
        self.file = None  # where fds 1 and 2 point during a call (made on the first call)

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        text = str(text)
        self.chars += len(text)
        self.breaks += text.count("\n")
        if len(self.head) < self.keep:
            self.head += text[: self.keep - len(self.head)]
        return len(text)

    @property
    def lines(self) -> int:
        return self.breaks + (0 if self.head.endswith("\n") or not self.head else 1)

    def shown(self, lines: int = PRINT_LINES, who: str = "Your function") -> str:
        """'' if nothing was printed; else a heading and the first ``lines`` lines."""
        if not self.chars:
            return ""
        first = self.head.splitlines()[:lines]
        first = [line if len(line) <= 120 else line[:119] + "…" for line in first]
        total = self.lines
        more = f", the first {len(first)} shown" if total > len(first) else ""
        heading = f"{who} printed {total:,} line{'s' * (total != 1)} (shown once{more}):"
        return "\n".join([heading, *first])

    @contextlib.contextmanager
    def capturing(self) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            stack.enter_context(contextlib.redirect_stdout(self))
            stack.enter_context(contextlib.redirect_stderr(self))
            stack.enter_context(self._handlers())
            stack.enter_context(self._descriptors())
            yield

    @contextlib.contextmanager
    def _handlers(self) -> Iterator[None]:
        """The logging handlers write here for the call (a handler holds the stream it was
        made with: the notebook's, which ``redirect_stderr`` does not reach)."""
        handlers = [(h, h.stream) for h in _stream_handlers()]
        for h, _ in handlers:
            h.stream = self
        try:
            yield
        finally:
            for h, stream in handlers:
                if h.stream is self:
                    h.stream = stream

    @contextlib.contextmanager
    def _descriptors(self) -> Iterator[None]:
        """fds 1 and 2 into the session's file for the call; what came there read back."""
        try:
            if self.file is None:
                self.file = tempfile.TemporaryFile()
            _flush_real_streams()  # what the notebook wrote before is not the function's
            saved = (os.dup(1), os.dup(2))
        except OSError:  # no fds 1 and 2 to take (a closed stream): Python's streams only
            yield
            return
        try:
            os.dup2(self.file.fileno(), 1)
            os.dup2(self.file.fileno(), 2)
            yield
        finally:
            _flush_real_streams()  # sys.__stdout__'s buffer: the function's, into the file
            for fd, copy in zip((1, 2), saved, strict=True):
                os.dup2(copy, fd)
                os.close(copy)
            self._read_back()

    def _read_back(self) -> None:
        fd = self.file.fileno()
        size = os.lseek(fd, 0, os.SEEK_END)
        if not size:
            return
        data = os.pread(fd, min(size, _READ_BYTES), 0)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        self.write(data.decode("utf-8", "replace"))
        if size > _READ_BYTES:  # the lines beyond are counted only roughly: never shown
            self.chars += size - _READ_BYTES
