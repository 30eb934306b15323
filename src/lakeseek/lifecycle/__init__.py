"""The operations on an index: create, refresh, optimize, delete, restore, vacuum, cancel."""
