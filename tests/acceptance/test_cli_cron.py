"""``pgqueue cron list|get|delete``, on both transports."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import uuid

from tests.acceptance.cli_support import run_cli
from tests.acceptance.sdk_support import (  # noqa: F401 - fixtures
    SDK,
    connection,
    module_namespace,
    queue_name,
    sdk,
    shared_brokers,
    transport_kind,
)


async def test_cron_list_get_and_delete(sdk: SDK, connection: str, queue_name: str) -> None:
    queue = sdk.queue()
    name = f"nightly-{uuid.uuid4().hex[:8]}"
    await queue.add_cron(name, "0 3 * * *", {"kind": "daily"}, tz="Europe/Rome")
    listed = await run_cli("cron", "list", "--queue", queue_name, "--json", connection=connection)
    assert listed.code == 0, listed.err
    [row] = listed.json()
    assert (row["id"], row["pattern"], row["timezone"]) == (name, "0 3 * * *", "Europe/Rome")
    text = await run_cli("cron", "list", "--queue", queue_name, connection=connection)
    assert text.code == 0 and name in text.out and "Europe/Rome" in text.out
    got = await run_cli("cron", "get", name, "--json", connection=connection)
    assert got.code == 0 and got.json()["data"] == {"kind": "daily"}
    missing = await run_cli("cron", "get", "no-such-cron", connection=connection)
    assert missing.code == 1 and "no cron scheduler no-such-cron" in missing.err
    gone = await run_cli("cron", "delete", name, "--yes", connection=connection)
    assert gone.code == 0, gone.err
    assert await queue.get_job_scheduler(name) is None
    again = await run_cli("cron", "delete", name, "--yes", connection=connection)
    assert again.code == 1
