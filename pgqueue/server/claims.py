"""The claims this broker handed out, for clients that write without a token.

A client that pulls without ``owner`` gets no token in its reply (bunqueue's
``useLocks: false`` workers, HTTP pulls); it acks, fails, renews and moves
the job without one, and the broker fills in the claim's token.  The rule
(docs/guarantees.md, "Token-less writes"): a token-less write acts only on a
claim that **the same client** made.

- The client that made a claim is the connection (or HTTP request) that
  pulled it.  It may always write its claim without the token.
- A claim whose token was handed out (the pull named an ``owner``) belongs to
  the client that got the token: nobody else gets it filled in.
- A claim made without ``owner`` is *shared* by the connections of this
  broker (a bunqueue pool pulls on one connection and acks on another; the
  wire carries nothing that tells its connections from another client's)
  only while no earlier claim of the job can still write: it is the job's
  first claim (fence 1), or the claim before it ended here by its client's
  own word (a FAIL, a move) and was itself shared-eligible.  A claim that
  ended without its client's word (its connection closed, the reaper took
  the lease, a drain, a claim through another broker) leaves its client able
  to send a late write, so the next claim of that job is written token-less
  only by the connection that pulled it.

Everything else answers ``Lock token required`` and changes nothing.  The
book is bounded: a forgotten claim needs its token, a forgotten clean
record makes the next claim connection-bound; both err on the safe side.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

from pgqueue.manager.completion import parse_fence

__all__ = ["CLAIM_BOOK_SIZE", "Claim", "ClaimBook"]

CLAIM_BOOK_SIZE = 200_000

V = TypeVar("V")


Claim = tuple[str, str, bool, bool]
"""One claim handed out by this broker: (token, client_id, chained: no earlier claim
of the job can still write, shared: made without owner, so other connections may
write it token-less).  A plain tuple of strings and booleans, which the collector
stops tracking at its first pass: a book of 200,000 claims (an SDK drain books every
pull, and its ACKs may go through another broker) is then no part of every full
collection's walk, as 200,000 dataclass objects were (~80 ms a collection)."""


class ClaimBook:
    """Claims by job id, and the fences up to which a job's claims ended cleanly."""

    def __init__(self, capacity: int = CLAIM_BOOK_SIZE) -> None:
        self._capacity = capacity
        self._claims: OrderedDict[str, Claim] = OrderedDict()
        self._clean: OrderedDict[str, int] = OrderedDict()

    def __len__(self) -> int:
        """Claims booked now (``/heapstats``, the dashboard's collections)."""
        return len(self._claims)

    @property
    def clean_records(self) -> int:
        """Jobs remembered as ended cleanly (``/heapstats``: ``claimBookClean``)."""
        return len(self._clean)

    def claimed(self, job_id: str, token: str, client_id: str, *, anonymous: bool) -> None:
        """A pull through this broker claimed ``job_id`` for ``client_id``."""
        fence = parse_fence(token) or 0
        previous = self._claims.pop(job_id, None)
        clean = self._clean.pop(job_id, None)
        chained = previous is None and (fence == 1 or (clean is not None and clean == fence - 1))
        self._put(self._claims, job_id, (token, client_id, chained, anonymous and chained))

    def token_for(self, job_id: str, client_id: str) -> str | None:
        """The token a token-less write of ``client_id`` may use, or None."""
        claim = self._claims.get(job_id)
        if claim is None or not (claim[1] == client_id or claim[3]):
            return None
        return claim[0]

    def ended(
        self, job_id: str, token: str | None, *, by_client: bool, finished: bool = False
    ) -> None:
        """The claim ``token`` of ``job_id`` (None: whichever is booked) is over:
        ``by_client`` when its client said so (ack, fail, a move), not when it
        was taken away (its connection closed).  A clean end is remembered for
        the job's next claim, except when ``finished`` (an ACK: the job is not
        claimed again, and a record per completed job would only fill the book
        to its bound; should it run again, its next claim is connection-bound,
        the safe side)."""
        claim = self._claims.get(job_id)
        if claim is None or (token is not None and claim[0] != token):
            return
        del self._claims[job_id]
        if by_client and claim[2] and not finished:
            fence = parse_fence(claim[0])
            if fence is not None:
                self._put(self._clean, job_id, fence)

    def _put(self, book: OrderedDict[str, V], key: str, value: V) -> None:
        book[key] = value
        book.move_to_end(key)
        while len(book) > self._capacity:
            book.popitem(last=False)
