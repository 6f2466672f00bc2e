"""W1–W4 of bench-peers (bench-peers/README.md) called from Python, on the same records:
tdsl against jmespath, jsonata-python, common-expression-language (`cel`, Rust) and
cel-python (`celpy`), each where it can express the workload.

Every timed call includes passing the Python data in (tdsl converts the dict/list objects
on each `Program.eval`; cel-python's `json_to_cel` is timed too); compilation happens once,
before. The column `tdsl + Data` is tdsl with the records converted once, before, into a
`tdsl.Data` (what a host that keeps its records would do); the line under each table is
what that conversion takes. Each cell is the median of repeated calls (at least 5, about
0.3 s per cell).

The records come from one of two generators, as in bench-peers (`PEERS_DATA`):
`reference` (the default) is `../shared/peerbench`'s (its src/data.rs; bench-peers'
`reference`): record i is `inactive` when i % 3 == 0, scores (i * 37) % 100, 4 categories in
turn, 2 or 3 tags, age 20 + i % 50; `splitmix` is the port of bench-peers' first data set
(issue 32's tables). Before timing, every engine's answer to every workload is checked
against a plain-Python computation on the same records; a wrong answer is printed as
`WRONG` in its cell, on stderr, and makes the exit status 1.

    python python/bench/peers.py            # N = 1000 and 100000; prints a Markdown table
    NS=1000 python python/bench/peers.py
    PEERS_DATA=splitmix python python/bench/peers.py

Needs the tdsl package built in release (TDSL_PY_PROFILE=release scripts/python-package)
and python/bench/requirements.txt.
"""

import os
import statistics
import sys
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


def splitmix_records(n):
    """bench-peers' `splitmix` data set: random fields from a fixed seed (10 categories, one
    record in six passing W2's filter)."""
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


REFERENCE_CATEGORIES = ["a", "b", "c", "d"]
REFERENCE_TAGS = ["red", "green", "blue", "new", "vip", "beta", "eu"]


def reference_records(n):
    """`../shared/peerbench`'s records, field for field (its src/data.rs): two in three
    `active`, about a third passing W2's filter, 4 categories."""
    return [
        {
            "id": i, "name": f"user{i}", "status": "inactive" if i % 3 == 0 else "active",
            "score": (i * 37) % 100, "category": REFERENCE_CATEGORIES[i % 4],
            "tags": [REFERENCE_TAGS[(i + 3 * k) % len(REFERENCE_TAGS)] for k in range(2 + i % 2)],
            "profile": {"email": f"u{i}@x.org", "age": 20 + i % 50},
        }
        for i in range(n)
    ]


DATA_SETS = {"reference": reference_records, "splitmix": splitmix_records}


def records(n):
    name = os.environ.get("PEERS_DATA", "reference")
    if name not in DATA_SETS:
        sys.exit(f"PEERS_DATA={name!r}: the data sets are `reference` (the default) and `splitmix`")
    return DATA_SETS[name](n)


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
    """The answers, computed in plain Python. W3's counts in first-seen order; W4's ties in
    score keep the input order (a stable descending sort)."""
    active = [r["score"] for r in rs if r["status"] == "active" and r["score"] > 50]
    counts = {}
    for r in rs:
        counts[r["category"]] = counts.get(r["category"], 0) + 1
    order = sorted(rs, key=lambda r: -r["score"])
    return {"W1": rs[0]["profile"]["email"], "W2": sum(active), "W3": counts, "W4": ", ".join(r["name"] for r in order)}


def correct(w, got, want):
    """Whether an engine's answer is the expected one. W3: tdsl gives the counts as a list in
    first-seen order, jsonata an object category -> count."""
    if w == "W3":
        if isinstance(got, dict):
            return dict(got) == want
        return list(got) == list(want.values())
    if w == "W2":
        return not isinstance(got, bool) and isinstance(got, (int, float)) and got == want
    return got == want


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
    wrong = 0
    for n in ns:
        rs = records(n)
        want = expected(rs)
        table = engines(rs)
        names = list(table)
        print(f"\nN = {n}, data set {os.environ.get('PEERS_DATA', 'reference')}\n")
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
                if not correct(w, got, want[w]):
                    cells.append(f"WRONG ({str(got)[:20]})")
                    print(f"N = {n}, {w}, {name}: got {str(got)[:200]}, want {str(want[w])[:200]}", file=sys.stderr)
                    wrong += 1
                    continue
                t = measure(f)
                base = base or t
                cells.append(f"{fmt(t)} (×{t / base:.2f})")
            print(f"| {w} | " + " | ".join(cells) + " |")
        if hasattr(tdsl, "Data"):
            print(f"\n`tdsl.Data(records)`, once: {fmt(measure(lambda: tdsl.Data({'records': rs})))}")
    if wrong:
        sys.exit(f"{wrong} wrong answer(s), see above")


if __name__ == "__main__":
    main()
