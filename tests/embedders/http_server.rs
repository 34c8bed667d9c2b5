//! A scripted HTTP server on 127.0.0.1 for the tests of HTTP embedders and rerankers: each
//! connection gets the script's next reply (its last one repeats), and the requests' paths
//! and JSON bodies are kept for the test to read.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// A 200 answer's body, made from the request's.
pub type Answer = Arc<dyn Fn(&serde_json::Value) -> serde_json::Value + Send + Sync>;

/// What the server does with one request.
#[derive(Clone)]
pub enum Reply {
    Status(u16),
    /// 200 with this body.
    Json(Answer),
    /// Holds the connection this long without answering.
    Hang(Duration),
}

pub struct Server {
    /// `http://127.0.0.1:PORT/v1`.
    pub url: String,
    pub requests: Arc<AtomicUsize>,
    /// Each request's path and body, in the order they were read.
    pub bodies: Arc<Mutex<Vec<(String, serde_json::Value)>>>,
}

/// Serves `script` (its last reply repeats) until the test's process ends or 60 s pass.
pub fn serve(script: Vec<Reply>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let url = format!("http://{}/v1", listener.local_addr().expect("address"));
    let requests = Arc::new(AtomicUsize::new(0));
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let (count, kept) = (requests.clone(), bodies.clone());
    listener.set_nonblocking(true).expect("nonblocking");
    thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            match listener.accept() {
                Ok((stream, _)) => {
                    let n = count.fetch_add(1, Ordering::SeqCst);
                    let reply = script[n.min(script.len() - 1)].clone();
                    let kept = kept.clone();
                    thread::spawn(move || answer(stream, reply, &kept));
                }
                Err(_) => thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    Server {
        url,
        requests,
        bodies,
    }
}

fn answer(stream: TcpStream, reply: Reply, kept: &Mutex<Vec<(String, serde_json::Value)>>) {
    stream.set_nonblocking(false).ok();
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut length = 0;
    let mut path = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if path.is_empty() {
            path = line.split(' ').nth(1).unwrap_or_default().to_string();
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok();
    let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    kept.lock().unwrap().push((path, request.clone()));
    let (status, text) = match reply {
        Reply::Hang(d) => {
            thread::sleep(d);
            return;
        }
        Reply::Status(status) => (status, r#"{"error": {"message": "slow down"}}"#.to_string()),
        Reply::Json(answer) => (200, answer(&request).to_string()),
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

/// One attempt, ended by the client's timeout: a hung service is not asked again.
pub fn assert_asked_once_quickly(server: &Server, started: Instant) {
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests.load(Ordering::SeqCst), 1);
}
