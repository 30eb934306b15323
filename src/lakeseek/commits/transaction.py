"""The one commit loop: a transaction prepared on the version an operation read, committed
on the latest one (see :mod:`lakeseek.format.actions`).

When another writer commits first, the transaction is checked against that writer's version:
it is applied on top of it when its requirements still hold (an optimize after a refresh, a
refresh after an optimize), and prepared again when they do not. ``tries`` bounds the
commits tried in all, re-preparations included.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from lakeseek.commits.log import IndexLog
from lakeseek.exceptions import CommitFailedError, IndexCorruptError, LakeseekError
from lakeseek.format.actions import Transaction
from lakeseek.format.root import Root

DEFAULT_COMMIT_TRIES = 10
logger = logging.getLogger("lakeseek")

# The latest version -> the transaction to commit on it, or None when there is nothing to do.
Prepare = Callable[[Root], Transaction | None]


def commit(
    log: IndexLog,
    prepare: Prepare,
    *,
    what: str,
    owner: str,
    finish: Callable[[Root, Root], Root] = lambda root, latest: root,
    check: Callable[[], None] = lambda: None,
    tries: int = DEFAULT_COMMIT_TRIES,
) -> Root:
    """Commit what ``prepare`` makes of the latest version, and return the new root (or the
    latest one, when there is nothing to do).

    ``finish`` completes a root about to be committed on top of ``latest`` (files derived from
    it are written then); ``check`` runs before each commit (an operation's lease: a cancelled
    operation never commits); ``what`` names the operation in messages; ``owner`` names the
    temporary files of the commit.
    """
    if not isinstance(tries, int) or isinstance(tries, bool) or tries < 1:
        raise LakeseekError(f"commit tries must be a whole number of at least 1, not {tries!r}")
    latest = log.latest()
    transaction: Transaction | None = None
    for attempt in range(1, tries + 1):
        try:
            if transaction is None or not transaction.holds(latest):
                transaction = prepare(latest)
                if transaction is None:
                    return latest
                if not transaction.holds(latest):
                    raise LakeseekError(f"{what} prepared a change that does not apply to the version it read")
            root = transaction.apply(latest, log.next_version(latest), int(time.time() * 1000))
            check()
            root = finish(root, latest)
        except IndexCorruptError:
            # A file of the version read is gone. When another writer committed since, a vacuum
            # keeping only the newest version (retention 0) took it: a lost race, not damage.
            newer = log.latest()
            if newer.version == latest.version:
                raise
            logger.info(
                "%s read version %d, which a vacuum removed after version %d (try %d)",
                what,
                latest.version,
                newer.version,
                attempt,
            )
            latest = newer
            continue
        try:
            check()
            log.commit(root, transaction.actions, owner)
            return root
        except CommitFailedError:
            latest = log.latest()
            logger.info("%s lost the race for version %d to %s (try %d)", what, root.version, latest.operation, attempt)
    raise CommitFailedError(f"gave up on {what} after {tries} tries: other writers keep changing it; try again")
