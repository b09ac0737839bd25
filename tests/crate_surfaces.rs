//! Every library crate has a front door: its `lib.rs` says what the crate offers, and
//! no module is public unless `lib.rs` lists it.
//!
//! The rule. A library crate's modules are private, and what its users need is
//! re-exported at its root by a documented `pub use` list in `lib.rs` (as wasmi's is). A
//! module may stay public only where it is a namespace of its own (std/loom's `atomic`
//! beside std's, a set of functions read as `cpuclock::thread_cpu_time_ns`): `lib.rs`
//! then names it in one doc line,
//!
//! ```text
//! //! Public modules: `atomic`, `cell` (std's and loom's names side by side).
//! ```
//!
//! (`//! Public modules: none.` when there are none): the backticked names of that
//! sentence (up to its full stop, over as many doc lines as it takes) outside the
//! parentheses are the modules, a public module nested in a public one named by its path
//! (`trace::names`). This test fails when a crate has no
//! such line, when a `pub mod` reachable from the root is not named in it, or when the
//! line names a module that is not public (a stale list). A `pub mod` inside a private
//! module is not reachable and is not checked.
//!
//! [`PENDING`] holds the crates whose front doors are being built elsewhere; they are
//! reported, not failed, and the list empties when they are done.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Crates (by folder) whose front doors are still being built: reported, not failed.
const PENDING: &[&str] = &["interpreter"];

/// The folder of every library crate of the workspace (`fuzz/` is not one).
fn library_crates(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    if root.join("Cargo.toml").is_file() && root.join("src/lib.rs").is_file() {
        out.push(root.to_path_buf());
    }
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let skip = name.starts_with('.') || matches!(&*name, "target" | "src" | "fuzz");
        if e.path().is_dir() && !skip {
            library_crates(&e.path(), out);
        }
    }
}

/// `text` without its `//` comments (doc comments included).
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names of the `pub mod NAME` declarations of a module's text (file modules and
/// inline ones), each with whether it is inline (`pub mod NAME {`).
fn public_modules(text: &str) -> Vec<(String, bool)> {
    let code = without_comments(text);
    let mut out = Vec::new();
    for line in code.lines() {
        let Some(rest) = line.trim_start().strip_prefix("pub mod ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let inline = rest[name.len()..].trim_start().starts_with('{');
        out.push((name, inline));
    }
    out
}

/// The file of module `name` declared in the module file `parent` (`name.rs` or
/// `name/mod.rs` beside it, or in its folder when `parent` is not `lib.rs`/`mod.rs`).
fn module_file(parent: &Path, name: &str) -> Option<PathBuf> {
    let dir = match parent.file_name().and_then(|f| f.to_str()) {
        Some("lib.rs" | "mod.rs") => parent.parent()?.to_path_buf(),
        _ => parent.with_extension(""),
    };
    [
        dir.join(format!("{name}.rs")),
        dir.join(name).join("mod.rs"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// Every public module reachable from `file` through public modules, by path.
fn reachable(file: &Path, prefix: &str, out: &mut BTreeSet<String>) {
    let text = std::fs::read_to_string(file).unwrap();
    for (name, inline) in public_modules(&text) {
        let path = format!("{prefix}{name}");
        out.insert(path.clone());
        if !inline {
            if let Some(child) = module_file(file, &name) {
                reachable(&child, &format!("{path}::"), out);
            }
        }
    }
}

/// The modules `lib.rs` lists as public (`//! Public modules: ...`, the sentence up to
/// its first full stop outside parentheses and backticks, over as many doc lines as it
/// takes), or `None` when it has no such line.
fn listed(lib: &str) -> Option<BTreeSet<String>> {
    let mut lines = lib.lines().map(str::trim_start);
    let first = lines.find_map(|l| l.strip_prefix("//! Public modules:"))?;
    let mut sentence = first.to_owned();
    for l in lines.map_while(|l| l.strip_prefix("//!")) {
        sentence.push(' ');
        sentence.push_str(l);
    }
    // The names are the backticked words outside parentheses (the reasons).
    let (mut depth, mut quoted) = (0usize, false);
    let mut names = BTreeSet::new();
    let mut name = String::new();
    for c in sentence.chars() {
        match c {
            '`' if depth == 0 => {
                if quoted {
                    names.insert(std::mem::take(&mut name));
                }
                quoted = !quoted;
            }
            _ if quoted => name.push(c),
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '.' if depth == 0 => break,
            _ => {}
        }
    }
    Some(names)
}

/// What is wrong with the front door of the crate in `dir` (empty when nothing).
fn problems(dir: &Path) -> Vec<String> {
    let lib = dir.join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    let Some(listed) = listed(&text) else {
        return vec![format!(
            "{}: no `//! Public modules:` line in lib.rs",
            lib.display()
        )];
    };
    let mut public = BTreeSet::new();
    reachable(&lib, "", &mut public);
    let mut out: Vec<String> = public
        .difference(&listed)
        .map(|m| format!("{}: `pub mod {m}` is not listed as public", lib.display()))
        .collect();
    out.extend(listed.difference(&public).map(|m| {
        format!(
            "{}: lists `{m}`, which is not a public module",
            lib.display()
        )
    }));
    out
}

#[test]
fn every_library_crate_lists_its_public_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut crates = Vec::new();
    library_crates(root, &mut crates);
    assert!(crates.len() >= 10, "found only {crates:?}");
    let mut failures = Vec::new();
    for dir in &crates {
        let rel = dir
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let found = problems(dir);
        if PENDING.contains(&rel.as_str()) {
            if found.is_empty() {
                println!("{rel} passes: take it off PENDING");
            } else {
                println!("{rel} (pending): {} problems", found.len());
            }
            continue;
        }
        failures.extend(found);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_unlisted_public_module_and_a_stale_list_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("ns")).unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), "[package]\n").unwrap();
    let lib = |text: &str| std::fs::write(src.join("lib.rs"), text).unwrap();
    std::fs::write(src.join("inner.rs"), "pub fn f() {}\npub mod deep;\n").unwrap();
    std::fs::write(
        src.join("ns/mod.rs"),
        "pub mod leaf;\n// pub mod not_code;\n",
    )
    .unwrap();

    lib("mod inner;\npub use inner::f;\n");
    assert_eq!(problems(dir.path()).len(), 1, "no list at all");

    lib("//! Public modules: none.\nmod inner;\npub use inner::f;\n");
    assert!(
        problems(dir.path()).is_empty(),
        "a pub mod inside a private module is not reachable"
    );

    lib("//! Public modules: none.\npub mod inner;\n");
    let found = problems(dir.path());
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.iter().any(|p| p.contains("`pub mod inner`")));
    assert!(found.iter().any(|p| p.contains("`pub mod inner::deep`")));

    lib("//! Public modules: `ns` (a `namespace`. Still a reason),\n//! `ns::leaf` (its part).\npub mod ns;\n");
    assert!(
        problems(dir.path()).is_empty(),
        "code in the reasons is not a module"
    );

    lib("//! Public modules: `ns`, `gone` (a namespace).\n//! Not `listed`.\npub mod ns;\npub mod atomic {}\n");
    let found = problems(dir.path());
    assert!(
        found.iter().any(|p| p.contains("`pub mod ns::leaf`")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|p| p.contains("`pub mod atomic`")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|p| p.contains("lists `gone`")),
        "{found:?}"
    );
}
