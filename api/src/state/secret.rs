//! The daemon's secret and what guards it: the secret itself (compared in constant time, never
//! printed), the page's cookies it signs, and the count of wrong secrets by address
//! ([`crate::wrong_secrets`]), behind one small interface, [`SecretCheck`]. Whether a request
//! must show the secret, and proving its connection, are `crate::guard`'s; this module must not
//! read requests.

use xcd_wire::content_hash;

use crate::activity::Peer;
use crate::problem::ApiError;
use crate::wrong_secrets::{FailedSecrets, retry_after};

/// A secret; compared in constant time, never printed.
#[derive(Clone)]
pub struct Secret {
    hash: [u8; 32],
    /// Signs the page's cookies: derived from the secret, never the secret itself.
    page_key: [u8; 32],
}

type PageMac = hmac::Hmac<sha2::Sha256>;

impl Secret {
    /// Wraps the secret's text.
    pub fn new(text: &str) -> Self {
        let page_key = content_hash(format!("xcd page cookie\0{text}").as_bytes());
        Secret { hash: content_hash(text.as_bytes()), page_key }
    }

    fn page_mac(&self, issued: u64) -> PageMac {
        use hmac::Mac;
        let mut mac = <PageMac as Mac>::new_from_slice(&self.page_key)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(&issued.to_le_bytes());
        mac
    }

    /// The page's cookie value for a browser that gave the secret at `issued` (Unix seconds).
    pub fn page_token(&self, issued: u64) -> String {
        use hmac::Mac;
        format!("{issued}.{}", hex::encode(self.page_mac(issued).finalize().into_bytes()))
    }

    /// True when `token` is a page cookie this secret issued at most `lifetime` seconds before
    /// `now` (and not after it, but for a minute of clock difference).
    pub fn page_token_valid(&self, token: &str, now: u64, lifetime: u64) -> bool {
        use hmac::Mac;
        let Some((issued, tag)) = token.split_once('.') else {
            return false;
        };
        let (Ok(issued), Ok(tag)) = (issued.parse::<u64>(), hex::decode(tag)) else {
            return false;
        };
        issued <= now.saturating_add(60)
            && now.saturating_sub(issued) <= lifetime
            && self.page_mac(issued).verify_slice(&tag).is_ok()
    }

    /// True when `given` is the secret. Both sides are hashed first, so the comparison takes the
    /// same time whatever the length or content of `given`.
    pub fn matches(&self, given: &str) -> bool {
        use subtle::ConstantTimeEq;
        bool::from(self.hash.ct_eq(&content_hash(given.as_bytes())))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// The daemon's secret, if it has one, and the wrong secrets sent to it lately.
pub(crate) struct SecretCheck {
    secret: Option<Secret>,
    failed: FailedSecrets,
}

impl SecretCheck {
    /// Guards with `secret` (none: nothing to show), holding back an address after `failures`
    /// wrong secrets.
    pub(crate) fn new(secret: Option<Secret>, failures: u32) -> SecretCheck {
        SecretCheck { secret, failed: FailedSecrets::new(failures) }
    }

    /// Whether the daemon has a secret.
    pub(crate) fn is_set(&self) -> bool {
        self.secret.is_some()
    }

    /// Checks `token`, sent by `peer`, against the secret, holding back an address that sent too
    /// many wrong ones unless the connection has already shown the secret itself (`proven`). A
    /// daemon with no secret refuses it as not set.
    pub(crate) fn given(&self, peer: Peer, proven: bool, token: &str) -> Result<(), ApiError> {
        let Some(secret) = &self.secret else {
            return Err(ApiError::SecretNotSet);
        };
        let now = std::time::Instant::now();
        if let Some(client) = peer.client.filter(|_| !proven) {
            self.failed
                .may_compare(client, now)
                .map_err(|wait| ApiError::TooManyFailures { retry_after: retry_after(wait) })?;
        }
        if secret.matches(token) {
            if let Some(client) = peer.client {
                self.failed.succeeded(client, now);
            }
            return Ok(());
        }
        if let Some(client) = peer.client {
            if let Some(hold) = self.failed.failed(client, now) {
                tracing::warn!(%client, "{} wrong secrets or more: held back for {} s", self.failed.free(), hold.as_secs());
            }
        }
        Err(ApiError::SecretRefused)
    }

    /// The page's cookie value for a browser that gave the secret now (Unix seconds); none
    /// without a secret.
    pub(crate) fn page_cookie(&self, now: u64) -> Option<String> {
        self.secret.as_ref().map(|s| s.page_token(now))
    }

    /// Whether `value` is a page cookie the secret issued at most `lifetime` seconds before `now`.
    pub(crate) fn page_cookie_valid(&self, value: &str, now: u64, lifetime: u64) -> bool {
        self.secret.as_ref().is_some_and(|s| s.page_token_valid(value, now, lifetime))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_tokens_are_bound_to_the_secret_and_expire() {
        let secret = Secret::new("correct-horse-battery");
        let day = 24 * 3600;
        let token = secret.page_token(1_000_000);
        assert!(secret.page_token_valid(&token, 1_000_000 + day, 30 * day));
        assert!(!secret.page_token_valid(&token, 1_000_000 + 31 * day, 30 * day), "expired");
        assert!(!secret.page_token_valid(&token, 1_000_000 - 3600, 30 * day), "issued in the future");
        assert!(!Secret::new("another").page_token_valid(&token, 1_000_000, 30 * day), "another secret's");
        let (issued, tag) = token.split_once('.').expect("issued.tag");
        assert!(!secret.page_token_valid(
            &format!("{}.{tag}", issued.parse::<u64>().expect("a number") + 1),
            1_000_001,
            30 * day
        ));
        for bad in ["", ".", "x.y", "1000000", "1000000.zz", &format!("1000000.{}", &tag[..10])] {
            assert!(!secret.page_token_valid(bad, 1_000_000, 30 * day), "{bad:?}");
        }
        assert!(!token.contains("correct-horse-battery") && !format!("{secret:?}").contains("horse"));
    }
}
