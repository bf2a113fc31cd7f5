// The dead-letter queue: filter by queue, reason and age; select and redrive
// with a reason (kept in the audit trail); purge; and the audit trail itself.

import { get, post, q, qs } from "../api.js";
import { confirmAction, empty, flash, fmtDuration, fmtNumber, h, loading, replace, section, table, timeEl, unavailable } from "../dom.js";

const REASONS = ["", "explicit_fail", "max_attempts_exceeded", "timeout", "stalled", "ttl_expired",
  "worker_lost", "dependency_failed", "unknown"];
const AGES = [["", "any age"], ["300000", "older than 5 min"], ["3600000", "older than 1 h"], ["86400000", "older than 1 day"]];
const PAGE = 50;

export function render(main, { params }) {
  const filters = {
    queue: params.get("queue") || "",
    reason: params.get("reason") || "",
    age: params.get("age") || "",
  };
  const offset = Math.max(0, Number(params.get("offset")) || 0);
  const form = h("form", { class: "filters", "aria-label": "DLQ filters" });
  const entriesBox = loading("dlq-entries");
  const auditBox = loading("dlq-audit", "Loading the audit trail…");
  main.append(
    h("h1", {}, "Dead-letter queue"),
    section("Entries", "dlq-title", form, entriesBox),
    section("Audit trail", "audit-title", h("p", { class: "muted" }, "Every redrive and purge: who, when, what, which jobs, why."), auditBox),
  );
  let alive = true;
  const selected = new Set();

  function go(changes) {
    const next = { ...filters, ...changes };
    location.hash = `#/dlq${qs({ queue: next.queue, reason: next.reason, age: next.age })}`;
  }

  function select(id, label, options, value, onchange) {
    return [h("label", { for: id }, label), h("select", { id, onchange: (e) => onchange(e.target.value) },
      options.map(([v, text]) => h("option", { value: v, selected: v === value }, text)))];
  }

  async function loadForm() {
    let names = [];
    let err = null;
    try {
      ({ queues: names } = await get("/queues"));
    } catch (e) {
      err = e;
    }
    if (!alive) return;
    replace(form,
      ...select("dlq-queue", "Queue", [["", "choose a queue"], ...names.map((n) => [n, n])], filters.queue, (v) => go({ queue: v })),
      ...select("dlq-reason", "Reason", REASONS.map((r) => [r, r || "any reason"]), filters.reason, (v) => go({ reason: v })),
      ...select("dlq-age", "Age", AGES, filters.age, (v) => go({ age: v })),
      err ? unavailable("Queues", err) : null);
  }

  async function loadEntries() {
    if (!filters.queue) {
      replace(entriesBox, h("p", { class: "muted" }, "Choose a queue to see its dead-lettered jobs."));
      return;
    }
    const path = `/queues/${q(filters.queue)}`;
    let entries, stats;
    try {
      [{ entries }, { stats }] = await Promise.all([
        get(`${path}/dlq${qs({ reason: filters.reason, limit: PAGE + 1, offset })}`),
        get(`${path}/dlq/stats`),
      ]);
    } catch (err) {
      if (alive) replace(entriesBox, unavailable("The DLQ", err));
      return;
    }
    if (!alive) return;
    const now = Date.now();
    const minAge = Number(filters.age) || 0;
    const more = entries.length > PAGE;
    const shown = entries.slice(0, PAGE).filter((e) => now - e.enteredAt >= minAge);
    selected.clear();
    const why = h("input", { id: "redrive-why", type: "text", maxlength: 500, placeholder: "e.g. SMTP relay fixed" });
    const count = h("span", { class: "muted", role: "status", "aria-live": "polite" }, "none selected");
    const update = () => { count.textContent = `${selected.size} selected`; };
    const rows = shown.map((e) => {
      const box = h("input", { type: "checkbox", "aria-label": `select job ${e.job.id}`, "data-job": e.job.id,
        onchange: (ev) => { if (ev.target.checked) selected.add(e.job.id); else selected.delete(e.job.id); update(); } });
      return h("tr", { "data-job": e.job.id },
        h("td", {}, box),
        h("th", { scope: "row" }, h("a", { href: `#/job/${q(e.job.id)}` }, e.job.id)),
        h("td", {}, e.job.name),
        h("td", {}, e.reason),
        h("td", { class: "error-text" }, e.error || "—"),
        h("td", {}, timeEl(e.enteredAt), " ", h("span", { class: "muted" }, `(${fmtDuration(now - e.enteredAt)} ago)`)),
        h("td", { class: "num" }, e.attempts.length),
        h("td", { class: "num" }, e.retryCount));
    });
    const redrive = h("button", { type: "button", class: "primary", onclick: async () => {
      if (!selected.size) { flash("Select at least one job", "bad"); return; }
      const reason = why.value.trim();
      if (!reason) { flash("Say why (the reason goes to the audit trail)", "bad"); why.focus(); return; }
      let ok = 0;
      const failures = [];
      for (const jobId of selected) {
        try {
          await post(`${path}/dlq/retry`, { jobId, why: reason });
          ok += 1;
        } catch (err) {
          failures.push(`${jobId}: ${err.message}`);
        }
      }
      flash(failures.length ? `Redrove ${ok}; failed: ${failures.join("; ")}` : `Redrove ${ok} job(s)`, failures.length ? "bad" : "ok");
      loadEntries();
      loadAudit();
    } }, "Redrive selected");
    const purge = h("button", { type: "button", class: "danger", onclick: async () => {
      const reason = await confirmAction(`Delete every dead-lettered job of ${filters.queue}? They cannot be redriven afterwards.`, { reason: true, label: "Purge" });
      if (reason === null) return;
      try {
        await post(`${path}/dlq/purge`, { why: reason || "purged from the dashboard" });
        flash("Purged");
      } catch (err) {
        flash(`Purge failed: ${err.message}`, "bad");
      }
      loadEntries();
      loadAudit();
    } }, "Purge the queue's DLQ");
    replace(entriesBox,
      h("p", {}, `${fmtNumber(stats.total)} entries in ${filters.queue}: `,
        Object.entries(stats.byReason).filter(([, n]) => n).map(([r, n]) => `${r} ${n}`).join(", ") || "none"),
      rows.length ? [
        h("div", { class: "toolbar" }, h("label", { for: "redrive-why" }, "Reason for the redrive"), why, redrive, count),
        table(`Dead-lettered jobs of ${filters.queue}`, ["Select", "Job", "Name", "Reason", "Error", "Entered", "Attempts", "Redrives"], rows, { "data-testid": "dlq-table" }),
      ] : empty(`No dead-lettered job in ${filters.queue}${filters.reason ? ` with reason ${filters.reason}` : ""}${minAge ? " of that age" : ""}.`),
      h("nav", { class: "pager", "aria-label": "Pages of entries" },
        offset > 0 ? h("a", { href: `#/dlq${qs({ ...filters, offset: Math.max(0, offset - PAGE) })}` }, "← Previous page") : null,
        more ? h("a", { href: `#/dlq${qs({ ...filters, offset: offset + PAGE })}` }, "Next page →") : null),
      h("div", { class: "toolbar" }, purge));
  }

  async function loadAudit() {
    let records;
    try {
      ({ records } = await get(filters.queue ? `/queues/${q(filters.queue)}/dlq/audit?limit=100` : "/dlq/audit?limit=100"));
    } catch (err) {
      if (alive) replace(auditBox, unavailable("The audit trail", err));
      return;
    }
    if (!alive) return;
    replace(auditBox, records.length ? table("DLQ audit trail", ["When", "Who", "What", "Queue", "Jobs", "Why"],
      records.map((r) => h("tr", { "data-audit": r.id },
        h("td", {}, timeEl(r.at ?? r.createdAt)),
        h("td", {}, r.actor ?? "—"),
        h("th", { scope: "row" }, r.operation ?? r.action ?? "—"),
        h("td", {}, r.queue ?? "—"),
        h("td", {}, (r.jobIds || []).length <= 3 ? (r.jobIds || []).map((id) => [h("a", { href: `#/job/${q(id)}` }, id), " "]) : `${r.jobIds.length} jobs`),
        h("td", { class: "why" }, r.why ?? r.reason ?? "—"))), { "data-testid": "audit-table" })
      : empty("No DLQ operation recorded yet."));
  }

  loadForm();
  loadEntries();
  loadAudit();
  return () => { alive = false; };
}
