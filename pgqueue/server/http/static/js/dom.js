// Small DOM helpers: element building, formatting, load states, sparklines.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

/** A sparkline of ``values`` (an inline SVG with a text alternative). */
export function sparkline(values, label) {
  const width = 120;
  const height = 28;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("class", "spark");
  svg.setAttribute("role", "img");
  const max = Math.max(1, ...values);
  const last = values.length ? values[values.length - 1] : 0;
  svg.setAttribute("aria-label", `${label}: ${fmtNumber(last)} now, peak ${fmtNumber(max)}`);
  if (values.length > 1) {
    const step = width / (values.length - 1);
    const points = values.map((v, i) => `${(i * step).toFixed(1)},${(height - 2 - (v / max) * (height - 4)).toFixed(1)}`);
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("points", points.join(" "));
    svg.append(line);
  }
  return svg;
}

export function fmtNumber(n) {
  if (n === null || n === undefined) return "—";
  if (typeof n !== "number") return String(n);
  if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (Math.abs(n) >= 1e4) return (n / 1e3).toFixed(1) + "k";
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

export function fmtBytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "kB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i += 1;
  }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

/** A duration in ms as "850 ms", "12.4 s", "3 min 5 s", "2 h 10 min". */
export function fmtDuration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${m % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

export function fmtTime(ms) {
  if (!ms) return "—";
  const d = new Date(ms);
  return d.toLocaleString(undefined, { hour12: false });
}

export function timeEl(ms) {
  if (!ms) return "—";
  return h("time", { datetime: new Date(ms).toISOString() }, fmtTime(ms));
}

/** A notice that a part of the page could not be loaded (never an empty table). */
export function unavailable(what, error) {
  const reason = error && error.status === 0 ? "the broker did not answer" : (error && error.message) || "failed to load";
  return h(
    "div",
    { class: "notice unavailable", role: "alert", "data-testid": "unavailable" },
    h("strong", {}, `${what}: unavailable`),
    " — ",
    reason,
  );
}

/** A box that says "Loading…" (or `text`) until it is filled. */
export function loading(testid, text = "Loading…") {
  return h("div", { "data-testid": testid }, h("p", { class: "muted" }, text));
}

/**
 * Fill `box` with what `show(await load())` returns; when the load fails, with
 * "`what`: unavailable" (never an empty table).  Nothing once the page is left:
 * the function returned stops it (a page's render returns it).
 */
export function fill(box, what, load, show) {
  let alive = true;
  (async () => {
    let answer;
    try {
      answer = await load();
    } catch (err) {
      if (alive) replace(box, unavailable(what, err));
      return;
    }
    const shown = await show(answer);
    if (alive) replace(box, shown);
  })();
  return () => { alive = false; };
}

export function empty(text) {
  return h("p", { class: "muted empty", "data-testid": "empty" }, text);
}

export function section(title, id, ...children) {
  return h("section", { "aria-labelledby": id, class: "card" }, h("h2", { id }, title), ...children);
}

/** A table with a caption, header row and rows of cells. */
export function table(caption, headers, rows, attrs = {}) {
  // Each cell carries its column's name: a phone shows the rows as stacked cards.
  const names = headers.map((x) => (typeof x === "string" ? x : x.textContent || ""));
  for (const row of [rows].flat()) {
    if (!(row instanceof Element)) continue;
    [...row.children].forEach((cell, i) => {
      if (names[i] && !cell.hasAttribute("data-label")) cell.setAttribute("data-label", names[i]);
    });
  }
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      attrs,
      h("caption", { class: "sr-only" }, caption),
      h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, rows),
    ),
  );
}

export function badge(text, kind = "") {
  return h("span", { class: `badge ${kind}` }, text);
}

export function pre(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  return h("pre", { class: "code", tabindex: "0" }, text === undefined ? "undefined" : text);
}

/** Ask before a destructive action; resolves to null (cancelled) or the reason text. */
export function confirmAction(text, { reason = false, label = "Confirm" } = {}) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = label;
  const reasonBox = document.getElementById("confirm-reason");
  const why = document.getElementById("confirm-why");
  reasonBox.hidden = !reason;
  why.value = "";
  return new Promise((resolve) => {
    dialog.addEventListener(
      "close",
      () => resolve(dialog.returnValue === "ok" ? why.value.trim() : null),
      { once: true },
    );
    dialog.returnValue = "";
    dialog.showModal();
    (reason ? why : document.getElementById("confirm-ok")).focus();
  });
}

/** A short message in the page's live region. */
export function flash(text, kind = "ok") {
  let box = document.getElementById("flash");
  if (!box) {
    box = h("div", { id: "flash", role: "status", "aria-live": "polite" });
    document.body.append(box);
  }
  box.className = `flash ${kind}`;
  box.textContent = text;
  clearTimeout(flash.timer);
  flash.timer = setTimeout(() => {
    box.textContent = "";
    box.className = "flash";
  }, 6000);
}
