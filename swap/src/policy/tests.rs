//! Tests of the policy trait's decisions and of the TOML form.

use super::*;

fn every_knob_changed() -> PolicyConfig {
    PolicyConfig {
        candidates: CandidateConfig {
            min_size_bytes: 4096,
            kinds: vec![CandidateKind::ByteArray],
        },
        coldness: ColdnessConfig {
            window_rounds: 2,
            cold_requires_unread: true,
        },
        saver: SaverConfig {
            foreground_period: Duration::from_millis(1500),
            background_period: Duration::from_secs(120),
            budget: Duration::from_micros(250),
            compress: Compression::Lz4,
        },
        working_set: WorkingSetConfig {
            foreground_period: Duration::from_millis(700),
            background_period: Duration::from_micros(1500),
        },
        reclaimer: ReclaimerConfig {
            victim_order: VictimOrder::LargestFirst,
            batch_bytes: ReclaimBatch::Bytes(1 << 20),
        },
        restore: RestoreConfig {
            mode: RestoreMode::OnDemand,
            prefetch_bytes: 0,
            page_min_bytes: 1 << 20,
        },
        compaction: CompactionConfig { threshold: 0.4 },
        chunks: crate::chunk_policy::ChunkConfig::default(),
    }
}

fn error_of(text: &str) -> String {
    PolicyConfig::from_toml_str(text)
        .expect_err("should be refused")
        .to_string()
}

#[test]
fn the_default_is_the_published_marvin_setting() {
    let p = PolicyConfig::default();
    assert!(p.is_candidate(ObjKind::IntArray, 2048));
    assert!(p.is_candidate(ObjKind::ByteArray, 4096));
    assert!(p.is_candidate(ObjKind::Instance, 2048));
    assert!(!p.is_candidate(ObjKind::IntArray, 2047), "below 2 KB");
    assert!(
        !p.is_candidate(ObjKind::RefArray, 1 << 20),
        "never reference arrays"
    );
    assert_eq!(p.saver_period(true), Duration::from_secs(5));
    assert_eq!(p.saver_period(false), Duration::from_secs(30));
    assert_eq!(p.saver_budget(), Duration::from_secs(1));
    assert_eq!(p.working_set_period(true), Duration::from_secs(5));
    assert_eq!(p.working_set_period(false), Duration::from_secs(30));
    assert_eq!(p.victim_order(), VictimOrder::Lru);
    assert_eq!(p.restore_mode(), RestoreMode::Eager);
    assert_eq!(p.launch_prefetch_bytes(), DEFAULT_LAUNCH_PREFETCH_BYTES);
    assert_eq!(p.compaction_threshold(), 0.25);
    assert_eq!(
        p.reclaim_batch_bytes(123_456_789),
        123_456_789,
        "as much as asked"
    );
}

#[test]
fn cold_means_not_written_in_the_window() {
    let p = PolicyConfig::default();
    assert!(p.is_cold(0b1111, 0b0000), "reads do not matter by default");
    assert!(!p.is_cold(0, 0b1000), "written four rounds ago: still warm");
    assert!(!p.is_cold(0, 0b0001));
    let mut q = p.clone();
    q.coldness.cold_requires_unread = true;
    assert!(!q.is_cold(0b0100, 0));
    assert!(q.is_cold(0, 0));
    q.coldness.window_rounds = 2;
    assert!(q.is_cold(0b1100, 0b1100), "only the last two rounds count");
    assert!(!q.is_cold(0b0010, 0));
}

#[test]
fn victims_exclude_the_foreground_and_follow_the_order() {
    let apps = [
        AppStanding {
            app: 1,
            foreground: false,
            last_foreground: 30,
            reclaimable_bytes: 10,
        },
        AppStanding {
            app: 2,
            foreground: true,
            last_foreground: 99,
            reclaimable_bytes: 1000,
        },
        AppStanding {
            app: 3,
            foreground: false,
            last_foreground: 10,
            reclaimable_bytes: 5,
        },
        AppStanding {
            app: 4,
            foreground: false,
            last_foreground: 20,
            reclaimable_bytes: 50,
        },
    ];
    let lru: Vec<u32> = PolicyConfig::default()
        .victims(&apps)
        .iter()
        .map(|a| a.app)
        .collect();
    assert_eq!(lru, [3, 4, 1]);
    let mut p = PolicyConfig::default();
    p.reclaimer.victim_order = VictimOrder::LargestFirst;
    let largest: Vec<u32> = p.victims(&apps).iter().map(|a| a.app).collect();
    assert_eq!(largest, [4, 1, 3]);
}

