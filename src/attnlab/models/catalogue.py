"""The one catalogue of the models the package ships: name -> kind, task, label, default text.

    >>> names(task="dates", kind="transformer")
    ('transformer-dates',)
    >>> entry("rnnsearch-en-fr").label
    'RNNSearch, English → French'
    >>> entry("rnnsearch-en-fr").default_text
    'Default cell type'

Every list of model names in the package is a question to this catalogue: which models
:func:`attnlab.training.checkpoints.load` knows by name, which the training recipes
(:mod:`attnlab.training.config`, keyed by these names) train, which the widgets' choosers
offer, which the exercises run in.  A model's *kind* (``"rnnsearch"``, a key of
:data:`attnlab.models.registry.MODEL_KINDS`) comes from here or from the loaded model's
``.kind``, never from parsing its name.

The catalogue's order is the choosers' order, and the order the experiments report in.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = [
    "CATALOGUE",
    "TASK_TEXTS",
    "ShippedModel",
    "TaskText",
    "entries",
    "entry",
    "lecture_model",
    "names",
    "task_of",
]


@dataclass(frozen=True)
class TaskText:
    """What a model of a task reads, as the widgets say it (the box's name and its first
    text), and, for a real-language task, the corpus it is trained on."""

    box: str  # the text box's label: "date", "digits", "phrase"
    default: str  # the text a widget opens with
    asked: str  # what a widget asks the room to type: "a date", "digits", "a phrase"
    # The language a real-language task translates English into: its corpus,
    # attnlab.text.corpus.load_corpus(language); None for a generated task (attnlab.text.tasks).
    language: str | None = None


#: Every task, the one list of them: task -> what its models read.  The generated tasks are
#: :data:`attnlab.text.tasks.TASKS` (dates, reverse); the real-language ones read the corpus of
#: their ``language`` (:mod:`attnlab.text.corpus`: English -> French, German).
TASK_TEXTS = {
    "dates": TaskText("date", "3 May 1979", "a date"),
    "reverse": TaskText("digits", "31415926535", "digits"),
    "en-fr": TaskText("phrase", "Default cell type", "a phrase", language="fr"),
    "en-de": TaskText("phrase", "Close all tabs", "a phrase", language="de"),
}


@dataclass(frozen=True)
class ShippedModel:
    """One shipped model: its checkpoint's name and what it is."""

    name: str  # the checkpoint's name: src/attnlab/checkpoints/NAME.json
    kind: str  # a key of attnlab.models.registry.MODEL_KINDS
    task: str  # a key of TASK_TEXTS: what it reads and writes
    label: str  # how the widgets' choosers name it
    # Offered by the widgets' choosers (the reverse-digits models are the length
    # experiment's: the deck shows their measurements, not a chooser).
    offered: bool = True
    # The four RNNSearch models trained alike but for their score (ScoreLab, the score
    # exercises): that score, a key of attnlab.attention.SCORES (the card's config.score);
    # None for every other model.
    score: str | None = None

    @property
    def default_text(self) -> str:
        """The text a widget opens with for this model."""
        return TASK_TEXTS[self.task].default

    @property
    def box(self) -> str:
        """What the widget's text box holds: "date", "digits" or "phrase"."""
        return TASK_TEXTS[self.task].box


def _score_model(score: str, name: str) -> ShippedModel:
    """The score model of ``score`` (a key of attnlab.attention.SCORES), shipped as ``name``."""
    label = f"RNNSearch, {score.replace('_', ' ')} score, dates"  # "scaled_dot": "scaled dot"
    return ShippedModel(name, "rnnsearch", "dates", label, score=score)


#: Every shipped model, in the choosers' order.  The first model of a kind and task is the
#: lecture's model of that kind (:func:`lecture_model`): rnnsearch-dates before the score models.
CATALOGUE: tuple[ShippedModel, ...] = (
    ShippedModel("rnnsearch-dates", "rnnsearch", "dates", "RNNSearch (additive score), dates"),
    _score_model("dot", "rnnsearch-dates-dot"),
    _score_model("scaled_dot", "rnnsearch-dates-scaled"),
    _score_model("general", "rnnsearch-dates-general"),
    _score_model("additive", "rnnsearch-dates-additive"),
    ShippedModel("transformer-dates", "transformer", "dates", "Transformer, dates"),
    ShippedModel("rnnenc-dates", "rnnencdec", "dates", "RNNEncDec (no attention), dates"),
    ShippedModel(
        "rnnenc-en-fr", "rnnencdec", "en-fr", "RNNEncDec (no attention), English → French"
    ),
    ShippedModel("rnnsearch-en-fr", "rnnsearch", "en-fr", "RNNSearch, English → French"),
    ShippedModel("transformer-en-fr", "transformer", "en-fr", "Transformer, English → French"),
    ShippedModel("transformer-en-de", "transformer", "en-de", "Transformer, English → German"),
    # The length experiment (attnlab.experiments.length): "-30" saw only strings of 5-30
    # digits in training, like Bahdanau et al.'s RNNsearch-30 against RNNsearch-50.
    ShippedModel("rnnenc-reverse", "rnnencdec", "reverse", "RNNEncDec, reversed digits", False),
    ShippedModel("rnnsearch-reverse", "rnnsearch", "reverse", "RNNSearch, reversed digits", False),
    ShippedModel(
        "rnnenc-reverse-30", "rnnencdec", "reverse", "RNNEncDec, reversed digits (5-30)", False
    ),
    ShippedModel(
        "rnnsearch-reverse-30", "rnnsearch", "reverse", "RNNSearch, reversed digits (5-30)", False
    ),
)
_BY_NAME = {model.name: model for model in CATALOGUE}
_FIELDS = tuple(f.name for f in fields(ShippedModel))


def entries(**where: object) -> tuple[ShippedModel, ...]:
    """The catalogue's models whose fields equal those given, in the catalogue's order.

    ``entries(task="dates", kind="rnnsearch")``; a field not of :class:`ShippedModel` is a
    TypeError (a misspelt filter must not match nothing in silence).
    """
    unknown = sorted(set(where) - set(_FIELDS))
    if unknown:
        raise TypeError(
            f"the catalogue has no field {unknown[0]!r}; filter by {', '.join(_FIELDS)}"
        )
    return tuple(m for m in CATALOGUE if all(getattr(m, k) == v for k, v in where.items()))


def names(**where: object) -> tuple[str, ...]:
    """The names of :func:`entries` ``(**where)``: ``names(task="dates", kind="rnnsearch")``."""
    return tuple(m.name for m in entries(**where))


def entry(name: str) -> ShippedModel:
    """The shipped model called ``name``; ValueError naming the shipped ones if none is."""
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        shown = repr(name)[:40]
        raise ValueError(f"no shipped model {shown}; choose one of {', '.join(_BY_NAME)}") from None


def lecture_model(kind: str, task: str = "dates") -> str:
    """The lecture's model of ``kind`` on ``task``: the first the catalogue lists."""
    found = names(kind=kind, task=task)
    if not found:
        raise ValueError(f"no shipped {kind} model on {task!r}")
    return found[0]


def task_of(name: str, model: object = None) -> str | None:
    """What the model called ``name`` reads: its catalogue entry's task, else the task its
    card names (a model trained elsewhere and given loaded), else None."""
    if name in _BY_NAME:
        return _BY_NAME[name].task
    card = getattr(model, "card", None)
    task = card.get("task") if isinstance(card, dict) else None
    return task if task in TASK_TEXTS else None
