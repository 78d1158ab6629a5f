"""The options of ``goap train``, in a module that does not import torch, so that building the `goap` command
line stays fast and works without torch installed."""

from __future__ import annotations

import argparse

from goap.argtypes import fraction, output_path, positive_float, positive_int, random_seed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``goap train --data FILE [--epochs E] [--seed S] --out MODEL`` and its options.

    Values of the wrong form (``--lr inf``, ``--held-out 1.5``, ``--seed -7``) are usage errors naming the option.
    """
    parser.add_argument("--data", required=True, metavar="FILE", help="an outcome log (.npz) to train on")
    parser.add_argument("--out", required=True, type=output_path, metavar="MODEL",
                        help="where to write the model (.pt); checked before training starts")
    parser.add_argument("--epochs", type=positive_int, default=20, help="passes over the training rows (default 20)")
    parser.add_argument("--seed", type=random_seed, default=0, help="seeds the split, the weights and the batches")
    parser.add_argument("--domain", metavar="FILE",
                        help="the log's domain file (default: the known world whose domain the log is of)")
    parser.add_argument("--hidden", default="64,64", help="hidden layer sizes, comma-separated (default 64,64)")
    parser.add_argument("--batch-size", type=positive_int, default=512, help="minibatch size (default 512)")
    parser.add_argument("--lr", type=positive_float, default=3e-3, help="Adam's learning rate (default 0.003)")
    parser.add_argument("--held-out", type=fraction, default=0.2, help="fraction of rows held out (default 0.2)")
    parser.add_argument("--device", default="cpu", help="torch device to train on: cpu, cuda, cuda:N (default cpu)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
