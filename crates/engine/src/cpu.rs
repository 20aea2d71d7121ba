//! CPU use over a timed region: of this process and of the whole machine.
//!
//! [`CpuMeter::start`] snapshots three clocks: the process's user + system CPU time from
//! `getrusage(RUSAGE_SELF)` (all threads of the process, as bonnie++'s `%CP` column uses), the
//! aggregate `cpu` line of `/proc/stat` (see proc(5)), and a monotonic [`Instant`].
//! [`CpuMeter::stop`] turns the differences into a [`CpuUsage`]:
//!
//! - `process_pct` = (Δuser + Δsys) / Δwall × 100, percent of *one* CPU, so it can exceed 100
//!   with several busy threads (bonnie++ computes `CPU / Elapsed * 100` the same way);
//! - `system_pct` = Δbusy / Δtotal × 100 over all CPUs, where busy is the sum of user, nice,
//!   system, irq, softirq and steal, and total adds idle and iowait. `guest`/`guest_nice` are
//!   already contained in `user`/`nice` (proc(5)), so they are not added again.
//!
//! Invariants: both values are finite and ≥ 0; when a clock cannot be read (no /proc, a zero
//! interval) the affected value is 0 rather than NaN, because metric values must be finite.
//! Reading /proc/stat allocates, so meters belong outside hot loops.

use crate::metric::CpuUsage;
use std::time::{Duration, Instant};

/// Cumulative time counters of the aggregate `cpu` line of `/proc/stat`, in clock ticks
/// (USER_HZ, normally 1/100 s). Only ratios of differences are used, so the tick length does
/// not matter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Ticks in user mode (includes guest time).
    pub user: u64,
    /// Ticks in user mode at low priority (includes guest_nice time).
    pub nice: u64,
    /// Ticks in kernel mode.
    pub system: u64,
    /// Ticks idle.
    pub idle: u64,
    /// Ticks idle while I/O was outstanding (not busy: the CPU could have run something).
    pub iowait: u64,
    /// Ticks servicing hardware interrupts.
    pub irq: u64,
    /// Ticks servicing softirqs.
    pub softirq: u64,
    /// Ticks stolen by the hypervisor for other guests.
    pub steal: u64,
}

impl CpuTimes {
    /// Busy ticks: user + nice + system + irq + softirq + steal.
    pub fn busy(&self) -> u64 {
        self.user
            .saturating_add(self.nice)
            .saturating_add(self.system)
            .saturating_add(self.irq)
            .saturating_add(self.softirq)
            .saturating_add(self.steal)
    }

    /// All ticks: busy + idle + iowait.
    pub fn total(&self) -> u64 {
        self.busy().saturating_add(self.idle).saturating_add(self.iowait)
    }

    /// Percent of all CPUs busy between `earlier` and `self` (0 when no tick elapsed or the
    /// counters went backwards).
    pub fn busy_pct_since(&self, earlier: &CpuTimes) -> f64 {
        let total = self.total().saturating_sub(earlier.total());
        if total == 0 {
            return 0.0;
        }
        let busy = self.busy().saturating_sub(earlier.busy()).min(total);
        busy as f64 / total as f64 * 100.0
    }
}

/// Parses one aggregate line of `/proc/stat` (`cpu  user nice system idle iowait irq softirq
/// steal [guest guest_nice]`). Returns `None` for any other line (including per-CPU `cpu0`
/// lines) or a malformed one. Old kernels print fewer than eight counters; missing trailing
/// counters are taken as 0, but at least user, nice, system and idle must be present.
pub fn parse_cpu_line(line: &str) -> Option<CpuTimes> {
    let mut fields = line.split_ascii_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let mut v = [0u64; 8];
    let mut n = 0;
    for (slot, field) in v.iter_mut().zip(fields) {
        *slot = field.parse().ok()?;
        n += 1;
    }
    if n < 4 {
        return None;
    }
    Some(CpuTimes {
        user: v[0],
        nice: v[1],
        system: v[2],
        idle: v[3],
        iowait: v[4],
        irq: v[5],
        softirq: v[6],
        steal: v[7],
    })
}

/// Finds and parses the aggregate `cpu` line in the full text of `/proc/stat`.
pub fn parse_proc_stat(text: &str) -> Option<CpuTimes> {
    text.lines().find_map(parse_cpu_line)
}

