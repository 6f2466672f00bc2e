//! Checking a plan: its size and depth before it is parsed, the names of its tools resolved, the
//! analysis of `tdsl check` over it, each diagnostic adapted to what a model wrote, and the levels
//! and result type of a plan without errors.

use std::collections::HashMap;
use std::sync::Arc;

use super::plan_check::{PlanCheck, PLAN_TOOL};
use super::{literal, PlanDesk};
use crate::analysis::{Analyzer, CheckedTool, MissingCallees, Resolved, ToolRoot, TypeAt, TypeAtKind};
use crate::diagnostic::{Code, Diagnostic};
use crate::engine::Engine;
use crate::runtime::{Interrupt, InterruptReason};
use crate::span::Span;
use crate::tool::{mistakes, JsonNode};
use crate::types::Type;

/// The most work (characters looked at, distance-table cells: [`crate::suggest`]) the "did
/// you mean"s of one plan's check spend together: a plan that misspells a tool in each of
/// its steps, against 60,000 upstream tools, gets its hints for the first of them and the
/// list of callable tools for all. Fixed: its range is
/// [`crate::ranges::PLAN_SUGGESTION_WORK`], of one value.
pub const MAX_SUGGESTION_WORK: u64 = crate::ranges::PLAN_SUGGESTION_WORK.max as u64;

impl PlanDesk {
    /// Checks a plan given as JSON text, within the plan's deadline (past it the check
    /// stops, with `E1316`).
    pub fn check(&self, plan: &str) -> PlanCheck {
        self.check_interruptible(plan, &Interrupt::new())
    }

    /// [`PlanDesk::check`], stopped soon after `interrupt` is cancelled (the check is then
    /// the error `E0407`) or its deadline or the plan's passes (`E1316`): an interrupted
    /// check is an error, never a partial verdict.
    pub fn check_interruptible(&self, plan: &str, interrupt: &Interrupt) -> PlanCheck {
        self.check_with(plan, self.engine.clone(), interrupt).0
    }

    /// Checks a plan given as a JSON value (an MCP argument): its compact JSON text is what
    /// the diagnostics point into.
    pub fn check_value(&self, plan: &serde_json::Value) -> PlanCheck {
        self.check(&plan_text(plan, self.limits.max_bytes))
    }

    /// The steps a checked plan's steps wait for (through REFs or `dependencies`): each
    /// execution id with the ids it depends on, in plan order; `None` when the plan has an
    /// error. The composer (`tdsl compose`) reports them as seed 000's `depends_on_steps`.
    pub fn dependencies(&self, plan: &str) -> Option<Vec<(String, Vec<String>)>> {
        let (check, ready) = self.check_with(plan, self.engine.clone(), &Interrupt::new());
        let (_, checked) = ready.filter(|_| check.ok())?;
        let plan = checked.plan.as_ref()?;
        Some(
            plan.steps
                .iter()
                .map(|s| {
                    let deps = s.depends_on.iter().map(|d| plan.steps[d.0].execution_id.to_string()).collect();
                    (s.execution_id.to_string(), deps)
                })
                .collect(),
        )
    }

    /// The check of a plan of `len` bytes that is too large to be read (`E1301`), or `None`
    /// when it is within the limit: for a caller that has not read it yet (a file).
    pub fn refuse_size(&self, len: u64) -> Option<PlanCheck> {
        (len > self.limits.max_bytes as u64).then(|| self.too_large(Some(len)))
    }

    /// The refusal of a plan found larger than the limit while it was read (a file that grew
    /// after its size was taken, or that reports no size): its exact size is not known.
    pub fn refuse_read_past_limit(&self) -> PlanCheck {
        self.too_large(None)
    }

    pub(super) fn too_large(&self, len: Option<u64>) -> PlanCheck {
        let max = self.limits.max_bytes;
        let message = match len {
            Some(len) => format!("the plan is {len} bytes, more than the limit of {max} bytes"),
            None => format!("the plan is more than the limit of {max} bytes"),
        };
        let d = Diagnostic::new(Code::PlanTooLarge, Span::new(0, 0), message)
        .with_label("not read")
        .with_help("a plan is a short program: fan out over a list with `parallel_execution` instead of writing steps out, and pass data as arguments");
        PlanCheck::finish(Arc::from(""), None, vec![d], None)
    }

