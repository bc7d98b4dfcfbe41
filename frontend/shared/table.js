// A dense, sortable table whose rows work from the keyboard.
//
// Rows are focusable: Enter (or a click) activates one, ↑/↓ move between rows, and headers
// are buttons that sort. `setRows` re-renders in place and puts the focus back on the row
// with the same key, so a refresh every 15 s never yanks the keyboard user away.

import { h, replace } from "./dom.js";

function compare(a, b) {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1; // missing values last, whatever the direction
  if (b === null || b === undefined) return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

export function sortRows(rows, column, dir) {
  if (!column) return rows;
  const sign = dir === "desc" ? -1 : 1;
  return [...rows].sort((x, y) => {
    const a = column.value(x);
    const b = column.value(y);
    if (a === null || a === undefined || b === null || b === undefined) return compare(a, b);
    return sign * compare(a, b);
  });
}

/** A box a wide table scrolls in, on its own (the page never scrolls sideways): focusable and
 * named, so the keyboard can scroll it too. Its first column stays pinned (style.css). */
export function scrollBox(label, table) {
  return h("div", { class: "table-scroll", tabindex: 0, role: "region", "aria-label": label }, table);
}

export function sortableTable({ columns, rowKey, onActivate, sort = {}, onSort, caption, label,
  limit = Infinity, rowClass = () => null }) {
  // `limit`: rows drawn at first (a 1000-row table costs the browser a second of layout);
  // a button under them draws the rest.
  const state = { key: sort.key || null, dir: sort.dir || "asc", rows: [], sorted: [], limit };
  const head = h("thead");
  const body = h("tbody");
  const table = h("table", { class: "grid", "aria-label": label || caption || null },
    caption ? h("caption", {}, caption) : null, head, body);

  function renderHead() {
    const cells = columns.map((col) => {
      const sorted = state.key === col.key;
      const arrow = sorted ? (state.dir === "asc" ? " ▲" : " ▼") : "";
      const th = h("th", { scope: "col", class: col.class || null, title: col.title || null,
        "aria-sort": sorted ? (state.dir === "asc" ? "ascending" : "descending") : null });
      if (col.value) {
        th.append(h("button", { type: "button", class: "sort", on: { click: () => toggle(col) } },
          col.label, h("span", { class: "arrow", "aria-hidden": "true" }, arrow)));
      } else {
        th.append(col.label);
      }
      return th;
    });
    replace(head, h("tr", {}, cells));
  }

  function toggle(col) {
    state.dir = state.key === col.key && state.dir === "asc" ? "desc" : "asc";
    state.key = col.key;
    if (onSort) onSort(state.key, state.dir);
    renderHead();
    renderBody();
  }

  function renderBody() {
    const focusedKey = document.activeElement?.closest?.("tbody") === body
      ? document.activeElement.closest("tr")?.dataset.key : null;
    state.sorted = sortRows(state.rows, columns.find((c) => c.key === state.key), state.dir);
    const rows = state.sorted.slice(0, state.limit).map((row) => {
      const tr = h("tr", { "data-key": rowKey(row), class: rowClass(row) },
        columns.map((col) => h("td", { class: col.class || null }, col.cell(row))));
      if (onActivate) {
        tr.tabIndex = 0;
        tr.classList.add("active-row");
        tr.addEventListener("click", (event) => {
          if (!event.target.closest("a, button, input, select")) onActivate(row, event);
        });
        tr.addEventListener("keydown", (event) => rowKeys(event, tr, row));
      }
      return tr;
    });
    if (!rows.length) {
      rows.push(h("tr", { class: "empty" }, h("td", { colspan: columns.length }, "nothing to show")));
    }
    const hidden = state.sorted.length - rows.length;
    if (hidden > 0) {
      rows.push(h("tr", { class: "more" }, h("td", { colspan: columns.length },
        h("button", { type: "button", on: { click: showAll } },
          `show the other ${hidden} of ${state.sorted.length} rows`))));
    }
    replace(body, rows);
    if (focusedKey !== null && focusedKey !== undefined) {
      [...body.rows].find((tr) => tr.dataset.key === focusedKey)?.focus();
    }
  }

  function showAll() {
    state.limit = Infinity;
    renderBody();
  }

  function rowKeys(event, tr, row) {
    if (event.target !== tr) return;
    if (event.key === "Enter") {
      event.preventDefault();
      onActivate(row, event);
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const next = event.key === "ArrowDown" ? tr.nextElementSibling : tr.previousElementSibling;
      next?.focus();
    }
  }

  renderHead();
  return {
    el: table,
    setRows(rows) {
      state.rows = rows;
      renderBody();
    },
    /** Every row (not only those drawn), in the table's current order. */
    sortedRows: () => state.sorted,
  };
}
