-- fragment: job_rows_unnested
-- The rows of job_insert_batch / job_insert_fresh (a CTE `dated`): the arrays unnested,
-- a NULL array replaced by its batch-wide scalar.
WITH input AS (
    SELECT *
    FROM unnest(:ids::text[], :queue::text[], :name::text[], :data::json[], :priority::int[],
                :lifo::bool[], :delay_ms::bigint[], :max_attempts::int[], :backoff_type::text[],
                :backoff_ms::bigint[], :backoff_max_ms::bigint[], :timeout_ms::bigint[],
                :ttl_ms::bigint[], :stall_timeout_ms::bigint[], :remove_on_complete::bool[],
                :remove_on_fail::bool[], :custom_id::text[], :unique_key::text[],
                :unique_ttl_ms::bigint[], :group_id::text[], :parent_id::text[],
                :parent_queue::text[], :pending_deps::int[], :has_dependents::bool[],
                :opts::jsonb[], :created_at_ms::float8[])
         WITH ORDINALITY AS t(id, queue, name, data, priority, lifo, delay_ms, max_attempts,
                              backoff_type, backoff_ms, backoff_max_ms, timeout_ms, ttl_ms,
                              stall_timeout_ms, remove_on_complete, remove_on_fail, custom_id,
                              unique_key, unique_ttl_ms, group_id, parent_id, parent_queue,
                              pending_deps, has_dependents, opts, created_at_ms, ord)
), stamped AS (
    SELECT i.id, i.ord,
           coalesce(i.queue, :queue_batch::text) AS queue,
           coalesce(i.name, :name_batch::text) AS name,
           coalesce(i.data, :data_batch::json) AS data,
           coalesce(i.priority, :priority_batch::int) AS priority,
           coalesce(i.lifo, :lifo_batch::bool) AS lifo,
           coalesce(i.delay_ms, :delay_ms_batch::bigint) AS delay_ms,
           coalesce(i.max_attempts, :max_attempts_batch::int) AS max_attempts,
           coalesce(i.backoff_type, :backoff_type_batch::text) AS backoff_type,
           coalesce(i.backoff_ms, :backoff_ms_batch::bigint) AS backoff_ms,
           coalesce(i.backoff_max_ms, :backoff_max_ms_batch::bigint) AS backoff_max_ms,
           coalesce(i.timeout_ms, :timeout_ms_batch::bigint) AS timeout_ms,
           coalesce(i.ttl_ms, :ttl_ms_batch::bigint) AS ttl_ms,
           coalesce(i.stall_timeout_ms, :stall_timeout_ms_batch::bigint) AS stall_timeout_ms,
           coalesce(i.remove_on_complete, :remove_on_complete_batch::bool) AS remove_on_complete,
           coalesce(i.remove_on_fail, :remove_on_fail_batch::bool) AS remove_on_fail,
           coalesce(i.custom_id, :custom_id_batch::text) AS custom_id,
           coalesce(i.unique_key, :unique_key_batch::text) AS unique_key,
           coalesce(i.unique_ttl_ms, :unique_ttl_ms_batch::bigint) AS unique_ttl_ms,
           coalesce(i.group_id, :group_id_batch::text) AS group_id,
           coalesce(i.parent_id, :parent_id_batch::text) AS parent_id,
           coalesce(i.parent_queue, :parent_queue_batch::text) AS parent_queue,
           coalesce(i.pending_deps, :pending_deps_batch::int) AS pending_deps,
           coalesce(i.has_dependents, :has_dependents_batch::bool) AS has_dependents,
           coalesce(i.opts, :opts_batch::jsonb) AS opts,
           coalesce(i.created_at_ms, :created_at_ms_batch::float8) AS created_at_ms
    FROM input i
), dated AS (
    SELECT s.*,
           coalesce(to_timestamp(s.created_at_ms / 1000.0), statement_timestamp()) AS created_at
    FROM stamped s
)