    /// The check, and what a run needs; stopped by `interrupt` or at the plan's deadline
    /// (`crate::types::stop`), the error that says so and nothing to run.
    pub(super) fn check_with(
        &self,
        text: &str,
        engine: Engine,
        interrupt: &Interrupt,
    ) -> (PlanCheck, Option<(Analyzer, CheckedTool)>) {
        let deadline = std::time::Duration::try_from_secs_f64(self.limits.deadline_seconds)
            .ok()
            .and_then(|d| std::time::Instant::now().checked_add(d));
        let interrupt = match deadline {
            Some(d) => interrupt.clone().with_deadline(d),
            None => interrupt.clone(),
        };
        match crate::types::stop::scope(crate::types::stop::interrupt_poll(&interrupt), || {
            self.check_unstopped(text, engine)
        }) {
            Ok(checked) => checked,
            Err(reason) => (self.stopped(text, reason), None),
        }
    }

    /// The error of a check stopped partway: what it found so far is not a verdict.
    fn stopped(&self, text: &str, reason: InterruptReason) -> PlanCheck {
        let d = match reason {
            InterruptReason::Cancelled => {
                Diagnostic::new(Code::Interrupted, Span::new(0, 0), "the check was cancelled before it ended")
                    .with_label("not checked")
                    .with_help("nothing was checked or run: send the plan again to check it")
            }
            InterruptReason::Deadline => Diagnostic::new(
                Code::PlanCheckDeadline,
                Span::new(0, 0),
                format!(
                    "the check did not end within the plan's deadline ({} s): the plan was not checked or run",
                    self.limits.deadline_seconds
                ),
            )
            .with_label("not checked")
            .with_help("a plan this costly to check is too large: send a shorter plan (fewer steps, smaller literals), or split it in several"),
        };
        PlanCheck::finish(Arc::from(text), None, vec![d], None)
    }

