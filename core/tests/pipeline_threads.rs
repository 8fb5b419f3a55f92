//! Stopping a run mid-epoch stops its loader: the process is back to the
//! threads it had within a second. Its own test binary, so no other test's
//! threads come and go meanwhile.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use dlsys_core::nn::data;
use dlsys_core::pipeline::{PipelineSettings, train_through};

/// The process's thread count, from the kernel.
#[cfg(target_os = "linux")]
fn threads() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn stopping_mid_epoch_stops_the_workers() {
    let data = Arc::new(data::load_packed("digits").unwrap());
    let baseline = threads();
    let settings = PipelineSettings {
        workers: 4,
        prefetch: 4,
        batch: 50,
        // Slow reads keep the workers busy when the stop comes.
        extra_io_us: 2_000,
        ..PipelineSettings::default()
    };
    let mut during = 0;
    let mut steps = 0;
    let run = train_through(data, &settings, 30, Default::default(), &mut |_| {
        during = threads();
        steps += 1;
        steps < 3
    })
    .unwrap();
    assert_eq!(
        run.records.len(),
        3,
        "stopped after three of the epoch's batches"
    );
    assert!(
        during >= baseline + 4,
        "the four workers ran: {during} threads, {baseline} before"
    );
    let stopped = Instant::now();
    while threads() > baseline && stopped.elapsed().as_secs_f64() < 1.0 {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(threads(), baseline, "threads left after the stop");
    // A stop while the trainer waits: every batch takes 2.5 s to read, so
    // the trainer is blocked on its queue when the flag goes up.
    let stop = Arc::new(AtomicBool::new(false));
    let slow = PipelineSettings {
        workers: 2,
        prefetch: 1,
        batch: 50,
        extra_io_us: 50_000,
        ..PipelineSettings::default()
    };
    let raised = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, Ordering::Relaxed);
            Instant::now()
        })
    };
    let data = Arc::new(data::load_packed("digits").unwrap());
    let run = train_through(data, &slow, 10, stop, &mut |_| true).unwrap();
    let returned = Instant::now();
    let raised = raised.join().unwrap();
    assert!(run.records.is_empty(), "no batch was ready");
    let took = returned.duration_since(raised).as_secs_f64();
    assert!(took < 1.0, "the run went on {took} s after the stop");
    assert_eq!(
        threads(),
        baseline,
        "threads left after the stop while waiting"
    );
}
