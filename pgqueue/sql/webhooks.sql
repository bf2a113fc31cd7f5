-- name: webhook_cursor_ensure
-- Create the namespace's webhook cursor at "now" (the current snapshot: the
-- events of the transactions finished in it are older than any webhook
-- registered from here on) if it is missing.  :namespace.
INSERT INTO pgqueue_webhook_cursor (namespace, xid, position)
VALUES (:namespace, pg_snapshot_xmin(pg_current_snapshot())::text::bigint, pg_current_snapshot()::text)
ON CONFLICT (namespace) DO NOTHING

-- name: webhook_cursor_lock
-- Lock the webhook cursor (fan-out, registration and enabling serialise on
-- it) and return its position (a resume token of the outbox).  :namespace.
SELECT c.position FROM pgqueue_webhook_cursor c WHERE c.namespace = :namespace FOR UPDATE

-- name: webhook_cursor_get
-- The webhook cursor's position, unlocked (a look before the fan-out locks
-- it; no row: there is no cursor yet).  :namespace.
SELECT c.position FROM pgqueue_webhook_cursor c WHERE c.namespace = :namespace

-- name: webhook_enabled_any
-- Whether the namespace has an enabled webhook.  :namespace.
SELECT EXISTS (SELECT 1 FROM pgqueue_webhooks w WHERE w.namespace = :namespace AND w.enabled)

-- name: webhook_cursor_jump
-- With no enabled webhook there is nothing to fan out: move the (locked)
-- cursor straight to "now" (the current snapshot).  :namespace.
UPDATE pgqueue_webhook_cursor c
SET position = pg_current_snapshot()::text,
    xid = pg_snapshot_xmin(pg_current_snapshot())::text::bigint,
    updated_at = statement_timestamp()
WHERE c.namespace = :namespace

-- name: webhook_fanout_match
-- Which enabled webhooks (:namespace) want which of the outbox events read by the fan-out
-- (aligned arrays: :event_ids, :xids their xids, :queues, :types outbox types):
-- mapped to its webhook event by the aligned arrays :map_types (outbox types) and :map_events
-- (webhook events), of the webhook's queue (or any), committed after the
-- webhook was registered (not visible in its registration snapshot), and
-- with no delivery for that webhook yet.  One row per event some webhook
-- wants, in (xid, id) order.  :namespace.
SELECT b.id, m.event, hooks.ids AS webhook_ids
FROM unnest(:event_ids::bigint[], :xids::bigint[], :queues::text[], :types::text[]) AS b(id, xid, queue, type)
JOIN unnest(:map_types::text[], :map_events::text[]) AS m(kind, event) ON m.kind = b.type
CROSS JOIN LATERAL (
    SELECT array_agg(w.id ORDER BY w.id) AS ids
    FROM pgqueue_webhooks w
    WHERE w.namespace = :namespace
      AND w.enabled
      AND m.event = ANY (w.events)
      AND (w.queue IS NULL OR w.queue = b.queue)
      AND NOT pg_visible_in_snapshot(b.xid::text::xid8, w.created_snapshot)
      AND NOT EXISTS (SELECT 1 FROM pgqueue_webhook_deliveries d
                      WHERE d.namespace = :namespace AND d.webhook_id = w.id
                        AND d.event_id = b.id)
) AS hooks
WHERE hooks.ids IS NOT NULL
ORDER BY b.xid, b.id

-- name: webhook_delivery_queue
-- Queue deliveries; one already queued for the same (webhook, event) is kept
-- as it is (:namespace).  Aligned arrays: :ids delivery ids, :webhook_ids, :event_ids,
-- :events webhook events, :queues, :job_ids, :bodies, :times_ms event times (ms).
-- :namespace, :max_attempts.  Returns how many were queued.
WITH queued AS (
    INSERT INTO pgqueue_webhook_deliveries AS d (
        namespace, id, webhook_id, event_id, event, queue, job_id, event_at, body, max_attempts)
    SELECT :namespace, i.id, i.webhook_id, i.event_id, i.event, i.queue, i.job_id,
           to_timestamp(i.ts / 1000), i.body, :max_attempts::int
    FROM unnest(:ids::text[], :webhook_ids::text[], :event_ids::bigint[], :events::text[], :queues::text[], :job_ids::text[],
                :bodies::text[], :times_ms::float8[])
         AS i(id, webhook_id, event_id, event, queue, job_id, body, ts)
    ON CONFLICT (namespace, webhook_id, event_id) DO NOTHING
    RETURNING 1
)
SELECT count(*)::int FROM queued

-- name: webhook_cursor_advance
-- Parameters, in order: :namespace, :end, :xmin.
-- Move the (locked) webhook cursor to position :end (a resume token), in the
-- transaction that queued the deliveries of the events it passes; :xmin its
-- xmin: every event of a transaction below it was fanned out (retention
-- keeps the others).  :namespace.
UPDATE pgqueue_webhook_cursor c
SET position = :end::text, xid = :xmin::bigint, updated_at = statement_timestamp()
WHERE c.namespace = :namespace

