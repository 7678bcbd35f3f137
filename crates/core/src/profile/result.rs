//! The profile's result is plain data in the result layer
//! ([`crate::results::profile`]): the result model reads it back without
//! importing the profiler. The profiler fills it.

pub use crate::results::profile::*;
