"""Plans from any CUDA program: a recorded trace (Nsight Systems export or CUPTI) turned
into the steps of our plan language (docs/capture.md)."""
