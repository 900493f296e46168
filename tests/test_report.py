"""The evaluation report of the translation models: small hand-written splits whose answers
are known by construction."""

from __future__ import annotations

import json
import os

import pytest

from attnlab.training.report import (
    bootstrap_by_length,
    chrf_by_length,
    corpus_scores,
    exact_match,
    kept_share,
    kept_tokens,
    length_bucket,
    paired_bootstrap,
    repeats_share,
    report,
    tokens,
    without_placeholders,
)

# English -> French, lengths 1 to 12 words, names, numbers and placeholders in some.
PAIRS = [
    ("Save", "Enregistrer"),
    ("Close all tabs", "Fermer tous les onglets"),
    ("Open {1} now", "Ouvrez {1} maintenant"),
    ("Restart the kernel", "Redémarrer le noyau"),
    ("Open the file in JupyterLab", "Ouvrez le fichier dans JupyterLab"),
    ("The server uses Python 3.11", "Le serveur utilise Python 3.11"),
    ("Copy {1} to {2} and wait", "Copiez {1} vers {2} et attendez"),
    ("Your notebook was saved to GitHub", "Votre carnet a été enregistré sur GitHub"),
    ("The API returned an error for this request", "L'API a renvoyé une erreur pour cette requête"),
    ("Delete the selected cells from the current notebook", "Supprimer les cellules choisies"),
    (
        "Run every cell of the notebook from the top to the end",
        "Exécuter toutes les cellules du carnet du début à la fin",
    ),
    (
        "The kernel of {1} stopped after 30 seconds and must be restarted now",
        "Le noyau de {1} s'est arrêté après 30 secondes et doit être redémarré",
    ),
]
SOURCES = [s for s, _ in PAIRS]
REFERENCES = [r for _, r in PAIRS]
COPY = list(SOURCES)  # the copy baseline: bad French


def test_a_system_equal_to_the_references_is_perfect_and_beats_a_bad_baseline():
    r = report(SOURCES, REFERENCES, {"copy": COPY, "model": REFERENCES}, "copy")
    model, copy = r["systems"]["model"], r["systems"]["copy"]
    assert (model["bleu"], model["chrf"], model["exact_match"]) == (100.0, 100.0, 1.0)
    assert model["kept"]["share"] == 1.0 and model["bleu_without_placeholders"] == 100.0
    assert copy["chrf"] < 50 and copy["exact_match"] == 0.0
    for metric in ("bleu", "chrf"):
        test = model["bootstrap"][metric]
        assert test["p_value"] < 0.05
        assert test["mean"] == 100.0 and test["ci"] == 0.0
        assert copy["bootstrap"][metric]["p_value"] is None  # the baseline itself
        assert copy["bootstrap"][metric]["score"] == copy[metric]
    assert r["n"] == len(SOURCES) and r["baseline"] == "copy"
    assert json.loads(json.dumps(r)) == r  # plain JSON


def test_scores_are_cased_with_sacrebleus_defaults():
    lower = [ref.lower() for ref in REFERENCES]
    s = corpus_scores(lower, REFERENCES)
    assert s["bleu"] < 100 and s["chrf"] < 100  # "enregistrer" is not "Enregistrer"
    assert "case:mixed" in s["bleu_signature"] and "tok:13a" in s["bleu_signature"]
    assert "nc:6" in s["chrf_signature"] and "nw:0" in s["chrf_signature"]
    assert "case:mixed" in s["chrf_signature"]
    assert exact_match(lower, REFERENCES) == 0.0


def test_exact_match_collapses_whitespace_but_keeps_case():
    refs = ["Fermer tous les onglets", "Enregistrer"]
    assert exact_match(["  Fermer tous\tles  onglets ", "Enregistrer"], refs) == 1.0
    assert exact_match(["Fermer tous les onglets", "enregistrer"], refs) == 0.5
    assert exact_match(["Fermer tous lesonglets", "Enregistrer"], refs) == 0.5


@pytest.mark.parametrize(
    ("words", "bucket"),
    [(1, "1-3"), (3, "1-3"), (4, "4-6"), (6, "4-6"), (7, "7-10"), (10, "7-10"), (11, "11+")],
)
def test_length_buckets_on_their_boundaries(words, bucket):
    assert length_bucket(words) == bucket


def test_a_source_of_no_words_has_no_bucket():
    with pytest.raises(ValueError, match="at least one word"):
        length_bucket(0)


