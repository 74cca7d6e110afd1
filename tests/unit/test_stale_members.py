"""Removing the members a consumer left behind on a cluster that died: the LeaveGroup codec and
the per-process list."""

from __future__ import annotations

import struct

import pytest

from hotstandby.adapters.kafka.consumer import stale_members
from hotstandby.adapters.kafka.consumer.stale_members import StaleMembers, leave_group_request, parse_leave_group
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.probe import ProtocolError


def test_leave_group_request_is_a_v3_batch_leave_of_dynamic_members() -> None:
    frame = leave_group_request(7, "g1", ["m-a", "m-b"])
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    api_key, version, correlation = struct.unpack_from(">hhi", frame, 4)
    assert (api_key, version, correlation) == (13, 3, 7)
    (client_len,) = struct.unpack_from(">h", frame, 12)
    body = frame[14 + client_len :]
    # group id, then [member id, group instance id = null] per member
    assert body == (b"\x00\x02g1" + struct.pack(">i", 2) + b"\x00\x03m-a\xff\xff" + b"\x00\x03m-b\xff\xff")


def _response(correlation: int, error: int, members: list[tuple[str, int]]) -> bytes:
    out = struct.pack(">iih", correlation, 0, error) + struct.pack(">i", len(members))
    for member, code in members:
        out += struct.pack(">h", len(member)) + member.encode() + struct.pack(">h", -1) + struct.pack(">h", code)
    return out


def test_parse_leave_group_reads_each_members_error() -> None:
    error, members = parse_leave_group(_response(7, 0, [("m-a", 0), ("m-b", 25)]), 7)
    assert error == 0
    assert members == {"m-a": 0, "m-b": 25}


def test_parse_leave_group_refuses_another_requests_answer() -> None:
    with pytest.raises(ProtocolError):
        parse_leave_group(_response(8, 0, []), 7)


def test_stale_members_are_kept_per_cluster_and_group() -> None:
    stale = StaleMembers()
    stale.add("kafka-a", "g", "m1")
    stale.add("kafka-a", "g", None)  # a consumer that never joined: nothing to remove
    stale.add("kafka-a", "h", "m2")
    stale.add("kafka-b", "g", "m3")
    assert stale.pending("kafka-a", "g") == {"m1"}
    assert stale.pending("kafka-b", "g") == {"m3"}
    assert stale.pending("kafka-b", "h") == set()


def test_a_coordinator_still_loading_the_group_is_asked_again_until_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers: list[object] = [stale_members.CoordinatorMoving("14"), stale_members.CoordinatorMoving("16"), {"m1"}]
    calls: list[float] = []

    def leave(spec: ClusterSpec, group: str, listed: list[str], timeout: float) -> set[str]:
        calls.append(timeout)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]

    monkeypatch.setattr(stale_members, "_leave", leave)
    spec = ClusterSpec(name="kafka-a", kind="kafka", url="127.0.0.1:9")
    assert stale_members.remove_members(spec, "g", ["m1"], timeout=5.0) == {"m1"}
    assert len(calls) == 3 and all(0.5 <= t <= 5.0 for t in calls)
    answers[:] = [stale_members.CoordinatorMoving("14")] * 100
    with pytest.raises(stale_members.CoordinatorMoving):
        stale_members.remove_members(spec, "g", ["m1"], timeout=0.3)
