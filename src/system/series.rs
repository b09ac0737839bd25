//! The pressure experiment's time series (placeholder until the CSV writer lands).

#[derive(Clone, Debug, Default, serde::Serialize, PartialEq)]
pub struct SeriesPoint {
    pub t_s: f64,
    pub alive: u32,
    pub active: u32,
    pub kills: u64,
    pub restarts: u64,
    pub accounted_bytes: u64,
    pub rss_bytes: u64,
    pub swap_written: u64,
    pub swap_read: u64,
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PolicySeries {
    pub policy: String,
    pub points: Vec<SeriesPoint>,
}
