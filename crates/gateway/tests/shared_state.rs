//! The shared store against a real `redis-server` (plain and TLS): the
//! calls-a-minute script's counts and its fallback when the store lost
//! the script, single uses recorded once for every replica, and what an
//! unreachable store gives (`StateFail`). Skipped, saying so, when
//! `redis-server` is not installed (CI installs it).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use switchboard_gateway::{SharedState, StateFail};
use switchboard_host::{SharedAdmission, SharedLimits};
use switchboard_server::UseLedger;
use switchboard_testutil::tls;

/// A `redis-server` on a free loopback port, nothing saved; killed when
/// dropped.
struct Redis {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn redis_bin(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/usr/local/bin"]
        .iter()
        .map(|d| PathBuf::from(d).join(name))
        .find(|p| p.exists())
}

/// Started (with TLS only on its port when `tls`), or `None`, saying so,
/// when it is not installed.
#[allow(clippy::print_stderr)] // a skipped test says why
fn redis(tls: bool) -> Option<Redis> {
    let Some(bin) = redis_bin("redis-server") else {
        eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut cmd = Command::new(bin);
    cmd.args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir.path());
    if tls {
        cmd.args(["--port", "0", "--tls-port", &port.to_string()])
            .arg("--tls-cert-file")
            .arg(tls::fixture("server-a.pem"))
            .arg("--tls-key-file")
            .arg(tls::fixture("server-a.key"))
            .arg("--tls-ca-cert-file")
            .arg(tls::fixture("ca.pem"))
            .args(["--tls-auth-clients", "no"]);
    } else {
        cmd.args(["--port", &port.to_string()]);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // The store the test talks to, killed when dropped (the client's
    // helper is for servers a host starts).
    #[allow(clippy::disallowed_methods)]
    let child = cmd.spawn().unwrap();
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "redis-server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(Redis {
        child,
        port,
        _dir: dir,
    })
}

fn store(redis: &Redis, fail: StateFail) -> SharedState {
    SharedState::new(&format!("redis://127.0.0.1:{}/2", redis.port), fail).unwrap()
}

fn later(ms: u64) -> u64 {
    u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
        + ms
}

// A minute's worth at once, then the next one a share of the minute away;
// counted in the store, so a second replica's client sees the same
// count; a store that lost the script (restarted, flushed) gets it whole
// again, the count kept.
#[tokio::test]
async fn calls_a_minute_are_counted_once_for_every_replica() {
    let Some(redis) = redis(false) else { return };
    let (a, b) = (
        store(&redis, StateFail::Closed),
        store(&redis, StateFail::Closed),
    );
    for replica in [&a, &b, &a] {
        assert_eq!(replica.take("ci", 3).await, SharedAdmission::Allowed);
    }
    let SharedAdmission::Refused { retry_in } = b.take("ci", 3).await else {
        panic!("a fourth call of three a minute was allowed");
    };
    // Three a minute: the next one is (nearly) twenty seconds away.
    assert!(
        retry_in > Duration::from_secs(19) && retry_in <= Duration::from_secs(20),
        "{retry_in:?}"
    );
    assert_eq!(a.take("alice", 3).await, SharedAdmission::Allowed);

    let cli = redis_bin("redis-cli").expect("redis-cli comes with redis-server");
    let flushed = Command::new(cli)
        .args(["-p", &redis.port.to_string(), "SCRIPT", "FLUSH"])
        .output()
        .unwrap();
    assert!(flushed.status.success(), "{flushed:?}");
    assert!(matches!(
        a.take("ci", 3).await,
        SharedAdmission::Refused { .. }
    ));
    assert_eq!(a.take("bob", 1).await, SharedAdmission::Allowed);
    assert!(a.is_up());
}

// MRTR-10 across replicas: a state's use is recorded once between two
// replicas' clients.
#[tokio::test]
async fn a_use_is_recorded_once_for_every_replica() {
    let Some(redis) = redis(false) else { return };
    let (a, b) = (
        store(&redis, StateFail::Closed),
        store(&redis, StateFail::Closed),
    );
    let expires = later(60_000);
    assert_eq!(a.record([1; 16], expires).await, Ok(true));
    assert_eq!(b.record([1; 16], expires).await, Ok(false));
    assert_eq!(a.record([1; 16], expires).await, Ok(false));
    assert_eq!(b.record([2; 16], expires).await, Ok(true));
}

// Nothing listening: a use cannot be recorded and a limited call cannot
// be counted, both saying which store; `StateFail::Open` lets the call
// through instead, the approval still refused.
#[tokio::test]
async fn an_unreachable_store_refuses_unless_told_to_let_limited_calls_through() {
    let url = format!("redis://127.0.0.1:{}/0", free_port());
    let closed = SharedState::new(&url, StateFail::Closed).unwrap();
    let SharedAdmission::Unavailable(why) = closed.take("ci", 5).await else {
        panic!("counted without a store");
    };
    assert!(
        why.contains("cannot be reached") && why.contains(&url),
        "{why}"
    );
    let why = closed.record([3; 16], later(60_000)).await.unwrap_err();
    assert!(why.contains(&url), "{why}");
    assert!(!closed.is_up());
    assert!(closed.check().await.is_err());

    let open = SharedState::new(&url, StateFail::Open).unwrap();
    assert_eq!(open.take("ci", 5).await, SharedAdmission::Allowed);
    assert!(open.record([3; 16], later(60_000)).await.is_err());
}

// rediss://: the store's certificate verified (here against the test CA).
#[tokio::test]
async fn a_tls_store_is_reached_over_rediss() {
    let Some(redis) = redis(true) else { return };
    let url = format!("rediss://127.0.0.1:{}/0", redis.port);
    let state = SharedState::with_tls(
        &url,
        StateFail::Closed,
        Some(tls::client_trusting_test_ca()),
    )
    .unwrap();
    state.check().await.unwrap();
    assert_eq!(state.record([4; 16], later(60_000)).await, Ok(true));
    assert_eq!(state.record([4; 16], later(60_000)).await, Ok(false));
    // Not trusted without the CA: the platform's roots do not know it.
    let untrusted = SharedState::new(&url, StateFail::Closed).unwrap();
    let why = untrusted.check().await.unwrap_err();
    assert!(why.contains("TLS"), "{why}");
}
