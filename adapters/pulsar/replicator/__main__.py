"""``python -m hotstandby.adapters.pulsar.replicator --config FLOW.json``: run one flow until SIGTERM."""

import sys

from hotstandby.adapters.pulsar.replicator.config import PulsarFlowConfig
from hotstandby.adapters.pulsar.replicator.flow import PulsarFlow
from hotstandby.refcluster.flow_main import run_flow_process

sys.exit(run_flow_process("hotstandby-pulsar-replicator", PulsarFlowConfig.load, PulsarFlow))
