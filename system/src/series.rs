//! Time series of a memory-pressure run: one sample per tick (apps alive and active,
//! kills, restarts, accounted and resident memory, the resident memory by kind, swap
//! traffic) for each policy, and the CSV file that holds them all.
//!
//! The CSV has one header line ([`CSV_HEADER`]) and one row per sample; rows of one
//! policy's repetition follow each other in time order, runs in the order given. The
//! `policy` column holds the run's column label (`marvin:NAME` for a variant) and
//! `rep` its repetition. [`read_csv`] reads the file back by column name (for
//! `marvin compare`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Columns of the CSV written by [`write_csv`], in order.
pub const CSV_HEADER: &str = "policy,t_s,alive,active,kills,restarts,accounted_bytes,rss_bytes,\
rss_anon_bytes,rss_file_bytes,rss_shmem_bytes,swap_written,swap_read,rep,after_gap";

/// One sample of a policy's run.
#[derive(Clone, Debug, Default, serde::Serialize, PartialEq)]
pub struct SeriesPoint {
    /// Seconds since the policy's run started.
    pub t_s: f64,
    /// Apps alive.
    pub alive: u32,
    /// Apps active (rounds less than 7 s apart, scaled).
    pub active: u32,
    /// Apps killed so far (the process mode: every death, whatever killed the app).
    pub kills: u64,
    /// Apps restarted so far.
    pub restarts: u64,
    /// Resident app memory as the System accounts it.
    pub accounted_bytes: u64,
    /// The process's resident memory from /proc (`VmRSS`).
    pub rss_bytes: u64,
    /// Of which private anonymous pages (`RssAnon`: heaps, stacks, tables).
    pub rss_anon_bytes: u64,
    /// Of which mapped pages of regular files (`RssFile`: swap files, reclaim tables,
    /// the executable).
    pub rss_file_bytes: u64,
    /// Of which shared memory (`RssShmem`: tmpfs files, memfds).
    pub rss_shmem_bytes: u64,
    /// Bytes written to swap files so far.
    pub swap_written: u64,
    /// Bytes read back from swap files so far.
    pub swap_read: u64,
    /// No sample was taken for more than twice the sampling period before this one (the
    /// sampler was held up): the figures break their lines here rather than draw a
    /// straight one across the missing samples.
    pub after_gap: bool,
}

/// The samples of one policy's run, in time order.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PolicySeries {
    /// The policy's name (`kill`, `page-swap`, `marvin`), or its column label.
    pub policy: String,
    /// The repetition (0-based).
    pub rep: u32,
    /// Samples in time order.
    pub points: Vec<SeriesPoint>,
}

impl PolicySeries {
    /// Appends sample `p`, marking it [`SeriesPoint::after_gap`] when it came more than
    /// twice `period` after the one before.
    pub fn push_sample(&mut self, mut p: SeriesPoint, period: std::time::Duration) {
        if let Some(last) = self.points.last() {
            p.after_gap = p.t_s - last.t_s > 2.0 * period.as_secs_f64();
        }
        self.points.push(p);
    }
}

/// Writes every policy's samples to one CSV file at `path` (created or truncated):
/// the [`CSV_HEADER`] line, then one row per sample.
pub fn write_csv(path: &Path, series: &[PolicySeries]) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    write_csv_to(&mut out, series)?;
    out.flush()
}

/// Writes the CSV text of `series` to `out`.
fn write_csv_to(out: &mut impl Write, series: &[PolicySeries]) -> std::io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    for policy_series in series {
        let policy = csv_field(&policy_series.policy);
        let rep = policy_series.rep;
        for p in &policy_series.points {
            writeln!(
                out,
                "{policy},{},{},{},{},{},{},{},{},{},{},{},{},{rep},{}",
                p.t_s,
                p.alive,
                p.active,
                p.kills,
                p.restarts,
                p.accounted_bytes,
                p.rss_bytes,
                p.rss_anon_bytes,
                p.rss_file_bytes,
                p.rss_shmem_bytes,
                p.swap_written,
                p.swap_read,
                u8::from(p.after_gap)
            )?;
        }
    }
    Ok(())
}

