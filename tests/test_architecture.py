"""docs/architecture.md names every module of the package (the map matches the house)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "attnlab"
DOC = ROOT / "docs" / "architecture.md"


def modules() -> list[str]:
    """Every module of src/attnlab as a dotted name (a package by its own name)."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def documented() -> set[str]:
    """The module names in the first column of the doc's module table."""
    rows = re.findall(r"^\| `(attnlab[\w.]*)`", DOC.read_text(), flags=re.MULTILINE)
    return set(rows)


def test_the_module_list_is_found():
    assert {"attnlab", "attnlab.attention", "attnlab.widgets"} <= set(modules())


def test_every_module_is_in_the_architecture_table():
    missing = [name for name in modules() if name not in documented()]
    assert not missing, f"docs/architecture.md has no row for: {', '.join(missing)}"


def test_the_table_names_no_module_that_is_gone():
    gone = sorted(documented() - set(modules()))
    assert not gone, f"docs/architecture.md names modules that do not exist: {', '.join(gone)}"
