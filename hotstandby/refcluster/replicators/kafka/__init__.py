"""The reference cluster's MirrorMaker 2 replacement: one process per direction.

It writes what MM2 writes — remote topics named by the replication policy, offset syncs,
checkpoints, heartbeats, and its own progress in Connect's source-offset format — so a client
that understands MM2 cannot tell the difference. Run it with
``python -m hotstandby.refcluster.replicators.kafka --config FLOW.json``.
"""