-- name: webhook_insert
-- Register a webhook.  :namespace, :webhook_id, :url, :wanted events, :queue_filter queue
-- filter (NULL: every queue), :key secret (NULL: unsigned).
INSERT INTO pgqueue_webhooks (namespace, id, url, events, queue, secret)
VALUES (:namespace, :webhook_id, :url, :wanted::text[], :queue_filter::text, :key::text)
RETURNING id, url, events, queue, secret IS NOT NULL AS has_secret, enabled,
          (extract(epoch FROM created_at) * 1000)::float8 AS created_at

-- name: webhook_delete
-- Remove a webhook and its deliveries (log included).  :namespace, :webhook_id.
-- Returns the id (no row: unknown).
DELETE FROM pgqueue_webhooks w WHERE w.namespace = :namespace AND w.id = :webhook_id RETURNING w.id

-- name: webhook_set_enabled
-- Enable or disable a webhook.  :namespace, :webhook_id, :enabled.  Returns
-- the id (no row: unknown).
UPDATE pgqueue_webhooks w
SET enabled = :enabled::bool, updated_at = statement_timestamp()
WHERE w.namespace = :namespace AND w.id = :webhook_id
RETURNING w.id

-- name: webhook_snapshot_reset
-- Webhook :webhook_id of job.started starts now: after interest_wait's lock, every
-- claim that commits after this snapshot wrote its `active` events for it
-- (pgqueue.manager.interest).  :namespace, :webhook_id.
UPDATE pgqueue_webhooks w
SET created_snapshot = pg_current_snapshot()
WHERE w.namespace = :namespace AND w.id = :webhook_id

-- name: webhook_exists
-- Parameters, in order: :namespace, :webhook_id.
-- Whether webhook :webhook_id exists.  :namespace.
SELECT EXISTS (SELECT 1 FROM pgqueue_webhooks w WHERE w.namespace = :namespace AND w.id = :webhook_id)

-- name: webhook_list
-- Webhooks in registration order with their delivery counts by status
-- (kept deliveries only: the log is pruned).  :namespace, :limit.
SELECT w.id, w.url, w.events, w.queue, w.secret IS NOT NULL AS has_secret, w.enabled,
       (extract(epoch FROM w.created_at) * 1000)::float8 AS created_at,
       (extract(epoch FROM w.last_triggered_at) * 1000)::float8 AS last_triggered_at,
       w.success_count, w.failure_count,
       coalesce(s.pending, 0)::bigint AS pending,
       coalesce(s.delivered, 0)::bigint AS delivered,
       coalesce(s.failed, 0)::bigint AS failed
FROM pgqueue_webhooks w
LEFT JOIN (
    SELECT d.webhook_id,
           count(*) FILTER (WHERE d.status IN ('pending', 'delivering')) AS pending,
           count(*) FILTER (WHERE d.status = 'delivered') AS delivered,
           count(*) FILTER (WHERE d.status = 'failed') AS failed
    FROM pgqueue_webhook_deliveries d
    WHERE d.namespace = :namespace
    GROUP BY d.webhook_id
) s ON s.webhook_id = w.id
WHERE w.namespace = :namespace
ORDER BY w.created_at, w.id
LIMIT :limit

-- name: webhook_delivery_list
-- Parameters, in order: :namespace, :webhook_id, :status, :limit.
-- The delivery log of webhook :webhook_id, newest event first, optionally of one
-- status :status (NULL: any), at most :limit.  :namespace.
SELECT d.id, d.webhook_id, d.event_id, d.event, d.queue, d.job_id, d.status, d.attempts,
       d.max_attempts, d.last_status_code, d.last_error, d.body,
       (extract(epoch FROM d.event_at) * 1000)::float8 AS event_at,
       (extract(epoch FROM d.created_at) * 1000)::float8 AS created_at,
       (extract(epoch FROM d.last_attempt_at) * 1000)::float8 AS last_attempt_at,
       (extract(epoch FROM d.next_attempt_at) * 1000)::float8 AS next_attempt_at,
       (extract(epoch FROM d.delivered_at) * 1000)::float8 AS delivered_at
FROM pgqueue_webhook_deliveries d
WHERE d.namespace = :namespace AND d.webhook_id = :webhook_id AND (:status::text IS NULL OR d.status = :status::text)
ORDER BY d.event_id DESC
LIMIT :limit

