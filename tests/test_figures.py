"""The picture generator: every picture the notebooks show is drawn by `attnlab.pictures.figures`.

One module-scoped run of the generator into a temporary folder feeds most tests (drawing
everything takes a few seconds); the rest check the pieces: the CLI, determinism, the
receptive fields of the WaveNet picture, the diagram primitives and Table 2's numbers.
"""

from __future__ import annotations

import json
import re
import struct
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from attnlab.__main__ import main
from attnlab.experiments.language import load_results
from attnlab.experiments.vaswani import TABLE2, transformer_rows
from attnlab.pictures import diagrams, figures, typography
from attnlab.pictures.figures import table2

ROOT = Path(__file__).resolve().parents[1]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PICTURE = re.compile(r"pics/([A-Za-z0-9_\-]+\.png)")
# The pictures the deck shows (exactly these).
DECK_PICTURES = {
    "seq2seq_lite.png",
    "seq2seq_attention.png",
    "seq2seq_attention_length.png",
    "wavenet.png",
    "transformer_overview.png",
    "transformer_attention.png",
    "transformer_results.png",
    "language_scores.png",
}


def referenced_pictures() -> set[str]:
    """Every ``pics/<name>.png`` named in a markdown or code cell of notebooks/*.ipynb."""
    names: set[str] = set()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = cell["source"]
            names.update(PICTURE.findall("".join(source) if isinstance(source, list) else source))
    return names


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """The (type, payload) chunks of a PNG file."""
    assert data[:8] == PNG_SIGNATURE
    chunks, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        chunks.append((kind, data[pos + 8 : pos + 8 + length]))
        pos += 12 + length
    return chunks


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Run the generator once: (folder, written paths, skipped, start time)."""
    out = tmp_path_factory.mktemp("pics")
    start = time.time()
    written, skipped = figures.write_all(out)
    return out, written, skipped, start


# ------------------------------------------------------------------------ the whole run
def test_the_generator_knows_the_pictures_the_deck_shows():
    assert {f"{name}.png" for name in figures.FIGURES} == DECK_PICTURES


def test_nothing_is_skipped(generated):
    _, written, skipped, _ = generated
    assert skipped == {}, f"pictures not drawn: {skipped}"
    assert len(written) == len(figures.FIGURES)


@pytest.mark.parametrize("name", sorted(referenced_pictures() | DECK_PICTURES))
def test_every_referenced_picture_is_drawn_by_this_run(generated, name):
    out, written, skipped, start = generated
    path = out / name
    assert name.removesuffix(".png") not in skipped, skipped.get(name.removesuffix(".png"))
    assert path in written, f"{name} is referenced by a notebook but not drawn by the generator"
    assert path.stat().st_mtime >= start - 1.0  # written now, not left over
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        width, height = image.size
        pixels = np.asarray(image.convert("RGB"))
    assert width >= 1000 and height >= 500, f"{name} is only {width}x{height}"
    assert width > height, f"{name} should be wide for a 16:9 slide, is {width}x{height}"
    # non-trivial: a real drawing has ink and colour, not a blank or one-tone canvas
    ink = (pixels.min(axis=2) < 200).mean()
    assert 0.02 < ink < 0.6, f"{name}: {ink:.1%} of pixels are ink"
    packed = pixels.astype(np.uint32) @ np.array([1 << 16, 1 << 8, 1], dtype=np.uint32)
    assert len(np.unique(packed)) > 50  # antialiased shapes in several colours


def test_pngs_carry_no_timestamp_or_version(generated):
    _, written, _, _ = generated
    for path in written:
        for kind, payload in png_chunks(path.read_bytes()):
            assert kind != b"tIME", path.name
            if kind in (b"tEXt", b"iTXt", b"zTXt"):
                assert not payload.startswith(b"Software"), path.name
                assert not payload.startswith(b"Creation Time"), path.name


def test_pictures_are_deterministic(tmp_path):
    names = ["transformer_results", "wavenet"]
    first, _ = figures.write_all(tmp_path / "a", names)
    second, _ = figures.write_all(tmp_path / "b", names)
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


# ------------------------------------------------------------- the command line: figures
def test_cli_only_draws_the_named_pictures(tmp_path, capsys):
    assert main(["figures", "--out", str(tmp_path), "--only", "wavenet", "seq2seq_lite"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seq2seq_lite.png", "wavenet.png"]
    assert "wavenet.png" in capsys.readouterr().out


def test_cli_rejects_an_unknown_picture_without_traceback(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["figures", "--out", str(tmp_path), "--only", "no_such_picture"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and "transformer_results" in err
    assert list(tmp_path.iterdir()) == []


def test_write_all_rejects_unknown_names(tmp_path):
    with pytest.raises(ValueError, match="no_such_picture"):
        figures.write_all(tmp_path, ["wavenet", "no_such_picture"])


def test_cli_reports_an_unwritable_folder(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    assert main(["figures", "--out", str(blocker / "pics"), "--only", "wavenet"]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_figures_leave_no_pyplot_figures_open():
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    fig = figures.transformer_attention()
    assert plt.get_fignums() == before
    assert fig.get_size_inches()[0] > fig.get_size_inches()[1]


# ------------------------------------------------------------------- type on the slide
IMG_WIDTH = re.compile(r'<img\s+src="\.\./pics/([A-Za-z0-9_\-]+)\.png"\s+width="(\d+)%"')


@pytest.mark.parametrize("name", sorted(figures.FIGURES))
def test_every_text_reads_from_the_back_at_the_width_shown(name):
    """Figure size, dpi and font sizes give the px height of each text on the 1280 px slide."""
    with figures.drawing_style():
        fig = figures.FIGURES[name]()
    shown = figures.shown_width_px(name)
    sizes = typography.text_sizes(fig, shown)
    assert sizes, name
    px, text = min(sizes)
    assert px >= typography.MIN_TEXT_PX, (
        f"{name}: {text!r} is {px:.1f} px tall at {shown:.0f} px wide"
    )


def test_shown_widths_are_the_decks():
    """The deck shows each picture at the width the size test assumes (or wider)."""
    shown = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            shown.update({m[0]: int(m[1]) for m in IMG_WIDTH.findall(source)})
    narrower = {
        n: (w, figures.SHOWN_WIDTH[n]) for n, w in shown.items() if w < figures.SHOWN_WIDTH[n]
    }
    assert not narrower, f"shown narrower than figures.SHOWN_WIDTH (deck %, needed %): {narrower}"


# ------------------------------------------------------------------- real-language scores
def test_scores_chart_draws_each_stored_chrf_with_its_interval():
    """One bar per system and test split, as tall as the stored chrF, its 95% interval and
    its score above it; no line across both splits (a held-out line drawn over an in-domain
    bar misreads it); the panels' titles give the stored training minutes."""
    from attnlab.pictures.figures import scores

    results = load_results()
    with figures.drawing_style():
        fig = figures.language_scores(results)
    axes = [ax for ax in fig.axes if ax.patches]
    assert len(axes) == len(scores.PANELS)
    for ax, (pair, (_, systems)) in zip(axes, scores.PANELS.items(), strict=True):
        evaluated = results["evaluation"][pair]
        expected = [
            evaluated[split]["systems"][system]["bootstrap"]["chrf"]
            for split in scores.SPLITS
            for system in [*systems, "dictionary"]
        ]
        bars = [p for p in ax.patches if p.get_height() > 0]
        assert [round(b.get_height(), 2) for b in bars] == [e["score"] for e in expected]
        written = [t.get_text() for t in ax.texts]
        assert written == [f"{e['score']:.1f}" for e in expected]
        whiskers = sorted(
            round((seg[1][1] - seg[0][1]) / 2, 2)
            for coll in ax.collections
            for seg in coll.get_segments()
        )
        assert whiskers == sorted(e["ci"] for e in expected)
        assert not [line for line in ax.get_lines() if line.get_linestyle() == "--"]
        minutes = [results["scores"]["models"][s]["train_seconds"] / 60 for s in systems]
        assert f"{max(minutes):.1f} min" in ax.get_title()