#[test]
fn a_batch_limit_caps_each_request() {
    let mut p = PolicyConfig::default();
    p.reclaimer.batch_bytes = ReclaimBatch::Bytes(100);
    assert_eq!(p.reclaim_batch_bytes(1000), 100);
    assert_eq!(p.reclaim_batch_bytes(10), 10);
}

#[test]
fn the_default_document_parses_back_to_the_default() {
    let text = PolicyConfig::default().to_toml_string();
    assert_eq!(
        PolicyConfig::from_toml_str(&text).unwrap(),
        PolicyConfig::default()
    );
    assert_eq!(
        PolicyConfig::from_toml_str("").unwrap(),
        PolicyConfig::default()
    );
}

#[test]
fn every_knob_round_trips_through_toml() {
    let changed = every_knob_changed();
    let text = changed.to_toml_string();
    let back = PolicyConfig::from_toml_str(&text).unwrap();
    assert_eq!(back, changed, "{text}");
    // Each field really differs from the default, so the round trip tested every knob.
    let d = PolicyConfig::default();
    assert_ne!(
        changed.candidates.min_size_bytes,
        d.candidates.min_size_bytes
    );
    assert_ne!(changed.candidates.kinds, d.candidates.kinds);
    assert_ne!(changed.coldness, d.coldness);
    assert_ne!(changed.coldness.window_rounds, d.coldness.window_rounds);
    assert_ne!(changed.saver.foreground_period, d.saver.foreground_period);
    assert_ne!(changed.saver.background_period, d.saver.background_period);
    assert_ne!(changed.saver.budget, d.saver.budget);
    assert_ne!(
        changed.working_set.foreground_period,
        d.working_set.foreground_period
    );
    assert_ne!(
        changed.working_set.background_period,
        d.working_set.background_period
    );
    assert_ne!(changed.reclaimer.victim_order, d.reclaimer.victim_order);
    assert_ne!(changed.reclaimer.batch_bytes, d.reclaimer.batch_bytes);
    assert_ne!(changed.restore, d.restore);
    assert_ne!(changed.compaction, d.compaction);
}

#[test]
fn every_key_in_the_document_has_a_comment_above_it() {
    let text = PolicyConfig::default().to_toml_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut keys = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.contains(" = ") && !line.starts_with('#') {
            keys += 1;
            let mut j = i;
            while j > 0 && lines[j - 1].contains(" = ") && !lines[j - 1].starts_with('#') {
                j -= 1; // keys documented together (foreground/background pairs)
            }
            assert!(
                j > 0 && lines[j - 1].starts_with('#'),
                "{line:?} is not documented"
            );
        }
    }
    // 16 knobs, and the 5 of `[chunks]`.
    assert_eq!(keys, 21, "every knob appears once");
}

#[test]
fn a_partial_document_keeps_the_other_defaults() {
    let p = PolicyConfig::from_toml_str(
        "[saver]\nbudget = \"0.2s\"\n[restore]\nmode = \"on-demand\"\n",
    )
    .unwrap();
    assert_eq!(p.saver.budget, Duration::from_millis(200));
    assert_eq!(p.restore.mode, RestoreMode::OnDemand);
    assert_eq!(p.saver.foreground_period, Duration::from_secs(5));
    assert_eq!(p.candidates, CandidateConfig::default());
}

#[test]
fn unknown_keys_are_named() {
    let e = error_of("[saver]\nbudget = \"1s\"\nturbo = true\n");
    assert!(e.contains("turbo"), "{e}");
    let e = error_of("[warp_drive]\nx = 1\n");
    assert!(e.contains("warp_drive"), "{e}");
    let e = error_of("threshold = 0.5\n");
    assert!(e.contains("threshold"), "{e}");
}

