// Webhooks and each one's delivery log.

import { get, put, q } from "../api.js";
import { badge, empty, flash, h, loading, replace, section, table, timeEl, unavailable } from "../dom.js";

export function render(main, { params }) {
  const box = loading("webhooks");
  const log = h("div", { "data-testid": "deliveries" });
  main.append(h("h1", {}, "Webhooks"), section("Webhooks", "webhooks-title", box), log);
  let alive = true;
  const chosen = params.get("id");

  async function loadDeliveries(id) {
    replace(log, section("Delivery log", "deliveries-title", h("p", { class: "muted" }, "Loading…")));
    let deliveries;
    try {
      const answer = await get(`/webhooks/${q(id)}/deliveries?limit=100`);
      deliveries = answer.data?.deliveries ?? answer.deliveries ?? [];
    } catch (err) {
      if (alive) replace(log, section("Delivery log", "deliveries-title", unavailable("Deliveries", err)));
      return;
    }
    if (!alive) return;
    replace(log, section(`Delivery log of ${id}`, "deliveries-title", deliveries.length
      ? table("Deliveries", ["Created", "Event", "Job", "Status", "Attempts", "Last answer"], deliveries.map((d) => h("tr", {},
        h("td", {}, timeEl(d.createdAt)),
        h("th", { scope: "row" }, d.event ?? d.eventType ?? "—"),
        h("td", {}, d.jobId ? h("a", { href: `#/job/${q(d.jobId)}` }, d.jobId) : "—"),
        h("td", {}, badge(d.status, d.status === "delivered" ? "ok" : d.status === "failed" ? "bad" : "")),
        h("td", { class: "num" }, d.attempts ?? "—"),
        h("td", { class: "error-text" }, d.lastError ?? (d.lastStatus ? `HTTP ${d.lastStatus}` : "—")))))
      : empty("No delivery yet.")));
  }

  async function load() {
    let webhooks, stats;
    try {
      const answer = await get("/webhooks");
      ({ webhooks, stats } = answer.data ?? answer);
    } catch (err) {
      if (alive) replace(box, unavailable("Webhooks", err));
      return;
    }
    if (!alive) return;
    replace(box,
      stats ? h("p", { class: "muted" }, `${stats.total} webhooks, ${stats.enabled} enabled; deliveries: ${stats.pendingDeliveries} pending, ${stats.deliveredDeliveries} delivered, ${stats.failedDeliveries} failed.`) : null,
      webhooks.length ? table("Webhooks", ["URL", "Events", "Queue", "State", ""], webhooks.map((w) => h("tr", {},
        h("th", { scope: "row" }, h("a", { href: `#/webhooks?id=${q(w.id)}` }, w.url)),
        h("td", {}, (w.events || []).join(", ")),
        h("td", {}, w.queue || "every queue"),
        h("td", {}, w.enabled ? badge("enabled", "ok") : badge("disabled", "warn")),
        h("td", {}, h("button", { type: "button", class: "ghost", onclick: async () => {
          try {
            await put(`/webhooks/${q(w.id)}/enabled`, { enabled: !w.enabled });
            flash(w.enabled ? "Disabled" : "Enabled");
          } catch (err) {
            flash(`Failed: ${err.message}`, "bad");
          }
          load();
        } }, w.enabled ? "Disable" : "Enable"))))) : empty("No webhook."));
    if (chosen) loadDeliveries(chosen);
  }
  load();
  return () => { alive = false; };
}
