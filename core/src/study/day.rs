//! A calendar day, as the save file dates attempts, solves and visits: days
//! since 1970-01-01 (UTC). Written out by hand (Howard Hinnant's
//! `civil_from_days`), since a date is all the study record needs.

use serde::{Deserialize, Serialize};

/// Days since 1970-01-01, UTC.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Day(pub u32);

impl Day {
    /// The day `secs` seconds after the Unix epoch falls on.
    pub fn from_unix_secs(secs: u64) -> Self {
        Self(u32::try_from(secs / 86_400).unwrap_or(u32::MAX))
    }

    /// (year, month 1–12, day 1–31) in the proleptic Gregorian calendar.
    pub fn civil(self) -> (i64, u32, u32) {
        let z = i64::from(self.0) + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        (year, month, day)
    }

    /// 0 = Monday … 6 = Sunday (1970-01-01 was a Thursday).
    pub fn weekday(self) -> u32 {
        (self.0 % 7 + 3) % 7
    }

    /// The day `n` days before (the epoch at the earliest).
    pub fn minus(self, n: u32) -> Self {
        Self(self.0.saturating_sub(n))
    }
}

impl std::fmt::Display for Day {
    /// ISO 8601: `2026-12-05`, read the same in both languages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (y, m, d) = self.civil();
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_agree_with_the_calendar() {
        assert_eq!(Day(0).to_string(), "1970-01-01");
        assert_eq!(Day(0).weekday(), 3);
        // 2000 is a leap year (÷400), 1900 and 2100 are not.
        assert_eq!(Day(11_016).to_string(), "2000-02-29");
        assert_eq!(Day(11_017).to_string(), "2000-03-01");
        assert_eq!(Day::from_unix_secs(1_796_500_000).to_string(), "2026-12-05");
        assert_eq!(Day(47_540).to_string(), "2100-02-28");
        assert_eq!(Day(47_541).to_string(), "2100-03-01");
        // Every day is the one after the day before.
        let mut last = Day(0).civil();
        for n in 1..80_000 {
            let now = Day(n).civil();
            let next_in_month = now == (last.0, last.1, last.2 + 1);
            let next_month = now.2 == 1
                && (now.1 == last.1 + 1 || (now.1 == 1 && last.1 == 12 && now.0 == last.0 + 1));
            assert!(next_in_month || next_month, "{last:?} → {now:?}");
            last = now;
        }
        assert_eq!(Day(5).minus(9), Day(0));
    }
}
