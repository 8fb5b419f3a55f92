//! The algorithms side by side for one gradient and one link: steps, bytes
//! from the schedules, time from the closed form and from the simulation.

use serde::Serialize;

use super::clock::{Link, simulate};
use super::schedule::Schedule;
use super::{Algorithm, CollectiveError, Op};

/// One algorithm's all-reduce of the gradient.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub algorithm: Algorithm,
    pub steps: usize,
    pub messages: u64,
    /// The most any worker (not the server) sends.
    pub worker_max_bytes: u64,
    /// The most any node sends and receives together.
    pub busiest_bytes: u64,
    pub total_bytes: u64,
    pub closed_s: f64,
    pub simulated_s: f64,
}

/// Every algorithm's all-reduce of `elements` f32 values over `workers`.
pub fn compare(workers: usize, elements: usize, link: Link) -> Result<Vec<Row>, CollectiveError> {
    Algorithm::ALL
        .iter()
        .map(|&algorithm| row(algorithm, workers, elements, link))
        .collect()
}

/// One algorithm's row.
pub fn row(
    algorithm: Algorithm,
    workers: usize,
    elements: usize,
    link: Link,
) -> Result<Row, CollectiveError> {
    let schedule = Schedule::new(algorithm, Op::AllReduce, workers, elements)?;
    let traffic = schedule.traffic(4);
    Ok(Row {
        algorithm,
        steps: schedule.steps.len(),
        messages: traffic.iter().map(|t| t.sent_messages).sum(),
        worker_max_bytes: traffic[..workers]
            .iter()
            .map(|t| t.sent_bytes)
            .max()
            .unwrap_or(0),
        busiest_bytes: traffic
            .iter()
            .map(|t| t.sent_bytes + t.received_bytes)
            .max()
            .unwrap_or(0),
        total_bytes: traffic.iter().map(|t| t.sent_bytes).sum(),
        closed_s: algorithm.cost(workers).time(4.0 * elements as f64, link),
        simulated_s: simulate(&schedule, 4, link).end_s,
    })
}
