"""MirrorMaker 2 compatibility: record formats, replication policies, offset-sync and
checkpoint rules, as Apache Kafka's ``connect/mirror`` implements them. Pure logic; no client
library is imported here."""
