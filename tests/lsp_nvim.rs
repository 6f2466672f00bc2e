//! `tdsl lsp` end to end with a real editor client (issue 19): headless Neovim, its built-in
//! LSP client started as `docs/editors.md` shows, opens a broken `.tool` file. Its
//! diagnostics must be `tdsl check --format json`'s at the same lines and columns; a scripted
//! hover, go to definition and rename go through Neovim's Lua client, and the buffer's text
//! after the rename is asserted.
//!
//! Neovim comes from the Debian package `neovim` (`.ci/run` installs it); without it the
//! test fails, saying so.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const LISTER: &str = r#"{
  "description": "Lists a directory",
  "arguments": [{"name": "directory", "type_name": "string", "required": true}],
  "responses": [{"name": "files", "type_name": "list<string>", "required": true}],
  "system_event_endpoint": "builtin:echo"
}"#;

// Line 6 holds a misspelt function after a non-ASCII character (so that its position goes
// through UTF-16 on the wire and bytes in Neovim); line 7 reads a step that does not exist.
const MAIN: &str = r#"{
  "description": "Résumé of a folder",
  "arguments": [{"name": "folder", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "REF:arguments.folder"}},
    {"execution_id": "count", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "é"}, "transform_responses": {"transforms": {"n": "lenght(REF:scan.files)", "m": "sum(REF:scan.files)"}}},
    {"execution_id": "tail", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "REF:scna.files"}}
  ],
  "responses": [{"name": "files", "type_name": "list<string>"}],
  "response_reference_map": {"files": "REF:scan.files"}
}"#;

/// The Lua the editor runs: start the client as docs/editors.md does, wait for the
/// diagnostics, then hover, definition and rename; everything is written to `OUT` as JSON.
const SCRIPT: &str = r#"
local out = {}
local function finish()
  local f = assert(io.open(OUT, "w"))
  f:write(vim.fn.json_encode(out))
  f:close()
  vim.cmd("qa!")
