//! Other languages' syntax met where tdsl expects its own, and the tdsl form of each: the
//! helps of the diagnostics that meet it, wherever the mistake is — a transform of a `.tool`
//! file (`tdsl check`, the language server), a plan (`check_plan`, `run_plan`), the REPL.
//! One source: the parser ([`super::parse`]) asks [`syntax`] for a syntax error's help, the
//! type checker [`function`] for an unknown function's, the `.tool` loader [`operator`] for
//! an unknown condition operator's.
//!
//! - a conditional `a ? b : c` → `if(condition=a, true_value=b, false_value=c)`;
//! - an arrow function or a lambda → a template over `item`;
//! - JSONPath (`$.items[*].name`) and the placeholders of other plan formats met in an
//!   expression (`$1.count`, `#E2.title`) → a REF;
//! - `str(x)`, `len(x)`, `sort_by`, `int(x)` → `to_string`, `length`, `sort`, `to_number`;
//! - `>`, `gt`, `==` as a condition's `operator` → `greater_than`, `equals`;
//! - a method call `x.upper()`, `x.toLowerCase()`, `x.split(',')` → `upper(x)`, `lower(x)`,
//!   `split(x, ',')`;
//! - a comprehension `[r.url for r in xs if …]` and a projection `xs[*].url` → `map` (of a
//!   `filter`) over `item`; `a ?? b` → `default`; `xs[1:3]` → `slice`; jq's `xs | length` →
//!   `length(xs)`; an f-string or a template literal → text joined with `+`.

/// The help for a function of another language that tdsl spells otherwise (`str`, `len`,
/// `sort_by`, `int`…), or `None`.
pub fn function(name: &str) -> Option<String> {
    Some(match name {
        "str" | "String" | "toString" | "string" => {
            format!("tdsl writes `{name}(x)` as `to_string(value=x)`")
        }
        "len" | "size" | "count_of" => format!("tdsl writes `{name}(x)` as `length(value=x)`, or `x.length`"),
        "sort_by" | "sorted" | "order_by" => {
            format!("tdsl writes `{name}` as `sort(array=…, key_path=\"<field>\")`, the key a template over `item`'s fields")
        }
        "int" | "float" | "parseInt" | "parseFloat" | "Number" => {
            format!("tdsl writes `{name}(x)` as `to_number(value=x)`")
        }
        "first" | "head" => format!("tdsl reads a list's first element as `x.first` (or `x[0]`), not `{name}(x)`"),
        "last" => format!("tdsl reads a list's last element as `x.last` (or `x[-1]`), not `{name}(x)`"),
        "is_null" | "isnull" | "is_none" | "isNone" | "isNull" | "is_nil" => {
            format!(
                "tdsl writes `{name}(x)` as `x == null` (and `default(value=x, fallback=…)` for a value in its place)"
            )
        }
        "now" | "today" | "utcnow" | "current_time" | "timestamp" => {
            format!("tdsl writes `{name}()` as `datetime_now()` (the run's clock, an ISO 8601 string)")
        }
        _ => return None,
    })
}

/// The tdsl function for another language's method of that name (`upper`, `toUpperCase`
/// and `upcase` are `upper`), or `None`.
fn method_function(name: &str) -> Option<&'static str> {
    Some(match name {
        "upper" | "toUpperCase" | "to_uppercase" | "upcase" | "toUpper" => "upper",
        "lower" | "toLowerCase" | "to_lowercase" | "downcase" | "toLower" => "lower",
        "strip" | "trim" => "trim",
        "len" | "length" | "size" | "count" => "length",
        "keys" => "keys",
        "values" => "values",
        "split" => "split",
        "replace" | "replaceAll" => "replace",
        "startswith" | "startsWith" | "starts_with" => "starts_with",
        "endswith" | "endsWith" | "ends_with" => "ends_with",
        "round" | "toFixed" => "round",
        "toString" | "to_string" => "to_string",
        // A list's methods: the list is the first argument, a template the second.
        "map" => "map",
        "filter" | "where" | "select" => "filter",
        "find" => "find",
        "join" => "join",
        "includes" | "contains" => "contains",
        "sort" | "sorted" => "sort",
        "unique" | "distinct" | "uniq" => "unique",
        "flatten" | "flat" => "flatten",
        "sum" => "sum",
        "min" => "min",
        "max" => "max",
        "some" | "any" => "any",
        "every" | "all" => "all",
        _ => return None,
    })
}