    /// The check, run to its end.
    fn check_unstopped(&self, text: &str, engine: Engine) -> (PlanCheck, Option<(Analyzer, CheckedTool)>) {
        // However many names the plan misspells, its "did you mean"s share one allowance.
        let _allowance = crate::suggest::limit_suggestions(MAX_SUGGESTION_WORK);
        if let Some(refused) = self.refuse_size(text.len() as u64) {
            return (refused, None);
        }
        let source: Arc<str> = Arc::from(text);
        if let Some(d) = too_deep(text, self.limits.max_nesting) {
            return (PlanCheck::finish(source, None, vec![d], None), None);
        }
        let (tree, json_diags) = crate::tool::json::parse(text);
        let Some(tree) = tree else {
            let diags = json_diags.into_iter().map(|d| python_in_json(d, text)).collect();
            return (PlanCheck::finish(source, None, diags, None), None);
        };
        let Some(entries) = tree.as_object() else {
            let mut d = Diagnostic::new(
                Code::PlanNotObject,
                tree.span,
                format!("a plan is a JSON object, and this is {}", article(tree.type_name())),
            )
            .with_label("not an object")
            .with_help("send {\"instructions\": [{\"execution_id\": \"…\", \"tool_definition_path\": \"<tool>\", \"arguments\": {…}}, …]}");
            if let Some(inner) = tree.as_str() {
                d = plan_sent_as_a_string(d, inner);
            }
            return (PlanCheck::finish(source, Some(tree), vec![d], None), None);
        };
        let mut diags = json_diags;
        if let Some((key, _)) = entries.iter().find(|(k, _)| k.node == "system_event_endpoint") {
            diags.push(
                Diagnostic::new(
                    Code::PlanDefinesPrimitive,
                    key.span,
                    "a plan cannot define a primitive tool: it calls the tools it is given",
                )
                .with_label("a primitive tool's endpoint")
                .with_help("remove `system_event_endpoint` and call a callable tool from `instructions`"),
            );
            return (PlanCheck::finish(source, Some(tree), diags, None), None);
        }
        let instructions: &[JsonNode] =
            entries.iter().find(|(k, _)| k.node == "instructions").and_then(|(_, v)| v.as_list()).unwrap_or_default();
        if instructions.len() > self.limits.max_steps {
            let extra = &instructions[self.limits.max_steps];
            diags.push(
                Diagnostic::new(
                    Code::PlanTooManySteps,
                    extra.span,
                    format!(
                        "the plan has {} steps, more than the limit of {}",
                        instructions.len(),
                        self.limits.max_steps
                    ),
                )
                .with_label(format!("step {} of at most {}", self.limits.max_steps + 1, self.limits.max_steps))
                .with_help("fan out over a list with `parallel_execution` instead of writing one step per element"),
            );
            return (PlanCheck::finish(source, Some(tree), diags, None), None);
        }

        // Names: resolve every tool_definition_path as the model wrote it.
        let mut root = ToolRoot::with_policy(&self.root, MissingCallees::Skip);
        // The composites a plan calls (a skill) name upstream tools as the plan does.
        if !self.upstream.tools.is_empty() {
            root = root.with_named(self.upstream.clone());
        }
        // The names an unknown tool is compared with, gathered once for the whole plan.
        let candidates = std::cell::OnceCell::new();
        // Each tool as written, and the one name it has in a run (its tool path, or
        // `SERVER/TOOL`): what `TDSL_TOOL`, `X-Tdsl-Tool` and the history see.
        let mut canonical_of: HashMap<String, String> = HashMap::new();
        // The tool paths already refused here: the load's own `E0530` about one is an echo.
        let mut unresolved: Vec<Span> = Vec::new();
        let mut step_ids: Vec<String> = Vec::new();
        let mut step_fields: Vec<Option<Vec<String>>> = Vec::new();
        // (the tool as written, the step's id, the span of its id) of each step.
        let mut step_tools: Vec<(String, String, Span)> = Vec::new();
        for ins in instructions {
            let field = |k: &str| ins.as_object().and_then(|e| e.iter().find(|(key, _)| key.node == k)).map(|(_, v)| v);
            step_ids
                .push(field("execution_id").and_then(JsonNode::as_str).map_or(String::new(), |s| s.value.to_string()));
            let mut fields = None;
            if let (Some(path), Some(id)) =
                (field("tool_definition_path").and_then(JsonNode::as_str), field("execution_id"))
            {
                let written = path.value.trim().trim_end_matches(".tool");
                let written = written.rsplit('/').next().unwrap_or(written).to_string();
                let id_text = id.as_str().map_or(String::new(), |s| s.value.to_string());
                step_tools.push((written, id_text, id.span));
            }
            if let Some(path) = field("tool_definition_path").and_then(JsonNode::as_str) {
                match self.resolve(&mut root, &path.value, &candidates) {
                    Ok((tool, canonical)) => {
                        if let Some(schemas) = self.upstream.resolved(&canonical) {
                            literal::nested_constraints(ins, &canonical, &schemas.input, &mut diags);
                        }
                        canonical_of.insert(path.value.to_string(), canonical);
                        fields = tool
                            .def
                            .as_ref()
                            .filter(|_| tool.declares_responses)
                            .map(|d| d.responses.iter().map(|p| p.name.node.clone()).collect::<Vec<String>>());
                    }
                    Err(d) => {
                        unresolved.push(path.span);
                        diags.push(d.at(path.span));
                        root.alias(&path.value, Resolved::Missing(self.root.join(".plan-unresolved")));
                    }
                }
            }
            if let Some(items) = field("parallel_execution")
                .and_then(JsonNode::as_object)
                .and_then(|e| e.iter().find(|(k, _)| k.node == "iterate_over"))
                .and_then(|(_, v)| v.as_list())
            {
                if items.len() > self.limits.max_fan_out {
                    let over = &items[self.limits.max_fan_out];
                    diags.push(
                        Diagnostic::new(
                            Code::PlanFanOutTooWide,
                            over.span,
                            format!(
                                "this step fans out over {} elements, more than the limit of {} children",
                                items.len(),
                                self.limits.max_fan_out
                            ),
                        )
                        .with_label(format!("element {}", self.limits.max_fan_out + 1))
                        .with_help(
                            "split the list into several plans, or narrow it with a transform before fanning out",
                        ),
                    );
                }
            }
            step_fields.push(fields);
        }

        // The mistakes models make, in the plan's strings.
        // The plan's declared arguments: `{{url}}` and `$url` name one as much as `{{page.text}}`
        // names a step.
        let arg_names: Vec<String> = entries
            .iter()
            .find(|(k, _)| k.node == "arguments")
            .and_then(|(_, v)| v.as_list())
            .unwrap_or_default()
            .iter()
            .filter_map(|a| {
                a.as_object()?.iter().find(|(k, _)| k.node == "name")?.1.as_str().map(|n| n.value.to_string())
            })
            .collect();
        let names = mistakes::Names { steps: &step_ids, fields: &step_fields, args: &arg_names };
        let mut found = Vec::new();
        let mut named = Vec::new();
        // Strings a finding explains: the analysis' complaints about them are its echoes.
        // Each string's own findings decide (the strings are disjoint, in the order of the
        // text, so this stays sorted for the binary search below).
        let mut explained: Vec<Span> = Vec::new();
        let sites = mistakes::sites(&tree);
        for site in &sites {
            let before = found.len();
            mistakes::check_site(site, &names, self.files, &mut found, &mut named);
            if found.len() == before {
                literal::check_site(site, &mut found);
            } else if found[before..].iter().any(|d| matches!(d.code, Code::PlanPlaceholder | Code::PlanPathSyntax)) {
                explained.push(site.text.span);
            }
        }
        let named: std::collections::HashSet<String> = named.into_iter().collect();
        // A step a placeholder means is used: "never used" would be an echo.
        let used: Vec<Span> = instructions
            .iter()
            .zip(&step_ids)
            .filter(|(_, id)| named.contains(*id))
            .filter_map(|(ins, _)| ins.as_object()?.iter().find(|(k, _)| k.node == "execution_id").map(|(_, v)| v.span))
            .collect();
        // A fan-out whose `iterate_over` is explained binds no child argument for the
        // analysis: its "missing argument" is an echo too.
        let echo_missing: Vec<Span> = instructions
            .iter()
            .filter_map(|ins| {
                let entries = ins.as_object()?;
                let get = |k: &str| entries.iter().find(|(key, _)| key.node == k).map(|(_, v)| v);
                let over =
                    get("parallel_execution")?.as_object()?.iter().find(|(k, _)| k.node == "iterate_over")?.1.span;
                explained.binary_search(&over).is_ok().then(|| get("tool_definition_path").map(|p| p.span))?
            })
            .collect();
        diags.extend(found);

        // The analysis: the same checks as `tdsl check`.
        let mut analyzer = Analyzer::with_engine(root, engine);
        analyzer.set_foreign_values(false);
        analyzer.set_closed_results(true);
        let mut checked = analyzer.check_text(PLAN_TOOL.to_string(), source.clone(), None);
        // A run calls each tool by its one name, however the plan spelt it.
        if let Some(plan) = checked.plan.as_mut() {
            for step in &mut plan.steps {
                // A transform step calls nothing: it has no name to make one.
                if let Some(canonical) = step.tool_path.as_deref().and_then(|t| canonical_of.get(t)) {
                    step.tool_path = Some(Arc::from(canonical.as_str()));
                }
            }
        }
        // A REF to a tool's name where the step that calls it was meant: that step is used.
        let mut used = used;
        for d in checked.diagnostics.iter().filter(|d| d.code == Code::UnknownRefContext) {
            let ctx = source.get(d.span.range()).unwrap_or_default();
            used.extend(step_tools.iter().filter(|(tool, _, _)| tool == ctx).map(|(_, _, span)| *span));
        }
        // A REF's first field that the callee does not declare is `E1314`; that it reads as
        // `null` on a closed result (`W0102`) is its echo.
        let undeclared: Vec<Span> =
            checked.diagnostics.iter().filter(|d| d.code == Code::UndeclaredResponseField).map(|d| d.span).collect();
        for d in &checked.diagnostics {
            if d.code == Code::UnknownField && undeclared.contains(&d.span) {
                continue;
            }
            let inside = {
                let i = explained.partition_point(|s| s.start <= d.span.start);
                i > 0 && d.span.end <= explained[i - 1].end
            };
            let echo = matches!(d.code.as_str().get(..3), Some("E00" | "E01" | "E02"))
                || matches!(
                    d.code,
                    // The type of a placeholder's text is not the type of what it means.
                    Code::ExpectedRef | Code::LooksLikeRef | Code::UndeclaredResponseField | Code::CalleeArgumentType
                );
            if (inside && echo)
                || (d.code == Code::MissingCalleeArgument && echo_missing.contains(&d.span))
                || (d.code == Code::UnusedStepResult && used.contains(&d.span))
                || (d.code == Code::ToolPathSpelling && unresolved.contains(&d.span))
            {
                continue;
            }
            let mut d = adapt(d, &source, &step_tools);
            if d.code == Code::InvalidRef {
                let at = super::locate::locate(&tree, d.span);
                if let Some(help) = literal::computed_ref(&d.message, &at.pointer) {
                    d.help = Some(help);
                }
            }
            if d.code == Code::CalleeArgumentType {
                fan_out_over_objects(&mut d, instructions, &step_ids, &checked.types);
            }
            diags.push(d);
        }
        literal::drop_null_echoes(&mut diags);
        literal::drop_keyword_echoes(&mut diags);
        let result_type = if diags.iter().any(Diagnostic::is_error) { None } else { result_type(&checked) };
        let check = PlanCheck::finish(source, Some(tree), diags, checked.plan.as_ref().map(levels).zip(result_type));
        let ok = check.ok();
        (check, ok.then_some((analyzer, checked)))
    }
}