-- fragment: job_row_single
-- The one row of job_insert_one (a CTE `dated`, the shape of job_rows_unnested's): each
-- column a scalar parameter.
WITH dated AS (
    SELECT :id::text AS id, 1::bigint AS ord, :queue::text AS queue, :name::text AS name,
           :data::json AS data, :priority::int AS priority, :lifo::bool AS lifo,
           :delay_ms::bigint AS delay_ms, :max_attempts::int AS max_attempts,
           :backoff_type::text AS backoff_type, :backoff_ms::bigint AS backoff_ms,
           :backoff_max_ms::bigint AS backoff_max_ms, :timeout_ms::bigint AS timeout_ms,
           :ttl_ms::bigint AS ttl_ms, :stall_timeout_ms::bigint AS stall_timeout_ms,
           :remove_on_complete::bool AS remove_on_complete,
           :remove_on_fail::bool AS remove_on_fail, :custom_id::text AS custom_id,
           :unique_key::text AS unique_key, :unique_ttl_ms::bigint AS unique_ttl_ms,
           :group_id::text AS group_id, :parent_id::text AS parent_id,
           :parent_queue::text AS parent_queue, :pending_deps::int AS pending_deps,
           :has_dependents::bool AS has_dependents, :opts::jsonb AS opts,
           coalesce(to_timestamp(:created_at_ms::float8 / 1000.0), statement_timestamp())
               AS created_at
)

-- fragment: job_rows_uniform
-- The rows of job_insert_uniform (a CTE `dated`, the shape of job_rows_unnested's): only
-- the ids and the data unnested, every other column the batch-wide scalar.  The ids come
-- as one text joined by commas (fresh UUIDv7s, which hold none) and the data as one JSON
-- array of the jobs' texts, whose elements json_array_elements gives back as they were
-- written: two parameters of one value each, where two arrays of 1,000 cost the client
-- an encoding step per element (docs/performance.md).
WITH dated AS (
    SELECT t.id, t.ord, :queue_batch::text AS queue, :name_batch::text AS name, t.data,
           :priority_batch::int AS priority, :lifo_batch::bool AS lifo,
           :delay_ms_batch::bigint AS delay_ms, :max_attempts_batch::int AS max_attempts,
           :backoff_type_batch::text AS backoff_type, :backoff_ms_batch::bigint AS backoff_ms,
           :backoff_max_ms_batch::bigint AS backoff_max_ms,
           :timeout_ms_batch::bigint AS timeout_ms, :ttl_ms_batch::bigint AS ttl_ms,
           :stall_timeout_ms_batch::bigint AS stall_timeout_ms,
           :remove_on_complete_batch::bool AS remove_on_complete,
           :remove_on_fail_batch::bool AS remove_on_fail, :custom_id_batch::text AS custom_id,
           :unique_key_batch::text AS unique_key,
           :unique_ttl_ms_batch::bigint AS unique_ttl_ms, :group_id_batch::text AS group_id,
           :parent_id_batch::text AS parent_id, :parent_queue_batch::text AS parent_queue,
           :pending_deps_batch::int AS pending_deps,
           :has_dependents_batch::bool AS has_dependents, :opts_batch::jsonb AS opts,
           coalesce(to_timestamp(:created_at_ms_batch::float8 / 1000.0), statement_timestamp())
               AS created_at
    FROM ROWS FROM (unnest(string_to_array(:ids::text, ',')), json_array_elements(:data::json))
         WITH ORDINALITY AS t(id, data, ord)
)

-- fragment: job_rows_inserted
-- The jobs insert of the rows `dated` (job_rows_unnested, job_row_single); {conflict}:
-- its conflict clause.
, inserted AS (
    INSERT INTO pgqueue_jobs (
        namespace, id, queue, name, data, state, priority, lifo, lifo_seq, run_at,
        created_at, expires_at, max_attempts, backoff_type, backoff_ms, backoff_max_ms,
        timeout_ms, ttl_ms, stall_timeout_ms, remove_on_complete, remove_on_fail,
        custom_id, unique_key, unique_expires_at, group_id, parent_id, parent_queue,
        pending_deps, has_dependents, opts)
    SELECT :namespace, s.id, s.queue, s.name, s.data,
           CASE WHEN s.pending_deps > 0 THEN 'waiting-children' ELSE 'pending' END,
           s.priority, s.lifo,
           CASE WHEN s.lifo THEN nextval('pgqueue_lifo_seq') END,
           statement_timestamp() + s.delay_ms * interval '1 millisecond',
           s.created_at,
           statement_timestamp() + s.ttl_ms * interval '1 millisecond',
           s.max_attempts, s.backoff_type, s.backoff_ms, s.backoff_max_ms,
           s.timeout_ms, s.ttl_ms, s.stall_timeout_ms, s.remove_on_complete,
           s.remove_on_fail, s.custom_id, s.unique_key,
           statement_timestamp() + s.unique_ttl_ms * interval '1 millisecond',
           s.group_id, s.parent_id, s.parent_queue, s.pending_deps, s.has_dependents,
           s.opts
    FROM dated s
    ORDER BY s.ord
    {conflict}
    RETURNING id, queue, name, state, run_at, priority
)

-- fragment: job_rows_registered
-- The queue registry rows of the jobs `inserted` (job_rows_inserted).
, registered AS (
    INSERT INTO pgqueue_queues (namespace, queue)
    SELECT DISTINCT :namespace, queue FROM inserted
    ON CONFLICT DO NOTHING
)

-- fragment: job_rows_events
-- The 'pushed' events of the jobs `inserted` (job_rows_inserted) and their id range for
-- the hint; returns id, queue, hint_first, hint_last.
, events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, n.queue, n.id, 'pushed',
           jsonb_build_object(
               'name', n.name,
               'state', CASE WHEN n.state = 'waiting-children' THEN 'waiting-children'
                             WHEN n.run_at > statement_timestamp() THEN 'delayed'
                             WHEN n.priority > 0 THEN 'prioritized'
                             ELSE 'waiting' END,
               'delay', greatest(0, (extract(epoch FROM n.run_at - statement_timestamp())
                                     * 1000)::bigint))
    FROM inserted n
    RETURNING id, queue
), hint AS (
    -- include: event_range
)

-- fragment: job_rows_returned
-- What an insert returns (after job_rows_events): id, queue, hint_first, hint_last.
SELECT n.id, n.queue, h.hint_first, h.hint_last
FROM inserted n, hint h

-- fragment: job_rows_uniform_events
-- The 'pushed' events of the jobs `inserted` by job_insert_uniform, whose payload is the
-- same for every job of the batch (job_rows_events' payload of the batch-wide columns:
-- run_at - statement_timestamp() is the delay), built once; returns one row: jobs (how
-- many were inserted), hint_first, hint_last.  The payload's subquery is kept apart
-- (OFFSET 0: not pulled up into the insert's rows) and cast to the column's json there,
-- so the object is built and printed once per statement, not once per job (the same
-- text: job_rows_events' jsonb printed as json; docs/performance.md).
, events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, n.queue, n.id, 'pushed', p.payload
    FROM inserted n,
         (SELECT jsonb_build_object(
                     'name', :name_batch::text,
                     'state', CASE WHEN :pending_deps_batch::int > 0 THEN 'waiting-children'
                                   WHEN :delay_ms_batch::bigint > 0 THEN 'delayed'
                                   WHEN :priority_batch::int > 0 THEN 'prioritized'
                                   ELSE 'waiting' END,
                     'delay', greatest(0, :delay_ms_batch::bigint))::json AS payload
          OFFSET 0) p
    RETURNING id
)
SELECT count(*) AS jobs, min(e.id) AS hint_first, max(e.id) AS hint_last FROM events e

-- fragment: job_row_returned_notified
-- job_rows_returned for the one job of job_insert_one, with its NOTIFY hint in its
-- transaction (delivered at the commit): the payload of
-- pgqueue.manager.notifier.hint_payload for one job of one queue, plus the sender
-- ({sender}, the parameter that holds the notifier's instance id), whose own
-- process woke its claims already.  Only for a lone push (Notifier.begin_write): the
-- cluster-wide notification lock is then held through the commit's WAL flush.
SELECT n.id, n.queue, h.hint_first, h.hint_last,
       pg_notify('pgqueue_events', json_build_object(
           'ns', :namespace::text, 'a', h.hint_first, 'b', h.hint_last,
           'q', json_build_array(n.queue), 'n', 1, 's', {sender}::text)::text) AS notified
FROM inserted n, hint h

-- name: job_insert_batch
-- Admit a batch of jobs in one statement, with their 'pushed' outbox events,
-- the queue registry rows and their id range for the hint (event_range).  Rows whose id (custom id) or
-- live unique key already exists are skipped (ON CONFLICT DO NOTHING); the
-- caller resolves them. :namespace, :ids (text[]). Every other column is given twice:
-- an array aligned with the ids and a scalar (the same name + _batch) used when the
-- array is NULL — a column whose value is the same for the whole batch (most are, with
-- default options) is sent once, not once per job. The arrays, in order: :queue,
-- :name, :data, :priority, :lifo, :delay_ms, :max_attempts, :backoff_type,
-- :backoff_ms, :backoff_max_ms, :timeout_ms, :ttl_ms, :stall_timeout_ms,
-- :remove_on_complete, :remove_on_fail, :custom_id, :unique_key, :unique_ttl_ms,
-- :group_id, :parent_id, :parent_queue, :pending_deps, :has_dependents, :opts,
-- :created_at_ms (created_at_ms NULL = now; the client's clock, shown as createdAt
-- only: the TTL deadline counts from the database clock). The scalars: :queue_batch,
-- :name_batch, :data_batch, :priority_batch, :lifo_batch, :delay_ms_batch,
-- :max_attempts_batch, :backoff_type_batch, :backoff_ms_batch, :backoff_max_ms_batch,
-- :timeout_ms_batch, :ttl_ms_batch, :stall_timeout_ms_batch,
-- :remove_on_complete_batch, :remove_on_fail_batch, :custom_id_batch,
-- :unique_key_batch, :unique_ttl_ms_batch, :group_id_batch, :parent_id_batch,
-- :parent_queue_batch, :pending_deps_batch, :has_dependents_batch, :opts_batch,
-- :created_at_ms_batch.
-- include: job_rows_unnested
-- include: job_rows_inserted(conflict=ON CONFLICT DO NOTHING)
-- include: job_rows_registered
-- include: job_rows_events
-- include: job_rows_returned

-- name: job_insert_fresh
-- job_insert_batch for jobs whose ids are fresh UUIDv7s and that carry no unique key
-- (pgqueue.manager.admission: a plain push): no ON CONFLICT, whose speculative insertion
-- wrote 200-500 WAL bytes more per job (docs/performance.md); a collision, which fresh
-- ids never make, would fail the statement with a unique violation instead.
-- Parameters as job_insert_batch: :namespace, :ids, :queue, :name, :data, :priority,
-- :lifo, :delay_ms, :max_attempts, :backoff_type, :backoff_ms, :backoff_max_ms,
-- :timeout_ms, :ttl_ms, :stall_timeout_ms, :remove_on_complete, :remove_on_fail,
-- :custom_id, :unique_key, :unique_ttl_ms, :group_id, :parent_id, :parent_queue,
-- :pending_deps, :has_dependents, :opts, :created_at_ms; :queue_batch, :name_batch,
-- :data_batch, :priority_batch, :lifo_batch, :delay_ms_batch, :max_attempts_batch,
-- :backoff_type_batch, :backoff_ms_batch, :backoff_max_ms_batch, :timeout_ms_batch,
-- :ttl_ms_batch, :stall_timeout_ms_batch, :remove_on_complete_batch,
-- :remove_on_fail_batch, :custom_id_batch, :unique_key_batch, :unique_ttl_ms_batch,
-- :group_id_batch, :parent_id_batch, :parent_queue_batch, :pending_deps_batch,
-- :has_dependents_batch, :opts_batch, :created_at_ms_batch.
-- include: job_rows_unnested
-- include: job_rows_inserted(conflict=)
-- include: job_rows_registered
-- include: job_rows_events
-- include: job_rows_returned

-- name: job_insert_uniform
-- job_insert_fresh for a batch whose jobs differ only in their id and data (a bulk push
-- of jobs with the same name and options: pgqueue.manager.admission): two columns
-- unnested instead of 26, the events' payload built once, and one row back (jobs,
-- hint_first, hint_last) instead of one per job (docs/performance.md).  :namespace,
-- :ids (text: the fresh ids joined by ','), :data (json: an array of the jobs' data, in
-- the ids' order); the scalars of job_insert_fresh: :queue_batch, :name_batch,
-- :priority_batch, :lifo_batch, :delay_ms_batch, :max_attempts_batch,
-- :backoff_type_batch, :backoff_ms_batch, :backoff_max_ms_batch, :timeout_ms_batch,
-- :ttl_ms_batch, :stall_timeout_ms_batch, :remove_on_complete_batch,
-- :remove_on_fail_batch, :custom_id_batch, :unique_key_batch, :unique_ttl_ms_batch,
-- :group_id_batch, :parent_id_batch, :parent_queue_batch, :pending_deps_batch,
-- :has_dependents_batch, :opts_batch, :created_at_ms_batch.
-- include: job_rows_uniform
-- include: job_rows_inserted(conflict=)
-- include: job_rows_registered
-- include: job_rows_uniform_events

-- name: job_insert_one
-- job_insert_fresh for one job (a sequential push), each column a scalar parameter: no
-- arrays to unnest (docs/performance.md).  :namespace, :id, :queue, :name, :data,
-- :priority, :lifo, :delay_ms, :max_attempts, :backoff_type, :backoff_ms,
-- :backoff_max_ms, :timeout_ms, :ttl_ms, :stall_timeout_ms, :remove_on_complete,
-- :remove_on_fail, :custom_id, :unique_key, :unique_ttl_ms, :group_id, :parent_id,
-- :parent_queue, :pending_deps, :has_dependents, :opts, :created_at_ms.
-- include: job_row_single
-- include: job_rows_inserted(conflict=)
-- include: job_rows_registered
-- include: job_rows_events
-- include: job_rows_returned

-- name: job_insert_one_known
-- job_insert_one into a queue this process registered (pgqueue.manager.registry): no
-- queue registry row written.  Parameters as job_insert_one: :namespace, :id, :queue,
-- :name, :data, :priority, :lifo, :delay_ms, :max_attempts, :backoff_type, :backoff_ms,
-- :backoff_max_ms, :timeout_ms, :ttl_ms, :stall_timeout_ms, :remove_on_complete,
-- :remove_on_fail, :custom_id, :unique_key, :unique_ttl_ms, :group_id, :parent_id,
-- :parent_queue, :pending_deps, :has_dependents, :opts, :created_at_ms.
-- include: job_row_single
-- include: job_rows_inserted(conflict=)
-- include: job_rows_events
-- include: job_rows_returned

-- name: job_insert_one_notify
-- job_insert_one with its NOTIFY hint in the transaction (a lone push: no other push of
-- this process in flight, see pgqueue.manager.notifier.Notifier.begin_write).
-- Parameters as job_insert_one, then the sender: :namespace, :id, :queue, :name, :data,
-- :priority, :lifo, :delay_ms, :max_attempts, :backoff_type, :backoff_ms,
-- :backoff_max_ms, :timeout_ms, :ttl_ms, :stall_timeout_ms, :remove_on_complete,
-- :remove_on_fail, :custom_id, :unique_key, :unique_ttl_ms, :group_id, :parent_id,
-- :parent_queue, :pending_deps, :has_dependents, :opts, :created_at_ms, :sender.
-- include: job_row_single
-- include: job_rows_inserted(conflict=)
-- include: job_rows_registered
-- include: job_rows_events
-- include: job_row_returned_notified(sender=:sender)

-- name: job_insert_one_known_notify
-- job_insert_one_known with its NOTIFY hint in the transaction (as
-- job_insert_one_notify).  Parameters as job_insert_one_notify: :namespace, :id, :queue,
-- :name, :data, :priority, :lifo, :delay_ms, :max_attempts, :backoff_type, :backoff_ms,
-- :backoff_max_ms, :timeout_ms, :ttl_ms, :stall_timeout_ms, :remove_on_complete,
-- :remove_on_fail, :custom_id, :unique_key, :unique_ttl_ms, :group_id, :parent_id,
-- :parent_queue, :pending_deps, :has_dependents, :opts, :created_at_ms, :sender.
-- include: job_row_single
-- include: job_rows_inserted(conflict=)
-- include: job_rows_events
-- include: job_row_returned_notified(sender=:sender)

-- name: job_retire_finished_generations
-- Parameters, in order: :namespace, :custom_ids.
-- Custom ids :custom_ids that name finished jobs.  A job still retained (completed or
-- failed, not removed) keeps its id, and so does the hidden completion proof
-- of a removed child whose parent is still live (the parent reads its
-- result); every other proof is deleted, so that the id starts a new
-- generation.  The rows read are locked.  :namespace.  Returns the ids kept.
WITH finished AS (
    SELECT f.id, f.removed,
           (f.state = 'completed' AND f.parent_id IS NOT NULL
            AND EXISTS (SELECT 1 FROM pgqueue_jobs p
                        WHERE p.namespace = :namespace AND p.id = f.parent_id)) AS needed
    FROM pgqueue_finished f
    WHERE f.namespace = :namespace AND f.id = ANY(:custom_ids::text[])
    FOR UPDATE OF f
), retired AS (
    DELETE FROM pgqueue_finished f
    USING finished r
    WHERE f.namespace = :namespace AND f.id = r.id AND r.removed AND NOT r.needed
    RETURNING f.id
), dlq AS (
    DELETE FROM pgqueue_dlq d USING retired r WHERE d.namespace = :namespace AND d.job_id = r.id
)
SELECT r.id FROM finished r WHERE NOT r.removed OR r.needed

-- name: job_finished_ids
-- Parameters, in order: :namespace, :inserted_custom_ids.
-- Which of the ids :inserted_custom_ids name a finished row (any state, removed or not).  After
-- an insert of custom ids: a row seen here finished in a transaction that
-- committed while the insert waited.  :namespace.
SELECT id FROM pgqueue_finished WHERE namespace = :namespace AND id = ANY(:inserted_custom_ids::text[])

-- name: job_unique_keys_release_expired
-- Free live unique keys whose dedup TTL has passed at :now (NULL: the database
-- clock; a test passes a later instant to move time), so a new job may take
-- them.  :namespace, :queues, :unique_keys (aligned).
UPDATE pgqueue_jobs j
SET unique_key = NULL, unique_expires_at = NULL
FROM unnest(:queues::text[], :unique_keys::text[]) AS k(queue, unique_key)
WHERE j.namespace = :namespace AND j.queue = k.queue AND j.unique_key = k.unique_key
  AND j.unique_expires_at <= coalesce(:now::timestamptz, statement_timestamp())

-- name: job_unique_keys_held_finished
-- Finished jobs that still hold a unique key: one pushed with a dedup TTL
-- keeps it until the deadline, also after it finished (BullMQ's throttle
-- mode).  The holders are locked (an extend or a replace of the same key
-- waits).  :namespace, :queues, :unique_keys (aligned), :now the clock the
-- deadline is judged at (NULL: the database clock).  Returns ord (1-based
-- position in the arrays) and the holder's id.
SELECT k.ord, h.id
FROM unnest(:queues::text[], :unique_keys::text[]) WITH ORDINALITY AS k(queue, unique_key, ord)
CROSS JOIN LATERAL (
    SELECT f.id FROM pgqueue_finished f
    WHERE f.namespace = :namespace AND f.queue = k.queue AND f.unique_key = k.unique_key
      AND f.unique_expires_at > coalesce(:now::timestamptz, statement_timestamp())
    ORDER BY f.unique_expires_at DESC
    LIMIT 1
    FOR UPDATE
) AS h

-- name: job_unique_key_finished_extend
-- Parameters, in order: :namespace, :job_id, :unique_ttl_ms.
-- Dedup 'extend' of a key a finished job holds: its deadline moves to now +
-- :unique_ttl_ms.  :namespace, :job_id the holder's id.
UPDATE pgqueue_finished
SET unique_expires_at = statement_timestamp() + :unique_ttl_ms::bigint * interval '1 millisecond'
WHERE namespace = :namespace AND id = :job_id

-- name: job_unique_key_finished_release
-- Parameters, in order: :namespace, :released.
-- Finished jobs :released give up the unique key they still hold (a dedup 'replace',
-- RemoveDeduplicationKey).  :namespace.
UPDATE pgqueue_finished
SET unique_expires_at = NULL
WHERE namespace = :namespace AND id = ANY(:released::text[])

-- name: job_find_live_owners
-- For skipped admissions: the live job holding each id or (queue, unique key).
-- :namespace, :ids, :queues, :unique_keys (aligned).  Returns ord, id, by.
SELECT i.ord, o.id, o.by
FROM unnest(:ids::text[], :queues::text[], :unique_keys::text[]) WITH ORDINALITY AS i(id, queue, unique_key, ord)
CROSS JOIN LATERAL (
    SELECT j.id, 'id' AS by FROM pgqueue_jobs j WHERE j.namespace = :namespace AND j.id = i.id
    UNION ALL
    SELECT j.id, 'unique_key' FROM pgqueue_jobs j
    WHERE i.unique_key IS NOT NULL AND j.namespace = :namespace AND j.queue = i.queue
      AND j.unique_key = i.unique_key
    LIMIT 1
) AS o

-- name: job_unique_key_extend
-- Dedup 'extend': refresh the TTL of the live key's owner.  :namespace,
-- :queue, :unique_key, :unique_ttl_ms.  Returns the owner's id.
UPDATE pgqueue_jobs
SET unique_expires_at = statement_timestamp() + :unique_ttl_ms::bigint * interval '1 millisecond'
WHERE namespace = :namespace AND queue = :queue AND unique_key = :unique_key
RETURNING id

-- name: job_unique_key_take_over
-- Dedup 'replace': an active owner keeps running but gives up its key; a
-- pending owner without dependents is removed.  :namespace, :queue,
-- :unique_key.  Returns the owner's id, state, whether it was removed.
WITH owner AS (
    SELECT id, state, has_dependents FROM pgqueue_jobs
    WHERE namespace = :namespace AND queue = :queue AND unique_key = :unique_key
    FOR UPDATE
), released AS (
    UPDATE pgqueue_jobs j SET unique_key = NULL, unique_expires_at = NULL
    FROM owner o
    WHERE j.namespace = :namespace AND j.id = o.id AND o.state = 'active'
    RETURNING j.id
), removed AS (
    DELETE FROM pgqueue_jobs j
    USING owner o
    WHERE j.namespace = :namespace AND j.id = o.id AND o.state <> 'active' AND NOT o.has_dependents
    RETURNING j.id, j.queue
), events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, r.queue, r.id, 'removed', '{"reason": "replaced"}'::jsonb FROM removed r
)
SELECT o.id, o.state, o.has_dependents,
       EXISTS (SELECT 1 FROM removed) AS removed
FROM owner o

-- name: job_flag_dependents
-- Mark live jobs as having dependents (locks them, so their completion sees
-- the edge).  :namespace, :ids.  Returns the ids that are live.
UPDATE pgqueue_jobs
SET has_dependents = true
WHERE namespace = :namespace AND id = ANY(:ids::text[])
RETURNING id, state

-- name: job_completed_ids
-- Parameters, in order: :namespace, :ids.
-- Which of :ids have a completion on record (state completed in pgqueue_finished).
SELECT id FROM pgqueue_finished
WHERE namespace = :namespace AND id = ANY(:ids::text[]) AND state = 'completed'

-- name: dependency_insert_many
-- Parameters, in order: :namespace, :job_ids, :depends_on.
-- Dependency edges: job :job_ids[i] waits for :depends_on[i].  :namespace.
INSERT INTO pgqueue_dependencies (namespace, job_id, depends_on)
SELECT :namespace, d.job_id, d.depends_on
FROM unnest(:job_ids::text[], :depends_on::text[]) AS d(job_id, depends_on)
ON CONFLICT DO NOTHING

-- name: job_add_pending_deps
-- Parameters, in order: :namespace, :ids, :counts.
-- Add :counts[i] (possibly negative) unresolved dependencies to live job :ids[i]: a
-- pending job starts waiting for children, a waiting one left with none is
-- released.  :namespace.
UPDATE pgqueue_jobs j
SET pending_deps = greatest(j.pending_deps + d.n, 0),
    state = CASE WHEN j.state = 'pending' AND j.pending_deps + d.n > 0 THEN 'waiting-children'
                 WHEN j.state = 'waiting-children' AND j.pending_deps + d.n <= 0 THEN 'pending'
                 ELSE j.state END
FROM unnest(:ids::text[], :counts::int[]) AS d(id, n)
WHERE j.namespace = :namespace AND j.id = d.id
RETURNING j.id, j.state

-- name: event_insert_many
-- Write outbox events and one NOTIFY hint.  :namespace, :queues, :job_ids,
-- :types, :payloads (aligned).
WITH events AS (
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    SELECT :namespace, e.queue, e.job_id, e.type, e.payload
    FROM unnest(:queues::text[], :job_ids::text[], :types::text[], :payloads::jsonb[]) AS e(queue, job_id, type, payload)
    RETURNING id, queue
)
-- include: notify_hint(namespace=:namespace)

-- name: job_attach_child
-- Parameters, in order: :namespace, :child_id, :parent_id.
-- Legacy child-first flows (UpdateParent): make :parent_id the parent of :child_id.  A live
-- child becomes a dependency of the parent (which waits for it); a finished
-- child only records its parent (its result counts among the parent's
-- children values).  :namespace.  Returns where the child was found.
WITH parent AS (
    SELECT id, queue FROM pgqueue_jobs
    WHERE namespace = :namespace AND id = :parent_id
    FOR UPDATE
), live_child AS (
    UPDATE pgqueue_jobs c
    SET parent_id = p.id, parent_queue = p.queue, has_dependents = true
    FROM parent p
    WHERE c.namespace = :namespace AND c.id = :child_id AND c.parent_id IS DISTINCT FROM p.id
    RETURNING c.id
), finished_child AS (
    UPDATE pgqueue_finished c
    SET parent_id = p.id, parent_queue = p.queue
    FROM parent p
    WHERE c.namespace = :namespace AND c.id = :child_id
    RETURNING c.id, c.state
), edge AS (
    INSERT INTO pgqueue_dependencies (namespace, job_id, depends_on)
    SELECT :namespace, :parent_id, l.id FROM live_child l
    ON CONFLICT DO NOTHING
    RETURNING job_id
), waiting AS (
    UPDATE pgqueue_jobs j
    SET pending_deps = j.pending_deps + 1,
        state = CASE WHEN j.state = 'pending' THEN 'waiting-children' ELSE j.state END
    FROM edge e
    WHERE j.namespace = :namespace AND j.id = e.job_id
    RETURNING j.id
)
SELECT (SELECT count(*) FROM parent) AS parent_found,
       (SELECT count(*) FROM live_child) AS live,
       (SELECT count(*) FROM finished_child) AS finished,
       (SELECT count(*) FROM waiting) AS blocked
