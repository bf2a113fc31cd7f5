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
-- In a transaction of its own, after interest_hold committed: wait until every
-- claim that read pgqueue_event_interest before has ended.  A statement takes
-- its table locks before its snapshot, so a claim that holds the table's lock
-- may have read it without the new row; once this lock is granted none does,
-- and every later claim reads with a snapshot that sees the row.  The lock is
-- held only until this transaction ends (claims queue behind it meanwhile: the
-- caller bounds the wait with interest_lock_timeout and tries again).
LOCK TABLE pgqueue_event_interest IN ACCESS EXCLUSIVE MODE

-- name: webhook_interest_wait
-- The same as interest_wait for a webhook of job.started just registered or
-- enabled (the claims read pgqueue_webhooks for those): in a transaction of its
-- own after that commit.
LOCK TABLE pgqueue_webhooks IN ACCESS EXCLUSIVE MODE
