r"""The exercises inside the trained models: :func:`in_model`.

The student's function is swapped into a shipped model through :mod:`attnlab.guard.parts` (the
one way the library swaps a function in), guarded by the check's session (state put back, a
time budget, prints captured), and the model decodes :data:`IN_MODEL_DATES` held-out dates in
one padded batch; the result is compared with the library's own decoding (computed once per
session with the library's functions in place).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnlab.checks.compare import DEVICE, DTYPE
from attnlab.checks.exercises import BODIES, self_attention
from attnlab.checks.harness import run_check, session
from attnlab.checks.results import CheckResult, Failure
from attnlab.decode import BatchDecoding, decode_batch
from attnlab.guard import parts
from attnlab.guard.budget import OutOfTime
from attnlab.guard.errors import StudentRaised, describe, kind_problem, where
from attnlab.guard.library import library_in_place
from attnlab.models import catalogue
from attnlab.models.threads import torch_threads
from attnlab.text.tasks import dates
from attnlab.training.checkpoints import load

__all__ = [
    "IN_MODEL",
    "IN_MODEL_DATES",
    "IN_MODEL_SEED",
    "ALPHA_TOL",
    "PART",
    "STRUCTURAL",
    "SwappedRun",
    "in_model",
    "in_model_body",
    "run_swapped",
    "compare_run",
    "loaded_reference",
    "reference_model",
]


# --------------------------------------------------------------------------- inside the models
# The lecture's date models (attnlab.models.catalogue); a score runs in the score study's model.
_RNNSEARCH = catalogue.lecture_model("rnnsearch")
_TRANSFORMER = catalogue.lecture_model("transformer")
#: exercise -> the shipped models ``in_model`` runs it in (all of them unless one is named).
IN_MODEL = {
    "dot_score": catalogue.names(score="dot"),
    "general_score": catalogue.names(score="general"),
    "additive_score": (_RNNSEARCH,),
    "masked_softmax": (_RNNSEARCH, _TRANSFORMER),
    "decode_step": (_RNNSEARCH,),
    "scaled_dot_product_attention": (_TRANSFORMER,),
    "encoder_block": (_TRANSFORMER,),
}
IN_MODEL_DATES = 300  # held-out dates decoded in one padded batch (lengths 6 to 28 together)
IN_MODEL_SEED = 2_000_000  # the cards' held-out seed: dates no model was trained on
ALPHA_TOL = 1e-4  # |alpha yours - alpha library| allowed inside a model (float32 rounding)

# Failures that stop a function from running at all: reported before decoding anything.
STRUCTURAL = (
    "not_implemented",
    "wrong_type",
    "wrong_dtype",
    "wrong_shape",
    "exception",
    "timeout",
)

# Why the translations alone cannot show a mistake the small examples find.
_UNSEEN = {
    "masked_softmax": "no query in these models has every key masked, and their scores stay "
    "far below exp's overflow at 88, so the translations cannot show this: the check tests "
    "it on its own.",
    "scaled_dot_product_attention": "no query in this model has every key masked, so the "
    "translations cannot show this: the check tests it on its own.",
}


@dataclass
class _Reference:
    """A shipped model, its held-out dates, and the library's decoding of them as one batch.

    :func:`reference_model` hands out copies: what a caller (a student's function, say) does
    to one copy's dates, translations or alpha reaches no later check; ``model`` itself is
    the one loaded model, which every session guards once a check has shared it."""

    model: nn.Module
    sources: list[str]  # the dates as written
    targets: list[str]  # their ISO forms
    decoded: BatchDecoding  # the library's outputs, read back by teacher forcing
    valid: Tensor  # (N, T) bool: the steps up to and including each output's <eos>
    outputs: list[str]  # the library's translations

    KEPT = {}  # model name -> the decoding as first computed (never handed out itself)

    @property
    def alpha(self) -> Tensor:  # (N, L, h, T, n) the library's cross-attention
        return self.decoded.alpha

    def copy(self) -> _Reference:
        """The same model, with copies of everything else (tensors cloned, lists copied)."""

        def copied(value: object) -> object:
            if isinstance(value, Tensor):
                return value.clone()
            if isinstance(value, list):
                return [copied(v) for v in value]
            return value

        decoded = object.__new__(type(self.decoded))
        decoded.__dict__.update({k: copied(v) for k, v in vars(self.decoded).items()})
        return _Reference(
            self.model,
            copied(self.sources),
            copied(self.targets),
            decoded,
            self.valid.clone(),
            copied(self.outputs),
        )


def reference_model(model_name: str) -> _Reference:
    """Load ``model_name`` and decode the held-out dates with the library (once per session);
    a copy of that decoding each time (see :class:`_Reference`)."""
    kept = _Reference.KEPT.get(model_name)
    if kept is None:
        model = load(model_name).eval()
        pairs = dates(IN_MODEL_DATES, seed=IN_MODEL_SEED)
        with library_in_place():  # the library's own, whatever the session holds
            decoded = decode_batch(model, [model.prepare(text) for text, _ in pairs])
        kept = _Reference(
            model,
            [text for text, _ in pairs],
            [iso for _, iso in pairs],
            decoded,
            _valid_steps(decoded.outputs),
            [model.tgt_vocab.decode(o) for o in decoded.outputs],
        )
        _Reference.KEPT[model_name] = kept
    return kept.copy()


def _valid_steps(outputs: list[list[int]]) -> Tensor:
    """valid (N, T): the read-back's steps t <= k of each output y_1..y_k (its <eos> at k)."""
    T = max(len(o) for o in outputs) + 1  # every output step and its final <eos>
    steps = torch.arange(T)[None, :]  # (1, T)
    return steps <= torch.tensor([len(o) for o in outputs])[:, None]


class _Student:
    """The student's function as the model calls it: counted (a swap never used must not
    pass), on copies of the model's tensors, guarded by the check's session, its output's
    dtype and device checked before the model goes on with it."""

    def __init__(self, fn: Callable, model_name: str):
        self.fn, self.model_name, self.calls = fn, model_name, 0

    def __call__(self, *args):
        self.calls += 1
        args = tuple(a.clone() if isinstance(a, Tensor) else a for a in args)
        out = session().call(self.fn, *args)  # StudentRaised, OutOfTime go up to in_model
        problem = kind_problem(out, DTYPE, DEVICE, "your function")
        if problem is not None:
            raise Failure("wrong_dtype", f"Inside `{self.model_name}` {problem}.")
        return out


def _score_weights(exercise: str, score: nn.Module) -> tuple[Tensor, ...]:
    """The trained weights of the model's score, in the exercise's argument order."""
    if exercise == "additive_score":  # v^T tanh(W s + U h_i)
        return (score.W.weight, score.U.weight, score.v.weight[0])
    if exercise == "general_score":  # s^T W_a h
        return (score.W_a,)
    return ()  # s^T h


def _student_score(exercise: str, student: _Student) -> Callable[[nn.Module], Callable]:
    """make(trained score) -> score(query, keys) = the student's fn(query, keys, *weights)."""

    def make(trained: nn.Module) -> Callable:
        weights = tuple(w.detach().clone() for w in _score_weights(exercise, trained))
        return lambda query, keys: student(query, keys, *weights)  # (B, m, n)

    return make


def _student_block(student: _Student) -> Callable[[Callable], Callable]:
    """make(layer.forward) -> the layer's forward computed by the student's encoder block."""

    def make(forward: Callable) -> Callable:
        layer = forward.__self__  # the trained EncoderLayer

        def block(x: Tensor, src_mask: Tensor | None = None) -> Tensor:  # (B, n, d)
            attend = self_attention(layer.self_attn, src_mask)  # padding hidden
            return student(x, attend, layer.ln1, layer.ln2, layer.ffn[0], layer.ffn[2])

        return block

    return make


#: exercise -> the part of the model (attnlab.guard.parts) its function is swapped in for.
PART = {
    "dot_score": "score",
    "general_score": "score",
    "additive_score": "score",
    "masked_softmax": "masked_softmax",
    "decode_step": "decode_step",
    "scaled_dot_product_attention": "scaled_dot_product_attention",
    "encoder_block": "encoder_block",
}


def _make(exercise: str, student: _Student) -> Callable[[Callable], Callable]:
    if exercise.endswith("_score"):
        return _student_score(exercise, student)
    if exercise == "encoder_block":
        return _student_block(student)
    return lambda original: student  # the function itself, called as the library's is


@contextmanager
def _swapped(exercise: str, fn: Callable, model: nn.Module, model_name: str) -> Iterator[_Student]:
    """Run ``model`` with the student's ``fn`` in place of the library's, then restore it."""
    student = _Student(fn, model_name)
    with parts.swap(model, PART[exercise], _make(exercise, student)):
        yield student


@dataclass
class _InModel:
    """What the student's function did inside one model."""

    model_name: str
    ref: _Reference
    outputs: list[str]
    alpha_diff: float

    @property
    def same(self) -> int:
        return sum(a == b for a, b in zip(self.outputs, self.ref.outputs, strict=True))

    @property
    def ok(self) -> bool:
        return self.same == len(self.outputs) and self.alpha_diff <= ALPHA_TOL

    def accuracy(self, outputs: list[str]) -> float:
        return sum(a == b for a, b in zip(outputs, self.ref.targets, strict=True)) / len(outputs)

    def report(self) -> str:
        n, ref = len(self.outputs), self.ref
        text = (
            f"In `{self.model_name}` on {n} held-out dates: exact match "
            f"{self.accuracy(self.outputs):.1%} with your function, "
            f"{self.accuracy(ref.outputs):.1%} with the library's; {self.same} of {n} "
            f"translations identical; largest |alpha yours - library's| = {self.alpha_diff:.2g}"
            + (" (your alpha holds NaN)." if math.isnan(self.alpha_diff) else ".")
        )
        first = next((i for i in range(n) if self.outputs[i] != ref.outputs[i]), None)
        if first is not None:
            text += (
                f" First date that differs: '{ref.sources[first]}' -> yours "
                f"'{self.outputs[first]}', the library's '{ref.outputs[first]}'."
            )
        return text


def loaded_reference(model_name: str) -> _Reference:
    """reference_model(model_name), or a Failure saying why it cannot be loaded."""
    try:
        return reference_model(model_name)
    except Exception as error:  # noqa: BLE001 - a missing or damaged checkpoint
        raise Failure(
            "unavailable", f"`{model_name}` could not be loaded: {describe(error)}."
        ) from None


@dataclass
class SwappedRun:
    """What a model did with the student's function in place: its own translations (token
    ids), and its alpha (N, L, h, T, n) read back along the library's translations."""

    outputs: list[list[int]]
    alpha: Tensor


def run_swapped(exercise: str, fn: Callable, model_name: str) -> SwappedRun:
    """Decode the held-out dates with ``fn`` swapped into ``model_name`` (in the check's
    session); a Failure says what went wrong."""
    ref = loaded_reference(model_name)
    model = ref.model
    session().share(model_name, model)  # what the function changes in it is put back
    try:
        with _swapped(exercise, fn, model, model_name) as student:
            texts, library = ref.decoded.texts, ref.decoded.outputs
            alpha = decode_batch(model, texts, outputs=library).alpha  # (N, L, h, T, n)
            out = decode_batch(model, texts, read=False).outputs
    except StudentRaised as raised:
        error = raised.error
        raise Failure(
            "exception",
            f"Inside `{model_name}` your function raised {describe(error)}{where(error)}.",
        ) from None
    except (Failure, OutOfTime, KeyboardInterrupt):
        raise
    except Exception as error:  # the model could not go on with what the function returned
        raise Failure(
            "exception",
            f"Inside `{model_name}` the model could not use what your function returned: "
            f"{describe(error)}.",
        ) from None
    if student.calls == 0:  # the model did not call it: say so rather than pass
        raise Failure("exception", f"`{model_name}` never called your function: please report.")
    return SwappedRun([list(o) for o in out], alpha)


def compare_run(model_name: str, run: SwappedRun) -> _InModel:
    """The run of the student's function inside ``model_name`` against the library's."""
    ref = loaded_reference(model_name)
    alpha = run.alpha
    if len(run.outputs) != len(ref.outputs) or tuple(alpha.shape) != tuple(ref.alpha.shape):
        raise Failure(
            "exception",
            f"Inside `{model_name}` the run of your function returned {len(run.outputs)} "
            f"translations and alpha {tuple(alpha.shape)}; expected {len(ref.outputs)} and "
            f"{tuple(ref.alpha.shape)}.",
        )
    valid = ref.valid[:, None, None, :, None].expand_as(ref.alpha)  # (N, L, h, T, n)
    diff = (alpha.float() - ref.alpha).abs()[valid]
    alpha_diff = float(diff.max()) if diff.numel() else 0.0  # NaN if alpha holds NaN
    vocab = ref.model.tgt_vocab
    outputs = [vocab.decode([i for i in o if 0 <= i < len(vocab)]) for o in run.outputs]
    return _InModel(model_name, ref, outputs, alpha_diff)


def _unit_failure(exercise: str, fn: Callable) -> Failure | None:
    """The first thing the small hidden examples find wrong with ``fn``, or None."""
    try:
        BODIES[exercise](fn)
    except Failure as failure:
        return failure
    return None


def in_model_body(
    exercise: str,
    model_names: tuple[str, ...],
    fn: Callable,
    run: Callable[[str, Callable, str], SwappedRun] = run_swapped,
) -> str:
    """The in-model check without its harness: the small hidden examples first, then each
    model's ``run(exercise, fn, model_name)`` compared with the library's decoding."""
    unit = _unit_failure(exercise, fn)
    if unit is not None and unit.category in STRUCTURAL:
        raise Failure(unit.category, f"Before it can run inside a model: {unit.message}")
    runs = [compare_run(name, run(exercise, fn, name)) for name in model_names]
    reports = " ".join(run.report() for run in runs)
    bad = [run for run in runs if not run.ok]
    if bad:
        category = "translation" if any(r.same < len(r.outputs) for r in bad) else "alpha"
        why = unit.message if unit is not None else _ONLY_IN_MODEL
        raise Failure(category, f"{reports} What is wrong: {why}")
    if unit is not None:
        unseen = _UNSEEN.get(exercise) if unit.category in ("nan", "mask") else None
        unseen = unseen or "the difference is too small to change these translations: fix it too."
        raise Failure(
            unit.category,
            f"{reports} But on its own your function fails: {unit.message} In the model, {unseen}",
        )
    return f"{reports} {_IN_MODEL_OK.get(exercise, '')}".rstrip()


_ONLY_IN_MODEL = (
    "on the small hidden examples your function matches the reference, so look at what only the "
    "model gives it: more batch dimensions (the Transformer's (B, h, m, n)), the model's masks, "
    "or the sizes of its trained weights."
)

_IN_MODEL_OK = {
    "masked_softmax": "In `transformer-dates` the batch pads the shorter dates and the decoder's "
    "causal mask hides the future, so your mask was used; on its own your "
    "function also gives zeros for a fully masked row and stays finite for large scores "
    "(cases no date reaches).",
    "scaled_dot_product_attention": "The batch pads the shorter dates and the decoder's causal "
    "mask hides the future, so your mask was used; on its own your function also handles a "
    "fully masked row (a case no date reaches).",
    "decode_step": "The score handed to your function hides the padding of the shorter dates.",
    "encoder_block": "The batch pads the shorter dates: the `self_attn` handed to your block "
    "hides them.",
}


def in_model(exercise_name: str, fn: Callable, model: str | None = None) -> CheckResult:
    """Run the student's ``fn`` inside a trained model in place of the library's function.

    Decodes :data:`IN_MODEL_DATES` held-out dates (one padded batch) with ``fn`` swapped into
    the shipped model (:data:`IN_MODEL`; a score gets the model's trained weights) and with the
    library's own function, and reports the exact match of both, the first date whose
    translations differ and the largest difference in alpha.  It is correct when every
    translation is the library's and alpha agrees to :data:`ALPHA_TOL`, and the function also
    passes the small hidden examples of ``check_<exercise>`` (which test cases no date reaches,
    such as a fully masked row, and name the mistake when something differs).
    """
    if exercise_name not in IN_MODEL:
        raise ValueError(f"unknown exercise {exercise_name!r}; in_model runs {', '.join(IN_MODEL)}")
    names = IN_MODEL[exercise_name]
    if model is not None:
        if model not in names:
            raise ValueError(f"{exercise_name} runs in {', '.join(names)}; got model {model!r}")
        names = (model,)
    label = f"{exercise_name} in {' and '.join(names)}"
    with torch_threads(1):  # small, latency-bound work: one thread is fastest on shared cores
        return run_check(
            label, fn, lambda f: in_model_body(exercise_name, names, f), _usage(exercise_name)
        )


def _usage(exercise_name: str) -> str:
    return f"`in_model` needs your function, e.g. `in_model({exercise_name!r}, {exercise_name})`"
