"""The subject in another process: the judge's view of it, and the plain-data wire both sides speak.

The judge (the process that runs Hypothesis, the golden engine, bounds, comparisons and makes ``LawResult``) never
imports the implementation under test. The implementation runs in its own *subject process*
(``properties.running.subject_server``) that answers requests; the judge sees it through:

* an :class:`~properties.library.subject.Implementation` whose module is a stand-in made from the data the subject
  reported (its name, file, CONVENTIONS, SKIP_REASON, the components it provides: ``running.subject_server.
  stand_in``): the judge parses the declarations itself; a component is a :class:`Factory` that asks the subject to
  construct it;
* :class:`RemoteModule` — what a factory returns: an ``nn.Module`` tree with the subject module's submodule paths,
  whose parameters and buffers are local tensors mirroring the subject's. Its forward is an autograd Function that
  sends the inputs and returns the subject's outputs as fresh local tensors; its backward asks the subject for the
  vector–Jacobian product against the call's saved graph. Module steps — ``to``, ``train``/``eval``,
  ``load_state_dict`` — are requests (all of a harness build's steps: one request, :class:`Build`); an in-place change
  of a local parameter (an optimizer-style update), a parameter assigned to the module (tied weights) and a parameter
  changed by ``requires_grad_`` are sent before the next call; a parameter replaced for one call
  (``torch.func.functional_call``) travels with that call as a differentiable input.

The wire (:class:`Link`): a frame is one message — a JSON header, then raw byte buffers — never pickle. A tensor is
described in the header by dtype, shape, strides and storage offset, its storage bytes following as a buffer; on
arrival (:func:`unpack`) the description is checked (a known dtype, integer sizes, the buffer exactly the bytes the
layout needs) and the tensor is made fresh — over a ``torch.empty`` its buffer was read into, or one its bytes were
copied into — so what arrives is a plain ``torch.Tensor`` whatever the subject's object was (or, where the subject
names one, a fresh copy of a tensor the judge sent with the request). A malformed frame, a frame too large, an answer
of the wrong kind or a closed link is the subject's failure (:class:`~properties.library.context.SubjectCrash`), never
a crash of the judge. What the subject reports about its own outputs — a write into an input or a parameter (the new
bytes, written into the local tensor), where its outputs, inputs and parameters lie in its memory (:func:`span`: the
call protocols' aliasing checks), an output's bytes re-read later (:func:`reread`), a global setting it changed
(``state.report``) — is its answer, judged here like any output.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import functools
import itertools
import json
import math
import os
import socket
import struct
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy
import torch
from torch import nn

from properties.library import contexts, state
from properties.library.context import ContractFailure, SubjectCrash

__all__ = [
    "DTYPES",
    "Build",
    "Factory",
    "Link",
    "ProtocolError",
    "RemoteError",
    "RemoteModule",
    "call_context",
    "pack",
    "raised",
    "reread",
    "span",
    "unpack",
    "wire",
]

# The dtypes that may cross, by name (the name is what the header carries).
DTYPES: dict[str, torch.dtype] = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
        torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128,
    )
}  # fmt: skip
MAX_HEADER = 64 << 20  # bytes of one JSON header
MAX_BUFFERS = 1 << 16  # buffers in one frame
MAX_DEPTH = 64  # nesting of a header's values
ENDED = "ended or closed its link"  # what a request says when the subject's process is gone


class ProtocolError(Exception):
    """A frame that is not what the wire allows (its one-line reason)."""


class RemoteError(Exception):
    """An exception the subject raised in its process, by the name it gave (a subclass per name: ``raised``)."""

    remote_type = "Exception"


_RAISED: dict[str, type[RemoteError]] = {}


def raised(name: str, message: str) -> BaseException:
    """The judge's exception for one the subject reported: NotImplementedError (a stub: skipped) and
    DtypeNotSupported as themselves, anything else a :class:`RemoteError` whose class carries the subject's name
    (and is the built-in exception of that name, where there is one: :func:`_builtin`)."""
    if name == "NotImplementedError":
        return NotImplementedError(message)
    if name == "DtypeNotSupported":
        from properties.adapters.kit import DtypeNotSupported

        return DtypeNotSupported(message)
    name = name if name.isidentifier() else "Exception"
    cls = _RAISED.get(name)
    if cls is None:
        cls = _RAISED[name] = type(name, (RemoteError, *_builtin(name)), {"remote_type": name, "__module__": "subject"})
    return cls(message)


def _builtin(name: str) -> tuple[type[Exception], ...]:
    """The built-in exception class a subject's exception is named after (RuntimeError, AttributeError …), so the
    judge's laws catch it as they would in one process (a pickle of a local class raises AttributeError: the module
    does not pickle; torch's op without a double-backward formula raises RuntimeError: not applicable). Only
    ``Exception`` subclasses: a name like SystemExit or KeyboardInterrupt stays a plain RemoteError, and so does
    AssertionError (the judge's own failures are assertions: the subject's is its crash, not a verdict)."""
    cls = getattr(builtins, name, None)
    ok = isinstance(cls, type) and issubclass(cls, Exception)
    ok = ok and not issubclass(cls, (AssertionError, StopIteration, StopAsyncIteration))
    return (cls,) if ok else ()


# ------------------------------------------------------------------------------------------------- the wire


def _extent(shape: Sequence[int], stride: Sequence[int]) -> int:
    """Elements from the first to past the last of a strided layout (0 for an empty one)."""
    if any(n == 0 for n in shape):
        return 0
    return sum((n - 1) * s for n, s in zip(shape, stride, strict=True)) + 1


_WHOLE_SLACK = 64 << 20  # bytes of a storage beyond what a view spans that still travel with it (the whole storage)


def _storage_bytes(t: torch.Tensor) -> tuple[memoryview, bool]:
    """The bytes of t's storage — the whole storage (a view keeps what lies around it: a stride-0 cotangent its NaN
    buffer), or from element 0 to past its last element where the storage is far larger — and whether whole."""
    size = t.element_size()
    need = (t.storage_offset() + _extent(t.shape, t.stride())) * size if t.numel() else 0
    storage = t.untyped_storage()
    whole = storage.nbytes() <= 4 * need + _WHOLE_SLACK
    n = storage.nbytes() if whole else need
    flat = torch.empty(0, dtype=torch.uint8, device=t.device).set_(storage, 0, (n,), (1,))
    return memoryview((flat if flat.device.type == "cpu" else flat.cpu()).numpy()).cast("B"), whole


def _describe(t: torch.Tensor, bufs: list[Any], storages: dict[Any, int]) -> dict[str, Any]:
    """t's description; tensors of one storage in one frame share its buffer (they arrive sharing one storage)."""
    desc: dict[str, Any] = {
        "__t__": None,
        "dtype": str(t.dtype).removeprefix("torch."),
        "shape": list(t.shape),
        "stride": list(t.stride()),
        "offset": t.storage_offset(),
        "device": t.device.type,
        "rg": bool(t.requires_grad),
    }
    if t.device.type == "meta":
        return desc
    key = (t.device.type, t.untyped_storage().data_ptr())
    desc["key"] = key[1]  # where the storage lies in the sender's memory: its identity (storage reuse, mirrored)
    if key in storages and key[1]:
        desc["__t__"] = storages[key]
        return desc
    raw, whole = _storage_bytes(t)
    desc["__t__"] = len(bufs)
    bufs.append(raw)
    if whole:
        storages[key] = desc["__t__"]
    return desc


