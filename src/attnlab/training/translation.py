r"""The lecture's models on real language: English -> French and English -> German.

    python -m attnlab.cli --language all --replace-shipped   # what `make train` runs
    python -m attnlab.cli --language rnnsearch-en-fr --out my-models

Each recipe (:data:`attnlab.training.config.LANGUAGE_RECIPES`) trains a word-level model on the
corpus's train split (:mod:`attnlab.text.corpus`) for a fixed step budget on two threads, measures
chrF on the dev split every ``eval_every`` steps and keeps the best weights, then scores the
test split with sacrebleu (BLEU and chrF, :mod:`attnlab.training.evaluate`) beside the two baselines,
and saves the weights in fp16 with a card (:func:`attnlab.training.checkpoints.save`) holding the
scores, the signatures, the training time and the corpus counts.

Vocabularies come from the train split only: English words seen at least
``src_min_count`` times (rarer ones are read as ``<unk>``, so the model learns what an
unknown word is), target words seen at least ``tgt_min_count`` times.

Unknown words (``recipe.copy_unknown``, the attention models; Luong et al. 2015): each target
word is aligned to the English word it translates (:func:`align_targets`: the same word, or
the word-by-word dictionary's translation of it), and a target word aligned to a word the
model reads as ``<unk>`` is learned as ``<unk>`` (:func:`encode_word_pairs`), and so is one
whose English word word dropout made ``<unk>`` (:func:`copy_targets`).  The model keeps the
dictionary's entries for the English words it cannot read (``model.unk_lexicon``, on its
card), and :func:`attnlab.decode.copy_unknown` writes, in place of each ``<unk>``, the entry
of the source word the decoder's attention weighs most, or that word itself.
"""

from __future__ import annotations

import copy
import time
from collections import deque
from dataclasses import asdict
from pathlib import Path

import torch
from torch import nn
from tqdm.auto import tqdm

from attnlab.models.base import Seq2SeqModel
from attnlab.models.registry import build_model
from attnlab.text.compounds import CompoundSplitter
from attnlab.text.corpus import load_corpus
from attnlab.text.vocab import JOINER, Vocab, tokenize
from attnlab.training import checkpoints
from attnlab.training.batches import padded
from attnlab.training.config import LANGUAGE_RECIPES, LanguageRecipe
from attnlab.training.evaluate import Dictionary, copy_baseline, score, translate_all, vocab_counts
from attnlab.training.loop import train_step

__all__ = [
    "align_targets",
    "average_states",
    "baselines",
    "build_vocabs",
    "copy_targets",
    "encode_word_pairs",
    "exact_match",
    "lexicon_pairs",
    "segmented",
    "train",
    "train_and_save",
    "unk_lexicon",
]


def build_vocabs(pairs: list[tuple[str, str]], recipe: LanguageRecipe) -> tuple[Vocab, Vocab]:
    """Word vocabularies of the training pairs (most frequent first, ties alphabetical)."""

    def vocab(texts: list[str], least: int) -> Vocab:
        counts = vocab_counts(texts)
        words = sorted((w for w, c in counts.items() if c >= least), key=lambda w: (-counts[w], w))
        return Vocab(words, level="word")

    src = vocab([en for en, _ in pairs], recipe.src_min_count)
    return src, vocab([t for _, t in pairs], recipe.tgt_min_count)


def align_targets(pairs: list[tuple[str, str]], table: dict[str, str]) -> list[list[int]]:
    """For each target word y_j of each pair, the position i of the English word x_i it
    translates: x_i == y_j, or table[x_i] == y_j (a word-by-word dictionary); the first such
    i not yet taken by an earlier y (else the first such), -1 when there is none."""
    out = []
    for en, tgt in pairs:
        xs, taken, row = tokenize(en), set(), []
        for y in tokenize(tgt):
            hits = [i for i, x in enumerate(xs) if y in (x, table.get(x))]
            i = next((i for i in hits if i not in taken), hits[0] if hits else -1)
            taken.add(i)
            row.append(i)
        out.append(row)
    return out


