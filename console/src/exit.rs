//! The exit statuses of marvin's commands (besides those of [`output`](crate::output)'s
//! failed writes).

/// The exit status of a program rejected before it runs.
pub const EXIT_REJECTED: i32 = 65;
/// The exit status of a wrong flag, policy or lifecycle given to marvin itself.
pub const EXIT_USAGE: i32 = 2;
/// The exit status when a file given to marvin cannot be read, or another error ends a
/// command (with a message).
pub const EXIT_FAILURE: i32 = 1;
