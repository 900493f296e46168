r"""What the deck shows about the models on real language, measured here once and cached.

    python -m attnlab language        # measure, write results/language.json

:mod:`attnlab.experiments.language` reads the cached file (the deck imports only that one:
reading the results loads no corpus and no model).
Every example comes from the corpus's **test** split (held out: no English string of it is
in the training split), is found by a rule written here (not picked by hand), and is stored
with its tokens and weights so the deck draws it without running a model:

* :func:`word_order_example`: RNNSearch (EN->FR) translating a test string right (its output
  equals the reference, word for word) while its alpha crosses: an output word attends to a
  source word further *left* than the previous output word did (Bahdanau's Fig. 3, the
  noun-adjective swap "default cell type" -> "type de cellule par défaut").
* :func:`verb_final_example`: the EN->DE Transformer writing the verb last where English has
  it first ("close all tabs" -> "alle tabs schließen"), and its cross-attention at that step.
* :func:`rare_words`: the EN->DE Transformer writing a compound in parts ("datenträger@@
  details") and looking rare words up where alpha points: counted over the test split, with
  the shortest string it translates right that holds a compound in parts.
* :func:`head_roles`: per encoder layer and head, over every test string: how often the head's
  strongest weight falls on the previous token, the token itself, the next token, the final
  <eos>, or elsewhere.
* :func:`alpha_vs_occlusion`: where alpha's argmax is not the source word the output depends
  on: occlusion (replace source word i by <unk>, teacher-forced, and measure the drop of
  log p(y_t)) against alpha, for RNNSearch on the test split.
* :func:`table2`: our test BLEU and training minutes beside Vaswani et al.'s Table 2.

:func:`run` recomputes everything.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from attnlab.decode import decode, read_back
from attnlab.experiments.language import MODELS, RESULTS_FILE, VASWANI_TABLE2
from attnlab.files import write_atomic
from attnlab.models.threads import torch_threads
from attnlab.text.corpus import load_corpus
from attnlab.text.vocab import JOINER, UNK, tokenize
from attnlab.training.checkpoints import load
from attnlab.training.evaluate import Dictionary, copy_baseline, score, signatures, translate_all

__all__ = [
    "alpha_vs_occlusion",
    "head_roles",
    "occlusion",
    "rare_words",
    "run",
    "scores",
    "table2",
    "verb_final_example",
    "word_order_example",
]


# --------------------------------------------------------------------------- scores
def scores(directory: Path | str | None = None) -> dict:
    """Test BLEU/chrF of every model and both baselines, per language, with signatures."""
    out: dict = {"signatures": signatures(), "baselines": {}, "models": {}}
    for lang in ("fr", "de"):
        test = load_corpus(lang)["test"]
        src, ref = [en for en, _ in test], [t for _, t in test]
        dictionary = Dictionary(load_corpus(lang)["train"])
        out["baselines"][f"en-{lang}"] = {
            "copy": _short(score(copy_baseline(src), ref)),
            "dictionary": _short(score(dictionary.translate_all(src), ref)),
        }
    for name, lang in MODELS.items():
        model = load(name, directory)
        test = load_corpus(lang)["test"]
        s = _short(score(translate_all(model, [en for en, _ in test]), [t for _, t in test]))
        card = model.card
        s.update(train_seconds=card["train_seconds"], train_cpu_seconds=card["train_cpu_seconds"])
        s.update(steps=card["steps"], pair=f"en-{lang}", exact_match=card["heldout_accuracy"])
        s.update(parameters=card["parameters"], kind=card["kind"])
        out["models"][name] = s
    return out


def _short(s: dict) -> dict:
    return {k: s[k] for k in ("bleu", "chrf", "n")}


# --------------------------------------------------------------------------- examples
def _argmax_path(alpha: np.ndarray) -> list[int]:
    """alpha (T, n) -> the source position each output step attends to most."""
    return [int(i) for i in alpha.argmax(axis=1)]


def _crosses(path: list[int]) -> bool:
    """True when some later output step attends further left than an earlier one."""
    return any(b < a for a, b in zip(path, path[1:], strict=False))


def _same_words(a: str, b: str) -> bool:
    return tokenize(a) == tokenize(b)


def _example(model, en: str, ref: str, layer: int = 0, head: int = 0) -> dict:
    d = decode(model, en)
    alpha = d.alpha[layer, head]  # (T, n)
    return {
        "source": en,
        "reference": ref,
        "output": d.text,
        "source_tokens": d.source_tokens,
        "output_tokens": d.output_tokens,
        "alpha": np.round(alpha, 4).tolist(),
        "split": "test",
        "held_out": True,
    }


def _words(text: str) -> int:
    return sum(t[0].isalpha() for t in tokenize(text))


def word_order_example(model=None, pairs=None) -> dict:
    """Bahdanau's Fig. 3 on a held-out string: among the test strings of 3 to 8 words that
    RNNSearch translates exactly right (word for word) while its alpha crosses (a later
    output word looks further left than an earlier one: a word-order swap) and every English
    token is some step's strongest weight, the one whose alpha is the most decided (highest
    mean of each step's largest weight)."""
    model = model or load("rnnsearch-en-fr")
    pairs = pairs if pairs is not None else load_corpus("fr")["test"]
    found = []
    for en, ref in pairs:
        if not 3 <= _words(en) <= 8:
            continue
        d = decode(model, en)
        real = d.alpha[0, 0][:, :-1]  # (T, n - 1): without the source <eos>
        path = _argmax_path(real)
        covered = len(set(path)) == real.shape[1]
        if _same_words(d.text, ref) and _crosses(path) and covered:
            found.append((float(real.max(axis=1).mean()), en, ref))
    if not found:
        raise LookupError("no test string is translated right with crossing alpha")
    _, en, ref = max(found, key=lambda f: (f[0], f[1]))
    example = _example(model, en, ref)
    example["candidates"] = len(found)
    return example


