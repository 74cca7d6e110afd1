"""Run one test of pulsar-client-python's own test suite against the reference cluster, with
pulsar-client itself (``raw``) or with the facades in its place (``facade``), and print its
outcome as one JSON line. A process per test: a test that hangs is ended by its caller's
timeout without leaving anything behind.

    python -m tests.upstream.run_one FILE CLASS raw|facade TEST --service-url URL
                                     --admin-url URL --etcd HOST:PORT --namespace NS --route ROUTE

The suite is written for a standalone Pulsar on localhost:6650 (admin on :8080): those
addresses are replaced by the reference cluster's. Through the facade, ``pulsar.Client`` and
``pulsar.asyncio`` are the facades' for the test module only; each ignores the service URL it is
given and follows ``ROUTE`` instead.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import unittest
from typing import Any

import pulsar
import pulsar.asyncio

from hotstandby.adapters.pulsar import Client as FacadeClient
from hotstandby.adapters.pulsar import asyncio as facade_asyncio

_STANDALONE = {"pulsar://localhost:6650": "service_url", "http://localhost:8080": "admin_url"}


def shims(args: argparse.Namespace) -> dict[str, types.ModuleType]:
    """``pulsar`` and ``pulsar.asyncio`` as the upstream tests import them, with the facades."""
    route = {"etcd": args.etcd, "namespace": args.namespace}

    class Client(FacadeClient):
        def __init__(self, service_url: str, **kwargs: Any) -> None:  # the route's cluster instead
            super().__init__(args.route, **route, **kwargs)

    class AsyncClient(facade_asyncio.Client):
        def __init__(self, service_url: str, **kwargs: Any) -> None:
            super().__init__(args.route, **route, **kwargs)

    blocking = types.ModuleType("pulsar")
    blocking.__dict__.update(vars(pulsar), Client=Client)
    aio = types.ModuleType("pulsar.asyncio")
    aio.__dict__.update(vars(pulsar.asyncio))
    aio.__dict__.update(Client=AsyncClient, Consumer=facade_asyncio.Consumer, Producer=facade_asyncio.Producer,
                        Reader=facade_asyncio.Reader, PulsarException=facade_asyncio.PulsarException)  # fmt: skip
    blocking.asyncio = aio  # type: ignore[attr-defined]
    return {"pulsar": blocking, "pulsar.asyncio": aio}


def load(path: str, args: argparse.Namespace) -> types.ModuleType:
    source = open(path, encoding="utf-8").read()  # noqa: SIM115 - read at once
    for standalone, option in _STANDALONE.items():
        source = source.replace(standalone, getattr(args, option))
    replaced = shims(args) if args.mode == "facade" else {}
    originals = {name: sys.modules[name] for name in replaced}
    sys.modules.update(replaced)
    try:
        module = types.ModuleType("upstream_test")
        module.__file__ = path
        exec(compile(source, path, "exec"), module.__dict__)
    finally:
        sys.modules.update(originals)
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("case")
    parser.add_argument("mode", choices=("raw", "facade"))
    parser.add_argument("test")
    for name in ("--service-url", "--admin-url", "--etcd", "--namespace", "--route"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    module = load(args.file, args)
    case = getattr(module, args.case)(args.test)
    result = unittest.TestResult()
    case.run(result)
    problems = result.failures + result.errors
    outcome = "skipped" if result.skipped else ("failed" if problems else "passed")
    detail = problems[0][1].strip().splitlines()[-1] if problems else ""
    print(json.dumps({"test": args.test, "mode": args.mode, "outcome": outcome, "detail": detail}), flush=True)


if __name__ == "__main__":
    main()
