//! OVS vlog patterns (`%D{...}|%05N|%c%T|%p|%m` and friends), interpreted as
//! `format_log_message()` in OVS lib/vlog.c does: `%[-][0][width]X` conversions, braces for
//! time formats, `#` in a time format replaced by milliseconds.
//!
//! There is no time zone database here, so `%d` (local time in OVS) prints UTC like `%D`.

use std::fmt::Write as _;

use super::level::Level;

/// Everything a pattern can print about one message.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    pub module: &'a str,
    pub level: Level,
    pub sequence: u32,
    /// Wall clock, milliseconds since the Unix epoch.
    pub wall_ms: i64,
    /// Milliseconds since the process started (`%r`).
    pub uptime_ms: i64,
    pub message: &'a str,
    pub program: &'a str,
    pub pid: u32,
    pub hostname: &'a str,
    /// Name of the thread that logs, if it set one (`%t`, `%T`).
    pub subprogram: &'a str,
    /// Syslog facility value, for `%B`.
    pub facility: u32,
}

/// Appends the expansion of `pattern` for `record` to `out`.
pub fn format_record(pattern: &str, record: &Record<'_>, out: &mut String) {
    let mut rest = pattern;
    while let Some(percent) = rest.find('%') {
        out.push_str(&rest[..percent]);
        rest = &rest[percent + 1..];
        let mut left_justify = false;
        let mut pad = ' ';
        if let Some(after) = rest.strip_prefix('-') {
            left_justify = true;
            rest = after;
        }
        if let Some(after) = rest.strip_prefix('0') {
            pad = '0';
            rest = after;
        }
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let width: usize = rest[..digits].parse().unwrap_or(0);
        rest = &rest[digits..];
        let Some(conversion) = rest.chars().next() else {
            break;
        };
        rest = &rest[conversion.len_utf8()..];
        let start = out.len();
        match conversion {
            'A' => out.push_str(record.program),
            'B' => {
                let _ = write!(out, "{}", record.facility + record.level.syslog_severity());
            }
            'c' => {
                rest = take_braces(rest).1;
                out.push_str(record.module);
            }
            'd' | 'D' => {
                let (format, after) = take_braces(rest);
                rest = after;
                format_time(
                    format.unwrap_or("%Y-%m-%d %H:%M:%S.###"),
                    record.wall_ms,
                    out,
                );
            }
            'E' => out.push_str(record.hostname),
            'm' => out.push_str(record.message.trim_end_matches('\n')),
            'N' => {
                let _ = write!(out, "{}", record.sequence);
            }
            'n' => out.push('\n'),
            'p' => out.push_str(record.level.name()),
            'P' => {
                let _ = write!(out, "{}", record.pid);
            }
            'r' => {
                let _ = write!(out, "{}", record.uptime_ms);
            }
            't' => out.push_str(if record.subprogram.is_empty() {
                "main"
            } else {
                record.subprogram
            }),
            'T' => {
                if !record.subprogram.is_empty() {
                    let _ = write!(out, "({})", record.subprogram);
                }
            }
            other => out.push(other),
        }
        let used = out[start..].chars().count();
        if used < width {
            let padding: String = std::iter::repeat_n(pad, width - used).collect();
            if left_justify {
                out.push_str(&padding);
            } else {
                out.insert_str(start, &padding);
            }
        }
    }
    out.push_str(rest);
}

/// `{text}` at the start of `rest`: the text and what follows the closing brace.
fn take_braces(rest: &str) -> (Option<&str>, &str) {
    match rest.strip_prefix('{') {
        Some(inner) => match inner.find('}') {
            Some(end) => (Some(&inner[..end]), &inner[end + 1..]),
            None => (Some(inner), ""),
        },
        None => (None, rest),
    }
}

/// A UTC calendar time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UtcTime {
    pub year: i64,
    /// 1..=12
    pub month: u32,
    /// 1..=31
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millisecond: u32,
    /// 0 = Sunday
    pub weekday: u32,
    /// 0..=365
    pub year_day: u32,
}

