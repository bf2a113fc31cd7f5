"""One conformance suite for both storage drivers (asyncpg and psycopg).

Every test runs once per driver against a real PostgreSQL: named queries,
jsonb as text, arrays, transactions, LISTEN/NOTIFY, and the translation of
driver errors into the pgqueue tree (:mod:`pgqueue.db.errormap`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import asyncpg
import psycopg
import pytest

from pgqueue.db.asyncpg_db import connect_asyncpg
from pgqueue.db.errormap import TransientConflict
from pgqueue.db.executor import Database, Executor, Listener
from pgqueue.db.psycopg_db import connect_psycopg
from pgqueue.db.queries import QueryBook, parse_queries
from pgqueue.db.retry import in_transaction
from pgqueue.errors import DatabaseUnavailable, IndeterminateCommit, StorageError, ValidationError
from pgqueue.testing import eventually
from tests.helpers import sql, sql_value

T = QueryBook(
    parse_queries(
        """
-- name: item_put
-- $1 key, $2 value, $3 doc (jsonb text), $4 tags.
INSERT INTO conformance_items (k, v, doc, tags) VALUES ($1, $2, $3::jsonb, $4::text[])
RETURNING k

-- name: item_put_many
-- $1 keys, $2 values, $3 docs.
INSERT INTO conformance_items (k, v, doc)
SELECT * FROM unnest($1::text[], $2::bigint[], $3::jsonb[])
RETURNING k, v, doc

-- name: item_get
-- $1 key.
SELECT k, v, doc, tags FROM conformance_items WHERE k = $1

-- name: item_value
-- $1 key.
SELECT v FROM conformance_items WHERE k = $1

-- name: item_set
-- $1 key, $2 value.
UPDATE conformance_items SET v = $2 WHERE k = $1

-- name: item_bump
-- $1 key.
UPDATE conformance_items SET v = v + 1 WHERE k = $1

-- name: item_share
-- Waits behind a row lock without writing.  $1 key.
SELECT v FROM conformance_items WHERE k = $1 FOR SHARE

-- name: item_count
-- Rows whose key starts with $1.
SELECT count(*) FROM conformance_items WHERE k LIKE $1 || '%'

-- name: echo
-- Each parameter back, typed.  $1 text, $2 jsonb, $3 text[], $4 bigint[], $5 jsonb[], $6 uuid.
SELECT $1::text AS t, $2::jsonb AS j, $3::text[] AS ta, $4::bigint[] AS ba, $5::jsonb[] AS ja,
       $6::uuid AS u

-- name: scalars
-- One value of each common type.
SELECT 1::bigint AS i, 1.5::float8 AS f, true AS b, 'x'::text AS t, NULL::text AS n,
       '2026-01-02 03:04:05+00'::timestamptz AS ts

-- name: percent_literal
-- A literal percent sign next to a parameter (psycopg needs it escaped).  $1 text.
SELECT $1::text LIKE 'a%' AS matches, '100%' AS label

-- name: notify
-- $1 channel, $2 payload.
SELECT pg_notify($1, $2)

-- name: raise_sqlstate
-- Raise an error with SQLSTATE $1.
SELECT conformance_raise($1)

-- fragment: item_columns
-- An item's columns, in a slot-filled {order} of keys.
k, v, doc, tags FROM conformance_items AS {alias}

-- name: item_range
-- Items whose key starts with :prefix and whose value is at least :floor (named
-- parameters, one used twice; a string literal with a colon and a cast stay as they are).
SELECT
-- include: item_columns(alias=i)
WHERE k LIKE :prefix || '%' AND v >= :floor::bigint AND ':floor' <> k AND (:floor)::int >= 0
ORDER BY k

-- name: repeatable_read
-- The first statement of a transaction: snapshot isolation.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ
"""
    )
)

SETUP = """
CREATE TABLE IF NOT EXISTS conformance_items (
    k text PRIMARY KEY, v bigint, doc jsonb, tags text[]
);
CREATE OR REPLACE FUNCTION conformance_raise(state text) RETURNS void
    LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'raised %', state USING ERRCODE = state; END $$;
