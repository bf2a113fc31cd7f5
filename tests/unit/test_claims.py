"""The broker's claim book: whose claims a token-less write may act on."""

from __future__ import annotations

from pgqueue.server.claims import ClaimBook


def test_a_first_claim_made_without_owner_is_shared_by_the_brokers_connections() -> None:
    book = ClaimBook()
    book.claimed("j", "1:a", "c1", anonymous=True)
    assert book.token_for("j", "c1") == "1:a"
    assert book.token_for("j", "c2") == "1:a"


def test_a_token_handed_out_is_filled_in_only_for_the_connection_that_pulled() -> None:
    book = ClaimBook()
    book.claimed("j", "1:a", "c1", anonymous=False)
    assert book.token_for("j", "c1") == "1:a"
    assert book.token_for("j", "c2") is None


def test_after_a_claim_was_taken_away_the_next_one_is_bound_to_its_connection() -> None:
    book = ClaimBook()
    book.claimed("j", "1:a", "c1", anonymous=True)
    book.ended("j", "1:a", by_client=False)  # its connection closed
    book.claimed("j", "2:b", "c2", anonymous=True)
    assert book.token_for("j", "c3") is None
    assert book.token_for("j", "c2") == "2:b"


def test_a_claim_that_never_ended_here_binds_the_next_claim_to_its_connection() -> None:
    book = ClaimBook()
    book.claimed("j", "1:a", "c1", anonymous=True)  # the reaper takes it elsewhere
    book.claimed("j", "2:b", "c2", anonymous=True)
    assert book.token_for("j", "c1") is None


def test_a_retry_after_the_clients_own_fail_is_shared_again() -> None:
    book = ClaimBook()
    book.claimed("j", "1:a", "c1", anonymous=True)
    book.ended("j", "1:a", by_client=True)
    book.claimed("j", "2:b", "c1", anonymous=True)
    assert book.token_for("j", "c2") == "2:b"


def test_a_later_claim_of_a_job_first_claimed_elsewhere_is_bound() -> None:
    book = ClaimBook()
    book.claimed("j", "3:c", "c1", anonymous=True)
    assert book.token_for("j", "c2") is None
    assert book.token_for("j", "c1") == "3:c"


def test_ending_an_older_claim_leaves_the_current_one_alone() -> None:
    book = ClaimBook()
    book.claimed("j", "1:a", "c1", anonymous=True)
    book.ended("j", "1:a", by_client=True)
    book.claimed("j", "2:b", "c2", anonymous=True)
    book.ended("j", "1:a", by_client=False)
    assert book.token_for("j", "c2") == "2:b"


def test_the_book_is_bounded() -> None:
    book = ClaimBook(capacity=2)
    for i in range(3):
        book.claimed(f"j{i}", "1:a", "c", anonymous=True)
    assert book.token_for("j0", "c") is None
    assert book.token_for("j2", "c") == "1:a"


def test_completed_jobs_leave_nothing_in_the_book() -> None:
    # A completed job is not claimed again: remembering that its claim ended
    # cleanly only filled the book to its bound (the soak's broker RSS).
    book = ClaimBook()
    for i in range(1000):
        book.claimed(f"j{i}", "1:a", "c", anonymous=True)
        book.ended(f"j{i}", "1:a", by_client=True, finished=True)
    assert len(book) == 0
    assert book.clean_records == 0


def test_a_fail_that_retries_still_leaves_its_clean_record() -> None:
    book = ClaimBook()
    book.claimed("j", "1:a", "c1", anonymous=True)
    book.ended("j", "1:a", by_client=True)
    assert book.clean_records == 1
    book.claimed("j", "2:b", "c1", anonymous=True)
    assert book.clean_records == 0
    assert book.token_for("j", "c2") == "2:b"


def test_booked_claims_are_no_part_of_the_collectors_walk() -> None:
    """A claim is a tuple of strings and booleans: after one collection the collector
    no longer tracks it (a full book is 200,000 of them; objects it tracks are walked
    by every full collection)."""
    import gc

    book = ClaimBook()
    for i in range(100):
        book.claimed(f"j{i}", f"1:t{i}", "c", anonymous=bool(i % 2))
    gc.collect()
    assert not any(gc.is_tracked(claim) for claim in book._claims.values())
    assert book.token_for("j1", "other") == "1:t1" and book.token_for("j2", "other") is None