impl UtcTime {
    /// Converts milliseconds since the Unix epoch (Howard Hinnant's civil-from-days).
    pub fn from_unix_ms(ms: i64) -> UtcTime {
        let seconds = ms.div_euclid(1000);
        let millisecond = ms.rem_euclid(1000) as u32;
        let days = seconds.div_euclid(86_400);
        let second_of_day = seconds.rem_euclid(86_400) as u32;
        let shifted = days + 719_468;
        let era = shifted.div_euclid(146_097);
        let day_of_era = shifted.rem_euclid(146_097);
        let year_of_era =
            (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146_096) / 365;
        let day_of_year_from_march =
            day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
        let month_from_march = (5 * day_of_year_from_march + 2) / 153;
        let day = (day_of_year_from_march - (153 * month_from_march + 2) / 5 + 1) as u32;
        let month = if month_from_march < 10 {
            month_from_march + 3
        } else {
            month_from_march - 9
        } as u32;
        let year = year_of_era + era * 400 + i64::from(month <= 2);
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        const DAYS_BEFORE_MONTH: [u32; 12] =
            [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
        let year_day =
            DAYS_BEFORE_MONTH[(month - 1) as usize] + day - 1 + u32::from(leap && month > 2);
        UtcTime {
            year,
            month,
            day,
            hour: second_of_day / 3600,
            minute: second_of_day / 60 % 60,
            second: second_of_day % 60,
            millisecond,
            weekday: (days + 4).rem_euclid(7) as u32,
            year_day,
        }
    }
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const MONTHS_LONG: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const WEEKDAYS_LONG: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// The strftime conversions vlog patterns use, in UTC, then `#` runs replaced by the
/// milliseconds (`strftime_msec()`).
pub fn format_time(format: &str, wall_ms: i64, out: &mut String) {
    let time = UtcTime::from_unix_ms(wall_ms);
    let start = out.len();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(conversion) = chars.next() else {
            out.push('%');
            break;
        };
        let month = (time.month - 1) as usize;
        let weekday = time.weekday as usize;
        let _ = match conversion {
            'Y' => write!(out, "{}", time.year),
            'y' => write!(out, "{:02}", time.year.rem_euclid(100)),
            'C' => write!(out, "{:02}", time.year.div_euclid(100)),
            'm' => write!(out, "{:02}", time.month),
            'd' => write!(out, "{:02}", time.day),
            'e' => write!(out, "{:2}", time.day),
            'H' => write!(out, "{:02}", time.hour),
            'I' => write!(out, "{:02}", (time.hour + 11) % 12 + 1),
            'M' => write!(out, "{:02}", time.minute),
            'S' => write!(out, "{:02}", time.second),
            'j' => write!(out, "{:03}", time.year_day + 1),
            'p' => write!(out, "{}", if time.hour < 12 { "AM" } else { "PM" }),
            'b' | 'h' => write!(out, "{}", MONTHS[month]),
            'B' => write!(out, "{}", MONTHS_LONG[month]),
            'a' => write!(out, "{}", WEEKDAYS[weekday]),
            'A' => write!(out, "{}", WEEKDAYS_LONG[weekday]),
            'u' => write!(out, "{}", (time.weekday + 6) % 7 + 1),
            'w' => write!(out, "{}", time.weekday),
            'T' => write!(
                out,
                "{:02}:{:02}:{:02}",
                time.hour, time.minute, time.second
            ),
            'R' => write!(out, "{:02}:{:02}", time.hour, time.minute),
            'F' => write!(out, "{}-{:02}-{:02}", time.year, time.month, time.day),
            'D' => write!(
                out,
                "{:02}/{:02}/{:02}",
                time.month,
                time.day,
                time.year.rem_euclid(100)
            ),
            's' => write!(out, "{}", wall_ms.div_euclid(1000)),
            'z' => write!(out, "+0000"),
            'Z' => write!(out, "GMT"),
            'n' => writeln!(out),
            't' => write!(out, "\t"),
            '%' => write!(out, "%"),
            other => write!(out, "%{other}"),
        };
    }
    if out[start..].contains('#') {
        let digits = format!("{:03}", time.millisecond);
        let mut replaced = String::with_capacity(out.len() - start);
        let mut run = 0usize;
        for c in out[start..].chars() {
            if c == '#' {
                replaced.push(digits.as_bytes().get(run).map_or('0', |&d| char::from(d)));
                run += 1;
            } else {
                run = 0;
                replaced.push(c);
            }
        }
        out.truncate(start);
        out.push_str(&replaced);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vlog::level::Destination;

    /// 2026-11-30T13:01:09.808Z, the time of B1.8's sample lines.
    const SAMPLE_MS: i64 = 1_796_043_669_808;

    fn record<'a>(module: &'a str, level: Level, sequence: u32, message: &'a str) -> Record<'a> {
        Record {
            module,
            level,
            sequence,
            wall_ms: SAMPLE_MS,
            uptime_ms: 1234,
            message,
            program: "ovn-controller",
            pid: 4242,
            hostname: "hv1",
            subprogram: "",
            facility: 128,
        }
    }

    fn format(pattern: &str, record: &Record<'_>) -> String {
        let mut out = String::new();
        format_record(pattern, record, &mut out);
        out
    }

    #[test]
    fn utc_calendar() {
        let t = UtcTime::from_unix_ms(SAMPLE_MS);
        assert_eq!((t.year, t.month, t.day), (2026, 11, 30));
        assert_eq!((t.hour, t.minute, t.second, t.millisecond), (13, 1, 9, 808));
        assert_eq!(t.weekday, 1, "a Monday");
        assert_eq!(t.year_day, 333);
        let epoch = UtcTime::from_unix_ms(0);
        assert_eq!(
            (epoch.year, epoch.month, epoch.day, epoch.weekday),
            (1970, 1, 1, 4)
        );
        let leap = UtcTime::from_unix_ms(951_782_400_000); // 2000-02-29
        assert_eq!(
            (leap.year, leap.month, leap.day, leap.year_day),
            (2000, 2, 29, 59)
        );
        let before = UtcTime::from_unix_ms(-1);
        assert_eq!(
            (before.year, before.second, before.millisecond),
            (1969, 59, 999)
        );
    }

    #[test]
    fn golden_file_and_console_lines() {
        let main = record(
            "main",
            Level::Info,
            5,
            "OVN internal version is : [23.03.1-20.27.0-70.6]",
        );
        assert_eq!(
            format(Destination::File.default_pattern(), &main),
            "2026-11-30T13:01:09.808Z|00005|main|INFO|OVN internal version is : [23.03.1-20.27.0-70.6]"
        );
        assert_eq!(
            format(Destination::Console.default_pattern(), &main),
            "2026-11-30T13:01:09Z|00005|main|INFO|OVN internal version is : [23.03.1-20.27.0-70.6]"
        );
        let mut acl = record(
            "acl_log",
            Level::Info,
            162,
            "name=\"np\", verdict=allow\n\n",
        );
        acl.subprogram = "ovn_pinctrl0";
        assert_eq!(
            format(Destination::Syslog.default_pattern(), &acl),
            "ovs|00162|acl_log(ovn_pinctrl0)|INFO|name=\"np\", verdict=allow"
        );
        let big = record("ofctrl", Level::Warn, 123_456, "x");
        assert_eq!(format("%05N|%p", &big), "123456|WARN");
    }

    #[test]
    fn widths_padding_and_other_conversions() {
        let r = record("lflow", Level::Dbg, 7, "m");
        assert_eq!(
            format("[%-8c][%8c][%-08p]", &r),
            "[lflow   ][   lflow][DBG00000]"
        );
        assert_eq!(
            format("%A %P %E %r %t%T %B %n%%%q", &r),
            "ovn-controller 4242 hv1 1234 main 135 \n%q"
        );
        assert_eq!(
            format("<%B> %D{%h %e %T} %E %A:", &r),
            "<135> Nov 30 13:01:09 hv1 ovn-controller:"
        );
        assert_eq!(format("%D", &r), "2026-11-30 13:01:09.808");
        assert_eq!(
            format("%d{%F %j %a %b %y %s}", &r),
            "2026-11-30 334 Mon Nov 26 1796043669"
        );
        assert_eq!(format("%D{%S.#####}", &r), "09.80800");
        assert_eq!(format("trailing %", &r), "trailing ");
        assert_eq!(format("%c{ignored}|%m", &r), "lflow|m");
    }
}
