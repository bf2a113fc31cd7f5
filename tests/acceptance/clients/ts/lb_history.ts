/**
 * Scenario: a producer and a Worker of the official client behind a load balancer
 * while brokers die and come back (tests/faults/test_load_balancer.py).
 *
 * The producer pushes batches of PGQ_BATCH jobs with custom ids `<PGQ_ID_PREFIX><n>`
 * (addBulk) until the file PGQ_STOP_FILE exists; a failed push is retried with the
 * same ids (the custom id makes the retry safe). The Worker (concurrency 4) runs a
 * handler that records every execution with a fresh execution id and returns it.
 * When told to stop, it waits until every admitted job was seen completed, then
 * prints the history: admitted ids, executions per id, completed (acked) execution
 * per id, push errors and worker errors, as JSON into PGQ_HISTORY_FILE (RESULT
 * stays short: a long stdout line may be cut when the process exits). The test
 * checks it against the database. An ack whose broker died after its commit, before
 * its answer, completed its job without the worker hearing so (no 'completed'
 * event): once only a few jobs are left unseen, the queue is asked for their state,
 * and those it reports completed go into the history with the result it stored
 * (completedUnseen).
 *
 * Env: PGQ_STOP_FILE and PGQ_HISTORY_FILE (required), PGQ_ID_PREFIX ('ts-'), PGQ_BATCH (5),
 *      PGQ_WORK_MS (10), PGQ_LOCK_MS (5000).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { assert, client, connection, main, sleep, waitFor } from './_common';

const { Queue, Worker } = client;

/** The queue is asked about the jobs not seen completed once at most this many are left. */
const UNSEEN_ASKED = 8;

main('lb_history', async (env, partial) => {
  const stopFile = process.env.PGQ_STOP_FILE;
  const historyFile = process.env.PGQ_HISTORY_FILE;
  assert(stopFile && historyFile, 'PGQ_STOP_FILE and PGQ_HISTORY_FILE are required');
  const prefix = process.env.PGQ_ID_PREFIX ?? 'ts-';
  const batch = Number(process.env.PGQ_BATCH ?? 5);
  const workMs = Number(process.env.PGQ_WORK_MS ?? 10);
  const lockMs = Number(process.env.PGQ_LOCK_MS ?? 5000);

  const admitted: string[] = [];
  const pushErrors: string[] = [];
  const executions: Record<string, string[]> = {};
  const completed: Record<string, unknown[]> = {};
  const errors: string[] = [];
  let execCounter = 0;
  partial.admitted = admitted;
  partial.pushErrors = pushErrors;
  partial.errors = errors;

  const queue = new Queue(env.queue, { connection: connection(env) });
  const worker = new Worker(
    env.queue,
    async (job) => {
      const exec = `${job.id}#${++execCounter}`;
      (executions[job.id] ??= []).push(exec);
      await sleep(workMs); // the job's work
      return { exec };
    },
    { connection: connection(env, true), concurrency: 4, lockDuration: lockMs, heartbeatInterval: lockMs / 4 },
  );
  worker.on('completed', (job, result) => (completed[job.id] ??= []).push((result as { exec: string })?.exec ?? null));
  worker.on('error', (err) => errors.push(String((err as Error)?.message ?? err)));

  let next = 0;
  while (!existsSync(stopFile)) {
    const ids = Array.from({ length: batch }, (_, k) => `${prefix}${next + k}`);
    for (;;) {
      try {
        await queue.addBulk(ids.map((id) => ({ name: 'lb', data: { id }, opts: { jobId: id } })));
        break;
      } catch (err) {
        pushErrors.push(String((err as Error)?.message ?? err));
        await sleep(100); // back off before re-sending the same ids
      }
    }
    admitted.push(...ids);
    next += batch;
    await sleep(50); // a steady producer, not a flood
  }
  const unseen: Record<string, unknown> = {};
  const allCompleted = async (): Promise<boolean> => {
    const missing = admitted.filter((id) => completed[id] === undefined && !(id in unseen));
    if (missing.length === 0 || missing.length > UNSEEN_ASKED) return missing.length === 0;
    for (const id of missing) {
      // a few stragglers: an ack whose answer was lost?
      if ((await queue.getJobState(id)) === 'completed') {
        const job = await queue.getJob(id);
        unseen[id] = (job?.returnvalue as { exec?: string } | undefined)?.exec ?? null;
      }
    }
    return missing.every((id) => id in unseen);
  };
  await waitFor('every admitted job completed', allCompleted, env.timeoutMs - 10000, 50);
  await worker.close();
  await queue.close();
  const history = { admitted, executions, completed, completedUnseen: unseen, pushErrors, errors: errors.slice(0, 50) };
  writeFileSync(historyFile, JSON.stringify(history));
  return { admitted: admitted.length, pushErrors: pushErrors.length, errorCount: errors.length };
});
