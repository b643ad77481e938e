//! Reading a child's pipes: a bounded head and tail of each stream, or
//! stdout rewritten line by line into the capture file, and the cut that
//! keeps only what was written before the child exited.
//!
//! Each pipe is read on a small thread of its own with blocking calls
//! (`poll`, then `read`), never as an async task. Under load (a hundred
//! solves at once on two cores) a task reading a child's stdout was at
//! times never woken again although the pipe held the child's whole output
//! and its end: the run then came back without its verdict. A blocking call
//! has no wake-up to miss, and a thread per running child is cheap beside
//! the child itself.
//!
//! The cut: every read happens under the pipe's mutex, after `poll` said it
//! will not block. When the child exits, [`Readers::cut`] takes, under the
//! same mutex, the bytes read so far plus what the pipe holds (`FIONREAD`):
//! exactly what was written up to that moment. Bytes past the cut (from a
//! process that escaped the tree, before the sweep killed it) are counted,
//! not kept.
//!
//! What a maintainer must not break: a reader never holds its mutex while
//! it could block, so taking the cut never waits for the child.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use super::LineFilter;

/// A stream kept as a bounded head and a bounded tail, with a count of
/// what fell between them.
pub(super) struct HeadAndTail {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    half: usize,
    dropped: u64,
}

pub(super) type SharedCapture = Arc<Mutex<HeadAndTail>>;

/// What [`HeadAndTail::since`] found.
#[derive(Debug, Default)]
pub(super) struct Since {
    /// New bytes of the head.
    pub head: Vec<u8>,
    /// Bytes were dropped between `head` and `tail`.
    pub gap: bool,
    /// New bytes of the tail.
    pub tail: Vec<u8>,
    /// How many bytes had been written, for the next call.
    pub offset: u64,
}

impl HeadAndTail {
    pub(super) fn shared(budget: u64) -> SharedCapture {
        let half = usize::try_from(budget / 2).unwrap_or(usize::MAX / 2);
        Arc::new(Mutex::new(HeadAndTail {
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            half,
            dropped: 0,
        }))
    }

    pub(super) fn push(&mut self, mut bytes: &[u8]) {
        let room = self.half.saturating_sub(self.head.len());
        let into_head = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..into_head]);
        bytes = &bytes[into_head..];
        self.tail.extend(bytes);
        while self.tail.len() > self.half {
            let excess = self.tail.len() - self.half;
            self.tail.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    /// What was written after the first `offset` bytes and is still kept:
    /// the head's part, whether bytes were dropped after it (the tail's
    /// part then starts mid-line), the tail's part, and the new offset. For
    /// a watcher that reads the output while it is written.
    pub(super) fn since(capture: &SharedCapture, offset: u64) -> Since {
        let Ok(capture) = capture.lock() else {
            return Since {
                offset,
                ..Since::default()
            };
        };
        let head_len = capture.head.len() as u64;
        let tail_start = head_len + capture.dropped;
        let head = usize::try_from(offset)
            .ok()
            .and_then(|from| capture.head.get(from..))
            .unwrap_or_default()
            .to_vec();
        let skip = usize::try_from(offset.saturating_sub(tail_start)).unwrap_or(usize::MAX);
        Since {
            head,
            gap: offset.max(head_len) < tail_start,
            tail: capture.tail.iter().skip(skip).copied().collect(),
            offset: (tail_start + capture.tail.len() as u64).max(offset),
        }
    }

    /// The kept text, a marker line where bytes were dropped (the tail then
    /// starts at its first whole line); and whether anything was dropped.
    pub(super) fn text(capture: &SharedCapture) -> (String, bool) {
        let Ok(capture) = capture.lock() else {
            return (String::new(), true);
        };
        let mut bytes = capture.head.clone();
        let tail: Vec<u8> = capture.tail.iter().copied().collect();
        if capture.dropped == 0 {
            bytes.extend_from_slice(&tail);
        } else {
            let start = tail
                .iter()
                .position(|byte| *byte == b'\n')
                .map_or(tail.len(), |newline| newline + 1);
            if !bytes.ends_with(b"\n") {
                bytes.push(b'\n');
            }
            bytes.extend_from_slice(
                format!(
                    "[solvergate: {} bytes of output dropped here]\n",
                    capture.dropped + start as u64
                )
                .as_bytes(),
            );
            bytes.extend_from_slice(&tail[start..]);
        }
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
        };
        (text, capture.dropped > 0)
    }
}

