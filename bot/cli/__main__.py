"""``python -m bot.cli``: the `gpuwhy` program."""

import sys

from bot.cli.main import run

sys.exit(run())