/// A method call of another language on a value, the whole of `expression`
/// (`REF:i.title.upper()`, `name.toLowerCase()`, `REF:a.csv.split(',')`), as the tdsl
/// call it means (`upper(REF:i.title)`, `split(REF:a.csv, ',')`): `None` when it is no
/// such call, or the method has no tdsl function. The caller checks that it parses.
pub fn method_call(expression: &str) -> Option<String> {
    let e = expression.trim();
    let body = e.strip_suffix(')')?;
    let open = body.find('(')?;
    let (head, args) = (&body[..open], &body[open + 1..]);
    let (value, method) = head.rsplit_once('.')?;
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-' | '[' | ']');
    if value.is_empty() || !value.chars().all(plain) || !method.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let f = method_function(method)?;
    let args = args.trim();
    Some(if args.is_empty() { format!("{f}({value})") } else { format!("{f}({value}, {args})") })
}

/// The help for another language's syntax in an expression that does not parse: a
/// conditional `a ? b : c`, an arrow function or a lambda, JSONPath, a `$1` or `#E1`
/// placeholder. `None` when the expression has none of them.
pub fn syntax(expression: &str) -> Option<String> {
    let lambda = expression.match_indices("lambda").any(|(i, _)| {
        let before = expression[..i].chars().next_back();
        let after = expression[i + "lambda".len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && matches!(after, Some(' ' | ':'))
    });
    if lambda || expression.contains("=>") {
        return Some(
            "tdsl has no lambdas or arrow functions: a function over each element takes a template, an expression over `item` given as a string: `map(array=REF:search.results, template=\"item.url\")`, `filter(array=…, condition_string=\"item.score > 2\")`"
                .to_string(),
        );
    }
    if let Some(help) = placeholder(expression) {
        return Some(help);
    }
    if let Some(help) = comprehension(expression) {
        return Some(help);
    }
    if let Some(help) = projection(expression) {
        return Some(help);
    }
    if let Some(help) = membership(expression) {
        return Some(help);
    }
    if let Some(help) = coalescing(expression).or_else(|| slicing(expression)).or_else(|| piping(expression)) {
        return Some(help);
    }
    if let Some(help) = interpolation(expression) {
        return Some(help);
    }
    if let Some(help) = operators(expression) {
        return Some(help);
    }
    if let Some(call) = method_call(expression) {
        return Some(format!("tdsl has no methods: a function takes the value as its first argument: write `{call}`"));
    }
    if let Some((cond, rest)) = expression.split_once('?') {
        if let Some((yes, no)) = rest.split_once(':') {
            return Some(format!(
                "tdsl has no `a ? b : c`: write `if(condition={}, true_value={}, false_value={})`",
                cond.trim(),
                yes.trim(),
                no.trim()
            ));
        }
    }
    None
}

/// JSONPath (`$.items[*].name`), an LLMCompiler `$1.count` or a ReWOO `#E2.title` in an
/// expression: the REF that reads it.
fn placeholder(expression: &str) -> Option<String> {
    let bytes = expression.as_bytes();
    let at = outside_strings(expression)?;
    let rest = &expression[at + 1..];
    let path_end = |s: &str| {
        s.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '[' | ']' | '*' | '"' | '\'')))
            .unwrap_or(s.len())
    };
    match (bytes[at], rest.as_bytes().first()) {
        (b'$', Some(b'.' | b'[')) => {
            let path = &rest[..path_end(rest)];
            let written = format!("${path}");
            let (head, each) = match path.split_once("[*]").or_else(|| path.split_once("[]")) {
                Some((head, tail)) => (head, Some(tail.trim_start_matches('.'))),
                None => (path, None),
            };
            let head = head.replace('[', ".").replace(['"', '\'', ']'], "");
            let head = head.trim_matches('.');
            let reference = if head.is_empty() { "REF:<execution_id>".to_string() } else { format!("REF:{head}") };
            Some(match each {
                Some(tail) if !tail.is_empty() => format!(
                    "`{written}` is JSONPath, which tdsl does not read: a field of every element is `map(array={reference}, template=\"item.{tail}\")`, a REF naming the step by its `execution_id`"
                ),
                _ => format!(
                    "`{written}` is JSONPath, which tdsl does not read: write `{reference}`, a REF naming the step by its `execution_id`"
                ),
            })
        }
        (b'$', Some(c)) if c.is_ascii_digit() => {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let tail = &rest[digits..][..path_end(&rest[digits..])];
            Some(format!(
                "`${}{tail}` is an LLMCompiler placeholder, which tdsl does not replace: inside an expression a REF is an atom: write `REF:<execution_id of step {}>{tail}`",
                &rest[..digits],
                &rest[..digits]
            ))
        }
        (b'#', Some(b'E')) if rest.as_bytes().get(1).is_some_and(u8::is_ascii_digit) => {
            let digits = rest[1..].bytes().take_while(u8::is_ascii_digit).count();
            let n = &rest[1..1 + digits];
            let after = &rest[1 + digits..];
            let tail = &after[..path_end(after)];
            Some(format!(
                "`#E{n}{tail}` is a ReWOO placeholder, which tdsl does not replace: inside an expression a REF is an atom: write `REF:<execution_id of step {n}>{tail}`"
            ))
        }
        _ => None,
    }
}

