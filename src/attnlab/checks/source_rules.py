r"""What a graded cell may not use, read from its source (nothing of it runs here).

A graded function is the student's own computation.  Its cell imports only the maths it needs
(:data:`ALLOWED_MODULES`, and the two masks of the set-up), reads no private or special
attribute (``x._y``, ``f.__closure__``, ``m.__dict__``) and nothing of frames, generators,
tracebacks or code objects (``g.gi_frame``, ``f.f_back``, ``f.f_globals``), no attribute that leads out of the
maths (``torch.sys``, ``torch.ops``), uses no builtin that runs or reaches code by a string
(``eval``, ``getattr`` with a computed name, ``vars``, ``open``) and not the library itself
(``attnlab``, ``checks``).  Named first, where the cell plainly uses them: it may not call the library's
implementation of the same equation (``attention.dot_score`` in ``dot_score``, torch's
``scaled_dot_product_attention`` in ``scaled_dot_product_attention``), the graders' own code
(``attnlab.checks``, ``attnlab.guard``: the references, the solutions switch), the environment
(``os.environ``: the switch is read once by the instructor's tooling), or reach for names
that hide what is called (``__import__``, ``importlib``, ``eval``, ``exec``, ``sys.modules``,
``getattr`` on a module of ours).  :func:`forbidden` returns the first such use as one
sentence for the ✗ message, or None.

The cell is parsed, not matched as text: ``import attnlab.attention as A; A.dot_score`` and
``from attnlab.attention import dot_score as mine`` are found, a comment or a docstring that
mentions ``dot_score`` is not.
"""

from __future__ import annotations

import ast

__all__ = ["SETUP_NAMES", "SAME_EQUATION", "forbidden"]

#: The names the exercises' set-up cell binds, and what they are.
SETUP_NAMES = {
    "attnlab": "attnlab",
    "checks": "attnlab.checks",
    "exercise": "attnlab.checks.exercise",
    "causal_mask": "attnlab.attention.causal_mask",
    "padding_mask": "attnlab.attention.padding_mask",
    "torch": "torch",
    "math": "math",
}

#: exercise -> the last parts of the names that implement its equation, in attnlab or torch.
SAME_EQUATION = {
    "dot_score": {"dot_score", "DotScore", "scaled_dot_score", "ScaledDotScore", "make_score"},
    "general_score": {"general_score", "GeneralScore", "make_score", "bilinear", "Bilinear"},
    "additive_score": {"additive_score", "AdditiveScore", "make_score"},
    "masked_softmax": {"masked_softmax", "mask_scores"},
    "decode_step": {"decode_step", "RNNSearch"},
    "scaled_dot_product_attention": {"scaled_dot_product_attention", "attention"},
    "multi_head_attention": {
        "MultiHeadAttention",
        "MultiheadAttention",
        "multi_head_attention",
        "multi_head_attention_forward",
    },
    "positional_encoding": {"positional_encoding", "PositionalEncoding"},
    "encoder_block": {"EncoderLayer", "TransformerEncoderLayer", "encoder_block"},
}

#: What a graded cell may import: the maths it needs, nothing that reaches other code.
# (not typing: ``get_type_hints`` evaluates a string annotation, code reached by a string)
ALLOWED_MODULES = {"torch", "math", "numpy", "functools", "itertools", "collections"}
_ALLOWED_FROM_ATTNLAB = {"attnlab.attention.padding_mask", "attnlab.attention.causal_mask"}
#: Parts of a dotted name that lead out of the maths: other modules kept as attributes
#: (``torch.sys``), torch's operator registry, process and thread machinery, serialisation.
_OUT_OF_BOUNDS = {
    "sys", "os", "builtins", "importlib", "inspect", "types", "gc", "threading", "subprocess",
    "ctypes", "ctypeslib", "signal", "modules", "ops", "multiprocessing", "distributed",
    "utils", "hub", "library", "package", "jit", "compiler", "fx", "serialization", "pickle",
    "overrides", "testing", "backends",
}  # fmt: skip
#: Attributes of frames, generators, coroutines, tracebacks and code objects (``gi_frame``,
#: ``f_back``, ``f_globals``, ``tb_frame``, ``co_consts``): a way up the stack to the grader.
_INTROSPECTION = ("f_", "gi_", "cr_", "ag_", "tb_", "co_")
#: Builtins that run or reach code by a string, or touch files and the session.
_BUILTINS = {
    "eval", "exec", "compile", "globals", "locals", "vars", "open", "breakpoint", "input",
    "setattr", "delattr", "help", "exit", "quit", "memoryview",
}  # fmt: skip
_GRADERS = ("attnlab.checks", "attnlab.guard")
_ALLOWED_GRADER_NAMES = {"attnlab.checks.exercise"}  # the decorator the stub carries
_DYNAMIC = {"__import__", "eval", "exec", "compile", "globals", "vars", "__builtins__"}
_DYNAMIC_MODULES = {"importlib", "builtins", "ctypes"}
_ENVIRONMENT = {"environ", "getenv", "putenv", "unsetenv", "SOLUTIONS", "solutions_mode"}


