"""``python -m hotstandby.adapters.kafka.replicator --config FLOW.json``: run one flow until SIGTERM."""

import sys

from hotstandby.adapters.kafka.replicator.config import FlowConfig
from hotstandby.adapters.kafka.replicator.flow import KafkaFlow
from hotstandby.refcluster.flow_main import run_flow_process

sys.exit(run_flow_process("hotstandby-kafka-replicator", FlowConfig.load, KafkaFlow))
