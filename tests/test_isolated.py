"""Graded checks: the student's cell runs in a worker, the verdict is reached outside it.

What the worker sends is data: a tensor subclass does not cross, a forged or broken answer
gives ✗ (never ✓), the rules on a graded cell's source name what was used, and the solutions
switch and the checks' own module are out of a student's reach.
"""

from __future__ import annotations

import json
import linecache

import pytest
import torch

from attnlab.checks import isolated, transport
from attnlab.checks.source_rules import forbidden

HONEST_DOT = '@exercise("dot_score")\ndef dot_score(s, h):\n    return s @ h.transpose(-2, -1)\n'


def cell(source: str, name: str):
    """A function defined by ``source`` as IPython defines a cell's (its source in linecache)."""
    filename = f"<cell {name} {abs(hash(source))}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(isolated.SETUP + "\n", "<setup>", "exec"), namespace)
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def graded_job(grade_ids: list[str], source: str, name: str = "dot_score"):
    job = isolated.Job([isolated.item(g) for g in grade_ids], [(name, source)])
    header, tensors = isolated.run_worker(job.request())
    return isolated.grade_job(job, header, tensors)


def test_an_honest_function_is_graded_right_in_the_worker():
    results = graded_job(["check_dot_score", "in_model_dot_score"], HONEST_DOT)
    assert all(r.ok for r in results.values()), {g: r.message for g, r in results.items()}


def test_graded_runs_the_functions_cell_not_the_kernels_function():
    fn = cell(HONEST_DOT, "dot_score")
    assert isolated.graded("check_dot_score", fn).ok
    blank = cell("def dot_score(s, h):\n    raise NotImplementedError()\n", "dot_score")
    result = isolated.graded("check_dot_score", blank)
    assert not result.ok and result.category == "not_implemented"


def test_a_tensor_subclass_that_says_yes_does_not_cross():
    source = (
        "class Yes(torch.Tensor):\n"
        "    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        return True\n\n"
        '@exercise("dot_score")\n'
        "def dot_score(s, h):\n"
        "    return (s @ h.transpose(-2, -1)).as_subclass(Yes)\n"
    )
    result = graded_job(["check_dot_score"], source)["check_dot_score"]
    assert not result.ok and result.category == "wrong_type" and "Yes" in result.details


def test_an_exception_is_named_with_its_line():
    source = '@exercise("dot_score")\ndef dot_score(s, h):\n    x = 1\n    return s @ y\n'
    result = graded_job(["check_dot_score"], source)["check_dot_score"]
    assert result.category == "exception" and "NameError" in result.details
    assert "line 4 of `dot_score`" in result.details


@pytest.mark.parametrize(
    "line",
    [
        'import os; os.environ["ATTNLAB_SOLUTIONS"] = "1"',
        "import attnlab.checks.harness as H; H.SOLUTIONS = True",
    ],
)
def test_the_solutions_switch_is_out_of_reach(line):
    blank = '@exercise("dot_score")\ndef dot_score(s, h):\n    raise NotImplementedError()\n'
    result = graded_job(["check_dot_score"], line + "\n" + blank)["check_dot_score"]
    assert not result.ok and result.category == "not_allowed"


def test_a_worker_that_lies_gets_no_point():
    """A forged answer: calls that return tensors the message does not hold, values of kinds
    we do not take, a missing function. Each is a ✗."""
    job = isolated.Job([isolated.item("check_dot_score")], [("dot_score", HONEST_DOT)])
    forged = [
        {"checks": {"dot_score": {"calls": [{"returned": {"tensor": "t9"}}] * 2}}},
        {"checks": {"dot_score": {"calls": [{"returned": {"plain": [1, 2]}}] * 2}}},
        {"checks": {"dot_score": {"calls": [{"returned": {"object": "Tensor"}}] * 2}}},
        {"checks": {"dot_score": {"calls": ["yes"]}}},
        {"checks": {"dot_score": {"missing": None}}},
        {},
    ]
    for header in forged:
        result = isolated.grade_job(job, header, {})["check_dot_score"]
        assert not result.ok, (header, result.message)


def test_right_values_for_other_inputs_do_not_pass():
    """The worker's answers are compared with references for the grader's own inputs: values
    computed on other inputs (a patched generator in the worker) are wrong."""
    other = torch.zeros(2, 3, 5)
    encoder = transport.Encoder()
    sent = [{"returned": encoder.encode(other)}, {"returned": encoder.encode(other)}]
    job = isolated.Job([isolated.item("check_dot_score")], [("dot_score", HONEST_DOT)])
    header = {"checks": {"dot_score": {"calls": sent}}}
    result = isolated.grade_job(job, header, encoder.tensors)["check_dot_score"]
    assert not result.ok and result.category == "mismatch"


def test_the_transport_refuses_what_is_not_a_message_of_ours():
    for message in (b"", b"\x05\x00\x00\x00\x00\x00\x00\x00{", b"\xff" * 9, b"not ours at all"):
        with pytest.raises(transport.TransportError):
            transport.unpack(message)
    header, tensors = transport.unpack(transport.pack({"a": 1}, {"t0": torch.ones(2)}))
    assert header == {"a": 1} and type(tensors["t0"]) is torch.Tensor
    pickled = transport.pack({"a": 1}, {})[:8] + json.dumps({"a": 1}).encode() + b"\x80\x04."
    with pytest.raises(transport.TransportError):
        transport.unpack(pickled)


