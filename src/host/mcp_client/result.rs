//! What an MCP tool's result becomes: a value, read within the runner's budget of values,
//! or the error it reports, kept short.
//!
//! - `structuredContent` is the value; without it one text block is its text (parsed when
//!   it is JSON), several blocks a list (text blocks as above, other blocks as their JSON).
//! - rmcp has read the message already (at most [`super::stdio::MAX_MESSAGE_BYTES`], its
//!   values counted as its bytes arrived); the result is counted again before it is built
//!   as a value, and a text block's JSON before it is parsed.
//! - Secrets are redacted from the result before it becomes a value ([`crate::secrets`]).

use serde_json::Value as Json;

use rmcp::model::CallToolResult;

use crate::exec::ToolError;
use crate::value::Value;

/// The value of a tool result, or its error; at most `max_values` values, counted before
/// each part is built again as a value (rmcp has read the message itself, at most
/// [`stdio::MAX_MESSAGE_BYTES`]), and a text block's JSON counted before it is parsed.
pub(super) fn result_value(result: CallToolResult, who: &str, max_values: usize) -> Result<Value, ToolError> {
    let too_many = |e: crate::value::DecodeError| ToolError::permanent(format!("{who} answered with {e}"));
    let blocks: Vec<Json> =
        result.content.iter().map(|c| serde_json::to_value(c).unwrap_or(Json::Null)).collect::<Vec<_>>();
    if result.is_error == Some(true) {
        let text: Vec<&str> = blocks.iter().filter_map(|b| b.get("text").and_then(Json::as_str)).collect();
        let why = if text.is_empty() { "no message".to_string() } else { said(&text.join("\n")) };
        return Err(ToolError::permanent(format!("{who} reported an error: {why}")));
    }
    let mut json = match (result.structured_content, blocks.as_slice()) {
        (Some(v), _) => v,
        (None, [one]) => block_value(one, max_values).map_err(too_many)?,
        (None, many) => {
            let values: Result<Vec<Json>, _> = many.iter().map(|b| block_value(b, max_values)).collect();
            Json::Array(values.map_err(too_many)?)
        }
    };
    // Counted whole: the blocks' values together, or `structuredContent` as rmcp read it.
    crate::value::json_value_within(&json, max_values).map_err(too_many)?;
    crate::secrets::redact_json(&mut json);
    serde_json::from_value::<Value>(json)
        .map_err(|e| ToolError::permanent(format!("{who} answered with a value tdsl cannot hold: {e}")))
}

/// The most bytes of what a server says in an error (an `isError` result's text, a
/// JSON-RPC error's message) that the call's error keeps: an error is in the run's trace,
/// kept in memory until the run ends, in the history and in what a client reads, and a
/// fan-out of 1,000 children each refused with a 16 MiB message could hold 16 GB (hostile
/// round 10b).
const SAID_IN_ERROR: usize = 4096;

/// `text` as an error keeps it: its first [`SAID_IN_ERROR`] bytes, and how long it was when
/// it was longer.
pub(super) fn said(text: &str) -> String {
    if text.len() <= SAID_IN_ERROR {
        return text.to_string();
    }
    let mut end = SAID_IN_ERROR;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..end], text.len())
}

/// A text block's text (parsed when it is JSON, of at most `max_values` values); any other
/// block as its JSON.
fn block_value(block: &Json, max_values: usize) -> Result<Json, crate::value::DecodeError> {
    Ok(match (block.get("type").and_then(Json::as_str), block.get("text").and_then(Json::as_str)) {
        (Some("text"), Some(text)) if crate::value::json_within(text.as_bytes(), max_values)? => {
            serde_json::from_str(text).unwrap_or_else(|_| Json::String(text.to_string()))
        }
        (Some("text"), Some(text)) => Json::String(text.to_string()),
        _ => block.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_map_to_values() {
        let r = |j: Json| -> Result<String, String> {
            let result: CallToolResult = serde_json::from_value(j).expect("a result");
            result_value(result, "t", 1_000).map(|v| v.to_string()).map_err(|e| e.message)
        };
        assert_eq!(
            r(serde_json::json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "structuredContent": {"a": 1}})),
            Ok(r#"{"a":1}"#.to_string())
        );
        assert_eq!(r(serde_json::json!({"content": [{"type": "text", "text": "[1, 2]"}]})), Ok("[1,2]".to_string()));
        assert_eq!(
            r(serde_json::json!({"content": [{"type": "text", "text": "hello"}]})),
            Ok(r#""hello""#.to_string())
        );
        assert_eq!(
            r(serde_json::json!({"content": [{"type": "text", "text": "1"}, {"type": "text", "text": "x"}]})),
            Ok(r#"[1,"x"]"#.to_string())
        );
        assert_eq!(r(serde_json::json!({"content": []})), Ok("[]".to_string()));
        assert_eq!(
            r(serde_json::json!({"content": [{"type": "text", "text": "no such file"}], "isError": true})),
            Err("t reported an error: no such file".to_string())
        );
        // A long error is kept as its start and its length.
        let long = format!("é{}", "x".repeat(10_000));
        let e = r(serde_json::json!({"content": [{"type": "text", "text": long}], "isError": true})).unwrap_err();
        assert_eq!(e, format!("t reported an error: é{}… (10002 bytes in all)", "x".repeat(SAID_IN_ERROR - 2)));
    }
}
