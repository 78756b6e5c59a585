//! A property of every reader of outside files: whatever a file holds, it
//! is read or refused in bounded time and memory. 1,000 random variants
//! each of C3D headers and parameters, raw AVI headers, trajectory tables
//! (Qualisys TSV, Motive CSV, Vicon Nexus CSV) and session chunks, made by
//! a seeded generator from shipped or freshly made good files, each read
//! in this process under a counting allocator: every case under 5 s and
//! under 500 MB at its peak (an allocation past the budget is refused, and
//! the process aborts naming the case). The binary's own refusals (one
//! line, exit 2) are `tests/fuzz.rs`'s; this is the memory and time bound.
//! One test in this file: the allocator's counts are the process's.

mod common;
use common::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Bytes a case may hold at once, over what the process held before it.
const CASE_BUDGET_BYTES: usize = 500_000_000;
/// Seconds a case may take.
const CASE_BUDGET_S: f64 = 5.0;
/// Variants of each kind of file.
const CASES: usize = 1000;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// What the process held when the running case began.
static BASE: AtomicUsize = AtomicUsize::new(0);
/// The running case, for the message of a refused allocation.
static CASE: Mutex<([u8; 200], usize)> = Mutex::new(([0; 200], 0));

struct Counting;

impl Counting {
    fn take(&self, bytes: usize) -> bool {
        let live = LIVE.fetch_add(bytes, Ordering::SeqCst) + bytes;
        if live > BASE.load(Ordering::SeqCst) + CASE_BUDGET_BYTES {
            LIVE.fetch_sub(bytes, Ordering::SeqCst);
            // No allocation here: straight to the standard error.
            let mut err = std::io::stderr();
            let _ = err.write_all(b"\nproperty test: an allocation past the 500 MB budget, in ");
            if let Ok(case) = CASE.try_lock() {
                let _ = err.write_all(&case.0[..case.1]);
            }
            let _ = err.write_all(b"\n");
            return false;
        }
        PEAK.fetch_max(live, Ordering::SeqCst);
        true
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !self.take(layout.size()) {
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !self.take(layout.size()) {
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() && !self.take(new_size - layout.size()) {
            return std::ptr::null_mut();
        }
        let moved = System.realloc(ptr, layout, new_size);
        if moved.is_null() {
            if new_size > layout.size() {
                LIVE.fetch_sub(new_size - layout.size(), Ordering::SeqCst);
            }
        } else if new_size < layout.size() {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::SeqCst);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A seeded generator (the same cases every run).
struct Rng(rand::rngs::StdRng);

impl Rng {
    fn seeded(seed: u64) -> Rng {
        Rng(rand::SeedableRng::seed_from_u64(seed))
    }
    fn next(&mut self) -> u64 {
        rand::RngCore::next_u64(&mut self.0) >> 11
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// A 16-bit word: an edge value or a random one.
    fn word(&mut self) -> u16 {
        const EDGES: [u16; 8] = [0, 1, 2, 3, 0x7FFF, 0x8000, 0xFFFE, 0xFFFF];
        if self.below(2) == 0 {
            EDGES[self.below(EDGES.len())]
        } else {
            self.next() as u16
        }
    }
}

/// The worst case of one kind: its time and its peak memory.
#[derive(Default)]
struct Worst {
    time_s: (f64, String),
    peak_bytes: (usize, String),
    refused: usize,
}

impl Worst {
    /// Runs one case (`read` returns whether the file was refused) and
    /// holds it to the budgets.
    fn case(&mut self, name: String, read: impl FnOnce() -> bool) {
        {
            let mut case = CASE.lock().unwrap();
            let n = name.len().min(case.0.len());
            case.0[..n].copy_from_slice(&name.as_bytes()[..n]);
            case.1 = n;
        }
        let base = LIVE.load(Ordering::SeqCst);
        BASE.store(base, Ordering::SeqCst);
        PEAK.store(base, Ordering::SeqCst);
        let started = Instant::now();
        let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|_| panic!("{name}: the reader panicked"));
        let took_s = started.elapsed().as_secs_f64();
        let peak = PEAK.load(Ordering::SeqCst).saturating_sub(base);
        assert!(took_s < CASE_BUDGET_S, "{name}: {took_s:.1} s");
        self.refused += refused as usize;
        if took_s > self.time_s.0 {
            self.time_s = (took_s, name.clone());
        }
        if peak > self.peak_bytes.0 {
            self.peak_bytes = (peak, name);
        }
    }

    fn report(&self, kind: &str) {
        println!(
            "{kind}: {CASES} cases, {} refused; slowest {:.3} s ({}); most memory {:.1} MB ({})",
            self.refused,
            self.time_s.0,
            self.time_s.1,
            self.peak_bytes.0 as f64 / 1e6,
            self.peak_bytes.1
        );
    }
}

/// Where each parameter's dimensions and data lie in a C3D file (Intel
/// layout): (group, name, offset of its dimension count, of its data).
fn c3d_parameters(b: &[u8]) -> Vec<(String, String, usize, usize)> {
    let start = 512 * (b[0] as usize - 1);
    let mut groups = std::collections::HashMap::new();
    let mut params = vec![];
    let mut p = start + 4;
    while p + 2 < b.len() {
        let name_len = (b[p] as i8).unsigned_abs() as usize;
        let id = b[p + 1] as i8;
        if name_len == 0 {
            break;
        }
        let name = String::from_utf8_lossy(&b[p + 2..p + 2 + name_len]).to_string();
        let next_at = p + 2 + name_len;
        let next = i16::from_le_bytes([b[next_at], b[next_at + 1]]);
        if id < 0 {
            groups.insert(-id, name);
        } else {
            params.push((id, name, next_at + 3, next_at + 4 + b[next_at + 3] as usize));
        }
        if next <= 0 {
            break;
        }
        p = next_at + next as usize;
    }
    params.into_iter().map(|(id, name, dims, data)| (groups.get(&id).cloned().unwrap_or_default(), name, dims, data)).collect()
}

fn c3d_variant(rng: &mut Rng, seed: &[u8], params: &[(String, String, usize, usize)]) -> Vec<u8> {
    let mut b = seed.to_vec();
    // Parameters the parser sizes its tables by.
    const SIZING: [&str; 9] = ["USED", "FRAMES", "DATA_START", "RATE", "SCALE", "LABELS", "ACTUAL_START_FIELD", "ACTUAL_END_FIELD", "GEN_SCALE"];
    let sizing: Vec<_> = params.iter().filter(|p| SIZING.contains(&p.1.as_str())).collect();
    for _ in 0..1 + rng.below(3) {
        match rng.below(5) {
            // A header word (points, analog, frames, data block, ...).
            0 => {
                let at = 2 * (1 + rng.below(11));
                b[at..at + 2].copy_from_slice(&rng.word().to_le_bytes());
            }
            // A sizing parameter's value.
            1 | 2 if !sizing.is_empty() => {
                let (_, _, _, data) = sizing[rng.below(sizing.len())];
                let v = rng.word().to_le_bytes();
                let at = (*data + 2 * rng.below(2)).min(b.len() - 2);
                b[at..at + 2].copy_from_slice(&v);
            }
            // A sizing parameter's dimensions (labels of 255 x 255, ...).
            3 if !sizing.is_empty() => {
                let (_, _, dims, data) = sizing[rng.below(sizing.len())];
                for byte in &mut b[*dims + 1..*data] {
                    *byte = rng.next() as u8;
                }
            }
            // Cut short.
            _ => b.truncate(512 + rng.below(b.len() - 512)),
        }
    }
    b
}

fn avi_variant(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    let header_end = b.windows(4).position(|w| w == b"movi").unwrap_or(b.len().min(4096));
    for _ in 0..1 + rng.below(3) {
        let header_end = header_end.min(b.len() - 4);
        match rng.below(4) {
            // A 32-bit header field (sizes, width, height, bit count, frames).
            0 | 1 => {
                let at = 4 * rng.below(header_end / 4);
                let v: u32 = match rng.below(4) {
                    0 => u32::MAX,
                    1 => 1 << (10 + rng.below(20)),
                    2 => 0,
                    _ => rng.next() as u32,
                };
                b[at..at + 4].copy_from_slice(&v.to_le_bytes());
            }
            // A chunk's size past the frames.
            2 => {
                let at = header_end + 4 * rng.below((b.len() - header_end) / 4 - 1);
                b[at..at + 4].copy_from_slice(&(rng.next() as u32).to_le_bytes());
            }
            _ => b.truncate(16 + rng.below(b.len() - 16)),
        }
    }
    b
}

fn table_variant(rng: &mut Rng, seed: &str) -> Vec<u8> {
    const CELLS: [&str; 14] = ["", "nan", "inf", "-inf", "-1", "0", "1e308", "4294967296", "99999999999999999999", "65535", "-0", "x", "1,5", "\""];
    let tab = seed.contains('\t');
    let mut lines: Vec<String> = seed.lines().map(String::from).collect();
    for _ in 0..1 + rng.below(4) {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let at = rng.below(lines.len());
        match rng.below(6) {
            // A cell (a header count, a frame number, a coordinate).
            0 | 1 => {
                let sep = if tab { '\t' } else { ',' };
                let mut cells: Vec<String> = lines[at].split(sep).map(String::from).collect();
                let k = rng.below(cells.len());
                cells[k] = CELLS[rng.below(CELLS.len())].into();
                lines[at] = cells.join(&sep.to_string());
            }
            2 => {
                lines.remove(at);
            }
            3 => {
                let l = lines[at].clone();
                lines.insert(rng.below(lines.len()), l);
            }
            4 => {
                let other = rng.below(lines.len());
                lines.swap(at, other);
            }
            _ => lines.truncate(at),
        }
    }
    let line_end = ["\n", "\r\n", "\r"][rng.below(3)];
    let mut text = lines.join(line_end).into_bytes();
    if rng.below(8) == 0 {
        text.splice(0..0, [0xEF, 0xBB, 0xBF]);
    }
    if rng.below(8) == 0 && !text.is_empty() {
        let at = rng.below(text.len());
        text[at] = rng.next() as u8;
    }
    text
}

fn chunk_variant(rng: &mut Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    match rng.below(5) {
        // Bits flipped anywhere.
        0 => {
            for _ in 0..1 + rng.below(16) {
                let at = rng.below(b.len());
                b[at] ^= 1 << rng.below(8);
            }
        }
        // A 32-bit value in the footer (row counts, sizes, offsets).
        1 | 2 => {
            let footer = u32::from_le_bytes(b[b.len() - 8..b.len() - 4].try_into().unwrap()) as usize;
            let from = b.len().saturating_sub(footer + 8);
            let at = from + rng.below(b.len() - 8 - from);
            let v: u32 = if rng.below(2) == 0 { u32::MAX >> rng.below(32) } else { rng.next() as u32 };
            let end = (at + 4).min(b.len());
            b[at..end].copy_from_slice(&v.to_le_bytes()[..end - at]);
        }
        3 => b.truncate(rng.below(b.len())),
        _ => b = other.to_vec(),
    }
    b
}

fn files_in(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == ext)).collect();
    v.sort();
    v
}

#[test]
fn every_reader_of_outside_files_stays_within_5_s_and_500_mb_on_1000_random_variants_each() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("case");

    let mut c3d_seeds: Vec<PathBuf> = files_in(&at("datasets/mocap-release"), "c3d");
    c3d_seeds.extend(files_in(&at("datasets/mocap-beam/z-up"), "c3d"));
    let c3d_seeds: Vec<(Vec<u8>, Vec<_>)> = c3d_seeds.iter().map(|p| std::fs::read(p).unwrap()).map(|b| (b.clone(), c3d_parameters(&b))).collect();
    assert!(c3d_seeds.iter().all(|(_, p)| p.iter().any(|p| p.0 == "POINT" && p.1 == "USED")), "the C3D walk finds POINT:USED");
    let mut rng = Rng::seeded(0xC3D_0001);
    let mut worst = Worst::default();
    for case in 0..CASES {
        let (seed, params) = &c3d_seeds[case % c3d_seeds.len()];
        std::fs::write(&file, c3d_variant(&mut rng, seed, params)).unwrap();
        worst.case(format!("C3D case {case}"), || lab::c3d::read_c3d(&file).is_err());
    }
    worst.report("C3D");

    let avi_seeds: Vec<Vec<u8>> = files_in(&at("datasets/raw-video"), "avi").iter().map(|p| std::fs::read(p).unwrap()).collect();
    let mut rng = Rng::seeded(0xA71);
    let mut worst = Worst::default();
    for case in 0..CASES {
        std::fs::write(&file, avi_variant(&mut rng, &avi_seeds[case % avi_seeds.len()])).unwrap();
        worst.case(format!("AVI case {case}"), || {
            let Ok(mut avi) = session::avi::RawAviReader::open(&file) else { return true };
            let v = avi.video();
            let mut bgr = vec![0u8; v.width_px as usize * v.height_px as usize * 3];
            loop {
                match avi.read_bgr(&mut bgr) {
                    Ok(true) => {}
                    Ok(false) => return false,
                    Err(_) => return true,
                }
            }
        });
    }
    worst.report("AVI");

    let map = lab::c3d::MocapMap::read(&at("datasets/mocap-beam/z-up-map.toml"), 4).unwrap();
    let table_seeds: Vec<String> =
        ["qualisys.tsv", "motive.csv", "vicon.csv"].iter().map(|f| std::fs::read_to_string(at("tests/fixtures/mocap-tables").join(f)).unwrap()).collect();
    for seed in ["qualisys.tsv", "motive.csv", "vicon.csv"] {
        assert!(lab::mocap_tables::read_table(&at("tests/fixtures/mocap-tables").join(seed), &map).is_ok(), "{seed} reads");
    }
    // A frame renumbered far ahead (no time column to catch it: Vicon's):
    // refused by the missing frames it implies, before they are made.
    let vicon = table_seeds[2].replacen("\n5,0,", "\n99999999,0,", 1);
    std::fs::write(&file, vicon).unwrap();
    let err = lab::mocap_tables::read_table(&file, &map).unwrap_err().to_string();
    assert!(err.contains("frames missing in a file of"), "{err}");
    let mut rng = Rng::seeded(0x75_0C5);
    let mut worst = Worst::default();
    for case in 0..CASES {
        std::fs::write(&file, table_variant(&mut rng, &table_seeds[case % table_seeds.len()])).unwrap();
        worst.case(format!("table case {case}"), || lab::mocap_tables::read_table(&file, &map).is_err());
    }
    worst.report("tables");

    let s = synth(dir.path(), "s", "configs/rod/contact-paper-steel-core.toml", "configs/scene/contact-paper-stick.toml", |r| r.duration_s = Some(2.0));
    let mut chunks = vec![s.markers()];
    for stream in s.stream_names() {
        chunks.extend(files_in(&s.stream(&stream), "parquet"));
    }
    let originals: Vec<Vec<u8>> = chunks.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let mut rng = Rng::seeded(0xDA7A_0001);
    let mut worst = Worst::default();
    for case in 0..CASES {
        let k = rng.below(chunks.len());
        let other = rng.below(chunks.len());
        std::fs::write(&chunks[k], chunk_variant(&mut rng, &originals[k], &originals[other])).unwrap();
        worst.case(format!("chunk case {case} ({})", chunks[k].display()), || {
            let checked = session::check_session(s.path()).map(|c| c.iter().any(|c| c.problem.is_some()));
            let read = if k == 0 { session::read_markers(&chunks[k]).is_err() } else { session::Table::read(&chunks[k]).is_err() };
            checked.unwrap_or(true) || read
        });
        std::fs::write(&chunks[k], &originals[k]).unwrap();
    }
    worst.report("session chunks");
}
