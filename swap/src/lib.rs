//! marvin's ahead-of-time swap. (to be written)
