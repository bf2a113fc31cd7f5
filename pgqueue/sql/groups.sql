-- name: group_jobs_count
-- Pending (waiting, prioritized, delayed) jobs of one group ($3), or of all
-- groups when $3 is NULL.  $1 namespace, $2 queue.
SELECT count(*) AS count FROM pgqueue_jobs j
WHERE j.namespace = $1 AND j.queue = $2 AND j.state = 'pending'
  AND j.group_id IS NOT NULL AND ($3::text IS NULL OR j.group_id = $3::text)

-- name: group_active_count
-- Active jobs of group $3.  $1 namespace, $2 queue.
SELECT count(*) AS count FROM pgqueue_jobs j
WHERE j.namespace = $1 AND j.queue = $2 AND j.group_id = $3 AND j.state = 'active'

-- name: group_get
-- A group's state row (none: the group has no settings and was never served).
-- $1 namespace, $2 queue, $3 group.  rate_ttl_ms: the ms until the group may
-- be claimed from again (its manual deadline, else its full rate window;
-- with $4 maxJobs, a window with fewer than $4 claims counts as open: 0), or
-- NULL when nothing holds it back.
SELECT g.paused, g.concurrency_limit, g.rate_limit, g.rate_duration_ms,
       CASE WHEN g.manual_rate_limit_until > statement_timestamp()
            THEN ceil(extract(epoch FROM g.manual_rate_limit_until - statement_timestamp()) * 1000)::bigint
            WHEN g.rate_window_started_at + g.rate_window_ms * interval '1 millisecond' > statement_timestamp()
            THEN CASE WHEN $4::integer IS NOT NULL AND g.rate_count < $4::integer THEN 0
                      ELSE ceil(extract(epoch FROM g.rate_window_started_at
                                + g.rate_window_ms * interval '1 millisecond'
                                - statement_timestamp()) * 1000)::bigint END
       END AS rate_ttl_ms
FROM pgqueue_groups g
WHERE g.namespace = $1 AND g.queue = $2 AND g.group_id = $3

-- name: group_set_rate_limit
-- Group $3's own rate limit: $4 claims per $5 ms (its window starts afresh).
-- $1 namespace, $2 queue.
INSERT INTO pgqueue_groups AS g (namespace, queue, group_id, rate_limit, rate_duration_ms)
VALUES ($1, $2, $3, $4::integer, $5::integer)
ON CONFLICT (namespace, queue, group_id) DO UPDATE
SET rate_limit = EXCLUDED.rate_limit, rate_duration_ms = EXCLUDED.rate_duration_ms,
    rate_window_started_at = NULL, rate_window_ms = NULL, rate_count = 0

-- name: group_remove_rate_limit
-- Remove group $3's own rate limit; returns a row when there was one.
-- $1 namespace, $2 queue.
UPDATE pgqueue_groups
SET rate_limit = NULL, rate_duration_ms = NULL,
    rate_window_started_at = NULL, rate_window_ms = NULL, rate_count = 0
WHERE namespace = $1 AND queue = $2 AND group_id = $3 AND rate_limit IS NOT NULL
RETURNING group_id

-- name: group_set_concurrency
-- Group $3's own concurrency limit ($4 active jobs).  $1 namespace, $2 queue.
INSERT INTO pgqueue_groups AS g (namespace, queue, group_id, concurrency_limit)
VALUES ($1, $2, $3, $4::integer)
ON CONFLICT (namespace, queue, group_id) DO UPDATE
SET concurrency_limit = EXCLUDED.concurrency_limit

-- name: group_remove_concurrency
-- Remove group $3's own concurrency limit; returns a row when there was one.
-- $1 namespace, $2 queue.
UPDATE pgqueue_groups SET concurrency_limit = NULL
WHERE namespace = $1 AND queue = $2 AND group_id = $3 AND concurrency_limit IS NOT NULL
RETURNING group_id

-- name: group_set_paused
-- Pause ($4 true) or resume group $3 for every broker; returns a row when
-- that changed it (long-polling claims see a resume at their next poll).
-- $1 namespace, $2 queue.
INSERT INTO pgqueue_groups AS g (namespace, queue, group_id, paused)
VALUES ($1, $2, $3, $4::boolean)
ON CONFLICT (namespace, queue, group_id) DO UPDATE SET paused = EXCLUDED.paused
WHERE g.paused IS DISTINCT FROM EXCLUDED.paused
RETURNING g.group_id

-- name: group_rate_limit_until
-- Hold group $3 back for $4 ms from now on the database clock (RateLimitGroup).
-- $1 namespace, $2 queue.
INSERT INTO pgqueue_groups AS g (namespace, queue, group_id, manual_rate_limit_until)
VALUES ($1, $2, $3, statement_timestamp() + $4::bigint * interval '1 millisecond')
ON CONFLICT (namespace, queue, group_id) DO UPDATE
SET manual_rate_limit_until = EXCLUDED.manual_rate_limit_until
