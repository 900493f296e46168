"""More machines: the Zero to JupyterHub deployment in deploy/z2jh/.

* values.yaml, merged over the chart's defaults as helm merges them, passes the chart's own
  values schema (vendored unchanged in deploy/z2jh/schema/), and that schema refuses a
  misspelt key;
* the per-student CPU and memory follow the measured cost of a Run-All of the deck; the idle
  culler, the pre-puller, the placeholders and the ngshare exchange are set up; no secret is
  in the file;
* the single-user image pins what pyproject.toml pins, and builds where a container builder
  answers.
"""

import hashlib
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
Z2JH = ROOT / "deploy" / "z2jh"
SCHEMA = Z2JH / "schema"

# One student's Run-All of the deck as measured (benchmarks/student.py): resident memory of the
# kernel, and its CPU seconds.  The room presses Run-All in the lecture's first minute.
KERNEL_RSS_MB = 415
RUN_ALL_CPU_S = 6
FIRST_MINUTE_S = 60
LECTURE_S = 90 * 60
# KubeSpawner's byte units (singleuser.memory): K, M, G, T are powers of 1024.
UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
SECRET_KEYS = {"cookiesecret", "secrettoken", "apitoken", "api_token", "password", "client_secret"}


def load(path: Path):
    return yaml.safe_load(path.read_text())


def values() -> dict:
    return load(Z2JH / "values.yaml")


def coalesce(defaults: dict, overrides: dict) -> dict:
    """helm's merge of user values over a chart's: maps merge key by key, a null removes the
    key, anything else replaces."""
    merged = dict(defaults)
    for key, value in overrides.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = coalesce(merged[key], value)
        else:
            merged[key] = value
    return merged


def schema_errors(user_values: dict) -> list[str]:
    schema = load(SCHEMA / "values.schema.yaml")
    merged = coalesce(load(SCHEMA / "values.defaults.yaml"), user_values)
    validator = jsonschema.Draft7Validator(schema)
    return [
        f"{'.'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
        for error in validator.iter_errors(merged)
    ]


def megabytes(quantity) -> float:
    if isinstance(quantity, int | float):
        return quantity / 2**20
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT])", str(quantity))
    assert match, f"not a KubeSpawner byte quantity: {quantity!r}"
    return float(match.group(1)) * UNITS[match.group(2)] / 2**20


def test_values_pass_the_charts_schema():
    assert schema_errors(values()) == []


@pytest.mark.parametrize(
    "misspelt",
    [
        {"singleuser": {"memory": {"limt": "2G"}}},  # additionalProperties: false, nested
        {"singleusr": {"cpu": {"limit": 2}}},  # additionalProperties: false, at the top
        {"cull": {"timeout": "two hours"}},  # a number
        {"singleuser": {"cpu": {"guarantee": "0.5"}}},  # a number, not a string
    ],
)
def test_the_schema_refuses_a_misspelt_or_mistyped_value(misspelt):
    assert schema_errors(coalesce(values(), misspelt)) != []


def git_blob_id(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_the_vendored_chart_files_are_the_releases_unchanged():
    readme = (SCHEMA / "README.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \|.*\| `([0-9a-f]{40})` \|$", readme, re.MULTILINE)
    assert {name for name, _ in rows} == {
        "values.schema.yaml",
        "values.defaults.yaml",
        "Chart.yaml",
        "LICENSE",
    }
    for name, blob in rows:
        assert git_blob_id(SCHEMA / name) == blob, f"{name} differs from the chart release"
    assert "BSD 3-Clause License" in (SCHEMA / "LICENSE").read_text()
    assert load(SCHEMA / "Chart.yaml")["name"] == "jupyterhub"


def test_memory_holds_a_run_all_with_headroom_and_a_second_kernel():
    memory = values()["singleuser"]["memory"]
    guarantee, limit = megabytes(memory["guarantee"]), megabytes(memory["limit"])
    # the kernel plus the Jupyter server (~150 MB), 20 % above it: the node never overcommits
    # what a class uses at once
    assert guarantee >= 1.2 * (KERNEL_RSS_MB * 1e6 / 2**20 + 150)
    # nbgrader's Validate (or the exercises) runs a second kernel beside the deck's
    assert limit >= guarantee + 2 * KERNEL_RSS_MB * 1e6 / 2**20
    assert limit <= 4 * 1024, "a limit far above the use hides a leak until the node runs out"


def test_cpu_runs_the_deck_within_the_first_minute_and_threads_match_the_limit():
    singleuser = values()["singleuser"]
    cpu = singleuser["cpu"]
    assert cpu["guarantee"] * FIRST_MINUTE_S >= RUN_ALL_CPU_S
    assert cpu["limit"] >= cpu["guarantee"]
    # more torch threads than the CPU limit are throttled, not faster
    assert int(singleuser["extraEnv"]["OMP_NUM_THREADS"]) == cpu["limit"]


def test_idle_servers_are_culled_but_never_during_a_lecture():
    cull = values()["cull"]
    assert cull["enabled"] is True
    assert cull["timeout"] >= LECTURE_S
    assert 0 < cull["every"] <= cull["timeout"] / 4
    assert cull.get("users", False) is False, "users are kept: only their servers stop"


def test_the_image_is_on_every_node_before_the_first_minute():
    merged = coalesce(load(SCHEMA / "values.defaults.yaml"), values())
    assert merged["prePuller"]["hook"]["enabled"] is True
    assert merged["prePuller"]["continuous"]["enabled"] is True
    scheduling = merged["scheduling"]
    assert scheduling["userScheduler"]["enabled"] is True
    # placeholders give way to students only through their lower pod priority
    assert scheduling["userPlaceholder"]["enabled"] is True
    assert scheduling["podPriority"]["enabled"] is True
    # a room logging in at once is not turned away at the chart's default of 64
    assert merged["hub"]["concurrentSpawnLimit"] >= 100


def test_ngshare_is_the_exchange_and_every_server_may_reach_it():
    hub = values()["hub"]
    assert hub["services"]["ngshare"]["url"] == "http://ngshare:8080"
    scope = "access:services!service=ngshare"
    roles = hub["loadRoles"]
    assert scope in roles["user"]["scopes"] and "self" in roles["user"]["scopes"]
    # the server role keeps JupyterHub's own scopes and gains the service
    assert {"users:activity!user", "access:servers!server", scope} <= set(roles["server"]["scopes"])
    config = (Z2JH / "nbgrader_config.py").read_text()
    assert "configureExchange(c, " in config
    assert re.search(r'"http://proxy-public/services/ngshare"', config)


def walk(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield path + (str(key),), value
            yield from walk(value, path + (str(key),))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, path + (str(index),))


def test_no_secret_is_in_the_values_and_https_waits_for_a_domain():
    found = [".".join(path) for path, value in walk(values()) if path[-1].lower() in SECRET_KEYS]
    assert found == [], f"secrets belong in the chart's generated Secret or site.yaml: {found}"
    assert values()["proxy"]["https"]["enabled"] is False


def test_first_start_copies_the_deck_once_and_never_replaces_a_students_copy(tmp_path):
    command = values()["singleuser"]["lifecycleHooks"]["postStart"]["exec"]["command"]
    assert command[:2] == ["sh", "-c"] and "/opt/attnlab" in command[2]
    source = tmp_path / "opt"
    (source / "notebooks").mkdir(parents=True)
    (source / "notebooks" / "07_attention.ipynb").write_text("shipped")
    home = tmp_path / "home"
    home.mkdir()
    script = command[2].replace("/opt/attnlab", str(source))
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}

    subprocess.run(["sh", "-c", script], env=env, check=True)
    deck = home / "attnlab" / "notebooks" / "07_attention.ipynb"
    assert deck.read_text() == "shipped"

    deck.write_text("the student's notes")
    (source / "notebooks" / "07_attention.ipynb").write_text("a newer image")
    subprocess.run(["sh", "-c", script], env=env, check=True)
    assert deck.read_text() == "the student's notes"


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject_pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        specs += extra
    pins = {}
    for spec in specs:
        name, version = re.fullmatch(r"\s*([A-Za-z0-9._-]+)==([^\s;]+)\s*", spec).groups()
        pins[normalise(name)] = version
    return pins


