"""PLACEHOLDER until its issue lands."""

from __future__ import annotations

import argparse
import sys


def run_snapshot(args: argparse.Namespace) -> int:
    print("ptmon snapshot: not implemented yet", file=sys.stderr)
    return 2
