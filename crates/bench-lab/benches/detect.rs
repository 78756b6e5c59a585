//! Tracking speed on 1280x720 synthetic frames, one core (OpenCV's own
//! threads off): full-frame detection, ROI tracking, and video decoding
//! (reported separately: it depends on the codec, not on us).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use opencv::core::{Mat, Rect};
use session::VideoFormat;
use std::time::{Duration, Instant};
use track::detect::{Detector, MarkerParams};
use track::sequence::{Sequence, SequenceConfig};
use track::source::{FrameSource, Frames, VideoSink};
use track::synth;
use track::tracker::Tracker;

fn frames(n: usize) -> Vec<Mat> {
    let (camera, plane) = synth::demo_camera();
    let mut seq = Sequence::new(camera, plane, SequenceConfig { frames: n, ..SequenceConfig::default() });
    (0..n)
        .map(|k| {
            let img = seq.render(k);
            img.to_mat().unwrap()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    opencv::core::set_num_threads(1).unwrap();
    let frames = frames(100);
    let params = MarkerParams { count: 6, ..MarkerParams::default() };
    let mut g = c.benchmark_group("track_1280x720");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(5));

    let mut detector = Detector::new(params.clone()).unwrap();
    let mut blobs = vec![];
    let mut k = 0;
    g.bench_function("full_frame_detection", |b| {
        b.iter(|| {
            detector.detect(&frames[k % frames.len()], Rect::new(0, 0, 1280, 720), &mut blobs).unwrap();
            k += 1;
        })
    });

    for (name, roi) in [("tracking_full_frame", false), ("tracking_roi", true)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut elapsed = Duration::ZERO;
                let mut tracker = Tracker::new(MarkerParams { roi_tracking: roi, ..params.clone() }).unwrap();
                tracker.track(&frames[0]).unwrap();
                let mut k = 1;
                for _ in 0..iters {
                    if k == frames.len() {
                        // Start over (untimed): the sequence does not loop smoothly.
                        tracker = Tracker::new(MarkerParams { roi_tracking: roi, ..params.clone() }).unwrap();
                        tracker.track(&frames[0]).unwrap();
                        k = 1;
                    }
                    let t = Instant::now();
                    std::hint::black_box(tracker.track(&frames[k]).unwrap());
                    elapsed += t.elapsed();
                    k += 1;
                }
                elapsed
            })
        });
    }

    // Reading the frames back: decoding HuffYUV (.mkv), and the
    // uncompressed .avi the recorder writes by default (a copy).
    let dir = tempfile::tempdir().unwrap();
    for (name, file, format) in [("decode_huffyuv", "bench.mkv", VideoFormat::HuffYuv), ("read_raw", "bench.avi", VideoFormat::Raw)] {
        let path = dir.path().join(file);
        let mut sink = VideoSink::create_as(&path, format, 100.0, 1280, 720).unwrap();
        for f in &frames {
            sink.write(f).unwrap();
        }
        sink.finish().unwrap();
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut source = FrameSource::open(&path).unwrap();
                let mut frame = Mat::default();
                let t = Instant::now();
                for _ in 0..iters {
                    if !source.read(&mut frame).unwrap() {
                        source = FrameSource::open(&path).unwrap();
                        source.read(&mut frame).unwrap();
                    }
                }
                t.elapsed()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
