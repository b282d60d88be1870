// SPDX-License-Identifier: Apache-2.0
//! tokio peer server for the ringio benchmark suite.
//!
//! Serves one of four workloads (echo, pong, http, ws) on one port, using either
//! tokio's work-stealing multi-thread runtime behind a single listener, or one
//! current-thread runtime per OS thread, each with its own SO_REUSEPORT
//! listener (thread-per-core style). See README.md for the CLI contract.

use std::io::{self, ErrorKind, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::process::exit;
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_tungstenite::tungstenite::Message;
use futures_util::{SinkExt, StreamExt};

const PROG: &str = "tokio_server";

/// Listen backlog requested; the kernel caps it at net.core.somaxconn.
const BACKLOG: i32 = 65535;

/// An HTTP request head longer than this without its terminating blank line
/// closes the connection.
const MAX_HEAD: usize = 8 * 1024;

/// Size of the per-connection HTTP input buffer. It is twice MAX_HEAD, so
/// after the consumed bytes are dropped there is always room to read more.
const HTTP_BUF: usize = 2 * MAX_HEAD;

const RESP_KEEP: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n\r\nHello world!";
const RESP_CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nHello world!";
/// An HTTP/1.0 client that asked for keep-alive only keeps the connection if
/// the response says so explicitly.
const RESP_KEEP_10: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\nConnection: keep-alive\r\n\r\nHello world!";

const USAGE: &str = "\
usage: tokio_server --mode echo|pong|http|ws --port P [--threads N] [--block B]
                    [--host ADDR] [--runtime mt|per-core]
                    [--tls-cert FILE --tls-key FILE]

  --mode MODE        echo: write back bytes as they arrive
                     pong: read exactly B bytes, write them back, repeat
                     http: HTTP/1.1 hello world with keep-alive and pipelining
                     ws: WebSocket echo (tokio-tungstenite): every text or binary
                     message back as it came, on any path
  --port P           TCP port to listen on (0 picks a free one)
  --threads N        worker threads (mt) or runtimes/listeners (per-core); default 1
  --block B          pong block size and echo read size in bytes; default 16384
  --host ADDR        address to bind; default 127.0.0.1
  --runtime R        mt: multi-thread work-stealing runtime, one listener (default)
                     per-core: N threads, each a current-thread runtime with its
                     own SO_REUSEPORT listener
  --tls-cert FILE    http mode over TLS (rustls, ring provider, TLS 1.2 and 1.3,
  --tls-key FILE     ALPN http/1.1): PEM certificate chain and private key
  -h, --help         print this help and exit

SIGINT or SIGTERM stops the server with exit status 0.
";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Echo,
    Pong,
    Http,
    Ws,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Echo => "echo",
            Mode::Pong => "pong",
            Mode::Http => "http",
            Mode::Ws => "ws",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Flavor {
    Mt,
    PerCore,
}

impl Flavor {
    fn name(self) -> &'static str {
        match self {
            Flavor::Mt => "mt",
            Flavor::PerCore => "per-core",
        }
    }
}

struct Config {
    mode: Mode,
    port: u16,
    threads: usize,
    block: usize,
    host: String,
    flavor: Flavor,
    tls_cert: Option<String>,
    tls_key: Option<String>,
}

/// What a connection task needs to know; cheap to clone into every task.
#[derive(Clone)]
struct ConnCfg {
    mode: Mode,
    block: usize,
    tls: Option<TlsAcceptor>,
}

fn usage_error(msg: &str) -> ! {
    eprintln!("{PROG}: {msg}");
    eprint!("{USAGE}");
    exit(2);
}

fn fatal(msg: &str) -> ! {
    eprintln!("{PROG}: {msg}");
    exit(1);
}

