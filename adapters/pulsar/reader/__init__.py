"""The Pulsar ``Reader`` (:mod:`.reader`), with its stall watch (:mod:`.stall_watch`), and the
``TableView`` (:mod:`.table_view`)."""
