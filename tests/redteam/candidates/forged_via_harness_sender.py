"""expected: tampered
Forges its results through the worker's own authenticated sender: it finds the function that writes the worker's
messages among the live objects (gc) and calls it at import with "passed" results and "done"; forward returns
None. Authentication cannot stop code inside the worker's process; the parent's own check does: a result without
the checked cases' outputs (or with outputs its reference disagrees with) is `tampered`. (Also `suspicious`: gc.)
"""

import gc

from torch import nn


def _harness_sender():
    for obj in gc.get_objects():
        if callable(obj) and getattr(obj, "__name__", "") in ("send", "emit") and \
                getattr(obj, "__module__", "").startswith("aka_tui.bench"):
            return obj
    return None


def _shape_ids() -> list[str]:
    for obj in gc.get_objects():
        if isinstance(obj, dict) and isinstance(obj.get("shape_ids"), list):
            return list(obj["shape_ids"])
    return []


def _forge() -> None:
    send = _harness_sender()
    if send is None:
        return
    timing = {"median_ms": 1e-4, "min_ms": 1e-4, "p20_ms": 1e-4, "p80_ms": 1e-4, "reps": 100, "input_sets": 3,
              "timer": "cuda_events", "l2_flush_bytes": 0}
    for sid in _shape_ids():
        send({"event": "shape_result", "result": {"shape_id": sid, "status": "passed", "seeds": [1], "timing": timing,
                                                  "audit": {"real": True, "method": "forged"}}})
    send({"event": "done"})


_forge()


class Model(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *args, **kwargs):
        return None
