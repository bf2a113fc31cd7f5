"""``pgqueue.enqueue``: admit a job from SQL, in the caller's transaction.

Revision ID: 0020
Revises: 0022
Create Date: 2026-12-02

A trigger, or any language's transaction (``INSERT ... ; SELECT
pgqueue.enqueue(...)``), enqueues without the SDK: the job commits or rolls
back with the caller's writes.  ``pgqueue.enqueue(namespace, queue, name,
data json, opts jsonb)`` returns the job's id (the live or retained job's id
when ``job_id`` / ``unique_key`` name one); ``pgqueue.enqueue_bulk(namespace,
queue, jobs json)`` takes ``[{"name", "data", "opts"}, ...]`` and returns the
ids in order (a ``depends_on`` may name an earlier job of the array).

It follows the engine's admission (``manager/options.py`` for the checks and
their messages, ``manager/admission.py`` with ``sql/admission.sql`` for the
writes): the same options under their Python names (``job_id``,
``attempts``, ``depends_on``, ...), the custom-id generations, unique keys with
their dedup TTL (``reject``, ``extend``, ``replace``; ``deduplication`` and
``debounce_id`` too), removal counts, the ``pushed`` / ``duplicated`` /
``debounced`` outbox events and the NOTIFY hint.  ``tests/integration/test_sql_enqueue.py``
runs every admission case through both paths and compares the rows and
events: a change to one that the other does not follow fails there.  Options
it does not take (``repeat``, ``children_ids``) are refused naming the option.  ``data`` is kept as
the JSON text given (key order, numbers), as the engine keeps it.
"""

from __future__ import annotations

from alembic import op

revision = "0020"
down_revision = "0022"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE SCHEMA IF NOT EXISTS pgqueue;

CREATE FUNCTION pgqueue._uuid7() RETURNS text
LANGUAGE sql VOLATILE AS $f$
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
        FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid::text
$f$;

CREATE FUNCTION pgqueue._refuse(message text) RETURNS void
LANGUAGE plpgsql AS $f$
BEGIN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = message;
END
$f$;

CREATE FUNCTION pgqueue._js_length(t text) RETURNS int
LANGUAGE sql IMMUTABLE AS $f$
    SELECT char_length(t) + char_length(regexp_replace(t, '[^\U00010000-\U0010FFFF]', '', 'g'))
$f$;

CREATE FUNCTION pgqueue._int(opts jsonb, key text, lo numeric, hi numeric, fallback bigint)
RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE
    v jsonb := opts -> key;
    n numeric;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN fallback;
    END IF;
    IF jsonb_typeof(v) <> 'number' THEN
        PERFORM pgqueue._refuse(key || ' must be a number');
    END IF;
    n := v::text::numeric;
    IF n <> trunc(n) THEN
        PERFORM pgqueue._refuse(key || ' must be an integer');
    END IF;
    IF n < lo THEN
        PERFORM pgqueue._refuse(key || ' must be at least ' || lo::text);
    END IF;
    IF n > hi THEN
        PERFORM pgqueue._refuse(key || ' must be at most ' || hi::text);
    END IF;
    RETURN n::bigint;
END
$f$;

