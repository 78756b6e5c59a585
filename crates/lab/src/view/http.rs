//! The view's web server: GET only, one thread per connection, pages
//! answered whole and server-sent events written as they come. Hand-made
//! rather than a crate's because an event stream needs a flush per event
//! and a write timeout per client (a browser that stops reading is dropped,
//! and nothing upstream ever waits for it), and that is all it needs.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Events a client may fall behind by before new ones are dropped for it.
const CLIENT_QUEUE: usize = 4;
/// What the kernel holds for an event stream's client: a few events, so
/// that one who stopped reading falls behind into dropped events at once,
/// and sees fresh ones when it reads again.
const EVENT_SEND_BUFFER_BYTES: usize = 256 * 1024;
/// A client that takes this long to take one write is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// What a path is answered with.
pub enum Reply {
    Body {
        content_type: &'static str,
        body: Vec<u8>,
    },
    /// A server-sent event stream: each message is one event's data.
    Events(Receiver<Arc<str>>),
    NotFound,
    BadRequest(String),
}

impl Reply {
    pub fn json(v: &serde_json::Value) -> Reply {
        Reply::Body { content_type: "application/json", body: v.to_string().into_bytes() }
    }
}

/// A site: answers a GET of `path` with its query `key=value` pairs.
pub trait Site: Send + Sync + 'static {
    fn get(&self, path: &str, query: &[(String, String)]) -> Reply;
}

/// The number after `key` in a query.
pub fn query_f64(query: &[(String, String)], key: &str) -> Option<f64> {
    query.iter().find(|(k, _)| k == key).and_then(|(_, v)| v.parse().ok())
}

