//! The accept loop and one task per connection: plain TCP, or TLS once
//! its handshake is done; a graceful end for every connection at shutdown.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::{HttpOptions, State};
use crate::error::ServeError;
use crate::runner::forward;
use crate::runner::headers::Guard;
use crate::runner::tls::ServerTls;
use crate::server::Server;

/// Serves `server` on `listener` until `shutdown` completes, then stops
/// accepting, ends listen streams gracefully and lets connections finish
/// (bounded by the shutdown grace).
///
/// Bind to `127.0.0.1` for local servers (HTTP-S-04).
///
/// # Errors
/// [`ServeError::Io`] when the listener fails for good.
pub async fn serve(
    server: Server,
    listener: TcpListener,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let local = listener.local_addr().map_err(|source| ServeError::Io {
        context: "cannot read the listener's address",
        source,
    })?;
    let guard = Guard {
        hosts: options
            .hosts
            .clone()
            .unwrap_or_else(|| Guard::for_bind(&local).hosts),
        origins: options.origins.clone(),
    };
    let peers = forward::Peers::new(options.peer_tls.clone());
    let state = Arc::new(State {
        server: server.clone(),
        guard,
        options,
        peers,
    });
    let permits = Arc::new(Semaphore::new(state.options.max_connections));
    // Every connection task holds a clone; when all are gone, `done` ends.
    let (alive_tx, mut done) = mpsc::channel::<()>(1);
    let stops = Arc::new(Stops::default());
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            () = &mut shutdown => break,
            p = Arc::clone(&permits).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    // Out of descriptors and the like: wait and go on.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        let alive = alive_tx.clone();
        let (key, stop) = stops.register();
        let stops = Arc::clone(&stops);
        tokio::spawn(async move {
            let mut stop = stop;
            match state.options.tls.as_ref().map(ServerTls::acceptor) {
                None => serve_connection(stream, state, peer, stop).await,
                Some(acceptor) => {
                    let timeout = state.options.handshake_timeout;
                    let handshake = tokio::time::timeout(timeout, acceptor.accept(stream));
                    let tls = tokio::select! {
                        r = handshake => match r {
                            Ok(Ok(tls)) => Some(tls),
                            Ok(Err(e)) => {
                                tracing::debug!(%peer, "TLS handshake failed: {e}");
                                None
                            }
                            Err(_) => {
                                tracing::debug!(%peer, "no TLS handshake within {timeout:?}");
                                None
                            }
                        },
                        _ = &mut stop => None,
                    };
                    if let Some(tls) = tls {
                        serve_connection(tls, state, peer, stop).await;
                    }
                }
            }
            stops.forget(key);
            drop(permit);
            drop(alive);
        });
    }
    server.shutdown();
    stops.stop_all();
    drop(alive_tx);
    let _ = tokio::time::timeout(state.options.shutdown_grace, done.recv()).await;
    Ok(())
}

/// Serves HTTP/1.1 on one accepted connection (plain TCP, or TLS once
/// its handshake is done) until it ends or `stop` asks for a graceful end.
pub(super) async fn serve_connection<I>(
    io: I,
    state: Arc<State>,
    peer: SocketAddr,
    stop: oneshot::Receiver<()>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| {
        let state = Arc::clone(&state);
        async move { Ok::<_, Infallible>(state.handle(req, peer).await) }
    });
    let conn = http1::Builder::new().serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        biased;
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!(%peer, "connection ended: {e}");
            }
        }
        _ = stop => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// Binds `addr` and serves until `shutdown`; a convenience over [`serve`].
///
/// # Errors
/// [`ServeError::Bind`] when the address cannot be bound.
pub async fn bind_and_serve(
    server: Server,
    addr: SocketAddr,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: addr.to_string(),
            source,
        })?;
    serve(server, listener, options, shutdown).await
}

/// The shutdown signal of each open connection: a oneshot per connection,
/// whose receiver costs nothing to poll while it waits (a shared flag with
/// a wait list would take a lock on every wake of every connection).
#[derive(Default)]
pub(super) struct Stops {
    pub(super) next: AtomicU64,
    pub(super) senders: Mutex<HashMap<u64, oneshot::Sender<()>>>,
}

impl Stops {
    pub(super) fn register(&self) -> (u64, oneshot::Receiver<()>) {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock().insert(key, tx);
        (key, rx)
    }

    pub(super) fn forget(&self, key: u64) {
        self.lock().remove(&key);
    }

    pub(super) fn stop_all(&self) {
        for (_, tx) in self.lock().drain() {
            let _ = tx.send(());
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, HashMap<u64, oneshot::Sender<()>>> {
        self.senders.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
