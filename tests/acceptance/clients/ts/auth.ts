/**
 * Scenario (f): token authentication. Needs a server started with auth tokens and
 * PGQ_TOKEN set to one of them.
 *  - right token: add() + getJobCounts() work and a Worker (also with the token)
 *    completes the job;
 *  - wrong token: add() must fail (the client's Auth is rejected; it keeps retrying the
 *    connection, so the command ends with an error or a command timeout);
 *  - no token: add() must fail ("Not authenticated").
 * Extra env: PGQ_AUTH_FAIL_TIMEOUT_MS (default 3000): commandTimeout for the failing clients.
 */
import { assert, client, connection, main, waitFor } from './_common';

const { Queue, Worker } = client;

async function attempt(fn: () => Promise<unknown>): Promise<{ ok: boolean; error?: string; ms: number; value?: unknown }> {
  const t = Date.now();
  try {
    const value = await fn();
    return { ok: true, value, ms: Date.now() - t };
  } catch (err) {
    return { ok: false, error: String((err as Error)?.message ?? err), ms: Date.now() - t };
  }
}

main('auth', async (env) => {
  if (!env.token) throw new Error('PGQ_TOKEN must be set for the auth scenario');
  const failTimeout = Number(process.env.PGQ_AUTH_FAIL_TIMEOUT_MS ?? 3000);

  const good = new Queue(env.queue, { connection: connection(env) });
  const added = await attempt(async () => (await good.add('authed', { v: 1 })).id);
  const counts = await attempt(() => good.getJobCounts());
  let done: unknown;
  const worker = new Worker(env.queue, async (job) => ({ v: (job.data as { v: number }).v }), {
    connection: connection(env, true),
    concurrency: 2,
  });
  worker.on('completed', (_job, result) => {
    done = result;
  });
  await waitFor('authed job completed', () => done !== undefined, Math.min(15000, env.timeoutMs / 3));
  await worker.close();
  await good.close();

  const wrongConn = { ...connection(env, false, { commandTimeout: failTimeout, poolSize: 1 }), token: `${env.token}-wrong` };
  const wrong = new Queue(env.queue, { connection: wrongConn });
  const wrongAdd = await attempt(() => wrong.add('wrong', { v: 2 }));
  await wrong.close();

  const noneConn = { ...connection(env, false, { commandTimeout: failTimeout, poolSize: 1 }), token: undefined };
  const none = new Queue(env.queue, { connection: noneConn });
  const noneAdd = await attempt(() => none.add('none', { v: 3 }));
  await none.close();

  assert(added.ok, `add with the right token: ${added.error}`);
  assert(counts.ok, `getJobCounts with the right token: ${counts.error}`);
  assert(!wrongAdd.ok, 'add with a wrong token fails');
  assert(!noneAdd.ok, 'add without a token fails');
  return {
    goodToken: { addedId: added.value, counts: counts.value, workerResult: done },
    wrongToken: wrongAdd,
    noToken: noneAdd,
  };
});