def _is_verb_final(en: str, de: str, output: str) -> bool:
    """The output is the reference word for word, and its last word is an infinitive
    (-en/-ern/-eln): the German verb at the end."""
    words = [w for w in tokenize(output) if w.isalpha()]
    return _same_words(output, de) and len(words) >= 2 and words[-1].endswith(("en", "ern", "eln"))


def verb_final_example(model=None, pairs=None) -> dict:
    """A German verb moving to the end: among the test strings of 3 or more English words
    that the EN->DE Transformer translates exactly right, ending in the verb, those where a
    cross-attention head of the last layer looks hardest at the first English word (the
    English verb) while writing the German verb; the one with the largest such weight."""
    model = model or load("transformer-en-de")
    pairs = pairs if pairs is not None else load_corpus("de")["test"]
    found = []
    for en, ref in pairs:
        if _words(en) < 3:
            continue
        d = decode(model, en)
        if not _is_verb_final(en, ref, d.text):
            continue
        t = max(i for i, w in enumerate(d.output_tokens) if w.isalpha())  # the verb's step
        last = d.alpha[-1, :, t]  # (h, n)
        heads = [h for h in range(last.shape[0]) if int(last[h].argmax()) == 0]
        if heads:
            best = max(heads, key=lambda h: last[h, 0])
            found.append((float(last[best, 0]), en, ref, best, t))
    if not found:
        raise LookupError("no verb-final test string found")
    _, en, ref, head, t = max(found, key=lambda f: (f[0], f[1]))
    layer = model.config.num_layers - 1
    example = _example(model, en, ref, layer=layer, head=head)
    example.update(layer=layer, head=head, verb_step=t, candidates=len(found))
    d = decode(model, en)
    example["cross_all"] = np.round(d.alpha, 4).tolist()  # (L, h, T, n)
    return example


def rare_words(model=None, pairs=None) -> dict:
    """How the EN->DE Transformer writes words it could not learn whole, over the test split:
    compounds written in parts (an output token ending in "@@", :mod:`attnlab.text.compounds`)
    and <unk> written, then looked up where alpha points (``Decoding.copied``).  Counts each
    (and how often the word it gave is in the reference), and keeps as the example the
    shortest string of two or more English words translated right word for word whose
    output holds a compound in parts (a part of letters only: not a hyphen's cut)."""
    model = model or load("transformer-en-de")
    pairs = pairs if pairs is not None else load_corpus("de")["test"]
    compounds = looked_up = looked_up_right = 0
    found = []
    for en, ref in pairs:
        d = decode(model, en)
        parts = any(t.endswith(JOINER) for t in d.output_tokens)
        compounds += parts
        ref_words = set(tokenize(ref))
        for token, copied in zip(d.output_tokens, d.copied, strict=True):
            looked_up += copied
            looked_up_right += copied and token in ref_words
        compound = any(t.endswith(JOINER) and t[: -len(JOINER)].isalpha() for t in d.output_tokens)
        if compound and _words(en) >= 2 and _same_words(d.text, ref):
            found.append((len(tokenize(en)), en, ref))
    if not found:
        raise LookupError("no test string is translated right with a compound in parts")
    _, en, ref = min(found)
    layer = model.config.num_layers - 1
    example = _example(model, en, ref, layer=layer)
    example.update(layer=layer, candidates=len(found))
    return {
        "example": example,
        "strings": len(pairs),
        "compound_outputs": compounds,
        "looked_up": looked_up,
        "looked_up_in_reference": looked_up_right,
    }


