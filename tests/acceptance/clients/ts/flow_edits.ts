/**
 * Scenario: editing flows and deduplication keys after admission.
 *  - FlowProducer.add() of a parent with three children (no worker runs);
 *  - child.removeChildDependency() → true: that child stays queued on its own, the
 *    parent still waits for the other two;
 *  - parent.removeUnprocessedChildren() → the other two are gone, the parent waits;
 *  - queue.add() with deduplication {id}; queue.getDeduplicationJobId() names the owner;
 *    queue.removeDeduplicationKey() → 1, the next add with that id is a new job;
 *    job.removeDeduplicationKey() → true on that new job.
 * The edits go through the second broker (PGQ_TCP_PORT2).
 */
import { assert, client, connection, main, randomSuffix } from './_common';

const { FlowProducer, Queue } = client;

main('flow_edits', async (env, partial) => {
  const flow = new FlowProducer({ connection: connection(env) });
  const node = await flow.add({
    name: 'parent',
    queueName: env.queue,
    data: { kind: 'parent' },
    children: [1, 2, 3].map((n) => ({ name: 'child', queueName: `${env.queue}-parts`, data: { n } })),
  });
  const parentId = node.job.id;
  const childIds = (node.children ?? []).map((c) => c.job.id);
  partial.parentId = parentId;
  partial.childIds = childIds;
  await flow.close();

  const parents = new Queue(env.queue, { connection: connection(env, true) });
  const parts = new Queue(`${env.queue}-parts`, { connection: connection(env, true) });
  const [first, ...others] = childIds;
  assert(first !== undefined && others.length === 2, `three children: ${JSON.stringify(childIds)}`);

  const firstJob = await parts.getJob(first);
  assert(firstJob !== null, 'the first child is there');
  const detached = await firstJob.removeChildDependency();
  const parentAfterDetach = await parents.getJobState(parentId);
  const firstAfterDetach = await parts.getJobState(first);

  const parentJob = await parents.getJob(parentId);
  assert(parentJob !== null, 'the parent is there');
  await parentJob.removeUnprocessedChildren();
  const othersAfterClear = await Promise.all(others.map((id) => parts.getJobState(id)));
  const parentAfterClear = await parents.getJobState(parentId);

  const key = `key-${randomSuffix()}`;
  const owner = await parents.add('u', { v: 1 }, { deduplication: { id: key } });
  const duplicate = await parents.add('u', { v: 2 }, { deduplication: { id: key } });
  const ownerFound = await parents.getDeduplicationJobId(key);
  const freed = await parents.removeDeduplicationKey(key);
  const nobody = await parents.getDeduplicationJobId(key);
  const second = await parents.add('u', { v: 3 }, { deduplication: { id: key } });
  const secondJob = await parents.getJob(second.id);
  assert(secondJob !== null, 'the second job is there');
  const jobKeyRemoved = await secondJob.removeDeduplicationKey();
  const afterJobKey = await parents.getDeduplicationJobId(key);
  await parents.close();
  await parts.close();

  assert(detached === true, `removeChildDependency → true (got ${detached})`);
  assert(parentAfterDetach === 'waiting-children', `the parent still waits (got ${parentAfterDetach})`);
  assert(firstAfterDetach === 'waiting', `the detached child stays queued (got ${firstAfterDetach})`);
  assert(othersAfterClear.every((s) => s === 'unknown'), `unprocessed children removed: ${othersAfterClear}`);
  assert(parentAfterClear === 'waiting', `the parent is released (got ${parentAfterClear})`);
  assert(duplicate.id === owner.id, 'deduplication returns the owner');
  assert(ownerFound === owner.id, `getDeduplicationJobId → the owner (got ${ownerFound})`);
  assert(freed === 1, `removeDeduplicationKey → 1 (got ${freed})`);
  assert(nobody === null, `nobody holds a freed key (got ${nobody})`);
  assert(second.id !== owner.id, 'the next add is a new job');
  assert(jobKeyRemoved === true, `job.removeDeduplicationKey → true (got ${jobKeyRemoved})`);
  assert(afterJobKey === null, `key free again (got ${afterJobKey})`);

  return {
    parentId,
    childIds,
    detached,
    parentAfterDetach,
    othersAfterClear,
    parentAfterClear,
    owner: owner.id,
    ownerFound,
    freed,
    second: second.id,
    jobKeyRemoved,
  };
});