fn parse_args() -> Config {
    let mut mode = None;
    let mut port = None;
    let mut threads = 1usize;
    let mut block = 16384usize;
    let mut host = String::from("127.0.0.1");
    let mut flavor = Flavor::Mt;
    let mut tls_cert = None;
    let mut tls_key = None;

    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            print!("{USAGE}");
            let _ = io::stdout().flush();
            exit(0);
        }
        // Accept both "--flag value" and "--flag=value".
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let known = matches!(
            flag.as_str(),
            "--mode" | "--port" | "--threads" | "--block" | "--host" | "--runtime" | "--tls-cert" | "--tls-key"
        );
        if !known {
            usage_error(&format!("unknown argument '{arg}'"));
        }
        let value = match inline {
            Some(v) => v,
            None => match args.next() {
                Some(v) => v,
                None => usage_error(&format!("{flag} needs a value")),
            },
        };
        match flag.as_str() {
            "--mode" => {
                mode = Some(match value.as_str() {
                    "echo" => Mode::Echo,
                    "pong" => Mode::Pong,
                    "http" => Mode::Http,
                    "ws" => Mode::Ws,
                    _ => usage_error(&format!("bad --mode '{value}' (echo, pong or http)")),
                })
            }
            "--port" => match value.parse::<u16>() {
                Ok(p) => port = Some(p),
                Err(_) => usage_error(&format!("bad --port '{value}' (0..65535)")),
            },
            "--threads" => match value.parse::<usize>() {
                Ok(n) if (1..=4096).contains(&n) => threads = n,
                _ => usage_error(&format!("bad --threads '{value}' (1..4096)")),
            },
            "--block" => match value.parse::<usize>() {
                Ok(n) if (1..=(64 << 20)).contains(&n) => block = n,
                _ => usage_error(&format!("bad --block '{value}' (1..67108864)")),
            },
            "--host" => {
                if value.is_empty() {
                    usage_error("empty --host");
                }
                host = value
            }
            "--runtime" => {
                flavor = match value.as_str() {
                    "mt" => Flavor::Mt,
                    "per-core" => Flavor::PerCore,
                    _ => usage_error(&format!("bad --runtime '{value}' (mt or per-core)")),
                }
            }
            "--tls-cert" => tls_cert = Some(value),
            "--tls-key" => tls_key = Some(value),
            _ => unreachable!(),
        }
    }

    let mode = mode.unwrap_or_else(|| usage_error("missing --mode"));
    let port = port.unwrap_or_else(|| usage_error("missing --port"));
    if tls_cert.is_some() != tls_key.is_some() {
        usage_error("--tls-cert and --tls-key go together");
    }
    if tls_cert.is_some() && mode != Mode::Http {
        usage_error("--tls-cert needs --mode http");
    }
    Config { mode, port, threads, block, host, flavor, tls_cert, tls_key }
}

/// Blocks SIGINT and SIGTERM in the calling thread. Called before any other
/// thread exists, so every thread inherits the mask and the signals stay
/// pending until the main thread collects them with `wait_for_signal`.
///
/// A shell starts background jobs with SIGINT ignored, and an ignored signal
/// is discarded even while blocked, so the dispositions are reset to default
/// first: SIGINT must stop the server however it was launched.
fn block_stop_signals() -> libc::sigset_t {
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            fatal(&format!("pthread_sigmask: {}", io::Error::from_raw_os_error(rc)));
        }
        set
    }
}

fn wait_for_signal(set: &libc::sigset_t) -> ! {
    loop {
        let mut sig: libc::c_int = 0;
        let rc = unsafe { libc::sigwait(set, &mut sig) };
        if rc == 0 && (sig == libc::SIGINT || sig == libc::SIGTERM) {
            let _ = io::stdout().flush();
            exit(0);
        }
    }
}

/// Raises the soft RLIMIT_NOFILE to the hard limit (or to fs.nr_open when the
/// hard limit is unlimited), so that very large connection counts fit.
fn raise_nofile_limit() {
    unsafe {
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 || lim.rlim_cur >= lim.rlim_max {
            return;
        }
        let mut want = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
            return;
        }
        if lim.rlim_max == libc::RLIM_INFINITY {
            if let Some(n) = std::fs::read_to_string("/proc/sys/fs/nr_open")
                .ok()
                .and_then(|s| s.trim().parse::<libc::rlim_t>().ok())
            {
                want.rlim_cur = n;
                if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                    return;
                }
            }
        }
        eprintln!(
            "{PROG}: warning: could not raise RLIMIT_NOFILE from {}: {}",
            lim.rlim_cur,
            io::Error::last_os_error()
        );
    }
}

fn resolve(host: &str, port: u16) -> SocketAddr {
    match (host, port).to_socket_addrs() {
        Ok(mut addrs) => match addrs.next() {
            Some(a) => a,
            None => usage_error(&format!("--host '{host}' resolves to no address")),
        },
        Err(e) => usage_error(&format!("bad --host '{host}': {e}")),
    }
}

fn new_socket(addr: SocketAddr) -> io::Result<Socket> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    sock.set_reuse_address(true)?;
    Ok(sock)
}

