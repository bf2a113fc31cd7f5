-- name: interest_hold
-- This broker (:namespace, :broker_id) wants the `active` events of :queue ('':
-- of every queue), for a subscriber (migration 0027).  Idempotent; the row goes
-- with the broker's session.  Commit it, then run interest_wait before telling
-- the subscriber it is subscribed.
INSERT INTO pgqueue_event_interest (namespace, queue, broker_id)
VALUES (:namespace, :queue, :broker_id)
ON CONFLICT DO NOTHING

-- name: interest_lock_timeout
-- Bound this transaction's waits for a lock to :timeout_ms (interest_wait).
SELECT set_config('lock_timeout', :timeout_ms::int::text, true)

-- name: interest_wait
-- In a transaction of its own, after interest_hold (or a webhook of job.started)
-- committed: wait until every claim that read the interest before has ended.
-- Every claim statement reads pgqueue_claim_guard FOR KEY SHARE, so it holds the
-- guard's ROW SHARE lock from before its snapshot (a statement's table locks come
-- first) to its end: a claim holding it may have read the interest without the
-- new row; once this EXCLUSIVE lock is granted none does, and every later claim
-- reads with a snapshot that sees the row.  EXCLUSIVE conflicts with ROW SHARE,
-- not with ACCESS SHARE: plain readers (a pg_dump) never hold it up.  Held until
-- this transaction ends (claims queue behind it meanwhile: the caller bounds the
-- wait with interest_lock_timeout and tries again).
LOCK TABLE pgqueue_claim_guard IN EXCLUSIVE MODE