# --------------------------------------------------------------------------- heads
ROLES = ("previous", "self", "next", "first", "eos", "other")


def _role(i: int, j, n: int):
    """The role of key j (array) for query i in a source of n tokens (<eos> last)."""
    cases = [j == i - 1, j == i, (j == i + 1) & (j != n - 1), j == 0, j == n - 1]
    return np.select(cases, list(range(len(cases))), len(cases))


def _summary(frac: np.ndarray, chance: np.ndarray) -> str:
    """The role a head prefers most over chance, e.g. "previous 41% (chance 11%)"."""
    r = int(np.argmax(frac[:-1] / np.maximum(chance[:-1], 1e-9)))  # "other" excluded
    return f"{ROLES[r]} {frac[r]:.0%} (chance {chance[r]:.0%})"


def head_roles(model=None, pairs=None) -> dict:
    """Per encoder layer and head: the fraction of (string, query position) where the
    strongest self-attention weight falls on the previous token, itself, the next token,
    the first token, the final <eos>, or elsewhere (queries: the real tokens, <eos>
    excluded; the first matching role counts).  ``chance``: the same fractions if the
    strongest weight fell on a key drawn uniformly."""
    model = model or load("transformer-en-de")
    lang = "de" if model.card and model.card.get("task") == "en-de" else "fr"
    pairs = pairs if pairs is not None else load_corpus(lang)["test"]
    L, h = model.config.num_layers, model.config.num_heads
    counts, chance = np.zeros((L, h, len(ROLES))), np.zeros(len(ROLES))
    for en, _ in pairs:
        src = model.source_ids(model.prepare(en))  # (1, n)
        n = src.shape[1]
        with torch.no_grad():
            model.run_encoder(src, torch.tensor([n]))  # each attention keeps its weights
        w = torch.stack([lay.self_attn.alpha for lay in model.encoder_layers], 1)[0].numpy()
        for i in range(n - 1):  # query i (not the <eos>)
            role = _role(i, w[:, :, i].argmax(axis=-1), n)  # (L, h): role of the top key
            counts += np.eye(len(ROLES))[role]
            chance += np.bincount(_role(i, np.arange(n), n), minlength=len(ROLES)) / n
    frac = counts / counts.sum(axis=-1, keepdims=True)
    return {
        "model": model.card["name"] if model.card else model.kind,
        "roles": list(ROLES),
        "strings": len(pairs),
        "fractions": np.round(frac, 3).tolist(),  # (L, h, roles)
        "chance": np.round(chance / chance.sum(), 3).tolist(),  # (roles,)
        "summary": [
            [_summary(frac[lay, hd], chance / chance.sum()) for hd in range(h)] for lay in range(L)
        ],
    }


# --------------------------------------------------------------------------- occlusion
def _log_probs(model, src: torch.Tensor, ids: list[int]) -> np.ndarray:
    """log p(y_t | y_<t, x) of the output ``ids`` (teacher forced): (T,)."""
    with torch.no_grad():
        logits, _, _ = read_back(model, src, torch.tensor([src.shape[1]]), [ids])
    logp = torch.log_softmax(logits[0, : len(ids)], dim=-1)
    return logp[torch.arange(len(ids)), ids].numpy()


def occlusion(model, text: str) -> dict:
    """For each output step t and source word i: the drop of log p(y_t) when word i is
    replaced by <unk> (the output kept fixed): (T, n - 1), and alpha (T, n)."""
    d = decode(model, text)
    src = model.source_ids(model.prepare(text))
    v = model.tgt_vocab  # a copied word was written as <unk> (attnlab.decode.copy_unknown)
    ids = [v.unk if c else v.stoi[w] for w, c in zip(d.output_tokens, d.copied, strict=True)]
    base = _log_probs(model, src, ids)
    drops = []
    for i in range(src.shape[1] - 1):
        masked = src.clone()
        masked[0, i] = model.src_vocab.unk
        drops.append(base - _log_probs(model, masked, ids))
    return {"decoding": d, "drop": np.stack(drops, axis=1), "alpha": d.alpha[0, 0]}


