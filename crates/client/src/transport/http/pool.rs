//! Keep-alive connections to the server's origin, one request at a time
//! each (HTTP/1.1), reused once a response body has been read to its end.
//!
//! The exchange runs in the caller's task: the request goes out in one
//! write, and the response is read on the same connection by whoever polls
//! the response, through [`super::h1`]. No task per connection and no
//! channel to one. A response body dropped before its end (a cancelled
//! request) takes its connection with it, which is exactly the
//! cancellation signal Streamable HTTP wants.

use std::io;
use std::net::Shutdown;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker, ready};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, Response, Uri};
use http_body::{Body, Frame, SizeHint};
use rustls::pki_types::ServerName;
use socket2::SockRef;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, Interest, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::conn::Limits;
use super::failure::Failure;
use super::h1::{self, Decoded, Decoder, HeadError};
use crate::error::Source;
use switchboard_wire::shared::lock;

/// How long an idle connection is kept; servers close theirs around here.
const IDLE_TIMEOUT: Duration = Duration::from_secs(55);
/// Most idle connections kept.
const MAX_IDLE: usize = 256;
/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 8 * 1024;
/// Largest body written in the same write as its head.
const INLINE_BODY: usize = 16 * 1024;
/// Largest read buffer an idle connection keeps (a long response head
/// grows it).
const KEPT_INPUT: usize = 64 * 1024;

/// The connections of one transport.
pub(crate) struct Pool {
    tls: TlsConnector,
    limits: Limits,
    idle: Mutex<Vec<Idle>>,
    /// Every open connection, so `abort_all` can end the busy ones too.
    open: Arc<OpenSockets>,
    closed: AtomicBool,
}

struct Idle {
    conn: Conn,
    since: Instant,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idle = self.idle.lock().map(|i| i.len()).unwrap_or(0);
        f.debug_struct("Pool").field("idle", &idle).finish()
    }
}

impl Pool {
    pub(crate) fn new(tls: Arc<rustls::ClientConfig>, limits: Limits) -> Arc<Pool> {
        Arc::new(Pool {
            tls: TlsConnector::from(tls),
            limits,
            idle: Mutex::new(Vec::new()),
            open: Arc::new(OpenSockets::default()),
            closed: AtomicBool::new(false),
        })
    }

    /// Sends a request to `target`'s origin (`path`: its origin form,
    /// `headers` with `Host`) on an idle connection, or a new one. A
    /// request whose write fails on a reused connection (the server had
    /// just closed it) is sent again on a new one.
    ///
    /// # Errors
    /// [`Failure::Connect`] when no connection can be made or the exchange
    /// fails before the response head, [`Failure::Protocol`] for a head
    /// that is not valid HTTP or is over the limit.
    pub(crate) async fn send(
        self: &Arc<Self>,
        target: &Uri,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Response<PooledBody>, Failure> {
        loop {
            let (mut conn, fresh) = match self.take_idle() {
                Some(conn) => (conn, false),
                // Boxed: connecting is rare, and its state is large.
                None => (Box::pin(self.connect(target)).await?, true),
            };
            if let Err(e) = conn.write_request(method, path, headers, body).await {
                if fresh {
                    return Err(Failure::Connect(
                        format!("sending the request failed: {e}"),
                        Some(Source::new(e)),
                    ));
                }
                continue;
            }
            let head = conn.read_head(method, self.limits.max_header_bytes).await?;
            let mut body = PooledBody {
                decoder: Decoder::new(head.framing),
                keep_alive: head.keep_alive,
                conn: Some(conn),
                pool: Arc::downgrade(self),
            };
            if body.decoder.is_done() {
                body.finish();
            }
            let mut response = Response::new(body);
            *response.status_mut() = head.status;
            *response.headers_mut() = head.headers;
            return Ok(response);
        }
    }

    /// Ends every open connection: requests on them fail at once.
    pub(crate) fn abort_all(&self) {
        // Taken out first: dropping a connection takes the `open` lock.
        let idle = std::mem::take(&mut *lock(&self.idle));
        drop(idle);
        self.open.shut_down_all();
    }

    /// [`Pool::abort_all`], and no new connections.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.abort_all();
    }

    /// The most recently used idle connection still open.
    fn take_idle(&self) -> Option<Conn> {
        loop {
            let Idle { mut conn, since } = lock(&self.idle).pop()?;
            if since.elapsed() <= IDLE_TIMEOUT && conn.is_quiet() {
                return Some(conn);
            }
        }
    }

