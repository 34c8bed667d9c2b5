//! An embedder that runs an external program once and talks to it over pipes.
//!
//! Protocol (little-endian throughout):
//! - folio writes one JSON line per batch to the program's stdin:
//!   `{"role": "passage" | "query", "texts": ["...", ...]}`;
//! - the program answers on stdout with one binary frame: `u32 rows`, `u32 dim`, then
//!   `rows x dim` `f32` values row-major; or, for an error, `u32 0xFFFFFFFF`, `u32 len` and
//!   `len` bytes of UTF-8 message.
//!
//! At start folio sends an empty batch; the answer's `dim` is the embedder's dimension.
//! The program's stderr is passed through. `scripts/bench/embed_serve.py` serves
//! `../shared/bench/embed.py`'s models this way.

use std::io::{BufWriter, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use parking_lot::Mutex;

use super::{check_shape, EmbedError, Embedder, Role};
use crate::index::Metric;

/// The error marker in place of a frame's row count.
const ERROR_FRAME: u32 = u32::MAX;

/// How a [`CommandEmbedder`] runs its program.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandOptions {
    /// The longest wait for one answer (the first one includes loading the model).
    pub timeout: Duration,
    /// Texts per request.
    pub batch_size: usize,
}

impl Default for CommandOptions {
    fn default() -> Self {
        CommandOptions {
            timeout: Duration::from_secs(300),
            batch_size: 64,
        }
    }
}

/// A running program that embeds texts (see the module docs for the protocol).
pub struct CommandEmbedder {
    pipe: Pipe,
    name: String,
    dim: usize,
    options: CommandOptions,
}

/// A program spoken to over pipes: one JSON line a request, one frame an answer. Shared by
/// the command embedder and the command reranker (`rerank/command.rs`).
pub(crate) struct Pipe {
    command: String,
    timeout: Duration,
    session: Mutex<Option<Session>>,
}

struct Session {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    /// Frames as the reader thread receives them: `(values, dim)`.
    frames: Receiver<Result<(Vec<f32>, usize), FrameError>>,
}

impl CommandEmbedder {
    /// Starts `command` (run by `sh -c`) and asks it for its dimension.
    pub fn start(command: &str, options: CommandOptions) -> Result<CommandEmbedder, EmbedError> {
        let embedder = CommandEmbedder {
            pipe: Pipe::start(command, options.timeout)?,
            name: format!("cmd:{command}"),
            dim: 0,
            options,
        };
        let dim = embedder.exchange(&[], Role::Passage, None)?.1;
        if dim == 0 {
            return Err(embedder.pipe.error("answered dimension 0"));
        }
        Ok(CommandEmbedder { dim, ..embedder })
    }

    /// Sends one batch and checks its frame's shape when the dimension is known.
    fn exchange(
        &self,
        texts: &[&str],
        role: Role,
        expected_dim: Option<usize>,
    ) -> Result<(Vec<f32>, usize), EmbedError> {
        let request = serde_json::json!({
            "role": match role { Role::Query => "query", Role::Passage => "passage" },
            "texts": texts,
        });
        let (values, dim) = self.pipe.exchange(&request)?;
        if let Some(expected) = expected_dim {
            if dim != expected {
                return Err(EmbedError::Dimension { expected, got: dim });
            }
            check_shape(
                &values,
                texts.len(),
                expected,
                values.len() / expected.max(1),
            )?;
        }
        Ok((values, dim))
    }

    fn embed_role(&self, texts: &[&str], role: Role) -> Result<Vec<f32>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len() * self.dim);
        for batch in texts.chunks(self.options.batch_size.max(1)) {
            out.extend(self.exchange(batch, role, Some(self.dim))?.0);
        }
        Ok(out)
    }
}

impl Pipe {
    /// Starts `command` (run by `sh -c`); each answer is waited for at most `timeout`.
    pub(crate) fn start(command: &str, timeout: Duration) -> Result<Pipe, EmbedError> {
        Ok(Pipe {
            command: command.to_string(),
            timeout,
            session: Mutex::new(Some(Session::start(command)?)),
        })
    }

    /// An error of this program.
    pub(crate) fn error(&self, reason: impl Into<String>) -> EmbedError {
        EmbedError::Command {
            command: self.command.clone(),
            reason: reason.into(),
        }
    }

