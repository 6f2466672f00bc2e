//! Skills over MCP (`tdsl serve --mcp --plans --skills DIR`, SPEC §16): the tools
//! `save_skill` and `delete_skill`, the skills served as tools at once (the server sends
//! `notifications/tools/list_changed`), listed in `tdsl://tools` and `tdsl://skills`, and
//! callable from plans by name. The store (names, atomic writes, versions, limits) is
//! [`crate::plans::skills`]; this module checks plans as `check_plan` does and keeps the set
//! of skills the server offers.
//!
//! A skill runs as a plan does (the plans side's runner: upstream `SERVER/TOOL` calls go to
//! their server), from the text it had when it was loaded: a skill replaced while another
//! client runs it finishes as it started.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::{json, Value as Json};

use super::plans::PlanServer;
use super::served::Served;
use crate::exec::{CancelToken, Observer};
use crate::export::{export_tool, Format};
use crate::plans::skills::{skill_source, SkillError, SkillStore, SkillVersion};
use crate::plans::Callable;

/// The tool that saves a plan as a skill.
pub(crate) const SAVE_SKILL: &str = "save_skill";
/// The tool that deletes a skill.
pub(crate) const DELETE_SKILL: &str = "delete_skill";
/// The skills, as JSON.
pub(crate) const SKILLS_URI: &str = "tdsl://skills";

/// One skill of the folder, as the server loaded it.
#[derive(Debug)]
pub struct Skill {
    /// Its name (the tool's).
    pub name: String,
    /// Its tool path under the root.
    pub tool_path: String,
    /// Its file's text: what a call runs.
    pub text: String,
    /// As a served tool, when it loads.
    pub served: Option<Served>,
    /// Every version saved, oldest first (the last is this one).
    pub versions: Vec<SkillVersion>,
    /// Why it is not callable: it does not load or no longer checks.
    pub error: Option<String>,
    /// Why it could not be checked (an upstream server it calls could not be listed): it
    /// stays callable, and each call checks it again first, as every plan is.
    pub unchecked: Option<String>,
}

/// What the check of a skill's file found.
enum Verdict {
    Checks,
    /// It does not check: why.
    Broken(String),
    /// It does not check while an upstream server it needs cannot be listed: why.
    Unchecked(String),
}

impl Skill {
    /// Its version now, when known.
    pub fn version(&self) -> Option<&SkillVersion> {
        self.versions.last()
    }

    fn callable(&self) -> bool {
        self.error.is_none() && self.served.is_some()
    }
}

/// The skills a server offers, shared by the plans side (which lets plans call them) and
/// [`Skills`] (which changes them).
#[derive(Debug, Default, Clone)]
pub struct SkillSet(Arc<RwLock<Vec<Arc<Skill>>>>);

