"""Running the client libraries' own test suites through the facades (docs/pulsar-api.md)."""
