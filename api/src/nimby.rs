//! NIMBY hours: times of day, in local time, that a machine's owner keeps for themselves; the
//! daemon declines work inside them. Ranges may cross midnight (`22:00-06:00`).

use std::fmt;

use chrono::{DateTime, Duration, Local, NaiveTime, TimeZone};

/// One range of local time, `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    start: NaiveTime,
    end: NaiveTime,
}

/// Every NIMBY range of a daemon (none: always accepting).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Nimby {
    ranges: Vec<Range>,
}

/// Why a `-nimby` value is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("-nimby {given:?}: {why}; write ranges of local time as HH:MM-HH:MM[,HH:MM-HH:MM…], e.g. 09:00-17:00")]
pub struct NimbyError {
    given: String,
    why: String,
}

impl Range {
    fn contains(&self, t: NaiveTime) -> bool {
        if self.start < self.end { self.start <= t && t < self.end } else { t >= self.start || t < self.end }
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.start.format("%H:%M"), self.end.format("%H:%M"))
    }
}

impl Nimby {
    /// Reads `09:00-17:00[,…]`.
    pub fn parse(text: &str) -> Result<Nimby, NimbyError> {
        let fail = |why: String| NimbyError { given: text.to_owned(), why };
        let mut ranges = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (a, b) = part.split_once('-').ok_or_else(|| fail(format!("{part:?} has no '-'")))?;
            let time = |s: &str| {
                NaiveTime::parse_from_str(s.trim(), "%H:%M").map_err(|_| fail(format!("{s:?} is not a time of day")))
            };
            let range = Range { start: time(a)?, end: time(b)? };
            if range.start == range.end {
                return Err(fail(format!("{part} has no length")));
            }
            ranges.push(range);
        }
        if ranges.is_empty() {
            return Err(fail("no range given".into()));
        }
        Ok(Nimby { ranges })
    }

    /// True when no range is set.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The range in force at `now`, and when the daemon takes work again (following ranges that
    /// touch or overlap), or None outside every range.
    pub fn inside<Tz: TimeZone>(&self, now: &DateTime<Tz>) -> Option<(String, DateTime<Tz>)> {
        let first = self.ranges.iter().find(|r| r.contains(now.time()))?;
        let mut until = now.clone();
        // Each step moves to the end of a range that holds `until`; there are finitely many.
        for _ in 0..=self.ranges.len() {
            let Some(range) = self.ranges.iter().find(|r| r.contains(until.time())) else { break };
            let mut end = until.clone() + (range.end - until.time());
            if end <= until {
                end += Duration::days(1);
            }
            until = end;
        }
        Some((first.to_string(), until))
    }

    /// [`inside`](Self::inside) at the current local time.
    pub fn inside_now(&self) -> Option<(String, DateTime<Local>)> {
        self.inside(&Local::now())
    }
}

impl fmt::Display for Nimby {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.ranges.iter().map(Range::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use chrono::{FixedOffset, NaiveDate};

    use super::*;

    fn at(h: u32, m: u32) -> DateTime<FixedOffset> {
        let tz = FixedOffset::east_opt(3600).expect("offset");
        let naive = NaiveDate::from_ymd_opt(2026, 11, 29).and_then(|d| d.and_hms_opt(h, m, 0)).expect("time");
        tz.from_local_datetime(&naive).single().expect("unambiguous")
    }

    #[test]
    fn office_hours() {
        let n = Nimby::parse("09:00-17:00").expect("valid");
        assert_eq!(n.inside(&at(8, 59)), None);
        let (range, until) = n.inside(&at(9, 0)).expect("inside");
        assert_eq!(range, "09:00-17:00");
        assert_eq!(until, at(17, 0));
        assert_eq!(n.inside(&at(17, 0)), None);
    }

    #[test]
    fn ranges_cross_midnight_and_chain() {
        let n = Nimby::parse("22:00-02:00, 02:00-03:30").expect("valid");
        let (_, until) = n.inside(&at(23, 0)).expect("inside");
        assert_eq!(until, at(3, 30) + Duration::days(1));
        let (_, until) = n.inside(&at(1, 0)).expect("inside");
        assert_eq!(until, at(3, 30));
        assert_eq!(n.inside(&at(12, 0)), None);
    }

    #[test]
    fn bad_ranges_say_how_to_write_them() {
        for bad in ["", "9-5", "09:00", "25:00-26:00", "09:00-09:00", "09:00-17:00,x"] {
            let e = Nimby::parse(bad).expect_err("refused");
            assert!(e.to_string().contains("HH:MM-HH:MM"), "{e}");
        }
    }
}