impl SkillSet {
    /// Every skill, sorted by name.
    pub fn all(&self) -> Vec<Arc<Skill>> {
        self.0.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The callable skill named `name`.
    pub fn callable(&self, name: &str) -> Option<Arc<Skill>> {
        self.all().into_iter().find(|s| s.name == name && s.callable())
    }

    fn put(&self, skill: Skill) {
        let mut all = self.0.write().unwrap_or_else(PoisonError::into_inner);
        all.retain(|s| s.name != skill.name);
        all.push(Arc::new(skill));
        all.sort_by(|a, b| a.name.cmp(&b.name));
    }

    fn replace_all(&self, skills: Vec<Skill>) {
        let mut all: Vec<Arc<Skill>> = skills.into_iter().map(Arc::new).collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = all;
    }
}

/// The skills plans may call, as [`Callable`]s.
pub(super) fn callable(set: &SkillSet) -> Vec<Callable> {
    set.all()
        .iter()
        .filter(|s| s.callable())
        .map(|s| Callable { name: s.name.clone(), tool_path: Some(s.tool_path.clone()) })
        .collect()
}

/// The skills' part of `tdsl://tools`: each callable one as a served tool, each broken one
/// with its error.
pub(super) fn listing(set: &SkillSet) -> String {
    let all = set.all();
    if all.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Skills (plans saved with `save_skill`; call them by name)\n\n");
    for s in &all {
        match (&s.served, &s.error) {
            (Some(served), None) => {
                out.push_str(&super::plans::served_line(served));
                if let Some(why) = &s.unchecked {
                    out.push_str(&format!("  (not checked now, checked when called: {why})\n"));
                }
            }
            (_, error) => out.push_str(&format!(
                "- `{}`: not callable: {}\n",
                s.name,
                error.as_deref().unwrap_or("it does not load")
            )),
        }
    }
    out
}

/// `tdsl://skills`: every skill with its description, arguments, responses, version and
/// time, and the error of one that is not callable.
pub(super) fn resource(set: &SkillSet) -> String {
    let skills: Vec<Json> = set
        .all()
        .iter()
        .map(|s| {
            let def = s.served.as_ref().map(|x| &x.def);
            let params = |ps: Option<&Vec<crate::tool::Param>>| -> Json {
                ps.map_or(Json::Array(Vec::new()), |ps| {
                    ps.iter()
                        .map(|p| json!({"name": p.name.node, "type": p.type_or_any().to_string(), "required": p.is_required()}))
                        .collect()
                })
            };
            let mut out = json!({
                "name": s.name,
                "description": def.and_then(|d| d.description.as_ref()).map(|d| d.node.clone()),
                "arguments": params(def.map(|d| &d.arguments)),
                "responses": params(def.map(|d| &d.responses)),
                "version": s.version().map(|v| v.version),
                "saved_at": s.version().map(|v| v.saved_at.clone()),
                "versions": s.versions.iter().map(|v| json!({"version": v.version, "saved_at": v.saved_at})).collect::<Vec<_>>(),
                "tool_path": s.tool_path,
                "callable": s.callable(),
            });
            if let Some(e) = &s.error {
                out["error"] = json!(e);
            }
            if let Some(why) = &s.unchecked {
                out["unchecked"] = json!(why);
            }
            out
        })
        .collect();
    serde_json::to_string_pretty(&json!({"skills": skills})).unwrap_or_default()
}

/// The entry of `tdsl://skills` in `resources/list`.
pub(super) fn resource_entry() -> Json {
    json!({"uri": SKILLS_URI, "name": "skills", "title": "Saved skills",
           "description": "Every skill (a plan saved with save_skill): description, arguments, responses, version, saved at, and the error of one that no longer checks.",
           "mimeType": "application/json"})
}

/// A save or delete, as the history records it.
#[derive(Debug, Clone)]
pub struct SkillChange {
    /// `save` or `delete`.
    pub action: &'static str,
    /// The skill.
    pub name: String,
    /// The version saved, or deleted.
    pub version: Option<u64>,
    /// When (RFC 3339).
    pub at: String,
    /// The MCP client's name (`initialize`'s `clientInfo`), when it gave one.
    pub client: Option<String>,
    /// The session (HTTP), when there is one.
    pub session: Option<String>,
}

/// Records saves and deletes (`serve --history`).
pub trait SkillLog: Send + Sync + std::fmt::Debug {
    /// Records one change.
    fn record(&self, change: &SkillChange);
}

/// The skills side of a server: the store and the set it serves.
#[derive(Debug)]
pub struct Skills {
    store: SkillStore,
    set: SkillSet,
    plans: Arc<PlanServer>,
    /// The names of the other tools the server offers: a skill may not take one.
    taken: Vec<String>,
    log: Option<Arc<dyn SkillLog>>,
    /// Of the last [`Skills::refresh`]: the skills checked, and those left unchecked because
    /// their record says they checked as they are.
    counts: std::sync::Mutex<(usize, usize)>,
    /// Held by the `save_skill` or `delete_skill` being carried out, all sessions together:
    /// each loads and checks every skill again ([`Skills::refresh`]), so that two at once
    /// cost twice the memory of the whole set (docs/security.md, "Hostile round 16").
    changing: tokio::sync::Mutex<()>,
}

impl Skills {
    /// The skills of `store`, served with `plans` (whose set they fill), each loaded and
    /// checked now: one that does not load or check is kept with its error, not callable.
    /// `taken` are the other tools' names.
    pub fn load(store: SkillStore, plans: Arc<PlanServer>, taken: Vec<String>) -> (Skills, Vec<String>) {
        let set = plans.skill_set().clone();
        let skills = Skills {
            store,
            set,
            plans,
            taken,
            log: None,
            counts: std::sync::Mutex::default(),
            changing: tokio::sync::Mutex::new(()),
        };
        let problems = skills.refresh();
        (skills, problems)
    }

