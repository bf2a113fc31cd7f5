"""The tokens file, the token book and the access rules (pure, no broker)."""

from __future__ import annotations

import pytest

from pgqueue.errors import AuthError, ConfigError, Forbidden
from pgqueue.server.access import READ_COMMANDS, Credential, check_request, choose_namespace
from pgqueue.server.commands import COMMANDS
from pgqueue.server.tokens import TokenBook, TokenEntry, digest_of, format_entry, parse_tokens

SECRET = "s3cret-s3cret-s3cret"


def test_a_digest_is_sha256_of_the_secret_and_the_line_round_trips() -> None:
    digest = digest_of(SECRET)
    assert digest.startswith("sha256:") and len(digest) == 7 + 64
    entry = TokenEntry("billing", digest, ("billing", "shop"), read_only=True)
    assert format_entry(entry) == f"billing {digest} billing,shop ro"
    assert parse_tokens(format_entry(entry), "f") == [entry]


def test_the_file_skips_comments_and_defaults_to_read_write() -> None:
    text = f"# a comment\n\nops {digest_of(SECRET)} *   # every namespace\n"
    [entry] = parse_tokens(text, "tokens")
    assert (entry.name, entry.namespaces, entry.read_only) == ("ops", None, False)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("ops", "expected NAME DIGEST NAMESPACES"),
        ("ops plain-secret app", "the digest must be sha256:"),
        (f"ops sha256:{'z' * 64} app", "64 hex digits"),
        (f"ops {digest_of(SECRET)} app rx", "the mode must be rw or ro"),
        (f"ops {digest_of(SECRET)} 'app;drop' rw", "namespaces must be"),
    ],
)
def test_a_bad_line_names_its_file_and_line_but_never_its_content(line: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_tokens(f"# ok\n{line}\n", "/etc/pgqueue/tokens")
    assert caught.value.message.startswith("/etc/pgqueue/tokens:2: ")
    assert digest_of(SECRET)[7:] not in caught.value.message


def test_the_book_matches_secrets_by_digest_and_refuses_duplicates() -> None:
    entry = TokenEntry("a", digest_of(SECRET), ("a",))
    book = TokenBook([entry])
    assert book.match(SECRET) == entry
    assert book.match(SECRET + "x") is None
    assert book.match("") is None
    assert book.required and not TokenBook([]).required and TokenBook([], required=True).required
    with pytest.raises(ConfigError, match="token names must be unique: a"):
        TokenBook([entry, TokenEntry("a", digest_of("other"), None)])
    with pytest.raises(ConfigError, match="same digest"):
        TokenBook([entry, TokenEntry("b", digest_of(SECRET), None)])


def test_a_token_lands_in_its_first_namespace_or_the_brokers_own() -> None:
    bound = TokenEntry("a", digest_of(SECRET), ("a", "b"))
    served = {"main", "a", "b"}
    assert choose_namespace(bound, None, "main", served) == "a"
    assert choose_namespace(bound, "b", "main", served) == "b"
    with pytest.raises(AuthError, match="may not use namespace 'main'"):
        choose_namespace(bound, "main", "main", served)
    every = TokenEntry("ops", digest_of("x"), None)
    assert choose_namespace(every, None, "main", served) == "main"
    with pytest.raises(AuthError, match="may not use namespace 'elsewhere'"):
        choose_namespace(every, "elsewhere", "main", served)


def test_a_request_is_checked_against_the_book_as_it_is_now() -> None:
    credential = Credential(digest_of(SECRET), "a")
    writer = TokenBook([TokenEntry("a", credential.digest, ("a",))])
    reader = TokenBook([TokenEntry("a", credential.digest, ("a",), read_only=True)])
    check_request(writer, credential, "PUSH")
    check_request(reader, credential, "GetJob")
    with pytest.raises(Forbidden, match="Read-only token: PUSH changes data"):
        check_request(reader, credential, "PUSH")
    with pytest.raises(AuthError, match="Token revoked"):
        check_request(TokenBook([], required=True), credential, "GetJob")
    moved = TokenBook([TokenEntry("a", credential.digest, ("b",))])
    with pytest.raises(AuthError, match="Token revoked"):
        check_request(moved, credential, "GetJob")


def test_every_read_command_exists_and_no_write_is_listed_as_a_read() -> None:
    assert sorted(READ_COMMANDS - set(COMMANDS)) == []
    writes = {"PUSH", "PUSHB", "PULL", "PULLB", "ACK", "FAIL", "Cancel", "Obliterate", "Drain"}
    assert READ_COMMANDS.isdisjoint(writes)


def test_token_hash_prints_the_entry_of_a_secret_read_from_stdin() -> None:
    from click.testing import CliRunner

    from pgqueue.cli.main import cli

    shown = CliRunner().invoke(
        cli, ["token", "hash", "ci", "--namespace", "a", "--namespace", "b", "--read-only"],
        input=SECRET + "\n",
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert shown.output == f"ci {digest_of(SECRET)} a,b ro\n"
    short = CliRunner().invoke(cli, ["token", "hash", "ci", "--namespace", "a"], input="short\n")
    assert short.exit_code == 1


def test_the_log_filter_redacts_authorization_headers_and_bearer_credentials() -> None:
    import logging

    from pgqueue.cli.logs import SecretFilter

    def shown(msg: str, *args: object) -> str:
        record = logging.LogRecord("uvicorn.error", logging.DEBUG, "p", 1, msg, args, None)
        assert SecretFilter().filter(record)
        return record.getMessage()

    assert shown("< %s: %s", "authorization", f"Bearer {SECRET}") == "< authorization: [redacted]"
    assert shown(f"sent Bearer {SECRET}, then") == "sent Bearer [redacted], then"
    assert shown("nothing %s here", "secret") == "nothing secret here"
