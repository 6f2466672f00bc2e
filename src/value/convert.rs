//! The conversion from `serde_json::Value`: shared keys, predicted key order, records
//! built from the shape of the previous one, iterative below a fixed depth.

use super::path::same_key;
use super::{KeyHash, Map, SmolStr, Value};

impl From<&serde_json::Value> for Value {
    /// Converts, with object keys found by prediction (records repeat their keys in order)
    /// and hashed once per distinct key, and an object with the keys of the previous one
    /// under the same key (the next record) built from a copy of its map; a key longer than
    /// 23 bytes is allocated once and shared by every object that has it.
    fn from(v: &serde_json::Value) -> Value {
        let mut keys = SharedKeys::default();
        convert_shallow(v, &mut keys, 0, NO_KEY)
    }
}

/// How deep [`convert_shallow`] recurses before handing a subtree to the iterative
/// [`convert`] (each level is a small stack frame; 64 of them are far below any stack).
const RECURSION_DEPTH: usize = 64;

/// The keys shared by one conversion, each with its hash (computed once: objects insert by
/// it instead of hashing the key again).
///
/// Records usually repeat their keys in the same order, so each key remembers the key that
/// followed it last time and the first key of the object last found under it: checking
/// that prediction (one short comparison) replaces hashing and probing for almost every
/// key of a list of records.
#[derive(Default)]
struct SharedKeys<'a> {
    index: super::KeyHashMap<&'a str, u32>,
    keys: Vec<SharedKey>,
    /// The first key of the last object not under a key (at the top, or in a top list).
    root_first: u32,
    /// The shape of the last object not under a key.
    root_shape: ShapeSlot,
}

/// The keys of the last object found under some key, kept so that the next object with the
/// same keys in the same order (the next record) starts from a copy of its map — hash table
/// included — instead of inserting key by key. After [`MAX_SHAPE_MISSES`] objects of other
/// shapes under the same key, no more shapes are kept there.
#[derive(Default)]
struct ShapeSlot {
    shape: Option<Box<Shape>>,
    misses: u32,
}

struct Shape {
    /// The keys, each with `null`.
    map: Map,
    /// The number of each key (see [`SharedKeys::get`]).
    keys: Box<[u32]>,
}

/// How many objects of another shape a [`ShapeSlot`] sees before it stops keeping shapes.
pub(super) const MAX_SHAPE_MISSES: u32 = 8;

struct SharedKey {
    key: SmolStr,
    hash: u64,
    /// The key that came after this one, last time.
    next: u32,
    /// The first key of the last object under this key.
    first: u32,
    /// The shape of the last object under this key.
    shape: ShapeSlot,
}

/// Where a key's prediction is kept.
#[derive(Clone, Copy)]
enum Hint {
    /// The first key of an object under key `n` ([`NO_KEY`]: not under a key).
    FirstUnder(u32),
    /// The key after key `n`.
    After(u32),
}

/// "No key": an object not under a key, or a prediction not made yet.
const NO_KEY: u32 = u32::MAX;

impl<'a> SharedKeys<'a> {
    /// The shared key for `k`, its hash and its number (for [`Hint`]s), or [`NO_KEY`] when
    /// the table is full and the key was allocated on its own.
    #[inline]
    fn get(&mut self, k: &'a str, hint: Hint) -> (SmolStr, u64, u32) {
        let predicted = match hint {
            Hint::FirstUnder(NO_KEY) => self.root_first,
            Hint::FirstUnder(n) => self.keys.get(n as usize).map_or(NO_KEY, |e| e.first),
            Hint::After(n) => self.keys.get(n as usize).map_or(NO_KEY, |e| e.next),
        };
        if let Some(e) = self.keys.get(predicted as usize) {
            if same_key(e.key.as_bytes(), k.as_bytes()) {
                return (e.key.clone(), e.hash, predicted);
            }
        }
        let found = match self.index.get(k) {
            Some(&n) => n,
            None => {
                let key = SmolStr::new(k);
                let hash = std::hash::BuildHasher::hash_one(&KeyHash, &*key);
                if self.keys.len() >= MAX_SHARED_KEYS {
                    return (key, hash, NO_KEY);
                }
                let n = self.keys.len() as u32;
                self.keys.push(SharedKey { key, hash, next: NO_KEY, first: NO_KEY, shape: ShapeSlot::default() });
                self.index.insert(k, n);
                n
            }
        };
        match hint {
            Hint::FirstUnder(NO_KEY) => self.root_first = found,
            Hint::FirstUnder(n) => {
                if let Some(e) = self.keys.get_mut(n as usize) {
                    e.first = found;
                }
            }
            Hint::After(n) => {
                if let Some(e) = self.keys.get_mut(n as usize) {
                    e.next = found;
                }
            }
        }
        let e = &self.keys[found as usize];
        (e.key.clone(), e.hash, found)
    }

    fn shape_slot(&mut self, under: u32) -> Option<&mut ShapeSlot> {
        match under {
            NO_KEY => Some(&mut self.root_shape),
            n => self.keys.get_mut(n as usize).map(|e| &mut e.shape),
        }
    }

    /// A copy of the kept map under `under` when `o` has its keys in its order.
    #[inline]
    fn same_shape(&mut self, under: u32, o: &serde_json::Map<String, serde_json::Value>) -> Option<Map> {
        let shape = self.shape_slot(under)?.shape.as_deref()?;
        let same = shape.map.len() == o.len()
            && shape.map.keys().zip(o.keys()).all(|(a, b)| same_key(a.as_bytes(), b.as_bytes()));
        same.then(|| shape.map.clone())
    }

