//! rodlab's benchmarks of the workflows (`make bench`, criterion):
//! validation, the dynamic fit, marker detection and the binary's process
//! start, apart from the physics benchmarks (crates/bench) so that those
//! build without OpenCV. This library is empty.