def test_scores_chart_without_results_says_so_in_one_line():
    with pytest.raises(figures.FigureUnavailable, match="no stored real-language results"):
        figures.language_scores({"evaluation": {}})


# ------------------------------------------------------------------- length experiment
def test_length_figure_draws_the_four_curves_with_the_lectures_names():
    results = {
        "bins": [[5, 10], [11, 20], [21, 30], [31, 40]],
        "models": {
            "rnnenc-reverse": {"exact_match": [0.7, 0.1, 0.0, 0.0], "token_accuracy": [0.9] * 4},
            "rnnsearch-reverse": {"exact_match": [1.0, 0.98, 0.9, 0.9], "token_accuracy": [1] * 4},
            "rnnenc-reverse-30": {"exact_match": [0.6, 0.1, 0.0, 0.0], "token_accuracy": [0.9] * 4},
            "rnnsearch-reverse-30": {
                "exact_match": [1.0, 1.0, 0.9, 0.4],
                "token_accuracy": [1] * 4,
            },
            "mystery $x$": {"exact_match": [0.5] * 4, "token_accuracy": [0.5] * 4},
        },
        "config": {
            "models": {
                "rnnenc-reverse": {"kind": "rnnencdec", "train_lengths": [5, 40]},
                "rnnsearch-reverse": {"kind": "rnnsearch", "train_lengths": [5, 40]},
                "rnnenc-reverse-30": {"kind": "rnnencdec", "train_lengths": [5, 30]},
                "rnnsearch-reverse-30": {"kind": "rnnsearch", "train_lengths": [5, 30]},
            }
        },
    }
    fig = figures.seq2seq_attention_length(results)
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {
        "RNNEncDec (no attention, trained ≤ 40)",
        "RNNSearch (attention, trained ≤ 40)",
        "RNNEncDec (no attention, trained ≤ 30)",
        "RNNSearch (attention, trained ≤ 30)",
        r"mystery \$x\$",  # shown literally, not as mathtext
    }
    np.testing.assert_allclose(
        lines["RNNSearch (attention, trained ≤ 30)"].get_ydata(), [1, 1, 0.9, 0.4]
    )
    assert lines["RNNSearch (attention, trained ≤ 30)"].get_linestyle() == "--"
    assert lines["RNNSearch (attention, trained ≤ 40)"].get_linestyle() == "-"
    # the legend sits below the axes, on the figure, where it hides no point
    assert ax.get_legend() is None
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "RNNEncDec (no attention, trained ≤ 30)" in legend


