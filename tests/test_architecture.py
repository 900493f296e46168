"""The map matches the house: imports go one way, and docs/architecture.md names what exists.

* The floors: docs/architecture.md lists the folders top to bottom under "## Layers"; a
  module imports only from its own folder or from a floor below (no upward arrow, no arrow
  to a neighbour on its floor), every folder stands on a floor, no file in ``src/`` runs
  past 500 lines and at most 8 modules sit directly in ``src/attnlab``.
* No import circles: no module of ``src/attnlab`` imports one that imports it back (directly
  or through others).  Every ``import`` statement counts, wherever it is (inside a function,
  under ``if TYPE_CHECKING:``).
* At most :data:`MAX_FUNCTION_IMPORTS` imports inside functions in ``src/``, each with a
  comment (on its line or in the comment block above) saying what importing it at the top
  would cost (:data:`SAYS_THE_COST`: a time, a module that stays unloaded, a circle).
* docs/architecture.md has one row per module in its module table, and every name it
  mentions exists: in a row, each backticked ``name`` or ``Class.attribute`` is defined in
  that row's module; anywhere in the doc, ``Class.attribute`` of a class of the package and
  ``attnlab.module.name`` exist (attributes set in ``__init__`` count: ``self.alpha = ...``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "attnlab"
DOC = ROOT / "docs" / "architecture.md"
MAX_FUNCTION_IMPORTS = 8
IDENTIFIER = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")  # `name`, `Class.attr`, `a.b.c`


# --------------------------------------------------------------------------- the modules
@cache
def sources() -> dict[str, Path]:
    """Every module of src/attnlab by dotted name (a package by its own name) -> its file."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def modules() -> list[str]:
    return list(sources())


@cache
def tree(module: str) -> ast.Module:
    return ast.parse(sources()[module].read_text())


def imported(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The attnlab modules one import statement of ``module`` loads (by dotted name)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name.split(".")[0] == "attnlab"}
    base = node.module or ""
    if node.level:  # relative: from the package of ``module``, up level - 1
        package = module.split(".")
        if sources()[module].name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, *([node.module] if node.module else [])])
    if base.split(".")[0] != "attnlab":
        return set()
    # ``from attnlab import decode`` loads the module attnlab.decode, not just the package
    return {f"{base}.{a.name}" if f"{base}.{a.name}" in sources() else base for a in node.names}


def import_nodes(module: str) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement of ``module`` and whether it sits inside a function."""
    inside = {
        id(node)
        for fn in ast.walk(tree(module))
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(fn)
        if isinstance(node, (ast.Import, ast.ImportFrom))
    }
    return [
        (node, id(node) in inside)
        for node in ast.walk(tree(module))
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]


def packages(module: str) -> set[str]:
    """The packages above ``module``: ``attnlab.checks.harness`` -> attnlab, attnlab.checks."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


@cache
def import_graph() -> dict[str, set[str]]:
    """module -> the attnlab modules it imports (itself left out).

    Importing ``a.b.c`` first runs ``a/__init__`` and ``a/b/__init__``: those packages count
    too (a circle can run through a package's ``__init__``), except the importer's own
    packages, which Python has already started before it runs the importer."""
    graph = {}
    for m in modules():
        targets = {t for node, _ in import_nodes(m) for t in imported(m, node)}
        targets |= {p for t in targets for p in packages(t)}
        graph[m] = targets - packages(m) - {m}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected parts of two or more modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while not part or part[-1] != v:
                part.append(stack.pop())
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_module_list_is_found():
    assert {"attnlab", "attnlab.attention", "attnlab.widgets", "attnlab.__main__"} <= set(modules())


def test_the_import_graph_sees_every_kind_of_import():
    graph = import_graph()
    assert (
        "attnlab.attention" in graph["attnlab.models.transformer"]
    )  # from attnlab.attention import
    assert "attnlab.decode" in graph["attnlab.models.base"]  # translate() decodes
    assert "attnlab.training.checkpoints" in graph["attnlab"]  # inside load(): counted too
    # from attnlab.experiments import path_lengths: the package's __init__ runs first
    assert "attnlab.experiments" in graph["attnlab.pictures.figures.wavenet"]
    assert "attnlab.checks" not in graph["attnlab.checks.harness"]  # its own package: started


