/**
 * Scenario (d): custom jobId deduplication.
 *  - add() twice with the same jobId → the same id, one job, the first data kept;
 *  - addBulk() containing that jobId again (+ a new one) → existing id + new id;
 *  - five concurrent add()s with another jobId (auto-batched into PUSHB) → one job;
 *  - deduplication: {id} (uniqueKey) twice → one job;
 *  - after the jobId's job completed, add() with the same jobId → the same id (the
 *    retained job; a new generation starts only once the job was removed).
 */
import { assert, client, connection, countCommands, main, randomSuffix, waitFor } from './_common';

const { Queue, Worker } = client;

main('dedup', async (env) => {
  const queue = new Queue(env.queue, { connection: connection(env) });
  const cmds = countCommands(queue, 'tcpPool');
  const x = `order-${randomSuffix()}`;
  const y = `order-${randomSuffix()}`;
  const z = `order-${randomSuffix()}`;

  const first = await queue.add('d', { v: 1 }, { jobId: x });
  const second = await queue.add('d', { v: 2 }, { jobId: x });
  const bulk = await queue.addBulk([
    { name: 'd', data: { v: 3 }, opts: { jobId: x } },
    { name: 'd', data: { v: 4 }, opts: { jobId: y } },
  ]);
  const concurrent = await Promise.all([1, 2, 3, 4, 5].map((v) => queue.add('d', { v: 10 + v }, { jobId: z })));
  const uniq1 = await queue.add('u', { v: 20 }, { deduplication: { id: `key-${x}` } });
  const uniq2 = await queue.add('u', { v: 21 }, { deduplication: { id: `key-${x}` } });

  const countsAfterAdds = await queue.getJobCounts();
  const jobX = await queue.getJob(x);
  const stateX = await queue.getJobState(x);

  assert(first.id === x, `custom jobId becomes the job id (got ${first.id})`);
  assert(second.id === x, 'second add with the same jobId returns the same id');
  assert(bulk[0]?.id === x && bulk[1]?.id === y, `addBulk ids ${JSON.stringify(bulk.map((j) => j.id))}`);
  assert(concurrent.every((j) => j.id === z), 'concurrent adds → one id');
  assert(uniq1.id === uniq2.id, 'uniqueKey dedup returns the owner id');
  const pending = countsAfterAdds.waiting + countsAfterAdds.prioritized;
  assert(pending === 4, `4 distinct jobs pending (x, y, z, uniq): ${JSON.stringify(countsAfterAdds)}`);
  assert((jobX?.data as { v: number })?.v === 1, `first data kept: ${JSON.stringify(jobX?.data)}`);

  // Complete everything, then reuse the jobId x.
  const done = new Set<string>();
  const worker = new Worker(env.queue, async (job) => ({ v: (job.data as { v: number }).v }), {
    connection: connection(env, true),
    concurrency: 4,
  });
  worker.on('completed', (job) => done.add(job.id));
  await waitFor('4 completions', () => done.size >= 4, env.timeoutMs - 8000);
  await worker.close();
  const stateXDone = await queue.getJobState(x);
  const again = await queue.add('d', { v: 99 }, { jobId: x });
  const stateXAgain = await queue.getJobState(x);
  const jobXAgain = await queue.getJob(x);
  const countsEnd = await queue.getJobCounts();
  await queue.close();

  assert(again.id === x, 'jobId reused after completion');
  return {
    jobIds: { x, y, z },
    first: first.id,
    second: second.id,
    bulk: bulk.map((j) => j.id),
    concurrent: concurrent.map((j) => j.id),
    uniqueKey: [uniq1.id, uniq2.id],
    countsAfterAdds,
    jobX: jobX ? { id: jobX.id, name: jobX.name, data: jobX.data } : null,
    stateX,
    stateXDone,
    readdAfterComplete: { id: again.id, state: stateXAgain, data: jobXAgain?.data ?? null },
    countsEnd,
    queueCmds: cmds,
  };
});
