//! A cancellation handle for one turn (Ctrl-C in the CLI).

use std::sync::Arc;

use tokio::sync::watch;

/// Cancels a turn: the model request or tool call in flight is dropped
/// (a dropped `Host::call` sends the server `notifications/cancelled`)
/// and the turn ends. Cheap to clone; clones share the state.
#[derive(Debug, Clone)]
pub struct CancelToken {
    tx: Arc<watch::Sender<bool>>,
}

impl Default for CancelToken {
    fn default() -> Self {
        CancelToken::new()
    }
}

impl CancelToken {
    /// A token not cancelled yet.
    pub fn new() -> CancelToken {
        CancelToken {
            tx: Arc::new(watch::channel(false).0),
        }
    }

    /// Cancels.
    pub fn cancel(&self) {
        self.tx.send_replace(true);
    }

    /// Whether it was cancelled.
    pub fn is_cancelled(&self) -> bool {
        *self.tx.borrow()
    }

    /// Completes once cancelled.
    ///
    /// # Cancel safety
    /// Safe: nothing is lost when dropped.
    pub async fn cancelled(&self) {
        let mut rx = self.tx.subscribe();
        // The sender lives in `self`, so waiting cannot fail.
        let _ = rx.wait_for(|c| *c).await;
    }
}
