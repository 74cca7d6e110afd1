"""Run one test of pulsar-client-python's ``tests/asyncio_test.py`` against the reference
cluster, with ``pulsar.asyncio`` itself (``raw``) or with the facade in its place
(``facade``), and print its outcome as one JSON line. A process per test: a test that hangs is
ended by its caller's timeout without leaving anything behind.

    python -m tests.upstream.run_one FILE raw|facade TEST --service-url URL --admin-url URL
                                     --etcd HOST:PORT --namespace NS --route ROUTE
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import types
import unittest
from typing import Any

import pulsar.asyncio

from hotstandby.adapters.pulsar import asyncio as facade


def shim(args: argparse.Namespace) -> types.ModuleType:
    """``pulsar.asyncio`` as the upstream test imports it, with the facade's classes."""

    class Client(facade.Client):
        def __init__(self, service_url: str, **kwargs: Any) -> None:  # the route's cluster instead
            super().__init__(args.route, etcd=args.etcd, namespace=args.namespace, **kwargs)

    module = types.ModuleType("pulsar.asyncio")
    module.__dict__.update(vars(pulsar.asyncio))
    module.__dict__.update(Client=Client, Consumer=facade.Consumer, Producer=facade.Producer, Reader=facade.Reader,
                           PulsarException=facade.PulsarException)  # fmt: skip
    return module


def load(path: str, args: argparse.Namespace) -> types.ModuleType:
    original = sys.modules["pulsar.asyncio"]
    if args.mode == "facade":
        sys.modules["pulsar.asyncio"] = shim(args)
    try:
        spec = importlib.util.spec_from_file_location("upstream_asyncio_test", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.modules["pulsar.asyncio"] = original
    module.SERVICE_URL = args.service_url  # type: ignore[attr-defined]
    module.ADMIN_URL = args.admin_url  # type: ignore[attr-defined]
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("mode", choices=("raw", "facade"))
    parser.add_argument("test")
    for name in ("--service-url", "--admin-url", "--etcd", "--namespace", "--route"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    module = load(args.file, args)
    case = module.AsyncioTest(args.test)
    result = unittest.TestResult()
    case.run(result)
    problems = result.failures + result.errors
    outcome = "skipped" if result.skipped else ("failed" if problems else "passed")
    detail = problems[0][1].strip().splitlines()[-1] if problems else ""
    print(json.dumps({"test": args.test, "mode": args.mode, "outcome": outcome, "detail": detail}))


if __name__ == "__main__":
    main()
