/**
 * Scenario: BullMQ job schedulers as the official client sends them (Cron / CronList /
 * CronDelete on the wire), and the `repeat` job option.
 *  - upsertJobScheduler(id, {every, immediately, limit}, {name, data, opts}) → the
 *    scheduler's jobs arrive with the template's name, data and options; a Worker on
 *    the other broker processes them; the run cap stops it;
 *  - upsertJobScheduler(id, {pattern, tz}) → getJobScheduler / getJobSchedulers see
 *    its pattern and next run; upserting again updates it;
 *  - getJobScheduler of an unknown id → null; removeJobScheduler → gone;
 *  - queue.add(name, data, {repeat: {every, limit}}) → a job (its first run).
 */
import { assert, client, connection, main, randomSuffix, waitFor } from './_common';

const { Queue, Worker } = client;

main('schedulers', async (env) => {
  const queue = new Queue(env.queue, { connection: connection(env) });
  const every = `every-${randomSuffix()}`;
  const nightly = `nightly-${randomSuffix()}`;

  const upserted = await queue.upsertJobScheduler(
    every,
    { every: 500, immediately: true, limit: 3 },
    { name: 'tick', data: { b: 1, a: [2, 3] }, opts: { attempts: 4, removeOnComplete: false } },
  );
  const seen: Array<{ id: string; name: string; data: unknown; attempts: unknown }> = [];
  const worker = new Worker(
    env.queue,
    async (job) => {
      seen.push({ id: job.id, name: job.name, data: job.data, attempts: job.opts?.attempts });
      return { ok: true };
    },
    { connection: connection(env, true), concurrency: 2 },
  );
  await waitFor('3 scheduled jobs processed', () => seen.length >= 3, env.timeoutMs - 15000);

  const cron = await queue.upsertJobScheduler(
    nightly,
    { pattern: '0 3 * * *', timezone: 'Europe/Rome' },
    { name: 'report', data: { kind: 'daily' } },
  );
  const got = await queue.getJobScheduler(nightly);
  const all = await queue.getJobSchedulers();
  const again = await queue.upsertJobScheduler(nightly, { pattern: '30 4 * * *' }, { name: 'report' });
  const gotAgain = await queue.getJobScheduler(nightly);
  const missing = await queue.getJobScheduler(`missing-${randomSuffix()}`);
  const removed = await queue.removeJobScheduler(nightly);
  const afterRemove = await queue.getJobScheduler(nightly);
  const everyAfter = await queue.getJobScheduler(every);

  const repeated = await queue.add('poll', { p: 1 }, { repeat: { every: 3_600_000, limit: 2 } });
  const repeatState = await queue.getJobState(repeated.id);
  const schedulersEnd = await queue.getJobSchedulers();
  await worker.close();
  await queue.close();

  assert(upserted !== null && upserted.id === every, `upsert answered ${JSON.stringify(upserted)}`);
  assert(seen.length === 3, `jobs processed: ${seen.length}`);
  assert(seen.every((j) => j.name === 'tick'), `names ${JSON.stringify(seen)}`);
  assert(
    seen.every((j) => JSON.stringify(j.data) === JSON.stringify({ b: 1, a: [2, 3] })),
    `data ${JSON.stringify(seen.map((j) => j.data))}`,
  );
  assert(new Set(seen.map((j) => j.id)).size === seen.length, 'each tick its own job');
  assert(everyAfter !== null && everyAfter.limit === 3, `every scheduler ${JSON.stringify(everyAfter)}`);
  assert(cron !== null && typeof cron.next === 'number', `cron next ${JSON.stringify(cron)}`);
  assert(got !== null && got.pattern === '0 3 * * *' && got.name === 'report', `got ${JSON.stringify(got)}`);
  assert(all.some((s) => s.id === nightly) && all.some((s) => s.id === every), `list ${JSON.stringify(all)}`);
  assert(again !== null && gotAgain?.pattern === '30 4 * * *', `updated ${JSON.stringify(gotAgain)}`);
  assert(missing === null, `unknown scheduler → null (${JSON.stringify(missing)})`);
  assert(removed === true && afterRemove === null, 'removed');
  assert(typeof repeated.id === 'string' && repeatState === 'delayed', `repeat job ${repeated.id} ${repeatState}`);
  assert(schedulersEnd.length === 2, `schedulers at the end: ${JSON.stringify(schedulersEnd)}`);
  return {
    upserted,
    processed: seen.length,
    seen,
    got,
    gotAgain,
    missing,
    everyAfter,
    repeat: { id: repeated.id, state: repeatState },
    schedulersEnd,
  };
});