def dockerfile() -> str:
    return (Z2JH / "Dockerfile").read_text()


def dockerfile_pins() -> dict[str, str]:
    lines = [line for line in dockerfile().splitlines() if not line.lstrip().startswith("#")]
    found = re.findall(
        r"(?<![\w.-])([A-Za-z][A-Za-z0-9._-]*)==([0-9][^\s\"'\\]*)", "\n".join(lines)
    )
    pins: dict[str, str] = {}
    for name, version in found:
        assert pins.setdefault(normalise(name), version) == version, f"{name} pinned twice"
    return pins


def test_the_images_pins_are_pyprojects():
    ours, image = pyproject_pins(), dockerfile_pins()
    # The image's own two: jupyterhub-singleuser speaks the API of the chart's hub image, so it
    # is that JupyterHub (a single-machine hub may pin another), and the ngshare exchange.
    assert image["jupyterhub"] == load(SCHEMA / "Chart.yaml")["appVersion"]
    own = {"jupyterhub", "ngshare-exchange"}
    assert own <= set(image)
    for name, version in image.items():
        if name not in own:
            assert name in ours, f"{name}=={version} in the image is not pinned in pyproject"
            assert version == ours[name], (
                f"{name}: the image pins {version}, pyproject {ours[name]}"
            )
    assert image["torch"] == ours["torch"] and image["nbgrader"] == ours["nbgrader"]
    # the rest of the pins come from pyproject itself: the package with its lab extra
    assert re.search(r'pip install "/tmp/attnlab\[lab\]"', dockerfile())
    assert "--index-url https://download.pytorch.org/whl/cpu torch==" in dockerfile()
    base = re.search(r"^FROM (\S+)", dockerfile(), re.MULTILINE).group(1)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+", base), f"base image not pinned: {base}"


def builder_answers() -> tuple[bool, str]:
    docker = shutil.which("docker")
    if docker is None:
        return False, "no `docker` command on this machine"
    info = subprocess.run([docker, "info"], capture_output=True, text=True, timeout=60)
    if info.returncode != 0:
        last = (info.stderr.strip().splitlines() or ["no output"])[-1]
        return False, f"`docker info` exits {info.returncode}: {last}"
    return True, ""


@pytest.mark.slow
def test_the_single_user_image_builds():
    answers, why = builder_answers()
    if not answers:
        pytest.skip(f"no container builder here, the image is not built: {why}")
    # BuildKit, for the Dockerfile's own .dockerignore (the context is only what it copies);
    # the Dockerfile's last step loads every shipped model and imports the exchange.
    build = subprocess.run(
        ["docker", "build", "-f", str(Z2JH / "Dockerfile"), "-t", "attnlab-singleuser:test", "."],
        cwd=ROOT,
        env={**os.environ, "DOCKER_BUILDKIT": "1"},
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    run = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "attnlab-singleuser:test",
            "sh",
            "-c",
            "id -u && ls /opt/attnlab/notebooks /opt/attnlab/pics >/dev/null && "
            'python -c \'import attnlab; print(attnlab.load("rnnsearch-dates").translate("3 May 1979"))\'',
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.stdout.split() == ["1000", "1979-05-03"]