def test_the_circle_finder_finds_circles():
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_one_that_imports_it_back():
    graph = import_graph()
    back = sorted((a, b) for a in graph for b in graph[a] if a < b and a in graph.get(b, ()))
    assert not back, "modules importing each other: " + ", ".join(f"{a} <-> {b}" for a, b in back)
    assert not cycles(graph), f"import circles: {cycles(graph)}"


def test_nothing_imports_the_command_line():
    # ``python -m attnlab`` runs __main__.py as the program: a module importing attnlab.__main__
    # would run the command line's module a second time, as a module.
    graph = import_graph()
    assert not [m for m, imported in graph.items() if "attnlab.__main__" in imported]
    assert "attnlab.training.runs" in graph["attnlab.__main__"]


#: What a comment on an import inside a function must name: what importing it at the top
#: would cost, as a time ("1.6 s"), a module that stays unloaded ("never loads IPython",
#: "does not load torch") or an import circle.
SAYS_THE_COST = re.compile(
    r"\d\s*m?s\b|\b(?:never|not)\s+loads?\b|\bcircle|\bcycle", flags=re.IGNORECASE
)
PRAGMA = re.compile(r"#\s*(?:noqa|type|fmt|pragma|pylint)\b.*$")


def comment_of(lines: list[str], start: int, lineno: int) -> str:
    """The comments of lines ``start`` to ``lineno`` (1-based: from the enclosing ``def`` to
    the import), pragmas (``# noqa``, ``# type: ignore``) left out."""
    found = [line[line.index("#") :] for line in lines[start - 1 : lineno] if "#" in line]
    return " ".join(PRAGMA.sub("", c).strip() for c in found).strip()


def says_what_it_avoids(comment: str) -> bool:
    return bool(SAYS_THE_COST.search(comment))


def function_imports() -> list[tuple[str, int, str, str]]:
    """(module, line, statement, its comment) of every import inside a function; the comment
    is what the function says from its ``def`` line down to the import."""
    out = []
    for m in modules():
        lines = sources()[m].read_text().splitlines()
        start: dict[int, int] = {}  # import node -> line of the innermost def holding it
        for fn in ast.walk(tree(m)):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        start[id(node)] = max(start.get(id(node), 0), fn.lineno)
        for node, inside in import_nodes(m):
            if inside:
                why = comment_of(lines, start[id(node)], node.lineno)
                out.append((m, node.lineno, ast.unparse(node), why))
    return out


def test_at_most_eight_function_level_imports_each_saying_what_it_avoids():
    found = function_imports()
    listing = "\n".join(f"  {m}:{line} {stmt}" for m, line, stmt, _ in found)
    assert len(found) <= MAX_FUNCTION_IMPORTS, f"{len(found)} imports inside functions:\n{listing}"
    silent = [f"{m}:{line} {stmt}" for m, line, stmt, why in found if not says_what_it_avoids(why)]
    assert not silent, f"imports inside functions without a comment saying their cost: {silent}"


def test_the_comment_check_wants_the_cost_not_any_comment():
    lines = [
        "def f():",  # 1
        "    # Imported here so that `import attnlab` does not load torch (1.6 s).",
        "    if True:",
        "        import torch",  # 4
        "def g():",  # 5
        "    from IPython import display  # noqa: PLC0415",  # 6
        "def h():",  # 7
        "    # lazy",
        "    import sacrebleu  # type: ignore",  # 9
        "def i():",  # 10
        "    import a  # imported when scoring (0.2 s)",  # 11
        "def j():",  # 12
        "    # a circle: b imports this module",
        "    import b",  # 14
    ]
    assert comment_of(lines, 5, 6) == "" and comment_of(lines, 7, 9) == "# lazy"
    cases = [(1, 4), (5, 6), (7, 9), (10, 11), (12, 14)]
    said = [says_what_it_avoids(comment_of(lines, *case)) for case in cases]
    assert said == [True, False, False, True, True]


