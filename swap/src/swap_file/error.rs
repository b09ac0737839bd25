//! The swap file's errors: every one names the file, and a corrupt checkpoint names its object.

use std::path::PathBuf;

use super::SlotId;

/// What is wrong with a checkpoint read back from the swap file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorruptKind {
    /// The slot header lies (partly) outside the file.
    #[error("slot header at byte {offset} lies outside the {file_len}-byte file")]
    OutOfBounds {
        /// Where the slot starts.
        offset: u64,
        /// The file's length.
        file_len: u64,
    },
    /// The slot header does not start with the slot magic.
    #[error("bad slot magic {found:#010x}")]
    BadMagic {
        /// The value found.
        found: u32,
    },
    /// The slot header's own checksum does not match.
    #[error("slot header checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    BadHeaderChecksum {
        /// The stored checksum.
        stored: u32,
        /// The checksum of the header as read.
        computed: u32,
    },
    /// The header says the slot is free.
    #[error("slot header says the slot is free")]
    NotLive,
    /// The header belongs to another object.
    #[error("slot holds object {found} instead")]
    KeyMismatch {
        /// The key in the header.
        found: u64,
    },
    /// The header's length or capacity does not fit.
    #[error("stored length {stored} does not match the expected {expected} bytes")]
    LengthMismatch {
        /// The length in the header.
        stored: u64,
        /// The length expected (the caller's buffer, or the slot's capacity).
        expected: u64,
    },
    /// The slot holds an older (or newer) checkpoint of the object than the one this
    /// run wrote last: the file was rolled back or written behind the runtime's back.
    #[error("stale checkpoint: slot holds generation {found}, expected {expected}")]
    StaleGeneration {
        /// The generation in the header.
        found: u32,
        /// The generation the index recorded at the last write.
        expected: u32,
    },
    /// The payload's checksum does not match.
    #[error("payload checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    BadPayloadChecksum {
        /// The stored checksum.
        stored: u32,
        /// The checksum of the payload as read.
        computed: u32,
    },
    /// The slot header names a codec this format does not know.
    #[error("slot header names unknown codec {found}")]
    UnknownCodec {
        /// The codec number found.
        found: u32,
    },
    /// A compressed payload whose checksum held did not decompress to the object's bytes.
    #[error("compressed payload does not decompress to {expected} bytes: {reason}")]
    BadCompressed {
        /// The object's payload bytes.
        expected: u64,
        /// What the decompressor said.
        reason: String,
    },
}

/// A swap-file operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SwapError {
    /// An I/O call failed (for example the directory is not writable).
    #[error("swap file {path}: cannot {op}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file concerned.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file system has no room to grow the file.
    #[error("swap file {path}: disk full (no space to grow the file to {wanted} bytes)")]
    DiskFull {
        /// The file.
        path: PathBuf,
        /// The size the file needed.
        wanted: u64,
    },
    /// The file would exceed its configured size limit.
    #[error("swap file {path}: size limit of {limit} bytes reached (needs {wanted} bytes)")]
    LimitReached {
        /// The file.
        path: PathBuf,
        /// The limit given to [`super::SwapFile::with_limit`].
        limit: u64,
        /// The size the file needed.
        wanted: u64,
    },
    /// The file was unlinked while in use.
    #[error("swap file {path} was deleted while in use; its checkpoints are no longer durable")]
    Deleted {
        /// The file.
        path: PathBuf,
    },
    /// The file was made shorter behind this process's back.
    #[error("swap file {path} was truncated to {actual} bytes (expected at least {expected})")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Its size now.
        actual: u64,
        /// The size this process mapped.
        expected: u64,
    },
    /// The file's header is not this run's: another run wrote the file.
    #[error("swap file {path} is refused: {reason}")]
    NotOurs {
        /// The file.
        path: PathBuf,
        /// What its header says.
        reason: super::layout::FileHeaderError,
    },
    /// A checkpoint failed its checks.
    #[error("swap file {path}: checkpoint of object {key} in {slot} is corrupt: {kind}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The object whose checkpoint was read.
        key: u64,
        /// Its slot.
        slot: SlotId,
        /// What is wrong.
        kind: CorruptKind,
    },
    /// The slot is not a live slot of this file.
    #[error("swap file {path}: {slot} is not a live slot")]
    NoSuchSlot {
        /// The file.
        path: PathBuf,
        /// The slot given.
        slot: SlotId,
    },
    /// The slot holds another object's checkpoint.
    #[error("swap file {path}: {slot} holds object {owner}, not object {key}")]
    WrongObject {
        /// The file.
        path: PathBuf,
        /// The slot given.
        slot: SlotId,
        /// The object named by the caller.
        key: u64,
        /// The object the slot holds.
        owner: u64,
    },
    /// One object is larger than a slot can hold.
    #[error("object {key}: {len} bytes is more than a swap slot holds ({max} bytes)")]
    TooLarge {
        /// The object.
        key: u64,
        /// Its size.
        len: usize,
        /// The largest payload.
        max: usize,
    },
    /// The file name is empty or not a plain name.
    #[error("invalid swap file name {name:?}: it must be a plain, non-empty file name")]
    BadName {
        /// The name given.
        name: String,
    },
    /// The swap folder is not safe to write in, or the file's name in it is taken by
    /// something this run did not make (a link, a FIFO, another user's file).
    #[error(transparent)]
    Folder(#[from] marvin_runtime::FolderError),
}
