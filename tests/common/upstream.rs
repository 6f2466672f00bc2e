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

/// An upstream listing 20,000 tools of about 420 bytes each: `tdsl://tools` is then an
/// answer of about 9 MB (hostile rounds 15 and 16). A whole script of its own (not
/// [`script`]'s frame): it answers every other request with an empty result.
pub const MANY_TOOLS: &str = r#"#!/usr/bin/env python3
import json, sys
tools = [{"name": "t%d" % k, "description": "d" * 300, "inputSchema": {"type": "object",
          "properties": {"q": {"type": "string", "description": "q" * 50}}}} for k in range(20000)]
def out(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line); method, i, p = m.get("method"), m.get("id"), m.get("params") or {}
    if method == "initialize":
        out({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": p["protocolVersion"],
             "capabilities": {"tools": {}}, "serverInfo": {"name": "up", "version": "1"}}})
    elif method == "tools/list":
        out({"jsonrpc": "2.0", "id": i, "result": {"tools": tools}})
    elif i is not None and method:
        out({"jsonrpc": "2.0", "id": i, "result": {}})
"#;
