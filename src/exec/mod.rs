//! Running composites: the runner interface hosts implement, retries, circuit breakers,
//! time and randomness (injectable), and the execution trace.
//!
//! This module consumes checked plans from `analysis`; it never parses or checks a
//! `.tool` file itself.

pub mod breaker;
pub mod retry;
pub mod time;
