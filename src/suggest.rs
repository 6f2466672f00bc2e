//! "Did you mean": the nearest name to one that is not known, under a budget of work.
//!
//! Every "did you mean" of tdsl goes through [`did_you_mean`]: unknown functions, names,
//! keys, fields, arguments, tools — and some of those sets are as large as their input
//! lets them be (an upstream MCP server may list 60,000 tools, an upstream schema as many
//! fields). Comparing a name with every candidate by edit distance costs the product of
//! their lengths for each; with one misspelt name per step of a plan that was 17 s of CPU.
//! So the search is bounded, and the bound is counted, not timed:
//!
//! - each candidate is first looked at cheaply (its length, and a count of its characters
//!   in 64 buckets: a substitution changes that count by at most 2, an insertion or a
//!   deletion by 1, a transposition not at all, so half the difference is a lower bound of
//!   the distance); only candidates whose bound is within reach are compared;
//! - those are compared in the order of their bound, with a banded edit distance that
//!   stops as soon as it cannot beat the best found so far (`O(length × distance)`, not
//!   `O(length²)`);
//! - every character looked at and every cell of a distance table is a unit of work: one
//!   suggestion spends at most [`SUGGESTION_BUDGET`] units, and a caller checking a whole
//!   input (a plan) can give all the suggestions it makes one allowance
//!   ([`limit_suggestions`]). Past the budget the candidates not yet compared are not
//!   compared: the hint may be missing, never wrong, and the diagnostic stays.
//!
//! Within the budget the answer is exactly the one of comparing with every candidate: a
//! candidate that starts with the name (an abbreviation, the shortest first), else the
//! nearest by optimal-string-alignment distance (Levenshtein with adjacent transpositions),
//! at most a third of the name's length away, ties to the smallest name.

use std::cell::Cell;

/// The most units of work (characters looked at, distance-table cells) one suggestion
/// spends: scanning 100,000 tool names of 20 characters and comparing the near ones fits.
/// Fixed: its range is [`crate::ranges::SUGGESTION_BUDGET`], of one value.
pub const SUGGESTION_BUDGET: u64 = crate::ranges::SUGGESTION_BUDGET.max as u64;

thread_local! {
    /// Every unit spent on suggestions by this thread (for tests: the work is counted).
    static SPENT: Cell<u64> = const { Cell::new(0) };
    /// What is left of the allowance of [`limit_suggestions`], when one is in force.
    static ALLOWANCE: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The units of work this thread has spent on suggestions so far: a test reads it before
/// and after a check to bound the check's work without a clock.
pub fn work_spent() -> u64 {
    SPENT.with(Cell::get)
}

/// An allowance for every suggestion this thread makes until it is dropped (then the
/// allowance before it is back).
#[must_use = "the allowance ends when this is dropped"]
pub(crate) struct Allowance {
    previous: Option<u64>,
}

impl Drop for Allowance {
    fn drop(&mut self) {
        ALLOWANCE.with(|a| a.set(self.previous));
    }
}

/// Gives the suggestions this thread makes, until the guard is dropped, `units` of work in
/// all (a check of one plan: however many names it misspells, its suggestions cost at most
/// this). An allowance already in force is kept if smaller.
pub(crate) fn limit_suggestions(units: u64) -> Allowance {
    let previous = ALLOWANCE.with(Cell::get);
    ALLOWANCE.with(|a| a.set(Some(previous.map_or(units, |p| p.min(units)))));
    Allowance { previous }
}

/// How much one suggestion may spend now.
fn available() -> u64 {
    ALLOWANCE.with(Cell::get).map_or(SUGGESTION_BUDGET, |a| a.min(SUGGESTION_BUDGET))
}

/// Records `units` spent (on this thread's total and against the allowance in force).
fn record(units: u64) {
    SPENT.with(|s| s.set(s.get().saturating_add(units)));
    ALLOWANCE.with(|a| {
        if let Some(left) = a.get() {
            a.set(Some(left.saturating_sub(units)));
        }
    });
}

/// For a search of its own beside [`did_you_mean`] (a name found inside another): spends
/// `units` if the allowance in force has them, else spends nothing and says no.
pub(crate) fn spend(units: u64) -> bool {
    if units > available() {
        return false;
    }
    record(units);
    true
}

/// The closest candidate to `name` by edit distance, when close enough to suggest (see the
/// module's documentation for the rule and the budget).
pub(crate) fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut search = Search { budget: available(), spent: 0 };
    let found = search.run(name, candidates);
    record(search.spent);
    found
}

