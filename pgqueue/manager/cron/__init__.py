"""Cron schedulers and repeatable jobs (bunqueue's Cron commands, BullMQ's job
schedulers, the ``repeat`` job option); the ticker that fires them runs in
:mod:`pgqueue.maintenance.cron_ticker`."""

from __future__ import annotations
