//! Finding the REF strings of a tool definition (SPEC §2, "Where REF strings are resolved",
//! items 1–6).
//!
//! A JSON string is a REF when it starts with `REF:`; then the whole string must parse as
//! one. This module knows *where* such strings are resolved and turns them into
//! [`RefPath`]s whose spans point into the file. It does not look inside expression strings
//! (transforms, a `done_check` expression): REF atoms there (item 7) are found by the
//! expression parser, with spans mapped through [`JsonStr::string_map`] in the same way.

use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast::RefPath;
use crate::syntax::parse_ref;

use super::json::{JsonKind, JsonNode, JsonObject, JsonStr};
use super::model::{Condition, DoneCheck, Instruction, ToolDef, ToolKind, Transform};

/// Which of the two transform blocks a variable belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransformBlock {
    /// `transform_arguments`
    Arguments,
    /// `transform_responses` (the only place `REF:response` is valid)
    Responses,
}

/// Where a REF string was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefPlace {
    /// In an instruction's `arguments`, at any depth.
    Argument,
    /// In a transform block's `variables`, at any depth.
    Variable(TransformBlock),
    /// A condition's `param` (in `conditions`).
    ConditionParam,
    /// A condition's `value` (in `conditions`), at any depth.
    ConditionValue,
    /// `parallel_execution.iterate_over`, or an element of a literal list there.
    IterateOver,
    /// A condition's `param` or `value` in a `done_check` list.
    DoneCheck,
    /// `done_value`, at any depth.
    DoneValue,
    /// A `response_reference_map` value.
    ResponseMap,
}

impl RefPlace {
    /// What a value in this place is called in messages.
    pub fn describe(self) -> &'static str {
        match self {
            RefPlace::Argument => "argument value",
            RefPlace::Variable(_) => "transform variable",
            RefPlace::ConditionParam => "condition `param`",
            RefPlace::ConditionValue => "condition `value`",
            RefPlace::IterateOver => "`iterate_over` value",
            RefPlace::DoneCheck => "`done_check` value",
            RefPlace::DoneValue => "`done_value`",
            RefPlace::ResponseMap => "`response_reference_map` value",
        }
    }
}

/// A REF found in a tool definition.
#[derive(Clone, Debug, PartialEq)]
pub struct RefSite {
    /// The parsed path; its spans point into the file.
    pub path: RefPath,
    /// The REF's text in the file, without the quotes.
    pub span: Span,
    /// Where it was written.
    pub place: RefPlace,
}

/// Parses a JSON string as a REF: `None` when it does not start with `REF:` (plain text),
/// otherwise the path or the reason it is malformed, with spans in the file.
pub(crate) fn parse_ref_string(s: &JsonStr) -> Option<Result<RefPath, Diagnostic>> {
    if !s.value.starts_with("REF:") {
        return None;
    }
    let map = s.string_map();
    Some(match parse_ref(&s.value) {
        Ok(mut path) => {
            path.context.span = map.map(path.context.span);
            for seg in &mut path.segments {
                seg.span = map.map(seg.span);
            }
            Ok(path)
        }
        Err(d) => Err(d.map_spans(&|span| map.map(span))),
    })
}

impl Instruction {
    /// Every well-formed REF of this step, in the places of SPEC §2 items 1–6, with where it
    /// was written. Malformed REFs are left out (loading reports them).
    pub fn ref_sites(&self) -> Vec<RefSite> {
        sites(instruction_strings(self))
    }

    /// Every well-formed REF of this step and its span in the file.
    pub fn refs(&self) -> Vec<(RefPath, Span)> {
        self.ref_sites().into_iter().map(|s| (s.path, s.span)).collect()
    }
}

impl ToolDef {
    /// The REFs of the tool as a whole: `response_reference_map` values and the variables
    /// of the tool-level transforms. The steps' REFs are in [`Instruction::ref_sites`].
    pub fn ref_sites(&self) -> Vec<RefSite> {
        sites(tool_strings(self))
    }

