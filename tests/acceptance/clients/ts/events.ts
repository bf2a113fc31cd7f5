/**
 * Scenario (b): QueueEvents (TCP SubscribeEvents on its own connection) receives
 * waiting / active / progress / completed / failed events for jobs that a Worker
 * processes. Three jobs: `ok-1` (reports progress 42 and 'half'), `ok-2`, and `boom`
 * (attempts 1, throws). The events are gathered per job id.
 *
 * With PGQ_TCP_PORT2 the QueueEvents and the Worker connect to the second broker while
 * the jobs are added on the first (cross-broker event delivery).
 *
 * PGQ_STRICT_EVENTS=1 also requires the progress event to carry the value (42) and the
 * failed event to carry the job data, as the reference does in memory mode. The
 * reference 2.9.5 in PostgreSQL mode sends neither (its progress event has only
 * eventType/queue/jobId/timestamp, so QueueEvents emits `progress` with data undefined),
 * hence this is off by default.
 */
import { assert, client, connection, main, waitFor } from './_common';

const { Queue, QueueEvents, Worker } = client;

type Seen = Array<{ event: string; jobId: string; detail?: unknown; at: number }>;

main('events', async (env, partial) => {
  const t0 = Date.now();
  const seen: Seen = [];
  partial.events = seen;
  const events = new QueueEvents(env.queue, { connection: connection(env, true) });
  // QueueEvents re-emits every `failed` event's error text as an 'error' event too (when
  // an 'error' listener exists), so 'error' mixes job failures and transport errors.
  const errorEvents: string[] = [];
  events.on('error', (e: Error) => errorEvents.push(String(e?.message ?? e)));
  for (const name of ['waiting', 'active', 'completed', 'failed', 'progress', 'retried', 'delayed', 'stalled', 'removed', 'duplicated', 'drained']) {
    events.on(name, (payload: Record<string, unknown>) => {
      const { jobId, id, ...rest } = payload ?? {};
      seen.push({ event: name, jobId: String(jobId ?? id ?? ''), detail: Object.keys(rest).length ? rest : undefined, at: Date.now() - t0 });
    });
  }
  await events.waitUntilReady();

  const queue = new Queue(env.queue, { connection: connection(env) });
  const [ok1, ok2, boom] = await queue.addBulk([
    { name: 'ok-1', data: { n: 1 } },
    { name: 'ok-2', data: { n: 2 } },
    { name: 'boom', data: { n: 3 }, opts: { attempts: 1 } },
  ]);
  const ids = { ok1: ok1.id, ok2: ok2.id, boom: boom.id };
  partial.ids = ids;

  const worker = new Worker(
    env.queue,
    async (job) => {
      if (job.name === 'boom') throw new Error('boom failed on purpose');
      if (job.name === 'ok-1') await job.updateProgress(42, 'half');
      return { n: (job.data as { n: number }).n, done: true };
    },
    { connection: connection(env, true), concurrency: 2 },
  );

  const has = (event: string, jobId: string) => seen.some((e) => e.event === event && e.jobId === jobId);
  await waitFor(
    'completed x2 + failed x1 + progress events',
    () => has('completed', ids.ok1) && has('completed', ids.ok2) && has('failed', ids.boom) && has('progress', ids.ok1),
    env.timeoutMs - 5000,
  );
  // Give late events (e.g. waiting emitted after active on another broker) a moment.
  await new Promise((r) => setTimeout(r, 500));
  await worker.close();
  events.close();
  await queue.close();

  const byJob: Record<string, string[]> = {};
  for (const [key, id] of Object.entries(ids)) byJob[key] = seen.filter((e) => e.jobId === id).map((e) => e.event);
  for (const id of Object.values(ids)) {
    assert(has('waiting', id), `waiting event for ${id}`);
    assert(has('active', id), `active event for ${id}`);
  }
  const completedOk1 = seen.find((e) => e.event === 'completed' && e.jobId === ids.ok1);
  const failedBoom = seen.find((e) => e.event === 'failed' && e.jobId === ids.boom);
  const progressOk1 = seen.find((e) => e.event === 'progress' && e.jobId === ids.ok1);
  assert((completedOk1?.detail as { returnvalue?: { n?: number } })?.returnvalue?.n === 1, 'completed event carries the return value');
  assert(String((failedBoom?.detail as { failedReason?: string })?.failedReason).includes('boom failed on purpose'), 'failed event carries the error');
  if (process.env.PGQ_STRICT_EVENTS === '1') {
    assert((progressOk1?.detail as { data?: unknown })?.data === 42, `progress event carries 42: ${JSON.stringify(progressOk1)}`);
    assert((failedBoom?.detail as { data?: { n?: number } })?.data?.n === 3, `failed event carries the job data: ${JSON.stringify(failedBoom)}`);
  }
  const transportErrors = errorEvents.filter((m) => !m.includes('boom failed on purpose'));
  assert(transportErrors.length === 0, `no QueueEvents transport errors: ${transportErrors.join('; ')}`);

  return {
    ids,
    byJob,
    completedDetail: completedOk1?.detail,
    failedDetail: failedBoom?.detail,
    progressDetail: progressOk1?.detail,
    events: seen,
    errorEvents,
  };
});
