"""The command line: ``python -m attnlab COMMAND`` (``attnlab COMMAND`` once installed).

    python -m attnlab train --model rnnsearch --task dates    # one model -> the user's folder
    python -m attnlab train --all --replace-shipped           # the shipped date/reverse models
    python -m attnlab train --language all --replace-shipped  # the four word models
    python -m attnlab length --replace-shipped                # the length experiment
    python -m attnlab language                                # the real-language analysis
    python -m attnlab figures --out pics                      # every picture in pics/
    python -m attnlab deck                                    # the deck's slow measurements
    python -m attnlab corpus --card docs/data-card.md --force # the corpus and its data card
    python -m attnlab course source NOTEBOOK COURSE_DIR       # nbgrader's instructor version
    python -m attnlab course autograde COURSE_DIR             # grade in the sandbox

``python -m attnlab --help`` lists the commands, ``python -m attnlab COMMAND --help`` the
options of one.  This module only reads the arguments, refuses bad ones (argparse's message
and exit status 2) and reports; what a command does is a function of the module it names.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NoReturn

from attnlab import files
from attnlab.checks import course
from attnlab.experiments import language, language_run, length, length_run
from attnlab.lecture.measurements import MEASUREMENTS_FILE, write_measurements
from attnlab.models.registry import MODEL_KINDS
from attnlab.pictures.figures import FIGURES, write_all
from attnlab.text import catalogs, corpus, seen
from attnlab.text.data_card import data_card
from attnlab.text.tasks import TASKS
from attnlab.training import checkpoints, runs
from attnlab.training.config import Recipe, checkpoint_name, default_configs, recipe

PROG = "python -m attnlab"
MAX_SEED = 2**32 - 1
#: --flag -> (training config field, lowest, highest): the sizes a training run may override.
SIZES = {
    "--max-steps": ("max_steps", 1, 10_000_000),
    "--eval-every": ("eval_every", 1, 10_000_000),
    "--batch-size": ("batch_size", 1, 65_536),
    "--n-train": ("n_train", 1, 1_000_000),
    "--n-valid": ("n_valid", 1, 100_000),
    "--n-test": ("n_test", 1, 100_000),
}


# --------------------------------------------------------------------------- argument types
def int_in(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: a whole number in [lo, hi]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be between {lo} and {hi}; got {text[:40]}")
        return value

    return parse


def fraction(text: str) -> float:
    """An argparse type: a number in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number") from None
    if not (math.isfinite(value) and 0 < value <= 1):
        raise argparse.ArgumentTypeError(f"must be in (0, 1]; got {text[:40]}")
    return value


def path_arg(text: str) -> Path:
    """An argparse type: a path (not empty, no NUL byte)."""
    if not text or "\x00" in text:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a path")
    return Path(text)


def _refuse(p: argparse.ArgumentParser, message: str) -> NoReturn:
    """Refuse before any work, as argparse refuses a bad argument: one line, exit status 2."""
    p.exit(2, f"{p.prog}: error: {message}\n")


def _fail(p: argparse.ArgumentParser, message: str) -> int:
    """Work that could not be done: one line on stderr; returns the exit status 1."""
    print(f"{p.prog}: error: {message}", file=sys.stderr)
    return 1


# --------------------------------------------------------------------------- train
def _train_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", choices=list(MODEL_KINDS), help="the kind of model to train")
    p.add_argument("--task", default="dates", choices=list(TASKS))
    p.add_argument("--all", action="store_true", help="retrain every shipped dates model")
    p.add_argument(
        "--language",
        choices=[*runs.WORD_MODELS, "all"],
        help="train a real-language model (English->French/German) by its name, or all four",
    )
    p.add_argument(
        "--seed", type=int_in(0, MAX_SEED), help=f"0..{MAX_SEED} (default: the recipe's)"
    )
    for flag, (field, lo, hi) in SIZES.items():
        p.add_argument(flag, type=int_in(lo, hi), dest=field, help=f"override ({lo}..{hi})")
    stop = p.add_mutually_exclusive_group()
    stop.add_argument("--target", type=fraction, help="early stop at this held-out exact match")
    stop.add_argument("--no-target", action="store_true", help="train the whole step budget")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--out", type=path_arg, help=f"folder (default: {files.user_checkpoint_dir()})"
    )
    where.add_argument(
        "--replace-shipped", action="store_true", help="write into the package's checkpoints"
    )