/// One pipe and what its reader has done with it.
struct Pipe {
    reader: io::PipeReader,
    progress: Mutex<Progress>,
}

#[derive(Default)]
struct Progress {
    /// Bytes read from the pipe.
    read: u64,
    /// Bytes written before the child exited, once it has.
    cut: Option<u64>,
    /// Bytes read past the cut (not kept).
    late: u64,
}

impl Pipe {
    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Waits until a read will not block, then reads under the mutex; the
    /// part of the bytes that falls before the cut. `None` at end of file.
    fn next<'b>(&self, buffer: &'b mut [u8]) -> Option<&'b [u8]> {
        loop {
            let mut fds = [PollFd::new(self.reader.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return None,
            }
            let mut progress = self.lock();
            let read = match (&self.reader).read(buffer) {
                Ok(0) => return None,
                Ok(read) => read,
                Err(error)
                    if matches!(
                        error.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) =>
                {
                    continue;
                }
                Err(_) => return None,
            };
            let start = progress.read;
            progress.read += read as u64;
            let keep = match progress.cut {
                Some(cut) => usize::try_from(cut.saturating_sub(start))
                    .unwrap_or(usize::MAX)
                    .min(read),
                None => read,
            };
            progress.late += (read - keep) as u64;
            return Some(&buffer[..keep]);
        }
    }
}

/// The threads that read a child's pipes.
#[derive(Default)]
pub(super) struct Readers {
    done: Vec<tokio::sync::oneshot::Receiver<()>>,
    pipes: Vec<Arc<Pipe>>,
}

/// The stack of a pipe-reading thread (its buffer is on the heap).
const READER_STACK: usize = 64 * 1024;

/// How long the readers of a finished tree's pipes may go without reading
/// a byte before they are given up (see [`Readers::finish`]).
const READER_IDLE: Duration = Duration::from_secs(2);

/// How long, at most, the readers of a finished tree's pipes are waited for.
const READER_LIMIT: Duration = Duration::from_secs(20);

impl Readers {
    /// Reads `pipe` to its end into a head-and-tail capture.
    pub(super) fn drain(&mut self, pipe: io::PipeReader, capture: SharedCapture) -> io::Result<()> {
        self.start(pipe, move |pipe| drain(pipe, &capture))
    }

    /// Reads `pipe` to its end through [`filter_lines`] into `capture`.
    pub(super) fn filter(
        &mut self,
        pipe: io::PipeReader,
        capture: File,
        filter: Box<dyn LineFilter>,
        cap: u64,
    ) -> io::Result<()> {
        self.start(pipe, move |pipe| filter_lines(pipe, capture, filter, cap))
    }

    fn start(
        &mut self,
        reader: io::PipeReader,
        work: impl FnOnce(&Pipe) + Send + 'static,
    ) -> io::Result<()> {
        let pipe = Arc::new(Pipe {
            reader,
            progress: Mutex::new(Progress::default()),
        });
        let (done, finished) = tokio::sync::oneshot::channel();
        let theirs = pipe.clone();
        std::thread::Builder::new()
            .name("solvergate-pipe".to_owned())
            .stack_size(READER_STACK)
            .spawn(move || {
                work(&theirs);
                let _ = done.send(());
            })?;
        self.done.push(finished);
        self.pipes.push(pipe);
        Ok(())
    }

    /// The `(dev, inode)` of each pipe, to recognise a process holding one.
    pub(super) fn ids(&self) -> Vec<(u64, u64)> {
        self.pipes
            .iter()
            .filter_map(|pipe| super::escape::file_id(&pipe.reader))
            .collect()
    }

    /// Marks the child's exit: from now on only bytes written before this
    /// moment are kept.
    pub(super) fn cut(&self) {
        for pipe in &self.pipes {
            let mut progress = pipe.lock();
            let pending = rustix::io::ioctl_fionread(&pipe.reader).unwrap_or(0);
            progress.cut = Some(progress.read + pending);
        }
    }

    fn read(&self) -> u64 {
        self.pipes.iter().map(|pipe| pipe.lock().read).sum()
    }