def test_chrf_by_length_scores_each_bucket_on_its_own_sentences():
    sources = ["one two three", "one two three four", "a b c d e f g h i j k"]
    refs = ["un deux trois", "un deux trois quatre", "Une longue phrase de onze mots"]
    outputs = ["un deux trois", "zzz", "Une longue phrase de onze mots"]
    found = chrf_by_length(sources, refs, outputs)
    assert list(found) == ["1-3", "4-6", "7-10", "11+"]
    assert found["1-3"] == {"chrf": 100.0, "n": 1}
    assert found["4-6"]["n"] == 1 and found["4-6"]["chrf"] < 10
    assert found["7-10"] == {"chrf": None, "n": 0}
    assert found["11+"] == {"chrf": 100.0, "n": 1}
    r = report(SOURCES, REFERENCES, {"copy": COPY}, "copy")
    by_length = r["systems"]["copy"]["chrf_by_length"]
    assert [by_length[b]["n"] for b in by_length] == [4, 4, 2, 2]  # PAIRS' English lengths


def test_bootstrap_by_length_tests_each_bucket_on_its_own_sentences():
    # "better" is perfect on the short strings (1-6 words) and copies the long ones: better
    # than copying in the short buckets, the same as copying in the long ones
    short = [len(s.split()) <= 6 for s in SOURCES]
    better = [r if keep else s for s, r, keep in zip(SOURCES, REFERENCES, short, strict=True)]
    found = bootstrap_by_length(SOURCES, REFERENCES, {"copy": COPY, "better": better}, "copy")
    assert {b: found[b]["n"] for b in found} == {"1-3": 4, "4-6": 4, "7-10": 2, "11+": 2}
    for bucket in ("1-3", "4-6"):
        chrf = found[bucket]["systems"]["better"]["chrf"]
        assert chrf["score"] == 100.0 and chrf["p_value"] < 0.05
        assert found[bucket]["systems"]["copy"]["chrf"]["p_value"] is None  # the baseline
    for bucket in ("7-10", "11+"):
        ours, theirs = (found[bucket]["systems"][n]["chrf"] for n in ("better", "copy"))
        # the same outputs: the same score and resamples (sacrebleu's p-value for identical
        # systems is 1 / (n_samples + 1), see paired_bootstrap)
        assert (ours["score"], ours["mean"]) == (theirs["score"], theirs["mean"])
    one = bootstrap_by_length(SOURCES[:1], REFERENCES[:1], {"copy": COPY[:1]}, "copy")
    assert list(one) == ["1-3"]  # a bucket with no sentence is left out


def test_placeholders_are_taken_out_whole():
    assert without_placeholders("Ouvrez {1} maintenant") == "Ouvrez maintenant"
    assert without_placeholders("{12} vers {2}.") == "vers ."
    assert without_placeholders("a{1}b") == "a b"  # no two words glued
    assert without_placeholders("{a} et {} restent") == "{a} et {} restent"


def test_placeholders_inflate_bleu_and_taking_them_out_removes_it():
    refs = ["{1} {2} Ouvrez le fichier", "{3} Fermez tous les onglets {4}"]
    # Words all wrong, placeholders right: every BLEU n-gram it earns is a placeholder's.
    wrong_words = ["{1} {2} xx yy zz", "{3} qq rr ss tt {4}"]
    r = report(["a b c", "d e f"], refs, {"wrong_words": wrong_words}, "wrong_words")
    row = r["systems"]["wrong_words"]
    assert row["bleu"] > 10 and row["bleu_without_placeholders"] == 0.0
    # Words all right, placeholders dropped: placeholders hide how good the words are.
    no_placeholders = ["Ouvrez le fichier", "Fermez tous les onglets"]
    r = report(["a b c", "d e f"], refs, {"bare": no_placeholders}, "bare")
    row = r["systems"]["bare"]
    assert row["bleu"] < 60 and row["bleu_without_placeholders"] == 100.0


def test_tokens_keep_names_numbers_and_placeholders_whole():
    text = "Open {1} in GitHub. Use C++ 3.11, file.txt and e-mail... l'API ({2})"
    assert tokens(text) == [
        *["Open", "{1}", "in", "GitHub", "Use", "C++", "3.11", "file.txt", "and"],
        *["e-mail", "l", "API", "{2}"],
    ]


def test_kept_tokens_are_the_names_numbers_and_placeholders_the_reference_keeps():
    source = "Open {1} in JupyterLab with Python 3.11 and the API, then Save the File"
    ref = "Ouvrez {1} dans JupyterLab avec Python 3.11 et l'API, puis enregistrez le fichier"
    # "Open" is the first word; "Save" and "File" are capitalised but translated.
    assert kept_tokens(source, ref) == {"{1}": 1, "JupyterLab": 1, "Python": 1, "3.11": 1, "API": 1}
    assert kept_tokens("GitHub works", "GitHub marche") == {"GitHub": 1}  # first, inner capital
    assert kept_tokens("URL", "URL") == {"URL": 1}  # first, all upper case
    assert kept_tokens("iPython", "iPython") == {"iPython": 1}
    assert kept_tokens("A cat", "A chat") == {}  # one capital letter, first word
    assert kept_tokens("Save the File", "Speichern Sie die Datei") == {}  # a German noun
    output = "Ouvrez {1} dans Jupyter avec Python 3.1 et l'API"
    assert kept_share([source], [ref], [output]) == {"share": 0.6, "n": 5}


