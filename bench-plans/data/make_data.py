#!/usr/bin/env python3
"""Writes the benchmark's data set: 20 documents under docs/ and shop.json (orders, products,
prices, stock, customers). Deterministic (seeded); the files are committed, this script is how
they were made: `python3 make_data.py`."""
import json
import os
import random

rng = random.Random(29)
here = os.path.dirname(os.path.abspath(__file__))

topics = ["budget", "incident", "roadmap", "hiring", "security", "latency", "customer", "pricing",
          "migration", "release", "storage", "network", "compliance", "training", "capacity"]
filler = ["the", "team", "will", "review", "next", "quarter", "with", "a", "new", "plan", "for",
          "our", "service", "and", "its", "users", "after", "we", "agreed", "on", "clear", "goals",
          "while", "keeping", "costs", "under", "control", "every", "week", "report", "shows",
          "progress", "against", "targets", "that", "were", "set", "in", "spring", "meeting"]
titles = ["Quarterly budget review", "Incident review: checkout outage", "Platform roadmap",
          "Hiring plan", "Security audit findings", "Latency investigation", "Customer interviews",
          "Pricing experiment results", "Database migration plan", "Release retrospective",
          "Storage cost analysis", "Network upgrade proposal", "Compliance checklist",
          "Onboarding and training", "Capacity forecast", "Support backlog triage",
          "Vendor evaluation", "Architecture decision record", "Team offsite notes",
          "Annual planning memo"]

os.makedirs(os.path.join(here, "docs"), exist_ok=True)
for i, title in enumerate(titles, start=1):
    main = rng.sample(topics, 3)
    mean_len = rng.choice([8, 11, 14, 17, 21, 26, 31])
    sentences = []
    for _ in range(rng.randint(25, 70)):
        n = max(4, int(rng.gauss(mean_len, 3)))
        words = [rng.choice(main) if rng.random() < 0.18 else rng.choice(filler) for _ in range(n)]
        sentences.append(" ".join(words).capitalize() + ".")
    lines, line = [], ""
    for s in sentences:
        if line and len(line) + len(s) > 78:
            lines.append(line.rstrip())
            line = ""
        line += s + " "
    lines.append(line.rstrip())
    with open(os.path.join(here, "docs", f"doc-{i:02}.txt"), "w") as f:
        f.write(title + "\n\n" + "\n".join(lines) + "\n")

regions = ["north", "south", "east", "west"]
customers = []
first = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "John", "Radia", "Ken"]
last = ["Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Backus", "Perlman", "Thompson"]
countries = ["NO", "DE", "FR", "SE", "NL", "ES", "IT", "PL", "DK", "FI"]
for i in range(10):
    customers.append({"customer_id": f"C-{101 + i}", "name": f"{first[i]} {last[i]}",
                      "tier": rng.choice(["gold", "silver", "bronze"]), "country": countries[i],
                      "email": f"{first[i].lower()}.{last[i].lower()}@example.com",
                      "since": f"20{rng.randint(15, 25)}-{rng.randint(1, 12):02}-{rng.randint(1, 28):02}"})
names = ["Desk lamp", "Office chair", "Standing desk", "Monitor arm", "USB-C dock", "Keyboard",
         "Mouse", "Webcam", "Headset", "Notebook pack", "Whiteboard", "Cable kit"]
categories = ["furniture", "furniture", "furniture", "accessories", "electronics", "electronics",
              "electronics", "electronics", "electronics", "stationery", "stationery", "accessories"]
products = []
for i, (n, c) in enumerate(zip(names, categories)):
    products.append({"sku": f"SKU-{201 + i}", "name": n, "category": c,
                     "unit_price": round(rng.uniform(5, 400), 2), "currency": "USD",
                     "warehouse": rng.choice(["OSL-1", "HAM-2", "RTM-1"]),
                     "on_hand": rng.randint(0, 60), "reorder_level": rng.choice([10, 15, 20, 25])})
orders = []
for i in range(36):
    p = rng.choice(products)
    orders.append({"order_id": f"O-{5001 + i}", "customer_id": rng.choice(customers)["customer_id"],
                   "sku": p["sku"], "quantity": rng.randint(1, 12), "region": rng.choice(regions),
                   "date": f"2026-{rng.randint(9, 11):02}-{rng.randint(1, 28):02}"})
rates = {"USD": {"EUR": 0.92, "GBP": 0.79, "NOK": 10.6}}
with open(os.path.join(here, "shop.json"), "w") as f:
    json.dump({"customers": customers, "products": products, "orders": orders, "rates": rates}, f, indent=1)
    f.write("\n")
