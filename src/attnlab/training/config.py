"""Recipes: how each shipped model is trained (a step budget, a seed), and what it is called.

    >>> model_cfg, train_cfg = default_configs("rnnsearch", "dates")
    >>> train_cfg.max_steps, train_cfg.target
    (3000, 0.995)

Model kinds are the keys of :data:`attnlab.models.registry.MODEL_KINDS`; :data:`SHIPPED_RECIPES`
maps each shipped checkpoint's file name to the (kind, task) it is trained as.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from attnlab.models.base import Seq2SeqModel
from attnlab.models.registry import build_model, check_kind
from attnlab.models.rnn import RNNConfig
from attnlab.models.transformer import TransformerConfig
from attnlab.text.tasks import Task, get_task

__all__ = [
    "LANGUAGE_RECIPES",
    "LanguageRecipe",
    "SHIPPED_RECIPES",
    "TEST_SEED_OFFSET",
    "VALID_SEED_OFFSET",
    "TrainConfig",
    "checkpoint_name",
    "default_configs",
    "new_model",
]

#: Seeds of the example sets, offset from the training seed so that they never coincide.
VALID_SEED_OFFSET, TEST_SEED_OFFSET = 1_000_000, 2_000_000

#: Shipped dates checkpoints -> (kind, task, changes to the recipe's model config);
#: ``python -m attnlab.cli --all`` retrains them (the length experiment,
#: :mod:`attnlab.experiments.length`, trains the ``reverse`` ones).  The four score models
#: differ from ``rnnsearch-dates`` in their score only (and s_t as wide as h_i, 128, which
#: the dot scores need).
SHIPPED_RECIPES: dict[str, tuple[str, str, dict]] = {
    "rnnsearch-dates": ("rnnsearch", "dates", {}),
    "transformer-dates": ("transformer", "dates", {}),
    "rnnenc-dates": ("rnnencdec", "dates", {}),
    **{
        f"rnnsearch-dates-{name}": ("rnnsearch", "dates", {"score": score, "dec_hidden": 128})
        for name, score in (
            ("dot", "dot"),
            ("scaled", "scaled_dot"),
            ("general", "general"),
            ("additive", "additive"),
        )
    },
}


@dataclass
class TrainConfig:
    """How to train (a step budget, not a time budget)."""

    lr: float = 1e-2  # Adam's learning rate
    batch_size: int = 128
    max_steps: int = 3000  # the budget: stop here if the target is not reached
    eval_every: int = 50  # steps between two measurements of held-out exact match
    target: float | None = 0.995  # early stop at this held-out exact match (None: never)
    warmup: int = 0  # steps of linear learning-rate warm-up
    decay: bool = False  # then decay the learning rate linearly to lr / 10 at max_steps
    clip: float = 1.0  # gradient norm clipping
    seed: int = 0
    # torch threads.  One: at this size a second thread gains ~20% on an idle 2-core machine
    # but costs 5-15x when another process shares the cores (measured); the last digits of
    # the results depend on it, so it is part of the recipe.
    threads: int = 1
    n_train: int = 50_000  # training examples generated from the seed
    n_valid: int = 1000  # held-out examples measured during training
    n_test: int = 2000  # fresh examples measured once at the end (the card's accuracy)
    bucket: bool = False  # draw each batch among examples of similar length (less padding)
    train_length: list[int] = field(default_factory=lambda: [5, 60])  # reverse: lengths lo..hi
    test_length: list[int] = field(default_factory=lambda: [5, 60])  # reverse: held-out lengths

    def check(self) -> TrainConfig:
        """ValueError unless every count is a whole number >= 1 (``warmup`` >= 0), the seed
        in 0..2**32-1, ``lr`` positive and ``target`` None or in (0, 1]; returns self."""
        counts = ("batch_size", "max_steps", "eval_every", "threads", "n_train", "n_valid")
        for key in (*counts, "n_test", "warmup", "seed"):
            value, least = getattr(self, key), 0 if key in ("warmup", "seed") else 1
            if type(value) is not int or value < least:
                raise ValueError(
                    f"TrainConfig.{key} must be a whole number >= {least}; got {value!r}"
                )
        if not 0 <= self.seed < 2**32:
            raise ValueError(f"TrainConfig.seed must be in 0..2**32-1; got {self.seed!r}")
        t = self.target
        if t is not None and not (type(t) in (int, float) and 0 < t <= 1):  # nan fails too
            raise ValueError(f"TrainConfig.target must be None or in (0, 1]; got {t!r}")
        if not (type(self.lr) in (int, float) and 0 < self.lr < 1e3):
            raise ValueError(f"TrainConfig.lr must be a positive number; got {self.lr!r}")
        return self

    def task_kwargs(self, task: str, split: str) -> dict:
        if task != "reverse":
            return {}
        return {"length": tuple(self.train_length if split == "train" else self.test_length)}


def default_configs(kind: str, task: str) -> tuple[object, TrainConfig]:
    """The model config and training config the shipped models use."""
    check_kind(kind)
    t = get_task(task)
    lens = {"max_src_len": t.max_src_len, "max_tgt_len": t.max_tgt_len}
    if kind == "rnnsearch":
        cfg = RNNConfig(**lens)
        train = TrainConfig(lr=1e-2, max_steps=3000)
    elif kind == "rnnencdec":
        cfg = RNNConfig(enc_hidden=128, dec_hidden=128, **lens)
        # A fixed budget, no early stop: twice the 100 steps RNNSearch needs on dates; the
        # card reports what it reaches (about 0.9 where RNNSearch has 0.999).
        train = TrainConfig(lr=1e-2, max_steps=200, target=None)
    else:
        cfg = TransformerConfig(**lens)
        # 0.995 on 1000 held-out dates left it at 0.993 on 2000 fresh ones: aim higher.
        train = TrainConfig(lr=3e-3, warmup=100, decay=True, max_steps=1500, target=0.999)
    if t.name == "reverse":
        # The length experiment: the same fixed budget for every model (~90 s each on an
        # idle 2-core machine), batches of similar lengths, no early stop.
        train = replace(
            train, max_steps=1000, eval_every=100, n_valid=300, target=None, bucket=True
        )
    return cfg, train


def new_model(kind: str, task: str | Task, config: object | None = None) -> Seq2SeqModel:
    """A fresh, untrained model of ``kind`` for ``task`` (default: the shipped recipe's sizes)."""
    check_kind(kind)
    t = get_task(task) if isinstance(task, str) else task
    config = config if config is not None else default_configs(kind, t.name)[0]
    return build_model(kind, t.src_vocab, t.tgt_vocab, config)


def checkpoint_name(kind: str, task: str) -> str:
    """The file name a (kind, task) is saved under: the shipped name, else ``KIND-TASK``."""
    for name, recipe in SHIPPED_RECIPES.items():
        if recipe == (kind, task, {}):
            return name
    return f"{kind}-{task}"


# --------------------------------------------------------------------------- real language
@dataclass(frozen=True)
class LanguageRecipe:
    """How a word-level model on real language (:mod:`attnlab.text.corpus`) is trained.

    A step budget on ``threads`` threads; the dev split's chrF is measured every
    ``eval_every`` steps and the best weights are kept (early stopping).  Besides the
    models' own dropout (``config["dropout"]``), the training drops words: each input word
    becomes ``<unk>`` with probability ``word_dropout`` (which also teaches the models what
    an unknown word is).
    """

    kind: str  # a key of attnlab.models.registry.MODEL_KINDS
    lang: str  # "fr" or "de": English -> this
    config: dict  # the model config's fields (RNNConfig / TransformerConfig)
    lr: float
    max_steps: int
    batch_size: int = 64
    warmup: int = 0
    eval_every: int = 100
    label_smoothing: float = 0.1
    word_dropout: float = 0.1  # each input word (source and decoder input) -> <unk> with this p
    weight_decay: float = 1e-4
    src_min_count: int = 2  # English words seen fewer times are read as <unk>
    # Also train on the word-by-word dictionary learned from the training split (one
    # (English word, its most probable translation) pair per word seen >= lexicon_min times
    # with t(f|e) >= 0.5; 0: no): the lexicon is what a few thousand strings teach slowly.
    lexicon_min: int = 2
    tgt_min_count: int = 1
    # German: split the targets' compounds into parts the model can write one by one
    # ("datenträger@@ details"; attnlab.text.compounds), joined again when the output is read.
    split_compounds: bool = False
    # Keep the mean of the weights at the last this-many measurements when its dev chrF is
    # higher than the best single one's (Vaswani et al. average their last 5 checkpoints).
    average_last: int = 0
    # Learn to write <unk> where a word the model cannot read is copied (the attention
    # models: decoding copies the source word alpha weighs most; attnlab.training.translation).
    copy_unknown: bool = True
    seed: int = 0
    # Both cores: `make train` trains one model at a time, and at this size (a softmax over
    # thousands of words) a second thread makes a step 1.6x faster (measured, idle machine).
    threads: int = 2
    clip: float = 1.0


#: Word models read at most 30 tokens and write at most 40 (the corpus's strings have at
#: most 15 and 22): a longer text is refused with one line, an output is bounded.
_WORD_LENS = {"max_src_len": 30, "max_tgt_len": 40}
_RNN = {
    "emb": 96,
    "enc_hidden": 128,
    "dec_hidden": 128,
    "attn_hidden": 128,
    "dropout": 0.2,
    **_WORD_LENS,
}
_TRANSFORMER = {
    "d_model": 128,
    "num_heads": 4,
    "num_layers": 2,
    "d_ff": 256,
    "dropout": 0.1,  # P_drop, as the paper's base model
    **_WORD_LENS,
}
#: The Transformers: a step budget of at most 9 minutes on two threads, measured every 250
#: steps, the last 5 measured weights averaged (Vaswani et al. 6.1) when that measures better.
_TRANSFORMER_TRAINING = {"lr": 3e-3, "warmup": 200, "eval_every": 250, "average_last": 5}

#: The shipped word models -> their recipes (``python -m attnlab.cli --language all``).
LANGUAGE_RECIPES: dict[str, LanguageRecipe] = {
    "rnnsearch-en-fr": LanguageRecipe(
        "rnnsearch", "fr", _RNN, lr=3e-3, max_steps=1600, eval_every=200
    ),
    # Without attention, the same budget and as wide a decoder (s_t and c of 256).
    "rnnenc-en-fr": LanguageRecipe(
        "rnnencdec",
        "fr",
        {**_RNN, "enc_hidden": 256, "dec_hidden": 256},
        lr=3e-3,
        max_steps=1600,
        eval_every=200,
        copy_unknown=False,  # no attention to copy with
    ),
    "transformer-en-fr": LanguageRecipe(
        "transformer", "fr", _TRANSFORMER, max_steps=3000, **_TRANSFORMER_TRAINING
    ),
    # German compounds are split into parts ("datenträger@@ details", attnlab.text.compounds).
    "transformer-en-de": LanguageRecipe(
        "transformer",
        "de",
        _TRANSFORMER,
        max_steps=5000,
        split_compounds=True,
        **_TRANSFORMER_TRAINING,
    ),
}
