//! What `--run` names: a directory, or a URL of object storage.

use std::path::PathBuf;

use url::Url;

use crate::StoreError;

/// A run's location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunLocation {
    /// A local or network-mounted directory.
    Local(PathBuf),
    /// Object storage: `s3://bucket/prefix`, `gs://bucket/prefix`, `az://container/prefix`.
    Object(Url),
}

/// URL schemes of object storage, as `object_store` reads them, and `memory`: a store in
/// the process's memory ([`crate::IndexedMemory`]), which one process fills and forgets at
/// its exit: for tests and trials of the code path of object storage without a server.
const OBJECT_SCHEMES: [&str; 8] = ["s3", "s3a", "gs", "az", "adl", "azure", "abfss", "memory"];

impl RunLocation {
    /// Parses `--run`: a path, a `file://` URL, or an object store URL with a bucket.
    pub fn parse(text: &str) -> Result<RunLocation, StoreError> {
        let bad = |why: String| StoreError::BadLocation(format!("{text}: {why}"));
        let Some((scheme, rest)) = text.split_once("://") else {
            // `s3:/bucket/x` (one slash) is a mistyped URL, not a directory named `s3:`.
            if let Some((scheme, _)) = text.split_once(':')
                && (scheme == "file" || OBJECT_SCHEMES.contains(&scheme))
            {
                return Err(bad(format!(
                    "two slashes are missing after `{scheme}:`: write it as {scheme}://..."
                )));
            }
            return Ok(RunLocation::Local(PathBuf::from(text)));
        };
        if scheme == "file" {
            return Ok(RunLocation::Local(PathBuf::from(rest)));
        }
        if !OBJECT_SCHEMES.contains(&scheme) {
            return Err(bad(format!(
                "unknown URL scheme {scheme}://; a run is a directory, s3://, gs://, az:// or memory://"
            )));
        }
        let url = Url::parse(text).map_err(|e| bad(e.to_string()))?;
        if url.host_str().is_none_or(str::is_empty) {
            return Err(bad("no bucket: write it as s3://BUCKET/PREFIX".to_owned()));
        }
        Ok(RunLocation::Object(url))
    }

    /// Whether this is object storage.
    pub fn is_object_store(&self) -> bool {
        matches!(self, RunLocation::Object(_))
    }
}

impl std::fmt::Display for RunLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunLocation::Local(p) => write!(f, "{}", p.display()),
            RunLocation::Object(u) => write!(f, "{u}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_urls() {
        assert_eq!(
            RunLocation::parse("runs/x").unwrap(),
            RunLocation::Local("runs/x".into())
        );
        assert_eq!(
            RunLocation::parse("file:///tmp/r").unwrap(),
            RunLocation::Local("/tmp/r".into())
        );
        let s3 = RunLocation::parse("s3://bucket/runs/x").unwrap();
        assert!(s3.is_object_store());
        assert_eq!(s3.to_string(), "s3://bucket/runs/x");
        // A local directory may hold a colon; only a storage scheme before it is refused.
        assert_eq!(
            RunLocation::parse("runs/a:b").unwrap(),
            RunLocation::Local("runs/a:b".into())
        );
        for bad in [
            "ftp://host/x",
            "s3:///x",
            "http://x/y",
            "s3:/bucket/x",
            "gs:bucket/x",
            "file:/tmp/r",
        ] {
            let e = RunLocation::parse(bad).unwrap_err();
            assert!(e.is_user_error(), "{bad}: {e}");
            assert!(e.to_string().contains(bad), "{bad}: {e}");
        }
    }
}
