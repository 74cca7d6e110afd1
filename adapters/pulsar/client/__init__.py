"""The Pulsar ``Client`` facade (:mod:`.client`): its cluster definition's settings
(:mod:`.settings`), its switch participant (:mod:`.switch`), and pulsar-client's creations
with their error messages (:mod:`.error_messages`)."""
