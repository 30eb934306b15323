"""An index's log: its versions (one root per committed entry, written with put-if-absent),
the leases of running operations, and the checks that name damage."""
