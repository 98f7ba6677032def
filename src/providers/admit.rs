//! Admission of large answers. A source that finds, once it can tell, that its answer will be
//! large (a files source, after opening a file of several MiB) says so before it reads the
//! bytes (`expect`); the caller that set an admitter around the request (`with`: the server,
//! with the session's answer budget on stdio and the budget of all clients' answers over HTTP)
//! makes it wait until the answers already being made leave room. So concurrent large reads
//! are admitted one budget's worth at a time instead of all being read at once (8 reads of a
//! 256 MiB file held 1.9 GiB). Without an admitter (the CLI) nothing waits.

use std::future::Future;
use std::sync::Arc;

use super::BoxFut;

/// Waits until an answer of about the given bytes may be made.
pub(crate) type Admitter = Arc<dyn Fn(usize) -> BoxFut<()> + Send + Sync>;

tokio::task_local! {
    static ADMITTER: Admitter;
}

/// Runs `fut` (one request) with `admitter` asked before large answers are made.
pub(crate) async fn with<F: Future>(admitter: Admitter, fut: F) -> F::Output {
    ADMITTER.scope(admitter, fut).await
}

/// Waits until an answer of about `bytes` may be made (at once without an admitter).
pub(crate) async fn expect(bytes: usize) {
    if let Ok(admit) = ADMITTER.try_with(Arc::clone) {
        admit(bytes).await;
    }
}

/// What answering `size` bytes of a file holds at its peak, about: the bytes read, their
/// base64 (a binary file), and that text again serialized into the answer.
pub(crate) fn read_cost(size: u64) -> usize {
    usize::try_from(size)
        .unwrap_or(usize::MAX)
        .saturating_mul(3)
}
