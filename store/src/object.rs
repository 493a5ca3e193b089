//! A run on object storage through the `object_store` crate: S3 (and S3-compatible servers
//! such as MinIO or Ceph), Google Cloud Storage and Azure Blob Storage. Keys live under the
//! URL's prefix. Create-if-absent and the lease's renewals are conditional writes
//! (`If-None-Match: *`, `If-Match: <ETag>`), which S3, GCS, Azure and MinIO all honour.
//!
//! Credentials and endpoints come from each cloud's standard environment variables
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL` for an
//! S3-compatible server; `GOOGLE_APPLICATION_CREDENTIALS`; `AZURE_STORAGE_ACCOUNT_NAME`,
//! `AZURE_STORAGE_ACCOUNT_KEY`), from `~/.aws/credentials` (profile `AWS_PROFILE`, else
//! `default`) when the environment has no AWS key, or from the machine's role. Transient
//! errors are retried with exponential backoff for up to three minutes
//! (`CFZERO_STORE_RETRY_SECONDS` to change it).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::path::Path;
use object_store::{
    BackoffConfig, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig,
    UpdateVersion,
};
use url::Url;

use crate::lease::{Lease, LeaseInner, LeaseRecord};
use crate::{ObjectInfo, RunStore, StoreError, check_key};

/// The lease object's key.
pub const LEASE_KEY: &str = "trainer.lease";

/// How long opening a store may take (the first request checks bucket and credentials).
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);

/// A run under a prefix of a bucket.
#[derive(Debug)]
pub struct ObjectRunStore {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    location: String,
    runtime: tokio::runtime::Runtime,
    /// How long one write (with all its retries) may take before it is abandoned; `None`:
    /// the retry budget alone bounds it. Reads are never cut short. A trainer sets it below its lease's fencing margin
    /// ([`crate::fence`]), so that no write it starts can land after its lease expired.
    budget: Option<Duration>,
}

/// The retries of every request: exponential backoff from 100 ms to 15 s, for up to 3
/// minutes (the crate's advice: below 5, so that signed requests stay valid).
fn retry() -> RetryConfig {
    // How long one request keeps retrying before it fails (and a worker spools its games
    // for later): `CFZERO_STORE_RETRY_SECONDS`, 180 by default.
    let retry_timeout = std::env::var("CFZERO_STORE_RETRY_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map_or(Duration::from_secs(180), Duration::from_secs_f64);
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(15),
            base: 2.0,
        },
        max_retries: 10,
        retry_timeout,
    }
}

/// `(key id, secret, session token)` of profile `AWS_PROFILE` (else `default`) in
/// `AWS_SHARED_CREDENTIALS_FILE` (else `~/.aws/credentials`), if there is one.
fn aws_profile_credentials() -> Option<(String, String, Option<String>)> {
    let file = std::env::var_os("AWS_SHARED_CREDENTIALS_FILE")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".aws/credentials"))
        })?;
    let text = std::fs::read_to_string(file).ok()?;
    let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".to_owned());
    let mut in_profile = false;
    let (mut id, mut secret, mut token) = (None, None, None);
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_profile = name.trim() == profile;
        } else if in_profile && let Some((k, v)) = line.split_once('=') {
            let v = v.trim().to_owned();
            match k.trim() {
                "aws_access_key_id" => id = Some(v),
                "aws_secret_access_key" => secret = Some(v),
                "aws_session_token" => token = Some(v),
                _ => {}
            }
        }
    }
    Some((id?, secret?, token))
}

/// Why no request to `url` can be signed, if that is known before trying: an S3 URL with no
/// key in the environment or `~/.aws/credentials`, no web identity or container credentials,
/// and the instance role ruled out by `AWS_EC2_METADATA_DISABLED=true` (as the AWS SDKs read
/// it). Without that variable the machine's role is asked, which only an EC2 machine answers.
fn missing_credentials(url: &Url) -> Option<String> {
    if !matches!(url.scheme(), "s3" | "s3a") {
        return None;
    }
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    let role_disabled =
        std::env::var("AWS_EC2_METADATA_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    let any = set("AWS_ACCESS_KEY_ID")
        || set("AWS_WEB_IDENTITY_TOKEN_FILE")
        || set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        || set("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        || aws_profile_credentials().is_some()
        || !role_disabled;
    (!any).then(|| {
        "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws/credentials (AWS_PROFILE)".to_owned()
    })
}

/// The `object_store` client of `url` (bucket from the URL, everything else from the
/// environment).
fn client(url: &Url) -> object_store::Result<Arc<dyn ObjectStore>> {
    Ok(match url.scheme() {
        "s3" | "s3a" => {
            let mut b = AmazonS3Builder::from_env()
                .with_url(url.as_str())
                .with_retry(retry());
            if std::env::var_os("AWS_ACCESS_KEY_ID").is_none()
                && let Some((id, secret, token)) = aws_profile_credentials()
            {
                b = b.with_access_key_id(id).with_secret_access_key(secret);
                if let Some(t) = token {
                    b = b.with_token(t);
                }
            }
            // A plain-HTTP endpoint (a MinIO or test server on the local network) needs this.
            let endpoint = std::env::var("AWS_ENDPOINT_URL")
                .or_else(|_| std::env::var("AWS_ENDPOINT"))
                .unwrap_or_default();
            if endpoint.starts_with("http://") {
                b = b.with_allow_http(true);
            }
            Arc::new(b.build()?)
        }
        // Nothing to configure: a new, empty store of this process.
        "memory" => Arc::new(crate::memory::IndexedMemory::new()),
        "gs" => Arc::new(
            GoogleCloudStorageBuilder::from_env()
                .with_url(url.as_str())
                .with_retry(retry())
                .build()?,
        ),
        _ => Arc::new(
            MicrosoftAzureBuilder::from_env()
                .with_url(url.as_str())
                .with_retry(retry())
                .build()?,
        ),
    })
}

impl ObjectRunStore {
    /// Opens the run at `url` and checks that its bucket can be listed (so that a missing
    /// bucket or missing credentials are found now, not at the first write). A refusal (no
    /// such bucket, no permission, bad credentials) is the user's to fix
    /// ([`StoreError::BadLocation`]); a store that does not answer, or answers with a server
    /// error, may answer later ([`StoreError::Backend`]: not the user's input).
    pub fn open(url: &Url) -> Result<ObjectRunStore, StoreError> {
        let opened = ObjectRunStore::open_offline(url)?;
        let bad = |message: String| StoreError::BadLocation(format!("{url}: {message}"));
        let probe = {
            let store = Arc::clone(&opened.store);
            let prefix = opened.prefix.clone();
            async move {
                tokio::time::timeout(OPEN_TIMEOUT, store.list_with_delimiter(Some(&prefix))).await
            }
        };
        let transient = |message: String| StoreError::Backend {
            location: url.to_string(),
            message,
        };
        match opened.runtime.block_on(probe) {
            Ok(Ok(_)) => Ok(opened),
            Ok(Err(
                e @ (object_store::Error::NotFound { .. }
                | object_store::Error::PermissionDenied { .. }
                | object_store::Error::Unauthenticated { .. }),
            )) => Err(bad(one_line(&e))),
            Ok(Err(e)) => Err(transient(one_line(&e))),
            Err(_) => Err(transient(format!(
                "no answer in {} s (the endpoint is unreachable or slow; try again)",
                OPEN_TIMEOUT.as_secs()
            ))),
        }
    }

    /// Opens the run at `url` without asking the store anything (a worker that has what it
    /// needs in its cache plays on while the store is unreachable); the credentials are
    /// still checked.
    pub fn open_offline(url: &Url) -> Result<ObjectRunStore, StoreError> {
        let location = url.to_string();
        let bad = |message: String| StoreError::BadLocation(format!("{location}: {message}"));
        if let Some(missing) = missing_credentials(url) {
            return Err(bad(missing));
        }
        let store = client(url).map_err(|e| bad(one_line(&e)))?;
        let runtime = io_runtime().map_err(|e| bad(format!("starting the I/O runtime: {e}")))?;
        Ok(ObjectRunStore {
            store,
            prefix: Path::from(url.path().trim_matches('/')),
            location,
            runtime,
            budget: None,
        })
    }

    /// A store over any `object_store` client (an in-memory one in tests), keys under
    /// `prefix`.
    pub fn with_client(
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        location: &str,
    ) -> ObjectRunStore {
        ObjectRunStore {
            store,
            prefix: Path::from(prefix.trim_matches('/')),
            location: location.to_owned(),
            runtime: io_runtime().expect("a one-thread tokio runtime starts"),
            budget: None,
        }
    }

    /// Abandons any write (with its retries) that takes longer than `budget`: it fails with
    /// a [`StoreError::Backend`] instead, before the budget's end.
    pub fn set_request_budget(&mut self, budget: Duration) {
        self.budget = Some(budget);
    }

    /// Runs one request to its end on the I/O runtime, within `budget` if there is one.
    fn run<T>(
        &self,
        budget: Option<Duration>,
        request: impl std::future::Future<Output = object_store::Result<T>>,
    ) -> object_store::Result<T> {
        let Some(budget) = budget else {
            return self.runtime.block_on(request);
        };
        self.runtime
            .block_on(async { tokio::time::timeout(budget, request).await })
            .unwrap_or_else(|_| {
                Err(object_store::Error::Generic {
                    store: "cfzero",
                    source: format!(
                        "no answer within {:.1} s (abandoned so that it cannot land late)",
                        budget.as_secs_f64()
                    )
                    .into(),
                })
            })
    }

    /// The budget of a request about the lease of time to live `ttl`: a quarter of it at most,
    /// so that a renewal that fails for good is retried well before the lease expires.
    fn lease_budget(&self, ttl: Duration) -> Option<Duration> {
        let quarter = ttl / 4;
        Some(self.budget.map_or(quarter, |b| b.min(quarter)))
    }

    fn path(&self, key: &str) -> Result<Path, StoreError> {
        check_key(key)?;
        Ok(if self.prefix.as_ref().is_empty() {
            Path::from(key)
        } else {
            Path::from(format!("{}/{key}", self.prefix))
        })
    }

    /// The key of an object path under the prefix.
    fn key_of(&self, path: &Path) -> Option<String> {
        let p = path.as_ref();
        if self.prefix.as_ref().is_empty() {
            return Some(p.to_owned());
        }
        p.strip_prefix(self.prefix.as_ref())
            .and_then(|rest| rest.strip_prefix('/'))
            .map(str::to_owned)
    }

    /// `e` of a request about `key`: a refusal (credentials, permission) or a failure the
    /// store may recover from.
    fn backend(&self, key: &str, e: &object_store::Error) -> StoreError {
        let location = format!("{}/{key}", self.location.trim_end_matches('/'));
        if refuses(e) {
            StoreError::Refused {
                location,
                message: one_line(e),
            }
        } else {
            StoreError::Backend {
                location,
                message: one_line(e),
            }
        }
    }

    /// `e` of a write or a listing, where "not found" can only mean that the bucket is not
    /// there (a missing key is no error for either).
    fn bucket_error(&self, key: &str, e: &object_store::Error) -> StoreError {
        match e {
            object_store::Error::NotFound { .. } => StoreError::Refused {
                location: format!("{}/{key}", self.location.trim_end_matches('/')),
                message: format!("no such bucket ({})", one_line(e)),
            },
            _ => self.backend(key, e),
        }
    }

    /// Waits until the lease object has stayed at `version` for `ttl` on this machine's
    /// monotonic clock, reading it a few times meanwhile. `Err(None)` if it changed (its holder
    /// renewed it, or another trainer took it); `Err(Some(e))` if a read failed.
    fn watch_lease(
        &self,
        version: &UpdateVersion,
        ttl: Duration,
    ) -> Result<(), Option<StoreError>> {
        let seen = Instant::now();
        loop {
            let left = ttl.saturating_sub(seen.elapsed());
            if left.is_zero() {
                return Ok(());
            }
            std::thread::sleep(left.min(ttl / 8).max(Duration::from_millis(10)));
            match self.read_lease(ttl).map_err(Some)? {
                Some((_, v)) if v.e_tag == version.e_tag && v.version == version.version => {}
                _ => return Err(None),
            }
        }
    }

    /// Writes `record` as the lease with `mode`; `Ok(None)` if the condition failed.
    fn write_lease(
        &self,
        record: &LeaseRecord,
        mode: PutMode,
        ttl: Duration,
    ) -> Result<Option<UpdateVersion>, StoreError> {
        let path = self.path(LEASE_KEY)?;
        let bytes = serde_json::to_vec(record).expect("a lease record serializes");
        let opts = PutOptions {
            mode,
            ..PutOptions::default()
        };
        let put = self.run(
            self.lease_budget(ttl),
            self.store.put_opts(&path, PutPayload::from(bytes), opts),
        );
        match put {
            Ok(r) => Ok(Some(UpdateVersion {
                e_tag: r.e_tag,
                version: r.version,
            })),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(None),
            Err(e) => Err(self.backend(LEASE_KEY, &e)),
        }
    }

    /// The lease object and its version, if there is one.
    fn read_lease(
        &self,
        ttl: Duration,
    ) -> Result<Option<(LeaseRecord, UpdateVersion)>, StoreError> {
        let path = self.path(LEASE_KEY)?;
        let got = self.run(self.lease_budget(ttl), async {
            let r = self.store.get(&path).await?;
            let version = UpdateVersion {
                e_tag: r.meta.e_tag.clone(),
                version: r.meta.version.clone(),
            };
            Ok::<_, object_store::Error>((r.bytes().await?, version))
        });
        match got {
            Ok((bytes, version)) => {
                // A lease object that does not parse (written by something else) counts as
                // held by an unknown holder that never expires: a person must look.
                let record = serde_json::from_slice(&bytes).unwrap_or(LeaseRecord {
                    holder: "an unreadable trainer.lease object".to_owned(),
                    expires_unix_ms: u64::MAX,
                    ttl_ms: None,
                });
                Ok(Some((record, version)))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.backend(LEASE_KEY, &e)),
        }
    }
}

/// The runtime the store's requests run on: one I/O thread, driven by `block_on` from any of
/// the caller's threads.
fn io_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
}

/// Whether the store refused a request for good: 401 and 403; a redirect (the bucket lives in
/// another region, or the endpoint is wrong); any other 4xx answer (an expired token, a bad
/// signature, a malformed request: the same request fails the same way) except a timeout, a
/// conflict, a throttle, or S3's 400 `RequestTimeout` (a connection too slow, which a retry
/// can mend). `object_store` reports these statuses only in its error's text.
fn refuses(e: &object_store::Error) -> bool {
    match e {
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => return true,
        // The other statuses (404, 304, 409, 412) have variants of their own, which the
        // callers read as answers, not failures.
        object_store::Error::Generic { .. } => {}
        _ => return false,
    }
    let text = e.to_string();
    if text.contains("redirect without LOCATION") {
        return true;
    }
    let status = text
        .split("status code: ")
        .nth(1)
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse::<u16>().ok());
    match status {
        Some(300..=399) => true,
        Some(408 | 409 | 429) => false,
        Some(400..=499) => !text.contains("<Code>RequestTimeout</Code>"),
        _ => false,
    }
}

/// An `object_store` error on one line (its messages nest sources over several lines).
fn one_line(e: &object_store::Error) -> String {
    e.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

impl RunStore for ObjectRunStore {
    fn location(&self) -> &str {
        &self.location
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.path(key)?;
        let got = self.run(None, async { self.store.get(&path).await?.bytes().await });
        match got {
            Ok(bytes) => Ok(Some(bytes.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.backend(key, &e)),
        }
    }

    fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError> {
        let path = self.path(key)?;
        match self.run(None, self.store.head(&path)) {
            Ok(meta) => Ok(Some(ObjectInfo {
                modified: meta.last_modified.into(),
                size: meta.size,
            })),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.backend(key, &e)),
        }
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.path(key)?;
        let payload = PutPayload::from(bytes.to_vec());
        self.run(self.budget, self.store.put(&path, payload))
            .map(|_| ())
            .map_err(|e| self.bucket_error(key, &e))
    }

    fn put_if_absent(&self, key: &str, bytes: &[u8]) -> Result<bool, StoreError> {
        let path = self.path(key)?;
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let payload = PutPayload::from(bytes.to_vec());
        let put = self.run(self.budget, self.store.put_opts(&path, payload, opts));
        match put {
            Ok(_) => Ok(true),
            // "Exists" may be this very write: a first attempt that succeeded but whose answer
            // was lost (a 5xx, a dropped connection) is retried and then finds its own object.
            // So is a write whose every attempt seemed to fail. Only other bytes mean another
            // writer won.
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(self.get(key)?.is_some_and(|there| there == bytes)),
            Err(e) => match self.get(key) {
                Ok(Some(there)) if there == bytes => Ok(true),
                _ => Err(self.bucket_error(key, &e)),
            },
        }
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        let path = self.path(key)?;
        match self.run(self.budget, self.store.delete(&path)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.backend(key, &e)),
        }
    }

    fn list_after(&self, prefix: &str, after: Option<&str>) -> Result<Vec<String>, StoreError> {
        let dir = self.path(prefix)?;
        let listed = match after {
            Some(a) => {
                let offset = self.path(a)?;
                self.run(
                    None,
                    self.store
                        .list_with_offset(Some(&dir), &offset)
                        .try_collect::<Vec<_>>(),
                )
            }
            None => self.run(None, self.store.list(Some(&dir)).try_collect::<Vec<_>>()),
        };
        let metas = listed.map_err(|e| self.bucket_error(prefix, &e))?;
        let mut keys: Vec<String> = metas
            .iter()
            .filter_map(|m| self.key_of(&m.location))
            .filter(|k| after.is_none_or(|a| k.as_str() > a))
            .collect();
        keys.sort_unstable();
        Ok(keys)
    }

    fn acquire_lease(&self, holder: &str, ttl: Duration) -> Result<Lease, StoreError> {
        let record = LeaseRecord::new(holder, ttl);
        let sent = Instant::now();
        let version = match self.write_lease(&record, PutMode::Create, ttl)? {
            Some(v) => v,
            None => {
                // Someone holds or held it: take it over only if it has expired, and only if
                // nobody else rewrote it since we read it.
                let Some((current, current_version)) = self.read_lease(ttl)? else {
                    // Released between the two requests: try once more from the start.
                    return self
                        .write_lease(&record, PutMode::Create, ttl)?
                        .map(|v| lease(holder, ttl, &record, v, sent))
                        .ok_or_else(|| StoreError::Leased {
                            run: self.location.clone(),
                            holder: "another trainer".to_owned(),
                            until: String::new(),
                        });
                };
                let held = |current: &LeaseRecord| StoreError::Leased {
                    run: self.location.clone(),
                    holder: current.holder.clone(),
                    until: current.until(),
                };
                if !current.expired() && current.holder != holder {
                    return Err(held(&current));
                }
                // Expired by this machine's clock, which may differ from the holder's: unless
                // the holder gave it up (or is this trainer), it is taken only once it has
                // stayed unchanged for the holder's whole time to live on this machine's
                // monotonic clock, in which a live holder renews it twice.
                if !current.released() && current.holder != holder {
                    eprintln!(
                        "note: the trainer lease of {} ({}) has expired by this machine's clock: watching it {} s for a renewal before taking the run over",
                        self.location,
                        current.holder,
                        current.watch(ttl).as_secs_f64().ceil()
                    );
                    self.watch_lease(&current_version, current.watch(ttl))
                        .map_err(|e| e.unwrap_or_else(|| held(&current)))?;
                }
                let sent = Instant::now();
                match self.write_lease(&record, PutMode::Update(current_version), ttl)? {
                    Some(v) => return Ok(lease(holder, ttl, &record, v, sent)),
                    None => return Err(held(&current)),
                }
            }
        };
        Ok(lease(holder, ttl, &record, version, sent))
    }

    fn renew_lease(&self, lease: &mut Lease) -> Result<(), StoreError> {
        let LeaseInner::Object { e_tag, version } = &lease.inner else {
            return Ok(());
        };
        let record = LeaseRecord::new(&lease.holder, lease.ttl);
        let current = UpdateVersion {
            e_tag: e_tag.clone(),
            version: version.clone(),
        };
        let sent = Instant::now();
        match self.write_lease(&record, PutMode::Update(current), lease.ttl)? {
            Some(v) => {
                lease.expires = record.expires();
                lease.valid_until = Some(sent + lease.ttl);
                lease.inner = LeaseInner::Object {
                    e_tag: v.e_tag,
                    version: v.version,
                };
                Ok(())
            }
            // The version moved. A renewal whose answer was lost (it landed, the client
            // retried with the old version) moved it itself: the lease then still names this
            // holder, whose name no other trainer uses, and stays ours at its new version.
            None => match self.read_lease(lease.ttl)? {
                Some((current, v)) if current.holder == lease.holder => {
                    lease.expires = current.expires();
                    lease.valid_until = Some(sent + lease.ttl);
                    lease.inner = LeaseInner::Object {
                        e_tag: v.e_tag,
                        version: v.version,
                    };
                    Ok(())
                }
                other => Err(StoreError::LeaseLost {
                    run: self.location.clone(),
                    holder: other
                        .map_or_else(|| "nobody (it was deleted)".to_owned(), |(r, _)| r.holder),
                }),
            },
        }
    }

    fn release_lease(&self, lease: Lease) -> Result<(), StoreError> {
        let LeaseInner::Object { e_tag, version } = lease.inner else {
            return Ok(());
        };
        // Expired at once, and only if still ours: a successor need not wait.
        let record = LeaseRecord {
            holder: lease.holder,
            expires_unix_ms: 0,
            ttl_ms: None,
        };
        self.write_lease(
            &record,
            PutMode::Update(UpdateVersion { e_tag, version }),
            lease.ttl,
        )
        .map(|_| ())
    }
}

/// The held lease of `record` at `version`, written by a request sent at `sent`.
fn lease(
    holder: &str,
    ttl: Duration,
    record: &LeaseRecord,
    version: UpdateVersion,
    sent: Instant,
) -> Lease {
    Lease {
        holder: holder.to_owned(),
        ttl,
        expires: record.expires().max(SystemTime::now()),
        valid_until: Some(sent + ttl),
        inner: LeaseInner::Object {
            e_tag: version.e_tag,
            version: version.version,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error as `object_store`'s S3 client reports a status, in its text.
    fn answered(text: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: format!("Error performing GET http://s3/bucket/k in 3ms - {text}").into(),
        }
    }

    #[test]
    fn what_a_retry_cannot_mend_is_a_refusal() {
        let refused = [
            "Server returned non-2xx status code: 400 Bad Request: <Error><Code>ExpiredToken</Code></Error>",
            "Server returned non-2xx status code: 301 Moved Permanently: ",
            "Received redirect without LOCATION, this normally indicates an incorrectly configured region",
            "Server returned non-2xx status code: 405 Method Not Allowed: ",
        ];
        for text in refused {
            assert!(refuses(&answered(text)), "{text}");
        }
        let transient = [
            "Server returned non-2xx status code: 400 Bad Request: <Error><Code>RequestTimeout</Code></Error>",
            "Server returned non-2xx status code: 429 Too Many Requests: ",
            "Server returned non-2xx status code: 503 Service Unavailable: <Code>SlowDown</Code>",
            "error sending request: connection refused",
        ];
        for text in transient {
            assert!(!refuses(&answered(text)), "{text}");
        }
        let denied = object_store::Error::PermissionDenied {
            path: "k".into(),
            source: "403".into(),
        };
        assert!(refuses(&denied));
    }

    fn memory() -> Arc<ObjectRunStore> {
        Arc::new(ObjectRunStore::with_client(
            Arc::new(object_store::memory::InMemory::new()),
            "runs/l",
            "memory://runs/l",
        ))
    }

    /// A lease whose holder's clock runs behind this machine's: its record looks expired here.
    fn behind(store: &ObjectRunStore, ttl: Duration) -> UpdateVersion {
        let record = LeaseRecord {
            holder: "slow_clock".into(),
            expires_unix_ms: crate::lease::unix_ms(SystemTime::now()) - 10_000,
            ttl_ms: Some(ttl.as_millis() as u64),
        };
        store
            .write_lease(&record, PutMode::Create, ttl)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn a_lease_that_looks_expired_is_taken_only_after_a_whole_ttl_unchanged() {
        let ttl = Duration::from_millis(800);
        // Its holder renews it (by its own clock, still behind): no takeover.
        let store = memory();
        let mut version = behind(&store, ttl);
        let renewer = {
            let store = store.clone();
            std::thread::spawn(move || {
                for _ in 0..4 {
                    std::thread::sleep(ttl / 4);
                    let record = LeaseRecord {
                        holder: "slow_clock".into(),
                        expires_unix_ms: crate::lease::unix_ms(SystemTime::now()) - 10_000,
                        ttl_ms: Some(ttl.as_millis() as u64),
                    };
                    version = store
                        .write_lease(&record, PutMode::Update(version), ttl)
                        .unwrap()
                        .unwrap();
                }
            })
        };
        match store.acquire_lease("successor", ttl) {
            Err(StoreError::Leased { holder, .. }) => assert_eq!(holder, "slow_clock"),
            other => panic!("took a lease its holder renews: {other:?}"),
        }
        renewer.join().unwrap();

        // Nobody renews it: taken, after a whole time to live.
        let store = memory();
        behind(&store, ttl);
        let start = Instant::now();
        let lease = store.acquire_lease("successor", ttl).unwrap();
        assert!(start.elapsed() >= ttl, "{:?}", start.elapsed());
        assert_eq!(lease.holder(), "successor");
        // A released lease is taken at once.
        store.release_lease(lease).unwrap();
        let start = Instant::now();
        store.acquire_lease("third", ttl).unwrap();
        assert!(start.elapsed() < ttl, "{:?}", start.elapsed());
    }
}
