"""The few Kafka protocol requests the SDK sends on its own sockets: reachability
(:mod:`.probe`) and a consumer group's state (:mod:`.group_state`), framed by :mod:`.requests`."""
