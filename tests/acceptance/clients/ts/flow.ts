/**
 * Scenario (c): FlowProducer.add() of a parent with two children (one atomic PUSHF).
 * The parent waits in `waiting-children` until both children complete; the Worker then
 * runs the parent, which reads its children's return values with getChildrenValues().
 * Reports the processing order, the parent's state before the worker starts, the
 * children values the parent saw and the parent's result.
 *
 * With PGQ_TCP_PORT2 the Worker runs on the second broker.
 */
import { assert, client, connection, countCommands, main, waitFor } from './_common';

const { FlowProducer, Queue, Worker } = client;

main('flow', async (env, partial) => {
  const flow = new FlowProducer({ connection: connection(env) });
  // FlowProducer and Queue share one pooled connection set (same host/port, no token), so
  // this histogram counts both.
  const sharedPoolCmds = countCommands(flow, "tcp");
  const node = await flow.add({
    name: 'parent',
    queueName: env.queue,
    data: { kind: 'parent' },
    children: [
      { name: 'child', queueName: env.queue, data: { kind: 'child', n: 1 } },
      { name: 'child', queueName: env.queue, data: { kind: 'child', n: 2 } },
    ],
  });
  const parentId = node.job.id;
  const childIds = (node.children ?? []).map((c) => c.job.id);
  partial.parentId = parentId;
  partial.childIds = childIds;

  const queue = new Queue(env.queue, { connection: connection(env) });
  const parentStateBefore = await queue.getJobState(parentId);
  const childStatesBefore = await Promise.all(childIds.map((id) => queue.getJobState(id)));
  const countsBefore = await queue.getJobCounts();

  const order: Array<{ id: string; name: string; at: number }> = [];
  let parentSaw: Record<string, unknown> | null = null;
  let parentResult: unknown;
  const errors: string[] = [];
  const t0 = Date.now();
  const worker = new Worker(
    env.queue,
    async (job) => {
      order.push({ id: job.id, name: job.name, at: Date.now() - t0 });
      if (job.name === 'child') return { child: (job.data as { n: number }).n * 10 };
      parentSaw = await job.getChildrenValues();
      const values = Object.values(parentSaw ?? {}) as Array<{ child: number }>;
      return { sum: values.reduce((s, v) => s + (v?.child ?? 0), 0), count: values.length };
    },
    { connection: connection(env, true), concurrency: 3 },
  );
  worker.on('completed', (job, result) => {
    if (job.id === parentId) parentResult = result;
  });
  worker.on('error', (e) => errors.push(String((e as Error)?.message ?? e)));

  await waitFor('parent completed', () => parentResult !== undefined, env.timeoutMs - 5000);
  await worker.close();
  const parentJob = await queue.getJob(parentId);
  const parentStateAfter = await queue.getJobState(parentId);
  const childJob = childIds[0] ? await queue.getJob(childIds[0]) : null;
  await flow.close();
  await queue.close();

  const parentIndex = order.findIndex((o) => o.id === parentId);
  const childIndexes = childIds.map((id) => order.findIndex((o) => o.id === id));
  assert(childIds.length === 2, 'two children');
  assert(parentStateBefore === 'waiting-children', `parent waits for children (got ${parentStateBefore})`);
  assert(childIndexes.every((i) => i >= 0 && i < parentIndex), `children ran before the parent: ${JSON.stringify(order)}`);
  assert((parentResult as { sum: number }).sum === 30, `parent read children values: ${JSON.stringify(parentSaw)}`);

  return {
    parentId,
    childIds,
    parentStateBefore,
    childStatesBefore,
    countsBefore,
    order,
    childrenValues: parentSaw,
    parentResult,
    parentStateAfter,
    parentJob: parentJob ? { id: parentJob.id, name: parentJob.name, data: parentJob.data, returnvalue: parentJob.returnvalue } : null,
    childJob: childJob ? { id: childJob.id, name: childJob.name, data: childJob.data, parent: childJob.parent ?? null } : null,
    sharedPoolCmds,
    workerErrors: errors,
  };
});
