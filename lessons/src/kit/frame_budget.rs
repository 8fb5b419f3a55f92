//! How long to work inside one frame when the work runs in the frame loop
//! (training on the web, where there are no threads). A fixed slice starves
//! the work when frames are slow: with 12 ms of training per frame and a
//! software renderer taking 100 ms to draw one, training gets a tenth of the
//! time. A budget measures what the rest of the frame costs — the time since
//! its last slice, less what every other budget's work took meanwhile — and
//! the jobs working now share three times that (each at least `MIN`, at most
//! `MAX`, so the page still draws a few times a second): together they get
//! about three quarters of the time whatever the renderer, however many run.

use std::cell::RefCell;

use web_time::{Duration, Instant};

/// The least a slice gets: a fast renderer's frame leaves room for this much.
pub const MIN: Duration = Duration::from_millis(12);
/// The most: the page still draws about four times a second.
pub const MAX: Duration = Duration::from_millis(250);
/// Work per unit of the frame's other cost, shared by the working jobs.
const SHARE: u32 = 3;
/// A job whose last slice ended longer ago than this is not working now.
const ACTIVE: Duration = Duration::from_secs(1);

/// What every budget of this thread (the frame loop's) has done.
#[derive(Default)]
struct Ledger {
    /// All the work done by every budget, summed.
    worked: Duration,
    /// Each working budget's id and the end of its last slice.
    last_end: Vec<(u64, Instant)>,
    next_id: u64,
}

thread_local! {
    static LEDGER: RefCell<Ledger> = RefCell::new(Ledger::default());
}

/// One job's budget: its slices, measured against the frame.
#[derive(Debug, Default, Clone)]
pub struct FrameBudget {
    id: Option<u64>,
    /// When this job's last slice ended, and the ledger's work then.
    last_end: Option<(Instant, Duration)>,
    began: Option<Instant>,
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
    pub fn begin(&mut self) -> Duration {
        let now = Instant::now();
        self.began = Some(now);
        LEDGER.with_borrow(|ledger| {
            let active = ledger
                .last_end
                .iter()
                .filter(|(id, end)| {
                    Some(*id) != self.id && now.saturating_duration_since(*end) < ACTIVE
                })
                .count()
                + 1;
            slice(self.last_end, ledger.worked, now, active)
        })
    }

    /// The frame's work has stopped: what follows until the next slice is
    /// the rest of the frame.
    pub fn end(&mut self) {
        let now = Instant::now();
        let spent = self.began.take().map_or(Duration::ZERO, |b| now - b);
        LEDGER.with_borrow_mut(|ledger| {
            let id = *self.id.get_or_insert_with(|| {
                ledger.next_id += 1;
                ledger.next_id
            });
            ledger.worked += spent;
            // Budgets dropped with their job leave no entry behind for long.
            ledger.last_end.retain(|(other, end)| {
                *other != id && now.saturating_duration_since(*end) < ACTIVE
            });
            ledger.last_end.push((id, now));
            self.last_end = Some((now, ledger.worked));
        });
    }

    /// Forgets the last slice (work paused: the gap is not the frame's cost).
    pub fn pause(&mut self) {
        self.last_end = None;
        self.began = None;
        if let Some(id) = self.id {
            LEDGER.with_borrow_mut(|ledger| ledger.last_end.retain(|(other, _)| *other != id));
        }
    }
}

/// A job's slice at `now`: three times the frame's cost outside all work
/// since its last slice, shared by the `active` jobs, within the bounds.
fn slice(
    last_end: Option<(Instant, Duration)>,
    worked: Duration,
    now: Instant,
    active: usize,
) -> Duration {
    let outside = last_end.map_or(Duration::ZERO, |(end, worked_then)| {
        now.saturating_duration_since(end)
            .saturating_sub(worked.saturating_sub(worked_then))
    });
    (outside * SHARE / active.max(1) as u32).clamp(MIN, MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_frame_gets_a_longer_slice_within_the_bounds() {
        let now = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(slice(None, ms(0), now, 1), MIN, "the first slice");
        let ended = Some((now, ms(500)));
        assert_eq!(slice(ended, ms(500), now + ms(2), 1), MIN, "a fast frame");
        assert_eq!(
            slice(ended, ms(500), now + ms(40), 1),
            ms(120),
            "three times a 40 ms frame"
        );
        assert_eq!(
            slice(ended, ms(500), now + Duration::from_secs(5), 1),
            MAX,
            "a hidden window"
        );
    }

    #[test]
    fn jobs_share_the_frame_and_do_not_count_each_other_as_its_cost() {
        let now = Instant::now();
        let ms = Duration::from_millis;
        // 40 ms since this job's slice, of which another job worked 30:
        // the frame's own cost is 10 ms, and two jobs share 3 × 10.
        let ended = Some((now, ms(100)));
        assert_eq!(slice(ended, ms(130), now + ms(40), 2), ms(15));
        // The ledger's own accounting: a job that works counts as active.
        let mut a = FrameBudget::default();
        let mut b = FrameBudget::default();
        a.run(|_| ());
        b.run(|_| ());
        let active = LEDGER.with_borrow(|l| l.last_end.len());
        assert_eq!(active, 2);
        a.pause();
        assert_eq!(LEDGER.with_borrow(|l| l.last_end.len()), 1);
    }
}
