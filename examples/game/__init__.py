"""A playable game on the embedding API: the player is a wolf among 2,000+ GOAP villagers and guards.

    python -m examples.game                                   # a window; arrows or WASD move, Space howls
    python -m examples.game --headless --script examples/game/demo.json --frames 95 --screenshot wolf.png
    python -m examples.game --autopilot --record mine.json    # the wolf plays itself; its inputs as a script

Modules: `world` (the domain file's world: map, bodies, sense and act kernels), `game` (the rules and the game
kernels around the brain's tick), `render` (pygame drawing), `autopilot`, `main` (the command line).
"""
