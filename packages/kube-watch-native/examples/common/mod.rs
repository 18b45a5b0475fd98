//! What the cost examples share: the strip of the fleet benchmark's objects, and the median of
//! a stage's rounds.

use kube_watch_native::field_path;
use kube_watch_native::projection::Projection;

/// The strip the fleet benchmark measures: managedFields and the last-applied annotation.
pub fn fleet_strip() -> Projection {
    let paths: Vec<Vec<String>> = [
        "metadata.managedFields",
        "metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']",
    ]
    .iter()
    .map(|p| field_path::parse(p).unwrap())
    .collect();
    Projection::strip(&paths)
}

/// The middle value of `xs` (the upper middle of an even count).
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}
