/**
 * Scenario: global limits and job groups through the official client's Queue methods.
 *  - setGlobalConcurrencyAsync / getGlobalConcurrency / isMaxed / removeGlobalConcurrencyAsync;
 *  - setGlobalRateLimitAsync(max, duration) / getGlobalRateLimit / removeGlobalRateLimitAsync;
 *  - rateLimit(ms) (RateLimit{limit: 1, ttl}) / getRateLimitTtl;
 *  - the group methods (counts, concurrency, rate limit, pause);
 *  - a Worker of concurrency 4 under a global concurrency of 1 finishes every job.
 */
import { assert, client, connection, main, waitFor } from './_common';

const { Queue, Worker } = client;

main('limits', async (env) => {
  const queue = new Queue(env.queue, { connection: connection(env) });
  await queue.setGlobalConcurrencyAsync(2);
  const concurrency = await queue.getGlobalConcurrency();
  const maxedEmpty = await queue.isMaxed();
  await queue.setGlobalRateLimitAsync(5, 2000);
  const rate = await queue.getGlobalRateLimit();
  await queue.removeGlobalRateLimitAsync();
  const rateCleared = await queue.getGlobalRateLimit();
  await queue.rateLimit(60000);
  const temporary = await queue.getGlobalRateLimit();
  await queue.removeGlobalRateLimitAsync();
  await queue.removeGlobalConcurrencyAsync();
  const concurrencyCleared = await queue.getGlobalConcurrency();

  await queue.add('g', { v: 1 }, { groupId: 'tenant-a' });
  await queue.add('g', { v: 2 }, { groupId: 'tenant-a' });
  const groupCount = await queue.getGroupJobsCount('tenant-a');
  const groupsCount = await queue.getGroupsJobsCount();
  await queue.setGroupConcurrency('tenant-a', 3);
  const groupConcurrency = await queue.getGroupConcurrency('tenant-a');
  const removedConcurrency = await queue.removeGroupConcurrency('tenant-a');
  await queue.setGroupRateLimit('tenant-a', 4, 1000);
  const groupRate = await queue.getGroupRateLimit('tenant-a');
  const removedRate = await queue.removeGroupRateLimit('tenant-a');
  const ttl = await queue.getGroupRateLimitTtl('tenant-a');
  const paused = await queue.pauseGroup('tenant-a');
  const isPaused = await queue.isGroupPaused('tenant-a');
  const resumed = await queue.resumeGroup('tenant-a');

  assert(concurrency === 2, `getGlobalConcurrency ${concurrency}`);
  assert(maxedEmpty === false, 'an empty queue is not maxed');
  assert(rate?.max === 5 && rate?.duration === 2000, `getGlobalRateLimit ${JSON.stringify(rate)}`);
  assert(rateCleared === null, 'rate limit removed');
  assert(temporary?.max === 1, `rateLimit(ms) sets limit 1: ${JSON.stringify(temporary)}`);
  assert(concurrencyCleared === null, 'concurrency removed');
  assert(groupCount === 2 && groupsCount === 2, `group counts ${groupCount} ${groupsCount}`);
  assert(groupConcurrency === 3 && removedConcurrency === 1, 'group concurrency round trip');
  assert(groupRate?.max === 4 && removedRate === 1, `group rate ${JSON.stringify(groupRate)}`);
  assert(ttl === -2, `no group limit → ttl -2 (got ${ttl})`);
  assert(paused === true && isPaused === true && resumed === true, 'pause / resume group');

  await queue.setGlobalConcurrencyAsync(1);
  for (let i = 0; i < 4; i++) await queue.add('w', { i });
  let active = 0;
  let highest = 0;
  let done = 0;
  const worker = new Worker(
    env.queue,
    async () => {
      active += 1;
      highest = Math.max(highest, active);
      await new Promise((r) => setTimeout(r, 50));
      active -= 1;
      return null;
    },
    { connection: connection(env, true), concurrency: 4 },
  );
  worker.on('completed', () => {
    done += 1;
  });
  await waitFor('6 completions', () => done >= 6, env.timeoutMs - 8000);
  await worker.close();
  await queue.close();
  assert(highest === 1, `one job at a time under a global concurrency of 1 (saw ${highest})`);
  return { concurrency, rate, temporary, groupCount, groupRate, ttl, highest, done };
});
