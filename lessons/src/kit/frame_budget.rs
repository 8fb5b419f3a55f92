//! How long to work inside one frame when the work runs in the frame loop
//! (training on the web, where there are no threads). A fixed slice starves
//! the work when frames are slow: with 12 ms of training per frame and a
//! software renderer taking 100 ms to draw one, training gets a tenth of the
//! time. The budget measures what the rest of the frame costs and gives the
//! work three times that (at least `MIN`, at most `MAX`, so the page still
//! draws a few times a second), so the work gets about three quarters of
//! the time whatever the renderer.

use web_time::{Duration, Instant};

/// The least a slice gets: a fast renderer's frame leaves room for this much.
pub const MIN: Duration = Duration::from_millis(12);
/// The most: the page still draws about four times a second.
pub const MAX: Duration = Duration::from_millis(250);
/// Work per unit of the frame's other cost.
const SHARE: u32 = 3;

/// The slice for this frame, from the time since the last slice ended.
#[derive(Debug, Default, Clone)]
pub struct FrameBudget {
    last_end: Option<Instant>,
}

impl FrameBudget {
    /// Runs `work` for this frame's slice (passed to it) and notes when it ended.
    pub fn run<R>(&mut self, work: impl FnOnce(Duration) -> R) -> R {
        let result = work(self.begin());
        self.end();
        result
    }

    /// This frame's slice, for work that runs in a loop of its own; call
    /// [`FrameBudget::end`] when it stops.
    pub fn begin(&self) -> Duration {
        self.slice(Instant::now())
    }

    /// The frame's work has stopped: what follows until the next slice is
    /// the rest of the frame.
    pub fn end(&mut self) {
        self.last_end = Some(Instant::now());
    }

    /// Forgets the last slice (work paused: the gap is not the frame's cost).
    pub fn pause(&mut self) {
        self.last_end = None;
    }

    fn slice(&self, now: Instant) -> Duration {
        let outside = self.last_end.map_or(Duration::ZERO, |end| now - end);
        (outside * SHARE).clamp(MIN, MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_frame_gets_a_longer_slice_within_the_bounds() {
        let now = Instant::now();
        let mut budget = FrameBudget::default();
        assert_eq!(budget.slice(now), MIN, "the first slice");
        budget.last_end = Some(now);
        assert_eq!(
            budget.slice(now + Duration::from_millis(2)),
            MIN,
            "a fast frame"
        );
        assert_eq!(
            budget.slice(now + Duration::from_millis(40)),
            Duration::from_millis(120),
            "three times a 40 ms frame"
        );
        assert_eq!(
            budget.slice(now + Duration::from_secs(5)),
            MAX,
            "a hidden window"
        );
        budget.pause();
        assert_eq!(budget.slice(now + Duration::from_secs(5)), MIN);
    }
}