    /// The number of key `i` of the shape kept under `under`.
    #[inline]
    fn shape_key(&mut self, under: u32, i: usize) -> u32 {
        let shape = self.shape_slot(under).and_then(|s| s.shape.as_deref());
        shape.and_then(|s| s.keys.get(i).copied()).unwrap_or(NO_KEY)
    }

    /// Whether a new shape under `under` would be kept.
    fn keeps_shapes(&mut self, under: u32) -> bool {
        self.shape_slot(under).is_some_and(|s| s.misses < MAX_SHAPE_MISSES)
    }

    /// Keeps the shape of `map` (its keys numbered `numbers`) under `under`.
    fn keep_shape(&mut self, under: u32, map: &Map, numbers: Vec<u32>) {
        if let Some(slot) = self.shape_slot(under) {
            if slot.shape.is_some() {
                slot.misses += 1;
            }
            let map = map.keys().map(|k| (k.clone(), Value::Null)).collect();
            slot.shape = Some(Box::new(Shape { map, keys: numbers.into_boxed_slice() }));
        }
    }
}

/// The conversion, recursive for the first [`RECURSION_DEPTH`] levels (no frames to move,
/// lists collected straight into their shared allocation, object keys inserted by their
/// known hash and found by prediction), iterative below. `under` is the key the value is
/// under ([`NO_KEY`] for none), for the predictions of its keys.
fn convert_shallow<'a>(v: &'a serde_json::Value, keys: &mut SharedKeys<'a>, depth: usize, under: u32) -> Value {
    use indexmap::map::RawEntryApiV1;
    use serde_json::Value as J;
    match v {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        J::String(s) => Value::str(s),
        _ if depth >= RECURSION_DEPTH => convert(v, keys),
        J::Array(a) => Value::List(a.iter().map(|x| convert_shallow(x, keys, depth + 1, under)).collect()),
        J::Object(o) => {
            if let Some(mut map) = keys.same_shape(under, o) {
                for (i, x) in o.values().enumerate() {
                    let n = keys.shape_key(under, i);
                    let value = convert_shallow(x, keys, depth + 1, n);
                    if let Some((_, slot)) = map.get_index_mut(i) {
                        *slot = value;
                    }
                }
                return Value::object(map);
            }
            let mut map = Map::with_capacity_and_hasher(o.len(), KeyHash);
            let mut numbers = keys.keeps_shapes(under).then(|| Vec::with_capacity(o.len()));
            let mut hint = Hint::FirstUnder(under);
            for (k, x) in o {
                let (key, hash, n) = keys.get(k, hint);
                hint = Hint::After(n);
                if let Some(numbers) = &mut numbers {
                    numbers.push(n);
                }
                let value = convert_shallow(x, keys, depth + 1, n);
                // A JSON object's keys are distinct: no key in the map can match.
                if let indexmap::map::raw_entry_v1::RawEntryMut::Vacant(slot) =
                    map.raw_entry_mut_v1().from_hash(hash, |_| false)
                {
                    slot.insert_hashed_nocheck(hash, key, value);
                }
            }
            if let Some(numbers) = numbers {
                keys.keep_shape(under, &map, numbers);
            }
            Value::object(map)
        }
    }
}

/// Distinct keys shared per conversion; past this, keys are allocated one by one.
pub(super) const MAX_SHARED_KEYS: usize = 4096;

/// Converts without recursion (a frame per open list or object on a heap stack), so input
/// nested arbitrarily deep cannot overflow the stack.
fn convert<'a>(root: &'a serde_json::Value, keys: &mut SharedKeys<'a>) -> Value {
    use serde_json::Value as J;
    enum Frame<'a> {
        List(std::slice::Iter<'a, J>, Vec<Value>),
        Object(serde_json::map::Iter<'a>, Map, SmolStr),
    }
    let mut stack: Vec<Frame<'a>> = Vec::new();
    let mut cur = root;
    loop {
        // A container opens a frame and goes on with its first element; a scalar is done.
        let mut done = match cur {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(*b),
            J::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(0.0)),
            },
            J::String(s) => Value::str(s),
            J::Array(a) => {
                let mut it = a.iter();
                match it.next() {
                    Some(first) => {
                        stack.push(Frame::List(it, Vec::with_capacity(a.len())));
                        cur = first;
                        continue;
                    }
                    None => Value::list(Vec::new()),
                }
            }
            J::Object(o) => {
                let mut it = o.iter();
                match it.next() {
                    Some((k, first)) => {
                        let map = Map::with_capacity_and_hasher(o.len(), KeyHash);
                        stack.push(Frame::Object(it, map, keys.get(k, Hint::FirstUnder(NO_KEY)).0));
                        cur = first;
                        continue;
                    }
                    None => Value::object(Map::default()),
                }
            }
        };
        // Hand the finished value to its parent, closing every frame that is now complete.
        loop {
            let Some(frame) = stack.pop() else { return done };
            match frame {
                Frame::List(mut it, mut items) => {
                    items.push(done);
                    if let Some(next) = it.next() {
                        stack.push(Frame::List(it, items));
                        cur = next;
                        break;
                    }
                    done = Value::list(items);
                }
                Frame::Object(mut it, mut map, key) => {
                    map.insert(key, done);
                    if let Some((k, next)) = it.next() {
                        let key = keys.get(k, Hint::FirstUnder(NO_KEY)).0;
                        stack.push(Frame::Object(it, map, key));
                        cur = next;
                        break;
                    }
                    done = Value::object(map);
                }
            }
        }
    }
}

impl From<serde_json::Value> for Value {
    fn from(v: serde_json::Value) -> Value {
        Value::from(&v)
    }
}
