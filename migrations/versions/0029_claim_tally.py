"""A broker server counts the claims from one tally row per claim statement.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-03

Since 0027 a claim writes its jobs' ``active`` events only while someone wants them,
but a broker server's projection wanted them all: its metrics count the claims
(``pgqueue_events_total{type="active"}``, ``bunqueue_jobs_pulled_total``,
``pullPerSec``), so over TCP every claim still wrote one outbox row per job.  Now a
broker server registers interest ``'*'`` (the claims' count, not their events) in
``pgqueue_event_interest``; a claim statement (``job_claim_batch``,
``pgqueue_claim_planned``) that writes no ``active`` events while such a row exists
writes one ``claimed`` row instead: queue, no job, payload ``{"count": n}``.  The
statement reads both interests with one snapshot, so each claim is counted exactly
once, from its ``active`` events or from its tally; the registration waits out the
claims as 0027's does.  Subscribers of job events never see ``claimed`` rows
(the outbox reader hands them to tally readers only), nor do webhooks (no webhook
event maps to the type).

Older brokers cannot run on it: their claims write no tally, so a newer broker's
metrics would miss them; the revision names itself as the oldest broker.
"""

# ruff: noqa: E501  (the function body is 0027's, as written there)
from __future__ import annotations

from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE OR REPLACE FUNCTION pgqueue_claim_planned(
    p_namespace text, p_queue text, p_count integer, p_owner text, p_broker text,
    p_session uuid, p_lease_ms bigint, p_default_lease_ms bigint,
    p_group_concurrency integer, p_group_max integer, p_group_duration_ms integer)
