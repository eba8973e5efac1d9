//! The log, in redis-server's format: `pid:role dd Mon yyyy hh:mm:ss.mmm <level> message`, where the
//! level is `.` debug, `-` verbose, `*` notice, `#` warning (Redis's `serverLogRaw`). Tools and
//! Redis's own test suite read these lines, so the words matter as much as the format.
//!
//! `tracing`'s levels map onto Redis's: TRACE is `debug`, DEBUG is `verbose`, INFO is `notice`,
//! WARN and ERROR are `warning`. `loglevel` can change at run time (CONFIG SET): the filter reads
//! an atomic that the configuration sets whenever `loglevel` takes a value (`Host::set_log_level`).

use std::fmt;
use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::prelude::*;
use tracing_subscriber::registry::LookupSpan;

/// The most verbose Redis level logged: 0 debug, 1 verbose, 2 notice, 3 warning, 4 nothing.
static VERBOSITY: AtomicU8 = AtomicU8::new(2);

/// Where lines go: the `logfile`, or stdout when it is empty.
static SINK: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();

/// Seconds east of UTC of the local time zone, read once at startup (as Redis caches its timezone).
static UTC_OFFSET: OnceLock<i64> = OnceLock::new();

/// Redis's level for a `loglevel` value.
pub fn verbosity_of(loglevel: &str) -> u8 {
    match loglevel {
        "debug" => 0,
        "verbose" => 1,
        "warning" => 3,
        "nothing" => 4,
        _ => 2,
    }
}

/// Redis's level of a tracing level.
fn redis_level(level: &Level) -> u8 {
    match *level {
        Level::TRACE => 0,
        Level::DEBUG => 1,
        Level::INFO => 2,
        _ => 3,
    }
}

/// Sets the level from `loglevel` (whenever the configuration stores it).
pub fn set_level(loglevel: &str) {
    let v = verbosity_of(loglevel);
    if VERBOSITY.swap(v, Ordering::Relaxed) != v {
        // The filter's level hint changed: tracing caches it in every call site.
        tracing::callsite::rebuild_interest_cache();
    }
}

/// The filter of the log's one layer. It answers at every event, not once per call site (a plain
/// `filter_fn`'s answer is cached, so a later CONFIG SET loglevel would not reach lines already
/// seen once), and it tells tracing the most verbose level it can pass, so that the call sites
/// and spans above it (openraft's `debug` and `trace` spans, on every request in consensus mode)
/// are skipped at one comparison instead of being built and then refused.
struct RedisFilter;

impl<S> tracing_subscriber::layer::Filter<S> for RedisFilter {
    fn enabled(&self, meta: &tracing::Metadata<'_>, _: &tracing_subscriber::layer::Context<'_, S>) -> bool {
        // openraft (consensus mode) reports every vote and membership step at INFO: those lines
        // are `verbose` here, and its warnings stay warnings.
        let level = match redis_level(meta.level()) {
            2 if meta.target().starts_with("openraft") => 1,
            l => l,
        };
        level >= VERBOSITY.load(Ordering::Relaxed)
    }

    fn callsite_enabled(&self, _: &'static tracing::Metadata<'static>) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        use tracing::level_filters::LevelFilter;
        Some(match VERBOSITY.load(Ordering::Relaxed) {
            0 => LevelFilter::TRACE,
            1 => LevelFilter::DEBUG,
            2 => LevelFilter::INFO,
            3 => LevelFilter::WARN,
            _ => LevelFilter::OFF,
        })
    }
}

/// Starts logging to `logfile` (stdout when empty), at the level the configuration set. Fails as
/// Redis does when the file cannot be opened: "Can't open the log file: ...".
pub fn init(logfile: &str) -> Result<(), String> {
    let _ = UTC_OFFSET.set(local_utc_offset());
    let path = (!logfile.is_empty()).then(|| std::path::PathBuf::from(logfile));
    if let Some(p) = &path {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .map_err(|e| format!("Can't open the log file: {}", crate::net::strerror(&e)))?;
    }
    let _ = SINK.set(path);
    let layer =
        tracing_subscriber::fmt::layer().event_format(RedisFormat).with_writer(|| Sink).with_filter(RedisFilter);
    tracing_subscriber::registry().with(layer).init();
    Ok(())
}

/// Writes `text` to the log as it is, without a prefix (Redis's `LL_RAW`, used for the logo).
pub fn raw(text: &str) {
    if VERBOSITY.load(Ordering::Relaxed) <= 2 {
        let mut s = Sink;
        let _ = s.write_all(text.as_bytes());
        let _ = s.flush();
    }
}

