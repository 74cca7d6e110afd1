"""``hotstandby drill``: failover rehearsed end to end on the reference cluster, with a report
of what was lost or duplicated (the answer must be nothing)."""

from hotstandby.drill.kafka import DrillFailed, DrillOptions, DrillProgress, run_kafka_drill
from hotstandby.drill.report import DrillReport, SwitchReport

__all__ = ["DrillFailed", "DrillOptions", "DrillProgress", "DrillReport", "SwitchReport", "run_kafka_drill"]