/// Python's list comprehension `[r.url for r in results if r.ok]`: a `map` of the list
/// (of a `filter` of it, with a condition), the variable read as `item`.
fn comprehension(expression: &str) -> Option<String> {
    let inner = expression.trim().strip_prefix('[')?.strip_suffix(']')?;
    let at = outside_strings_find(inner, " for ")?;
    let (each, rest) = (inner[..at].trim(), &inner[at + " for ".len()..]);
    let at = outside_strings_find(rest, " in ")?;
    let (var, rest) = (rest[..at].trim(), &rest[at + " in ".len()..]);
    let (list, cond) = match outside_strings_find(rest, " if ") {
        Some(i) => (rest[..i].trim(), Some(rest[i + " if ".len()..].trim())),
        None => (rest.trim(), None),
    };
    // A name of a usual length: renaming looks for it at every position of the text.
    let is_name = (1..=64).contains(&var.len()) && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !is_name || each.is_empty() || list.is_empty() {
        return Some(
            "tdsl has no comprehensions: `map(array=<list>, template=\"<expression over item>\")` makes a list of one value per element, `filter(array=<list>, condition_string=\"<condition over item>\")` keeps some".to_string(),
        );
    }
    let each = renamed(each, var);
    let array = match cond {
        Some(c) => format!("filter(array={list}, condition_string=\"{}\")", renamed(c, var)),
        None => list.to_string(),
    };
    Some(format!(
        "tdsl has no comprehensions: a value per element is a template over `item`: write `map(array={array}, template=\"{each}\")`"
    ))
}

/// `text` with the name `var` (a whole word, outside string literals) read as `item`.
fn renamed(text: &str, var: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    while let Some(i) = first_outside_strings(&text[at..], |i, _| text[at + i..].starts_with(var)) {
        let start = at + i;
        let end = start + var.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        out.push_str(&text[at..start]);
        // A whole word, not a field (`x.r`) or part of a longer name.
        if !before.is_some_and(|c| word(c) || c == '.') && !after.is_some_and(word) {
            out.push_str("item");
        } else {
            out.push_str(var);
        }
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// A JMESPath or JSONPath projection without `$`: `results[*].url`, `results[].url`.
fn projection(expression: &str) -> Option<String> {
    let e = expression.trim();
    let at = outside_strings_find(e, "[*]").or_else(|| outside_strings_find(e, "[]"))?;
    // After a value (`xs[]`), not an empty list literal (`length([]) +`).
    if !e[..at].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ']' | ')')) {
        return None;
    }
    let close = e[at..].find(']')? + at + 1;
    let (list, tail) = (e[..at].trim(), e[close..].trim_start_matches('.'));
    let plain =
        |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'));
    Some(if plain(list) && plain(tail) {
        format!("`{e}` is a JMESPath projection, which tdsl does not read: a field of every element is `map(array={list}, template=\"item.{tail}\")`")
    } else {
        "`[*]` is a JMESPath projection, which tdsl does not read: a value of every element is `map(array=<list>, template=\"<expression over item>\")`".to_string()
    })
}

