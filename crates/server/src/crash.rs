//! The crash report on a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT), as Redis's
//! `sigsegvHandler` writes it to the log: the signal and its code, the address for a bad access,
//! the sender for a signal sent with `kill`, then `------ STACK TRACE ------` and the stack of the
//! thread that took the signal; afterwards the process dies of the same signal (a core dump
//! where they are on), as Redis's `bugReportEnd` makes it. `crash-log-enabled no` leaves out the
//! report. Redis's report also carries INFO, CLIENT LIST and a dump of the code around the
//! faulting instruction; this one does not (they would read the server's state under its locks
//! from a thread that may have died holding one).
//!
//! Like Redis's, the handler is not async-signal-safe (it formats, allocates, and symbolizes
//! the stack): a crash inside the allocator can hang it instead of reporting. The signal is
//! taken once (`SA_RESETHAND`): a second fault while reporting ends the process at once. Like
//! Redis's, it runs on the stack of the thread that took the signal, not on the small signal
//! stack (unwinding needs more than that stack has: the capture overflowed it under Redis's
//! suite), so a stack overflow ends the process without a report, as it does Redis.

use engine::server::Server;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The server whose `crash-log-enabled` the handler reads (an atomic: no lock in the handler).
static SERVER: OnceLock<Arc<Server>> = OnceLock::new();

/// Set once a report started.
static REPORTING: AtomicBool = AtomicBool::new(false);

const SIGNALS: [libc::c_int; 5] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL, libc::SIGABRT];

/// Installs the handler for the fatal signals. Replaces the Rust runtime's stack-overflow
/// handler for SIGSEGV and SIGBUS (see the module's note on overflows).
pub fn install(srv: Arc<Server>) {
    let _ = SERVER.set(srv);
    for sig in SIGNALS {
        // SAFETY: `act` is a zeroed `sigaction` (a valid value: no handler, empty flags) on this
        // frame, filled in before use; `sigemptyset` writes only into its mask. `handler` has the
        // three-argument signature SA_SIGINFO calls, and `sigaction` reads `act` and writes
        // nothing back (null old action).
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = handler as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER | libc::SA_RESETHAND;
            libc::sigemptyset(&mut act.sa_mask);
            if libc::sigaction(sig, &act, std::ptr::null_mut()) != 0 {
                tracing::warn!("Could not install the crash report for signal {sig}");
            }
        }
    }
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    let enabled = SERVER.get().is_none_or(|s| s.config.crash_log_enabled.load(Ordering::Relaxed));
    // One report: a fault while writing it (another signal) only ends the process.
    if enabled && !REPORTING.swap(true, Ordering::SeqCst) {
        // SAFETY: the kernel passes a valid `siginfo_t` to an SA_SIGINFO handler; it is only
        // read, and only the fields its signal and code define (`si_addr` for a bad access,
        // `si_pid`/`si_uid` for a signal a process sent).
        let info = unsafe { Info::read(sig, &*info) };
        report(sig, &info);
    }
    // SA_RESETHAND put back the default action and SA_NODEFER leaves the signal unblocked: raised
    // again, it ends the process as it would have without this handler.
    // SAFETY: raise takes a plain signal number.
    unsafe {
        libc::raise(sig);
    }
}

/// What the report says of the signal.
struct Info {
    code: i32,
    addr: Option<usize>,
    sender: Option<(i32, u32)>,
}

impl Info {
    /// # Safety
    /// `info` is the `siginfo_t` the kernel passed for `sig`.
    unsafe fn read(sig: libc::c_int, info: &libc::siginfo_t) -> Info {
        let addr = (sig == libc::SIGSEGV || sig == libc::SIGBUS).then(|| unsafe { info.si_addr() } as usize);
        let sender = (info.si_code == libc::SI_USER).then(|| unsafe { (info.si_pid(), info.si_uid()) });
        Info { code: info.si_code, addr, sender }
    }
}

/// Writes the report (Redis's wording, with Latch's name).
fn report(sig: libc::c_int, info: &Info) {
    crate::log::warning_then_raw("", "\n\n=== LATCH BUG REPORT START: Cut & paste starting from here ===\n");
    crate::log::warning_then_raw(
        &format!("Latch {} crashed by signal: {sig}, si_code: {}", env!("CARGO_PKG_VERSION"), info.code),
        "",
    );
    if let Some(addr) = info.addr {
        crate::log::warning_then_raw(&format!("Accessing address: {addr:#x}"), "");
    }
    if let Some((pid, uid)) = info.sender {
        crate::log::warning_then_raw(&format!("Killed by PID: {pid}, UID: {uid}"), "");
    }
    // The frames are taken here; naming them (reading the binary's debug information) takes a
    // thread of its own, with a stack that a crash deep in this thread's cannot have used up.
    let trace = std::backtrace::Backtrace::force_capture();
    let named = std::thread::Builder::new()
        .name("crash-report".into())
        .stack_size(8 << 20)
        .spawn(move || format!("{trace}"))
        .ok()
        .and_then(|t| t.join().ok())
        .unwrap_or_else(|| "(the frames could not be named)".into());
    crate::log::warning_then_raw("", &format!("\n------ STACK TRACE ------\n\nBacktrace:\n{named}\n"));
    crate::log::warning_then_raw("", "\n=== LATCH BUG REPORT END. Make sure to include from START to END. ===\n\n");
}
