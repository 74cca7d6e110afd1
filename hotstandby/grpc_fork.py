"""grpc's fork handlers, off unless the application chose otherwise.

grpc (1.81 and later, grpc/grpc#43055) restarts its poller thread in a child process right
after ``fork()``; when the child then closes its inherited descriptors before ``exec`` (as
``subprocess.Popen`` does with ``preexec_fn``, which pyspark uses to start its JVM), the
poller hits ``EBADF`` and the child dies before it runs the program: about one start in
seventy fails while an etcd watch is open. The handlers only help a child that keeps using
the parent's channels without ``exec``, which no hotstandby client can do (its threads do not
survive a fork). This module must be imported before grpc is.
"""

from __future__ import annotations

import os

__all__ = ["FORK_SUPPORT_VARIABLE"]

FORK_SUPPORT_VARIABLE = "GRPC_ENABLE_FORK_SUPPORT"

os.environ.setdefault(FORK_SUPPORT_VARIABLE, "false")
