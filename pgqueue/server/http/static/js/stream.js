// pgqueue's resumable event stream (GET /pgqueue/events), read with fetch so the token
// travels in the Authorization header (EventSource cannot send one).  Every
// message carries a resume token (its SSE id); after any failure, a broker
// restart included, the stream reconnects with Last-Event-ID and the broker that
// answers (any broker of the namespace, behind a load balancer) sends exactly
// the events after it: no gap, no duplicate.  The page counts only events it
// received: it never invents a tick.

import { authHeaders } from "./api.js";

const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5000;
const RECENT = 500;

export class EventStream {
  constructor(path, { onEvent, onState }) {
    this.path = path;
    this.onEvent = onEvent;
    this.onState = onState || (() => {});
    this.lastId = null;
    this.reconnects = 0;
    this.received = 0;
    this.recent = []; // the last RECENT events received (what a reader can check)
    this.controller = null;
    this.stopped = false;
  }

  start() {
    this.stopped = false;
    this.loop();
  }

  stop() {
    this.stopped = true;
    if (this.controller) this.controller.abort();
  }

  async loop() {
    let delay = RETRY_MIN_MS;
    while (!this.stopped) {
      this.onState(this.received || this.reconnects ? "resuming" : "connecting", this);
      this.opened = false;
      try {
        await this.readOnce();
      } catch (err) {
        if (this.stopped) return;
        if (this.opened) delay = RETRY_MIN_MS; // it was open: resume at once
        this.onState(err.status === 401 ? "unauthorized" : "down", this, err);
        if (err.status === 401) return;
      }
      if (this.stopped) return;
      this.reconnects += 1;
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(RETRY_MAX_MS, delay * 2);
    }
  }

  async readOnce() {
    this.controller = new AbortController();
    const headers = authHeaders({ accept: "text/event-stream" });
    if (this.lastId) headers["last-event-id"] = this.lastId;
    const response = await fetch(this.path, {
      headers,
      signal: this.controller.signal,
      cache: "no-store",
    });
    if (!response.ok || !response.body) {
      const err = new Error(`HTTP ${response.status}`);
      err.status = response.status;
      throw err;
    }
    this.opened = true;
    this.onState("live", this);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        this.dispatch(block);
      }
    }
    const err = new Error("the stream ended");
    err.status = 0;
    throw err;
  }

  dispatch(block) {
    let id = null;
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "id") id = value;
      else if (field === "data") data.push(value);
    }
    if (id !== null) this.lastId = id;
    if (!data.length) return;
    let frame;
    try {
      frame = JSON.parse(data.join("\n"));
    } catch {
      return;
    }
    const event = frame && frame.event ? frame.event : frame;
    this.received += 1;
    this.recent.push({ id, type: event.eventType, jobId: event.jobId, queue: event.queue });
    if (this.recent.length > RECENT) this.recent.shift();
    this.onEvent(event, this);
  }
}
