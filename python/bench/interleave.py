"""peers.py's engines timed side by side: in each round every engine runs one batch of the
same workload in turn, so a load spike on the shared machine hits all of them alike; each
cell is the median per call over the rounds (ROUNDS, 9 by default). Engines slower than
five seconds per call are left out (jsonata-python at N = 100,000: far behind in peers.py's
tables anyway). The answers
are checked first, as in peers.py.

    NS=1000 python python/bench/interleave.py            # W1-W4, N = 1000, reference data
    WORKLOADS=W1 PEERS_DATA=splitmix python python/bench/interleave.py
"""

import os
import statistics
import sys
import time

import peers

SLOW = 5.0  # seconds per call: slower engines are left out


def batch_size(f):
    """Calls per batch: about 20 ms' worth (at least one)."""
    t = time.perf_counter()
    f()
    d = time.perf_counter() - t
    return max(1, int(0.02 / max(d, 1e-9))), d


def main():
    ns = [int(n) for n in os.environ.get("NS", "1000").split()]
    workloads = os.environ.get("WORKLOADS", "W1 W2 W3 W4").split()
    rounds = int(os.environ.get("ROUNDS", "9"))
    for n in ns:
        rs = peers.records(n)
        want = peers.expected(rs)
        table = peers.engines(rs)
        print(f"\nN = {n}, data set {os.environ.get('PEERS_DATA', 'reference')}, {rounds} rounds\n")
        print("| workload | " + " | ".join(table) + " |")
        print("|---|" + "---:|" * len(table))
        for w in workloads:
            runs = {}
            for name, ws in table.items():
                f = ws.get(w)
                if f is None:
                    continue
                if not peers.correct(w, f(), want[w]):
                    sys.exit(f"N = {n}, {w}, {name}: wrong answer")
                size, once = batch_size(f)
                if once < SLOW:
                    runs[name] = (f, size, [])
            for _ in range(rounds):
                for f, size, times in runs.values():
                    t = time.perf_counter()
                    for _ in range(size):
                        f()
                    times.append((time.perf_counter() - t) / size)
            base = statistics.median(runs["tdsl"][2])
            cells = []
            for name in table:
                if name not in runs:
                    cells.append("n/a" if table[name].get(w) is None else f"> {SLOW:.0f} s")
                    continue
                t = statistics.median(runs[name][2])
                cells.append(f"{peers.fmt(t)} (×{t / base:.2f})")
            print(f"| {w} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
