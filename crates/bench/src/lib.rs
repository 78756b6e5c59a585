//! rodlab's physics benchmarks (`make bench`, criterion): the static
//! solve, the observer, identification and simulation, one `benches/*.rs`
//! each. This library is empty: the benchmarks live in their own crate so
//! that the tests' build does not compile criterion; the workflows' and
//! tracking's benchmarks are in crates/bench-lab.
