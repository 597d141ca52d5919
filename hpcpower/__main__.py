"""``python -m hpcpower``: the ``hpcpower`` command."""

import sys

from hpcpower.cli import main

sys.exit(main())
