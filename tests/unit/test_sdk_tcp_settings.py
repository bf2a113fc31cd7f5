"""``pgqueue://`` URLs, the pool's backoff and the mapping of broker error texts."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgqueue.client.connect import open_transport
from pgqueue.client.pool import Backoff
from pgqueue.client.remote_errors import remote_error
from pgqueue.client.tcp import TcpTransport
from pgqueue.client.tcp_settings import TcpSettings, parse_url
from pgqueue.errors import (
    AuthError,
    ConfigError,
    DependencyNotFound,
    DuplicateJob,
    IndeterminateCommit,
    InvalidState,
    JobNotFound,
    LeaseLost,
    ProtocolError,
    RemoteError,
    ValidationError,
)


def test_a_url_lists_brokers_and_options() -> None:
    settings = parse_url(
        "pgqueue://b1:7000,b2,[::1]:7001?token=s%3Dcret&pool=2&timeout=1.5&autobatch=off"
    )
    assert settings == TcpSettings(
        addresses=(("b1", 7000), ("b2", 6789), ("::1", 7001)),
        token="s=cret",
        pool=2,
        timeout=1.5,
        autobatch=False,
    )


def test_keyword_options_override_the_url() -> None:
    settings = parse_url("pgqueue://h?pool=2&token=a", pool=8, token="b", batch_max_jobs=10)
    assert (settings.pool, settings.token, settings.batch_max_jobs) == (8, "b", 10)


def test_the_liveness_timeout_is_10_s_shorter_than_the_request_timeout_and_settable() -> None:
    default = parse_url("pgqueue://h")
    assert default.liveness_timeout == 10 and default.liveness_timeout < default.timeout
    assert parse_url("pgqueue://h?liveness_timeout=2.5").liveness_timeout == 2.5
    transport = TcpTransport.from_url("pgqueue://h", liveness_timeout=3)
    assert transport.pool.liveness_timeout == 3


def test_the_same_broker_listed_twice_is_kept_once() -> None:
    assert parse_url("pgqueue://h:1,h:1,h:2").addresses == (("h", 1), ("h", 2))


def test_open_transport_builds_a_tcp_transport_from_a_pgqueue_url() -> None:
    transport = open_transport("pgqueue://127.0.0.1:7000?pool=3", timeout=2)
    assert isinstance(transport, TcpTransport)
    assert transport.settings.pool == 3 and transport.settings.timeout == 2


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("pgqueue://", "list brokers"),
        ("pgqueue://h1,,h2", "list brokers"),
        ("pgqueue://:6789", "has no host"),
        ("pgqueue://h:0", "bad port"),
        ("pgqueue://h:70000", "bad port"),
        ("pgqueue://h:port", "bad port"),
        ("pgqueue://::1:6789", "IPv6 addresses in brackets"),
        ("pgqueue://[::1:6789", "bad broker address"),
        ("pgqueue://user:pw@h", r"put the token in \?token="),
        ("pgqueue://h/db", "no path"),
        ("pgqueue://h?pool=0", "pool must be a number from 1 to 64"),
        ("pgqueue://h?pool=four", "connection option pool"),
        ("pgqueue://h?timeout=-1", "timeout must be"),
        ("pgqueue://h?autobatch=maybe", "not a boolean"),
        ("pgqueue://h?batch_max_jobs=0", "batch_max_jobs must be"),
        ("pgqueue://h?liveness_timeout=0", "liveness_timeout must be"),
        ("pgqueue://h?token=", "token must be a non-empty string"),
        ("pgqueue://h?pool=1&pool=2", "given twice"),
        ("pgqueue://h?poool=2", "unknown connection option: poool"),
        ("pgqueue://h?namespace=app", "namespace needs a token"),
        ("pgqueue://h?token=abc&namespace=a%20b", "namespace must be"),
        ("pgqueue://h?tls=maybe", "not a boolean"),
        ("pgqueue://h?x", "bad query string"),
        ("redis://h", "must start with pgqueue://"),
    ],
)
def test_a_bad_url_is_a_config_error_that_says_what_is_wrong(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_url(url)


def test_tls_and_a_namespace_are_read_from_the_url(tmp_path: Path) -> None:
    settings = parse_url("pgqueue://h?token=s3cret&namespace=billing&tls=true")
    assert (settings.namespace, settings.tls, settings.tls_ca) == ("billing", True, None)
    assert settings.ssl_context() is not None
    assert parse_url("pgqueue://h").ssl_context() is None
    with pytest.raises(ConfigError, match="tls_ca: cannot load"):
        parse_url(f"pgqueue://h?tls_ca={tmp_path / 'missing.pem'}").ssl_context()


def test_a_bad_keyword_option_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown option: pool_size"):
        TcpTransport.from_url("pgqueue://h", pool_size=3)
    with pytest.raises(ConfigError, match="namespace needs a token"):
        open_transport("pgqueue://h", namespace="app")
    with pytest.raises(ConfigError, match="connect_timeout must be"):
        TcpTransport.from_url("pgqueue://h", connect_timeout=0)


def test_backoff_doubles_from_100_ms_to_a_5_s_cap_with_jitter_in_the_upper_half() -> None:
    backoff = Backoff()
    assert [backoff.delay(n, rand=lambda: 1.0) for n in range(1, 9)] == pytest.approx(
        [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]
    )
    assert backoff.delay(3, rand=lambda: 0.0) == pytest.approx(0.2)
    assert backoff.delay(10_000, rand=lambda: 0.5) == pytest.approx(3.75)
    assert all(0.05 <= backoff.delay(1) <= 0.1 for _ in range(100))


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Invalid or expired lock token for job j1", LeaseLost),
        ("Job not found or not active (or invalid token)", LeaseLost),
        ("Lock not found or invalid token", LeaseLost),
        ("Job j1 is already finalized", LeaseLost),
        ("Dependency job not found: d1", DependencyNotFound),
        ("Parent job not found: p1", DependencyNotFound),
        ("Dependency cycle through job x", DependencyNotFound),
        ("Job not found", JobNotFound),
        ("Worker not found", JobNotFound),
        ("Job not found or cannot be cancelled", JobNotFound),
        ("Cannot move job from state 'completed' to waiting", InvalidState),
        ("Job is not active (current state: waiting)", InvalidState),
        ("Cannot obliterate queue with active jobs (1 active; use force)", InvalidState),
        ("Job j2 is already completed", InvalidState),
        ("unknown DLQ config field: x", ValidationError),
        ("why must not contain NUL characters", ValidationError),
        ("Duplicate unique_key (extended TTL)", DuplicateJob),
        ("Not authenticated", AuthError),
        ("Invalid token", AuthError),
        (
            "the database connection broke after the write was sent; it may have committed",
            IndeterminateCommit,
        ),
        ("Unknown command: Nope", ProtocolError),
        ("jobs[2]: priority must be a number", ValidationError),
        ("Queue name contains invalid characters", ValidationError),
        ("count must be at most 1000", ValidationError),
        ("Lock token required for job j1", ValidationError),
        ("ACKB tokens length must match ids length", ValidationError),
        ("Internal server error", RemoteError),
        ("Rate limit exceeded", RemoteError),
    ],
)
def test_a_broker_error_text_becomes_the_packages_exception(
    text: str, kind: type[Exception]
) -> None:
    error = remote_error(text, "j1")
    assert type(error) is kind
    assert str(error) == text


def test_a_lease_error_names_the_job_of_its_text_or_of_the_request() -> None:
    lost = remote_error("Invalid or expired lock token for job abc", "other")
    assert isinstance(lost, LeaseLost) and lost.job_id == "abc"
    lost = remote_error("Lock not found or invalid token", "req-id")
    assert isinstance(lost, LeaseLost) and lost.job_id == "req-id"
