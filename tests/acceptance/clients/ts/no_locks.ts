/**
 * Scenario: a Worker with `useLocks: false` and a pool of 4 connections. It pulls without
 * `owner` (no token in the reply) and acks, fails and renews without a token, on whichever
 * pooled connection is next: the broker must fill in its own claims' tokens across the
 * pool's connections. Every third job fails on its first attempt and succeeds on the retry.
 * Checks that every job completes with its result and that no ACK was ignored.
 *
 * Extra env: PGQ_N (default 30) how many jobs.
 */
import { assert, client, connection, main, waitFor } from './_common';

const { Queue, Worker } = client;

main('no_locks', async (env, partial) => {
  const n = Number(process.env.PGQ_N ?? 30);
  const queue = new Queue(env.queue, { connection: connection(env) });
  const added = await queue.addBulk(
    Array.from({ length: n }, (_, i) => ({ name: 'job', data: { i }, opts: { attempts: 2, backoff: 10 } })),
  );
  const ids = added.map((j) => j.id);

  const completed = new Map<string, unknown>();
  const failures: string[] = [];
  const errors: string[] = [];
  const worker = new Worker(
    env.queue,
    async (job) => {
      const { i } = job.data as { i: number };
      await new Promise((r) => setTimeout(r, 20));
      if (i % 3 === 0 && job.attemptsMade === 0) throw new Error(`first attempt of ${i}`);
      return { i, twice: i * 2 };
    },
    {
      connection: connection(env, true, { poolSize: 4 }),
      concurrency: 4,
      useLocks: false,
      heartbeatInterval: 200,
      autorun: false,
    },
  );
  worker.on('completed', (job, result) => completed.set(job.id, result));
  worker.on('failed', (job, err) => failures.push(`${job?.id}: ${String(err?.message ?? err)}`));
  worker.on('error', (err) => errors.push(String((err as Error)?.message ?? err)));
  worker.run();
  partial.errors = errors;

  const counts = () => queue.getJobCounts();
  await waitFor('all jobs completed', async () => (await counts()).completed >= n, env.timeoutMs - 5000);
  await worker.close();
  const final = await counts();
  const jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
  await queue.close();

  assert(final.completed === n && final.active === 0 && final.failed === 0, `counts ${JSON.stringify(final)}`);
  assert(
    jobs.every((j) => j && (j.returnvalue as { twice: number })?.twice === (j.data as { i: number }).i * 2),
    'every job completed with its own result',
  );
  assert(failures.length === Math.ceil(n / 3), `one failed attempt per third job (got ${failures.length})`);
  assert(completed.size === n, `the worker saw every completion applied (got ${completed.size})`);
  return { completed: completed.size, failures: failures.length, errors };
});
