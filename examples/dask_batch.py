"""A batch of isolated tools on a Dask cluster: run ``python examples/dask_batch.py`` from the
root with ``distributed`` installed (``pip install distributed``).

The scheduling stays in this process: ``deposit`` names the resource ``"ledger"``, so its three
calls form a chain that runs in model order, one after the other, while the ``where`` calls run
alongside on whichever worker is free.  The functions run in the cluster's worker processes.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the repository root, where agenttool.py lives

import agenttool as at  # noqa: E402


def deposit(balance: int, amount: int) -> int:
    """Add ``amount`` to ``balance``."""
    return balance + amount


def where() -> str:
    """Whether this call ran in the agent's own process or another one."""
    host = int(os.environ.get("AGENT_PID", "0"))
    return "ran in the agent's process" if os.getpid() == host else "ran in a worker process"


def main() -> None:
    # The workers import the functions by name: from this file as a module, not as __main__.
    import dask_batch
    import distributed

    os.environ["AGENT_PID"] = str(os.getpid())  # the workers started below inherit it
    chained = at.tool(dask_batch.deposit, isolated=True, resource="ledger")
    free = at.tool(dask_batch.where, isolated=True)
    jobs = [at.Job(chained, at.Call(f"d{i}", {"balance": 100 * i, "amount": 5})) for i in range(3)]
    jobs += [at.Job(free, at.Call(f"w{i}", {})) for i in range(2)]
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        executor = at.Executor(workers=client.get_executor())
        for event in executor.execute(jobs):
            if event.final:
                what = event.error if event.error is not None else event.result.output
                print(f"call {jobs[event.index].call.id}: {what}")


if __name__ == "__main__":
    main()