"""

DRIVERS: dict[str, Callable[..., Awaitable[Database]]] = {
    "asyncpg": connect_asyncpg,
    "psycopg": connect_psycopg,
}


@pytest.fixture(scope="module")
def conformance_dsn(db_dsn: str) -> str:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(SETUP)  # type: ignore[arg-type]
    return db_dsn


@pytest.fixture
def app_name() -> str:
    return f"conformance-{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=sorted(DRIVERS))
async def db(
    request: pytest.FixtureRequest, conformance_dsn: str, app_name: str
) -> AsyncIterator[Database]:
    database = await DRIVERS[request.param](
        conformance_dsn,
        min_size=1,
        max_size=3,
        application_name=app_name,
        server_settings={"application_name": app_name},  # psycopg's LISTEN connection too
    )
    try:
        yield database
    finally:
        await database.close()


@pytest.fixture
def key(namespace: str) -> str:
    """A key prefix of this test's own."""
    return namespace


async def put(db: Executor, k: str, v: int = 1) -> None:
    await db.execute(T.item_put, k, v, None, None)


async def count(dsn: str, prefix: str) -> int:
    """Rows as another connection sees them (committed only)."""
    query = "SELECT count(*) FROM conformance_items WHERE k LIKE $1 || '%'"
    return int(await sql_value(dsn, query, prefix))


# -- statements ----------------------------------------------------------------


async def test_fetch_returns_rows_with_columns_by_name(db: Database, key: str) -> None:
    await db.execute(T.item_put, f"{key}-a", 1, '{"x": 1}', ["t1", "t2"])
    rows = await db.fetch(T.item_get, f"{key}-a")
    assert len(rows) == 1
    row = rows[0]
    assert list(row.keys()) == ["k", "v", "doc", "tags"]
    assert [row["k"], row["v"], row["doc"], row["tags"]] == [
        f"{key}-a",
        1,
        '{"x": 1}',
        ["t1", "t2"],
    ]
    assert row.get("v") == 1
    assert await db.fetch(T.item_get, f"{key}-missing") == []


async def test_named_parameters_are_passed_by_name_on_every_method(db: Database, key: str) -> None:
    await put(db, f"{key}-a", 1)
    await put(db, f"{key}-b", 5)
    rows = await db.fetch(T.item_range, prefix=key, floor=2)
    assert [(r["k"], r["v"]) for r in rows] == [(f"{key}-b", 5)]
    row = await db.fetchrow(T.item_range, floor=0, prefix=key)
    assert row is not None and row["k"] == f"{key}-a"
    assert await db.fetchval(T.item_range, prefix=f"{key}-b", floor=0) == f"{key}-b"
    await db.execute(T.item_range, prefix=key, floor=0)
    async with db.transaction() as tx:
        assert len(await tx.fetch(T.item_range, prefix=key, floor=0)) == 2
        assert await tx.fetchval(T.item_range, prefix=key, floor=5) == f"{key}-b"


async def test_a_missing_unknown_or_positional_parameter_is_refused_before_sending(
    db: Database, key: str
) -> None:
    with pytest.raises(TypeError, match=r"missing \['floor'\], unknown \['flor'\]"):
        await db.fetch(T.item_range, prefix=key, flor=2)
    with pytest.raises(TypeError, match="takes named parameters: prefix, floor"):
        await db.fetch(T.item_range, key, 2)
    with pytest.raises(TypeError, match="takes positional parameters"):
        await db.fetch(T.item_get, k=key)
    async with db.transaction() as tx:
        with pytest.raises(TypeError, match="missing"):
            await tx.fetchrow(T.item_range, prefix=key)


async def test_fetchrow_and_fetchval_give_none_when_there_is_no_row(db: Database, key: str) -> None:
    await put(db, f"{key}-a", 41)
    row = await db.fetchrow(T.item_get, f"{key}-a")
    assert row is not None and row["v"] == 41
    assert await db.fetchval(T.item_value, f"{key}-a") == 41
    assert await db.fetchrow(T.item_get, f"{key}-b") is None
    assert await db.fetchval(T.item_value, f"{key}-b") is None


async def test_execute_returns_nothing_and_fetch_of_a_plain_update_is_empty(
    db: Database, key: str
) -> None:
    await put(db, f"{key}-a", 1)
    assert await db.execute(T.item_set, f"{key}-a", 5) is None  # type: ignore[func-returns-value]
    assert await db.fetch(T.item_set, f"{key}-a", 6) == []
    assert await db.fetchval(T.item_value, f"{key}-a") == 6


