"""The word models on real language: they load, read words, survive bad input,
and beat the baselines on the held-out test split."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import attnlab
from attnlab.decode import allowed_tokens, copy_unknown, decode, steps
from attnlab.experiments.language import MODELS, RESULTS_FILE, load_results
from attnlab.models import catalogue
from attnlab.text.corpus import load_corpus
from attnlab.text.vocab import EOS, UNK, InvalidInput, Vocab, detokenize, tokenize
from attnlab.training.batches import copy_targets
from attnlab.training.checkpoints import CHECKPOINT_DIR, load_card, weights_path
from attnlab.training.evaluate import Dictionary, copy_baseline, score, translate_all
from attnlab.training.translation import align_targets, encode_word_pairs, unk_lexicon

NAMES = list(MODELS)
ATTENTION = ["rnnsearch-en-fr", "transformer-en-fr", "transformer-en-de"]
SAMPLE = 150  # the fixed test sample: the first 150 test pairs, in the corpus's order


@pytest.fixture(scope="module")
def models():
    return {name: attnlab.load(name) for name in NAMES}


def sample(lang):
    return load_corpus(lang)["test"][:SAMPLE]


# --------------------------------------------------------------------------- tokens
def test_tokens_are_words_and_punctuation():
    assert tokenize("Close all tabs") == ["close", "all", "tabs"]
    assert tokenize("Type de cellule par défaut.") == [
        "type",
        "de",
        "cellule",
        "par",
        "défaut",
        ".",
    ]
    assert tokenize("l'élément {1}") == ["l'", "élément", "{1}"]
    assert detokenize(["êtes-vous", "sûr", "?"]) == "êtes-vous sûr?"
    assert detokenize(["ouvrir", '"', "{1}", '"', "."]) == 'ouvrir "{1}".'


def test_a_word_vocab_maps_unknown_words_to_unk():
    v = Vocab(["close", "all", "tabs"], level="word")
    assert v.encode("Close ALL windows", unknown="unk") == [4, 5, v.unk]
    assert v.tokens_as_read("close the tabs") == ["close", UNK, "tabs"]
    assert v.decode([4, 5, 6, v.eos, 4]) == "close all tabs"
    with pytest.raises(ValueError):
        Vocab(["two words"], level="word")


def test_character_vocabularies_are_unchanged():
    v = Vocab("abc")
    assert v.level == "char" and v.encode("cab") == [6, 4, 5] and v.decode([6, 4, 5]) == "cab"
    assert v != Vocab("abc", level="word")


# --------------------------------------------------------------------------- shipped models
@pytest.mark.parametrize("name", NAMES)
def test_the_models_are_shipped_and_load(models, name):
    assert name in catalogue.names()
    model = models[name]
    card = load_card(name)
    assert card["tokens"] == "word" and model.src_vocab.level == "word"
    assert card["train_seconds"] <= 600  # at most 10 minutes (wall-clock, 2 cores)
    assert card["test_bleu"] > 0 and "bleu_signature" in card and "chrf_signature" in card
    assert model.card["name"] == name and not model.training


def test_the_new_checkpoints_take_at_most_25_mb():
    total = sum(weights_path(name).stat().st_size for name in NAMES)
    total += sum((CHECKPOINT_DIR / f"{name}.json").stat().st_size for name in NAMES)
    assert total <= 25_000_000


@pytest.mark.parametrize("name", NAMES)
def test_words_in_and_words_out(models, name):
    model = models[name]
    phrase = "Close all tabs" if name.endswith("de") else "Default cell type"
    d = decode(model, phrase)
    assert d.source_tokens == [*tokenize(phrase), EOS]
    assert d.level == "word" and d.output_tokens
    assert all(
        t in model.tgt_vocab.stoi and t != UNK or c
        for t, c in zip(d.output_tokens, d.copied, strict=True)
    )
    assert d.text == detokenize(d.output_tokens) == model.translate(phrase)
    assert model.tgt_vocab.join([s.token for s in steps(model, phrase)]) == d.text
    L, h, T, n = d.alpha.shape
    assert (T, n) == (len(d.output_tokens), len(d.source_tokens))
    assert torch.allclose(torch.tensor(d.alpha.sum(-1)), torch.ones(L, h, T), atol=1e-4)


@pytest.mark.parametrize("name", NAMES)
def test_unknown_words_show_as_unk(models, name):
    model = models[name]
    text = "Close the zyxwvut tabs"
    assert model.source_tokens(text) == ["close", "the", UNK, "tabs", EOS]
    d = decode(model, text)
    assert d.source_tokens[2] == UNK and len(d.output_tokens) <= model.max_tgt_len


# --------------------------------------------------------------------------- copying <unk>
def test_copy_unknown_writes_the_source_word_alpha_weighs_most():
    v = Vocab(["ferme", "les"], level="word")
    alpha = np.zeros((2, 2, 3, 4))  # (L, h, T, n): source "close the zork <eos>"
    alpha[0, :, :, 0] = 1.0  # the first layer looks at "close": it does not count
    alpha[1, 0, 1] = [0.1, 0.1, 0.7, 0.1]  # step 1 (<unk>): the heads' mean is largest on
    alpha[1, 1, 1] = [0.2, 0.3, 0.4, 0.1]  # "zork" (0.55), though head 1 alone is unsure
    alpha[1, :, 2] = [0.1, 0.1, 0.1, 0.7]  # step 2 (<unk>) looks at <eos>: nothing to copy
    tokens, copied = copy_unknown(v, [4, v.unk, v.unk], alpha, ["close", "the", "zork"])
    assert tokens == ["ferme", "zork", UNK] and copied == [False, True, False]
    chars = Vocab("abc")  # a character model never copies (and never writes <unk>)
    assert copy_unknown(chars, [4, chars.unk], alpha[:, :, :2], ["a", "b", "c"])[1] == [
        False,
        False,
    ]


def test_copy_unknown_looks_the_attended_word_up_in_the_lexicon():
    v = Vocab(["ferme", "les"], level="word")
    alpha = np.zeros((1, 1, 3, 4))  # (L, h, T, n): source "close the zork <eos>"
    alpha[0, 0, 1, 2] = alpha[0, 0, 2, 1] = 1.0  # step 1 looks at "zork", step 2 at "the"
    lexicon = {"zork": "zorque", "close": "fermer"}  # "the" is not in it: copied as it is
    tokens, copied = copy_unknown(v, [4, v.unk, v.unk], alpha, ["close", "the", "zork"], lexicon)
    assert tokens == ["ferme", "zorque", "the"] and copied == [False, True, True]


def test_targets_align_to_the_english_word_they_translate():
    table = {"open": "ouvrir", "file": "fichier", "the": "le"}
    pairs = [("Open the file", "Ouvrir le fichier"), ('"{1}" or "{2}"', '"{1}" ou "{2}"')]
    assert align_targets(pairs, table) == [[0, 1, 2], [0, 1, 2, -1, 4, 5, 6]]
    # the two quotes of each pair align to two different quotes of the English
    assert align_targets([("a", "b c")], {}) == [[-1, -1]]


def test_the_unk_lexicon_holds_only_the_words_the_model_cannot_read():
    src = Vocab(["open", "file"], level="word")
    table = {"open": "ouvrir", "file": "fichier", "zork": "zorque"}
    assert unk_lexicon(table, src) == {"zork": "zorque"}


def test_training_targets_hold_unk_where_a_word_is_looked_up_or_copied():
    src = Vocab(["open", "jupyterlab"], level="word")
    tgt = Vocab(["ouvrir", "zork", "jupyterlab", "fichier"], level="word")
    pairs = [
        ("Open zork", "Ouvrir zork"),
        ("Open JupyterLab", "Ouvrir JupyterLab"),
        ("Open file", "Ouvrir fichier"),
    ]
    table = {"open": "ouvrir", "file": "fichier"}
    plain = encode_word_pairs(pairs, src, tgt)["tgt_out"]
    data = encode_word_pairs(pairs, src, tgt, align_targets(pairs, table))
    # "zork" is read as <unk> and copied, "file" (unread) is looked up: both learned as <unk>;
    # "jupyterlab" (known) stays
    assert plain[0, 1] == tgt.stoi["zork"] and data["tgt_out"][0].tolist() == [4, 3, 2]
    assert data["tgt_out"][1].tolist() == plain[1].tolist() == [4, 6, 2]
    assert plain[2, 1] == tgt.stoi["fichier"] and data["tgt_out"][2].tolist() == [4, 3, 2]
    assert data["align"][2].tolist() == [0, 1, -1]  # padded with -1 (the <eos> step)
    # word dropout made "open" <unk> in the source: its translation "ouvrir" follows
    dropped = torch.tensor([[True, False, False]])
    d = {k: v[1:2] for k, v in data.items()}  # "Open JupyterLab"
    tgt_in, tgt_out = copy_targets(dropped, d["tgt_in"], d["tgt_out"], d["align"], tgt.unk)
    assert tgt_out.tolist() == [[3, 6, 2]] and tgt_in.tolist() == [[1, 3, 6]]
    nothing = torch.zeros(1, 3, dtype=torch.bool)
    none = copy_targets(nothing, d["tgt_in"], d["tgt_out"], d["align"], tgt.unk)
    assert none[1].tolist() == d["tgt_out"].tolist()


def test_only_word_models_may_write_unk():
    assert allowed_tokens(Vocab(["close"], level="word"))[3]
    assert not allowed_tokens(Vocab("abc"))[3]
    assert not allowed_tokens(Vocab(["close"], level="word"))[:2].any()  # <pad>, <sos>


@pytest.mark.parametrize("name", ATTENTION)
def test_the_models_copy_words_they_cannot_read(models, name):
    """Over the test sample, some outputs copy an unknown source word; each copy is the
    source word that the last layer's alpha (mean over heads) weighs most at that step, looked
    up in the model's unk_lexicon (or as it is when the lexicon lacks it), and
    the batched translation (the scores) writes exactly what decode writes."""
    model = models[name]
    pairs = sample(MODELS[name])
    texts = [en for en, _ in pairs]
    batched = translate_all(model, texts)
    copies = 0
    for k, (text, out) in enumerate(zip(texts, batched, strict=True)):
        d = decode(model, text)
        assert d.text == out
        if k < 10:  # translate is decode's text: a few suffice
            assert model.translate(text) == out
        words = model.src_vocab.tokens(model.prepare(text))
        for t in np.flatnonzero(d.copied):
            i = int(d.alpha[-1, :, t].mean(axis=0).argmax())
            assert d.output_tokens[t] == model.unk_lexicon.get(words[i], words[i])
            copies += 1
    assert copies > 0


BAD = {
    "empty": "",
    "spaces": "   \n ",
    "not text": None,
    "10,000 words": " ".join(["word"] * 10_000),
}
ODD = {
    "emoji": "😀 🎉",
    "another script": "日本語のテキスト",
    "HTML": "<b>Close</b> <script>alert(1)</script>",
    "punctuation": "?!...",
    "placeholder": "{1}",
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("what", BAD)
def test_bad_input_is_one_clear_line(models, name, what):
    with pytest.raises(InvalidInput) as err:
        models[name].translate(BAD[what])
    message = str(err.value)
    assert message and "\n" not in message and len(message) < 120


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("what", ODD)
def test_odd_input_gives_a_bounded_output(models, name, what):
    model, text = models[name], ODD[what]
    d = decode(model, text)  # never an exception from inside torch
    T, n = len(d.output_tokens), len(d.source_tokens)
    assert T <= model.max_tgt_len and d.source_tokens[-1] == EOS
    # what the model read: words it knows, every other word as <unk>
    assert all(t in model.src_vocab.stoi for t in d.source_tokens), d.source_tokens
    # what it wrote: no <pad>, <sos> or <eos> inside, one probability and one alpha row a step
    assert not {"<pad>", "<sos>", EOS} & set(d.output_tokens), d.output_tokens
    assert d.probs.shape == (T,) and all(0 < p <= 1 for p in d.probs)
    assert d.alpha.shape[-2:] == (T, n) and np.allclose(d.alpha.sum(-1), 1, atol=1e-4)
    assert d.text == detokenize(d.output_tokens) == model.translate(text)


def test_character_models_still_refuse_unknown_characters():
    model = attnlab.load("rnnsearch-dates")
    assert model.translate("3 May 1979") == "1979-05-03"
    with pytest.raises(InvalidInput, match="never seen"):
        model.translate("3 Mai 1979 😀")


# --------------------------------------------------------------------------- the scores
@pytest.fixture(scope="module")
def outputs_on_test_split(models):
    """name -> the model's batched translation of its whole test split, computed once: the
    scores and the cards both read these."""
    return {
        name: translate_all(models[name], [en for en, _ in load_corpus(lang)["test"]])
        for name, lang in MODELS.items()
    }


@pytest.fixture(scope="module")
def split_scores(outputs_on_test_split):
    """BLEU and chrF of every model and baseline on the whole test split (batched: seconds)."""
    out = {}
    for lang in ("fr", "de"):
        pairs = load_corpus(lang)["test"]
        src, ref = [en for en, _ in pairs], [t for _, t in pairs]
        out[lang] = {
            "copy": score(copy_baseline(src), ref),
            "dictionary": score(Dictionary(load_corpus(lang)["train"]).translate_all(src), ref),
        }
    for name, lang in MODELS.items():
        out[name] = score(outputs_on_test_split[name], [t for _, t in load_corpus(lang)["test"]])
    return out


@pytest.mark.slow  # the whole test split, and the dictionary baseline is trained (IBM-1)
@pytest.mark.parametrize("name", ATTENTION)
def test_attention_models_beat_both_baselines(split_scores, name):
    """On the test split: BLEU (the papers' metric) and chrF (characters,
    recall-weighted, blind to spaces: the word-by-word dictionary's best score) both above
    copying the source and above the word-by-word dictionary."""
    lang = MODELS[name]
    ours, copy, dictionary = (
        split_scores[name],
        *(split_scores[lang][b] for b in ("copy", "dictionary")),
    )
    assert ours["bleu"] > copy["bleu"] + 10 and ours["chrf"] > copy["chrf"] + 10, (ours, copy)
    assert ours["bleu"] > dictionary["bleu"] + 10, (name, ours, dictionary)
    assert ours["chrf"] > dictionary["chrf"] + 1, (name, ours, dictionary)


@pytest.mark.slow  # the whole test split
def test_attention_beats_the_model_without_it(split_scores):
    enc, search = split_scores["rnnenc-en-fr"], split_scores["rnnsearch-en-fr"]
    assert search["bleu"] > enc["bleu"] + 3 and search["chrf"] > enc["chrf"] + 3


@pytest.mark.slow  # the whole test split
def test_the_cards_report_the_test_split_scores(models, split_scores):
    for name, lang in MODELS.items():
        card, s, test = models[name].card, split_scores[name], load_corpus(lang)["test"]
        assert (card["test_bleu"], card["test_chrf"]) == (s["bleu"], s["chrf"])
        assert card["test_examples"] == len(test)


# --------------------------------------------------------------------------- cached results
def test_the_cached_results_match_the_models(models):
    results = load_results()
    assert RESULTS_FILE == Path(attnlab.__file__).parent / "results" / "language.json"
    for name in NAMES:
        assert results["scores"]["models"][name]["bleu"] == models[name].card["test_bleu"]
    json.dumps(results)  # plain JSON


def test_the_word_order_example_is_held_out_right_and_crossing(models):
    ex = load_results()["word_order"]
    test_sources = {en for en, _ in load_corpus("fr")["test"]}
    train_sources = {en.lower() for en, _ in load_corpus("fr")["train"]}
    assert ex["source"] in test_sources and ex["source"].lower() not in train_sources
    assert tokenize(ex["output"]) == tokenize(ex["reference"])
    d = decode(models["rnnsearch-en-fr"], ex["source"])
    assert d.text == ex["output"] and d.source_tokens == ex["source_tokens"]
    path = [max(range(len(row) - 1), key=row.__getitem__) for row in ex["alpha"]]
    assert any(b < a for a, b in zip(path, path[1:], strict=False))  # alpha crosses


def test_the_verb_final_example_is_real(models):
    ex = load_results()["verb_final"]
    d = decode(models["transformer-en-de"], ex["source"])
    assert d.text == ex["output"]
    verb = d.output_tokens[ex["verb_step"]]
    words = [w for w in d.output_tokens if w.isalpha()]
    assert verb == words[-1] == [w for w in tokenize(ex["reference"]) if w.isalpha()][-1]
    assert verb.endswith(("en", "ern", "eln"))  # an infinitive: the German verb, last
    row = d.alpha[ex["layer"], ex["head"], ex["verb_step"]]
    assert int(row.argmax()) == 0  # the verb, written last, looks at the English verb first


def test_the_german_model_writes_a_held_out_compound_in_parts(models):
    rare = load_results()["rare_words"]
    ex = rare["example"]
    test_sources = {en for en, _ in load_corpus("de")["test"]}
    assert ex["source"] in test_sources and rare["strings"] == len(test_sources)
    d = decode(models["transformer-en-de"], ex["source"])
    assert d.text == ex["output"] and tokenize(d.text) == tokenize(ex["reference"])
    parts = [t for t in d.output_tokens if t.endswith("@@")]
    assert parts and len(tokenize(d.text)) == len(d.output_tokens) - len(parts)  # glued
    assert 0 < rare["compound_outputs"] <= rare["strings"]
    assert 0 <= rare["looked_up_in_reference"] <= rare["looked_up"]


def test_head_roles_are_fractions_over_the_test_split():
    roles = load_results()["head_roles"]
    for name in ("transformer-en-de", "transformer-en-fr"):
        frac = torch.tensor(roles[name]["fractions"])
        assert frac.shape[-1] == len(roles[name]["roles"])
        assert torch.allclose(frac.sum(-1), torch.ones(frac.shape[:-1]), atol=0.01)


def test_alpha_is_not_always_an_explanation(models):
    res = load_results()["alpha_vs_occlusion"]
    assert 0 <= res["agreement"] < 1
    ex = res["example"]
    occ = torch.tensor(ex["occlusion"])[ex["step"]]
    assert int(occ.argmax()) == ex["occlusion_argmax"] != ex["alpha_argmax"]
    alpha = torch.tensor(ex["alpha"])[ex["step"], :-1]
    assert int(alpha.argmax()) == ex["alpha_argmax"]


# --------------------------------------------------------------------------- make train / bench
def test_make_train_rebuilds_the_corpus_and_the_word_models():
    make = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    train = make.split("\ntrain:", 1)[1].split("\n\n", 1)[0]
    for command in (
        "-m attnlab corpus --card docs/data-card.md",
        "-m attnlab train --language all --replace-shipped",
        "-m attnlab language",
    ):
        assert command in train
    assert "benchmarks/language.py" in make.split("\nbench:", 1)[1].split("\n\n", 1)[0]
    assert "data-requirements.txt" in make.split("$(STAMP):", 1)[1].split("\n\n", 1)[0]


def test_training_never_overwrites_the_shipped_models_unasked(capsys):
    from attnlab.__main__ import main

    with pytest.raises(SystemExit) as err:
        main(["train", "--language", "rnnsearch-en-fr", "--out", str(CHECKPOINT_DIR)])
    assert err.value.code == 2 and "--replace-shipped" in capsys.readouterr().err


def test_the_language_models_train_from_the_one_command_line(monkeypatch, tmp_path, capsys):
    """`python -m attnlab train --language NAME|all`: the one entry point trains the word
    models too (what `make train` runs), by their recipes, into the folder asked for, and
    refuses mixed requests."""
    from attnlab.__main__ import main
    from attnlab.training import runs
    from attnlab.training.config import recipe
    from attnlab.training.runs import WORD_MODELS

    trained = []
    monkeypatch.setattr(runs, "train_and_save", lambda *args: trained.append(args))
    assert main(["train", "--language", "all", "--out", str(tmp_path)]) == 0
    assert trained == [(name, tmp_path, recipe(name)) for name in WORD_MODELS]
    assert {catalogue.entry(name).task for name in WORD_MODELS} == {"en-fr", "en-de"}
    with pytest.raises(SystemExit) as err:
        main(["train", "--language", "rnnsearch-en-fr", "--all", "--out", str(tmp_path)])
    assert err.value.code == 2 and "--language alone" in capsys.readouterr().err


def small_corpus() -> dict:
    corpus = load_corpus("fr")
    return {"train": corpus["train"][:400], "dev": corpus["dev"][:20], "test": corpus["test"][:20]}


@pytest.mark.slow
def test_a_few_training_steps_lower_the_loss_and_keep_the_best_dev_weights():
    """The one training loop (attnlab.training.loop.fit) on a word recipe, a tiny budget:
    it records the history it promises and returns the weights of its best dev chrF."""
    from dataclasses import replace

    from attnlab.training.config import recipe
    from attnlab.training.loop import fit
    from attnlab.training.translation import dev_chrf

    run, small = recipe("rnnsearch-en-fr"), small_corpus()
    cfg = replace(run.train, max_steps=30, eval_every=10, threads=1)  # one: a shared machine
    model, history = fit(run.kind, run.task, config=cfg, corpus=small, progress=False)
    assert history["step"] == [10, 20, 30]
    assert all(np.isfinite(history["loss"]))
    assert history["loss"][-1] < history["loss"][0]  # it learns
    best = int(np.argmax(history["dev_chrf"]))
    assert history["best_step"] == history["step"][best]
    assert dev_chrf(model, small["dev"]) == history["dev_chrf"][best]  # those weights
    assert not model.training


@pytest.mark.slow
def test_a_word_recipe_saves_a_loadable_fp16_checkpoint_and_its_scores(tmp_path, monkeypatch):
    """train_and_save on a word recipe: the same card writer as the date models, with the
    test split's BLEU and chrF, the unknown-word lexicon and fp16 weights."""
    from dataclasses import replace

    from attnlab.training import runs
    from attnlab.training.config import recipe

    small = small_corpus()
    monkeypatch.setattr(runs, "load_corpus", lambda lang: small)
    run = recipe("rnnsearch-en-fr")
    run = replace(run, train=replace(run.train, max_steps=4, eval_every=2, threads=1))
    runs.train_and_save("rnnsearch-en-fr", tmp_path, run, progress=False)
    model = attnlab.load("rnnsearch-en-fr", tmp_path)
    card = model.card
    assert card["task"] == "en-fr" and card["tokens"] == "word" and card["steps"] == 4
    assert card["test_examples"] == 20 and set(card["baselines"]) == {"copy", "dictionary"}
    assert card["unk_lexicon"] == model.unk_lexicon and model.src_vocab.level == "word"
    assert card["history"]["step"] == [2, 4] and len(card["history"]["dev_chrf"]) == 2
    assert card["train"]["word_dropout"] == run.train.word_dropout
    outputs = translate_all(model, [en for en, _ in small["test"]])
    assert score(outputs, [t for _, t in small["test"]])["chrf"] == card["test_chrf"]


# --------------------------------------------------------------------------- dropout
def test_dropout_acts_while_training_only():
    """The real-language Transformer's residual dropout (P_drop, Vaswani et al. 5.4): a model
    in eval mode gives what the same weights without dropout give; in training it differs."""
    from attnlab.models.registry import build_model

    src, tgt = Vocab(["close", "all", "tabs"], level="word"), Vocab(["fermer"], level="word")
    for kind, config in (
        ("transformer", {"d_model": 16, "num_heads": 2, "num_layers": 1, "d_ff": 32}),
        ("rnnsearch", {"emb": 8, "enc_hidden": 8, "dec_hidden": 8, "attn_hidden": 8}),
    ):
        torch.manual_seed(0)
        with_drop = build_model(kind, src, tgt, {**config, "dropout": 0.5})
        plain = build_model(kind, src, tgt, config)
        plain.load_state_dict(with_drop.state_dict())
        x, n, y = torch.tensor([[4, 5, 6, 2]]), torch.tensor([4]), torch.tensor([[1, 4]])
        with_drop.eval(), plain.eval()
        assert torch.equal(with_drop(x, n, y), plain(x, n, y)), kind
        with_drop.train()
        assert not torch.equal(with_drop(x, n, y), plain(x, n, y)), kind
