"""``python -m pgqueue``: the same as the ``pgqueue`` command."""

from __future__ import annotations

import sys

from pgqueue.cli.main import main

sys.exit(main())