async def test_fetch_of_a_write_returns_its_rows(db: Database, key: str) -> None:
    rows = await db.fetch(T.item_put_many, [f"{key}-1", f"{key}-2"], [10, 20], ['{"n": 1}', None])
    assert [(r["k"], r["v"], r["doc"]) for r in rows] == [
        (f"{key}-1", 10, '{"n": 1}'),
        (f"{key}-2", 20, None),
    ]
    assert await count(db.dsn, key) == 2


async def test_both_drivers_return_the_same_python_types(db: Database) -> None:
    row = await db.fetchrow(T.scalars)
    assert row is not None
    assert (row["i"], row["f"], row["b"], row["t"], row["n"]) == (1, 1.5, True, "x", None)
    assert [type(row[c]) for c in ("i", "f", "b", "t")] == [int, float, bool, str]
    assert row["ts"] == datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


async def test_a_percent_sign_in_sql_is_passed_through_literally(db: Database) -> None:
    row = await db.fetchrow(T.percent_literal, "abc")
    assert row is not None and (row["matches"], row["label"]) == (True, "100%")


# -- jsonb and arrays ----------------------------------------------------------


async def test_jsonb_is_passed_and_returned_as_json_text(db: Database) -> None:
    session = str(uuid.uuid4())
    row = await db.fetchrow(T.echo, "t", '{"b": 1, "a": [1, 2.5, "é"]}', None, None, None, session)
    assert row is not None
    assert row["j"] == '{"a": [1, 2.5, "é"], "b": 1}'  # jsonb's own normal form, as text
    assert isinstance(row["j"], str)
    assert str(row["u"]) == session
    scalar = await db.fetchrow(T.echo, None, "null", None, None, None, None)
    assert scalar is not None and scalar["j"] == "null"
    nothing = await db.fetchrow(T.echo, None, None, None, None, None, None)
    assert nothing is not None and nothing["j"] is None


async def test_arrays_round_trip_with_null_elements(db: Database) -> None:
    big = 2**62
    row = await db.fetchrow(
        T.echo,
        None,
        None,
        ["a", None, "", 'é,{}"'],
        [big, None, -1],
        ['{"x": 1}', None, "[]"],
        None,
    )
    assert row is not None
    assert row["ta"] == ["a", None, "", 'é,{}"']
    assert row["ba"] == [big, None, -1]
    assert row["ja"] == ['{"x": 1}', None, "[]"]


async def test_empty_arrays_round_trip(db: Database) -> None:
    row = await db.fetchrow(T.echo, None, None, [], [], [], None)
    assert row is not None and (row["ta"], row["ba"], row["ja"]) == ([], [], [])


@pytest.mark.parametrize("sqlstate", ["22P02", "22003", "22001", "22008"])
async def test_a_data_exception_is_a_validation_error_not_an_internal_one(
    db: Database, sqlstate: str
) -> None:
    """SQLSTATE class 22 (data exception): a value the column cannot hold (G10)."""
    with pytest.raises(ValidationError, match="value refused by the database") as info:
        await db.fetchval(T.raise_sqlstate, sqlstate)
    assert sqlstate in str(info.value)


async def test_invalid_json_text_is_a_validation_error(db: Database) -> None:
    with pytest.raises(ValidationError, match="22P02"):
        await db.fetchrow(T.echo, None, "{not json", None, None, None, None)


# -- transactions --------------------------------------------------------------


async def test_a_transaction_commits_when_its_block_ends(db: Database, key: str) -> None:
    async with db.transaction() as tx:
        await put(tx, f"{key}-1")
        await put(tx, f"{key}-2")
        assert await tx.fetchval(T.item_count, key) == 2, "a transaction sees its own writes"
        assert await count(db.dsn, key) == 0, "nobody else sees them before COMMIT"
    assert await count(db.dsn, key) == 2


async def test_an_exception_inside_a_transaction_leaves_nothing(db: Database, key: str) -> None:
    async def body() -> None:
        async with db.transaction() as tx:
            await put(tx, f"{key}-1")
            raise RuntimeError("handler failed")

    with pytest.raises(RuntimeError, match="handler failed"):
        await body()
    assert await count(db.dsn, key) == 0
    assert await db.fetchval(T.item_count, key) == 0