-- name: webhook_delivery_claim
-- Parameters, in order: :namespace, :limit, :lease_ms, :now.
-- Claim up to :limit due deliveries of enabled webhooks: pending ones whose
-- next attempt is due, and delivering ones whose lease ended (the broker
-- delivering them stopped), with attempts left.  Each attempt gets a fresh
-- lease token and a lease of :lease_ms on the database clock (kept in
-- next_attempt_at).  :namespace, :now the clock due-ness is judged at (NULL:
-- the database clock; a test passes a later instant to move time).
WITH due AS (
    SELECT d.id
    FROM pgqueue_webhook_deliveries d
    JOIN pgqueue_webhooks w ON w.namespace = d.namespace AND w.id = d.webhook_id
    WHERE d.namespace = :namespace
      AND d.status IN ('pending', 'delivering')
      AND d.next_attempt_at <= coalesce(:now::timestamptz, statement_timestamp())
      AND d.attempts < d.max_attempts
      AND w.enabled
    ORDER BY d.next_attempt_at, d.id
    LIMIT :limit
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE pgqueue_webhook_deliveries d
SET status = 'delivering',
    attempts = d.attempts + 1,
    lease_token = gen_random_uuid(),
    next_attempt_at = statement_timestamp() + :lease_ms::bigint * interval '1 millisecond',
    last_attempt_at = statement_timestamp()
FROM due, pgqueue_webhooks w
WHERE d.namespace = :namespace AND d.id = due.id AND w.namespace = :namespace AND w.id = d.webhook_id
RETURNING d.id, d.webhook_id, d.event, d.body, d.attempts, d.max_attempts,
          d.lease_token::text AS lease_token,
          (extract(epoch FROM d.event_at) * 1000)::float8 AS event_at, w.url, w.secret

-- name: webhook_delivery_record
-- Record attempts, each a compare-and-set on the claim's lease token (the
-- late result of a claim that was taken over changes nothing).  Aligned
-- arrays (:namespace): :ids delivery ids, :lease_tokens, :outcomes ('delivered' |
-- 'retry' | 'failed'), :status_codes HTTP status codes, :errors, :delays_ms retry delays (ms).
-- Counts successes and final failures on the webhooks.  :namespace.
-- Returns the ids recorded.
WITH input AS (
    SELECT *
    FROM unnest(:ids::text[], :lease_tokens::uuid[], :outcomes::text[], :status_codes::int[], :errors::text[], :delays_ms::bigint[])
         AS i(id, token, outcome, status_code, error, delay_ms)
), recorded AS (
    UPDATE pgqueue_webhook_deliveries d
    SET status = CASE WHEN i.outcome = 'retry' THEN 'pending' ELSE i.outcome END,
        next_attempt_at = statement_timestamp()
            + coalesce(i.delay_ms, 0) * interval '1 millisecond',
        lease_token = NULL,
        last_status_code = i.status_code,
        last_error = i.error,
        delivered_at = CASE WHEN i.outcome = 'delivered' THEN statement_timestamp() END
    FROM input i
    WHERE d.namespace = :namespace AND d.id = i.id AND d.status = 'delivering' AND d.lease_token = i.token
    RETURNING d.id, d.webhook_id, i.outcome
), counted AS (
    UPDATE pgqueue_webhooks w
    SET success_count = w.success_count + c.delivered,
        failure_count = w.failure_count + c.failed,
        last_triggered_at = CASE WHEN c.delivered > 0 THEN statement_timestamp()
                                 ELSE w.last_triggered_at END
    FROM (SELECT r.webhook_id,
                 count(*) FILTER (WHERE r.outcome = 'delivered') AS delivered,
                 count(*) FILTER (WHERE r.outcome = 'failed') AS failed
          FROM recorded r
          GROUP BY r.webhook_id) c
    WHERE w.namespace = :namespace AND w.id = c.webhook_id
)
SELECT r.id FROM recorded r

-- name: webhook_delivery_fail_spent
-- Deliveries whose last attempt's lease ended without a result (the broker
-- delivering them stopped) and that have no attempt left: failed.
-- :namespace, :now the clock the lease's end is judged at (NULL: the
-- database clock).  Returns how many.
WITH spent AS (
    UPDATE pgqueue_webhook_deliveries d
    SET status = 'failed',
        lease_token = NULL,
        last_error = 'the last attempt was interrupted (its broker stopped) and no attempt is left'
    WHERE d.namespace = :namespace
      AND d.status = 'delivering'
      AND d.next_attempt_at <= coalesce(:now::timestamptz, statement_timestamp())
      AND d.attempts >= d.max_attempts
    RETURNING d.webhook_id
), counted AS (
    UPDATE pgqueue_webhooks w
    SET failure_count = w.failure_count + c.n
    FROM (SELECT s.webhook_id, count(*) AS n FROM spent s GROUP BY s.webhook_id) c
    WHERE w.namespace = :namespace AND w.id = c.webhook_id
)
SELECT count(*)::int FROM spent

-- name: webhook_delivery_prune
-- Parameters, in order: :namespace, :retention_ms, :limit, :now.
-- Delete up to :limit finished (delivered or failed) deliveries queued more than
-- :retention_ms ago.  :namespace, :now the clock ages are measured against (NULL:
-- the database clock).  Returns how many.
WITH old AS (
    SELECT d.id
    FROM pgqueue_webhook_deliveries d
    WHERE d.namespace = :namespace
      AND d.status IN ('delivered', 'failed')
      AND d.created_at < coalesce(:now::timestamptz, statement_timestamp())
                         - :retention_ms::bigint * interval '1 millisecond'
    ORDER BY d.created_at
    LIMIT :limit
), deleted AS (
    DELETE FROM pgqueue_webhook_deliveries d
    USING old
    WHERE d.namespace = :namespace AND d.id = old.id
    RETURNING 1
)
SELECT count(*)::int FROM deleted