# --------------------------------------------------------------------------- the doc
def table() -> dict[str, str]:
    """The doc's module table: module name -> the text of its row."""
    rows = re.findall(r"^\| `(attnlab[\w.]*)` \|(.*)\|\s*$", DOC.read_text(), flags=re.MULTILINE)
    return dict(rows)


def names(text: str) -> list[str]:
    """The backticked identifiers of ``text`` (`name`, `Class.attr`; `name(...)` as name)."""
    found = []
    for code in re.findall(r"`([^`]+)`", text):
        code = re.sub(r"\(.*\)$", "", code.strip())  # `load(name)` -> load
        if IDENTIFIER.fullmatch(code):
            found.append(code)
    return found


@cache
def attributes(module: str, cls: str) -> set[str]:
    """Names a class of ``module`` defines: methods, class attributes, ``self.x = ...``."""
    out = set()
    for node in ast.walk(tree(module)):
        if not (isinstance(node, ast.ClassDef) and node.name == cls):
            continue
        for item in ast.walk(node):
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.add(item.name)
            targets = [item.target] if isinstance(item, (ast.AnnAssign, ast.AugAssign)) else []
            targets += item.targets if isinstance(item, ast.Assign) else []
            for target in targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Name) and item in node.body:
                        out.add(leaf.id)  # a class attribute or dataclass field
                    is_self = isinstance(leaf, ast.Attribute) and isinstance(leaf.value, ast.Name)
                    if is_self and leaf.value.id == "self":
                        out.add(leaf.attr)  # set on the instance
    return out


def has_attribute(owner: object, attr: str) -> bool:
    """``owner.attr`` exists: at run time, or (a class) set on its instances by its code."""
    if hasattr(owner, attr):
        return True
    if not inspect.isclass(owner):
        return False
    for base in owner.__mro__:
        if base.__module__ in sources() and attr in attributes(base.__module__, base.__name__):
            return True
    return False


def resolve(module: object, dotted: str) -> bool:
    """``module.a.b.c`` exists (each part an attribute of the one before)."""
    owner = module
    for part in dotted.split("."):
        if not has_attribute(owner, part):
            return False
        owner = getattr(owner, part, None)
    return True


@cache
def classes() -> dict[str, object]:
    """Every class defined in the package, by name (the doc's ``Class.attr`` refer to them)."""
    found = {}
    for m in modules():
        for name, obj in vars(importlib.import_module(m)).items():
            if inspect.isclass(obj) and obj.__module__ == m:
                found.setdefault(name, obj)
    return found


def test_every_module_is_in_the_architecture_table():
    missing = [name for name in modules() if name not in table()]
    assert not missing, f"docs/architecture.md has no row for: {', '.join(missing)}"


def test_the_table_names_no_module_that_is_gone():
    gone = sorted(set(table()) - set(modules()))
    assert not gone, f"docs/architecture.md names modules that do not exist: {', '.join(gone)}"


@pytest.mark.parametrize("module", sorted(table()))
def test_every_name_in_a_row_is_defined_in_that_module(module):
    assert module in sources(), f"docs/architecture.md has a row for {module}: no such module"
    mod = importlib.import_module(module)
    missing = [n for n in names(table()[module]) if not n.startswith("attnlab")]
    missing = [n for n in missing if not resolve(mod, n)]
    assert not missing, f"docs/architecture.md, row {module}: not in the module: {missing}"


def test_every_class_attribute_and_dotted_name_in_the_doc_exists():
    missing = []
    for name in set(names(DOC.read_text())):
        head, _, rest = name.partition(".")
        if head == "attnlab" and rest:
            parts = name.split(".")
            cut = max(i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in sources())
            module = importlib.import_module(".".join(parts[:cut]))
            if cut < len(parts) and not resolve(module, ".".join(parts[cut:])):
                missing.append(name)
        elif rest and head in classes() and not resolve(classes()[head], rest):
            missing.append(name)
    assert not missing, f"docs/architecture.md names what does not exist: {sorted(missing)}"