/// A running server; stops when dropped.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on `addr` (`host:port`; port 0 picks one).
    pub fn start(addr: &str, site: Arc<dyn Site>) -> std::io::Result<Server> {
        Server::serve(TcpListener::bind(addr)?, site)
    }

    /// Serves on a listener bound before (so that a taken port is known
    /// before anything else starts).
    pub fn serve(listener: TcpListener, site: Arc<dyn Site>) -> std::io::Result<Server> {
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let accept = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let site = site.clone();
                std::thread::spawn(move || serve(conn, &*site));
            }
        });
        Ok(Server { addr, stop, accept: Some(accept) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

/// A query's `key=value` pairs, in order.
pub type Query = Vec<(String, String)>;

/// Parses `GET /path?a=1&b=2 HTTP/1.1` into the method, path and query.
pub fn parse_request_line(line: &str) -> Option<(String, String, Query)> {
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?;
    parts.next().filter(|v| v.starts_with("HTTP/"))?;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query = query.split('&').filter(|p| !p.is_empty()).map(|p| p.split_once('=').unwrap_or((p, ""))).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Some((method, path.to_string(), query))
}

fn serve(conn: TcpStream, site: &dyn Site) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = conn.set_write_timeout(Some(WRITE_TIMEOUT));
    let Ok(read_half) = conn.try_clone() else { return };
    let mut reader = BufReader::new(read_half);
    let mut out = conn;
    // One request per connection: pages are small and the events endless.
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut header = String::new();
    loop {
        header.clear();
        match reader.read_line(&mut header) {
            Ok(0) | Err(_) => break,
            Ok(_) if header.trim().is_empty() => break,
            Ok(_) => {}
        }
    }
    let reply = match parse_request_line(&line) {
        Some((m, path, query)) if m == "GET" => site.get(&path, &query),
        Some((m, _, _)) => Reply::BadRequest(format!("{m}: only GET")),
        None => Reply::BadRequest("not an HTTP request".into()),
    };
    let whole = |out: &mut TcpStream, status: &str, content_type: &str, body: &[u8]| {
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = out.write_all(head.as_bytes()).and_then(|_| out.write_all(body));
    };
    match reply {
        Reply::Body { content_type, body } => whole(&mut out, "200 OK", content_type, &body),
        Reply::NotFound => whole(&mut out, "404 Not Found", "text/plain", b"not found"),
        Reply::BadRequest(why) => whole(&mut out, "400 Bad Request", "text/plain", why.as_bytes()),
        Reply::Events(rx) => {
            let _ = socket2::SockRef::from(&out).set_send_buffer_size(EVENT_SEND_BUFFER_BYTES);
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: keep-alive\r\n\r\n";
            if out.write_all(head.as_bytes()).is_err() {
                return;
            }
            // Ends when the client goes (a failed or timed-out write) or
            // the broadcast ends.
            for message in rx {
                if out.write_all(format!("data: {message}\n\n").as_bytes()).and_then(|_| out.flush()).is_err() {
                    break;
                }
            }
        }
    }
}

/// One message to many event streams, each through a short queue: a client
/// behind by a full queue loses messages, the sender never waits.
#[derive(Default)]
pub struct Broadcast {
    clients: Mutex<Vec<SyncSender<Arc<str>>>>,
    /// Messages given to client queues, and dropped for a full one.
    pub delivered: AtomicU64,
    pub dropped: AtomicU64,
}

impl Broadcast {
    pub fn subscribe(&self) -> Receiver<Arc<str>> {
        let (tx, rx) = sync_channel(CLIENT_QUEUE);
        if let Ok(mut c) = self.clients.lock() {
            c.push(tx);
        }
        rx
    }

    pub fn send(&self, message: &str) {
        let message: Arc<str> = message.into();
        let Ok(mut clients) = self.clients.lock() else { return };
        clients.retain(|c| match c.try_send(message.clone()) {
            Ok(()) => {
                self.delivered.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        });
    }

    /// Clients connected now.
    pub fn clients(&self) -> usize {
        self.clients.lock().map(|c| c.len()).unwrap_or(0)
    }

    /// Ends every stream.
    pub fn close(&self) {
        if let Ok(mut c) = self.clients.lock() {
            c.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn request_lines_parse_with_their_queries() {
        let (m, p, q) = parse_request_line("GET /api/at?t=1.5&x HTTP/1.1\r\n").unwrap();
        assert_eq!((m.as_str(), p.as_str()), ("GET", "/api/at"));
        assert_eq!(q, vec![("t".to_string(), "1.5".to_string()), ("x".to_string(), String::new())]);
        assert_eq!(query_f64(&q, "t"), Some(1.5));
        assert!(parse_request_line("garbage").is_none());
    }

    #[test]
    fn a_full_client_queue_drops_messages_and_never_blocks() {
        let b = Broadcast::default();
        let rx = b.subscribe();
        for k in 0..10 {
            b.send(&k.to_string());
        }
        assert_eq!(b.delivered.load(Ordering::Relaxed), CLIENT_QUEUE as u64);
        assert_eq!(b.dropped.load(Ordering::Relaxed), 10 - CLIENT_QUEUE as u64);
        assert_eq!(rx.try_iter().map(|m| m.to_string()).collect::<Vec<_>>(), vec!["0", "1", "2", "3"]);
        drop(rx);
        b.send("x");
        assert_eq!(b.clients(), 0, "a gone client is forgotten");
    }

    struct Echo;
    impl Site for Echo {
        fn get(&self, path: &str, _: &[(String, String)]) -> Reply {
            match path {
                "/" => Reply::Body { content_type: "text/plain", body: b"hello".to_vec() },
                _ => Reply::NotFound,
            }
        }
    }

    #[test]
    fn pages_are_served_with_their_length_and_unknown_paths_are_404() {
        let server = Server::start("127.0.0.1:0", Arc::new(Echo)).unwrap();
        let get = |path: &str| {
            let mut c = TcpStream::connect(server.addr()).unwrap();
            c.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).unwrap();
            let mut s = String::new();
            c.read_to_string(&mut s).unwrap();
            s
        };
        let ok = get("/");
        assert!(ok.starts_with("HTTP/1.1 200 OK") && ok.contains("Content-Length: 5") && ok.ends_with("hello"), "{ok}");
        assert!(get("/nothing").starts_with("HTTP/1.1 404"));
    }
}
