//! What an access to an object is ([`AccessKind`]) and why one fails ([`AccessError`],
//! with the swap layer's [`FaultError`]): the words the access barrier
//! ([`crate::barrier`]) and the stubs ([`crate::stub`]) share, apart from both.

/// Why the swap layer could not read an object back: its own error, boxed, since the
/// runtime knows stubs, not swap files.
pub type FaultError = Box<dyn std::error::Error + Send + Sync>;

/// What an access does to the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    Read,
    Write,
}

/// Why an access could not be made.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error("dangling reference {0}")]
    Dangling(u64),
    /// The swap layer could not read the object back.
    #[error("cannot fault in object {handle}: {reason}")]
    Fault {
        handle: u64,
        #[source]
        reason: FaultError,
    },
}
