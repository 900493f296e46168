"""The deck's demo helpers (attnlab.lecture) show what the models and the core really do."""

import ast
import inspect
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import attnlab
from attnlab import attention as A
from attnlab import lecture
from attnlab.decode import decode
from attnlab.experiments.language import load_results
from attnlab.experiments.length import load_results as load_length_results
from attnlab.lecture import measurements, reversal
from attnlab.pictures import typography
from attnlab.text.corpus import split_of
from attnlab.text.vocab import tokenize
from attnlab.training.checkpoints import CHECKPOINT_DIR

ROOT = Path(__file__).resolve().parents[1]


def test_every_helper_the_deck_calls_is_on_the_package_face():
    deck = (ROOT / "notebooks" / "07_attention.py").read_text()
    code = "\n".join(line for line in deck.splitlines() if not line.lstrip().startswith("#"))
    called = set(re.findall(r"\blecture\.([A-Za-z_]\w*)", code))
    assert {"show_source", "rare_words_counts", "held_out_example"} <= called
    assert sorted(name for name in called if not hasattr(lecture, name)) == []
    assert called <= set(lecture.__all__)


def test_table_renders_html_and_aligned_text():
    table = lecture.Table(["a", "bb"], [["x<y", "1"], ["z", "22"]], caption="cap")
    html = table._repr_html_()
    assert "x&lt;y" in html and "<caption>cap</caption>" in html
    lines = repr(table).splitlines()
    assert lines[0] == "cap"
    assert lines[1].index("bb") == lines[2].index("1") == lines[3].index("22")


# ----------------------------------------------------------------------------- show_source
def test_show_source_is_the_installed_code_without_its_docstring():
    shown = lecture.show_source(A.scaled_dot_product_attention)
    real = inspect.getsource(A.scaled_dot_product_attention)
    assert shown.name == "attnlab.attention.scaled_dot_product_attention"
    doc = A.scaled_dot_product_attention.__doc__
    assert doc and doc.strip().splitlines()[0] not in shown.code
    # every line shown is a line of the real source, in order
    lines = [line for line in shown.code.splitlines() if line.strip()]
    real_lines = real.splitlines()
    positions = [real_lines.index(line) for line in lines]
    assert positions == sorted(positions)
    ast.parse(shown.code)  # still valid Python


def test_show_source_highlights_html_and_keeps_a_plain_text_form():
    shown = lecture.show_source(A.causal_mask, docstring=True)
    html = shown._repr_html_()
    assert "attnlab.attention.causal_mask" in html
    assert "<span" in html and "style=" in html  # pygments, inline styles (no stylesheet)
    assert repr(shown).splitlines()[0] == "# attnlab.attention.causal_mask"
    assert A.causal_mask.__doc__.strip().splitlines()[0] in repr(shown)


def test_show_source_works_for_methods_and_says_when_there_is_no_source():
    shown = lecture.show_source(A.MultiHeadAttention.forward)
    assert shown.name.endswith("MultiHeadAttention.forward")
    assert shown.code.startswith("def forward")
    with pytest.raises(ValueError, match="no Python source"):
        lecture.show_source(len)


# ----------------------------------------------------------------------------- tables
def test_model_table_reads_accuracy_and_parameters_from_the_cards():
    table = lecture.model_table(["rnnsearch-dates", "transformer-dates"])
    for row in table.rows:
        card = json.loads((CHECKPOINT_DIR / f"{row[0]}.json").read_text())
        assert row[1] == f"{100 * card['heldout_accuracy']:.2f}%"
        assert row[2] == f"{card['parameters']:,}"


def test_the_cards_parameter_counts_are_the_models(transformer):
    by_tensor = sum(t.numel() for t in transformer.state_dict().values())  # no buffers
    assert transformer.card["parameters"] == transformer.num_parameters() == by_tensor


def test_model_table_names_an_unknown_model():
    with pytest.raises(ValueError, match="no-such-model"):
        lecture.model_table(["no-such-model"])


