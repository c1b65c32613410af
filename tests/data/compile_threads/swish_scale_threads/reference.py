"""Fixture (Atrex-Bench layout, written for our tests): y = x * sigmoid(x) * alpha, whose compiled form starts
background threads the way inductor's compile workers do (a pool that keeps starting timer threads). Eager, it
starts nothing. A candidate evaluated with `--compare-compile` must never be blamed for them."""

import threading
import time

import torch
from torch import nn

_POOL: list[threading.Thread] = []


@torch._dynamo.disable
def _start_pool_like_inductor() -> None:
    if _POOL:
        return

    def keep_starting_timers() -> None:
        end = time.monotonic() + 120.0
        while time.monotonic() < end:
            threading.Thread(target=time.sleep, args=(0.001,), name="subproc_worker_timer", daemon=True).start()
            time.sleep(0.005)

    pool = threading.Thread(target=keep_starting_timers, name="compile_worker_pool", daemon=True)
    _POOL.append(pool)
    pool.start()


class Model(nn.Module):
    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_compiling():
            _start_pool_like_inductor()
        return x * torch.sigmoid(x) * self.alpha
