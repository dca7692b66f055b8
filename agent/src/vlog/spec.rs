//! The `-v`/`--verbose=SPEC` and `vlog/set` specification language of OVS vlog.
//!
//! A spec is words separated by space, comma, colon or tab. Each word is a module, a
//! destination, a level or `any`, in any order, at most one of each kind; what is missing
//! means "all modules", "all destinations" and `dbg`. Two special forms take the rest of
//! the string verbatim: `PATTERN:<destination>:<pattern>` and `FACILITY:<facility>`.
//! Error texts are OVS's, since operators see them through `ovn-appctl`.

use super::level::{Destination, Level};

const DELIMITERS: &[char] = &[' ', ',', ':', '\t'];

/// What a spec asks for. Modules are indexes into the caller's module table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spec {
    Levels {
        module: Option<usize>,
        destination: Option<Destination>,
        level: Level,
    },
    Pattern {
        destination: Option<Destination>,
        pattern: String,
    },
    Facility(u32),
}

/// A spec that cannot be applied; the message is the one OVS gives.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

/// Splits like `strtok_r(s, " ,:\t")`: returns the next word and the text after the one
/// delimiter that ended it (what `save_ptr` points to).
fn next_word(text: &str) -> Option<(&str, &str)> {
    let start = text.find(|c: char| !DELIMITERS.contains(&c))?;
    let text = &text[start..];
    match text.find(DELIMITERS) {
        Some(end) => Some((&text[..end], &text[end + 1..])),
        None => Some((text, "")),
    }
}

/// Syslog facilities by name, with OVS's values (`vlog_facilities`).
const FACILITIES: &[(&str, u32)] = &[
    ("kern", 0),
    ("user", 1 << 3),
    ("mail", 2 << 3),
    ("daemon", 3 << 3),
    ("auth", 4 << 3),
    ("syslog", 5 << 3),
    ("lpr", 6 << 3),
    ("news", 7 << 3),
    ("uucp", 8 << 3),
    ("clock", 9 << 3),
    ("ftp", 11 << 3),
    ("ntp", 12 << 3),
    ("audit", 13 << 3),
    ("alert", 14 << 3),
    ("clock2", 15 << 3),
    ("local0", 16 << 3),
    ("local1", 17 << 3),
    ("local2", 18 << 3),
    ("local3", 19 << 3),
    ("local4", 20 << 3),
    ("local5", 21 << 3),
    ("local6", 22 << 3),
    ("local7", 23 << 3),
];