_PLAIN = frozenset({bool, int, float, str})  # what a header carries as itself


def pack(
    value: Any,
    bufs: list[Any],
    known: Callable[[torch.Tensor], dict[str, Any] | str | None] | None = None,
    storages: dict[Any, int] | None = None,
) -> Any:
    """``value`` as JSON-able data, tensors described and their bytes appended to ``bufs``. ``known(t)``: a
    description to send instead of t's bytes (a reference to a tensor the other side already holds), or the rid
    the other side is to keep the tensor under, or None."""
    if value is None or type(value) in _PLAIN:  # (first: most of a header)
        return value
    storages = {} if storages is None else storages
    if isinstance(value, torch.Tensor):
        seen = storages.setdefault("objects", {})  # the same tensor object twice in a frame arrives as one object
        if id(value) in seen:
            return {"__same__": seen[id(value)][0]}
        seen[id(value)] = (len(seen), value)
        ref = known(value) if known is not None else None
        if isinstance(ref, dict):
            return ref
        desc = _describe(value, bufs, storages)
        if isinstance(ref, str):
            desc["rid"] = ref
        return desc
    if isinstance(value, dict):  # (a plain value as itself without a call: a frame's leaves are most of its values)
        return {
            str(k): v if v is None or type(v) in _PLAIN else pack(v, bufs, known, storages) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [v if v is None or type(v) in _PLAIN else pack(v, bufs, known, storages) for v in value]
    if isinstance(value, torch.dtype):
        return {"__dtype__": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: pack(getattr(value, f.name), bufs, known, storages) for f in dataclasses.fields(value)}
        return {"__config__": type(value).__name__, "fields": fields}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _ints(value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or len(value) > 64 or not all(type(v) is int and v >= 0 for v in value):
        raise ProtocolError(f"{what} is not a list of non-negative integers: {str(value)[:80]}")
    return value


def tensor_of(desc: dict[str, Any], bufs: Sequence[Any], local: dict[int, torch.Tensor] | None = None) -> Any:
    """A fresh plain tensor from a description and its buffer, every field checked (ProtocolError). ``local``: the
    storages made so far for this frame's buffers (tensors of one buffer share one fresh storage)."""
    dtype = DTYPES.get(desc.get("dtype")) if isinstance(desc.get("dtype"), str) else None
    if dtype is None:
        raise ProtocolError(f"tensor of unknown dtype {str(desc.get('dtype'))[:40]!r}")
    shape, stride = _ints(desc.get("shape"), "shape"), _ints(desc.get("stride"), "stride")
    offset, device = desc.get("offset"), desc.get("device")
    if len(shape) != len(stride) or type(offset) is not int or offset < 0:
        raise ProtocolError(f"tensor layout {shape} / {stride} / offset {offset!r} is inconsistent")
    if device not in ("cpu", "cuda", "meta"):
        raise ProtocolError(f"tensor on device {str(device)[:20]!r}")
    if desc.get("__t__") is None:
        if device != "meta":
            raise ProtocolError("a tensor without bytes that is not on the meta device")
        return torch.empty_strided(shape, stride, dtype=dtype, device="meta")
    index = desc["__t__"]
    if type(index) is not int or not 0 <= index < len(bufs):
        raise ProtocolError(f"tensor refers to buffer {index!r} of {len(bufs)}")
    size = dtype.itemsize
    need = offset + _extent(shape, stride) if math.prod(shape) else 0
    raw = bufs[index]
    if len(raw) < need * size:
        raise ProtocolError(f"tensor {tuple(shape)} {dtype} needs {need * size} bytes of storage, got {len(raw)}")
    local = {} if local is None else local
    if index not in local:  # one fresh storage per buffer: read into one (receive), or torch.empty and a byte copy
        storage = raw if isinstance(raw, torch.Tensor) else torch.empty(len(raw), dtype=torch.uint8)
        if len(raw) and storage is not raw:
            storage.numpy()[:] = numpy.frombuffer(raw, dtype=numpy.uint8)  # (the message's bytes: read-only)
        local[index] = storage.to("cuda") if device == "cuda" else storage
    base = local[index]
    if base.device.type != ("cuda" if device == "cuda" else "cpu"):
        raise ProtocolError("tensors of one buffer on two devices")
    typed = (base if base.numel() % size == 0 else base[: base.numel() - base.numel() % size]).view(dtype)
    return torch.as_strided(typed, shape, stride, offset)


def unpack(
    value: Any,
    bufs: Sequence[Any],
    resolve: Callable[[dict], Any] | None = None,
    made: Callable[[dict, torch.Tensor], Any] | None = None,
    depth: int = 0,
    local: dict[int, torch.Tensor] | None = None,
) -> Any:
    """The inverse of :func:`pack` (tensors checked and made fresh: :func:`tensor_of`); ``resolve(desc)``: what a
    reference (a dict with "__ref__") stands for; ``made(desc, t)``: told of each tensor made. ProtocolError for
    anything malformed."""
    if value is None or type(value) in _PLAIN:  # (first: most of a header)
        return value
    if depth > MAX_DEPTH:
        raise ProtocolError("header nested too deeply")
    local = {} if local is None else local
    if isinstance(value, dict):
        objects = local.setdefault(-1, [])  # type: ignore[arg-type]  (the tensors of this frame, in order)
        if "__same__" in value:
            k = value["__same__"]
            if type(k) is not int or not 0 <= k < len(objects):
                raise ProtocolError(f"a reference to tensor {str(k)[:20]} of {len(objects)} in the frame")
            return objects[k]
        if "__t__" in value or "__ref__" in value:
            t = tensor_of(value, bufs, local) if "__t__" in value else None
            if t is None:
                if resolve is None:
                    raise ProtocolError("a reference where none may be")
                t = resolve(value)
            else:
                t = made(value, t) if made is not None else t
            objects.append(t)
            return t
        if "__dtype__" in value:
            dtype = DTYPES.get(value["__dtype__"]) if isinstance(value["__dtype__"], str) else None
            if dtype is None:
                raise ProtocolError(f"unknown dtype {str(value['__dtype__'])[:40]!r}")
            return dtype
        return {
            k: v if v is None or type(v) in _PLAIN else unpack(v, bufs, resolve, made, depth + 1, local)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [
            v if v is None or type(v) in _PLAIN else unpack(v, bufs, resolve, made, depth + 1, local) for v in value
        ]
    return value


_WIRE_BUFFER = 4 << 20  # bytes a socket of the wire holds (each way), as far as the system allows (net.core.*mem_max)


def wire(ctx: Any) -> tuple[Connection, Connection]:
    """The two ends of a new wire (``ctx.Pipe()``: a socket pair where the platform has them), its socket buffers
    enlarged: with the default (≈ 200 KB) a frame of megabytes crosses in hundreds of writes, each waking the reader
    once (``bench/boundary.py``: a 4 MB frame cost 7.1 ms of the sender's CPU and 3.2 ms of the reader's; with 4 MB
    buffers 2.8 and 1.8)."""
    a, b = ctx.Pipe()
    for end in (a, b):
        with contextlib.suppress(OSError, ValueError, AttributeError), socket.socket(fileno=os.dup(end.fileno())) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _WIRE_BUFFER)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _WIRE_BUFFER)
    return a, b


_PREFIX = struct.Struct("<Q")  # a frame: the header's length, the JSON header, then its buffers back to back


def send(conn: Any, header: dict[str, Any], bufs: Sequence[Any] = ()) -> None:
    """One frame, one message (one write, one wake-up of the reader): the JSON header — with the buffers' sizes —
    then each buffer's bytes. On a multiprocessing Connection, in its framing, written from the buffers where they
    lie (``os.writev``: no copy of them into one message first)."""
    views = [memoryview(b).cast("B") for b in bufs]
    raw = json.dumps({**header, "nbuf": len(views), "sizes": [v.nbytes for v in views]}).encode()
    pieces = [_PREFIX.pack(len(raw)), raw, *views]
    if not isinstance(conn, Connection):
        conn.send_bytes(b"".join(pieces))
        return
    n = sum(v.nbytes for v in views) + _PREFIX.size + len(raw)
    length = struct.pack("!i", n) if n <= 0x7FFFFFFF else struct.pack("!iQ", -1, n)  # (multiprocessing's framing)
    pieces = [memoryview(length), *map(memoryview, pieces[:2]), *views]
    while pieces:
        done = os.writev(conn.fileno(), pieces[:_IOV_MAX])
        while pieces and done >= pieces[0].nbytes:
            done -= pieces.pop(0).nbytes
        if pieces and done:
            pieces[0] = pieces[0][done:]


_IOV_MAX = 512  # pieces per writev (Linux allows 1024)


def receive(conn: Any, max_buffer: int = 1 << 40) -> tuple[dict[str, Any], list[Any]]:
    """One frame (ProtocolError when it is not one; EOFError / OSError when the link is closed; MemoryError when
    it claims more than can be held): its header and its buffers, checked to be exactly the sizes the header
    gives. On a multiprocessing Connection each buffer is read straight into a fresh uint8 tensor of its own
    (:func:`tensor_of` makes its tensors over it); otherwise views of the one message."""
    if isinstance(conn, Connection):
        (n,) = struct.unpack("!i", _read(conn, 4, first=True))
        n = struct.unpack("!Q", _read(conn, 8))[0] if n == -1 else n
        if n > max_buffer:
            raise OSError("bad message length")
        start = _read(conn, min(n, _PREFIX.size))
        n_header = _PREFIX.unpack_from(start)[0] if len(start) == _PREFIX.size else None
        if n_header is None or n_header > MAX_HEADER or _PREFIX.size + n_header > n:
            raise ProtocolError(f"a frame that does not start with a header's length: {bytes(start)[:40]!r}")
        header, sizes = _header(bytes(_read(conn, n_header)), n - _PREFIX.size - n_header)
        return header, [_read(conn, k, fresh=True) for k in sizes]
    message = memoryview(conn.recv_bytes(max_buffer))
    if message.nbytes < _PREFIX.size or (n_header := _PREFIX.unpack_from(message)[0]) > MAX_HEADER:
        raise ProtocolError(f"a frame that does not start with a header's length: {bytes(message[:40])!r}")
    end = _PREFIX.size + n_header
    header, sizes = _header(bytes(message[_PREFIX.size : end]), message.nbytes - end)
    bufs = []
    for k in sizes:
        bufs.append(message[end : end + k])
        end += k
    return header, bufs


def _header(raw: bytes, rest: int) -> tuple[dict[str, Any], list[int]]:
    """A frame's header, checked, and its buffers' sizes (``rest``: the bytes that follow the header)."""
    try:
        header = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(
            f"a header that is not JSON ({type(exc).__name__}: {str(exc)[:80]}): {raw[:40]!r}"
        ) from None
    if not isinstance(header, dict):
        raise ProtocolError(f"a header that is {type(header).__name__}, not a JSON object: {raw[:40]!r}")
    n, sizes = header.get("nbuf"), header.pop("sizes", [])  # (the frame's, not the request's)
    if type(n) is not int or not 0 <= n <= MAX_BUFFERS:
        raise ProtocolError(f"a header with buffer count {n!r}")
    if not isinstance(sizes, list) or len(sizes) != n or not all(type(k) is int and k >= 0 for k in sizes):
        raise ProtocolError(f"a header whose buffer sizes are {str(sizes)[:80]}, not {n} byte counts")
    if sum(sizes) != rest:
        end = _PREFIX.size + len(raw)
        raise ProtocolError(f"a frame of {end + rest} bytes for a header of {end} and buffers of {sum(sizes)}")
    return header, sizes


def _read(conn: Connection, n: int, *, fresh: bool = False, first: bool = False) -> Any:
    """Exactly n bytes of the link: a bytearray, or with ``fresh`` a new uint8 tensor (MemoryError where it cannot
    be had). Its end is EOFError before the ``first`` bytes of a message, OSError within one (as multiprocessing's
    ``recv_bytes``)."""
    if fresh:
        try:
            out = torch.empty(n, dtype=torch.uint8)
        except RuntimeError as exc:
            raise MemoryError(str(exc)[:200]) from None
        view = memoryview(out.numpy()) if n else memoryview(b"")
    else:
        out = bytearray(n)
        view = memoryview(out)
    pos = 0
    while pos < n:
        got = os.readv(conn.fileno(), [view[pos:]])
        if got == 0:
            raise EOFError if first and pos == 0 else OSError("got end of file during message")
        pos += got
    return out


# ------------------------------------------------------------------------------------------------- the link


_RIDS = itertools.count(1)


class _Known:
    """The judge's tensors the subject holds a copy of (by rid), and where each lies in the subject's memory."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.entries: dict[int, list[Any]] = {}  # id(t) → [ref, rid, version, ptr, span]

    def put(self, t: torch.Tensor, rid: str, span_: list | None) -> None:
        e = self.entries.get(id(t))
        if e is not None and e[0]() is t:
            if e[1] != rid:
                self.link.pending.append(e[1])
            e[1:] = [rid, _version(t), _ptr(t), span_]
            return
        pending, entries, key = self.link.pending, self.entries, id(t)

        def gone(ref: weakref.ref) -> None:
            e = entries.get(key)
            if e is not None and e[0] is ref:
                del entries[key]
                pending.append(e[1])

        self.entries[key] = [weakref.ref(t, gone), rid, _version(t), _ptr(t), span_]

    def span(self, t: torch.Tensor) -> list | None:
        e = self.entries.get(id(t))
        return e[4] if e is not None and e[0]() is t else None

    def rid(self, t: torch.Tensor) -> str | None:
        e = self.entries.get(id(t))
        return e[1] if e is not None and e[0]() is t else None


def _ptr(t: torch.Tensor) -> int:
    return 0 if t.device.type == "meta" or t.numel() == 0 else t.data_ptr()


def _grad_state(p: torch.Tensor) -> tuple[int, int, int] | None:
    g = p.grad
    return None if g is None else (id(g), _version(g), _ptr(g))


def _version(t: torch.Tensor) -> int:
    return -1 if t.is_inference() else t._version  # (an inference tensor has no version counter)


_LINKS: list[weakref.ref] = []


class Link:
    """The judge's end of the wire to one subject process (any object with ``send_bytes`` / ``recv_bytes``).

    ``request(op, **fields)`` sends one frame and returns the subject's answer, its tensors fresh local ones; the
    subject's exception is raised as :func:`raised` makes it; a global setting the subject changed meanwhile is
    reported (``state.report``). Once the link fails (the process ended, a malformed frame) every later request
    fails at once: ``broken`` says why."""

    def __init__(self, conn: Any, name: str = "the subject") -> None:
        self.conn, self.name = conn, name
        self.pending: list[str] = []  # rids the judge no longer needs (sent with the next request)
        self.known = _Known(self)
        self.mirrors: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # rid → the local Parameter
        self.grads: dict[str, Any] = {}  # rid → the state of its mirror's .grad the subject last saw
        self.broken: str | None = None
        self.device = "cpu"
        self.traffic = [0, 0, 0]  # requests, bytes sent, bytes received (the cost of the boundary: bench/boundary.py)
        _LINKS.append(weakref.ref(self))

    def _fail(self, why: str) -> SubjectCrash:
        self.broken = self.broken or why
        return SubjectCrash(f"{self.name} {self.broken}")

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        __tracebackhide__ = True
        if self.broken:
            raise SubjectCrash(f"{self.name} {self.broken}")
        bufs: list[Any] = []
        sent: list[tuple[torch.Tensor, str]] = []

        def known(t: torch.Tensor) -> str:  # every tensor travels as its bytes now (never "the one you have":
            sent.append((t, f"j{next(_RIDS)}"))  # a write through .data, as gradcheck's, bumps no version counter)
            return sent[-1][1]

        def echo(desc: dict[str, Any]) -> torch.Tensor:  # the subject's tensor that holds the bytes of one we sent
            rid = desc.get("__ref__")
            for t, r in sent:
                if r == rid and t.is_contiguous():
                    return t.detach().clone()
            raise ProtocolError(f"a reference to {str(rid)[:20]!r}, no tensor of the request")

        header = {"op": op, **pack(fields, bufs, known), "release": self.pending}
        self.pending = []
        try:
            send(self.conn, header, bufs)
            reply, rbufs = receive(self.conn)
            self.traffic[0] += 1
            self.traffic[1] += sum(memoryview(b).nbytes for b in bufs)
            self.traffic[2] += sum(b.nbytes for b in rbufs)
        except ProtocolError as exc:
            raise self._fail(f"sent a malformed answer: {exc}") from None
        except MemoryError:
            raise self._fail("sent an answer larger than the judge's memory") from None
        except (EOFError, OSError, BrokenPipeError) as exc:
            raise self._fail(f"{ENDED} ({type(exc).__name__})") from None
        if reply.get("op") != op:
            raise self._fail(f"answered {str(reply.get('op'))[:40]!r} to a request {op!r}")
        try:
            spans = reply.get("spans") or {}
            if not isinstance(spans, dict):
                raise ProtocolError("spans is not an object")
            for t, rid in sent:
                self.known.put(t, rid, _checked_span(spans.get(rid)))
            out = unpack({k: v for k, v in reply.items() if k not in ("spans", "changed", "error")}, rbufs, echo)
            changed = reply.get("changed") or []
            if not isinstance(changed, list) or not all(isinstance(c, str) for c in changed):
                raise ProtocolError("changed is not a list of strings")
        except ProtocolError as exc:
            raise self._fail(f"sent a malformed answer: {exc}") from None
        state.report([c[:200] for c in changed])
        error = reply.get("error")
        if error is not None:
            if not isinstance(error, dict) or not isinstance(error.get("type"), str):
                raise self._fail(f"sent a malformed error: {str(error)[:80]}")
            raise raised(error["type"][:80], str(error.get("message", ""))[:2000])
        return out

    def adopt(self, t: torch.Tensor, desc: Any) -> torch.Tensor:
        """Remember that local ``t`` is the subject's tensor ``desc["rid"]`` (its outputs, gradients, parameters)."""
        if isinstance(desc, dict) and isinstance(desc.get("rid"), str):
            self.known.put(t, desc["rid"], _checked_span(desc.get("span")))
        return t


def _checked_span(value: Any) -> list | None:
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 3 and all(type(v) is int for v in value[1:])):
        raise ProtocolError(f"a span that is not [device, start, end]: {str(value)[:80]}")
    return [f"subject:{value[0]}", value[1], value[2]]


