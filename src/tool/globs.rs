//! Globs over tool paths (`/tools/**`, `/tools/safe_*.tool`): what `run --allow-tool`,
//! `serve --mcp --allow` and plans allow, built in one place.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The one glob builder for tool paths, shared by `run --allow-tool`, `serve --mcp --allow`
/// and plans: `*`, `?` and `[…]` stay inside one path segment (they never match `/`), `**`
/// crosses segments (`/tools/**`, `/tools/safe_*.tool`). An invalid glob is an error naming it.
pub fn tool_globs<S: AsRef<str>>(globs: &[S]) -> Result<GlobSet, String> {
    let mut builder = GlobSetBuilder::new();
    for g in globs {
        let g = g.as_ref();
        let glob =
            GlobBuilder::new(g).literal_separator(true).build().map_err(|e| format!("`{g}` is not a glob: {e}"))?;
        builder.add(glob);
    }
    builder.build().map_err(|e| e.to_string())
}
