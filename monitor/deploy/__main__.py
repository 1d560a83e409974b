"""``python -m ptmon.monitor.deploy DIR [--force]``: write the deploy assets (same as ``ptmon assets``)."""

import argparse
import sys

from ptmon.monitor.deploy.files import run_assets

parser = argparse.ArgumentParser(prog="python -m ptmon.monitor.deploy", description=__doc__)
parser.add_argument("dir", metavar="DIR")
parser.add_argument("--force", action="store_true", help="replace existing files that differ")
sys.exit(run_assets(parser.parse_args()))
