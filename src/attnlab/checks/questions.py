r"""Predict, then run: the questions of the exercises and their computed answers.

``check_answer(question, answer, **measured)`` checks an answer to a question of
:data:`QUESTIONS` against the right answer, computed (each question's ``right``) from the library,
a trained model or a measurement, never stored, and never handed to a student's code (there is
no public function that returns it).  ``answered(answer)`` tells the
measuring cell whether to show what it measured.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass

from torch import Tensor

from attnlab.checks.harness import run_check, solutions_mode
from attnlab.checks.inside_models import reference_model
from attnlab.checks.results import CheckResult, Failure
from attnlab.decode import decode_batch
from attnlab.experiments.path_lengths import longest_path
from attnlab.guard.library import library_in_place
from attnlab.text.vocab import PAD

__all__ = [
    "PAD_DATE",
    "PAD_TO",
    "D_K",
    "QUESTIONS",
    "check_answer",
    "answered",
    "judged",
    "padded_alpha",
]


# --------------------------------------------------------------------------- predict, then run
PAD_DATE = "3 May 1979"  # the date of the "padding_zeros" question: 10 characters and <eos>
PAD_TO = 28  # ...padded to the longest date of the in-model batch
D_K = 64  # the dimension of the "variance_qk" question


def _number(answer: object) -> float:
    if isinstance(answer, bool) or not isinstance(answer, int | float):
        raise Failure("answer_type", f"Answer with a number; got {type(answer).__name__}.")
    return float(answer)


def _right_variance_qk() -> float:
    # q.k = sum_j q_j k_j: d_k independent products, each of variance Var(q_j) Var(k_j).
    var_q = var_k = 1.0  # entries of mean 0 and variance 1
    return sum(var_q * var_k for _ in range(D_K))


def _judge_variance_qk(answer: object, right: float) -> str | None:
    value = _number(answer)
    if abs(value - right) <= 0.03 * right:  # a measured variance is accepted too
        return None
    if abs(value - math.sqrt(right)) < 0.5:
        return f"{value:g} is the standard deviation of q.k; the question asks for its variance."
    if abs(value - 1) < 0.1:
        return "1 is the variance after dividing by sqrt(d_k); before it, add up the variances."
    return "q.k is a sum of d_k products q_j k_j: what is the variance of one, and of their sum?"


def _right_dilated_path() -> int:
    return longest_path("dilated_cnn", 27, 3)


def _judge_dilated_path(answer: object, right: int) -> str | None:
    value = _number(answer)
    if value == right:
        return None
    if value == longest_path("cnn", 27, 3):
        return "That is the path of plain convolutions (dilation 1 in every layer)."
    if value == longest_path("rnn", 27, 3):
        return "That is the recurrent layer's path, one step per position."
    return "Layer l of a dilated stack reaches k^l positions back: how many layers reach 27?"


def padded_alpha() -> tuple[list[str], Tensor]:
    """The source tokens of PAD_DATE padded to PAD_TO positions, and rnnsearch-dates's alpha
    (T, PAD_TO) over them while it translates (the first output step is row 0)."""
    model = reference_model("rnnsearch-dates").model
    with library_in_place():
        decoded = decode_batch(model, [model.prepare(PAD_DATE)], length=PAD_TO)
    alpha = decoded.alpha[0, 0, 0]  # (T + 1, PAD_TO): every output step and its <eos>
    n = int(decoded.src_len[0])  # the date's characters and its <eos>
    tokens = [*model.source_tokens(PAD_DATE), *[PAD] * (PAD_TO - n)]
    return tokens, alpha


def _right_padding_zeros() -> int:
    _, alpha = padded_alpha()
    zeros = (alpha == 0).sum(dim=-1)  # (T,): the exact zeros of each step's row
    if not bool((zeros == zeros[0]).all()):  # every step the same count, or no single answer
        raise Failure("exception", "The rows of alpha differ in their zeros: please report.")
    return int(zeros[0])


def _judge_padding_zeros(answer: object, right: int) -> str | None:
    value = _number(answer)
    if value == right:
        return None
    real = PAD_TO - right
    if value == real:
        return f"{real} is the number of real tokens, the ones that share the weight."
    if abs(value - right) == 1:
        return "Nearly: is <eos> a real token or padding? Count again."
    if value == 0:
        return "The padding mask is False at the padding: what does masked_softmax put there?"
    return "The padded positions are masked: count the positions after the date and its <eos>."


def _seed_accuracies(runs: object, score: str) -> list[list[float]]:
    """The held-out exact match at each checkpoint of each of ``runs`` (the histories `fit`
    returned, one a seed), or a Failure that says in one line what is wrong with them."""
    usage = f"pass {score}=histories[{score!r}], its list of histories (one a seed)"
    if isinstance(runs, dict):  # one history: one seed, not the experiment
        raise Failure("answer_type", f"`{score}=` got one history; {usage}.")
    if not isinstance(runs, list | tuple) or not runs:
        got = "an empty list" if isinstance(runs, list | tuple) else f"a {type(runs).__name__}"
        raise Failure("answer_type", f"`{score}=` got {got}; {usage}.")
    accuracies = []
    for seed, history in enumerate(runs):
        accuracy = history.get("accuracy") if isinstance(history, dict) else None
        if not isinstance(accuracy, list | tuple) or not accuracy:
            raise Failure("answer_type", f"`{score}[{seed}]` has no `accuracy` list; {usage}.")
        bad = [a for a in accuracy if not _is_fraction(a)]
        if bad:
            raise Failure(
                "answer_type",
                f"`{score}[{seed}]['accuracy']` holds {bad[0]!r:.30}: an exact match is in 0..1.",
            )
        accuracies.append([float(a) for a in accuracy])
    return accuracies


def _is_fraction(value: object) -> bool:
    """An exact match: a real number in 0..1 (not a bool, not nan)."""
    number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    return number and 0.0 <= value <= 1.0


def _shape(accuracies: list[list[float]]) -> str:
    """``2 seeds of 5 checkpoints`` (``5/4 checkpoints`` where the seeds differ)."""
    lengths = sorted({len(a) for a in accuracies})
    seeds = f"{len(accuracies)} seed{'s' * (len(accuracies) != 1)}"
    return f"{seeds} of {'/'.join(map(str, lengths))} checkpoint{'s' * (lengths != [1])}"


def _mean_accuracies(dot: object, additive: object) -> tuple[float, float]:
    """Each score's mean held-out exact match over every seed and checkpoint (how fast it
    learned, on average), from the runs of one experiment: as many seeds and checkpoints."""
    a_dot, a_add = _seed_accuracies(dot, "dot"), _seed_accuracies(additive, "additive")
    if len({len(a) for a in a_dot + a_add}) > 1 or len(a_dot) != len(a_add):
        raise Failure(
            "answer_type",
            f"Pass the runs of one experiment: dot has {_shape(a_dot)}, additive {_shape(a_add)}.",
        )
    return tuple(sum(map(sum, a)) / sum(map(len, a)) for a in (a_dot, a_add))


def _right_faster_score(dot: object, additive: object) -> str:
    a_dot, a_add = _mean_accuracies(dot, additive)
    if abs(a_dot - a_add) < 0.03:  # within 0.03 of each other: either answer is fair
        return "either"
    return "dot" if a_dot > a_add else "additive"


def _judge_faster_score(answer: object, right: str) -> str | None:
    if not isinstance(answer, str) or answer not in ("dot", "additive"):
        got = repr(answer[:20]) if isinstance(answer, str) else type(answer).__name__
        raise Failure("answer_type", f'Answer "dot" or "additive"; got {got}.')
    if right in ("either", answer):
        return None
    return "Average each score's mean row (every seed, every checkpoint): which one is higher?"


@dataclass(frozen=True)
class _Question:
    right: Callable[..., object]  # (**measured) -> the right answer, computed
    judge: Callable[[object, object], str | None]  # (answer, right) -> None, or a hint
    measured: tuple[str, ...] = ()  # keyword arguments check_answer needs


QUESTIONS: dict[str, _Question] = {
    "variance_qk": _Question(_right_variance_qk, _judge_variance_qk),
    "dilated_path": _Question(_right_dilated_path, _judge_dilated_path),
    "padding_zeros": _Question(_right_padding_zeros, _judge_padding_zeros),
    "faster_score": _Question(_right_faster_score, _judge_faster_score, ("dot", "additive")),
}


def _answer_body(question: _Question, answer: object, measured: dict) -> str:
    missing = [key for key in question.measured if key not in measured]
    if missing:
        raise Failure(
            "answer_type", "Also pass your measurement: " + ", ".join(f"{k}=..." for k in missing)
        )
    right = question.right(**measured)
    if solutions_mode():  # CI: the computed answer must pass its own judge
        answer = next(a for a in (right, "dot") if a != "either")
    return judged(question, answer, right)


def judged(question: _Question, answer: object, right: object) -> str:
    """``answer`` to ``question`` against its computed ``right`` answer: a sentence if it is
    right, else a Failure (not answered yet, or the question's hint)."""
    if answer is Ellipsis or answer is None:
        raise Failure("not_answered", "Replace `...` with your answer and run the cell again.")
    hint = question.judge(answer, right)
    if hint is not None:
        raise Failure("wrong_answer", hint)
    return f"{answer!r} is right."


def _question(question: str) -> _Question:
    if question not in QUESTIONS:
        raise ValueError(f"unknown question {question!r}; the questions are {', '.join(QUESTIONS)}")
    return QUESTIONS[question]


def check_answer(question: str, answer: object, **measured: object) -> CheckResult:
    """Check the answer to a predict-then-run question of :data:`QUESTIONS`.

    ``measured``: what the question's answer is computed from (the experiment's histories).
    In solutions mode the computed answer is checked instead of ``answer``.
    """
    asked = _question(question)
    return run_check(question, lambda: None, lambda _: _answer_body(asked, answer, measured))


def answered(answer: object) -> bool:
    """Whether a predict-then-run answer was given (always in solutions mode): the cell that
    measures the answer shows it only then, so that nothing answers a question first."""
    return solutions_mode() or (answer is not Ellipsis and answer is not None)