def test_reverse_demo_marks_right_and_wrong_answers():
    table = lecture.reverse_demo(["rnnsearch-reverse", "rnnenc-reverse"], [6, 40], seed=0)
    model = attnlab.load("rnnenc-reverse")
    rates = load_length_results()["models"]["rnnenc-reverse"]["exact_match"]
    assert [r[0] for r in table.rows] == ["6", "", "", "40", "", ""]
    for block, (rate, bin_) in zip(
        (table.rows[0:3], table.rows[3:6]), [(rates[0], "5-10"), (rates[3], "31-40")], strict=True
    ):
        answer, _, rnnenc = block
        assert answer[1] == "right answer" and len(answer[2]) == int(answer[0])
        got = model.translate(answer[2][::-1])  # the input is the answer reversed
        assert rnnenc[1] == "rnnenc-reverse" and rnnenc[3] == f"{rate:.0%} ({bin_})"
        if got == answer[2]:
            assert rnnenc[2] == "✓ right"
        else:  # the output itself, its wrong digits marked red in the HTML
            assert str(rnnenc[2]).startswith(got)
            assert rnnenc[2].wrong == reversal._wrong_positions(got, answer[2]) != frozenset()
    assert "<span" in table._repr_html_()  # the 40-digit string is wrong somewhere
    assert "font-size: 24px" in table._repr_html_()  # read from the back of the room


def test_reverse_demo_says_nothing_of_a_model_the_length_experiment_lacks():
    results = {"bins": [[5, 10]], "models": {}, "config": {}}
    table = lecture.reverse_demo(["rnnenc-reverse"], [6], seed=0, results=results)
    assert "%" not in table.rows[1][3]


def test_wrong_positions_marks_each_wrong_digit_or_all_after_a_shift():
    assert reversal._wrong_positions("1249", "1234") == {2, 3}
    assert reversal._wrong_positions("12", "1234") == frozenset()  # nothing of it is wrong
    # one digit too many, inserted early: every later position is off
    assert reversal._wrong_positions("129345", "12345") == {2, 3, 4, 5}


def test_a_short_answer_shows_a_marked_dash_for_each_missing_digit():
    cell = reversal._marked("12", "1234")
    assert str(cell) == "12––" and cell.wrong == {2, 3}


def test_a_marked_cell_shows_its_wrong_characters_in_red_and_escapes_the_rest():
    cell = lecture.Marked("<12>", frozenset({1}))
    table = lecture.Table(["x"], [[cell]])
    assert "&lt;" in table._repr_html_() and "<12>" not in table._repr_html_()
    assert ">1</span>" in cell.html() and "c00000" in cell.html() and str(cell) == "<12>"


# ----------------------------------------------------------------------------- pictures
@pytest.fixture(scope="module")
def transformer():
    return attnlab.load("transformer-dates")


@pytest.fixture(scope="module")
def heads(transformer):
    """head_grid renders when built (seconds): built once for the tests that look at it."""
    return lecture.head_grid(transformer, "3 May 1979")


@pytest.fixture(scope="module")
def three(transformer):
    return lecture.three_attentions(transformer, "30 June 2001")


def _png(picture) -> bytes:
    data = picture._repr_png_()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return data


def _smallest_px(picture) -> float:
    fig = picture.fig
    return typography.smallest_text(fig, fig.get_figwidth() * fig.dpi)[0]


def test_causal_demo_weights_are_zero_above_the_diagonal_and_rows_sum_to_one():
    picture = lecture.causal_demo(n=5)
    weights = picture.data["weights"]
    assert torch.all(weights.triu(diagonal=1) == 0)
    assert torch.allclose(weights.sum(-1), torch.ones(5))
    assert "future positions = 0.000" in repr(picture)
    _png(picture)


def test_causal_demo_with_an_edited_mask_shows_weight_on_the_future():
    picture = lecture.causal_demo(A.causal_mask(5).T)  # only the future (and the present)
    assert picture.data["future"] > 1.0
    assert f"{picture.data['future']:.3f}" in repr(picture)


@pytest.mark.parametrize(
    ("mask", "says"),
    [
        (A.causal_mask(4).float(), "boolean"),
        (torch.ones(3, 4, dtype=torch.bool), "(n, n)"),
        ([[True]], "(n, n)"),
    ],
)
def test_causal_demo_with_a_broken_mask_says_why_in_one_line(mask, says):
    message = lecture.causal_demo(mask)
    assert isinstance(message, lecture.Message)
    assert repr(message).startswith("✗") and says in repr(message)
    assert "\n" not in repr(message)