/// A diagnostic of the analysis, as a plan's: a field the callee does not declare is an
/// error (`E1314`), a Python literal in an expression `E1313`; a REF to a tool's name gets
/// the step that calls it, a key of another plan format its tdsl name.
pub(super) fn adapt(d: &Diagnostic, source: &str, step_tools: &[(String, String, Span)]) -> Diagnostic {
    let mut d = d.clone();
    let text = source.get(d.span.range()).unwrap_or_default();
    match d.code {
        // Other languages' syntax gets the tdsl form from the analysis itself
        // (`crate::syntax::foreign`), in a plan as in a `.tool` file.
        Code::UndeclaredResponseField => {
            d.code = Code::PlanUnknownField;
            // No near name: perhaps a field the tool returns without declaring it (an open
            // schema read as closed): say how a plan reads one.
            if d.message.contains("has no declared field `") && d.suggestion.is_none() {
                let field = text.trim_start_matches('.');
                let step = d.message.split_once("step `").and_then(|(_, r)| r.split_once('`')).map(|(s, _)| s);
                if let Some(step) = step.filter(|_| crate::syntax::is_identifier(field)) {
                    d.help = Some(format!(
                        "{}; a field the tool returns though it does not declare it is read by key in a transform: \"variables\": {{\"r\": \"REF:{step}\"}} and `r['{field}']` (`.{field}` and REF paths read declared fields only)",
                        d.help.take().unwrap_or_default()
                    ));
                }
            }
        }
        // Nothing silently wrong (SPEC §13): what a `.tool` file is warned of, a plan is refused.
        Code::UnknownField | Code::OpenArgument => d = literal::plan_error(d),
        // A plan cannot be primitive: the help of a `.tool` file would send the model to
        // `system_event_endpoint`, which a plan may not have (`E1304`).
        Code::NeitherPrimitiveNorComposite | Code::EmptyInstructions => {
            d.help = Some(
                "a plan's steps are its `instructions`: [{\"execution_id\": \"a\", \"tool_definition_path\": \"<a tool of tdsl://tools>\", \"arguments\": {…}}, …]; it cannot have `system_event_endpoint`"
                    .to_string(),
            );
        }
        Code::UnknownName => {
            if let Some((tdsl, lang)) = mistakes::expression_literal(text) {
                d = Diagnostic::new(
                    Code::PlanLiteral,
                    d.span,
                    format!("`{text}` is {lang}; tdsl expressions write `{tdsl}`"),
                )
                .with_label(format!("write `{tdsl}`"))
                .with_help(format!(
                    "tdsl's literals are JSON's: `true`, `false`, `null`; replace `{text}` with `{tdsl}`"
                ));
            }
        }
        Code::UnknownRefContext => {
            let steps: Vec<&str> =
                step_tools.iter().filter(|(tool, _, _)| tool == text).map(|(_, id, _)| id.as_str()).collect();
            if let [step] = steps.as_slice() {
                let rest: String = source
                    .get(d.span.end as usize..)
                    .unwrap_or_default()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                    .collect();
                d.help = Some(format!(
                    "`{text}` is a tool; a REF names the step that calls it by its `execution_id`: write `REF:{step}{rest}`"
                ));
            }
        }
        Code::LiteralBreaksConstraint | Code::InvalidArgumentValue => {
            if let Some(hint) = literal::enum_hint(&d.message, text) {
                d.help = Some(match d.help.take() {
                    Some(h) if !h.starts_with("did you mean") => format!("{hint} {h}"),
                    Some(h) => h,
                    None => hint,
                });
            }
        }
        Code::InvalidRef => {
            if let Some(help) = literal::dotted_ref(&d.message).or_else(|| literal::odd_field_ref(&d.message)) {
                d.help = Some(help);
            }
        }
        // An expression where a REF belongs: its help offers the text in a transform step,
        // which must then be an expression that checks (else `computed_ref` says so).
        Code::ExpectedRef
            if d.help.as_deref().is_some_and(|h| h.starts_with("a REF reads a value and computes nothing")) =>
        {
            let written: String = serde_json::from_str(text).unwrap_or_default();
            if !literal::checks(&written) {
                let message = format!("malformed REF `{written}`: an expression");
                if let Some(help) = literal::computed_ref(&message, "") {
                    d.help = Some(help);
                }
            }
        }
        _ => {}
    }
    d
}

