//! `memory://`: object storage in the process's memory, for tests and benchmarks of the code
//! path of object storage without a server. `object_store`'s `InMemory` keeps the objects;
//! [`IndexedMemory`] keeps their keys in order beside it, so that a listing after a key
//! costs what S3's `start-after` costs (the keys after it) instead of a walk of every key
//! (`InMemory` lists everything and filters): a benchmark of a run holding a million chunks
//! then measures the trainer's listings, not the store's.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::{Arc, RwLock};

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, UploadPart,
};

/// The keys of the objects, in order.
type Index = Arc<RwLock<BTreeSet<Path>>>;

fn insert(index: &Index, key: &Path) {
    index
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key.clone());
}

/// Whether `key` lies under `prefix` (not the prefix itself), as a listing counts it.
fn under(key: &Path, prefix: &Path) -> bool {
    key.prefix_match(prefix)
        .is_some_and(|mut rest| rest.next().is_some())
}

/// `InMemory` with its keys in order: every write that lands adds its key, every delete
/// removes it, and [`ObjectStore::list_with_offset`] reads the keys after the offset alone.
#[derive(Debug, Default)]
pub struct IndexedMemory {
    inner: Arc<InMemory>,
    keys: Index,
}

impl IndexedMemory {
    /// An empty store.
    pub fn new() -> IndexedMemory {
        IndexedMemory::default()
    }
}

impl std::fmt::Display for IndexedMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IndexedMemory({})", self.inner)
    }
}

/// A multipart upload whose key joins the index when it completes.
#[derive(Debug)]
struct IndexedUpload {
    upload: Box<dyn MultipartUpload>,
    key: Path,
    keys: Index,
}

#[async_trait::async_trait]
impl MultipartUpload for IndexedUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.upload.put_part(data)
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        let done = self.upload.complete().await?;
        insert(&self.keys, &self.key);
        Ok(done)
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.upload.abort().await
    }
}

#[async_trait::async_trait]
impl ObjectStore for IndexedMemory {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let put = self.inner.put_opts(location, payload, opts).await?;
        insert(&self.keys, location);
        Ok(put)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        let upload = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(IndexedUpload {
            upload,
            key: location.clone(),
            keys: self.keys.clone(),
        }))
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        let keys = self.keys.clone();
        self.inner
            .delete_stream(locations)
            .inspect_ok(move |deleted| {
                keys.write()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(deleted);
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let root = Path::default();
        let prefix = prefix.unwrap_or(&root);
        let after: Vec<Path> = self
            .keys
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .range((Bound::Excluded(offset), Bound::Unbounded))
            // The keys under the prefix are contiguous in order: the walk stops at the first
            // key past them, so the keys of later prefixes (a run's PGN after its chunks) are
            // never read.
            .skip_while(|k| !under(k, prefix))
            .take_while(|k| under(k, prefix))
            .cloned()
            .collect();
        let inner = self.inner.clone();
        futures::stream::iter(after)
            .then(move |key| {
                let inner = inner.clone();
                async move { inner.head(&key).await }
            })
            // A key deleted since the index was read is simply gone, as in a listing.
            .filter(|meta| {
                futures::future::ready(!matches!(meta, Err(object_store::Error::NotFound { .. })))
            })
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await?;
        insert(&self.keys, to);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn listed(store: &dyn ObjectStore, prefix: &str, offset: &str) -> Vec<String> {
        let mut keys: Vec<String> = store
            .list_with_offset(Some(&Path::from(prefix)), &Path::from(offset))
            .map_ok(|m| m.location.to_string())
            .try_collect()
            .await
            .unwrap();
        keys.sort();
        keys
    }

    #[test]
    fn a_listing_after_a_key_matches_a_filtered_listing_of_everything() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let indexed = IndexedMemory::new();
            let plain = InMemory::new();
            let stores: [&dyn ObjectStore; 2] = [&indexed, &plain];
            for store in stores {
                for key in ["a/1", "a/2", "a/3", "a/30", "ab/1", "b/1", "a/x/4"] {
                    store.put(&Path::from(key), "x".into()).await.unwrap();
                }
                store.delete(&Path::from("a/2")).await.unwrap();
                store
                    .copy(&Path::from("a/1"), &Path::from("a/5"))
                    .await
                    .unwrap();
                let mut upload = store.put_multipart(&Path::from("a/6")).await.unwrap();
                upload.put_part("y".into()).await.unwrap();
                upload.complete().await.unwrap();
                // A write refused (the key exists) adds nothing.
                let create = PutOptions::from(object_store::PutMode::Create);
                assert!(
                    store
                        .put_opts(&Path::from("a/3"), "z".into(), create)
                        .await
                        .is_err()
                );
            }
            for (prefix, offset) in [("a", "a/1"), ("a", "a/0"), ("a", "a/6"), ("b", "a/9")] {
                let want = listed(&plain, prefix, offset).await;
                assert_eq!(
                    listed(&indexed, prefix, offset).await,
                    want,
                    "{prefix} after {offset}"
                );
            }
            assert_eq!(
                listed(&indexed, "a", "a/1").await,
                ["a/3", "a/30", "a/5", "a/6", "a/x/4"]
            );
        });
    }
}
