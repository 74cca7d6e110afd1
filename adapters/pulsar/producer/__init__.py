"""The Pulsar ``Producer`` (:mod:`.producer`): what it keeps of a message (:mod:`.message`),
and how far geo-replication copied its messages at a switch (:mod:`.replication_position`)."""
