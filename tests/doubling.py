"""Doubling tests: does twice the input take at most ~twice the time?

One way to measure it, shared by every such test, made for a noisy shared machine: the two
sizes alternate, the fastest of a few runs of each is compared, time is the process's own
CPU time (most of another process's load does not count), and the cyclic garbage collector
is off while a run is timed (a full collection walks the whole test session's heap, a cost
that grows with the suite, not with the input). A quadratic stage takes ~4x on twice the
input; the bound is 3x unless a test says otherwise, and a ratio over it is measured up to
twice more before it fails (a burst of load is not a regression). Build the inputs before:
`run(size)` should only do the work being timed.

Every test that times itself this way is marked `timing`, and `make test` runs those alone,
after the rest, in one process. Beside the other test worker, CI once measured `md-list` at
3.06x twice, each run 17 times slower than alone: on a shared machine a neighbour's load
still reaches a process's own CPU time (caches, memory bandwidth, a virtual machine's
stolen time). `assert_linear` refuses to measure in a test without the mark.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

REPEATS = 3
#: Measured again this many times at most while over the bound: a quadratic stage stays
#: over it every time, a burst of load does not last.
RETRIES = 2

#: Whether the running test is marked `timing` (set by tests/conftest.py for each test).
marked = False


def doubling_ratio(run: Callable[[int], object], n: int, repeats: int = REPEATS) -> float:
    """The time of `run(2 * n)` over the time of `run(n)`, each the fastest of `repeats`."""
    best = {n: float("inf"), 2 * n: float("inf")}
    gc.collect()
    gc.freeze()  # the session's heap is left out of the collections between runs
    try:
        for _ in range(repeats):
            for size in best:
                gc.collect()
                gc.disable()
                try:
                    began = time.process_time()
                    run(size)
                    best[size] = min(best[size], time.process_time() - began)
                finally:
                    gc.enable()
    finally:
        gc.unfreeze()
    return best[2 * n] / max(best[n], 1e-6)


def assert_linear(
    run: Callable[[int], object], n: int, *, bound: float = 3.0, what: str = "2x input"
) -> None:
    assert marked, "a test that times itself runs alone: mark it @pytest.mark.timing"
    ratio = doubling_ratio(run, n)
    for _ in range(RETRIES):
        if ratio < bound:
            break
        ratio = min(ratio, doubling_ratio(run, n))
    assert ratio < bound, f"{what} took {ratio:.2f}x the time"
