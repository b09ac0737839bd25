//! The working-set estimate: bytes of objects read, and written, within the last four
//! rounds of the Clock algorithm (non-zero 4-bit history registers).

/// Working-set bytes at the end of a heap walk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkingSet {
    /// Bytes of objects read in the last four rounds.
    pub read_bytes: u64,
    /// Bytes of objects written in the last four rounds.
    pub written_bytes: u64,
    /// Bytes of all live objects walked.
    pub walked_bytes: u64,
}

impl WorkingSet {
    /// Counts one live object of `bytes` with its (read, write) history registers.
    pub fn add(&mut self, bytes: u64, read_history: u8, write_history: u8) {
        self.walked_bytes += bytes;
        if read_history != 0 {
            self.read_bytes += bytes;
        }
        if write_history != 0 {
            self.written_bytes += bytes;
        }
    }
}
