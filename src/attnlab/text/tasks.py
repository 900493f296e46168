"""The two toy translation tasks and their character vocabularies.

* ``dates``: a date as people write it ("3 May 1979", "Thursday, 03 May 1979", "03.05.1979")
  -> the ISO form ``YYYY-MM-DD`` ("1979-05-03").
* ``reverse``: a random digit string of length L -> the same string reversed (the length
  experiment: does a fixed-length vector hold a long sentence?).

Everything is generated from a seed with :class:`random.Random`; nothing is downloaded, and
the same seed always gives the same examples.
"""

from __future__ import annotations

import datetime as _dt
import random
from dataclasses import dataclass

from attnlab.text.vocab import Vocab

# --------------------------------------------------------------------------- dates
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

#: The date forms a source is written in, as strftime formats.
BASE_DATE_FORMATS = (
    "%d %B %Y",  # 03 May 1979
    "%B %d, %Y",  # May 03, 1979
    "%A, %d %B %Y",  # Thursday, 03 May 1979
    "%A %B %d %Y",  # Thursday May 03 1979
    "%d %b %Y",  # 03 May 1979 (abbreviated month)
    "%b %d %Y",  # May 03 1979
    "%d/%m/%Y",  # 03/05/1979
    "%d.%m.%Y",  # 03.05.1979
    "%Y/%m/%d",  # 1979/05/03
    "%Y-%m-%d",  # 1979-05-03
)

#: Every form the generator writes: each base form, and, where the day comes before the
#: year, the same with the day not zero-padded (glibc's ``%-d``: "3 May 1979", "3/05/1979").
#: Each form holding a month or weekday name is also generated in lower case ("3 may 1979"),
#: as often as in its capitalised form (see ``DATE_STYLES``).
DATE_FORMATS = tuple(
    f
    for base in BASE_DATE_FORMATS
    for f in ((base,) if base.startswith("%Y") else (base, base.replace("%d", "%-d")))
)

#: Dates are drawn uniformly from this range (both ends included).
DATE_RANGE = (_dt.date(1900, 1, 1), _dt.date(2099, 12, 31))


def format_date(d: _dt.date, fmt: str, lower: bool = False) -> str:
    """``d`` written in ``fmt`` (English names whatever the locale; ``%-d`` = unpadded day)."""
    fields = {
        "%-d": str(d.day),
        "%d": f"{d.day:02d}",
        "%m": f"{d.month:02d}",
        "%Y": f"{d.year:04d}",
        "%B": MONTHS[d.month - 1],
        "%b": MONTHS[d.month - 1][:3],
        "%A": WEEKDAYS[d.weekday()],
    }
    out, i = [], 0
    while i < len(fmt):
        for code in ("%-d", fmt[i : i + 2]):
            if fmt.startswith(code, i) and code in fields:
                out.append(fields[code])
                i += len(code)
                break
        else:
            out.append(fmt[i])
            i += 1
    text = "".join(out)
    return text.lower() if lower else text


def _date_styles() -> list[tuple[str, bool]]:
    """(format, lower-case?) pairs: every form, and its lower-case twin when it has names."""
    styles = []
    for fmt in DATE_FORMATS:
        styles.append((fmt, False))
        if any(code in fmt for code in ("%A", "%B", "%b")):
            styles.append((fmt, True))
    return styles


#: (strftime form, lower-case?) pairs; the generator draws one uniformly for each date.
DATE_STYLES = tuple(_date_styles())


def dates(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` pairs (date as people write it, ISO date), deterministic in ``seed``.

    >>> dates(2, seed=0)  # doctest: +SKIP
    [('14.07.2015', '2015-07-14'), ('sunday february 4 1906', '1906-02-04')]
    """
    rng = random.Random(f"dates-{seed}")
    first, last = DATE_RANGE
    span = (last - first).days
    pairs = []
    for _ in range(n):
        d = first + _dt.timedelta(days=rng.randint(0, span))
        fmt, lower = DATE_STYLES[rng.randrange(len(DATE_STYLES))]
        pairs.append((format_date(d, fmt, lower), d.isoformat()))
    return pairs


def reverse(
    n: int, seed: int = 0, length: int | tuple[int, int] = (5, 60)
) -> list[tuple[str, str]]:
    """``n`` pairs (random digit string, the same reversed), deterministic in ``seed``.

    ``length`` is L (an int) or a range ``(lo, hi)`` (both included) that L is drawn from
    uniformly for each example.
    """
    lo, hi = (length, length) if isinstance(length, int) else length
    if not 1 <= lo <= hi:
        raise ValueError(f"length must be >= 1 (or a range 1 <= lo <= hi); got {length!r}")
    rng = random.Random(f"reverse-{seed}")
    pairs = []
    for _ in range(n):
        s = "".join(rng.choice("0123456789") for _ in range(rng.randint(lo, hi)))
        pairs.append((s, s[::-1]))
    return pairs


# --------------------------------------------------------------------------- tasks
def _date_chars() -> str:
    """Every character a (lower-cased) date can hold, in a fixed order."""
    letters = sorted({c for name in MONTHS + WEEKDAYS for c in name.lower()})
    return "0123456789" + "".join(letters) + " ,./-"


@dataclass(frozen=True)
class Task:
    """A task: how to make examples, its vocabularies, and the lengths the models allow."""

    name: str
    src_chars: str
    tgt_chars: str
    max_src_len: int  # characters a model reads (before the <eos> it appends)
    max_tgt_len: int  # characters a model may write (before <eos>)

    @property
    def src_vocab(self) -> Vocab:
        return Vocab(self.src_chars)

    @property
    def tgt_vocab(self) -> Vocab:
        return Vocab(self.tgt_chars)

    def make(self, n: int, seed: int = 0, **kw) -> list[tuple[str, str]]:
        """``n`` examples of the task (``kw``: ``length`` for reverse)."""
        if self.name == "dates":
            return dates(n, seed)
        return reverse(n, seed, **kw)


TASKS = {
    # The longest date written is "wednesday, 30 september 2099" (28 characters).
    "dates": Task("dates", _date_chars(), "0123456789-", max_src_len=32, max_tgt_len=12),
    "reverse": Task("reverse", "0123456789", "0123456789", max_src_len=60, max_tgt_len=64),
}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}") from None
