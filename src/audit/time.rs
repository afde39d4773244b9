//! RFC 3339 timestamps for the `ts` field: UTC with microseconds when writing, and a
//! parser for `ts` values and the `--since` argument.
//!
//! Hand-written on purpose: formatting a UTC instant and parsing one back are ~60 lines of
//! well-known calendar arithmetic (Howard Hinnant's `days_from_civil`), which does not
//! justify a date-time crate in a security tool's dependency tree.

use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch, now (0 if the clock is before 1970).
pub(crate) fn now_micros() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
        Err(_) => 0,
    }
}

/// Formats as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (always 27 bytes for years 0..=9999).
pub(crate) fn format_micros(micros: i64, out: &mut Vec<u8>) {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (sod / 3600, (sod / 60) % 60, sod % 60);
    use std::io::Write;
    // Writing to a Vec cannot fail.
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{frac:06}Z"
    );
}

/// [`format_micros`] as a `String`.
pub(crate) fn rfc3339(micros: i64) -> String {
    let mut v = Vec::with_capacity(27);
    format_micros(micros, &mut v);
    String::from_utf8(v).unwrap_or_default()
}

/// Parses an RFC 3339 date-time (`Z` or `±HH:MM` offset, optional fraction, `T` or space)
/// or a bare date `YYYY-MM-DD` (midnight UTC) into microseconds since the epoch.
pub(crate) fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r).filter(|p| p.iter().all(u8::is_ascii_digit))?;
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    if b.len() == 10 {
        return Some(days * 86_400 * 1_000_000);
    }
    if !matches!(b[10], b'T' | b't' | b' ') || b.len() < 20 || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // 60 is allowed for a leap second and counted as 59.999999 would be: clamp it.
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac: i64 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 6 {
                frac = frac * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        // Scaled to microseconds when fewer than six digits were given.
        frac *= 10_i64.pow(6usize.saturating_sub(i - start) as u32);
    }
    let offset_secs = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (oh, om) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'+' { o } else { -o }
        }
        _ => return None,
    };
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec.min(59) - offset_secs;
    Some(secs * 1_000_000 + frac)
}

/// Parses a `--since`/`--until` argument: an RFC 3339 date-time, a date, a duration ago
/// such as `90s`, `15m`, `2h`, `7d`, `2w`, or one of the words `now`, `today` and
/// `yesterday` (midnight UTC of that day: the log's `ts` is UTC, so a day is a UTC day).
/// The error names the input and the accepted forms.
pub fn parse_time_arg(s: &str) -> Result<i64, String> {
    parse_time_arg_at(s, now_micros())
}

/// [`parse_time_arg`] relative to `now` (for tests).
pub(crate) fn parse_time_arg_at(s: &str, now: i64) -> Result<i64, String> {
    if let Some(t) = parse_rfc3339(s) {
        return Ok(t);
    }
    const DAY: i64 = 86_400 * 1_000_000;
    let midnight = now.div_euclid(DAY) * DAY;
    match s.trim().to_ascii_lowercase().as_str() {
        "now" => return Ok(now),
        "today" => return Ok(midnight),
        "yesterday" => return Ok(midnight - DAY),
        "tomorrow" => return Ok(midnight + DAY),
        _ => {}
    }
    let unit = match s.as_bytes().last() {
        Some(b's') => 1,
        Some(b'm') => 60,
        Some(b'h') => 3600,
        Some(b'd') => 86_400,
        Some(b'w') => 7 * 86_400,
        _ => 0,
    };
    if unit != 0
        && let Ok(n) = s[..s.len() - 1].parse::<i64>()
        && n >= 0
    {
        return Ok(now - n.saturating_mul(unit).saturating_mul(1_000_000));
    }
    Err(format!(
        "invalid time '{s}': use RFC 3339 (2026-08-21T10:00:00Z), a date (2026-08-21), a \
         duration ago (90s, 15m, 2h, 7d, 2w) or now, today, yesterday (UTC days)"
    ))
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`]: (year, month, day).
pub(crate) fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(us: i64) -> String {
        let mut v = Vec::new();
        format_micros(us, &mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn formats_known_instants() {
        let cases = [
            (0, "1970-01-01T00:00:00.000000Z"),
            (1_000_000 * 951_782_400, "2000-02-29T00:00:00.000000Z"),
            (1_787_400_000_123_456, "2026-08-22T12:00:00.123456Z"),
            (-1, "1969-12-31T23:59:59.999999Z"),
            (253_402_300_799_999_999, "9999-12-31T23:59:59.999999Z"),
        ];
        for (us, want) in cases {
            assert_eq!(fmt(us), want);
            assert_eq!(parse_rfc3339(want), Some(us), "{want}");
        }
    }

    #[test]
    fn parses_offsets_dates_and_rejects_garbage() {
        let base = parse_rfc3339("2026-08-21T10:00:00Z").unwrap();
        let cases: &[(&str, Option<i64>)] = &[
            ("2026-08-21T12:00:00+02:00", Some(base)),
            ("2026-08-21T09:30:00-00:30", Some(base)),
            ("2026-08-21 10:00:00z", Some(base)),
            ("2026-08-21T10:00:00.5Z", Some(base + 500_000)),
            ("2026-08-21T10:00:00.1234567Z", Some(base + 123_456)),
            ("2026-08-21", Some(base - 10 * 3600 * 1_000_000)),
            ("2026-02-29", None),
            ("2026-13-01", None),
            ("2026-08-21T24:00:00Z", None),
            ("2026-08-21T10:00:00", None),
            ("2026-08-21T10:00:00.Z", None),
            ("2026-08-21T10:00:00+0200", None),
            ("2026-8-21", None),
            ("+026-08-21", None),
            ("", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_rfc3339(s), *want, "{s}");
        }
    }

    #[test]
    fn since_accepts_durations() {
        let now = now_micros();
        let t = parse_time_arg("2h").unwrap();
        assert!((now - 2 * 3600 * 1_000_000 - t).abs() < 5_000_000);
        assert!(parse_time_arg("-2h").is_err());
        assert!(parse_time_arg("someday").unwrap_err().contains("someday"));
    }

    #[test]
    fn words_are_utc_days() {
        let now = parse_rfc3339("2026-08-21T10:15:00Z").unwrap();
        let day = |s| parse_rfc3339(s).unwrap();
        let cases = [
            ("now", now),
            ("today", day("2026-08-21")),
            ("Yesterday", day("2026-08-20")),
            ("tomorrow", day("2026-08-22")),
            ("1w", now - 7 * 86_400 * 1_000_000),
        ];
        for (s, want) in cases {
            assert_eq!(parse_time_arg_at(s, now), Ok(want), "{s}");
        }
    }

    #[test]
    fn civil_round_trips() {
        for days in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
