"""SimPy model of GPU workers, allocators, engines and host memory."""
