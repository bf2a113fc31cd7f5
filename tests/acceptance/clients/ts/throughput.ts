/**
 * Scenario (g): throughput. Phase 1 pushes PGQ_N jobs with Queue.addBulk() in chunks of
 * PGQ_CHUNK (PUSHB), PGQ_PUSH_PARALLEL chunks in flight. Phase 2 drains them with one
 * Worker per broker (concurrency PGQ_CONCURRENCY, batchSize PGQ_BATCH: PULLB of up to
 * that many jobs, ACKB batches) running a no-op processor. Reports jobs/s per phase and
 * checks that every pushed id completed exactly once.
 *
 * Env: PGQ_N (20000), PGQ_CHUNK (1000), PGQ_PUSH_PARALLEL (2), PGQ_CONCURRENCY (50),
 *      PGQ_BATCH (50), PGQ_TIMEOUT_MS (default 600000 here).
 * With PGQ_TCP_PORT2 the pushes alternate between the two brokers and a second Worker
 * drains through the second broker.
 */
import { assert, client, connection, main, waitFor } from './_common';

const { Queue, Worker } = client;

main('throughput', async (env, partial) => {
  const n = Number(process.env.PGQ_N ?? 20000);
  const chunk = Number(process.env.PGQ_CHUNK ?? 1000);
  const parallel = Number(process.env.PGQ_PUSH_PARALLEL ?? 2);
  const concurrency = Number(process.env.PGQ_CONCURRENCY ?? 50);
  const batch = Number(process.env.PGQ_BATCH ?? 50);
  const ports = env.port2 !== env.port ? [env.port, env.port2] : [env.port];
  const params = { n, chunk, parallel, concurrency, batch, brokers: ports.length };
  partial.params = params;

  const queues = ports.map((port) => new Queue(env.queue, { connection: { ...connection(env), port } }));
  // Warm the connections so phase 1 measures PUSHB, not connects.
  await Promise.all(queues.map((q) => q.getJobCounts()));

  const chunks: number[][] = [];
  for (let i = 0; i < n; i += chunk) chunks.push(Array.from({ length: Math.min(chunk, n - i) }, (_, k) => i + k));
  const pushed: string[] = [];
  let next = 0;
  const tPush = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(parallel, chunks.length) }, async () => {
      while (next < chunks.length) {
        const index = next++;
        const q = queues[index % queues.length];
        const jobs = await q.addBulk(chunks[index].map((i) => ({ name: 'bench', data: { i } })));
        for (const j of jobs) pushed.push(j.id);
      }
    }),
  );
  const pushMs = performance.now() - tPush;
  partial.pushMs = pushMs;
  assert(pushed.length === n && new Set(pushed).size === n, `pushed ${pushed.length} distinct ids`);

  const seen = new Set<string>();
  let duplicates = 0;
  const errors: string[] = [];
  const tDrain = performance.now();
  const workers = ports.map((port) => {
    const w = new Worker(env.queue, async () => null, {
      connection: { ...connection(env), port },
      concurrency,
      batchSize: batch,
    });
    w.on('completed', (job) => {
      if (seen.has(job.id)) duplicates++;
      else seen.add(job.id);
    });
    w.on('error', (e) => errors.push(String((e as Error)?.message ?? e)));
    return w;
  });
  partial.errors = errors;
  await waitFor(`${n} completions`, () => seen.size >= n, env.timeoutMs - pushMs - 10000, 20);
  const drainMs = performance.now() - tDrain;
  await Promise.all(workers.map((w) => w.close()));
  const counts = await queues[0].getJobCounts();
  await Promise.all(queues.map((q) => q.close()));

  const missing = pushed.filter((id) => !seen.has(id)).length;
  assert(missing === 0, `${missing} pushed jobs never completed`);
  return {
    params,
    push: { ms: Math.round(pushMs), jobsPerSec: Math.round((n / pushMs) * 1000) },
    drain: { ms: Math.round(drainMs), jobsPerSec: Math.round((n / drainMs) * 1000) },
    total: { ms: Math.round(pushMs + drainMs), jobsPerSec: Math.round((n / (pushMs + drainMs)) * 1000) },
    completed: seen.size,
    duplicates,
    counts,
    workerErrors: errors.slice(0, 20),
    workerErrorCount: errors.length,
  };
});