def test_kept_share_counts_repeated_tokens_and_says_none_when_nothing_to_keep():
    src, ref = ["Copy {1} and {1} to {2}"], ["Copiez {1} et {1} vers {2}"]
    assert kept_share(src, ref, ["Copiez {1} et vers {2}"]) == {"share": 0.6667, "n": 3}
    assert kept_share(["close it"], ["fermez-le"], ["fermez"]) == {"share": None, "n": 0}


def test_repeats_are_three_of_one_word_case_ignored():
    assert repeats_share(["le chat et le chien et le rat", "a b c"]) == 0.5
    assert repeats_share(["Le le LE"]) == 1.0
    assert repeats_share(["le chat le chien"]) == 0.0  # twice is not a repeat
    assert repeats_share(["1 1 1", "{1} {1} {1}"]) == 0.0  # not words of letters
    r = report(
        ["one", "two"],
        ["un", "deux deux deux"],
        {"copy": ["one", "two"], "looping": ["un un un", "deux deux deux"]},
        "copy",
    )
    assert r["references"] == {"repeats": 0.5}
    assert r["systems"]["looping"]["repeats"] == 1.0 and r["systems"]["copy"]["repeats"] == 0.0


def test_the_bootstrap_is_seeded_whatever_the_environment(monkeypatch):
    monkeypatch.setenv("SACREBLEU_SEED", "none")  # sacrebleu's own: unseeded
    half = REFERENCES[:6] + COPY[6:]
    systems = {"copy": COPY, "half": half}
    first = paired_bootstrap(REFERENCES, systems, "copy")
    assert paired_bootstrap(REFERENCES, systems, "copy") == first
    other = paired_bootstrap(REFERENCES, systems, "copy", seed=7)
    assert other["systems"]["half"]["chrf"]["mean"] != first["systems"]["half"]["chrf"]["mean"]
    for metric in ("bleu", "chrf"):
        assert "seed:12345" in first["signatures"][metric]
        assert "bs:1000" in first["signatures"][metric]
    assert "seed:7" in other["signatures"]["bleu"]
    assert os.environ["SACREBLEU_SEED"] == "none"  # put back


def test_the_bootstrap_interval_holds_the_score_and_a_close_system_is_not_significant():
    one_word_off = [REFERENCES[0] + " !", *REFERENCES[1:]]
    systems = {"model": REFERENCES, "close": one_word_off}
    tests = paired_bootstrap(REFERENCES, systems, "model")["systems"]
    close = tests["close"]["chrf"]
    assert close["p_value"] > 0.05
    assert close["mean"] - 2 * close["ci"] <= close["score"] <= close["mean"] + 2 * close["ci"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: report([], [], {"a": []}, "a"), "need at least one sentence"),
        (lambda: report(["a", "b"], ["x"], {"s": ["x", "y"]}, "s"), "2 sources, 1 references"),
        (lambda: report(["a"], ["x"], {"s": ["x"]}, "dictionary"), "unknown baseline 'dictionary'"),
        (lambda: report(["a"], ["x"], {}, "s"), "at least one system"),
        (lambda: report(["a"], ["x"], {"s": ["x", "y"]}, "s"), "system 's' has 2 outputs for 1"),
        (lambda: report(["a", " "], ["x", "y"], {"s": ["x", "y"]}, "s"), "source 1 has no words"),
        (lambda: repeats_share([]), "at least one text"),
        (lambda: paired_bootstrap(["x"], {"s": ["x"]}, "s", seed=0), "seed and n_samples"),
        (lambda: kept_share(["a"], ["x"], ["x", "y"]), "got 2 outputs for 1 sentences"),
    ],
)
def test_bad_input_gets_a_one_line_message(call, message):
    with pytest.raises(ValueError, match=message) as caught:
        call()
    assert "\n" not in str(caught.value)


def test_the_baseline_is_the_one_named_not_the_first_and_the_interval_is_its_width():
    half = REFERENCES[:6] + COPY[6:]  # six sentences perfect, six copied
    systems = {"model": REFERENCES, "half": half, "copy": COPY}
    tests = paired_bootstrap(REFERENCES, systems, "copy")["systems"]
    assert tests["copy"]["chrf"]["p_value"] is None
    assert tests["model"]["chrf"]["p_value"] < 0.05 and tests["half"]["chrf"]["p_value"] < 0.05
    # A resample of 12 holds 6 +- 1.7 perfect sentences: chrF moves by about
    # 1.96 * sqrt(0.25 / 12) * (100 - 21) = 22 points either way (95%).
    assert 10 < tests["half"]["chrf"]["ci"] < 40
    assert tests["model"]["chrf"]["ci"] == 0.0  # every resample is perfect