/// JavaScript's and C#'s `a ?? b`: `default(value=a, fallback=b)`.
fn coalescing(expression: &str) -> Option<String> {
    let at = outside_strings_find(expression, "??")?;
    let (left, right) = (expression[..at].trim(), expression[at + 2..].trim());
    Some(if !left.is_empty() && !right.is_empty() && !right.contains("??") {
        format!("tdsl has no `??`: write `default(value={left}, fallback={right})`")
    } else {
        "tdsl has no `??`: write `default(value=<value>, fallback=<value when it is null>)`".to_string()
    })
}

/// Python's slice `xs[1:3]`: `slice(value=xs, start=1, end=3)`.
fn slicing(expression: &str) -> Option<String> {
    let e = expression.trim();
    let open = outside_strings_find(e, "[")?;
    let close = open + e[open..].find(']')?;
    let (start, end) = e[open + 1..close].split_once(':')?;
    let value = e[..open].trim();
    let number = |s: &str| s.trim().is_empty() || s.trim().trim_start_matches('-').chars().all(|c| c.is_ascii_digit());
    if value.is_empty() || !number(start) || !number(end) {
        return None;
    }
    let start = if start.trim().is_empty() { "0" } else { start.trim() };
    let end = if end.trim().is_empty() { String::new() } else { format!(", end={}", end.trim()) };
    Some(format!("tdsl has no `[a:b]` slices: write `slice(value={value}, start={start}{end})`"))
}

/// jq's pipe `xs | length`: a function takes the value as its argument.
fn piping(expression: &str) -> Option<String> {
    let at = first_outside_strings(expression, |i, c| {
        c == '|' && !expression[i..].starts_with("||") && !expression[..i].ends_with('|')
    })?;
    let (left, right) = (expression[..at].trim(), expression[at + 1..].trim());
    let name = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    Some(if !left.is_empty() && name(right) {
        format!(
            "tdsl has no `|` pipe: a function takes the value as its argument: write `{right}({left})`; steps applied in turn are `pipeline(initial_value={left}, operations=[…])`, each over `current`"
        )
    } else {
        "tdsl has no `|` pipe: a function takes the value as its argument (`length(value=xs)`); steps applied in turn are `pipeline(initial_value=…, operations=[…])`, each over `current`".to_string()
    })
}

/// Python's f-string `f'{n} pages'` or JavaScript's template literal `` `${n} pages` ``: text
/// joined with `+`.
fn interpolation(expression: &str) -> Option<String> {
    let e = expression.trim_start();
    let f_string = (e.starts_with("f'") || e.starts_with("f\"")) && e.contains('{');
    let template_literal = e.starts_with('`') && e.contains("${");
    (f_string || template_literal).then(|| {
        "tdsl has no string interpolation: join text with `+`, numbers through `to_string`: `to_string(value=REF:search.total) + ' pages'`".to_string()
    })
}

/// Other languages' operators and forms tdsl writes otherwise: `if … then … else …`,
/// `**`, `//`, and spreading an object (`{...x, k: v}`, `{**x, k: v}`).
fn operators(expression: &str) -> Option<String> {
    let e = expression.trim();
    if e.starts_with("if ") && outside_strings_find(e, " then ").is_some() {
        return Some(
            "tdsl has no `if … then … else …`: `if` is a function: `if(condition=…, true_value=…, false_value=…)`"
                .to_string(),
        );
    }
    if outside_strings_find(e, "...").is_some() || outside_strings_find(e, "{**").is_some() {
        return Some(
            "tdsl has no spread: `merge(x, {extra: 1})` is `x` with the entries of the second object".to_string(),
        );
    }
    if outside_strings_find(e, "**").is_some() {
        return Some("tdsl has no `**`: multiply (`x * x`)".to_string());
    }
    if outside_strings_find(e, "//").is_some() {
        return Some("tdsl has no `//`: divide with `/` and `round(value=…, digits=0)` the quotient".to_string());
    }
    None
}

