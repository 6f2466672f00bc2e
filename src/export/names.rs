//! Tool names from tool paths, valid for every provider (`^[a-zA-Z0-9_-]{1,64}$`).
//!
//! The rule: take the tool path relative to the root (`/tools/summarizer.tool`), drop the
//! leading `/` and the `.tool` suffix, replace each `/` with `__` and every other character
//! outside `[a-zA-Z0-9_-]` with `_` (`tools__summarizer`). A name longer than 64 characters
//! keeps its first 55 characters and gets `_` and 8 hex digits of a hash (FNV-1a, 32 bits)
//! of the whole tool path. The same path always gives the same name; two paths may give the
//! same name (`a b.tool` and `a_b.tool`), which callers report as a collision.

/// The longest name every provider accepts.
pub const MAX_NAME_LEN: usize = 64;

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

/// Whether a name is valid for every provider.
pub fn is_valid_name(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
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
}