def _links() -> list[Link]:
    return [lk for r in _LINKS if (lk := r()) is not None]


def span(t: torch.Tensor) -> tuple[str, int, int] | None:
    """Where the subject holds its copy of ``t`` (device tagged as the subject's, start, past the end), if it does:
    the aliasing checks compare these instead of local addresses."""
    for lk in _links():
        s = lk.known.span(t)
        if s is not None:
            return s[0], s[1], s[2]
    return None


def reread(ts: Sequence[Any]) -> None:
    """Bring local copies of the subject's tensors (outputs, gradients held by a law) up to the subject's bytes
    now: a kernel that writes into an output it returned earlier shows in the local tensor."""
    for lk in _links():
        rids = {i: lk.known.rid(t) for i, t in enumerate(ts) if isinstance(t, torch.Tensor)}
        rids = {i: r for i, r in rids.items() if r is not None}
        if not rids:
            continue
        got = lk.request("read", rids=list(rids.values()))["tensors"]
        for (i, _), new in zip(rids.items(), got, strict=True):
            _write(ts[i], new)


def _write(local: torch.Tensor, new: Any) -> None:
    """Write the subject's bytes into a local tensor (``.data``: no version bump, nothing recorded). Where both
    have one layout, element by element of the storage they span (an expanded input included)."""
    if not isinstance(new, torch.Tensor) or new.shape != local.shape or new.dtype != local.dtype:
        raise SubjectCrash("the subject answered with a tensor of another shape or dtype than the one it holds")
    with torch.no_grad():
        if local.stride() == new.stride() and local.numel():
            n = _extent(local.shape, local.stride())
            dst = local.data.as_strided((n,), (1,), local.storage_offset())
            dst.copy_(new.as_strided((n,), (1,), new.storage_offset()).to(local.device))
        else:
            local.data.copy_(new.to(local.device))


