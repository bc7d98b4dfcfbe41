// Building DOM without innerHTML: every string from a report reaches the page as text.
//
//   h("a", {href: "#/fleet", class: "btn"}, "Fleet", h("span", {}, count))
//
// Attributes go through setAttribute (never "on*" handlers given as strings), children that
// are strings or numbers become text nodes, null/undefined/false children are skipped.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "on") {
      for (const [event, fn] of Object.entries(value)) el.addEventListener(event, fn);
    } else if (name === "dataset") {
      Object.assign(el.dataset, value);
    } else if (name.startsWith("on")) {
      throw new Error(`use {on: {${name.slice(2)}: fn}}, not the ${name} attribute`);
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replace all children of `el` (the DOM-API way, no innerHTML). */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** Escape a string for Plotly, which reads its text, hover and title strings as HTML-ish. */
export function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
  })[c]);
}

/** Make an element act like a button for the keyboard: focusable, Enter/Space activate it. */
export function activatable(el, onActivate) {
  el.tabIndex = 0;
  el.addEventListener("click", onActivate);
  el.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      onActivate(event);
    }
  });
  return el;
}
