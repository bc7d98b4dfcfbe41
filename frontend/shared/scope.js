// The scope of a fault, the second key of the one order (faults.js): 0 a GPU lost, 1 links
// down, 2 a slow pair, 3 slower than the fleet's peers, 4 the rest. Read from an alert's rule
// or from a reason's words. Alert grouping (alert_groups.js) and the fault order both rank by
// it, so it sits below both of them.

/** Scope of each alert rule: 0 GPU lost, 1 links down, 2 slow pair, 3 fleet-relative, 4 other. */
const RULE_SCOPE = {
  GPUMissing: 0, P2PAccessLost: 0, PeerCopiesFailing: 0, PairCopiesFailing: 0,
  NVSwitchFabricNotReady: 0,
  NVLinkDown: 1, NVLinkWidthReduced: 1, NVLinkFlapping: 1, NVLinkErrorsIncreasing: 1,
  PCIeLinkDowntrained: 1, FabricManagerDown: 1,
  P2PBandwidthDegraded: 2, PCIeBandwidthDegraded: 2,
  P2PBelowFleetPeers: 3, GPUBelowFleetPeers: 3, HostBelowFleetPeers: 3,
};
export const SCOPE_WORDS = ["GPU lost", "links down", "slow pair", "below fleet peers", "other"];

export const scopeOfRule = (alertname) => RULE_SCOPE[alertname] ?? 4;

/** The scope of a reason's words, for faults that come without an alert. */
export function scopeOfText(text) {
  const t = String(text || "").toLowerCase();
  if (/\b(lost|missing|fell off|not found|p2p access|fabric (state|not))/.test(t)) return 0;
  if (/fleet peers|its peers|peer group/.test(t)) return 3;
  if (/link(s)? (\d+ )?(is |are )?down|nvlinks? up|links? down|replay|recovery|crc|trained|flapping/.test(t)) return 1;
  if (/gb\/s|of expected|slow|µs/.test(t)) return 2;
  return 4;
}