# ------------------------------------------------------------------------------------------ the call context


def call_context(device_type: str = "cpu") -> dict[str, Any]:
    """The judge's calling context as data (``contexts.CallContext.as_data``), sent with every request: grad or
    inference mode, autocast on the inputs' device type, deterministic algorithms, the thread count — what the
    harness set around the call (``contexts.applied``); the subject enters the same around its module's call."""
    from golden.formats import fmt

    autocast = None
    if torch.is_autocast_enabled(device_type):
        with contextlib.suppress(ValueError):
            autocast = fmt(torch.get_autocast_dtype(device_type)).name
    inference = torch.is_inference_mode_enabled()
    grad = "inference" if inference else ("enabled" if torch.is_grad_enabled() else "no_grad")
    return dict(_context_data(autocast, torch.are_deterministic_algorithms_enabled(), torch.get_num_threads(), grad))


@functools.lru_cache(maxsize=64)
def _context_data(autocast: str | None, deterministic: bool, threads: int, grad: str) -> dict[str, Any]:
    """``CallContext(...).as_data()``, made once per context (callers get a copy)."""
    return contexts.CallContext(autocast, deterministic, threads, grad).as_data()


# ------------------------------------------------------------------------------------------ the module proxy


class _Node(nn.Module):
    """A submodule of a :class:`RemoteModule`: its parameters and buffers, nothing to compute."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def extra_repr(self) -> str:
        return f"subject's {self.kind}"

    def forward(self, *args: Any) -> Any:  # only the whole module is called across the boundary
        raise TypeError("a submodule of the subject's module cannot be called on its own from the judge")


_HANDLES = itertools.count(1)
_CALLS = itertools.count(1)


class RemoteModule(_Node):
    """The judge's view of a module in the subject process (see the module docstring)."""

    def __init__(self, link: Link, handle: str, desc: dict[str, Any], component: str) -> None:
        super().__init__(desc.get("kind", component))
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_component", component)
        object.__setattr__(self, "_synced", {})  # slot → (tensor, version, ptr, requires_grad)
        weakref.finalize(self, link.pending.append, handle)
        self._adopt(desc)

    # ---- mirroring the subject's description
    def _slot(self, name: str) -> tuple[nn.Module, str]:
        prefix, _, attr = name.rpartition(".")
        return (self.get_submodule(prefix) if prefix else self), attr

    def _adopt(self, desc: dict[str, Any]) -> None:
        """Make the local tree match the subject's description (submodules, parameters, buffers, mode)."""
        modules = desc.get("modules")
        if not isinstance(modules, list):
            raise SubjectCrash("the subject described its module without a list of submodules")
        for path, kind in modules:
            if not isinstance(path, str) or not path:
                continue
            prefix, _, attr = path.rpartition(".")
            parent = self.get_submodule(prefix) if prefix else self
            if attr not in parent._modules:
                parent.add_module(attr, _Node(str(kind)))
        for name, t in (desc.get("params") or {}).items():
            self._adopt_param(name, t)
        self._adopt_grads(desc.get("grads"))
        for name, t in (desc.get("buffers") or {}).items():
            owner, attr = self._slot(name)
            owner.register_buffer(attr, t.detach() if isinstance(t, torch.Tensor) else None)
        self._set_training(bool(desc.get("training", False)))

    def _adopt_grads(self, grads: Any) -> None:
        """The subject's ``.grad`` of the parameters it reports changed (set, cleared), as it holds them now."""
        for name, g in (grads or {}).items():
            owner, attr = self._slot(name)
            mirror = owner._parameters.get(attr)
            fits = g is None or (isinstance(g, torch.Tensor) and g.shape == mirror.shape and g.dtype == mirror.dtype)
            if not isinstance(mirror, nn.Parameter) or not fits:
                raise SubjectCrash(f"the subject reported a .grad of {name} that does not fit the parameter")
            mirror.grad = None if g is None else g.to(mirror.device)
            if (rid := self._link.known.rid(mirror)) is not None:
                self._link.grads[rid] = _grad_state(mirror)

    def _adopt_param(self, name: str, t: Any) -> None:
        """The local mirror of the subject's parameter ``name`` (one mirror per subject parameter: a parameter
        the subject shares between modules is one local Parameter), with the subject's values now."""
        rid = t.get("rid") if isinstance(t, dict) else None
        value = t.get("tensor") if isinstance(t, dict) else None
        if not isinstance(value, torch.Tensor) or not isinstance(rid, str):
            raise SubjectCrash(f"the subject described its parameter {name!r} without its values")
        owner, attr = self._slot(name)
        mirror = self._link.mirrors.get(rid)
        if mirror is None:
            mirror = nn.Parameter(torch.empty(0, dtype=value.dtype, device=value.device), requires_grad=False)
            self._link.mirrors[rid] = mirror
        with torch.no_grad():
            mirror.data = value.detach()
        if value.is_floating_point() or value.is_complex():
            mirror.requires_grad_(bool(t.get("rg", True)))
        owner._parameters[attr] = mirror
        self._link.adopt(mirror, {"rid": rid, "span": t.get("span")})
        self._synced[name] = (mirror, _version(mirror), _ptr(mirror), mirror.requires_grad)

    def _set_training(self, mode: bool) -> None:
        for m in self.modules():
            m.training = mode

    # ---- module steps as requests
    def _step(self, op: str, **fields: Any) -> dict[str, Any]:
        return self._link.request(op, m=self._handle, **fields)

    def train(self, mode: bool = True) -> RemoteModule:
        self._sync()
        self._adopt(self._step("train", mode=bool(mode)))
        return self

    def to(self, *args: Any, **kwargs: Any) -> RemoteModule:
        device, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        self._sync()
        reply = self._step("to", device=None if device is None else device.type, dtype=dtype)
        if not reply.get("same", True):
            raise _not_itself(self._component)
        self._adopt(reply)
        return self

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        self._sync()
        values = {k: v.detach() for k, v in dict(state_dict).items() if isinstance(v, torch.Tensor)}
        self._adopt(self._step("load_state_dict", state=values, strict=bool(strict)))
        return torch.nn.modules.module._IncompatibleKeys([], [])

    def _sync(self) -> None:
        """Send what changed locally since the subject last saw it: a parameter updated in place, one assigned
        (another module's: tied; or a new one), a changed requires_grad, a ``.grad`` that a backward accumulated
        into or the law cleared (``.grad`` is the subject module's: a forward that resets it shows)."""
        copy, assign, flags, grads = {}, {}, {}, {}
        for name, (was, version, ptr, rg) in self._synced.items():
            owner, attr = self._slot(name)
            now = owner._parameters.get(attr)
            if not isinstance(now, nn.Parameter):
                continue  # replaced for one call (functional_call): travels with the call
            if now is not was:
                rid = (
                    self._link.known.rid(now)
                    if self._link.mirrors.get(self._link.known.rid(now) or "") is now
                    else None
                )
                assign[name] = {"__ref__": rid, "rg": now.requires_grad} if rid is not None else now.detach()
            elif _version(now) != version or _ptr(now) != ptr:
                copy[name] = now.detach()
            if now.requires_grad != rg:
                flags[name] = now.requires_grad
            rid = self._link.known.rid(now)
            if now is was and rid is not None and _grad_state(now) != self._link.grads.get(rid):
                grads[name] = None if now.grad is None else now.grad.detach()  # .grad is the subject's to keep
        if copy or assign or flags or grads:
            self._adopt(self._step("sync", copy=copy, assign=assign, flags=flags, grads=grads))
            for name in {**copy, **assign, **flags, **grads}:  # what the subject now has
                owner, attr = self._slot(name)
                now = owner._parameters[attr]
                self._synced[name] = (now, _version(now), _ptr(now), now.requires_grad)
                if (rid := self._link.known.rid(now)) is not None:
                    self._link.grads[rid] = _grad_state(now)

    # ---- the call
    def forward(self, *inputs: Any) -> Any:
        self._sync()
        subst, params = {}, []
        for name, (was, *_) in self._synced.items():
            owner, attr = self._slot(name)
            now = owner._parameters.get(attr)
            if now is None:
                continue
            if not isinstance(now, nn.Parameter) and now is not was:
                subst[name] = now
            params.append((name, now))
        grad = torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
        tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
        if len(tensors) != len(inputs):
            raise TypeError("the judge calls a subject's module with tensors only")
        leaves = [*tensors, *subst.values(), *(p for n, p in params if n not in subst)]
        needs = grad and any(t.requires_grad for t in leaves)
        where = tensors[0].device.type if tensors else "cpu"
        spec = _CallSpec(
            self, len(tensors), list(subst), [n for n, _ in params if n not in subst], needs, call_context(where)
        )
        outs = _Remote.apply(spec, *leaves)
        return outs[0] if spec.single else (list(outs) if spec.as_list else tuple(outs))

    def __deepcopy__(self, memo: dict) -> RemoteModule:
        """copy.deepcopy: the subject deep-copies its module; the copy is another RemoteModule."""
        self._sync()
        handle = f"m{next(_HANDLES)}"
        reply = self._step("clone", new=handle)
        return RemoteModule(self._link, handle, reply, self._component)

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        """Pickling (pickle, torch.save): the subject pickles its module and unpickles it as a new one, in its own
        process; what the judge pickles is which link and module that is (loaded here: a RemoteModule of it)."""
        self._sync()
        handle = f"m{next(_HANDLES)}"
        self._step("pickled", new=handle)
        return _restored, (_links().index(self._link), handle, self._component)