@pytest.mark.parametrize(
    "source, exercise, words",
    [
        ('def f(s, h):\n    return checks.reference("dot_score")(s, h)\n', "dot_score", "checks"),
        (
            "import attnlab.attention as A\ndef f(s, h):\n    return A.dot_score(s, h)\n",
            "dot_score",
            "attnlab.attention.dot_score",
        ),
        ("from attnlab.attention import masked_softmax as m\n", "masked_softmax", "masked_softmax"),
        (
            "def f(Q, K, V, mask=None):\n    return torch.nn.functional.scaled_dot_product_attention"
            "(Q, K, V)\n",
            "scaled_dot_product_attention",
            "scaled_dot_product_attention",
        ),
        (
            "def f(x):\n    return getattr(attnlab.attention, 'dot_' + 'score')(x)\n",
            "dot_score",
            "getattr",
        ),
        (
            "def f(x):\n    return __import__('attnlab').attention.dot_score(x)\n",
            "dot_score",
            "__import__",
        ),
        ("x = 'ATTNLAB_SOLUTIONS'\n", None, "ATTNLAB_SOLUTIONS"),
        ("zeros = checks.QUESTIONS['padding_zeros'].right()\n", None, "attnlab.checks"),
    ],
)
def test_the_rules_name_what_a_graded_cell_used(source, exercise, words):
    why = forbidden(source, exercise)
    assert why is not None and words in why


@pytest.mark.parametrize(
    "source, exercise",
    [
        (HONEST_DOT, "dot_score"),
        (
            'def f(s, h):\n    """Like attention.dot_score, but mine."""\n    return s @ h.mT\n',
            "dot_score",
        ),
        (
            "def f(Q, K, V, mask=None):\n    m = padding_mask([3], 3)\n    return Q\n",
            "scaled_dot_product_attention",
        ),
        ("def f(scores, mask=None):\n    return torch.softmax(scores, dim=-1)\n", "masked_softmax"),
        ("zeros = 17\n", None),
    ],
)
def test_the_rules_leave_honest_cells_alone(source, exercise):
    assert forbidden(source, exercise) is None


def test_right_answer_is_not_handed_to_a_notebook():
    from attnlab import checks

    assert not hasattr(checks, "right_answer")
    with pytest.raises(ImportError):
        exec("from attnlab.checks import right_answer", {})
    with pytest.raises(ImportError):
        exec("from attnlab.checks.questions import right_answer", {})


@pytest.mark.parametrize(
    "body, exercise, words",
    [
        (
            '    return exercise("dot_score").__closure__[0].cell_contents(s, h)\n',
            "dot_score",
            "`dot_score` of `attnlab.attention`",
        ),
        (
            "    return attnlab.attention.__dict__['dot_' + 'score'](s, h)\n",
            "dot_score",
            "`dot_score` of `attnlab.attention`",
        ),
        (
            "    import sys\n    sys.setprofile(None)\n    return s @ h.transpose(-2, -1)\n",
            "dot_score",
            "turned off the grader's watch",
        ),
    ],
)
def test_the_watch_sees_the_library_called_however_it_was_reached(body, exercise, words):
    source = f"def {exercise}(s, h):\n{body}"
    results = graded_job([f"check_{exercise}", f"in_model_{exercise}"], source, exercise)
    for result in results.values():
        assert result.category == "not_allowed" and words in result.details, result.message


def test_the_watch_sees_torchs_fused_attention():
    source = (
        "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
        "    F = vars(torch.nn)['functional']\n"
        "    return F.scaled_dot_product_attention(Q, K, V, attn_mask=mask), None\n"
    )
    result = graded_job(
        ["check_scaled_dot_product_attention"], source, "scaled_dot_product_attention"
    )
    assert result["check_scaled_dot_product_attention"].category == "not_allowed"


@pytest.mark.parametrize(
    "source, words",
    [
        ("L = attnlab\nR = L.checks.exercises.reference\n", "`attnlab`"),
        ("import sys\ndef f(s, h):\n    w = sys.getprofile()\n", "imports `sys`"),
        ("import threading\n", "imports `threading`"),
        ("import typing\ndef g(x: 'checks.reference(1)'):\n    pass\n", "imports `typing`"),
        (
            "def f(s, h):\n    return torch.sys.modules['attnlab.attention'].dot_score(s, h)\n",
            "leads out of the maths",
        ),
        (
            "def f(Q, K, V):\n    return torch.ops.aten._scaled_dot_product_attention_math(Q, K, V)\n",
            "attribute",
        ),
        (
            "def f(s, h):\n    return exercise('dot_score').__closure__[0].cell_contents(s, h)\n",
            "`__closure__`",
        ),
        ("def f(x):\n    return getattr(x, 'o' + 'ps')\n", "computed name"),
        ("def f(x):\n    return vars(torch)\n", "`vars`"),
        (
            "def f(s, h):\n    def peek():\n        yield g.gi_frame.f_back\n"
            "    g = peek()\n    frame = next(g)\n    return frame.f_globals['reference']\n",
            "frames, code and tracebacks",
        ),
        (
            "def f(s, h):\n    try:\n        1 / 0\n    except Exception as e:\n"
            "        return e.with_traceback(None).tb_frame\n",
            "`tb_frame`",
        ),
    ],
)
def test_a_graded_cell_imports_only_the_maths_and_reaches_no_other_code(source, words):
    why = forbidden(source, "dot_score")
    assert why is not None and words in why, why


def test_the_honest_submission_breaks_no_rule():
    import submissions

    for name, source in submissions.HONEST.items():
        assert forbidden(source, name) is None, name
