//! The tasks crate's integration tests: loading, families, verifiers, grounding, and the
//! oracle plans of external arms.
//!
//! One test binary for the crate (each file a module), so the dependencies are linked once, not
//! once per file. Run one file's tests with `cargo nextest run -p tasks -E 'test(/^FILE::/)'`.

mod arm_plans;
mod attacks;
mod audit;
mod family;
mod grounding;
mod load;
mod verify;
