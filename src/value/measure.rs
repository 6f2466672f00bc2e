//! Size and depth of a value.

use super::{Value, MAX_WALK_DEPTH};

impl Value {
    /// A rough count of the bytes this value's JSON form takes, stopping early once it
    /// passes `limit` (used by the output-size limit without rendering the value). A value
    /// nested deeper than [`MAX_WALK_DEPTH`] counts as larger than any limit, so the walk's
    /// stack stays bounded.
    pub fn size_at_most(&self, limit: usize) -> usize {
        let (size, too_deep) = self.measure(limit, MAX_WALK_DEPTH);
        if too_deep {
            limit.saturating_add(1)
        } else {
            size
        }
    }

    /// [`Value::size_at_most`] and whether the value nests deeper than `max_depth` levels,
    /// in one walk that stops at either limit.
    pub fn measure(&self, limit: usize, max_depth: usize) -> (usize, bool) {
        fn go(v: &Value, acc: &mut usize, limit: usize, depth: usize) -> bool {
            if *acc > limit {
                return false;
            }
            match v {
                Value::Null | Value::Bool(_) => *acc += 5,
                Value::Int(_) | Value::Float(_) => *acc += 8,
                Value::Str(s) => *acc += s.len() + 2,
                Value::List(_) | Value::Object(_) if depth == 0 => return true,
                Value::List(l) => {
                    *acc += 2;
                    for x in l.iter() {
                        *acc += 1;
                        if go(x, acc, limit, depth - 1) {
                            return true;
                        }
                        if *acc > limit {
                            return false;
                        }
                    }
                }
                Value::Object(o) => {
                    *acc += 2;
                    for (k, x) in o.iter() {
                        *acc += k.len() + 4;
                        if go(x, acc, limit, depth - 1) {
                            return true;
                        }
                        if *acc > limit {
                            return false;
                        }
                    }
                }
            }
            false
        }
        let mut acc = 0;
        let too_deep = go(self, &mut acc, limit, max_depth.min(MAX_WALK_DEPTH));
        (acc, too_deep)
    }

    /// Nesting depth: 0 for scalars, 1 + the deepest element for lists and objects.
    /// Walks with a stack on the heap, so any depth is measured.
    pub fn depth(&self) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(self, 0usize)];
        while let Some((v, d)) = stack.pop() {
            match v {
                Value::List(l) => {
                    deepest = deepest.max(d + 1);
                    stack.extend(l.iter().map(|x| (x, d + 1)));
                }
                Value::Object(o) => {
                    deepest = deepest.max(d + 1);
                    stack.extend(o.values().map(|x| (x, d + 1)));
                }
                _ => {}
            }
        }
        deepest
    }
}
