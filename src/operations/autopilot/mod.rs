//! What a fleet run decides before it compacts anything, beyond thresholds: what each partition
//! will cost and give back ([`estimate`]), which partitions fit the run's budgets, fairly
//! across tables ([`admission`]), and what past runs did ([`history`]): the rates estimates
//! learn from, and the partitions that failed too often in a row to try again unasked.

pub mod admission;
pub mod estimate;
pub mod history;