def test_length_picture_shows_real_language_beside_the_digits():
    def bucket(ours: float, theirs: float, n: int = 50) -> dict:
        chrf = lambda score: {"chrf": {"score": score, "mean": score, "ci": 2.0}}  # noqa: E731
        return {"n": n, "systems": {"search": chrf(ours), "enc": chrf(theirs)}}

    by_length = {
        "systems": ["search", "enc"],
        "baseline": "enc",
        "splits": {"unseen": {"1-3": bucket(40, 36), "4-6": bucket(38, 30), "11+": bucket(35, 20)}},
    }
    from attnlab.experiments.length import load_results

    fig = figures.seq2seq_attention_length(load_results(), by_length)
    real = fig.axes[1]
    gains = sorted(t.get_text() for t in real.texts)
    assert gains == ["+15.0", "+4.0", "+8.0"]
    assert [t.get_text() for t in real.get_xticklabels()] == ["1-3", "4-6", "11+"]
    low, high = real.get_ylim()
    assert low <= 18 and high >= 42  # every interval inside the axes


def test_shipped_length_picture_holds_the_stored_real_language_gains():
    from attnlab.experiments.language import load_results

    stored = load_results()["attention_by_length"]["splits"]["unseen"]
    fig = figures.seq2seq_attention_length()
    texts = [t.get_text() for t in fig.axes[1].texts]
    assert "dictionary" in texts  # the baseline is drawn, and named
    shown = [t for t in texts if t != "dictionary"]
    assert len(shown) == len(stored) == 4
    for text, row in zip(shown, stored.values(), strict=True):
        search, enc = (
            row["systems"][m]["chrf"]["score"] for m in ("rnnsearch-en-fr", "rnnenc-en-fr")
        )
        assert float(text) == pytest.approx(search - enc, abs=0.051)


