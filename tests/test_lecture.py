"""The deck's demo helpers (attnlab.lecture) show what the models and the core really do."""

import numpy as np
import pytest
import torch

import attnlab
from attnlab import lecture
from attnlab.decode import steps


def test_table_renders_html_and_aligned_text():
    table = lecture.Table(["a", "bb"], [["x<y", "1"], ["z", "22"]], caption="cap")
    html = table._repr_html_()
    assert "x&lt;y" in html and "<caption>cap</caption>" in html
    lines = repr(table).splitlines()
    assert lines[0] == "cap"
    assert lines[1].index("bb") == lines[2].index("1") == lines[3].index("22")


def test_model_table_reports_each_cards_accuracy_and_parameter_count():
    table = lecture.model_table(["rnnsearch-dates"])
    (row,) = table.rows
    model = attnlab.load("rnnsearch-dates")
    assert row[0] == "rnnsearch-dates"
    assert row[1] == f"{100 * model.card['heldout_accuracy']:.1f}%"
    assert row[2] == f"{sum(p.numel() for p in model.parameters()):,}"


def test_reverse_demo_marks_right_and_wrong_answers():
    table = lecture.reverse_demo(["rnnsearch-reverse", "rnnenc-reverse"], [6, 40], seed=0)
    model = attnlab.load("rnnenc-reverse")
    for row in table.rows:
        digits = row[1]
        assert len(digits) == int(row[0])
        got = model.translate(digits)
        if got == digits[::-1]:
            assert row[3] == "✓ right"
        else:
            assert row[3].startswith("✗ ") and row[3].endswith(got)


def test_mark_wrong_counts_wrong_and_missing_digits():
    assert lecture._mark_wrong("1249", "1234") == "2/4 digits wrong: 1249"
    assert lecture._mark_wrong("12", "1234") == "2/4 digits wrong: 12"


def test_causal_demo_weights_are_zero_above_the_diagonal_and_rows_sum_to_one():
    _, weights = lecture.causal_demo(n=5)
    assert torch.all(weights.triu(diagonal=1) == 0)
    assert torch.allclose(weights.sum(-1), torch.ones(5))


def test_head_grid_draws_one_panel_per_layer_and_head():
    model = attnlab.load("transformer-dates")
    fig = lecture.head_grid(model, "3 May 1979")
    alpha = steps(model, "3 May 1979").__next__().alpha  # (layers, heads, n_src)
    assert len(fig.axes) == alpha.shape[0] * alpha.shape[1]
    first = np.asarray(fig.axes[0].images[0].get_array())[0]
    np.testing.assert_allclose(first, alpha[0, 0], rtol=1e-6)


def test_timings_cover_every_length():
    timings = lecture.time_rnn_vs_attention(lengths=[4, 8], d=16, repeats=1)
    assert timings["n"] == [4, 8]
    assert len(timings["rnn_ms"]) == len(timings["attention_ms"]) == 2
    assert all(t > 0 for t in timings["rnn_ms"] + timings["attention_ms"])


@pytest.mark.parametrize("bad", [["no-such-model"]])
def test_model_table_names_an_unknown_model(bad):
    with pytest.raises(ValueError, match="no-such-model"):
        lecture.model_table(bad)