async def test_a_failed_statement_rolls_back_the_transaction_and_the_pool_stays_usable(
    db: Database, key: str
) -> None:
    async def insert_twice() -> None:
        async with db.transaction() as tx:
            await put(tx, f"{key}-new")
            await put(tx, f"{key}-new")

    for _ in range(4):  # more rounds than the pool has connections
        with pytest.raises(StorageError, match="23505"):
            await insert_twice()
    assert await count(db.dsn, key) == 0
    async with db.transaction() as tx:
        await put(tx, f"{key}-after")
    assert await count(db.dsn, key) == 1


async def test_a_cancelled_transaction_rolls_back(db: Database, key: str) -> None:
    inside = asyncio.Event()

    async def body() -> None:
        async with db.transaction() as tx:
            await put(tx, f"{key}-1")
            inside.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(body())
    await asyncio.wait_for(inside.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await count(db.dsn, key) == 0
    async with db.transaction() as tx:
        await put(tx, f"{key}-2")
    assert await count(db.dsn, key) == 1


# -- LISTEN / NOTIFY -----------------------------------------------------------


@pytest.fixture
def channel() -> str:
    return f"conformance_{uuid.uuid4().hex[:12]}"


async def test_listen_delivers_a_notification(db: Database, channel: str) -> None:
    async with db.listen([channel]) as listener:
        await db.execute(T.notify, channel, "hello")
        note = await asyncio.wait_for(listener.get(), 5)
        assert (note.channel, note.payload) == (channel, "hello")
        await listener.ping()


async def test_get_is_cancel_safe(db: Database, channel: str) -> None:
    async with db.listen([channel]) as listener:
        pending = asyncio.create_task(listener.get())
        done, _ = await asyncio.wait({pending}, timeout=0.05)
        assert not done
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(listener.get(), 0.05)
        await db.execute(T.notify, channel, "one")
        await db.execute(T.notify, channel, "two")
        first = await asyncio.wait_for(listener.get(), 5)
        second = await asyncio.wait_for(listener.get(), 5)
        assert (first.payload, second.payload) == ("one", "two")


async def test_a_notify_in_a_rolled_back_transaction_is_never_delivered(
    db: Database, channel: str
) -> None:
    async def notify_then_fail() -> None:
        async with db.transaction() as tx:
            await tx.execute(T.notify, channel, "rolled back")
            raise RuntimeError

    async with db.listen([channel]) as listener:
        with pytest.raises(RuntimeError):
            await notify_then_fail()
        async with db.transaction() as tx:
            await tx.execute(T.notify, channel, "committed")
        note = await asyncio.wait_for(listener.get(), 5)
        assert note.payload == "committed"


async def _backend_pid(dsn: str, app_name: str, where: str) -> int:
    async def find() -> int | None:
        return await sql_value(  # type: ignore[no-any-return]
            dsn,
            f"SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND {where}",
            app_name,
        )

    return await eventually(find, timeout=5, message=f"a backend with {where}")


async def test_a_listener_whose_backend_was_killed_raises_database_unavailable(
    db: Database, channel: str, app_name: str
) -> None:
    async def ping_fails(listener: Listener) -> bool:
        try:
            await listener.ping()
        except DatabaseUnavailable:
            return True
        return False

    for _ in range(20):  # the first ping after the kill races the driver noticing it
        async with db.listen([channel]) as listener:
            pid = await _backend_pid(db.dsn, app_name, "query LIKE 'LISTEN%'")
            await listener.ping()
            await sql_value(db.dsn, "SELECT pg_terminate_backend($1)", pid)
            await eventually(lambda: ping_fails(listener), timeout=5, message="ping failing")
            for _ in range(2):  # and it stays broken
                with pytest.raises(DatabaseUnavailable):
                    await asyncio.wait_for(listener.get(), 5)
                with pytest.raises(DatabaseUnavailable):
                    await listener.ping()
    assert await db.fetchval(T.item_count, "none") == 0, "the pool is unaffected"


async def test_a_listener_that_cannot_connect_raises_database_unavailable(
    db: Database, channel: str
) -> None:
    dsn = db.dsn
    with refused_port() as port:
        db.dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        try:
            with pytest.raises(DatabaseUnavailable):
                async with db.listen([channel]):
                    pass
        finally:
            db.dsn = dsn


# -- error translation ---------------------------------------------------------


async def test_a_unique_violation_is_a_storage_error_not_a_connection_error(
    db: Database, key: str
) -> None:
    await put(db, f"{key}-a")
    with pytest.raises(StorageError, match="23505") as info:
        await put(db, f"{key}-a")
    assert type(info.value) is StorageError
    assert isinstance(info.value.__cause__, asyncpg.PostgresError | psycopg.Error)


@pytest.mark.parametrize(
    ("sqlstate", "error"),
    [
        ("40001", TransientConflict),  # serialization_failure
        ("40P01", TransientConflict),  # deadlock_detected
        ("55P03", TransientConflict),  # lock_not_available (lock_timeout)
        ("57014", StorageError),  # query_canceled (statement_timeout)
        ("P0001", StorageError),  # raise_exception
        ("22012", ValidationError),  # division_by_zero: class 22, a data exception
    ],
)
async def test_sqlstates_map_to_the_error_tree(
    db: Database, sqlstate: str, error: type[Exception]
) -> None:
    with pytest.raises(error) as info:
        await db.fetchval(T.raise_sqlstate, sqlstate)
    assert type(info.value) is error
    with pytest.raises(error):
        async with db.transaction() as tx:
            await tx.fetchval(T.raise_sqlstate, sqlstate)


async def _conflict(tx: Executor, dsn: str, k: str) -> None:
    """Make ``tx``'s next write to ``k`` a serialization failure (40001)."""
    await tx.execute(T.repeatable_read)
    await tx.fetchval(T.item_value, k)  # takes the snapshot
    await sql(dsn, "UPDATE conformance_items SET v = v + 10 WHERE k = $1", k)


async def test_a_serialization_failure_is_a_transient_conflict(db: Database, key: str) -> None:
    await put(db, f"{key}-a", 1)

    async def body() -> None:
        async with db.transaction() as tx:
            await _conflict(tx, db.dsn, f"{key}-a")
            await tx.execute(T.item_bump, f"{key}-a")

    with pytest.raises(TransientConflict, match="40001"):
        await body()
    assert await db.fetchval(T.item_value, f"{key}-a") == 11


async def test_in_transaction_retries_a_transient_conflict(db: Database, key: str) -> None:
    await put(db, f"{key}-a", 1)
    calls = 0

    async def body(tx: Executor) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            await _conflict(tx, db.dsn, f"{key}-a")
        value = int(await tx.fetchval(T.item_value, f"{key}-a"))
        await tx.execute(T.item_set, f"{key}-a", value + 1)
        return value

    assert await in_transaction(db, body) == 11
    assert calls == 2
    assert await db.fetchval(T.item_value, f"{key}-a") == 12


async def test_in_transaction_gives_up_after_its_attempts_and_never_retries_other_errors(
    db: Database, key: str
) -> None:
    calls: list[str] = []

    async def always_conflicts(tx: Executor) -> None:
        calls.append("conflict")
        await tx.fetchval(T.raise_sqlstate, "40P01")

    with pytest.raises(TransientConflict):
        await in_transaction(db, always_conflicts, attempts=3)
    assert calls == ["conflict"] * 3

    await put(db, f"{key}-a")

    async def duplicate(tx: Executor) -> None:
        calls.append("duplicate")
        await put(tx, f"{key}-a")

    with pytest.raises(StorageError, match="23505"):
        await in_transaction(db, duplicate)
    assert calls.count("duplicate") == 1


@contextlib.asynccontextmanager
async def row_locked(dsn: str, k: str) -> AsyncIterator[None]:
    """Hold ``k``'s row lock from another connection for the block."""
    conn = await asyncpg.connect(dsn)
    try:
        async with conn.transaction():
            await conn.execute("SELECT 1 FROM conformance_items WHERE k = $1 FOR UPDATE", k)
            yield
    finally:
        await conn.close()


async def _terminate_while_blocked(
    db: Database, app_name: str, call: Awaitable[Any]
) -> BaseException:
    """Run ``call`` until it waits on a lock, kill its backend, return what it raised."""
    task = asyncio.ensure_future(call)
    pid = await _backend_pid(db.dsn, app_name, "wait_event_type = 'Lock'")
    await sql_value(db.dsn, "SELECT pg_terminate_backend($1)", pid)
    with pytest.raises(StorageError) as info:
        await asyncio.wait_for(task, 10)
    return info.value


async def test_a_backend_killed_during_an_autocommit_write_is_an_indeterminate_commit(
    db: Database, key: str, app_name: str
) -> None:
    assert T.item_bump.writes
    await put(db, f"{key}-a", 1)
    async with row_locked(db.dsn, f"{key}-a"):
        error = await _terminate_while_blocked(db, app_name, db.execute(T.item_bump, f"{key}-a"))
    assert type(error) is IndeterminateCommit
    assert await db.fetchval(T.item_value, f"{key}-a") == 1, "the pool serves the next statement"


async def test_a_backend_killed_during_a_read_is_database_unavailable(
    db: Database, key: str, app_name: str
) -> None:
    assert not T.item_share.writes
    await put(db, f"{key}-a", 1)
    async with row_locked(db.dsn, f"{key}-a"):
        error = await _terminate_while_blocked(db, app_name, db.fetchval(T.item_share, f"{key}-a"))
    assert type(error) is DatabaseUnavailable
    assert await db.fetchval(T.item_value, f"{key}-a") == 1


async def test_a_backend_killed_inside_a_transaction_before_commit_is_database_unavailable(
    db: Database, key: str, app_name: str
) -> None:
    await put(db, f"{key}-a", 1)

    async def write_in_transaction() -> None:
        async with db.transaction() as tx:
            await tx.execute(T.item_bump, f"{key}-a")

    async with row_locked(db.dsn, f"{key}-a"):
        error = await _terminate_while_blocked(db, app_name, write_in_transaction())
    assert type(error) is DatabaseUnavailable, "COMMIT was never sent: nothing is uncertain"
    assert await db.fetchval(T.item_value, f"{key}-a") == 1


@pytest.mark.parametrize("driver", ["asyncpg", "psycopg"])
async def test_a_refused_connection_is_database_unavailable_at_once(driver: str) -> None:
    with refused_port() as port:
        dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        with pytest.raises(DatabaseUnavailable, match="cannot connect"):
            await asyncio.wait_for(DRIVERS[driver](dsn, min_size=1), 3)


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A local TCP port that refuses connections (bound, never listening)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


# -- one connection for sequential statements (asyncpg's express connection) ------


@pytest.mark.parametrize("driver", sorted(DRIVERS))
async def test_a_transaction_waiting_for_the_only_connection_gets_it_when_a_statement_ends(
    driver: str, conformance_dsn: str, key: str, app_name: str
) -> None:
    """A connection kept for the next statement is never kept from a waiter."""
    db = await DRIVERS[driver](conformance_dsn, min_size=1, max_size=1, application_name=app_name)
    try:
        await put(db, f"{key}-a", 1)
        async with row_locked(db.dsn, f"{key}-a"):
            blocked = asyncio.ensure_future(db.fetchval(T.item_share, f"{key}-a"))
            await _backend_pid(db.dsn, app_name, "wait_event_type = 'Lock'")

            async def bump() -> None:
                async with db.transaction() as tx:
                    await tx.execute(T.item_set, f"{key}-b", 0)

            waiting = asyncio.ensure_future(bump())
        assert await asyncio.wait_for(blocked, 10) == 1
        await asyncio.wait_for(waiting, 10)
        assert await db.fetchval(T.item_value, f"{key}-a") == 1
    finally:
        await db.close()


async def test_a_kept_connection_whose_backend_died_while_idle_is_replaced_before_use(
    conformance_dsn: str, key: str, app_name: str
) -> None:
    db = await connect_asyncpg(conformance_dsn, min_size=1, max_size=1, application_name=app_name)
    try:
        await put(db, f"{key}-a", 7)
        pid = await _backend_pid(db.dsn, app_name, "state = 'idle'")
        await sql_value(db.dsn, "SELECT pg_terminate_backend($1)", pid)
        await eventually(
            lambda: _backend_gone(db.dsn, pid), timeout=5, message="the backend exited"
        )
        assert await db.fetchval(T.item_value, f"{key}-a") == 7
    finally:
        await db.close()


async def _backend_gone(dsn: str, pid: int) -> bool:
    return not await sql_value(dsn, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid)
