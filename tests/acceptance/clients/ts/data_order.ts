/**
 * Data comes back as it was sent (issue 9): the Worker returns {sum, by}; the job read
 * back has the same returnvalue JSON (the client's own JSON of it, as in toJSON()), and
 * its data keeps its key order; a flow parent reads its children's values with their
 * keys in the order the children returned them.
 *
 * With PGQ_TCP_PORT2 the Worker runs on the second broker.
 */
import { assert, client, connection, main, waitFor } from './_common';

const { FlowProducer, Queue, Worker } = client;

main('data_order', async (env, partial) => {
  const queue = new Queue(env.queue, { connection: connection(env) });
  const flow = new FlowProducer({ connection: connection(env) });
  const data = { zeta: 1, alpha: { y: 2, b: 3 } };
  const result = { sum: 3, by: 'worker' };
  const childValue = { z: 1, a: 'last' };
  let parentSaw: Record<string, unknown> | null = null;
  const worker = new Worker(
    env.queue,
    async (job) => {
      if (job.name === 'child') return childValue;
      if (job.name === 'parent') {
        parentSaw = await job.getChildrenValues();
        return 'parent-done';
      }
      return result;
    },
    { connection: connection(env, true), concurrency: 2 },
  );
  const job = await queue.add('ordered', data);
  const node = await flow.add({
    name: 'parent',
    queueName: env.queue,
    data: {},
    children: [{ name: 'child', queueName: env.queue, data: {} }],
  });
  partial.jobId = job.id;
  let done: Awaited<ReturnType<typeof queue.getJob>> = null;
  await waitFor('job completed', async () => {
    done = await queue.getJob(job.id);
    return done?.returnvalue !== undefined && done?.returnvalue !== null;
  }, env.timeoutMs - 10000);
  await waitFor('parent completed', () => parentSaw !== null, env.timeoutMs - 10000);
  await worker.close();
  await flow.close();
  await queue.close();

  const stored = done as unknown as { data: unknown; returnvalue: unknown; toJSON?: () => { returnvalue?: unknown } };
  const storedReturn = JSON.stringify(stored.returnvalue);
  const raw = typeof stored.toJSON === 'function' ? stored.toJSON().returnvalue : undefined;
  const serialized = raw === undefined || typeof raw === 'string' ? raw : JSON.stringify(raw);
  const childValues = Object.values(parentSaw ?? {}).map((v) => JSON.stringify(v));
  assert(storedReturn === JSON.stringify(result), `returnvalue read back as ${storedReturn}`);
  assert(serialized === undefined || serialized === JSON.stringify(result), `toJSON().returnvalue is ${String(serialized)}`);
  assert(JSON.stringify(stored.data) === JSON.stringify(data), `data read back as ${JSON.stringify(stored.data)}`);
  assert(childValues.length === 1 && childValues[0] === JSON.stringify(childValue), `children values ${JSON.stringify(childValues)}`);
  return { storedReturn, serialized, childValues, parentId: node.job.id };
});