def _restored(link: int, handle: str, component: str) -> RemoteModule:
    """A module the subject made by a pickle round trip (``RemoteModule.__reduce_ex__``), as the judge sees it."""
    lk = _links()[link]
    return RemoteModule(lk, handle, lk.request("describe", m=handle), component)


@dataclasses.dataclass
class _CallSpec:
    module: RemoteModule
    n_inputs: int
    subst: list[str]
    params: list[str]
    graph: bool
    context: dict[str, Any]
    single: bool = True
    as_list: bool = False


class _Remote(torch.autograd.Function):
    """One call of the subject's module: forward and backward are requests (see :class:`RemoteModule`)."""

    @staticmethod
    def forward(ctx: Any, spec: _CallSpec, *leaves: torch.Tensor) -> Any:
        m, link = spec.module, spec.module._link
        n = spec.n_inputs
        inputs = leaves[:n]
        subst = dict(zip(spec.subst, leaves[n : n + len(spec.subst)], strict=True))
        call = f"c{next(_CALLS)}" if spec.graph else None
        reply = link.request(
            "forward",
            m=m._handle,
            inputs=list(inputs),
            subst=subst,
            params=spec.params,
            call=call,
            context=spec.context,
        )
        kind, outs = reply.get("result"), reply.get("outputs")
        if kind not in ("tensor", "tuple", "list") or not isinstance(outs, list) or not outs:
            raise ContractFailure(
                f"{m._component}.forward returned {str(reply.get('type', kind))[:60]}, not a torch.Tensor "
                "(or a tuple of them)"
            )
        spec.single, spec.as_list = kind == "tensor", kind == "list"
        after = reply.get("inputs_after") or {}
        for k, new in after.items():  # the subject wrote into an input: the law sees it in its own tensor
            if k.isdigit() and int(k) < n:
                _write(inputs[int(k)], new)
        for name, t in (reply.get("params") or {}).items():
            m._adopt_param(name, t)
        m._adopt_grads(reply.get("grads"))
        local = []
        for d in outs:
            if not isinstance(d, dict) or not isinstance(d.get("tensor"), torch.Tensor):
                raise SubjectCrash("the subject answered a forward without its output tensors")
            local.append(link.adopt(d["tensor"], d))
        _graph(ctx, call, link, leaves, outs)
        for t, dflag in zip(local, ctx.differentiable, strict=True):
            if not dflag:
                ctx.mark_non_differentiable(t)
        return tuple(local)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        return (None, *_vjp(ctx, grads))


