"""``python -m hotstandby.refcluster.replicators.pulsar --config FLOW.json``: run one flow until SIGTERM."""

import sys

from hotstandby.refcluster.flow_main import run_flow_process
from hotstandby.refcluster.replicators.pulsar.config import PulsarFlowConfig
from hotstandby.refcluster.replicators.pulsar.flow import PulsarFlow

sys.exit(run_flow_process("hotstandby-pulsar-replicator", PulsarFlowConfig.load, PulsarFlow))
