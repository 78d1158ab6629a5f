"""A playable game on the embedding API: the player is a wolf among 2,000+ GOAP villagers and guards.

    python -m examples.game                                   # a window; arrows or WASD move, Space howls
    python -m examples.game --headless --script examples/game/demo.json --frames 300 --screenshot wolf.png
"""