    /// Loads every skill of the folder again and checks each, until nothing changes (a
    /// skill that calls a broken or deleted one is broken too): at start, and after each save
    /// or delete, so that the skills calling a changed one are judged again. What is not
    /// callable, and why.
    fn refresh(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let names = match self.store.names() {
            Ok(n) => n,
            Err(e) => {
                problems.push(format!("{}: {e}", self.store.dir().display()));
                Vec::new()
            }
        };
        self.set.replace_all(names.iter().map(|n| self.read(n)).collect());
        let (mut checked, mut kept) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
        for _ in 0..=names.len() {
            let mut changed = false;
            for s in self.set.all().iter().filter(|s| s.callable() && s.unchecked.is_none()) {
                // Unchanged since a check that passed (its file, and what its check reads):
                // not checked again (a skill whose check is slow does not hold every start).
                let print = self.fingerprint(s);
                if print.is_some() && print == self.store.checked_record(&s.name) {
                    kept.insert(s.name.clone());
                    continue;
                }
                checked.insert(s.name.clone());
                let judged = match self.check_error(&s.text) {
                    Verdict::Checks => {
                        if let Some(print) = &print {
                            self.store.record_checked(&s.name, print);
                        }
                        continue;
                    }
                    Verdict::Broken(error) => {
                        self.store.forget_checked(&s.name);
                        Skill { error: Some(error), ..self.read(&s.name) }
                    }
                    // An upstream server that is down at start does not break its skills for
                    // good: they stay callable, and a call checks them again.
                    Verdict::Unchecked(why) => {
                        self.store.forget_checked(&s.name);
                        Skill { unchecked: Some(why), ..self.read(&s.name) }
                    }
                };
                self.set.put(judged);
                changed = true;
            }
            if !changed {
                break;
            }
        }
        let kept = kept.difference(&checked).count();
        *self.counts.lock().unwrap_or_else(PoisonError::into_inner) = (checked.len(), kept);
        for s in self.set.all() {
            if let Some(e) = &s.error {
                problems.push(format!("skill `{}` is not callable: {e}", s.name));
            } else if let Some(why) = &s.unchecked {
                problems.push(format!(
                    "skill `{}` is not checked: {why}; it stays callable, and each call checks it first",
                    s.name
                ));
            }
        }
        problems
    }

    /// What the last loading of the skills (at start, or after a save or delete) checked:
    /// `skills: N checked, M unchanged since their last check`, or `None` without skills.
    pub fn checked_note(&self) -> Option<String> {
        let (checked, kept) = *self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        (checked + kept > 0).then(|| format!("skills: {checked} checked, {kept} unchanged since their last check"))
    }

