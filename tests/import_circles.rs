//! No import circle of three or more files anywhere in the workspace: within each
//! crate, the files that name one another through `crate::` and `super::` paths form no
//! strongly connected component of more than two files. Two files may name each other
//! (a module and its parent, a type and its one user); a third in the loop means no file
//! of them can be read, changed or tested without the others.
//!
//! Each module file of each crate's `src/` is a node; a path `crate::a::b::c` (or
//! `super::...`, `self::...`, and every member of a `{...}` group after one) is an edge to
//! the file of the longest prefix `a::b` that is a module file. Comments are left out, so
//! a doc link is not an import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The `src/` folder of every crate under `root` (skipping build outputs).
fn crate_sources(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    if root.join("Cargo.toml").is_file() && root.join("src").is_dir() {
        out.push(root.join("src"));
    }
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if e.path().is_dir() && !name.starts_with('.') && name != "target" && name != "src" {
            crate_sources(&e.path(), out);
        }
    }
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file under `src` (`lib.rs` and `main.rs` are the root,
/// `a/mod.rs` is `a`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    } else if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts
}

/// `text` without its `//` comments (doc comments included).
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The paths a file names from `crate`, `super` or `self`, each resolved against the
/// module it is written in (the file's, or an inline `mod name { ... }` in it) to a full
/// module path (the items after it included).
fn named_paths(file_module: &[String], text: &str) -> Vec<Vec<String>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    // Inline modules open at this point, with the brace depth inside each.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                while inline.last().is_some_and(|(_, d)| *d > depth) {
                    inline.pop();
                }
            }
            _ => {}
        }
        if !bytes[i].is_ascii_alphabetic() || (i > 0 && is_ident_byte(bytes[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_ident_byte(bytes[i]) {
            i += 1;
        }
        let word = &text[start..i];
        if word == "mod" {
            // `mod name {`: an inline module, whose paths are relative to it.
            let rest = text[i..].trim_start();
            let name_len = rest.bytes().take_while(|b| is_ident_byte(*b)).count();
            if name_len > 0 && rest[name_len..].trim_start().starts_with('{') {
                inline.push((rest[..name_len].to_owned(), depth + 1));
            }
            continue;
        }
        if !matches!(word, "crate" | "super" | "self") || !text[i..].starts_with("::") {
            continue;
        }
        let module: Vec<String> = file_module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(n, _)| n.clone()))
            .collect();
        let mut base: Vec<String> = match word {
            "crate" => Vec::new(),
            "super" => module[..module.len().saturating_sub(1)].to_vec(),
            _ => module.clone(),
        };
        // The segments after it: `::name` repeated, `super` climbing further.
        while text[i..].starts_with("::") {
            let seg_start = i + 2;
            let mut j = seg_start;
            while j < bytes.len() && is_ident_byte(bytes[j]) {
                j += 1;
            }
            if j == seg_start {
                break;
            }
            let seg = &text[seg_start..j];
            if seg == "super" {
                base.pop();
            } else {
                base.push(seg.to_owned());
            }
            i = j;
        }
        out.push(base.clone());
        // A group after it: each member is a path of its own.
        if text[i..].starts_with("::{") {
            let end = text[i..].find('}').map_or(text.len(), |e| i + e + 1);
            for member in text[i + 3..end.saturating_sub(1)].split(',') {
                let member: Vec<String> = member
                    .split("::")
                    .map(|s| s.trim())
                    .filter(|s| !s.is_empty() && s.bytes().all(is_ident_byte))
                    .map(str::to_owned)
                    .collect();
                if !member.is_empty() {
                    out.push(base.iter().cloned().chain(member).collect());
                }
            }
            i = end;
        }
    }
    out
}

/// The strongly connected components of `edges` (Tarjan's algorithm).
fn components(edges: &BTreeMap<usize, BTreeSet<usize>>, n: usize) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a BTreeMap<usize, BTreeSet<usize>>,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.edges.get(&v).into_iter().flatten() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The import circles of three or more files in the crate whose sources are `src`.
fn circles(src: &Path) -> Vec<Vec<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let modules: Vec<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let by_module: BTreeMap<&[String], usize> = modules
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_slice(), i))
        .collect();
    let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for (i, file) in files.iter().enumerate() {
        let text = without_comments(&std::fs::read_to_string(file).unwrap());
        for path in named_paths(&modules[i], &text) {
            let target = (0..=path.len())
                .rev()
                .find_map(|n| by_module.get(&path[..n]).copied());
            if let Some(t) = target.filter(|&t| t != i) {
                edges.entry(i).or_default().insert(t);
            }
        }
    }
    components(&edges, files.len())
        .into_iter()
        .filter(|c| c.len() >= 3)
        .map(|c| {
            let mut names: Vec<String> = c
                .iter()
                .map(|&i| files[i].strip_prefix(src).unwrap().display().to_string())
                .collect();
            names.sort();
            names
        })
        .collect()
}

#[test]
fn no_import_circle_of_three_or_more_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = Vec::new();
    crate_sources(root, &mut sources);
    assert!(
        sources.len() >= 10,
        "found only {} crates under {}",
        sources.len(),
        root.display()
    );
    let mut found = Vec::new();
    for src in &sources {
        for c in circles(src) {
            found.push(format!("{}: {}", src.display(), c.join(", ")));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn a_circle_of_three_files_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\npub mod c;\n").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::B;\n").unwrap();
    std::fs::write(src.join("b.rs"), "pub struct B;\nuse super::c;\n").unwrap();
    std::fs::write(
        src.join("c.rs"),
        "// crate::b is only named here\nuse crate::{a, lib};\n",
    )
    .unwrap();
    assert_eq!(circles(src), vec![vec!["a.rs", "b.rs", "c.rs"]]);
    // Two files naming each other are not a circle of three.
    std::fs::write(src.join("c.rs"), "use crate::b;\n").unwrap();
    assert!(circles(src).is_empty());
    // In a test module, `super` is the file it is written in, not the file's parent:
    // `heap/large.rs`'s tests do not name `heap/mod.rs`.
    std::fs::create_dir(src.join("heap")).unwrap();
    std::fs::write(
        src.join("heap/mod.rs"),
        "pub mod large;\nuse crate::c::C;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("c.rs"),
        "pub struct C;\nuse crate::heap::large::f;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("heap/large.rs"),
        "pub fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    )
    .unwrap();
    assert!(circles(src).is_empty(), "{:?}", circles(src));
    // The same file naming its parent is a circle.
    std::fs::write(
        src.join("heap/large.rs"),
        "pub fn f() {}\nuse super::Heap;\n",
    )
    .unwrap();
    assert_eq!(
        circles(src),
        vec![vec!["c.rs", "heap/large.rs", "heap/mod.rs"]]
    );
}