/// Binds and listens on `addr`, optionally with SO_REUSEPORT, returning a
/// non-blocking std listener ready to hand to a tokio runtime.
fn make_listener(addr: SocketAddr, reuse_port: bool) -> io::Result<std::net::TcpListener> {
    let sock = new_socket(addr)?;
    if reuse_port {
        sock.set_reuse_port(true)?;
    }
    sock.bind(&addr.into())?;
    sock.listen(BACKLOG)?;
    sock.set_nonblocking(true)?;
    Ok(sock.into())
}

/// Binds a plain socket (no SO_REUSEPORT) and closes it again. This fails if
/// anything is listening on the port, including another process's
/// SO_REUSEPORT group that our listeners would otherwise silently join. It
/// also turns port 0 into the concrete port all per-core listeners share.
fn probe_port(addr: SocketAddr) -> io::Result<SocketAddr> {
    let sock = new_socket(addr)?;
    sock.bind(&addr.into())?;
    let local = sock.local_addr()?;
    local
        .as_socket()
        .ok_or_else(|| io::Error::other("bound address is not an IP address"))
}

fn bind_failed(addr: SocketAddr, e: io::Error) -> ! {
    if e.kind() == ErrorKind::AddrInUse {
        fatal(&format!("cannot listen on {addr}: port {} is already in use", addr.port()));
    }
    fatal(&format!("cannot listen on {addr}: {e}"));
}

fn main() {
    let cfg = parse_args();
    let signals = block_stop_signals();
    raise_nofile_limit();

    let want = resolve(&cfg.host, cfg.port);
    let tls = match (&cfg.tls_cert, &cfg.tls_key) {
        (Some(c), Some(k)) => Some(tls_acceptor(c, k)),
        _ => None,
    };
    let conn = ConnCfg { mode: cfg.mode, block: cfg.block, tls };

    let port = match cfg.flavor {
        Flavor::Mt => start_mt(&cfg, want, conn),
        Flavor::PerCore => start_per_core(&cfg, want, conn),
    };

    println!(
        "{PROG}: mode={}{} port={} threads={} runtime={} block={} host={}",
        cfg.mode.name(),
        if cfg.tls_cert.is_some() { " tls=rustls" } else { "" },
        port,
        cfg.threads,
        cfg.flavor.name(),
        cfg.block,
        cfg.host
    );
    let _ = io::stdout().flush();

    wait_for_signal(&signals);
}

/// One multi-thread runtime with `threads` workers and a single listener.
/// Returns the bound port; the runtime lives until the process exits.
fn start_mt(cfg: &Config, want: SocketAddr, conn: ConnCfg) -> u16 {
    let listener = make_listener(want, false).unwrap_or_else(|e| bind_failed(want, e));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(want.port());

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.threads)
        .thread_name("tokio-mt")
        .enable_all()
        .build()
        .unwrap_or_else(|e| fatal(&format!("cannot start tokio runtime: {e}")));
    rt.spawn(async move {
        match TcpListener::from_std(listener) {
            Ok(l) => accept_loop(l, conn).await,
            Err(e) => fatal(&format!("cannot register listener: {e}")),
        }
    });
    // Nothing ever shuts the runtime down; the process exits on a signal.
    std::mem::forget(rt);
    port
}

/// `threads` OS threads, each with a current-thread runtime and its own
/// SO_REUSEPORT listener; the kernel spreads incoming connections across them.
/// All listeners are bound before any thread starts so bind errors are
/// reported before the start-up line.
fn start_per_core(cfg: &Config, want: SocketAddr, conn: ConnCfg) -> u16 {
    let addr = probe_port(want).unwrap_or_else(|e| bind_failed(want, e));
    let listeners: Vec<std::net::TcpListener> = (0..cfg.threads)
        .map(|_| make_listener(addr, true).unwrap_or_else(|e| bind_failed(addr, e)))
        .collect();

    for (i, listener) in listeners.into_iter().enumerate() {
        let conn = conn.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("tokio-core-{i}"))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap_or_else(|e| fatal(&format!("cannot start tokio runtime: {e}")));
                rt.block_on(async move {
                    match TcpListener::from_std(listener) {
                        Ok(l) => accept_loop(l, conn).await,
                        Err(e) => fatal(&format!("cannot register listener: {e}")),
                    }
                });
            });
        if let Err(e) = spawned {
            fatal(&format!("cannot start thread: {e}"));
        }
    }
    addr.port()
}

