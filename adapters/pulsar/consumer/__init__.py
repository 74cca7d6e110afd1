"""The Pulsar ``Consumer`` (:mod:`.consumer`): what the consumers of one subscription share
(:mod:`.subscription`), what was handed out (:mod:`.handed`), how acknowledgements are taken
(:mod:`.acknowledging`), and where a subscription starts after a switch (:mod:`.start_position`)."""
