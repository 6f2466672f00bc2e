//! Dropping a value without deep recursion.

use std::sync::Arc;

use super::Value;

impl Drop for Value {
    /// Drops without deep recursion, so a value nested a million levels deep (built by a
    /// host, or by a long `pipeline`) cannot overflow the stack. The first
    /// [`RECURSIVE_DROPS`] levels of nested drops recurse (the children of a container are
    /// dropped at once, no copy, no scan); deeper ones are taken apart on a heap stack.
    #[inline]
    fn drop(&mut self) {
        // Scalars and strings (most values dropped) skip the rest altogether.
        if matches!(self, Value::List(_) | Value::Object(_)) {
            drop_container(self);
        }
    }
}

/// How many nested container drops recurse before the iterative drop takes over (each
/// level is one small stack frame).
const RECURSIVE_DROPS: u32 = 32;

thread_local! {
    /// How many container drops are in progress on this thread.
    static DROPS_IN_PROGRESS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The body of [`Value`]'s drop for lists and objects, out of line so that dropping a
/// scalar or a string stays a few instructions.
#[inline(never)]
fn drop_container(v: &mut Value) {
    // Only the last owner of a container that holds containers has anything to do here (a
    // shared one only loses a reference; scalars and strings need no care): one load of the
    // reference count and a scan of the children decide, without the uniqueness check's two
    // atomic read-modify-writes or the thread-local count.
    if !holds_containers(v) {
        return;
    }
    let depth = DROPS_IN_PROGRESS.try_with(|d| d.get()).unwrap_or(RECURSIVE_DROPS);
    if depth >= RECURSIVE_DROPS {
        return drop_iteratively(v);
    }
    let _ = DROPS_IN_PROGRESS.try_with(|d| d.set(depth + 1));
    // The last owner drops the child containers now, one level deeper; a shared container
    // only loses a reference when the caller's drop glue runs.
    let drop_now = |x: &mut Value| {
        if matches!(x, Value::List(_) | Value::Object(_)) {
            drop(std::mem::take(x));
        }
    };
    match v {
        Value::List(l) => {
            if let Some(items) = Arc::get_mut(l) {
                items.iter_mut().for_each(drop_now);
            }
        }
        Value::Object(o) => {
            if let Some(map) = Arc::get_mut(o) {
                map.values_mut().for_each(drop_now);
            }
        }
        _ => {}
    }
    let _ = DROPS_IN_PROGRESS.try_with(|d| d.set(depth));
}

/// Takes `v` apart with a heap stack instead of recursion.
#[cold]
fn drop_iteratively(v: &mut Value) {
    let mut stack = Vec::new();
    take_nested(v, &mut stack);
    while let Some(mut v) = stack.pop() {
        take_nested(&mut v, &mut stack);
    }
}

/// Moves out of `v` (replacing them with `null`) the elements whose drop would recurse more
/// than one level, when `v` is the last owner of its elements.
fn take_nested(v: &mut Value, stack: &mut Vec<Value>) {
    match v {
        Value::List(l) => {
            if let Some(items) = Arc::get_mut(l) {
                stack.extend(items.iter_mut().filter_map(|x| holds_containers(x).then(|| std::mem::take(x))));
            }
        }
        Value::Object(o) => {
            if let Some(map) = Arc::get_mut(o) {
                stack.extend(map.values_mut().filter_map(|x| holds_containers(x).then(|| std::mem::take(x))));
            }
        }
        _ => {}
    }
}

/// Whether `v` is the last owner of a list or object that holds a non-empty list or object.
/// A load of the reference count decides "last owner" (values never have weak references),
/// not `Arc::get_mut`, whose uniqueness check costs two atomic read-modify-writes.
fn holds_containers(v: &Value) -> bool {
    fn non_empty_container(x: &Value) -> bool {
        match x {
            Value::List(l) => !l.is_empty(),
            Value::Object(o) => !o.is_empty(),
            _ => false,
        }
    }
    match v {
        Value::List(l) => Arc::strong_count(l) == 1 && l.iter().any(non_empty_container),
        Value::Object(o) => Arc::strong_count(o) == 1 && o.values().any(non_empty_container),
        _ => false,
    }
}