/// Parses one spec. `module_index` resolves a (case-insensitive) module name.
pub fn parse_spec(
    spec: &str,
    module_index: impl Fn(&str) -> Option<usize>,
) -> Result<Spec, SpecError> {
    let first = next_word(spec);
    if let Some((word, rest)) = first {
        if word.eq_ignore_ascii_case("PATTERN") {
            let (word, pattern) =
                next_word(rest).ok_or_else(|| SpecError("missing destination".into()))?;
            let destination = if word.eq_ignore_ascii_case("ANY") {
                None
            } else {
                Some(
                    Destination::from_name(word)
                        .ok_or_else(|| SpecError(format!("unknown destination \"{word}\"")))?,
                )
            };
            return Ok(Spec::Pattern {
                destination,
                pattern: pattern.to_string(),
            });
        }
        if word.eq_ignore_ascii_case("FACILITY") {
            return FACILITIES
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(rest))
                .map(|&(_, value)| Spec::Facility(value))
                .ok_or_else(|| SpecError("invalid facility".into()));
        }
    }

    let mut module = None;
    let mut destination = None;
    let mut level = None;
    let mut rest = spec;
    while let Some((word, after)) = next_word(rest) {
        rest = after;
        if word.eq_ignore_ascii_case("ANY") {
            continue;
        }
        if let Some(found) = Destination::from_name(word) {
            if destination.replace(found).is_some() {
                return Err(SpecError("cannot specify multiple destinations".into()));
            }
        } else if let Some(found) = Level::from_name(word) {
            if level.replace(found).is_some() {
                return Err(SpecError("cannot specify multiple levels".into()));
            }
        } else if let Some(found) = module_index(word) {
            if module.replace(found).is_some() {
                return Err(SpecError("cannot specify multiple modules".into()));
            }
        } else {
            return Err(SpecError(format!(
                "no destination, level, or module \"{word}\""
            )));
        }
    }
    Ok(Spec::Levels {
        module,
        destination,
        level: level.unwrap_or(Level::Dbg),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULES: &[&str] = &["binding", "main", "ofctrl"];

    fn parse(spec: &str) -> Result<Spec, String> {
        parse_spec(spec, |word| {
            MODULES
                .iter()
                .position(|module| module.eq_ignore_ascii_case(word))
        })
        .map_err(|error| error.0)
    }

    fn levels(module: Option<usize>, destination: Option<Destination>, level: Level) -> Spec {
        Spec::Levels {
            module,
            destination,
            level,
        }
    }

    #[test]
    fn ovn_ctl_specs() {
        assert_eq!(
            parse("console:emer"),
            Ok(levels(None, Some(Destination::Console), Level::Emer))
        );
        assert_eq!(
            parse("syslog:err"),
            Ok(levels(None, Some(Destination::Syslog), Level::Err))
        );
        assert_eq!(
            parse("file:info"),
            Ok(levels(None, Some(Destination::File), Level::Info))
        );
    }

    #[test]
    fn any_order_any_separator_any_case() {
        let want = Ok(levels(Some(2), Some(Destination::File), Level::Dbg));
        assert_eq!(parse("ofctrl:file:dbg"), want);
        assert_eq!(parse("DBG FILE ofctrl"), want);
        assert_eq!(parse(" file,,ofctrl\tdbg "), want);
        assert_eq!(parse("any:ofctrl:any:file:dbg"), want);
    }

    #[test]
    fn missing_parts_default_to_everything_and_dbg() {
        assert_eq!(parse(""), Ok(levels(None, None, Level::Dbg)));
        assert_eq!(parse("binding"), Ok(levels(Some(0), None, Level::Dbg)));
        assert_eq!(parse("off"), Ok(levels(None, None, Level::Off)));
        assert_eq!(parse("any"), Ok(levels(None, None, Level::Dbg)));
    }

    #[test]
    fn errors_have_ovs_texts() {
        assert_eq!(
            parse("foo"),
            Err("no destination, level, or module \"foo\"".into())
        );
        assert_eq!(
            parse("file:console"),
            Err("cannot specify multiple destinations".into())
        );
        assert_eq!(
            parse("dbg:info"),
            Err("cannot specify multiple levels".into())
        );
        assert_eq!(
            parse("main:binding"),
            Err("cannot specify multiple modules".into())
        );
        assert_eq!(parse("PATTERN"), Err("missing destination".into()));
        assert_eq!(
            parse("PATTERN:stdout:%m"),
            Err("unknown destination \"stdout\"".into())
        );
        assert_eq!(parse("FACILITY:local9"), Err("invalid facility".into()));
    }

    #[test]
    fn pattern_keeps_the_rest_verbatim() {
        assert_eq!(
            parse("PATTERN:console:%D{%H:%M:%S}|%c: %m"),
            Ok(Spec::Pattern {
                destination: Some(Destination::Console),
                pattern: "%D{%H:%M:%S}|%c: %m".into()
            })
        );
        assert_eq!(
            parse("pattern:any:%m"),
            Ok(Spec::Pattern {
                destination: None,
                pattern: "%m".into()
            })
        );
        assert_eq!(
            parse("PATTERN:file"),
            Ok(Spec::Pattern {
                destination: Some(Destination::File),
                pattern: String::new()
            })
        );
    }

    #[test]
    fn facility() {
        assert_eq!(parse("FACILITY:local0"), Ok(Spec::Facility(128)));
        assert_eq!(parse("facility:DAEMON"), Ok(Spec::Facility(24)));
    }
}