/// `E0613` at a fan-out's `iterate_over` whose elements are objects that hold what the child
/// argument wants (`"iterate_over": "REF:orders.result"` with `"child_argument_name":
/// "order_id"`, the elements `{order_id, customer, …}`): the help shows the list to fan out
/// over instead, made by a transform step, rather than the argument's declared type alone
/// (model round 2026-11-29: the most common fan-out, "list, then one call per element").
fn fan_out_over_objects(d: &mut Diagnostic, instructions: &[JsonNode], step_ids: &[String], types: &[TypeAt]) {
    let field = |node: &'_ JsonNode, k: &str| -> Option<JsonNode> {
        node.as_object()?.iter().find(|(key, _)| key.node == k).map(|(_, v)| v.clone())
    };
    let Some((over, child)) = instructions.iter().find_map(|ins| {
        let parallel = field(ins, "parallel_execution")?;
        let over = field(&parallel, "iterate_over").filter(|o| o.span == d.span)?;
        let child = field(&parallel, "child_argument_name")?.as_str()?.value.to_string();
        Some((over, child))
    }) else {
        return;
    };
    let Some(written) = over.as_str().map(|s| s.value.to_string()).filter(|s| s.starts_with("REF:")) else { return };
    let Some(list) = types
        .iter()
        .find(|t| t.kind == TypeAtKind::Ref && over.span.start <= t.span.start && t.span.end <= over.span.end)
    else {
        return;
    };
    let Type::Object(element) = list.ty.element().non_null() else { return };
    // The element's field the argument means: its own name, else one that ends or starts
    // with it (`id` for `order_id`, `user_id` for `user`).
    let names: Vec<&str> = element.fields.keys().map(|k| &**k).collect();
    let Some(meant) = names.iter().copied().find(|n| *n == child).or_else(|| {
        let mut near =
            names.iter().copied().filter(|n| n.ends_with(&*child) || child.ends_with(n) || n.starts_with(&*child));
        near.next().filter(|_| near.next().is_none())
    }) else {
        return;
    };
    let plural = format!("{meant}s");
    let id = if step_ids.contains(&plural) { format!("{meant}_list") } else { plural };
    let step = serde_json::json!({
        "execution_id": id,
        "transform_responses": {"variables": {"xs": written},
                                "transforms": {"list": format!("map(array=xs, template=\"item.{meant}\")")}}
    });
    d.help = Some(format!(
        "the elements of `{written}` are objects; to fan out over their `{meant}`, make the list of those in a transform step, {step}, and write \"iterate_over\": \"REF:{id}.list\""
    ));
}

