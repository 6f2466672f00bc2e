//! Function signatures: parameter names, kinds, accepted types and defaults, and the
//! [`Signatures`] the checker looks calls up in.
//!
//! They live here, beside the checker that reads them, so that data flows one way:
//! `functions` (the bodies and the table that pairs them with signatures) depends on
//! `types`, never the reverse. The checker sees a function table only through the
//! [`Signatures`] trait.

use std::sync::Arc;

use super::Type;
use crate::value::Value;

/// How an argument is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// Evaluated once, before the call.
    Value,
    /// A template: evaluated once per element with `item` bound (SPEC §4.4).
    Template,
    /// A template where a bare dotted path is relative to `item` (`key_path`, `item_path`).
    PathTemplate,
    /// `pipeline` operations: a list literal of expressions over `current`.
    Operations,
    /// Evaluated only when chosen (`if` branches).
    Lazy,
}

impl ParamKind {
    /// Whether the argument is evaluated per element rather than once.
    pub fn is_template(self) -> bool {
        matches!(self, ParamKind::Template | ParamKind::PathTemplate)
    }
}

/// One parameter.
#[derive(Clone, Debug)]
pub struct Param {
    /// Its keyword name.
    pub name: Arc<str>,
    /// How it is passed.
    pub kind: ParamKind,
    /// The types it accepts (for a template: `any`).
    pub ty: Type,
    /// `None` when required; otherwise the value used when it is not given (for optional
    /// templates, `null` and the function decides).
    pub default: Option<Value>,
    /// Constant values it accepts, when it is an enumeration (`direction`: asc, desc).
    pub one_of: &'static [&'static str],
}

impl Param {
    /// A required value parameter.
    pub fn required(name: &str, ty: Type) -> Param {
        Param { name: Arc::from(name), kind: ParamKind::Value, ty, default: None, one_of: &[] }
    }

    /// An optional value parameter with a default.
    pub fn optional(name: &str, ty: Type, default: Value) -> Param {
        Param { name: Arc::from(name), kind: ParamKind::Value, ty, default: Some(default), one_of: &[] }
    }

    /// A parameter of another kind, required.
    pub fn deferred(name: &str, kind: ParamKind) -> Param {
        Param { name: Arc::from(name), kind, ty: Type::Any, default: None, one_of: &[] }
    }

    /// Makes the parameter optional with a `null` default.
    pub fn or_null(mut self) -> Param {
        self.default = Some(Value::Null);
        self
    }

    /// Restricts the parameter to constant choices.
    pub fn one_of(mut self, choices: &'static [&'static str]) -> Param {
        self.one_of = choices;
        self
    }

    /// Whether the caller must give it.
    pub fn is_required(&self) -> bool {
        self.default.is_none()
    }
}

/// How the result type is found.
#[derive(Clone, Debug)]
pub enum ReturnRule {
    /// Always this type.
    Fixed(Type),
    /// Computed from the argument types in parameter order (for templates, the type of the
    /// template's body; for `pipeline` operations, the type of the last one).
    Computed(fn(&[Type]) -> Type),
}

/// The keyword that gives a template's element a second name: `map(xs, as="x", template=x.a)`
/// (SPEC §4.4). Every function that takes a template takes it; it is not a parameter.
pub const ELEMENT_NAME: &str = "as";

/// A function signature.
#[derive(Clone, Debug)]
pub struct Signature {
    /// The name it is called by.
    pub name: Arc<str>,
    /// Its parameters in positional order.
    pub params: Vec<Param>,
    /// Whether it takes any keyword arguments (`create_object`).
    pub any_keywords: bool,
    /// Whether its last parameter repeats: positional arguments past it bind to further
    /// copies of it (`merge(a, b, c, …)`), each optional and typed as it is.
    pub variadic: bool,
    /// The result type.
    pub ret: ReturnRule,
    /// One line for docs, completion and `:help`.
    pub summary: &'static str,
}

impl Signature {
    /// A signature.
    pub fn new(name: &str, params: Vec<Param>, ret: ReturnRule, summary: &'static str) -> Signature {
        Signature { name: Arc::from(name), params, any_keywords: false, variadic: false, ret, summary }
    }

    /// The signature with its last parameter repeating ([`Signature::variadic`]).
    pub fn repeating_last(mut self) -> Signature {
        self.variadic = !self.params.is_empty();
        self
    }

    /// The parameter argument `i` binds to: parameter `i`, or the repeating last one.
    pub fn param_at(&self, i: usize) -> Option<&Param> {
        match self.params.get(i) {
            Some(p) => Some(p),
            None if self.variadic => self.params.last(),
            None => None,
        }
    }

    /// Whether calls may name the element of its templates with `as="NAME"`
    /// ([`ELEMENT_NAME`]): it takes a template and has no parameter of that name itself.
    pub fn takes_element_name(&self) -> bool {
        self.params.iter().any(|p| p.kind.is_template()) && self.param_index(ELEMENT_NAME).is_none()
    }

    /// The index of a parameter by keyword.
    pub fn param_index(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| &*p.name == name)
    }

    /// The result type for these argument types.
    pub fn return_type(&self, args: &[Type]) -> Type {
        match &self.ret {
            ReturnRule::Fixed(t) => t.clone(),
            ReturnRule::Computed(f) => f(args),
        }
    }

    /// `name(a, b=…)`, for messages and docs.
    pub fn display(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| if p.is_required() { p.name.to_string() } else { format!("{}=…", p.name) })
            .collect();
        let mut s = format!("{}({}", self.name, params.join(", "));
        if self.any_keywords {
            s.push_str(if params.is_empty() { "**kwargs" } else { ", **kwargs" });
        }
        if self.variadic {
            s.push_str(", …");
        }
        s.push(')');
        s
    }
}

/// An index into a function table (`functions::FunctionTable`, which implements
/// [`Signatures`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FuncId(pub u16);

/// What the checker needs of a function table: the signatures by name and id.
pub trait Signatures {
    /// Looks a function up by name.
    fn lookup(&self, name: &str) -> Option<FuncId>;
    /// The signature of the function with this id.
    fn signature(&self, id: FuncId) -> &Signature;
    /// All function names, for suggestions.
    fn names(&self) -> Box<dyn Iterator<Item = &str> + '_>;
}

/// A shared table (an engine holds its functions in an `Arc`) answers as the table does.
impl<T: Signatures + ?Sized> Signatures for Arc<T> {
    fn lookup(&self, name: &str) -> Option<FuncId> {
        (**self).lookup(name)
    }

    fn signature(&self, id: FuncId) -> &Signature {
        (**self).signature(id)
    }

    fn names(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        (**self).names()
    }
}
