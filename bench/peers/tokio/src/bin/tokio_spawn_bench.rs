// SPDX-License-Identifier: Apache-2.0
//! tokio_spawn_bench: the spawn load of apps/spawn_bench with tokio::process on one
//! current-thread runtime. `--concurrency` tasks each run the program with
//! `Command::output()` (spawn with stdout and stderr piped, read both, wait), then the
//! next, until `--count` children have run. `echo` runs `/bin/echo x` and checks its
//! output; `true` runs `/bin/true`. Prints one `RESULT {json}` line.

use std::cell::Cell;
use std::process::{exit, Stdio};
use std::rc::Rc;
use std::time::Instant;

const USAGE: &str = "\
usage: tokio_spawn_bench [--count N] [--concurrency C] [--program echo|true]";

fn usage_error(msg: &str) -> ! {
    eprintln!("tokio_spawn_bench: {msg}\n{USAGE}");
    exit(2);
}

struct Load {
    argv: Vec<&'static str>,
    expect: &'static [u8],
    remaining: Cell<u64>,
    done: Cell<u64>,
    errors: Cell<u64>,
}

async fn runner(l: Rc<Load>) {
    while l.remaining.get() > 0 && l.errors.get() == 0 {
        l.remaining.set(l.remaining.get() - 1);
        let r = tokio::process::Command::new(l.argv[0])
            .args(&l.argv[1..])
            .stdin(Stdio::null())
            .output()
            .await;
        match r {
            Ok(o) if o.status.success() && o.stdout == l.expect => l.done.set(l.done.get() + 1),
            other => {
                if l.errors.get() == 0 {
                    eprintln!(
                        "tokio_spawn_bench: {}: {:?}",
                        l.argv[0],
                        other.map(|o| o.status)
                    );
                }
                l.errors.set(l.errors.get() + 1);
                return;
            }
        }
    }
}

fn main() {
    let (mut count, mut concurrency, mut program) = (1000u64, 1usize, String::from("echo"));
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--help" || a == "-h" {
            println!("{USAGE}");
            exit(0);
        }
        let v = args
            .next()
            .unwrap_or_else(|| usage_error(&format!("{a} needs a value")));
        match a.as_str() {
            "--count" => count = v.parse().unwrap_or_else(|_| usage_error("bad --count")),
            "--concurrency" => {
                concurrency = v
                    .parse()
                    .unwrap_or_else(|_| usage_error("bad --concurrency"))
            }
            "--program" => program = v,
            _ => usage_error(&format!("unknown argument '{a}'")),
        }
    }
    let (argv, expect): (Vec<&'static str>, &'static [u8]) = match program.as_str() {
        "echo" => (vec!["/bin/echo", "x"], b"x\n"),
        "true" => (vec!["/bin/true"], b""),
        _ => usage_error("--program must be echo or true"),
    };
    if count == 0 || concurrency == 0 || concurrency > 4096 {
        usage_error("--count >= 1, --concurrency 1..4096");
    }
    let l = Rc::new(Load {
        argv,
        expect,
        remaining: Cell::new(count),
        done: Cell::new(0),
        errors: Cell::new(0),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let start = Instant::now();
    local.block_on(&rt, async {
        let tasks: Vec<_> = (0..concurrency)
            .map(|_| tokio::task::spawn_local(runner(l.clone())))
            .collect();
        for t in tasks {
            t.await.expect("task panicked");
        }
    });
    let took = start.elapsed().as_secs_f64();
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    println!(
        "RESULT {{\"subject\": \"tokio\", \"program\": \"{program}\", \"concurrency\": {concurrency}, \
         \"spawns\": {}, \"seconds\": {took:.6}, \"per_s\": {:.1}, \"cpu_self_s\": {:.6}, \"errors\": {}}}",
        l.done.get(),
        l.done.get() as f64 / took,
        t(ru.ru_utime) + t(ru.ru_stime),
        l.errors.get()
    );
    exit(if l.errors.get() == 0 { 0 } else { 1 });
}
