"""Kafka adapter (confluent-kafka). Submodules import confluent_kafka only where they need it."""
