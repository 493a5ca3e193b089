//! The trainer lease: who trains a run, and until when.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// A held trainer lease. On a directory it is an OS lock on an open file (released when the
/// process ends, however it ends); on object storage a lease object with an expiry that the
/// holder renews ([`crate::RunStore::renew_lease`]) and a successor may take over once it
/// has expired.
#[derive(Debug)]
pub struct Lease {
    pub(crate) holder: String,
    pub(crate) ttl: Duration,
    pub(crate) expires: SystemTime,
    /// When it expires by this machine's monotonic clock: a time to live after the request
    /// that wrote it was sent (no wall clock, this machine's or another's, moves it).
    pub(crate) valid_until: Option<Instant>,
    pub(crate) inner: LeaseInner,
}

/// How the lease is held.
#[derive(Debug)]
pub(crate) enum LeaseInner {
    /// The locked lock file (a directory).
    File(#[allow(dead_code)] std::fs::File),
    /// The version of the lease object this holder wrote last (object storage).
    Object {
        e_tag: Option<String>,
        version: Option<String>,
    },
}

impl Lease {
    /// Who holds it.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// When it expires unless renewed (far in the future for an OS lock, which does not).
    pub fn expires(&self) -> SystemTime {
        self.expires
    }

    /// Whether it is time to renew: a third of its time to live has passed, which leaves two
    /// more tries before it expires.
    pub fn renewal_due(&self) -> bool {
        match self.inner {
            LeaseInner::File(_) => false,
            LeaseInner::Object { .. } => self
                .expires
                .duration_since(SystemTime::now())
                .map_or(true, |left| left < self.ttl * 2 / 3),
        }
    }
}

/// The lease object's content.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct LeaseRecord {
    /// Who holds it.
    pub holder: String,
    /// Expiry, milliseconds since the Unix epoch (wall clock of the holder's machine).
    pub expires_unix_ms: u64,
    /// The holder's time to live in milliseconds: how long a successor watches the lease
    /// unchanged before it takes it over (absent in leases of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
}

impl LeaseRecord {
    /// A record for `holder` expiring `ttl` from now.
    pub fn new(holder: &str, ttl: Duration) -> LeaseRecord {
        LeaseRecord {
            holder: holder.to_owned(),
            expires_unix_ms: unix_ms(SystemTime::now() + ttl),
            ttl_ms: Some(ttl.as_millis() as u64),
        }
    }

    /// How long a successor watches the lease unchanged before it takes it over: the
    /// holder's time to live (at most an hour), or the successor's own `ttl` for a lease of an
    /// older version.
    pub fn watch(&self, ttl: Duration) -> Duration {
        self.ttl_ms
            .map_or(ttl, Duration::from_millis)
            .min(Duration::from_secs(3600))
    }

    /// The expiry as a time.
    pub fn expires(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.expires_unix_ms)
    }

    /// Whether it has expired by this machine's clock.
    pub fn expired(&self) -> bool {
        self.expires() <= SystemTime::now()
    }

    /// Whether its holder gave it up ([`crate::RunStore::release_lease`]).
    pub fn released(&self) -> bool {
        self.expires_unix_ms == 0
    }

    /// ` (lease expires in N s)` for messages.
    pub fn until(&self) -> String {
        let left = self
            .expires()
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        format!(" (lease expires in {} s unless renewed)", left.as_secs())
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
