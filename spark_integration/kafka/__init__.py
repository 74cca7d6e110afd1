"""How the data source reads Kafka: the driver's view of a cluster (:mod:`.cluster`), the plan
(:mod:`.plan`), the executors' reads (:mod:`.read`, :mod:`.detour`)."""
