//! Meters in ovs-ofctl syntax: `add-meter` input (`meter=4,kbps,burst,stats,bands=type=drop,
//! rate=2000,burst_size=100`) parses into a [`MeterMod`]; `Display` prints the
//! `dump-meters` / `ofp-print` form (`meter=4 kbps burst stats bands=` then one line per
//! band).

use std::fmt;
use std::str::FromStr;

use super::value::parse_uint;
use super::ParseError;
use crate::wire::meter_mod::{
    OFPMBT_DROP, OFPMBT_DSCP_REMARK, OFPMF_BURST, OFPMF_KBPS, OFPMF_PKTPS, OFPMF_STATS,
};
use crate::wire::{MeterBand, MeterMod};

impl fmt::Display for MeterMod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "meter={}", self.meter_id)?;
        for (bit, name) in [
            (OFPMF_KBPS, "kbps"),
            (OFPMF_PKTPS, "pktps"),
            (OFPMF_BURST, "burst"),
            (OFPMF_STATS, "stats"),
        ] {
            if self.flags & bit != 0 {
                write!(f, " {name}")?;
            }
        }
        f.write_str(" bands=")?;
        for b in &self.bands {
            f.write_str("\n")?;
            match b.band_type {
                OFPMBT_DROP => f.write_str("type=drop")?,
                OFPMBT_DSCP_REMARK => f.write_str("type=dscp_remark")?,
                t => write!(f, "type={t}")?,
            }
            write!(f, " rate={}", b.rate)?;
            if self.flags & OFPMF_BURST != 0 {
                write!(f, " burst_size={}", b.burst_size)?;
            }
            if b.band_type == OFPMBT_DSCP_REMARK {
                write!(f, " prec_level={}", b.extra[0])?;
            }
        }
        Ok(())
    }
}

impl FromStr for MeterMod {
    type Err = ParseError;

    /// `add-meter` syntax; the meter is an ADD (`command` 0).
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let s = s.trim();
        let (head, bands) = s
            .split_once("bands=")
            .ok_or_else(|| ParseError::Syntax("missing bands=".into()))?;
        let mut m = MeterMod::default();
        for item in head.split([',', ' ']).filter(|x| !x.is_empty()) {
            match item.split_once('=') {
                Some(("meter", v)) => m.meter_id = parse_uint("meter", v)?,
                None => {
                    m.flags |= match item {
                        "kbps" => OFPMF_KBPS,
                        "pktps" => OFPMF_PKTPS,
                        "burst" => OFPMF_BURST,
                        "stats" => OFPMF_STATS,
                        _ => return Err(ParseError::UnknownField(item.into())),
                    }
                }
                Some(_) => return Err(ParseError::UnknownField(item.into())),
            }
        }
        // Each band starts with `type=`.
        let mut band: Option<MeterBand> = None;
        for item in bands.split([',', ' ', '\n']).filter(|x| !x.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| ParseError::Syntax(format!("band item `{item}`")))?;
            if k == "type" {
                m.bands.extend(band.take());
                let band_type = match v {
                    "drop" => OFPMBT_DROP,
                    "dscp_remark" => OFPMBT_DSCP_REMARK,
                    _ => return Err(ParseError::BadValue(v.into())),
                };
                band = Some(MeterBand {
                    band_type,
                    ..MeterBand::default()
                });
                continue;
            }
            let b = band
                .as_mut()
                .ok_or_else(|| ParseError::Syntax("band without type=".into()))?;
            match k {
                "rate" => b.rate = parse_uint("rate", v)?,
                "burst_size" => b.burst_size = parse_uint("burst_size", v)?,
                "prec_level" => b.extra[0] = parse_uint("prec_level", v)?,
                _ => return Err(ParseError::UnknownField(k.into())),
            }
        }
        m.bands.extend(band);
        Ok(m)
    }
}
