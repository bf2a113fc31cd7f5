-- fragment: job_list_branch
-- One state's head of a job_list_page: the first :offset + :limit rows of {rows} in the
-- state {reported} (the condition {when}), by (created_at, id) {order}; skipped at
-- once when {reported} is not asked for in :states.
(SELECT '{src}' AS src, r.id, r.created_at
 FROM {rows} r
 WHERE r.namespace = :namespace AND r.queue = :queue AND {when}
   AND '{reported}' = ANY(:states::text[])
 ORDER BY r.created_at {order}, r.id {order}
 LIMIT :offset::bigint + :limit::bigint)

-- fragment: job_list_page
-- One page of a queue's jobs in the reported states :states, live and finished,
-- ordered by (created_at, id) {order} (ASC or DESC): each state reads its own
-- listing-index range (a branch whose state is not asked for is skipped at
-- once), then the page is cut from the merged heads.  :namespace, :queue,
-- :offset, :limit.
WITH page AS (
    SELECT u.src, u.id, u.created_at
    FROM (
    -- include: job_list_branch(order={order}, src=live, rows=pgqueue_jobs, reported=waiting, when=r.state = 'pending' AND r.run_at <= statement_timestamp() AND r.priority <= 0)
    UNION ALL
    -- include: job_list_branch(order={order}, src=live, rows=pgqueue_jobs, reported=prioritized, when=r.state = 'pending' AND r.run_at <= statement_timestamp() AND r.priority > 0)
    UNION ALL
    -- include: job_list_branch(order={order}, src=live, rows=pgqueue_jobs, reported=delayed, when=r.state = 'pending' AND r.run_at > statement_timestamp())
    UNION ALL
    -- include: job_list_branch(order={order}, src=live, rows=pgqueue_jobs, reported=active, when=r.state = 'active')
    UNION ALL
    -- include: job_list_branch(order={order}, src=live, rows=pgqueue_jobs, reported=waiting-children, when=r.state = 'waiting-children')
    UNION ALL
    -- include: job_list_branch(order={order}, src=finished, rows=pgqueue_finished, reported=completed, when=r.state = 'completed' AND NOT r.removed)
    UNION ALL
    -- include: job_list_branch(order={order}, src=finished, rows=pgqueue_finished, reported=failed, when=r.state = 'failed' AND NOT r.removed)
    ) AS u
    ORDER BY u.created_at {order}, u.id {order}
    OFFSET :offset::bigint
    LIMIT :limit::bigint
)
-- include: job_row_live
FROM page p
JOIN pgqueue_jobs j ON j.namespace = :namespace AND j.id = p.id
WHERE p.src = 'live'
UNION ALL
-- include: job_row_finished
FROM page p
JOIN pgqueue_finished f ON f.namespace = :namespace AND f.id = p.id
WHERE p.src = 'finished'
ORDER BY created_at {order}, id {order}

-- name: job_list_asc
-- job_list_page, oldest first.  :namespace, :queue, :states, :offset, :limit.
-- include: job_list_page(order=ASC)

-- name: job_list_desc
-- job_list_page, newest first.  :namespace, :queue, :states, :offset, :limit.
-- include: job_list_page(order=DESC)

-- name: job_count_pending
-- Pending jobs of a queue (waiting + prioritized + delayed).  :namespace, :queue.
SELECT count(*)::bigint AS n FROM pgqueue_jobs j
WHERE j.namespace = :namespace AND j.queue = :queue AND j.state = 'pending'

-- name: job_counts_per_priority
-- Pending jobs of a queue per priority.  :namespace, :queue.
SELECT j.priority, count(*)::bigint AS n FROM pgqueue_jobs j
WHERE j.namespace = :namespace AND j.queue = :queue AND j.state = 'pending'
GROUP BY j.priority
ORDER BY j.priority

-- name: queue_finished_per_minute
-- Parameters, in order: :namespace, :queue, :state, :window.
-- Finished jobs of a queue in one state per wall-clock minute, for the minutes that
-- have any, over the last :window minutes (a range scan of pgqueue_finished_listing_idx).
-- minutes_ago 0 is the current minute; now_minute_ms is its start (epoch ms).
-- :namespace, :queue, :state ('completed' or 'failed'), :window minutes.
SELECT ((extract(epoch FROM date_trunc('minute', statement_timestamp()))
         - extract(epoch FROM date_trunc('minute', f.finished_at))) / 60)::int AS minutes_ago,
       count(*)::bigint AS n,
       (extract(epoch FROM date_trunc('minute', statement_timestamp())) * 1000)::bigint
           AS now_minute_ms
FROM pgqueue_finished f
WHERE f.namespace = :namespace AND f.queue = :queue AND f.state = :state AND NOT f.removed
  AND f.finished_at >= date_trunc('minute', statement_timestamp())
                       - make_interval(mins => :window::int - 1)
GROUP BY 1, 3
ORDER BY 1

-- fragment: queue_skip_scan
-- The body of the recursive CTE {cte}(queue): the distinct queues of {table} in
-- :namespace, the next one each step along an index led by (namespace, queue),
-- then one NULL row that ends it.
(SELECT t.queue FROM {table} t WHERE t.namespace = :namespace ORDER BY t.queue LIMIT 1)
UNION ALL
SELECT (SELECT t.queue FROM {table} t
        WHERE t.namespace = :namespace AND t.queue > s.queue ORDER BY t.queue LIMIT 1)
FROM {cte} s
WHERE s.queue IS NOT NULL

-- name: queue_list
-- Every queue of a namespace: the registry plus any queue that holds jobs
-- (distinct queues read with a skip scan over the listing indexes).  :namespace.
WITH RECURSIVE live(queue) AS (
    -- include: queue_skip_scan(table=pgqueue_jobs, cte=live)
), done(queue) AS (
    -- include: queue_skip_scan(table=pgqueue_finished, cte=done)
)
SELECT q.queue FROM pgqueue_queues q WHERE q.namespace = :namespace
UNION
SELECT queue FROM live WHERE queue IS NOT NULL
UNION
SELECT queue FROM done WHERE queue IS NOT NULL
ORDER BY 1

-- name: job_wait_probe
-- Where a job stands for a waiter: 'live', 'completed' or 'failed' (a
-- completion hidden by removeOnComplete counts), its queue and result.
-- :namespace, :job_id.  No row: unknown.
SELECT 'live' AS state, j.queue, NULL::json AS result
FROM pgqueue_jobs j WHERE j.namespace = :namespace AND j.id = :job_id
UNION ALL
SELECT f.state, f.queue, f.result
FROM pgqueue_finished f WHERE f.namespace = :namespace AND f.id = :job_id
LIMIT 1
