// SPDX-License-Identifier: Apache-2.0
//! tokio_file_bench: the fileio load of apps/file_bench done the way a tokio program
//! does file I/O. `--depth` tasks on one current-thread runtime each make one block
//! operation at a time (random reads, random writes, or the next block in order) for
//! `--seconds`:
//!
//! * `--api blocking` (default): `spawn_blocking` of a positioned `read_at`/`write_at`
//!   on a shared `std::fs::File` (one hop to tokio's blocking pool per operation);
//! * `--api fs`: each task has its own `tokio::fs::File` and does `seek` then
//!   `read_exact`/`write_all` (tokio::fs, which itself runs on the blocking pool).
//!
//! `--fsync N` syncs (`sync_all`) after every N writes. Prints one `RESULT {json}` line.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::io::SeekFrom;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::process::exit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

const USAGE: &str = "\
usage: tokio_file_bench --file PATH [--rw randread|randwrite|write] [--depth N] [--block BYTES]
                        [--seconds S] [--fsync N] [--direct] [--api blocking|fs]
  --api blocking: spawn_blocking(read_at/write_at) per operation (default);
  --api fs: tokio::fs::File, seek then read_exact/write_all (no --direct)";

#[derive(Clone, Copy, PartialEq)]
enum Rw {
    RandRead,
    RandWrite,
    SeqWrite,
}

#[derive(Clone, Copy, PartialEq)]
enum Api {
    Blocking,
    Fs,
}

struct Config {
    file: String,
    rw: Rw,
    depth: usize,
    block: usize,
    seconds: f64,
    fsync: u64,
    direct: bool,
    api: Api,
}

fn usage_error(msg: &str) -> ! {
    eprintln!("tokio_file_bench: {msg}\n{USAGE}");
    exit(2);
}

fn number<T: std::str::FromStr>(name: &str, v: &str) -> T {
    v.parse()
        .unwrap_or_else(|_| usage_error(&format!("bad {name} '{v}'")))
}

fn parse_args() -> Config {
    let mut c = Config {
        file: String::new(),
        rw: Rw::RandRead,
        depth: 1,
        block: 4096,
        seconds: 5.0,
        fsync: 0,
        direct: false,
        api: Api::Blocking,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--help" | "-h" => {
                println!("{USAGE}");
                exit(0);
            }
            "--direct" => c.direct = true,
            "--file" | "--rw" | "--depth" | "--block" | "--seconds" | "--fsync" | "--api" => {
                let v = args
                    .next()
                    .unwrap_or_else(|| usage_error(&format!("{a} needs a value")));
                match a.as_str() {
                    "--file" => c.file = v,
                    "--rw" => {
                        c.rw = match v.as_str() {
                            "randread" => Rw::RandRead,
                            "randwrite" => Rw::RandWrite,
                            "write" => Rw::SeqWrite,
                            _ => usage_error("--rw must be randread, randwrite or write"),
                        }
                    }
                    "--depth" => c.depth = number("--depth", &v),
                    "--block" => c.block = number("--block", &v),
                    "--seconds" => c.seconds = number("--seconds", &v),
                    "--fsync" => c.fsync = number("--fsync", &v),
                    _ => {
                        c.api = match v.as_str() {
                            "blocking" => Api::Blocking,
                            "fs" => Api::Fs,
                            _ => usage_error("--api must be blocking or fs"),
                        }
                    }
                }
            }
            _ => usage_error(&format!("unknown argument '{a}'")),
        }
    }
    if c.file.is_empty() {
        usage_error("--file is required");
    }
    if c.depth == 0 || c.depth > 4096 || c.block < 512 || c.block > (16 << 20) || !(c.seconds > 0.0)
    {
        usage_error("--depth 1..4096, --block 512..16777216, --seconds > 0");
    }
    if c.direct && c.api == Api::Fs {
        usage_error(
            "--direct needs --api blocking (tokio::fs::File buffers through its own unaligned Vec)",
        );
    }
    if c.fsync != 0 && c.rw == Rw::RandRead {
        usage_error("--fsync needs --rw randwrite or write");
    }
    c
}

/// A block-sized buffer aligned for O_DIRECT.
struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

// The buffer is owned by one task at a time (moved into the blocking closure and back).
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    fn new(len: usize) -> Self {
        let layout = Layout::from_size_align(len, 4096).unwrap();
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory");
        unsafe { std::ptr::write_bytes(ptr, 0xa5, len) };
        AlignedBuf { ptr, layout }
    }
    fn as_slice(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }
    fn as_mut_slice(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        unsafe { dealloc(self.ptr, self.layout) };
    }
}

struct Shared {
    cfg: Config,
    blocks: u64,
    end: Instant,
    ops: AtomicU64,
    fsyncs: AtomicU64,
    next_block: AtomicU64,
    errors: AtomicU64,
}

impl Shared {
    fn offset(&self, rng: &mut u64) -> u64 {
        let blk = if self.cfg.rw == Rw::SeqWrite {
            self.next_block.fetch_add(1, Ordering::Relaxed) % self.blocks
        } else {
            // xorshift64*: cheap, seeded per task.
            *rng ^= *rng >> 12;
            *rng ^= *rng << 25;
            *rng ^= *rng >> 27;
            rng.wrapping_mul(0x2545_f491_4f6c_dd1d) % self.blocks
        };
        blk * self.cfg.block as u64
    }
    /// Counts one operation; true when an fsync is due after it.
    fn count(&self) -> bool {
        let n = self.ops.fetch_add(1, Ordering::Relaxed) + 1;
        self.cfg.fsync != 0 && n % self.cfg.fsync == 0
    }
    fn fail(&self, what: &str, e: std::io::Error) {
        if self.errors.fetch_add(1, Ordering::Relaxed) == 0 {
            eprintln!("tokio_file_bench: {what}: {e}");
        }
    }
}

