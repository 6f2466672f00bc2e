"""W1–W4 of bench-peers (bench-peers/README.md) called from Python, on the same records:
tdsl against jmespath, jsonata-python, common-expression-language (`cel`, Rust) and
cel-python (`celpy`), each where it can express the workload.

Every timed call includes passing the Python data in (tdsl converts the dict/list objects
on each `Program.eval`; cel-python's `json_to_cel` is timed too); compilation happens once,
before. The column `tdsl + Data` is tdsl with the records converted once, before, into a
`tdsl.Data` (what a host that keeps its records would do); the line under each table is
what that conversion takes. Each cell is the median of repeated calls (at least 5, about
0.3 s per cell).

    python python/bench/peers.py            # N = 1000 and 100000; prints a Markdown table
    NS=1000 python python/bench/peers.py

Needs the tdsl package built in release (TDSL_PY_PROFILE=release scripts/python-package)
and python/bench/requirements.txt.
"""

import os
import statistics
import time

import tdsl

STATUSES = ["active", "inactive", "pending"]
CATEGORIES = ["books", "music", "games", "sports", "garden", "tools", "toys", "food", "health", "travel"]
TAGS = ["new", "sale", "hot", "eco", "gift", "vip", "bulk", "rare"]
M64 = (1 << 64) - 1


class SplitMix:
    """bench-peers/src/data.rs's generator: the same records."""

    def __init__(self, seed):
        self.s = seed

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def below(self, n):
        return self.next() % n


def records(n):
    rng = SplitMix(0x7D512024)
    out = []
    for i in range(n):
        status = STATUSES[rng.below(3)]
        score = rng.below(101)
        category = CATEGORIES[rng.below(10)]
        ntags = 2 + rng.below(3)
        tags = [TAGS[rng.below(len(TAGS))] for _ in range(ntags)]
        age = 18 + rng.below(63)
        out.append({
            "id": i, "name": f"user{i}", "status": status, "score": score, "category": category,
            "tags": tags, "profile": {"email": f"user{i}@example.com", "age": age},
        })
    return out


TDSL = {
    "W1": "profile.email",
    "W2": "sum(array=filter(array=records, condition_string=\"item.status == 'active' and item.score > 50\"), item_path=\"item.score\")",
    "W3": "pipeline(group_by(array=records, key_path=\"item.category\"), [map(array=values(current), template=length(item))])",
    "W4": "join(array=map(array=sort(array=records, key_path=\"item.score\", direction=\"desc\"), template=\"item.name\"), separator=\", \")",
}
JMES = {
    "W1": "profile.email",
    "W2": "sum([?status=='active' && score > `50`].score)",
    "W4": "join(', ', map(&name, reverse(sort_by(reverse(@), &score))))",
}
JSONATA = {
    "W1": "profile.email",
    "W2": "$sum(records[status='active' and score>50].score)",
    "W3": "records{category: $count($)}",
    "W4": "$join((records^(>score)).name, ', ')",
}


def engines(rs):
    rec = rs[0]
    data = {"records": rs}
    out = {}
    progs = {w: tdsl.compile(e) for w, e in TDSL.items()}
    out["tdsl"] = {
        "W1": lambda: progs["W1"].eval(rec),
        "W2": lambda: progs["W2"].eval(data),
        "W3": lambda: progs["W3"].eval(data),
        "W4": lambda: progs["W4"].eval(data),
    }
    if hasattr(tdsl, "Data"):
        rec_once, data_once = tdsl.Data(rec), tdsl.Data(data)
        out["tdsl + Data"] = {
            "W1": lambda: progs["W1"].eval(rec_once),
            "W2": lambda: progs["W2"].eval(data_once),
            "W3": lambda: progs["W3"].eval(data_once),
            "W4": lambda: progs["W4"].eval(data_once),
        }
    try:
        import jmespath

        j = {w: jmespath.compile(e) for w, e in JMES.items()}
        out["jmespath"] = {"W1": lambda: j["W1"].search(rec), "W2": lambda: j["W2"].search(rs), "W4": lambda: j["W4"].search(rs)}
    except ImportError:
        pass
    try:
        import jsonata

        js = {w: jsonata.Jsonata(e) for w, e in JSONATA.items()}
        out["jsonata-python"] = {
            "W1": lambda: js["W1"].evaluate(rec),
            "W2": lambda: js["W2"].evaluate(data),
            "W3": lambda: js["W3"].evaluate(data),
            "W4": lambda: js["W4"].evaluate(data),
        }
    except ImportError:
        pass
    try:
        import cel

        c1 = cel.compile("r.profile.email")
        out["common-expression-language"] = {"W1": lambda: c1.execute({"r": rec})}
    except ImportError:
        pass
    try:
        import celpy

        env = celpy.Environment()
        p1 = env.program(env.compile("r.profile.email"))
        out["cel-python"] = {"W1": lambda: p1.evaluate({"r": celpy.json_to_cel(rec)})}
    except ImportError:
        pass
    return out


def expected(rs):
    active = [r["score"] for r in rs if r["status"] == "active" and r["score"] > 50]
    order = sorted(rs, key=lambda r: -r["score"])
    return {"W1": rs[0]["profile"]["email"], "W2": sum(active), "W4": ", ".join(r["name"] for r in order)}


def measure(f, budget=0.3):
    times = []
    spent = 0.0
    while len(times) < 5 or (spent < budget and len(times) < 10_000):
        t = time.perf_counter()
        f()
        d = time.perf_counter() - t
        times.append(d)
        spent += d
        if d > 5:  # a very slow cell: one more is enough
            if len(times) >= 2:
                break
    return statistics.median(times)


def fmt(s):
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.2f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def main():
    ns = [int(n) for n in os.environ.get("NS", "1000 100000").split()]
    for n in ns:
        rs = records(n)
        want = expected(rs)
        table = engines(rs)
        names = list(table)
        print(f"\nN = {n}\n")
        print("| workload | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        for w in ["W1", "W2", "W3", "W4"]:
            cells = []
            base = None
            for name in names:
                f = table[name].get(w)
                if f is None:
                    cells.append("n/a")
                    continue
                got = f()
                if w in want and got != want[w] and not (isinstance(got, float) and got == want[w]):
                    cells.append(f"WRONG ({str(got)[:20]})")
                    continue
                t = measure(f)
                base = base or t
                cells.append(f"{fmt(t)} (×{t / base:.2f})")
            print(f"| {w} | " + " | ".join(cells) + " |")
        if hasattr(tdsl, "Data"):
            print(f"\n`tdsl.Data(records)`, once: {fmt(measure(lambda: tdsl.Data({'records': rs})))}")


if __name__ == "__main__":
    main()
