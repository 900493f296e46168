r"""The library's attributes as imported, and a block run with them in place.

:data:`LIBRARY` holds the attributes of the library's modules and classes (``attention.
masked_softmax``, ``attention.MultiHeadAttention.forward``, ...) as they were when this module
was first imported.  :func:`library_in_place` runs a block with them in place, through the one
swap (:func:`attnlab.guard.parts.swapped`): a check's references, and the model around a
student's function, are the library's own even after a user replaced
``attention.masked_softmax``.  :class:`Attributes` is also what a session compares and puts
back after each call of a student's function (:mod:`attnlab.guard.sandbox`).
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
import math
import operator
import sys
from collections.abc import Iterator
from itertools import chain
from types import FunctionType, MappingProxyType, ModuleType

import torch
from torch import nn

import attnlab.attention
import attnlab.decode
import attnlab.models.base
import attnlab.models.rnn
import attnlab.models.transformer
from attnlab.guard import parts

__all__ = [
    "LIBRARY",
    "LIBRARY_OWNERS",
    "TORCH_OWNERS",
    "TORCH_CLASSES",
    "STANDING_OWNERS",
    "Attributes",
    "Standing",
    "ModuleEntries",
    "Builtins",
    "ModuleDicts",
    "module_dicts",
    "grading_modules",
    "as_imported",
    "library_in_place",
]


def label(owner: object, name: str) -> str:
    """How a message names ``owner.name``: "`attention.masked_softmax`"."""
    if isinstance(owner, ModuleType):
        full = owner.__name__
    else:
        full = f"{getattr(owner, '__module__', None)}.{owner.__qualname__}"
    return f"`{full.removeprefix('attnlab.')}.{name}`"


def _library_owners() -> list[object]:
    """The library's modules whose attributes the models read, and the classes they define."""
    modules = [
        attnlab.attention,
        attnlab.models.rnn,
        attnlab.models.transformer,
        attnlab.models.base,
        attnlab.decode,
        parts,
    ]
    classes = [
        value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, type) and value.__module__ == module.__name__
    ]
    return modules + classes


#: Dunders that Python itself adds or fills in as code runs (``cls.__annotations__`` read,
#: a warning's registry): not a change of the code.  Every other dunder counts
#: (``torch.Tensor.__matmul__ = mine`` changes every ``@``).
_VOLATILE = frozenset({"__annotations__", "__warningregistry__", "__doc__"})


def _same(now: object, saved: object) -> bool:
    """``now`` is ``saved``, or the same function (its code, on the same globals): the
    original of a function that :func:`_as_defined` took from the module's source."""
    if now is saved:
        return True
    functions = isinstance(now, FunctionType) and isinstance(saved, FunctionType)
    return functions and now.__code__ == saved.__code__ and now.__globals__ is saved.__globals__


class Attributes:
    """The attributes of some modules and classes, to compare with and put back.

    A snapshot is a plain copy of each ``vars(owner)`` and a comparison first asks, at C
    speed, whether every value is still the same object (a session does both around each
    call of a student's function, hundreds of times in one check); only an owner where one
    is not is looked at name by name."""

    def __init__(self, owners: list[object], strict: bool):
        self.saved = [(owner, dict(vars(owner))) for owner in owners]
        self.strict = strict  # new attributes count too

    def _unchanged(self, now: object, saved: dict) -> bool:
        if self.strict and now.keys() != saved.keys():
            return False
        return all(map(operator.is_, map(now.get, saved), saved.values()))

    def differences(self) -> list[tuple[object, str, object]]:
        """(owner, name, saved value) of each attribute that is not the saved one now; the
        saved value is :data:`attnlab.guard.parts.ABSENT` for an attribute added since."""
        found = []
        for owner, saved in self.saved:
            now = vars(owner)
            if self._unchanged(now, saved):
                continue
            names = (now.keys() | saved.keys()) if self.strict else saved.keys()
            for name in sorted(names - self.volatile):
                value = saved.get(name, parts.ABSENT)
                if value is parts.ABSENT and not self._counts_added(owner, now[name]):
                    continue
                if not _same(now.get(name, parts.ABSENT), value):
                    found.append((owner, name, value))
        return found

    volatile = _VOLATILE

    def _counts_added(self, owner: object, value: object) -> bool:
        """Whether an attribute added since the snapshot is a change (strict owners only)."""
        return True

    def restore(self) -> list[str]:
        """Put the saved attributes back; what was changed, as labels for a message."""
        changed = []
        for owner, name, value in self.differences():
            if value is parts.ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
            changed.append(label(owner, name))
        return changed


def _defined_here(value: object, module: ModuleType, name: str) -> bool:
    code = getattr(value, "__code__", None)
    return code is not None and code.co_filename == module.__file__ and code.co_name == name


