"""The recording rules the PromQL twins share: what several of them read, recorded once.

The baseline is recorded in its own group, every 5 min, to keep its 1-day look-back cheap;
the rest are recorded at the file's evaluation interval, before the alerting rules of the
same group read them. The server's counterparts are its own judgement (`explains.py` for
what explains a slow pair, `app/analysis/health.py` for sustained and intermittent).
"""

from __future__ import annotations

from peerwatch.app.alerting.promql import Record
from peerwatch.app.alerting.promql_network import NETWORK_RECORDS
from peerwatch.app.analysis.xid_catalog import P2P_XIDS

P2P_CODES = "|".join(str(c) for c in sorted(P2P_XIDS))  # the Xid classes that explain pairs


def on_the_pair(low: str) -> str:
    """A (pair, test) condition of either direction, unless PCIe or a held page explains it,
    moved onto its unordered pair's labels (`gpu` < `peer_gpu`, the way in `direction`):
    what every pair rule pages by, once per pair."""
    return ("label_replace(label_replace(label_join(\n"
            "    (\n"
            + low +
            "      unless on (host, gpu, peer_gpu, test) peerwatch:p2p_test_explained_by_pcie\n"
            "      unless on (host, gpu, peer_gpu) peerwatch:pair_page_held\n"
            "    ) * on (host, gpu, peer_gpu) group_left (pair) peerwatch:p2p_pair,\n"
            '  "direction", "->", "gpu", "peer_gpu"),\n'
            '  "gpu", "$1", "pair", "([0-9]+)-[0-9]+"), "peer_gpu", "$1", "pair", '
            '"[0-9]+-([0-9]+)")\n')

BASELINE_COMMENT = (
    "The pair's own norm: the median of its uncontended values over the last day (one point "
    "per 10 min, the sweep interval), recorded every 5 min to keep the 1-day look-back cheap."
)

BASELINES: tuple[Record, ...] = (
    Record(
        "peerwatch:p2p_bandwidth_baseline_bytes_per_second",
        expr=(
            "quantile_over_time(0.5, (\n"
            "    peerwatch_p2p_bandwidth_bytes_per_second\n"
            "  unless on (host, gpu, peer_gpu, test) peerwatch_p2p_contended == 1\n"
            ")[1d:10m])\n"
        ),
    ),
)

