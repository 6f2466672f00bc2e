//! Equality, joins and truncation of types in work linear in the distinct nodes they meet.
//!
//! Types share structure: a list's element type and an object's fields are behind an
//! `Arc`, and a type a plan builds reuses its parts (`x2 = {a: x1, b: y1}`). A walk that
//! follows every path of such a type is exponential in its depth: two equal but distinct
//! types `x_k = {a: x_{k-1}, b: y_{k-1}}`, `y_k = {a: y_{k-1}, b: x_{k-1}}` have 2^k paths,
//! and their join walked every one (hostile round 10c: a 1.6 KB plan, 16 s of one check at
//! k = 28, four times as long every two levels). So every walk over two types here
//! remembers, for the length of one operation, the pairs of nodes (by address) it has
//! found equal or joined, and each pair is compared or joined once: the work is at most the
//! pairs of nodes met, one per node for types of one shape. A [`Work`] also counts its
//! steps, and past [`MAX_TYPE_WORK`] an operation gives up the way that loosens the check:
//! two types are taken as unequal, a join as `any`.
//!
//! A remembered pair keeps its two nodes alive until the operation ends, so that an
//! address is never reused by another node while it is remembered.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::{merge_origin, Fields, ObjectType, Type};

/// The most steps (pairs of nodes compared, joins made) one equality, join or truncation
/// takes: past them two types are unequal and a join is `any`. Types of one shape compare
/// in a step per node, and a type read from an upstream's schema has at most 20,000 nodes
/// (the bound of one resolution).
pub(crate) const MAX_TYPE_WORK: usize = 200_000;

