"""The Pulsar facade next to pulsar-client on the same broker."""
