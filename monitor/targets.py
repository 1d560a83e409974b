"""The targets a build speaks of: every one with health or data, each with its role and health.

A target with data but no health report (a replay, a test) is listed with
``up`` unknown; a role detected from what it exposes replaces the health's
(``ptmon.monitor.roles.detect_role``: config, then run info, then names).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ptmon.exporters import schema
from ptmon.monitor.dashboard import TargetHealth
from ptmon.monitor.roles import detect_role, run_info_names
from ptmon.monitor.settings import Settings
from ptmon.monitor.store import Store

__all__ = ["KnownTarget", "target_roles", "known_targets", "run_start"]

# Creation times (unix) of the contract's counters and histograms: when the exporting process started.
_CREATED = tuple(dict.fromkeys(spec.created for spec in schema.CONTRACT if spec.kind in ("counter", "histogram")))


@dataclass(frozen=True, slots=True)
class KnownTarget:
    name: str
    health: TargetHealth
    role: str | None

    @property
    def down(self) -> bool:
        return self.health.up is False


def target_roles(store: Store, health: Sequence[TargetHealth], settings: Settings) -> dict[str, str | None]:
    """Each target's role, by name: health's targets first, then any other the store holds data of."""
    configured = {t.name: t.role for t in settings.targets}
    from_health = {h.name: h.role for h in health}
    names = list(dict.fromkeys((*(h.name for h in health), *store.targets())))
    roles: dict[str, str | None] = {}
    for name in names:
        run_roles = [s.labels.get(schema.LABEL_ROLE, "") for n in run_info_names() for s in store.series(name, n)]
        roles[name] = detect_role(configured=configured.get(name) or from_health.get(name),
                                  run_info_roles=run_roles, names=store.names(name))
    return roles


def known_targets(store: Store, health: Sequence[TargetHealth], settings: Settings) -> list[KnownTarget]:
    roles = target_roles(store, health, settings)
    urls = {t.name: t.url for t in settings.targets}
    by_name = {h.name: h for h in health}
    out: list[KnownTarget] = []
    for name, role in roles.items():
        h = by_name.get(name)
        if h is None:  # data with no health report (a replay, a test): up is unknown
            h = TargetHealth(name=name, url=urls.get(name, ""), role=role, up=None,
                             series=store.series_count(name), dropped_series=store.dropped_series(name))
        elif h.role != role:
            h = replace(h, role=role)
        out.append(KnownTarget(name, h, role))
    return out


def run_start(store: Store, targets: Sequence[KnownTarget], now: float) -> float | None:
    """When the run started: the earliest ``_created`` of the trainers' posttrain counters and histograms,
    else of any target's; None when no target exposes one.

    prometheus_client stamps each counter and histogram with its creation time, so the trainer's say when
    the training process began, however late this monitor joined. Per series the earliest value held
    counts (a restarted process exposes a later one). A time after ``now`` is not used: it comes from
    another clock (a host whose clock runs ahead, a test's injected clock).
    """
    for group in ([t for t in targets if t.role == schema.ROLE_TRAINER], targets):
        times = [v for t in group for name in _CREATED for s in store.series(t.name, name)
                 for v in (s.finite_ends() or ()) if 0 < v <= now]
        if times:
            return min(times)
    return None