def test_length_picture_has_the_four_shipped_models():
    # the results file ships with the package: missing, it is a failure, never a skip
    from attnlab.experiments.length import load_results

    fig = figures.seq2seq_attention_length(load_results())
    labels = {line.get_label() for line in fig.axes[0].get_lines()}
    assert {
        "RNNEncDec (no attention, trained ≤ 60)",
        "RNNSearch (attention, trained ≤ 60)",
        "RNNEncDec (no attention, trained ≤ 30)",
        "RNNSearch (attention, trained ≤ 30)",
    } <= labels


# ---------------------------------------------------------------------- WaveNet paths
def test_wavenet_receptive_fields():
    reach = figures.causal_conv_reach((1, 2, 4, 8), 16)
    assert {t for layer, t in reach if layer == 0} == set(range(16))  # all 16 inputs
    assert (4, 15) in reach and (4, 14) not in reach  # only the last output
    plain = figures.causal_conv_reach((1, 1, 1, 1), 16)
    assert {t for layer, t in plain if layer == 0} == {11, 12, 13, 14, 15}


@given(
    dilations=st.lists(st.integers(1, 8), min_size=1, max_size=5),
    n=st.integers(1, 40),
)
def test_receptive_field_matches_the_sums_of_dilations(dilations, n):
    # kernel 2: the last output reads input n - 1 - s for every sum s of a subset of the
    # dilations (each layer either stays or steps back d_l), if that input exists
    sums = {0}
    for d in dilations:
        sums |= {s + d for s in sums}
    reach = figures.causal_conv_reach(dilations, n)
    assert {t for layer, t in reach if layer == 0} == {n - 1 - s for s in sums if s <= n - 1}


@given(layers=st.integers(1, 6), n=st.integers(1, 80))
def test_doubling_dilations_see_a_contiguous_field_of_2_to_the_layers(layers, n):
    reach = figures.causal_conv_reach([2**k for k in range(layers)], n)
    size = min(n, 2**layers)  # WaveNet: receptive field doubles with every layer
    assert sorted(t for layer, t in reach if layer == 0) == list(range(n - size, n))


def test_receptive_field_rejects_bad_arguments():
    with pytest.raises(ValueError, match="dilations"):
        figures.causal_conv_reach((1, 0), 8)
    with pytest.raises(ValueError, match="n=0"):
        figures.causal_conv_reach((1,), 0)


