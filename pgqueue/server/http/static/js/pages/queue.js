// One queue: counts, figures, jobs by state with paging, search by id or custom
// id, pause / resume / drain / clean (confirmed), and its limits and cron.

import { get, post, q, qs } from "../api.js";
import { badge, confirmAction, empty, flash, fmtDuration, fmtNumber, h, loading, replace, section, table, timeEl, unavailable } from "../dom.js";

const STATES = ["waiting", "prioritized", "delayed", "active", "waiting-children", "completed", "failed"];
const PAGE = 20;

export function render(main, { args, params, subscribe }) {
  const name = args[0];
  if (!name) {
    location.hash = "#/overview";
    return null;
  }
  const status = params.get("state") || "waiting";
  const offset = Math.max(0, Number(params.get("offset")) || 0);
  const head = h("div", { class: "head-row" });
  const summary = loading("queue-summary");
  const jobsBox = loading("jobs", "Loading jobs…");
  const limitsBox = loading("queue-limits");
  const cronBox = loading("queue-cron");
  const searchInput = h("input", { id: "job-search", type: "search", placeholder: "job id or custom id", autocomplete: "off" });
  const searchResult = h("div", { role: "status", "aria-live": "polite" });
  const search = h("form", { class: "search", role: "search", onsubmit: (e) => { e.preventDefault(); find(searchInput.value.trim()); } },
    h("label", { for: "job-search" }, "Find a job"), searchInput, h("button", { type: "submit" }, "Find"), searchResult);
  main.append(
    h("nav", { "aria-label": "Breadcrumb", class: "crumbs" }, h("a", { href: "#/overview" }, "Overview"), " / ", name),
    head,
    summary,
    section("Jobs", "jobs-title", search, jobsBox),
    h("div", { class: "grid2" }, section("Limits", "limits-title", limitsBox), section("Cron", "cron-title", cronBox)),
  );
  let alive = true;
  let paused = null;

  async function find(text) {
    if (!text) return;
    replace(searchResult, "Searching…");
    for (const path of [`/jobs/${q(text)}`, `/jobs/custom/${q(text)}`]) {
      try {
        const { job } = await get(path);
        if (job) {
          location.hash = `#/job/${q(job.id)}`;
          return;
        }
      } catch (err) {
        if (err.status !== 404 && err.status !== 422 && err.status !== 400) {
          replace(searchResult, unavailable("Search", err));
          return;
        }
      }
    }
    replace(searchResult, h("p", { class: "muted" }, `No job with id or custom id “${text}”.`));
  }

  function action(label, kind, fn, confirmText) {
    return h("button", {
      type: "button", class: kind,
      onclick: async () => {
        if (confirmText && (await confirmAction(confirmText, { label })) === null) return;
        try {
          await fn();
          flash(`${label}: done`);
        } catch (err) {
          flash(`${label} failed: ${err.message}`, "bad");
        }
        loadSummary();
        loadJobs();
      },
    }, label);
  }

  function drawHead() {
    replace(head,
      h("h1", {}, `Queue ${name} `, paused === null ? null : paused ? badge("paused", "warn") : badge("running", "ok")),
      h("div", { class: "actions" },
        paused ? action("Resume", "primary", () => post(`/queues/${q(name)}/resume`))
          : action("Pause", "ghost", () => post(`/queues/${q(name)}/pause`), `Pause queue ${name} on every broker? Workers stop taking its jobs.`),
        action("Drain", "danger", () => post(`/queues/${q(name)}/drain`), `Remove every waiting and delayed job of ${name}?`),
        action("Clean completed", "danger", () => post(`/queues/${q(name)}/clean`, { state: "completed", grace: 0, limit: 10000 }), `Remove up to 10000 completed jobs of ${name}?`),
        action("Clean failed", "danger", () => post(`/queues/${q(name)}/clean`, { state: "failed", grace: 0, limit: 10000 }), `Remove up to 10000 failed jobs of ${name}?`),
      ));
  }

  async function loadSummary() {
    try {
      const [{ counts }, { queues }] = await Promise.all([
        get(`/queues/${q(name)}/counts`),
        get(`/figures${qs({ queue: name })}`),
      ]);
      if (!alive) return;
      const f = queues[0] || {};
      paused = Boolean(f.paused);
      drawHead();
      replace(summary, h("dl", { class: "facts big" },
        ...STATES.map((s) => [h("dt", {}, s), h("dd", { "data-count": s }, fmtNumber(counts[s]))]),
        h("dt", {}, "DLQ"), h("dd", { "data-count": "dlq" }, h("a", { href: `#/dlq?queue=${q(name)}` }, fmtNumber(f.dlqTotal))),
        h("dt", {}, "Oldest waiting"), h("dd", { "data-testid": "oldest-waiting" },
          f.oldestWaitingId ? h("a", { href: `#/job/${q(f.oldestWaitingId)}` }, fmtDuration(f.oldestWaitingMs)) : "none waits"),
        h("dt", {}, "Oldest in retry"), h("dd", {},
          f.oldestRetryId ? h("a", { href: `#/job/${q(f.oldestRetryId)}` }, fmtDuration(f.oldestRetryMs)) : "none"),
        h("dt", {}, "Worker slots busy"), h("dd", {}, `${f.workerSlotsBusy ?? "—"} of ${f.workerSlots ?? "—"}`),
        h("dt", {}, "Claims throttled"), h("dd", { "data-testid": "rate-throttled" }, fmtNumber(f.rateThrottled ?? 0)),
      ));
    } catch (err) {
      if (!alive) return;
      drawHead();
      replace(summary, unavailable("Counts", err));
    }
  }

  async function loadJobs() {
    const tabs = h("div", { class: "tabs", role: "tablist", "aria-label": "Job state" },
      STATES.map((s) => h("a", {
        role: "tab", href: `#/queue/${q(name)}?state=${s}`, "aria-selected": String(s === status),
        class: s === status ? "on" : "",
      }, s)));
    let jobs;
    try {
      ({ jobs } = await get(`/queues/${q(name)}/jobs/list${qs({ state: status, limit: PAGE + 1, offset, asc: status === "waiting" || status === "delayed" ? "true" : "false" })}`));
    } catch (err) {
      if (alive) replace(jobsBox, tabs, unavailable(`The ${status} jobs`, err));
      return;
    }
    if (!alive) return;
    const more = jobs.length > PAGE;
    const rows = jobs.slice(0, PAGE).map((j) => h("tr", {},
      h("th", { scope: "row" }, h("a", { href: `#/job/${q(j.id)}` }, j.id)),
      h("td", {}, j.name),
      h("td", {}, j.customId || "—"),
      h("td", {}, timeEl(j.createdAt)),
      h("td", { class: "num" }, `${j.attempts}/${j.maxAttempts}`),
      h("td", { class: "num" }, j.priority),
    ));
    const pager = h("nav", { class: "pager", "aria-label": "Pages of jobs" },
      offset > 0 ? h("a", { href: `#/queue/${q(name)}?state=${status}&offset=${Math.max(0, offset - PAGE)}` }, "← Newer page") : null,
      h("span", { class: "muted" }, rows.length ? `${offset + 1}–${offset + rows.length}` : ""),
      more ? h("a", { href: `#/queue/${q(name)}?state=${status}&offset=${offset + PAGE}` }, "Next page →") : null);
    replace(jobsBox, tabs,
      rows.length ? table(`${status} jobs of ${name}`, ["Job", "Name", "Custom id", "Created", "Attempts", "Priority"], rows, { "data-testid": "job-table" })
        : empty(`No ${status} job in ${name}.`),
      pager);
  }

  async function loadLimits() {
    try {
      const { data: { limits } } = await get(`/queues/${q(name)}/limits`);
      if (!alive) return;
      replace(limitsBox, h("dl", { class: "facts" },
        h("dt", {}, "Rate limit"), h("dd", {}, limits.rateLimit ? `${limits.rateLimit} per window` : "none"),
        h("dt", {}, "Rate limit expires in"), h("dd", {}, limits.rateLimitTtl ? fmtDuration(limits.rateLimitTtl) : "—"),
        h("dt", {}, "Concurrency limit"), h("dd", {}, limits.concurrencyLimit ?? "none"),
        h("dt", {}, "At its limit now"), h("dd", {}, limits.maxed ? badge("maxed", "warn") : "no")));
    } catch (err) {
      if (alive) replace(limitsBox, unavailable("Limits", err));
    }
  }

  async function loadCron() {
    try {
      const answer = await get("/crons");
      if (!alive) return;
      const crons = (answer.crons || answer.data?.crons || []).filter((c) => c.queue === name);
      replace(cronBox, crons.length
        ? table(`Cron schedules of ${name}`, ["Name", "Schedule", "Next run"], crons.map((c) => h("tr", {},
          h("th", { scope: "row" }, c.name), h("td", {}, c.schedule || (c.repeatEvery ? `every ${fmtDuration(c.repeatEvery)}` : "—")),
          h("td", {}, timeEl(c.nextRun)))))
        : empty(`No cron schedule pushes to ${name}.`));
    } catch (err) {
      if (alive) replace(cronBox, unavailable("Cron", err));
    }
  }

  drawHead();
  loadSummary();
  loadJobs();
  loadLimits();
  loadCron();
  let pending = null;
  const unsubscribe = subscribe((event) => {
    if (event.queue !== name || pending) return;
    pending = setTimeout(() => {
      pending = null;
      if (!alive) return;
      loadSummary();
      if (offset === 0) loadJobs();
    }, 300);
  });
  return () => {
    alive = false;
    unsubscribe();
    clearTimeout(pending);
  };
}