def test_the_attribute_check_catches_a_drifted_name():
    transformer = importlib.import_module("attnlab.models.transformer")
    assert resolve(classes()["MultiHeadAttention"], "alpha")  # self.alpha = ... in __init__
    assert resolve(classes()["MultiHeadAttention"], "forward")  # a method
    assert resolve(transformer, "Transformer.attention_weights")
    assert not resolve(classes()["MultiHeadAttention"], "from_torch")  # moved to the tests
    assert not resolve(transformer, "Transformer.causal_toggle")
    assert names("`a.b(x)`, `python -m x`, `c`, `<eos>`") == ["a.b", "c"]


# --------------------------------------------------------------------------- the layers
def layers() -> list[list[str]]:
    """The doc's folders, top to bottom: each line of its "## Layers" list, the names in it."""
    section = DOC.read_text().split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"\s*\d+\.\s", line)]
    return [re.findall(r"`(attnlab[\w.]*)`", row.split(":", 1)[0]) for row in rows]


def layer_of(module: str, floors: list[list[str]]) -> int:
    """The floor of ``module``: the floor of the longest doc name it is or lies under."""
    best, floor = "", -1
    for i, names in enumerate(floors):
        for name in names:
            # The package itself holds only its face (``attnlab.load``): no module lies under it.
            inside = module == name or (name != "attnlab" and module.startswith(name + "."))
            if inside and len(name) > len(best):
                best, floor = name, i
    return floor


def folder_of(module: str) -> str:
    """``attnlab.checks.exercises.scores`` -> attnlab.checks; a top-level module is its own."""
    return ".".join(module.split(".")[:2])


def upward(graph: dict[str, set[str]], floors: list[list[str]]) -> list[str]:
    """Every import that is not down the floors: from a lower floor to a higher one, or to
    another folder on the importer's own floor (floors are numbered from the top)."""
    return sorted(
        f"{a} -> {b}"
        for a, targets in graph.items()
        for b in targets
        if folder_of(a) != folder_of(b) and layer_of(b, floors) <= layer_of(a, floors)
    )


def test_every_module_stands_on_one_floor_of_the_doc():
    floors = layers()
    assert len(floors) >= 8, "docs/architecture.md lists the folders under ## Layers"
    unplaced = [m for m in modules() if layer_of(m, floors) < 0]
    assert not unplaced, f"modules on no floor of docs/architecture.md: {unplaced}"
    named = [n for names in floors for n in names]
    gone = [n for n in named if n not in sources()]
    assert not gone, f"docs/architecture.md names folders that are gone: {gone}"


def test_imports_only_go_down_the_floors_of_the_doc():
    bad = upward(import_graph(), layers())
    assert not bad, "imports from a lower floor to a higher one:\n  " + "\n  ".join(bad)


def test_the_floor_check_catches_an_upward_import():
    floors = [["attnlab.widgets", "attnlab.lecture"], ["attnlab.training"], ["attnlab.attention"]]
    graph = {
        "attnlab.widgets.head_view": {"attnlab.training.checkpoints", "attnlab.widgets._base"},
        "attnlab.training.loop": {"attnlab.widgets._base", "attnlab.attention"},  # upward
        "attnlab.lecture.display": {"attnlab.widgets.head_view"},  # a neighbour on its floor
        "attnlab.attention": set(),
    }
    assert upward(graph, floors) == [
        "attnlab.lecture.display -> attnlab.widgets.head_view",
        "attnlab.training.loop -> attnlab.widgets._base",
    ]


def test_every_folder_is_one_floor_and_the_top_stays_small():
    folders = {p.parent for p in PACKAGE.rglob("*.py")} - {PACKAGE}
    floors = layers()
    for folder in sorted(folders):
        name = "attnlab." + ".".join(folder.relative_to(PACKAGE).parts)
        assert layer_of(name, floors) >= 0, f"{name} is on no floor of docs/architecture.md"
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 8, f"{len(top)} modules directly in src/attnlab: {top}"


def test_no_file_in_src_is_over_500_lines():
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 500
    }
    assert not long, f"files over 500 lines: {long}"