/// `E1303` for a plan sent as a JSON string (`{"plan": "{\"instructions\": …}"}`): the
/// text it holds, checked as JSON, says where the fix is — send the object itself, and, if
/// the text is not JSON either, where and why (Python's `True`/`None`, single quotes).
pub(super) fn plan_sent_as_a_string(d: Diagnostic, inner: &crate::tool::JsonStr) -> Diagnostic {
    let held = inner.value.trim_start();
    if !held.starts_with('{') {
        return d;
    }
    let (tree, errors) = crate::tool::json::parse(&inner.value);
    let what = "the plan was sent as a JSON string holding its text: send the object itself — `\"plan\": {\"instructions\": […]}`, not `\"plan\": \"{\\\"instructions\\\": …}\"`";
    let d = d.with_label("a string holding a plan");
    match (tree, errors.iter().find(|e| e.is_error())) {
        (Some(t), None) if t.as_object().is_some() => d.with_help(what),
        (_, Some(e)) => {
            let e = python_in_json(e.clone(), &inner.value);
            let at = inner.value[..(e.span.start as usize).min(inner.value.len())].chars().count();
            let inner_d = Diagnostic::new(e.code, inner.map_span(e.span), e.message.clone()).with_label("here");
            let fix = e.help.as_deref().map_or(String::new(), |h| format!(": {h}"));
            Diagnostic::new(d.code, d.span, d.message.clone())
                .with_label("a string holding a plan")
                .with_secondary(inner_d.span, format!("not JSON at character {at}"))
                .with_help(format!("{what}; and its text is not JSON at character {at} ({}){fix}", e.message))
        }
        _ => d.with_help(what),
    }
}

/// A JSON syntax error at a Python literal (`True`, `False`, `None`) or a JavaScript one
/// (`undefined`, `NaN`): the help names the JSON spelling.
pub(super) fn python_in_json(mut d: Diagnostic, text: &str) -> Diagnostic {
    if d.code != Code::JsonSyntax {
        return d;
    }
    let rest = text.get(d.span.start as usize..).unwrap_or_default();
    let word: String = rest.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    let json = match word.as_str() {
        "True" => "true",
        "False" => "false",
        "None" | "undefined" | "NaN" | "Infinity" => "null",
        _ => return d,
    };
    let lang = if matches!(word.as_str(), "True" | "False" | "None") { "Python" } else { "JavaScript" };
    d.help = Some(format!("`{word}` is {lang}: JSON writes `{json}` — replace `{word}` with `{json}`"));
    d
}

pub(super) fn article(kind: &str) -> String {
    match kind {
        "object" => "an object".into(),
        "null" => "null".into(),
        k => format!("a {k}"),
    }
}