def alpha_vs_occlusion(model=None, pairs=None) -> dict:
    """How often alpha's argmax is the word whose occlusion hurts most, over the test split,
    and the clearest counter-example: a step whose output is a word of the reference, where
    alpha's favourite word barely matters (its occlusion costs < 0.1 nats) while another
    word's costs the most (> 1 nat); outputs equal to the reference first, then the largest
    lead of alpha's favourite over the word that matters.  Words read as <unk> are left out
    of the example (occluding them changes nothing)."""
    model = model or load("rnnsearch-en-fr")
    pairs = pairs if pairs is not None else load_corpus("fr")["test"]
    agree = total = 0
    best = None
    for en, ref in pairs:
        if len(tokenize(en)) < 2:
            continue
        o = occlusion(model, en)
        alpha = o["alpha"][:, :-1]  # (T, n - 1) without <eos>
        right = _same_words(o["decoding"].text, ref)
        for t, word in enumerate(o["decoding"].output_tokens):
            a, k = int(alpha[t].argmax()), int(o["drop"][t].argmax())
            agree, total = agree + (a == k), total + 1
            gap = float(alpha[t, a] - alpha[t, k])  # how much more alpha gives the wrong word
            known = UNK not in (o["decoding"].source_tokens[a], o["decoding"].source_tokens[k])
            clear = known and a != k and o["drop"][t, a] < 0.1 and o["drop"][t, k] > 1.0
            clear = clear and word[0].isalpha() and word in tokenize(ref)  # a real word, right
            if clear and (best is None or (right, gap) > best[:2]):
                best = (right, gap, en, ref, t, a, k)
    result = {"agreement": round(agree / max(total, 1), 3), "steps": total}
    if best is not None:
        _, _, en, ref, t, a, k = best
        o = occlusion(model, en)
        result["example"] = {
            **_example(model, en, ref),
            "step": t,
            "alpha_argmax": a,
            "occlusion_argmax": k,
            "occlusion": np.round(o["drop"], 3).tolist(),  # (T, n - 1) nats
        }
    return result


# --------------------------------------------------------------------------- Table 2
def table2(model_scores: dict) -> dict:
    """Our Transformers' test BLEU and training minutes (a 2-core CPU, two threads) beside
    Vaswani et al.'s Table 2 (BLEU on newstest2014, days on 8 GPUs).  Not comparable
    scores: other test sets, far shorter strings, lower-cased; the compute is the point."""
    ours = {}
    for pair in ("en-de", "en-fr"):
        s = model_scores[f"transformer-{pair}"]
        # the wall-clock time of `make train` on both cores of the machine
        ours[pair] = {"bleu": s["bleu"], "chrf": s["chrf"]}
        ours[pair]["train_minutes"] = round(s["train_seconds"] / 60, 1)
    return {
        "ours": ours,
        "vaswani": VASWANI_TABLE2,
        "hardware": "a 2-core laptop-class CPU (two threads)",
        "note": "different test sets (short interface strings, lower-cased, our test split) "
        "against newstest2014: the scores are not comparable, the compute is the point",
    }


# --------------------------------------------------------------------------- run
def run(directory: Path | str | None = None, out: Path | str | None = None) -> dict:
    """Measure everything above with the checkpoints in ``directory`` (default: shipped) and
    write the results (default: ``results/language.json``, replaced atomically)."""
    with torch_threads(1):
        s = scores(directory)
        shipped = lambda name: load(name, directory)  # noqa: E731
        results = {
            "scores": s,
            "word_order": word_order_example(shipped("rnnsearch-en-fr")),
            "verb_final": verb_final_example(shipped("transformer-en-de")),
            "rare_words": rare_words(shipped("transformer-en-de")),
            "head_roles": {
                name: head_roles(shipped(name))
                for name in ("transformer-en-de", "transformer-en-fr")
            },
            "alpha_vs_occlusion": alpha_vs_occlusion(shipped("rnnsearch-en-fr")),
            "table2": table2(s["models"]),
        }
    path = Path(out) if out is not None else RESULTS_FILE
    write_atomic(path, json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    return results