    /// The fingerprint of what `skill`'s check reads: tdsl's version and build, the plan limits, its
    /// file, and the file of each served tool and skill it calls. `None` when its check
    /// reads what a record cannot cover — an upstream server's tools (listed only when the
    /// server runs), a callee that is missing or not callable — so it is checked.
    fn fingerprint(&self, skill: &Skill) -> Option<String> {
        use std::hash::{Hash, Hasher};
        let mut parts: Vec<String> =
            vec![env!("CARGO_PKG_VERSION").to_string(), build_identity()?, self.plans.options_key()];
        parts.push(skill.text.clone());
        // Callees that cannot be read: unknown, so the record could not cover them.
        let mut paths = callees(&skill.text)?;
        paths.sort();
        paths.dedup();
        let all = self.set.all();
        for path in paths {
            let text = match self.plans.served_text(&path) {
                Some(text) => text,
                None => {
                    let other = all.iter().find(|s| s.name == path || s.tool_path == path)?;
                    if !other.callable() || other.unchecked.is_some() {
                        return None;
                    }
                    other.text.clone()
                }
            };
            parts.push(path);
            parts.push(text);
        }
        // Two 64-bit hashes of the parts (lengths included): a record is only ever compared
        // with a fingerprint made the same way, by the same build.
        let hash = |seed: u8| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            seed.hash(&mut h);
            parts.hash(&mut h);
            h.finish()
        };
        Some(format!("v1 {:016x}{:016x}", hash(0), hash(1)))
    }

    /// The same skills recording every save and delete in `log`.
    pub fn with_log(mut self, log: Arc<dyn SkillLog>) -> Skills {
        self.log = Some(log);
        self
    }

