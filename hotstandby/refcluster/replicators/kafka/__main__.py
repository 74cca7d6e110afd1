"""``python -m hotstandby.refcluster.replicators.kafka --config FLOW.json``: run one flow until SIGTERM."""

import sys

from hotstandby.refcluster.flow_main import run_flow_process
from hotstandby.refcluster.replicators.kafka.config import FlowConfig
from hotstandby.refcluster.replicators.kafka.flow import KafkaFlow

sys.exit(run_flow_process("hotstandby-kafka-replicator", FlowConfig.load, KafkaFlow))
