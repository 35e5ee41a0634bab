//! The accept loop and one task per connection: plain TCP, or TLS once
//! its handshake is done; a place for each connection under the caps
//! (`limits`), its deadlines (`timed`), and a graceful end for every
//! connection at shutdown.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

use super::limits::{Admission, Answer, Conns, Signal, Slot};
use super::timed::{Deadlines, Timed};
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
    let conns = Arc::new(Conns::new(
        state.options.max_connections,
        state.options.max_connections_per_peer,
    ));
    // Every connection task holds a clone; when all are gone, `done` ends.
    let (alive_tx, mut done) = mpsc::channel::<()>(1);
    tokio::pin!(shutdown);
    loop {
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
        // At the cap the connection idle the longest makes room; with
        // every one busy this waits, and the listener's backlog holds the
        // next ones.
        let (slot, signal) = tokio::select! {
            () = &mut shutdown => break,
            admission = conns.admit(peer.ip()) => match admission {
                Admission::In(slot, signal) => (slot, signal),
                Admission::PeerFull => {
                    tracing::debug!(%peer, "connection refused: its address holds all the connections it may, each busy");
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        let alive = alive_tx.clone();
        let conns = Arc::clone(&conns);
        tokio::spawn(async move {
            serve_connection(stream, &state, peer, Arc::clone(&slot), signal).await;
            conns.release(&slot);
            drop(alive);
        });
    }
    server.shutdown();
    conns.stop_all();
    drop(alive_tx);
    let _ = tokio::time::timeout(state.options.shutdown_grace, done.recv()).await;
    Ok(())
}

/// Serves one accepted connection: the TLS handshake first when serving
/// HTTPS (within the handshake timeout), then HTTP/1.1 until the
/// connection ends, is evicted, or is asked to stop.
async fn serve_connection(
    stream: TcpStream,
    state: &Arc<State>,
    peer: SocketAddr,
    slot: Arc<Slot>,
    mut signal: oneshot::Receiver<Signal>,
) {
    let Some(acceptor) = state.options.tls.as_ref().map(ServerTls::acceptor) else {
        return serve_http(stream, state, peer, slot, signal).await;
    };
    let timeout = state.options.handshake_timeout;
    let handshake = tokio::time::timeout(timeout, acceptor.accept(stream));
    // A stop or an eviction ends a handshake at once: there is no request
    // to finish.
    let tls = tokio::select! {
        r = handshake => match r {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => return tracing::debug!(%peer, "TLS handshake failed: {e}"),
            Err(_) => return tracing::debug!(%peer, "no TLS handshake within {timeout:?}"),
        },
        _ = &mut signal => return,
    };
    serve_http(tls, state, peer, slot, signal).await;
}

/// Serves HTTP/1.1 on a connection (plain TCP, or TLS once its handshake
/// is done), with its deadlines ([`Timed`]), until it ends, is evicted
/// (dropped at once: it has no request in flight), or is asked to stop
/// (the request in flight finishes first).
async fn serve_http<I>(
    io: I,
    state: &Arc<State>,
    peer: SocketAddr,
    slot: Arc<Slot>,
    signal: oneshot::Receiver<Signal>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let options = &state.options;
    let deadlines = Deadlines {
        header: options.header_timeout,
        idle: options.idle_timeout,
        write: options.write_timeout,
    };
    let io = TokioIo::new(Timed::new(io, Arc::clone(&slot), deadlines));
    let state = Arc::clone(state);
    let service = service_fn(move |req| {
        // The head is complete: the connection is busy until the answer
        // is done.
        let busy = slot.busy();
        let state = Arc::clone(&state);
        async move {
            let response = state.handle(req, peer).await;
            Ok::<_, Infallible>(response.map(|body| Answer::new(body, busy)))
        }
    });
    let conn = http1::Builder::new().serve_connection(io, service);
    tokio::pin!(conn);
    let signal = tokio::select! {
        biased;
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!(%peer, "connection ended: {e}");
            }
            return;
        }
        s = signal => s,
    };
    match signal {
        Ok(Signal::Stop) => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
        // Evicted (it has no request in flight): dropped at once. The
        // sender gone unsent means the runner is gone: the same.
        Ok(Signal::Evict) | Err(_) => {}
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
