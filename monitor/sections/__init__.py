"""The Dashboard's sections, each a pure function of one build's ``Context`` returning its own fields.

``ptmon.monitor.build.build_dashboard`` makes the context and joins the
sections into a Dashboard: ``identity``, ``trainer``, ``sync``, ``rollouts``
(and workers), ``engines`` (and GPUs), ``cost`` and ``intelligence``, one
module each. A section reads only the context (its inputs, and the
primitives it shares with other sections, computed once), never another
section's output.
"""
