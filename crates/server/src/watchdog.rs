//! The software watchdog (`watchdog-period`, Redis's debugging aid). The cron arms it at each
//! tick, as Redis's `serverCron` re-arms its `SIGALRM` timer, except while a dataset loads (Redis
//! runs no `serverCron` then; the first tick after the watchdog is turned on arms it, loading or
//! not, as Redis arms it at `CONFIG SET`). When the cron does not come back within the period, because a
//! command holds the server (`DEBUG SLEEP`, a long script, a walk of a big keyspace) or a load
//! runs, the watchdog's own thread logs Redis's `--- WATCHDOG TIMER EXPIRED ---` block, once per
//! stall. Redis prints the stalled thread's stack there; Latch says what it knows: how long the
//! cron has been away and whether a load runs.

use engine::server::Server;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Milliseconds since [`start`] at which the watchdog fires; [`OFF`] while off (or not armed yet
/// since it was turned on), [`FIRED`] once it fired, until a tick outside a load arms it again.
static DUE: AtomicU64 = AtomicU64::new(OFF);
const OFF: u64 = 0;
const FIRED: u64 = u64::MAX;

/// The instant the watchdog's clock counts from.
static EPOCH: OnceLock<Instant> = OnceLock::new();

fn now_ms() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

/// The period in force: `watchdog-period`, raised to two cron ticks as Redis raises it (a
/// shorter one would fire between two healthy ticks); 0 when off.
fn period(srv: &Server) -> u64 {
    let p = srv.config.get_i64("watchdog-period").max(0) as u64;
    let hz = srv.config.hz.load(Ordering::Relaxed).clamp(1, 500);
    if p == 0 { 0 } else { p.max(1000 / hz * 2) }
}

/// The cron's tick: arms the watchdog for one more period (or turns it off). While a dataset
/// loads it is not re-armed, except the first time after it was turned on (Redis arms it at
/// `CONFIG SET`, and its load does not re-arm it either).
pub fn tick(srv: &Server) {
    let p = period(srv);
    if p == 0 {
        DUE.store(OFF, Ordering::Relaxed);
        return;
    }
    let loading = srv.loading.load(Ordering::Relaxed) || srv.async_loading.load(Ordering::Relaxed);
    if !loading || DUE.load(Ordering::Relaxed) == OFF {
        DUE.store(now_ms() + p, Ordering::Relaxed);
    }
}

/// Starts the watchdog's thread.
pub fn start(srv: Arc<Server>) {
    now_ms();
    let spawned = std::thread::Builder::new().name("watchdog".into()).spawn(move || {
        loop {
            let due = DUE.load(Ordering::Relaxed);
            let now = now_ms();
            if due == OFF || due == FIRED || now < due {
                // Not armed: look again now and then; armed: wake at the deadline.
                let wait = if due == OFF || due == FIRED { 100 } else { (due - now).min(100) };
                std::thread::sleep(Duration::from_millis(wait));
                continue;
            }
            // Once per stall: a tick outside a load arms it again.
            if DUE.compare_exchange(due, FIRED, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
                let p = period(&srv);
                let what = if srv.loading.load(Ordering::Relaxed) { ", loading a dataset" } else { "" };
                tracing::warn!("\n--- WATCHDOG TIMER EXPIRED ---");
                tracing::warn!("The cron has not run for {} ms (watchdog-period {p}){what}.", now - due + p);
                tracing::warn!("--------\n");
            }
        }
    });
    if let Err(e) = spawned {
        tracing::warn!("The watchdog thread could not start: {e}");
    }
}
