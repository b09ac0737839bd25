//! marvin's collector: a precise mark-sweep that will bookmark stubs, and the working-set
//! estimator. (to be written)
