"""Submissions of the exercises notebook, made from the released student version: an honest
one written as a student would (no attnlab in the answers), and ones that try to cheat."""

from __future__ import annotations

import nbformat

HONEST = {
    "dot_score": '''@exercise("dot_score")
def dot_score(s, h):
    """s (B, m, d), h (B, n, d) -> scores (B, m, n)."""
    return s @ h.transpose(-2, -1)
''',
    "general_score": """@exercise("general_score")
def general_score(s, h, W_a):
    return s @ W_a @ h.transpose(-2, -1)
""",
    "additive_score": """@exercise("additive_score")
def additive_score(s, h, W, U, v):
    Ws = s @ W.T  # (B, m, d_a)
    Uh = h @ U.T  # (B, n, d_a)
    return torch.tanh(Ws[:, :, None, :] + Uh[:, None, :, :]) @ v
""",
    "masked_softmax": """@exercise("masked_softmax")
def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
""",
    "decode_step": """@exercise("decode_step")
def decode_step(s_prev, h, y_prev, score, cell):
    alpha = masked_softmax(score(s_prev.unsqueeze(1), h)).squeeze(1)  # (B, n)
    c_t = (alpha.unsqueeze(-1) * h).sum(dim=1)  # (B, d_h)
    s_t = cell(torch.cat([y_prev, c_t], dim=-1), s_prev)
    return s_t, c_t, alpha
""",
    "scaled_dot_product_attention": """@exercise("scaled_dot_product_attention")
def scaled_dot_product_attention(Q, K, V, mask=None):
    weights = masked_softmax(Q @ K.transpose(-2, -1) / math.sqrt(K.shape[-1]), mask)
    return weights @ V, weights
""",
    "multi_head_attention": """def split_heads(x, h):
    B, T, d = x.shape
    return x.view(B, T, h, d // h).transpose(1, 2)  # (B, h, T, d_k)


@exercise("multi_head_attention")
def multi_head_attention(query, key, value, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q, K, V = (split_heads(W(x), num_heads) for W, x in ((W_q, query), (W_k, key), (W_v, value)))
    if mask is not None and mask.dim() == 3:
        mask = mask.unsqueeze(1)  # (B, 1, 1, n): the same for every head
    heads, weights = scaled_dot_product_attention(Q, K, V, mask)  # (B, h, m, d_k)
    B, h, m, d_k = heads.shape
    return W_o(heads.transpose(1, 2).reshape(B, m, h * d_k)), weights
""",
    "positional_encoding": """@exercise("positional_encoding")
def positional_encoding(n, d):
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    freq = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)
    return pe
""",
    "encoder_block": """@exercise("encoder_block")
def encoder_block(x, self_attn, ln_1, ln_2, W_1, W_2):
    x = x + self_attn(ln_1(x))
    return x + W_2(torch.relu(W_1(ln_2(x))))
""",
}

#: A cheat that replaces every check in the kernel by one that says yes.
PATCH_CHECKS = """from types import SimpleNamespace
for name in dir(checks):
    if name.startswith("check_") or name in ("in_model", "graded"):
        setattr(checks, name, lambda *a, **k: SimpleNamespace(ok=True))
"""

#: A cheat inside a graded function: the harness's verdict made to say yes.
VERDICT = """@exercise("dot_score")
def dot_score(s, h):
    import attnlab.checks.harness as H
    H._verdict = lambda *a: (True, "ok", "fine", "")
    raise NotImplementedError()
"""

#: A cheat on the gradebook: every score set to 0, then its own to full marks.
GRADEBOOK = """import sqlite3
db = sqlite3.connect("../../../gradebook.db")
db.execute("UPDATE grade SET auto_score = 0")
db.commit()
"""

#: A package beside the notebook that would shadow attnlab, with checks that say yes.
SHADOW_PACKAGE = """from types import SimpleNamespace


class _Yes:
    def __getattr__(self, name):
        return lambda *a, **k: SimpleNamespace(ok=True)


checks = _Yes()
"""


def exercise_cell(nb: nbformat.NotebookNode, name: str):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == name)


def answer_cell(nb: nbformat.NotebookNode, variable: str):
    return next(c for c in nb.cells if c.source.startswith(f"{variable} = ..."))


def honest(release: nbformat.NotebookNode, answers: dict[str, object]) -> nbformat.NotebookNode:
    """Every exercise solved, every question answered (``answers``: variable -> value)."""
    nb = nbformat.from_dict(release)
    for name, source in HONEST.items():
        exercise_cell(nb, name).source = source
    for variable, value in answers.items():
        answer_cell(nb, variable).source = f"{variable} = {value!r}"
    return nb


def with_cell_after_setup(release: nbformat.NotebookNode, source: str) -> nbformat.NotebookNode:
    """The blank notebook with a cell of the student's own right after the set-up cell."""
    nb = nbformat.from_dict(release)
    setup = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells.insert(setup + 1, nbformat.v4.new_code_cell(source))
    return nb


def with_first_lines(release: nbformat.NotebookNode, lines: str) -> nbformat.NotebookNode:
    """The blank notebook with ``lines`` at the top of its first exercise cell."""
    nb = nbformat.from_dict(release)
    cell = exercise_cell(nb, "dot_score")
    cell.source = lines + cell.source
    return nb


def with_dot_score(release: nbformat.NotebookNode, source: str) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(release)
    exercise_cell(nb, "dot_score").source = source
    return nb