RETURNS TABLE (session_live boolean, retry_ms bigint, job pgqueue_jobs)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    q pgqueue_queues;
    v_now timestamptz;
    v_cap integer := p_count;
    v_left integer;
    v_active integer;
    v_lease_ms bigint;
    v_grace_ms bigint;
    v_ids text[] := '{}';
    v_gids text[] := '{}';
    v_ggroups text[] := '{}';
    v_turn bigint;
    v_retry bigint;
    v_group_retry bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pgqueue_brokers b
                   WHERE b.namespace = p_namespace AND b.broker_id = p_broker
                     AND b.session_id = p_session) THEN
        RETURN QUERY SELECT false, NULL::bigint, NULL::pgqueue_jobs;
        RETURN;
    END IF;
    -- The queue row is the lock every limited or grouped claim of the queue takes.
    INSERT INTO pgqueue_queues (namespace, queue) VALUES (p_namespace, p_queue)
    ON CONFLICT (namespace, queue) DO NOTHING;
    SELECT * INTO q FROM pgqueue_queues
    WHERE namespace = p_namespace AND queue = p_queue FOR UPDATE;
    v_now := clock_timestamp();
    IF q.paused THEN
        RETURN QUERY SELECT true, NULL::bigint, NULL::pgqueue_jobs;
        RETURN;
    END IF;
    v_lease_ms := coalesce(p_lease_ms, (q.stall_config ->> 'stallInterval')::bigint, p_default_lease_ms);
    v_grace_ms := coalesce((q.stall_config ->> 'gracePeriod')::bigint, 0);

    -- The queue's rate window (fixed, opened by the first claim after the last one closed).
    IF q.rate_limit IS NOT NULL AND q.rate_expires_at IS NOT NULL AND q.rate_expires_at <= v_now THEN
        q.rate_limit := NULL;
        q.rate_duration_ms := NULL;
        q.rate_expires_at := NULL;
        q.rate_window_started_at := NULL;
        q.rate_count := 0;
    END IF;
    IF q.rate_limit IS NOT NULL THEN
        IF q.rate_window_started_at IS NULL
           OR q.rate_window_started_at + q.rate_duration_ms * interval '1 millisecond' <= v_now THEN
            q.rate_window_started_at := v_now;
            q.rate_count := 0;
        END IF;
        v_cap := least(v_cap, q.rate_limit - q.rate_count);
        IF v_cap <= 0 THEN
            -- the window's end, or the limit's own expiry when that comes first
            v_retry := greatest(1, ceil(extract(epoch FROM least(
                q.rate_window_started_at + q.rate_duration_ms * interval '1 millisecond',
                q.rate_expires_at) - v_now) * 1000))::bigint;
        END IF;
    END IF;
    IF q.concurrency_limit IS NOT NULL AND v_cap > 0 THEN
        SELECT count(*) INTO v_active FROM pgqueue_jobs a
        WHERE a.namespace = p_namespace AND a.queue = p_queue AND a.state = 'active';
        v_cap := least(v_cap, q.concurrency_limit - v_active);
    END IF;

    IF v_cap > 0 THEN
        -- Ungrouped jobs first, in the plain claim's order.
        SELECT coalesce(array_agg(s.id), '{}') INTO v_ids FROM (
            SELECT j.id FROM pgqueue_jobs j
            WHERE j.namespace = p_namespace AND j.queue = p_queue
              AND j.state = 'pending' AND j.group_id IS NULL
              AND j.run_at <= v_now
              AND (j.expires_at IS NULL OR j.expires_at > v_now)
            ORDER BY j.priority DESC, j.sort_key, j.id
            LIMIT v_cap
            FOR UPDATE SKIP LOCKED) s;
        v_left := v_cap - cardinality(v_ids);
        IF v_left > 0 AND (SELECT g.group_id FROM pgqueue_jobs g
                           WHERE g.namespace = p_namespace AND g.queue = p_queue
                             AND g.state = 'pending' AND g.group_id IS NOT NULL
                           ORDER BY g.group_id LIMIT 1) IS NOT NULL THEN
            -- Every group with pending jobs gets a state row (its turn), found by a
            -- skip scan of the group index: one descent per group.
            INSERT INTO pgqueue_groups (namespace, queue, group_id)
            WITH RECURSIVE groups(group_id) AS (
                (SELECT g.group_id FROM pgqueue_jobs g
                 WHERE g.namespace = p_namespace AND g.queue = p_queue
                   AND g.state = 'pending' AND g.group_id IS NOT NULL
                 ORDER BY g.group_id LIMIT 1)
                UNION ALL
                SELECT (SELECT g.group_id FROM pgqueue_jobs g
                        WHERE g.namespace = p_namespace AND g.queue = p_queue
                          AND g.state = 'pending' AND g.group_id > groups.group_id
                        ORDER BY g.group_id LIMIT 1)
                FROM groups WHERE groups.group_id IS NOT NULL
            )
            SELECT p_namespace, p_queue, groups.group_id FROM groups
            WHERE groups.group_id IS NOT NULL
            ORDER BY groups.group_id
            ON CONFLICT (namespace, queue, group_id) DO NOTHING;

            -- Each group's budget (pause, manual deadline, concurrency, rate window;
            -- the group's own limits, else the puller's defaults), then round robin:
            -- the first job of every group by turn (least recently served first),
            -- then the second of every group, ...
            WITH budgets AS MATERIALIZED (
                SELECT gs.group_id, gs.last_served, b.budget, b.reopen_at
                FROM pgqueue_groups gs
                CROSS JOIN LATERAL (
                    SELECT coalesce(gs.concurrency_limit, p_group_concurrency) AS conc,
                           coalesce(gs.rate_limit, p_group_max) AS rmax,
                           CASE WHEN gs.rate_limit IS NOT NULL THEN gs.rate_duration_ms
                                ELSE p_group_duration_ms END AS rdur
                ) lim
                CROSS JOIN LATERAL (
                    SELECT gs.rate_window_started_at IS NOT NULL
                           AND gs.rate_window_started_at
                               + gs.rate_window_ms * interval '1 millisecond' > v_now AS open
                ) w
                CROSS JOIN LATERAL (
                    SELECT CASE
                        WHEN gs.paused THEN 0
                        WHEN gs.manual_rate_limit_until > v_now THEN 0
                        ELSE least(
                            v_left,
                            CASE WHEN lim.conc IS NULL THEN v_left
                                 ELSE lim.conc - (SELECT count(*) FROM pgqueue_jobs a
                                                  WHERE a.namespace = p_namespace AND a.queue = p_queue
                                                    AND a.group_id = gs.group_id AND a.state = 'active')
                            END,
                            CASE WHEN lim.rmax IS NULL THEN v_left
                                 WHEN w.open THEN lim.rmax - gs.rate_count
                                 ELSE lim.rmax END)
                        END AS budget,
                        CASE WHEN gs.paused THEN NULL
                             WHEN gs.manual_rate_limit_until > v_now THEN gs.manual_rate_limit_until
                             WHEN lim.rmax IS NOT NULL AND w.open AND gs.rate_count >= lim.rmax
                             THEN gs.rate_window_started_at + gs.rate_window_ms * interval '1 millisecond'
                        END AS reopen_at
                ) b
                -- a due job in the group: one probe of the group index per group
                -- (LIMIT keeps it a probe, not a semi-join over the backlog)
                CROSS JOIN LATERAL (
                    SELECT 1 FROM pgqueue_jobs h
                    WHERE h.namespace = p_namespace AND h.queue = p_queue
                      AND h.state = 'pending' AND h.group_id = gs.group_id
                      AND h.run_at <= v_now
                    LIMIT 1
                ) due
                WHERE gs.namespace = p_namespace AND gs.queue = p_queue
            ), retry AS (
                SELECT min(reopen_at) AS reopen_at FROM budgets WHERE budget <= 0
            ), share AS (
                -- rounds needed if every open group had jobs enough
                SELECT ceil(v_left::numeric / greatest(1, count(*)))::integer AS per_group
                FROM budgets WHERE budget > 0
            ), candidates AS MATERIALIZED (
                SELECT c.id, c.pos, bu.last_served, bu.group_id
                FROM budgets bu
                CROSS JOIN share
                CROSS JOIN LATERAL (
                    SELECT h.id, row_number() OVER (ORDER BY h.priority, h.sort_key, h.id) AS pos
                    FROM (SELECT h.id, h.priority, h.sort_key FROM pgqueue_jobs h
                          WHERE h.namespace = p_namespace AND h.queue = p_queue
                            AND h.state = 'pending' AND h.group_id = bu.group_id
                            AND h.run_at <= v_now
                            AND (h.expires_at IS NULL OR h.expires_at > v_now)
                          ORDER BY h.priority, h.sort_key, h.id
                          LIMIT least(bu.budget, share.per_group)) h
                ) c
                WHERE bu.budget > 0
            ), chosen AS MATERIALIZED (
                SELECT c.id, c.pos, c.last_served, c.group_id
                FROM candidates c
                ORDER BY c.pos, c.last_served NULLS FIRST, c.group_id
                LIMIT v_left
            ), locked AS (
                -- planned claims of the queue are serialised by its row lock, so
                -- only other writers (cancel, remove, ...) can hold a chosen row
                SELECT j.id
                FROM unnest((SELECT array_agg(c.id) FROM chosen c)::text[]) AS u(id)
                JOIN pgqueue_jobs j ON j.namespace = p_namespace AND j.id = u.id
                WHERE j.state = 'pending'
                FOR UPDATE OF j SKIP LOCKED
            ), picked AS (
                SELECT c.* FROM chosen c JOIN locked l ON l.id = c.id
            )
            SELECT coalesce(array_agg(p.id ORDER BY p.pos, p.last_served NULLS FIRST, p.group_id), '{}'),
                   coalesce(array_agg(p.group_id ORDER BY p.pos, p.last_served NULLS FIRST, p.group_id), '{}'),
                   -- NULL when no held group reopens by time (a concurrency slot or
                   -- a pause frees it: the caller waits for the queue's events)
                   (SELECT CASE WHEN r.reopen_at IS NOT NULL
                                THEN greatest(1, ceil(extract(epoch FROM r.reopen_at - v_now)
                                                      * 1000))::bigint END
                    FROM retry r)
            INTO v_gids, v_ggroups, v_group_retry
            FROM picked p;

            IF cardinality(v_gids) > 0 THEN
                -- Advance the turns in serving order and count the claims in each
                -- group's rate window.
                v_turn := nextval('pgqueue_group_turn_seq') * 10000;
                WITH served AS MATERIALIZED (
                    SELECT u.group_id, count(*)::integer AS n, max(u.ord) AS last_pos
                    FROM unnest(v_ggroups) WITH ORDINALITY AS u(group_id, ord)
                    GROUP BY u.group_id
                ), next AS (
                    SELECT gs.group_id, s.n, s.last_pos,
                           coalesce(gs.rate_limit, p_group_max) AS rmax,
                           CASE WHEN gs.rate_limit IS NOT NULL THEN gs.rate_duration_ms
                                ELSE p_group_duration_ms END AS rdur,
                           (gs.rate_window_started_at IS NOT NULL
                            AND gs.rate_window_started_at
                                + gs.rate_window_ms * interval '1 millisecond' > v_now) AS open
                    FROM served s
                    JOIN pgqueue_groups gs ON gs.namespace = p_namespace AND gs.queue = p_queue
                                          AND gs.group_id = s.group_id
                )
                UPDATE pgqueue_groups gs
                SET last_served = v_turn + s.last_pos,
                    rate_window_started_at = CASE
                        WHEN s.rmax IS NULL THEN gs.rate_window_started_at
                        WHEN s.open THEN gs.rate_window_started_at ELSE v_now END,
                    rate_window_ms = CASE
                        WHEN s.rmax IS NULL THEN gs.rate_window_ms
                        WHEN s.open THEN gs.rate_window_ms ELSE s.rdur END,
                    rate_count = CASE
                        WHEN s.rmax IS NULL THEN gs.rate_count
                        WHEN s.open THEN gs.rate_count + s.n ELSE s.n END
                FROM next s
                WHERE gs.namespace = p_namespace AND gs.queue = p_queue AND gs.group_id = s.group_id;
            ELSIF cardinality(v_ids) = 0 THEN
                v_retry := coalesce(v_retry, v_group_retry);
            END IF;
        END IF;
    END IF;

    IF q.rate_limit IS NOT NULL THEN
        q.rate_count := q.rate_count + cardinality(v_ids) + cardinality(v_gids);
    END IF;
    UPDATE pgqueue_queues
    SET rate_limit = q.rate_limit, rate_duration_ms = q.rate_duration_ms,
        rate_expires_at = q.rate_expires_at,
        rate_window_started_at = q.rate_window_started_at, rate_count = q.rate_count
    WHERE namespace = p_namespace AND queue = p_queue
      AND (rate_limit, rate_duration_ms, rate_expires_at, rate_window_started_at, rate_count)
          IS DISTINCT FROM (q.rate_limit, q.rate_duration_ms, q.rate_expires_at,
                            q.rate_window_started_at, q.rate_count);

    RETURN QUERY
    WITH claimed AS (
        UPDATE pgqueue_jobs j
        SET state = 'active',
            fence = j.fence + 1,
            lease_token = pgqueue_lease_token(j.fence + 1, j.token_salt),
            lease_owner = p_owner,
            lease_broker = p_broker,
            lease_session = p_session,
            started_at = v_now,
            lease_until = pgqueue_lease_until(v_now, v_lease_ms, v_grace_ms,
                                              j.timeout_ms, j.stall_timeout_ms)
        FROM unnest(v_ids || v_gids) WITH ORDINALITY AS u(id, ord)
        WHERE j.namespace = p_namespace AND j.id = u.id
        RETURNING j AS row, u.ord
    ), wanted AS (
        -- Who wants this claim's events: the jobs' own (a subscriber of the queue or
        -- of every queue, a webhook of job.started), else one tally row (a broker
        -- server counting the claims, queue '*').  The empty guard read FOR KEY
        -- SHARE holds its ROW SHARE lock from before the statement's snapshot
        -- (migration 0027's note).
        SELECT EXISTS (SELECT 1 FROM pgqueue_event_interest i
                       WHERE i.namespace = p_namespace AND i.queue IN (p_queue, ''))
               OR EXISTS (SELECT 1 FROM pgqueue_webhooks w
                          WHERE w.namespace = p_namespace AND w.enabled
                            AND 'job.started' = ANY (w.events)
                            AND (w.queue IS NULL OR w.queue = p_queue)) AS events,
               EXISTS (SELECT 1 FROM pgqueue_event_interest i
                       WHERE i.namespace = p_namespace AND i.queue = '*') AS tally
        WHERE NOT EXISTS (SELECT 1 FROM pgqueue_claim_guard FOR KEY SHARE)
    ), events AS (
        INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
        SELECT p_namespace, (c.row).queue, (c.row).id, 'active',
               jsonb_build_object('attempt', (c.row).attempts + 1, 'broker', p_broker)
        FROM claimed c
        WHERE (SELECT w.events FROM wanted w)
    ), tally AS (
        INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
        SELECT p_namespace, p_queue, NULL, 'claimed', json_build_object('count', n.count)
        FROM (SELECT count(*) AS count FROM claimed) n, wanted w
        WHERE n.count > 0 AND w.tally AND NOT w.events
    )
    SELECT true, NULL::bigint, c.row FROM claimed c ORDER BY c.ord;
    IF NOT FOUND THEN
        RETURN QUERY SELECT true, v_retry, NULL::pgqueue_jobs;
    END IF;
END
$fn$;
"""

DOWNGRADE = r"""
DELETE FROM pgqueue_event_interest WHERE queue = '*';
CREATE OR REPLACE FUNCTION pgqueue_claim_planned(
    p_namespace text, p_queue text, p_count integer, p_owner text, p_broker text,
    p_session uuid, p_lease_ms bigint, p_default_lease_ms bigint,
    p_group_concurrency integer, p_group_max integer, p_group_duration_ms integer)
RETURNS TABLE (session_live boolean, retry_ms bigint, job pgqueue_jobs)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    q pgqueue_queues;
    v_now timestamptz;
    v_cap integer := p_count;
    v_left integer;
    v_active integer;
    v_lease_ms bigint;
    v_grace_ms bigint;
    v_ids text[] := '{}';
    v_gids text[] := '{}';
    v_ggroups text[] := '{}';
    v_turn bigint;
    v_retry bigint;
    v_group_retry bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pgqueue_brokers b
                   WHERE b.namespace = p_namespace AND b.broker_id = p_broker
                     AND b.session_id = p_session) THEN
        RETURN QUERY SELECT false, NULL::bigint, NULL::pgqueue_jobs;
        RETURN;
    END IF;
    -- The queue row is the lock every limited or grouped claim of the queue takes.
    INSERT INTO pgqueue_queues (namespace, queue) VALUES (p_namespace, p_queue)
    ON CONFLICT (namespace, queue) DO NOTHING;
    SELECT * INTO q FROM pgqueue_queues
    WHERE namespace = p_namespace AND queue = p_queue FOR UPDATE;
    v_now := clock_timestamp();
    IF q.paused THEN
        RETURN QUERY SELECT true, NULL::bigint, NULL::pgqueue_jobs;
        RETURN;
    END IF;
    v_lease_ms := coalesce(p_lease_ms, (q.stall_config ->> 'stallInterval')::bigint, p_default_lease_ms);
    v_grace_ms := coalesce((q.stall_config ->> 'gracePeriod')::bigint, 0);

    -- The queue's rate window (fixed, opened by the first claim after the last one closed).
    IF q.rate_limit IS NOT NULL AND q.rate_expires_at IS NOT NULL AND q.rate_expires_at <= v_now THEN
        q.rate_limit := NULL;
        q.rate_duration_ms := NULL;
        q.rate_expires_at := NULL;
        q.rate_window_started_at := NULL;
        q.rate_count := 0;
    END IF;
    IF q.rate_limit IS NOT NULL THEN
        IF q.rate_window_started_at IS NULL
           OR q.rate_window_started_at + q.rate_duration_ms * interval '1 millisecond' <= v_now THEN
            q.rate_window_started_at := v_now;
            q.rate_count := 0;
        END IF;
        v_cap := least(v_cap, q.rate_limit - q.rate_count);
        IF v_cap <= 0 THEN
            -- the window's end, or the limit's own expiry when that comes first
            v_retry := greatest(1, ceil(extract(epoch FROM least(
                q.rate_window_started_at + q.rate_duration_ms * interval '1 millisecond',
                q.rate_expires_at) - v_now) * 1000))::bigint;
        END IF;
    END IF;
    IF q.concurrency_limit IS NOT NULL AND v_cap > 0 THEN
        SELECT count(*) INTO v_active FROM pgqueue_jobs a
        WHERE a.namespace = p_namespace AND a.queue = p_queue AND a.state = 'active';
        v_cap := least(v_cap, q.concurrency_limit - v_active);
    END IF;

    IF v_cap > 0 THEN
        -- Ungrouped jobs first, in the plain claim's order.
        SELECT coalesce(array_agg(s.id), '{}') INTO v_ids FROM (
            SELECT j.id FROM pgqueue_jobs j
            WHERE j.namespace = p_namespace AND j.queue = p_queue
              AND j.state = 'pending' AND j.group_id IS NULL
              AND j.run_at <= v_now
              AND (j.expires_at IS NULL OR j.expires_at > v_now)
            ORDER BY j.priority DESC, j.sort_key, j.id
            LIMIT v_cap
            FOR UPDATE SKIP LOCKED) s;
        v_left := v_cap - cardinality(v_ids);
        IF v_left > 0 AND (SELECT g.group_id FROM pgqueue_jobs g
                           WHERE g.namespace = p_namespace AND g.queue = p_queue
                             AND g.state = 'pending' AND g.group_id IS NOT NULL
                           ORDER BY g.group_id LIMIT 1) IS NOT NULL THEN
            -- Every group with pending jobs gets a state row (its turn), found by a
            -- skip scan of the group index: one descent per group.
            INSERT INTO pgqueue_groups (namespace, queue, group_id)
            WITH RECURSIVE groups(group_id) AS (
                (SELECT g.group_id FROM pgqueue_jobs g
                 WHERE g.namespace = p_namespace AND g.queue = p_queue
                   AND g.state = 'pending' AND g.group_id IS NOT NULL
                 ORDER BY g.group_id LIMIT 1)
                UNION ALL
                SELECT (SELECT g.group_id FROM pgqueue_jobs g
                        WHERE g.namespace = p_namespace AND g.queue = p_queue
                          AND g.state = 'pending' AND g.group_id > groups.group_id
                        ORDER BY g.group_id LIMIT 1)
                FROM groups WHERE groups.group_id IS NOT NULL
            )
            SELECT p_namespace, p_queue, groups.group_id FROM groups
            WHERE groups.group_id IS NOT NULL
            ORDER BY groups.group_id
            ON CONFLICT (namespace, queue, group_id) DO NOTHING;

            -- Each group's budget (pause, manual deadline, concurrency, rate window;
            -- the group's own limits, else the puller's defaults), then round robin:
            -- the first job of every group by turn (least recently served first),
            -- then the second of every group, ...
            WITH budgets AS MATERIALIZED (
                SELECT gs.group_id, gs.last_served, b.budget, b.reopen_at
                FROM pgqueue_groups gs
                CROSS JOIN LATERAL (
                    SELECT coalesce(gs.concurrency_limit, p_group_concurrency) AS conc,
                           coalesce(gs.rate_limit, p_group_max) AS rmax,
                           CASE WHEN gs.rate_limit IS NOT NULL THEN gs.rate_duration_ms
                                ELSE p_group_duration_ms END AS rdur
                ) lim
                CROSS JOIN LATERAL (
                    SELECT gs.rate_window_started_at IS NOT NULL
                           AND gs.rate_window_started_at
                               + gs.rate_window_ms * interval '1 millisecond' > v_now AS open
                ) w
                CROSS JOIN LATERAL (
                    SELECT CASE
                        WHEN gs.paused THEN 0
                        WHEN gs.manual_rate_limit_until > v_now THEN 0
                        ELSE least(
                            v_left,
                            CASE WHEN lim.conc IS NULL THEN v_left
                                 ELSE lim.conc - (SELECT count(*) FROM pgqueue_jobs a
                                                  WHERE a.namespace = p_namespace AND a.queue = p_queue
                                                    AND a.group_id = gs.group_id AND a.state = 'active')
                            END,
                            CASE WHEN lim.rmax IS NULL THEN v_left
                                 WHEN w.open THEN lim.rmax - gs.rate_count
                                 ELSE lim.rmax END)
                        END AS budget,
                        CASE WHEN gs.paused THEN NULL
                             WHEN gs.manual_rate_limit_until > v_now THEN gs.manual_rate_limit_until
                             WHEN lim.rmax IS NOT NULL AND w.open AND gs.rate_count >= lim.rmax
                             THEN gs.rate_window_started_at + gs.rate_window_ms * interval '1 millisecond'
                        END AS reopen_at
                ) b
                -- a due job in the group: one probe of the group index per group
                -- (LIMIT keeps it a probe, not a semi-join over the backlog)
                CROSS JOIN LATERAL (
                    SELECT 1 FROM pgqueue_jobs h
                    WHERE h.namespace = p_namespace AND h.queue = p_queue
                      AND h.state = 'pending' AND h.group_id = gs.group_id
                      AND h.run_at <= v_now
                    LIMIT 1
                ) due
                WHERE gs.namespace = p_namespace AND gs.queue = p_queue
            ), retry AS (
                SELECT min(reopen_at) AS reopen_at FROM budgets WHERE budget <= 0
            ), share AS (
                -- rounds needed if every open group had jobs enough
                SELECT ceil(v_left::numeric / greatest(1, count(*)))::integer AS per_group
                FROM budgets WHERE budget > 0
            ), candidates AS MATERIALIZED (
                SELECT c.id, c.pos, bu.last_served, bu.group_id
                FROM budgets bu
                CROSS JOIN share
                CROSS JOIN LATERAL (
                    SELECT h.id, row_number() OVER (ORDER BY h.priority, h.sort_key, h.id) AS pos
                    FROM (SELECT h.id, h.priority, h.sort_key FROM pgqueue_jobs h
                          WHERE h.namespace = p_namespace AND h.queue = p_queue
                            AND h.state = 'pending' AND h.group_id = bu.group_id
                            AND h.run_at <= v_now
                            AND (h.expires_at IS NULL OR h.expires_at > v_now)
                          ORDER BY h.priority, h.sort_key, h.id
                          LIMIT least(bu.budget, share.per_group)) h
                ) c
                WHERE bu.budget > 0
            ), chosen AS MATERIALIZED (
                SELECT c.id, c.pos, c.last_served, c.group_id
                FROM candidates c
                ORDER BY c.pos, c.last_served NULLS FIRST, c.group_id
                LIMIT v_left
            ), locked AS (
                -- planned claims of the queue are serialised by its row lock, so
                -- only other writers (cancel, remove, ...) can hold a chosen row
                SELECT j.id
                FROM unnest((SELECT array_agg(c.id) FROM chosen c)::text[]) AS u(id)
                JOIN pgqueue_jobs j ON j.namespace = p_namespace AND j.id = u.id
                WHERE j.state = 'pending'
                FOR UPDATE OF j SKIP LOCKED
            ), picked AS (
                SELECT c.* FROM chosen c JOIN locked l ON l.id = c.id
            )
            SELECT coalesce(array_agg(p.id ORDER BY p.pos, p.last_served NULLS FIRST, p.group_id), '{}'),
                   coalesce(array_agg(p.group_id ORDER BY p.pos, p.last_served NULLS FIRST, p.group_id), '{}'),
                   -- NULL when no held group reopens by time (a concurrency slot or
                   -- a pause frees it: the caller waits for the queue's events)
                   (SELECT CASE WHEN r.reopen_at IS NOT NULL
                                THEN greatest(1, ceil(extract(epoch FROM r.reopen_at - v_now)
                                                      * 1000))::bigint END
                    FROM retry r)
            INTO v_gids, v_ggroups, v_group_retry
            FROM picked p;

            IF cardinality(v_gids) > 0 THEN
                -- Advance the turns in serving order and count the claims in each
                -- group's rate window.
                v_turn := nextval('pgqueue_group_turn_seq') * 10000;
                WITH served AS MATERIALIZED (
                    SELECT u.group_id, count(*)::integer AS n, max(u.ord) AS last_pos
                    FROM unnest(v_ggroups) WITH ORDINALITY AS u(group_id, ord)
                    GROUP BY u.group_id
                ), next AS (
                    SELECT gs.group_id, s.n, s.last_pos,
                           coalesce(gs.rate_limit, p_group_max) AS rmax,
                           CASE WHEN gs.rate_limit IS NOT NULL THEN gs.rate_duration_ms
                                ELSE p_group_duration_ms END AS rdur,
                           (gs.rate_window_started_at IS NOT NULL
                            AND gs.rate_window_started_at
                                + gs.rate_window_ms * interval '1 millisecond' > v_now) AS open
                    FROM served s
                    JOIN pgqueue_groups gs ON gs.namespace = p_namespace AND gs.queue = p_queue
                                          AND gs.group_id = s.group_id
                )
                UPDATE pgqueue_groups gs
                SET last_served = v_turn + s.last_pos,
                    rate_window_started_at = CASE
                        WHEN s.rmax IS NULL THEN gs.rate_window_started_at
                        WHEN s.open THEN gs.rate_window_started_at ELSE v_now END,
                    rate_window_ms = CASE
                        WHEN s.rmax IS NULL THEN gs.rate_window_ms
                        WHEN s.open THEN gs.rate_window_ms ELSE s.rdur END,
                    rate_count = CASE
                        WHEN s.rmax IS NULL THEN gs.rate_count
                        WHEN s.open THEN gs.rate_count + s.n ELSE s.n END
                FROM next s
                WHERE gs.namespace = p_namespace AND gs.queue = p_queue AND gs.group_id = s.group_id;
            ELSIF cardinality(v_ids) = 0 THEN
                v_retry := coalesce(v_retry, v_group_retry);
            END IF;
        END IF;
    END IF;

    IF q.rate_limit IS NOT NULL THEN
        q.rate_count := q.rate_count + cardinality(v_ids) + cardinality(v_gids);
    END IF;
    UPDATE pgqueue_queues
    SET rate_limit = q.rate_limit, rate_duration_ms = q.rate_duration_ms,
        rate_expires_at = q.rate_expires_at,
        rate_window_started_at = q.rate_window_started_at, rate_count = q.rate_count
    WHERE namespace = p_namespace AND queue = p_queue
      AND (rate_limit, rate_duration_ms, rate_expires_at, rate_window_started_at, rate_count)
          IS DISTINCT FROM (q.rate_limit, q.rate_duration_ms, q.rate_expires_at,
                            q.rate_window_started_at, q.rate_count);

    RETURN QUERY
    WITH claimed AS (
        UPDATE pgqueue_jobs j
        SET state = 'active',
            fence = j.fence + 1,
            lease_token = pgqueue_lease_token(j.fence + 1, j.token_salt),
            lease_owner = p_owner,
            lease_broker = p_broker,
            lease_session = p_session,
            started_at = v_now,
            lease_until = pgqueue_lease_until(v_now, v_lease_ms, v_grace_ms,
                                              j.timeout_ms, j.stall_timeout_ms)
        FROM unnest(v_ids || v_gids) WITH ORDINALITY AS u(id, ord)
        WHERE j.namespace = p_namespace AND j.id = u.id
        RETURNING j AS row, u.ord
    ), events AS (
        INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)
        SELECT p_namespace, (c.row).queue, (c.row).id, 'active',
               jsonb_build_object('attempt', (c.row).attempts + 1, 'broker', p_broker)
        FROM claimed c
        -- Only when someone wants them; the empty guard read FOR KEY SHARE holds
        -- its ROW SHARE lock from before the statement's snapshot (see this
        -- migration's note).
        WHERE (EXISTS (SELECT 1 FROM pgqueue_event_interest i
                       WHERE i.namespace = p_namespace AND i.queue IN (p_queue, ''))
               OR EXISTS (SELECT 1 FROM pgqueue_webhooks w
                          WHERE w.namespace = p_namespace AND w.enabled
                            AND 'job.started' = ANY (w.events)
                            AND (w.queue IS NULL OR w.queue = p_queue)))
          AND NOT EXISTS (SELECT 1 FROM pgqueue_claim_guard FOR KEY SHARE)
    )
    SELECT true, NULL::bigint, c.row FROM claimed c ORDER BY c.ord;
    IF NOT FOUND THEN
        RETURN QUERY SELECT true, v_retry, NULL::pgqueue_jobs;
    END IF;
END
$fn$;
"""


# Older brokers' claims write no tally row: a newer broker's counts would miss them.
COMPAT = "INSERT INTO pgqueue_schema_compat (revision, oldest_broker) VALUES ('0029', '0029')"


def upgrade() -> None:
    op.execute(UPGRADE)
    op.execute(COMPAT)


def downgrade() -> None:
    op.execute("DELETE FROM pgqueue_schema_compat WHERE revision = '0029'")
    op.execute("DELETE FROM pgqueue_events WHERE type = 'claimed'")
    op.execute(DOWNGRADE)