    /// Waits for every reader to reach end of file, once the tree (and its
    /// escapees) is gone; then the bytes read past the cut.
    ///
    /// The pipes then end as soon as the readers have taken what is in
    /// them. A reader is given up (left to end with its pipe) only when it
    /// has read nothing for [`READER_IDLE`] — a process we could not kill
    /// holds the pipe open without writing — or after [`READER_LIMIT`] in
    /// all (one that keeps writing).
    pub(super) async fn finish(&mut self) -> u64 {
        let limit = tokio::time::Instant::now() + READER_LIMIT;
        'readers: for mut finished in std::mem::take(&mut self.done) {
            loop {
                let before = self.read();
                let idle = tokio::time::Instant::now() + READER_IDLE;
                tokio::select! {
                    // Sent, or the thread ended without sending (a panic).
                    _ = &mut finished => break,
                    () = tokio::time::sleep_until(idle.min(limit)) => {
                        let stalled = self.read() == before;
                        if stalled || tokio::time::Instant::now() >= limit {
                            break 'readers;
                        }
                    }
                }
            }
        }
        self.pipes.iter().map(|pipe| pipe.lock().late).sum()
    }
}

/// Reads a pipe to its end into a head-and-tail capture.
fn drain(pipe: &Pipe, capture: &SharedCapture) {
    let mut buffer = vec![0u8; 64 * 1024];
    while let Some(bytes) = pipe.next(&mut buffer) {
        if let Ok(mut capture) = capture.lock() {
            capture.push(bytes);
        }
    }
}

/// Reads stdout from the pipe to its end, hands each line to `filter` and
/// appends what it keeps to the capture file. Writing stops just past `cap`
/// (the cap check then stops the tree); a line that grows past `cap`
/// without a newline is written as it is, unfiltered.
fn filter_lines(pipe: &Pipe, capture: File, mut filter: Box<dyn LineFilter>, cap: u64) {
    let limit = usize::try_from(cap).unwrap_or(usize::MAX);
    let mut out = CappedWriter {
        file: capture,
        written: 0,
        cap,
    };
    let mut buffer = vec![0u8; 64 * 1024];
    let mut line = Vec::new();
    // Inside a line too long to filter: its bytes go straight through.
    let mut passing_through = false;
    while let Some(mut chunk) = pipe.next(&mut buffer) {
        while !chunk.is_empty() {
            let newline = chunk.iter().position(|byte| *byte == b'\n');
            let (part, rest) = match newline {
                Some(at) => chunk.split_at(at + 1),
                None => (chunk, &chunk[chunk.len()..]),
            };
            chunk = rest;
            if passing_through {
                out.write(part);
                passing_through = newline.is_none();
                continue;
            }
            line.extend_from_slice(part);
            if newline.is_some() {
                out.write(&filtered(&line, filter.as_mut()));
                line.clear();
            } else if line.len() > limit {
                out.write(&line);
                line.clear();
                passing_through = true;
            }
        }
    }
    if !line.is_empty() {
        out.write(&filtered(&line, filter.as_mut()));
    }
    if let Some(mut held) = filter.finish() {
        held.push('\n');
        out.write(held.as_bytes());
    }
}

/// The filtered capture: stops taking bytes once it holds more than the
/// cap. Unbuffered, so what is written is in the file at once (for the
/// watcher and the cap check).
struct CappedWriter {
    file: File,
    written: u64,
    cap: u64,
}

impl CappedWriter {
    fn write(&mut self, bytes: &[u8]) {
        use std::io::Write;
        if self.written <= self.cap && self.file.write_all(bytes).is_ok() {
            self.written += bytes.len() as u64;
        }
    }
}

/// One line (with its newline, if it had one) as the filter keeps it:
/// nothing when the filter dropped it.
fn filtered<'a>(line: &'a [u8], filter: &mut dyn LineFilter) -> std::borrow::Cow<'a, [u8]> {
    let (body, newline) = match line.strip_suffix(b"\n") {
        Some(body) => (body, "\n"),
        None => (line, ""),
    };
    match std::str::from_utf8(body)
        .ok()
        .and_then(|text| filter.line(text))
    {
        Some(kept) if kept.is_empty() => std::borrow::Cow::Borrowed(&[]),
        Some(mut kept) => {
            kept.push_str(newline);
            std::borrow::Cow::Owned(kept.into_bytes())
        }
        None => std::borrow::Cow::Borrowed(line),
    }
}
