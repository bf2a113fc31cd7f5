"""bunqueue's ``/crons`` resource over HTTP: list, upsert, get, delete (the same
commands as TCP, bunqueue's bodies), and bad input that changes nothing."""

from __future__ import annotations

from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory
from tests.acceptance.http_support import http_client
from tests.helpers import sql_value


async def test_the_crons_resource(brokers: BrokerFactory, db_dsn: str, namespace: str) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http:
        made = await http.post(
            "/crons",
            json={
                "name": "h-beat",
                "queue": "hq",
                "data": {"b": 1, "a": 2},
                "jobName": "tick",
                "repeatEvery": 3_600_000,
                "immediately": True,
                "maxLimit": 5,
                "jobOptions": {"maxAttempts": 2},
            },
        )
        assert made.status_code == 200, made.text
        cron = made.json()["cron"]
        assert (cron["name"], cron["jobName"], cron["repeatEvery"], cron["maxLimit"]) == (
            "h-beat",
            "tick",
            3_600_000,
            5,
        )
        listed = await http.get("/crons")
        assert [c["name"] for c in listed.json()["crons"]] == ["h-beat"]

        async def fired() -> bool:
            got = (await http.get("/crons/h-beat")).json()["cron"]
            return bool(got["executions"] == 1)

        await eventually(fired, timeout=15, message="the immediate tick")
        got = (await http.get("/crons/h-beat")).json()
        assert got["ok"] is True and list(got["cron"]["data"]) == ["b", "a"]
        missing = await http.get("/crons/nope")
        assert (missing.status_code, missing.json()) == (200, {"ok": True, "cron": None})
        before = await sql_value(
            db_dsn, "SELECT count(*) FROM pgqueue_schedulers WHERE namespace = $1", namespace
        )
        bad = await http.post(
            "/crons", json={"name": "h-bad", "queue": "hq", "schedule": "99 * * * *"}
        )
        assert bad.status_code == 400 and "Invalid cron expression" in bad.json()["error"]
        bad_every = await http.post(
            "/crons", json={"name": "h-bad", "queue": "hq", "repeatEvery": -1}
        )
        assert bad_every.status_code == 400
        after = await sql_value(
            db_dsn, "SELECT count(*) FROM pgqueue_schedulers WHERE namespace = $1", namespace
        )
        assert after == before == 1
        gone = await http.delete("/crons/h-beat")
        assert gone.status_code == 200 and gone.json()["ok"] is True
        again = await http.delete("/crons/h-beat")
        assert again.status_code == 404 and again.json()["error"] == "Cron job not found"
        document = (await http.get("/openapi.json")).json()
        assert {"get", "post"} <= set(document["paths"]["/crons"])
        assert "preventOverlap" in str(document["paths"]["/crons"]["post"])