def test_head_grid_shows_the_decodings_cross_attention(transformer, heads):
    expected = decode(transformer, "3 May 1979").alpha
    np.testing.assert_allclose(heads.data["alpha"], expected)
    assert "'1979-05-03'" in repr(heads)


def test_three_attentions_have_the_causal_triangle_and_rows_summing_to_one(transformer, three):
    picture = three
    weights = transformer.attention_weights("30 June 2001")
    encoder, decoder, cross = picture.data.values()
    np.testing.assert_allclose(encoder, weights["encoder_self"][-1].mean(0), rtol=1e-6)
    assert np.all(np.triu(decoder, k=1) == 0)  # masked: no weight on later outputs
    for w in (encoder, decoder, cross):
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
    assert cross.shape == (len(weights["output_tokens"]), len(weights["source_tokens"]))
    assert _smallest_px(picture) >= typography.MIN_TEXT_PX
    _png(picture)


def test_positional_encoding_picture_peaks_where_it_is_compared():
    picture = lecture.positional_encoding_picture(n=30, d=32, at=12)
    assert int(np.argmax(picture.data["similarity"])) == 12
    torch.testing.assert_close(picture.data["pe"], A.positional_encoding(30, 32))
    assert _smallest_px(picture) >= typography.MIN_TEXT_PX


def test_alignment_failure_marks_the_first_wrong_digit():
    model = attnlab.load("rnnsearch-reverse")
    picture = lecture.alignment_failure(model, length=12, seed=1)
    digits, output, wrong = (picture.data[k] for k in ("digits", "output", "first_wrong"))
    assert output == model.translate(digits)
    if output == digits[::-1]:
        assert wrong is None
    else:
        assert output[:wrong] == digits[::-1][:wrong]
    assert picture.data["alpha"].shape[1] == len(digits) + 1  # the source and its <eos>
    assert _smallest_px(picture) >= typography.MIN_TEXT_PX


def test_first_wrong_finds_a_wrong_extra_or_missing_digit():
    assert reversal._first_wrong("123", "123") is None
    assert reversal._first_wrong("124", "123") == 2
    assert reversal._first_wrong("12", "123") == 2
    assert reversal._first_wrong("1234", "123") == 3


def test_timings_cover_every_length():
    timings = lecture.time_rnn_vs_attention(lengths=[4, 8], d=16, repeats=1)
    assert timings["n"] == [4, 8]
    assert len(timings["rnn_ms"]) == len(timings["attention_ms"]) == 2
    assert all(t > 0 for t in timings["rnn_ms"] + timings["attention_ms"])
    _png(lecture.plot_timings(timings))


def test_lecture_draws_without_pyplot():
    tree = ast.parse(inspect.getsource(lecture))
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [
        f"{n.module}.{a.name}"
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom)
        for a in n.names
    ]
    assert not [name for name in imported if "pyplot" in name]


def test_pictures_are_no_wider_than_the_slides_output_area(three, heads):
    for picture in (
        three,
        heads,
        lecture.positional_encoding_picture(),
        lecture.causal_demo(),
    ):
        fig = picture.fig
        assert fig.get_figwidth() * fig.dpi <= lecture.OUTPUT_AREA_PX, repr(picture)


# ----------------------------------------------------------------------------- new slides
def test_three_attentions_label_decoder_rows_by_the_output_they_write(transformer, three):
    weights = transformer.attention_weights("30 June 2001")
    out = weights["output_tokens"]  # y_1 .. y_m, <eos>
    ax_decoder, ax_cross = three.fig.axes[1], three.fig.axes[2]
    keys = [t.get_text() for t in ax_decoder.get_xticklabels()]
    assert keys == ["<s>", *out[:-1]]  # what each position reads: the outputs shifted right
    assert "<eos>" not in keys  # never the output a query is about to write
    for ax in (ax_decoder, ax_cross):  # rows: the output written, as in every other picture
        assert [t.get_text() for t in ax.get_yticklabels()] == list(out)


def test_graph_depth_counts_the_longest_chain_not_the_number_of_operations():
    x = torch.ones(3, requires_grad=True)
    chain = x
    for _ in range(10):
        chain = chain * 2  # ten operations, one after another
    wide = torch.stack([x * k for k in range(10)]).sum(0)  # eleven operations, three deep
    assert lecture.graph_depth(chain) > lecture.graph_depth(wide) + 5
    with pytest.raises(ValueError, match="require grad"):
        lecture.graph_depth(torch.ones(2))


