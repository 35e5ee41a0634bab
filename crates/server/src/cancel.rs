//! A cancellation flag for one request: set once, observed by polling or
//! by awaiting. Lighter than a tree of tokens: requests have no children,
//! and creating, cloning and dropping one must cost next to nothing on the
//! hot path.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Fires when a request is cancelled (stdio `notifications/cancelled`, the
/// HTTP response stream closed, the server shutting down). Cheap to clone;
/// all clones share the flag.
#[derive(Clone, Debug, Default)]
pub struct Cancellation {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    cancelled: AtomicBool,
    notify: Notify,
}

impl Cancellation {
    /// A flag that is not set.
    pub fn new() -> Self {
        Cancellation::default()
    }

    /// Sets the flag and wakes everyone waiting; setting it again does
    /// nothing.
    pub fn cancel(&self) {
        if !self.inner.cancelled.swap(true, Ordering::AcqRel) {
            self.inner.notify.notify_waiters();
        }
    }

    /// Whether the flag is set.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// Completes once the flag is set.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future loses nothing.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            // Register before checking, so a cancel between the check and
            // the await is not missed.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }

    /// Whether two handles share one flag.
    pub fn same(&self, other: &Cancellation) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiters_wake_on_cancel() {
        let c = Cancellation::new();
        let waiter = tokio::spawn({
            let c = c.clone();
            async move { c.cancelled().await }
        });
        tokio::task::yield_now().await;
        assert!(!c.is_cancelled());
        c.cancel();
        waiter.await.unwrap();
        assert!(c.is_cancelled());
        // Already cancelled: completes at once.
        c.cancelled().await;
        assert!(c.same(&c.clone()));
        assert!(!c.same(&Cancellation::new()));
    }
}
