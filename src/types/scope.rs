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
    pub(crate) names: IndexMap<Arc<str>, Type>,
    pub(crate) open_names: bool,
    pub(crate) refs: RefScope,
    pub(crate) response: Option<Type>,
}

/// Where REF contexts come from.
#[derive(Clone, Debug, Default)]
pub(crate) enum RefScope {
    /// REF contexts are names of the scope (`REF:x.y` reads variable `x`).
    #[default]
    Names,
    /// Any context, typed `any`.
    Open,
    /// Exactly these contexts.
    Closed(IndexMap<Arc<str>, Type>),
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
            for (k, v) in map.iter() {
                s.names.insert(Arc::from(k.as_str()), type_of(v));
            }
        }
        s
    }

    /// Adds (or retypes) a name.
    pub fn with_name(mut self, name: &str, ty: Type) -> Scope {
        self.names.insert(Arc::from(name), ty);
        self
    }

    /// Makes REF contexts a closed list of their own, starting empty.
    pub fn with_ref_contexts(mut self) -> Scope {
        self.refs = RefScope::Closed(IndexMap::new());
        self
    }

    /// Adds a REF context (switching to a closed list of contexts if needed).
    pub fn with_ref(mut self, context: &str, ty: Type) -> Scope {
        if !matches!(self.refs, RefScope::Closed(_)) {
            self.refs = RefScope::Closed(IndexMap::new());
        }
        if let RefScope::Closed(m) = &mut self.refs {
            m.insert(Arc::from(context), ty);
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
        match self.names.get(name) {
            Some(t) => Some(t.clone()),
            None if self.open_names => Some(Type::Any),
            None => None,
        }
    }

    /// The names in scope, for suggestions.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.keys().map(|k| &**k)
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
        if self.names.contains_key(name) {
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
