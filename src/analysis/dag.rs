//! Graph algorithms over steps, by index: strongly connected components, the shortest cycle
//! through a step, and levels.
//!
//! `deps[i]` lists the steps step `i` depends on (sorted, without duplicates). Every function
//! here runs in time linear in steps plus edges and uses no recursion, so a composite of any
//! size cannot overflow the stack.

use std::collections::VecDeque;

/// The strongly connected components, dependencies first: a component comes after every
/// component it depends on (Tarjan's algorithm, iterative). Members keep index order.
pub(crate) fn components(deps: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let n = deps.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut out = Vec::new();
    let mut next = 0;
    let mut calls: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        calls.push((root, 0));
        while let Some(top) = calls.last_mut() {
            let (v, i) = *top;
            if let Some(&w) = deps[v].get(i) {
                top.1 += 1;
                if index[w] == UNSEEN {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(u, _)) = calls.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                comp.sort_unstable();
                out.push(comp);
            }
        }
    }
    out
}

/// Whether a component is a cycle: more than one step, or one step that depends on itself.
pub(crate) fn is_cycle(comp: &[usize], deps: &[Vec<usize>]) -> bool {
    match comp {
        [one] => deps[*one].binary_search(one).is_ok(),
        _ => comp.len() > 1,
    }
}

/// The shortest cycle from `start` back to it inside `comp` (a cyclic component holding
/// `start`, sorted): `[start, a, b, start]`, each step depending on the next.
pub(crate) fn shortest_cycle(start: usize, comp: &[usize], deps: &[Vec<usize>]) -> Vec<usize> {
    let slot = |x: usize| comp.binary_search(&x).ok();
    let mut parent: Vec<Option<usize>> = vec![None; comp.len()];
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in &deps[v] {
            if w == start {
                let mut back = Vec::new();
                let mut cur = v;
                while cur != start {
                    back.push(cur);
                    cur = slot(cur).and_then(|s| parent[s]).unwrap_or(start);
                }
                back.reverse();
                return std::iter::once(start).chain(back).chain([start]).collect();
            }
            if let Some(s) = slot(w) {
                if parent[s].is_none() {
                    parent[s] = Some(v);
                    queue.push_back(w);
                }
            }
        }
    }
    vec![start, start]
}

/// Each step's level: 0 when it depends on nothing, else one more than its deepest
/// dependency's. `None` when the graph has a cycle.
pub(crate) fn levels(deps: &[Vec<usize>]) -> Option<Vec<usize>> {
    let n = deps.len();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut waiting: Vec<usize> = vec![0; n];
    for (i, ds) in deps.iter().enumerate() {
        waiting[i] = ds.len();
        for &d in ds {
            dependents[d].push(i);
        }
    }
    let mut level = vec![0; n];
    let mut queue: VecDeque<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    let mut done = 0;
    while let Some(v) = queue.pop_front() {
        done += 1;
        for &w in &dependents[v] {
            level[w] = level[w].max(level[v] + 1);
            waiting[w] -= 1;
            if waiting[w] == 0 {
                queue.push_back(w);
            }
        }
    }
    (done == n).then_some(level)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_come_dependencies_first() {
        // 0 <- 1 <- 2, and 3 <-> 4 depending on 2
        let deps = vec![vec![], vec![0], vec![1], vec![2, 4], vec![3]];
        let comps = components(&deps);
        assert_eq!(comps, vec![vec![0], vec![1], vec![2], vec![3, 4]]);
        assert!(is_cycle(&comps[3], &deps));
        assert!(!is_cycle(&comps[0], &deps));
    }

    #[test]
    fn self_loops_are_cycles() {
        let deps = vec![vec![0]];
        assert!(is_cycle(&[0], &deps));
        assert_eq!(shortest_cycle(0, &[0], &deps), vec![0, 0]);
    }

    #[test]
    fn shortest_cycle_walks_dependencies() {
        // 0 needs 1, 1 needs 2, 2 needs 0 and 1 (a shortcut back to 1, not to 0).
        let deps = vec![vec![1], vec![2], vec![0, 1]];
        let comp = vec![0, 1, 2];
        assert_eq!(shortest_cycle(0, &comp, &deps), vec![0, 1, 2, 0]);
        assert_eq!(shortest_cycle(1, &comp, &deps), vec![1, 2, 1]);
    }

    #[test]
    fn levels_are_longest_paths() {
        let deps = vec![vec![], vec![0], vec![0], vec![1, 2], vec![]];
        assert_eq!(levels(&deps), Some(vec![0, 1, 1, 2, 0]));
        assert_eq!(levels(&[vec![1], vec![0]]), None);
    }

    #[test]
    fn deep_chains_do_not_recurse() {
        let n = 100_000;
        let deps: Vec<Vec<usize>> = (0..n).map(|i| if i == 0 { vec![] } else { vec![i - 1] }).collect();
        assert_eq!(components(&deps).len(), n);
        assert_eq!(levels(&deps).map(|l| l[n - 1]), Some(n - 1));
    }
}
