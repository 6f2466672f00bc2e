//! Scripted upstream MCP servers over stdio (Python's standard library only, no virtual
//! environment): a test writes what its server does — its tools and how it answers a call
//! — and [`script`] puts the shared frame (`upstream.py`: the handshake, the listing, the
//! loop over requests) before it. Each script ends by calling `serve(tools, call)`:
//!
//! ```ignore
//! common::upstream::script(&path, r#"
//! def call(i, name, args):
//!     answer(i, {"content": [{"type": "text", "text": "{}"}], "structuredContent": args})
//! serve([{"name": "echo", "inputSchema": {"type": "object"}}], call)
//! "#);
//! ```
#![allow(dead_code)]

use std::path::Path;

/// The frame: `out(message)`, `answer(id, result)` and `serve(tools, call, name,
/// list_changed)`, with `json`, `os`, `sys`, `threading` and `time` imported.
const FRAME: &str = include_str!("upstream.py");

/// Writes the executable upstream `path`: the frame, then `body`.
#[cfg(unix)]
pub fn script(path: &Path, body: &str) {
    super::process::script(path, &format!("#!/usr/bin/env python3\n{FRAME}\n# The test's server.\n{body}"));
}