def _graph(ctx: Any, call: str | None, link: Link, leaves: Sequence[torch.Tensor], outs: list[dict]) -> None:
    """Remember on ``ctx`` the subject's call whose graph a backward asks about (released with ``ctx``)."""
    ctx.call, ctx.link, ctx.n = call, link, len(leaves)
    ctx.set_materialize_grads(False)
    if call is not None:
        weakref.finalize(ctx, link.pending.append, call)
        ctx.save_for_backward(*leaves)  # the inputs of a second-order backward (create_graph)
    ctx.differentiable = [bool(d.get("rg")) for d in outs]
    ctx.shapes = [(tuple(d["tensor"].shape), d["tensor"].dtype, d["tensor"].device) for d in outs]


def _grads(link: Link, reply: dict[str, Any], count: int) -> list[Any]:
    got = reply.get("grads")
    if not isinstance(got, list) or len(got) != count:
        raise SubjectCrash("the subject answered a backward without one gradient per input asked for")
    out = []
    for d in got:
        if d is not None and not (isinstance(d, dict) and isinstance(d.get("tensor"), torch.Tensor)):
            raise SubjectCrash("the subject answered a backward with something that is not a gradient")
        out.append(None if d is None else link.adopt(d["tensor"], d))
    return out


def _vjp(ctx: Any, grads: Sequence[Any], skip: int = 1) -> list[Any]:
    """The gradients of a subject's call (``ctx``: :func:`_graph`) against its inputs for cotangents ``grads``: a
    request. Under ``create_graph`` the answer is itself a call of the subject whose graph the subject keeps
    (:class:`_RemoteVJP`), so derivatives of any order cross the boundary."""
    if ctx.call is None:
        return [None] * ctx.n
    wrt = [i for i, need in enumerate(ctx.needs_input_grad[skip:]) if need]  # (skip: the arguments not tensors)
    cot = [None if g is None or not d else g for g, d in zip(grads, ctx.differentiable, strict=True)]
    out: list[Any] = [None] * ctx.n
    if torch.is_grad_enabled():  # create_graph: differentiable in the leaves and the cotangents
        shapes = ctx.shapes
        cot = [
            g if g is not None else torch.zeros(s, dtype=t, device=d) for g, (s, t, d) in zip(cot, shapes, strict=True)
        ]
        got = _RemoteVJP.apply(ctx, wrt, *ctx.saved_tensors, *cot)
        places = ctx.vjp_places
    else:
        got, places = _grads(ctx.link, ctx.link.request("backward", call=ctx.call, cot=cot, wrt=wrt), len(wrt)), wrt
    for i, g in zip(places, got, strict=True):
        out[i] = g
    return out