def _dotted(node: ast.AST) -> list[str] | None:
    """['a', 'b', 'c'] for ``a.b.c``; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _bindings(tree: ast.AST) -> dict[str, str]:
    """Name -> the dotted name it was imported as, for the set-up's names and this cell's."""
    bound = dict(SETUP_NAMES)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _ours_or_torch(full: str) -> bool:
    return full.split(".")[0] in ("attnlab", "torch")


def _why(full: str, exercise: str | None) -> str | None:
    if any(full == g or full.startswith(g + ".") for g in _GRADERS):
        if full not in _ALLOWED_GRADER_NAMES:
            return f"uses `{full}` (the graders' own code: the references and the checks)"
    parts = full.split(".")
    if parts[0] in _DYNAMIC_MODULES:
        return f"uses `{full}` (a way to reach code without naming it)"
    if full in ("sys.modules",):
        return "uses `sys.modules` (a way to reach code without naming it)"
    if parts[-1] in _ENVIRONMENT and len(parts) > 1:
        return f"uses `{full}` (the environment, where the solutions switch lives)"
    same = SAME_EQUATION.get(exercise or "", set())
    named = parts[2:] if parts[:2] == ["attnlab", "attention"] else parts[1:]  # not the module
    if _ours_or_torch(full) and any(p in same for p in named):
        return (
            f"uses `{full}`, an implementation of the very equation the exercise asks you to write"
        )
    return None


def _import_from_why(node: ast.ImportFrom, exercise: str | None) -> str | None:
    for alias in node.names:
        if alias.name == "*" and _ours_or_torch(node.module or ""):
            return f"imports everything from `{node.module}`"
        why = _why(f"{node.module}.{alias.name}", exercise)
        if why:
            return why
    return None


def _node_why(node: ast.AST, bound: dict[str, str], exercise: str | None) -> str | None:
    """What this one node of the cell uses that a graded cell may not, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (
            "names `ATTNLAB_SOLUTIONS` (the solutions switch)"
            if ("ATTNLAB_SOLUTIONS" in node.value)
            else None
        )
    if isinstance(node, ast.Name) and node.id in _DYNAMIC:
        return f"uses `{node.id}` (a way to reach code without naming it)"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id in ("getattr", "setattr", "delattr") and node.args:
            root = _dotted(node.args[0])
            if root and _ours_or_torch(bound.get(root[0], "")):
                return f"uses `{node.func.id}` on `{'.'.join(root)}` (code reached by a string)"
        return None
    if isinstance(node, ast.ImportFrom) and node.module:
        return _import_from_why(node, exercise)
    if isinstance(node, ast.Import):
        return next((w for a in node.names if (w := _why(a.name, exercise))), None)
    if isinstance(node, ast.Attribute | ast.Name) and isinstance(node.ctx, ast.Load):
        parts = _dotted(node)
        if parts and parts[0] in bound:
            return _why(".".join([bound[parts[0]], *parts[1:]]), exercise)
    return None


def _import_why(node: ast.Import | ast.ImportFrom) -> str | None:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        names = [f"{node.module or ''}.{a.name}" for a in node.names]
    for name in names:
        parts = name.split(".")
        if name in _ALLOWED_FROM_ATTNLAB:
            continue
        if parts[0] not in ALLOWED_MODULES or _OUT_OF_BOUNDS & set(parts[1:]):
            allowed = ", ".join(sorted(ALLOWED_MODULES))
            return f"imports `{name}` (a graded cell imports only {allowed})"
    return None


def _getattr_why(node: ast.Call) -> str | None:
    name = node.args[1] if len(node.args) > 1 else None
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return "uses `getattr` with a computed name (code reached by a string)"
    if name.value.startswith("_") or name.value in _OUT_OF_BOUNDS:
        return f"uses `getattr` for `{name.value}` (it leads to other code)"
    return None


def _allowlist_why(node: ast.AST) -> str | None:
    """What a graded cell may not do whatever it names: import beyond :data:`ALLOWED_MODULES`,
    read a private or special attribute, use the library itself, or reach code by a string."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        return _import_why(node)
    if isinstance(node, ast.Attribute):
        if node.attr.startswith(_INTROSPECTION):
            return (
                f"reads `{node.attr}` (frames, code and tracebacks lead to the grader's own code)"
            )
        if node.attr.startswith("_"):
            return f"reads `{node.attr}` (private and special attributes lead to other code)"
        if node.attr in _OUT_OF_BOUNDS:
            return f"reads `{node.attr}` (it leads out of the maths, to other code)"
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        if node.id in _BUILTINS:
            return f"uses `{node.id}` (a way to run or reach code a graded function needs not)"
        if node.id in ("attnlab", "checks"):
            return f"uses `{node.id}` (the library and its checks: write the computation yourself)"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
        return _getattr_why(node)
    return None


def forbidden(source: str, exercise: str | None = None) -> str | None:
    """The first thing ``source`` (a graded cell) may not use, as a sentence; else None.

    ``exercise``: the exercise the cell defines (its own equation is then also forbidden), or
    None for an answer cell.  A cell that does not parse is left to fail when it runs.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    bound = _bindings(tree)
    named = next((w for node in ast.walk(tree) if (w := _node_why(node, bound, exercise))), None)
    return named or next((w for node in ast.walk(tree) if (w := _allowlist_why(node))), None)
