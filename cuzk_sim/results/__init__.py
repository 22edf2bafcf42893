"""What a run produces and how people see it: the result (sim_result),
metrics and throughput, the bounded recording, expectations, and the views: tables,
run_trace (Chrome trace), run_plot (the picture)."""