class _RemoteVJP(torch.autograd.Function):
    """A vector–Jacobian product of a subject's call computed with ``create_graph`` in the subject's process: its
    outputs (the gradients that exist) have a graph there, in the call's inputs and the cotangents."""

    @staticmethod
    def forward(ctx: Any, of: Any, wrt: list[int], *tensors: torch.Tensor) -> Any:
        leaves, cot = tensors[: of.n], tensors[of.n :]
        call = f"c{next(_CALLS)}"
        reply = of.link.request("backward", call=of.call, cot=list(cot), wrt=wrt, create_graph=True, new=call)
        got = _grads(of.link, reply, len(wrt))
        present = [k for k, g in enumerate(got) if g is not None]
        of.vjp_places = [wrt[k] for k in present]
        outs = [reply["grads"][k] for k in present]
        _graph(ctx, call, of.link, [*leaves, *cot], outs)
        for k, g in zip(present, (got[k] for k in present), strict=True):
            if not reply["grads"][k].get("rg"):
                ctx.mark_non_differentiable(g)
        return tuple(got[k] for k in present)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        return (None, None, *_vjp(ctx, grads, skip=2))


# ------------------------------------------------------------------------------------------ the implementation


class Factory:
    """A component's constructor in the subject process: calling it constructs there (on the judge's default
    device: the meta device under ``with torch.device("meta")``) and returns a :class:`RemoteModule`."""

    def __init__(self, link: Link, spec: str, component: str) -> None:
        self.link, self.spec, self.component = link, spec, component
        self.__name__ = component

    def __call__(self, *args: Any, **kwargs: Any) -> RemoteModule:
        handle = f"m{next(_HANDLES)}"
        device = torch.get_default_device().type
        reply = self.link.request(
            "construct", impl=self.spec, component=self.component, args=list(args), kwargs=kwargs, new=handle,
            device=device,
        )  # fmt: skip
        if reply.get("not_module") is not None:
            raise _not_module(self.component, args, kwargs, reply["not_module"])
        return RemoteModule(self.link, handle, reply, self.component)


