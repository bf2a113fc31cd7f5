/**
 * Scenario (e): failures, retries and the dead-letter queue.
 *  - `flaky`: attempts 2, backoff {type:'fixed', delay: PGQ_BACKOFF_MS (300)}; throws on
 *    every run → runs twice (attemptsMade 0 then 1, second run ≥ ~0.8·backoff later),
 *    then ends `failed` and in the DLQ (reason max_attempts_exceeded);
 *  - `fatal`: attempts 5, throws UnrecoverableError → runs once, `failed`, DLQ
 *    (reason explicit_fail);
 *  - `recovers`: attempts 3, backoff 100 (a number: exponential), fails once then
 *    succeeds → completed with attemptsMade 1.
 * Reports per-run timings, states, getJob().failedReason/stacktrace, getDlqAsync()
 * entries, and the worker's failed/completed events.
 */
import { assert, client, connection, countCommands, main, waitFor } from './_common';

const { Queue, UnrecoverableError, Worker } = client;

main('retry_dlq', async (env, partial) => {
  const backoffMs = Number(process.env.PGQ_BACKOFF_MS ?? 300);
  const queue = new Queue(env.queue, { connection: connection(env) });
  const [flaky, fatal, recovers] = await queue.addBulk([
    { name: 'flaky', data: { kind: 'flaky' }, opts: { attempts: 2, backoff: { type: 'fixed', delay: backoffMs } } },
    { name: 'fatal', data: { kind: 'fatal' }, opts: { attempts: 5 } },
    { name: 'recovers', data: { kind: 'recovers' }, opts: { attempts: 3, backoff: 100 } },
  ]);
  const ids = { flaky: flaky.id, fatal: fatal.id, recovers: recovers.id };
  partial.ids = ids;

  const t0 = Date.now();
  const runs: Array<{ name: string; attemptsMade: number; at: number }> = [];
  const failedEvents: Array<{ id: string; attemptsMade: number; reason: string }> = [];
  const completed = new Set<string>();
  const errors: string[] = [];
  partial.runs = runs;
  const worker = new Worker(
    env.queue,
    async (job) => {
      runs.push({ name: job.name, attemptsMade: job.attemptsMade, at: Date.now() - t0 });
      if (job.name === 'flaky') throw new Error(`flaky failure #${job.attemptsMade + 1}`);
      if (job.name === 'fatal') throw new UnrecoverableError('fatal: do not retry');
      if (job.attemptsMade === 0) throw new Error('recovers: first run fails');
      return { recovered: true };
    },
    { connection: connection(env, true), concurrency: 2, autorun: false },
  );
  const workerCmds = countCommands(worker, 'tcp');
  worker.on('failed', (job, err) => failedEvents.push({ id: job.id, attemptsMade: job.attemptsMade, reason: String(err?.message) }));
  worker.on('completed', (job) => completed.add(job.id));
  worker.on('error', (e) => errors.push(String((e as Error)?.message ?? e)));
  worker.run();

  const settled = async () => {
    const [a, b] = await Promise.all([queue.getJobState(ids.flaky), queue.getJobState(ids.fatal)]);
    return a === 'failed' && b === 'failed' && completed.has(ids.recovers);
  };
  await waitFor('flaky+fatal failed, recovers completed', settled, env.timeoutMs - 5000, 100);
  await worker.close();

  const states = {
    flaky: await queue.getJobState(ids.flaky),
    fatal: await queue.getJobState(ids.fatal),
    recovers: await queue.getJobState(ids.recovers),
  };
  const view = async (id: string) => {
    const j = await queue.getJob(id);
    return j ? { attemptsMade: j.attemptsMade, failedReason: j.failedReason, stacktrace: j.stacktrace, returnvalue: j.returnvalue } : null;
  };
  const jobs = { flaky: await view(ids.flaky), fatal: await view(ids.fatal), recovers: await view(ids.recovers) };
  const dlq = await queue.getDlqAsync();
  const dlqView = dlq.map((e) => ({
    id: e.job?.id,
    reason: e.reason,
    error: e.error,
    attempts: Array.isArray(e.attempts) ? e.attempts.length : e.attempts,
    retryCount: e.retryCount,
  }));
  const counts = await queue.getJobCounts();
  await queue.close();

  const flakyRuns = runs.filter((r) => r.name === 'flaky');
  const fatalRuns = runs.filter((r) => r.name === 'fatal');
  const recoversRuns = runs.filter((r) => r.name === 'recovers');
  assert(flakyRuns.length === 2, `flaky ran twice (${flakyRuns.length})`);
  assert(flakyRuns[0].attemptsMade === 0 && flakyRuns[1].attemptsMade === 1, 'attemptsMade 0 then 1');
  const gap = flakyRuns[1].at - flakyRuns[0].at;
  assert(gap >= backoffMs * 0.75, `fixed backoff respected (gap ${gap} ms)`);
  assert(fatalRuns.length === 1, `unrecoverable ran once (${fatalRuns.length})`);
  assert(recoversRuns.length === 2, `recovers ran twice (${recoversRuns.length})`);
  assert(states.flaky === 'failed' && states.fatal === 'failed' && states.recovers === 'completed', JSON.stringify(states));
  const dlqIds = new Set(dlqView.map((e) => e.id));
  assert(dlqIds.has(ids.flaky) && dlqIds.has(ids.fatal) && !dlqIds.has(ids.recovers), `DLQ holds flaky+fatal: ${JSON.stringify(dlqView)}`);

  return {
    ids,
    runs,
    flakyGapMs: gap,
    states,
    jobs,
    dlq: dlqView,
    counts,
    failedEvents,
    completed: [...completed],
    workerErrors: errors,
    workerCmds,
  };
});
