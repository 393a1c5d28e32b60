//! Session records to metrics, intervals, verdicts and reports (DESIGN §9).
//!
//! Not built yet: nothing in the workspace depends on this crate so far.