def _as_defined(module: ModuleType) -> dict[str, FunctionType]:
    """The module's functions that a user replaced before this module was imported, as the
    module's source defines them.

    A fresh copy of the module is run once, only when such a function is found; each function
    of it is rebuilt on the live module's globals, so that it calls (and is swapped like) the
    live module's functions, as the original did."""
    replaced = [
        name
        for name, value in vars(module).items()
        if isinstance(value, FunctionType) and not _defined_here(value, module, name)
    ]
    if not replaced:
        return {}
    spec = importlib.util.spec_from_file_location(module.__name__, module.__file__)
    fresh = importlib.util.module_from_spec(spec)  # not in sys.modules: the live one stays
    spec.loader.exec_module(fresh)
    found = {}
    for name in replaced:
        defined = vars(fresh).get(name)
        if not _defined_here(defined, module, name):
            continue  # not one of the module's own functions (an import, a user's addition)
        rebuilt = FunctionType(
            defined.__code__, vars(module), name, defined.__defaults__, defined.__closure__
        )
        rebuilt.__kwdefaults__, rebuilt.__doc__ = defined.__kwdefaults__, defined.__doc__
        rebuilt.__qualname__, rebuilt.__annotations__ = (
            defined.__qualname__,
            defined.__annotations__,
        )
        found[name] = rebuilt
    return found


#: The library's attributes as imported (captured when attnlab.guard.library is first imported;
#: a module-level function the user replaced before that is taken from the module's source).
LIBRARY = Attributes(_library_owners(), strict=True)
for _owner, _saved in LIBRARY.saved:
    if isinstance(_owner, ModuleType):
        _saved.update(_as_defined(_owner))

LIBRARY.saved = tuple((owner, MappingProxyType(saved)) for owner, saved in LIBRARY.saved)

LIBRARY_OWNERS = [owner for owner, _ in LIBRARY.saved]

#: torch's own namespaces: a change of an existing attribute counts (new ones are lazy imports).
TORCH_OWNERS = [torch, torch.nn.functional, torch.nn.modules.module]
#: torch's classes the models run on: a new attribute counts too (``torch.Tensor.__matmul__``
#: is inherited, so setting it adds one).
TORCH_CLASSES = [torch.Tensor, nn.Module]


def _torch_nn_owners() -> list[object]:
    """torch.nn's modules (``torch.nn.modules.linear``, ...) and every class they define: a
    replaced ``torch.nn.Linear.forward`` makes every model wrong until a restart."""
    modules = [torch.nn, torch.nn.init] + [
        module
        for name, module in sorted(sys.modules.items())
        if name.startswith("torch.nn.modules") and isinstance(module, ModuleType)
    ]
    classes = {
        id(value): value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, type) and value.__module__.startswith("torch.nn.modules")
    }
    return modules + list(classes.values())


#: What a call of a student's function rarely touches and a session therefore saves once, when
#: it starts (:class:`Standing`): torch's namespaces and torch.nn's modules and classes,
#: ``math``, numpy's top level and ``sys`` (its hooks: ``sys.displayhook``, ...); the builtins
#: are :class:`Builtins`.
STANDING_OWNERS = [
    sys,
    math,
    *(m for m in (sys.modules.get("numpy"),) if m is not None),
    *(owner for owner in TORCH_OWNERS if owner is not torch.nn.modules.module),
    *(owner for owner in _torch_nn_owners() if owner not in TORCH_CLASSES),
    *TORCH_CLASSES,
]


class Standing(Attributes):
    """The attributes of :data:`STANDING_OWNERS`, saved once (when a session starts) and
    compared after each call in one pass at C speed: every owner's length, then every value by
    identity, then every name (owner by owner only when one of those differs).

    A class's new attribute counts (an inherited dunder set); a module's counts unless it is a
    module (a submodule imported lazily, ``torch._dynamo``).  Names that the interpreter
    itself sets as code runs are left alone (:attr:`volatile`)."""

    #: ``sys.last_value`` and its kin (an error shown), ``sys.stdout`` and its kin (redirected
    #: around a call, and put back, by :class:`~attnlab.guard.printed.Printed`).
    volatile = _VOLATILE | {"last_type", "last_value", "last_traceback", "last_exc"}
    volatile |= {"stdout", "stderr", "stdin"}
    #: ``torch.Storage`` follows the default dtype, which a check sets between calls (it is
    #: :class:`~attnlab.guard.state.TorchState`'s, saved before each call).
    volatile |= {"Storage"}

    def __init__(self, owners: list[object]):
        super().__init__(owners, strict=True)
        self.views = [vars(owner) for owner in owners]
        self._flatten()

    def _flatten(self) -> None:
        saved = [d for _, d in self.saved]
        self.lengths = list(map(len, saved))
        self.names = list(chain.from_iterable(saved))
        self.values = list(chain.from_iterable(map(dict.values, saved)))

    def unchanged(self) -> bool:
        """Every owner as saved (its names in the same order, each value the same object)."""
        views = self.views
        return (
            list(map(len, views)) == self.lengths
            and all(map(operator.is_, chain.from_iterable(map(_values, views)), self.values))
            and list(chain.from_iterable(views)) == self.names
        )

    def _counts_added(self, owner: object, value: object) -> bool:
        return isinstance(owner, type) or not isinstance(value, ModuleType)

    def restore(self) -> list[str]:
        if self.unchanged():
            return []
        changed = super().restore()
        # as now: the same values, in the order they are now in (put back ones last), and a
        # module's new submodules, so that the next comparison is one pass again
        self.saved = [
            (owner, dict(view)) for owner, view in zip(self.owners, self.views, strict=True)
        ]
        self._flatten()
        return changed

    @property
    def owners(self) -> list[object]:
        return [owner for owner, _ in self.saved]


