// One job: data, options, state timeline, every attempt (error and stack), logs,
// progress, result, parent and children, the lease holder; retry / promote /
// remove / cancel.

import { del, get, post, q } from "../api.js";
import { badge, confirmAction, empty, flash, fmtDuration, h, loading, pre, replace, section, table, timeEl, unavailable } from "../dom.js";

const OPTION_KEYS = ["priority", "lifo", "maxAttempts", "backoffConfig", "timeout", "ttl", "removeOnComplete",
  "removeOnFail", "uniqueKey", "customId", "groupId", "dependsOn", "tags", "stallCount", "keepLogs"];

export function render(main, { args, subscribe }) {
  const id = args[0];
  const body = loading("job", "Loading the job…");
  main.append(h("nav", { "aria-label": "Breadcrumb", class: "crumbs" }, h("a", { href: "#/overview" }, "Overview"), " / job"), body);
  let alive = true;

  function button(label, kind, fn, confirmText, reason = false) {
    return h("button", {
      type: "button", class: kind,
      onclick: async () => {
        let why = "";
        if (confirmText) {
          why = await confirmAction(confirmText, { label, reason });
          if (why === null) return;
        }
        try {
          await fn(why);
          flash(`${label}: done`);
        } catch (err) {
          flash(`${label} failed: ${err.message}`, "bad");
        }
        load();
      },
    }, label);
  }

  async function load() {
    let job;
    try {
      ({ job } = await get(`/jobs/${q(id)}`));
    } catch (err) {
      if (alive) replace(body, err.status === 404 ? empty(`No job ${id} (removed, pruned or never pushed).`) : unavailable("The job", err));
      return;
    }
    const [logs, inspect, children] = await Promise.all([
      get(`/jobs/${q(id)}/logs`).then((a) => a.data?.logs ?? a.logs ?? [], (e) => e),
      get(`/jobs/${q(id)}/inspect`).catch((e) => e),
      (job.childrenIds || []).length ? get(`/jobs/${q(id)}/children`).catch((e) => e) : Promise.resolve(null),
    ]);
    if (!alive) return;
    const state = job.state;
    const queue = job.queue;
    const actions = h("div", { class: "actions" },
      state === "failed" ? button("Retry", "primary", (why) => post(`/queues/${q(queue)}/dlq/retry`, { jobId: id, why: why || "retried from the dashboard" }), `Send job ${id} back to waiting?`, true) : null,
      state === "delayed" ? button("Promote", "primary", () => post(`/jobs/${q(id)}/promote`)) : null,
      state === "active" ? button("Cancel", "danger", () => post(`/jobs/${q(id)}/discard`, {}), `Fail active job ${id} for good (no retry)?`) : null,
      state !== "active" ? button("Remove", "danger", () => del(`/jobs/${q(id)}`), `Remove job ${id}? This cannot be undone.`) : null,
    );
    const lease = inspect instanceof Error ? null : inspect.lease;
    const attempts = (job.attemptLog || []).map((a) => h("tr", {},
      h("th", { scope: "row" }, a.attempt),
      h("td", {}, timeEl(a.startedAt)),
      h("td", { class: "num" }, fmtDuration(a.duration)),
      h("td", {}, a.reason),
      h("td", { class: "error-text" }, a.error || "—"),
    ));
    const timeline = inspect instanceof Error ? unavailable("The timeline", inspect)
      : inspect.timeline.length ? h("ol", { class: "timeline", "data-testid": "timeline" }, inspect.timeline.map((e) => h("li", {}, timeEl(e.at), " ", badge(e.type))))
        : empty("No state change left in the outbox (retention trimmed them).");
    replace(body,
      h("div", { class: "head-row" },
        h("h1", {}, `Job ${job.name} `, badge(state, state === "failed" ? "bad" : state === "completed" ? "ok" : "")),
        actions),
      h("dl", { class: "facts" },
        h("dt", {}, "Id"), h("dd", {}, h("code", {}, job.id)),
        h("dt", {}, "Queue"), h("dd", {}, h("a", { href: `#/queue/${q(queue)}` }, queue)),
        h("dt", {}, "Created"), h("dd", {}, timeEl(job.createdAt)),
        h("dt", {}, "Started"), h("dd", {}, timeEl(job.startedAt)),
        h("dt", {}, "Finished"), h("dd", {}, timeEl(job.completedAt)),
        h("dt", {}, "Attempts"), h("dd", {}, `${job.attempts} of ${job.maxAttempts}`),
        h("dt", {}, "Progress"), h("dd", {}, h("progress", { max: 100, value: Number(job.progress) || 0, "aria-label": "progress" }), ` ${typeof job.progress === "number" ? job.progress + "%" : JSON.stringify(job.progress)}`, job.progressMessage ? ` — ${job.progressMessage}` : ""),
        h("dt", {}, "Lease"), h("dd", { "data-testid": "lease" }, inspect instanceof Error ? unavailable("The lease", inspect)
          : lease && lease.state === "active" ? `held by broker ${lease.broker} for worker ${lease.owner || "?"} until ` : "no lease",
        lease && lease.state === "active" ? [timeEl(lease.until), ` (${fmtDuration(lease.leftMs)} left)`] : null),
        h("dt", {}, "Parent"), h("dd", {}, job.parentId ? h("a", { href: `#/job/${q(job.parentId)}` }, job.parentId) : "—"),
      ),
      state === "failed" ? h("div", { class: "notice bad", role: "note", "data-testid": "failed-reason" }, h("strong", {}, "Failed: "), job.failedReason || "—") : null,
      job.stacktrace && job.stacktrace.length ? section("Stack trace", "stack-title", pre(job.stacktrace.join("\n"))) : null,
      section("Attempts", "attempts-title", attempts.length ? table("Attempts", ["#", "Started", "Took", "Outcome", "Error"], attempts, { "data-testid": "attempts" }) : empty("No attempt finished yet.")),
      section("Timeline", "timeline-title", timeline),
      h("div", { class: "grid2" },
        section("Data", "data-title", pre(job.data)),
        section("Options", "options-title", pre(Object.fromEntries(OPTION_KEYS.filter((k) => k in job).map((k) => [k, job[k]]))))),
      state === "completed" ? section("Result", "result-title", pre(job.returnvalue)) : null,
      (job.childrenIds || []).length ? section("Children", "children-title",
        h("ul", {}, job.childrenIds.map((c) => h("li", {}, h("a", { href: `#/job/${q(c)}` }, c)))),
        children instanceof Error ? unavailable("Children's results", children) : children ? pre(children.values ?? children.data ?? children) : null) : null,
      section("Logs", "logs-title", logs instanceof Error ? unavailable("Logs", logs)
        : logs.length ? h("ol", { class: "logs" }, logs.map((l) => h("li", {}, typeof l === "string" ? l : `${l.level ? `[${l.level}] ` : ""}${l.message ?? JSON.stringify(l)}`)))
          : empty("No log line.")),
    );
  }

  load();
  let pending = null;
  const unsubscribe = subscribe((event) => {
    if (event.jobId !== id || pending) return;
    pending = setTimeout(() => { pending = null; if (alive) load(); }, 200);
  });
  return () => {
    alive = false;
    unsubscribe();
    clearTimeout(pending);
  };
}
