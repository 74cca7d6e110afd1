"""PySpark data source reading through hotstandby's failover logic (requires ``hotstandby[spark]``)."""
