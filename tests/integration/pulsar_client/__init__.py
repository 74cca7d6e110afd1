"""The Pulsar facade on the reference cluster (route ``payments``)."""
