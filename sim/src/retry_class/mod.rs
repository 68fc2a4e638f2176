//! Retry classes (RULES.md "Retry classes", P10): what sending each method twice does.
//!
//! - [`audit`]: every method's class next to what a duplicate does to the correct `stored`
//!   Agent, on the sans-IO model;
//! - [`matrix`]: every method × fault × Client policy over many seeds on the model Agents, in
//!   its own small discrete-event world (no turmoil), with a verdict per class.

pub mod audit;
pub mod matrix;
