// Deep links into a host page (#/host/<name>?pair=1-2&test=ce_write&gpu=3&link=16), from an
// alert, a bookmark or a colleague's chat message. A link that no longer fits the host (a GPU
// it does not have, a test that does not exist) gets one line saying so, and the rest of the
// page draws as usual; a link that fits scrolls to its object and outlines it.

/** One line per part of the URL the page could not follow. */
export function linkNotices(params, detail, pair, seriesError, tests) {
  const lines = [];
  const gpus = new Set((detail?.gpus || []).map((g) => g.index));
  if (params.test && !tests.includes(params.test)) {
    lines.push(`There is no test "${params.test}"; showing ce_write (tests: ${tests.join(", ")}).`);
  }
  if (params.pair && !pair) {
    lines.push(`"${params.pair}" is not a pair: write it as source-destination, e.g. pair=1-2.`);
  } else if (pair && detail && !pair.every((g) => gpus.has(g))) {
    const missing = pair.filter((g) => !gpus.has(g)).map((g) => `GPU${g}`).join(" and ");
    lines.push(`This host has no ${missing} (pair ${params.pair} in the link): pick a pair in the matrix.`);
  } else if (seriesError) {
    lines.push(`Pair ${params.pair}: ${seriesError}`);
  }
  if (params.gpu !== undefined && params.gpu !== "" && detail && !gpus.has(Number(params.gpu))) {
    lines.push(`This host has no GPU${params.gpu} (gpu=${params.gpu} in the link).`);
  }
  return lines;
}

function outline(root, el) {
  for (const old of root.querySelectorAll(".target")) old.classList.remove("target");
  if (!el) return;
  const folded = el.closest("details");
  if (folded) folded.open = true;
  el.classList.add("target");
  el.scrollIntoView({ block: "center" });
}

/**
 * Scroll to what the URL points at and outline it: a link's line in the problem list (or its
 * GPU's inventory row), a GPU's inventory row, or the selected pair's chart.
 */
export function scrollToTarget(root, params, seriesEl) {
  const row = (gpu) => root.querySelector(`table[aria-label="GPU inventory"] tbody tr[data-key="${CSS.escape(String(gpu))}"]`);
  if (params.link !== undefined && params.gpu !== undefined) {
    const item = [...root.querySelectorAll(".problem-list li[data-links]")].find((li) =>
      li.dataset.gpu === String(params.gpu) && li.dataset.links.split(",").includes(String(params.link)));
    outline(root, item || row(params.gpu));
  } else if (params.gpu !== undefined && params.gpu !== "") {
    outline(root, row(params.gpu));
  } else if (seriesEl) {
    outline(root, seriesEl.closest("section"));
  }
}
