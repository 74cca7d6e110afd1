"""The ``hotstandby`` data source (:mod:`.source`): its options and offsets, the driver's
planning of streams (:mod:`.stream_planner`, a switch participant) and batches (:mod:`.batch`),
which system plans a cluster (:mod:`.systems`), and what each task does around its reads
(:mod:`.task_run`, :mod:`.replan`)."""
