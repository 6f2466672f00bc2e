#!/usr/bin/env python3
"""The benchmark's tools, one subcommand each (`exec:./bin/tool.py NAME` in the .tool files):
arguments as a JSON object on standard input, the response as a JSON object on standard
output. Deterministic: they read the committed data set under ../../data."""
import hashlib
import json
import os
import re
import sys

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data")
STOP = {"the", "a", "and", "for", "with", "our", "its", "on", "in", "we", "that", "were", "will", "after", "while", "under", "every", "next", "new", "set"}


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def shop():
    with open(os.path.join(DATA, "shop.json")) as f:
        return json.load(f)


def document(doc_id):
    if not re.fullmatch(r"doc-\d\d", doc_id or ""):
        return None, f"`{doc_id}` is not a document id (doc-NN)"
    path = os.path.join(DATA, "docs", doc_id + ".txt")
    if not os.path.exists(path):
        return None, f"no document `{doc_id}` in the library"
    with open(path) as f:
        return f.read(), None


def list_documents(args):
    if args.get("folder") != "reports":
        fail(f"no folder `{args.get('folder')}` (there is: reports)")
    out = []
    for name in sorted(os.listdir(os.path.join(DATA, "docs"))):
        text, _ = document(name[:-4])
        out.append({"id": name[:-4], "title": text.splitlines()[0], "format": "text/plain"})
    return {"folder": "reports", "count": len(out), "documents": out}


def document_stats(args):
    text, error = document(args.get("document_id"))
    if error:
        fail(error)
    body = text.split("\n", 1)[1]
    words = len(body.split())
    sentences = len(re.findall(r"[.!?]", body))
    lines = len(text.splitlines())
    return {"id": args["document_id"], "title": text.splitlines()[0], "words": words, "sentences": sentences,
            "words_per_sentence": round(words / sentences, 2), "pages": lines // 40 + 1,
            "reading_minutes": round(words / 230, 1)}


def validate_document(args):
    text, error = document(args.get("document_id"))
    return {"id": args.get("document_id"), "is_valid": error is None, "error": error}


def extract_keywords(args):
    text, error = document(args.get("document_id"))
    if error:
        fail(error)
    counts = {}
    for w in re.findall(r"[a-z]+", text.split("\n", 1)[1].lower()):
        if len(w) > 3 and w not in STOP:
            counts[w] = counts.get(w, 0) + 1
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[: int(args.get("top") or 5)]
    return {"id": args["document_id"], "keywords": [{"word": w, "count": c} for w, c in top]}


def list_orders(args):
    orders = shop()["orders"]
    region = args.get("region")
    if region:
        orders = [o for o in orders if o["region"] == region]
    return {"count": len(orders), "orders": orders}


def list_products(args):
    products = shop()["products"]
    category = args.get("category")
    if category:
        products = [p for p in products if p["category"] == category]
    return {"count": len(products), "products": [{"sku": p["sku"], "name": p["name"], "category": p["category"]} for p in products]}


def product(sku):
    for p in shop()["products"]:
        if p["sku"] == sku:
            return p
    fail(f"no product `{sku}`")


def get_price(args):
    p = product(args.get("sku"))
    return {"sku": p["sku"], "name": p["name"], "unit_price": p["unit_price"], "currency": p["currency"]}


def get_stock(args):
    p = product(args.get("sku"))
    return {"sku": p["sku"], "warehouse": p["warehouse"], "on_hand": p["on_hand"], "reorder_level": p["reorder_level"]}


def get_customer(args):
    for c in shop()["customers"]:
        if c["customer_id"] == args.get("customer_id"):
            return c
    fail(f"no customer `{args.get('customer_id')}`")


def convert_currency(args):
    rate = shop()["rates"].get(args.get("from"), {}).get(args.get("to"))
    if rate is None:
        fail(f"no rate from {args.get('from')} to {args.get('to')}")
    return {"amount": round(args["amount"] * rate, 2), "currency": args["to"], "rate": rate}


def write_report(args):
    lines = args.get("lines") or []
    digest = hashlib.sha256(json.dumps([args.get("title"), lines]).encode()).hexdigest()[:10]
    return {"report_id": "R-" + digest, "title": args.get("title"), "line_count": len(lines)}


TOOLS = {f.__name__: f for f in [list_documents, document_stats, validate_document, extract_keywords, list_orders,
                                 list_products, get_price, get_stock, get_customer, convert_currency, write_report]}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in TOOLS:
        fail("usage: tool.py NAME (one of: " + ", ".join(TOOLS) + ")")
    json.dump(TOOLS[sys.argv[1]](json.load(sys.stdin)), sys.stdout)
    print()
