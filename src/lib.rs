//! steadfast
