//! What names and REF contexts an expression may use, and their types.

use std::sync::Arc;

use indexmap::IndexMap;

use super::{type_of, Type};
use crate::value::Value;

/// The environment an expression is checked in.
///
/// A *closed* scope lists every name; any other name is an error with a suggestion. An
/// *open* scope accepts any name as `any` (for embedding, where the context is not known
/// until run time). REF contexts are either looked up among the names (as `tdsl eval`
/// does), listed separately (as a composite's steps are), or open.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// The names, in the order they were added (`None`: none, so that an empty scope
    /// allocates nothing); shared, so that a scope built from a table someone keeps (a
    /// transform block's names, one scope per expression) costs nothing per name
    /// ([`Scope::with_names`]).
    names: Option<Arc<NameTable>>,
    pub(crate) open_names: bool,
    pub(crate) refs: RefScope,
    pub(crate) response: Option<Type>,
}

/// A scope's names and their types, in the order they were added (a name added again keeps
/// its place and takes the later type).
pub(crate) type NameTable = IndexMap<Arc<str>, Type>;

#[cfg(test)]
thread_local! {
    /// Names entered into scopes one by one on this thread ([`Scope::with_name`],
    /// [`Scope::from_vars`]), for the tests: a scope given a shared table
    /// ([`Scope::with_names`]) enters none.
    pub(crate) static ENTERED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts a name entered into a scope (tests only).
#[inline]
fn entered() {
    #[cfg(test)]
    ENTERED.with(|e| e.set(e.get() + 1));
}

/// Where REF contexts come from.
#[derive(Clone, Debug, Default)]
pub(crate) enum RefScope {
    /// REF contexts are names of the scope (`REF:x.y` reads variable `x`).
    #[default]
    Names,
    /// Any context, typed `any`.
    Open,
    /// Exactly these contexts (shared: a program compiled in one pass keeps its scope, and
    /// a scope of many steps' contexts is then one count, not a copy per program).
    Closed(Arc<IndexMap<Arc<str>, Type>>),
}

/// What a name is bound to in a scope ([`Scope::binding`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Binding {
    /// A variable (a context name).
    Variable,
    /// A REF context (`REF:name`).
    RefContext,
}

impl Scope {
    /// A scope that accepts any name and any REF context as `any`.
    pub fn open() -> Scope {
        Scope { open_names: true, refs: RefScope::Open, ..Scope::default() }
    }

    /// A closed scope with no names yet; REF contexts are its names.
    pub fn closed() -> Scope {
        Scope::default()
    }

    /// A closed scope with one name per key of `vars` (an object), typed from the values.
    pub fn from_vars(vars: &Value) -> Scope {
        let mut s = Scope::closed();
        if let Some(map) = vars.as_object() {
            let names = s.table_mut();
            for (k, v) in map.iter() {
                entered();
                names.insert(Arc::from(k.as_str()), type_of(v));
            }
        }
        s
    }

    /// Adds (or retypes) a name.
    pub fn with_name(mut self, name: &str, ty: Type) -> Scope {
        entered();
        self.table_mut().insert(Arc::from(name), ty);
        self
    }

    /// The names, to add to (copied first if shared).
    fn table_mut(&mut self) -> &mut NameTable {
        Arc::make_mut(self.names.get_or_insert_with(Arc::default))
    }

    /// Takes `names` as its names, in their order, shared and not copied: the same scope as
    /// adding each with [`Scope::with_name`], in constant work. A later [`Scope::with_name`]
    /// copies the table first if it is still shared.
    pub(crate) fn with_names(mut self, names: Arc<NameTable>) -> Scope {
        self.names = Some(names);
        self
    }

    /// Makes REF contexts a closed list of their own, starting empty.
    pub fn with_ref_contexts(mut self) -> Scope {
        self.refs = RefScope::Closed(Arc::default());
        self
    }

    /// Adds a REF context (switching to a closed list of contexts if needed).
    pub fn with_ref(mut self, context: &str, ty: Type) -> Scope {
        if !matches!(self.refs, RefScope::Closed(_)) {
            self.refs = RefScope::Closed(Arc::default());
        }
        if let RefScope::Closed(m) = &mut self.refs {
            Arc::make_mut(m).insert(Arc::from(context), ty);
        }
        self
    }

    /// Allows `REF:response` (inside `transform_responses`), with the response's type.
    pub fn with_response(mut self, ty: Type) -> Scope {
        self.response = Some(ty);
        self
    }

    /// Whether REF contexts resolve against the names (one variables object serves both).
    pub fn refs_are_names(&self) -> bool {
        matches!(self.refs, RefScope::Names)
    }

    /// The type of a name: `Some(any)` for any name in an open scope, `None` if unknown.
    pub fn name(&self, name: &str) -> Option<Type> {
        match self.names.as_deref().and_then(|m| m.get(name)) {
            Some(t) => Some(t.clone()),
            None if self.open_names => Some(Type::Any),
            None => None,
        }
    }