SHARED: tuple[Record, ...] = (
    Record(
        "peerwatch:p2p_bandwidth_baseline_ratio",
        expr=(
            "(\n"
            "    peerwatch_p2p_bandwidth_bytes_per_second\n"
            "  unless on (host, gpu, peer_gpu, test) peerwatch_p2p_contended == 1\n"
            ")\n"
            "/ last_over_time(peerwatch:p2p_bandwidth_baseline_bytes_per_second[15m])\n"
        ),
        comment=(
            "Newest uncontended value / its baseline, per pair and test (contended: no series). "
            "last_over_time: the baseline is recorded every 5 min, as long as the 5 min "
            "look-back, so a late recording must not make the ratio (and a pending alert's "
            "`for`) vanish."
        ),
    ),
    Record(
        "peerwatch:gpu_fault_explains_pairs",
        expr=(
            "group by (host, gpu) (\n"
            "    peerwatch_nvlink_up == 0\n"
            "  or increase(peerwatch_nvlink_replay_errors_total[10m]) > 0\n"
            "  or increase(peerwatch_nvlink_recovery_errors_total[10m]) > 0\n"
            "  or rate(peerwatch_nvlink_crc_flit_errors_total[10m]) > 1\n"
            "  or peerwatch_gpu_nvlink_active_links < peerwatch_gpu_nvlink_links\n"
            "  or max by (host, gpu) (peerwatch_gpu_present) == 0\n"
            '  or max by (host, gpu) (peerwatch_fabric_event_findings{gpu!="", level="fault"}) '
            "> 0\n"
            '  or max by (host, gpu) (peerwatch_fabric_event_findings{gpu!="",\n'
            f'       xid=~"xid({P2P_CODES})"}}) '
            "> 0\n"
            ")\n"
        ),
        comment=(
            "What explains a slow pair, as the server judges it (app/alerting/explains.py "
            "`explained_gpus`, `pcie_short_gpus`): the pair rules below leave these out themselves "
            "(`unless`), at both ends of the pair, instead of relying on Alertmanager "
            "inhibition, whose source alerts wait out their own `for` (PCIeLinkDowntrained's 15 "
            "min, NVLinkDown's 1 min) while a pair rule may already fire. Built from the "
            "explaining *conditions*, not from ALERTS: the server reads the condition as it "
            "stands, whether or not its alert has fired yet. A GPU whose own fault explains "
            "every slow pair through it: a link down, link errors growing "
            "(NVLinkErrorsIncreasing's thresholds), fewer links up than the ports it has had, "
            "or missing from the server's inventory; or, from the server's /metrics, an Xid "
            "fault of the GPU or its NVLinks (XidFault's page), or an Xid of a class that bears "
            "on peer copies (the catalog's `p2p`: the regex lists them, tests/deploy checks "
            "it), at warning level too: the server explains a pair bad with it by that GPU "
            "(app/analysis/xid_attribution.py; not where both ends logged one)."
        ),
    ),
    Record(
        "peerwatch:gpu_pcie_downtrained",
        expr=(
            "group by (host, gpu) (\n"
            "    peerwatch_pcie_link_width_lanes < peerwatch_pcie_link_max_width_lanes\n"
            "  or peerwatch_pcie_link_generation < peerwatch_pcie_link_max_generation\n"
            ")\n"
        ),
        comment="A GPU whose PCIe link trained below its maximum width or generation.",
    ),
    Record(
        "peerwatch:p2p_test_explained_by_pcie",
        expr=(
            "group by (host, gpu, peer_gpu, test) (\n"
            "  (\n"
            "      peerwatch_p2p_bandwidth_bytes_per_second\n"
            "        and on (host, gpu) peerwatch:gpu_pcie_downtrained\n"
            "    or\n"
            "      peerwatch_p2p_bandwidth_bytes_per_second\n"
            "        and on (host, peer_gpu)\n"
            '          label_replace(peerwatch:gpu_pcie_downtrained, "peer_gpu", "$1", "gpu", '
            '"(.*)")\n'
            "  )\n"
            "  and on (host, gpu, peer_gpu, test) (\n"
            '      peerwatch_p2p_bandwidth_bytes_per_second{test="staged"}\n'
            "    or (peerwatch_p2p_bandwidth_bytes_per_second\n"
            "          unless on (host, gpu, peer_gpu) (peerwatch_p2p_nvlink_links > 0))\n"
            "  )\n"
            ")\n"
        ),
        comment=(
            "The pair tests whose data crosses such a link at either end: staged copies always, "
            "every test of a pair that no NVLink joins (its peer copies ride PCIe too). "
            "PCIeLinkDowntrained is their page. `label_replace` copies `gpu` to `peer_gpu` to "
            "match the receiving end."
        ),
    ),
    Record(
        "peerwatch:pair_page_held",
        expr="max by (host, gpu, peer_gpu) (peerwatch_pair_page_held) == 1",
        comment=(
            "A pair whose own page waits while a GPU pattern that would explain it may still be "
            "forming (the server's `peerwatch_pair_page_held`, app/analysis/pattern_wait.py; at "
            "most PEERWATCH_PATTERN_WAIT_S): the pair rules leave it out, as the server's do. "
            "`max by`: several server replicas hold it once."
        ),
    ),
    Record(
        "peerwatch:p2p_bandwidth_low",
        expr="peerwatch:p2p_bandwidth_baseline_ratio < bool 0.80",
        comment=(
            "1 when the newest uncontended measurement of a pair test is low (below 0.80 of its "
            "baseline, as P2PBandwidthDegraded judges it), 0 when it is not; no series when "
            'contended. The agent cannot know "low": the baseline is Prometheus\'s own (above).'
        ),
    ),
    Record(
        "peerwatch:p2p_pair",
        expr=(
            "peerwatch_p2p_pair_info\n"
            "or (\n"
            '    label_join(peerwatch_p2p_nvlink_links * 0 + 1, "pair", "-", "gpu", "peer_gpu")\n'
            "  unless on (host, gpu, peer_gpu) peerwatch_p2p_pair_info\n"
            ")\n"
        ),
        comment=(
            "The pair rules page once per unordered pair (gpu < peer_gpu), as the server does "
            "(app/alerting/rules_slow_pairs.py): each direction is judged on its own, with "
            "every clause that leaves it out (a downtrained PCIe link on the way, its page held "
            "while a GPU pattern forms), then moved to its pair's labels. PromQL cannot order "
            "two labels, so the agent exports the pair of each ordered pair "
            '(`peerwatch_p2p_pair_info{pair= "2-5"}`, recorded as `peerwatch:p2p_pair` below): '
            'the direction is kept as `direction` ("5->2"), `gpu`/`peer_gpu` become the pair\'s '
            "low/high index, and the alerts aggregate `by (host, gpu, peer_gpu)`.  The pair of "
            "each ordered pair: the agent's `peerwatch_p2p_pair_info`; for an agent older than "
            'it, the ordered pair itself (`pair="5-2"`), so its pairs still page, once per '
            "direction as before, instead of not at all."
        ),
    ),
    Record(
        "peerwatch:p2p_pair_test_low_two_sweeps",
        expr=on_the_pair(
            "        peerwatch:p2p_bandwidth_baseline_ratio < 0.80\n"
            "      and on (host, gpu, peer_gpu, test) (\n"
            "          min_over_time(peerwatch:p2p_bandwidth_low[9m]) == 1\n"
            "            and on (host) "
            "changes(peerwatch_probe_last_sweep_timestamp_seconds[9m]) > 0\n"
            "        or min_over_time(peerwatch:p2p_bandwidth_low[12m]) == 1\n"
            "      )\n"
        ),
        comment=(
            "Sustained low: low in each of the last two sweeps, inside the expression (no "
            "`for`), so a held page goes out the minute its hold ends, its sustain counted "
            "meanwhile, as on the server. The agent's series hold the newest sweep's value (a "
            "sweep every 10 min +- 30 s of jitter); its newest sweep's time changes at every "
            "sweep. Either\n"
            "- a sweep was seen in the last 9 min and the flag was 1 throughout, the sample "
            "before   that sweep included: the sweep before it was low too (9 min: shorter than "
            "the   shortest gap between two sweeps as scraped, 9.5 min less a scrape), so this "
            "fires   at the second low sweep, whatever the jitter; or\n"
            "- the flag was 1 for the last 12 min, longer than the longest gap (10.5 min plus a "
            "  scrape): some sweep came and was low too. It takes over before the first way "
            "ends   (12 - 9 = 3 min, under the shortest gap), so the alert does not flap."
        ),
    ),
    Record(
        "peerwatch:p2p_pair_test_low_intermittent",
        expr=on_the_pair(
            "        sum_over_time(peerwatch:p2p_bandwidth_low[59m:10m]) >= 3\n"
            "      unless on (host, gpu, peer_gpu, test)\n"
            "        (max_over_time(peerwatch:p2p_bandwidth_low[29m:10m]) == 0)\n"
        ),
        comment=(
            "The server's intermittent rule (app/analysis/health.py): a test low in 3 "
            "(PEERWATCH_INTERMITTENT_LOW) of its newest 6 (PEERWATCH_INTERMITTENT_OF) judged "
            "measurements, not recovered (its newest 3 not all good). One measurement per "
            "sweep: the low flag read once per 10-min sweep interval over the last 6 intervals "
            "(`[59m:10m]`: six points whether or not the range is closed on the left). The "
            "value is the count of low ones; the pair's labels as above."
        ),
    ),
    Record(
        "peerwatch:p2p_pair_test_below_fleet_peers",
        expr=on_the_pair(
            "        max by (host, gpu, peer_gpu, test) (peerwatch_pair_fleet_peer_ratio) < "
            "0.93\n"
        ),
        comment=(
            "The server's pairs flagged below their fleet peers (its /metrics exports flagged "
            "pairs only; `max by`: several replicas count once), each test below the floor, on "
            "the pair's labels as above."
        ),
    ),
    Record(
        "peerwatch:gpu_copy_pcie_ratio",
        expr=(
            "(\n"
            '    peerwatch_gpu_copy_bandwidth_bytes_per_second{test=~"h2d|d2h"}\n'
            "  / on (host, gpu) group_left ()\n"
            "    (0.88 * 0.985e9 * 2 ^ (peerwatch_pcie_link_max_generation - 3)\n"
            "       * peerwatch_pcie_link_max_width_lanes)\n"
            ")\n"
            "unless on (host, gpu) peerwatch:gpu_pcie_downtrained\n"
        ),
        comment=(
            "A GPU's host <-> GPU copies (h2d, d2h) as a fraction of what its PCIe slot offers: "
            "maximum generation x maximum lanes x 0.88 (app/analysis/expected.py), a lane "
            "carrying 0.985 GB/s x 2^(gen-3) (exact for gen 3-5, 4% high for gen 6); none while "
            "the link trains below its maximum (PCIeLinkDowntrained's page, as on the server)."
        ),
    ),
    Record(
        "peerwatch:gpu_copy_pcie_low",
        expr="peerwatch:gpu_copy_pcie_ratio < bool 0.70",
        comment=(
            "1 when the newest such copy is low (below 0.70, "
            "PEERWATCH_DEGRADED_RATIO_EXPECTED), 0 when it is not."
        ),
    ),
    Record(
        "peerwatch:gpu_copy_test_low_two_sweeps",
        expr=(
            "peerwatch:gpu_copy_pcie_ratio < 0.70\n"
            "and on (host, gpu, test) (\n"
            "    min_over_time(peerwatch:gpu_copy_pcie_low[9m]) == 1\n"
            "      and on (host) changes(peerwatch_probe_last_sweep_timestamp_seconds[9m]) > 0\n"
            "  or min_over_time(peerwatch:gpu_copy_pcie_low[12m]) == 1\n"
            ")\n"
        ),
        comment=(
            "Low in each of the last two sweeps, counted as "
            "peerwatch:p2p_pair_test_low_two_sweeps counts them (its comment says why 9 and 12 "
            "min), per GPU and test."
        ),
    ),
    Record(
        "peerwatch:gpu_copy_test_low_intermittent",
        expr=(
            "sum_over_time(peerwatch:gpu_copy_pcie_low[59m:10m]) >= 3\n"
            "unless on (host, gpu, test) (max_over_time(peerwatch:gpu_copy_pcie_low[29m:10m]) "
            "== 0)\n"
            "unless on (host, gpu) peerwatch:gpu_pcie_downtrained\n"
        ),
        comment=(
            "The server's intermittent rule over a GPU's own copies, as "
            "peerwatch:p2p_pair_test_low_intermittent: low in 3 of the last 6 sweep intervals, "
            "its newest 3 not all good; the value is the count of low ones."
        ),
    ),
    Record(
        "peerwatch:nvlink_paged_by_state",
        expr=(
            "group by (host, gpu, link) (\n"
            "    peerwatch_nvlink_up == 0\n"
            "  or (peerwatch_nvlink_up == 1 and changes(peerwatch_nvlink_up[1h]) >= 4)\n"
            '  or max_over_time(ALERTS{alertname="NVLinkDown", alertstate="firing"}[1h])\n'
            ")\n"
        ),
        comment=(
            "A link whose state is a link-state rule's page (the server's "
            "`rules_events.links_paged_by_state`): down now (NVLinkDown, pending or firing), up "
            "and flapping (NVLinkFlapping's condition), or paged by NVLinkDown within the hour "
            "(the flap window: it came back after its `for`). The Xid rules leave out its "
            "events, which those pages name."
        ),
    ),
    Record(
        "peerwatch:gpu_all_to_all_ratio",
        expr=(
            'peerwatch_gpu_copy_bandwidth_bytes_per_second{test=~"a2a_ce|a2a_nccl"}\n'
            "  / on (host, gpu, test) group_left ()\n"
            "    max by (host, gpu, test) (peerwatch_gpu_all_to_all_expected_bytes_per_second)\n"
        ),
        comment=(
            "A GPU's all-to-all figure (a2a_ce, a2a_nccl: the agent's newest) over what its "
            "topology offers it with every GPU sending at once: the server's expectation "
            "(app/analysis/all_to_all.py), exported as "
            "peerwatch_gpu_all_to_all_expected_bytes_per_second (`max by`: several replicas "
            "count once)."
        ),
    ),
    Record(
        "peerwatch:gpu_all_to_all_low",
        expr="peerwatch:gpu_all_to_all_ratio < bool 0.70",
        comment=(
            "1 when the newest all-to-all is low (below 0.70, "
            "PEERWATCH_DEGRADED_RATIO_EXPECTED), 0 when it is not."
        ),
    ),
    Record(
        "peerwatch:gpu_all_to_all_low_two_sweeps",
        expr=(
            "peerwatch:gpu_all_to_all_ratio < 0.70\n"
            "and on (host, gpu, test) (\n"
            "    min_over_time(peerwatch:gpu_all_to_all_low[9m]) == 1\n"
            "      and on (host) changes(peerwatch_probe_last_sweep_timestamp_seconds[9m]) > 0\n"
            "  or min_over_time(peerwatch:gpu_all_to_all_low[12m]) == 1\n"
            ")\n"
        ),
        comment=(
            "Low in each of the last two sweeps, counted as "
            "peerwatch:p2p_pair_test_low_two_sweeps counts them (its comment says why 9 and 12 "
            "min), per GPU and all-to-all test."
        ),
    ),
    Record(
        "peerwatch:gpu_gdr_ratio",
        expr=(
            'peerwatch_gpu_copy_bandwidth_bytes_per_second{test="gdr_loopback"}\n'
            "  / on (host, gpu, test) group_left (nic)\n"
            "    max by (host, gpu, test, nic) (peerwatch_gpu_gdr_expected_bytes_per_second)\n"
        ),
        comment=(
            "A GPU's GPUDirect RDMA loopback (the agent's newest gdr_loopback) over what its "
            "nearest NIC offers: the server's expectation (app/analysis/expected.py "
            "`expected_nic`), exported with the NIC's name as "
            "peerwatch_gpu_gdr_expected_bytes_per_second (`max by`: several replicas count "
            "once)."
        ),
    ),
    Record(
        "peerwatch:gpu_gdr_low",
        expr="peerwatch:gpu_gdr_ratio < bool 0.70",
        comment=(
            "1 when the newest gdr_loopback is low (below 0.70, "
            "PEERWATCH_DEGRADED_RATIO_EXPECTED), 0 when it is not."
        ),
    ),
    Record(
        "peerwatch:gpu_gdr_low_two_sweeps",
        expr=(
            "peerwatch:gpu_gdr_ratio < 0.70\n"
            "and on (host, gpu, test) (\n"
            "    min_over_time(peerwatch:gpu_gdr_low[9m]) == 1\n"
            "      and on (host) changes(peerwatch_probe_last_sweep_timestamp_seconds[9m]) > 0\n"
            "  or min_over_time(peerwatch:gpu_gdr_low[12m]) == 1\n"
            ")\n"
        ),
        comment=(
            "Low in each of the last two sweeps, counted as "
            "peerwatch:p2p_pair_test_low_two_sweeps counts them (its comment says why 9 and 12 "
            "min), per GPU and NIC."
        ),
    ),
    *NETWORK_RECORDS,
)