    /// Waits for the change being carried out, if any: the guard is the turn of the caller
    /// (one `save_skill` or `delete_skill` at a time).
    pub(crate) async fn turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.changing.lock().await
    }

    /// The set served.
    pub fn set(&self) -> &SkillSet {
        &self.set
    }

    /// A skill as its file is now, not yet checked against the others.
    fn read(&self, name: &str) -> Skill {
        let file: PathBuf = self.store.file(name);
        let tool_path = self.store.tool_path(name);
        let versions = self.store.versions(name);
        let mut skill = Skill {
            name: name.to_string(),
            tool_path: tool_path.clone(),
            text: String::new(),
            served: None,
            versions,
            error: None,
            unchecked: None,
        };
        let text = match crate::input::read_text(&file) {
            Ok(t) => t,
            Err(e) => {
                skill.error = Some(format!("cannot read {}: {e}", file.display()));
                return skill;
            }
        };
        let (def, diags) = crate::tool::load(&text);
        skill.text = text;
        match def.filter(|_| !diags.iter().any(crate::diagnostic::Diagnostic::is_error)) {
            Some(def) => {
                let tool = export_tool(Format::Mcp, name, &def);
                skill.served = Some(Served { name: name.to_string(), tool_path, file, def, tool });
            }
            None => skill.error = Some("it does not load as a .tool file (run `tdsl check` on it)".to_string()),
        }
        skill
    }

    /// Whether `text` (a skill file) checks as a plan, and why not.
    fn check_error(&self, text: &str) -> Verdict {
        let (check, problems) = self.plans.check_only(&Json::String(text.to_string()));
        if check.ok() {
            return Verdict::Checks;
        }
        let first: Vec<String> = check
            .diagnostics
            .iter()
            .filter(|d| d.severity == crate::diagnostic::Severity::Error)
            .take(3)
            .map(|d| format!("{} {}", d.code, d.message))
            .collect();
        let mut why = first.join("; ");
        for p in &problems {
            why.push_str(&format!("; {p}"));
        }
        if problems.is_empty() {
            Verdict::Broken(why)
        } else {
            Verdict::Unchecked(why)
        }
    }

    /// `save_skill {name, description, plan, replace?}`: the tool result, and whether the
    /// tools changed.
    ///
    /// `cancel` (the server shutting down) stops it before its write: it answers that the
    /// skill was not saved (`E0813`), and nothing is written. Once its write began, it
    /// finishes, is recorded and answers as usual; the skills are then not loaded and
    /// checked again when `cancel` is cancelled (the server stops: its next start does it).
    pub fn save(
        &self,
        arguments: &Json,
        client: Option<String>,
        session: Option<String>,
        cancel: &CancelToken,
    ) -> (Json, bool) {
        if cancel.is_cancelled() {
            return (not_saved(), false);
        }
        let name = match arguments.get("name") {
            Some(Json::String(n)) => n.clone(),
            _ => {
                return (
                    super::served::tool_error(
                        "the argument `name` is missing: a skill name such as `weekly_report`".into(),
                    ),
                    false,
                )
            }
        };
        let description = match arguments.get("description") {
            Some(Json::String(d)) if !d.trim().is_empty() => d.trim().to_string(),
            _ => {
                return (
                    super::served::tool_error(
                        "the argument `description` is missing: say what the skill does and when to call it".into(),
                    ),
                    false,
                )
            }
        };
        let replace = match arguments.get("replace") {
            None | Some(Json::Null) => false,
            Some(Json::Bool(b)) => *b,
            Some(_) => return (super::served::tool_error("`replace` must be true or false".into()), false),
        };
        let Some(plan) = arguments.get("plan") else {
            return (super::served::tool_error("the argument `plan` is missing: the plan that worked".into()), false);
        };
        let mut taken = self.taken.clone();
        taken.extend(super::plans::PlanServer::tools().iter().filter_map(|t| t["name"].as_str().map(str::to_string)));
        if let Err(e) = self.store.check_name(&name, &taken) {
            return (refusal(&e), false);
        }
        if let Some(upstream) = self.upstream_named(&name) {
            let e = SkillError {
                code: crate::diagnostic::Code::SkillNameTaken,
                message: format!(
                    "`{name}` is the name of the upstream tool `{upstream}`: a plan that names that tool without its \
                     server would call the skill instead; choose another name"
                ),
            };
            return (refusal(&e), false);
        }
        // Checked as `check_plan` checks it: with an error nothing is written.
        let (check, problems) = self.plans.check_only_cancellable(plan, cancel);
        if cancel.is_cancelled() {
            return (not_saved(), false);
        }
        if !check.ok() {
            let mut out = check.to_json();
            super::plans::add_problems(&mut out, &problems);
            out["saved"] = json!(false);
            let text = format!("the skill was not saved: {}", super::plans::summary_text(&check, &problems));
            return (super::plans::structured(out, text, true), false);
        }
        let parsed;
        let plan = match plan {
            Json::String(t) => {
                parsed = serde_json::from_str::<Json>(t).unwrap_or(Json::Null);
                &parsed
            }
            other => other,
        };
        let served = self.plans.served().to_vec();
        let skills = callable(&self.set);
        let resolve = |written: &str| -> Option<String> {
            served.iter().chain(skills.iter()).find(|c| c.name == written).and_then(|c| c.tool_path.clone())
        };
        let source = match skill_source(plan, &description, check.result(), resolve) {
            Ok(s) => s,
            Err(e) => return (super::served::tool_error(e), false),
        };
        if source.len() > self.plans.max_plan_bytes() {
            return (
                super::served::tool_error(format!(
                    "the skill's file would be {} bytes, more than the plan size limit ({}) [{}]",
                    source.len(),
                    self.plans.max_plan_bytes(),
                    crate::diagnostic::Code::PlanTooLarge.as_str()
                )),
                false,
            );
        }
        let Some(cycle) = self.cycle(&name, &source) else {
            return (
                super::served::tool_error(format!(
                    "the skill's plan cannot be read back to find the skills it calls [{}]",
                    crate::diagnostic::Code::PlanTooDeep.as_str()
                )),
                false,
            );
        };
        if let Some(cycle) = cycle {
            return (
                super::served::tool_error(format!(
                    "the skill `{name}` would call itself: {} [{}]",
                    cycle.join(" → "),
                    crate::diagnostic::Code::ToolRecursion.as_str()
                )),
                false,
            );
        }
        // The last point where a shutdown stops it: past it, the save is carried out.
        if cancel.is_cancelled() {
            return (not_saved(), false);
        }
        let version = match self.store.save(&name, &source, replace, &taken) {
            Ok(v) => v,
            Err(e) => return (refusal(&e), false),
        };
        let tool_path = self.store.tool_path(&name);
        if !cancel.is_cancelled() {
            self.refresh();
        }
        self.log(SkillChange {
            action: "save",
            name: name.clone(),
            version: Some(version.version),
            at: version.saved_at.clone(),
            client,
            session,
        });
        let out = json!({"saved": true, "name": name, "version": version.version, "saved_at": version.saved_at,
                         "tool_path": tool_path, "versions": self.store.versions(&name).len()});
        let text = format!(
            "saved the skill `{name}` (version {}): call it as the tool `{name}`, or from a plan as \"tool_definition_path\": \"{name}\"",
            version.version
        );
        (super::plans::structured(out, text, false), true)
    }

    /// `delete_skill {name}`: the tool result, and whether the tools changed. When `cancel`
    /// is cancelled (the server shutting down) the skills are not loaded and checked again
    /// after the delete.
    pub fn delete(
        &self,
        arguments: &Json,
        client: Option<String>,
        session: Option<String>,
        cancel: &CancelToken,
    ) -> (Json, bool) {
        let Some(name) = arguments.get("name").and_then(Json::as_str) else {
            return (super::served::tool_error("the argument `name` is missing: the skill to delete".into()), false);
        };
        match self.store.delete(name) {
            Ok(version) => {
                if !cancel.is_cancelled() {
                    self.refresh();
                }
                self.log(SkillChange {
                    action: "delete",
                    name: name.to_string(),
                    version: version.as_ref().map(|v| v.version),
                    at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                    client,
                    session,
                });
                let out = json!({"deleted": true, "name": name, "version": version.map(|v| v.version)});
                (
                    super::plans::structured(out, format!("deleted the skill `{name}` (its versions are kept)"), false),
                    true,
                )
            }
            Err(e) => (refusal(&e), false),
        }
    }

    /// The upstream tool (`SERVER/TOOL`) whose `TOOL` is `name`, case aside, if any: every
    /// upstream server is listed (started), as a plan's check would.
    fn upstream_named(&self, name: &str) -> Option<String> {
        self.plans.upstreams().all_tools().into_iter().find_map(|(server, listed)| {
            let tools = listed.ok()?;
            let tool = tools.iter().filter_map(|t| t["name"].as_str()).find(|t| t.eq_ignore_ascii_case(name))?;
            Some(format!("{server}/{tool}"))
        })
    }

    fn log(&self, change: SkillChange) {
        if let Some(log) = &self.log {
            log.record(&change);
        }
    }

    /// The walk of skill calls from `source` (to be saved as `name`) back to `name`, when
    /// there is one; `None` when `source` cannot be read (a skill's file it reaches that
    /// cannot be read is not callable: its check failed).
    fn cycle(&self, name: &str, source: &str) -> Option<Option<Vec<String>>> {
        let own = self.store.tool_path(name);
        let all = self.set.all();
        let mut stack: Vec<(String, Vec<String>)> =
            callees(source)?.into_iter().map(|c| (c.clone(), vec![name.to_string()])).collect();
        let mut seen = std::collections::HashSet::new();
        while let Some((path, walk)) = stack.pop() {
            let Some(skill) = all.iter().find(|s| s.tool_path == path || s.name == path) else {
                if path == own {
                    return Some(Some([walk, vec![name.to_string()]].concat()));
                }
                continue;
            };
            let walk = [walk, vec![skill.name.clone()]].concat();
            if skill.name == name || path == own {
                return Some(Some(walk));
            }
            if seen.insert(skill.name.clone()) {
                stack.extend(callees(&skill.text).unwrap_or_default().into_iter().map(|c| (c, walk.clone())));
            }
        }
        Some(None)
    }

    /// Runs the skill `name` with `arguments`: its result as a served composite's, or a tool
    /// error. `None` when there is no callable skill of that name.
    pub fn call(
        &self,
        name: &str,
        arguments: Json,
        cancel: &CancelToken,
        observer: Option<Arc<dyn Observer>>,
    ) -> Option<Json> {
        self.call_marked(name, arguments, cancel, observer).map(super::spliced::expand)
    }

    /// [`Skills::call`], a large answer's text marked, to be spliced in as it goes out.
    pub(super) fn call_marked(
        &self,
        name: &str,
        arguments: Json,
        cancel: &CancelToken,
        observer: Option<Arc<dyn Observer>>,
    ) -> Option<Json> {
        let skill = self.set.callable(name)?;
        Some(run_skill(&self.plans, &skill, arguments, cancel, observer))
    }
}

