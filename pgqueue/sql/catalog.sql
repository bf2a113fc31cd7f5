-- name: catalog_current_schema
-- The schema that unqualified names resolve to (where the migrations ran):
-- its name, and the name quoted as an identifier when it needs quotes.
SELECT current_schema() AS name, quote_ident(current_schema()) AS quoted

-- fragment: catalog_function_rows
-- The functions and procedures `p` of the catalog, with their schema `n`: name,
-- identity arguments, kind and definition (the includer adds WHERE and ORDER BY).
SELECT p.proname AS name,
       pg_get_function_identity_arguments(p.oid) AS arguments,
       p.prokind AS kind,
       CASE WHEN p.prokind IN ('f', 'p') THEN pg_get_functiondef(p.oid) END AS definition
FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace

-- name: catalog_functions
-- Functions and procedures named pgqueue_* in schema :schema, with their definitions.
-- include: catalog_function_rows
WHERE n.nspname = :schema AND p.proname LIKE 'pgqueue\_%'
ORDER BY p.proname, arguments

-- name: catalog_api_functions
-- The SQL API: every function of the schema named pgqueue (pgqueue.enqueue and
-- its helpers, migration 0020), with their definitions.
-- include: catalog_function_rows
WHERE n.nspname = 'pgqueue'
ORDER BY p.proname, arguments

-- name: catalog_domains
-- Domains named pgqueue_* in schema :schema: base type, NOT NULL, default and CHECK
-- constraints (name and definition, in name order).
SELECT quote_ident(t.typname) AS name,
       format_type(t.typbasetype, t.typtypmod) AS type,
       t.typnotnull AS not_null,
       t.typdefault AS expression,
       coalesce((SELECT array_agg('CONSTRAINT ' || quote_ident(c.conname) || ' '
                                  || pg_get_constraintdef(c.oid) ORDER BY c.conname)
                 FROM pg_constraint c WHERE c.contypid = t.oid), '{}') AS constraints
FROM pg_type t
JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE n.nspname = :schema AND t.typtype = 'd' AND t.typname LIKE 'pgqueue\_%'
ORDER BY t.typname

-- name: catalog_sequences
-- Sequences named pgqueue_* in schema :schema (not those behind identity columns),
-- with the column that owns each one, if any.
SELECT quote_ident(c.relname) AS name,
       format_type(s.seqtypid, NULL) AS type,
       s.seqstart AS start,
       s.seqincrement AS increment,
       s.seqmin AS minimum,
       s.seqmax AS maximum,
       s.seqcache AS cache,
       s.seqcycle AS cycle,
       (SELECT quote_ident(t.relname) || '.' || quote_ident(a.attname)
        FROM pg_depend d
        JOIN pg_class t ON t.oid = d.refobjid
        JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
        WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
          AND d.refclassid = 'pg_class'::regclass AND d.deptype = 'a') AS owned_by
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_sequence s ON s.seqrelid = c.oid
WHERE n.nspname = :schema AND c.relkind = 'S' AND c.relname LIKE 'pgqueue\_%'
  AND NOT EXISTS (SELECT 1 FROM pg_depend d
                  WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                    AND d.deptype = 'i')
ORDER BY c.relname

-- name: catalog_relations
-- Relations named pgqueue_* in schema :schema other than sequences and indexes:
-- kind, persistence, storage options, and whether they inherit (partitions).
SELECT c.relname AS raw_name,
       quote_ident(c.relname) AS name,
       c.relkind AS kind,
       c.relpersistence AS persistence,
       coalesce(c.reloptions, '{}') AS options,
       c.relispartition OR EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid)
           AS inherits,
       CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END AS view_definition
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = :schema AND c.relname LIKE 'pgqueue\_%'
  AND c.relkind NOT IN ('S', 'i', 'I')
ORDER BY c.relname

-- name: catalog_columns
-- Columns of the tables named pgqueue_* in schema :schema, in table then column order:
-- type, collation (when not the type's own), default or generation expression,
-- identity, NOT NULL.
SELECT c.relname AS table_name,
       quote_ident(a.attname) AS name,
       format_type(a.atttypid, a.atttypmod) AS type,
       (SELECT CASE WHEN cn.nspname = 'pg_catalog' THEN quote_ident(co.collname)
                    ELSE quote_ident(cn.nspname) || '.' || quote_ident(co.collname) END
        FROM pg_collation co
        JOIN pg_namespace cn ON cn.oid = co.collnamespace
        WHERE co.oid = a.attcollation AND a.attcollation <> t.typcollation) AS collation,
       pg_get_expr(ad.adbin, ad.adrelid) AS expression,
       a.attgenerated AS generated,
       a.attidentity AS identity,
       a.attnotnull AS not_null
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
WHERE n.nspname = :schema AND c.relname LIKE 'pgqueue\_%' AND c.relkind IN ('r', 'p')
  AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY c.relname, a.attnum

-- name: catalog_constraints
-- Table constraints of the tables named pgqueue_* in schema :schema (NOT NULL is a
-- column property here, whether or not the server stores it as a constraint).
SELECT quote_ident(c.relname) AS table_name,
       quote_ident(con.conname) AS name,
       con.contype AS type,
       pg_get_constraintdef(con.oid) AS definition
FROM pg_constraint con
JOIN pg_class c ON c.oid = con.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = :schema AND c.relname LIKE 'pgqueue\_%'
  AND con.contype <> 'n' AND con.conislocal
ORDER BY c.relname, con.conname

-- name: catalog_indexes
-- Indexes of the tables named pgqueue_* in schema :schema, except those that a
-- primary key, unique or exclusion constraint creates.
SELECT i.relname AS name, pg_get_indexdef(i.oid) AS definition
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class c ON c.oid = x.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = :schema AND c.relname LIKE 'pgqueue\_%'
  AND NOT EXISTS (SELECT 1 FROM pg_constraint con
                  WHERE con.conindid = x.indexrelid AND con.conrelid = x.indrelid
                    AND con.contype IN ('p', 'u', 'x'))
ORDER BY i.relname

-- name: catalog_triggers
-- User triggers on the tables named pgqueue_* in schema :schema.
SELECT c.relname AS table_name, t.tgname AS name, pg_get_triggerdef(t.oid) AS definition
FROM pg_trigger t
JOIN pg_class c ON c.oid = t.tgrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = :schema AND c.relname LIKE 'pgqueue\_%' AND NOT t.tgisinternal
ORDER BY c.relname, t.tgname

-- name: catalog_database_exists
-- Whether database :database exists on this server (asked on its maintenance database).
SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = :database) AS present
