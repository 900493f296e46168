"""One command line, ``python -m attnlab COMMAND``, and build tooling that goes only where told.

* ``python -m attnlab --help`` lists every command, and each command has its own ``--help``;
* no other module of the package parses arguments or runs as ``__main__``, and the
  documentation names only the one command line;
* no module finds the repository from its own location (``Path(__file__).parents[2]``);
* reading the cached real-language results loads neither the corpus builder nor torch.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from attnlab.__main__ import COMMANDS, main

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "attnlab"
EXPECTED = ("train", "length", "language", "figures", "deck", "corpus", "course")


def modules() -> dict[str, ast.Module]:
    return {
        str(path.relative_to(SRC)): ast.parse(path.read_text(), str(path))
        for path in sorted(SRC.rglob("*.py"))
    }


def test_help_lists_every_command():
    run = subprocess.run(
        [sys.executable, "-m", "attnlab", "--help"], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    listing = run.stdout.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    listed = re.findall(r"^  (\w+)  ", listing, flags=re.M)
    assert listed == list(COMMANDS) == list(EXPECTED)
    assert "usage: python -m attnlab" in run.stdout


@pytest.mark.parametrize("name", EXPECTED)
def test_each_command_has_its_own_help(name, capsys):
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m attnlab {name}")
    assert COMMANDS[name].summary in out


def test_an_unknown_command_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit) as done:
        main(["fly"])
    assert done.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "fly" in errors[0]


def test_no_other_module_is_a_command_line():
    """Only __main__ imports argparse, defines a module-level main or runs as __main__."""
    found = []
    for name, tree in modules().items():
        if name == "__main__.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                imported = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                if "argparse" in imported:
                    found.append(f"{name}: imports argparse")
            if isinstance(node, ast.Compare) and ast.unparse(node) == "__name__ == '__main__'":
                found.append(f"{name}: if __name__ == '__main__'")
        if any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
            found.append(f"{name}: def main")
    assert not found


def test_the_installed_script_is_the_one_command_line():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"attnlab": "attnlab.__main__:main"}


def documents() -> dict[str, str]:
    paths = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").glob("*.md"))]
    for folder in ("src", "tests", "benchmarks", "scripts"):
        paths += sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".sh"))
    paths.remove(Path(__file__).resolve())  # this file spells the patterns it looks for
    paths.append(ROOT / "notebooks" / "07_attention.py")
    return {str(p.relative_to(ROOT)): p.read_text() for p in paths}


def test_the_documents_name_only_the_one_command_line():
    """Every `python -m attnlab` in the repository is the program alone (quoted), `--help`, or
    one of its commands; no `python -m attnlab.MODULE` and no subprocess of one is left."""
    allowed = {*COMMANDS, "--help", "COMMAND", "{train"}
    wrong = []
    for name, text in documents().items():
        for match in re.finditer(r"python -m attnlab(\S*)(?: +(\S+))?", text):
            rest, word = match.groups()
            word = (word or "").rstrip("`'\".,;:)")
            alone = rest[:1] in ("`", "'", '"', ")")
            if not alone and (rest or word not in allowed):
                wrong.append(f"{name}: {match.group(0)}")
        wrong += [f"{name}: {m}" for m in re.findall(r'"-m",\s*"attnlab\.[\w.]+"', text)]
    assert not wrong


def test_make_targets_run_the_commands():
    make = (ROOT / "Makefile").read_text()
    target = lambda name: make.split(f"\n{name}:", 1)[1].split("\n\n", 1)[0]  # noqa: E731
    assert "-m attnlab figures --out pics" in target("pics")
    train = target("train")
    for command in (
        "-m attnlab train --all --replace-shipped",
        "-m attnlab length --replace-shipped",
        "-m attnlab corpus --card docs/data-card.md",
        "-m attnlab train --language all --replace-shipped",
        "-m attnlab language",
        "-m attnlab deck",
    ):
        assert command in train


def test_no_module_finds_the_repository_from_its_own_location():
    """Build tooling reads and writes the paths it is given: no module climbs from its own
    file above the package (``Path(__file__).parents[k]`` past ``src/attnlab``), which
    would find nothing once the package is installed from a wheel."""
    reaching = []
    for name, tree in modules().items():
        depth = len(Path(name).parts) - 1  # folders between the module and src/attnlab
        for node in ast.walk(tree):
            if not isinstance(node, ast.Subscript) or not isinstance(node.slice, ast.Constant):
                continue
            climbed = ast.unparse(node.value)
            if climbed.startswith("Path(__file__)") and climbed.endswith(".parents"):
                if node.slice.value > depth:
                    reaching.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert not reaching


@pytest.mark.parametrize(
    "reader",
    [
        "from attnlab.experiments.language import load_results",
        "from attnlab.experiments.length import load_results",
        "from attnlab.pictures.figures import write_all",  # draws from the results files
    ],
)
def test_reading_the_results_loads_no_corpus_no_training_and_no_torch(reader):
    code = (
        f"import sys\n{reader}\n"
        "names = ('torch', 'attnlab.text.corpus', 'attnlab.text.catalogs', 'attnlab.training')\n"
        "print([m for m in names if m in sys.modules])"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]", run.stdout


def test_the_readers_read_the_shipped_results():
    from attnlab.experiments import language, length

    assert {"scores", "word_order", "table2"} <= set(language.load_results())
    assert length.load_results()["bins"] == length.BINS


def test_language_measures_with_the_checkpoints_and_into_the_file_given(
    monkeypatch, tmp_path, capsys
):
    from attnlab.experiments import language_run

    calls = []
    model = {"bleu": 20.0, "chrf": 40.0, "train_seconds": 60.0}
    example = {"source": "close", "output": "fermer"}
    results = {
        "scores": {"models": {"m": model}, "baselines": {"en-fr": {"copy": 1, "dictionary": 2}},
                   "signatures": {}},
        "word_order": example, "verb_final": example, "alpha_vs_occlusion": {"agreement": 0.5},
    }  # fmt: skip
    monkeypatch.setattr(language_run, "run", lambda *args: calls.append(args) or results)
    out = tmp_path / "language.json"
    assert main(["language", "--checkpoints", str(tmp_path), "--out", str(out)]) == 0
    assert calls == [(tmp_path, out)]
    printed = capsys.readouterr().out
    assert "m: BLEU 20.0, chrF 40.0" in printed and printed.strip().endswith(f"-> {out}")


def test_deck_writes_the_measurements_where_it_is_told(monkeypatch, tmp_path, capsys):
    import attnlab.__main__ as command_line
    from attnlab.lecture.measurements import MEASUREMENTS_FILE

    written = []
    monkeypatch.setattr(command_line, "write_measurements", lambda p: written.append(p) or p)
    assert main(["deck", "--out", str(tmp_path / "deck.json")]) == 0
    assert main(["deck"]) == 0
    assert written == [tmp_path / "deck.json", MEASUREMENTS_FILE]
    assert f"wrote {tmp_path / 'deck.json'}" in capsys.readouterr().out
