// Cron schedules (GET /crons): a failed load says "unavailable", never "empty".

import { get } from "../api.js";
import { empty, fill, fmtDuration, h, loading, section, table, timeEl } from "../dom.js";

export function cronList(answer) {
  return answer.crons || (answer.data && answer.data.crons) || [];
}

export function render(main) {
  const box = loading("crons");
  main.append(h("h1", {}, "Cron schedules"), section("Schedules", "crons-title", box));
  return fill(box, "Cron schedules", async () => cronList(await get("/crons")), (crons) => crons.length
    ? table("Cron schedules", ["Name", "Queue", "Schedule", "Timezone", "Next run", "Runs"],
      crons.map((c) => h("tr", {},
        h("th", { scope: "row" }, c.name),
        h("td", {}, h("a", { href: `#/queue/${encodeURIComponent(c.queue)}` }, c.queue)),
        h("td", {}, h("code", {}, c.schedule || (c.repeatEvery ? `every ${fmtDuration(c.repeatEvery)}` : "—"))),
        h("td", {}, c.timezone || "UTC"),
        h("td", {}, timeEl(c.nextRun)),
        h("td", { class: "num" }, c.executions ?? c.runs ?? "—"))))
    : empty("No cron schedule."));
}
