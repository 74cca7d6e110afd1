"""The ``hotstandby`` sink (:mod:`.sink`): rows to the route's active cluster with identities
(:mod:`.identity`), per system (:mod:`.kafka`, :mod:`.pulsar`), its options and its result."""
