//! The suite: each task's prompt, its plan's arguments, and the direct way — a scripted
//! client doing what a model does with one tool call at a time, working the answer out
//! from the results itself (so the plan's transforms are checked against independent code).

use serde_json::{json, Map, Value as Json};

use crate::Client;

/// One task of the suite; its plan is `plans/<id>.json`.
#[derive(Clone, Debug)]
pub struct Task {
    pub id: &'static str,
    /// What it shows.
    pub shape: &'static str,
    /// The user's request: the same text enters the context both ways.
    pub prompt: &'static str,
    /// The plan's arguments (`run_plan`'s `arguments`).
    pub arguments: fn() -> Json,
    /// The direct way: calls the tools, answers.
    pub direct: fn(&mut Client) -> Result<Json, String>,
}

/// The suite, in report order.
pub fn tasks() -> Vec<Task> {
    vec![
        Task {
            id: "densest",
            shape: "list, fan out 20, sort, top 3",
            prompt: "Analyse the 20 documents in the folder `reports` and tell me the 3 densest ones: the most words per sentence. Answer as JSON {\"densest\": [{id, title, words_per_sentence}]}, densest first.",
            arguments: no_arguments,
            direct: densest,
        },
        Task {
            id: "keywords",
            shape: "list, fan out 20, flatten, group, count",
            prompt: "For each document in `reports`, take its top 5 keywords. Which 5 keywords appear in the most documents' top 5? Answer as JSON {\"common\": [{word, documents, mentions}]}: most documents first, ties by total mentions, then by first appearance.",
            arguments: no_arguments,
            direct: keywords,
        },
        Task {
            id: "validate",
            shape: "validate 12, branch: stats of the valid, report the invalid",
            prompt: "Validate these documents: doc-01, doc-04, doc-7, doc-09, doc-12, doc-21, doc-15, report-03, doc-17, doc-18, doc-19, doc-20. Total the words of the valid ones, and if any are invalid file a report titled \"Documents that failed validation\" with one line `ID: ERROR` per invalid document. Answer as JSON {valid_count, total_words, report_id}.",
            arguments: || json!({"document_ids": VALIDATE_IDS}),
            direct: validate,
        },
        Task {
            id: "revenue",
            shape: "join orders × prices, group by region, sum",
            prompt: "What is the revenue per region? Use every order's quantity times its product's current unit price. Answer as JSON {\"revenue\": [{region, revenue}]}, highest first, rounded to cents.",
            arguments: no_arguments,
            direct: revenue,
        },
        Task {
            id: "customers",
            shape: "join, group, top 3, then fan out on the result",
            prompt: "Which 3 customers spent the most (quantity times current unit price over all their orders)? Give their name, country, tier and amount spent, as JSON {\"top_customers\": [{name, country, tier, spent}]}, biggest spender first.",
            arguments: no_arguments,
            direct: customers,
        },
        Task {
            id: "restock",
            shape: "list, fan out 12, filter",
            prompt: "Which products have less stock on hand than their reorder level? Answer as JSON {\"reorder\": [{sku, name, on_hand, reorder_level}]} in catalogue order.",
            arguments: no_arguments,
            direct: restock,
        },
        Task {
            id: "inventory",
            shape: "two fan-outs of 12 in parallel, zip, sum, convert",
            prompt: "What is the stock on hand worth at current prices? Answer as JSON {total_eur, total_usd}: the USD total rounded to cents, converted to EUR.",
            arguments: no_arguments,
            direct: inventory,
        },
        Task {
            id: "biggest",
            shape: "a chain of 2 calls",
            prompt: "Who placed the largest order (by quantity) in the west region, and what is their tier? Answer as JSON {order_id, quantity, customer, tier}.",
            arguments: no_arguments,
            direct: biggest,
        },
        Task {
            id: "units",
            shape: "1 call, group and sum",
            prompt: "How many units were ordered in each region? Answer as JSON {\"units\": [{region, units}]}, regions in order of first appearance.",
            arguments: no_arguments,
            direct: units,
        },
        Task {
            id: "long_report",
            shape: "list, fan out 20, filter, write a report",
            prompt: "File a report titled \"Documents over 3 minutes of reading\" listing every document of `reports` that takes more than 3 minutes to read, one line `ID TITLE: N min` each. Answer as JSON {report_id, documents}.",
            arguments: no_arguments,
            direct: long_report,
        },
    ]
}

const VALIDATE_IDS: [&str; 12] = [
    "doc-01",
    "doc-04",
    "doc-7",
    "doc-09",
    "doc-12",
    "doc-21",
    "doc-15",
    "report-03",
    "doc-17",
    "doc-18",
    "doc-19",
    "doc-20",
];

fn no_arguments() -> Json {
    json!({})
}

pub(crate) fn list<'a>(v: &'a Json, key: &str) -> Result<&'a Vec<Json>, String> {
    v[key].as_array().ok_or_else(|| format!("no list `{key}` in {v}"))
}

