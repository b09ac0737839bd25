//! The System: many apps under one memory budget, and the output of its runs.

pub mod plot;
pub mod series;
