// Overview: the queues (counts, paused, the alert figures, sparklines fed by the
// event stream) and the cluster (brokers, workers, PostgreSQL's health).

import { get, q } from "../api.js";
import { badge, empty, fmtBytes, fmtDuration, fmtNumber, h, loading, replace, section, sparkline, table, timeEl, unavailable } from "../dom.js";
import { liveOf, WINDOW_S } from "./live.js";

const CLUSTER_EVERY_MS = 5000;
const COUNT_DEBOUNCE_MS = 250;
const FIGURES_DEBOUNCE_MS = 1000;

export function render(main, { subscribe }) {
  const queuesBox = loading("queues", "Loading queues…");
  const clusterBox = loading("cluster", "Loading the cluster…");
  main.append(
    h("h1", {}, "Overview"),
    section("Queues", "queues-title", queuesBox),
    section("Cluster", "cluster-title", clusterBox),
  );

  const state = { names: null, counts: new Map(), figures: new Map(), error: null, figuresError: null };
  const timers = new Map();
  let alive = true;

  const debounce = (key, ms, fn) => {
    if (timers.has(key)) return;
    timers.set(key, setTimeout(() => {
      timers.delete(key);
      if (alive) fn();
    }, ms));
  };

  async function loadQueues() {
    try {
      const { queues } = await get("/queues");
      state.names = queues;
      state.error = null;
      await Promise.all(queues.map(loadCounts));
    } catch (err) {
      state.error = err;
    }
    await loadFigures();
  }

  async function loadCounts(name) {
    try {
      const { counts } = await get(`/queues/${q(name)}/counts`);
      state.counts.set(name, counts);
    } catch (err) {
      state.counts.set(name, err);
    }
    draw();
  }

  async function loadFigures() {
    try {
      const { queues } = await get("/figures");
      state.figures = new Map(queues.map((f) => [f.queue, f]));
      state.figuresError = null;
    } catch (err) {
      state.figuresError = err;
    }
    draw();
  }

  function cell(name, counts, key) {
    if (counts instanceof Error) return h("td", {}, "?");
    return h("td", { class: "num", "data-count": key }, fmtNumber(counts[key]));
  }

  function draw() {
    if (!alive) return;
    if (state.error) {
      replace(queuesBox, unavailable("Queues", state.error));
      return;
    }
    if (!state.names) return;
    if (!state.names.length) {
      replace(queuesBox, empty("No queue yet: push a job and it appears here."));
      return;
    }
    const rows = state.names.map((name) => {
      const counts = state.counts.get(name) || {};
      const f = state.figures.get(name);
      const live = liveOf(name);
      const waiting = counts instanceof Error ? null : (counts.waiting || 0) + (counts.prioritized || 0);
      return h(
        "tr",
        { "data-queue": name },
        h("th", { scope: "row" }, h("a", { href: `#/queue/${q(name)}` }, name),
          f && f.paused ? [" ", badge("paused", "warn")] : null),
        counts instanceof Error ? h("td", { colspan: 6 }, unavailable("Counts", counts))
          : [
            h("td", { class: "num", "data-count": "waiting" }, fmtNumber(waiting)),
            cell(name, counts, "active"),
            cell(name, counts, "delayed"),
            cell(name, counts, "completed"),
            cell(name, counts, "failed"),
            h("td", { class: "num", "data-count": "dlq" },
              f ? h("a", { href: `#/dlq?queue=${q(name)}` }, fmtNumber(f.dlqTotal)) : "—"),
          ],
        h("td", { class: "num" }, f ? fmtDuration(f.oldestWaitingMs) : "—"),
        h("td", { class: "num" }, f ? fmtDuration(f.oldestRetryMs) : "—"),
        h("td", { class: "num" }, f ? `${f.workerSlotsBusy}/${f.workerSlots}` : "—"),
        h("td", { class: "num" }, f ? (f.concurrencyLimit === null ? `${f.active}/∞` : `${f.active}/${f.concurrencyLimit}`) : "—"),
        h("td", {}, sparkline(live.series("throughput"), `${name} completions per second`)),
        h("td", {}, sparkline(live.series("pickup"), `${name} pickup latency ms`)),
      );
    });
    replace(
      queuesBox,
      state.figuresError ? unavailable("Alert figures", state.figuresError) : null,
      table(
        "Queues with their counts, alert figures and the last minute of events",
        ["Queue", "Waiting", "Active", "Delayed", "Completed", "Failed", "DLQ", "Oldest waiting",
          "Oldest retry", "Worker slots", "Active / limit", `Done/s (${WINDOW_S}s)`, "Pickup ms"],
        rows,
        { "data-testid": "queue-table" },
      ),
    );
  }

  async function loadCluster() {
    let data;
    try {
      data = await get("/cluster");
    } catch (err) {
      if (alive) replace(clusterBox, unavailable("Cluster", err));
      return;
    }
    if (!alive) return;
    const self = data.self;
    const brokers = data.brokers.map((b) => {
      const mine = b.self ? self : b.status; // the others' as they last reported it
      return h(
        "tr",
        { "data-broker": b.brokerId },
        h("th", { scope: "row" }, b.brokerId, b.self ? [" ", badge("serving this page")] : null),
        h("td", {}, b.live ? badge("live", "ok") : badge("stale", "bad")),
        h("td", { class: "num" }, fmtDuration(b.heartbeatAt - b.startedAt + (b.silentMs || 0))),
        h("td", { class: "num" }, `${fmtDuration(b.silentMs)} ago`),
        h("td", {}, b.leader ? badge("leader", "ok") : "—"),
        h("td", {}, b.draining ? badge("draining", "warn") : "no"),
        h("td", {}, mine ? (mine.pollOnly ? "poll-only" : mine.listening ? "LISTEN" : badge("LISTEN down", "bad")) : h("span", { class: "muted" }, "not reported")),
        h("td", { class: "num" }, mine ? fmtDuration(mine.projectionStalenessMs) : h("span", { class: "muted" }, "not reported")),
        h("td", {}, `${b.hostname || "?"}:${b.pid ?? "?"}`),
      );
    });
    const workers = data.workers.map((w) =>
      h("tr", {},
        h("th", { scope: "row" }, w.name),
        h("td", {}, (w.queues || []).join(", ")),
        h("td", { class: "num" }, `${w.activeJobs}/${w.concurrency}`),
        h("td", { class: "num" }, fmtNumber(w.processedJobs)),
        h("td", { class: "num" }, fmtNumber(w.failedJobs)),
        h("td", {}, w.active ? badge("live", "ok") : badge("silent", "warn")),
      ));
    const pg = data.postgres;
    const holders = pg.xminHolders.map((x) =>
      h("tr", {},
        h("th", { scope: "row" }, `${x.kind} ${x.holder}`),
        h("td", {}, x.application || "—"),
        h("td", {}, x.state || "—"),
        h("td", { class: "num" }, fmtNumber(x.ageTransactions)),
        h("td", { class: "num" }, x.seconds === null ? "—" : fmtDuration(x.seconds * 1000)),
        h("td", {}, h("code", {}, x.query || "")),
      ));
    const tables = pg.tables.filter((t) => t.table !== "pgqueue_alembic_version").map((t) =>
      h("tr", {},
        h("th", { scope: "row" }, t.table.replace(/^pgqueue_/, "")),
        h("td", { class: "num" }, fmtNumber(t.live)),
        h("td", { class: "num" }, fmtNumber(t.dead)),
        h("td", { class: "num" }, fmtBytes(t.bytes)),
        h("td", {}, timeEl(t.lastVacuumAt)),
      ));
    replace(
      clusterBox,
      h("p", { class: "muted" }, "Read at ", timeEl(Date.now()), ` (every ${CLUSTER_EVERY_MS / 1000} s). Wake-ups and projection staleness: as each broker last reported them (every session heartbeat); live for the broker serving this page.`),
      h("h3", {}, "Brokers"),
      table("Brokers", ["Broker", "Session", "Session age", "Heartbeat", "Maintenance", "Draining", "Wake-ups", "Projection staleness", "Process"], brokers, { "data-testid": "broker-table" }),
      h("h3", {}, "Workers"),
      workers.length ? table("Workers", ["Worker", "Queues", "Busy / slots", "Processed", "Failed", "Seen"], workers) : empty("No worker registered."),
      h("h3", {}, "PostgreSQL"),
      h("dl", { class: "facts" },
        h("dt", {}, "Outbox lag / oldest xmin"), h("dd", { "data-testid": "xmin-age" }, `${fmtNumber(pg.oldestXminAgeTransactions)} transactions`),
        h("dt", {}, "Jobs table"), h("dd", {}, fmtBytes((pg.tables.find((t) => t.table === "pgqueue_jobs") || {}).bytes))),
      holders.length ? table("Who holds the xmin horizon", ["Holder", "Application", "State", "Age (xids)", "Open for", "Query"], holders) : empty("No transaction holds the xmin horizon back."),
      table("Tables", ["Table", "Live rows", "Dead rows", "Size", "Last vacuum"], tables),
    );
  }

  const unsubscribe = subscribe((event) => {
    const name = event.queue;
    if (!name) return;
    if (state.names && !state.names.includes(name)) {
      debounce("queues", COUNT_DEBOUNCE_MS, loadQueues);
      return;
    }
    debounce(`counts:${name}`, COUNT_DEBOUNCE_MS, () => loadCounts(name));
    debounce("figures", FIGURES_DEBOUNCE_MS, loadFigures);
  });
  loadQueues();
  loadCluster();
  const clusterTimer = setInterval(loadCluster, CLUSTER_EVERY_MS);
  return () => {
    alive = false;
    unsubscribe();
    clearInterval(clusterTimer);
    timers.forEach((t) => clearTimeout(t));
  };
}
