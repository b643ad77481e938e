//! The front door of the stdio transport: every line a client sends passes
//! here before rmcp sees it, and every line rmcp writes passes here on its
//! way to stdout.
//!
//! rmcp drops a line it cannot use without a word: one over its length cap,
//! one that is not JSON. A client that sent it then waits forever for an
//! answer. The gate answers such lines itself, as JSON-RPC errors:
//!
//! - a line longer than [`MAX_MESSAGE_BYTES`] is read to its end without
//!   being kept, and answered with an Invalid Request error naming the limit.
//!   The request's id is recovered from the line's first or last few KiB (a
//!   top-level `"id"` before `"params"`, as the Python SDK writes it, or as
//!   the last member, as the TypeScript SDK writes it); when it cannot be
//!   found the error carries `id: null`;
//! - a line that is not JSON is answered with a Parse error (`id: null`, as
//!   JSON-RPC 2.0 prescribes);
//! - a `tools/call` whose `arguments` is not an object is answered with an
//!   Invalid Params error (rmcp would answer "method not found").
//!
//! Everything else goes to rmcp unchanged. Our own replies are written to
//! stdout only between whole lines of rmcp's output, so the two never mix
//! within a line. When stdin ends, the gate cancels the server-wide
//! shutdown token at once (running calls stop their process trees) and then
//! closes rmcp's input.

use std::collections::VecDeque;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The longest request line the server reads: 32 MiB.
pub const MAX_MESSAGE_BYTES: usize = 32 * 1024 * 1024;

/// How much of an oversized line's start and end is kept to find its id.
const ID_WINDOW: usize = 4096;

/// Buffer between the gate and rmcp, each way.
const PIPE_BYTES: usize = 256 * 1024;

/// JSON-RPC error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// Puts the gate between `input`/`output` and the transport rmcp is given:
/// returns the reader and writer rmcp should use. The gate's two tasks end
/// when stdin ends and rmcp has closed its writer.
pub fn open<R, W>(
    input: R,
    output: W,
    eof: CancellationToken,
) -> (
    impl AsyncRead + Send + Unpin + 'static,
    impl AsyncWrite + Send + Unpin + 'static,
)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (server_reads, gate_writes) = tokio::io::duplex(PIPE_BYTES);
    let (gate_reads, server_writes) = tokio::io::duplex(PIPE_BYTES);
    let (replies, queued) = mpsc::unbounded_channel();
    tokio::spawn(inbound(input, gate_writes, replies, eof));
    tokio::spawn(outbound(gate_reads, output, queued));
    (server_reads, server_writes)
}

/// What one line from the client turned out to be.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Hand it to rmcp.
    Forward,
    /// Answer it ourselves.
    Reply(Value),
    /// A blank line: nothing to do.
    Skip,
}

/// Judges a whole line (without its newline).
fn judge(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
    }
    let message: Value = match serde_json::from_slice(line) {
        Ok(message) => message,
        Err(error) => return unparsed(line, &error),
    };
    if message.get("method").and_then(Value::as_str) == Some("tools/call")
        && let Some(arguments) = message.pointer("/params/arguments")
        && !(arguments.is_object() || arguments.is_null())
    {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        return Verdict::Reply(error_reply(
            id,
            INVALID_PARAMS,
            format!(
                "Invalid params: tools/call arguments must be a JSON object (name → value), got {}",
                kind_of(arguments)
            ),
        ));
    }
    Verdict::Forward
}

/// How deep serde_json follows nested arrays and objects (its fixed limit).
const MAX_NESTING: usize = 127;

