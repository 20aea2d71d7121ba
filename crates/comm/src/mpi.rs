//! [`Mpi`]: the [`Comm`] of a run under `mpirun`, Open MPI through the `mpi` crate (rsmpi).
//!
//! Every collective is non-blocking (MPI_Ibarrier, MPI_Ibcast, MPI_Igather, MPI_Iallreduce) and waited for by
//! [`super::poll_until`], so a dead or hung rank ends in a watchdog error instead of a hang
//! (hpc/ior#210, #506). A request that is given up is leaked with its buffers (never freed while
//! MPI may still write them); after that the process only tears down and exits, without
//! MPI_Finalize (which would wait for the dead rank).
//!
//! Variable-length gathers are two fixed-size ones: every rank's length, then every buffer
//! padded to the longest.
//!
//! Clock offsets: rank 0 and each other rank in turn exchange 32 ping-pongs (blocking
//! point-to-point, after a watchdog barrier proved every rank alive); the offset of the round
//! with the smallest round trip is kept (NTP's minimum-delay filter).

use super::{poll_until, ClockOffset, Comm, CommError, Stop};
use mpi::request::{Request, StaticScope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::sync::Mutex;
use std::time::Duration;

/// Open MPI's world communicator.
pub struct Mpi {
    universe: Mutex<Option<mpi::environment::Universe>>,
    world: SimpleCommunicator,
    rank: usize,
    size: usize,
}

// SAFETY: fsbench calls MPI only from the thread that runs the slot loop (the module invariant of
// `comm`); the handles are plain integers/pointers owned by the MPI library.
unsafe impl Send for Mpi {}
unsafe impl Sync for Mpi {}

const PINGS: usize = 32;

impl Mpi {
    /// MPI_Init (threads funneled: workers never call MPI).
    pub fn init() -> Result<Mpi, CommError> {
        let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
            .ok_or_else(|| CommError::Mpi("MPI was initialised already".into()))?;
        let world = universe.world();
        let rank = usize::try_from(world.rank()).unwrap_or(0);
        let size = usize::try_from(world.size()).unwrap_or(1);
        Ok(Mpi {
            universe: Mutex::new(Some(universe)),
            world,
            rank,
            size,
        })
    }

    /// Waits for `req`; on failure leaks it (and so its buffers, which the caller leaked too).
    fn wait<T: ?Sized>(
        &self,
        what: &str,
        req: Request<'static, T, StaticScope>,
        watchdog: Duration,
        stop: &Stop,
    ) -> Result<(), CommError> {
        let mut slot = Some(req);
        let r = poll_until(what, watchdog, stop, || {
            let Some(q) = slot.take() else { return Ok(true) };
            match q.test() {
                Ok(_) => Ok(true),
                Err(q) => {
                    slot = Some(q);
                    Ok(false)
                }
            }
        });
        if let Some(q) = slot {
            std::mem::forget(q);
        }
        r
    }

    /// A non-blocking broadcast of a fixed-size buffer from rank 0.
    fn bcast_fixed(
        &self,
        what: &str,
        mut data: Vec<u8>,
        watchdog: Duration,
        stop: &Stop,
    ) -> Result<Vec<u8>, CommError> {
        // Open MPI refuses an empty buffer's dangling pointer: never send nothing.
        let n = data.len();
        data.push(0);
        let buf: &'static mut [u8] = Box::leak(data.into_boxed_slice());
        let ptr = buf as *mut [u8];
        let req = self.world.process_at_rank(0).immediate_broadcast_into(StaticScope, buf);
        self.wait(what, req, watchdog, stop)?;
        // SAFETY: the request completed, so MPI no longer touches the buffer; reclaim it.
        let mut out = unsafe { Box::from_raw(ptr) }.into_vec();
        out.truncate(n);
        Ok(out)
    }
}

impl Comm for Mpi {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn barrier(&self, what: &str, watchdog: Duration, stop: &Stop) -> Result<(), CommError> {
        let req = self.world.immediate_barrier();
        self.wait(what, req, watchdog, stop)
    }

    fn gather(&self, what: &str, mine: &[u8], watchdog: Duration, stop: &Stop) -> Result<Vec<Vec<u8>>, CommError> {
        // 1. Every rank's length at every rank (so all pad to the same size).
        let len: &'static u64 = Box::leak(Box::new(mine.len() as u64));
        let lens: &'static mut [u64] = Box::leak(vec![0u64; self.size].into_boxed_slice());
        let lens_ptr = lens as *mut [u64];
        let req = self.world.immediate_all_gather_into(StaticScope, len, lens);
        self.wait(what, req, watchdog, stop)?;
        // SAFETY: completed; MPI is done with both buffers.
        let lens = unsafe { Box::from_raw(lens_ptr) }.into_vec();
        let _ = unsafe { Box::from_raw(len as *const u64 as *mut u64) };
        // At least one byte each: Open MPI refuses an empty buffer's dangling pointer.
        let width = lens.iter().copied().max().unwrap_or(0).max(1) as usize;
        // 2. The padded buffers at rank 0.
        let mut padded = mine.to_vec();
        padded.resize(width, 0);
        let send: &'static [u8] = Box::leak(padded.into_boxed_slice());
        let send_ptr = send as *const [u8] as *mut [u8];
        let root = self.world.process_at_rank(0);
        if self.rank == 0 {
            let recv: &'static mut [u8] = Box::leak(vec![0u8; width * self.size].into_boxed_slice());
            let recv_ptr = recv as *mut [u8];
            let req = root.immediate_gather_into_root(StaticScope, send, recv);
            self.wait(what, req, watchdog, stop)?;
            // SAFETY: completed.
            let all = unsafe { Box::from_raw(recv_ptr) }.into_vec();
            let _ = unsafe { Box::from_raw(send_ptr) };
            Ok(all
                .chunks(width)
                .zip(&lens)
                .map(|(c, &n)| c[..n as usize].to_vec())
                .collect())
        } else {
            let req = root.immediate_gather_into(StaticScope, send);
            self.wait(what, req, watchdog, stop)?;
            // SAFETY: completed.
            let _ = unsafe { Box::from_raw(send_ptr) };
            Ok(Vec::new())
        }
    }

    fn broadcast(&self, what: &str, buf: &mut Vec<u8>, watchdog: Duration, stop: &Stop) -> Result<(), CommError> {
        let len = (buf.len() as u64).to_le_bytes().to_vec();
        let len = self.bcast_fixed(what, len, watchdog, stop)?;
        let n = u64::from_le_bytes(len.try_into().map_err(|_| CommError::Mismatch("bad length".into()))?) as usize;
        let mut data = std::mem::take(buf);
        data.resize(n, 0);
        *buf = self.bcast_fixed(what, data, watchdog, stop)?;
        Ok(())
    }

    fn all_max(&self, what: &str, mine: u64, watchdog: Duration, stop: &Stop) -> Result<u64, CommError> {
        let send: &'static u64 = Box::leak(Box::new(mine));
        let recv: &'static mut u64 = Box::leak(Box::new(0u64));
        let recv_ptr = recv as *mut u64;
        let req =
            self.world
                .immediate_all_reduce_into(StaticScope, send, recv, mpi::collective::SystemOperation::max());
        self.wait(what, req, watchdog, stop)?;
        // SAFETY: completed; MPI is done with both buffers.
        let out = *unsafe { Box::from_raw(recv_ptr) };
        let _ = unsafe { Box::from_raw(send as *const u64 as *mut u64) };
        Ok(out)
    }

    fn clock_offsets(&self) -> Result<Vec<ClockOffset>, CommError> {
        let mut out = vec![ClockOffset::default(); self.size];
        for (peer, slot) in out.iter_mut().enumerate().skip(1) {
            let p = self.world.process_at_rank(peer as i32);
            if self.rank == 0 {
                let mut best = ClockOffset {
                    offset_ns: 0,
                    rtt_ns: i64::MAX,
                };
                for _ in 0..PINGS {
                    let t0 = super::now_ns();
                    p.send(&t0);
                    let (remote, _) = p.receive::<i64>();
                    let t1 = super::now_ns();
                    let rtt = t1 - t0;
                    if rtt < best.rtt_ns {
                        best = ClockOffset {
                            offset_ns: remote - (t0 + rtt / 2),
                            rtt_ns: rtt,
                        };
                    }
                }
                *slot = best;
            } else if self.rank == peer {
                let zero = self.world.process_at_rank(0);
                for _ in 0..PINGS {
                    let (_t0, _) = zero.receive::<i64>();
                    zero.send(&super::now_ns());
                }
            }
        }
        Ok(out)
    }

    fn finish(&self) {
        // MPI_Finalize waits for every rank and does not return on SIGTERM: a rank that left
        // without it (a failed rank exits at once) would hold the others until mpirun's SIGKILL.
        // So first a barrier every finishing rank polls; it gives up when mpirun, seeing a rank
        // leave early, sends SIGTERM, and the process then exits without MPI_Finalize.
        let stop = Stop::now(crate::signal::interrupt_flag());
        let req = self.world.immediate_barrier();
        if self
            .wait("the end of the session", req, super::watchdog(), &stop)
            .is_err()
        {
            return;
        }
        if let Ok(mut u) = self.universe.lock() {
            // Dropping the universe calls MPI_Finalize.
            drop(u.take());
        }
    }
}