def _train_recipes(p: argparse.ArgumentParser, args) -> dict:
    """Checkpoint name -> the recipe to train it by (the arguments' changes made)."""
    if args.language:
        if args.model or args.all:
            p.error("give --language alone, or --model (and --task), or --all")
        names = runs.WORD_MODELS if args.language == "all" else [args.language]
        recipes = {name: recipe(name) for name in names}
    elif args.all == bool(args.model):
        p.error("give --model (and --task), or --all")
    elif args.all:
        recipes = {name: recipe(name) for name in runs.DATE_MODELS}
    else:
        kind, task = args.model, args.task
        recipes = {checkpoint_name(kind, task): Recipe(kind, task, *default_configs(kind, task))}
    return {name: _with_arguments(run, args) for name, run in recipes.items()}


def _with_arguments(run, args):
    """``run`` with the seed, sizes and target the arguments give."""
    changes = {field: getattr(args, field) for field, _, _ in SIZES.values()}
    changes = {k: v for k, v in changes.items() if v is not None}
    if args.seed is not None:
        changes["seed"] = args.seed
    if args.target is not None:
        changes["target"] = args.target
    if args.no_target:
        changes["target"] = None
    return replace(run, train=replace(run.train, **changes))


def _train_folder(args) -> Path:
    """Where the checkpoints go: the package's folder (the one :mod:`attnlab.training.checkpoints`
    loads from) only with --replace-shipped."""
    if args.replace_shipped:
        return checkpoints.CHECKPOINT_DIR
    folder = args.out if args.out is not None else files.user_checkpoint_dir()
    if folder.resolve() == checkpoints.CHECKPOINT_DIR:
        raise files.FolderError(
            f"{folder} holds the shipped models: add --replace-shipped to replace them"
        )
    return folder


def _train(p: argparse.ArgumentParser, args) -> int:
    recipes = _train_recipes(p, args)
    try:
        out = _train_folder(args)
        files.check_writable(out, list(recipes))
        for name in recipes:  # a NAME.json of the user's is never replaced by a checkpoint
            checkpoints.check_replaceable(out, name)
    except (files.FolderError, checkpoints.CheckpointError) as err:
        _refuse(p, str(err))
    print(f"writing checkpoints to {out}", flush=True)
    try:
        for name, run in recipes.items():
            runs.train_and_save(name, out, run)
            print(f"  load it with attnlab.load({name!r}, directory={str(out)!r})")
    except catalogs.CatalogError as err:
        return _fail(p, str(err))
    except KeyboardInterrupt:
        print(f"{p.prog}: interrupted; the checkpoints in {out} are whole", file=sys.stderr)
        return 130
    return 0


# --------------------------------------------------------------------------- length
def _length_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--eval-only", action="store_true", help="measure, do not train")
    p.add_argument(
        "--max-steps", type=int_in(1, 10_000_000), default=None, help="override the step budget"
    )
    p.add_argument(
        "--only", nargs="+", choices=list(length.REVERSE_MODELS), help="train only these"
    )
    p.add_argument("--checkpoints", type=path_arg, help="checkpoint folder (default: the user's)")
    p.add_argument("--out", type=path_arg, default=None, help="results file")
    p.add_argument(
        "--replace-shipped", action="store_true", help="write the shipped checkpoints and results"
    )


def _length_paths(args) -> tuple[Path, Path]:
    """(checkpoint folder, results file): the shipped ones by default only with
    --replace-shipped; without it, the user's folder and ``results/length.json`` beside it."""
    shipped = checkpoints.CHECKPOINT_DIR
    if args.replace_shipped:
        return args.checkpoints or shipped, args.out or length.RESULTS_FILE
    reading = args.eval_only and args.checkpoints is None
    folder = shipped if reading else (args.checkpoints or files.user_checkpoint_dir())
    return folder, args.out or files.user_checkpoint_dir().parent / "results" / "length.json"


def _length(p: argparse.ArgumentParser, args) -> int:
    folder, out = _length_paths(args)
    if not args.replace_shipped:
        trains_shipped = not args.eval_only and folder.resolve() == checkpoints.CHECKPOINT_DIR
        if trains_shipped or out.resolve() == length.RESULTS_FILE:
            _refuse(p, "that replaces shipped files: add --replace-shipped")
    try:
        if not args.eval_only:
            files.check_writable(folder, list(length.REVERSE_MODELS))
        files.check_writable(out.parent, [])
    except files.FolderError as err:
        _refuse(p, str(err))
    print(f"checkpoints: {folder}; results: {out}", flush=True)
    if not args.eval_only:
        runs.train_length_models(folder, names=args.only, max_steps=args.max_steps)
    length_run.run(out=out, checkpoint_dir=folder)
    return 0


# --------------------------------------------------------------------------- language
def _language_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--checkpoints", type=path_arg, help=f"folder of the models ({checkpoints.CHECKPOINT_DIR})"
    )
    p.add_argument("--out", type=path_arg, help=f"results file ({language.RESULTS_FILE})")