#[test]
fn wrong_types_are_named_with_their_table() {
    let e = error_of("[saver]\nforeground_period = \"5s\"\nbudget = true\n");
    assert!(e.contains("saver.budget") && e.contains("line 3"), "{e}");
    let e = error_of("[compaction]\nthreshold = \"a quarter\"\n");
    assert!(e.contains("compaction.threshold"), "{e}");
    let e = error_of("[restore]\nmode = \"lazy\"\n");
    assert!(e.contains("restore.mode"), "{e}");
    let e = error_of("[restore]\nprefetch_bytes = 1000000000000\n");
    assert!(
        e.contains("restore.prefetch_bytes") && e.contains("at most"),
        "{e}"
    );
    let e = error_of("[restore]\npage_min_bytes = 4096\n");
    assert!(
        e.contains("restore.page_min_bytes") && e.contains("checksum per page"),
        "{e}"
    );
    let e = error_of("[working_set]\nbackground_period = \"30 parsecs\"\n");
    assert!(
        e.contains("working_set.background_period") && e.contains("unit"),
        "{e}"
    );
    let e = error_of("[saver]\nbudget = 200\n");
    assert!(
        e.contains("saver.budget") && e.contains("\"200ms\"") && e.contains("no unit"),
        "a bare number is no duration: {e}"
    );
    let e = error_of("[saver]\nbudget = \"200\"\n");
    assert!(e.contains("saver.budget") && e.contains("200ms"), "{e}");
    let e = error_of("[saver]\nbudget = -1\n");
    assert!(e.contains("saver.budget") && e.contains("negative"), "{e}");
    let e = error_of("[candidates]\nmin_size_bytes = -5\n");
    assert!(e.contains("candidates.min_size_bytes"), "{e}");
}

#[test]
fn compression_is_named_and_a_bad_codec_is_refused() {
    assert_eq!(PolicyConfig::default().compression(), Compression::None);
    let p = PolicyConfig::from_toml_str("[saver]\ncompress = \"lz4\"\n").unwrap();
    assert_eq!(p.compression(), Compression::Lz4);
    let p = PolicyConfig::from_toml_str("[saver]\ncompress = \"none\"\n").unwrap();
    assert_eq!(p.compression(), Compression::None);
    for bad in ["\"zstd\"", "\"LZ4\"", "true", "4"] {
        let e = error_of(&format!("[saver]\nbudget = \"1s\"\ncompress = {bad}\n"));
        assert!(
            e.contains("saver.compress") && e.contains("line 3"),
            "{bad}: {e}"
        );
    }
    let e = error_of("[saver]\ncompress = \"zstd\"\n");
    assert!(
        e.contains("lz4") && e.contains("none"),
        "names the codecs: {e}"
    );
}

#[test]
fn out_of_range_values_are_named() {
    for (text, key) in [
        ("[compaction]\nthreshold = 1.5\n", "compaction.threshold"),
        ("[compaction]\nthreshold = 0.0\n", "compaction.threshold"),
        ("[compaction]\nthreshold = nan\n", "compaction.threshold"),
        (
            "[saver]\nbackground_period = \"0s\"\n",
            "saver.background_period",
        ),
        (
            "[working_set]\nforeground_period = 0\n",
            "working_set.foreground_period",
        ),
        ("[coldness]\nwindow_rounds = 5\n", "coldness.window_rounds"),
        ("[coldness]\nwindow_rounds = 0\n", "coldness.window_rounds"),
        (
            "[candidates]\nkinds = [\"instance\", \"ref-array\"]\n",
            "candidates.kinds",
        ),
        ("[reclaimer]\nbatch_bytes = 0\n", "reclaimer.batch_bytes"),
        // Below the large-object threshold nothing is ever stubbed: a knob that would do
        // nothing is an error.
        (
            "[candidates]\nmin_size_bytes = 64\n",
            "candidates.min_size_bytes",
        ),
        (
            "[candidates]\nmin_size_bytes = 2047\n",
            "candidates.min_size_bytes",
        ),
    ] {
        let e = error_of(text);
        assert!(e.contains(key), "{text:?}: {e}");
    }
}

#[test]
fn broken_toml_is_a_syntax_error_with_a_position() {
    let e = PolicyConfig::from_toml_str("[saver\nbudget = ").unwrap_err();
    assert!(
        matches!(e, PolicyError::Syntax { .. } | PolicyError::Key { .. }),
        "{e}"
    );
    assert!(
        e.to_string().contains("line") || e.to_string().contains("saver"),
        "{e}"
    );
}