    /// The REFs of the tool as a whole and their spans in the file.
    pub fn refs(&self) -> Vec<(RefPath, Span)> {
        self.ref_sites().into_iter().map(|s| (s.path, s.span)).collect()
    }
}

fn sites(strings: Vec<(&JsonStr, RefPlace)>) -> Vec<RefSite> {
    strings
        .into_iter()
        .filter_map(|(s, place)| match parse_ref_string(s)? {
            Ok(path) => Some(RefSite { path, span: s.content_span(), place }),
            Err(_) => None,
        })
        .collect()
}

/// Every string of an instruction that is resolved as a REF when it is one.
pub(crate) fn instruction_strings(ins: &Instruction) -> Vec<(&JsonStr, RefPlace)> {
    let mut out = Vec::new();
    if let Some(args) = &ins.arguments {
        for (_, v) in &args.entries {
            strings_in(v, RefPlace::Argument, &mut out);
        }
    }
    transform_strings(ins.transform_arguments.as_ref(), TransformBlock::Arguments, &mut out);
    transform_strings(ins.transform_responses.as_ref(), TransformBlock::Responses, &mut out);
    for c in &ins.conditions {
        condition_strings(c, RefPlace::ConditionParam, RefPlace::ConditionValue, &mut out);
    }
    if let Some(p) = &ins.parallel_execution {
        strings_in(&p.iterate_over, RefPlace::IterateOver, &mut out);
    }
    if let Some(DoneCheck::Conditions(cs)) = &ins.done_check {
        for c in cs {
            condition_strings(c, RefPlace::DoneCheck, RefPlace::DoneCheck, &mut out);
        }
    }
    if let Some(v) = &ins.done_value {
        strings_in(v, RefPlace::DoneValue, &mut out);
    }
    out
}

/// Every string of the tool as a whole that is resolved as a REF when it is one.
pub(crate) fn tool_strings(tool: &ToolDef) -> Vec<(&JsonStr, RefPlace)> {
    let map = match &tool.kind {
        ToolKind::Composite { response_reference_map, .. } => response_reference_map.as_ref(),
        ToolKind::Primitive { .. } => None,
    };
    tool_level_strings(map, tool.transform_arguments.as_ref(), tool.transform_responses.as_ref())
}

/// [`tool_strings`] from the parts, for checking them before the tool is put together.
pub(crate) fn tool_level_strings<'a>(
    response_reference_map: Option<&'a JsonObject>,
    transform_arguments: Option<&'a Transform>,
    transform_responses: Option<&'a Transform>,
) -> Vec<(&'a JsonStr, RefPlace)> {
    let mut out = Vec::new();
    for (_, v) in response_reference_map.map_or(&[][..], |m| &m.entries) {
        if let JsonKind::Str(s) = &v.kind {
            out.push((s, RefPlace::ResponseMap));
        }
    }
    transform_strings(transform_arguments, TransformBlock::Arguments, &mut out);
    transform_strings(transform_responses, TransformBlock::Responses, &mut out);
    out
}

fn transform_strings<'a>(t: Option<&'a Transform>, block: TransformBlock, out: &mut Vec<(&'a JsonStr, RefPlace)>) {
    for (_, v) in t.map_or(&[][..], |t| &t.variables) {
        strings_in(v, RefPlace::Variable(block), out);
    }
}

fn condition_strings<'a>(
    c: &'a Condition,
    param_place: RefPlace,
    value_place: RefPlace,
    out: &mut Vec<(&'a JsonStr, RefPlace)>,
) {
    match c {
        Condition::Leaf { param, value, .. } => {
            strings_in(param, param_place, out);
            if let Some(v) = value {
                strings_in(v, value_place, out);
            }
        }
        Condition::Group { conditions, .. } => {
            for c in conditions {
                condition_strings(c, param_place, value_place, out);
            }
        }
    }
}

/// Every string in `node`, at any depth of lists and objects (object keys are not values).
fn strings_in<'a>(node: &'a JsonNode, place: RefPlace, out: &mut Vec<(&'a JsonStr, RefPlace)>) {
    node.walk(&mut |n| {
        if let JsonKind::Str(s) = &n.kind {
            out.push((s, place));
        }
    });
}
