//! Task loader, verifiers and oracle plans (DESIGN §6).
//!
//! Not built yet: no task exists so far, and nothing in the workspace depends on this crate.
