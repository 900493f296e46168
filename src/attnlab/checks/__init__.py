r"""Checks for the exercises in ``notebooks/07_attention_exercises.ipynb``.

Each exercise is a function the student writes; the cell after it calls
``check_<name>(fn)``, which runs ``fn`` on hidden examples, compares it with the reference from
:mod:`attnlab.attention`, and says precisely what is wrong, or that it is right:

* not implemented yet (the body still raises ``NotImplementedError``);
* raised an exception (its type and message, no traceback);
* wrong return type / wrong dtype or device / wrong shape (expected against got);
* NaN or inf in the output;
* masked weights not zero;
* rows not summing to 1;
* mismatch against the reference on a hidden example (the largest absolute difference);
* took too long, changed something outside the function, or was interrupted.

The answer is a :class:`CheckResult` (``.ok``, ``.category``, ``.message``) that Jupyter shows
as a green ✓ or a red ✗ box.

Solutions mode
--------------
With the environment variable ``ATTNLAB_SOLUTIONS=1`` set when the checks are imported (it is
read once, so a cell that sets it later changes nothing) the decorator ``@exercise("dot_score")``
replaces the student's function by the reference, and a failing check raises
``AssertionError``, so running the notebook in CI checks every exercise for real.  Without it
(the student's mode) the decorator returns the student's function unchanged and a check never
raises.

Feedback and grade
------------------
These checks run in the notebook's own kernel: instant feedback.  The grade never comes from a
process that ran the student's code: :func:`graded` (the instructor version's hidden tests)
and ``python -m attnlab course autograde`` run the student's cells in a worker process and
reach the verdict outside it (:mod:`attnlab.checks.isolated`, :mod:`attnlab.checks.autograde`).

The exercises (names as given to :func:`exercise`; shapes with batch size B):

=================================  ==========================================================
``dot_score(s, h)``                s (B, m, d), h (B, n, d) -> scores (B, m, n)
``general_score(s, h, W_a)``       s (B, m, d_s), h (B, n, d_h), W_a (d_s, d_h) -> (B, m, n)
``additive_score(s, h, W, U, v)``  W (d_a, d_s), U (d_a, d_h), v (d_a,) -> (B, m, n)
``masked_softmax(scores, mask)``   scores (B, m, n), bool mask broadcastable, or None
``decode_step(s_prev, h, y_prev,   s_prev (B, d_s), h (B, n, d_h), y_prev (B, d_y), score a
score, cell)``                     score function, cell a GRUCell -> (s_t (B, d_s), c_t (B, d_h),
                                   alpha (B, n))
``scaled_dot_product_attention(    Q (B, m, d_k), K (B, n, d_k), V (B, n, d_v), mask or None
Q, K, V, mask)``                   -> (output (B, m, d_v), weights (B, m, n))
``multi_head_attention(query, key, query (B, m, d), key, value (B, n, d), W_* nn.Linear(d, d),
value, W_q, W_k, W_v, W_o,         -> (output (B, m, d), weights (B, h, m, n)); checked against
num_heads, mask)``                 attention.MultiHeadAttention with copies of the W_*
``positional_encoding(n, d)``      -> (n, d), against attention.positional_encoding
``encoder_block(x, self_attn,      x (B, n, d), self_attn a function z (B, n, d) -> (B, n, d),
ln_1, ln_2, W_1, W_2)``            ln_* nn.LayerNorm(d), W_1 nn.Linear(d, d_ff), W_2
                                   nn.Linear(d_ff, d) -> x (B, n, d); pre-LN, checked against
                                   transformer.EncoderLayer
=================================  ==========================================================

Inside the trained models
-------------------------
``in_model(name, fn)`` swaps ``fn`` into the shipped model(s) of :data:`IN_MODEL` through
:mod:`attnlab.guard.parts` (a score gets the model's trained weights; ``decode_step`` is handed the
model's score, GRU cell and padding mask; an encoder block its layer's sub-layers), decodes
:data:`IN_MODEL_DATES` held-out dates in one padded batch, and compares with the library's
decoding (computed once per session): exact match of both, the first date that
differs, the largest difference in alpha.  The small hidden examples of ``check_<name>`` run
first: they stop a function that cannot run, name the mistake when the translations change,
and test the cases no date reaches (a fully masked row, huge scores), saying so.

A student's code is untrusted
-----------------------------
Every call of the student's function runs in an :class:`attnlab.guard.sandbox.Session`: what it
changes (``attention.*``, the default dtype, grad mode, the shared model's parameters and
hooks) is put back and named in the ✗ message ("your function changed
`attention.masked_softmax`; it was put back"); it has a time budget (about 2 s a call, 10 s
for an ``in_model``); what it prints is shown once, cut to a few lines; whatever it raises,
``SystemExit`` included, becomes a ✗ message; the user's KeyboardInterrupt stops the check
with a message.  The references are the library's own functions, captured at import
(:data:`attnlab.guard.library.LIBRARY`), and run with the library in place
(:func:`attnlab.guard.library.library_in_place`).

The package: :mod:`~attnlab.checks.results` (what a check answers),
:mod:`~attnlab.checks.harness` (running a check and the student's function),
:mod:`~attnlab.checks.compare` (the comparisons that name what is wrong),
:mod:`~attnlab.checks.exercises` (one module per family of exercises, each with its
references and its checks), :mod:`~attnlab.checks.inside_models` (the exercises inside the
trained models), :mod:`~attnlab.checks.questions` (predict, then run) and
:mod:`~attnlab.checks.course` (nbgrader's instructor version).

Questions
---------
``check_answer(question, answer, **measured)`` checks a predict-then-run answer of
:data:`QUESTIONS` against an answer computed, never stored (and not handed out); the cell that
measures the answer shows it only once ``answered(answer)``.
"""

from __future__ import annotations

from attnlab.checks.compare import ATOL, ROW_SUM_TOL, RTOL
from attnlab.checks.exercises import (
    EXERCISES,
    check_additive_score,
    check_decode_step,
    check_dot_score,
    check_encoder_block,
    check_general_score,
    check_masked_softmax,
    check_multi_head_attention,
    check_positional_encoding,
    check_scaled_dot_product_attention,
    exercise,
    reference,
    summary,
)
from attnlab.checks.harness import ENV_VAR, solutions_mode
from attnlab.checks.inside_models import (
    ALPHA_TOL,
    IN_MODEL,
    IN_MODEL_DATES,
    IN_MODEL_SEED,
    in_model,
)
from attnlab.checks.isolated import graded
from attnlab.checks.questions import (
    D_K,
    PAD_DATE,
    PAD_TO,
    QUESTIONS,
    answered,
    check_answer,
    padded_alpha,
)
from attnlab.checks.results import CATEGORIES, CheckResult, Summary

__all__ = [
    "ENV_VAR",
    "EXERCISES",
    "CATEGORIES",
    "ATOL",
    "RTOL",
    "ROW_SUM_TOL",
    "CheckResult",
    "solutions_mode",
    "exercise",
    "reference",
    "check_dot_score",
    "check_general_score",
    "check_additive_score",
    "check_masked_softmax",
    "check_decode_step",
    "check_scaled_dot_product_attention",
    "check_multi_head_attention",
    "check_positional_encoding",
    "check_encoder_block",
    "IN_MODEL",
    "IN_MODEL_DATES",
    "IN_MODEL_SEED",
    "ALPHA_TOL",
    "in_model",
    "graded",
    "QUESTIONS",
    "PAD_DATE",
    "PAD_TO",
    "D_K",
    "check_answer",
    "answered",
    "padded_alpha",
    "Summary",
    "summary",
]
