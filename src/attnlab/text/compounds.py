r"""German compounds split into words a model can write: "Datenträgerdetails" -> "datenträger@@
details".

German writes "volume details" as one word, *Datenträgerdetails*.  A word-level model that has
never seen that compound cannot write it, and writes "details" alone; split into parts it
knows, the compound is two steps of an ordinary translation.  The split is Koehn and Knight's
(2003, "Empirical methods for compound splitting"): of all the ways to cut a word into parts
seen as words of their own in the training text (each at least ``MIN_PART`` letters, a linking
"s" or "es" allowed after a part), keep the one whose parts' counts have the highest geometric
mean, the word left whole counting as one part (a frequent compound stays whole).  Hyphenated
words ("workflow-historie") are cut at their hyphens first.

Parts are written with Sennrich et al.'s (2016) joiner: every part but the last ends in "@@",
and :func:`attnlab.text.vocab.detokenize` glues a token that ends in "@@" to the next one, so a model
that writes ``["datenträger@@", "details"]`` has written "datenträgerdetails".

    >>> s = CompoundSplitter(["datenträger", "details", "datenträger", "details"])
    >>> s.split("datenträgerdetails")
    ['datenträger@@', 'details']
    >>> s.segment("Datenträgerdetails anzeigen")
    'datenträger@@ details anzeigen'
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

from attnlab.text.vocab import JOINER, tokenize

__all__ = ["JOINER", "MIN_PART", "CompoundSplitter"]

MIN_PART = 4  # letters in a part: shorter ones ("tab", "ab") cut too many words wrongly
_LINKS = ("", "s", "es")  # what may join two parts: "abhängigkeit|s|status"


class CompoundSplitter:
    """Splits words into the parts with the highest geometric mean of their counts.

    ``words``: the training text's words (tokens), counted once here; a part must be a word
    seen at least ``min_count`` times on its own.
    """

    def __init__(self, words: Iterable[str], min_count: int = 2):
        self.counts = Counter(w for w in words if w.isalpha())
        self.min_count = min_count
        self._best = lru_cache(maxsize=None)(self._best_uncached)

    @classmethod
    def from_texts(cls, texts: Iterable[str], min_count: int = 2) -> CompoundSplitter:
        """A splitter counting the words of ``texts`` (:func:`attnlab.text.vocab.tokenize`)."""
        return cls((w for text in texts for w in tokenize(text)), min_count)

    def _known(self, part: str) -> int:
        n = self.counts.get(part, 0)
        return n if n >= self.min_count and len(part) >= MIN_PART else 0

    def _best_uncached(self, word: str) -> tuple[float, tuple[str, ...]]:
        """(sum of log counts, parts) of the best cut of ``word`` into known parts, the
        fewest parts among equals; (-inf, ()) when no cut exists."""
        best: tuple[float, tuple[str, ...]] = (-math.inf, ())
        if self._known(word):
            best = (math.log(self._known(word)), (word,))
        for i in range(MIN_PART, len(word) - MIN_PART + 1):
            head = word[:i]
            for link in _LINKS:
                stem = head[: len(head) - len(link)]  # the part without its linking letters
                if not head.endswith(link) or not self._known(stem):
                    continue
                tail_score, tail = self._best(word[i:])
                if not tail:
                    continue
                n = 1 + len(tail)
                score = (math.log(self._known(stem)) + tail_score) / n  # mean log count
                if score > (best[0] / len(best[1]) if best[1] else -math.inf):
                    best = (score * n, (head, *tail))
        return best

    def split(self, word: str) -> list[str]:
        """``word`` as parts, each but the last ending in "@@" (a word with no better cut
        stays whole)."""
        if JOINER in word:
            return [word]
        out: list[str] = []
        pieces = word.split("-")
        for k, piece in enumerate(pieces):
            last = k == len(pieces) - 1
            parts = [piece]
            if piece.isalpha() and len(piece) >= 2 * MIN_PART:
                _, best = self._best(piece)  # a cut beats the whole word, or it is the word
                if len(best) > 1:
                    parts = list(best)
            if not last:
                parts[-1] += "-"
            out += parts
        return [p + JOINER for p in out[:-1]] + out[-1:]

    def segment(self, text: str) -> str:
        """``text`` tokenised (:func:`attnlab.text.vocab.tokenize`) with each word split, as one
        string of tokens separated by spaces."""
        return " ".join(part for word in tokenize(text) for part in self.split(word))
