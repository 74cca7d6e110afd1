"""Acknowledgement ledgers: range sets of sequences per producer session, stored in the config
center with a merge and a compare-and-put, and followed live by every member of a group."""
