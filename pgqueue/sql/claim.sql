-- name: job_claim_batch
-- Claim due jobs of a queue in one statement (:namespace, :queue, at most
-- :count): lock in claim order
-- with SKIP LOCKED (the CTE is the fence that keeps LIMIT and locking
-- together), then lease them on the database clock and bump each fence.
-- Nothing is claimed when the broker session is not live or the queue is
-- paused; nor when the queue has a rate or concurrency limit or grouped
-- pending jobs: then plan_needed is true and the caller runs
-- job_claim_planned instead (this statement takes no lock on the queue row,
-- so unlimited queues are never serialised).  It claims ungrouped jobs only.  The token is "<fence>:<uuid>", the uuid derived from the job's
-- secret token_salt and the fence: the database can later tell a token it
-- issued from a forged one (job_outcome_probe).  :namespace, :queue, :count, :owner, :broker_id,
-- :session_id, :lease_ms (NULL: the queue's stall config stallInterval,
-- else :default_lease_ms, the broker's default).  The first lease of a claim lasts at least
-- the queue's gracePeriod; every lease ends by the job's timeout.
-- Always returns at least one row: session_live, plan_needed, then the
-- claimed job's columns (NULL when nothing was claimed).  Each claimed job's
-- `active` event is written only while someone wants it, else one `claimed`
-- tally row while a broker server counts the claims (see the wanted CTE).  :now is the clock
-- due-ness and TTL expiry are judged against (NULL: the database clock; a test
-- passes a later instant to move time); the lease is set on the database clock.
WITH clock AS (
    SELECT coalesce(:now::timestamptz, statement_timestamp()) AS now
), session AS (
    SELECT EXISTS (SELECT 1 FROM pgqueue_brokers b
                   WHERE b.namespace = :namespace AND b.broker_id = :broker_id AND b.session_id = :session_id::uuid)
           AS live
), settings AS (
    SELECT coalesce(:lease_ms::bigint, (q.stall_config ->> 'stallInterval')::bigint, :default_lease_ms::bigint)
               AS lease_ms,
           coalesce((q.stall_config ->> 'gracePeriod')::bigint, 0) AS grace_ms,
           coalesce(q.paused, false) AS paused,
           (q.rate_limit IS NOT NULL OR q.concurrency_limit IS NOT NULL
            OR (SELECT g.group_id FROM pgqueue_jobs g  -- a probe of the group index
                WHERE g.namespace = :namespace AND g.queue = :queue
                  AND g.state = 'pending' AND g.group_id IS NOT NULL
                ORDER BY g.group_id LIMIT 1) IS NOT NULL) AS plan_needed
    FROM (SELECT 1) AS one
    LEFT JOIN pgqueue_queues q ON q.namespace = :namespace AND q.queue = :queue
), locked AS (
    SELECT j.id
    FROM pgqueue_jobs j
    WHERE j.namespace = :namespace
      AND j.queue = :queue
      AND j.state = 'pending'
      AND j.group_id IS NULL
      AND j.run_at <= (SELECT now FROM clock)
      -- The same bound on the index's sort_key (epoch µs of run_at; negative for
      -- LIFO jobs, which the line above filters): checked in the claim index, so
      -- delayed jobs of a higher priority are passed over without a heap visit.
      AND j.sort_key <= pgqueue_epoch_us((SELECT now FROM clock))
      AND (j.expires_at IS NULL OR j.expires_at > (SELECT now FROM clock))
      AND (SELECT live FROM session)
      AND NOT (SELECT paused OR plan_needed FROM settings)
    ORDER BY j.priority DESC, j.sort_key, j.id
    LIMIT :count
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE pgqueue_jobs j
    SET state = 'active',
        fence = j.fence + 1,
        lease_token = pgqueue_lease_token(j.fence + 1, j.token_salt),
        lease_owner = :owner,
        lease_broker = :broker_id,
        lease_session = :session_id::uuid,
        started_at = statement_timestamp(),
        lease_until = pgqueue_lease_until(statement_timestamp(), s.lease_ms, s.grace_ms,
                                          j.timeout_ms, j.stall_timeout_ms)
    FROM locked, settings s
    WHERE j.namespace = :namespace AND j.id = locked.id
    RETURNING j.*
), wanted AS (
    -- Who wants this claim's events: the jobs' own (a broker with a subscriber of
    -- the queue or of every queue, a webhook of job.started: migration 0027), else
    -- one tally row (a broker server counting the claims, queue '*': migration
    -- 0029).  The empty guard read FOR KEY SHARE holds its ROW SHARE lock from
    -- before this statement's snapshot to the commit: what a registration
    -- (interest_hold, then interest_wait) waits out.
    SELECT EXISTS (SELECT 1 FROM pgqueue_event_interest i
                   WHERE i.namespace = :namespace AND i.queue IN (:queue, ''))
           OR EXISTS (SELECT 1 FROM pgqueue_webhooks w
                      WHERE w.namespace = :namespace AND w.enabled
                        AND 'job.started' = ANY (w.events)
                        AND (w.queue IS NULL OR w.queue = :queue)) AS events,
           EXISTS (SELECT 1 FROM pgqueue_event_interest i
                   WHERE i.namespace = :namespace AND i.queue = '*') AS tally
    WHERE NOT EXISTS (SELECT 1 FROM pgqueue_claim_guard FOR KEY SHARE)
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, c.queue, c.id, 'active',
           jsonb_build_object('attempt', c.attempts + 1, 'broker', :broker_id::text)
    FROM claimed c
    WHERE (SELECT w.events FROM wanted w)
), tally AS (
    -- The claims' count, one row per statement, when their events are not written.
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, :queue, NULL, 'claimed', json_build_object('count', n.count)
    FROM (SELECT count(*) AS count FROM claimed) n, wanted w
    WHERE n.count > 0 AND w.tally AND NOT w.events
)
SELECT s.live AS session_live, NOT st.paused AND st.plan_needed AS plan_needed, c.*
FROM session s
CROSS JOIN settings st
LEFT JOIN claimed c ON true
ORDER BY c.priority DESC, c.sort_key, c.id

-- name: job_claim_planned
-- The claim of a queue with a limit or grouped jobs, in one round trip: the
-- function pgqueue_claim_planned (migration 0011) takes the queue row FOR
-- UPDATE, refreshes the rate window, counts active jobs on a fresh snapshot,
-- claims ungrouped jobs first, then grouped jobs round robin (one per group
-- per round, least recently served group first) within each group's pause,
-- deadline, concurrency and rate budget, and advances the groups' turns.
-- :namespace, :queue, :count, :owner, :broker_id, :session_id, :lease_ms,
-- :default_lease_ms as for job_claim_batch; :group_concurrency, :group_max,
-- :group_duration_ms are the puller's defaults for groups without limits of
-- their own (PULL's group field; NULL: none).
-- Returns session_live, retry_ms (when nothing was claimed because of a
-- rate window or deadline: the ms until it reopens), then the job's columns.
SELECT p.session_live, p.retry_ms, (p.job).*
FROM pgqueue_claim_planned(:namespace, :queue, :count, :owner, :broker_id,
                           :session_id::uuid, :lease_ms::bigint, :default_lease_ms::bigint,
                           :group_concurrency::integer, :group_max::integer,
                           :group_duration_ms::integer) AS p
