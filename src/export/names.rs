//! Tool names from tool paths, valid for every provider (`^[a-zA-Z0-9_-]{1,64}$`).
//!
//! A tool's exported name is its file stem (`add_objective` for
//! `/tools/add_objective.tool`) when no other tool of the exported set has the same stem
//! name; tools whose stems clash get their path-derived name instead ([`export_names`]).
//!
//! The path-derived rule ([`tool_name`]): take the tool path relative to the root (`/tools/summarizer.tool`), drop the
//! leading `/` and the `.tool` suffix, replace each `/` with `__` and every other character
//! outside `[a-zA-Z0-9_-]` with `_` (`tools__summarizer`). A name longer than 64 characters
//! keeps its first 55 characters and gets `_` and 8 hex digits of a hash (FNV-1a, 32 bits)
//! of the whole tool path. The same path always gives the same name; two paths may give the
//! same name (`a b.tool` and `a_b.tool`), which callers report as a collision.

/// The longest name every provider accepts.
pub(crate) const MAX_NAME_LEN: usize = 64;

/// The name of the tool at `tool_path` (`/tools/summarizer.tool` → `tools__summarizer`).
pub fn tool_name(tool_path: &str) -> String {
    let trimmed = tool_path.trim_start_matches('/');
    let trimmed = trimmed.strip_suffix(".tool").unwrap_or(trimmed);
    let mut name = String::with_capacity(trimmed.len());
    for c in trimmed.chars() {
        match c {
            '/' | '\\' => name.push_str("__"),
            c if c.is_ascii_alphanumeric() || c == '_' || c == '-' => name.push(c),
            _ => name.push('_'),
        }
    }
    if name.is_empty() {
        name.push_str("tool");
    }
    if name.len() > MAX_NAME_LEN {
        name.truncate(MAX_NAME_LEN - 9);
        name.push_str(&format!("_{:08x}", fnv1a(tool_path.as_bytes())));
    }
    name
}

/// The name made of the file stem alone (`/tools/add_objective.tool` → `add_objective`),
/// with the same character rule and length bound as [`tool_name`].
pub(crate) fn stem_name(tool_path: &str) -> String {
    let stem = tool_path.rsplit(['/', '\\']).next().unwrap_or(tool_path);
    let stem = stem.strip_suffix(".tool").unwrap_or(stem);
    if stem.is_empty() {
        return tool_name(tool_path);
    }
    let mut name = tool_name(stem);
    if name.len() == MAX_NAME_LEN && stem.len() > MAX_NAME_LEN {
        // The hash of a long stem covers the whole path, so that two long stems in
        // different folders stay apart when they differ only past the cut.
        name = tool_name(tool_path);
    }
    name
}

/// The exported names of a set of tools, in the order of `tool_paths`: each tool's
/// [`stem_name`] when no other tool of the set has the same one, its path-derived
/// [`tool_name`] otherwise. Names can still clash (`a b.tool` and `a_b.tool` in different
/// folders of the same stem, say); callers report that as a collision.
pub fn export_names<S: AsRef<str>>(tool_paths: &[S]) -> Vec<String> {
    let stems: Vec<String> = tool_paths.iter().map(|p| stem_name(p.as_ref())).collect();
    let mut count: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for s in &stems {
        *count.entry(s.as_str()).or_default() += 1;
    }
    tool_paths
        .iter()
        .zip(&stems)
        .map(|(p, s)| if count.get(s.as_str()) == Some(&1) { s.clone() } else { tool_name(p.as_ref()) })
        .collect()
}

fn fnv1a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a name is valid for every provider.
    fn is_valid_name(name: &str) -> bool {
        (1..=MAX_NAME_LEN).contains(&name.len())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn names() {
        assert_eq!(tool_name("/tools/summarizer.tool"), "tools__summarizer");
        assert_eq!(tool_name("/main.tool"), "main");
        assert_eq!(tool_name("/a b/c.d.tool"), "a_b__c_d");
        assert_eq!(tool_name("/.tool"), "tool");
        let long = format!("/{}.tool", "x".repeat(100));
        let n = tool_name(&long);
        assert_eq!(n.len(), MAX_NAME_LEN);
        assert!(is_valid_name(&n));
        assert_eq!(n, tool_name(&long));
        assert_ne!(n, tool_name(&format!("/{}.tool", "x".repeat(101))));
        assert!(is_valid_name(&tool_name("/ü/ß?.tool")));
    }

    #[test]
    fn stems_unless_they_clash() {
        assert_eq!(stem_name("/tools/add_objective.tool"), "add_objective");
        assert_eq!(stem_name("/main.tool"), "main");
        assert_eq!(
            export_names(&["/tools/add_objective.tool", "/main.tool", "/a/echo.tool", "/b/echo.tool"]),
            ["add_objective", "main", "a__echo", "b__echo"]
        );
        let long = |dir: &str| format!("/{dir}/{}.tool", "x".repeat(100));
        let names = export_names(&[long("a"), long("b")]);
        assert_ne!(names[0], names[1]);
        assert!(names.iter().all(|n| is_valid_name(n)));
    }
}