def test_sequential_steps_grow_with_n_for_the_rnn_only():
    table = lecture.sequential_steps(lengths=[4, 16], d=8)
    (_, rnn4, attn4), (_, rnn16, attn16) = table.rows
    as_int = lambda s: int(s.replace(",", ""))  # noqa: E731
    assert as_int(rnn16) > 3 * as_int(rnn4)
    assert attn4 == attn16


def test_flops_per_step_are_counted_and_scale_with_the_batch():
    small, large = (lecture.flops_per_step("rnnsearch", batch=b) for b in (4, 8))
    assert small > 0 and 1.5 < large / small < 2.5


def test_teacher_forcing_needs_one_pass_and_decoding_one_per_token(transformer):
    table = lecture.teacher_forcing(transformer, "3 May 1979", "1979-05-03")
    inputs, forced, decoded = (row[1:] for row in table.rows)
    assert inputs == ["<s>", *"1979-05-03"]  # the target, shifted right
    assert forced[:-1] == list("1979-05-03") and forced[-1] == "<eos>"
    assert "".join(decoded[:-1]) == transformer.translate("3 May 1979")
    assert "in 1 pass" in table.caption and "took 11 passes" in table.caption


def test_a_forced_mistake_is_written_then_decoding_goes_on_from_it(transformer):
    from attnlab.decode import greedy

    table = lecture.teacher_forcing(transformer, "3 May 1979", "1979-05-03", mistake=(3, "-"))
    label, *written = table.rows[-1]
    assert label == "decoding, '-' forced at t = 3"
    assert written[:3] == ["1", "9", "-"]  # its own first two outputs, then the mistake
    vocab = transformer.tgt_vocab
    src = transformer.source_ids(transformer.prepare("3 May 1979"))
    after = greedy(transformer, src, forced=[vocab.stoi[c] for c in "19-"])[0]
    assert "".join(w for w in written if w not in ("<eos>", "")) == "".join(
        vocab.itos[i] for i in after
    )
    assert "".join(written[:-1]) != "1979-05-03"  # it does not recover: a prefix never read
    untouched = greedy(transformer, src)[0]
    assert greedy(transformer, src, forced=untouched[:4])[0] == untouched  # forcing its own


def test_two_forced_mistakes_give_a_row_each(transformer):
    """A plausible wrong month digit ("1": October, a valid date) and one no date has ("2"):
    a row each, in the order given, each the decoding after its own forced prefix."""
    table = lecture.teacher_forcing(
        transformer, "3 May 1979", "1979-05-03", mistake=[(6, "1"), (6, "2")]
    )
    october, broken = table.rows[-2], table.rows[-1]
    assert october[0] == "decoding, '1' forced at t = 6" and broken[0].startswith("decoding, '2'")
    assert "".join(w for w in october[1:] if w not in ("<eos>", "")).startswith("1979-1")
    assert "".join(w for w in broken[1:] if w not in ("<eos>", "")).startswith("1979-2")
    assert len(table.rows) == 5


@pytest.mark.parametrize(
    "mistake", [(0, "8"), (12, "8"), (3, "xyz"), ("3", "8"), [(6, "1"), (6,)], [(6, "1"), 7], 5]
)
def test_a_mistake_outside_the_output_or_the_vocabulary_is_refused_in_one_line(
    transformer, mistake
):
    with pytest.raises(ValueError, match="mistake must be"):
        lecture.teacher_forcing(transformer, "3 May 1979", "1979-05-03", mistake=mistake)


def test_keeping_every_head_changes_nothing_and_the_hooks_go_away(transformer):
    src = transformer.encode_source("3 May 1979")
    tgt_in = torch.tensor([[transformer.tgt_vocab.sos]])
    with torch.no_grad():
        before = transformer(src, torch.tensor([src.shape[1]]), tgt_in)
        handles = measurements._keep_heads(transformer, {0, 1, 2, 3})
        same = transformer(src, torch.tensor([src.shape[1]]), tgt_in)
        for h in handles:
            h.remove()
        handles = measurements._keep_heads(transformer, {0})
        one = transformer(src, torch.tensor([src.shape[1]]), tgt_in)
        for h in handles:
            h.remove()
        after = transformer(src, torch.tensor([src.shape[1]]), tgt_in)
    torch.testing.assert_close(same, before)
    torch.testing.assert_close(after, before)
    assert not torch.allclose(one, before)