/// Reads a CSV written by [`write_csv`] back into series, one per (policy, rep) in
/// order of first appearance. Columns are found by name; a file without `rep` (written
/// before repetitions) is repetition 0. Errors name the file and line.
pub fn read_csv(path: &Path) -> anyhow::Result<Vec<PolicySeries>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    parse_csv(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn parse_csv(text: &str) -> Result<Vec<PolicySeries>, String> {
    let mut lines = text.lines();
    let header: Vec<String> = split_csv_line(lines.next().ok_or("empty file")?);
    let col = |name: &str| header.iter().position(|h| h == name);
    let need = |name: &str| col(name).ok_or_else(|| format!("no column {name}"));
    let policy = need("policy")?;
    let rep = col("rep");
    let after_gap = col("after_gap");
    let cols = [
        need("t_s")?,
        need("alive")?,
        need("active")?,
        need("kills")?,
        need("restarts")?,
        need("accounted_bytes")?,
        need("rss_bytes")?,
        need("rss_anon_bytes")?,
        need("rss_file_bytes")?,
        need("rss_shmem_bytes")?,
        need("swap_written")?,
        need("swap_read")?,
    ];
    let mut out: Vec<PolicySeries> = Vec::new();
    for (i, line) in lines.enumerate() {
        if line.is_empty() {
            continue;
        }
        let f = split_csv_line(line);
        let line_no = i + 2;
        let get = |c: usize| -> Result<&str, String> {
            f.get(c)
                .map(String::as_str)
                .ok_or_else(|| format!("line {line_no}: too few fields"))
        };
        let int = |c: usize| -> Result<u64, String> {
            let v = get(c)?;
            v.parse()
                .map_err(|_| format!("line {line_no}: '{v}' is not a count"))
        };
        let small = |c: usize| -> Result<u32, String> {
            u32::try_from(int(c)?).map_err(|_| format!("line {line_no}: value too large"))
        };
        let t = get(cols[0])?;
        let point = SeriesPoint {
            t_s: t
                .parse()
                .map_err(|_| format!("line {line_no}: '{t}' is not a time"))?,
            alive: small(cols[1])?,
            active: small(cols[2])?,
            kills: int(cols[3])?,
            restarts: int(cols[4])?,
            accounted_bytes: int(cols[5])?,
            rss_bytes: int(cols[6])?,
            rss_anon_bytes: int(cols[7])?,
            rss_file_bytes: int(cols[8])?,
            rss_shmem_bytes: int(cols[9])?,
            swap_written: int(cols[10])?,
            swap_read: int(cols[11])?,
            after_gap: match after_gap {
                Some(c) => int(c)? != 0,
                None => false,
            },
        };
        let label = get(policy)?.to_owned();
        let r = match rep {
            Some(c) => small(c)?,
            None => 0,
        };
        match out.iter_mut().find(|s| s.policy == label && s.rep == r) {
            Some(s) => s.points.push(point),
            None => out.push(PolicySeries {
                policy: label,
                rep: r,
                points: vec![point],
            }),
        }
    }
    Ok(out)
}

/// Splits one CSV line into fields, undoing RFC 4180 quoting.
fn split_csv_line(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let last = fields.last_mut().expect("never empty");
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                last.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(String::new()),
            (c, _) => last.push(c),
        }
    }
    fields
}

