"""``hotstandby drill``: failover rehearsed end to end on the reference cluster, with a report
of what was lost or duplicated (the answer must be nothing)."""

from hotstandby.drill.report import DrillReport, SwitchReport
from hotstandby.drill.runner import DrillFailed, DrillOptions, DrillProgress, run_drill

__all__ = ["DrillFailed", "DrillOptions", "DrillProgress", "DrillReport", "SwitchReport", "run_drill"]
