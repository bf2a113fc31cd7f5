// The dashboard's shell: sign-in, the page router (#/page/...), one event
// stream shared by every page, and the stream's status in the header.

import { ApiError, get, onUnauthorized, setToken, token } from "./api.js";
import { h, replace, unavailable } from "./dom.js";
import { EventStream } from "./stream.js";
import * as overview from "./pages/overview.js";
import * as queue from "./pages/queue.js";
import * as job from "./pages/job.js";
import * as dlq from "./pages/dlq.js";
import * as cron from "./pages/cron.js";
import * as limits from "./pages/limits.js";
import * as webhooks from "./pages/webhooks.js";
import { applyEvent } from "./pages/live.js";

const PAGES = { overview, queue, job, dlq, cron, limits, webhooks };

const subscribers = new Set();
/** Every event of the namespace's stream, to ``fn(event)``; returns the unsubscribe. */
export function subscribe(fn) {
  subscribers.add(fn);
  return () => subscribers.delete(fn);
}

subscribe(applyEvent); // the sparklines learn from every event, whatever the page

let stream = null;
let current = null; // the page's cleanup

function streamState(state, s, error) {
  const box = document.getElementById("stream-status");
  box.dataset.state = state;
  box.dataset.reconnects = String(s.reconnects);
  box.dataset.received = String(s.received);
  const labels = {
    connecting: "connecting…",
    resuming: "stream lost, resuming…",
    live: s.reconnects ? `live (resumed ${s.reconnects}×)` : "live",
    down: "stream unavailable, retrying…",
    unauthorized: "stream refused: sign in",
  };
  box.querySelector(".label").textContent = labels[state] || state;
  box.title = error ? String(error.message || error) : s.lastId ? `last event ${s.lastId}` : "";
}

function startStream() {
  if (stream) stream.stop();
  stream = new EventStream("/pgqueue/events", {
    onEvent: (event) => {
      document.getElementById("stream-status").dataset.received = String(stream.received);
      subscribers.forEach((fn) => fn(event));
    },
    onState: streamState,
  });
  stream.start();
  window.pgqueueStream = stream; // for the browser tests and a curious operator's console
}

function route() {
  const hash = location.hash.replace(/^#\/?/, "") || "overview";
  const [path, query = ""] = hash.split("?");
  const [name, ...rest] = path.split("/");
  const page = PAGES[name] || overview;
  const args = rest.map(decodeURIComponent);
  const params = new URLSearchParams(query);
  document.querySelectorAll("#nav a").forEach((a) => {
    const on = a.dataset.page === (PAGES[name] ? name : "overview");
    if (on) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  });
  if (current) current();
  current = null;
  const main = document.getElementById("main");
  replace(main);
  try {
    current = page.render(main, { args, params, subscribe }) || null;
  } catch (err) {
    replace(main, unavailable("This page", err));
  }
  main.focus({ preventScroll: true });
}

function askToken(message) {
  const dialog = document.getElementById("login");
  const error = document.getElementById("login-error");
  error.hidden = !message;
  error.textContent = message || "";
  if (!dialog.open) dialog.showModal();
  document.getElementById("login-token").focus();
}

async function signIn(secret) {
  setToken(secret);
  try {
    await get("/ping");
  } catch (err) {
    setToken(null);
    askToken(err.unauthorized ? "This token is not accepted." : `Sign-in failed: ${err.message}`);
    return;
  }
  document.getElementById("login").close();
  started();
}

function started() {
  document.getElementById("logout").hidden = !token();
  startStream();
  route();
}

async function boot() {
  document.getElementById("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    signIn(document.getElementById("login-token").value.trim());
  });
  document.getElementById("login").addEventListener("cancel", (event) => event.preventDefault());
  document.getElementById("logout").addEventListener("click", () => {
    setToken(null);
    if (stream) stream.stop();
    location.hash = "#/overview";
    askToken("");
  });
  onUnauthorized(() => askToken(token() ? "The token is no longer accepted." : ""));
  window.addEventListener("hashchange", route);
  try {
    await get("/ping");
  } catch (err) {
    if (err instanceof ApiError && err.unauthorized) {
      askToken("");
      return;
    }
    replace(document.getElementById("main"), unavailable("The broker", err), h("p", {}, "Reload to try again."));
    return;
  }
  started();
}

boot();
