"""Elect one active process among replicas with a coordination.k8s.io/v1 Lease.

A port of client-go's leaderelection with its LeaseLock. Expiry is judged the way client-go
judges it: a candidate never compares the lease's timestamps with its own wall clock, but
notes on its local monotonic clock when it last saw the lease record change, and takes over
only once the record has stayed unchanged for the lease's duration. Clock skew between
nodes therefore cannot shorten a lease. Unlike client-go's, a standby looks at a held lease
every half retry_period, and once more the moment it would expire: it takes over a dead
holder's lease at most half a retry period after the lease duration has passed since the
last renewal (client-go's, looking every 1 to 2.2 retry periods, up to 4.4 periods after).
Writes carry the resourceVersion that was read, so of two candidates racing for a free
lease one wins and the other gets a conflict.

Safety rests on `renew_deadline < lease_duration`: a leader that could not renew gives up
(`hold` raises) before any standby may take over. `fence` makes that hold for each write too,
even in a process that was frozen (SIGSTOP, a paused VM) and woke up with writes due before
`hold` could see its lease lapse: it refuses a write once renew_deadline has passed since the
last successful renewal started, a time no standby's takeover can precede.
"""

from __future__ import annotations

import asyncio
import math
import random
import socket
import time
import uuid
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from typing import Any

import structlog

from jobcore._runtime import metrics
from jobcore._runtime.client import Client
from jobcore._runtime.errors import AlreadyExistsError
from jobcore._runtime.errors import ApiError
from jobcore._runtime.errors import ConflictError
from jobcore._runtime.errors import LeaderElectionLost
from jobcore._runtime.errors import NotFoundError
from jobcore._runtime.errors import WriteFenced
from jobcore._runtime.resources import LEASES
from jobcore._runtime.resources import Object

__all__ = ["LeaderElectionConfig", "LeaderElector"]

_JITTER_FACTOR = 1.2
"""client-go's: a candidate waits retry_period plus up to 1.2 times it between tries."""
_STANDBY_POLL_FACTOR = 0.5
"""While another holds the lease, a candidate looks every retry_period times this."""
_log = structlog.get_logger("jobcore.leaderelection")


def _default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def _micro_time() -> str:
    """Now as a metav1.MicroTime: RFC 3339 in UTC with microseconds."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Which Lease to compete for, as whom, and how fast; defaults are controller-runtime's."""

    name: str
    """Name of the Lease object, shared by all replicas of one controller."""
    namespace: str
    """Namespace of the Lease."""
    identity: str = field(default_factory=_default_identity)
    """This candidate's name in the lease; unique per process (hostname + random suffix)."""
    lease_duration: float = 15.0
    """Seconds a standby waits, after the record last changed, before taking over."""
    renew_deadline: float = 10.0
    """Seconds the leader keeps retrying a failed renewal before it gives up leadership."""
    retry_period: float = 2.0
    """Seconds between tries, to acquire (plus jitter) or to renew."""
    release_on_cancel: bool = True
    """Whether cancelling `hold()` releases the lease, so a standby takes over at once."""

    def __post_init__(self) -> None:
        if not self.retry_period > 0:
            raise ValueError("retry_period must be positive")
        if not self.renew_deadline > _JITTER_FACTOR * self.retry_period:
            raise ValueError("renew_deadline must exceed 1.2 * retry_period")
        if not self.lease_duration > self.renew_deadline:
            raise ValueError("lease_duration must exceed renew_deadline")


