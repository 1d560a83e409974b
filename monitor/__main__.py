import sys

from ptmon.monitor.cli import main

sys.exit(main())
