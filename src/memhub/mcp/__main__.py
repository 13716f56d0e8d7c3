"""``python -m memhub.mcp``: the same as ``memhub mcp``."""

from __future__ import annotations

import sys

from memhub.mcp import main

sys.exit(main())
