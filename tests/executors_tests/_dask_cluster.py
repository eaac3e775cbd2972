"""Start a real Dask LocalCluster (2 worker processes, 2 threads each) for the Dask tests.

Run as a script: prints the scheduler's address on its first line, then serves until its
standard input closes (the test fixture's end), and shuts the cluster down.
"""

from __future__ import annotations

import sys


def main() -> None:
    from distributed import LocalCluster

    with LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None
    ) as cluster:
        print(cluster.scheduler_address, flush=True)
        sys.stdin.read()  # until the test closes our stdin


if __name__ == "__main__":
    main()