def _language(p: argparse.ArgumentParser, args) -> int:
    results = language_run.run(args.checkpoints, args.out)
    for name, s in results["scores"]["models"].items():
        wall = s["train_seconds"]
        print(f"{name}: BLEU {s['bleu']}, chrF {s['chrf']} ({wall:.0f} s of training, 2 cores)")
    for pair, b in results["scores"]["baselines"].items():
        print(f"{pair} baselines: copy {b['copy']}, dictionary {b['dictionary']}")
    print("signatures:", results["scores"]["signatures"])
    print("word order:", results["word_order"]["source"], "->", results["word_order"]["output"])
    print("verb final:", results["verb_final"]["source"], "->", results["verb_final"]["output"])
    print("alpha vs occlusion agreement:", results["alpha_vs_occlusion"]["agreement"])
    print(f"-> {args.out or language.RESULTS_FILE}")
    return 0


# --------------------------------------------------------------------------- figures
def _figures_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=path_arg, default=Path("pics"), help="folder (default: pics)")
    p.add_argument(
        "--only",
        nargs="+",
        choices=list(FIGURES),
        metavar="NAME",
        help=f"draw only these ({', '.join(FIGURES)})",
    )


def _figures(p: argparse.ArgumentParser, args) -> int:
    """Exit status 1 if a picture could not be written or drawn."""
    try:
        written, skipped = write_all(args.out, args.only, log=print)
    except OSError as err:
        return _fail(p, f"cannot write to {args.out}: {err}")
    if skipped:
        print(f"{len(skipped)} picture(s) not drawn: {', '.join(skipped)}", file=sys.stderr)
        return 1
    print(f"{len(written)} picture(s) in {args.out}")
    return 0


# --------------------------------------------------------------------------- deck
def _deck_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=path_arg, default=MEASUREMENTS_FILE, help="the JSON file")


def _deck(p: argparse.ArgumentParser, args) -> int:
    print(f"wrote {write_measurements(args.out)}")
    return 0


# --------------------------------------------------------------------------- corpus
def _corpus_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--catalogs", type=path_arg, help=f"folder of the wheels ({catalogs.catalog_dir()})"
    )
    p.add_argument(
        "--card", type=path_arg, help="write the data card there (the repository's: docs/...)"
    )
    p.add_argument("--force", action="store_true", help="replace the card, the shipped strings")


def _write_seen(built: dict, force: bool) -> None:
    """Each language's shipped strings into their files; one there already, made from another
    corpus, is replaced only with --force."""
    for what, path, data in (f for lang, b in built.items() for f in seen.shipped(lang, b.splits)):
        if path.exists() and (path.read_bytes() == data or not force):
            same = path.read_bytes() == data
            print(f"{what}: {path} " + ("unchanged" if same else "kept: add --force"))
        else:
            files.write_atomic(path, data)
            print(f"{what} -> {path}")


def _corpus(p: argparse.ArgumentParser, args) -> int:
    # before the build: a path it cannot write is known at once (the card; the shipped
    # strings it ships: those missing, or all with --force)
    targets = [] if args.card is None else [("--card: ", args.card, args.force)]
    shipped = [f(lang) for lang in corpus.LANGS for f in (seen.seen_path, seen.held_out_path)]
    targets += [("", path, True) for path in shipped if args.force or not path.exists()]
    for prefix, path, again in targets:
        try:
            files.check_file_target(path, replace=again)
        except files.FolderError as err:
            _refuse(p, f"{prefix}{err}")
    folder = args.catalogs or catalogs.catalog_dir()
    start = time.perf_counter()
    try:
        built = {lang: corpus.build(lang, folder) for lang in corpus.LANGS}
    except catalogs.CatalogError as err:
        return _fail(p, str(err))
    seconds = time.perf_counter() - start
    for lang, b in built.items():
        n = {s: len(v) for s, v in b.splits.items()}
        print(f"EN->{lang.upper()}: {sum(n.values())} pairs {n} from {b.raw} catalog entries")
    print(f"built in {seconds:.2f} s")
    if args.card is not None:
        try:
            files.write_atomic(args.card, data_card(built, seconds, folder))
        except OSError as err:  # the folder changed while the corpus was built
            return _fail(p, f"cannot write {args.card}: {err.strerror or err}")
        print(f"data card -> {args.card}")
    try:
        _write_seen(built, args.force)
    except OSError as err:  # the folder changed while the corpus was built
        return _fail(p, f"cannot write the shipped strings: {err.strerror or err}")
    return 0


# --------------------------------------------------------------------------- course
def _course_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        help="`source NOTEBOOK COURSE_DIR`: write the instructor version; "
        "`autograde COURSE_DIR`: grade the submissions in the sandbox "
        "(`NOTEBOOK COURSE_DIR` alone means `source`)",
    )
    p.add_argument("paths", nargs="*", type=path_arg, help="the notebook and/or the course folder")
    p.add_argument(
        "--assignment", default=course.ASSIGNMENT, help=f"(default: {course.ASSIGNMENT})"
    )
    p.add_argument(
        "--force", action="store_true", help="replace an existing source notebook (kept as .bak)"
    )
    p.add_argument(
        "--student", action="append", help="autograde only this student (may be repeated)"
    )


