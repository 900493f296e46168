"""attnlab.checks.exercises.seeded: the references build the library's modules holding the
given weights, and neither they nor the hidden examples move the student's random seed."""

from __future__ import annotations

import pytest
import torch

from attnlab import attention, checks
from attnlab.checks.exercises.seeded import kept_rng, library_module


def test_a_library_module_holds_the_given_weights_and_leaves_the_seed_alone():
    W_a = torch.randn(3, 4)
    torch.manual_seed(5)
    before = torch.get_rng_state()
    score = library_module(lambda: attention.GeneralScore(3, 4), {"W_a": W_a})
    assert torch.equal(before, torch.get_rng_state())  # its init drew from a fork
    assert torch.equal(score.W_a, W_a) and score.W_a.data_ptr() != W_a.data_ptr()  # a copy
    with pytest.raises(ValueError, match=r"W_a is \(3, 4\); got \(4,\)"):  # never broadcast
        library_module(lambda: attention.GeneralScore(3, 4), {"W_a": torch.randn(4)})


def test_kept_rng_draws_the_same_numbers_from_its_seed_and_puts_the_rng_back():
    torch.manual_seed(5)
    before = torch.get_rng_state()
    draws = []
    for _ in range(2):
        with kept_rng(708):
            draws.append(torch.randn(3))
    assert torch.equal(*draws) and torch.equal(before, torch.get_rng_state())


def test_a_reference_called_in_the_notebook_leaves_the_seed_alone():
    """Solutions mode calls the reference outside any check: it must not move the seed."""
    s, h, W_a = torch.randn(2, 3, 4), torch.randn(2, 5, 6), torch.randn(4, 6)
    torch.manual_seed(5)
    before = torch.get_rng_state()
    got = checks.reference("general_score")(s, h, W_a)
    assert torch.equal(before, torch.get_rng_state())
    torch.testing.assert_close(got, s @ W_a @ h.transpose(-2, -1))