/// `E1302` when the JSON nests deeper than `max` (brackets outside strings), before the
/// parser (which recurses) sees it.
pub(super) fn too_deep(text: &str, max: usize) -> Option<Diagnostic> {
    let at = crate::tool::json::nesting_past(text, max)?;
    Some(
        Diagnostic::new(Code::PlanTooDeep, Span::new(at, at + 1), format!("the plan nests deeper than {max} levels"))
            .with_label(format!("level {}", max + 1))
            .with_help("a plan's values are shallow: pass deep data as an argument of the run instead"),
    )
}

/// The text of a plan given as a JSON value: pretty JSON when that stays within `max_bytes`,
/// else the compact JSON — never a pretty text past the limit: pretty-printing a deeply
/// nested value multiplies its size (2 spaces a level on every line), so a few MiB sent
/// would become a GiB before the size check refused it. A compact text over the limit is
/// refused by its size (`E1301`) as sent.
pub fn plan_text(plan: &serde_json::Value, max_bytes: usize) -> String {
    /// A writer that fails once it holds more than `max` bytes.
    struct Bounded {
        buf: Vec<u8>,
        max: usize,
    }
    impl std::io::Write for Bounded {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.buf.len() + b.len() > self.max {
                return Err(std::io::Error::other("over the limit"));
            }
            self.buf.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut pretty = Bounded { buf: Vec::new(), max: max_bytes };
    if serde_json::to_writer_pretty(&mut pretty, plan).is_ok() {
        if let Ok(text) = String::from_utf8(pretty.buf) {
            return text;
        }
    }
    serde_json::to_string(plan).unwrap_or_default()
}

/// The execution ids of each level.
pub(super) fn levels(plan: &crate::analysis::Plan) -> Vec<Vec<String>> {
    plan.levels.iter().map(|l| l.iter().map(|id| plan.steps[id.0].execution_id.to_string()).collect()).collect()
}

/// The type of the plan's result: its mapped responses, or every step's result by id.
pub(super) fn result_type(checked: &CheckedTool) -> Option<Type> {
    let plan = checked.plan.as_ref()?;
    let ty = match &plan.response_map {
        Some(map) => {
            let declared: HashMap<&str, Type> = plan
                .tool
                .responses
                .iter()
                .filter_map(|p| Some((p.name.node.as_str(), Type::from_type_name(&p.type_or_any().to_string())?)))
                .filter(|(_, t)| *t != Type::Any)
                .collect();
            Type::object(
                map.iter().map(|(name, r)| {
                    let ty = declared.get(&**name).cloned().or_else(|| {
                        checked
                            .types
                            .iter()
                            .find(|t| t.kind == TypeAtKind::Ref && t.span == r.span)
                            .map(|t| t.ty.clone())
                    });
                    (name.clone(), ty.unwrap_or(Type::Any))
                }),
                false,
            )
        }
        None => Type::object(plan.steps.iter().map(|s| (s.execution_id.clone(), s.result_type.clone())), false),
    };
    Some(ty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_is_counted_outside_strings() {
        assert!(too_deep(r#"{"a": "[[[[[[[[[["}"#, 3).is_none());
        assert!(too_deep(r#"{"a": [[[1]]]}"#, 3).is_some());
        assert!(too_deep(r#"{"a": "\"[[[["}"#, 2).is_none());
    }

    /// The plan of hostile round 10c: one transform step with `x0 = 1, y0 = 2,
    /// x_k = {a: x_{k-1}, b: y_{k-1}}, y_k = {a: y_{k-1}, b: x_{k-1}}` and a result that
    /// joins `x_n` and `y_n`.
    pub(crate) fn type_bomb(n: usize, result: &str) -> String {
        let mut transforms = serde_json::Map::new();
        transforms.insert("x0".into(), "1".into());
        transforms.insert("y0".into(), "2".into());
        for k in 1..=n {
            transforms.insert(format!("x{k}"), format!("{{a: x{}, b: y{}}}", k - 1, k - 1).into());
            transforms.insert(format!("y{k}"), format!("{{a: y{}, b: x{}}}", k - 1, k - 1).into());
        }
        transforms.insert("r".into(), result.replace('N', &n.to_string()).into());
        serde_json::json!({
            "instructions": [{"execution_id": "s", "transform_responses": {"variables": {}, "transforms": transforms}}],
            "response_reference_map": {"r": "REF:s.r"}
        })
        .to_string()
    }

    /// Its check takes work linear in `n` (it took 2^n steps: 16 s at n = 28).
    #[test]
    fn a_plan_joining_types_that_share_their_parts_checks_in_linear_work() {
        let root = tempfile::tempdir().expect("tempdir");
        let desk = PlanDesk::for_root(root.path(), &["/tools/*.tool"]).expect("the root");
        for result in ["[xN, yN]", "if(true, xN, yN)", "default(xN, yN)", "length([xN, yN]) + length([yN, xN])"] {
            let mut took = Vec::new();
            for n in [40, 60] {
                let before = crate::types::TYPE_STEPS.with(|s| s.get());
                let check = desk.check(&type_bomb(n, result));
                assert!(check.ok(), "{result}: {}", check.render());
                took.push(crate::types::TYPE_STEPS.with(|s| s.get()) - before);
            }
            // 20 levels more: at most a step per new node and pair, not 2^20 times more.
            assert!(took[1] <= took[0] + 40 * 20 && took[1] < 100_000, "{result}: {took:?} steps");
        }
    }

    /// The same plan saved as a skill is a `.tool` file that every server start checks
    /// (hostile round 10, finding 4): as a tool, its check is linear in `n` too.
    #[test]
    fn a_skill_joining_types_that_share_their_parts_checks_in_linear_work() {
        let mut took = Vec::new();
        for n in [40, 60] {
            let mut analyzer = crate::analysis::Analyzer::new(crate::analysis::ToolRoot::assumed("/nonexistent"));
            let before = crate::types::TYPE_STEPS.with(|s| s.get());
            let checked = analyzer.check_source("/skills/bomb.tool", &type_bomb(n, "length([xN, yN])"));
            assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
            took.push(crate::types::TYPE_STEPS.with(|s| s.get()) - before);
        }
        assert!(took[1] <= took[0] + 40 * 20 && took[1] < 100_000, "{took:?} steps");
    }

    /// A check cancelled before it starts is the error `E0407`, never a verdict: the plan
    /// here would check clean.
    #[test]
    fn a_check_cancelled_before_it_starts_is_the_interrupted_error() {
        let root = tempfile::tempdir().expect("tempdir");
        let desk = PlanDesk::for_root(root.path(), &["/tools/*.tool"]).expect("the root");
        let plan = type_bomb(2, "[xN, yN]");
        assert!(desk.check(&plan).ok());
        let cancelled = Interrupt::new();
        cancelled.cancel();
        let check = desk.check_interruptible(&plan, &cancelled);
        assert!(!check.ok(), "{}", check.render());
        let codes: Vec<&str> = check.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["E0407"]);
        assert!(check.levels.is_none() && check.result_type.is_none());
        assert!(desk.dependencies(&plan).is_some());
    }

    /// A check whose deadline has passed fails with `E1316`.
    #[test]
    fn a_check_past_its_deadline_fails_with_its_own_code() {
        let root = tempfile::tempdir().expect("tempdir");
        let desk = PlanDesk::for_root(root.path(), &["/tools/*.tool"]).expect("the root");
        let past = std::time::Instant::now();
        let check = desk.check_interruptible(&type_bomb(2, "[xN, yN]"), &Interrupt::new().with_deadline(past));
        let codes: Vec<&str> = check.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["E1316"]);
        assert!(check.diagnostics[0].message.contains("the check did not end within the plan's deadline"));
        assert!(check.diagnostics[0].help.is_some());
    }

    /// A cancel that comes while the check runs stops it at its next poll: the host's
    /// probe is asked before the start and then every `POLL_UNITS` units of work, and the
    /// check answers cancelled after the first ask that says so, having done a fraction of
    /// the work of the whole check (3,000 transforms, about 8 units each).
    #[test]
    fn a_check_cancelled_partway_stops_at_its_next_poll() {
        use crate::types::stop::{POLL_UNITS, WORKED};
        let root = tempfile::tempdir().expect("tempdir");
        let desk = PlanDesk::for_root(root.path(), &["/tools/*.tool"]).expect("the root");
        let plan = type_bomb(1_500, "length([xN, yN])");
        let before = WORKED.with(|w| w.get());
        assert!(desk.check(&plan).ok());
        let whole = WORKED.with(|w| w.get()) - before;
        let asks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let a = asks.clone();
        let interrupt = Interrupt::new().with_probe(Arc::new(move || {
            // Before the start, then once the check has done POLL_UNITS units.
            (a.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= 1).then_some(InterruptReason::Cancelled)
        }));
        let before = WORKED.with(|w| w.get());
        let check = desk.check_interruptible(&plan, &interrupt);
        let part = WORKED.with(|w| w.get()) - before;
        let codes: Vec<&str> = check.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["E0407"]);
        assert_eq!(asks.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert!(part < u64::from(POLL_UNITS) && whole > 4 * u64::from(POLL_UNITS), "{part} of {whole} units");
    }
}
