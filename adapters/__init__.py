"""Messaging-system adapters: one sub-package per system, loaded lazily.

Use :func:`hotstandby.registry.import_adapter_module` rather than importing these directly
from core code, so a missing client library produces an install hint.
"""