async fn accept_loop(listener: TcpListener, conn: ConnCfg) {
    loop {
        match listener.accept().await {
            Ok((stream, _peer)) => {
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(stream, conn.clone()));
            }
            Err(e) => {
                // Out of descriptors or memory: back off briefly instead of
                // spinning; the pending connection stays in the backlog.
                // Anything else (e.g. a peer that reset before accept) only
                // concerns that one connection.
                let resource = matches!(
                    e.raw_os_error(),
                    Some(libc::EMFILE) | Some(libc::ENFILE) | Some(libc::ENOBUFS) | Some(libc::ENOMEM)
                );
                if resource {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    }
}

/// Runs one connection to completion. Errors (resets, broken pipes) end only
/// this connection.
async fn serve(stream: TcpStream, conn: ConnCfg) {
    if let Some(acceptor) = conn.tls {
        // A failed handshake (garbage, a client that gives up) ends only this connection.
        if let Ok(tls) = acceptor.accept(stream).await {
            let _ = serve_http(tls).await;
        }
        return;
    }
    let _ = match conn.mode {
        Mode::Echo => serve_echo(stream, conn.block).await,
        Mode::Pong => serve_pong(stream, conn.block).await,
        Mode::Http => serve_http(stream).await,
        Mode::Ws => serve_ws(stream).await,
    };
}

/// The WebSocket echo: tokio-tungstenite's server handshake (any path), then every
/// text or binary message is sent back as it came; pings are answered by tungstenite
/// itself (on the next send or flush, which the loop does after each message).
async fn serve_ws(s: TcpStream) -> io::Result<()> {
    let mut ws = tokio_tungstenite::accept_async(s).await.map_err(io::Error::other)?;
    while let Some(msg) = ws.next().await {
        match msg.map_err(io::Error::other)? {
            m @ (Message::Text(_) | Message::Binary(_)) => ws.send(m).await.map_err(io::Error::other)?,
            Message::Close(_) => break,
            _ => ws.flush().await.map_err(io::Error::other)?,
        }
    }
    Ok(())
}

async fn serve_echo(mut s: TcpStream, block: usize) -> io::Result<()> {
    let mut buf = vec![0u8; block];
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        s.write_all(&buf[..n]).await?;
    }
}

async fn serve_pong(mut s: TcpStream, block: usize) -> io::Result<()> {
    let mut buf = vec![0u8; block];
    loop {
        match s.read_exact(&mut buf).await {
            Ok(_) => {}
            // EOF, whether between blocks or inside one, ends the connection.
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        s.write_all(&buf).await?;
    }
}

/// Position of the first "\r\n\r\n" in `buf` at or after `from`.
fn find_head_end(buf: &[u8], from: usize) -> Option<usize> {
    if buf.len() < 4 {
        return None;
    }
    let mut i = from;
    let last = buf.len() - 4;
    while i <= last {
        match buf[i..].iter().position(|&b| b == b'\r') {
            None => return None,
            Some(off) => {
                i += off;
                if i > last {
                    return None;
                }
                if buf[i + 1] == b'\n' && buf[i + 2] == b'\r' && buf[i + 3] == b'\n' {
                    return Some(i);
                }
                i += 1;
            }
        }
    }
    None
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if first.is_ascii_whitespace() {
            s = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = s {
        if last.is_ascii_whitespace() {
            s = rest;
        } else {
            break;
        }
    }
    s
}

/// Picks the response for one request head (without its blank line) and
/// whether the connection stays open after it.
fn respond_to(head: &[u8]) -> (&'static [u8], bool) {
    let mut lines = head.split(|&b| b == b'\n');
    let request_line = trim(lines.next().unwrap_or(&[]));
    let version = request_line.rsplit(|&b| b == b' ').next().unwrap_or(&[]);
    let http10 = version.eq_ignore_ascii_case(b"HTTP/1.0");

    let mut close_token = false;
    let mut keep_alive_token = false;
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
        if !trim(&line[..colon]).eq_ignore_ascii_case(b"connection") {
            continue;
        }
        for token in line[colon + 1..].split(|&b| b == b',') {
            let token = trim(token);
            if token.eq_ignore_ascii_case(b"close") {
                close_token = true;
            } else if token.eq_ignore_ascii_case(b"keep-alive") {
                keep_alive_token = true;
            }
        }
    }

    if http10 {
        if keep_alive_token && !close_token {
            (RESP_KEEP_10, true)
        } else {
            (RESP_KEEP, false)
        }
    } else if close_token {
        (RESP_CLOSE, false)
    } else {
        (RESP_KEEP, true)
    }
}

/// The rustls server configuration from PEM files: exits with status 1 and a
/// message when they cannot be read or do not make a key pair.
fn tls_acceptor(cert_path: &str, key_path: &str) -> TlsAcceptor {
    let open = |path: &str| {
        std::fs::File::open(path)
            .map(io::BufReader::new)
            .unwrap_or_else(|e| fatal(&format!("cannot read {path}: {e}")))
    };
    let certs: Vec<_> = rustls_pemfile::certs(&mut open(cert_path))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| fatal(&format!("bad certificate file {cert_path}: {e}")));
    if certs.is_empty() {
        fatal(&format!("no certificate in {cert_path}"));
    }
    let key = rustls_pemfile::private_key(&mut open(key_path))
        .unwrap_or_else(|e| fatal(&format!("bad key file {key_path}: {e}")))
        .unwrap_or_else(|| fatal(&format!("no private key in {key_path}")));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap_or_else(|e| fatal(&format!("TLS versions: {e}")))
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap_or_else(|e| fatal(&format!("certificate and key do not match: {e}")));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    TlsAcceptor::from(Arc::new(config))
}

async fn serve_http<S: AsyncRead + AsyncWrite + Unpin>(mut s: S) -> io::Result<()> {
    let mut buf = vec![0u8; HTTP_BUF];
    let mut filled = 0; // bytes of `buf` holding received data
    let mut start = 0; // first byte not yet consumed by a complete request
    let mut scan_from = 0; // offset from `start` where the terminator search resumes
    let mut out: Vec<u8> = Vec::with_capacity(4096);

    loop {
        let n = s.read(&mut buf[filled..]).await?;
        if n == 0 {
            return Ok(());
        }
        filled += n;

        let mut close = false;
        loop {
            // Stray CRLFs between requests are allowed and ignored.
            while filled - start >= 2 && buf[start] == b'\r' && buf[start + 1] == b'\n' {
                start += 2;
                scan_from = 0;
            }
            let pending = &buf[start..filled];
            match find_head_end(pending, scan_from) {
                Some(end) => {
                    let (resp, keep) = respond_to(&pending[..end]);
                    out.extend_from_slice(resp);
                    start += end + 4;
                    scan_from = 0;
                    if !keep {
                        close = true;
                        break;
                    }
                }
                None => {
                    // A terminator may straddle the next read.
                    scan_from = pending.len().saturating_sub(3);
                    break;
                }
            }
        }

        if !out.is_empty() {
            s.write_all(&out).await?;
            out.clear();
        }
        if close {
            let _ = s.shutdown().await;
            return Ok(());
        }
        if filled - start > MAX_HEAD {
            return Ok(());
        }
        // Move the unconsumed partial request to the front of the buffer.
        if start == filled {
            filled = 0;
        } else if start > 0 {
            buf.copy_within(start..filled, 0);
            filled -= start;
        }
        start = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_terminator() {
        assert_eq!(find_head_end(b"GET / HTTP/1.1\r\n\r\n", 0), Some(14));
        assert_eq!(find_head_end(b"GET / HTTP/1.1\r\n\r", 0), None);
        assert_eq!(find_head_end(b"\r\n\r\n", 0), Some(0));
        assert_eq!(find_head_end(b"ab\r\r\n\r\n", 0), Some(3));
        assert_eq!(find_head_end(b"", 0), None);
    }

    #[test]
    fn keep_alive_rules() {
        assert_eq!(respond_to(b"GET / HTTP/1.1\r\nHost: x"), (RESP_KEEP, true));
        assert_eq!(respond_to(b"GET / HTTP/1.1\r\nconnection: Close"), (RESP_CLOSE, false));
        assert_eq!(respond_to(b"GET / HTTP/1.0\r\nHost: x"), (RESP_KEEP, false));
        assert_eq!(respond_to(b"GET / HTTP/1.0\r\nConnection: Keep-Alive"), (RESP_KEEP_10, true));
        assert_eq!(respond_to(b"GET / HTTP/1.1\r\nConnection: foo, close"), (RESP_CLOSE, false));
    }
}