fn open_std(cfg: &Config) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    if cfg.rw == Rw::RandRead {
        o.read(true);
    } else {
        o.write(true);
    }
    if cfg.direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(&cfg.file)
}

async fn blocking_worker(s: Arc<Shared>, file: Arc<std::fs::File>, seed: u64) {
    let mut rng = seed;
    let mut buf = AlignedBuf::new(s.cfg.block);
    let mut n = 0u32;
    loop {
        n += 1;
        if n & 63 == 0 && Instant::now() >= s.end {
            return;
        }
        let off = s.offset(&mut rng);
        let f = file.clone();
        let rw = s.cfg.rw;
        let (b, r) = tokio::task::spawn_blocking(move || {
            let r = if rw == Rw::RandRead {
                f.read_exact_at(buf.as_mut_slice(), off)
            } else {
                f.write_all_at(buf.as_slice(), off)
            };
            (buf, r)
        })
        .await
        .expect("blocking task panicked");
        buf = b;
        if let Err(e) = r {
            s.fail("I/O", e);
            return;
        }
        if s.count() {
            let f = file.clone();
            if let Err(e) = tokio::task::spawn_blocking(move || f.sync_all())
                .await
                .unwrap()
            {
                s.fail("fsync", e);
                return;
            }
            s.fsyncs.fetch_add(1, Ordering::Relaxed);
            if Instant::now() >= s.end {
                return;
            }
        }
    }
}

async fn fs_worker(s: Arc<Shared>, seed: u64) {
    let mut o = tokio::fs::OpenOptions::new();
    if s.cfg.rw == Rw::RandRead {
        o.read(true);
    } else {
        o.write(true);
    }
    let mut file = match o.open(&s.cfg.file).await {
        Ok(f) => f,
        Err(e) => return s.fail("open", e),
    };
    let mut rng = seed;
    let mut buf = vec![0xa5u8; s.cfg.block];
    let mut n = 0u32;
    loop {
        n += 1;
        if n & 63 == 0 && Instant::now() >= s.end {
            return;
        }
        let off = s.offset(&mut rng);
        let r = match file.seek(SeekFrom::Start(off)).await {
            Err(e) => Err(e),
            Ok(_) if s.cfg.rw == Rw::RandRead => file.read_exact(&mut buf).await.map(|_| ()),
            // flush: the write has reached the kernel when it is counted.
            Ok(_) => match file.write_all(&buf).await {
                Ok(()) => file.flush().await,
                Err(e) => Err(e),
            },
        };
        if let Err(e) = r {
            return s.fail("I/O", e);
        }
        if s.count() {
            if let Err(e) = file.sync_all().await {
                return s.fail("fsync", e);
            }
            s.fsyncs.fetch_add(1, Ordering::Relaxed);
            if Instant::now() >= s.end {
                return;
            }
        }
    }
}

fn cpu_self() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn main() {
    let cfg = parse_args();
    let file = match open_std(&cfg) {
        Ok(f) => Arc::new(f),
        Err(e) => {
            eprintln!("tokio_file_bench: {}: {e}", cfg.file);
            exit(1);
        }
    };
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size < cfg.block as u64 {
        eprintln!("tokio_file_bench: {} is smaller than one block", cfg.file);
        exit(1);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let start = Instant::now();
    let s = Arc::new(Shared {
        blocks: size / cfg.block as u64,
        end: start + Duration::from_secs_f64(cfg.seconds),
        cfg,
        ops: AtomicU64::new(0),
        fsyncs: AtomicU64::new(0),
        next_block: AtomicU64::new(0),
        errors: AtomicU64::new(0),
    });
    rt.block_on(async {
        let mut tasks = Vec::with_capacity(s.cfg.depth);
        for i in 0..s.cfg.depth {
            let seed = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1);
            tasks.push(match s.cfg.api {
                Api::Blocking => tokio::spawn(blocking_worker(s.clone(), file.clone(), seed)),
                Api::Fs => tokio::spawn(fs_worker(s.clone(), seed)),
            });
        }
        for t in tasks {
            t.await.expect("task panicked");
        }
    });
    let took = start.elapsed().as_secs_f64();
    let ops = s.ops.load(Ordering::Relaxed);
    let c = &s.cfg;
    let rw = match c.rw {
        Rw::RandRead => "randread",
        Rw::RandWrite => "randwrite",
        Rw::SeqWrite => "write",
    };
    println!(
        "RESULT {{\"subject\": \"tokio\", \"api\": \"{}\", \"rw\": \"{rw}\", \"depth\": {}, \"block\": {}, \
         \"direct\": {}, \"ops\": {ops}, \"fsyncs\": {}, \"seconds\": {took:.6}, \"iops\": {:.1}, \
         \"mb_per_s\": {:.2}, \"cpu_self_s\": {:.6}, \"errors\": {}}}",
        if c.api == Api::Blocking { "blocking" } else { "fs" },
        c.depth,
        c.block,
        c.direct,
        s.fsyncs.load(Ordering::Relaxed),
        ops as f64 / took,
        ops as f64 * c.block as f64 / took / 1e6,
        cpu_self(),
        s.errors.load(Ordering::Relaxed)
    );
    exit(if s.errors.load(Ordering::Relaxed) == 0 {
        0
    } else {
        1
    });
}
