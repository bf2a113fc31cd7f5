-- name: leader_attempt_elect
-- Parameters, in order: :namespace, :seat, :session_id, :broker_id, :leader_ttl_ms.
-- Become (or stay) leader of :seat when the seat is free, expired, or already ours.
-- :namespace, :seat name, :session_id holder session, :broker_id, :leader_ttl_ms.  A row means we lead.
INSERT INTO pgqueue_leaders AS l (namespace, name, holder, broker_id, elected_at, expires_at)
VALUES (:namespace, :seat, :session_id::uuid, :broker_id, clock_timestamp(),
        clock_timestamp() + :leader_ttl_ms::bigint * interval '1 millisecond')
ON CONFLICT (namespace, name) DO UPDATE
    SET holder = EXCLUDED.holder,
        broker_id = EXCLUDED.broker_id,
        elected_at = CASE WHEN l.holder = EXCLUDED.holder THEN l.elected_at
                          ELSE EXCLUDED.elected_at END,
        expires_at = EXCLUDED.expires_at
    WHERE l.holder = EXCLUDED.holder OR l.expires_at < clock_timestamp()
RETURNING holder

-- name: leader_resign
-- Give up the seat if we hold it.  :namespace, :seat name, :session_id holder session.
DELETE FROM pgqueue_leaders WHERE namespace = :namespace AND name = :seat AND holder = :session_id::uuid
