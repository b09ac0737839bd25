//! Cold chunks through `marvin run`: a program's small objects, packed into chunks at the
//! background transition, saved and reclaimed, come back with their bytes; a chunk's
//! checkpoint damaged on disk ends the app with status 70 and an `error:` line naming
//! the chunk, never with wrong data.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

#[allow(dead_code)]
mod support;
use support::{live_checkpoints, program, text};

/// A hang guard, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(60);

const POLICY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/memory/quick_chunks.toml"
);

/// 600 byte arrays of 64 bytes (80 with their headers: small objects).
fn spawn(dir: &std::path::Path, stats: Option<&std::path::Path>) -> Child {
    let mut args = vec![
        "run".to_string(),
        program("hold.masm").display().to_string(),
        "-D".into(),
        "COUNT=600".into(),
        "-D".into(),
        "ARRAY_BYTES=64".into(),
        "-D".into(),
        "STRIDE=8".into(),
        "-D".into(),
        "SLEEP_MS=3000".into(),
        "--swap-dir".into(),
        dir.display().to_string(),
        "--policy".into(),
        POLICY.into(),
        "--lifecycle".into(),
        "bg@800ms,save@1000ms,reclaim@1400ms".into(),
    ];
    if let Some(p) = stats {
        args.push("--stats-json".into());
        args.push(p.display().to_string());
    }
    Command::new(env!("CARGO_BIN_EXE_marvin"))
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run marvin")
}

fn wait_bounded(mut child: Child) -> Output {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > PATIENCE {
            let _ = child.kill();
            panic!("the app did not end within {PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Waits until the swap file holds `n` or more checkpoints (the chunks, saved).
fn wait_for_chunks(child: &mut Child, file: &std::path::Path, n: usize) -> Vec<(u64, u64)> {
    let t0 = Instant::now();
    loop {
        let live = live_checkpoints(file);
        if live.len() >= n {
            return live.iter().map(|(at, h)| (*at, h.key)).collect();
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the app ended ({status}) before its chunks were saved");
        }
        assert!(t0.elapsed() < PATIENCE, "the chunks were never saved");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn small_objects_in_chunks_are_reclaimed_and_come_back_intact() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stats.json");
    let swap = dir.path().join("swap");
    std::fs::create_dir(&swap).unwrap();
    let out = wait_bounded(spawn(&swap, Some(&json)));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("ok"), "{stdout}");
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let chunks = &stats["swap"]["chunks"];
    // 600 arrays of 80 bytes: 48,000 bytes in 8 KiB chunks, all but a remainder.
    assert!(
        chunks["objects_chunked"].as_u64().unwrap() >= 580,
        "{chunks}"
    );
    assert!(chunks["chunk_faults"].as_u64().unwrap() > 0, "{chunks}");
    assert_eq!(stats["swap"]["gc_faults"].as_u64(), Some(0), "{stats}");
}

#[test]
fn a_damaged_chunk_checkpoint_ends_the_app_with_an_error_naming_the_chunk() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn(dir.path(), None);
    let file = dir.path().join("app");
    let live = wait_for_chunks(&mut child, &file, 5);
    let (at, key) = live[0];
    let at = at + marvin_swap::SLOT_HEADER_BYTES + 40;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&file)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x5a], at).unwrap();
    drop(f);
    assert!(
        child.try_wait().unwrap().is_none(),
        "the app ended before its chunk was damaged"
    );
    let out = wait_bounded(child);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(70), "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("error:") && l.contains(&format!("cold chunk {key}"))),
        "{stderr}"
    );
    let stdout = text(&out.stdout);
    assert!(
        !stdout.contains("ok") && !stdout.contains("verification failed"),
        "{stdout}"
    );
}