    fn release(&self, conn: Conn) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let mut idle = lock(&self.idle);
        if idle.len() < MAX_IDLE {
            idle.push(Idle {
                conn,
                since: Instant::now(),
            });
        }
    }

    async fn connect(&self, target: &Uri) -> Result<Conn, Failure> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Failure::Closed);
        }
        let authority = target.authority().map_or("", |a| a.as_str());
        let secure = match target.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            other => {
                return Err(Failure::Invalid(format!(
                    "URL {target} has scheme {other:?}; only http and https are spoken"
                )));
            }
        };
        let host = target
            .host()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
            .ok_or_else(|| Failure::Invalid(format!("URL {target} has no host")))?;
        let port = target.port_u16().unwrap_or(if secure { 443 } else { 80 });
        let connecting = async {
            let tcp = TcpStream::connect((host, port)).await.map_err(|e| {
                Failure::Connect(
                    format!("cannot connect to {authority}: {e}"),
                    Some(Source::new(e)),
                )
            })?;
            // Small requests and answers: never wait to fill a segment.
            let _ = tcp.set_nodelay(true);
            let tcp = Tcp(Arc::new(tcp));
            let handle = self.open.add(&tcp.0);
            let io = if secure {
                let name = ServerName::try_from(host.to_owned()).map_err(|e| {
                    Failure::Invalid(format!("{host:?} is not a name TLS can check: {e}"))
                })?;
                let tls = self.tls.connect(name, tcp).await.map_err(|e| {
                    Failure::Connect(
                        format!("TLS handshake with {authority} failed: {e}"),
                        Some(Source::new(e)),
                    )
                })?;
                Stream::Tls(Box::new(tls))
            } else {
                Stream::Plain(tcp)
            };
            Ok::<_, Failure>(Conn {
                io,
                input: Vec::new(),
                start: 0,
                end: 0,
                out: Vec::with_capacity(1024),
                _open: handle,
            })
        };
        let conn = tokio::time::timeout(self.limits.connect_timeout, connecting)
            .await
            .map_err(|elapsed| {
                Failure::Connect(
                    format!(
                        "connecting to {authority} took longer than {:?}",
                        self.limits.connect_timeout
                    ),
                    Some(Source::new(elapsed)),
                )
            })??;
        if self.closed.load(Ordering::Acquire) {
            return Err(Failure::Closed);
        }
        Ok(conn)
    }
}

/// A plain or TLS connection.
enum Stream {
    Plain(Tcp),
    Tls(Box<TlsStream<Tcp>>),
}

/// A TCP stream whose socket the pool's [`OpenSockets`] can also reach, to
/// shut it down.
struct Tcp(Arc<TcpStream>);

impl AsyncRead for Tcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            ready!(self.0.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let room = unfilled.len();
            let mut got = 0;
            // A read that fills less than the room drained the socket: the
            // readiness it was made under is cleared (the closure says
            // "would block"), as tokio's own read does, so the next poll
            // waits for the next event instead of asking the kernel again.
            // Only that readiness: an event that came meanwhile stands.
            let read = self.0.try_io(Interest::READABLE, || {
                got = self.0.try_read(unfilled)?;
                if got > 0 && got < room {
                    Err(io::ErrorKind::WouldBlock.into())
                } else {
                    Ok(())
                }
            });
            match read {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && got == 0 => {}
                Err(e) if e.kind() != io::ErrorKind::WouldBlock => {
                    return Poll::Ready(Err(e));
                }
                _ => {
                    buf.advance(got);
                    return Poll::Ready(Ok(()));
                }
            }
        }
    }
}

impl AsyncWrite for Tcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                written => return Poll::Ready(written),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(SockRef::from(&*self.0).shutdown(Shutdown::Write))
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// One connection: the stream, the bytes read and not yet used
/// (`input[start..end]`), and the buffer a request is written from.
struct Conn {
    io: Stream,
    input: Vec<u8>,
    start: usize,
    end: usize,
    out: Vec<u8>,
    /// Its entry among the open sockets, removed when the connection drops.
    _open: OpenHandle,
}

