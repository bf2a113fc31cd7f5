/**
 * Scenario (a): add() + addBulk(), then a Worker with concurrency > 1 processes the jobs
 * and returns results; one job outlives several heartbeat intervals *and* its lock
 * duration, so it can only be ACKed if the JobHeartbeat(B) renewals work; completions
 * go through the worker's batched ACKB. Reports ids, results, getJobCounts, getJob,
 * getState, and a histogram of the commands the Worker/Queue sent.
 *
 * Extra env: PGQ_SLOW_MS (default 3000) how long the slow job runs;
 *            PGQ_LOCK_MS (default 2000) Worker lockDuration (< PGQ_SLOW_MS on purpose);
 *            PGQ_HEARTBEAT_MS (default 500) Worker heartbeatInterval;
 *            PGQ_POOL (default 1) the Worker's connection poolSize.
 *
 * Why poolSize 1: with a pool of >1 connections the Worker sends a JobHeartbeatB right
 * after every pull, and the reference server renews a lease by its own leaseDurationMs
 * (30 s), not by the Worker's lockDuration, so the slow job would survive without any
 * periodic heartbeat. With one connection only the periodic heartbeats (every
 * PGQ_HEARTBEAT_MS) keep the 2 s lease alive; without them the reference rejects the
 * ACKB with "Invalid or expired lock token" (checked).
 */
import { assert, client, connection, countCommands, main, waitFor } from './_common';

const { Queue, Worker } = client;

main('add_worker', async (env, partial) => {
  const slowMs = Number(process.env.PGQ_SLOW_MS ?? 3000);
  const lockMs = Number(process.env.PGQ_LOCK_MS ?? 2000);
  const heartbeatMs = Number(process.env.PGQ_HEARTBEAT_MS ?? 500);

  const queue = new Queue(env.queue, { connection: connection(env) });
  const queueCmds = countCommands(queue, 'tcpPool');

  const single = await queue.add('single', { n: 1, nested: { list: [1, 2, 3], s: 'ü' } });
  const bulk = await queue.addBulk([
    { name: 'bulk', data: { n: 2 } },
    { name: 'bulk', data: { n: 3 } },
    { name: 'bulk', data: { n: 4 }, opts: { priority: 5 } },
    { name: 'slow', data: { n: 5, sleepMs: slowMs } },
    { name: 'bulk', data: { n: 6 } },
  ]);
  const ids = [single.id, ...bulk.map((j) => j.id)];
  partial.ids = ids;
  assert(ids.every((id) => typeof id === 'string' && id.length > 0), 'ids are non-empty strings');
  assert(new Set(ids).size === ids.length, 'ids are distinct');
  const countsBefore = await queue.getJobCounts();
  const statesBefore = await Promise.all(ids.map((id) => queue.getJobState(id)));

  let active = 0;
  let maxActive = 0;
  const processed: Array<{ id: string; name: string; attemptsMade: number; token: boolean }> = [];
  const completed = new Map<string, unknown>();
  const failed: Array<{ id: string; error: string }> = [];
  const errors: string[] = [];

  const worker = new Worker(
    env.queue,
    async (job) => {
      active++;
      maxActive = Math.max(maxActive, active);
      processed.push({ id: job.id, name: job.name, attemptsMade: job.attemptsMade, token: Boolean(job.token) });
      try {
        const data = job.data as { n: number; sleepMs?: number };
        if (data.n === 1) await job.updateProgress(50);
        await new Promise((r) => setTimeout(r, data.sleepMs ?? 150));
        return { doubled: data.n * 2, name: job.name, id: job.id };
      } finally {
        active--;
      }
    },
    {
      connection: connection(env, true, { poolSize: Number(process.env.PGQ_POOL ?? 1) }),
      concurrency: 4,
      heartbeatInterval: heartbeatMs,
      lockDuration: lockMs,
      autorun: false,
    },
  );
  const workerCmds = countCommands(worker, 'tcp');
  worker.on('completed', (job, result) => completed.set(job.id, result));
  worker.on('failed', (job, err) => failed.push({ id: job?.id ?? '?', error: String(err?.message ?? err) }));
  worker.on('error', (err) => errors.push(String((err as Error)?.message ?? err)));
  worker.run();
  partial.workerCmds = workerCmds;
  partial.errors = errors;

  await waitFor('all jobs completed or failed', () => completed.size + failed.length >= ids.length, env.timeoutMs - 5000);
  await worker.close();

  const counts = await queue.getJobCounts();
  const states = Object.fromEntries(await Promise.all(ids.map(async (id) => [id, await queue.getJobState(id)])));
  const jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
  const jobViews = jobs.map((j) =>
    j
      ? {
          id: j.id,
          name: j.name,
          data: j.data,
          returnvalue: j.returnvalue,
          attemptsMade: j.attemptsMade,
          progress: j.progress,
          finishedOn: typeof j.finishedOn,
        }
      : null,
  );
  const missing = await queue.getJob('no-such-job-' + env.queue);
  const missingState = await queue.getJobState('no-such-job-' + env.queue);
  await queue.close();

  assert(failed.length === 0, `no failures (got ${JSON.stringify(failed)})`);
  assert(maxActive > 1, `worker ran jobs concurrently (maxActive=${maxActive})`);
  assert(ids.every((id) => states[id] === 'completed'), `all states completed: ${JSON.stringify(states)}`);
  assert(counts.completed === ids.length && counts.waiting === 0 && counts.active === 0, `counts ${JSON.stringify(counts)}`);
  assert((workerCmds.JobHeartbeat ?? 0) + (workerCmds.JobHeartbeatB ?? 0) >= 2, 'lock heartbeats were sent');
  assert((workerCmds.ACKB ?? 0) >= 1, 'completions were batch-acked');
  assert(jobViews.every((j, i) => j && (j.returnvalue as { doubled: number })?.doubled === ((j.data as { n: number }).n * 2) && j.id === ids[i]), 'getJob returnvalue');
  assert(missing === null, 'getJob(unknown) is null');
  assert(missingState === 'unknown', 'getJobState(unknown) is unknown');

  return {
    ids,
    results: Object.fromEntries(completed),
    countsBefore,
    statesBefore,
    counts,
    states,
    jobs: jobViews,
    missingJob: missing,
    missingState,
    maxActive,
    processed,
    workerErrors: errors,
    workerCmds,
    queueCmds,
  };
});
