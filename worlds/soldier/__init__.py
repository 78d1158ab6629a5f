"""The soldier world: a F.E.A.R.-style grunt fighting, healing, restocking and retreating."""