/// Python's and SQL's `x in xs` (`'bug' in item.labels`): tdsl's `contains(xs, x)`. The
/// operands are shown when each is plain (no call, comma or comparison around it).
fn membership(expression: &str) -> Option<String> {
    let at = outside_strings_find(expression, " in ")?;
    let (left, right) = (expression[..at].trim(), expression[at + " in ".len()..].trim());
    let plain = |s: &str| !s.is_empty() && !s.contains(['(', ')', ',', '=', '<', '>', '!']) && !s.contains(" and ");
    Some(if plain(left) && plain(right) {
        format!("tdsl has no `in` operator: write `contains({right}, {left})` (a list holds an element, a string a substring, an object a key)")
    } else {
        "tdsl has no `in` operator: write `contains(<list, string or object>, <value>)`".to_string()
    })
}

/// Where `needle` first occurs outside the expression's string literals.
fn outside_strings_find(expression: &str, needle: &str) -> Option<usize> {
    first_outside_strings(expression, |i, _| expression[i..].starts_with(needle))
}

/// The first `$` or `#` outside the expression's string literals.
fn outside_strings(expression: &str) -> Option<usize> {
    first_outside_strings(expression, |_, c| matches!(c, '$' | '#'))
}

/// The first place `(i, c)` outside the expression's string literals (quoted with `"` or
/// `'`, with `\` escapes) that `hit` accepts.
fn first_outside_strings(expression: &str, hit: impl Fn(usize, char) -> bool) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in expression.char_indices() {
        match (quote, c) {
            (Some(_), _) if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, c) if hit(i, c) => return Some(i),
            (None, _) => {}
        }
    }
    None
}

/// The tdsl condition operator for another language's spelling of it (`>` and `gt` are
/// `greater_than`), or `None`.
pub fn operator(op: &str) -> Option<&'static str> {
    Some(match op.trim().to_ascii_lowercase().as_str() {
        ">" | "gt" => "greater_than",
        "<" | "lt" => "less_than",
        ">=" | "gte" | "ge" | "=>" => "greater_than_or_equals",
        "<=" | "lte" | "le" | "=<" => "less_than_or_equals",
        "==" | "=" | "===" | "eq" | "is" => "equals",
        "!=" | "<>" | "!==" | "ne" | "neq" | "not" => "not_equals",
        "in_list" | "one_of" => "in",
        "includes" | "has" => "contains",
        _ => return None,
    })
}

