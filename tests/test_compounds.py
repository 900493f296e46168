"""German compounds split into parts a word model can write (attnlab.text.compounds), and the
"@@" joiner that glues them back (attnlab.text.vocab.detokenize)."""

from attnlab.text.compounds import CompoundSplitter
from attnlab.text.vocab import detokenize, tokenize
from attnlab.training.config import recipe
from attnlab.training.translation import segmented

WORDS = ["datenträger", "details", "kategorie", "manager", "status", "abhängigkeit"] * 3
WORDS += ["benutzername"] * 50 + ["benutzer", "name"] * 2  # a frequent compound


def test_a_compound_splits_into_known_parts():
    s = CompoundSplitter(WORDS)
    assert s.split("datenträgerdetails") == ["datenträger@@", "details"]
    assert s.split("kategoriemanager") == ["kategorie@@", "manager"]
    assert s.split("abhängigkeitsstatus") == ["abhängigkeits@@", "status"]  # linking "s"


def test_words_without_a_better_cut_stay_whole():
    s = CompoundSplitter(WORDS)
    assert s.split("benutzername") == ["benutzername"]  # seen more often than its parts
    assert s.split("details") == ["details"]
    assert s.split("zyxwvutsrqpo") == ["zyxwvutsrqpo"]  # no known parts
    assert s.split("{1}") == ["{1}"] and s.split("42") == ["42"]


def test_hyphenated_words_are_cut_at_their_hyphens():
    s = CompoundSplitter(WORDS)
    assert s.split("workflow-historie") == ["workflow-@@", "historie"]
    assert detokenize(s.split("workflow-historie")) == "workflow-historie"


def test_segmenting_and_detokenizing_give_the_text_back():
    s = CompoundSplitter(WORDS)
    text = "Datenträgerdetails (Kategoriemanager) anzeigen."
    seg = s.segment(text)
    assert seg == "datenträger@@ details ( kategorie@@ manager ) anzeigen ."
    assert tokenize(seg) == seg.split()  # a part is one token
    assert detokenize(tokenize(seg)) == "datenträgerdetails (kategoriemanager) anzeigen."


def test_a_lone_joiner_is_punctuation_not_a_part():
    assert tokenize("a @@ b") == ["a", "@", "@", "b"]
    assert detokenize(["a", "@", "@", "b"]) == "a @ @ b"


def test_only_the_german_recipe_splits_compounds():
    pairs = [("Volume Details", "Datenträgerdetails")] + [("x", w) for w in WORDS]
    assert recipe("transformer-en-de").train.split_compounds
    assert segmented(pairs, recipe("transformer-en-de").train)[0] == (
        "Volume Details",
        "datenträger@@ details",
    )
    assert segmented(pairs, recipe("transformer-en-fr").train) == pairs