def test_head_study_reports_all_heads_and_each_head_alone(transformer):
    table = lecture.head_study(transformer, n=20)
    assert [row[0] for row in table.rows] == ["all heads", "head 1", "head 2", "head 3", "head 4"]
    assert all(cell.endswith("%") for row in table.rows for cell in row[1:] if cell)
    assert transformer.translate("3 May 1979") == "1979-05-03"  # no hook left behind


def test_positional_encoding_picture_splits_sin_and_cos_by_pair_index():
    picture = lecture.positional_encoding_picture(n=20, d=16, at=5)
    sin_ax, cos_ax = picture.fig.axes[:2]
    sin_rows = sin_ax.images[0].get_array()
    cos_rows = cos_ax.images[0].get_array()
    pe = A.positional_encoding(20, 16).numpy()
    np.testing.assert_allclose(sin_rows, pe[:, 0::2].T)  # row i: the pair index
    np.testing.assert_allclose(cos_rows, pe[:, 1::2].T)
    assert "pair index" in sin_ax.get_ylabel()


def test_self_attention_heads_draws_every_head(transformer):
    picture = lecture.self_attention_heads(transformer, "3 May 1979", layer=0)
    weights = picture.data["weights"]
    assert weights.shape[0] == transformer.config.num_heads
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    assert _smallest_px(picture) >= typography.MIN_TEXT_PX
    two = lecture.self_attention_heads(transformer, "3 May 1979", layer=0, heads=[1, 3])
    np.testing.assert_array_equal(two.data["weights"], weights[[1, 3]])
    assert "heads 2, 4" in str(two)


# ----------------------------------------------------------------------------- cached measurements
def test_the_cached_head_study_is_what_the_model_measures_now(transformer):
    cached = lecture.read_measurements()["head_study"]
    live = lecture.head_study(attnlab.load(cached["model"]), n=cached["n"])
    assert live.rows == cached["rows"] and live.header == cached["header"]
    assert lecture.heads_measured().rows == cached["rows"]


def test_the_cached_flops_are_what_the_counter_measures_now():
    cached = lecture.read_measurements()["flops_per_step"]
    for kind, gflop in cached["gflop"].items():
        assert lecture.flops_per_step(kind, cached["task"], batch=cached["batch"]) == gflop


def test_equal_compute_reads_the_cards_and_the_cached_flops():
    cached = {
        "flops_per_step": {
            "task": "reverse",
            "batch": 2,
            "gflop": {"rnnencdec": 4.0, "rnnsearch": 2.0},
        }
    }
    table = lecture.equal_compute(cached)
    enc, search = table.rows
    assert enc[0] == "rnnenc-reverse" and search[0] == "rnnsearch-reverse"
    assert enc[2] == "2000" and search[2] == "1000"  # MFLOP per string = 1000 * GFLOP / batch
    card = json.loads((CHECKPOINT_DIR / "rnnenc-reverse.json").read_text())
    assert enc[3] == f"{card['steps'] * 4.0 / 1000:.1f}"


def test_heads_compared_shows_each_seed_and_the_range_of_test_scores():
    def run(h: int, seed: int, reached: int | None, test: float) -> dict:
        return {"heads": h, "d_k": 64 // h, "seed": seed, "parameters": 1000 + h,
                "reached": reached, "test_exact_match": test}  # fmt: skip

    cached = {
        "head_count": {
            "model": "transformer-dates", "d_model": 64, "target": 0.999, "max_steps": 1500,
            "eval_every": 50, "test_examples": 2000,
            "runs": [run(4, 0, 800, 0.998), run(4, 1, 650, 0.999), run(1, 0, None, 0.91),
                     run(1, 1, 1200, 0.9975)],
        }
    }  # fmt: skip
    table = lecture.heads_compared(cached)
    assert table.header[2] == "steps to 99.9% (each seed)"
    one, four = table.rows  # by h, whatever the order of the runs
    assert one == ["h = 1, d_k = 64", "1,001", "–, 1,200", "91.00% – 99.75%"]
    assert four == ["h = 4, d_k = 16", "1,004", "800, 650", "99.80% – 99.90%"]
    assert "not within 1,500" in table.caption and "2 seeds" in table.caption
    cached["head_count"]["runs"][2]["reached"] = 1400  # every run reached it: no dash to explain
    assert "not within" not in lecture.heads_compared(cached).caption


