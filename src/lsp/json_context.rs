//! Where the cursor is in a `.tool` file's JSON text, read without a parser (the text may be
//! broken while typing): the containers around it, the key it is under, the string it is in.

use crate::tool::keys::{self, Level, Shape};
use crate::tool::ToolDef;

/// Where the cursor is in the JSON text, read without a parser (the text may be broken
/// while typing).
#[derive(Debug, Default)]
pub(super) struct JsonContext {
    /// For each open container: `(is_object, the key it is the value of)`; a container in
    /// a list takes the list's key.
    pub(super) frames: Vec<(bool, Option<String>)>,
    /// When the innermost container is an object: the key whose value is being written.
    pub(super) key: Option<String>,
    /// The string the cursor is in: where its text starts, whether it is a key.
    pub(super) string: Option<(usize, bool)>,
}

/// What an open container is, found from the root down: an object of the format (its keys
/// are those of a [`Level`]), a list of such objects, or a value the writer shapes (an
/// instruction's `arguments`, a `default`, `done_value`, `enum`, `variables`…), whose keys
/// are the writer's at any depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Container {
    Object(Level),
    List(Level),
    Free,
}

/// The key `name` of a `level` object; a condition may be a leaf or a group.
pub(super) fn key_of(level: Level, name: &str) -> Option<(Level, &'static keys::Key)> {
    match level.key(name) {
        Some(k) => Some((level, k)),
        None if level == Level::ConditionLeaf => Some((Level::ConditionGroup, Level::ConditionGroup.key(name)?)),
        None => None,
    }
}

impl JsonContext {
    /// What each open container is, outermost first.
    pub(super) fn containers(&self) -> Vec<Container> {
        let mut out: Vec<Container> = Vec::with_capacity(self.frames.len());
        for (is_object, key) in &self.frames {
            let this = match out.last() {
                None if *is_object => Container::Object(Level::Tool),
                None | Some(Container::Free) => Container::Free,
                Some(Container::List(level)) if *is_object => Container::Object(*level),
                Some(Container::List(_)) => Container::Free,
                Some(Container::Object(parent)) => {
                    match (key.as_deref().and_then(|k| key_of(*parent, k)).map(|(_, k)| k.shape), is_object) {
                        (Some(Shape::ListOf(level)), false) => Container::List(level),
                        (Some(Shape::One(level)), true) => Container::Object(level),
                        (Some(Shape::Conditions | Shape::DoneCheck), false) => Container::List(Level::ConditionLeaf),
                        (Some(Shape::Items), true) => Container::Object(Level::Element),
                        _ => Container::Free,
                    }
                }
            };
            out.push(this);
        }
        out
    }

    /// The kind of object the cursor is in, when it is one of the format's (its keys are
    /// those of [`keys::Level`]).
    pub(super) fn level(&self) -> Option<Level> {
        match self.containers().last() {
            Some(Container::Object(level)) => Some(*level),
            _ => None,
        }
    }
}

/// Where the cursor at the end of `before` is. The text is read from its start, or from
/// the start of the instruction that holds the cursor (found in the last model, by
/// position), so that the cost does not grow with the steps before it.
pub(super) fn json_context_at(before: &str, tool: Option<&ToolDef>) -> JsonContext {
    let at = before.len();
    let ins = tool.map_or(&[][..], ToolDef::instructions);
    let i = ins.partition_point(|i| (i.span.start as usize) <= at);
    if let Some(ins) = i.checked_sub(1).and_then(|i| ins.get(i)).filter(|i| at < i.span.end as usize) {
        // A list's frame takes its key; the instruction's own `{` opens the third frame.
        let frames = vec![(true, None), (false, Some("instructions".to_string()))];
        if let Some(from) = before.get(ins.span.start as usize..) {
            let mut cx = json_context(from, frames);
            // Offsets into `before`, not into the instruction.
            if let Some((start, _)) = &mut cx.string {
                *start += ins.span.start as usize;
            }
            return cx;
        }
    }
    json_context(before, Vec::new())
}

/// Where the cursor at the end of `before` is, `before` starting inside the containers
/// `frames`.
pub(super) fn json_context(before: &str, frames: Vec<(bool, Option<String>)>) -> JsonContext {
    let mut cx = JsonContext { frames, ..JsonContext::default() };
    // The key of the value being written in each open container (objects only).
    let mut keys: Vec<Option<String>> = vec![None; cx.frames.len()];
    let mut last_string: Option<String> = None;
    let mut in_string: Option<usize> = None;
    let mut escaped = false;
    for (i, c) in before.char_indices() {
        if let Some(start) = in_string {
            if c == '\n' || c == '\r' {
                // A JSON string cannot hold a line break: one left open while typing ends at
                // its line, and the lines after it are read as they are.
                in_string = None;
                escaped = false;
            } else if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                last_string = Some(decoded(&before[start..i]).into_owned());
                in_string = None;
            }
            continue;
        }
        match c {
            '"' => in_string = Some(i + 1),
            ':' => {
                if let Some(k) = keys.last_mut() {
                    *k = last_string.take();
                }
            }
            ',' => {
                if let Some(k) = keys.last_mut() {
                    *k = None;
                }
            }
            '{' | '[' => {
                let key = match cx.frames.last() {
                    Some((true, _)) => keys.last().cloned().flatten(),
                    Some((false, k)) => k.clone(),
                    None => None,
                };
                cx.frames.push((c == '{', key));
                keys.push(None);
            }
            '}' | ']' => {
                cx.frames.pop();
                keys.pop();
            }
            _ => {}
        }
    }
    let in_object = cx.frames.last().is_some_and(|f| f.0);
    cx.key = if in_object { keys.last().cloned().flatten() } else { None };
    if let Some(start) = in_string {
        cx.string = Some((start, in_object && cx.key.is_none()));
    }
    cx
}

/// Where the JSON string whose text starts at `start` ends (its closing quote; escaped
/// quotes are inside it).
pub(super) fn string_end(text: &str, start: usize) -> Option<usize> {
    let mut escaped = false;
    for (i, b) in text.as_bytes().get(start..)?.iter().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => return Some(start + i),
            b'\n' | b'\r' => return None,
            _ => {}
        }
    }
    None
}

/// The text of a JSON string as written between its quotes, its escapes decoded (as the
/// loader reads it: `"\u0072etry"` is the key `retry`); as written when it does not decode.
pub(super) fn decoded(raw: &str) -> std::borrow::Cow<'_, str> {
    if !raw.contains('\\') {
        return raw.into();
    }
    serde_json::from_str::<String>(&format!("\"{raw}\"")).map_or(raw.into(), Into::into)
}