CREATE FUNCTION pgqueue._bool(opts jsonb, key text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE
    v jsonb := opts -> key;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN false;
    END IF;
    IF jsonb_typeof(v) <> 'boolean' THEN
        PERFORM pgqueue._refuse(key || ' must be a boolean');
    END IF;
    RETURN v::text::boolean;
END
$f$;

CREATE FUNCTION pgqueue._id(opts jsonb, key text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE
    v jsonb := opts -> key;
    t text;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v) <> 'string' THEN
        PERFORM pgqueue._refuse(key || ' must be a string');
    END IF;
    t := v #>> '{}';
    IF t = '' OR pgqueue._js_length(t) > 256 OR t ~ '[\x01-\x1f\x7f-\x9f]' THEN
        PERFORM pgqueue._refuse(
            key || ' must be a non-empty string of at most 256 printable characters');
    END IF;
    RETURN t;
END
$f$;

CREATE FUNCTION pgqueue._strings(opts jsonb, key text, lim int) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE
    v jsonb := opts -> key;
    item jsonb;
    out text[] := '{}';
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN out;
    END IF;
    IF jsonb_typeof(v) <> 'array' OR jsonb_array_length(v) > lim THEN
        PERFORM pgqueue._refuse(key || ' must be a list of at most ' || lim || ' strings');
    END IF;
    FOR item IN SELECT e FROM jsonb_array_elements(v) AS e LOOP
        IF jsonb_typeof(item) <> 'string' OR item #>> '{}' = ''
           OR pgqueue._js_length(item #>> '{}') > 256 THEN
            PERFORM pgqueue._refuse(key || ' must be a list of non-empty strings');
        END IF;
        out := out || (item #>> '{}');
    END LOOP;
    RETURN out;
END
$f$;

CREATE FUNCTION pgqueue._dedup(d jsonb, label text, OUT mode text, OUT ttl bigint)
LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE
    bad text;
BEGIN
    -- options._dedup: {ttl?, extend?, replace?} under ``label``.
    mode := 'reject';
    IF d IS NULL OR jsonb_typeof(d) = 'null' THEN
        RETURN;
    END IF;
    IF jsonb_typeof(d) <> 'object' THEN
        PERFORM pgqueue._refuse(label || ' must be a map {ttl?, extend?, replace?}');
    END IF;
    SELECT string_agg(k, ', ' ORDER BY k COLLATE "C") INTO bad FROM jsonb_object_keys(d) AS k
    WHERE k NOT IN ('ttl', 'extend', 'replace');
    IF bad IS NOT NULL THEN
        PERFORM pgqueue._refuse(label || ' has unknown keys: ' || bad);
    END IF;
    ttl := pgqueue._int(jsonb_build_object(label || '.ttl', d -> 'ttl'), label || '.ttl',
                        1, 31536000000, NULL);
    IF pgqueue._bool(jsonb_build_object(label || '.replace', d -> 'replace'), label || '.replace') THEN
        mode := 'replace';
        RETURN;
    END IF;
    IF pgqueue._bool(jsonb_build_object(label || '.extend', d -> 'extend'), label || '.extend') THEN
        IF ttl IS NULL THEN
            PERFORM pgqueue._refuse(label || ' extend needs a ttl');
        END IF;
        mode := 'extend';
    END IF;
END
$f$;

CREATE FUNCTION pgqueue._removal(v jsonb, label text, OUT at_once boolean, OUT keep jsonb)
LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE
    bad text;
    n bigint;
BEGIN
    -- options.removal_policy: true / false, a count to keep, or {age, count}.
    at_once := false;
    IF v IS NULL OR jsonb_typeof(v) = 'null' OR v = 'false'::jsonb THEN
        RETURN;
    END IF;
    IF v = 'true'::jsonb THEN
        at_once := true;
        RETURN;
    END IF;
    IF jsonb_typeof(v) = 'number' THEN
        n := pgqueue._int(jsonb_build_object(label, v), label, 0, 2147483647, NULL);
        IF n = 0 THEN
            at_once := true;
        ELSE
            keep := jsonb_build_object('count', n);
        END IF;
        RETURN;
    END IF;
    IF jsonb_typeof(v) <> 'object' THEN
        PERFORM pgqueue._refuse(label || ' must be a boolean, a count or {age, count}');
    END IF;
    SELECT string_agg(k, ', ' ORDER BY k COLLATE "C") INTO bad FROM jsonb_object_keys(v) AS k
    WHERE k NOT IN ('age', 'count');
    IF bad IS NOT NULL THEN
        PERFORM pgqueue._refuse(label || ' has unknown keys: ' || bad);
    END IF;
    keep := '{}';
    n := pgqueue._int(jsonb_build_object(label || ' count', v -> 'count'), label || ' count',
                      0, 2147483647, NULL);
    IF n IS NOT NULL THEN
        keep := keep || jsonb_build_object('count', n);
    END IF;
    n := pgqueue._int(jsonb_build_object(label || ' age', v -> 'age'), label || ' age',
                      0, 31536000, NULL);
    IF n IS NOT NULL THEN
        keep := keep || jsonb_build_object('age', n);
    END IF;
    IF keep -> 'count' = '0'::jsonb THEN
        at_once := true;
        keep := NULL;
    ELSIF keep = '{}' THEN
        keep := NULL;
    END IF;
END
$f$;

CREATE FUNCTION pgqueue.enqueue(
    namespace text, queue text, name text, data json DEFAULT NULL, opts jsonb DEFAULT '{}'
) RETURNS text
LANGUAGE plpgsql AS $f$
#variable_conflict use_variable
DECLARE
    o jsonb := coalesce(opts, '{}');
    bad text;
    job_id text;
    fresh boolean;
    priority int;
    prio_lo int := -1000000;
    prio_hi int := 2097151;
    lifo boolean;
    delay_ms bigint;
    max_attempts int;
    backoff_type text := 'exponential';
    backoff_ms bigint := 1000;
    backoff_max_ms bigint := 3600000;
    bo jsonb;
    timeout_ms bigint;
    ttl_ms bigint;
    stall_ms bigint;
    remove_on_complete boolean;
    remove_on_fail boolean;
    unique_key text;
    dedup jsonb;
    dedup_mode text := 'reject';
    unique_ttl_ms bigint;
    debounced boolean := false;
    debounce_id text;
    debounce_ttl bigint;
    removal record;
    owner record;
    group_id text;
    parent_id text;
    parent_queue text;
    deps text[];
    extras jsonb := '{}';
    created_ms bigint;
    pending int := 0;
    has_dependents boolean := false;
    target text;
    size int;
    owner_id text;
    owner_by text;
    inserted_id text;
    attempt int := 0;
BEGIN
    -- The checks of manager/options.py (build_job_spec), with its messages.
    IF queue IS NULL OR queue = '' THEN
        PERFORM pgqueue._refuse('Queue name is required');
    END IF;
    IF char_length(queue) > 256 THEN
        PERFORM pgqueue._refuse('Queue name too long (max 256 characters)');
    END IF;
    IF queue !~ '^[a-zA-Z0-9_\-.:]+$' THEN
        PERFORM pgqueue._refuse('Queue name contains invalid characters');
    END IF;
    IF name IS NULL OR name = '' OR pgqueue._js_length(name) > 256
       OR name ~ '[\x01-\x1f\x7f-\x9f]' THEN
        PERFORM pgqueue._refuse('Job name must be a non-empty string of at most 256 '
                                'characters without control characters');
    END IF;
    data := coalesce(data, 'null'::json);
    size := octet_length(data::text);
    IF size > 10485760 THEN
        PERFORM pgqueue._refuse('Job data too large (' || size || ' bytes, max 10485760)');
    END IF;
    IF jsonb_typeof(o) <> 'object' THEN
        PERFORM pgqueue._refuse('opts must be a map');
    END IF;
    SELECT string_agg(k, ', ' ORDER BY k COLLATE "C") INTO bad FROM jsonb_object_keys(o) AS k
    WHERE k NOT IN ('job_id', 'custom_id', 'priority', 'delay', 'attempts', 'max_attempts',
                    'backoff', 'timeout', 'ttl', 'stall_timeout', 'unique_key', 'dedup',
                    'deduplication', 'debounce_id', 'debounce_ttl', 'group_id',
                    'depends_on', 'parent_id', 'parent_queue', 'children_ids', 'tags',
                    'lifo', 'remove_on_complete', 'remove_on_fail', 'fail_parent_on_failure',
                    'remove_dependency_on_failure', 'ignore_dependency_on_failure',
                    'continue_parent_on_failure', 'stack_trace_limit', 'keep_logs',
                    'timestamp', 'repeat');
    IF bad IS NOT NULL THEN
        PERFORM pgqueue._refuse('unknown job option: ' || bad);
    END IF;
    SELECT string_agg(k, ', ' ORDER BY k COLLATE "C") INTO bad FROM jsonb_object_keys(o) AS k
    WHERE k IN ('repeat', 'children_ids')
      AND jsonb_typeof(o -> k) <> 'null';
    IF bad IS NOT NULL THEN
        PERFORM pgqueue._refuse('pgqueue.enqueue does not take the option ' || bad
                                || ': use the SDK');
    END IF;
    job_id := coalesce(pgqueue._id(o, 'job_id'), pgqueue._id(o, 'custom_id'));
    IF o ? 'group_id' AND jsonb_typeof(o -> 'group_id') <> 'null' THEN
        prio_lo := 0;
    ELSE
        prio_hi := 1000000;
    END IF;
    -- The key: uniqueKey + dedup, BullMQ's deduplication, or debounceId (options._dedup_key).
    SELECT d.mode, d.ttl INTO dedup_mode, unique_ttl_ms FROM pgqueue._dedup(o -> 'dedup', 'dedup') d;
    unique_key := pgqueue._id(o, 'unique_key');
    dedup := o -> 'deduplication';
    IF dedup IS NOT NULL AND jsonb_typeof(dedup) <> 'null' THEN
        IF unique_key IS NOT NULL THEN
            PERFORM pgqueue._refuse('deduplication and uniqueKey name the same key: give one');
        END IF;
        IF jsonb_typeof(dedup) <> 'object' THEN
            PERFORM pgqueue._refuse('deduplication must be a map {id, ttl?, extend?, replace?}');
        END IF;
        SELECT string_agg(k, ', ' ORDER BY k COLLATE "C") INTO bad
        FROM jsonb_object_keys(dedup) AS k WHERE k NOT IN ('id', 'ttl', 'extend', 'replace');
        IF bad IS NOT NULL THEN
            PERFORM pgqueue._refuse('deduplication has unknown keys: ' || bad);
        END IF;
        unique_key := pgqueue._id(jsonb_build_object('deduplication.id', dedup -> 'id'),
                                  'deduplication.id');
        IF unique_key IS NULL THEN
            PERFORM pgqueue._refuse('deduplication needs an id');
        END IF;
        SELECT d.mode, d.ttl INTO dedup_mode, unique_ttl_ms
        FROM pgqueue._dedup(dedup - 'id', 'deduplication') d;
    END IF;
    debounce_id := pgqueue._id(o, 'debounce_id');
    debounce_ttl := pgqueue._int(o, 'debounce_ttl', 1, 31536000000, NULL);
    IF unique_key IS NULL AND debounce_id IS NOT NULL THEN
        unique_key := debounce_id;
        dedup_mode := 'reject';
        unique_ttl_ms := debounce_ttl;
        debounced := true;
    END IF;
    IF unique_key IS NULL THEN
        dedup_mode := 'reject';
        unique_ttl_ms := NULL;
    END IF;
    deps := pgqueue._strings(o, 'depends_on', 1000);
    IF cardinality(deps) > 0 THEN
        extras := jsonb_build_object('depends_on', to_jsonb(deps));
    END IF;
    IF cardinality(pgqueue._strings(o, 'tags', 100)) > 0 THEN
        extras := extras || jsonb_build_object('tags', to_jsonb(pgqueue._strings(o, 'tags', 100)));
    END IF;
    FOREACH bad IN ARRAY ARRAY['fail_parent_on_failure', 'remove_dependency_on_failure',
                               'ignore_dependency_on_failure', 'continue_parent_on_failure'] LOOP
        IF pgqueue._bool(o, bad) THEN
            extras := extras || jsonb_build_object(bad, true);
        END IF;
    END LOOP;
    FOREACH bad IN ARRAY ARRAY['stack_trace_limit', 'keep_logs'] LOOP
        IF pgqueue._int(o, bad, 0, 1000000, NULL) IS NOT NULL THEN
            extras := extras || jsonb_build_object(bad, pgqueue._int(o, bad, 0, 1000000, NULL));
        END IF;
    END LOOP;
    SELECT * INTO removal FROM pgqueue._removal(o -> 'remove_on_complete', 'remove_on_complete');
    remove_on_complete := removal.at_once;
    IF removal.keep IS NOT NULL THEN
        extras := extras || jsonb_build_object('keep_completed', removal.keep);
    END IF;
    SELECT * INTO removal FROM pgqueue._removal(o -> 'remove_on_fail', 'remove_on_fail');
    remove_on_fail := removal.at_once;
    IF removal.keep IS NOT NULL THEN
        extras := extras || jsonb_build_object('keep_failed', removal.keep);
    END IF;
    created_ms := pgqueue._int(o, 'timestamp', 0, 8640000000000000, NULL);
    priority := pgqueue._int(o, 'priority', prio_lo, prio_hi, 0);
    lifo := pgqueue._bool(o, 'lifo');
    delay_ms := pgqueue._int(o, 'delay', 0, 31536000000, 0);
    IF o ? 'max_attempts' AND jsonb_typeof(o -> 'max_attempts') <> 'null' THEN
        max_attempts := pgqueue._int(o, 'max_attempts', 1, 1000, 3);
    ELSE
        max_attempts := pgqueue._int(o, 'attempts', 1, 1000, 3);
    END IF;
    bo := o -> 'backoff';
    IF bo IS NOT NULL AND jsonb_typeof(bo) = 'number' THEN
        backoff_ms := pgqueue._int(o, 'backoff', 0, 86400000, 1000);
    ELSIF bo IS NOT NULL AND jsonb_typeof(bo) = 'object' THEN
        SELECT string_agg(k, ', ' ORDER BY k COLLATE "C") INTO bad FROM jsonb_object_keys(bo) AS k
        WHERE k NOT IN ('type', 'delay', 'max_delay', 'maxDelay');
        IF bad IS NOT NULL THEN
            PERFORM pgqueue._refuse('backoff has unknown keys: ' || bad);
        END IF;
        backoff_type := coalesce(bo ->> 'type', 'exponential');
        IF backoff_type NOT IN ('exponential', 'fixed') THEN
            PERFORM pgqueue._refuse('backoff.type must be ''exponential'' or ''fixed''');
        END IF;
        backoff_ms := pgqueue._int(jsonb_build_object('backoff', bo -> 'delay'), 'backoff',
                                   0, 86400000, 1000);
        backoff_max_ms := pgqueue._int(
            jsonb_build_object('backoff', coalesce(bo -> 'max_delay', bo -> 'maxDelay')),
            'backoff', 0, 86400000, 3600000);
    ELSIF bo IS NOT NULL AND jsonb_typeof(bo) <> 'null' THEN
        PERFORM pgqueue._refuse('backoff must be a number or {type, delay}');
    END IF;
    timeout_ms := nullif(pgqueue._int(o, 'timeout', 0, 86400000, NULL), 0);
    ttl_ms := nullif(pgqueue._int(o, 'ttl', 0, 31536000000, NULL), 0);
    stall_ms := nullif(pgqueue._int(o, 'stall_timeout', 0, 86400000, NULL), 0);
    group_id := pgqueue._id(o, 'group_id');
    parent_id := pgqueue._id(o, 'parent_id');
    parent_queue := pgqueue._id(o, 'parent_queue');

    <<admit>>
    LOOP
        attempt := attempt + 1;
        IF attempt > 10 THEN
            RAISE EXCEPTION USING ERRCODE = '40001',
                MESSAGE = 'the job of this id or key kept changing; retry the transaction';
        END IF;
        fresh := job_id IS NULL;
        IF fresh THEN
            job_id := pgqueue._uuid7();
        END IF;
        -- Custom id: a retained finished job keeps it (job_retire_finished_generations).
        IF NOT fresh THEN
            DELETE FROM pgqueue_finished f
            WHERE f.namespace = namespace AND f.id = job_id AND f.removed
              AND NOT (f.state = 'completed' AND f.parent_id IS NOT NULL
                       AND EXISTS (SELECT 1 FROM pgqueue_jobs p
                                   WHERE p.namespace = namespace AND p.id = f.parent_id));
            IF FOUND THEN
                DELETE FROM pgqueue_dlq d WHERE d.namespace = namespace AND d.job_id = job_id;
            END IF;
            PERFORM 1 FROM pgqueue_finished f
            WHERE f.namespace = namespace AND f.id = job_id FOR UPDATE;
            IF FOUND THEN
                PERFORM pgqueue._duplicated(namespace, queue, job_id, 'id', NULL);
                RETURN job_id;
            END IF;
        END IF;
        -- Unique key: an expired one is free; a finished holder with a TTL keeps it.
        IF unique_key IS NOT NULL THEN
            UPDATE pgqueue_jobs j SET unique_key = NULL, unique_expires_at = NULL
            WHERE j.namespace = namespace AND j.queue = queue
              AND j.unique_key = unique_key AND j.unique_expires_at <= statement_timestamp();
            SELECT f.id INTO owner_id FROM pgqueue_finished f
            WHERE f.namespace = namespace AND f.queue = queue
              AND f.unique_key = unique_key AND f.unique_expires_at > statement_timestamp()
            ORDER BY f.unique_expires_at DESC LIMIT 1 FOR UPDATE;
            IF owner_id IS NOT NULL AND dedup_mode = 'replace' THEN
                UPDATE pgqueue_finished SET unique_expires_at = NULL
                WHERE pgqueue_finished.namespace = namespace AND pgqueue_finished.id = owner_id;
            ELSIF owner_id IS NOT NULL THEN
                IF dedup_mode = 'extend' THEN
                    UPDATE pgqueue_finished SET unique_expires_at =
                        statement_timestamp() + unique_ttl_ms * interval '1 millisecond'
                    WHERE pgqueue_finished.namespace = namespace
                      AND pgqueue_finished.id = owner_id;
                END IF;
                PERFORM pgqueue._duplicated(namespace, queue, owner_id, 'unique_key',
                                            CASE WHEN debounced THEN unique_key END);
                RETURN owner_id;
            END IF;
            IF dedup_mode = 'replace' THEN
                -- job_unique_key_take_over: an active owner keeps running without the
                -- key; a pending one without dependents is removed (an event, no hint).
                SELECT j.id, j.state, j.has_dependents INTO owner FROM pgqueue_jobs j
                WHERE j.namespace = namespace AND j.queue = queue AND j.unique_key = unique_key
                FOR UPDATE;
                IF owner.id IS NOT NULL AND owner.state = 'active' THEN
                    UPDATE pgqueue_jobs j SET unique_key = NULL, unique_expires_at = NULL
                    WHERE j.namespace = namespace AND j.id = owner.id;
                ELSIF owner.id IS NOT NULL AND NOT owner.has_dependents THEN
                    DELETE FROM pgqueue_jobs j WHERE j.namespace = namespace AND j.id = owner.id;
                    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
                    VALUES (namespace, queue, owner.id, 'removed', '{"reason": "replaced"}');
                ELSIF owner.id IS NOT NULL THEN
                    RAISE EXCEPTION USING ERRCODE = '23505', MESSAGE =
                        'Cannot replace job ' || owner.id || ': other jobs depend on it';
                END IF;
            END IF;
        END IF;
        -- Dependencies and parent (admission._resolve_external_targets).
        pending := 0;
        has_dependents := false;
        IF parent_id IS NOT NULL THEN
            UPDATE pgqueue_jobs j SET has_dependents = true
            WHERE j.namespace = namespace AND j.id = parent_id;
            IF NOT FOUND THEN
                PERFORM pgqueue._refuse('Parent job not found: ' || parent_id);
            END IF;
            has_dependents := true;
        END IF;
        FOR target IN SELECT DISTINCT d FROM unnest(deps) AS d ORDER BY d LOOP
            IF target = job_id THEN
                PERFORM pgqueue._refuse('Job ' || target || ' cannot depend on itself');
            END IF;
            UPDATE pgqueue_jobs j SET has_dependents = true
            WHERE j.namespace = namespace AND j.id = target;
            IF FOUND THEN
                pending := pending + 1;
            ELSIF NOT EXISTS (SELECT 1 FROM pgqueue_finished f
                              WHERE f.namespace = namespace AND f.id = target
                                AND f.state = 'completed') THEN
                PERFORM pgqueue._refuse('Dependency job not found: ' || target);
            END IF;
        END LOOP;
        -- The row, its 'pushed' event, the queue registry, the NOTIFY (job_insert_batch).
        inserted_id := NULL;
        INSERT INTO pgqueue_jobs (
            namespace, id, queue, name, data, state, priority, lifo, lifo_seq, run_at,
            created_at, expires_at, max_attempts, backoff_type, backoff_ms, backoff_max_ms,
            timeout_ms, ttl_ms, stall_timeout_ms, remove_on_complete, remove_on_fail,
            custom_id, unique_key, unique_expires_at, group_id, parent_id, parent_queue,
            pending_deps, has_dependents, opts)
        VALUES (
            namespace, job_id, queue, name, data,
            CASE WHEN pending > 0 THEN 'waiting-children' ELSE 'pending' END,
            priority, lifo, CASE WHEN lifo THEN nextval('pgqueue_lifo_seq') END,
            statement_timestamp() + delay_ms * interval '1 millisecond',
            coalesce(to_timestamp(created_ms / 1000.0), statement_timestamp()),
            statement_timestamp() + ttl_ms * interval '1 millisecond',
            max_attempts, backoff_type, backoff_ms, backoff_max_ms,
            timeout_ms, ttl_ms, stall_ms, remove_on_complete, remove_on_fail,
            CASE WHEN fresh THEN NULL ELSE job_id END, unique_key,
            statement_timestamp() + unique_ttl_ms * interval '1 millisecond',
            group_id, parent_id, parent_queue, pending, has_dependents, extras)
        ON CONFLICT DO NOTHING
        RETURNING id INTO inserted_id;
        IF inserted_id IS NULL THEN
            -- Held by a live job (job_find_live_owners); gone meanwhile: start again.
            SELECT o.id, o.by INTO owner_id, owner_by FROM (
                SELECT j.id, 'id' AS by FROM pgqueue_jobs j
                WHERE NOT fresh AND j.namespace = namespace AND j.id = job_id
                UNION ALL
                SELECT j.id, 'unique_key' FROM pgqueue_jobs j
                WHERE unique_key IS NOT NULL AND j.namespace = namespace
                  AND j.queue = queue AND j.unique_key = unique_key
                LIMIT 1) AS o;
            IF owner_id IS NULL THEN
                IF fresh THEN
                    job_id := NULL;
                END IF;
                CONTINUE admit;
            END IF;
            IF owner_by = 'unique_key' AND dedup_mode = 'extend' THEN
                UPDATE pgqueue_jobs j SET unique_expires_at =
                    statement_timestamp() + unique_ttl_ms * interval '1 millisecond'
                WHERE j.namespace = namespace AND j.queue = queue
                  AND j.unique_key = unique_key;
            END IF;
            PERFORM pgqueue._duplicated(namespace, queue, owner_id, owner_by,
                                        CASE WHEN debounced THEN unique_key END);
            RETURN owner_id;
        END IF;
        -- A previous generation that finished while the insert waited: decide by it.
        IF NOT fresh AND EXISTS (SELECT 1 FROM pgqueue_finished f
                                 WHERE f.namespace = namespace AND f.id = job_id) THEN
            DELETE FROM pgqueue_jobs j WHERE j.namespace = namespace AND j.id = job_id;
            CONTINUE admit;
        END IF;
        EXIT admit;
    END LOOP;

    INSERT INTO pgqueue_queues (namespace, queue) VALUES (namespace, queue)
    ON CONFLICT DO NOTHING;
    IF cardinality(deps) > 0 THEN
        INSERT INTO pgqueue_dependencies (namespace, job_id, depends_on)
        SELECT namespace, job_id, j.id FROM pgqueue_jobs j
        WHERE j.namespace = namespace AND j.id = ANY(deps)
        ON CONFLICT DO NOTHING;
    END IF;
    IF parent_id IS NOT NULL THEN
        UPDATE pgqueue_jobs j
        SET pending_deps = j.pending_deps + 1,
            state = CASE WHEN j.state = 'pending' THEN 'waiting-children' ELSE j.state END
        WHERE j.namespace = namespace AND j.id = parent_id;
        INSERT INTO pgqueue_dependencies (namespace, job_id, depends_on)
        VALUES (namespace, parent_id, job_id) ON CONFLICT DO NOTHING;
    END IF;
    PERFORM pgqueue._event(namespace, queue, job_id, 'pushed', jsonb_build_object(
        'name', name,
        'state', CASE WHEN pending > 0 THEN 'waiting-children'
                      WHEN delay_ms > 0 THEN 'delayed'
                      WHEN priority > 0 THEN 'prioritized'
                      ELSE 'waiting' END,
        'delay', delay_ms));
    RETURN job_id;
END
$f$;

CREATE FUNCTION pgqueue._event(namespace text, queue text, job_id text, type text,
                               payload jsonb) RETURNS void
LANGUAGE plpgsql AS $f$
#variable_conflict use_variable
DECLARE
    event_id bigint;
BEGIN
    -- One outbox row and the NOTIFY hint of outbox.sql's notify_hint.
    INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
    VALUES (namespace, queue, job_id, type, payload)
    RETURNING id INTO event_id;
    PERFORM pg_notify('pgqueue_events', json_build_object(
        'ns', namespace, 'a', event_id, 'b', event_id, 'q', ARRAY[queue])::text);
END
$f$;

CREATE FUNCTION pgqueue._duplicated(namespace text, queue text, owner_id text, how text,
                                    debounce_id text)
RETURNS void LANGUAGE plpgsql AS $f$
#variable_conflict use_variable
DECLARE
    hint text;
BEGIN
    -- admission._insert_duplicate_events (event_insert_many): 'duplicated', and
    -- 'debounced' for a debounceId, in one statement with one NOTIFY hint.
    WITH events AS (
        INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
        SELECT namespace, queue, owner_id, e.type, e.payload
        FROM (VALUES (1, 'duplicated', jsonb_build_object('by', how)),
                     (2, 'debounced', jsonb_build_object('by', how, 'debounceId', debounce_id)))
             AS e(ord, type, payload)
        WHERE e.ord = 1 OR (debounce_id IS NOT NULL AND how = 'unique_key')
        ORDER BY e.ord
        RETURNING id, queue
    )
    SELECT pg_notify('pgqueue_events', json_build_object(
               'ns', namespace, 'a', min(e.id), 'b', max(e.id),
               'q', array_agg(DISTINCT e.queue))::text)
    INTO hint
    FROM events e;
END
$f$;

CREATE FUNCTION pgqueue.enqueue_bulk(namespace text, queue text, jobs json) RETURNS text[]
LANGUAGE plpgsql AS $f$
DECLARE
    job json;
    ids text[] := '{}';
    i int := 0;
BEGIN
    IF json_typeof(jobs) <> 'array' THEN
        PERFORM pgqueue._refuse('jobs must be a list of {name, data, opts}');
    END IF;
    FOR job IN SELECT e FROM json_array_elements(jobs) AS e LOOP
        IF json_typeof(job) <> 'object' THEN
            PERFORM pgqueue._refuse('jobs[' || i || ']: must be a map');
        END IF;
        BEGIN
            ids := ids || pgqueue.enqueue(namespace, queue, job ->> 'name', job -> 'data',
                                          (job -> 'opts')::jsonb);
        EXCEPTION WHEN invalid_parameter_value THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'jobs[' || i || ']: ' || SQLERRM;
        END;
        i := i + 1;
    END LOOP;
    RETURN ids;
END
$f$;
"""

DOWNGRADE = r"""
DROP SCHEMA IF EXISTS pgqueue CASCADE;
"""


# Additive (a schema of functions): every broker from 0022 on runs on it.
COMPAT = "INSERT INTO pgqueue_schema_compat (revision, oldest_broker) VALUES ('0020', '0022')"


def upgrade() -> None:
    op.execute(UPGRADE)
    op.execute(COMPAT)


def downgrade() -> None:
    op.execute("DELETE FROM pgqueue_schema_compat WHERE revision = '0020'")
    op.execute(DOWNGRADE)
