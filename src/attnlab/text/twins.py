r"""Near-twins: strings one token edit apart, the one rule of "seen in training".

Two English strings are near-twins when their normalised tokens (:func:`normalised`:
lower-cased words, punctuation and placeholders, final punctuation dropped) are the same or
one token edit apart (one token substituted, inserted or deleted) and the longer has at
least :data:`MIN_TOKENS` tokens ("Unable to delete the file" and "Unable to delete the
folder").  Shorter strings are near-twins only when they are the same: any two one-word
strings are one substitution apart, and "Save" teaches nothing about "Open".

The corpus (:mod:`attnlab.text.corpus`) keeps near-twins in one split, so that the test
splits measure more than recall; the widgets (:class:`TwinIndex`, over the training split)
say when a typed string was seen in training or is a near-twin of a string that was.

Finding them: every string is filed under its tokens and under each of its one-token
deletions (:func:`deletion_keys`); two strings one edit apart share a key (a substitution
deletes the same position of both, an insertion is the other's deletion), and a shared key
is checked with :func:`within_one_edit` (it also joins a swap of two tokens, which is not
one edit).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnlab.text.vocab import tokenize

__all__ = [
    "MIN_TOKENS",
    "TwinIndex",
    "deletion_keys",
    "groups",
    "normalised",
    "one_token_edit",
    "within_one_edit",
]

MIN_TOKENS = 4  # the longer of two near-twins has at least this many tokens


def normalised(text: str) -> tuple[str, ...]:
    """Lower-cased tokens (:func:`attnlab.text.vocab.tokenize`), final punctuation dropped."""
    tokens = tokenize(text)
    while tokens and not tokens[-1][0].isalnum() and not tokens[-1].startswith("{"):
        tokens.pop()
    return tuple(tokens)


def deletion_keys(tokens: Sequence[str]) -> set[tuple[str, ...]]:
    """``tokens`` and each of its one-token deletions (short strings: itself only)."""
    tokens = tuple(tokens)
    keys = {tokens}
    if len(tokens) >= MIN_TOKENS - 1:  # a deletion of a 4-token string can be 3 tokens
        keys |= {tokens[:i] + tokens[i + 1 :] for i in range(len(tokens))}
    return keys


def within_one_edit(a: Sequence[str], b: Sequence[str]) -> bool:
    """True when token lists ``a`` and ``b`` are near-twins (module doc)."""
    a, b = tuple(a), tuple(b)
    return a == b or (max(len(a), len(b)) >= MIN_TOKENS and one_token_edit(a, b))


def one_token_edit(a: Sequence[str], b: Sequence[str]) -> bool:
    """True when token lists ``a`` and ``b`` differ by at most one token substituted, inserted
    or deleted, whatever their length ("Close all" and "Close all tabs")."""
    a, b = tuple(a), tuple(b)
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = next((k for k, (x, y) in enumerate(zip(short, long, strict=False)) if x != y), len(short))
    return short[i:] == long[i + 1 :]


def groups(token_lists: Sequence[Sequence[str]]) -> list[int]:
    """For each token list, the id of its group: near-twins and near-twins of near-twins
    share one (the smallest index in the group)."""
    parent = list(range(len(token_lists)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    filed: dict[tuple[str, ...], list[int]] = {}
    for i, tokens in enumerate(token_lists):
        for key in deletion_keys(tokens):
            filed.setdefault(key, []).append(i)
    for members in filed.values():
        for k, i in enumerate(members):  # strings sharing a key: near-twins, or a swap
            for j in members[k + 1 :]:
                ri, rj = root(i), root(j)
                if ri != rj and within_one_edit(token_lists[i], token_lists[j]):
                    parent[max(ri, rj)] = min(ri, rj)
    return [root(i) for i in range(len(token_lists))]


class TwinIndex:
    """The strings of a split, to ask whether a text was among them or has a near-twin there.

    >>> index = TwinIndex(["Unable to delete the file", "Close all tabs"])
    >>> index.find("unable to delete the folder.")
    ('near-twin', 'Unable to delete the file')
    >>> index.find("Close all tabs!")
    ('seen', 'Close all tabs')
    >>> index.find("Open a new window") is None
    True
    """

    def __init__(self, strings: Sequence[str]):
        self.strings = list(strings)
        # Every key of every string, filed by its hash in two sorted arrays (about 16 bytes a
        # key, where a dict of token tuples cost ~50 MB for a training split); a hash shared
        # by chance is harmless: every candidate is checked on its tokens.
        hashes, owners, exact = [], [], []
        # Each string's tokens joined, a space either side: " a b " contains " b " but not " ab ".
        self._joined: list[str] = []
        for i, text in enumerate(self.strings):
            tokens = normalised(text)
            exact.append(hash(tokens))
            self._joined.append(f" {' '.join(tokens)} ")
            for key in deletion_keys(tokens):
                hashes.append(hash(key))
                owners.append(i)
        order = np.argsort(np.asarray(hashes, dtype=np.int64), kind="stable")
        self._keys = np.asarray(hashes, dtype=np.int64)[order]  # (n_keys,) sorted
        self._owners = np.asarray(owners, dtype=np.int64)[order]  # (n_keys,) string indices
        exact_order = np.argsort(np.asarray(exact, dtype=np.int64), kind="stable")
        self._exact_keys = np.asarray(exact, dtype=np.int64)[exact_order]  # (n,) sorted
        self._exact_owners = exact_order  # (n,)

    def __len__(self) -> int:
        return len(self.strings)

    @staticmethod
    def _lookup(keys: np.ndarray, owners: np.ndarray, key: tuple[str, ...]) -> np.ndarray:
        """The owners filed under ``key``'s hash (in the order they were filed)."""
        h = np.int64(hash(key))
        lo, hi = np.searchsorted(keys, h, "left"), np.searchsorted(keys, h, "right")
        return owners[lo:hi]

    def find(self, text: str) -> tuple[str, str] | None:
        """("seen", the string) when ``text`` normalises to a string of the index,
        ("near-twin", the first such string) when it is one token edit from one, else None."""
        tokens = normalised(text)
        for i in sorted(self._lookup(self._exact_keys, self._exact_owners, tokens).tolist()):
            if normalised(self.strings[i]) == tokens:
                return "seen", self.strings[i]
        near = self._first(tokens, within_one_edit)
        return None if near is None else ("near-twin", near)

    def neighbour(self, text: str) -> str | None:
        """The first string one token edit from ``text`` (:func:`one_token_edit`), for texts
        shorter than the near-twin rule's :data:`MIN_TOKENS`; None if there is none.

        Complete from ``MIN_TOKENS - 1`` tokens on (every string's one-token deletions are
        filed from there); below that only a string with one token more is found.
        """
        return self._first(normalised(text), one_token_edit)

    def containing(self, text: str) -> str | None:
        """The shortest string (the first of those, in the index's order) that holds all of
        ``text``'s tokens in a row and more ("Close all" in "Close all tabs to the right");
        None if none does, or if ``text`` has fewer than two tokens (a single word is in
        thousands of strings: that it is tells nothing)."""
        tokens = normalised(text)
        if len(tokens) < 2:
            return None
        run = f" {' '.join(tokens)} "
        found = [(len(j), i) for i, j in enumerate(self._joined) if run in j and len(j) > len(run)]
        return self.strings[min(found)[1]] if found else None

    def _first(self, tokens: tuple[str, ...], close) -> str | None:
        """The first string (in the index's order) filed under one of ``tokens``' deletion keys
        for which ``close(tokens, its tokens)`` holds."""
        near = sorted(
            i
            for key in deletion_keys(tokens)
            for i in set(self._lookup(self._keys, self._owners, key).tolist())
            if close(tokens, normalised(self.strings[i]))
        )
        return self.strings[near[0]] if near else None