/// The deepest nesting of arrays and objects in `line`, brackets inside
/// strings not counted.
fn nesting(line: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &byte in line {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

fn window_head(line: &[u8]) -> &[u8] {
    &line[..line.len().min(ID_WINDOW)]
}

fn window_tail(line: &[u8]) -> &[u8] {
    &line[line.len().saturating_sub(ID_WINDOW)..]
}

/// The answer to a line serde_json could not read as a value.
fn unparsed(line: &[u8], error: &serde_json::Error) -> Verdict {
    let depth = nesting(line);
    if depth > MAX_NESTING {
        // Well-formed, perhaps, but deeper than the parser follows: the id
        // is still at the top level, so the client gets its answer.
        return Verdict::Reply(error_reply(
            recover_id(window_head(line), window_tail(line)),
            INVALID_REQUEST,
            format!(
                "Invalid Request: the message nests {depth} levels deep, over the {MAX_NESTING} levels the server reads; send flatter arguments"
            ),
        ));
    }
    if error.is_syntax() || error.is_eof() {
        return Verdict::Reply(error_reply(
            Value::Null,
            PARSE_ERROR,
            format!("Parse error: the line is not JSON ({error})"),
        ));
    }
    // Valid JSON that is not a message shape: rmcp answers that itself.
    Verdict::Forward
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn error_reply(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The answer to a line of `length` bytes that was over the limit.
fn oversized_reply(id: Value, length: usize) -> Value {
    error_reply(
        id,
        INVALID_REQUEST,
        format!(
            "Invalid request: the message is {length} bytes, over the {} MiB limit for one message; \
             pass large models and data as files (the *_files tools) instead of inline text",
            MAX_MESSAGE_BYTES / (1024 * 1024)
        ),
    )
}

/// A request id read from the start or the end of a line too long to parse.
fn recover_id(head: &[u8], tail: &[u8]) -> Value {
    let head = String::from_utf8_lossy(head);
    // Python SDK order: {"jsonrpc": "2.0", "id": 7, "method": ..., "params": {...}}.
    if let Some(at) = head.find("\"id\"")
        && head.find("\"params\"").is_none_or(|params| at < params)
        && let Some((id, _)) = id_value(&head[at + 4..])
    {
        return id;
    }
    // TypeScript SDK order: {"method": ..., "params": {...}, "jsonrpc": "2.0", "id": 7}.
    let tail = String::from_utf8_lossy(tail);
    if let Some(at) = tail.rfind("\"id\"")
        && let Some((id, rest)) = id_value(&tail[at + 4..])
        && rest.trim() == "}"
    {
        return id;
    }
    Value::Null
}

/// Parses `: <number or string>` and returns the value and what follows.
fn id_value(text: &str) -> Option<(Value, &str)> {
    let text = text.trim_start().strip_prefix(':')?.trim_start();
    if let Some(quoted) = text.strip_prefix('"') {
        let mut escaped = false;
        for (index, c) in quoted.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    let literal = &text[..index + 2];
                    let value = serde_json::from_str(literal).ok()?;
                    return Some((value, &quoted[index + 1..]));
                }
                _ => escaped = false,
            }
        }
        return None;
    }
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(text.len());
    let number: i64 = text[..end].parse().ok()?;
    Some((Value::from(number), &text[end..]))
}

/// A line being read: whole while under the limit, else only its length and
/// the two windows that may hold its id.
#[derive(Default)]
struct Line {
    bytes: Vec<u8>,
    oversized: bool,
    length: usize,
    tail: VecDeque<u8>,
}

impl Line {
    fn push(&mut self, chunk: &[u8]) {
        self.length += chunk.len();
        if !self.oversized && self.bytes.len() + chunk.len() <= MAX_MESSAGE_BYTES {
            self.bytes.extend_from_slice(chunk);
            return;
        }
        if !self.oversized {
            self.oversized = true;
            self.bytes.truncate(ID_WINDOW);
            self.bytes.shrink_to(ID_WINDOW);
        }
        let keep = chunk.len().min(ID_WINDOW);
        self.tail.extend(&chunk[chunk.len() - keep..]);
        let excess = self.tail.len().saturating_sub(ID_WINDOW);
        self.tail.drain(..excess);
    }

    fn verdict(&self) -> Verdict {
        if self.oversized {
            let tail: Vec<u8> = self.tail.iter().copied().collect();
            let tail = tail.strip_suffix(b"\r").unwrap_or(&tail);
            Verdict::Reply(oversized_reply(recover_id(&self.bytes, tail), self.length))
        } else {
            judge(&self.bytes)
        }
    }
}

/// Reads the client's lines, answers the ones rmcp would drop, forwards the
/// rest.
async fn inbound<R: AsyncRead + Unpin>(
    input: R,
    mut server: DuplexStream,
    replies: mpsc::UnboundedSender<Value>,
    eof: CancellationToken,
) {
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut line = Line::default();
    loop {
        let (consumed, complete) = match input.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(available) => match available.iter().position(|&b| b == b'\n') {
                Some(newline) => {
                    line.push(&available[..newline]);
                    (newline + 1, true)
                }
                None => {
                    line.push(available);
                    (available.len(), false)
                }
            },
        };
        input.consume(consumed);
        if !complete {
            continue;
        }
        let finished = std::mem::take(&mut line);
        match finished.verdict() {
            Verdict::Skip => {}
            Verdict::Reply(reply) => {
                let _ = replies.send(reply);
            }
            Verdict::Forward => {
                let mut bytes = finished.bytes;
                bytes.push(b'\n');
                if server.write_all(&bytes).await.is_err() {
                    break;
                }
            }
        }
    }
    // The client is gone: stop running calls now, then let rmcp see the end.
    eof.cancel();
    let _ = server.shutdown().await;
}

