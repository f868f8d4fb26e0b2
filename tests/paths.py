"""Where the tests find the repository and its recorded fixtures, wherever a test file sits."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
