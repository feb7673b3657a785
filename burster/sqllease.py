"""One controller per cluster: a row of the state store naming the controller that writes a
cluster's state, and until when. Taken when a store is opened for writing, renewed by the writes
of the passes (at least every third of its length), given back when the store is closed; one that
lapsed (its controller died) can be taken over, and the controller that lost it may write nothing
more (``StoreError``): two controllers never launch from, and write, the same state."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, delete, insert, inspect, or_, select, update
from sqlalchemy.exc import IntegrityError

from burster.clock import utc_now
from burster.errors import StoreError
from burster.sqlschema import leases

LEASE_S = 60.0  # a controller ticks every 10 s: six passes' grace before another may take over


class Lease:
    """This controller's claim on one cluster, named ``host:pid:nonce`` in the row."""

    def __init__(self, cluster: str, lease_s: float = LEASE_S, now: Callable[[], datetime] = utc_now) -> None:
        self.cluster = cluster
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.length = timedelta(seconds=lease_s)
        self.now = now
        self.renewed_at: datetime | None = None

    def take(self, conn: Connection) -> None:
        """Take the cluster (in ``conn``'s transaction), unless another controller holds it. One
        conditional statement takes it (a lapsed or own row updated, else a new row inserted), so of
        two controllers taking it at once one is refused: the database decides, not a read before."""
        now = self.now()
        row = conn.execute(select(leases).where(leases.c.cluster == self.cluster)).first()
        if row is not None and row.holder != self.holder and row.expires_at > now:
            raise StoreError(self._held(row.holder, row.expires_at))
        until = now + self.length
        mine_now = or_(leases.c.expires_at <= now, leases.c.holder == self.holder)
        taken = conn.execute(update(leases).where(leases.c.cluster == self.cluster, mine_now)
                             .values(holder=self.holder, expires_at=until)).rowcount
        if taken != 1:
            try:
                conn.execute(insert(leases).values(cluster=self.cluster, holder=self.holder, expires_at=until))
            except IntegrityError as err:  # another controller took it in the meantime
                raise StoreError(self._held("another controller", until)) from err
        self.renewed_at = now

    @property
    def due(self) -> bool:
        """Whether a third of the lease has passed since it was last renewed."""
        return self.renewed_at is None or self.now() - self.renewed_at >= self.length / 3

    def renew(self, conn: Connection) -> None:
        """Extend the lease (in the transaction of a write), or raise if it was lost."""
        now = self.now()
        done = conn.execute(update(leases).where(leases.c.cluster == self.cluster, leases.c.holder == self.holder)
                            .values(expires_at=now + self.length))
        if done.rowcount != 1:
            raise StoreError(f"this controller ({self.holder}) lost cluster {self.cluster!r} to another after its "
                             f"lease lapsed (no write for {self.length.total_seconds():.0f} s); it writes nothing "
                             "more: stop it, and let the other go on")
        self.renewed_at = now

    def give_back(self, conn: Connection) -> None:
        conn.execute(delete(leases).where(leases.c.cluster == self.cluster, leases.c.holder == self.holder))
        self.renewed_at = None

    def _held(self, holder: str, until: datetime) -> str:
        return (f"cluster {self.cluster!r} is being written by {holder} (lease until {until:%Y-%m-%d %H:%M:%S} UTC): "
                "one controller writes a cluster's state at a time; stop the other one, or wait for its lease "
                "to lapse, or give this one its own cluster ([controller] cluster)")


def holders(engine: Engine, now: datetime) -> list[str]:
    """Every controller whose lease on a cluster of this database has not lapsed ("cluster: holder");
    none where the schema has no lease table yet."""
    if not inspect(engine).has_table(leases.name):
        return []
    with engine.connect() as conn:
        rows = conn.execute(select(leases.c.cluster, leases.c.holder).where(leases.c.expires_at > now)
                            .order_by(leases.c.cluster)).all()
    return [f"{cluster}: {holder}" for cluster, holder in rows]