pub(crate) fn num(v: &Json, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(0.0)
}

pub(crate) fn text(v: &Json, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_string()
}

pub(crate) fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A stable sort, largest first.
pub(crate) fn sort_desc(items: &mut [Json], key: &str) {
    items.sort_by(|a, b| num(b, key).total_cmp(&num(a, key)));
}

/// Keys in order of first appearance, each with its elements.
fn group<'a>(items: impl IntoIterator<Item = &'a Json>, key: &str) -> Vec<(String, Vec<&'a Json>)> {
    let mut out: Vec<(String, Vec<&Json>)> = Vec::new();
    for item in items {
        let k = text(item, key);
        match out.iter_mut().find(|(g, _)| *g == k) {
            Some((_, members)) => members.push(item),
            None => out.push((k, vec![item])),
        }
    }
    out
}

fn document_ids(c: &mut Client) -> Result<Vec<String>, String> {
    let docs = c.call("list_documents", json!({"folder": "reports"}))?;
    Ok(list(&docs, "documents")?.iter().map(|d| text(d, "id")).collect())
}

fn each<'a>(tool: &'a str, key: &str, ids: &[String], extra: &Json) -> Vec<(&'a str, Json)> {
    ids.iter()
        .map(|id| {
            let mut args = Map::new();
            args.insert(key.to_string(), json!(id));
            if let Some(more) = extra.as_object() {
                args.extend(more.clone());
            }
            (tool, Json::Object(args))
        })
        .collect()
}

fn densest(c: &mut Client) -> Result<Json, String> {
    let ids = document_ids(c)?;
    let mut stats = c.batch(each("document_stats", "document_id", &ids, &json!({})))?;
    sort_desc(&mut stats, "words_per_sentence");
    let top: Vec<Json> = stats
        .iter()
        .take(3)
        .map(|s| json!({"id": s["id"], "title": s["title"], "words_per_sentence": s["words_per_sentence"]}))
        .collect();
    Ok(json!({ "densest": top }))
}

fn keywords(c: &mut Client) -> Result<Json, String> {
    let ids = document_ids(c)?;
    let found = c.batch(each("extract_keywords", "document_id", &ids, &json!({"top": 5})))?;
    let mut all = Vec::new();
    for f in &found {
        all.extend(list(f, "keywords")?.iter());
    }
    let mut counts: Vec<Json> = group(all, "word")
        .into_iter()
        .map(|(word, ms)| {
            let mentions: f64 = ms.iter().map(|m| num(m, "count")).sum();
            json!({"word": word, "documents": ms.len(), "mentions": mentions})
        })
        .collect();
    sort_desc(&mut counts, "mentions");
    sort_desc(&mut counts, "documents");
    counts.truncate(5);
    Ok(json!({ "common": counts }))
}

fn validate(c: &mut Client) -> Result<Json, String> {
    let ids: Vec<String> = VALIDATE_IDS.iter().map(|s| s.to_string()).collect();
    let checked = c.batch(each("validate_document", "document_id", &ids, &json!({})))?;
    let valid: Vec<String> = checked.iter().filter(|v| v["is_valid"] == json!(true)).map(|v| text(v, "id")).collect();
    let errors: Vec<String> = checked
        .iter()
        .filter(|v| v["is_valid"] != json!(true))
        .map(|v| format!("{}: {}", text(v, "id"), text(v, "error")))
        .collect();
    let stats = c.batch(each("document_stats", "document_id", &valid, &json!({})))?;
    let total: f64 = stats.iter().map(|s| num(s, "words")).sum();
    let report_id = if errors.is_empty() {
        Json::Null
    } else {
        let r = c.call("write_report", json!({"title": "Documents that failed validation", "lines": errors}))?;
        r["report_id"].clone()
    };
    Ok(json!({"valid_count": valid.len(), "total_words": total, "report_id": report_id}))
}

/// The orders, and each order's amount at the current prices (one get_price per SKU).
fn priced_orders(c: &mut Client) -> Result<Vec<(Json, f64)>, String> {
    let orders = list(&c.call("list_orders", json!({}))?, "orders")?.clone();
    let mut skus: Vec<String> = Vec::new();
    for o in &orders {
        let s = text(o, "sku");
        if !skus.contains(&s) {
            skus.push(s);
        }
    }
    let prices = c.batch(each("get_price", "sku", &skus, &json!({})))?;
    let price = |sku: &str| prices.iter().find(|p| p["sku"] == json!(sku)).map(|p| num(p, "unit_price"));
    orders
        .into_iter()
        .map(|o| {
            let p = price(&text(&o, "sku")).ok_or_else(|| format!("no price for {o}"))?;
            let amount = num(&o, "quantity") * p;
            Ok((o, amount))
        })
        .collect()
}

