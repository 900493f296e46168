r"""What a student's function prints: counted, and only the first lines kept (:class:`Printed`),
so that a print in a function called 10,000 times costs nothing and is shown once."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator

__all__ = ["PRINT_LINES", "PRINT_KEEP", "Printed"]

PRINT_LINES = 5  # lines of a student's printed output shown
PRINT_KEEP = 2000  # characters of it kept


class Printed(io.TextIOBase):
    """A stream that counts what is written to it and keeps only the first characters."""

    def __init__(self, keep: int = PRINT_KEEP):
        super().__init__()
        self.keep, self.head, self.chars, self.breaks = keep, "", 0, 0

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
        with contextlib.redirect_stdout(self), contextlib.redirect_stderr(self):
            yield
