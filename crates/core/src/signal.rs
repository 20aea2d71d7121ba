//! SIGINT/SIGTERM handling: signals only set a flag; workers and the runner poll it, so every
//! guard (unmount, detach, delete image) runs on the normal unwinding path.
//!
//! Invariant: the handler does nothing but store to an atomic (async-signal-safe).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The process-wide interrupt flag; installs the SIGINT/SIGTERM handlers on first use.
pub fn interrupt_flag() -> &'static Arc<AtomicBool> {
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // Registration only fails for forbidden signals; these two are allowed.
            let _ = signal_hook::flag::register(sig, Arc::clone(&flag));
        }
        flag
    })
}

/// `true` once SIGINT or SIGTERM arrived.
pub fn interrupted() -> bool {
    interrupt_flag().load(Ordering::Relaxed)
}
