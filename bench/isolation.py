"""Isolated tools against their floor, side by side in one run: ``python bench/isolation.py``.

- round trip: one isolated no-op call through ``Executor.execute`` against
  ``ProcessPoolExecutor.submit(f).result()`` on a warm pool (best of several rounds);
- throughput: 1,000 isolated calls in one batch on 2 workers against
  ``ProcessPoolExecutor(2).map`` of the same function;
- stop: the time from a call's timeout to its worker being reaped.

Its rows go into bench/results.json (``--results PATH`` for another file, ``--results none``
for none); ``bench/run --readme`` puts them in the README.
"""

import concurrent.futures
import multiprocessing
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import agenttool as at  # noqa: E402

import results  # noqa: E402


def noop() -> str:
    """Does nothing."""
    return ""


def stuck() -> str:
    """Never returns."""
    time.sleep(3600)
    return ""


def best(fn, rounds: int = 5, n: int = 200) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - start) / n)
    return min(times)


def main() -> None:
    import isolation

    path = results.RESULTS
    if "--results" in sys.argv:
        path = sys.argv[sys.argv.index("--results") + 1]
    run = results.start_run("python bench/isolation.py")
    rows = []
    t = at.tool(isolation.noop, isolated=True)
    executor = at.Executor()
    one = [at.Job(t, at.Call("1", "{}"))]
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as pool:
        pool.submit(isolation.noop).result()
        list(executor.execute(one))
        ours = best(lambda: list(executor.execute(one)))
        floor = best(lambda: pool.submit(isolation.noop).result())
        print(
            f"round trip: isolated {ours * 1e6:.0f} us, submit().result() {floor * 1e6:.0f} us,"
            f" ratio {ours / floor:.2f}x"
        )
        rows.append(
            results.row(
                "isolation",
                "round trip",
                "an isolated no-op call, round trip (`python bench/isolation.py`)",
                f"{ours * 1e6:.0f} µs",
                f"`ProcessPoolExecutor.submit(f).result()` on a warm pool {floor * 1e6:.0f} µs",
                f"{ours / floor:.2f}x",
                "<= 1.3x",
                ours / floor <= 1.3,
            )
        )
        jobs = [at.Job(t, at.Call(str(i), "{}")) for i in range(1000)]
        # both sides warm with both workers started (a batch of one starts only one worker,
        # and spawning the second inside the timing cost about 100 ms); best of three
        list(at.Executor(max_parallel=2).execute(jobs[:50]))
        list(pool.map(isolation.noop_n, range(50)))
        ours = floor = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            list(at.Executor(max_parallel=2).execute(jobs))
            ours = min(ours, time.perf_counter() - start)
            start = time.perf_counter()
            list(pool.map(isolation.noop_n, range(1000)))
            floor = min(floor, time.perf_counter() - start)
        print(
            f"1,000 calls on 2 workers: isolated {ours * 1e3:.0f} ms, map {floor * 1e3:.0f} ms,"
            f" ratio {ours / floor:.2f}x"
        )
        rows.append(
            results.row(
                "isolation",
                "1,000 calls",
                "1,000 isolated calls on 2 workers",
                f"{ours * 1e3:.0f} ms",
                f"`ProcessPoolExecutor(2).map` {floor * 1e3:.0f} ms",
                f"{ours / floor:.2f}x",
                "<= 1.3x",
                ours / floor <= 1.3,
            )
        )
    hung = at.tool(isolation.stuck, isolated=True, timeout=0.5)
    stops = []
    for i in range(5):
        start = time.perf_counter()
        for _event in at.Executor().execute([at.Job(hung, at.Call(str(i), "{}"))]):
            pass  # the worker is reaped by the cancellation hook before the final event
        stops.append(time.perf_counter() - start - 0.5)
    print(f"timeout to worker gone and call complete: {max(stops) * 1e3:.1f} ms at most")
    rows.append(
        results.row(
            "isolation",
            "stop",
            "from an isolated call's timeout to its worker gone",
            f"{max(stops) * 1e3:.0f} ms at most (5 calls)",
            target="< 100 ms",
            met=max(stops) < 0.1,
        )
    )
    if path != "none":
        results.finish_run(run)
        results.write(run, rows, path, sections=["isolation"])
        print(f"figures written to {path}; `bench/run --readme` puts them in README.md")


def noop_n(_: int) -> str:
    return ""


if __name__ == "__main__":
    main()
