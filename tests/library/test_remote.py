"""The plain-data wire between judge and subject (properties.library.remote): what arrives is checked and fresh,
and whatever the other end sends that is not the wire's is the subject's failure, never a crash of the judge."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import pickle
import struct
import threading

import pytest
import torch

from properties.library import remote
from properties.library.context import SubjectCrash


def _roundtrip(value):
    bufs: list = []
    header = remote.pack(value, bufs)
    return remote.unpack(json.loads(json.dumps(header)), [bytearray(b) for b in bufs])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64])
def test_a_tensor_arrives_with_its_values_layout_and_offset(dtype):
    base = torch.arange(40, dtype=torch.float64).to(dtype)
    views = [base.reshape(5, 8), base.reshape(5, 8).t(), base[3:].reshape(37)[::2], base[:8].expand(3, 8)]
    for t in views:
        got = _roundtrip({"t": t})["t"]
        assert type(got) is torch.Tensor and got.dtype == dtype and got.shape == t.shape
        assert got.stride() == t.stride() and got.storage_offset() == t.storage_offset()
        assert torch.equal(got, t) and got.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
        assert torch.equal(torch.as_strided(got, (40,), (1,), 0), base)  # the whole storage around the view


def test_tensors_of_one_storage_arrive_sharing_one_fresh_storage():
    base = torch.arange(12.0)
    a, b, c = _roundtrip([base[:6], base[6:], torch.ones(3)])
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() != c.untyped_storage().data_ptr()
    assert torch.equal(torch.cat([a, b]), base)


def test_a_subclass_arrives_as_a_plain_tensor_of_its_bytes():
    class Liar(torch.Tensor):
        pass

    honest = torch.ones(4)
    lie = (honest * 1.05).as_subclass(Liar)
    got = _roundtrip([lie])[0]
    assert type(got) is torch.Tensor and torch.equal(got, honest * 1.05)


def _desc(**change):
    return {"__t__": 0, "dtype": "float32", "shape": [2, 2], "stride": [2, 1], "offset": 0, "device": "cpu", **change}


@pytest.mark.parametrize(
    ("desc", "buf", "said"),
    [
        (_desc(dtype="float8"), 16, "unknown dtype"),
        (_desc(dtype=["float32"]), 16, "unknown dtype"),
        (_desc(), 12, "needs 16 bytes"),
        (_desc(offset=1), 16, "needs 20 bytes"),
        (_desc(stride=[2, -1]), 16, "non-negative integers"),
        (_desc(shape=[2, 2.5]), 16, "non-negative integers"),
        (_desc(offset=-1), 16, "inconsistent"),
        (_desc(shape=[2]), 16, "inconsistent"),
        (_desc(__t__=3), 16, "buffer 3"),
        (_desc(device="tpu"), 16, "device"),
        (_desc(__t__=None), 16, "meta"),
    ],
)
def test_a_malformed_tensor_is_refused_naming_what_is_wrong(desc, buf, said):
    with pytest.raises(remote.ProtocolError, match=said):
        remote.unpack(desc, [bytearray(buf)])


def _answering(frames: list[bytes]):
    """A link whose other end answers each request with the next raw frame (then closes)."""
    judge, subject = multiprocessing.Pipe()

    def serve() -> None:
        with contextlib.suppress(EOFError, OSError):  # the judge may be gone before its last request
            for frame in frames:
                subject.recv_bytes()
                subject.send_bytes(frame)
            subject.recv_bytes()
        subject.close()

    threading.Thread(target=serve, daemon=True).start()
    return remote.Link(judge, "the subject")


def _framed(header: bytes | dict, tail: bytes = b"") -> bytes:
    """A message in the wire's framing (the header's length, the header, the buffers) around any header bytes."""
    raw = json.dumps(header).encode() if isinstance(header, dict) else header
    return struct.pack("<Q", len(raw)) + raw + tail


@pytest.mark.parametrize(
    ("frame", "said"),
    [
        (b"5", "does not start with a header's length"),
        (pickle.dumps(("result", "passed")), "does not start with a header's length"),
        (_framed(b"5"), "a header that is int"),
        (_framed(pickle.dumps(("result", "passed"))), "not JSON"),
        (_framed(b"{not json"), "not JSON"),
        (_framed({"op": "other", "nbuf": 0}), "answered 'other'"),
        (_framed({"op": "read", "nbuf": -1}), "buffer count"),
        (_framed({"op": "read", "nbuf": 1, "sizes": ["4"]}, b"abcd"), "buffer sizes"),
        (_framed({"op": "read", "nbuf": 1}, b"abcd"), "buffer sizes"),
        (_framed({"op": "read", "nbuf": 1, "sizes": [4]}, b"abc"), "a frame of"),
        (_framed({"op": "read", "nbuf": 1, "sizes": [4]}, b"abcde"), "a frame of"),
        (_framed({"op": "read", "nbuf": 0, "error": 5}), "malformed error"),
        (_framed({"op": "read", "nbuf": 0, "changed": [1]}), "changed"),
        (_framed({"op": "read", "nbuf": 0, "tensors": [{"__ref__": "j1"}]}), "no tensor of the request"),
    ],
)
def test_a_malformed_answer_is_the_subject_s_crash_and_breaks_the_link(frame, said):
    link = _answering([frame])
    with pytest.raises(SubjectCrash, match=said):
        link.request("read", rids=[])
    with pytest.raises(SubjectCrash, match=said):  # every later request fails at once, with the first reason
        link.request("read", rids=[])


def test_a_closed_link_is_the_subject_s_crash():
    link = _answering([])
    with pytest.raises(SubjectCrash, match=remote.ENDED):
        link.request("read", rids=[])


def test_the_subject_s_exception_and_state_changes_come_back_as_data():
    from properties.library import state

    answer = {
        "op": "read",
        "nbuf": 0,
        "changed": ["torch threads 1 → 4"],
        "error": {"type": "ValueError", "message": "no"},
    }
    link = _answering([_framed(answer)])
    mark = state.reported()
    with pytest.raises(remote.RemoteError, match="no") as info:
        link.request("read", rids=[])
    assert info.value.remote_type == "ValueError" and state.reported(mark) == ["torch threads 1 → 4"]
    assert isinstance(remote.raised("NotImplementedError", "stub"), NotImplementedError)  # a stub still skips


def test_a_frame_is_one_message_of_length_prefixed_json_then_raw_buffers():
    judge, subject = multiprocessing.Pipe()
    bufs: list = []
    remote.send(judge, remote.pack({"op": "x", "t": torch.ones(2), "u": torch.zeros(1, dtype=torch.int64)}, bufs), bufs)
    raw = subject.recv_bytes()
    (n,) = struct.unpack_from("<Q", raw)
    header = json.loads(raw[8 : 8 + n])
    assert header["nbuf"] == 2 and header["sizes"] == [8, 8] and len(raw) == 8 + n + 16
    assert raw[8 + n :] == struct.pack("<2f", 1.0, 1.0) + struct.pack("<q", 0)
    assert not subject.poll(0.1)  # nothing else was sent: one message per frame
    judge2, subject2 = multiprocessing.Pipe()
    subject2.send_bytes(raw)
    got, got_bufs = remote.receive(judge2)
    assert torch.equal(remote.unpack(got["t"], got_bufs), torch.ones(2)) and got["op"] == "x"
