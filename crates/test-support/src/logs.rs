//! Every log line written while a test runs, at trace level, to check
//! what must never be logged (keys, bearer tokens).

use std::io::Write;
use std::sync::Arc;
use std::sync::Mutex;

use tracing::subscriber::DefaultGuard;

/// The captured lines. Holds the subscriber for this thread until dropped:
/// use a current-thread runtime so every task logs here.
#[derive(Debug)]
pub struct LogCapture {
    lines: Writer,
    _guard: DefaultGuard,
}

#[derive(Debug, Clone, Default)]
struct Writer(Arc<Mutex<Vec<u8>>>);

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogCapture {
    /// Captures this thread's events at every level, without colours.
    pub fn start() -> Self {
        let lines = Writer::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        LogCapture {
            lines,
            _guard: tracing::subscriber::set_default(subscriber),
        }
    }

    /// Everything logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.lines.0.lock().unwrap()).into_owned()
    }
}