/// Of the `allowed` values (an `enum`), the one `written` was most likely meant to be: the
/// same but for case (`"OPEN"` for `"open"`), one a prefix of the other (`"descending"` for
/// `"desc"`), else the nearest by [`did_you_mean`]. Every character compared counts against
/// the budget, as [`did_you_mean`]'s do: past it, no hint.
pub(crate) fn meant_value<'a>(allowed: &[&'a str], written: &str) -> Option<&'a str> {
    let lower = written.to_lowercase();
    let cost = |a: &str| (a.len() + lower.len()) as u64;
    let mut prefixed = None;
    for a in allowed.iter().copied() {
        if !spend(cost(a)) {
            return None;
        }
        let a_lower = a.to_lowercase();
        if a_lower == lower {
            return Some(a);
        }
        if prefixed.is_none() && !a_lower.is_empty() && (lower.starts_with(&a_lower) || a_lower.starts_with(&lower)) {
            prefixed = Some(a);
        }
    }
    prefixed.or_else(|| did_you_mean(written, allowed.iter().copied()))
}

/// Buckets of the character count: collisions only lower the bound.
const BUCKETS: usize = 64;

fn bag(chars: impl Iterator<Item = char>) -> [i32; BUCKETS] {
    let mut b = [0i32; BUCKETS];
    for c in chars {
        b[c as usize % BUCKETS] += 1;
    }
    b
}

struct Search {
    budget: u64,
    spent: u64,
}

impl Search {
    /// Spends `units`; `false` once the budget is gone.
    fn spend(&mut self, units: usize) -> bool {
        self.spent = self.spent.saturating_add(units as u64);
        self.spent <= self.budget
    }

