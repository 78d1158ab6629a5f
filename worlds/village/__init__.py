"""The village world: a villager working an eight-place economy of wood, ore, food, coins and needs."""
