// Every queue's limits (GET /queues/{q}/limits) with the live saturation figures.

import { get, q } from "../api.js";
import { badge, empty, fill, fmtDuration, fmtNumber, h, loading, section, table, unavailable } from "../dom.js";

export function render(main) {
  const box = loading("limits");
  main.append(h("h1", {}, "Limits"), section("Rate and concurrency limits", "limits-title", box));
  return fill(box, "Queues", async () => (await get("/queues")).queues, async (names) => {
    const figures = await get("/figures").then((a) => new Map(a.queues.map((f) => [f.queue, f])), () => new Map());
    const rows = await Promise.all(names.map(async (name) => {
      const f = figures.get(name);
      let cells;
      try {
        const { data: { limits } } = await get(`/queues/${q(name)}/limits`);
        cells = [
          h("td", {}, limits.rateLimit ? `${limits.rateLimit} / window` : "none"),
          h("td", {}, limits.rateLimitTtl ? fmtDuration(limits.rateLimitTtl) : "—"),
          h("td", {}, limits.concurrencyLimit ?? "none"),
          h("td", {}, limits.maxed ? badge("maxed", "warn") : "no"),
        ];
      } catch (err) {
        cells = [h("td", { colspan: 4 }, unavailable("Limits", err))];
      }
      return h("tr", { "data-queue": name },
        h("th", { scope: "row" }, h("a", { href: `#/queue/${q(name)}` }, name)),
        ...cells,
        h("td", { class: "num" }, f ? `${f.active}` : "—"),
        h("td", { class: "num" }, f ? `${f.workerSlotsBusy}/${f.workerSlots}` : "—"),
        h("td", { class: "num", "data-testid": "rate-throttled" }, f ? fmtNumber(f.rateThrottled ?? 0) : "—"));
    }));
    return names.length ? table("Limits per queue", ["Queue", "Rate limit", "Expires in", "Concurrency limit", "At the limit", "Active", "Worker slots busy", "Claims throttled"], rows)
      : empty("No queue yet.");
  });
}