/// Quotes a text field when it holds a comma, a quote or a line break (RFC 4180).
fn csv_field(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\"")).into()
    } else {
        text.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(i: u32) -> SeriesPoint {
        SeriesPoint {
            t_s: f64::from(i) * 0.25 + 0.125,
            alive: 10 + i,
            active: 3 + i,
            kills: u64::from(i) * 2,
            restarts: u64::from(i),
            accounted_bytes: 1 << 30 | u64::from(i),
            rss_bytes: u64::MAX - u64::from(i),
            rss_anon_bytes: 3 << 20 | u64::from(i),
            rss_file_bytes: 2 << 20 | u64::from(i),
            rss_shmem_bytes: 4096 * u64::from(i),
            swap_written: 4096 * u64::from(i),
            swap_read: 512 * u64::from(i),
            after_gap: i % 2 == 1,
        }
    }

    fn parse_line(line: &str) -> Vec<String> {
        split_csv_line(line)
    }

    fn parse_point(fields: &[String]) -> SeriesPoint {
        SeriesPoint {
            t_s: fields[1].parse().unwrap(),
            alive: fields[2].parse().unwrap(),
            active: fields[3].parse().unwrap(),
            kills: fields[4].parse().unwrap(),
            restarts: fields[5].parse().unwrap(),
            accounted_bytes: fields[6].parse().unwrap(),
            rss_bytes: fields[7].parse().unwrap(),
            rss_anon_bytes: fields[8].parse().unwrap(),
            rss_file_bytes: fields[9].parse().unwrap(),
            rss_shmem_bytes: fields[10].parse().unwrap(),
            swap_written: fields[11].parse().unwrap(),
            swap_read: fields[12].parse().unwrap(),
            after_gap: fields[14] == "1",
        }
    }

    #[test]
    fn csv_round_trip_keeps_columns_and_values() {
        let series = vec![
            PolicySeries {
                policy: "kill".into(),
                rep: 0,
                points: (0..3).map(point).collect(),
            },
            PolicySeries {
                policy: "page-swap".into(),
                rep: 0,
                points: vec![],
            },
            PolicySeries {
                policy: "marvin".into(),
                rep: 1,
                points: (5..7).map(point).collect(),
            },
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pressure.csv");
        write_csv(&path, &series).unwrap();

        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            parse_line(lines.next().unwrap()),
            [
                "policy",
                "t_s",
                "alive",
                "active",
                "kills",
                "restarts",
                "accounted_bytes",
                "rss_bytes",
                "rss_anon_bytes",
                "rss_file_bytes",
                "rss_shmem_bytes",
                "swap_written",
                "swap_read",
                "rep",
                "after_gap"
            ]
        );
        let rows: Vec<Vec<String>> = lines.map(parse_line).collect();
        assert!(rows.iter().all(|row| row.len() == 15));
        assert!(rows
            .iter()
            .all(|row| row[13] == if row[0] == "marvin" { "1" } else { "0" }));
        let expected: Vec<(String, SeriesPoint)> = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| (s.policy.clone(), p.clone())))
            .collect();
        let read_back: Vec<(String, SeriesPoint)> = rows
            .iter()
            .map(|row| (row[0].clone(), parse_point(row)))
            .collect();
        assert_eq!(read_back, expected);

        // read_csv gives the same series back (those with samples).
        let again = read_csv(&path).unwrap();
        assert_eq!(again.len(), 2);
        assert_eq!((again[1].policy.as_str(), again[1].rep), ("marvin", 1));
        assert_eq!(again[1].points, series[2].points);
        assert_eq!(again[0].points, series[0].points);
    }

    #[test]
    fn a_late_sample_is_marked_and_kept_through_the_csv() {
        let period = std::time::Duration::from_millis(250);
        let mut s = PolicySeries::default();
        for t in [0.0, 0.25, 0.5, 3.0, 3.25] {
            s.push_sample(
                SeriesPoint {
                    t_s: t,
                    ..SeriesPoint::default()
                },
                period,
            );
        }
        let gaps: Vec<bool> = s.points.iter().map(|p| p.after_gap).collect();
        assert_eq!(gaps, [false, false, false, true, false]);
        let mut text = Vec::new();
        write_csv_to(&mut text, &[s.clone()]).unwrap();
        let again = parse_csv(&String::from_utf8(text).unwrap()).unwrap();
        assert_eq!(again[0].points, s.points);
        // A file written before the column reads as without gaps.
        let old = "policy,t_s,alive,active,kills,restarts,accounted_bytes,rss_bytes,\
rss_anon_bytes,rss_file_bytes,rss_shmem_bytes,swap_written,swap_read,rep\nkill,1,0,0,0,0,0,0,0,0,0,0,0,0\n";
        assert!(!parse_csv(old).unwrap()[0].points[0].after_gap);
    }

    #[test]
    fn read_csv_rejects_bad_files_by_line() {
        assert!(parse_csv("").unwrap_err().contains("empty"));
        assert!(parse_csv("policy,t_s\n").unwrap_err().contains("alive"));
        let bad = format!("{CSV_HEADER}\nkill,0.5,x,1,0,0,0,0,0,0,0,0,0,0\n");
        let e = parse_csv(&bad).unwrap_err();
        assert!(e.contains("line 2") && e.contains("'x'"), "{e}");
    }

    #[test]
    fn policy_names_with_separators_are_quoted() {
        let series = [PolicySeries {
            policy: "odd, \"name\"".into(),
            rep: 0,
            points: vec![point(1)],
        }];
        let mut text = Vec::new();
        write_csv_to(&mut text, &series).unwrap();
        let text = String::from_utf8(text).unwrap();
        let row = parse_line(text.lines().nth(1).unwrap());
        assert_eq!(row.len(), 15);
        assert_eq!(row[0], "odd, \"name\"");
        assert_eq!(parse_point(&row), point(1));
    }

    #[test]
    fn csv_to_a_missing_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("pressure.csv");
        assert!(write_csv(&path, &[]).is_err());
    }
}