def encode_word_pairs(
    pairs: list[tuple[str, str]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    align: list[list[int]] | None = None,
) -> dict:
    """Padded ids like :func:`attnlab.training.batches.encode_pairs`, unknown words as <unk>:
    src (N, n) = x_1..x_n <eos>, src_len (N,), tgt_in (N, T) = <sos> y.., tgt_out = y.. <eos>.

    ``align`` (:func:`align_targets`): a target word aligned to an English word outside
    ``src_vocab`` (read as <unk>) becomes <unk> too, so the model learns to write <unk>
    where it must look a word up or copy it; and ``align`` (N, T) is returned, padded with -1.
    """
    srcs = [src_vocab.encode(en, unknown="unk") + [src_vocab.eos] for en, _ in pairs]
    tgts = [tgt_vocab.encode(t, unknown="unk") for _, t in pairs]
    if align is None:
        return padded(srcs, tgts, tgt_vocab)
    for k, (x, a) in enumerate(zip(srcs, align, strict=True)):
        unread = [i >= 0 and x[i] == src_vocab.unk for i in a]  # y_j's English word is <unk>
        tgts[k] = [tgt_vocab.unk if u else y for y, u in zip(tgts[k], unread, strict=True)]
    data = padded(srcs, tgts, tgt_vocab)
    data["align"] = torch.full(data["tgt_out"].shape, -1, dtype=torch.long)  # (N, T)
    for k, a in enumerate(align):
        data["align"][k, : len(a)] = torch.tensor(a, dtype=torch.long)
    return data


def segmented(pairs: list[tuple[str, str]], recipe: LanguageRecipe) -> list[tuple[str, str]]:
    """``pairs`` with each target's compounds split into parts (``recipe.split_compounds``,
    :class:`attnlab.text.compounds.CompoundSplitter` counting these targets' words), else as
    they are."""
    if not recipe.split_compounds:
        return pairs
    splitter = CompoundSplitter.from_texts(t for _, t in pairs)
    return [(en, splitter.segment(t)) for en, t in pairs]


def unk_lexicon(table: dict[str, str], src_vocab: Vocab) -> dict[str, str]:
    """The dictionary's entries for the English words ``src_vocab`` reads as <unk> (words
    seen too rarely in training), sorted: what a model's written <unk> becomes."""
    return {e: table[e] for e in sorted(table) if e not in src_vocab.stoi}


def lexicon_pairs(
    pairs: list[tuple[str, str]], least: int, dictionary: Dictionary | None = None
) -> list[tuple[str, str]]:
    """(English word, its translation) for each word seen >= ``least`` times in ``pairs``
    whose dictionary translation (IBM Model 1, :class:`attnlab.training.evaluate.Dictionary`, learned
    from ``pairs`` unless given) has t(f | e) >= 0.5, sorted; none when ``least`` is 0."""
    if least <= 0:
        return []
    counts, d = vocab_counts([en for en, _ in pairs]), dictionary or Dictionary(pairs)
    return sorted(
        (e, f)
        for e, f in d.table.items()
        if counts[e] >= least and d.prob[e] >= 0.5 and e.isalpha() and not f.endswith(JOINER)
    )


def _batch(data: dict, idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
    src_len = data["src_len"][idx]
    tgt_out = data["tgt_out"][idx]
    n, T = int(src_len.max()), int((tgt_out != 0).sum(dim=1).max())
    align = data["align"][idx, :T] if "align" in data else None
    return data["src"][idx, :n], src_len, data["tgt_in"][idx, :T], tgt_out[:, :T], align


def _drop_words(ids: torch.Tensor, p: float, gen: torch.Generator) -> torch.Tensor:
    """ids with each real word (id > 3: not <pad> <sos> <eos> <unk>) made <unk> with prob p."""
    if p <= 0:
        return ids
    drop = (torch.rand(ids.shape, generator=gen) < p) & (ids > 3)
    return ids.masked_fill(drop, 3)  # <unk> = 3


def copy_targets(
    dropped: torch.Tensor,
    tgt_in: torch.Tensor,
    tgt_out: torch.Tensor,
    align: torch.Tensor,
    unk: int = 3,
) -> tuple[torch.Tensor, torch.Tensor]:
    """tgt_in, tgt_out with <unk> where the target word's English word was made <unk>.

    dropped (B, n): which source words word dropout made <unk>; align (B, T): the source
    position of each target word's English word, -1 for none (:func:`align_targets`).  Such
    a y_t becomes <unk> in tgt_out (B, T) and, one step later, in tgt_in."""
    has = align >= 0
    hit = has & dropped.gather(1, align.clamp(min=0))  # (B, T): dropped[b, align[b, t]]
    tgt_out = tgt_out.masked_fill(hit, unk)
    tgt_in = tgt_in.clone()
    tgt_in[:, 1:] = tgt_in[:, 1:].masked_fill(hit[:, :-1], unk)  # y_t fed back at step t + 1
    return tgt_in, tgt_out


def _lr_factor(recipe: LanguageRecipe):
    def factor(step: int) -> float:  # linear warm-up, then linear decay to 1/10
        if step < recipe.warmup:
            return (step + 1) / recipe.warmup
        done = (step - recipe.warmup) / max(1, recipe.max_steps - recipe.warmup)
        return 1.0 - 0.9 * min(1.0, done)

    return factor


def _setup(recipe: LanguageRecipe, corpus: dict) -> tuple[Seq2SeqModel, dict, int]:
    """The untrained model (its ``unk_lexicon`` set) and the encoded training pairs."""
    train_pairs = segmented(corpus["train"], recipe)
    dictionary = Dictionary(train_pairs)  # IBM Model 1, learned once: lexicon and alignment
    pairs = train_pairs + lexicon_pairs(train_pairs, recipe.lexicon_min, dictionary)
    src_vocab, tgt_vocab = build_vocabs(train_pairs, recipe)
    model = build_model(recipe.kind, src_vocab, tgt_vocab, recipe.config)
    align = None
    if recipe.copy_unknown:  # learn <unk> for a word it cannot read; look that word up
        table = dictionary.table
        align = align_targets(pairs, table)
        model.unk_lexicon = unk_lexicon(table, src_vocab)
    return model, encode_word_pairs(pairs, src_vocab, tgt_vocab, align), len(pairs)


def _batch_with_dropout(
    data: dict, idx: torch.Tensor, p: float, gen: torch.Generator
) -> tuple[torch.Tensor, ...]:
    """A training batch, words dropped to <unk> (source and decoder input) with prob ``p``."""
    src, src_len, tgt_in, tgt_out, align = _batch(data, idx)
    read = _drop_words(src, p, gen)
    if align is not None:  # a target word whose English word was dropped: write <unk>
        tgt_in, tgt_out = copy_targets(read != src, tgt_in, tgt_out, align)
    return read, src_len, _drop_words(tgt_in, p, gen), tgt_out


def train(recipe: LanguageRecipe, corpus: dict, progress: bool = True) -> tuple[Seq2SeqModel, dict]:
    """Train ``recipe`` on ``corpus`` (from :func:`attnlab.text.corpus.load_corpus`); returns the
    model with the best dev chrF and its history (step, loss, dev_chrf, seconds)."""
    torch.manual_seed(recipe.seed)
    model, data, n_pairs = _setup(recipe, corpus)
    opt = torch.optim.AdamW(model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_factor(recipe))
    loss_fn = nn.CrossEntropyLoss(ignore_index=0, label_smoothing=recipe.label_smoothing)
    gen = torch.Generator().manual_seed(recipe.seed)
    history: dict = {"step": [], "loss": [], "dev_chrf": [], "seconds": []}
    best, best_state, losses, start = -1.0, None, [], time.perf_counter()
    recent: deque = deque(maxlen=max(1, recipe.average_last))  # the last measured weights
    cpu_start = time.process_time()  # CPU seconds: what the run takes on an idle core
    bar = _bar(recipe, progress)
    for step in range(1, recipe.max_steps + 1):
        model.train()
        idx = torch.randint(n_pairs, (recipe.batch_size,), generator=gen)
        batch = _batch_with_dropout(data, idx, recipe.word_dropout, gen)
        losses.append(train_step(model, batch, opt, sched, loss_fn, recipe.clip))
        if bar is not None:
            bar.update(1)
        if step % recipe.eval_every == 0 or step == recipe.max_steps:
            chrf = _dev_chrf(model, corpus["dev"])
            recent.append(copy.deepcopy(model.state_dict()))
            for key, value in zip(history, (step, sum(losses) / len(losses), chrf), strict=False):
                history[key].append(round(value, 4) if isinstance(value, float) else value)
            history["seconds"].append(round(time.perf_counter() - start, 1))
            losses = []
            if bar is not None:
                bar.set_postfix(loss=f"{history['loss'][-1]:.2f}", dev_chrf=f"{chrf:.1f}")
            if chrf > best:
                best, best_state = chrf, copy.deepcopy(model.state_dict())
    if bar is not None:
        bar.close()
    history["best_step"] = history["step"][history["dev_chrf"].index(best)]
    if len(recent) > 1:  # Vaswani et al. 6.1: the mean of the last checkpoints, if better
        model.load_state_dict(average_states(list(recent)))
        history["averaged"] = {"last": len(recent), "dev_chrf": _dev_chrf(model, corpus["dev"])}
        if history["averaged"]["dev_chrf"] > best:
            best_state, history["best_step"] = model.state_dict(), history["step"][-1]
    history["seconds_total"] = round(time.perf_counter() - start, 1)
    history["cpu_seconds_total"] = round(time.process_time() - cpu_start, 1)
    model.load_state_dict(best_state)
    model.eval()
    return model, history


def _dev_chrf(model: Seq2SeqModel, dev: list[tuple[str, str]]) -> float:
    model.eval()
    return score(translate_all(model, [en for en, _ in dev]), [t for _, t in dev])["chrf"]


def average_states(states: list[dict]) -> dict:
    """The element-wise mean of model weights (``state_dict``s of one model)."""
    return {k: torch.stack([s[k] for s in states]).mean(dim=0) for k in states[0]}


def _bar(recipe: LanguageRecipe, progress: bool):
    if not progress:
        return None
    desc = f"{recipe.kind} en-{recipe.lang}"
    return tqdm(total=recipe.max_steps, desc=desc, unit="step", mininterval=2.0)


def baselines(corpus: dict) -> dict:
    """Test-split BLEU/chrF of copying the source and of the word-by-word dictionary."""
    src, ref = [en for en, _ in corpus["test"]], [t for _, t in corpus["test"]]
    dictionary = Dictionary(corpus["train"])
    return {
        "copy": score(copy_baseline(src), ref),
        "dictionary": score(dictionary.translate_all(src), ref),
    }


def _card(name: str, recipe: LanguageRecipe, model, history: dict, corpus: dict) -> dict:
    src, ref = [en for en, _ in corpus["test"]], [t for _, t in corpus["test"]]
    test = score(translate_all(model, src), ref)
    return {
        "name": name,
        "task": f"en-{recipe.lang}",
        "tokens": "word",
        "config": dict(recipe.config),
        "train": asdict(recipe),
        "src_vocab": model.src_vocab.to_list(),
        "tgt_vocab": model.tgt_vocab.to_list(),
        "unk_lexicon": model.unk_lexicon,  # rare English word -> its dictionary translation
        "seed": recipe.seed,
        "steps": history["step"][-1],
        "best_step": history["best_step"],
        "averaged": history.get("averaged"),  # the mean of the last checkpoints, measured
        "train_seconds": history["seconds_total"],  # wall clock, on a machine shared or not
        "train_cpu_seconds": history["cpu_seconds_total"],  # of all the training threads
        "train_threads": recipe.threads,
        "corpus": {split: len(pairs) for split, pairs in corpus.items()},
        "heldout_accuracy": exact_match(model, corpus["test"]),  # whole output right
        "test_bleu": test["bleu"],
        "test_chrf": test["chrf"],
        "test_examples": test["n"],
        "bleu_signature": test["bleu_signature"],
        "chrf_signature": test["chrf_signature"],
        "baselines": {k: {m: v[m] for m in ("bleu", "chrf")} for k, v in baselines(corpus).items()},
        "history": {k: history[k] for k in ("step", "loss", "dev_chrf", "seconds")},
        "parameters": model.num_parameters(),
        "weights_dtype": "float16",
        "torch_version": torch.__version__,
    }


def exact_match(model: Seq2SeqModel, pairs: list[tuple[str, str]]) -> float:
    """The fraction of ``pairs`` whose greedy output has exactly the reference's tokens."""
    outputs = translate_all(model, [en for en, _ in pairs])
    right = sum(
        tokenize(out) == tokenize(ref) for out, (_, ref) in zip(outputs, pairs, strict=True)
    )
    return round(right / max(1, len(pairs)), 4)


def train_and_save(name: str, out_dir: Path, progress: bool = True) -> Path:
    """Train the recipe ``name``, score it, and save it (fp16 weights + card) in ``out_dir``."""
    recipe = LANGUAGE_RECIPES[name]
    threads = torch.get_num_threads()
    torch.set_num_threads(recipe.threads)
    try:
        corpus = load_corpus(recipe.lang)
        model, history = train(recipe, corpus, progress)
        model = model.half().float()  # as it is stored (fp16) and loaded: the card scores that
        card = _card(name, recipe, model, history, corpus)
    finally:
        torch.set_num_threads(threads)
    half = copy.deepcopy(model).half()  # fp16 storage: load() copies it back into fp32
    path = checkpoints.save(half, name, card, directory=out_dir)
    print(
        f"{name}: {card['steps']} steps (best {card['best_step']}), {card['train_seconds']} s, "
        f"test BLEU {card['test_bleu']} chrF {card['test_chrf']} -> {path}"
    )
    return path


if __name__ == "__main__":  # not the command line: attnlab.cli imports this module
    raise SystemExit("the command line is attnlab.cli: python -m attnlab.cli --help")
