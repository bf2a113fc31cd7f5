-- name: group_jobs_count
-- Parameters, in order: :namespace, :queue, :group_id.
-- Pending (waiting, prioritized, delayed) jobs of one group (:group_id), or of all
-- groups when :group_id is NULL.  :namespace, :queue.
SELECT count(*) AS count FROM pgqueue_jobs j
WHERE j.namespace = :namespace AND j.queue = :queue AND j.state = 'pending'
  AND j.group_id IS NOT NULL AND (:group_id::text IS NULL OR j.group_id = :group_id::text)

-- name: group_active_count
-- Parameters, in order: :namespace, :queue, :group_id.
-- Active jobs of group :group_id.  :namespace, :queue.
SELECT count(*) AS count FROM pgqueue_jobs j
WHERE j.namespace = :namespace AND j.queue = :queue AND j.group_id = :group_id AND j.state = 'active'

-- name: group_get
-- A group's state row (none: the group has no settings and was never served).
-- :namespace, :queue, :group_id group.  rate_ttl_ms: the ms until the group may
-- be claimed from again (its manual deadline, else its full rate window;
-- with :max_jobs maxJobs, a window with fewer than :max_jobs claims counts as open: 0), or
-- NULL when nothing holds it back.
SELECT g.paused, g.concurrency_limit, g.rate_limit, g.rate_duration_ms,
       CASE WHEN g.manual_rate_limit_until > statement_timestamp()
            THEN ceil(extract(epoch FROM g.manual_rate_limit_until - statement_timestamp()) * 1000)::bigint
            WHEN g.rate_window_started_at + g.rate_window_ms * interval '1 millisecond' > statement_timestamp()
            THEN CASE WHEN :max_jobs::integer IS NOT NULL AND g.rate_count < :max_jobs::integer THEN 0
                      ELSE ceil(extract(epoch FROM g.rate_window_started_at
                                + g.rate_window_ms * interval '1 millisecond'
                                - statement_timestamp()) * 1000)::bigint END
       END AS rate_ttl_ms
FROM pgqueue_groups g
WHERE g.namespace = :namespace AND g.queue = :queue AND g.group_id = :group_id

-- name: group_set_rate_limit
-- Parameters, in order: :namespace, :queue, :group_id, :max_jobs, :duration_ms.
-- Group :group_id's own rate limit: :max_jobs claims per :duration_ms (its window starts afresh).
-- :namespace, :queue.
INSERT INTO pgqueue_groups AS g (namespace, queue, group_id, rate_limit, rate_duration_ms)
VALUES (:namespace, :queue, :group_id, :max_jobs::integer, :duration_ms::integer)
ON CONFLICT (namespace, queue, group_id) DO UPDATE
SET rate_limit = EXCLUDED.rate_limit, rate_duration_ms = EXCLUDED.rate_duration_ms,
    rate_window_started_at = NULL, rate_window_ms = NULL, rate_count = 0

-- name: group_remove_rate_limit
-- Parameters, in order: :namespace, :queue, :group_id.
-- Remove group :group_id's own rate limit; returns a row when there was one.
-- :namespace, :queue.
UPDATE pgqueue_groups
SET rate_limit = NULL, rate_duration_ms = NULL,
    rate_window_started_at = NULL, rate_window_ms = NULL, rate_count = 0
WHERE namespace = :namespace AND queue = :queue AND group_id = :group_id AND rate_limit IS NOT NULL
RETURNING group_id

-- name: group_set_concurrency
-- Parameters, in order: :namespace, :queue, :group_id, :concurrency.
-- Group :group_id's own concurrency limit (:concurrency active jobs).  :namespace, :queue.
INSERT INTO pgqueue_groups AS g (namespace, queue, group_id, concurrency_limit)
VALUES (:namespace, :queue, :group_id, :concurrency::integer)
ON CONFLICT (namespace, queue, group_id) DO UPDATE
SET concurrency_limit = EXCLUDED.concurrency_limit

-- name: group_remove_concurrency
-- Parameters, in order: :namespace, :queue, :group_id.
-- Remove group :group_id's own concurrency limit; returns a row when there was one.
-- :namespace, :queue.
UPDATE pgqueue_groups SET concurrency_limit = NULL
WHERE namespace = :namespace AND queue = :queue AND group_id = :group_id AND concurrency_limit IS NOT NULL
RETURNING group_id

-- name: group_set_paused
-- Parameters, in order: :namespace, :queue, :group_id, :paused.
-- Pause (:paused true) or resume group :group_id for every broker; returns a row when
-- that changed it (long-polling claims see a resume at their next poll).
-- :namespace, :queue.
INSERT INTO pgqueue_groups AS g (namespace, queue, group_id, paused)
VALUES (:namespace, :queue, :group_id, :paused::boolean)
ON CONFLICT (namespace, queue, group_id) DO UPDATE SET paused = EXCLUDED.paused
WHERE g.paused IS DISTINCT FROM EXCLUDED.paused
RETURNING g.group_id

-- name: group_rate_limit_until
-- Parameters, in order: :namespace, :queue, :group_id, :duration_ms.
-- Hold group :group_id back for :duration_ms from now on the database clock (RateLimitGroup).
-- :namespace, :queue.
INSERT INTO pgqueue_groups AS g (namespace, queue, group_id, manual_rate_limit_until)
VALUES (:namespace, :queue, :group_id, statement_timestamp() + :duration_ms::bigint * interval '1 millisecond')
ON CONFLICT (namespace, queue, group_id) DO UPDATE
SET manual_rate_limit_until = EXCLUDED.manual_rate_limit_until