def test_heads_compared_reads_the_cached_runs_of_both_head_counts():
    runs = lecture.read_measurements()["head_count"]["runs"]
    assert sorted({r["heads"] for r in runs}) == [1, 4]
    assert {r["seed"] for r in runs if r["heads"] == 1} == {
        r["seed"] for r in runs if r["heads"] == 4
    }
    assert len(lecture.heads_compared().rows) == 2


def test_a_head_count_that_does_not_split_d_model_is_refused():
    from attnlab.experiments.head_count import train_head_counts

    with pytest.raises(ValueError, match="does not split into 3 heads"):
        train_head_counts(heads=(3,), seeds=(0,), progress=False)


def test_written_measurements_read_back_and_the_thread_count_is_restored(tmp_path, monkeypatch):
    measured = {"flops_per_step": {"batch": 2}, "head_study": {"rows": [["all heads", "ü"]]}}
    monkeypatch.setattr(measurements, "measure", lambda: measured)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # not the one thread the measurements run on
    try:
        path = lecture.write_measurements(tmp_path / "deck.json")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
    assert path == tmp_path / "deck.json"
    assert lecture.read_measurements(path) == measured


def test_measurements_name_the_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="python -m attnlab deck"):
        lecture.read_measurements(tmp_path / "deck.json")


def test_table_gives_the_first_column_its_width_and_left_aligns_headers():
    html = lecture.Table(["a", "b", "c"], [["1", "2", "3"]], first_width=20)._repr_html_()
    assert '<col style="width: 20.0%"><col style="width: 40.0%">' in html
    assert '<th style="text-align: left">a</th>' in html
    assert "<colgroup>" not in lecture.Table(["a"], [["1"]])._repr_html_()


# ----------------------------------------------------------------------------- real language
@pytest.fixture(scope="module")
def language():
    return load_results()


def test_held_out_example_decodes_the_stored_test_string_again(language):
    model = attnlab.load("rnnsearch-en-fr")
    example = language["word_order"]
    picture = lecture.held_out_example(model, example)
    assert split_of(example["source"]) == "test"  # held out: never in training
    assert picture.data["output"] == model.translate(example["source"])
    title = picture.fig.axes[0].get_title()
    assert title.startswith("test split") and ("= reference" in title) == picture.data["right"]
    np.testing.assert_allclose(picture.data["alpha"].sum(-1), 1.0, atol=1e-4)
    assert _smallest_px(picture) >= typography.MIN_TEXT_PX


def test_word_order_models_draws_each_models_last_layer_mean_of_heads(language):
    models = [attnlab.load("rnnsearch-en-fr"), attnlab.load("transformer-en-fr")]
    example = language["word_order"]
    picture = lecture.word_order_models(models, example)
    for model, alpha, right, ax in zip(
        models, picture.data["alpha"], picture.data["right"], picture.fig.axes, strict=False
    ):
        d = decode(model, example["source"])
        np.testing.assert_allclose(alpha, d.alpha[-1].mean(axis=0))  # (T, n)
        assert right == (tokenize(d.text) == tokenize(example["reference"]))
        mean = f", mean of {d.alpha.shape[1]} heads" if d.alpha.shape[1] > 1 else ""
        assert (
            ax.get_title() == f"{model.card['name']}{mean}: {'right' if right else '≠ reference'}"
        )
    assert _smallest_px(picture) >= typography.MIN_TEXT_PX
    assert picture.fig.get_size_inches()[0] * picture.fig.dpi <= 1140  # clear of the arrows


def test_word_order_models_refuses_no_models_three_or_a_model_that_does_not_translate(language):
    model = attnlab.load("rnnsearch-en-fr")
    for models in ([], [model] * 3):
        with pytest.raises(ValueError, match="one or two models"):
            lecture.word_order_models(models, language["word_order"])
    with pytest.raises(ValueError, match="translation model"):
        lecture.word_order_models([attnlab.load("rnnsearch-dates")], language["word_order"])


