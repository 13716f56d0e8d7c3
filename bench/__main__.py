"""Entry point so that ``python -m bench`` runs the benchmark."""

from bench.run import main

raise SystemExit(main())
