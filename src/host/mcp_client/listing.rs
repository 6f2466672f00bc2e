//! One listing of a server's tools (`tools/list`, every page), within bounds: a server that
//! pages without end, or whose pages add up to more than one message may hold, is stopped;
//! an `enum` too long to hold values against is dropped as the tool is listed.

use rmcp::service::{Peer, ServiceError};
use rmcp::RoleClient;
use serde_json::Value as Json;

use super::stdio;

/// The most bytes of tools (as JSON) one listing of a server takes in, over all its pages:
/// the bound of one message ([`stdio::MAX_MESSAGE_BYTES`]), which paging would otherwise
/// get around.
const MAX_LISTING_BYTES: usize = stdio::MAX_MESSAGE_BYTES;

/// The most pages one listing follows (`nextCursor`): a server that pages forever, each
/// page small or empty, is stopped there.
const MAX_LISTING_PAGES: usize = 1_000;

/// Every page of the server's `tools/list`, as JSON `Tool` objects, within
/// [`MAX_LISTING_BYTES`] and [`MAX_LISTING_PAGES`]: past either the listing fails (`Ok(Err)`
/// says why), so that a server answering each page with another `nextCursor` cannot grow
/// this process for as long as the listing's timeout allows (it once took 2.75 GB in 30 s).
/// The most values of an `enum` a listing keeps (as `export::resolve::MAX_ENUM_VALUES`,
/// which the check holds values against): a longer one is dropped as the tool is listed, so
/// that it is not kept in memory for the server's life (seven million of them took 1 GB).
const MAX_LISTED_ENUM: usize = crate::ranges::SCHEMA_ENUM_VALUES.max as usize;

/// `json` without its `enum`s of more than [`MAX_LISTED_ENUM`] values, at any depth.
fn drop_long_enums(json: &mut Json) {
    let mut stack = vec![json];
    while let Some(v) = stack.pop() {
        match v {
            Json::Object(map) => {
                if map.get("enum").and_then(Json::as_array).is_some_and(|a| a.len() > MAX_LISTED_ENUM) {
                    map.remove("enum");
                }
                stack.extend(map.values_mut());
            }
            Json::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
}

/// A writer that only counts the bytes written to it.
struct Counted(usize);

impl std::io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(super) async fn list_all(peer: &Peer<RoleClient>) -> Result<Result<Vec<Json>, String>, ServiceError> {
    let (mut tools, mut bytes, mut cursor) = (Vec::new(), 0usize, None);
    for _ in 0..MAX_LISTING_PAGES {
        let page = peer.list_tools(Some(rmcp::model::PaginatedRequestParams::default().with_cursor(cursor))).await?;
        for tool in &page.tools {
            let mut json = serde_json::to_value(tool).unwrap_or(Json::Null);
            drop_long_enums(&mut json);
            let mut size = Counted(0);
            let _ = serde_json::to_writer(&mut size, &json);
            bytes = bytes.saturating_add(size.0);
            if bytes > MAX_LISTING_BYTES {
                return Ok(Err(format!(
                    "the server listed more than {} MiB of tools (the most tdsl takes in from one listing, \
                     all pages together), so the listing was abandoned",
                    MAX_LISTING_BYTES / (1024 * 1024)
                )));
            }
            tools.push(json);
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            return Ok(Ok(tools));
        }
    }
    Ok(Err(format!(
        "the server's listing went on past {MAX_LISTING_PAGES} pages (each with another `nextCursor`), \
         so it was abandoned"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_drops_enums_longer_than_it_keeps() {
        let long: Vec<u32> = (0..1_001).collect();
        let mut tool = serde_json::json!({"name": "t", "inputSchema": {"type": "object", "properties": {
            "a": {"type": "integer", "enum": long},
            "b": {"type": "array", "items": {"enum": ["x", "y"]}},
            "c": {"anyOf": [{"enum": (0..2_000).collect::<Vec<u32>>()}, {"type": "null"}]}
        }}});
        drop_long_enums(&mut tool);
        let props = &tool["inputSchema"]["properties"];
        assert_eq!(props["a"], serde_json::json!({"type": "integer"}));
        assert_eq!(props["b"]["items"]["enum"], serde_json::json!(["x", "y"]));
        assert_eq!(props["c"]["anyOf"][0], serde_json::json!({}));
    }
}