#[cfg(test)]
thread_local! {
    /// Steps taken on this thread, for the tests' bound on work.
    pub(crate) static STEPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The address of a shared node, as a key.
fn addr<T>(a: &Arc<T>) -> usize {
    Arc::as_ptr(a) as *const () as usize
}

/// What one operation over types remembers: pairs of nodes found equal, joins made,
/// truncations made, and the steps taken.
#[derive(Default)]
pub(super) struct Work {
    /// Pairs compared, and whether they were equal.
    equal: FxHashMap<(usize, usize), bool>,
    joined: FxHashMap<(usize, usize), Type>,
    truncated: FxHashMap<(usize, usize), Type>,
    /// The nodes of every remembered pair, alive until the operation ends.
    pins: Vec<Type>,
    steps: usize,
}

impl Work {
    /// Takes one step; false past [`MAX_TYPE_WORK`].
    fn step(&mut self) -> bool {
        self.steps += 1;
        #[cfg(test)]
        STEPS.with(|s| s.set(s.get() + 1));
        // A check its host stopped gives up here too (`super::stop`).
        self.steps <= MAX_TYPE_WORK && !super::stop::poll()
    }

    /// Whether `a` and `b` are the same type (objects' `origin` aside); false past the
    /// bound on work.
    pub(super) fn same(&mut self, a: &Type, b: &Type) -> bool {
        match (a, b) {
            (Type::List(x), Type::List(y)) => self.same_nodes(x, y, a, b, |w: &mut Work| w.same(x, y)),
            (Type::Object(x), Type::Object(y)) => self.same_nodes(x, y, a, b, |w: &mut Work| w.same_objects(x, y)),
            (Type::Enum(x), Type::Enum(y)) => Arc::ptr_eq(x, y) || x == y,
            (Type::Union(x), Type::Union(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| self.same(p, q)),
            _ => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }

    /// Whether the nodes `x` and `y` (of types `a` and `b`) are equal by `compare`: at once
    /// when they are one node, remembered when they were compared before, false past the
    /// bound on work.
    fn same_nodes<T>(
        &mut self,
        x: &Arc<T>,
        y: &Arc<T>,
        a: &Type,
        b: &Type,
        compare: impl FnOnce(&mut Work) -> bool,
    ) -> bool {
        if Arc::ptr_eq(x, y) {
            return true;
        }
        let key = (addr(x), addr(y));
        if let Some(&same) = self.equal.get(&key) {
            return same;
        }
        if !self.step() {
            return false;
        }
        let same = compare(self);
        self.remember_equal(same, key, a, b);
        same
    }

    fn remember_equal(&mut self, same: bool, key: (usize, usize), a: &Type, b: &Type) {
        self.equal.insert(key, same);
        self.pins.push(a.clone());
        self.pins.push(b.clone());
    }

    /// Whether two objects have the same fields of the same types, and are both open or
    /// both closed.
    pub(super) fn same_objects(&mut self, x: &ObjectType, y: &ObjectType) -> bool {
        x.open == y.open
            && x.fields.len() == y.fields.len()
            && x.fields.iter().all(|(k, t)| y.fields.get(k).is_some_and(|u| self.same(t, u)))
    }

    /// The union of two types, simplified ([`Type::union`]).
    pub(super) fn union(&mut self, a: Type, b: Type) -> Type {
        match (&a, &b) {
            (Type::Any, _) | (_, Type::Any) => Type::Any,
            (_, Type::Never) => a,
            (Type::Never, _) => b,
            _ if self.same(&a, &b) => a,
            _ => self.union_all([a, b]),
        }
    }

    /// The union of many types, simplified ([`Type::union_all`]).
    pub(super) fn union_all(&mut self, types: impl IntoIterator<Item = Type>) -> Type {
        let mut parts: Vec<Type> = Vec::new();
        for t in types {
            let any = match t {
                Type::Union(v) => v.into_iter().any(|t| self.add_part(&mut parts, t)),
                Type::Never => false,
                other => self.add_part(&mut parts, other),
            };
            if any {
                return Type::Any;
            }
        }
        match parts.len() {
            0 => Type::Never,
            1 => parts.pop().unwrap_or(Type::Never),
            _ => Type::Union(parts),
        }
    }

    /// Adds one alternative (not a union, not `never`) to the parts of a union; true when it
    /// is `any` (or the join gave up on the bound of work), which absorbs the union.
    fn add_part(&mut self, parts: &mut Vec<Type>, t: Type) -> bool {
        if t == Type::Any {
            return true;
        }
        if let Type::List(e) = &t {
            if let Some(at) = parts.iter().position(|p| matches!(p, Type::List(_))) {
                let Type::List(prev) = &parts[at] else { return false };
                let prev = prev.clone();
                if !self.same(&prev, e) {
                    let merged = self.join_elements(&prev, e);
                    parts[at] = Type::List(Arc::new(merged));
                }
                return false;
            }
        }
        if let Type::Object(_) = &t {
            if let Some(at) = parts.iter().position(|p| matches!(p, Type::Object(_))) {
                if !self.same(&parts[at], &t) {
                    let merged = self.merge_objects(&parts[at], &t);
                    if merged == Type::Any {
                        return true;
                    }
                    parts[at] = merged;
                }
                return false;
            }
        }
        if let Type::Enum(e) = &t {
            if parts.contains(&Type::Str) {
                return false;
            }
            if let Some(at) = parts.iter().position(|p| matches!(p, Type::Enum(_))) {
                if let Type::Enum(prev) = &mut parts[at] {
                    if !e.is_subset(prev) {
                        let merged = Arc::make_mut(prev);
                        if !merged.extend(e) {
                            parts[at] = Type::Str;
                        }
                    }
                }
                return false;
            }
        }
        if t == Type::Str {
            parts.retain(|p| !matches!(p, Type::Enum(_)));
        }
        if t == Type::Int && parts.contains(&Type::Number) {
            return false;
        }
        if t == Type::Number {
            parts.retain(|p| *p != Type::Int);
        }
        if !parts.iter().any(|p| self.same(p, &t)) {
            parts.push(t);
        }
        false
    }

    /// The union of two lists' element types, each pair joined once.
    fn join_elements(&mut self, a: &Arc<Type>, b: &Arc<Type>) -> Type {
        let key = (addr(a), addr(b));
        if let Some(t) = self.joined.get(&key) {
            return t.clone();
        }
        if !self.step() {
            return Type::Any;
        }
        let joined = self.union((**a).clone(), (**b).clone());
        self.joined.insert(key, joined.clone());
        self.pins.push(Type::List(a.clone()));
        self.pins.push(Type::List(b.clone()));
        joined
    }

    /// The object that holds the values of both objects `a` and `b`, each pair joined once;
    /// `any` past the bound on work.
    fn merge_objects(&mut self, a: &Type, b: &Type) -> Type {
        let (Type::Object(x), Type::Object(y)) = (a, b) else { return Type::any_object() };
        let key = (addr(x), addr(y));
        if let Some(t) = self.joined.get(&key) {
            return t.clone();
        }
        if !self.step() {
            return Type::Any;
        }
        let mut fields = Fields::default();
        for (k, t) in x.fields.iter() {
            let other = y.fields.get(k).cloned().unwrap_or(if y.open { Type::Any } else { Type::Null });
            fields.insert(k.clone(), self.union(t.clone(), other));
        }
        for (k, t) in y.fields.iter() {
            if !fields.contains_key(k) {
                let other = if x.open { Type::Any } else { Type::Null };
                fields.insert(k.clone(), self.union(t.clone(), other));
            }
        }
        let origin = merge_origin(x, y);
        let merged = Type::Object(Arc::new(ObjectType { fields, open: x.open || y.open, origin }));
        self.joined.insert(key, merged.clone());
        self.pins.push(a.clone());
        self.pins.push(b.clone());
        merged
    }

    /// `t` with whatever nests deeper than `depth` levels replaced by `any`
    /// ([`Type::truncated`]), each node at each depth truncated once.
    pub(super) fn truncated(&mut self, t: &Type, depth: usize) -> Type {
        let key = match t {
            Type::List(_) | Type::Object(_) if depth == 0 => return Type::Any,
            Type::List(x) => (addr(x), depth),
            Type::Object(o) => (addr(o), depth),
            Type::Union(parts) => {
                let parts: Vec<Type> = parts.iter().map(|p| self.truncated(p, depth)).collect();
                return self.union_all(parts);
            }
            other => return other.clone(),
        };
        if let Some(done) = self.truncated.get(&key) {
            return done.clone();
        }
        if !self.step() {
            return Type::Any;
        }
        let done = match t {
            Type::List(x) => Type::List(Arc::new(self.truncated(x, depth - 1))),
            Type::Object(o) => {
                let fields: Vec<(Arc<str>, Type)> =
                    o.fields.iter().map(|(k, f)| (k.clone(), self.truncated(f, depth - 1))).collect();
                Type::object(fields, o.open)
            }
            other => other.clone(),
        };
        self.truncated.insert(key, done.clone());
        done
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Steps taken by `f` on this thread.
    fn steps<T>(f: impl FnOnce() -> T) -> (T, usize) {
        let before = STEPS.with(|s| s.get());
        let out = f();
        (out, STEPS.with(|s| s.get()) - before)
    }

    /// The pair of hostile round 10c: `x_k = {a: x_{k-1}, b: y_{k-1}}`,
    /// `y_k = {a: y_{k-1}, b: x_{k-1}}`, from the leaves `x0` and `y0`.
    fn bomb(n: usize, x0: Type, y0: Type) -> (Type, Type) {
        let (mut x, mut y) = (x0, y0);
        for _ in 0..n {
            let nx = Type::object([("a".into(), x.clone()), ("b".into(), y.clone())], false);
            let ny = Type::object([("a".into(), y), ("b".into(), x)], false);
            (x, y) = (nx, ny);
        }
        (x, y)
    }

    #[test]
    fn equal_types_that_share_their_parts_compare_in_a_step_per_node() {
        for n in [40, 60] {
            let (x, y) = bomb(n, Type::Int, Type::Int);
            let (same, took) = steps(|| x == y);
            assert!(same);
            assert!(took <= 4 * n, "{took} steps for depth {n}");
            let (fit, took) = steps(|| x.fits(&y));
            assert_eq!(fit, crate::types::Fit::Yes);
            assert!(took <= 4 * n, "{took} steps for depth {n}");
            let (joined, took) = steps(|| x.clone().union(y.clone()));
            assert!(joined == x);
            assert!(took <= 4 * n, "{took} steps for depth {n}");
            let (list, took) = steps(|| Type::union_all([x.clone(), y.clone(), x.clone()]));
            assert!(list == x);
            assert!(took <= 8 * n, "{took} steps for depth {n}");
        }
    }

    #[test]
    fn unequal_types_that_share_their_parts_join_in_a_step_per_pair_of_nodes() {
        for n in [40, 60] {
            let (x, y) = bomb(n, Type::Int, Type::Str);
            let (same, took) = steps(|| x == y);
            assert!(!same);
            assert!(took <= 4 * n, "{took} steps for depth {n}");
            let (joined, took) = steps(|| x.clone().union(y.clone()));
            assert!(took <= 16 * n, "{took} steps for depth {n}");
            // The leaves of the join are `integer | string` (or `string | integer`), at depth n.
            let mut t = joined;
            for _ in 0..n {
                let Type::Object(o) = t else { panic!("an object") };
                assert!(matches!(o.fields["b"], Type::Object(_)) == (t_depth_left(&o) > 0));
                t = o.fields["a"].clone();
            }
            assert!(t == Type::Int.union(Type::Str) || t == Type::Str.union(Type::Int), "{t}");
            // Lists of them too.
            let (lx, ly) = (Type::List(Arc::new(x.clone())), Type::List(Arc::new(y.clone())));
            let (_, took) = steps(|| lx.clone().union(ly.clone()));
            assert!(took <= 16 * n, "{took} steps for depth {n}");
        }
    }

    /// Whether the field `a` of `o` is an object.
    fn t_depth_left(o: &ObjectType) -> usize {
        usize::from(matches!(o.fields["a"], Type::Object(_)))
    }

    #[test]
    fn truncation_and_display_of_a_shared_type_are_bounded() {
        let (x, _) = bomb(60, Type::Int, Type::Str);
        let (t, took) = steps(|| x.truncated(16));
        assert!(took <= 4 * 16, "{took} steps");
        let mut depth = 0;
        let mut at = t;
        while let Type::Object(o) = at {
            depth += 1;
            at = o.fields["b"].clone();
        }
        assert_eq!((depth, at == Type::Any), (16, true));
        assert_eq!(x.to_string().chars().count(), crate::types::MAX_SHOWN_CHARS + 1);
    }

    /// Past the bound on work two types are unequal and their join is `any`: the check
    /// loosens, never refuses.
    #[test]
    fn past_the_bound_on_work_types_are_unequal_and_joins_any() {
        // An object of more distinct lists than the bound, built twice.
        let wide = || {
            let fields = (0..MAX_TYPE_WORK + 10).map(|i| (Arc::from(format!("f{i}")), Type::List(Arc::new(Type::Int))));
            Type::object(fields, false)
        };
        let (a, b) = (wide(), wide());
        let mut w = Work::default();
        assert!(!w.same(&a, &b));
        let mut w = Work::default();
        assert!(w.union(a.clone(), b.clone()) == Type::Any);
        // Within the bound, the same comparison finds them equal.
        let small = |n: usize| {
            Type::object((0..n).map(|i| (Arc::from(format!("f{i}")), Type::List(Arc::new(Type::Int)))), false)
        };
        assert!(small(100) == small(100));
    }

    // The plain walks the memoised ones replace: every path, no table.
    fn plain_same(a: &Type, b: &Type) -> bool {
        match (a, b) {
            (Type::List(x), Type::List(y)) => plain_same(x, y),
            (Type::Object(x), Type::Object(y)) => {
                x.open == y.open
                    && x.fields.len() == y.fields.len()
                    && x.fields.iter().all(|(k, t)| y.fields.get(k).is_some_and(|u| plain_same(t, u)))
            }
            (Type::Enum(x), Type::Enum(y)) => x == y,
            (Type::Union(x), Type::Union(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| plain_same(p, q)),
            _ => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }

    /// Random types whose parts are shared: each level picks among the types made so far.
    fn shared_type() -> impl Strategy<Value = Type> {
        let leaf = prop_oneof![
            Just(Type::Int),
            Just(Type::Number),
            Just(Type::Str),
            Just(Type::Null),
            Just(Type::Bool),
            Just(Type::Any),
            Just(Type::string_enum(["a", "b"])),
            Just(Type::string_enum(["b", "c"])),
        ];
        let step = (0usize..4, any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<bool>());
        (prop::collection::vec(leaf, 1..4), prop::collection::vec(step, 0..12)).prop_map(|(leaves, steps)| {
            let mut made = leaves;
            for (kind, i, j, open) in steps {
                let (a, b) = (i.get(&made).clone(), j.get(&made).clone());
                let t = match kind {
                    0 => Type::List(Arc::new(a)),
                    1 => Type::object([("a".into(), a), ("b".into(), b)], open),
                    2 => Type::object([("a".into(), a)], open),
                    _ => Type::union_all([a, b]),
                };
                made.push(t);
            }
            made.pop().unwrap_or(Type::Any)
        })
    }

    /// The join of the plain walk (a copy of the join before memoisation) is the join of the
    /// memoised one, field for field.
    fn plain_union(a: Type, b: Type) -> Type {
        match (&a, &b) {
            (Type::Any, _) | (_, Type::Any) => Type::Any,
            (_, Type::Never) => a,
            (Type::Never, _) => b,
            _ if plain_same(&a, &b) => a,
            _ => {
                let mut parts: Vec<Type> = Vec::new();
                for t in [a, b] {
                    let alts: Vec<Type> = t.alternatives().to_vec();
                    for t in alts {
                        if plain_add(&mut parts, t) {
                            return Type::Any;
                        }
                    }
                }
                match parts.len() {
                    0 => Type::Never,
                    1 => parts.pop().unwrap_or(Type::Never),
                    _ => Type::Union(parts),
                }
            }
        }
    }

    fn plain_add(parts: &mut Vec<Type>, t: Type) -> bool {
        if let Type::Any = t {
            return true;
        }
        if let Type::Never = t {
            return false;
        }
        if let Type::List(e) = &t {
            if let Some(Type::List(prev)) = parts.iter_mut().find(|p| matches!(p, Type::List(_))) {
                if !plain_same(prev, e) {
                    *prev = Arc::new(plain_union((**prev).clone(), (**e).clone()));
                }
                return false;
            }
        }
        if let Type::Object(y) = &t {
            if let Some(prev) = parts.iter_mut().find(|p| matches!(p, Type::Object(_))) {
                let Type::Object(x) = prev.clone() else { return false };
                if !plain_same(prev, &t) {
                    let mut fields = Fields::default();
                    for (k, f) in x.fields.iter() {
                        let other = y.fields.get(k).cloned().unwrap_or(if y.open { Type::Any } else { Type::Null });
                        fields.insert(k.clone(), plain_union(f.clone(), other));
                    }
                    for (k, f) in y.fields.iter() {
                        if !fields.contains_key(k) {
                            let other = if x.open { Type::Any } else { Type::Null };
                            fields.insert(k.clone(), plain_union(f.clone(), other));
                        }
                    }
                    *prev = Type::object(fields, x.open || y.open);
                }
                return false;
            }
        }
        // Scalars and enums as the memoised join does them.
        let mut w = Work::default();
        w.add_part(parts, t)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn memoised_equality_and_join_agree_with_the_plain_walks(a in shared_type(), b in shared_type()) {
            prop_assert_eq!(a == b, plain_same(&a, &b));
            prop_assert!(a == a.clone());
            let joined = a.clone().union(b.clone());
            let plain = plain_union(a.clone(), b.clone());
            prop_assert!(plain_same(&joined, &plain), "{} vs {}", joined, plain);
            // The join holds both.
            prop_assert_eq!(a.fits(&joined) == crate::types::Fit::No, false);
        }
    }
}