/// Reads the machine-wide counters from `/proc/stat`.
pub fn read_system_times() -> std::io::Result<CpuTimes> {
    let text = std::fs::read_to_string("/proc/stat")?;
    parse_proc_stat(&text)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "/proc/stat has no aggregate cpu line"))
}

/// User + system CPU time consumed so far by this process (all its threads), from
/// `getrusage(RUSAGE_SELF)`. Returns zero if the call fails (it cannot for RUSAGE_SELF).
pub fn process_cpu_time() -> Duration {
    // SAFETY: `rusage` is plain old data; getrusage only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a properly sized, writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return Duration::ZERO;
    }
    timeval(ru.ru_utime) + timeval(ru.ru_stime)
}

/// User + system CPU time of this process's reaped children so far, from
/// `getrusage(RUSAGE_CHILDREN)` (the children fsbench has waited for, and their waited-for
/// descendants). Returns zero if the call fails.
pub fn children_cpu_time() -> Duration {
    // SAFETY: `rusage` is plain old data; getrusage only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a properly sized, writable rusage; RUSAGE_CHILDREN is a valid `who`.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return Duration::ZERO;
    }
    timeval(ru.ru_utime) + timeval(ru.ru_stime)
}

/// CPU time used so far by process `root` and all its live descendants (their own and their
/// reaped children's: utime, stime, cutime, cstime of `/proc/PID/stat`, proc(5)), for a server
/// fsbench started but does not wait for. Reads every `/proc/PID/stat`: outside timed regions
/// only. Processes that vanish while it reads are skipped.
pub fn tree_cpu_time(root: i32) -> Duration {
    let mut procs: Vec<(i32, i32, u64)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let Some((_, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            // After the command: state ppid … utime(14) stime cutime cstime (proc(5)).
            let f: Vec<&str> = rest.split_whitespace().collect();
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            let ppid = f.get(1).and_then(|v| v.parse::<i32>().ok()).unwrap_or(0);
            procs.push((pid, ppid, num(11) + num(12) + num(13) + num(14)));
        }
    }
    let mut total = 0u64;
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        for &(pid, ppid, ticks) in &procs {
            if pid == p {
                total += ticks;
            }
            if ppid == p && pid != p {
                stack.push(pid);
            }
        }
    }
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Duration::from_secs_f64(total as f64 / hz)
}

fn timeval(tv: libc::timeval) -> Duration {
    let secs = u64::try_from(tv.tv_sec).unwrap_or(0);
    let micros = u32::try_from(tv.tv_usec).unwrap_or(0).min(999_999);
    Duration::new(secs, micros * 1000)
}

/// A running CPU measurement; see the module documentation for the formulas.
#[derive(Clone, Copy, Debug)]
pub struct CpuMeter {
    wall: Instant,
    process: Duration,
    system: Option<CpuTimes>,
}

impl CpuMeter {
    /// Snapshots the process CPU time, `/proc/stat` and the monotonic clock. Call it right
    /// before the timed region (it reads a file, so not inside it).
    pub fn start() -> CpuMeter {
        let system = read_system_times().ok();
        let process = process_cpu_time();
        CpuMeter {
            wall: Instant::now(),
            process,
            system,
        }
    }

    /// Ends the measurement: process percent of one CPU and system percent busy of all CPUs
    /// since [`CpuMeter::start`].
    pub fn stop(&self) -> CpuUsage {
        let wall = self.wall.elapsed();
        let process = process_cpu_time().saturating_sub(self.process);
        let system_pct = match (self.system, read_system_times().ok()) {
            (Some(a), Some(b)) => b.busy_pct_since(&a),
            _ => 0.0,
        };
        CpuUsage {
            process_pct: process_pct(process, wall),
            system_pct,
        }
    }
}

