"""Every foreign error from the etcd client is mapped to a hotstandby error at the boundary."""

from __future__ import annotations

import grpc
import pytest
from pyetcd import exceptions as etcd_exc

from hotstandby.configcenter.etcd import _map_error, _mapped
from hotstandby.configcenter.store import KVStore
from hotstandby.errors import ConfigCenterError, ConfigCenterUnavailable, HotStandbyError, RevisionCompacted


class FakeRpcError(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return f"details of {self._code.name}"


@pytest.mark.parametrize("code", [c for c in grpc.StatusCode if c is not grpc.StatusCode.OK], ids=lambda c: c.name)
def test_every_grpc_status_maps_to_a_hotstandby_error(code: grpc.StatusCode) -> None:
    mapped = _map_error(FakeRpcError(code))
    assert isinstance(mapped, ConfigCenterError)
    assert code.name in str(mapped)
    retryable = isinstance(mapped, KVStore.recoverable_errors)
    assert retryable == (code in {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                                  grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL})  # fmt: skip


def all_pyetcd_errors() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    todo = [etcd_exc.Etcd3Exception]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


@pytest.mark.parametrize("cls", all_pyetcd_errors(), ids=lambda c: c.__name__)
def test_every_pyetcd_exception_maps_to_a_hotstandby_error(cls: type[BaseException]) -> None:
    exc = cls(7) if cls is etcd_exc.RevisionCompactedError else cls()
    with pytest.raises(HotStandbyError) as err, _mapped():
        raise exc
    assert err.value.__cause__ is exc
    if cls is etcd_exc.RevisionCompactedError:
        assert isinstance(err.value, RevisionCompacted) and err.value.compact_revision == 7
    if cls in (etcd_exc.ConnectionFailedError, etcd_exc.ConnectionTimeoutError, etcd_exc.NoServerAvailableError):
        assert isinstance(err.value, ConfigCenterUnavailable)


def test_pyetcd_failed_endpoint_value_error_is_unavailable() -> None:
    with pytest.raises(ConfigCenterUnavailable), _mapped():
        raise ValueError("Trying to use a failed node")


def test_unrelated_value_errors_pass_through() -> None:
    with pytest.raises(ValueError, match="ours"), _mapped():
        raise ValueError("ours")
