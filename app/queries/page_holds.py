"""Read what holds a host's pages back: its maintenance windows and its settle time.

The probe's start and driver load times are on the probe's clock; they are moved onto the
server's by the host's measured clock skew before they are compared with the server's now.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.debounce import Hold, Window, page_hold
from peerwatch.app.store.tables.alerts import MaintenanceWindow
from peerwatch.app.store.tables.inventory import Host, HostRuntime
from peerwatch.probes.report import FabricManagerInfo


def windows_of(session: Session, hosts: Iterable[str] | None, now: datetime
               ) -> dict[str, list[Window]]:
    """Windows not yet ended, per host (every host when `hosts` is None)."""
    query = select(MaintenanceWindow).where(MaintenanceWindow.ends_at > now)
    if hosts is not None:
        query = query.where(MaintenanceWindow.host.in_(sorted(set(hosts))))
    out: dict[str, list[Window]] = {}
    for w in session.scalars(query.order_by(MaintenanceWindow.starts_at)):
        out.setdefault(w.host, []).append(Window(w.starts_at, w.ends_at, w.comment, w.id))
    return out


def _on_server_clock(at: datetime | None, skew_s: float | None) -> datetime | None:
    return None if at is None else at + timedelta(seconds=skew_s or 0.0)


def page_holds(session: Session, now: datetime, settle_s: float,
               hosts: Iterable[str] | None = None) -> dict[str, Hold]:
    """{host: why its pages wait now} for the hosts held (every host when `hosts` is None)."""
    names = None if hosts is None else sorted(set(hosts))
    windows = windows_of(session, names, now)
    query = select(Host.name, Host.clock_skew_s, HostRuntime.probe_started_at,
                   HostRuntime.driver_loaded_at).join(HostRuntime,
                                                      HostRuntime.host_id == Host.id)
    if names is not None:
        query = query.where(Host.name.in_(names))
    starts = {name: (_on_server_clock(p, skew), _on_server_clock(d, skew))
              for name, skew, p, d in session.execute(query)}
    out = {}
    for name in set(windows) | set(starts):
        probe, driver = starts.get(name, (None, None))
        hold = page_hold(now, windows.get(name, []), settle_s, probe, driver)
        if hold is not None:
            out[name] = hold
    return out


def fabric_manager_of(session: Session, host: Host) -> FabricManagerInfo | None:
    """The Fabric Manager state of the host's newest report (None: not reported)."""
    row = session.get(HostRuntime, host.id)
    if row is None or row.fabric_manager is None:
        return None
    return FabricManagerInfo.model_validate(row.fabric_manager)


def list_windows(session: Session, now: datetime, host: str | None = None,
                 ended: bool = False) -> list[MaintenanceWindow]:
    """Maintenance windows, latest start first: current and future ones (all if `ended`)."""
    query = select(MaintenanceWindow)
    if not ended:
        query = query.where(MaintenanceWindow.ends_at > now)
    if host is not None:
        query = query.where(MaintenanceWindow.host == host)
    order = (MaintenanceWindow.starts_at.desc(), MaintenanceWindow.id.desc())
    return list(session.scalars(query.order_by(*order)))
