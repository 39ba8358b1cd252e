//! Large-count (`_c`) forms: to be filled.