class LeaderElector:
    """Competes for one Lease: `acquire()` it, `hold()` it while leading, then `release()` it.

    The `leader_election_master_status{name}` gauge is 1 while this process leads, else 0.
    """

    def __init__(self, client: Client, config: LeaderElectionConfig) -> None:
        self._client = client
        self._config = config
        self._log = _log.bind(lease=f"{config.namespace}/{config.name}", identity=config.identity)
        self._gauge = metrics.leader_election_master_status.labels(config.name)
        self._gauge.set(0)
        self._leading = False
        self._lease: Object | None = None
        """The lease as last read or written; its resourceVersion guards the next write."""
        self._observed_time = 0.0
        """Monotonic time at which the lease record was last seen to change."""
        self._renewed_at = 0.0
        """Monotonic time at which the last successful acquire or renew started."""
        self._write_lock = asyncio.Lock()

    @property
    def is_leader(self) -> bool:
        """Whether this process acts as leader: acquired, and not lost, released or cancelled."""
        return self._leading

    def fence(self) -> None:
        """Raise `WriteFenced` unless this process leads and its last renewal (or the
        acquisition) started less than renew_deadline ago, on the monotonic clock: the guard
        `Client.fenced` puts before every write of a leader."""
        if not self._leading:
            raise WriteFenced(f"{self._describe()}: not the leader")
        if time.monotonic() >= self._renewed_at + self._config.renew_deadline:
            raise WriteFenced(
                f"{self._describe()}: not renewed within {self._config.renew_deadline}s"
            )

    async def acquire(self) -> None:
        """Block until this identity holds the lease; API errors are logged and retried."""
        self._log.info("trying to acquire the lease")
        while True:
            started = time.monotonic()
            try:
                async with asyncio.timeout(self._config.renew_deadline):
                    acquired = await self._try_acquire_or_renew(renewing=False)
            except TimeoutError:
                self._log.warning("acquiring the lease timed out")
                acquired = False
            if acquired:
                self._renewed_at = started
                self._set_leading(True)
                self._log.info("acquired the lease")
                return
            delay = self._standby_delay()
            if delay is None:
                delay = self._config.retry_period * (1 + _JITTER_FACTOR * random.random())
            await asyncio.sleep(delay)

    async def hold(self) -> None:
        """Renew the lease every retry_period while leading; returns once `release()`d.

        Raises `LeaderElectionLost` when no renewal has succeeded for renew_deadline, or the
        lease names another holder: the caller must stop acting as leader at once.
        """
        if not self._leading:
            raise LeaderElectionLost(f"{self._describe()}: not the leader")
        try:
            while self._leading:
                deadline = self._renewed_at + self._config.renew_deadline
                await asyncio.sleep(min(self._config.retry_period, deadline - time.monotonic()))
                await self._renew()
        except asyncio.CancelledError:
            self._set_leading(False)
            if self._config.release_on_cancel:
                await self.release()
            raise
        except LeaderElectionLost:
            self._set_leading(False)
            raise

    async def release(self) -> None:
        """Give up leadership; if the lease still names us, free it for a standby at once.

        Safe to call in any state; a failure to free the lease is logged, not raised (the
        lease then simply expires).
        """
        self._set_leading(False)
        async with self._write_lock:
            try:
                async with asyncio.timeout(self._config.renew_deadline):
                    freed = await self._free()
            except NotFoundError:
                freed = False  # deleted: there is nothing to free
            except (ApiError, TimeoutError) as exc:
                self._log.warning("releasing the lease failed; it will expire", error=str(exc))
                return
        if freed:
            self._log.info("released the lease")

    async def _free(self) -> bool:
        """Write an empty holder while the lease names us; False if it no longer does.

        A conflict means the lease changed since we read it: most often our own renewal,
        cancelled after its write was sent, landed unseen. The lease is read again and, if it
        still names us, freed with the new resourceVersion.
        """
        while self._lease is not None and self._holder() == self._config.identity:
            spec = self._lease.get("spec") or {}
            now = _micro_time()
            record = {
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": spec.get("leaseTransitions") or 0,
            }
            try:
                self._observe(await self._client.update(LEASES, {**self._lease, "spec": record}))
                return True
            except ConflictError:
                config = self._config
                self._observe(await self._client.get(LEASES, config.name, config.namespace))
        return False

    async def _renew(self) -> None:
        started = time.monotonic()
        remaining = self._renewed_at + self._config.renew_deadline - started
        if remaining <= 0:
            raise LeaderElectionLost(
                f"{self._describe()}: not renewed within {self._config.renew_deadline}s"
            )
        try:
            async with asyncio.timeout(remaining):
                renewed = await self._try_acquire_or_renew(renewing=True)
        except TimeoutError:
            raise LeaderElectionLost(
                f"{self._describe()}: not renewed within {self._config.renew_deadline}s"
            ) from None
        if not self._leading:
            return  # released meanwhile; `hold` returns
        if renewed:
            self._renewed_at = started
        elif self._holder() != self._config.identity:
            raise LeaderElectionLost(f"{self._describe()}: now held by {self._holder()!r}")

    async def _try_acquire_or_renew(self, *, renewing: bool) -> bool:
        """One round: create the lease, take it over, or renew it; False if not this round."""
        async with self._write_lock:
            if renewing and not self._leading:
                return False  # released while this renewal waited for the lock
            try:
                return await self._write_round()
            except (ConflictError, AlreadyExistsError):
                self._log.debug("lost a race for the lease")
            except ApiError as exc:
                self._log.warning("lease request failed", error=str(exc))
            return False

    async def _write_round(self) -> bool:
        config = self._config
        now = _micro_time()
        record: dict[str, Any] = {
            "holderIdentity": config.identity,
            "leaseDurationSeconds": math.ceil(config.lease_duration),
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        }
        try:
            lease = await self._client.get(LEASES, config.name, config.namespace)
        except NotFoundError:
            meta = {"name": config.name, "namespace": config.namespace}
            new = {"apiVersion": LEASES.api_version, "kind": LEASES.kind, "metadata": meta}
            self._observe(await self._client.create(LEASES, {**new, "spec": record}))
            return True
        self._observe(lease)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        if holder == config.identity:
            record["acquireTime"] = spec.get("acquireTime") or now
            record["leaseTransitions"] = spec.get("leaseTransitions") or 0
        else:
            if holder and time.monotonic() < self._expires_at():
                self._log.debug("lease is held by another", holder=holder)
                return False
            record["leaseTransitions"] = (spec.get("leaseTransitions") or 0) + 1
        self._observe(await self._client.update(LEASES, {**lease, "spec": record}))
        return True

    def _observe(self, lease: Object) -> None:
        """Remember `lease`; restart the expiry clock if its record changed."""
        previous = (self._lease or {}).get("spec")
        if lease.get("spec") != previous:
            self._observed_time = time.monotonic()
        self._lease = lease

    def _standby_delay(self) -> float | None:
        """While another holds the lease: seconds until the next look, else None.

        Looking often notices each renewal soon after it happens (the expiry clock restarts
        from the look that notices it), and the last look comes the moment the lease would
        expire, so a dead holder's lease is taken over at most half a retry period late.
        """
        holder = self._holder()
        if not holder or holder == self._config.identity:
            return None
        left = self._expires_at() - time.monotonic()
        if left <= 0:
            return None  # expired, yet not taken: a race lost to another candidate
        return min(self._config.retry_period * _STANDBY_POLL_FACTOR, left)

    def _expires_at(self) -> float:
        """When the observed lease runs out, on the monotonic clock of its last change."""
        duration = ((self._lease or {}).get("spec") or {}).get("leaseDurationSeconds") or 0
        return self._observed_time + duration

    def _holder(self) -> str:
        return str(((self._lease or {}).get("spec") or {}).get("holderIdentity") or "")

    def _set_leading(self, leading: bool) -> None:
        self._leading = leading
        self._gauge.set(1 if leading else 0)

    def _describe(self) -> str:
        return f"lease {self._config.namespace}/{self._config.name}"
