//! What a daemon says about itself in its mDNS TXT record, and reading it back.
//!
//! Keys (each value under 255 bytes, as TXT requires): `version`, `pool` (absent without
//! `-pool`), `layout`, `fp` (the certificate's SHA-256 in hex; `none` for a plain daemon),
//! `devices` (how many), `dev0`…`devN` (their ids, cut to 200 bytes), `accepting` (`yes`/`no`) and
//! `why` (the reason it is not, e.g. `nimby until 17:00` or `draining`).

/// Longest device id kept in a record.
const MAX_ID: usize = 200;
/// Most devices listed in a record.
pub const MAX_DEVICES: usize = 16;

/// A daemon's advertisement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advert {
    /// The daemon's xcc version.
    pub version: String,
    /// Its pool, when started with `-pool`.
    pub pool: Option<String>,
    /// Its data layout (`little-64`).
    pub layout: String,
    /// Its certificate's SHA-256 in hex, or None for a plain (proxied) daemon. Not trusted by
    /// itself: programs pin what TLS shows them.
    pub fingerprint: Option<String>,
    /// Device ids, in the daemon's order.
    pub devices: Vec<String>,
    /// Whether it takes work now.
    pub accepting: bool,
    /// Why not, when it does not.
    pub reason: Option<String>,
}

/// Why a TXT record is not an xcd advertisement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdvertError {
    /// A key every advertisement has is missing.
    #[error("the advertisement has no {0:?} key")]
    Missing(&'static str),
    /// A value is not what the key holds.
    #[error("the advertisement's {key:?} is {value:?}, not {what}")]
    Bad {
        /// The key.
        key: &'static str,
        /// Its value.
        value: String,
        /// What it should be.
        what: &'static str,
    },
}

fn cut(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

impl Advert {
    /// The TXT record's keys and values.
    pub fn txt(&self) -> Vec<(String, String)> {
        let mut txt = vec![
            ("version".to_owned(), cut(&self.version, MAX_ID)),
            ("layout".to_owned(), cut(&self.layout, MAX_ID)),
            ("fp".to_owned(), self.fingerprint.clone().unwrap_or_else(|| "none".to_owned())),
            ("accepting".to_owned(), if self.accepting { "yes" } else { "no" }.to_owned()),
        ];
        if let Some(pool) = &self.pool {
            txt.push(("pool".to_owned(), cut(pool, MAX_ID)));
        }
        if let Some(reason) = &self.reason {
            txt.push(("why".to_owned(), cut(reason, MAX_ID)));
        }
        let devices = &self.devices[..self.devices.len().min(MAX_DEVICES)];
        txt.push(("devices".to_owned(), devices.len().to_string()));
        for (i, id) in devices.iter().enumerate() {
            txt.push((format!("dev{i}"), cut(id, MAX_ID)));
        }
        txt
    }

    /// Reads a TXT record through `get` (a key's value, if present).
    pub fn from_txt(get: impl Fn(&str) -> Option<String>) -> Result<Advert, AdvertError> {
        let need = |key: &'static str| get(key).ok_or(AdvertError::Missing(key));
        let accepting = match need("accepting")?.as_str() {
            "yes" => true,
            "no" => false,
            other => return Err(AdvertError::Bad { key: "accepting", value: other.to_owned(), what: "yes or no" }),
        };
        let count = need("devices")?;
        let count: usize = count.parse().ok().filter(|&n| n <= MAX_DEVICES).ok_or(AdvertError::Bad {
            key: "devices",
            value: count,
            what: "a count up to 16",
        })?;
        let devices = (0..count).map(|i| get(&format!("dev{i}")).unwrap_or_default()).collect();
        let fingerprint = need("fp")?;
        Ok(Advert {
            version: need("version")?,
            pool: get("pool").filter(|p| !p.is_empty()),
            layout: need("layout")?,
            fingerprint: (fingerprint != "none").then_some(fingerprint),
            devices,
            accepting,
            reason: get("why").filter(|w| !w.is_empty()),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn advert() -> Advert {
        Advert {
            version: "0.1.0".into(),
            pool: Some("render".into()),
            layout: "little-64".into(),
            fingerprint: Some("ab".repeat(32)),
            devices: vec!["vulkan:llvmpipe (LLVM 15.0.6, 256 bits)".into(), "cuda:NVIDIA H200".into()],
            accepting: false,
            reason: Some("nimby until 17:00".into()),
        }
    }

    fn read(txt: &[(String, String)]) -> Result<Advert, AdvertError> {
        let map: HashMap<&str, &str> = txt.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Advert::from_txt(|k| map.get(k).map(|v| (*v).to_owned()))
    }

    #[test]
    fn an_advert_reads_back_from_its_record() {
        assert_eq!(read(&advert().txt()), Ok(advert()));
        let plain = Advert { pool: None, fingerprint: None, reason: None, accepting: true, ..advert() };
        assert_eq!(read(&plain.txt()), Ok(plain));
    }

    #[test]
    fn every_value_fits_a_txt_string() {
        let long = Advert { devices: vec!["é".repeat(300); 40], pool: Some("p".repeat(999)), ..advert() };
        let txt = long.txt();
        assert!(txt.iter().all(|(k, v)| k.len() + 1 + v.len() <= 255), "{txt:?}");
        assert_eq!(read(&txt).map(|a| a.devices.len()), Ok(MAX_DEVICES));
    }

    #[test]
    fn a_foreign_record_is_refused_with_the_key_named() {
        assert_eq!(read(&[]), Err(AdvertError::Missing("accepting")));
        let mut txt = advert().txt();
        txt.retain(|(k, _)| k != "version");
        assert_eq!(read(&txt), Err(AdvertError::Missing("version")));
        let bad = vec![("accepting".to_owned(), "maybe".to_owned())];
        assert!(matches!(read(&bad), Err(AdvertError::Bad { key: "accepting", .. })));
    }
}
