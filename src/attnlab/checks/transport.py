r"""Plain data between the grading worker and the grader: what may cross, and how.

The worker (:mod:`attnlab.checks.worker`) runs a student's code; the grader
(:mod:`attnlab.checks.isolated`) never does, and believes nothing of the worker but data:
numbers, strings, lists and exact ``torch.Tensor`` s.  One message is a JSON header and a
safetensors blob (``pack`` / ``unpack``): JSON cannot hold code, and safetensors holds only
plain tensors (no pickle), so nothing the worker sends can run in the grader, and no tensor
subclass (whose ``__torch_function__`` could answer ``allclose`` with yes) survives the trip.

``encode(value)`` turns what a student's function returned into that data: a tensor becomes
a reference into the blob, tuples and lists keep their kind, numbers, strings and None stay,
anything else becomes ``{"object": type name}``, which the grader turns back into a
:class:`Foreign` of that name (so "should be a torch.Tensor, got MyTensor" still reads right).
"""

from __future__ import annotations

import json
import struct

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from torch import Tensor

__all__ = ["MAX_MESSAGE", "TransportError", "Foreign", "Encoder", "decode", "pack", "unpack"]

MAX_MESSAGE = 256 * 2**20  # bytes: far above what a check sends (alpha of 300 dates: ~4 MB)
_HEADER = struct.Struct("<Q")  # the JSON header's length, then the header, then the tensors


class TransportError(Exception):
    """The worker's answer is not a message of ours (cut short, too large, not JSON)."""


class Foreign:
    """Stands for a value of a type that does not cross (its name is the type's name)."""

    def __init__(self, has_array: bool = False):
        self.has_array = has_array

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


def _foreign(type_name: str, has_array: bool) -> Foreign:
    name = type_name if type_name.isidentifier() else "object"
    cls = type(name, (Foreign,), {})  # a class of the same name, for the message
    if has_array:
        cls.__array__ = lambda self: None  # "convert with torch.as_tensor" still applies
    return cls(has_array)


class Encoder:
    """Turns returned values into JSON-able data, collecting their tensors."""

    def __init__(self):
        self.tensors: dict[str, Tensor] = {}

    def encode(self, value: object, depth: int = 0) -> object:
        if depth > 4:  # a nested structure no exercise returns
            return {"object": type(value).__name__, "array": False}
        if type(value) is Tensor:  # exactly a tensor: a subclass does not cross
            if value.device.type != "cpu" or value.layout != torch.strided:
                return {"object": f"Tensor_on_{value.device.type}", "array": False}
            key = f"t{len(self.tensors)}"
            self.tensors[key] = value.detach().contiguous().clone()
            return {"tensor": key}
        if isinstance(value, bool) or value is None:
            return {"plain": value}
        if type(value) in (int, float, str):
            return {"plain": value if type(value) is not str else value[:1000]}
        if value is Ellipsis:
            return {"ellipsis": True}
        if type(value) in (tuple, list):
            return {type(value).__name__: [self.encode(v, depth + 1) for v in value[:16]]}
        return {"object": type(value).__name__, "array": hasattr(type(value), "__array__")}


def decode(data: object, tensors: dict[str, Tensor]) -> object:
    """The value :meth:`Encoder.encode` described (tensors from the message's blob)."""
    if not isinstance(data, dict) or len(data) not in (1, 2):
        raise TransportError("a value the worker sent is not one of ours")
    if "tensor" in data:
        tensor = tensors.get(data["tensor"])
        if type(tensor) is not Tensor:
            raise TransportError("the worker sent a reference to a missing tensor")
        return tensor
    if "plain" in data:
        value = data["plain"]
        if value is not None and type(value) not in (bool, int, float, str):
            raise TransportError("the worker sent a value of a kind we do not take")
        return value
    if "ellipsis" in data:
        return Ellipsis
    for kind in ("tuple", "list"):
        if kind in data and isinstance(data[kind], list):
            items = [decode(v, tensors) for v in data[kind]]
            return tuple(items) if kind == "tuple" else items
    if "object" in data and isinstance(data["object"], str):
        return _foreign(data["object"][:80], bool(data.get("array")))
    raise TransportError("a value the worker sent is not one of ours")


def pack(header: object, tensors: dict[str, Tensor]) -> bytes:
    """One message: the JSON ``header`` and the plain ``tensors``."""
    text = json.dumps(header).encode()
    blob = save_tensors(tensors) if tensors else b""
    return _HEADER.pack(len(text)) + text + blob


def unpack(message: bytes) -> tuple[object, dict[str, Tensor]]:
    """(header, tensors) of a message of :func:`pack`; TransportError if it is not one."""
    if len(message) > MAX_MESSAGE:
        raise TransportError(f"the worker's answer is larger than {MAX_MESSAGE >> 20} MB")
    if len(message) < _HEADER.size:
        raise TransportError("the worker stopped before it answered")
    (size,) = _HEADER.unpack_from(message)
    if size > len(message) - _HEADER.size:
        raise TransportError("the worker's answer is cut short")
    try:
        header = json.loads(message[_HEADER.size : _HEADER.size + size])
        blob = message[_HEADER.size + size :]
        tensors = load_tensors(blob) if blob else {}
    except Exception as error:  # noqa: BLE001 - whatever it is, it is not our message
        raise TransportError(f"the worker's answer is not a message of ours ({error})") from None
    if any(type(t) is not Tensor for t in tensors.values()):
        raise TransportError("the worker sent something that is not a plain tensor")
    return header, tensors
