"""Make the repository root importable so tests can import ``bench`` (it is not an installed package)."""

import sys
from pathlib import Path

# bench/ lives beside src/ and is not installed; pytest's rootdir insertion does not reach it.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