    /// The names in scope, for suggestions.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().flat_map(|m| m.keys()).map(|k| &**k)
    }

    /// The type of a REF context, `None` if unknown.
    pub(crate) fn ref_context(&self, context: &str) -> Option<Type> {
        if context == "response" {
            return self.response.clone();
        }
        match &self.refs {
            RefScope::Names => self.name(context),
            RefScope::Open => Some(Type::Any),
            RefScope::Closed(m) => m.get(context).cloned(),
        }
    }

    /// What `name` already is here, for a template's `as` (SPEC §4.4): a name the scope
    /// lists, or a REF context it lists. An open scope's "any name" binds nothing.
    pub(crate) fn binding(&self, name: &str) -> Option<Binding> {
        if self.names.as_deref().is_some_and(|m| m.contains_key(name)) {
            return Some(Binding::Variable);
        }
        let is_ref = match &self.refs {
            RefScope::Closed(m) => m.contains_key(name),
            RefScope::Names | RefScope::Open => false,
        };
        (is_ref || (name == "response" && self.response.is_some())).then_some(Binding::RefContext)
    }

    /// The REF contexts, for suggestions.
    pub(crate) fn ref_contexts(&self) -> Vec<&str> {
        match &self.refs {
            RefScope::Names => self.names().collect(),
            RefScope::Open => Vec::new(),
            RefScope::Closed(m) => m.keys().map(|k| &**k).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Analyzer;
    use crate::ToolRoot;

    // `transform_block`, which the checker's benches check too.
    include!("../../tests/common/blocks.rs");

    /// Checks `transform_block(n)`: the names entered into scopes and the check's units of work.
    fn check_block(n: usize) -> (u64, u64) {
        use crate::types::stop::WORKED;
        let source = transform_block(n);
        let mut analyzer = Analyzer::new(ToolRoot::assumed("/nonexistent"));
        let (entered, worked) = (ENTERED.with(|e| e.get()), WORKED.with(|w| w.get()));
        let checked = analyzer.check_source("main.tool", &source);
        let errors: Vec<_> = checked.diagnostics.iter().filter(|d| d.is_error()).collect();
        assert!(errors.is_empty(), "{:?}", errors.first());
        assert_eq!(checked.plan.as_ref().map(|p| p.steps.len()), Some(1));
        (ENTERED.with(|e| e.get()) - entered, WORKED.with(|w| w.get()) - worked)
    }

    /// Each expression of a transform block is checked in a scope of every name before it;
    /// the scopes share the block's one table, so the names are not entered again for each
    /// expression (they were: n²/2 names for a block of n, 20 s of a debug build for
    /// 3,000 variables), and the check's work grows with the block, not its square.
    #[test]
    fn a_transform_blocks_scopes_share_its_names() {
        let n = 20_000;
        let (entered, worked) = check_block(n);
        // Entered one by one: none (the scopes of each transform entered the names before
        // it: 2,000 transforms after 20,000 variables, 4·10⁷).
        assert!(entered <= n as u64, "{entered} names entered for {n} variables");
        // A few units a transform (its nodes, its type steps) and a variable, not one per
        // name before each transform.
        assert!(worked < 20 * n as u64, "{worked} units for {n} variables");
        // Twice the variables, about twice the work.
        let (_, half) = check_block(n / 2);
        assert!(worked < 3 * half, "{worked} units for {n} variables, {half} for {}", n / 2);
    }

    /// A shared table is the same scope as the names added one by one: the same names in
    /// the same order with the same types, a name added again keeping its place with the
    /// later type; adding to a scope that shares a table leaves the table as it was.
    #[test]
    fn a_shared_table_is_the_scope_of_its_names_added_in_order() {
        let mut table = NameTable::new();
        table.insert(Arc::from("b"), Type::Int);
        table.insert(Arc::from("a"), Type::Str);
        table.insert(Arc::from("b"), Type::Bool);
        let table = Arc::new(table);
        let shared = Scope::closed().with_names(table.clone());
        let added = Scope::closed().with_name("b", Type::Int).with_name("a", Type::Str).with_name("b", Type::Bool);
        assert_eq!(shared.names().collect::<Vec<_>>(), added.names().collect::<Vec<_>>());
        assert_eq!(shared.names().collect::<Vec<_>>(), ["b", "a"]);
        for n in ["a", "b", "c"] {
            assert_eq!(shared.name(n), added.name(n), "{n}");
            assert_eq!(shared.binding(n), added.binding(n), "{n}");
        }
        let open = Scope::open().with_names(table.clone());
        assert_eq!((open.name("b"), open.name("c")), (Some(Type::Bool), Some(Type::Any)));
        let more = shared.with_name("c", Type::Null);
        assert_eq!(more.names().collect::<Vec<_>>(), ["b", "a", "c"]);
        assert_eq!(table.len(), 2);
    }
}
