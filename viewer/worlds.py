"""Per-world drawing adapters, re-exported from `goap.worldview` (where world packages find them)."""

from goap.worldview import TEAM_COLOURS, SiteGroup, WorldView, make_view

GenericView = WorldView

__all__ = ["TEAM_COLOURS", "GenericView", "SiteGroup", "WorldView", "make_view"]
