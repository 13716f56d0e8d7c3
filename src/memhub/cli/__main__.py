"""``python -m memhub.cli``: the same as the ``memhub`` command."""

import sys

from memhub.cli import main

sys.exit(main())
