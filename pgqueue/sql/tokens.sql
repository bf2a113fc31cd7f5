-- name: token_list
-- Every client token of the database (docs/security.md), by name: the digest of
-- its secret, its namespaces (NULL: every namespace) and whether it is read-only.
SELECT name, digest, namespaces, read_only FROM pgqueue_tokens ORDER BY name

-- name: token_insert
-- Add a token (pgqueue token add --dsn).  :name, :digest, :namespaces (NULL: every
-- namespace), :read_only.  Returns no row when the name or the digest is taken.
INSERT INTO pgqueue_tokens (name, digest, namespaces, read_only)
VALUES (:name, :digest, :namespaces::text[], :read_only)
ON CONFLICT DO NOTHING
RETURNING name
