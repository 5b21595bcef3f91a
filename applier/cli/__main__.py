"""``python -m applier.cli``: the command line (:func:`applier.cli.main`)."""

from __future__ import annotations

import sys

from applier.cli import main

if __name__ == "__main__":
    sys.exit(main())
