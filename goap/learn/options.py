"""The options of ``goap train``, in a module that does not import torch, so that building the `goap` command
line stays fast and works without torch installed."""

from __future__ import annotations

import argparse

from goap.argtypes import fraction, non_negative_int, output_path, positive_float, positive_int, random_seed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``goap train --data FILE... [--epochs E] [--seed S] --out MODEL`` and its options, and ``goap train --rounds
    K --world NAME --out MODEL`` (`goap.learn.rounds`).

    Values of the wrong form (``--lr inf``, ``--held-out 1.5``, ``--seed -7``) are usage errors naming the option.
    """
    parser.add_argument("--data", nargs="+", metavar="FILE",
                        help="outcome logs (.npz) to train on, or folders of them (every *.npz, as `goap sweep "
                             "--log-outcomes DIR` writes); with --rounds, the rows to start from")
    parser.add_argument("--out", required=True, type=output_path, metavar="MODEL",
                        help="where to write the model (.pt); checked before training starts")
    parser.add_argument("--epochs", type=positive_int, default=20, help="passes over the training rows (default 20)")
    parser.add_argument("--seed", type=random_seed, default=0, help="seeds the split, the weights and the batches")
    parser.add_argument("--domain", metavar="FILE",
                        help="the log's domain file (default: the known world whose domain the log is of)")
    parser.add_argument("--hidden", default=None,
                        help="hidden layer sizes, comma-separated (default 64,64; 32 with --rounds)")
    parser.add_argument("--batch-size", type=positive_int, default=512, help="minibatch size (default 512)")
    parser.add_argument("--lr", type=positive_float, default=3e-3, help="Adam's learning rate (default 0.003)")
    parser.add_argument("--held-out", type=fraction, default=0.2, help="fraction of rows held out (default 0.2)")
    parser.add_argument("--device", default="cpu", help="torch device to train on: cpu, cuda, cuda:N (default cpu)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    rounds = parser.add_argument_group("learning in rounds (goap.learn.rounds)")
    rounds.add_argument("--rounds", type=positive_int, default=None, metavar="K",
                        help="collect on a world, train, redeploy the model, K times, on fresh seeds; then compare "
                             "with priorities (needs --world)")
    rounds.add_argument("--world", metavar="NAME", help="the world of the rounds (see goap worlds)")
    rounds.add_argument("--agents", type=positive_int, default=2000, help="agents per run (default 2000)")
    rounds.add_argument("--ticks", type=positive_int, default=600, help="ticks per run (default 600)")
    rounds.add_argument("--compare-seeds", type=non_negative_int, default=3, metavar="N",
                        help="fresh seeds of the final comparison, priority against utility (default 3; 0: none)")
    rounds.add_argument("--beta", default="auto", help="weight of the value term, a number or 'auto' (default)")
    rounds.add_argument("--gamma", default="auto",
                        help="weight of the plan-cost term, a number or 'auto' (default: 2 mean priority / mean cost)")
    rounds.add_argument("--every", type=positive_int, default=16,
                        help="the selector scores each agent that pursues a goal every E ticks (default 16)")
    rounds.add_argument("--plan-budget", type=positive_int, default=None,
                        help="agents planned per tick (default: the world's)")
    rounds.add_argument("--warp-device", default=None, help="Warp device of the runs (default: Warp's)")
    rounds.add_argument("--json", type=output_path, metavar="FILE", help="write every number of the rounds here")
