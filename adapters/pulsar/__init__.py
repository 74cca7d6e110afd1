"""Pulsar adapter (pulsar-client). Submodules import pulsar only where they need it."""