    fn run<'a>(&mut self, name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
        let chars: Vec<char> = name.chars().collect();
        if !self.spend(chars.len()) {
            return None;
        }
        let n = chars.len();
        let max = (n / 3).max(1);
        let name_bag = bag(chars.iter().copied());
        // An abbreviation (`sep` for `separator`) is as good a hint as a typo.
        let mut prefixed: Option<&str> = None;
        // Candidates within reach, with a lower bound of their distance.
        let mut near: Vec<(usize, &str)> = Vec::new();
        for c in candidates {
            // Looking at a candidate costs one unit, and its characters when they are read.
            if !self.spend(1) {
                break;
            }
            if c == name {
                continue;
            }
            if name.len() >= 3 && c.len() > name.len() && prefixed.is_none_or(|p| c.len() < p.len()) {
                // Compared up to the first difference.
                let common = name.bytes().zip(c.bytes()).take_while(|(a, b)| a == b).count();
                if !self.spend(common) {
                    break;
                }
                if common == name.len() {
                    prefixed = Some(c);
                    continue;
                }
            }
            if prefixed.is_some() {
                continue;
            }
            // A string has at least as many bytes as characters and at most four times as
            // many: most candidates are out of reach by their byte length alone.
            if c.len() + max < n || c.len() > 4 * (n + max) {
                continue;
            }
            if !self.spend(c.len()) {
                break;
            }
            let m = c.chars().count();
            if m.abs_diff(n) > max {
                continue;
            }
            let cb = bag(c.chars());
            let diff: i32 = name_bag.iter().zip(&cb).map(|(a, b)| (a - b).abs()).sum();
            let bound = (diff as usize).div_ceil(2).max(m.abs_diff(n));
            if bound <= max {
                near.push((bound, c));
            }
        }
        if prefixed.is_some() {
            return prefixed;
        }
        near.sort_unstable();
        let mut best: Option<(usize, &str)> = None;
        for (bound, c) in near {
            let reach = best.map_or(max, |(d, _)| d);
            if bound > reach {
                break;
            }
            let other: Vec<char> = c.chars().collect();
            let Some(d) = self.distance_within(&chars, &other, reach) else {
                if self.spent > self.budget {
                    break;
                }
                continue;
            };
            if best.is_none_or(|b| (d, c) < b) {
                best = Some((d, c));
            }
        }
        best.map(|(_, c)| c)
    }

    /// The optimal-string-alignment distance of `a` and `b` when it is at most `k` (a band
    /// of `2k + 1` cells a row, given up as soon as a row has no cell within `k`).
    fn distance_within(&mut self, a: &[char], b: &[char], k: usize) -> Option<usize> {
        const FAR: usize = usize::MAX / 2;
        let (n, m) = (a.len(), b.len());
        if n.abs_diff(m) > k {
            return None;
        }
        // Three rows (the one two back for transpositions); a cell outside the band of its
        // row is never written, and reads as FAR.
        let at = |row: &[usize], i: usize, j: usize| if i.abs_diff(j) > k { FAR } else { row[j] };
        let mut back2 = vec![FAR; m + 1];
        let mut back: Vec<usize> = (0..=m).map(|j| if j <= k { j } else { FAR }).collect();
        let mut row = vec![FAR; m + 1];
        for i in 1..=n {
            let lo = i.saturating_sub(k);
            let hi = (i + k).min(m);
            if !self.spend(hi + 1 - lo) {
                return None;
            }
            let mut least = FAR;
            for j in lo..=hi {
                let v = if j == 0 {
                    i
                } else {
                    let cost = usize::from(a[i - 1] != b[j - 1]);
                    let mut v =
                        (at(&back, i - 1, j - 1) + cost).min(at(&back, i - 1, j) + 1).min(at(&row, i, j - 1) + 1);
                    if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                        v = v.min(at(&back2, i - 2, j - 2) + 1);
                    }
                    v
                };
                row[j] = v;
                least = least.min(v);
            }
            if least > k {
                return None;
            }
            std::mem::swap(&mut back2, &mut back);
            std::mem::swap(&mut back, &mut row);
        }
        let d = at(&back, n, m);
        (d <= k).then_some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(did_you_mean("jion", ["join", "json_parse", "map"]), Some("join"));
        assert_eq!(did_you_mean("usr", ["user", "users"]), Some("user"));
        assert_eq!(did_you_mean("zzzzzz", ["join"]), None);
        assert_eq!(did_you_mean("sep", ["array", "separator"]), Some("separator"));
        assert_eq!(did_you_mean("x", ["x"]), None);
        assert_eq!(did_you_mean("länge", ["lange", "length"]), Some("lange"));
    }

    /// The banded distance agrees with strsim's whole table wherever it answers, and
    /// answers whenever the distance is within reach.
    #[test]
    fn banded_distance_agrees_with_strsim() {
        let words = ["", "a", "ab", "ba", "abc", "acb", "kitten", "sitting", "flaw", "lawn", "ca", "abc", "aü", "üa"];
        for a in words {
            for b in words {
                let exact = strsim::osa_distance(a, b);
                let (ac, bc): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
                for k in 0..6 {
                    let mut s = Search { budget: u64::MAX, spent: 0 };
                    let got = s.distance_within(&ac, &bc, k);
                    assert_eq!(got, (exact <= k).then_some(exact), "{a:?} {b:?} within {k}");
                }
            }
        }
    }

    /// The same answer as comparing with every candidate.
    #[test]
    fn the_answer_of_the_whole_comparison() {
        let names: Vec<String> = (0..300).map(|i| format!("tool_{:03}_{}", i, ["a", "bb", "ccc"][i % 3])).collect();
        for probe in ["tool_017_b", "tol_100_bb", "tool_299_ccc", "tool_2_a", "xyz", "tool_00_a"] {
            let brute = names
                .iter()
                .map(String::as_str)
                .filter(|c| *c != probe)
                .map(|c| (strsim::osa_distance(probe, c), c))
                .filter(|(d, _)| *d <= (probe.chars().count() / 3).max(1))
                .min();
            let prefixed = names.iter().filter(|c| c.starts_with(probe) && *c != probe).min_by_key(|c| c.len());
            let want = prefixed.map(String::as_str).or(brute.map(|(_, c)| c));
            assert_eq!(did_you_mean(probe, names.iter().map(String::as_str)), want, "{probe}");
        }
    }

    #[test]
    fn an_allowance_bounds_every_suggestion_under_it() {
        let names: Vec<String> = (0..10_000).map(|i| format!("name_{i:05}")).collect();
        let before = work_spent();
        {
            let _a = limit_suggestions(1_000);
            assert_eq!(did_you_mean("nane_09999", names.iter().map(String::as_str)), None, "the allowance is spent");
            assert!(!spend(1));
        }
        assert!(work_spent() - before <= 1_000 + 64, "{}", work_spent() - before);
        assert_eq!(did_you_mean("nane_09999", names.iter().map(String::as_str)), Some("name_09999"));
    }
}
