//! What a run lends its fan-out chunks (child workflows) and takes back: calls of its one
//! budget of calls ([`super::ONE_CALL_BUDGET`]), fuel and memory of its one budget of those
//! ([`super::RUN_BUDGET`]); and the tool answers it holds.

use super::Interp;
use crate::value::Value;

impl Interp<'_> {
    /// Waits, while fewer than `need` of the run's calls are left and some are lent to
    /// chunks still running, until enough are given back or none is lent: so the run stops
    /// at its `--max-calls-per-run` only when its calls are spent, not while a chunk holds
    /// them. `false` when the wait ended because the workflow was cancelled.
    pub(super) async fn await_calls(&self, need: usize) -> bool {
        let enough = || self.calls.left() >= need || self.lent.get() == 0;
        if !self.one_budget || enough() {
            return true;
        }
        self.ctx.wait_condition(|_| enough()).await.is_ok()
    }

    /// Lends a chunk `need` of the run's calls, or what is left (`None`: the run keeps no
    /// one budget, [`ONE_CALL_BUDGET`]). Nothing left is the run's limit reached: it stops.
    pub(super) fn lend_calls(&self, need: usize) -> Option<usize> {
        if !self.one_budget {
            return None;
        }
        let lent = self.calls.lend(need);
        if lent == 0 {
            self.calls.exhaust();
        } else {
            self.lent.set(self.lent.get() + 1);
        }
        Some(lent)
    }

    /// A chunk lent `lent` calls ended having made `used` (`None`: unknown, all are kept),
    /// with its calls exhausted or not: the rest come back, and waiters look again.
    pub(super) fn calls_back(&self, lent: Option<usize>, used: Option<(usize, bool)>) {
        let Some(lent) = lent.filter(|n| *n > 0) else { return };
        self.lent.set(self.lent.get().saturating_sub(1));
        let (used, exhausted) = used.unwrap_or((lent, false));
        self.calls.give_back(lent.saturating_sub(used));
        if exhausted {
            self.calls.exhaust();
        }
        // Wakes the waits on the budget (`await_calls`).
        self.ctx.state_mut(|_| ());
    }

    /// Lends a chunk its share of the fuel and memory the run has left: `1 / n` of each,
    /// `n` the chunks that may still start beside it (all of it when chunks run one at a
    /// time). Taken for as long as the chunk runs: the run's own expressions meanwhile have
    /// what was not lent. `None`: the run keeps no budget ([`RUN_BUDGET`]).
    pub(super) fn lend_budget(&self, n: usize) -> Option<(u64, u64)> {
        let b = self.budget.as_ref()?;
        let n = n.max(1) as u64;
        // With nothing needed, a take always succeeds (with what there is, down to 0).
        let fuel = b.take_fuel(0, b.fuel_left() / n).unwrap_or(0);
        let memory = b.take_memory(0, b.memory_left() / n).unwrap_or(0);
        Some((fuel, memory))
    }

    /// A chunk lent `lent` fuel and memory ended having spent `used.0` and holding `used.1`
    /// (its children's results, which the run holds from now on; `None`: unknown, all is
    /// kept): the rest comes back. Fuel is spent for good, as calls are.
    pub(super) fn budget_back(&self, lent: Option<(u64, u64)>, used: Option<(u64, u64)>) {
        let (Some(b), Some((fuel, memory))) = (&self.budget, lent) else { return };
        let (spent, held) = used.unwrap_or((fuel, memory));
        b.give_back_fuel(fuel.saturating_sub(spent));
        b.give_back_memory(memory.saturating_sub(held));
    }

    /// Charges a tool's answer to the run's memory, which holds it until the run ends: what
    /// it does not share with the answers held before, as a local run charges it
    /// (`exec::scheduler`); the message of `E0406` when it does not fit.
    pub(super) fn hold_answer(&self, answer: &Value) -> Result<(), String> {
        let Some(b) = &self.budget else { return Ok(()) };
        let mut held = self.held.borrow_mut();
        let Some((bytes, added)) = answer.alloc_bytes_unseen_within(b.memory_left(), &mut held) else {
            return Err(b.memory_error());
        };
        b.hold(bytes).inspect_err(|_| {
            for at in added {
                held.remove(&at);
            }
        })
    }
}