/// Writes a warning line (`#`) and then `raw` as it is, in one write, whatever the level but
/// `nothing`: the crash report's way to the log (`crate::crash`), which takes no lock of the
/// tracing subscriber's, nor std's lock of standard output (see [`write_stdout_unlocked`]).
pub fn warning_then_raw(line: &str, raw: &str) {
    if VERBOSITY.load(Ordering::Relaxed) > 3 {
        return;
    }
    let mut text = String::new();
    if !line.is_empty() {
        text = format!("{}:M {} # {line}\n", std::process::id(), timestamp(SystemTime::now()));
    }
    text.push_str(raw);
    match SINK.get() {
        Some(Some(_)) => {
            let _ = Sink.write_all(text.as_bytes());
        }
        _ => write_stdout_unlocked(text.as_bytes()),
    }
}

/// Writes `buf` to standard output with write(2), not through std's `Stdout`: a signal handler
/// runs on the thread the signal interrupted, and if that thread was writing a log line it holds
/// `Stdout`'s reentrant lock with its buffer borrowed, so the handler's own write found the buffer
/// borrowed and panicked, in a function that cannot unwind (a `kill -ABRT` in the middle of a log
/// line aborted without a report).
fn write_stdout_unlocked(mut buf: &[u8]) {
    use std::os::fd::AsRawFd;
    let fd = std::io::stdout().as_raw_fd();
    while !buf.is_empty() {
        // SAFETY: `buf` is a live slice, so its pointer is valid for reads of `buf.len()` bytes
        // for the whole call, and write(2) only reads them; a closed or bad descriptor only
        // makes the call fail.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        match usize::try_from(n) {
            Ok(0) => return,
            Ok(n) => buf = &buf[n..],
            Err(_) if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// One write per line: the file is opened in append mode for each event, as Redis reopens its log
/// for each line (so a rotated log file is picked up without a signal).
struct Sink;

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match SINK.get() {
            Some(Some(path)) => std::fs::OpenOptions::new().create(true).append(true).open(path)?.write_all(buf),
            _ => {
                let mut out = std::io::stdout().lock();
                out.write_all(buf)?;
                out.flush()
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct RedisFormat;

impl<S, N> FormatEvent<S, N> for RedisFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut w: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let mark = [b'.', b'-', b'*', b'#'][redis_level(event.metadata().level()) as usize] as char;
        write!(w, "{}:M {} {} ", std::process::id(), timestamp(SystemTime::now()), mark)?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// `25 Nov 2026 14:35:56.626` in local time (Redis's `%d %b %Y %H:%M:%S.` plus milliseconds).
fn timestamp(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64 + UTC_OFFSET.get().copied().unwrap_or(0);
    format_civil(secs, d.subsec_millis())
}

fn format_civil(secs: i64, millis: u32) -> String {
    let (y, m, day) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!("{day:02} {} {y} {:02}:{:02}:{:02}.{millis:03}", MONTHS[m as usize - 1], s / 3600, s / 60 % 60, s % 60)
}

/// (year, month 1-12, day 1-31) of a day number counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, exact over the proleptic Gregorian calendar).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The local zone's offset from UTC now, in seconds (0 if it cannot be read).
fn local_utc_offset() -> i64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as libc::time_t).unwrap_or(0);
    // SAFETY: `localtime_r` is the thread-safe form: it writes only into `tm`, a zeroed, properly
    // aligned `libc::tm` that lives on this frame, and reads `now` through a valid pointer. It may
    // read TZ and /etc/localtime (tzset), which nothing in this process modifies.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&now, &mut tm).is_null() };
    if ok { tm.tm_gmtoff } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_format_as_redis_does() {
        assert_eq!(format_civil(0, 0), "01 Jan 1970 00:00:00.000");
        // date -u -d @1795617356 -> Wed Nov 25 14:35:56 UTC 2026
        assert_eq!(format_civil(1_795_617_356, 626), "25 Nov 2026 14:35:56.626");
        // A leap day and the last second of a century year.
        assert_eq!(format_civil(951_782_400, 5), "29 Feb 2000 00:00:00.005");
        assert_eq!(format_civil(4_102_444_799, 999), "31 Dec 2099 23:59:59.999");
    }

    #[test]
    fn levels_map_onto_redis_marks() {
        assert_eq!(verbosity_of("debug"), 0);
        assert_eq!(verbosity_of("verbose"), redis_level(&Level::DEBUG));
        assert_eq!(verbosity_of("notice"), redis_level(&Level::INFO));
        assert_eq!(verbosity_of("warning"), redis_level(&Level::WARN));
        assert_eq!(redis_level(&Level::ERROR), 3);
    }
}
