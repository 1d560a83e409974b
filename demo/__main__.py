"""``python -m ptmon.demo ROLE ...``: one process of the demo run (the launcher starts these)."""

import sys

from ptmon.demo.proc import main

sys.exit(main())
