"""How the data source reads Pulsar: the driver's view of a cluster (:mod:`.cluster`), the plan
(:mod:`.plan`, :mod:`.limit`), the executors' reads (:mod:`.read`)."""
