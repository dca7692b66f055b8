//! `--ssl-protocols` and `--ssl-ciphers`, read as Open vSwitch reads them, onto
//! what rustls offers: TLS 1.2 and 1.3, and AEAD suites with ECDHE only.
//!
//! The cipher list is OpenSSL's syntax, which (as in OpenSSL) chooses among the
//! TLS 1.2 suites; TLS 1.3 suites are always offered. Suite names (OpenSSL's or
//! IANA's) select or, after `!` or `-`, remove a suite; other words select the
//! suites whose OpenSSL name contains them (`AES256`, `ECDSA`, `CHACHA20`), and
//! the group words `ALL`, `DEFAULT` and `HIGH` select every suite (all of rustls'
//! suites are of high strength). Words that select nothing are ignored, as
//! OpenSSL ignores them.

use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::{self, ProtocolVersion, SupportedCipherSuite, SupportedProtocolVersion};

use super::TlsError;

/// OpenSSL's names of the TLS 1.2 suites that rustls implements, by IANA name.
const OPENSSL_NAMES: [(&str, &str); 6] = [
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-ECDSA-AES128-GCM-SHA256",
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-RSA-CHACHA20-POLY1305",
    ),
];

fn words(list: &str) -> impl Iterator<Item = &str> {
    list.split([' ', ',', ':', '\t']).filter(|w| !w.is_empty())
}

/// The protocol versions of a `--ssl-protocols` list (`None`: TLS 1.2 and 1.3).
pub(super) fn versions(
    protocols: Option<&str>,
) -> Result<Vec<&'static SupportedProtocolVersion>, TlsError> {
    let Some(list) = protocols else {
        return Ok(rustls::DEFAULT_VERSIONS.to_vec());
    };
    let err = |reason: String| TlsError::Protocols(list.to_owned(), reason);
    let mut wanted = Vec::new();
    for word in words(list) {
        match word.to_ascii_lowercase().as_str() {
            "tlsv1" | "tlsv1.1" => {}
            "tlsv1.2" => wanted.push(&rustls::version::TLS12),
            "tlsv1.3" => wanted.push(&rustls::version::TLS13),
            _ => return Err(err(format!("{word}: SSL protocol not recognized"))),
        }
    }
    if wanted.is_empty() {
        return Err(err(
            "none of these is supported (ovn-agent speaks TLSv1.2 and TLSv1.3)".into(),
        ));
    }
    Ok(wanted)
}

fn openssl_name(suite: &SupportedCipherSuite) -> Option<&'static str> {
    let iana = suite.suite().as_str()?;
    OPENSSL_NAMES
        .iter()
        .find(|(i, _)| *i == iana)
        .map(|(_, o)| *o)
}

fn selects(word: &str, suite: &SupportedCipherSuite) -> bool {
    let Some(name) = openssl_name(suite) else {
        return false;
    };
    let iana = suite.suite().as_str().unwrap_or_default();
    let word = word.to_ascii_uppercase();
    matches!(word.as_str(), "ALL" | "DEFAULT" | "HIGH")
        || word == name
        || word == iana
        || name.split('-').any(|part| part == word)
}

/// `provider` with the TLS 1.2 suites of a `--ssl-ciphers` list (`None`: all).
pub(super) fn provider(
    ciphers: Option<&str>,
    mut provider: CryptoProvider,
) -> Result<CryptoProvider, TlsError> {
    let Some(list) = ciphers else {
        return Ok(provider);
    };
    let tls12: Vec<SupportedCipherSuite> = provider
        .cipher_suites
        .iter()
        .copied()
        .filter(|s| s.version().version == ProtocolVersion::TLSv1_2)
        .collect();
    let mut chosen: Vec<SupportedCipherSuite> = Vec::new();
    let mut removed: Vec<SupportedCipherSuite> = Vec::new();
    for word in words(list) {
        if word.starts_with('@') || word.starts_with('+') {
            continue;
        }
        if let Some(gone) = word.strip_prefix('!').or_else(|| word.strip_prefix('-')) {
            removed.extend(tls12.iter().copied().filter(|s| selects(gone, s)));
            continue;
        }
        for s in tls12.iter().copied().filter(|s| selects(word, s)) {
            if !chosen.iter().any(|c| c.suite() == s.suite()) {
                chosen.push(s);
            }
        }
    }
    chosen.retain(|s| !removed.iter().any(|r| r.suite() == s.suite()));
    if chosen.is_empty() {
        return Err(TlsError::Ciphers(
            list.to_owned(),
            "selects none of the TLS 1.2 suites ovn-agent offers (ECDHE with AES-GCM or CHACHA20-POLY1305)"
                .into(),
        ));
    }
    provider
        .cipher_suites
        .retain(|s| s.version().version != ProtocolVersion::TLSv1_2);
    provider.cipher_suites.extend(chosen);
    Ok(provider)
}