end
local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(FILE))
  vim.cmd("setfiletype json")
  local buf = vim.api.nvim_get_current_buf()
  local id = vim.lsp.start_client({ name = "tdsl", cmd = { BIN, "lsp" }, root_dir = ROOT })
  assert(id, "the client starts")
  vim.lsp.buf_attach_client(buf, id)
  local client = vim.lsp.get_client_by_id(id)
  assert(vim.wait(60000, function() return #vim.diagnostic.get(buf) > 0 end, 20), "diagnostics arrive")
  out.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(out.diagnostics, { lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col,
      code = d.code, message = d.message, severity = d.severity })
  end
  local function at(line, col)  -- 1-based line, 0-based byte column, as the cursor takes them
    vim.api.nvim_win_set_cursor(0, { line, col })
    return vim.lsp.util.make_position_params(0, client.offset_encoding)
  end
  local function request(method, params)
    local r = client.request_sync(method, params, 30000, buf)
    assert(r, method .. " answered")
    assert(not r.err, method .. ": " .. vim.inspect(r.err))
    return r.result
  end
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local function find(needle, plus)  -- the position of `needle` in the buffer
    for i, l in ipairs(lines) do
      local s = l:find(needle, 1, true)
      if s then return i, s - 1 + plus end
    end
    error("not in the buffer: " .. needle)
  end
  local hover = request("textDocument/hover", at(find('REF:scan.files)", "m"', 10)))
  out.hover = hover and hover.contents and hover.contents.value or vim.NIL
  local fn_hover = request("textDocument/hover", at(find('sum(REF', 1)))
  out.function_hover = fn_hover and fn_hover.contents and fn_hover.contents.value or vim.NIL
  local def = request("textDocument/definition", at(find('REF:scan.files)", "m"', 5)))
  if def and def[1] then def = def[1] end
  out.definition = def
  local edit = request("textDocument/rename", vim.tbl_extend("force", at(find('"scan"', 2)), { newName = "listing" }))
  vim.lsp.util.apply_workspace_edit(edit, client.offset_encoding)
  out.renamed = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  local refused = client.request_sync("textDocument/rename",
    vim.tbl_extend("force", at(find('"count"', 2)), { newName = "tail" }), 30000, buf)
  out.refused = refused and refused.err and refused.err.message or vim.NIL
  out.offset_encoding = client.offset_encoding
end)
if not ok then out.error = tostring(err) end
finish()
"#;

fn nvim() -> String {
    let found = Command::new("nvim").arg("--version").stdout(Stdio::piped()).stderr(Stdio::null()).output();
    match found {
        Ok(o) if o.status.success() => "nvim".to_string(),
        _ => panic!(
            "Neovim is needed for the editor end-to-end test and `nvim` cannot be started: \
             `apt-get install -y neovim` (.ci/run does)"
        ),
    }
}

fn lua_string(s: &str) -> String {
    format!("{s:?}")
}

#[test]
fn neovim_shows_the_diagnostics_of_check_and_hovers_jumps_and_renames() {
    let nvim = nvim();
    let ws = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(ws.path()).expect("canonical");
    std::fs::write(root.join(".tdsl-root"), "").expect("marker");
    std::fs::create_dir_all(root.join("tools")).expect("tools");
    std::fs::write(root.join("tools/lister.tool"), LISTER).expect("lister");
    let main = root.join("main.tool");
    std::fs::write(&main, MAIN).expect("main");

    let check = common::tdsl(&["check", "--root", root.to_str().unwrap(), "--format", "json", main.to_str().unwrap()]);
    assert_eq!(check.code, 1, "check finds the errors: {}", check.stderr);
    let expected: Vec<Value> = serde_json::from_str(&check.stdout).expect("check prints JSON");
    assert!(expected.len() >= 3, "the file is broken three ways: {expected:#?}");

    let out_file = root.join("nvim-out.json");
    let script = root.join("e2e.lua");
    let preamble = format!(
        "BIN = {}\nFILE = {}\nROOT = {}\nOUT = {}\n",
        lua_string(env!("CARGO_BIN_EXE_tdsl")),
        lua_string(main.to_str().unwrap()),
        lua_string(root.to_str().unwrap()),
        lua_string(out_file.to_str().unwrap()),
    );
    std::fs::write(&script, preamble + SCRIPT).expect("script");
    let stderr_file = root.join("nvim-stderr.txt");
    let mut child = Command::new(&nvim)
        .args(["--headless", "-u", "NONE", "-i", "NONE", "-n", "-c"])
        .arg(format!("luafile {}", script.display()))
        .env("XDG_STATE_HOME", root.join("state"))
        .env("XDG_DATA_HOME", root.join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_file).expect("stderr file"))
        .spawn()
        .expect("nvim starts");
    common::wait_or_kill(&mut child, Duration::from_secs(180), "headless Neovim");
    let text = std::fs::read_to_string(&out_file).unwrap_or_else(|e| {
        let stderr = std::fs::read_to_string(&stderr_file).unwrap_or_default();
        panic!("Neovim wrote no result ({e}); its stderr: {stderr}")
    });
    let got: Value = serde_json::from_str(&text).expect("the script's JSON");
    assert!(got.get("error").is_none(), "the script failed in Neovim: {}", got["error"]);

    // Diagnostics: the same codes and messages at the same places. Neovim holds 0-based
    // lines and byte columns; check prints 1-based lines and columns in characters.
    let lines: Vec<&str> = MAIN.split('\n').collect();
    let to_check = |lnum: &Value, col: &Value| -> (u64, u64) {
        let line = lnum.as_u64().unwrap() as usize;
        let bytes = col.as_u64().unwrap() as usize;
        let chars = lines[line].get(..bytes).unwrap_or_else(|| panic!("byte {bytes} is a boundary")).chars().count();
        (line as u64 + 1, chars as u64 + 1)
    };
    let diags = got["diagnostics"].as_array().expect("diagnostics");
    let mut got_d: Vec<(String, String, u64, u64, u64, u64)> = diags
        .iter()
        .map(|d| {
            let (l, c) = to_check(&d["lnum"], &d["col"]);
            let (el, ec) = to_check(&d["end_lnum"], &d["end_col"]);
            (d["code"].as_str().unwrap_or("").to_string(), d["message"].as_str().unwrap().to_string(), l, c, el, ec)
        })
        .collect();
    let mut want_d: Vec<(String, String, u64, u64, u64, u64)> = expected
        .iter()
        .map(|w| {
            let n = |k: &str| w[k].as_u64().unwrap();
            (
                w["code"].as_str().unwrap().to_string(),
                w["message"].as_str().unwrap().to_string(),
                n("line"),
                n("column"),
                n("end_line"),
                n("end_column"),
            )
        })
        .collect();
    got_d.sort();
    want_d.sort();
    assert_eq!(got_d, want_d, "Neovim's diagnostics are check's");
    assert!(got_d.iter().any(|d| d.0 == "E0102" && d.2 == 6), "a diagnostic after the `é` on line 6: {got_d:#?}");

    // Hover on a REF's field: the response declaration and the REF's type.
    let hover = got["hover"].as_str().expect("hover text");
    assert!(hover.contains("**response** `files`: `list<string>` (required)"), "{hover}");
    assert!(hover.contains("type: `list<string>`"), "{hover}");
    let fn_hover = got["function_hover"].as_str().expect("function hover");
    assert!(fn_hover.starts_with("```\nsum("), "{fn_hover}");

    // Definition of `REF:scan…`: the `scan` step's execution id, in the same file.
    let def = &got["definition"];
    let def_uri = def["uri"].as_str().or(def["targetUri"].as_str()).expect("a location");
    assert!(def_uri.ends_with("/main.tool"), "{def}");
    let range = if def["range"].is_object() { &def["range"] } else { &def["targetSelectionRange"] };
    assert_eq!(range["start"]["line"], 4, "{def}");
    let start = range["start"]["character"].as_u64().unwrap() as usize;
    assert_eq!(&lines[4][start..start + 4], "scan", "{def}");

    // Rename `scan` → `listing`: the id and every REF to it, nothing else.
    let renamed = got["renamed"].as_str().expect("renamed text");
    assert_eq!(renamed, MAIN.replace("\"scan\"", "\"listing\"").replace("REF:scan.", "REF:listing."));
    // A rename onto a step that exists is refused with a message.
    let refused = got["refused"].as_str().expect("the colliding rename is refused");
    assert!(refused.contains("tail"), "{refused}");
    assert!(Path::new(&out_file).exists());
}
