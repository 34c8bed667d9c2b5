//! A milvus-lite server on 127.0.0.1 for one test: a free port, a data directory of its own,
//! killed when dropped. The server is `$FOLIO_MILVUS_LITE`, else the pinned install
//! `scripts/ci/install_milvus_lite.sh` makes in `target/milvus-lite`.

use std::future::Future;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long a server may take to start listening (a cold Python start imports pyarrow and faiss).
const START: Duration = Duration::from_secs(120);

pub struct LiteServer {
    child: Child,
    pub port: u16,
    data: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

fn executable() -> PathBuf {
    if let Some(path) = std::env::var_os("FOLIO_MILVUS_LITE") {
        return PathBuf::from(path);
    }
    let pinned =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/milvus-lite/bin/milvus-lite");
    assert!(
        pinned.exists(),
        "milvus-lite is not installed: run scripts/ci/install_milvus_lite.sh or set FOLIO_MILVUS_LITE"
    );
    pinned
}

/// The Python of milvus-lite's environment (it has pymilvus): beside the server's program.
pub fn python() -> PathBuf {
    let python = executable().with_file_name("python");
    assert!(python.exists(), "no python beside milvus-lite: {python:?}");
    python
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

impl LiteServer {
    /// A server over a fresh data directory.
    pub fn start() -> LiteServer {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("milvus");
        let mut server = Self::spawn(&data, free_port());
        server._dir = Some(dir);
        server
    }

    fn spawn(data: &Path, port: u16) -> LiteServer {
        let child = Command::new(executable())
            .args([
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--data-dir",
            ])
            .arg(data)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut server = LiteServer {
            child,
            port,
            data: data.to_path_buf(),
            _dir: None,
        };
        server.wait_listening();
        server
    }

    fn wait_listening(&mut self) {
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("milvus-lite exited before listening: {status}");
            }
            assert!(started.elapsed() < START, "milvus-lite did not listen");
            sleep(Duration::from_millis(100));
        }
    }

    pub fn uri(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Kills the server (SIGKILL: no clean shutdown).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on the same data directory and port.
    pub fn restart(&mut self) {
        self.kill();
        let data = self.data.clone();
        let restarted = Self::spawn(&data, self.port);
        let old = std::mem::replace(self, restarted);
        self._dir = old.take_dir();
    }

    fn take_dir(mut self) -> Option<tempfile::TempDir> {
        self._dir.take()
    }
}

impl Drop for LiteServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `call` with a client of the server at `uri` on a runtime of its own: for a test that
/// changes a collection behind folio's back.
pub fn with_client<F: Future<Output = ()>>(
    uri: &str,
    call: impl FnOnce(milvus::v2::prelude::ClientV2) -> F,
) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let config = milvus::v2::prelude::ConnectConfig::new().uri(uri);
        let client = milvus::v2::prelude::ClientV2::new(&config).await.unwrap();
        call(client).await;
    });
}
