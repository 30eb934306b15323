"""The life of an index: its log of versions, the leases of running operations, and the
operations themselves (create, refresh, optimize, delete, restore, vacuum, cancel)."""
