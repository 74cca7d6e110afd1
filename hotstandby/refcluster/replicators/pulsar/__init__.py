"""The reference cluster's stand-in for Pulsar geo-replication: one process per direction.

Copies keep payload, key, properties, event time and partition, and get the property
``__MSG_PROP_REPL_SOURCE_POSITION = "<ledgerId>:<entryId>"`` that Pulsar >= 3.0.11
geo-replication adds. Run it with ``python -m hotstandby.refcluster.replicators.pulsar --config FLOW.json``.
"""