def _not_module(component: str, args: Sequence[Any], kwargs: dict[str, Any], kind: Any) -> ContractFailure:
    sig = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
    return ContractFailure(f"{component}({sig}) returned {str(kind)[:60]}, not a torch.nn.Module")


def _not_itself(component: str) -> ContractFailure:
    return ContractFailure(f"{component}.to(...) returned another module, not the module itself")


class Build:
    """A module built in the subject's process in one request (``build``), step by step as the judge sees it.

    ``harness.construct`` takes the steps of a build — construct, ``.to(device, dtype)``, ``load_state_dict(strict)``
    (where ``values`` are given), ``eval()`` (where ``evaluate``) — each under its own guard. Sent one by one, each
    would be a round trip whose answer describes the whole module again. Here the first step sends them all: the
    subject carries them out in this order and stops at the first that raises, changes a global setting, or gives
    what the judge refuses, as the judge would have sent no later one (``subject_server.Server.op_build``). Each
    step then replays its own outcome inside its own guard, in the order its request would have: the settings it
    changed reported (``state.report``), its exception raised (:func:`raised`), then the judge's own refusal
    (:class:`~properties.library.context.ContractFailure`) — so a failure names the same step, with the same
    cause, as the step's own request did (``Factory.__call__``, ``RemoteModule.to`` / ``load_state_dict`` /
    ``train``). An outcome the subject did not report for a step the judge reaches is a malformed answer."""

    def __init__(
        self, factory: Factory, args: tuple, kwargs: dict, device: str, dtype: torch.dtype,
        values: dict[str, torch.Tensor] | None, evaluate: bool,
    ) -> None:  # fmt: skip
        self.factory, self.args, self.kwargs, self.values, self.evaluate = factory, args, kwargs, values, evaluate
        self.device, self.dtype = torch._C._nn._parse_to(device=device, dtype=dtype)[:2]
        self.outcomes: list[tuple[list[str], Any]] = []
        self.reply: dict[str, Any] = {}
        self.module: RemoteModule | None = None

    def construct(self) -> RemoteModule:
        link, handle = self.factory.link, f"m{next(_HANDLES)}"
        values = None if self.values is None else {k: v.detach() for k, v in self.values.items()}
        self.reply = link.request(
            "build", impl=self.factory.spec, component=self.factory.component, args=list(self.args),
            kwargs=self.kwargs, new=handle, device=torch.get_default_device().type,
            to=self.device.type, dtype=self.dtype, values=values,
            evaluate=self.evaluate,
        )  # fmt: skip
        steps = self.reply.get("steps")
        if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
            raise link._fail("sent a malformed answer: a build without the outcome of its steps")
        for s in steps:
            changed, error = s.get("changed") or [], s.get("error")
            if not isinstance(changed, list) or not all(isinstance(c, str) for c in changed):
                raise link._fail("sent a malformed answer: changed is not a list of strings")
            if error is not None and not (isinstance(error, dict) and isinstance(error.get("type"), str)):
                raise link._fail(f"sent a malformed error: {str(error)[:80]}")
            self.outcomes.append(([c[:200] for c in changed], error))
        self._replay(0)
        if self.reply.get("not_module") is not None:
            raise _not_module(self.factory.component, self.args, self.kwargs, self.reply["not_module"])
        self.module = RemoteModule(link, handle, self.reply, self.factory.component)
        return self.module

    def to(self) -> RemoteModule:
        self._replay(1)
        if not self.reply.get("same", True):
            raise _not_itself(self.factory.component)
        return self.module

    def load_state_dict(self) -> Any:
        self._replay(2)
        return torch.nn.modules.module._IncompatibleKeys([], [])

    def eval(self) -> RemoteModule:
        self._replay(3 if self.values is not None else 2)
        return self.module

    def _replay(self, k: int) -> None:
        """Step k's outcome, as its own request would have answered: its changed settings reported, its exception
        raised."""
        if k >= len(self.outcomes):
            raise self.factory.link._fail(f"sent a malformed answer: a build without the outcome of step {k + 1}")
        changed, error = self.outcomes[k]
        state.report(changed)
        if error is not None:
            raise raised(error["type"][:80], str(error.get("message", ""))[:2000])