/// Runs a skill as a plan, its result answered as a served composite's.
fn run_skill(
    plans: &PlanServer,
    skill: &Skill,
    arguments: Json,
    cancel: &CancelToken,
    observer: Option<Arc<dyn Observer>>,
) -> Json {
    let arguments = match &skill.served {
        Some(served) => super::served::with_defaults(&served.def, arguments),
        None => arguments,
    };
    if let Some(served) = &skill.served {
        if let Err(why) = crate::export::validate_arguments(&served.def, &arguments) {
            return super::served::tool_error(format!("invalid arguments for `{}`: {why}", skill.name));
        }
    }
    let version = skill.version().map(|v| v.version);
    let recorded = json!({"name": skill.name, "version": version});
    let tool = match version {
        Some(v) => format!("{} (skill v{v})", skill.name),
        None => format!("{} (skill)", skill.name),
    };
    let call = json!({"plan": skill.text, "arguments": arguments});
    match plans.run_as(&call, cancel, observer, tool, recorded) {
        Ok(run) => match (run.succeeded(), run.result) {
            (true, Some(result)) => super::served::success(&result, plans.max_result_bytes()),
            _ => {
                let why = run.failure_summary.unwrap_or_else(|| "no reason recorded".to_string());
                super::served::tool_error(format!("{}: {why}", run.status.as_str()))
            }
        },
        Err(answer) => answer,
    }
}

