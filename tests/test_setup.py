"""The set-up: the same pins everywhere, README's two commands, CI.

* environment.yml (conda, Binder, JupyterHub) and pyproject.toml pin identical versions;
* README.md opens with ``make slides`` and ``make test``;
* ``.ci/run`` runs ``make test``, and ``make test`` lints with ruff and runs the tests.
"""

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

# pins verified to work together here
VERIFIED = {
    "torch": "2.13.0",
    "jupyterlab": "4.6.6",
    "notebook": "7.6.5",
    "jupyterlab-rise": "0.43.1",
    "ipywidgets": "8.1.2",
    "jupyterlab-widgets": "3.0.10",
    "widgetsnbextension": "4.0.10",
    "matplotlib": "3.11.2",
    "nbval": "0.11.0",
}
NOT_PINS = {"python", "pip"}


def normalise(name: str) -> str:
    """PEP 503 name: jupyterlab_widgets, JupyterLab.Widgets -> jupyterlab-widgets."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_pin(spec: str, operator: str) -> tuple[str, str]:
    """'name==1.2' (pip) or 'name=1.2' (conda) -> (normalised name, version)."""
    match = re.fullmatch(rf"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*{operator}\s*([^\s;,]+)\s*", spec)
    if match is None:
        raise AssertionError(f"not an exact pin with {operator!r}: {spec!r}")
    return normalise(match.group(1)), match.group(2)


def pyproject_pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        specs += extra
    pins: dict[str, str] = {}
    for spec in specs:
        name, version = parse_pin(spec, "==")
        assert pins.setdefault(name, version) == version, f"{name} pinned twice differently"
    return pins


def environment() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def environment_pins() -> dict[str, str]:
    pins: dict[str, str] = {}

    def add(name: str, version: str) -> None:
        assert pins.setdefault(name, version) == version, f"{name} pinned twice differently"

    for dep in environment()["dependencies"]:
        if isinstance(dep, dict):  # the pip section
            for line in dep["pip"]:
                if line.startswith(("-", ".")):  # -e ., --extra-index-url URL, ./path
                    continue
                add(*parse_pin(line, "=="))
        elif normalise(re.split(r"[=<>!\s]", dep)[0]) not in NOT_PINS:
            add(*parse_pin(dep, "="))
    return pins


def test_pyproject_and_environment_pin_the_same_versions():
    in_pyproject, in_environment = pyproject_pins(), environment_pins()
    assert in_pyproject, "pyproject.toml pins nothing"
    only_pyproject = sorted(set(in_pyproject) - set(in_environment))
    only_environment = sorted(set(in_environment) - set(in_pyproject))
    assert not only_pyproject, f"pinned in pyproject.toml only: {only_pyproject}"
    assert not only_environment, f"pinned in environment.yml only: {only_environment}"
    differ = {
        name: (in_pyproject[name], in_environment[name])
        for name in in_pyproject
        if in_pyproject[name] != in_environment[name]
    }
    assert not differ, f"different versions (pyproject, environment.yml): {differ}"


def test_the_verified_pins_are_kept():
    pins = pyproject_pins()
    for name, version in VERIFIED.items():
        assert pins.get(name) == version, f"{name} must stay pinned at {version}"


def test_environment_is_conda_forge_python_311_with_the_package():
    env = environment()
    assert env["channels"] == ["conda-forge"]
    conda = [dep for dep in env["dependencies"] if isinstance(dep, str)]
    assert "python=3.11" in [dep.replace(" ", "") for dep in conda]
    (pip_section,) = [dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict)]
    installs_package = [line for line in pip_section if re.fullmatch(r"(-e\s+)?\.", line.strip())]
    assert installs_package, "environment.yml must install the package itself (-e . or .)"


def test_pyproject_accepts_python_311():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "attnlab"
    assert project["requires-python"] == ">=3.11"


# --------------------------------------------------------------------------- README and CI
def fenced_blocks(markdown: str) -> list[list[str]]:
    """The lines of each ``` fenced code block, in order."""
    return [
        block.strip("\n").splitlines()
        for block in re.findall(r"^```[^\n]*\n(.*?)^```", markdown, flags=re.M | re.S)
    ]


def test_readme_opens_with_make_slides_and_make_test():
    readme = ROOT / "README.md"
    assert readme.exists(), "README.md is missing"
    text = readme.read_text()
    blocks = fenced_blocks(text)
    assert blocks, "README.md has no code block"
    commands = shell_commands("\n".join(blocks[0]))
    assert commands == ["make slides", "make test"]
    # a few lines saying what the project is come before the commands
    before = text.split("```", 1)[0]
    prose = [line for line in before.splitlines() if line.strip() and not line.startswith("#")]
    assert prose, "README.md should say what the project is above the two commands"
    assert len(before.splitlines()) <= 40, "the two commands should open README.md"


def shell_commands(script: str) -> list[str]:
    """The commands of a shell script: its lines without comments, blank lines dropped."""
    lines = (re.sub(r"(^|\s)#.*$", "", line).strip() for line in script.splitlines())
    return [line for line in lines if line]


def test_ci_runs_make_test():
    run = ROOT / ".ci" / "run"
    assert run.exists() and run.stat().st_mode & 0o111, ".ci/run must be an executable script"
    commands = shell_commands(run.read_text())
    # "runs make test and nothing else": besides it, only shell options, a cd to the root and
    # the install of Debian's chromium when it is missing (the browser tests need it)
    others = [
        c
        for c in commands
        if not re.match(r"(set\s+-.*|cd\s+\S.*|scripts/ensure_e2e_deps\.sh)$", c)
    ]
    assert others in (["make test"], ["exec make test"]), f".ci/run also runs: {others}"
    assert "scripts/ensure_e2e_deps.sh" in commands
    assert "apt-get install" in (ROOT / "scripts" / "ensure_e2e_deps.sh").read_text()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["slides", "test"])
def test_makefile_has_the_readme_targets(target):
    # -n: print the recipe without running it
    result = subprocess.run(
        ["make", "-n", target], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_test_lints_and_runs_every_test():
    result = subprocess.run(
        ["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    recipe = result.stdout
    assert re.search(r"ruff check", recipe), "make test must run ruff check"
    assert re.search(r"ruff format --check", recipe), "make test must run ruff format --check"
    assert re.search(r"pytest .*tests", recipe), "make test must run the unit tests"
    assert "--nbval" in recipe, "make test must run the notebooks"
