//! The VM's fuel and memory accounting: each evaluation's own limits, and the run's budget
//! it shares with the other evaluations of a run ([`RunBudget`], carried by its interrupt).

use super::Vm;
use crate::diagnostic::Code;
use crate::ops;
use crate::runtime::{EvalError, Interrupt, RunBudget, INTERRUPT_POLL_UNITS};
use crate::span::Span;
use crate::value::Value;

/// Settles an evaluation with the run's budget: the fuel of its tick not spent goes back,
/// and so do the bytes it took, but for those of its result, which the run holds (at most
/// what the evaluation took: a result that is a value it was given was charged where that
/// value was made).
#[cold]
#[inline(never)]
pub(super) fn settle(b: &RunBudget, vm: &Vm<'_>, result: &Result<Value, EvalError>) {
    b.give_back_fuel(vm.fuel);
    let kept = match result {
        Ok(v) => v.alloc_bytes_within(vm.taken),
        Err(_) => 0,
    };
    b.give_back_memory(vm.taken - kept);
}

/// Bytes an evaluation takes from its run's memory beyond what it needs at once, so that
/// it asks the shared budget once per this many bytes built, not once per value.
const MEMORY_CHUNK: u64 = 256 * 1024;

impl Vm<'_> {
    pub(super) fn out_of_fuel(&self, span: Span) -> EvalError {
        EvalError::new(
            Code::FuelExhausted,
            span,
            format!("evaluation ran out of fuel (the limit is {} instructions)", self.env.limits.fuel),
        )
    }

    /// Spends `units` of fuel when the current tick does not cover them: polls the
    /// interrupt and takes the next tick from the reserve. Out of line: the hot paths only
    /// compare against the tick.
    #[cold]
    #[inline(never)]
    pub(super) fn refuel(&mut self, units: u64, span: Span) -> Result<(), EvalError> {
        if let Some(reason) = self.env.interrupt.and_then(Interrupt::check) {
            self.give_back_tick();
            self.fuel = 0;
            self.reserve = 0;
            return Err(Interrupt::error(reason, span));
        }
        let total = self.fuel + self.reserve;
        if units > total {
            self.give_back_tick();
            self.fuel = 0;
            self.reserve = 0;
            return Err(self.out_of_fuel(span));
        }
        let left = total - units;
        let mut tick = left.min(INTERRUPT_POLL_UNITS);
        if let Some(b) = self.budget {
            // What the current tick does not cover is taken from the run now, with as much
            // of the next tick as the run has left.
            let need = units.saturating_sub(self.fuel);
            match b.take_fuel(need, need.saturating_add(tick)) {
                Some(got) => tick = got - need,
                None => {
                    self.give_back_tick();
                    self.fuel = 0;
                    self.reserve = 0;
                    return Err(EvalError::new(Code::FuelExhausted, span, b.fuel_error()));
                }
            }
        }
        self.fuel = tick;
        self.reserve = left - tick;
        Ok(())
    }

    /// Gives the current tick back to the run's budget (the evaluation stops).
    pub(super) fn give_back_tick(&mut self) {
        if let Some(b) = self.budget {
            b.give_back_fuel(self.fuel);
        }
        self.fuel = 0;
    }

    /// Spends `units` of fuel.
    #[inline]
    pub(super) fn burn(&mut self, units: u64, span: Span) -> Result<(), EvalError> {
        if units >= self.fuel {
            return self.refuel(units, span);
        }
        self.fuel -= units;
        Ok(())
    }

    /// Deep equality, charged a unit of fuel per node compared.
    pub(super) fn equal(&mut self, a: &Value, b: &Value, span: Span) -> Result<bool, EvalError> {
        let left = self.fuel_left();
        let mut budget = left;
        match a.eq_within(b, &mut budget) {
            Some(same) => {
                self.burn(left - budget, span)?;
                Ok(same)
            }
            None => self.refuel(u64::MAX, span).map(|()| false),
        }
    }

    /// Fuel left in all.
    pub(super) fn fuel_left(&self) -> u64 {
        self.fuel + self.reserve
    }

    /// Charges `bytes` of values built against the memory limit.
    pub(super) fn alloc(&mut self, bytes: usize, span: Span) -> Result<(), EvalError> {
        let bytes = bytes as u64;
        if bytes > self.alloc {
            self.alloc = 0;
            return Err(EvalError::new(Code::MemoryLimit, span, ops::memory_error(self.env.limits)));
        }
        self.alloc -= bytes;
        if self.budget.is_some() {
            if bytes > self.drawn {
                return self.draw(bytes, span);
            }
            self.drawn -= bytes;
        }
        Ok(())
    }

    /// Gives back `bytes` charged with [`Vm::alloc`] for what was held a while and is
    /// dropped now (the compiles of a call's run-time templates): the evaluation may build
    /// them again, from the run's memory it took already.
    #[inline]
    pub(super) fn release(&mut self, bytes: u64) {
        // Every call of a built-in passes here; nearly all of them held nothing.
        if bytes == 0 {
            return;
        }
        self.alloc = self.alloc.saturating_add(bytes);
        if self.budget.is_some() {
            self.drawn = self.drawn.saturating_add(bytes);
        }
    }

    /// Takes `bytes` (and a chunk more, when the run has it) from the run's memory.
    #[cold]
    #[inline(never)]
    pub(super) fn draw(&mut self, bytes: u64, span: Span) -> Result<(), EvalError> {
        let Some(b) = self.budget else { return Ok(()) };
        let need = bytes - self.drawn;
        match b.take_memory(need, need.saturating_add(MEMORY_CHUNK.min(self.alloc))) {
            Ok(got) => {
                self.taken += got;
                self.drawn = got - need;
                Ok(())
            }
            Err(message) => {
                self.alloc = 0;
                Err(EvalError::new(Code::MemoryLimit, span, message))
            }
        }
    }
}
