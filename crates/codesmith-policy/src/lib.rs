//! Pure policy decisions: no I/O, no async.
