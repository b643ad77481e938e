//! Ending in-flight work when the client goes away.
//!
//! rmcp notices a closed stdin but gives running handlers a drain period
//! before it stops; a solve would keep its solver running through it. The
//! reader wrapper here cancels the server-wide shutdown token the moment
//! stdin reaches end of file, and every tool call runs under a child of that
//! token, so its process tree is stopped at once.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

/// An `AsyncRead` that cancels `token` when the inner reader hits EOF or fails.
pub struct EofSignal<R> {
    inner: R,
    token: CancellationToken,
}

impl<R> EofSignal<R> {
    pub fn new(inner: R, token: CancellationToken) -> Self {
        EofSignal { inner, token }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EofSignal<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &polled {
            Poll::Ready(Ok(())) if buf.filled().len() == before && buf.remaining() > 0 => {
                self.token.cancel();
            }
            Poll::Ready(Err(_)) => self.token.cancel(),
            _ => {}
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn cancels_at_end_of_file_only() {
        let token = CancellationToken::new();
        let mut reader = EofSignal::new(&b"line\n"[..], token.clone());
        let mut first = [0u8; 5];
        reader.read_exact(&mut first).await.unwrap();
        assert!(!token.is_cancelled());
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).await.unwrap();
        assert!(token.is_cancelled());
    }
}
