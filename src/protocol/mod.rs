//! RESP2/RESP3 wire format: the request parser and the reply encoder.
//!
//! This layer knows bytes and frames only; it must never know what a command means.

pub mod bulks;
pub mod encode;
pub mod frame;
mod names;
pub mod parse;

pub use bulks::{EncodedBulks, EncodedBulksBuilder};
pub use encode::{Protocol, encode};
pub use frame::Frame;
pub use parse::{ParseLimits, ProtocolError, RequestParser};