# ---------------------------------------------------------------------------- Table 2
def test_table2_picture_shows_every_row_and_the_papers_best_in_bold():
    from matplotlib.text import Text

    fig = figures.transformer_results()
    texts = [t for t in fig.findobj(Text) if t.get_text().strip()]
    rows: dict[float, list[Text]] = {}  # one line of the table per baseline
    for t in texts:
        rows.setdefault(round(t.get_position()[1], 3), []).append(t)
    by_name = {}
    for line in rows.values():
        line.sort(key=lambda t: t.get_position()[0])  # model name first, then the columns
        by_name[line[0].get_text()] = [t.get_text() for t in line[1:]]
    # the paper's numbers (Vaswani et al. 2017, Table 2), each on its model's line
    assert by_name["Transformer (big)"] == ["28.4", "41.8", r"$2.3\cdot10^{19}$"]
    assert by_name["Transformer (base model)"] == ["27.3", "38.1", r"$3.3\cdot10^{18}$"]
    assert by_name["ByteNet"] == ["23.75"]
    assert by_name["GNMT + RL Ensemble"] == [
        "26.30",
        "41.16",
        r"$1.8\cdot10^{20}$",
        r"$1.1\cdot10^{21}$",
    ]
    assert all(name in by_name for name, *_ in TABLE2)
    # best BLEU in bold: the big Transformer in both language pairs, nothing else
    bold_numbers = {
        t.get_text() for t in texts if t.get_fontweight() == "bold" and t.get_text()[0].isdigit()
    }
    assert bold_numbers == {"28.4", "41.8"}


def test_the_results_store_the_transformer_rows_of_the_one_table2():
    rows = {row.model: row for row in TABLE2}
    stored = transformer_rows()
    assert stored["transformer-big"]["en-de"] == float(rows["Transformer (big)"].bleu_en_de)
    assert stored["transformer-base"]["en-fr"] == float(rows["Transformer (base model)"].bleu_en_fr)
    assert (
        stored["transformer-base"]["training_flops"] == rows["Transformer (base model)"].cost_en_de
    )
    assert load_results()["table2"]["vaswani"] == stored  # the cached results hold the same rows


def test_flops_are_written_as_powers_of_ten():
    assert table2._flops(2.3e19) == r"$2.3\cdot10^{19}$"
    assert table2._flops(9.6e18) == r"$9.6\cdot10^{18}$"
    assert table2._flops(None) == ""


# ------------------------------------------------------------------- drawing primitives
def test_box_anchors_lie_on_its_sides():
    b = diagrams.Box(2.0, 1.0, 4.0, 2.0)
    assert (b.left, b.right, b.top, b.bottom) == ((0.0, 1.0), (4.0, 1.0), (2.0, 2.0), (2.0, 0.0))
    assert b.side("top", 0.0) == (0.0, 2.0) and b.side("right", 1.0) == (4.0, 2.0)
    with pytest.raises(ValueError, match="side"):
        b.side("middle")
    with pytest.raises(ValueError, match="frac"):
        b.side("top", 1.5)


def test_canvas_keeps_units_square():
    fig, ax = diagrams.diagram_figure((0, 10), (0, 4), inches_per_unit=0.5)
    np.testing.assert_allclose(fig.get_size_inches(), [5.0, 2.0])
    assert ax.get_xlim() == (0, 10) and ax.get_ylim() == (0, 4)
    with pytest.raises(ValueError, match="empty limits"):
        diagrams.diagram_figure((1, 1), (0, 4))


def test_arrow_tip_touches_its_end_point():
    fig, ax = diagrams.diagram_figure((0, 10), (0, 4))
    target = diagrams.box(ax, (7.0, 2.0), 2.0, 1.0, "x")
    patch = diagrams.arrow(ax, (1.0, 2.0), target.left)
    fig.canvas.draw()
    # the drawn path, back in data units, ends on the box's left side
    path = patch.get_path().transformed(patch.get_transform())
    x_max = ax.transData.inverted().transform(path.vertices)[:, 0].max()
    assert x_max == pytest.approx(target.left[0], abs=0.05)


def test_the_transformer_diagram_draws_the_pre_ln_model_we_train():
    """One Norm before each of the 2 + 3 sublayers and a final Norm after each stack."""
    with figures.drawing_style():
        fig = figures.transformer_overview()
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    assert texts.count("Norm") == 2 + 3 + 2
    assert not any("Add &" in t for t in texts)
    assert "Pre-LN (our model):" in texts
    assert any("Sublayer}(\\mathrm{LayerNorm}(x))" in t for t in texts)
