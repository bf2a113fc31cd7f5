-- name: leader_attempt_elect
-- Become (or stay) leader of $2 when the seat is free, expired, or already ours.
-- $1 namespace, $2 name, $3 holder session, $4 broker_id, $5 ttl_ms.  A row means we lead.
INSERT INTO pgqueue_leaders AS l (namespace, name, holder, broker_id, elected_at, expires_at)
VALUES ($1, $2, $3::uuid, $4, clock_timestamp(),
        clock_timestamp() + $5::bigint * interval '1 millisecond')
ON CONFLICT (namespace, name) DO UPDATE
    SET holder = EXCLUDED.holder,
        broker_id = EXCLUDED.broker_id,
        elected_at = CASE WHEN l.holder = EXCLUDED.holder THEN l.elected_at
                          ELSE EXCLUDED.elected_at END,
        expires_at = EXCLUDED.expires_at
    WHERE l.holder = EXCLUDED.holder OR l.expires_at < clock_timestamp()
RETURNING holder

-- name: leader_resign
-- Give up the seat if we hold it.  $1 namespace, $2 name, $3 holder session.
DELETE FROM pgqueue_leaders WHERE namespace = $1 AND name = $2 AND holder = $3::uuid
