//! The process title on Linux (Redis's `setproctitle.c`): what `ps` and `/proc/PID/cmdline` show
//! is the memory the kernel copied the arguments and the environment into at exec, one string after
//! another. [`init`] moves the environment to the heap so that the whole block is free to rewrite,
//! [`arm`] says the server has started, and then each [`set`] writes a title over the block.
//!
//! `/proc/PID/cmdline` reads the arguments' block up to its end, or, when the NUL that ended the
//! last argument is gone, up to the first NUL (the kernel's sign that a process set its title):
//! a title shorter than the arguments puts a `.` there, as Redis's does.

use std::sync::Mutex;

/// The block: `[arg_start, env_end)` of the process, and where the arguments' final NUL was.
struct Area {
    base: *mut u8,
    len: usize,
    /// Offset of the NUL that ended the last argument.
    nul: usize,
}

// SAFETY: `Area` is only a description of memory of this process that lives as long as it does
// (see `init`); every access goes through `STATE`'s mutex, so it is never written from two threads.
unsafe impl Send for Area {}

struct State {
    area: Area,
    argv0: String,
    config_file: String,
    armed: bool,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Redis's longest title (`SPT_MAXTITLE`).
const MAX_TITLE: usize = 255;

/// `arg_start`, `arg_end`, `env_start` and `env_end` of this process (`/proc/self/stat` fields 48
/// to 51, after the command name in parentheses, which may itself hold spaces and parentheses).
fn stack_strings() -> Option<[usize; 4]> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<usize> =
        after.split_whitespace().skip(45).take(4).map(|f| f.parse().ok()).collect::<Option<_>>()?;
    fields.try_into().ok()
}

/// Takes over the block of the arguments and the environment for the title. Call it first in
/// `main`, before any other thread exists: it replaces the environment (`clearenv` and `setenv`
/// are not thread-safe). Does nothing if the block is not where and what it should be.
pub fn init() {
    let Some([arg_start, arg_end, env_start, env_end]) = stack_strings() else { return };
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let Some(argv0) = args.first() else { return };
    if arg_start == 0 || arg_end <= arg_start || env_end < env_start || env_start < arg_end {
        return;
    }
    // The block is the arguments, and the environment when it follows them directly.
    let end = if env_start == arg_end { env_end } else { arg_end };
    let base = arg_start as *mut u8;
    // SAFETY: `[arg_start, arg_end)` is where the kernel copied this process's arguments at exec,
    // at the top of the main thread's stack, mapped for the life of the process and never freed;
    // reading it only reads the strings `std::env::args_os` read above.
    let block = unsafe { std::slice::from_raw_parts(base, arg_end - arg_start) };
    // The block must hold the arguments exactly as they were read, each ending with a NUL.
    let mut expected = Vec::with_capacity(block.len());
    for a in &args {
        expected.extend_from_slice(std::os::unix::ffi::OsStrExt::as_bytes(a.as_os_str()));
        expected.push(0);
    }
    if block != expected.as_slice() {
        return;
    }
    if end > arg_end {
        // Copy the environment to the heap so nothing points into the block any more: glibc's
        // `environ` points at the strings the kernel copied until `clearenv`, and `setenv` copies.
        let vars: Vec<(std::ffi::CString, std::ffi::CString)> = std::env::vars_os()
            .filter_map(|(k, v)| {
                use std::os::unix::ffi::OsStringExt;
                Some((std::ffi::CString::new(k.into_vec()).ok()?, std::ffi::CString::new(v.into_vec()).ok()?))
            })
            .collect();
        // SAFETY: only the main thread runs (this function's contract), so nothing reads the
        // environment while it is replaced; every pointer passed is a NUL-terminated string.
        unsafe {
            libc::clearenv();
            for (k, v) in &vars {
                libc::setenv(k.as_ptr(), v.as_ptr(), 1);
            }
        }
    }
    let argv0 = argv0.to_string_lossy().into_owned();
    let area = Area { base, len: end - arg_start, nul: arg_end - 1 - arg_start };
    *STATE.lock().unwrap_or_else(|e| e.into_inner()) =
        Some(State { area, argv0, config_file: "-".to_string(), armed: false });
}

/// The server has started, with `config_file` (None: `-`): titles set from now on are written.
pub fn arm(config_file: Option<&std::path::Path>) {
    if let Some(s) = STATE.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        s.config_file = config_file.map_or_else(|| "-".to_string(), |p| p.to_string_lossy().into_owned());
        s.armed = true;
    }
}

/// Writes `title(argv0, config file)` as the process title, if [`init`] took the block and the
/// server has started ([`arm`]).
pub fn set(title: &dyn Fn(&str, &str) -> Option<String>) {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(s) = guard.as_mut().filter(|s| s.armed) else { return };
    let Some(title) = title(&s.argv0, &s.config_file) else { return };
    let a = &s.area;
    let n = title.len().min(MAX_TITLE).min(a.len - 1);
    // SAFETY: `init` checked that `[base, base + len)` is the block of the arguments' and the
    // environment's strings, which lives as long as the process, and moved the environment out of
    // it; std keeps pointers to the arguments (for `std::env::args`, which Latch reads only at
    // startup), and the block always ends with a NUL (`n < len` and the rest is zeroed), so even a
    // late read of them stays inside it. Writes happen under `STATE`'s lock only.
    unsafe {
        std::ptr::write_bytes(a.base, 0, a.len);
        std::ptr::copy_nonoverlapping(title.as_ptr(), a.base, n);
        if n < a.nul {
            *a.base.add(a.nul) = b'.';
        } else if n == a.nul && a.nul + 1 < a.len {
            *a.base.add(a.nul) = b' ';
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_block_is_found_from_proc() {
        let [arg_start, arg_end, env_start, env_end] = super::stack_strings().expect("/proc/self/stat");
        assert!(arg_start > 0 && arg_start < arg_end && arg_end <= env_start && env_start <= env_end);
    }
}
