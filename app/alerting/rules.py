"""The server's alert rules, every family's in one tuple: what the engine evaluates, the API
lists and the PromQL rules file is written from.

Each family module declares its rules once (`rules_*.py`): the check, which reads the server's
own judgement of one host (`ctx.health`, from `app.queries.host_health`) and never re-derives
it. Thresholds are settings (docs/alerts.md): ratios, sustain time and error rates from
`app.runtime.config.Settings`, the rest from `AlertingSettings`; `for` durations from
PEERWATCH_ALERT_FOR_S.
"""

from __future__ import annotations

from peerwatch.app.alerting.rule import Rule
from peerwatch.app.alerting.rules_all_to_all import ALL_TO_ALL_RULES
from peerwatch.app.alerting.rules_driver import DRIVER_RULES
from peerwatch.app.alerting.rules_events import EVENT_RULES
from peerwatch.app.alerting.rules_fabric import FABRIC_RULES
from peerwatch.app.alerting.rules_fleet import FLEET_RULES
from peerwatch.app.alerting.rules_gdr import GDR_RULES
from peerwatch.app.alerting.rules_gpu import GPU_RULES
from peerwatch.app.alerting.rules_links import LINK_RULES
from peerwatch.app.alerting.rules_network import NETWORK_RULES
from peerwatch.app.alerting.rules_nics import NIC_RULES
from peerwatch.app.alerting.rules_pair_faults import PAIR_FAULT_RULES
from peerwatch.app.alerting.rules_pcie import PCIE_RULES
from peerwatch.app.alerting.rules_probe import PROBE_RULES
from peerwatch.app.alerting.rules_slow_pairs import SLOW_PAIR_RULES

RULES: tuple[Rule, ...] = (
    *LINK_RULES,
    *SLOW_PAIR_RULES,
    *FLEET_RULES,
    *PCIE_RULES,
    *ALL_TO_ALL_RULES,
    *PROBE_RULES,
    *FABRIC_RULES,
    *EVENT_RULES,
    *GPU_RULES,
    *PAIR_FAULT_RULES,
    *DRIVER_RULES,
    *NIC_RULES,
    *GDR_RULES,
    *NETWORK_RULES,
)
RULE_NAMES = frozenset(r.name for r in RULES)