/// Adds to `needed` the upstream servers (of `names`) that the skills `plan` calls reach,
/// through the skills they call too: checking or running a plan that calls a skill needs the
/// tools of the servers the skill's steps name (`SERVER/TOOL`).
pub(super) fn add_upstreams<'a>(set: &SkillSet, plan: &Json, names: &[&'a str], needed: &mut Vec<&'a str>) {
    if names.is_empty() {
        return;
    }
    let all = set.all();
    let find = |path: &str| all.iter().find(|s| s.name == path || s.tool_path == path).cloned();
    let mut todo: Vec<Arc<Skill>> = step_paths(plan).iter().filter_map(|p| find(p)).collect();
    let mut seen = std::collections::HashSet::new();
    while let Some(skill) = todo.pop() {
        if !seen.insert(skill.name.clone()) {
            continue;
        }
        for path in callees(&skill.text).unwrap_or_default() {
            if let Some(other) = find(&path) {
                todo.push(other);
            } else if let Some(name) = path.split_once('/').and_then(|(n, _)| names.iter().find(|m| **m == n)) {
                if !needed.contains(name) {
                    needed.push(name);
                }
            }
        }
    }
}

/// The `tool_definition_path`s of a skill file's or plan's steps, read as the plan's check
/// reads it ([`crate::tool::json::parse`], as deep as a plan may nest): `None` when the
/// text cannot be read (its callees are unknown, so no record covers it).
fn callees(text: &str) -> Option<Vec<String>> {
    if crate::tool::json::nesting_past(text, crate::ranges::PLAN_NESTING.max as usize).is_some() {
        return None;
    }
    let (tree, diags) = crate::tool::json::parse(text);
    let tree = tree.filter(|_| !diags.iter().any(crate::diagnostic::Diagnostic::is_error))?;
    fn member<'a>(node: &'a crate::tool::json::JsonNode, key: &str) -> Option<&'a crate::tool::json::JsonNode> {
        node.as_object()?.iter().find(|(k, _)| k.node == key).map(|(_, v)| v)
    }
    let steps = member(&tree, "instructions").and_then(|s| s.as_list()).unwrap_or_default();
    Some(
        steps
            .iter()
            .filter_map(|s| member(s, "tool_definition_path"))
            .filter_map(|p| p.as_str().map(|p| p.value.to_string()))
            .collect(),
    )
}