#[test]
fn scaling_multiplies_every_period_and_the_budget() {
    let p = PolicyConfig::default().scaled(0.1).unwrap();
    assert_eq!(p.saver_period(true), Duration::from_millis(500));
    assert_eq!(p.saver_period(false), Duration::from_secs(3));
    assert_eq!(p.saver_budget(), Duration::from_millis(100));
    assert_eq!(p.working_set_period(true), Duration::from_millis(500));
    assert_eq!(p.working_set_period(false), Duration::from_secs(3));
    assert_eq!(p.compaction_threshold(), 0.25, "not a period");
    let back = PolicyConfig::from_toml_str(&p.to_toml_string()).unwrap();
    assert_eq!(back, p);
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(
            matches!(
                PolicyConfig::default().scaled(bad),
                Err(PolicyError::BadScale { .. })
            ),
            "{bad}"
        );
    }
    let e = PolicyConfig::default().scaled(1e300).unwrap_err();
    assert!(
        e.to_string().contains("`saver.foreground_period`"),
        "overflow is an error naming the period, not a panic: {e}"
    );
}

#[test]
fn a_period_longer_than_a_day_is_refused_naming_its_key() {
    let e =
        PolicyConfig::from_toml_str("[saver]\nbudget = \"18446744073709551615s\"\n").unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("`saver.budget`") && text.contains("at most 24h"),
        "{text}"
    );
    assert!(!text.contains("time scale"), "{text}");
    let day = PolicyConfig::from_toml_str("[working_set]\nbackground_period = \"24h\"\n").unwrap();
    assert!(day.scaled(1.0).is_ok() && day.scaled(1000.0).is_ok());
}

#[test]
fn policy_files_are_read_and_missing_ones_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.toml");
    std::fs::write(&path, every_knob_changed().to_toml_string()).unwrap();
    assert_eq!(
        PolicyConfig::from_file(&path).unwrap(),
        every_knob_changed()
    );
    std::fs::write(&path, "[compaction]\nthreshold = 2\n").unwrap();
    let e = PolicyConfig::from_file(&path).unwrap_err().to_string();
    assert!(
        e.contains("policy.toml") && e.contains("compaction.threshold"),
        "{e}"
    );
    let e = PolicyConfig::from_file(&dir.path().join("none.toml")).unwrap_err();
    assert!(matches!(e, PolicyError::Io { .. }), "{e}");
}

#[test]
fn min_size_at_the_large_object_threshold_is_accepted() {
    let p = PolicyConfig::from_toml_str("[candidates]\nmin_size_bytes = 2048\n").unwrap();
    assert_eq!(
        p.candidates.min_size_bytes,
        marvin_runtime::LARGE_OBJECT_BYTES as u64
    );
}

#[test]
fn a_period_under_a_millisecond_is_refused_naming_its_key_and_scaling_stops_there() {
    for key in [
        "saver.foreground_period",
        "saver.background_period",
        "working_set.foreground_period",
        "working_set.background_period",
    ] {
        let (table, name) = key.split_once('.').unwrap();
        for short in ["1ns", "999us"] {
            let e = error_of(&format!("[{table}]\n{name} = \"{short}\"\n"));
            assert!(
                e.contains(key) && e.contains("at least 1ms") && e.contains(short),
                "{key} = {short}: {e}"
            );
        }
        let ok = PolicyConfig::from_toml_str(&format!("[{table}]\n{name} = \"1ms\"\n"));
        assert!(ok.is_ok(), "{key} = 1ms: {ok:?}");
    }
    // The saver's budget is a time limit, not a period: any length above zero.
    assert!(PolicyConfig::from_toml_str("[saver]\nbudget = \"1ns\"\n").is_ok());
    // However small the time scale, no period becomes shorter than the floor.
    let tiny = PolicyConfig::default().scaled(1e-12).unwrap();
    for foreground in [true, false] {
        assert_eq!(tiny.saver_period(foreground), MIN_PERIOD);
        assert_eq!(tiny.working_set_period(foreground), MIN_PERIOD);
    }
    assert!(tiny.saver_budget() > Duration::ZERO);
}

#[test]
fn a_policy_file_that_is_not_utf8_is_a_bad_policy_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("latin1.toml");
    std::fs::write(&path, b"[saver]\n# caf\xe9\nbudget = \"1s\"\n").unwrap();
    let e = PolicyConfig::from_file(&path).unwrap_err();
    assert!(matches!(e, PolicyError::Syntax { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("latin1.toml") && text.contains("not UTF-8") && text.contains("byte 13"),
        "{text}"
    );
}
