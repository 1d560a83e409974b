"""PLACEHOLDER until its issue lands."""

from __future__ import annotations

import argparse
import sys


def run_watch(args: argparse.Namespace) -> int:
    print("ptmon watch: not implemented yet", file=sys.stderr)
    return 2