/// `cpu / wall × 100`, 0 for a zero wall time.
pub fn process_pct(cpu: Duration, wall: Duration) -> f64 {
    let w = wall.as_secs_f64();
    if w > 0.0 {
        cpu.as_secs_f64() / w * 100.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  4705 356 584 3699176 23060 0 277 17 5 1\n\
                        cpu0 1393280 32966 572056 13343292 6130 0 17875 0 0 0\n\
                        intr 1462898\nctxt 115315\n";

    #[test]
    fn parses_the_aggregate_line_only() {
        let t = parse_proc_stat(STAT).expect("aggregate line");
        assert_eq!(
            t,
            CpuTimes {
                user: 4705,
                nice: 356,
                system: 584,
                idle: 3_699_176,
                iowait: 23060,
                irq: 0,
                softirq: 277,
                steal: 17
            }
        );
        assert_eq!(t.busy(), 4705 + 356 + 584 + 277 + 17);
        assert_eq!(t.total(), t.busy() + 3_699_176 + 23060);
        assert!(parse_cpu_line("cpu0 1 2 3 4 5 6 7 8").is_none());
        assert!(parse_cpu_line("intr 5").is_none());
    }

    #[test]
    fn short_and_malformed_lines() {
        // A 2.4-era kernel: only four counters.
        let t = parse_cpu_line("cpu 10 20 30 40").expect("four counters suffice");
        assert_eq!((t.user, t.idle, t.iowait, t.steal), (10, 40, 0, 0));
        assert!(parse_cpu_line("cpu 10 20 30").is_none());
        assert!(parse_cpu_line("cpu 10 x 30 40").is_none());
        assert!(parse_cpu_line("").is_none());
        assert!(parse_proc_stat("no cpu here\n").is_none());
    }

    #[test]
    fn busy_percent_counts_iowait_as_idle() {
        let a = CpuTimes {
            user: 100,
            idle: 100,
            ..Default::default()
        };
        let b = CpuTimes {
            user: 150,
            system: 25,
            idle: 125,
            iowait: 50,
            ..a
        };
        // Δbusy = 50 + 25 = 75; Δtotal = 75 + 25 + 50 = 150.
        assert!((b.busy_pct_since(&a) - 50.0).abs() < 1e-9);
        assert_eq!(a.busy_pct_since(&a), 0.0);
        // Counters that go backwards (e.g. CPU hot-unplug) give 0, never negative or NaN.
        assert_eq!(a.busy_pct_since(&b), 0.0);
    }

    #[test]
    fn process_percent_formula() {
        assert!((process_pct(Duration::from_millis(500), Duration::from_secs(1)) - 50.0).abs() < 1e-9);
        assert!((process_pct(Duration::from_secs(3), Duration::from_secs(2)) - 150.0).abs() < 1e-9);
        assert_eq!(process_pct(Duration::from_secs(1), Duration::ZERO), 0.0);
    }

    #[test]
    fn meter_sees_a_busy_loop() {
        // Spin until this process has used 100 ms of CPU (wall time may be longer on a loaded
        // machine), then check the meter accounts for that CPU time.
        let m = CpuMeter::start();
        let (c0, t0) = (process_cpu_time(), Instant::now());
        let mut x: u64 = 1;
        while process_cpu_time().saturating_sub(c0) < Duration::from_millis(100) {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        let u = m.stop();
        let wall = t0.elapsed().as_secs_f64();
        assert!(u.process_pct.is_finite() && u.system_pct.is_finite());
        let cpu_seen = u.process_pct / 100.0 * wall;
        assert!(cpu_seen > 0.08, "{u:?} over {wall} s");
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        assert!(u.process_pct < cpus * 100.0 + 10.0, "{u:?}");
        assert!(u.system_pct > 0.0 && u.system_pct <= 100.0, "{u:?}");
    }

    #[test]
    fn process_cpu_time_is_monotonic() {
        let a = process_cpu_time();
        let mut x: u64 = 0;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x ^ i.rotate_left(7));
        }
        let b = process_cpu_time();
        assert!(b >= a && b > Duration::ZERO);
    }

    #[test]
    fn tree_cpu_counts_a_busy_child() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("/bin/sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 5"])
            .process_group(0)
            .spawn()
            .expect("spawn");
        let pid = child.id() as i32;
        let t0 = Instant::now();
        let mut used = Duration::ZERO;
        while t0.elapsed() < Duration::from_secs(20) {
            used = tree_cpu_time(pid);
            if used >= Duration::from_millis(50) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: kill(2) of the process group the child leads; no memory involved.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        let _ = child.wait();
        assert!(used >= Duration::from_millis(50), "{used:?}");
        assert_eq!(tree_cpu_time(-5), Duration::ZERO);
    }

    #[test]
    fn children_cpu_grows_when_a_child_is_reaped() {
        let before = children_cpu_time();
        let status = std::process::Command::new("/bin/sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .expect("sh");
        assert!(status.success());
        assert!(children_cpu_time() > before);
    }
}
