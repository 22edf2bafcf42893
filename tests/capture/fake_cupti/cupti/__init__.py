"""A stand-in for NVIDIA's cupti-python, for the capture tests on a machine with no GPU."""
