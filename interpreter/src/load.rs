//! Loading a program file: reads it, picks the binary or text form by the magic number,
//! and reports an unreadable file or invalid UTF-8 as diagnostics.

use std::path::Path;

use crate::asm::assemble;
use crate::binary::{decode, is_binary};
use crate::diag::Diagnostics;
use crate::isa::Program;

/// Reads and parses (or decodes) the program at `path`. The result is not yet linked or
/// verified.
pub fn load(path: &Path) -> Result<Program, Diagnostics> {
    let file = path.display().to_string();
    let bytes =
        std::fs::read(path).map_err(|e| Diagnostics::one(&file, 0, format!("cannot read: {e}")))?;
    load_bytes(&file, &bytes)
}

/// Parses (or decodes) a program held in memory; `file` names it in diagnostics.
pub fn load_bytes(file: &str, bytes: &[u8]) -> Result<Program, Diagnostics> {
    if is_binary(bytes) {
        return decode(file, bytes);
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => assemble(file, text),
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
            Err(Diagnostics::one(
                file,
                u32::try_from(line).unwrap_or(u32::MAX),
                "invalid UTF-8 (a MASM file is UTF-8 text; a binary program starts with the .mvb magic number)",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_is_a_diagnostic() {
        let err = load(Path::new("/nonexistent/x.masm")).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("/nonexistent/x.masm:0: cannot read"));
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let err = load_bytes("t.masm", b"; ok\n; ok\n\xff\n").unwrap_err();
        assert_eq!(err.0[0].line, 3);
        assert!(err.0[0].message.contains("UTF-8"));
    }
}