/// Copies rmcp's lines to stdout and slips the gate's replies in between
/// whole lines.
async fn outbound<W: AsyncWrite + Unpin>(
    server: DuplexStream,
    mut output: W,
    mut replies: mpsc::UnboundedReceiver<Value>,
) {
    let mut server = BufReader::new(server);
    let mut pending: Vec<u8> = Vec::new();
    let mut waiting: VecDeque<Value> = VecDeque::new();
    let mut replies_open = true;
    loop {
        // Replies go out only when no line of rmcp's is half copied.
        if pending.is_empty() {
            while let Some(reply) = waiting.pop_front() {
                let mut text = reply.to_string().into_bytes();
                text.push(b'\n');
                if output.write_all(&text).await.is_err() || output.flush().await.is_err() {
                    return;
                }
            }
        }
        tokio::select! {
            biased;
            read = server.read_until(b'\n', &mut pending) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) if pending.ends_with(b"\n") => {
                    if output.write_all(&pending).await.is_err() || output.flush().await.is_err() {
                        return;
                    }
                    pending.clear();
                }
                Ok(_) => {}
            },
            reply = replies.recv(), if replies_open => match reply {
                Some(reply) => waiting.push_back(reply),
                None => replies_open = false,
            },
        }
    }
    // rmcp closed its side: what is left of ours still goes out.
    for reply in waiting {
        let mut text = reply.to_string().into_bytes();
        text.push(b'\n');
        if output.write_all(&text).await.is_err() {
            break;
        }
    }
    let _ = output.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_is_not_json_gets_a_parse_error() {
        let Verdict::Reply(reply) = judge(b"hello there") else {
            panic!("not answered");
        };
        assert_eq!(reply["id"], Value::Null);
        assert_eq!(reply["error"]["code"], PARSE_ERROR);
    }

    #[test]
    fn a_message_nested_too_deep_is_answered_with_its_id() {
        let mut deep = "1".to_owned();
        for _ in 0..200 {
            deep = format!("{{\"a\":[{deep}]}}");
        }
        for line in [
            format!(
                r#"{{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{{"name":"x","arguments":{{"k":{deep}}}}}}}"#
            ),
            format!(
                r#"{{"method":"tools/call","params":{{"name":"x","arguments":{{"k":{deep}}}}},"jsonrpc":"2.0","id":41}}"#
            ),
        ] {
            let Verdict::Reply(reply) = judge(line.as_bytes()) else {
                panic!("a deep message must be answered");
            };
            assert_eq!(reply["id"], 41);
            assert_eq!(reply["error"]["code"], INVALID_REQUEST);
            let message = reply["error"]["message"].as_str().unwrap();
            assert!(message.contains("nests 403 levels deep"), "{message}");
        }
        // Brackets inside strings do not count; 100 levels still parse.
        assert_eq!(nesting(br#"{"a":"[[[[\"{{{{"}"#), 1);
        let mut fine = "1".to_owned();
        for _ in 0..50 {
            fine = format!("[{fine}]");
        }
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","arguments":{{"k":{fine}}}}}}}"#
        );
        assert_eq!(judge(line.as_bytes()), Verdict::Forward);
    }

    #[test]
    fn blank_lines_are_skipped_and_messages_forwarded() {
        assert_eq!(judge(b"  \r"), Verdict::Skip);
        assert_eq!(
            judge(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Verdict::Forward
        );
        assert_eq!(
            judge(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}"#),
            Verdict::Forward
        );
    }

    #[test]
    fn tools_call_with_arguments_that_are_not_an_object_is_invalid_params() {
        let Verdict::Reply(reply) =
            judge(br#"{"jsonrpc":"2.0","id":"a7","method":"tools/call","params":{"name":"x","arguments":[1]}}"#)
        else {
            panic!("not answered");
        };
        assert_eq!(reply["id"], "a7");
        assert_eq!(reply["error"]["code"], INVALID_PARAMS);
    }

    #[test]
    fn the_id_of_an_oversized_line_is_found_at_either_end() {
        let python = br#"{"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": "x", "arguments": {"id": 9, "data": ""#;
        assert_eq!(recover_id(python, b"\"}}}"), Value::from(42));
        let typescript_head =
            br#"{"method":"tools/call","params":{"name":"x","arguments":{"id":9,"data":""#;
        let typescript_tail = br#"xx"}},"jsonrpc":"2.0","id":"req-3"}"#;
        assert_eq!(
            recover_id(typescript_head, typescript_tail),
            Value::from("req-3")
        );
        assert_eq!(recover_id(b"{\"method\":", b"\"x\"}"), Value::Null);
    }

    #[test]
    fn an_oversized_line_keeps_only_its_windows() {
        let mut line = Line::default();
        line.push(br#"{"jsonrpc":"2.0","id":5,"params":{"d":""#);
        let chunk = vec![b'x'; 1024 * 1024];
        for _ in 0..40 {
            line.push(&chunk);
        }
        line.push(br#""}}"#);
        assert!(line.oversized);
        assert!(line.bytes.len() <= ID_WINDOW && line.tail.len() <= ID_WINDOW);
        let Verdict::Reply(reply) = line.verdict() else {
            panic!("not answered");
        };
        assert_eq!(reply["id"], 5);
        assert_eq!(reply["error"]["code"], INVALID_REQUEST);
        assert!(
            reply["error"]["message"]
                .as_str()
                .is_some_and(|text| text.contains("32 MiB")),
            "{reply}"
        );
    }

    #[tokio::test]
    async fn replies_never_split_a_line_of_the_server() {
        let (mut server_side, gate_side) = tokio::io::duplex(64);
        let (sender, receiver) = mpsc::unbounded_channel();
        let (output, mut captured) = tokio::io::duplex(1 << 16);
        let task = tokio::spawn(outbound(gate_side, output, receiver));
        server_side.write_all(b"{\"first\":").await.unwrap();
        tokio::task::yield_now().await;
        sender.send(json!({"reply": 1})).unwrap();
        tokio::task::yield_now().await;
        server_side
            .write_all(b"1}\n{\"second\":2}\n")
            .await
            .unwrap();
        drop(server_side);
        drop(sender);
        task.await.unwrap();
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut captured, &mut text)
            .await
            .unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "{\"first\":1}");
        assert!(lines.contains(&"{\"reply\":1}"), "{text}");
        assert!(lines.contains(&"{\"second\":2}"), "{text}");
        assert_eq!(lines.len(), 3, "{text}");
    }
}
