"""``python -m demo ROLE ...``: one process of the demo run (the launcher starts these)."""

import sys

from demo.proc import main

sys.exit(main())