impl Conn {
    fn unread(&self) -> &[u8] {
        &self.input[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads more bytes after the unread ones: how many (0 at the end).
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.input.len() - self.end < READ_CHUNK / 2 {
            if self.start > 0 {
                self.input.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            let wanted = self.end + READ_CHUNK;
            if self.input.len() < wanted {
                self.input.resize(wanted, 0);
            }
        }
        let mut buf = ReadBuf::new(&mut self.input[self.end..]);
        ready!(Pin::new(&mut self.io).poll_read(cx, &mut buf))?;
        let n = buf.filled().len();
        self.end += n;
        Poll::Ready(Ok(n))
    }

    /// Writes a request: head and body in one write when the body is
    /// small, the body from where it lies when it is not (so no large
    /// buffer stays with the connection).
    async fn write_request(
        &mut self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> io::Result<()> {
        self.out.clear();
        h1::write_head(&mut self.out, method, path, headers, body.len());
        if body.len() <= INLINE_BODY {
            self.out.extend_from_slice(body);
            self.io.write_all(&self.out).await?;
        } else {
            self.io.write_all(&self.out).await?;
            self.io.write_all(body).await?;
        }
        self.io.flush().await
    }

    /// Reads the response head, skipping informational (1xx) ones.
    async fn read_head(&mut self, method: &Method, max: usize) -> Result<h1::Head, Failure> {
        loop {
            if self.start < self.end {
                match h1::parse_head(self.unread(), max, method) {
                    Ok(Some((head, used))) => {
                        self.consume(used);
                        if head.status == http::StatusCode::SWITCHING_PROTOCOLS {
                            return Err(Failure::Protocol(
                                "the server switched protocols unasked".into(),
                            ));
                        }
                        if head.status.is_informational() {
                            continue;
                        }
                        return Ok(head);
                    }
                    Ok(None) => {}
                    Err(HeadError::TooLarge) => {
                        return Err(Failure::Protocol(format!(
                            "response head larger than the {max}-byte limit"
                        )));
                    }
                    Err(HeadError::Invalid(what)) => {
                        return Err(Failure::Protocol(format!(
                            "the response head is not valid HTTP: {what}"
                        )));
                    }
                }
            }
            let read = std::future::poll_fn(|cx| self.poll_fill(cx)).await;
            match read {
                Ok(0) => {
                    return Err(Failure::Connect(
                        "the server closed the connection before answering".into(),
                        None,
                    ));
                }
                Ok(_) => {}
                Err(e) => {
                    return Err(Failure::Connect(
                        format!("reading the response failed: {e}"),
                        Some(Source::new(e)),
                    ));
                }
            }
        }
    }

    /// Whether an idle connection is still open and has sent nothing: a
    /// server that closed it, or wrote to it unasked, ends it.
    fn is_quiet(&mut self) -> bool {
        if self.start < self.end {
            return false;
        }
        let mut cx = Context::from_waker(Waker::noop());
        matches!(self.poll_fill(&mut cx), Poll::Pending)
    }
}

/// A response body that gives its connection back to the pool once read to
/// its end; dropped earlier, it closes the connection.
pub(crate) struct PooledBody {
    decoder: Decoder,
    keep_alive: bool,
    conn: Option<Conn>,
    pool: Weak<Pool>,
}

impl PooledBody {
    /// The body is complete: its connection goes back to the pool when it
    /// may carry another request and holds nothing more.
    fn finish(&mut self) {
        if let Some(mut conn) = self.conn.take()
            && self.keep_alive
            && conn.start == conn.end
            && let Some(pool) = self.pool.upgrade()
        {
            if conn.input.len() > KEPT_INPUT {
                conn.input = Vec::new();
            }
            pool.release(conn);
        }
    }

    fn fail(&mut self, message: String) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.conn = None;
        Poll::Ready(Some(Err(io::Error::new(
            io::ErrorKind::InvalidData,
            message,
        ))))
    }
}

impl std::fmt::Debug for PooledBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledBody")
            .field("open", &self.conn.is_some())
            .field("done", &self.decoder.is_done())
            .finish()
    }
}

impl Body for PooledBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        loop {
            let Some(conn) = this.conn.as_mut() else {
                return Poll::Ready(None);
            };
            let mut taken = 0;
            let decoded = this.decoder.decode(conn.unread(), &mut taken);
            conn.consume(taken);
            match decoded {
                Ok(Decoded::Data(data)) => {
                    if this.decoder.is_done() {
                        this.finish();
                    }
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Ok(Decoded::End) => {
                    this.finish();
                    return Poll::Ready(None);
                }
                Ok(Decoded::More) => {}
                Err(message) => return this.fail(message),
            }
            match ready!(conn.poll_fill(cx)) {
                Ok(0) => match this.decoder.at_close() {
                    Ok(()) => {
                        this.conn = None;
                        return Poll::Ready(None);
                    }
                    Err(message) => return this.fail(message),
                },
                Ok(_) => {}
                Err(e) => {
                    this.conn = None;
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.decoder.is_done()
    }

    fn size_hint(&self) -> SizeHint {
        self.decoder
            .remaining()
            .map_or_else(SizeHint::default, SizeHint::with_exact)
    }
}

/// Every open connection's socket, so [`Pool::abort_all`] can shut down
/// those a request in flight owns: the read it waits on then ends at once.
#[derive(Default)]
struct OpenSockets {
    next: AtomicU64,
    sockets: Mutex<Vec<(u64, Weak<TcpStream>)>>,
}

/// A connection's entry in [`OpenSockets`].
struct OpenHandle {
    id: u64,
    open: Weak<OpenSockets>,
}

impl OpenSockets {
    fn add(self: &Arc<Self>, tcp: &Arc<TcpStream>) -> OpenHandle {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.sockets).push((id, Arc::downgrade(tcp)));
        OpenHandle {
            id,
            open: Arc::downgrade(self),
        }
    }

    fn shut_down_all(&self) {
        for (_, socket) in lock(&self.sockets).iter() {
            // Held while shut down: the descriptor cannot close under it.
            if let Some(socket) = socket.upgrade() {
                let _ = SockRef::from(&*socket).shutdown(Shutdown::Both);
            }
        }
    }
}

impl Drop for OpenHandle {
    fn drop(&mut self) {
        if let Some(open) = self.open.upgrade() {
            let mut sockets = lock(&open.sockets);
            if let Some(at) = sockets.iter().position(|(id, _)| *id == self.id) {
                sockets.swap_remove(at);
            }
        }
    }
}