def test_held_out_example_can_show_one_head(language):
    model = attnlab.load("transformer-en-de")
    verb = language["verb_final"]
    picture = lecture.held_out_example(model, verb, "x: ", verb["layer"], verb["head"])
    expected = decode(model, verb["source"]).alpha[verb["layer"], verb["head"]]
    np.testing.assert_allclose(picture.data["alpha"], expected)
    assert picture.fig.axes[0].get_title().startswith("x: test split")


def test_language_table_shows_both_test_splits_and_no_score_of_vaswanis(language):
    table = lecture.language_table(language)
    names = [row[0] for row in table.rows]
    assert names[-2:] == ["baseline: dictionary", "baseline: copy"]
    evaluated = language["evaluation"]
    for name in ("transformer-en-de", "transformer-en-fr", "rnnsearch-en-fr", "rnnenc-en-fr"):
        s = language["scores"]["models"][name]
        row = table.rows[names.index(name)]
        for column, split in ((1, "test"), (2, "unseen")):
            column += 0 if s["pair"] == "en-de" else 2
            got = evaluated[s["pair"]][split]["systems"][name]
            assert row[column] == f"{got['bleu']:.1f} / {got['chrf']:.1f}"
        other = (3, 4) if s["pair"] == "en-de" else (1, 2)
        assert [row[c] for c in other] == ["", ""]  # one language per model
        assert row[5] == f"{s['train_seconds'] / 60:.1f} min"
    dictionary = table.rows[names.index("baseline: dictionary")]
    assert dictionary[2] == "{bleu:.1f} / {chrf:.1f}".format(
        **evaluated["en-de"]["unseen"]["systems"]["dictionary"]
    )
    text = " ".join(" ".join(r) for r in table.rows)
    # none of Vaswani et al.'s rows (their BLEU 27.3 / 38.1 and 28.4 / 41.8) among ours
    assert "Vaswani" not in text and not any("(base)" in n or "(big)" in n for n in names)
    assert "38.1" not in text and "41.8" not in text and "28.4" not in text
    assert "held out" in table.caption and "(95%)" in table.caption


def test_vaswani_table_is_their_table_2_on_its_own(language):
    table = lecture.vaswani_table(language)
    assert [r[1:3] for r in table.rows] == [["27.3", "38.1"], ["28.4", "41.8"]]
    assert "8 NVIDIA P100 GPUs" in table.rows[1][3]
    assert "not comparable" in table.caption


def test_head_roles_table_names_each_heads_most_frequent_role(language):
    roles = language["head_roles"]["transformer-en-de"]
    table = lecture.head_roles_table(roles, layer=0)
    assert len(table.rows) == len(roles["fractions"][0])
    chance = np.asarray(roles["chance"])
    for row, fractions in zip(table.rows, roles["fractions"][0], strict=True):
        role, share = row[1].split()[:2]
        k = roles["roles"].index(role)
        assert role != "other" and share == f"{fractions[k]:.0%}"
        ratios = [
            f / c for r, f, c in zip(roles["roles"], fractions, chance, strict=True) if r != "other"
        ]
        assert fractions[k] / chance[k] == max(ratios)


def test_alpha_and_occlusion_show_the_stored_example(language):
    occlusion = language["alpha_vs_occlusion"]
    example = occlusion["example"]
    picture = lecture.alpha_and_occlusion(example, occlusion["agreement"], occlusion["chance"])
    t, a, k = example["step"], example["alpha_argmax"], example["occlusion_argmax"]
    assert int(np.argmax(picture.data["alpha"][t])) == a != k
    assert int(np.argmax(picture.data["drop"][t])) == k
    assert f"{occlusion['agreement']:.0%}" in repr(picture)
    assert f"chance {occlusion['chance']:.1%}" in repr(picture)
    assert _smallest_px(picture) >= typography.MIN_TEXT_PX


def test_rare_words_counts_reads_the_measured_counts(language):
    rare = language["rare_words"]
    line = lecture.rare_words_counts(rare)
    assert f"{rare['pieced_outputs']} of {rare['strings']} outputs" in line
    assert f"{rare['pieced_words']} such words, {rare['pieced_in_reference']} of them" in line
    assert all(len(part) <= 70 for part in line.splitlines())  # no line wraps on the slide
