//! The lexical layer of MASM text, shared by the assembler, the `-D` parser and the
//! disassembler: splitting a line into tokens, integers, names and string escapes.

/// One token of a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok<'a> {
    /// A run of characters up to a space, a tab, `;` or `"`.
    Word(&'a str),
    /// A string literal, escapes already decoded.
    Str(String),
}

fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Splits one line (without its newline) into tokens, dropping a `;` comment.
pub(crate) fn tokenize(line: &str) -> Result<Vec<Tok<'_>>, String> {
    let bytes = line.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    loop {
        while i < bytes.len() && is_space(bytes[i]) {
            i += 1;
        }
        if i >= bytes.len() || bytes[i] == b';' {
            return Ok(toks);
        }
        if bytes[i] == b'"' {
            let (text, next) = string_literal(line, i + 1)?;
            toks.push(Tok::Str(text));
            i = next;
            if i < bytes.len() && !is_space(bytes[i]) && bytes[i] != b';' {
                return Err("expected a space after the string literal".into());
            }
        } else {
            let start = i;
            while i < bytes.len() && !is_space(bytes[i]) && bytes[i] != b';' && bytes[i] != b'"' {
                i += 1;
            }
            // Token boundaries are ASCII bytes, so both ends are char boundaries.
            toks.push(Tok::Word(&line[start..i]));
        }
    }
}

/// Decodes a string literal whose body starts at byte `start` (after the opening quote);
/// returns the text and the byte index after the closing quote.
fn string_literal(line: &str, start: usize) -> Result<(String, usize), String> {
    let mut text = String::new();
    let mut chars = line[start..].char_indices();
    while let Some((off, c)) = chars.next() {
        match c {
            '"' => return Ok((text, start + off + 1)),
            '\\' => match chars.next() {
                Some((_, 'n')) => text.push('\n'),
                Some((_, 't')) => text.push('\t'),
                Some((_, '\\')) => text.push('\\'),
                Some((_, '"')) => text.push('"'),
                Some((_, other)) => {
                    return Err(format!(
                        "bad string escape `\\{}` (allowed: \\n \\t \\\\ \\\")",
                        other.escape_debug()
                    ))
                }
                None => break,
            },
            _ => text.push(c),
        }
    }
    Err("unterminated string literal".into())
}

/// Writes `text` as a MASM string literal, quotes included.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

/// True for `[A-Za-z_][A-Za-z0-9_$]*`.
pub(crate) fn is_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    match bytes.next() {
        Some(b) if b.is_ascii_alphabetic() || b == b'_' => {}
        _ => return false,
    }
    bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
}

/// Parses a decimal or `0x` hex integer with an optional leading `-` into an `i64`.
pub(crate) fn parse_int(s: &str) -> Result<i64, String> {
    let (negative, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (radix, digits) = match body.strip_prefix("0x") {
        Some(hex) => (16, hex),
        None => (10, body),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(format!("bad integer `{s}`"));
    }
    let out_of_range = || format!("integer `{s}` is out of the 64-bit range");
    let magnitude = u64::from_str_radix(digits, radix).map_err(|_| out_of_range())?;
    if negative {
        if magnitude > 1u64 << 63 {
            return Err(out_of_range());
        }
        Ok((magnitude as i64).wrapping_neg())
    } else {
        i64::try_from(magnitude).map_err(|_| out_of_range())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(parse_int("42"), Ok(42));
        assert_eq!(parse_int("-0x10"), Ok(-16));
        assert_eq!(parse_int("0xFFff"), Ok(0xffff));
        assert_eq!(parse_int("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(parse_int("9223372036854775807"), Ok(i64::MAX));
        assert!(parse_int("9223372036854775808").is_err());
        assert!(parse_int("-9223372036854775809").is_err());
        for bad in ["", "-", "0x", "+1", "1_0", "0x-1", "--1", "1e3", "x10"] {
            assert!(parse_int(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn names() {
        assert!(is_name("a_1$"));
        assert!(is_name("_x"));
        assert!(!is_name("1a"));
        assert!(!is_name("a.b"));
        assert!(!is_name(""));
        assert!(!is_name("$a"));
    }

    #[test]
    fn tokens_strings_and_comments() {
        let toks = tokenize("  prints \"a;b\\n\\\"q\\\"\" ; note").unwrap();
        assert_eq!(
            toks,
            vec![Tok::Word("prints"), Tok::Str("a;b\n\"q\"".into())]
        );
        assert_eq!(
            tokenize("push 1;c").unwrap(),
            vec![Tok::Word("push"), Tok::Word("1")]
        );
        assert!(tokenize("prints \"abc")
            .unwrap_err()
            .contains("unterminated"));
        assert!(tokenize("prints \"a\\qb\"").unwrap_err().contains("escape"));
        assert!(tokenize("prints \"a\"b").is_err());
    }

    #[test]
    fn escape_round_trips() {
        let text = "tab\there \"q\" back\\slash\nline é";
        let literal = escape(text);
        let toks = tokenize(&literal).unwrap();
        assert_eq!(toks, vec![Tok::Str(text.into())]);
    }
}
