// What the pages learn from the event stream alone: per queue, completions per
// bucket (throughput) and pickup latencies (pushed -> pulled of the same job,
// both stamped by the database clock).  Buckets are placed by the events'
// timestamps, so a quiet queue's line stays still: nothing moves without an event.

const BUCKET_MS = 2000;
const BUCKETS = 30;
const TRACKED = 5000;

class QueueLive {
  constructor() {
    this.done = new Map(); // bucket -> completions
    this.pickup = new Map(); // bucket -> [sum, n]
    this.pushedAt = new Map();
    this.latest = 0;
  }

  apply(event) {
    const at = Number(event.timestamp) || 0;
    const bucket = Math.floor(at / BUCKET_MS);
    this.latest = Math.max(this.latest, bucket);
    const type = event.eventType;
    if (type === "pushed" || type === "waiting" || type === "retried") {
      this.pushedAt.set(event.jobId, at);
      if (this.pushedAt.size > TRACKED) this.pushedAt.delete(this.pushedAt.keys().next().value);
    } else if (type === "pulled") {
      const pushed = this.pushedAt.get(event.jobId);
      if (pushed !== undefined) {
        this.pushedAt.delete(event.jobId);
        const cell = this.pickup.get(bucket) || [0, 0];
        cell[0] += Math.max(0, at - pushed);
        cell[1] += 1;
        this.pickup.set(bucket, cell);
      }
    } else if (type === "completed") {
      this.done.set(bucket, (this.done.get(bucket) || 0) + 1);
    }
    for (const map of [this.done, this.pickup]) {
      for (const key of map.keys()) if (key <= this.latest - BUCKETS) map.delete(key);
    }
  }

  series(which) {
    const out = [];
    for (let b = this.latest - BUCKETS + 1; b <= this.latest; b += 1) {
      if (which === "throughput") out.push((this.done.get(b) || 0) / (BUCKET_MS / 1000));
      else {
        const cell = this.pickup.get(b);
        out.push(cell ? cell[0] / cell[1] : 0);
      }
    }
    return out;
  }
}

const queues = new Map();

export function liveOf(name) {
  if (!queues.has(name)) queues.set(name, new QueueLive());
  return queues.get(name);
}

export function applyEvent(event) {
  if (event && event.queue) liveOf(event.queue).apply(event);
}

export const WINDOW_S = (BUCKET_MS * BUCKETS) / 1000;
