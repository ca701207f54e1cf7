"""The subject process: the one process that imports the implementation under test, answering the judge's requests.

It is started beside each judge worker (``properties.running.workers``) and speaks only the plain-data wire of
``properties.library.remote`` (a JSON header and raw byte buffers per frame; no pickle either way). It constructs the
components, moves, loads and switches them, runs forwards (keeping the graph of a call the judge may differentiate)
and vector–Jacobian products, and reports with every answer what it saw of itself: a global torch setting the
request changed (measured here, around every request, and restored), a write into an input or a parameter, where
its tensors lie in its memory. Everything here runs in the subject's process and is the subject's answer: the judge
checks the frames and judges the data, so nothing this process says can be a verdict.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import os
import resource
import signal
import types
from typing import Any

import torch
from torch import nn

from properties.library import contexts, remote, state
from properties.library.subject import COMPONENTS, Implementation

__all__ = ["Server", "Subject", "main", "stand_in"]

_REUSE_KEPT = 32  # storages remembered by the judge's address (storage reuse mirrored)
_SNAPSHOT_LIMIT = 1 << 22  # elements of a parameter kept as a copy to see a write that bypasses its version counter


def _span(t: torch.Tensor) -> list | None:
    if t.device.type == "meta" or t.numel() == 0:
        return None
    extent = sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride(), strict=True)) + 1
    start = t.data_ptr()
    return [t.device.type, start, start + extent * t.element_size()]


def _same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64, 16: torch.int64}[a.element_size()]
    if a.element_size() == 16:
        a, b = torch.view_as_real(a), torch.view_as_real(b)
    return bool(torch.equal(a.detach().contiguous().view(bits), b.detach().contiguous().view(bits)))


def _calling(data: dict[str, Any] | None, device_type: str = "cpu") -> Any:
    """The judge's calling context (``remote.call_context``: a ``contexts.CallContext`` as data), entered the one
    way the harness enters it (``contexts.applied``)."""
    if not data:
        return contextlib.nullcontext()
    return contexts.applied(contexts.CallContext.of(data), device_type)


class Server:
    """The subject's side of one link: the implementations it loaded, the modules it built, the tensors the judge
    holds copies of (by rid), and the calls whose graph a backward may still need."""

    def __init__(self, conn: Any, load: Any) -> None:
        self.conn, self.load = conn, load
        self.impls: dict[str, Any] = {}
        self.modules: dict[str, nn.Module] = {}
        self.objects: dict[str, torch.Tensor] = {}
        self.rids: dict[int, str] = {}  # id(tensor) → rid, for tensors of ours the judge holds
        self.calls: dict[str, tuple[list[torch.Tensor], list[torch.Tensor]]] = {}
        self.seen: dict[str, dict[str, tuple[str, int, int, torch.Tensor | None]]] = {}  # handle → name → state
        self.grads: dict[str, dict[str, Any]] = {}  # handle → name → the state of .grad the judge last saw
        self._count = itertools.count(1)
        self.spans: dict[str, list | None] = {}
        self.echoes: dict[int, str] = {}  # id(our tensor) → the rid of the judge's tensor of this request it equals
        self.by_key: dict[int, torch.Tensor] = {}  # the judge's storage address → the storage we made for it

    # ---- loading
    def info(self, impl: Any) -> dict[str, Any]:
        from properties.running import interpreted

        module = impl.module
        return {
            "spec": impl.spec,
            "module": module.__name__,
            "file": getattr(module, "__file__", None),
            "provided": list(impl.provided),
            "skip_reason": impl.skip_reason,
            "conventions_raw": getattr(module, "CONVENTIONS", None),
            "conventions": {c: impl.convention(c) for c in impl.provided},
            "import_effects": list(impl.import_effects),
            "kernels": interpreted.describe(module),
        }

    def impl(self, spec: str) -> Any:
        if spec not in self.impls:
            self.impls[spec] = self.load(spec)
        return self.impls[spec]

    # ---- tensors the judge holds
    def keep(self, t: torch.Tensor, rid: str | None = None) -> dict[str, Any]:
        """A description of our tensor ``t`` for the judge (its bytes, its rid, where it lies), held until the judge
        releases it."""
        if rid is None:
            rid = self.rids.get(id(t))
            if rid is None or self.objects.get(rid) is not t:
                rid = f"s{next(self._count)}"
        self.objects[rid], self.rids[id(t)] = t, rid
        return {"tensor": t, "rid": rid, "span": _span(t), "rg": bool(t.requires_grad)}  # one object: one on arrival

    def release(self, names: list[Any]) -> None:
        for name in names:
            if not isinstance(name, str):
                continue
            t = self.objects.pop(name, None)
            if t is not None and self.rids.get(id(t)) == name:
                del self.rids[id(t)]
            self.modules.pop(name, None)
            self.seen.pop(name, None)
            self.grads.pop(name, None)
            self.calls.pop(name, None)

    def _echo(self, t: torch.Tensor) -> dict[str, Any] | None:
        """How a reply refers to our tensor t that holds the bytes of one the judge sent with the request
        (``echoes``; ``remote.Link.request``: the judge's copy of its own), instead of its bytes."""
        rid = self.echoes.get(id(t))
        return None if rid is None else {"__ref__": rid}

    def _resolve(self, desc: dict[str, Any]) -> torch.Tensor:
        t = self.objects.get(desc.get("__ref__"))
        if t is None:
            raise remote.ProtocolError(f"no tensor {str(desc.get('__ref__'))[:20]!r}")
        rg = bool(desc.get("rg"))
        if t.is_leaf and (t.is_floating_point() or t.is_complex()) and t.requires_grad != rg:
            t.requires_grad_(rg)
        return t

    def _made(self, desc: dict[str, Any], t: torch.Tensor) -> torch.Tensor:
        t = self._in_place_of_before(desc.get("key"), t)
        if desc.get("rg") and (t.is_floating_point() or t.is_complex()):
            t.requires_grad_(True)
        rid = desc.get("rid")
        if isinstance(rid, str):
            self.objects[rid], self.rids[id(t)] = t, rid
            self.spans[rid] = _span(t)
        return t

    def _in_place_of_before(self, key: Any, t: torch.Tensor) -> torch.Tensor:
        """``t`` in the storage that came from the same memory of the judge before, if we still hold it: the judge
        reusing a storage (or an allocator handing it the same memory again) is the subject seeing the same memory
        again, as it would in one process. Kept for the latest storages only (``_REUSE_KEPT``)."""
        if type(key) is not int or not key or t.device.type == "meta":
            return t
        base = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
        old = self.by_key.pop(key, None)
        if old is not None and old.numel() == base.numel() and old.device == base.device:
            old.data.copy_(base)  # (through .data: no version bump, as a write into reused memory has none)
            base = old
            t = torch.as_strided(base.view(t.dtype) if base.numel() % t.element_size() == 0 else
                                 base[: base.numel() - base.numel() % t.element_size()].view(t.dtype),
                                 t.shape, t.stride(), t.storage_offset())  # fmt: skip
        self.by_key[key] = base
        while len(self.by_key) > _REUSE_KEPT:
            self.by_key.pop(next(iter(self.by_key)))
        return t

    # ---- modules
    def describe(self, handle: str, *, only_changed: bool = False) -> dict[str, Any]:
        """The module's submodules, parameters (values only of those new or changed since the judge saw them),
        buffers and mode."""
        module = self.modules[handle]
        seen = self.seen.setdefault(handle, {})
        params, named = {}, list(module.named_parameters(remove_duplicate=False))
        for name, p in named:
            before = seen.get(name)
            rid = self.rids.get(id(p))
            if (
                before is not None and rid == before[0] and self.objects.get(rid) is p
                and _version(p) == before[1] and _ptr(p) == before[2]
                and (before[3] is None or _same_bytes(p, before[3]))
            ):  # fmt: skip
                continue
            params[name] = self.keep(p)
            snapshot = p.detach().clone() if p.device.type != "meta" and p.numel() <= _SNAPSHOT_LIMIT else None
            seen[name] = (params[name]["rid"], _version(p), _ptr(p), snapshot)
        seen_grads, grads = self.grads.setdefault(handle, {}), {}
        for name, p in named:
            state_now = _grad_state(p)
            if state_now != seen_grads.get(name):
                grads[name] = None if p.grad is None else p.grad.detach()
                seen_grads[name] = state_now
        out: dict[str, Any] = {"params": params, "grads": grads}
        if not only_changed:
            out["modules"] = [[path, type(m).__name__] for path, m in module.named_modules() if path]
            out["buffers"] = {n: b.detach() for n, b in module.named_buffers()}
            out["kind"] = type(module).__name__
        out["modules"] = out.get("modules", [])
        out["training"] = bool(module.training)
        return out

    def op_load(self, spec: str) -> dict[str, Any]:
        return {"info": self.info(self.impl(spec))}

    def op_establish(self, threads: int | None = None) -> dict[str, Any]:
        state.establish(threads if isinstance(threads, int) and threads > 0 else None)
        return {}

    def op_build(
        self, impl: str, component: str, args: list, kwargs: dict, new: str, device: str, to: str | None,
        dtype: torch.dtype | None, values: dict | None, evaluate: bool,
    ) -> dict[str, Any]:  # fmt: skip
        """The judge's build of a module (``remote.Build``) in one request: construct, ``.to``, ``load_state_dict``
        (strict; where ``values`` are given), ``train(False)`` (where ``evaluate``) — the requests the judge would
        send one by one, in their order. Each step's outcome (the global settings it changed, measured and restored
        around it as around a request; what it raised) is reported under ``steps``; the first step that raises,
        changes a setting, or gives what the judge refuses (not a module; another module from ``.to``) is the last
        carried out, as the judge would send no other. Then the module's description as it is now (one description
        instead of one per step); one that raises is the construct step's exception, the first step whose answer
        described the module. A module the judge will not hold (no description) is dropped."""

        def load() -> dict[str, Any]:
            self.modules[new].load_state_dict(values, strict=True)
            return {}

        def evaluated() -> dict[str, Any]:
            self.modules[new].train(False)
            return {}

        plan = [lambda: self._construct(impl, component, args, kwargs, new, device), lambda: self._to(new, to, dtype)]
        plan += [load] if values is not None else []
        plan += [evaluated] if evaluate else []
        reply: dict[str, Any] = {"steps": []}
        before = state.snapshot()  # (each step but the last leaves the settings as they were: one snapshot for all)
        for step in plan:
            done: dict[str, Any] = {"error": None}
            said: dict[str, Any] = {}
            with _settings_kept(done, before):
                try:
                    said = step()
                except BaseException as exc:  # the step's answer
                    done["error"] = _error(exc)
            reply["steps"].append(done)
            reply.update(said)
            if done["error"] or done["changed"] or "not_module" in said or said.get("same") is False:
                break
        if new in self.modules:
            try:
                reply.update(self.describe(new))
            except BaseException as exc:
                reply["steps"] = [{**reply["steps"][0], "error": _error(exc)}]
            for name, d in reply.get("params", {}).items():  # loaded as sent: the judge has these bytes
                sent = (values or {}).get(name)
                if sent is not None and id(sent) in self.rids and _echoes(d["tensor"], sent):
                    self.echoes[id(d["tensor"])] = self.rids[id(sent)]
        if "modules" not in reply:
            self.release([new])
        return reply

    def _construct(self, impl: str, component: str, args: list, kwargs: dict, new: str, device: str) -> dict:
        """The component constructed (on ``device``: the judge's default), held as ``new``; or what it gave
        instead of a module (``not_module``)."""
        factory = self.impl(impl).factory(component)
        args, kwargs = [_config(a) for a in args], {k: _config(v) for k, v in kwargs.items()}
        with torch.device(device) if device not in ("cpu", None) else contextlib.nullcontext():
            module = factory(*args, **kwargs)
        if not isinstance(module, nn.Module):
            return {"not_module": type(module).__name__}
        self.modules[new] = module
        return {}

    def op_construct(self, impl: str, component: str, args: list, kwargs: dict, new: str, device: str) -> dict:
        return self._construct(impl, component, args, kwargs, new, device) or self.describe(new)

    def _to(self, m: str, device: str | None, dtype: torch.dtype | None) -> dict[str, Any]:
        module = self.modules[m]
        kwargs = {k: v for k, v in (("device", device), ("dtype", dtype)) if v is not None}
        return {"same": module.to(**kwargs) is module}

    def op_to(self, m: str, device: str | None, dtype: torch.dtype | None) -> dict[str, Any]:
        moved = self._to(m, device, dtype)
        return {**self.describe(m), **moved}

    def op_train(self, m: str, mode: bool) -> dict[str, Any]:
        self.modules[m].train(bool(mode))
        return self.describe(m, only_changed=True)

    def op_load_state_dict(self, m: str, state: dict, strict: bool) -> dict[str, Any]:
        self.modules[m].load_state_dict(state, strict=bool(strict))
        return self.describe(m, only_changed=True)

    def op_sync(self, m: str, copy: dict, assign: dict, flags: dict, grads: dict) -> dict[str, Any]:
        module = self.modules[m]
        params = dict(module.named_parameters(remove_duplicate=False))
        with torch.no_grad():
            for name, value in copy.items():
                params[name].copy_(value)
        for name, value in assign.items():
            prefix, _, attr = name.rpartition(".")
            owner = module.get_submodule(prefix) if prefix else module
            setattr(owner, attr, value if isinstance(value, nn.Parameter) else nn.Parameter(value.detach()))
        params = dict(module.named_parameters(remove_duplicate=False))
        for name, flag in flags.items():
            params[name].requires_grad_(bool(flag))
        seen = self.grads.setdefault(m, {})
        for name, g in grads.items():  # the judge's backward accumulated into .grad, or the law cleared it
            params[name].grad = None if g is None else g.detach()
            seen[name] = _grad_state(params[name])
        return self.describe(m, only_changed=True)

    def op_pickled(self, m: str, new: str) -> dict[str, Any]:
        import pickle  # the subject's own module, in its own process: nothing of it is unpickled elsewhere

        self.modules[new] = pickle.loads(pickle.dumps(self.modules[m]))
        return {}

    def op_describe(self, m: str) -> dict[str, Any]:
        self.seen.pop(m, None)
        return self.describe(m)

    def op_clone(self, m: str, new: str) -> dict[str, Any]:
        self.modules[new] = copy.deepcopy(self.modules[m])
        return self.describe(new)

    def op_forward(self, m: str, inputs: list, subst: dict, params: list, call: str | None) -> dict:
        module = self.modules[m]
        before = [t.detach().clone() for t in inputs]
        y = torch.func.functional_call(module, subst, tuple(inputs)) if subst else module(*inputs)
        if type(y) is torch.Tensor:
            kind, outs = "tensor", [y]
        elif type(y) in (tuple, list) and y and all(type(t) is torch.Tensor for t in y):
            kind, outs = type(y).__name__, list(y)
        else:
            sub = isinstance(y, torch.Tensor) or (
                isinstance(y, (tuple, list)) and any(isinstance(t, torch.Tensor) for t in y)
            )
            what = f"a {type(y).__name__} (a torch.Tensor subclass)" if sub else type(y).__name__
            return {"result": "other", "type": what, "modules": [], "training": module.training}
        reply: dict[str, Any] = {"result": kind, "outputs": [self.keep(t) for t in outs]}
        if call is not None:
            named = dict(module.named_parameters(remove_duplicate=False))
            self.calls[call] = (outs, [*inputs, *subst.values(), *(named[n] for n in params if n in named)])
        written = {
            str(k): t.detach() for k, (t, b) in enumerate(zip(inputs, before, strict=True)) if not _same_bytes(t, b)
        }
        if written:
            reply["inputs_after"] = written
        changed = self.describe(m, only_changed=True)
        reply["params"], reply["grads"] = changed["params"], changed["grads"]
        return reply

    def op_backward(self, call: str, cot: list, wrt: list, create_graph: bool = False, new: str | None = None) -> dict:
        """The gradients of a kept call's outputs against its inputs ``wrt`` for cotangents ``cot``; with
        ``create_graph``, kept as call ``new`` (its inputs: the call's, then the cotangents) for a higher order."""
        if call not in self.calls:
            raise remote.ProtocolError(f"no call {call!r} held")
        outs, leaves = self.calls[call]
        pairs = [(o, c) for o, c in zip(outs, cot, strict=True) if c is not None and o is not None and o.requires_grad]
        targets = [leaves[i] for i in wrt]
        need = [t for t in targets if t.requires_grad]
        got: dict[int, Any] = {}
        if pairs and need:
            grads = torch.autograd.grad(
                [o for o, _ in pairs], need, [c for _, c in pairs], allow_unused=True, retain_graph=True,
                create_graph=bool(create_graph),
            )  # fmt: skip
            got = {id(t): g for t, g in zip(need, grads, strict=True)}
        found = [got.get(id(t)) for t in targets]
        for g in found:
            if g is not None and type(g) is not torch.Tensor:
                raise TypeError(f"the backward gave a {type(g).__name__}, not a torch.Tensor")
        if new is not None:
            self.calls[new] = ([g for g in found if g is not None], [*leaves, *cot])
        return {"grads": [None if g is None else self.keep(g) for g in found]}

    def op_read(self, rids: list) -> dict[str, Any]:
        return {"tensors": [self.objects[r].detach() for r in rids]}

    # ---- the loop
    def serve(self) -> None:
        while True:
            try:
                header, bufs = remote.receive(self.conn)
            except (EOFError, OSError):
                return
            op = header.get("op")
            reply: dict[str, Any] = {"op": op}
            self.spans, self.echoes = {}, {}
            self.release(header.get("release") or [])
            try:
                fields = remote.unpack(
                    {k: v for k, v in header.items() if k not in ("op", "release", "nbuf")}, bufs,
                    self._resolve, self._made,
                )  # fmt: skip
                handler = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
                if handler is None:
                    raise remote.ProtocolError(f"no request {op!r}")
                inputs = fields.get("inputs") or [None]
                where = inputs[0].device.type if isinstance(inputs[0], torch.Tensor) else "cpu"
                with _calling(fields.pop("context", None), where), _settings_kept(reply):  # context, then guard
                    reply.update(handler(**fields))
            except BaseException as exc:  # everything the subject raises is its answer
                reply["error"] = _error(exc)
            reply["spans"] = self.spans
            bufs_out: list[Any] = []
            remote.send(self.conn, remote.pack(reply, bufs_out, self._echo), bufs_out)


def _echoes(ours: torch.Tensor, theirs: torch.Tensor) -> bool:
    """Whether the judge's copy of ``theirs`` (a tensor it sent: a fresh contiguous clone) is exactly the tensor
    that ``ours``'s bytes would arrive as: the same dtype, shape and bytes, both contiguous with the same strides,
    ours its whole storage from its start (what :func:`remote.tensor_of` makes of its bytes)."""
    return (
        ours.device.type == theirs.device.type == "cpu"
        and ours.is_contiguous() and theirs.is_contiguous() and ours.stride() == theirs.stride()
        and ours.storage_offset() == 0
        and ours.untyped_storage().nbytes() == ours.numel() * ours.element_size()
        and _same_bytes(ours, theirs)
    )  # fmt: skip


@contextlib.contextmanager
def _settings_kept(out: dict[str, Any], before: dict[str, Any] | None = None) -> Any:
    """The block with the global settings measured around it: what it changed goes to ``out["changed"]`` (also
    when it raises) and the settings are put back — around a request, and around each step of a build. ``before``:
    the settings as they are now, where the caller has them."""
    before = state.snapshot() if before is None else before
    try:
        yield
    finally:
        out["changed"] = state.put_back(before)


def _error(exc: BaseException) -> dict[str, str]:
    """An exception as the judge receives it (``remote.raised`` makes the judge's exception of it)."""
    return {"type": type(exc).__name__, "message": str(exc)[:2000]}


def _ptr(t: torch.Tensor) -> int:
    return 0 if t.device.type == "meta" or t.numel() == 0 else t.data_ptr()


def _grad_state(p: torch.Tensor) -> tuple[int, int] | None:
    return None if p.grad is None else (id(p.grad), _version(p.grad))


def _version(t: torch.Tensor) -> int:
    return -1 if t.is_inference() else t._version


def _config(value: Any) -> Any:
    """A packed configuration dataclass (``{"__config__": name, "fields": …}``) as the contract's own type."""
    if isinstance(value, dict) and value.get("__config__") == "ModelConfig":
        import nanolm_core

        fields = {f.name for f in dataclasses.fields(nanolm_core.ModelConfig) if f.init}
        return nanolm_core.ModelConfig(**{k: v for k, v in value["fields"].items() if k in fields})
    return value


def stand_in(link: remote.Link, info: dict[str, Any]) -> Implementation:
    """The judge's Implementation of the subject behind ``link``, from what the subject reported (``info``: spec,
    module, file, provided, conventions_raw, skip_reason, import_effects): a stand-in module of data whose
    components are factories in the subject's process (``remote.Factory``)."""
    stand = types.ModuleType(str(info.get("module") or info.get("spec")))
    stand.__file__ = info.get("file") if isinstance(info.get("file"), str) else None
    stand.CONVENTIONS = info.get("conventions_raw")
    stand.SKIP_REASON = info.get("skip_reason") if isinstance(info.get("skip_reason"), str) else None
    stand.__kernels__ = str(info.get("kernels") or "")[:200]  # how its Triton kernels run, as it reported
    spec = str(info.get("spec"))
    for c in info.get("provided") or ():
        if c in COMPONENTS:
            setattr(stand, c, remote.Factory(link, spec, c))
    effects = tuple(str(e)[:200] for e in (info.get("import_effects") or ()))
    return Implementation(spec, stand, effects)


def _keep_only(wire: int) -> None:
    """Close every descriptor but stdin/out/err and the wire: multiprocessing hands a forked process the fork
    server's keep-alive pipe and the resource tracker's (bytes written into the first end the fork server; into the
    second, garble the tracker), and the subject is to hold nothing of ours but its link to the judge."""
    from multiprocessing import resource_tracker

    os.closerange(3, wire)
    os.closerange(wire + 1, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024)
    tracker = resource_tracker._resource_tracker
    tracker._fd, tracker._pid = None, None  # started anew, of its own, if the subject needs one


def main(conn: Any, spec: str, options: Any, log: str) -> None:
    """The subject process: load the implementation, say what it provides (or why it cannot be used), serve."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the verifier's to handle
    from properties.running import interpreted, processes
    from properties.running.loading import load

    with contextlib.suppress(OSError):
        os.setsid()  # its own process group: whatever the subject starts is ended with it (workers._Worker.kill)
    processes.adopt_orphans()  # and what leaves the group stays its descendant while it lives
    processes.install_environment(options.environ)
    interpreted.prepare()  # Triton's interpreter and its bridges, before the subject imports Triton
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    _keep_only(conn.fileno())
    if options.memory_limit:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (options.memory_limit, options.memory_limit))
    torch.set_num_threads(options.threads)
    server = Server(conn, load)
    try:
        impl = server.impl(spec)
    except BaseException as exc:  # the subject's import may raise anything
        message = str(exc) if type(exc).__name__ == "ImplementationError" else (
            f"importing implementation {spec!r} raised {type(exc).__name__}: {exc}"
        )  # fmt: skip
        remote.send(conn, {"op": "unusable", "message": message[:2000]})
        return
    bufs: list[Any] = []
    remote.send(conn, remote.pack({"op": "ready", "info": server.info(impl)}, bufs), bufs)
    server.serve()


@dataclasses.dataclass(frozen=True)
class _Options:
    environ: dict[str, str]
    memory_limit: int | None
    threads: int


class Subject:
    """A subject process for a judge that is the calling process (the pytest plugin): ``implementation()`` is the
    judge's stand-in for it (``stand_in``), started again when the last one's process ended or broke
    its link (a crash fails its own law, not every later one). ImplementationError when it cannot be used."""

    def __init__(self, spec: str) -> None:
        import tempfile

        self.spec = spec
        self._tmp = tempfile.mkdtemp(prefix="nanolm-verify-subject-")
        self._proc: Any = None
        self._impl: Any = None
        self._started = 0
        self.implementation()

    @property
    def pid(self) -> int | None:
        """The subject process's id (None before it started)."""
        return None if self._proc is None else self._proc.pid

    @property
    def link(self) -> remote.Link:
        """The judge's end of the wire to the subject process now running."""
        self.implementation()
        return self._link

    @property
    def log(self) -> str:
        return os.path.join(self._tmp, f"subject-{self._started}.log")

    def implementation(self) -> Any:
        if self._impl is not None and self._link.broken is None:
            return self._impl
        self.close(keep_tmp=True)
        from properties.running import processes
        from properties.running.loading import ImplementationError

        ctx = processes.context()
        mine, theirs = remote.wire(ctx)
        self._started += 1
        options = _Options(processes.environment(), None, torch.get_num_threads())
        self._proc = ctx.Process(target=main, args=(theirs, self.spec, options, self.log), daemon=True)
        self._proc.start()
        theirs.close()
        link = remote.Link(mine, "the process running the implementation")
        try:
            header, _ = remote.receive(mine)
        except (EOFError, OSError):
            self._proc.join(5)
            raise ImplementationError(
                f"importing implementation {self.spec!r} ended its process (exit status {self._proc.exitcode})"
            ) from None
        if header.get("op") != "ready" or not isinstance(header.get("info"), dict):
            raise ImplementationError(str(header.get("message") or f"implementation {self.spec!r} is unusable"))
        self._impl = stand_in(link, remote.unpack(header["info"], []))
        self._link = link
        return self._impl

    def close(self, keep_tmp: bool = False) -> None:
        if self._proc is not None and self._proc.pid is not None:
            with contextlib.suppress(OSError, AttributeError):
                self._link.conn.close()
            self._proc.join(2)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join(5)
        self._proc = None
        if not keep_tmp:
            import shutil

            shutil.rmtree(self._tmp, ignore_errors=True)