    /// Sends one request line and waits for its frame: `(values, columns)`. A timeout, a
    /// broken pipe or a garbled frame ends the program (the next call starts it again); an
    /// error the program reports leaves it running.
    pub(crate) fn exchange(
        &self,
        request: &serde_json::Value,
    ) -> Result<(Vec<f32>, usize), EmbedError> {
        let mut guard = self.session.lock();
        let session = match guard.as_mut() {
            Some(session) => session,
            None => guard.insert(Session::start(&self.command)?),
        };
        let sent = serde_json::to_writer(&mut session.stdin, request)
            .map_err(std::io::Error::from)
            .and_then(|()| session.stdin.write_all(b"\n"))
            .and_then(|()| session.stdin.flush());
        let answer = match sent {
            Err(e) => Err(self.error(format!("could not send a request: {e}"))),
            Ok(()) => match session.frames.recv_timeout(self.timeout) {
                Ok(Ok(frame)) => Ok(frame),
                Ok(Err(FrameError::Message(message))) => {
                    return Err(EmbedError::Protocol {
                        endpoint: format!("command `{}`", self.command),
                        reason: format!("the program reported: {message}"),
                    })
                }
                Ok(Err(e)) => Err(e.into_embed(&self.command)),
                Err(RecvTimeoutError::Timeout) => Err(EmbedError::Timeout {
                    endpoint: format!("command `{}`", self.command),
                    after: self.timeout,
                    attempts: 1,
                }),
                Err(RecvTimeoutError::Disconnected) => Err(self.error("exited")),
            },
        };
        answer.inspect_err(|_| {
            if let Some(mut session) = guard.take() {
                session.stop();
            }
        })
    }
}

impl Session {
    fn start(command: &str) -> Result<Session, EmbedError> {
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // A group of its own, so that stopping it reaches the program the shell started
        // too, not the shell alone (which left a hung program running).
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut shell, 0);
        let mut child = shell.spawn().map_err(|e| EmbedError::Command {
            command: command.to_string(),
            reason: format!("could not start: {e}"),
        })?;
        let (Some(stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(EmbedError::Command {
                command: command.to_string(),
                reason: "no pipes".into(),
            });
        };
        let (frames_tx, frames) = mpsc::channel();
        // Reads frames until the pipe closes or a frame is garbled; the channel's end tells
        // the caller it stopped.
        std::thread::spawn(move || loop {
            let frame = read_frame(&mut stdout);
            let go_on = matches!(frame, Ok(Some(_)) | Err(FrameError::Message(_)));
            let sent = match frame.transpose() {
                Some(frame) => frames_tx.send(frame).is_ok(),
                None => false,
            };
            if !(sent && go_on) {
                return;
            }
        });
        Ok(Session {
            child,
            stdin: BufWriter::new(stdin),
            frames,
        })
    }

    /// Ends the program and everything it started.
    fn stop(&mut self) {
        #[cfg(unix)]
        if let Ok(group) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: a plain system call on the group this session created (`start`);
            // the child is not yet reaped, so its id still names that group.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Closing stdin asks the program to exit; one that does not is ended.
        let _ = self.stdin.flush();
        for _ in 0..20 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.stop();
    }
}

enum FrameError {
    Io(std::io::Error),
    /// The program reported an error for one request.
    Message(String),
    Malformed(String),
}

impl FrameError {
    fn into_embed(self, command: &str) -> EmbedError {
        let endpoint = format!("command `{command}`");
        match self {
            FrameError::Io(e) => EmbedError::Transport {
                endpoint,
                reason: format!("reading its answer: {e}"),
            },
            FrameError::Message(reason) => EmbedError::Protocol {
                endpoint,
                reason: format!("the program reported: {reason}"),
            },
            FrameError::Malformed(reason) => EmbedError::Protocol { endpoint, reason },
        }
    }
}

/// The largest frame accepted (a wrong header must not allocate gigabytes).
const MAX_FRAME_VALUES: u64 = 1 << 28;

/// One frame; `None` at a clean end of the stream.
fn read_frame(stdout: &mut impl Read) -> Result<Option<(Vec<f32>, usize)>, FrameError> {
    let mut header = [0u8; 8];
    match stdout.read_exact(&mut header[..4]) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(FrameError::Io(e)),
    }
    stdout
        .read_exact(&mut header[4..])
        .map_err(FrameError::Io)?;
    let rows = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    let second = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if rows == ERROR_FRAME {
        let mut message = vec![0u8; second.min(1 << 16) as usize];
        stdout.read_exact(&mut message).map_err(FrameError::Io)?;
        return Err(FrameError::Message(
            String::from_utf8_lossy(&message).into_owned(),
        ));
    }
    let values = u64::from(rows) * u64::from(second);
    if values > MAX_FRAME_VALUES {
        return Err(FrameError::Malformed(format!(
            "a frame of {rows} x {second} values is too large"
        )));
    }
    let mut bytes = vec![0u8; values as usize * 4];
    stdout.read_exact(&mut bytes).map_err(FrameError::Io)?;
    let values = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    Ok(Some((values, second as usize)))
}

impl Embedder for CommandEmbedder {
    fn name(&self) -> &str {
        &self.name
    }

    fn fingerprint(&self) -> String {
        format!("dim={}", self.dim)
    }

    fn dimension(&self) -> usize {
        self.dim
    }

    fn metric(&self) -> Metric {
        Metric::Cosine
    }

    fn max_input_tokens(&self) -> usize {
        usize::MAX
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        self.embed_role(texts, Role::Passage)
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        self.embed_role(texts, Role::Query)
    }
}
