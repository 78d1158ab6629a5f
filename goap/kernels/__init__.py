"""Warp kernels, grouped by stage. Importing this package imports Warp; the rest of `goap` does not."""

from __future__ import annotations


def init_warp():
    """Import and initialise Warp once, without its start-up banner and per-module load lines."""
    import warp as wp

    wp.config.quiet = True
    if hasattr(wp, "LOG_WARNING"):
        wp.config.log_level = wp.LOG_WARNING
    wp.init()
    return wp
