"""Values that hold while the database shows the same state, kept from one snapshot to the next.

Part of what a search needs depends on the store's contents, not on the query: the number of
memories and their mean term count (BM25), how many vectors a filter selects (exact scoring or the
graph). Counting them costs milliseconds a search (10,000 memories: 2 ms for the count and mean).
Two snapshots whose ``txid_current_snapshot()`` is the same (xmin, xmax and the transactions then
running) see the same committed rows: no transaction ended between them. So a value counted inside
one read-only snapshot is reused by the next snapshot with the same stamp; any transaction ending
anywhere on the server (a write, a rollback) changes the stamp, and the next search counts again.
Only ``Session.snapshot`` transactions (REPEATABLE READ, READ ONLY: one state for every statement,
no changes of their own) read or fill the cache.
"""

from __future__ import annotations

from remem.backends.statecache import SnapshotCache

__all__ = ["STAMP", "SnapshotCache"]


#: Selects the state of the database the current snapshot sees (see the module docstring):
#: ``Session.snapshot`` runs it with its BEGIN, in the same round trip.
STAMP = "SELECT txid_current_snapshot()::text"