/// The help for a condition operator of another language: `tdsl spells \`>\` as …`.
pub fn operator_help(op: &str) -> Option<String> {
    operator(op).map(|tdsl| format!("tdsl spells `{op}` as `{tdsl}`: write \"operator\": \"{tdsl}\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Any text — the expression of a syntax error is anything a client sends — gets a
        /// help or none, never a panic (the helps slice the text at the places they find).
        #[test]
        fn any_text_gets_a_help_or_none(text in "[\\[\\]\\(\\)a-z0-9 .,:|?'\"`${}=>*é]{0,40}") {
            let _ = syntax(&text);
        }
    }

    #[test]
    fn each_form_gets_the_tdsl_one() {
        let help = |e: &str| syntax(e).unwrap_or_default();
        assert!(help("total > 2 ? \"many\" : \"few\"")
            .contains("if(condition=total > 2, true_value=\"many\", false_value=\"few\")"));
        assert!(help("items.map(x => x.url)").contains("no lambdas or arrow functions"));
        assert!(
            help("[r.url for r in results]").contains("map(array=results, template=\"item.url\")"),
            "{}",
            help("[r.url for r in results]")
        );
        assert!(help("[r.title for r in REF:s.results if r.score > 2]").contains(
            "map(array=filter(array=REF:s.results, condition_string=\"item.score > 2\"), template=\"item.title\")"
        ));
        // The variable renamed as a whole word only, not inside other names or strings.
        assert_eq!(renamed("r.rank + rr + 'r' + x.r", "r"), "item.rank + rr + 'r' + x.r");
        // Each form and the tdsl form its help writes.
        let cases: &[(&str, &str)] = &[
            ("results.map('item.url')", "map(results, 'item.url')"),
            ("REF:s.items.filter(\"item.ok\")", "filter(REF:s.items, \"item.ok\")"),
            ("if total > 0 then 'a' else 'b'", "if(condition=…"),
            ("{...r, extra: 1}", "merge(x, {extra: 1})"),
            ("{**r, extra: 1}", "merge(x, {extra: 1})"),
            ("total ** 2", "no `**`"),
            ("total // 2", "no `//`"),
            ("results[0].title.upper()", "upper(results[0].title)"),
            ("total.toFixed(2)", "round(total, 2)"),
            ("results[*].url", "map(array=results, template=\"item.url\")"),
            ("REF:s.items[].name", "map(array=REF:s.items, template=\"item.name\")"),
            ("results[0].title ?? 'none'", "default(value=results[0].title, fallback='none')"),
            ("results[1:3]", "slice(value=results, start=1, end=3)"),
            ("results[:2]", "slice(value=results, start=0, end=2)"),
            ("results | length", "length(results)"),
            ("f'{total} pages'", "no string interpolation"),
            ("`${total} pages`", "no string interpolation"),
            ("$.search.results[*].url", "map(array=REF:search.results, template=\"item.url\")"),
            ("$.search.total + 1", "write `REF:search.total`"),
        ];
        for (written, tdsl) in cases {
            assert!(help(written).contains(tdsl), "{written}: {}", help(written));
        }
        // A URL in a string is not `//`.
        assert_eq!(syntax("'https://a' +"), None);
        // A long variable gets the general help, not a search for it at every position.
        let long = format!("[{0} for {0}b in xs]", "a".repeat(100_000));
        assert!(help(&long).starts_with("tdsl has no comprehensions: `map(array=<list>"));
        // Not taken for what they are not: `||`, a `|` inside a string, an index, an empty
        // list.
        assert_eq!(syntax("length([]) +"), None);
        assert_eq!(syntax("a || b"), None);
        assert_eq!(syntax("'a|b' +"), None);
        assert_eq!(syntax("xs[0] +"), None);
        assert!(help("lambda x: x.url").contains("condition_string="));
        assert!(help("filter(files, lambda f: length(f) > 3)").contains("no lambdas"));
        assert_eq!(syntax("lambdas +"), None);
        assert!(help("$1.count * 2").contains("REF:<execution_id of step 1>.count"));
        assert!(help("#E2.title").contains("REF:<execution_id of step 2>.title"));
        assert_eq!(syntax("a +"), None);
        assert!(help("'bug' in item.labels").contains("write `contains(item.labels, 'bug')`"));
        assert!(help("count(xs, 'a' in item.tags)").contains("`contains(<list, string or object>, <value>)`"));
        assert_eq!(syntax("\"log in \" +"), None);
        assert_eq!(syntax("$"), None);
        assert_eq!(syntax("\"Total: $1\" +"), None);
        assert!(function("len").is_some_and(|h| h.contains("length(value=x)")));
        assert_eq!(method_call("REF:i.title.upper()").as_deref(), Some("upper(REF:i.title)"));
        assert_eq!(method_call(" name.toLowerCase() ").as_deref(), Some("lower(name)"));
        assert_eq!(method_call("REF:a.csv.split(',')").as_deref(), Some("split(REF:a.csv, ',')"));
        assert_eq!(method_call("REF:i.title.frobnicate()"), None);
        assert_eq!(method_call("f(x).upper()"), None);
        assert_eq!(method_call("upper()"), None);
        assert!(help("REF:i.title.upper()").contains("write `upper(REF:i.title)`"));
        assert_eq!(function("length"), None);
        assert_eq!(
            operator_help(">").as_deref(),
            Some("tdsl spells `>` as `greater_than`: write \"operator\": \"greater_than\"")
        );
        assert_eq!(operator("greater_than"), None);
    }
}
