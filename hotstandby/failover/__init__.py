"""The failover core: what every failover-aware client is made of.

Record identity, partitioning rules, the producer's replay window, the ack tracker and the
ledger (``ledger/``), start-position translation, the route follower and the switch, presence
and the ``hotstandby.*`` client options. It imports :mod:`hotstandby.configcenter` and nothing
of a client library, a tool or an adapter.
"""