fn revenue(c: &mut Client) -> Result<Json, String> {
    let lines = priced_orders(c)?;
    let regions = group(lines.iter().map(|(o, _)| o), "region");
    let mut out: Vec<Json> = regions
        .iter()
        .map(|(r, _)| {
            let sum: f64 = lines.iter().filter(|(o, _)| text(o, "region") == *r).map(|(_, a)| a).sum();
            json!({"region": r, "revenue": round2(sum)})
        })
        .collect();
    sort_desc(&mut out, "revenue");
    Ok(json!({ "revenue": out }))
}

fn customers(c: &mut Client) -> Result<Json, String> {
    let lines = priced_orders(c)?;
    let by = group(lines.iter().map(|(o, _)| o), "customer_id");
    let mut spent: Vec<Json> = by
        .iter()
        .map(|(id, _)| {
            let sum: f64 = lines.iter().filter(|(o, _)| text(o, "customer_id") == *id).map(|(_, a)| a).sum();
            json!({"customer_id": id, "spent": round2(sum)})
        })
        .collect();
    sort_desc(&mut spent, "spent");
    spent.truncate(3);
    let ids: Vec<String> = spent.iter().map(|s| text(s, "customer_id")).collect();
    let records = c.batch(each("get_customer", "customer_id", &ids, &json!({})))?;
    let top: Vec<Json> = spent
        .iter()
        .zip(&records)
        .map(|(s, r)| json!({"name": r["name"], "country": r["country"], "tier": r["tier"], "spent": s["spent"]}))
        .collect();
    Ok(json!({ "top_customers": top }))
}

fn products(c: &mut Client) -> Result<Vec<Json>, String> {
    Ok(list(&c.call("list_products", json!({}))?, "products")?.clone())
}

fn restock(c: &mut Client) -> Result<Json, String> {
    let products = products(c)?;
    let skus: Vec<String> = products.iter().map(|p| text(p, "sku")).collect();
    let stock = c.batch(each("get_stock", "sku", &skus, &json!({})))?;
    let low: Vec<Json> = products
        .iter()
        .zip(&stock)
        .filter(|(_, s)| num(s, "on_hand") < num(s, "reorder_level"))
        .map(|(p, s)| json!({"sku": p["sku"], "name": p["name"], "on_hand": s["on_hand"], "reorder_level": s["reorder_level"]}))
        .collect();
    Ok(json!({ "reorder": low }))
}

fn inventory(c: &mut Client) -> Result<Json, String> {
    let products = products(c)?;
    let skus: Vec<String> = products.iter().map(|p| text(p, "sku")).collect();
    // Stock and prices do not depend on each other: one batch.
    let mut calls = each("get_stock", "sku", &skus, &json!({}));
    calls.extend(each("get_price", "sku", &skus, &json!({})));
    let both = c.batch(calls)?;
    let (stock, prices) = both.split_at(skus.len());
    let usd = round2(stock.iter().zip(prices).map(|(s, p)| num(s, "on_hand") * num(p, "unit_price")).sum());
    let eur = c.call("convert_currency", json!({"amount": usd, "from": "USD", "to": "EUR"}))?;
    Ok(json!({"total_eur": eur["amount"], "total_usd": usd}))
}

fn biggest(c: &mut Client) -> Result<Json, String> {
    let orders = list(&c.call("list_orders", json!({"region": "west"}))?, "orders")?.clone();
    let most = orders.iter().map(|o| num(o, "quantity")).fold(f64::MIN, f64::max);
    let order = orders.iter().find(|o| num(o, "quantity") == most).ok_or("no orders in the west")?;
    let customer = c.call("get_customer", json!({"customer_id": order["customer_id"]}))?;
    Ok(
        json!({"order_id": order["order_id"], "quantity": order["quantity"], "customer": customer["name"], "tier": customer["tier"]}),
    )
}

fn units(c: &mut Client) -> Result<Json, String> {
    let orders = list(&c.call("list_orders", json!({}))?, "orders")?.clone();
    let out: Vec<Json> = group(&orders, "region")
        .into_iter()
        .map(|(r, os)| json!({"region": r, "units": os.iter().map(|o| num(o, "quantity")).sum::<f64>()}))
        .collect();
    Ok(json!({ "units": out }))
}

fn long_report(c: &mut Client) -> Result<Json, String> {
    let ids = document_ids(c)?;
    let stats = c.batch(each("document_stats", "document_id", &ids, &json!({})))?;
    let lines: Vec<String> = stats
        .iter()
        .filter(|s| num(s, "reading_minutes") > 3.0)
        .map(|s| format!("{} {}: {} min", text(s, "id"), text(s, "title"), s["reading_minutes"]))
        .collect();
    let report = c.call("write_report", json!({"title": "Documents over 3 minutes of reading", "lines": lines}))?;
    Ok(json!({"report_id": report["report_id"], "documents": report["line_count"]}))
}