/// The answer of a save stopped by the server's shutdown before its write.
fn not_saved() -> Json {
    let code = crate::diagnostic::Code::RunCancelled;
    let e = SkillError {
        code,
        message: "the skill was not saved: the server is shutting down (nothing was written)".to_string(),
    };
    refusal(&e)
}

/// The `tool_definition_path`s of a plan's steps.
fn step_paths(v: &Json) -> Vec<String> {
    v.get("instructions")
        .and_then(Json::as_array)
        .map(|steps| {
            steps
                .iter()
                .filter_map(|s| s.get("tool_definition_path").and_then(Json::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn refusal(e: &SkillError) -> Json {
    let out = json!({"saved": false, "code": e.code.as_str(), "message": e.message});
    super::plans::structured(out, e.to_string(), true)
}

/// The `save_skill` and `delete_skill` tools, as MCP `Tool` objects.
pub(crate) fn tools() -> Vec<Json> {
    vec![
        json!({
            "name": SAVE_SKILL,
            "description": "Save a tdsl plan that worked as a skill: a tool of its own, listed at once, that you (or a later \
                plan, as \"tool_definition_path\": NAME) call with the plan's arguments. Save a plan that succeeded and will be \
                asked for again. The plan is checked as check_plan checks it; with an error nothing is saved. `name`: \
                [a-z][a-z0-9_]{0,63}, not another tool's name; `replace: true` saves a new version of an existing skill.",
            "inputSchema": {"type": "object", "properties": {
                "name": {"type": "string", "description": "The skill's tool name: [a-z][a-z0-9_]{0,63}."},
                "description": {"type": "string", "description": "What it does and when to call it (the tool's description)."},
                "plan": {"type": "object", "description": "The plan (a tdsl composite tool object, with its `arguments`)."},
                "replace": {"type": "boolean", "description": "Save a new version of an existing skill."}},
                "required": ["name", "description", "plan"]},
        }),
        json!({
            "name": DELETE_SKILL,
            "description": "Delete a skill saved with save_skill (its versions are kept in the skills folder).",
            "inputSchema": {"type": "object", "properties": {
                "name": {"type": "string", "description": "The skill's name."}}, "required": ["name"]},
        }),
    ]
}

/// The build that checks: the running program's size and time of change. The version alone
/// would keep a record across two builds of one version whose checks differ (a development
/// build that learned a new error), so a skill checked by another build is checked again;
/// `None` (every skill checked) when the program cannot be read.
fn build_identity() -> Option<String> {
    let m = std::env::current_exe().and_then(std::fs::metadata).ok()?;
    let changed = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(format!("{} {}.{:09}", m.len(), changed.as_secs(), changed.subsec_nanos()))
}

#[cfg(test)]
mod build_tests {
    /// The build is read from the running program, the same on every call.
    #[test]
    fn the_build_is_named_by_the_program() {
        let first = super::build_identity();
        assert!(first.as_deref().is_some_and(|b| b.split(' ').count() == 2), "{first:?}");
        assert_eq!(first, super::build_identity());
    }
}
