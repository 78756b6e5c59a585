//! rodlab's benchmarks (`make bench`, criterion), one `benches/*.rs` per
//! stage of record -> track -> observe -> identify -> simulate -> report,
//! and the binary's process start. This library is empty: the benchmarks
//! live in their own crate so that the tests' build does not compile
//! criterion.
