// corpus_rust: a CPU-bound Rust program for the benchmark corpus
// (testdata/bench/compare.sh, section "corpus"), built with Debian's
// rustc: THREADS threads, each recursing to a varying depth through
// generic code and sorting at the bottom with sort_unstable_by and a
// closure (the standard library's own frames, no frame pointers).
//
//   corpus_rust THREADS DEPTH
//
// Prints "ready" once every thread runs, then runs until killed.
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

static SINK: AtomicU64 = AtomicU64::new(0);

#[inline(never)]
fn bottom(seed: &mut u32) -> u64 {
    let mut v: Vec<u32> = (0..256)
        .map(|_| {
            *seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            *seed >> 8
        })
        .collect();
    v.sort_unstable_by(|a, b| (a ^ 0x55).cmp(&(b ^ 0x55)));
    v[7] as u64
}

#[inline(never)]
fn recurse(depth: usize, seed: &mut u32) -> u64 {
    // Read back through a volatile load (std::hint::black_box is newer
    // than Debian 12's rustc 1.63), so the frame keeps its locals.
    let pad = unsafe { std::ptr::read_volatile(&[depth as u64; 6]) };
    if depth == 0 {
        return bottom(seed) ^ pad[0];
    }
    let r = recurse(depth - 1, seed);
    unsafe { std::ptr::read_volatile(&r) ^ pad[depth % 6] }
}

fn run(id: usize, depth: usize, started: Arc<AtomicUsize>) {
    let mut seed = (id as u32).wrapping_mul(2654435761).wrapping_add(5);
    started.fetch_add(1, Ordering::SeqCst);
    loop {
        let d = depth / 2 + (seed as usize) % (depth / 2 + 1);
        SINK.fetch_add(recurse(d, &mut seed), Ordering::Relaxed);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: corpus_rust THREADS DEPTH");
        std::process::exit(2);
    }
    let threads: usize = args[1].parse().unwrap_or(0);
    let depth: usize = args[2].parse().unwrap_or(0);
    if threads < 1 || depth < 1 {
        std::process::exit(2);
    }
    let started = Arc::new(AtomicUsize::new(0));
    for i in 1..threads {
        let s = started.clone();
        std::thread::spawn(move || run(i, depth, s));
    }
    while started.load(Ordering::SeqCst) != threads - 1 {}
    println!("ready");
    run(0, depth, started);
}
