//! The free names a program reads, in first-use order, each once.
//!
//! A program reads a handful of names, found by a scan of the list; past [`SCANNED`] names
//! they are also kept in a hash set, so that a program of many distinct names is checked in
//! time linear in them, not quadratic (`tdsl check` of 40,000 distinct names took 2.9 s).
//! The list stays the answer, so the order is first use whatever the set's.

use rustc_hash::FxHashSet;

use crate::span::Span;
use crate::syntax::ast::Name;

/// Up to this many names, a lookup scans the list (no hashing, no set allocated).
const SCANNED: usize = 16;

/// The free names read so far.
#[derive(Default)]
pub(crate) struct FreeNames {
    list: Vec<(Name, Span)>,
    /// Every name of `list`, once it is longer than [`SCANNED`] (empty before).
    index: FxHashSet<Name>,
    /// Names compared or hashed by [`FreeNames::contains`], for the tests' bound on work.
    #[cfg(test)]
    probes: std::cell::Cell<usize>,
}

impl FreeNames {
    /// Whether `n` was read before.
    pub(crate) fn contains(&self, n: &Name) -> bool {
        if self.list.len() <= SCANNED {
            #[cfg(test)]
            self.probes.set(self.probes.get() + self.list.len());
            self.list.iter().any(|(m, _)| m == n)
        } else {
            #[cfg(test)]
            self.probes.set(self.probes.get() + 1);
            self.index.contains(n)
        }
    }

    /// Notes `n`, read at `span`, not read before ([`FreeNames::contains`]).
    pub(crate) fn push(&mut self, n: Name, span: Span) {
        if self.list.len() == SCANNED {
            self.index.extend(self.list.iter().map(|(m, _)| m.clone()));
        }
        if self.list.len() >= SCANNED {
            self.index.insert(n.clone());
        }
        self.list.push((n, span));
    }

    /// Gives the last name read the span `new` when it was read at `old` (parentheses
    /// around a name's first use widen its span, as they widen the node's).
    pub(crate) fn respan_last(&mut self, old: Span, new: Span) {
        if let Some((_, s)) = self.list.last_mut().filter(|(_, s)| *s == old) {
            *s = new;
        }
    }

    /// The names in first-use order.
    pub(crate) fn into_list(self) -> Vec<(Name, Span)> {
        self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Notes `n` unless noted already, as the checker does.
    fn note(names: &mut FreeNames, n: &Name, at: usize) {
        if !names.contains(n) {
            names.push(n.clone(), Span::new(at, at + 1));
        }
    }

    #[test]
    fn many_distinct_names_are_looked_up_in_linear_work_and_kept_in_first_use_order() {
        const N: usize = 40_000;
        let all: Vec<Name> = (0..N).map(|i| Name::from(format!("n{i}"))).collect();
        let mut names = FreeNames::default();
        for (i, n) in all.iter().enumerate() {
            note(&mut names, n, i);
            // Each read a second time: found, not added.
            note(&mut names, n, N + i);
        }
        // A scan of the whole list per name would be N²/2 = 800 million comparisons.
        let probes = names.probes.get();
        assert!(probes <= 4 * N + SCANNED * SCANNED, "{probes} names compared for {N} distinct names");
        let list = names.into_list();
        assert_eq!(list.len(), N);
        for (i, ((n, span), want)) in list.iter().zip(&all).enumerate() {
            assert_eq!(n, want);
            assert_eq!(span.start, i as u32, "the first use's span");
        }
    }

    #[test]
    fn names_on_both_sides_of_the_scan_limit_are_found_once() {
        for count in [0, 1, SCANNED - 1, SCANNED, SCANNED + 1, 3 * SCANNED] {
            let all: Vec<Name> = (0..count).map(|i| Name::from(format!("x{i}"))).collect();
            let mut names = FreeNames::default();
            for round in 0..3 {
                for n in all.iter().rev() {
                    note(&mut names, n, round);
                }
            }
            let list = names.into_list();
            let got: Vec<&Name> = list.iter().map(|(n, _)| n).collect();
            let want: Vec<&Name> = all.iter().rev().collect();
            assert_eq!(got, want, "{count} names");
            assert!(list.iter().all(|(_, s)| s.start == 0), "{count} names: first use kept");
        }
    }
}