def _course(p: argparse.ArgumentParser, args) -> int:
    action, paths = args.action, list(args.paths)
    if action not in ("source", "autograde"):  # `course NOTEBOOK COURSE_DIR`
        action, paths = "source", [path_arg(action), *paths]
    wanted = 2 if action == "source" else 1
    if len(paths) != wanted:
        usage = "NOTEBOOK COURSE_DIR" if action == "source" else "COURSE_DIR"
        _refuse(p, f"`course {action}` takes {usage}; got {len(paths)} path(s)")
    if action == "source":
        try:
            print(course.write_source(*paths, args.assignment, args.force))
        except course.CourseError as err:
            return _fail(p, str(err))
        return 0
    # Only when autograding: the other commands never load nbgrader (the test extra).
    from attnlab.checks import autograde

    try:
        autograde.autograde(paths[0], args.assignment, args.student)
    except autograde.AutogradeError as err:
        return _fail(p, str(err))
    return 0


# --------------------------------------------------------------------------- the commands
@dataclass(frozen=True)
class Command:
    """One command: what it does in a line, the arguments it reads, the function that runs it
    (returning the exit status), and examples for its --help."""

    summary: str  # one line: the top-level --help and the command's description
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.ArgumentParser, argparse.Namespace], int]
    examples: str = ""


COMMANDS = {
    "train": Command(
        "train a recipe, measure it, save a checkpoint (the user's folder unless told)",
        _train_arguments,
        _train,
        "  train --model rnnsearch --task dates       # -> the user's folder\n"
        "  train --model rnnsearch --out my-models    # -> my-models/rnnsearch-dates.*\n"
        "  train --all --replace-shipped              # the shipped date/reverse models\n"
        "  train --language rnnsearch-en-fr --out my-models\n"
        "  train --language all --replace-shipped     # the four word models",
    ),
    "length": Command(
        "the length experiment: train RNNencdec and RNNsearch on reversal, measure by length",
        _length_arguments,
        _length,
        "  length --replace-shipped   # train, measure, ship (make train)\n"
        "  length                     # the same into the user's folder\n"
        "  length --eval-only         # re-measure the shipped checkpoints",
    ),
    "language": Command(
        "measure the word models on the test split: scores, examples, heads (results/)",
        _language_arguments,
        _language,
    ),
    "figures": Command("draw the lecture's pictures (pics/*.png)", _figures_arguments, _figures),
    "deck": Command(
        "measure what the deck shows slowly (FLOPs, the head study) into results/deck.json",
        _deck_arguments,
        _deck,
    ),
    "corpus": Command(
        "build the English->French/German corpus; write its data card and training strings",
        _corpus_arguments,
        _corpus,
        "  corpus                             # print the counts\n"
        "  corpus --card docs/data-card.md --force   # and write the data card (make train)",
    ),
    "course": Command(
        "nbgrader: write the exercises' instructor version; autograde in the sandbox",
        _course_arguments,
        _course,
        "  course source notebooks/07_attention_exercises.ipynb ~/attention-course\n"
        "  course autograde ~/attention-course",
    ),
}


def _top_parser() -> argparse.ArgumentParser:
    width = max(map(len, COMMANDS))
    listing = "\n".join(f"  {name:<{width}}  {c.summary}" for name, c in COMMANDS.items())
    p = argparse.ArgumentParser(
        prog=PROG,
        description="The lecture's command line: train, measure, draw, build, hand out.",
        epilog=f"commands:\n{listing}\n\n{PROG} COMMAND --help: the options of one command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "command", choices=list(COMMANDS), metavar="COMMAND", help="one of the commands below"
    )
    p.add_argument("arguments", nargs=argparse.REMAINDER, help="the command's own arguments")
    return p


def command_parser(name: str) -> argparse.ArgumentParser:
    """The parser of one command."""
    command = COMMANDS[name]
    examples = "\n".join(
        f"  {PROG} {line.strip()}" for line in command.examples.splitlines() if line.strip()
    )
    p = argparse.ArgumentParser(
        prog=f"{PROG} {name}",
        description=command.summary,
        epilog=f"examples:\n{examples}" if examples else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.arguments(p)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit status (argparse exits with 2 on bad arguments)."""
    args = _top_parser().parse_args(argv)
    p = command_parser(args.command)
    return COMMANDS[args.command].run(p, p.parse_args(args.arguments))


if __name__ == "__main__":
    raise SystemExit(main())