_values = operator.methodcaller("values")


#: The entries of ``sys.modules`` a session guards: the library's, torch's, numpy's and math's
#: (``sys.modules["attnlab.attention"] = fake`` would make every later import get the fake).
_GUARDED_PACKAGES = ("attnlab", "torch", "numpy", "math")


class ModuleEntries:
    """The guarded entries of ``sys.modules`` (:data:`_GUARDED_PACKAGES`) as a session found
    them: compared by identity after each call, put back where replaced or deleted.  New
    entries are imports, which a call may make."""

    def __init__(self):
        self.saved = {
            name: module
            for name, module in list(sys.modules.items())
            if name.partition(".")[0] in _GUARDED_PACKAGES
        }
        self.names, self.modules = list(self.saved), list(self.saved.values())

    def restore(self) -> list[str]:
        modules = sys.modules
        if all(map(operator.is_, map(modules.get, self.names), self.modules)):
            return []
        changed = []
        for name, module in self.saved.items():
            if modules.get(name) is not module:
                modules[name] = module
                changed.append(f"`sys.modules[{name!r}]`")
        return changed


_BUILTINS = vars(builtins)


class Builtins:
    """The builtins as a session found them (``builtins.len``): put back before any other code
    of the guard runs after a call, since all of it calls them (so this code calls none but
    the ones it bound when it was defined)."""

    def __init__(self):
        self.saved = dict(vars(builtins))

    def restore(self, now=_BUILTINS, all=all, map=map, is_=operator.is_) -> list[str]:
        saved = self.saved
        if now.keys() == saved.keys() and all(map(is_, map(now.get, saved), saved.values())):
            return []
        before = now.copy()
        now.update(saved)  # the replaced and deleted ones first: no moment without them
        for name in now.keys() - saved.keys():
            del now[name]
        names = before.keys() | saved.keys()
        return [
            f"`builtins.{name}`"
            for name in sorted(names - {"_"})  # the last value shown: put back, not named
            if before.get(name, parts.ABSENT) is not saved.get(name, parts.ABSENT)
        ]


_GRADING: list = [-1, []]  # sys.modules' length when last listed, and the list


def grading_modules() -> list[ModuleType]:
    """The modules of the checks and of the guard now imported: their bindings and the
    contents of their dicts (a check's references, the library as imported) are the
    grading's own, which no call may change.  Listed again only when a module was imported
    since (``sys.modules`` grew): every session asks."""
    if len(sys.modules) != _GRADING[0]:
        _GRADING[:] = [
            len(sys.modules),
            [
                module
                for name, module in list(sys.modules.items())
                if name.startswith(("attnlab.checks", "attnlab.guard"))
                and isinstance(module, ModuleType)
            ],
        ]
    return list(_GRADING[1])


class ModuleDicts:
    """The contents of the dicts that modules hold (``REFERENCES``, ``IN_MODEL``): compared and
    put back; their bindings are :class:`Attributes`.  ``dicts``: the (owner, name, dict) to
    watch, found once (:func:`module_dicts`); each instance is one snapshot of them."""

    def __init__(self, dicts: list[tuple[object, str, dict]]):
        self.saved = [(owner, name, d, d.copy()) for owner, name, d in dicts]

    def restore(self) -> list[str]:
        changed = []
        for owner, name, d, saved in self.saved:
            if d.keys() == saved.keys() and all(
                map(operator.is_, map(d.get, saved), saved.values())
            ):
                continue
            d.clear()
            d.update(saved)
            changed.append(label(owner, name))
        return changed


def module_dicts(owners: list[object]) -> list[tuple[object, str, dict]]:
    """The plain dicts the ``owners`` hold, as (owner, name, dict)."""
    return [
        (owner, name, value)
        for owner in owners
        for name, value in list(vars(owner).items())
        if type(value) is dict and name != "__builtins__"
    ]


def as_imported(owner: object, name: str) -> object:
    """``owner.name`` as :data:`LIBRARY` holds it (the library's own, whatever is there now)."""
    return dict(LIBRARY.saved)[owner][name]


@contextlib.contextmanager
def library_in_place() -> Iterator[list[str]]:
    """Run the block with the library's own attributes; put the user's back afterwards.

    Yields the attributes that were not the library's when the block began (``["`attention.
    masked_softmax`"]`` after ``attention.masked_softmax = mine``).
    """
    with contextlib.ExitStack() as stack:
        replaced = []
        for owner, name, value in LIBRARY.differences():
            stack.enter_context(parts.swapped(owner, name, value))
            replaced.append(label(owner, name))
        yield replaced
