//! The document capability: what an engine that stores documents rather than rows (MongoDB,
//! or a MongoDB-wire server) offers the steps that can run on it. A step that needs SQL asks
//! `Engine::connect` and is `skipped` on such an engine; a step that can run on documents asks
//! `Engine::documents()` for this.

use super::{LoadOutcome, LoadRequest, Result};

/// A document engine's collections in dbduel's own (marked) database. Shared by reference
/// across worker threads; each worker opens its own [`DocSession`].
pub trait Documents: Send + Sync {
    /// Drop the collection if it exists and create it empty (only ever in dbduel's database).
    fn recreate(&self, collection: &str) -> Result<()>;
    /// Load a tab-separated file as documents, one a line, by the engine's bulk path: fields
    /// named for the table's columns, the primary key as `_id`, integers as 64-bit integers.
    fn bulk_load(&self, req: &LoadRequest<'_>) -> Result<LoadOutcome>;
    /// Create a secondary index over `fields` (ascending).
    fn create_index(&self, collection: &str, name: &str, fields: &[String]) -> Result<()>;
    /// Documents in the collection, counted by the server.
    fn count(&self, collection: &str) -> Result<u64>;
    /// A session for one worker thread.
    fn session(&self) -> Result<Box<dyn DocSession>>;
}

/// One client of a document engine, owned by one worker thread, one operation in flight.
pub trait DocSession: Send {
    /// Look up the document whose `_id` is `id`, reading it whole: 1 when found, 0 when
    /// there is none (a miss, not an error).
    fn find_by_id(&mut self, collection: &str, id: i64) -> Result<u64>;
    /// YCSB's read as its MongoDB binding runs it: the document whose text `_id` is `key`,
    /// whole or only `field`; 1 when found, 0 when not.
    fn read_by_key(&mut self, collection: &str, key: &str, field: Option<&str>) -> Result<u64>;
    /// YCSB's update: `$set` these fields of the document `key`; the documents changed.
    fn update_by_key(
        &mut self,
        collection: &str,
        key: &str,
        fields: &[(&str, &str)],
    ) -> Result<u64>;
    /// YCSB's insert: a document of `_id` `key` and these fields; 1.
    fn insert_doc(&mut self, collection: &str, key: &str, fields: &[(&str, &str)]) -> Result<u64>;
    /// YCSB's scan: up to `n` documents from `_id` `key` on, in `_id` order; the documents read.
    fn scan_from(&mut self, collection: &str, key: &str, n: u64) -> Result<u64>;
}
