//! Property test of the FT 300 decoder: valid frames interleaved with random
//! garbage and truncated frames, fed in random chunk sizes. The decoder
//! never panics, never invents a frame (every output is one that was sent,
//! in order), and loses only frames touched by the damage.

use rand::{rngs::StdRng, Rng, SeedableRng};
use record::ft300::{encode_frame, Decoder, Wrench};

#[test]
fn decoder_resyncs_after_garbage_and_truncation() {
    for seed in 0..200 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut stream = vec![];
        let mut sent = vec![];
        // Every frame generated, including truncated ones (a frame cut in its
        // CRC can still pass when the next byte happens to match: its data
        // are then genuine).
        let mut generated = vec![];
        let mut intact = 0usize;
        for k in 0..200 {
            let w = Wrench { force_n: [k as f64 * 0.01, -(k as f64) * 0.02, 1.0], moment_nm: [0.001 * (k % 7) as f64, 0.0, -0.002] };
            let f = encode_frame(&w);
            generated.push(w);
            match rng.gen_range(0..10) {
                0 => {
                    // Garbage (may contain header bytes).
                    let n = rng.gen_range(1..40);
                    stream.extend((0..n).map(|_| if rng.gen_bool(0.2) { 0x20 } else { rng.gen() }));
                    stream.extend_from_slice(&f);
                    sent.push(w);
                }
                1 => {
                    // Truncated frame, then the next starts.
                    let cut = rng.gen_range(1..16);
                    stream.extend_from_slice(&f[..cut]);
                }
                _ => {
                    stream.extend_from_slice(&f);
                    sent.push(w);
                    intact += 1;
                }
            }
        }
        let mut d = Decoder::default();
        let mut out = vec![];
        let mut at = 0;
        while at < stream.len() {
            let n = rng.gen_range(1..64).min(stream.len() - at);
            d.feed(&stream[at..at + n], &mut out);
            at += n;
        }
        // Every decoded frame was generated, in order (a subsequence).
        let mut it = generated.iter();
        for w in &out {
            assert!(
                it.any(|s| encode_frame(s) == encode_frame(w)),
                "seed {seed}: decoded a frame that was never sent: {w:?}; decoded {:?}",
                out.iter().map(|w: &Wrench| (w.force_n[0] * 100.0).round() as i64).collect::<Vec<_>>()
            );
        }
        // Frames that were sent whole after clean data are recovered: we may
        // lose at most the frame right after each damaged spot.
        assert!(out.len() + (sent.len() - intact) * 2 >= sent.len(), "seed {seed}: {} of {} frames", out.len(), sent.len());
        assert!(out.len() >= intact * 8 / 10, "seed {seed}: {} decoded, {intact} intact sent", out.len());
    }
}
